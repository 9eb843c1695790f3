/*
 * Device timelines (contract and rules: jobs.h). Owns pairing job phases
 * into jobs, KVM_RUN jobs, submit and wait links, device and ring
 * assignment, lanes, per-ring and per-device statistics, the anomaly
 * counters and memory accounting from decoded ioctl arguments.
 *
 * One pass over the job events in timestamp order pairs phases through a
 * hash of open keys; ioctls are indexed by (tid, enter) for the links and
 * by enter for the wait ioctls. Everything else is sorting small arrays.
 * A stream gets the same figures as its records pass, by the same rules
 * (analysis/jobflow.h), keeping none of them.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobpair.h"
#include "analysis/jobs.h"
#include "registry/drivers.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/hist.h"
#include "util/keymap.h"
#include "util/lbound.h"
#include "util/tidtab.h"

/* ---- the builder ---- */

/* An ioctl in the (tid, enter) index. */
struct tix {
	uint32_t tid;
	uint64_t ts;
	size_t idx;
};

struct builder {
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	struct kx_jobs *out;

	struct kx_tjob *tj;
	size_t ntj, tjcap;
	struct tix *tix; /* ioctls by (tid, ts) */
	size_t ntix;
	struct kx_jobdevtab devs;
	struct kx_keymap names; /* (drv, cmd, xfer) -> 1 + is_wait */
};

/* Is e a GPU driver's wait ioctl (a waiter is looked for among them)? 0/1, -1 on OOM. */
static int gpu_wait(struct kx_keymap *names, const struct kx_ioctl *e)
{
	int wait = 0;

	if (!kx_drv_gpu(e->drv))
		return 0;
	return kx_wait_ioctl(names, e, &wait) ? -1 : wait;
}

/* ---- pairing ---- */

static const struct kx_job *job_ev(const struct builder *b, size_t i)
{
	return kx_store_job(b->s, i);
}

static int ev_cmp(const void *pa, const void *pb, void *arg)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	uint64_t ta = kx_store_job(arg, a)->ts, tb = kx_store_job(arg, b)->ts;

	if (ta != tb)
		return ta < tb ? -1 : 1;
	return a < b ? -1 : a > b;
}

/* A new job; NULL when out of memory (or past UINT32_MAX - 1 jobs: struct jref). */
static struct kx_tjob *tjob_new(struct builder *b)
{
	struct kx_tjob *t;

	if (b->ntj >= UINT32_MAX - 1 || kx_grow((void **)&b->tj, &b->tjcap, b->ntj, sizeof(*b->tj)))
		return NULL;
	t = &b->tj[b->ntj++];
	kx_tjob_init(t);
	return t;
}

/* One QUEUE/RUN/DONE event of a keyed source. */
static int pair_event(struct builder *b, struct kx_keymap *open, const struct kx_job *e)
{
	struct kx_keyslot *sl;
	struct kx_tjob *t;
	uint64_t k[3];

	kx_jobpair_key(e, k);
	sl = kx_keymap_get(open, k[0], k[1], k[2]);
	if (!sl)
		return -1;
	if (!kx_jobpair_phase(sl->v ? &b->tj[sl->v - 1] : NULL, e, &b->out->anom))
		return 0;
	t = tjob_new(b);
	if (!t)
		return -1;
	kx_tjob_first(t, e);
	sl->v = b->ntj;
	return 0;
}

/* A wait phase names the waiter of the job its key points at. */
static void wait_event(struct builder *b, const struct kx_keymap *open, const struct kx_job *e)
{
	struct kx_keyslot *sl;
	uint64_t k[3];

	kx_jobpair_key(e, k);
	sl = kx_keymap_find(open, k[0], k[1], k[2]);
	if (sl && sl->v)
		kx_tjob_wait(&b->tj[sl->v - 1], e);
}

/* ---- the (tid, enter) ioctl index ---- */

static int tix_cmp(const void *pa, const void *pb)
{
	const struct tix *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int build_tix(struct builder *b)
{
	size_t n = kx_store_ioctl_count(b->s);

	b->tix = malloc((n ? n : 1) * sizeof(*b->tix));
	if (!b->tix)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		b->tix[i] = (struct tix){e->tid, e->ts, i};
	}
	b->ntix = n;
	qsort(b->tix, n, sizeof(*b->tix), tix_cmp);
	return 0;
}

