/*
 * The summary rows of annotation ranges (contract: kx_range_rows and
 * kx_stats_add_ranges in ranges.h): closed ranges and marks grouped by
 * (category, name, kind) through one hash lookup each, then per row the
 * percentiles and the log2 histogram, through the ioctl rows' own code.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ranges.h"
#include "util/grow.h"

static uint64_t row_key(const char *cat, const char *name, int mark)
{
	return kx_hash_combine(
	        kx_hash_combine(kx_hash_bytes(cat, strlen(cat)), kx_hash_bytes(name, strlen(name))),
	        mark != 0);
}

void kx_range_rows_init(struct kx_range_rows *w, struct kx_stats *sum)
{
	w->sum = sum;
	w->first = w->cap = sum->nrows;
	w->map = (struct kx_hmap)KX_HMAP_INIT;
}

static void row_cat(const char *c, char *cat)
{
	if (c[0])
		snprintf(cat, KX_STAT_CAT_LEN, "annotation/%.*s", KX_STAT_CAT_LEN - 12, c);
	else
		snprintf(cat, KX_STAT_CAT_LEN, "annotation");
}

long kx_range_rows_get(struct kx_range_rows *w, const char *c, const char *name, int mark)
{
	uint64_t key = row_key(c, name, mark);
	char cat[KX_STAT_CAT_LEN];
	struct kx_stat_row *row;
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	row_cat(c, cat);
	while ((i = kx_hmap_next(&w->map, key, &pos))) {
		row = &w->sum->rows[*i];
		if (!row->mark == !mark && !strcmp(row->cat, cat) && !strcmp(row->name, name))
			return (long)*i;
	}
	if (kx_grow((void **)&w->sum->rows, &w->cap, w->sum->nrows, sizeof(*w->sum->rows)))
		return -1;
	row = &w->sum->rows[w->sum->nrows];
	memset(row, 0, sizeof(*row));
	row->name = strdup(name);
	if (!row->name || kx_hmap_add(&w->map, key, (uint32_t)w->sum->nrows)) {
		free(row->name);
		return -1;
	}
	memcpy(row->cat, cat, sizeof(row->cat));
	row->min = UINT64_MAX;
	row->annot = 1;
	row->mark = mark != 0;
	return (long)w->sum->nrows++;
}

/* Rows nothing reached go (streamed ranges that never ended). */
static void rows_drop_empty(struct kx_range_rows *w)
{
	size_t k = w->first;

	for (size_t i = w->first; i < w->sum->nrows; i++) {
		struct kx_stat_row *row = &w->sum->rows[i];

		if (!row->count) {
			kx_stat_row_free(row);
			continue;
		}
		w->sum->rows[k++] = *row;
	}
	w->sum->nrows = k;
}

/* A mark row sharing its name with a range row says it is one. */
static int mark_name(struct kx_range_rows *w, struct kx_stat_row *row)
{
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
		return 0;
	}
	return 0;
}

int kx_range_rows_finish(struct kx_range_rows *w)
{
	int rc = 0;

	kx_hmap_free(&w->map);
	rows_drop_empty(w);
	for (size_t i = w->first; i < w->sum->nrows && !rc; i++) {
		struct kx_stat_row *row = &w->sum->rows[i];

		kx_stat_row_percentiles(row);
		if (row->mark)
			rc = mark_name(w, row);
	}
	return rc;
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

int kx_stats_add_ranges(struct kx_stats *sum, const struct kx_ranges *rg, const struct kx_store *s)
{
	struct kx_range_rows w;
	int rc = 0;

	kx_range_rows_init(&w, sum);
	for (size_t i = 0; rg && i < rg->n && !rc; i++) {
		const struct kx_range *r = &rg->r[i];
		long row;

		if (r->open)
			continue;
		row = kx_range_rows_get(&w, kx_store_ann_str(s, r->cat),
		                        kx_store_ann_str(s, r->name), r->kind == KX_RANGE_MARK);
		rc = row < 0 ? -1 : row_add_range(&sum->rows[row], r);
	}
	return kx_range_rows_finish(&w) || rc ? -1 : 0;
}
