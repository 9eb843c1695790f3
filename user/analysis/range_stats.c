/*
 * The summary rows of annotation ranges (contract: kx_stats_add_ranges in
 * ranges.h): closed ranges and marks grouped by (category, name, kind)
 * through one hash lookup each, then per row the exact nearest-rank
 * percentiles and the log2 histogram, through the ioctl rows' own code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ranges.h"
#include "util/grow.h"
#include "util/hashmap.h"

static uint64_t row_key(const struct kx_range *r)
{
	return kx_hash_combine(kx_hash_combine(kx_hash_combine(3, r->cat), r->name),
	                       r->kind == KX_RANGE_MARK);
}

/* A range's row among rows [first, n): found by key, else appended. */
struct rows {
	struct kx_stats *sum;
	size_t first, cap;
	struct kx_hmap map; /* row_key -> row index */
	const struct kx_store *s;
};

static int same_row(const struct kx_stat_row *w, const struct kx_range *r, const char *cat,
                    const char *name)
{
	return !w->mark == (r->kind != KX_RANGE_MARK) && !strcmp(w->cat, cat) &&
	       !strcmp(w->name, name);
}

static void row_cat(const struct kx_store *s, const struct kx_range *r, char *cat)
{
	const char *c = kx_store_ann_str(s, r->cat);

	if (c[0])
		snprintf(cat, KX_STAT_CAT_LEN, "annotation/%.*s", KX_STAT_CAT_LEN - 12, c);
	else
		snprintf(cat, KX_STAT_CAT_LEN, "annotation");
}

static struct kx_stat_row *row_of(struct rows *w, const struct kx_range *r)
{
	const char *name = kx_store_ann_str(w->s, r->name);
	uint64_t key = row_key(r);
	char cat[KX_STAT_CAT_LEN];
	struct kx_stat_row *row;
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	row_cat(w->s, r, cat);
	while ((i = kx_hmap_next(&w->map, key, &pos)))
		if (same_row(&w->sum->rows[*i], r, cat, name))
			return &w->sum->rows[*i];
	if (kx_grow((void **)&w->sum->rows, &w->cap, w->sum->nrows, sizeof(*w->sum->rows)) ||
	    kx_hmap_add(&w->map, key, (uint32_t)w->sum->nrows))
		return NULL;
	row = &w->sum->rows[w->sum->nrows];
	memset(row, 0, sizeof(*row));
	row->name = strdup(name);
	if (!row->name)
		return NULL;
	w->sum->nrows++;
	memcpy(row->cat, cat, sizeof(row->cat));
	row->min = UINT64_MAX;
	row->annot = 1;
	row->mark = r->kind == KX_RANGE_MARK;
	return row;
}

static int row_add_range(struct kx_stat_row *row, const struct kx_range *r)
{
	if (kx_stat_row_add(row, r->dur_meas, 0))
		return -1;
	row->ioctls += r->ioctls;
	row->device_ns += r->device_ns;
	row->jobs += r->jobs;
	return 0;
}

/* Percentiles; a mark row sharing its name with a range row says it is one. */
static int rows_finish(struct rows *w)
{
	for (size_t i = w->first; i < w->sum->nrows; i++) {
		struct kx_stat_row *row = &w->sum->rows[i];

		kx_stat_row_percentiles(row);
		if (!row->mark)
			continue;
		for (size_t k = w->first; k < w->sum->nrows; k++) {
			const struct kx_stat_row *o = &w->sum->rows[k];
			char *nn;

			if (o->mark || strcmp(o->cat, row->cat) || strcmp(o->name, row->name))
				continue;
			nn = malloc(strlen(row->name) + sizeof(" (mark)"));
			if (!nn)
				return -1;
			sprintf(nn, "%s (mark)", row->name);
			free(row->name);
			row->name = nn;
			break;
		}
	}
	return 0;
}

int kx_stats_add_ranges(struct kx_stats *sum, const struct kx_ranges *rg, const struct kx_store *s)
{
	struct rows w = {sum, sum->nrows, sum->nrows, KX_HMAP_INIT, s};
	int rc = 0;

	for (size_t i = 0; rg && i < rg->n && !rc; i++) {
		const struct kx_range *r = &rg->r[i];
		struct kx_stat_row *row;

		if (r->open)
			continue;
		row = row_of(&w, r);
		rc = row ? row_add_range(row, r) : -1;
	}
	if (!rc)
		rc = rows_finish(&w);
	kx_hmap_free(&w.map);
	return rc;
}