/* The last ioctl of tid entered at or before t, or NULL. */
static const struct tix *tix_at(const struct builder *b, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = b->ntix;

	/* First entry after (tid, t). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tix *x = &b->tix[mid];

		if (x->tid < tid || (x->tid == tid && x->ts <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || b->tix[lo - 1].tid != tid)
		return NULL;
	return &b->tix[lo - 1];
}

/* ---- KVM: one job per KVM_RUN ---- */

static int kvm_event(struct builder *b, uint8_t *used, const struct kx_job *e)
{
	const struct tix *x;
	const struct kx_ioctl *io = NULL;
	struct kx_tjob *t;

	if (e->phase != KX_JOB_DONE)
		return 0; /* intermediate exits: not jobs */
	x = tix_at(b, kx_kvm_tid(e), e->ts);
	if (x) {
		io = kx_store_ioctl(b->s, x->idx);
		if (!kx_kvm_run_holds(io, e->ts))
			io = NULL;
	}
	if (io && (used[x->idx / 8] >> (x->idx % 8) & 1)) {
		b->out->anom.duplicate++;
		return 0;
	}
	t = tjob_new(b);
	if (!t)
		return -1;
	kx_tjob_kvm(t, e, io, io ? (int64_t)x->idx : -1);
	if (io)
		used[x->idx / 8] |= (uint8_t)(1u << (x->idx % 8));
	return 0;
}

/* ---- submit links ---- */

static void link_submit(struct builder *b, struct kx_tjob *t)
{
	uint64_t at = kx_tjob_link_at(t);
	const struct tix *x;

	if (!at)
		return;
	x = tix_at(b, t->r.tid, at);
	if (x && kx_tjob_links_to(t, kx_store_ioctl(b->s, x->idx))) {
		t->r.submit = (int64_t)x->idx;
		return;
	}
	kx_tjob_no_link(t);
}

/* ---- devices ---- */

/* Ring name -> driver learnt from the linked jobs of that ring. */
static int learn_ring_drivers(struct builder *b, struct kx_keymap *m)
{
	for (size_t i = 0; i < b->ntj; i++) {
		const struct kx_tjob *t = &b->tj[i];
		struct kx_keyslot *sl;

		if (t->r.submit < 0 || kx_job_src_driver(t->r.src) || !kx_job_src_gpu(t->r.src))
			continue;
		sl = kx_keymap_get(m, t->r.src, kx_hash_bytes(t->ring, strlen(t->ring)), 0);
		if (!sl)
			return -1;
		if (!sl->v)
			sl->v = kx_store_ioctl(b->s, (size_t)t->r.submit)->drv;
	}
	return 0;
}

static long assign_device(struct builder *b, const struct kx_keymap *ringdrv,
                          const struct kx_tjob *t)
{
	unsigned int submit_drv = 0, ring_drv = 0;
	struct kx_keyslot *sl;

	if (t->r.submit >= 0)
		submit_drv = kx_store_ioctl(b->s, (size_t)t->r.submit)->drv;
	sl = kx_keymap_find(ringdrv, t->r.src, kx_hash_bytes(t->ring, strlen(t->ring)), 0);
	if (sl)
		ring_drv = (unsigned int)sl->v;
	return kx_jobdevtab_assign(&b->devs, t, submit_drv, ring_drv);
}

/* ---- rings, lanes, statistics ---- */

struct jref {
	const char *ring;
	uint64_t start; /* once sorted: the job's ring (make_rings) */
	uint32_t dev;
	uint32_t idx; /* in the builder's array; JREF_MOVED once moved (order_jobs) */
};
#define JREF_MOVED UINT32_MAX /* so a capture holds fewer jobs (tjob_new) */

/* Jobs by device (in the devices' final order), ring, start. */
static int jref_cmp(const void *pa, const void *pb)
{
	const struct jref *a = pa, *b = pb;
	int c;

	if (a->dev != b->dev)
		return a->dev < b->dev ? -1 : 1;
	c = strcmp(a->ring, b->ring);
	if (c)
		return c;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Count, total, extremes and nearest-rank percentiles of v[0..n) (reordered). */
static void dist_of(struct kx_dist *d, uint64_t *v, size_t n)
{
	static const uint32_t ppm[3] = {KX_PPM(50), KX_PPM(90), KX_PPM(99)};
	uint64_t q[3];

	memset(d, 0, sizeof(*d));
	if (!n)
		return;
	d->count = n;
	d->min = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		d->total += v[i];
		if (v[i] < d->min)
			d->min = v[i];
		if (v[i] > d->max)
			d->max = v[i];
	}
	kx_quantiles_exact(v, n, ppm, q, 3);
	d->p50 = q[0];
	d->p90 = q[1];
	d->p99 = q[2];
}

struct ival {
	uint64_t a, b;
};

static int ival_cmp(const void *pa, const void *pb)
{
	const struct ival *x = pa, *y = pb;

	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

/* Length of the union of intervals (sorted here). */
static uint64_t union_len(struct ival *v, size_t n)
{
	uint64_t total = 0, a = 0, e = 0;

	qsort(v, n, sizeof(*v), ival_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && v[i].a <= e) {
			if (v[i].b > e)
				e = v[i].b;
			continue;
		}
		if (i)
			total += e - a;
		a = v[i].a;
		e = v[i].b;
	}
	return n ? total + (e - a) : 0;
}

static int busy_ival(const struct kx_jobrec *j, uint64_t end_ns, struct ival *iv)
{
	return kx_jobrec_busy(j, end_ns, &iv->a, &iv->b);
}

static int ring_stats(struct kx_jobs *o, struct kx_jobring *r, uint64_t *tmp, struct ival *iv)
{
	uint64_t *lane_end = NULL;
	size_t nexec = 0, nq = 0, niv = 0, lanecap = 0;

	r->nlanes = 0;
	for (size_t k = 0; k < r->njobs; k++) {
		struct kx_jobrec *j = &o->jobs[r->first + k];
		uint64_t s = kx_jobrec_start(j), e = kx_jobrec_end(j, o->end_ns);
		uint32_t l;

		for (l = 0; l < r->nlanes && lane_end[l] > s; l++)
			;
		if (l == r->nlanes) {
			if (kx_grow((void **)&lane_end, &lanecap, r->nlanes, sizeof(*lane_end))) {
				free(lane_end);
				return -1;
			}
			r->nlanes++;
		}
		lane_end[l] = e;
		j->lane = l;
		if (j->done_ts)
			r->completed++;
		if (j->submit >= 0)
			r->linked++;
		nexec += kx_jobrec_exec(j, &tmp[nexec]);
		if (busy_ival(j, o->end_ns, &iv[niv]))
			niv++;
	}
	free(lane_end);
	dist_of(&r->exec, tmp, nexec);
	for (size_t k = 0; k < r->njobs; k++)
		nq += kx_jobrec_queue_delay(&o->jobs[r->first + k], 0, &tmp[nq]);
	dist_of(&r->queue, tmp, nq);
	r->busy_ns = union_len(iv, niv);
	return 0;
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

/* in, out: room for the device's jobs each (busy intervals in iv). */
static int dev_stats(struct kx_jobs *o, struct kx_jobdev *d, struct ival *iv, uint64_t *in,
                     uint64_t *out)
{
	size_t niv = 0, nin = 0, nout = 0, first = o->rings[d->first_ring].first, n = 0;

	for (uint32_t r = 0; r < d->nrings; r++)
		n += o->rings[d->first_ring + r].njobs;
	for (size_t k = 0; k < n; k++) {
		const struct kx_jobrec *j = &o->jobs[first + k];
		uint64_t ts = j->queue_ts ? j->queue_ts : j->run_ts;

		d->njobs++;
		d->completed += j->done_ts != 0;
		d->incomplete += (j->flags & KX_JOBF_INCOMPLETE) != 0;
		d->no_queue += (j->flags & KX_JOBF_NO_QUEUE) != 0;
		d->linked += j->submit >= 0;
		if (busy_ival(j, o->end_ns, &iv[niv]))
			niv++;
		if (!ts)
			continue;
		in[nin++] = ts;
		if (j->done_ts)
			out[nout++] = j->done_ts;
	}
	d->busy_ns = union_len(iv, niv);
	if (o->end_ns > o->start_ns) {
		d->busy_fraction = (double)d->busy_ns / (double)(o->end_ns - o->start_ns);
		if (d->busy_fraction > 1.0)
			d->busy_fraction = 1.0;
	}
	return depth_series(d, in, nin, out, nout);
}

/* The rings, in the jobs' final order (ref), each job's noted in its ref's
 * start. 0, or -1 when out of memory. */
static int make_rings(struct builder *b, struct jref *ref)
{
	struct kx_jobs *o = b->out;
	size_t rcap = 0;

	for (size_t k = 0; k < b->ntj; k++) {
		const struct kx_tjob *t = &b->tj[ref[k].idx];
		struct kx_jobring *r = o->nrings ? &o->rings[o->nrings - 1] : NULL;

		if (!r || r->dev != t->r.dev || strcmp(r->name, t->ring)) {
			if (kx_grow((void **)&o->rings, &rcap, o->nrings, sizeof(*o->rings)))
				return -1;
			r = &o->rings[o->nrings++];
			memset(r, 0, sizeof(*r));
			snprintf(r->name, sizeof(r->name), "%s", t->ring);
			r->dev = t->r.dev;
			r->first = k;
		}
		ref[k].start = o->nrings - 1;
		r->njobs++;
	}
	return 0;
}

/*
 * The jobs' records in their final order (ref), made in the builder's own
 * array, which becomes kx_jobs.jobs: each record moved to the front of its
 * entry (a record is the entry's first and smaller part), then the order
 * applied one cycle at a time, so the jobs are never held twice.
 */
_Static_assert(offsetof(struct kx_tjob, r) == 0 &&
                       sizeof(struct kx_tjob) >= sizeof(struct kx_jobrec),
               "a job's record is the front of its pairing entry");

static void order_jobs(struct builder *b, struct jref *ref)
{
	struct kx_jobrec *j = (struct kx_jobrec *)b->tj, *shrunk;
	size_t n = b->ntj;

	for (size_t i = 0; i < n; i++)
		memmove(&j[i], &b->tj[i].r, sizeof(*j));
	for (size_t k = 0; k < n; k++) {
		struct kx_jobrec first;
		size_t at = k;

		if (ref[k].idx == JREF_MOVED)
			continue;
		first = j[k];
		while (ref[at].idx != k) {
			size_t from = ref[at].idx;

			j[at] = j[from];
			ref[at].idx = JREF_MOVED;
			at = from;
		}
		j[at] = first;
		ref[at].idx = JREF_MOVED;
	}
	for (size_t k = 0; k < n; k++)
		j[k].ring = (uint32_t)ref[k].start;
	shrunk = realloc(j, (n ? n : 1) * sizeof(*j));
	b->out->jobs = shrunk ? shrunk : j;
	b->out->njobs = n;
	b->tj = NULL;
	b->ntj = b->tjcap = 0;
}

/* Rings, job order and every statistic, from the paired jobs. */
static int finish_jobs(struct builder *b)
{
	struct kx_jobs *o = b->out;
	size_t n = b->ntj;
	struct jref *ref = malloc((n ? n : 1) * sizeof(*ref));
	uint32_t *newidx = malloc((b->devs.n ? b->devs.n : 1) * sizeof(*newidx));
	uint64_t *tmp = NULL;
	struct ival *iv = NULL;
	uint64_t *done = NULL;
	int rc = -1;

	/* The builder's array holds at least one record: kx_jobs.jobs is never NULL. */
	if (!ref || !newidx || (!b->tj && kx_grow((void **)&b->tj, &b->tjcap, 0, sizeof(*b->tj))))
		goto out;
	/* Devices get their final order; jobs carry the new indices. */
	if (kx_jobdevtab_order(&b->devs, newidx))
		goto out;
	o->devs = b->devs.devs;
	o->ndevs = b->devs.n;
	for (size_t i = 0; i < n; i++) {
		b->tj[i].r.dev = newidx[b->tj[i].r.dev];
		ref[i] = (struct jref){b->tj[i].ring, kx_jobrec_start(&b->tj[i].r), b->tj[i].r.dev,
		                       (uint32_t)i};
	}
	qsort(ref, n, sizeof(*ref), jref_cmp);
	if (make_rings(b, ref))
		goto out;
	order_jobs(b, ref);
	free(ref);
	ref = NULL;
	tmp = malloc((n ? n : 1) * sizeof(*tmp));
	iv = malloc((n ? n : 1) * sizeof(*iv));
	done = malloc((n ? n : 1) * sizeof(*done));
	if (!tmp || !iv || !done)
		goto out;
	for (size_t i = 0; i < o->nrings; i++) {
		struct kx_jobring *r = &o->rings[i];
		struct kx_jobdev *d = &o->devs[r->dev];

		if (!d->nrings)
			d->first_ring = (uint32_t)i;
		r->id = d->nrings++;
		if (ring_stats(o, r, tmp, iv))
			goto out;
	}
	for (size_t i = 0; i < o->ndevs; i++)
		if (o->devs[i].nrings && dev_stats(o, &o->devs[i], iv, tmp, done))
			goto out;
	rc = 0;
out:
	free(ref);
	free(tmp);
	free(iv);
	free(done);
	free(newidx);
	return rc;
}

/* ---- waits by ioctl ---- */

struct wix {
	uint64_t ts, end;
	size_t idx;
};

static uint64_t wix_ts_at(const void *w, size_t i)
{
	return ((const struct wix *)w)[i].ts;
}

static int wix_cmp(const void *pa, const void *pb)
{
	const struct wix *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The best waiter of job j among the waits w[0..lo) entered at or before its DONE. */
static void best_waiter(struct builder *b, struct kx_jobrec *j, const struct wix *w, size_t lo,
                        uint64_t maxdur)
{
	const struct kx_jobdev *d = &b->out->devs[j->dev];
	struct kx_waitcand best = {0, 0, 0}, c;
	int found = 0;

	while (lo-- > 0 && j->done_ts - w[lo].ts <= maxdur) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, w[lo].idx);

		if (w[lo].end < j->done_ts || !kx_waiter_fits(d, e))
			continue;
		c = (struct kx_waitcand){e->pid, w[lo].end, w[lo].idx};
		if (!found || kx_waiter_better(&c, &best, j->pid)) {
			best = c;
			found = 1;
		}
	}
	if (found) {
		j->wait = (int64_t)best.idx;
		j->waiter_tid = kx_store_ioctl(b->s, (size_t)best.idx)->tid;
	}
}

static int link_waiters(struct builder *b)
{
	struct kx_jobs *o = b->out;
	size_t n = kx_store_ioctl_count(b->s), nw = 0, cap = 0;
	struct wix *w = NULL;
	uint64_t maxdur = 0;

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);
		int wait = gpu_wait(&b->names, e);

		if (wait < 0)
			goto oom;
		if (!wait)
			continue;
		if (kx_grow((void **)&w, &cap, nw, sizeof(*w)))
			goto oom;
		w[nw++] = (struct wix){e->ts, kx_ioctl_end(e), i};
		if (e->dur > maxdur)
			maxdur = e->dur;
	}
	if (nw > 1)
		qsort(w, nw, sizeof(*w), wix_cmp);
	for (size_t k = 0; nw && k < o->njobs; k++) {
		struct kx_jobrec *j = &o->jobs[k];
		size_t lo;

		if (j->waiter_tid || !j->done_ts || !kx_job_src_gpu(j->src))
			continue;
		/* Past the last wait entered at or before DONE, then back over maxdur. */
		lo = j->done_ts == UINT64_MAX ? nw : kx_lbound(0, nw, j->done_ts + 1, wix_ts_at, w);
		best_waiter(b, j, w, lo, maxdur);
	}
	for (size_t k = 0; k < o->njobs; k++)
		if (o->jobs[k].waiter_tid)
			o->rings[o->jobs[k].ring].waited++;
	free(w);
	return 0;
