/*
 * Operations on live-aggregate snapshots (contract: agg.h): sorting, diffs,
 * folds and copies. Nothing here reads a session.
 */
#include <stdlib.h>
#include <string.h>

#include "model/agg.h"

static int key_cmp(const struct kx_agg_key *a, const struct kx_agg_key *b)
{
	/* Field by field: the struct has no padding, but order matters for display. */
	if (a->drv != b->drv)
		return a->drv < b->drv ? -1 : 1;
	if (a->fkind != b->fkind)
		return a->fkind < b->fkind ? -1 : 1;
	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	if (a->cmd != b->cmd)
		return a->cmd < b->cmd ? -1 : 1;
	if (a->xfer_cmd != b->xfer_cmd)
		return a->xfer_cmd < b->xfer_cmd ? -1 : 1;
	if (a->who != b->who)
		return a->who < b->who ? -1 : 1;
	return 0;
}

static int row_cmp(const void *pa, const void *pb)
{
	return key_cmp(&((const struct kx_agg_row *)pa)->key,
	               &((const struct kx_agg_row *)pb)->key);
}

void kx_agg_snapshot_sort(struct kx_agg_snapshot *snap)
{
	if (snap->nrows > 1)
		qsort(snap->rows, snap->nrows, sizeof(*snap->rows), row_cmp);
}

void kx_agg_snapshot_free(struct kx_agg_snapshot *snap)
{
	if (!snap)
		return;
	free(snap->rows);
	snap->rows = NULL;
	snap->nrows = 0;
}

static uint64_t sub0(uint64_t a, uint64_t b)
{
	/* A key deleted and recreated between snapshots restarts from zero. */
	return a >= b ? a - b : a;
}

int kx_agg_diff(const struct kx_agg_snapshot *cur, const struct kx_agg_snapshot *prev,
                struct kx_agg_snapshot *out)
{
	size_t j = 0;

	*out = *cur;
	out->rows = cur->nrows ? calloc(cur->nrows, sizeof(*out->rows)) : NULL;
	if (cur->nrows && !out->rows)
		return -1;
	out->interval_s = cur->mono_ns > prev->mono_ns ? (cur->mono_ns - prev->mono_ns) / 1e9 : 0;
	out->overflow = sub0(cur->overflow, prev->overflow);
	out->dropped = sub0(cur->dropped, prev->dropped);
	out->inflight_full = sub0(cur->inflight_full, prev->inflight_full);
	out->bpf_missed = sub0(cur->bpf_missed, prev->bpf_missed);
	out->job_done_lost = sub0(cur->job_done_lost, prev->job_done_lost);
	for (size_t i = 0; i < cur->nrows; i++) {
		const struct kx_agg_row *c = &cur->rows[i];
		struct kx_agg_row *o = &out->rows[i];
		const struct kx_agg_row *p = NULL;
		int reset = 0;

		/* Both sorted by key: one merge pass. */
		while (j < prev->nrows && key_cmp(&prev->rows[j].key, &c->key) < 0)
			j++;
		if (j < prev->nrows && key_cmp(&prev->rows[j].key, &c->key) == 0)
			p = &prev->rows[j];
		*o = *c;
		o->min_ns = o->max_ns = 0;
		if (!p)
			continue;
		if (c->count < p->count)
			reset = 1; /* deleted and recreated: all of cur is new */
		for (int b = 0; b < KX_FINE_SLOTS && !reset; b++)
			if (c->fine[b] < p->fine[b])
				reset = 1;
		if (reset)
			continue;
		o->count = c->count - p->count;
		for (int b = 0; b < KX_FINE_SLOTS; b++)
			o->fine[b] = c->fine[b] - p->fine[b];
		o->errors = sub0(c->errors, p->errors);
		o->sum_ns = sub0(c->sum_ns, p->sum_ns);
		o->offcpu_ns = sub0(c->offcpu_ns, p->offcpu_ns);
	}
	return 0;
}

/* Adds r into o. Extremes are exact (max_ns != 0) only when both sides know them. */
static void row_fold(struct kx_agg_row *o, const struct kx_agg_row *r)
{
	if (r->count && !o->count) {
		o->min_ns = r->min_ns;
		o->max_ns = r->max_ns;
	} else if (r->count && o->max_ns && r->max_ns) {
		o->min_ns = r->min_ns < o->min_ns ? r->min_ns : o->min_ns;
		o->max_ns = r->max_ns > o->max_ns ? r->max_ns : o->max_ns;
	} else if (r->count) {
		o->min_ns = o->max_ns = 0;
	}
	o->count += r->count;
	o->errors += r->errors;
	o->sum_ns += r->sum_ns;
	o->offcpu_ns += r->offcpu_ns;
	for (int b = 0; b < KX_FINE_SLOTS; b++)
		o->fine[b] += r->fine[b];
}

static int fold_cmp(const void *pa, const void *pb)
{
	struct kx_agg_key a = ((const struct kx_agg_row *)pa)->key;
	struct kx_agg_key b = ((const struct kx_agg_row *)pb)->key;

	a.who = b.who = 0;
	return key_cmp(&a, &b);
}

int kx_agg_fold_who(struct kx_agg_snapshot *snap)
{
	size_t out = 0;

	if (snap->nrows > 1)
		qsort(snap->rows, snap->nrows, sizeof(*snap->rows), fold_cmp);
	for (size_t i = 0; i < snap->nrows; i++) {
		struct kx_agg_row *r = &snap->rows[i];

		r->key.who = 0;
		r->comm[0] = 0;
		if (out && !fold_cmp(&snap->rows[out - 1], r)) {
			row_fold(&snap->rows[out - 1], r);
			continue;
		}
		if (out != i)
			snap->rows[out] = *r;
		out++;
	}
	snap->nrows = out;
	snap->by = KX_AGG_BY_NONE;
	return 0;
}

static int name_cmp(const void *pa, const void *pb)
{
	const struct kx_agg_row *a = pa, *b = pb;
	int c = strcmp(a->driver, b->driver);

	if (!c)
		c = strcmp(a->device, b->device);
	if (!c)
		c = strcmp(a->ioctl, b->ioctl);
	if (!c && a->key.who != b->key.who)
		c = a->key.who < b->key.who ? -1 : 1;
	return c;
}

int kx_agg_fold_names(struct kx_agg_snapshot *snap)
{
	size_t out = 0;

	if (snap->nrows > 1)
		qsort(snap->rows, snap->nrows, sizeof(*snap->rows), name_cmp);
	for (size_t i = 0; i < snap->nrows; i++) {
		if (out && !name_cmp(&snap->rows[out - 1], &snap->rows[i])) {
			row_fold(&snap->rows[out - 1], &snap->rows[i]);
			continue;
		}
		if (out != i)
			snap->rows[out] = snap->rows[i];
		out++;
	}
	snap->nrows = out;
	return 0;
}

int kx_agg_snapshot_copy(const struct kx_agg_snapshot *in, struct kx_agg_snapshot *out)
{
	*out = *in;
	out->rows = in->nrows ? malloc(in->nrows * sizeof(*in->rows)) : NULL;
	if (in->nrows && !out->rows) {
		out->nrows = 0;
		return -1;
	}
	if (in->nrows)
		memcpy(out->rows, in->rows, in->nrows * sizeof(*in->rows));
	return 0;
}
