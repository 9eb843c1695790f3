/*
 * Statistics of a capture's calls (contract: stats.h). Owns the
 * aggregation of ioctl events into rows, the exact percentiles and the log2
 * histograms.
 *
 * Aggregation is one hash lookup per event on (driver, cmd, xfer_cmd);
 * names are made once per row at the end, and rows whose commands share a
 * name (e.g. two sizes of one DRM command) are merged then. Percentiles use
 * the nearest-rank definition (the smallest duration with at least p% of
 * the row at or below it), found by selection, not a full sort.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/stats.h"
#include "model/agg.h"
#include "registry/ioctl_decode.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/hist.h"

/* Row for an event, created when new; NULL when out of memory. m maps
 * cmd << 32 | xfer << 8 | drv to the row index. */
static struct kx_stat_row *row_get(struct kx_stats *sum, size_t *rcap, struct kx_hmap *m,
                                   const struct kx_ioctl *e)
{
	uint64_t key = (uint64_t)e->cmd << 32 | (uint32_t)e->xfer_cmd << 8 | e->drv;
	uint32_t *idx = kx_hmap_get(m, key);
	struct kx_stat_row *r;

	if (idx)
		return &sum->rows[*idx];
	if (sum->nrows >= UINT32_MAX ||
	    kx_grow((void **)&sum->rows, rcap, sum->nrows, sizeof(*sum->rows)) ||
	    kx_hmap_add(m, key, (uint32_t)sum->nrows))
		return NULL;
	r = &sum->rows[sum->nrows++];
	memset(r, 0, sizeof(*r));
	r->drv = e->drv;
	r->cmd = e->cmd;
	r->xfer = e->xfer_cmd;
	r->min = UINT64_MAX;
	return r;
}

static void errno_add(struct kx_stat_row *r, int64_t ret, uint64_t n)
{
	int i;

	for (i = 0; i < r->nerrs; i++) {
		if (r->errs[i].ret == ret) {
			r->errs[i].count += n;
			return;
		}
	}
	/* The last slot is kept for "other" once the others are taken. */
	if (r->nerrs < KX_STAT_ERRNO_SLOTS - 1 ||
	    (r->nerrs == KX_STAT_ERRNO_SLOTS - 1 && ret == KX_STAT_ERRNO_OTHER)) {
		r->errs[r->nerrs].ret = ret;
		r->errs[r->nerrs++].count = n;
		return;
	}
	errno_add(r, KX_STAT_ERRNO_OTHER, n);
}

/* Count, total, extremes, log2 slot and errno of one call (not its duration). */
static void row_count(struct kx_stat_row *r, uint64_t dur, int64_t ret)
{
	r->count++;
	r->total += dur;
	if (dur < r->min)
		r->min = dur;
	if (dur > r->max)
		r->max = dur;
	r->hist[kx_hist_slot(dur)]++;
	if (ret < 0) {
		r->errors++;
		errno_add(r, ret, 1);
	}
}

int kx_stat_row_add(struct kx_stat_row *r, uint64_t dur, int64_t ret)
{
	if (kx_grow((void **)&r->durs, &r->cap, r->ndurs, sizeof(*r->durs)))
		return -1;
	r->durs[r->ndurs++] = dur;
	row_count(r, dur, ret);
	return 0;
}

/* The row's log-linear histogram, made when it has none. 0, or -1 when out of memory. */
static int row_lh(struct kx_stat_row *r)
{
	if (r->lh)
		return 0;
	r->lh = malloc(sizeof(*r->lh));
	if (!r->lh)
		return -1;
	kx_llhist_init(r->lh);
	return 0;
}

int kx_stat_row_add_streamed(struct kx_stat_row *r, uint64_t dur, int64_t ret)
{
	if (row_lh(r) || kx_llhist_add(r->lh, dur, 1))
		return -1;
	row_count(r, dur, ret);
	return 0;
}

int kx_stat_row_add_bounded(struct kx_stat_row *r, uint64_t dur, size_t max_exact)
{
	if (!r->lh && r->ndurs < max_exact)
		return kx_stat_row_add(r, dur, 0);
	if (row_lh(r))
		return -1;
	for (size_t i = 0; i < r->ndurs; i++)
		if (kx_llhist_add(r->lh, r->durs[i], 1))
			return -1;
	free(r->durs);
	r->durs = NULL;
	r->ndurs = r->cap = 0;
	return kx_stat_row_add_streamed(r, dur, 0);
}