oom:
	free(w);
	return -1;
}

/* ---- memory ---- */

struct mem_ev {
	uint64_t ts;
	size_t idx;
};

static int mem_ev_cmp(const void *pa, const void *pb)
{
	const struct mem_ev *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int mem_add(struct kx_jobdevtab *devs, long dev, const struct kx_ioctl *e, size_t idx,
                   int64_t delta)
{
	struct kx_jobdev *d = &devs->devs[dev];
	size_t n = d->nmem;
	/* The capacity is not kept: kx_grow's sizes are 0, 16, 32, 64, ..., so
	 * it is the count rounded up to one of them. */
	size_t cap = n <= 16 ? (n ? 16 : 0) : (size_t)1 << (64 - __builtin_clzll(n - 1));
	uint64_t usage;

	if (kx_grow((void **)&d->mem, &cap, n, sizeof(*d->mem)))
		return -1;
	usage = kx_jobdev_mem_apply(d, delta);
	d->mem[n] = (struct kx_mem_pt){kx_ioctl_end(e), delta, usage, idx};
	return 0;
}

int kx_jobs_memory(const struct kx_store *s, struct kx_jobdevtab *devs, struct kx_nvmem *nv)
{
	size_t n = kx_store_ioctl_count(s), nev = 0, cap = 0;
	struct mem_ev *ev = NULL; /* the calls with an argument copy: few in most captures */
	struct kx_memacct m = KX_MEMACCT_INIT;
	int rc = -1;

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		if (e->ret < 0 || e->arg_off == KX_NO_ARG)
			continue;
		if (kx_grow((void **)&ev, &cap, nev, sizeof(*ev)))
			goto out;
		ev[nev++] = (struct mem_ev){kx_ioctl_end(e), i};
	}
	if (nev)
		qsort(ev, nev, sizeof(*ev), mem_ev_cmp);
	for (size_t k = 0; k < nev; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, ev[k].idx);
		int64_t delta = 0;
		int what = kx_memacct_step(&m, e, kx_store_arg(s, e), &delta);
		long dev;

		if (what < 0)
			goto out;
		if (what == KX_MEM_NONE)
			continue;
		dev = kx_jobdevtab_mem(devs, e);
		if (dev < 0)
			goto out;
		if (what == KX_MEM_UNKNOWN_FREE)
			devs->devs[dev].mem_unknown_frees++;
		else if (mem_add(devs, dev, e, ev[k].idx, delta))
			goto out;
		if ((m.nv[KX_NVMEM_VID] || m.nv[KX_NVMEM_SYS]) &&
		    kx_nvmem_add(nv, e->pid, kx_ioctl_end(e), m.nv))
			goto out;
	}
	for (size_t i = 0; i < devs->n; i++)
		kx_jobdev_mem_finish(&devs->devs[i]);
	rc = 0;
