/*
 * Device timelines of a whole store (kx_jobs_build; contract and rules:
 * analysis/jobs.h): its calls and job records fed in time order through
 * the streamed timelines (analysis/jobflow.h's kx_jobflow_init_whole),
 * which pair, link, place, count and sweep the jobs: within the streamed
 * read's bounds first (it holds few jobs besides those kept here), and
 * where those cannot give them exactly (a job open longer than the window,
 * ...), again with no bound (kx_jobflow_unbound: every job held to the
 * end). Kept here is only what the exporters' tables need beyond the
 * flow's figures: the jobs themselves, kept as they are counted and put in
 * their rings' order, each device's depth series, and the bitmap of the
 * calls that submitted a job.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobpair.h"
#include "analysis/jobs.h"
#include "util/grow.h"
#include "util/hist.h"

/* ---- the feed ---- */

/* What by_time sorts: a store's calls or job records. */
struct feed_order {
	const struct kx_store *s;
	int jobs;
};

static uint64_t rec_ts(const struct kx_store *s, int jobs, size_t i)
{
	return jobs ? kx_store_job(s, i)->ts : kx_store_ioctl(s, i)->ts;
}

static int time_cmp(const void *pa, const void *pb, void *arg)
{
	const struct feed_order *o = arg;
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	uint64_t ta = rec_ts(o->s, o->jobs, a), tb = rec_ts(o->s, o->jobs, b);

	if (ta != tb)
		return ta < tb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* The n calls (jobs: job records) of s by time, then index, in *ord: NULL
 * when they are in that order already. 0, or -1 when out of memory. */
static int by_time(const struct kx_store *s, int jobs, size_t n, size_t **ord)
{
	struct feed_order o = {s, jobs};
	size_t i = 1;

	*ord = NULL;
	while (i < n && rec_ts(s, jobs, i - 1) <= rec_ts(s, jobs, i))
		i++;
	if (i >= n)
		return 0;
	*ord = malloc(n * sizeof(**ord));
	if (!*ord)
		return -1;
	for (i = 0; i < n; i++)
		(*ord)[i] = i;
	qsort_r(*ord, n, sizeof(**ord), time_cmp, &o);
	return 0;
}

/* Every call and job record of s into f, merged in time order (a call
 * before a record of its time: the calls it may link to are in). */
static int feed(struct kx_jobflow *f, const struct kx_store *s)
{
	size_t n = kx_store_ioctl_count(s), m = kx_store_job_count(s), i = 0, k = 0;
	size_t *co = NULL, *jo = NULL;
	int rc = -1;

	/* Without job records a call's place in the feed changes no figure (the
	 * span, the calls and KVM_RUNs counted), nor does anything else of it:
	 * the calls go in as stored, counted only. */
	if (!m) {
		for (; i < n; i++)
			kx_jobflow_ioctl_alone(f, kx_store_ioctl(s, i));
		return 0;
	}
	if (by_time(s, 0, n, &co) || by_time(s, 1, m, &jo))
		goto out;
	for (size_t x = 0; x < m && !f->gpu_seen; x++)
		f->gpu_seen = kx_job_src_gpu(kx_store_job(s, x)->src);
	while (i < n || k < m) {
		size_t ci = co ? co[i < n ? i : 0] : i, jk = jo ? jo[k < m ? k : 0] : k;
		const struct kx_ioctl *e = i < n ? kx_store_ioctl(s, ci) : NULL;
		const struct kx_job *j = k < m ? kx_store_job(s, jk) : NULL;

		if (e && (!j || e->ts <= j->ts)) {
			if (kx_jobflow_ioctl_at(f, e, ci))
				goto out;
			if (f->why)
				break; /* read again with no bound */
			i++;
		} else {
			if (kx_jobflow_job(f, j))
				goto out;
			if (f->why)
				break;
			k++;
		}
	}
	rc = 0;
out:
	free(co);
	free(jo);
	return rc;
}

/* ---- the sink ---- */

/* The jobs as the flow counts them, with the order it sweeps them in. */
struct sink {
	struct kx_jobrec *jobs;
	size_t n, cap;
	uint32_t *swept; /* ids, in the order swept */
	size_t nswept, scap;
};

static int sink_job(void *ctx, const struct kx_jobrec *r, uint32_t *id)
{
	struct sink *k = ctx;

	if (k->n >= UINT32_MAX || kx_grow((void **)&k->jobs, &k->cap, k->n, sizeof(*k->jobs)))
		return -1;
	k->jobs[k->n] = *r;
	*id = (uint32_t)k->n++;
	return 0;
}

static int sink_lane(void *ctx, uint32_t id, uint32_t lane)
{
	struct sink *k = ctx;

	if (kx_grow((void **)&k->swept, &k->scap, k->nswept, sizeof(*k->swept)))
		return -1;
	k->jobs[id].lane = lane;
	k->swept[k->nswept++] = id;
	return 0;
}

/*
 * The sink's jobs into o in their tables' order: by ring (o's order), by
 * start within one (the order swept), each with its final ring and device,
 * every ring's first job noted. Reordered in place, one cycle at a time.
 * 0, or -1 when out of memory (or the jobs are not o's).
 */
static int sink_order(struct sink *k, const struct kx_jobflow *f, struct kx_jobs *o)
{
	uint32_t *dest = malloc((k->n ? k->n : 1) * sizeof(*dest));
	size_t *next = calloc(o->nrings ? o->nrings : 1, sizeof(*next));
	size_t first = 0;
	int rc = -1;

	if (!dest || !next || k->nswept != k->n)
		goto out;
	for (size_t r = 0; r < o->nrings; r++) {
		o->rings[r].first = next[r] = first;
		first += o->rings[r].njobs;
	}
	for (size_t i = 0; i < k->nswept; i++) {
		struct kx_jobrec *j = &k->jobs[k->swept[i]];

		j->ring = kx_jobflow_ring_final(f, j->ring);
		j->dev = o->rings[j->ring].dev;
		dest[k->swept[i]] = (uint32_t)next[j->ring]++;
	}
	for (size_t i = 0; i < k->n; i++)
		while (dest[i] != i) {
			uint32_t d = dest[i];
			struct kx_jobrec t = k->jobs[d];

			k->jobs[d] = k->jobs[i];
			k->jobs[i] = t;
			dest[i] = dest[d];
			dest[d] = d;
		}
	free(o->jobs);
	o->jobs = k->jobs;
	o->njobs = k->n;
	k->jobs = NULL;
	rc = 0;
out:
	free(dest);
	free(next);
	return rc;
}

/*
 * The jobs in flight after each distinct time one came in (in[0..nin)) or
 * completed (out[0..nout)): both sorted, then merged, the depth noted once
 * every change at that time is applied. 0, or -1 when out of memory.
 */
static int depth_series(struct kx_jobdev *d, uint64_t *in, size_t nin, uint64_t *out, size_t nout)
{
	size_t a = 0, b = 0;
	uint32_t depth = 0;

	kx_sort_u64(in, nin);
	kx_sort_u64(out, nout);
	d->max_depth = 0;
	d->depth = malloc((nin + nout ? nin + nout : 1) * sizeof(*d->depth));
	if (!d->depth)
		return -1;
	while (a < nin || b < nout) {
		uint64_t ts;

		if (b < nout && (a == nin || out[b] <= in[a])) {
			ts = out[b++];
			depth--;
		} else {
			ts = in[a++];
			depth++;
		}
		if ((a < nin && in[a] == ts) || (b < nout && out[b] == ts))
			continue;
		d->depth[d->ndepth++] = (struct kx_depth_pt){ts, depth};
		if (depth > d->max_depth)
			d->max_depth = depth;
	}
	return 0;
}

/* Every device's depth series, from its jobs (in, out: room for them). */
static int depths(struct kx_jobs *o, uint64_t *in, uint64_t *out)
{
	for (size_t i = 0; i < o->ndevs; i++) {
		struct kx_jobdev *d = &o->devs[i];
		size_t nin = 0, nout = 0, first, n = 0;

		if (!d->nrings)
			continue;
		first = o->rings[d->first_ring].first;
		for (uint32_t r = 0; r < d->nrings; r++)
			n += o->rings[d->first_ring + r].njobs;
		for (size_t k = 0; k < n; k++) {
			const struct kx_jobrec *j = &o->jobs[first + k];
			uint64_t ts = j->queue_ts ? j->queue_ts : j->run_ts;

			if (!ts)
				continue;
			in[nin++] = ts;
			if (j->done_ts)
				out[nout++] = j->done_ts;
		}
		if (depth_series(d, in, nin, out, nout))
			return -1;
	}
	return 0;
}

/* The tables of o from the sink: jobs, depth series, submitting calls. */
static int sink_done(struct sink *k, const struct kx_jobflow *f, struct kx_jobs *o,
                     const struct kx_store *s)
{
	uint64_t *in, *out;
	int rc;

	if (sink_order(k, f, o))
		return -1;
	free(o->submitted);
	o->nioctls = kx_store_ioctl_count(s);
	o->submitted = calloc(o->nioctls / 8 + 1, 1);
	in = malloc((o->njobs ? o->njobs : 1) * sizeof(*in));
	out = malloc((o->njobs ? o->njobs : 1) * sizeof(*out));
	rc = o->submitted && in && out ? depths(o, in, out) : -1;
	free(in);
	free(out);
	for (size_t i = 0; !rc && i < o->njobs; i++) {
		int64_t x = o->jobs[i].submit;

		if (x >= 0 && (size_t)x < o->nioctls)
			o->submitted[x / 8] |= (uint8_t)(1u << (x % 8));
	}
	return rc;
}

/* The timelines of s, with no bound when unbounded. NULL when out of
 * memory, or (*again set) when they cannot be exact within the bounds. */
static struct kx_jobs *build(const struct kx_store *s, const struct kx_capinfo *ci, int unbounded,
                             int *again)
{
	struct sink k;
	const struct kx_jobflow_sink sk = {sink_job, sink_lane, &k};
	struct kx_jobflow f;
	struct kx_jobs *o = NULL;

	memset(&k, 0, sizeof(k));
	kx_jobflow_init_whole(&f, ci, &sk);
	if (unbounded)
		kx_jobflow_unbound(&f);
	if (!feed(&f, s) && !f.why)
		o = kx_jobflow_finish(&f, s, NULL);
	*again = f.why != NULL;
	if (o && sink_done(&k, &f, o, s)) {
		kx_jobs_free(o);
		o = NULL;
	}
	kx_jobflow_free(&f);
	free(k.jobs);
	free(k.swept);
	return o;
}

struct kx_jobs *kx_jobs_build(const struct kx_store *s, const struct kx_capinfo *ci)
{
	int again = 0;
	struct kx_jobs *o = build(s, ci, 0, &again);

	return o || !again ? o : build(s, ci, 1, &again);
}

struct kx_jobs *kx_jobs_build_exact(const struct kx_store *s, const struct kx_capinfo *ci)
{
	int again = 0;

	return build(s, ci, 1, &again);
}
