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
#include "live/aggregate.h"
#include "registry/ioctl_decode.h"

/* Hash of (drv, cmd, xfer) -> row index + 1 (0 = empty slot). */
struct row_map {
	uint32_t *slot;
	size_t cap; /* power of two */
};

static uint64_t key_hash(uint8_t drv, uint32_t cmd, uint32_t xfer)
{
	uint64_t h = ((uint64_t)cmd << 32 | xfer) ^ ((uint64_t)drv << 56);

	/* splitmix64 finalizer: cmds differ in few bits. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

static int map_grow(struct row_map *m, const struct kx_stat_row *rows, size_t nrows)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < nrows; i++) {
		size_t j = key_hash(rows[i].drv, rows[i].cmd, rows[i].xfer) & (cap - 1);

		while (slot[j])
			j = (j + 1) & (cap - 1);
		slot[j] = (uint32_t)i + 1;
	}
	free(m->slot);
	m->slot = slot;
	m->cap = cap;
	return 0;
}

/* Row for an event, created when new; NULL when out of memory. */
static struct kx_stat_row *row_get(struct kx_stats *sum, size_t *rcap, struct row_map *m,
                                   const struct kx_ioctl *e)
{
	size_t j;
	struct kx_stat_row *r;

	if (!m->cap || (sum->nrows + 1) * 2 > m->cap) {
		if (map_grow(m, sum->rows, sum->nrows))
			return NULL;
	}
	j = key_hash(e->drv, e->cmd, e->xfer_cmd) & (m->cap - 1);
	while (m->slot[j]) {
		r = &sum->rows[m->slot[j] - 1];
		if (r->drv == e->drv && r->cmd == e->cmd && r->xfer == e->xfer_cmd)
			return r;
		j = (j + 1) & (m->cap - 1);
	}
	if (sum->nrows == *rcap) {
		size_t ncap = *rcap ? *rcap * 2 : 16;
		struct kx_stat_row *nr = realloc(sum->rows, ncap * sizeof(*nr));

		if (!nr)
			return NULL;
		sum->rows = nr;
		*rcap = ncap;
	}
	r = &sum->rows[sum->nrows];
	memset(r, 0, sizeof(*r));
	r->drv = e->drv;
	r->cmd = e->cmd;
	r->xfer = e->xfer_cmd;
	r->min = UINT64_MAX;
	m->slot[j] = (uint32_t)++sum->nrows;
	return r;
}

static int hist_bucket(uint64_t ns)
{
	return ns ? 63 - __builtin_clzll(ns) : 0;
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

static int row_add(struct kx_stat_row *r, uint64_t dur, int64_t ret)
{
	if (r->ndurs == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 16;
		uint64_t *nd = realloc(r->durs, ncap * sizeof(*nd));

		if (!nd)
			return -1;
		r->durs = nd;
		r->cap = ncap;
	}
	r->durs[r->ndurs++] = dur;
	r->count++;
	r->total += dur;
	if (dur < r->min)
		r->min = dur;
	if (dur > r->max)
		r->max = dur;
	r->hist[hist_bucket(dur)]++;
	if (ret < 0) {
		r->errors++;
		errno_add(r, ret, 1);
	}
	return 0;
}

/* Folds b into a (same category and name); b is emptied. */
static int row_merge(struct kx_stat_row *a, struct kx_stat_row *b)
{
	if (a->ndurs + b->ndurs > a->cap) {
		uint64_t *nd = realloc(a->durs, (a->ndurs + b->ndurs) * sizeof(*nd));

		if (!nd)
			return -1;
		a->durs = nd;
		a->cap = a->ndurs + b->ndurs;
	}
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
	for (int i = 0; i < KX_STAT_HIST_BUCKETS; i++)
		a->hist[i] += b->hist[i];
	for (int i = 0; i < b->nerrs; i++)
		errno_add(a, b->errs[i].ret, b->errs[i].count);
	free(b->durs);
	free(b->name);
	b->durs = NULL;
	b->name = NULL;
	return 0;
}

static void swap_u64(uint64_t *a, uint64_t *b)
{
	uint64_t t = *a;

	*a = *b;
	*b = t;
}

/*
 * k-th smallest of a[lo..n), leaving everything after k >= it so a later
 * call with lo = k can go on from there. Three-way partition: durations
 * repeat a lot, and equal keys must not degrade it to quadratic.
 */
static uint64_t select_kth(uint64_t *a, size_t lo, size_t hi, size_t k)
{
	while (hi - lo > 1) {
		uint64_t x = a[lo], y = a[lo + (hi - lo) / 2], z = a[hi - 1], p;
		size_t lt = lo, i = lo, gt = hi;

		p = x < y ? (y < z ? y : (x < z ? z : x)) : (x < z ? x : (y < z ? z : y));
		while (i < gt) {
			if (a[i] < p)
				swap_u64(&a[lt++], &a[i++]);
			else if (a[i] > p)
				swap_u64(&a[i], &a[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return p;
	}
	return a[k];
}

/* Nearest-rank index of percentile p in n sorted values. */
static size_t rank_index(size_t n, unsigned int p)
{
	return (size_t)(((unsigned __int128)n * p + 99) / 100) - 1;
}

/* Without durations (live aggregates): nearest rank over the log2 buckets,
 * reported as the bucket's upper bound, clamped to the row's min and max. */
static uint64_t hist_rank(const struct kx_stat_row *r, unsigned int p)
{
	uint64_t rank = (uint64_t)(((unsigned __int128)r->count * p + 99) / 100), seen = 0;

	for (int i = 0; i < KX_STAT_HIST_BUCKETS; i++) {
		seen += r->hist[i];
		if (seen >= rank && seen) {
			uint64_t v = i >= 63 ? UINT64_MAX : 2ULL << i;

			return v > r->max ? r->max : v < r->min ? r->min : v;
		}
	}
	return r->max;
}

static void row_percentiles(struct kx_stat_row *r)
{
	size_t k50, k90, k99;

	if (!r->ndurs && r->count) {
		r->p50 = hist_rank(r, 50);
		r->p90 = hist_rank(r, 90);
		r->p99 = hist_rank(r, 99);
		return;
	}
	if (!r->ndurs)
		return;
	k50 = rank_index(r->ndurs, 50);
	k90 = rank_index(r->ndurs, 90);
	k99 = rank_index(r->ndurs, 99);
	r->p50 = select_kth(r->durs, 0, r->ndurs, k50);
	r->p90 = select_kth(r->durs, k50, r->ndurs, k90);
	r->p99 = select_kth(r->durs, k90, r->ndurs, k99);
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
		row_percentiles(&sum->rows[i]);
	return 0;
}

/* A row of its own (category and name given), appended after the ioctl rows. */
static struct kx_stat_row *row_new(struct kx_stats *sum, const char *cat, const char *name)
{
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

/*
 * Per ring of every device: "<ring> exec" (DONE - RUN, or - QUEUE where the
 * source has no run) and "<ring> queue delay" (RUN - QUEUE), as time rows
 * of category jobs/<device>.
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
			uint64_t start = kx_jobrec_start(j);

			if (j->done_ts && (j->run_ts || j->queue_ts) &&
			    row_add(ex, j->done_ts - start, 0))
				return -1;
			if (!qd || j->src == KX_JOB_SRC_KVM)
				continue;
			if (j->queue_ts && j->run_ts && row_add(qd, j->run_ts - j->queue_ts, 0))
				return -1;
			if (!j->queue_ts && (j->flags & KX_JOBF_DIRECT) && row_add(qd, 0, 0))
				return -1;
		}
		row_percentiles(ex);
		if (qd)
			row_percentiles(qd);
	}
	return 0;
}

/*
 * Once the rows are filled (ok) or an allocation failed (!ok): the map
 * goes, the rows are named, merged and ranked. 0, or -1 with sum emptied.
 */
static int rows_close(struct kx_stats *sum, struct row_map *m, int ok)
{
	free(m->slot);
	if (ok && !rows_finalize(sum))
		return 0;
	kx_stats_free(sum);
	return -1;
}

int kx_stats_build(struct kx_stats *sum, const struct kx_store *s, const struct kx_capinfo *ci,
                   const struct kx_jobs *jobs)
{
	struct row_map m = {NULL, 0};
	size_t rcap = 0, n = kx_store_ioctl_count(s);

	memset(sum, 0, sizeof(*sum));
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		struct kx_stat_row *r = row_get(sum, &rcap, &m, e);
		uint64_t off = (uint64_t)e->offcpu_us * 1000;

		if (!r || row_add(r, e->dur, e->ret))
			return rows_close(sum, &m, 0);
		/* µs rounding can put the blocked time past the call's end. */
		r->offcpu += off < e->dur ? off : e->dur;
		if (e->offcpu_us)
			sum->offcpu_measured = 1;
	}
	for (uint32_t i = 0; ci && i < ci->nhooks && i < KX_MAX_HOOKS; i++)
		if (!strncmp(ci->hooks[i].name, "sched_switch", 12) &&
		    ci->hooks[i].state == KX_HOOK_ATTACHED)
			sum->offcpu_measured = 1;
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
	struct row_map m = {NULL, 0};
	size_t rcap = 0;

	memset(sum, 0, sizeof(*sum));
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
		for (int b = 0; b < KX_HIST_SLOTS && b < KX_STAT_HIST_BUCKETS; b++) {
			r->hist[b] += a->slots[b];
			if (a->slots[b] && !lo)
				lo = b ? 1ULL << b : 1;
			if (a->slots[b])
				hi = kx_agg_bucket_upper_ns(b);
		}
		/* Exact extremes when the key knows them, else the bucket bounds. */
		if (a->max_ns) {
			lo = a->min_ns;
			hi = a->max_ns;
		}
		r->count += a->count;
		r->errors += a->errors;
		r->total += a->sum_ns;
		if (lo < r->min)
			r->min = lo;
		if (hi > r->max)
			r->max = hi;
		sum->stored += a->count;
	}
	return rows_close(sum, &m, 1);
}

void kx_stats_free(struct kx_stats *sum)
{
	for (size_t i = 0; i < sum->nrows; i++) {
		free(sum->rows[i].durs);
		free(sum->rows[i].name);
	}
	free(sum->rows);
	memset(sum, 0, sizeof(*sum));
}