out:
	free(ev);
	kx_memacct_free(&m);
	return rc;
}

/* ---- entry points ---- */

static void span(struct builder *b)
{
	struct kx_jobs *o = b->out;
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t n = kx_store_ioctl_count(b->s), m = kx_store_job_count(b->s);

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		if (e->ts < lo)
			lo = e->ts;
		if (kx_ioctl_end(e) > hi)
			hi = kx_ioctl_end(e);
	}
	for (size_t i = 0; i < m; i++) {
		uint64_t t = job_ev(b, i)->ts;

		if (t < lo)
			lo = t;
		if (t > hi)
			hi = t;
	}
	o->start_ns =
	        b->ci && b->ci->start_mono_ns ? b->ci->start_mono_ns : (lo == UINT64_MAX ? 0 : lo);
	o->end_ns = b->ci && b->ci->stop_mono_ns > o->start_ns ? b->ci->stop_mono_ns : hi;
	if (o->end_ns < o->start_ns)
		o->end_ns = o->start_ns;
}

static int pair_all(struct builder *b, struct kx_keymap *open)
{
	size_t m = kx_store_job_count(b->s), n = kx_store_ioctl_count(b->s);
	size_t *ord = malloc((m ? m : 1) * sizeof(*ord));
	uint8_t *used = calloc(n / 8 + 1, 1);
	int has_kvm = 0, rc = -1;

	if (!ord || !used)
		goto out;
	for (size_t i = 0; i < m; i++)
		ord[i] = i;
	qsort_r(ord, m, sizeof(*ord), ev_cmp, (void *)b->s);
	for (size_t k = 0; k < m; k++) {
		const struct kx_job *e = job_ev(b, ord[k]);

		switch (kx_jobpair_kind(e)) {
		case KX_JEV_KVM:
			has_kvm = 1;
			if (kvm_event(b, used, e))
				goto out;
			break;
		case KX_JEV_UNKNOWN:
			b->out->anom.unknown++;
			break;
		case KX_JEV_WAIT:
			wait_event(b, open, e);
			break;
		case KX_JEV_DEP:
			break;
		default:
			if (pair_event(b, open, e))
				goto out;
		}
	}
	/* Every KVM_RUN should end in an exit event once the source is on. */
	for (size_t i = 0; has_kvm && i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		if (kx_kvm_run(e) && !(used[i / 8] >> (i % 8) & 1))
			b->out->anom.runs_without_exit++;
	}
	rc = 0;
out:
	free(ord);
	free(used);
	return rc;
}