int kx_stat_row_add_fine(struct kx_stat_row *r, const uint64_t *fine, uint64_t *lo, uint64_t *hi)
{
	int seen = 0;

	if (!r->fine && !(r->fine = calloc(KX_FINE_SLOTS, sizeof(*r->fine))))
		return -1;
	for (unsigned int b = 0; b < KX_FINE_SLOTS; b++) {
		uint64_t l, w;

		if (!fine[b])
			continue;
		r->fine[b] += fine[b];
		kx_hist_fine_bounds(b, &l, &w);
		*lo = seen++ ? *lo : l;
		*hi = b == KX_FINE_SLOTS - 1 ? UINT64_MAX : l + w - 1;
	}
	kx_hist_fine_log2(fine, r->hist);
	return 0;
}

static void row_hist_free(struct kx_stat_row *r)
{
	free(r->fine);
	r->fine = NULL;
	if (!r->lh)
		return;
	kx_llhist_free(r->lh);
	free(r->lh);
	r->lh = NULL;
}

/* Folds b's fine slots into a's; b's are freed. */
static void row_merge_fine(struct kx_stat_row *a, struct kx_stat_row *b)
{
	if (!b->fine)
		return;
	if (!a->fine) {
		a->fine = b->fine;
		b->fine = NULL;
		return;
	}
	for (unsigned int i = 0; i < KX_FINE_SLOTS; i++)
		a->fine[i] += b->fine[i];
	free(b->fine);
	b->fine = NULL;
}

/* Folds b's histograms into a's; b's are freed. */
static int row_merge_hist(struct kx_stat_row *a, struct kx_stat_row *b)
{
	row_merge_fine(a, b);
	if (!b->lh)
		return 0;
	if (!a->lh) {
		a->lh = b->lh;
		b->lh = NULL;
		return 0;
	}
	if (kx_llhist_merge(a->lh, b->lh))
		return -1;
	row_hist_free(b);
	return 0;
}

/* Folds b into a (same category and name); b is emptied. */
static int row_merge(struct kx_stat_row *a, struct kx_stat_row *b)
{
	if (row_merge_hist(a, b))
		return -1;
	/* Exact fit: the merged row takes no more durations. */
	if (kx_reserve((void **)&a->durs, &a->cap, a->ndurs + b->ndurs, sizeof(*a->durs)))
		return -1;
	if (b->ndurs)
		memcpy(a->durs + a->ndurs, b->durs, b->ndurs * sizeof(*b->durs));
	a->ndurs += b->ndurs;
	a->count += b->count;
	a->errors += b->errors;
	a->total += b->total;
	a->offcpu += b->offcpu;
	if (b->min < a->min)
		a->min = b->min;
	if (b->max > a->max)
		a->max = b->max;
	for (int i = 0; i < KX_HIST_SLOTS; i++)
		a->hist[i] += b->hist[i];
	for (int i = 0; i < b->nerrs; i++)
		errno_add(a, b->errs[i].ret, b->errs[i].count);
	free(b->durs);
	free(b->name);
	b->durs = NULL;
	b->name = NULL;
	return 0;
}

void kx_stat_row_percentiles(struct kx_stat_row *r)
{
	static const uint32_t ppm[3] = {KX_PPM(50), KX_PPM(90), KX_PPM(99)};
	uint64_t q[3];

	/* Streamed: from the log-linear histogram (within 1/256). */
	if (r->lh && r->count) {
		r->p50 = kx_llhist_quantile(r->lh, ppm[0]);
		r->p90 = kx_llhist_quantile(r->lh, ppm[1]);
		r->p99 = kx_llhist_quantile(r->lh, ppm[2]);
		return;
	}
	/* Live aggregates: from the fine slots (within 1/16), clamped to the
	 * row's min and max. */
	if (r->fine && r->count) {
		r->p50 = kx_hist_fine_quantile(r->fine, r->count, ppm[0], r->min, r->max);
		r->p90 = kx_hist_fine_quantile(r->fine, r->count, ppm[1], r->min, r->max);
		r->p99 = kx_hist_fine_quantile(r->fine, r->count, ppm[2], r->min, r->max);
		return;
	}
	/* Without durations (job rows of live aggregates): from the buckets,
	 * clamped to the row's min and max. */
	if (!r->ndurs && r->count) {
		r->p50 = kx_hist_quantile(r->hist, r->count, ppm[0], r->min, r->max);
		r->p90 = kx_hist_quantile(r->hist, r->count, ppm[1], r->min, r->max);
		r->p99 = kx_hist_quantile(r->hist, r->count, ppm[2], r->min, r->max);
		return;
	}
	if (!r->ndurs)
		return;
	kx_quantiles_exact(r->durs, r->ndurs, ppm, q, 3);
	r->p50 = q[0];
	r->p90 = q[1];
	r->p99 = q[2];
}

static int cmp_cat_name(const void *pa, const void *pb)
{
	const struct kx_stat_row *a = pa, *b = pb;
	int c = strcmp(a->cat, b->cat);

	return c ? c : strcmp(a->name, b->name);
}

/* Names every row, then merges rows that share (category, name). */
static int rows_finalize(struct kx_stats *sum)
{
	size_t out = 0;

	for (size_t i = 0; i < sum->nrows; i++) {
		struct kx_stat_row *r = &sum->rows[i];
		char buf[96];

		snprintf(r->cat, sizeof(r->cat), "ioctl/%s", kx_driver_name(r->drv));
		r->name = strdup(kx_ioctl_name(r->drv, r->cmd, r->xfer, buf, sizeof(buf)));
		if (!r->name)
			return -1;
	}
	if (sum->nrows > 1)
		qsort(sum->rows, sum->nrows, sizeof(*sum->rows), cmp_cat_name);
	for (size_t i = 0; i < sum->nrows; i++) {
		if (out && !cmp_cat_name(&sum->rows[out - 1], &sum->rows[i])) {
			if (row_merge(&sum->rows[out - 1], &sum->rows[i]))
				return -1;
			continue;
		}
		if (out != i)
			sum->rows[out] = sum->rows[i];
		out++;
	}
	sum->nrows = out;
	for (size_t i = 0; i < sum->nrows; i++)
		kx_stat_row_percentiles(&sum->rows[i]);
	return 0;
}

/* A row of its own (category and name given), appended after the ioctl rows. */
static struct kx_stat_row *row_new(struct kx_stats *sum, const char *cat, const char *name)
{
	/* Exact fit: a few job rows after the ioctl rows, whose capacity is gone. */
	struct kx_stat_row *nr = realloc(sum->rows, (sum->nrows + 1) * sizeof(*nr)), *r;

	if (!nr)
		return NULL;
	sum->rows = nr;
	r = &sum->rows[sum->nrows];
	memset(r, 0, sizeof(*r));
	r->min = UINT64_MAX;
	r->job = 1;
	snprintf(r->cat, sizeof(r->cat), "%s", cat);
	r->name = strdup(name);
	if (!r->name)
		return NULL;
	sum->nrows++;
	return r;
}

/* Row r takes the ring's exact distribution d (analysis/jobs.c's, nearest
 * rank like the rows'); a row of none keeps row_new's extremes. */
static void row_of_dist(struct kx_stat_row *r, const struct kx_dist *d)
{
	if (!d->count)
		return;
	r->count = d->count;
	r->total = d->total;
	r->min = d->min;
	r->max = d->max;
	r->p50 = d->p50;
	r->p90 = d->p90;
	r->p99 = d->p99;
}

/*
 * Per ring of every device: "<ring> exec" and "<ring> queue delay"
 * (kx_jobrec_exec, kx_jobrec_queue_delay), as time rows of category
 * jobs/<device>: the ring's distributions, and the jobs' log2 slots.
 */
static int add_job_rows(struct kx_stats *sum, const struct kx_jobs *jb)
{

	for (size_t i = 0; i < jb->nrings; i++) {
		const struct kx_jobring *rg = &jb->rings[i];
		char cat[KX_STAT_CAT_LEN], name[64];
		struct kx_stat_row *ex, *qd = NULL;

		/* A ring of only unfinished or DONE-only jobs has nothing to time. */
		if (!rg->exec.count && !rg->queue.count)
			continue;
		snprintf(cat, sizeof(cat), "jobs/%.42s", jb->devs[rg->dev].name);
		snprintf(name, sizeof(name), "%s exec", rg->name);
		ex = row_new(sum, cat, name);
		if (!ex)
			return -1;
		if (rg->queue.count) {
			snprintf(name, sizeof(name), "%s queue delay", rg->name);
			qd = row_new(sum, cat, name);
			if (!qd)
				return -1;
			/* row_new may have moved the rows. */
			ex = qd - 1;
		}
		for (size_t k = 0; k < rg->njobs; k++) {
			const struct kx_jobrec *j = &jb->jobs[rg->first + k];
			uint64_t x;

			if (kx_jobrec_exec(j, &x))
				ex->hist[kx_hist_slot(x)]++;
			if (qd && kx_jobrec_queue_delay(j, 0, &x))
				qd->hist[kx_hist_slot(x)]++;
		}
		row_of_dist(ex, &rg->exec);
		if (qd)
			row_of_dist(qd, &rg->queue);
	}
	return 0;
}

/*
 * Once the rows are filled (ok) or an allocation failed (!ok): the map
 * goes, the rows are named, merged and ranked. 0, or -1 with sum emptied.
 */
static int rows_close(struct kx_stats *sum, struct kx_hmap *m, int ok)
{
	kx_hmap_free(m);
	if (ok && !rows_finalize(sum))
		return 0;
	kx_stats_free(sum);
	return -1;
}

int kx_stats_offcpu_attached(const struct kx_capinfo *ci)
{
	for (uint32_t i = 0; ci && i < ci->nhooks && i < KX_MAX_HOOKS; i++)
		if (!strncmp(ci->hooks[i].name, "sched_switch", 12) &&
		    ci->hooks[i].state == KX_HOOK_ATTACHED)
			return 1;
	return 0;
}