/* Flags, links and devices of the paired jobs. */
static int classify(struct builder *b)
{
	struct kx_keymap ringdrv = KX_KEYMAP_INIT;
	int rc = -1;

	for (size_t i = 0; i < b->ntj; i++) {
		struct kx_tjob *t = &b->tj[i];

		link_submit(b, t);
		kx_tjob_classify(t, &b->out->anom);
		if (t->r.submit >= 0)
			b->out->submitted[t->r.submit / 8] |= (uint8_t)(1u << (t->r.submit % 8));
	}
	if (learn_ring_drivers(b, &ringdrv))
		goto out;
	for (size_t i = 0; i < b->ntj; i++) {
		struct kx_tjob *t = &b->tj[i];
		long d;

		kx_tjob_ring_name(t);
		d = assign_device(b, &ringdrv, t);
		if (d < 0)
			goto out;
		t->r.dev = (uint32_t)d;
		kx_tjob_ring_fallback(t);
	}
	rc = 0;
out:
	kx_keymap_free(&ringdrv);
	return rc;
}

static void builder_free(struct builder *b, struct kx_keymap *open)
{
	kx_keymap_free(open);
	free(b->tj);
	free(b->tix);
	kx_jobdevtab_free(&b->devs);
	kx_keymap_free(&b->names);
}

struct kx_jobs *kx_jobs_build(const struct kx_store *s, const struct kx_capinfo *ci)
{
	struct builder b;
	struct kx_keymap open = KX_KEYMAP_INIT;
	struct kx_jobs *o = calloc(1, sizeof(*o));

	memset(&b, 0, sizeof(b));
	if (!o)
		return NULL;
	b.s = s;
	b.ci = ci;
	b.out = o;
	b.devs.ci = ci;
	o->store = s;
	o->nioctls = kx_store_ioctl_count(s);
	o->submitted = calloc(o->nioctls / 8 + 1, 1);
	/* The (tid, enter) index serves the links only: none without job events. */
	if (!o->submitted || (kx_store_job_count(s) && build_tix(&b)))
		goto fail;
	span(&b);
	if (pair_all(&b, &open) || classify(&b))
		goto fail;
	free(b.tix); /* the links are made */
	b.tix = NULL;
	/* Memory devices join before the final device order is fixed. */
	if (kx_jobs_memory(s, &b.devs, &o->nvmem) || finish_jobs(&b) || link_waiters(&b))
		goto fail;
	kx_jobdevs_unique_names(o->devs, o->ndevs);
	builder_free(&b, &open);
	return o;
fail:
	/* Devices not handed to o yet are the builder's. */
	if (!o->devs) {
		for (size_t i = 0; i < b.devs.n; i++)
			free(b.devs.devs[i].mem);
		free(b.devs.devs);
	}
	builder_free(&b, &open);
	kx_jobs_free(o);
	return NULL;
}

void kx_jobs_free(struct kx_jobs *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->ndevs; i++) {
		free(j->devs[i].depth);
		free(j->devs[i].mem);
	}
	free(j->jobs);
	free(j->rings);
	free(j->devs);
	free(j->submitted);
	kx_nvmem_free(&j->nvmem);
	free(j);
}