/* The off-CPU time of e into its row r. */
static void row_offcpu(struct kx_stats *sum, struct kx_stat_row *r, const struct kx_ioctl *e)
{
	uint64_t off = (uint64_t)e->offcpu_us * 1000;

	/* µs rounding can put the blocked time past the call's end. */
	r->offcpu += off < e->dur ? off : e->dur;
	if (e->offcpu_us)
		sum->offcpu_measured = 1;
}

int kx_stats_acc_add(struct kx_stats *sum, struct kx_stats_acc *acc, const struct kx_ioctl *e)
{
	struct kx_stat_row *r = row_get(sum, &acc->rcap, &acc->m, e);

	if (!r || kx_stat_row_add_streamed(r, e->dur, e->ret))
		return -1;
	row_offcpu(sum, r, e);
	sum->stored++;
	return 0;
}

int kx_stats_acc_finish(struct kx_stats *sum, struct kx_stats_acc *acc, const struct kx_capinfo *ci,
                        int ok)
{
	sum->offcpu_measured |= kx_stats_offcpu_attached(ci);
	acc->rcap = 0;
	return rows_close(sum, &acc->m, ok);
}

int kx_stats_build(struct kx_stats *sum, const struct kx_store *s, const struct kx_capinfo *ci,
                   const struct kx_jobs *jobs)
{
	struct kx_hmap m = KX_HMAP_INIT;
	size_t rcap = 0, n = kx_store_ioctl_count(s);

	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		struct kx_stat_row *r = row_get(sum, &rcap, &m, e);

		if (!r || kx_stat_row_add(r, e->dur, e->ret))
			return rows_close(sum, &m, 0);
		row_offcpu(sum, r, e);
	}
	sum->offcpu_measured |= kx_stats_offcpu_attached(ci);
	sum->stored = n;
	if (rows_close(sum, &m, 1))
		return -1;
	if (jobs && add_job_rows(sum, jobs)) {
		kx_stats_free(sum);
		return -1;
	}
	return 0;
}

int kx_stats_from_agg(struct kx_stats *sum, const struct kx_agg_snapshot *snap)
{
	struct kx_hmap m = KX_HMAP_INIT;
	size_t rcap = 0;

	memset(sum, 0, sizeof(*sum));
	sum->offcpu_measured = snap->offcpu_measured;
	for (size_t i = 0; i < snap->nrows; i++) {
		const struct kx_agg_row *a = &snap->rows[i];
		struct kx_ioctl e = {
		        .drv = (uint8_t)a->key.drv, .cmd = a->key.cmd, .xfer_cmd = a->key.xfer_cmd};
		struct kx_stat_row *r;
		uint64_t lo = 0, hi = 0;

		if (!a->count)
			continue;
		r = row_get(sum, &rcap, &m, &e);
		if (!r)
			return rows_close(sum, &m, 0);
		if (kx_stat_row_add_fine(r, a->fine, &lo, &hi))
			return rows_close(sum, &m, 0);
		/* Exact extremes when the key knows them, else the slots' bounds. */
		if (a->max_ns) {
			lo = a->min_ns;
			hi = a->max_ns;
		}
		r->count += a->count;
		r->errors += a->errors;
		r->total += a->sum_ns;
		r->offcpu += a->offcpu_ns < a->sum_ns ? a->offcpu_ns : a->sum_ns;
		if (lo < r->min)
			r->min = lo;
		if (hi > r->max)
			r->max = hi;
		sum->stored += a->count;
	}
	return rows_close(sum, &m, 1);
}

int kx_stats_add_jobs(struct kx_stats *sum, const struct kx_jobs *jobs)
{
	return jobs ? add_job_rows(sum, jobs) : 0;
}

void kx_stat_row_free(struct kx_stat_row *r)
{
	free(r->durs);
	free(r->name);
	r->durs = NULL;
	r->name = NULL;
	row_hist_free(r);
}

int kx_stats_append(struct kx_stats *dst, struct kx_stats *src)
{
	struct kx_stat_row *rows;

	if (!src->nrows)
		return 0;
	rows = realloc(dst->rows, (dst->nrows + src->nrows) * sizeof(*rows));
	if (!rows)
		return -1;
	memcpy(rows + dst->nrows, src->rows, src->nrows * sizeof(*rows));
	dst->rows = rows;
	dst->nrows += src->nrows;
	free(src->rows);
	memset(src, 0, sizeof(*src));
	return 0;
}

void kx_stats_free(struct kx_stats *sum)
{
	for (size_t i = 0; i < sum->nrows; i++)
		kx_stat_row_free(&sum->rows[i]);
	free(sum->rows);
	memset(sum, 0, sizeof(*sum));
}
