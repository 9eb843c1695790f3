/*
 * The streamed device timelines (contract: jobflow.h): KVM exits paired
 * with their KVM_RUN on their thread, jobs folded into their ring's and
 * device's figures, then swept in start order for lanes, busy time and the
 * most in flight.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "util/grow.h"
#include "util/hashmap.h"

/* A KVM exit waiting for the call of its thread that holds it. */
struct fl_exit {
	struct kx_job e;
	uint64_t seq;         /* its place among the job records */
	struct kx_ioctl cand; /* the thread's last call entered at or before it so far */
	uint64_t cand_id;     /* that call's id (0: none) */
};

/* A block record's look at the calls of its task (a slot of recs). */
struct fl_probe {
	uint32_t slot, gen;
};

struct fl_thread {
	struct kx_ioctl last; /* its last call */
	uint64_t last_id;     /* that call's id (0: none yet) */
	uint64_t used_id;     /* the KVM_RUN its last job was made of (0: none) */
	uint64_t exit_ts;     /* ns, its latest KVM exit so far */
	struct fl_exit *open; /* its exits waiting, in file order */
	size_t nopen, cap;
	struct fl_probe *probes; /* its block records still looking at its calls */
	size_t nprobes, pcap;
	uint64_t forced_at; /* ns, the latest such record paired before a later call came */
};

/* A block record waiting for earlier ones, with its submit link's candidate. */
struct fl_rec {
	struct kx_job e;
	uint64_t seq;         /* its place among the job records */
	struct kx_ioctl cand; /* its task's last call entered at or before it so far */
	uint64_t cand_id;     /* that call's id (0: none) */
	uint32_t gen;
	uint8_t looking; /* its task's calls may still change cand */
};

/* Where a block record waits: its order, its slot. */
struct fl_recref {
	uint64_t ts, seq;
	uint32_t slot, gen;
};

/* An open block request. */
struct fl_kjob {
	struct kx_tjob t;
	uint64_t ts, seq; /* the record that opened it */
	uint32_t gen;
	uint8_t submit_drv; /* its submitting call's driver (0: none) */
};

/* An open request's place in the sweeps' order, at the earliest. */
struct fl_openref {
	uint64_t start, ts, seq;
	uint32_t slot, gen;
};

/* A closed key, remembered or forgotten. */
struct kx_jobflow_key {
	uint64_t k[3];
	uint64_t done;      /* ns, its DONE (remembered keys) */
	uint32_t slot, gen; /* its job still held in f->open (GPU), else NO_SLOT */
	uint8_t reusable;   /* its source reuses keys (kx_jobpair_reusable) */
	uint8_t used;       /* a forgotten key is in this table slot */
	uint8_t lost;       /* a forgotten key was put over another here */
};

/* The driver a shared fence source's ring learnt from its first linked job. */
struct kx_jobflow_ringdrv {
	uint64_t ts, seq; /* that job's record (the builder's order) */
	uint8_t drv;
};

/* A GPU driver's wait call that may hold a DONE to come. */
struct kx_jobflow_wait {
	uint64_t ts, end, id; /* ns; its place among the calls */
	uint32_t pid, tid;
	uint8_t drv;
};

#define NO_SLOT    UINT32_MAX
#define KEY_CLOSED UINT64_MAX /* f->keys: the key's job is closed and counted */

/* A made job waiting for its turn in start order. */
struct fl_job {
	uint64_t start, end; /* ns, as drawn (kx_jobrec_start, kx_jobrec_end) */
	uint64_t in;         /* ns, when it came in flight (queue, else run), 0: never */
	uint64_t ts, seq; /* the record that made it: its time, its place (the builder's order) */
	uint32_t ring;    /* index in f->rings */
	uint8_t busy;     /* it has a busy interval ([start, end]) */
	uint8_t done;
};

/* The union of intervals fed in start order: the closed ones' length and the open one. */
struct fl_union {
	uint64_t total, a, e; /* ns */
	int any;
};

struct kx_jobflow_ring {
	char name[32];
	uint32_t dev; /* index in f->devs before the final order */
	uint64_t njobs, completed, linked, waited;
	uint32_t nlanes;
	struct kx_minheap ends; /* ns, the ends of its jobs swept that may still overlap */
	struct fl_union busy;
	struct kx_stat_row exec, queue; /* DONE - start; RUN - QUEUE (none for KVM) */
};

struct kx_jobflow_dev {
	uint64_t njobs, completed, incomplete, no_queue, linked;
	struct fl_union busy;
	struct kx_minheap outs; /* ns, the DONE times of its jobs in flight */
	uint64_t open;          /* jobs in flight that never complete */
	uint64_t cur;           /* ns, the in time being swept */
	int any;
	uint32_t max_depth;
};

static int u64_less(const void *a, const void *b)
{
	return *(const uint64_t *)a < *(const uint64_t *)b;
}

/* By start, then in the order the builder made them. */
static int job_less(const void *pa, const void *pb)
{
	const struct fl_job *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start;
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

/* By time, then file order. */
static int rec_less(const void *pa, const void *pb)
{
	const struct fl_recref *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

static int open_less(const void *pa, const void *pb)
{
	const struct fl_openref *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start;
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

/* By the record that made a job (the builder's order). */
static int made_less(const void *pa, const void *pb)
{
	const struct fl_openref *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

static void because(struct kx_jobflow *f, const char *why)
{
	if (!f->why)
		f->why = why;
}

void kx_jobflow_init(struct kx_jobflow *f, const struct kx_capinfo *ci)
{
	memset(f, 0, sizeof(*f));
	f->devs.ci = ci;
	f->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct fl_thread);
	f->held = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_job, job_less);
	f->recs = (struct kx_slots)KX_SLOTS_INIT(struct fl_rec);
	f->recq = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_recref, rec_less);
	f->keys = (struct kx_keymap)KX_KEYMAP_INIT;
	f->open = (struct kx_slots)KX_SLOTS_INIT(struct fl_kjob);
	f->opens = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_openref, open_less);
	f->names = (struct kx_keymap)KX_KEYMAP_INIT;
	f->passed = (struct kx_keymap)KX_KEYMAP_INIT;
	f->ringdrv = (struct kx_keymap)KX_KEYMAP_INIT;
	f->linkq = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_openref, made_less);
	f->lo = UINT64_MAX;
}

static void span(struct kx_jobflow *f, uint64_t a, uint64_t b)
{
	if (a < f->lo)
		f->lo = a;
	if (b > f->hi)
		f->hi = b;
	if (b > f->now)
		f->now = b;
}

/* ---- the sweeps in start order ---- */

static void union_add(struct fl_union *u, uint64_t a, uint64_t b)
{
	if (u->any && a <= u->e) {
		if (b > u->e)
			u->e = b;
		return;
	}
	if (u->any)
		u->total += u->e - u->a;
	u->a = a;
	u->e = b;
	u->any = 1;
}

static uint64_t union_len(const struct fl_union *u)
{
	return u->total + (u->any ? u->e - u->a : 0);
}

/* The jobs in flight once every change at d->cur is in. */
static void depth_note(struct kx_jobflow_dev *d)
{
	uint64_t n;

	while (d->outs.n && *(const uint64_t *)kx_minheap_top(&d->outs) <= d->cur)
		kx_minheap_pop(&d->outs, NULL);
	n = d->outs.n + d->open;
	if (n > d->max_depth)
		d->max_depth = (uint32_t)n;
}

static int sweep(struct kx_jobflow *f, const struct fl_job *j)
{
	struct kx_jobflow_ring *r = &f->rings[j->ring];
	struct kx_jobflow_dev *d = &f->fdev[r->dev];

	/* Lanes: a job takes the first lane free at its start, so a ring
	 * needs one more than the jobs before it that end after its start. */
	while (r->ends.n && *(const uint64_t *)kx_minheap_top(&r->ends) <= j->start)
		kx_minheap_pop(&r->ends, NULL);
	if (r->ends.n + 1 > r->nlanes)
		r->nlanes = (uint32_t)(r->ends.n + 1);
	if (kx_minheap_push(&r->ends, &j->end))
		return -1;
	if (j->busy) {
		union_add(&r->busy, j->start, j->end);
		union_add(&d->busy, j->start, j->end);
	}
	if (j->in) {
		if (d->any && j->in != d->cur)
			depth_note(d);
		d->cur = j->in;
		d->any = 1;
		if (!j->done)
			d->open++;
		else if (kx_minheap_push(&d->outs, &j->end))
			return -1;
	}
	f->swept_start = j->start;
	f->swept_ts = j->ts;
	f->swept_seq = j->seq;
	f->swept = 1;
	return 0;
}

/* The earliest open block request's place (stale entries dropped), NULL: none. */
static const struct fl_openref *open_first(struct kx_jobflow *f)
{
	while (f->opens.n) {
		const struct fl_openref *o = kx_minheap_top(&f->opens);
		const struct fl_kjob *k = kx_slots_at(&f->open, o->slot);

		if (k->gen == o->gen)
			return o;
		kx_minheap_pop(&f->opens, NULL);
	}
	return NULL;
}

/* Does held job j come before every job open request o may make? */
static int before_open(const struct fl_job *j, const struct fl_openref *o)
{
	if (j->start != o->start)
		return j->start < o->start;
	if (j->ts != o->ts)
		return j->ts < o->ts;
	return j->seq < o->seq;
}

/* The held jobs whose turn has come: started KX_JOBFLOW_WINDOW_NS before
 * the latest time seen and before every open request, or past
 * KX_JOBFLOW_HELD (all: at the end). */
static int release(struct kx_jobflow *f, int all)
{
	struct fl_job j;

	while (f->held.n) {
		const struct fl_job *top = kx_minheap_top(&f->held);
		const struct fl_openref *o = all ? NULL : open_first(f);
		int blocked = o && !before_open(top, o);

		if (!all && (blocked || top->start + KX_JOBFLOW_WINDOW_NS >= f->now)) {
			if (f->held.n <= KX_JOBFLOW_HELD)
				return 0;
			if (blocked)
				because(f, "a device job stayed open (no DONE, or a GPU job within "
				           "the window after it) while more than 16384 later jobs "
				           "completed");
		}
		kx_minheap_pop(&f->held, &j);
		if (sweep(f, &j))
			return -1;
	}
	return 0;
}

/* ---- rings and devices ---- */

static struct kx_jobflow_ring *ring_get(struct kx_jobflow *f, uint32_t dev, const char *name)
{
	struct kx_jobflow_ring *r;

	for (size_t i = 0; i < f->nrings; i++)
		if (f->rings[i].dev == dev && !strcmp(f->rings[i].name, name))
			return &f->rings[i];
	if (kx_grow((void **)&f->rings, &f->rcap, f->nrings, sizeof(*f->rings)))
		return NULL;
	r = &f->rings[f->nrings++];
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	r->dev = dev;
	r->ends = (struct kx_minheap)KX_MINHEAP_INIT(uint64_t, u64_less);
	r->exec.min = r->queue.min = UINT64_MAX;
	r->exec.job = r->queue.job = 1;
	return r;
}

/* Room for the sweeps of every device of f->devs. */
static int devs_room(struct kx_jobflow *f)
{
	struct kx_jobflow_dev *nd;

	if (f->nfdev >= f->devs.n)
		return 0;
	nd = realloc(f->fdev, f->devs.n * sizeof(*nd));
	if (!nd)
		return -1;
	f->fdev = nd;
	for (size_t i = f->nfdev; i < f->devs.n; i++) {
		memset(&nd[i], 0, sizeof(nd[i]));
		nd[i].outs = (struct kx_minheap)KX_MINHEAP_INIT(uint64_t, u64_less);
	}
	f->nfdev = f->devs.n;
	return 0;
}

/* A job's counts and rows (jobs.c's ring_stats and dev_stats, one job). */
static int fold(struct kx_jobflow_ring *r, struct kx_jobflow_dev *d, const struct kx_jobrec *j)
{
	uint64_t s = kx_jobrec_start(j);

	r->njobs++;
	r->completed += j->done_ts != 0;
	r->linked += j->submit >= 0;
	r->waited += j->waiter_tid != 0;
	d->njobs++;
	d->completed += j->done_ts != 0;
	d->incomplete += (j->flags & KX_JOBF_INCOMPLETE) != 0;
	d->no_queue += (j->flags & KX_JOBF_NO_QUEUE) != 0;
	d->linked += j->submit >= 0;
	if (j->done_ts && (j->run_ts || j->queue_ts) &&
	    kx_stat_row_add_bounded(&r->exec, j->done_ts - s, KX_JOBFLOW_EXACT))
		return -1;
	/* KVM jobs start running at KVM_RUN entry: no queue to measure. */
	if (j->src == KX_JOB_SRC_KVM)
		return 0;
	if (j->queue_ts && j->run_ts &&
	    kx_stat_row_add_bounded(&r->queue, j->run_ts - j->queue_ts, KX_JOBFLOW_EXACT))
		return -1;
	if (!j->queue_ts && (j->flags & KX_JOBF_DIRECT) &&
	    kx_stat_row_add_bounded(&r->queue, 0, KX_JOBFLOW_EXACT))
		return -1;
	return 0;
}

/* ---- a job made ---- */

static void find_waiter(struct kx_jobflow *f, struct kx_tjob *t, const struct kx_jobdev *d);

/* A job whose phases are all in (t; made by the record of time ts and
 * place seq): classified, given its device and ring (as jobs.c's
 * classify), counted, held. end_ns: the capture's end (an incomplete job
 * ends there; 0 before the end). late: why, when it comes after later
 * jobs were swept. */
static int job_out(struct kx_jobflow *f, struct kx_tjob *t, uint64_t ts, uint64_t seq,
                   uint64_t end_ns, unsigned int submit_drv, unsigned int ring_drv,
                   const char *late)
{
	struct kx_jobflow_ring *r;
	struct fl_job h;
	uint64_t a, b; /* ns, its busy interval (as drawn: start and end) */
	long dev;

	kx_tjob_classify(t, &f->anom);
	kx_tjob_ring_name(t);
	dev = kx_jobdevtab_assign(&f->devs, t, submit_drv, ring_drv);
	if (dev < 0 || devs_room(f))
		return -1;
	find_waiter(f, t, &f->devs.devs[dev]);
	kx_tjob_ring_fallback(t);
	r = ring_get(f, (uint32_t)dev, t->ring);
	if (!r || fold(r, &f->fdev[dev], &t->r))
		return -1;
	h = (struct fl_job){
	        .start = kx_jobrec_start(&t->r),
	        .end = kx_jobrec_end(&t->r, end_ns),
	        .in = t->r.queue_ts ? t->r.queue_ts : t->r.run_ts,
	        .ts = ts,
	        .seq = seq,
	        .ring = (uint32_t)(r - f->rings),
	        .busy = (uint8_t)kx_jobrec_busy(&t->r, end_ns, &a, &b),
	        .done = t->r.done_ts != 0,
	};
	if (f->swept && !job_less(&(struct fl_job){.start = f->swept_start,
	                                           .ts = f->swept_ts,
	                                           .seq = f->swept_seq},
	                          &h))
		because(f, late);
	f->jobs++;
	if (kx_minheap_push(&f->held, &h) || release(f, 0))
		return -1;
	if (f->held.n > f->peak_held)
		f->peak_held = f->held.n;
	return 0;
}

/* ---- KVM jobs ---- */

/* The job of exit x, inside the KVM_RUN io (NULL: in none). */
static int kvm_job(struct kx_jobflow *f, const struct fl_exit *x, const struct kx_ioctl *io)
{
	struct kx_tjob t;

	kx_tjob_kvm(&t, &x->e, io, io ? 0 : -1);
	return job_out(f, &t, x->e.ts, x->seq, 0, 0, 0,
	               "a KVM job started before jobs already counted in start order (its "
	               "KVM_RUN ran longer than the streamed read's window)");
}

/* Exit x of thread t, its thread's last call entered at or before it now
 * known (x->cand): jobs.c's kvm_event. */
static int kvm_resolve(struct kx_jobflow *f, struct fl_thread *t, const struct fl_exit *x)
{
	if (!x->cand_id || !kx_kvm_run_holds(&x->cand, x->e.ts))
		return kvm_job(f, x, NULL);
	if (x->cand_id == t->used_id) {
		f->anom.duplicate++;
		return 0;
	}
	t->used_id = x->cand_id;
	f->runs_used++;
	return kvm_job(f, x, &x->cand);
}

/* Call e (id) of thread t: the exits it starts after are resolved, the
 * others now look at it. */
static int kvm_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e,
                    uint64_t id)
{
	size_t keep = 0;
	int rc = 0;

	for (size_t i = 0; i < t->nopen; i++) {
		struct fl_exit *x = &t->open[i];

		if (e->ts <= x->e.ts) {
			x->cand = *e;
			x->cand_id = id;
			t->open[keep++] = *x;
			continue;
		}
		if (!rc && kvm_resolve(f, t, x))
			rc = -1;
		f->exits--;
	}
	t->nopen = keep;
	return rc;
}

static int kvm_exit(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq)
{
	struct fl_thread *t = kx_tidtab_get(&f->threads, kx_kvm_tid(j), 1);
	struct fl_exit *x;

	if (!t)
		return -1;
	if (t->last_id && t->last.ts > j->ts) {
		because(f, "a KVM exit came after a later call of its thread");
		return 0;
	}
	/* The builder takes a thread's exits by time: the first inside a run makes its job. */
	if (j->ts < t->exit_ts) {
		because(f, "KVM exits of one thread came out of time order");
		return 0;
	}
	t->exit_ts = j->ts;
	if (f->exits >= KX_JOBFLOW_EXITS) {
		because(f, "too many KVM exits waiting for their KVM_RUN");
		return 0;
	}
	if (kx_grow((void **)&t->open, &t->cap, t->nopen, sizeof(*t->open)))
		return -1;
	x = &t->open[t->nopen++];
	memset(x, 0, sizeof(*x));
	x->e = *j;
	x->seq = seq;
	if (t->last_id) {
		x->cand = t->last;
		x->cand_id = t->last_id;
	}
	f->exits++;
	return 0;
}

/* ---- keyed jobs: block requests, GPU jobs ---- */

#define KEYED_LATE                                                                                 \
	"a device job started before jobs already counted in start order (it stayed open, or "     \
	"within the window after its DONE, longer than the streamed read's window)"

static uint32_t new_gen(struct kx_jobflow *f)
{
	if (!++f->gen)
		f->gen = 1;
	return f->gen;
}

/* Call e (id) of thread t: the job records of t looking at its calls
 * take it as their candidate when it began at or before them, else stop
 * looking (the calls come in start order). */
static void probe_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e,
                       uint64_t id)
{
	size_t keep = 0;

	for (size_t i = 0; i < t->nprobes; i++) {
		struct fl_probe p = t->probes[i];
		struct fl_rec *r = kx_slots_at(&f->recs, p.slot);

		if (r->gen != p.gen || !r->looking)
			continue;
		if (e->ts > r->e.ts) {
			r->looking = 0;
			continue;
		}
		r->cand = *e;
		r->cand_id = id;
		t->probes[keep++] = p;
	}
	t->nprobes = keep;
}

/* Room for one more probe of t (the stale ones dropped first). */
static int probe_room(struct kx_jobflow *f, struct fl_thread *t)
{
	size_t keep = 0;

	if (t->nprobes < t->pcap)
		return 0;
	for (size_t i = 0; i < t->nprobes; i++) {
		const struct fl_rec *r = kx_slots_at(&f->recs, t->probes[i].slot);

		if (r->gen == t->probes[i].gen && r->looking)
			t->probes[keep++] = t->probes[i];
	}
	t->nprobes = keep;
	return kx_grow((void **)&t->probes, &t->pcap, t->nprobes, sizeof(*t->probes));
}

/* The wait calls still able to hold a DONE to come: those that return at
 * or after the earliest DONE of a job not counted yet. */
static uint64_t waits_low(const struct kx_jobflow *f)
{
	uint64_t low = f->rel_ts;

	if (f->chead < f->nclosed && f->closed[f->chead].done < low)
		low = f->closed[f->chead].done;
	return low;
}

/* A GPU driver's wait call e (id): kept while a job may end inside it. */
static int wait_call(struct kx_jobflow *f, const struct kx_ioctl *e, uint64_t id)
{
	uint64_t low = waits_low(f);
	size_t keep = 0;
	int wait = 0;

	if (!kx_drv_gpu(e->drv) || kx_wait_ioctl(&f->names, e, &wait))
		return kx_drv_gpu(e->drv) ? -1 : 0;
	if (!wait)
		return 0;
	/* None kept before a GPU job record: a job ending inside one is told. */
	if (!f->gpu_seen) {
		if (kx_ioctl_end(e) > f->wait_unkept)
			f->wait_unkept = kx_ioctl_end(e);
		return 0;
	}
	if (f->waited_any && e->ts <= f->waited_max)
		because(f,
		        "a wait call came after a GPU job it may have waited for was counted (it "
		        "began more than the streamed read's window before it returned)");
	for (size_t i = 0; i < f->nwaits; i++)
		if (f->waits[i].end >= low)
			f->waits[keep++] = f->waits[i];
	f->nwaits = keep;
	if (f->nwaits >= KX_JOBFLOW_WAITS) {
		because(f, "too many wait calls of GPU drivers around the jobs not counted yet");
		return 0;
	}
	if (kx_grow((void **)&f->waits, &f->wcap, f->nwaits, sizeof(*f->waits)))
		return -1;
	f->waits[f->nwaits++] =
	        (struct kx_jobflow_wait){e->ts, kx_ioctl_end(e), id, e->pid, e->tid, e->drv};
	return 0;
}

/* The waiter of GPU job t of device d among the wait calls (jobs.c's best_waiter). */
static void find_waiter(struct kx_jobflow *f, struct kx_tjob *t, const struct kx_jobdev *d)
{
	struct kx_waitcand best = {0, 0, 0}, c;
	uint64_t done = t->r.done_ts;
	int found = 0;

	if (t->r.waiter_tid || !done || !kx_job_src_gpu(t->r.src))
		return;
	if (done <= f->wait_unkept)
		because(f, "a GPU driver's wait call came before the first GPU job record (it may "
		           "hold a job's DONE)");
	if (!f->waited_any || done > f->waited_max)
		f->waited_max = done;
	f->waited_any = 1;
	for (size_t i = 0; i < f->nwaits; i++) {
		const struct kx_jobflow_wait *w = &f->waits[i];

		if (w->ts > done || w->end < done ||
		    !kx_waiter_fits(d, &(struct kx_ioctl){.drv = w->drv}))
			continue;
		c = (struct kx_waitcand){w->pid, w->end, w->id};
		if (!found || kx_waiter_better(&c, &best, t->r.pid)) {
			best = c;
			t->r.waiter_tid = w->tid;
			found = 1;
		}
	}
}

/* Job slot of f->open counted and held (jobs.c's classify and link_waiters). */
/* The learnt driver of job j's ring (jobs.c's learn_ring_drivers): a linked
 * job teaches it (the first made wins); an unlinked one gets it in
 * *drv when the first linked job of its ring is known: one was counted,
 * and no linked job held was made before it. 1 when known, 0 when not,
 * -1 when out of memory. */
static int ring_driver(struct kx_jobflow *f, const struct fl_kjob *j, unsigned int *drv)
{
	uint64_t h = kx_hash_bytes(j->t.ring, strlen(j->t.ring));
	struct kx_keyslot *sl = kx_keymap_find(&f->ringdrv, j->t.r.src, h, 0);
	struct kx_jobflow_ringdrv *e = sl ? &f->rdrv[sl->v - 1] : NULL;

	if (j->submit_drv) {
		if (e && (e->ts < j->ts || (e->ts == j->ts && e->seq < j->seq)))
			return 1;
		if (!e) {
			sl = kx_keymap_get(&f->ringdrv, j->t.r.src, h, 0);
			if (!sl ||
			    kx_grow((void **)&f->rdrv, &f->rdcap, f->nrdrv, sizeof(*f->rdrv)))
				return -1;
			sl->v = ++f->nrdrv;
			e = &f->rdrv[sl->v - 1];
		}
		*e = (struct kx_jobflow_ringdrv){j->ts, j->seq, j->submit_drv};
		return 1;
	}
	if (!e)
		return 0;
	while (f->linkq.n) {
		const struct fl_openref *o = kx_minheap_top(&f->linkq);

		if (((const struct fl_kjob *)kx_slots_at(&f->open, o->slot))->gen != o->gen) {
			kx_minheap_pop(&f->linkq, NULL);
			continue;
		}
		if (o->ts < e->ts || (o->ts == e->ts && o->seq < e->seq))
			return 0;
		break;
	}
	*drv = e->drv;
	return 1;
}

/* Job slot of f->open counted and held (jobs.c's classify and link_waiters). */
static int keyed_out(struct kx_jobflow *f, size_t slot, uint64_t end_ns)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	struct fl_kjob j = *o;
	unsigned int ring_drv = 0;
	int known = 1;

	o->gen = 0;
	kx_slots_put(&f->open, slot);
	/* A shared fence source's job learns its device from its submitter, else
	 * from the first linked job of its ring. */
	if (kx_job_src_gpu(j.t.r.src) && !kx_job_src_driver(j.t.r.src))
		known = ring_driver(f, &j, &ring_drv);
	if (known < 0)
		return -1;
	if (!known) {
		because(f,
		        "a GPU job of a shared fence source (gpu_scheduler, dma_fence) without a "
		        "submitting call before the first linked job of its ring was counted (its "
		        "device is learnt from it)");
		return 0;
	}
	return job_out(f, &j.t, j.ts, j.seq, end_ns, j.submit_drv, ring_drv, KEYED_LATE);
}

/* A key closed long ago, forgotten (its job counted if still held): into the table. */
static int forget(struct kx_jobflow *f, const struct kx_jobflow_key *c)
{
	struct kx_keyslot *sl;
	struct kx_jobflow_key *g;
	int mine = 0;

	if (c->slot != NO_SLOT &&
	    ((struct fl_kjob *)kx_slots_at(&f->open, c->slot))->gen == c->gen) {
		sl = kx_keymap_find(&f->keys, c->k[0], c->k[1], c->k[2]);
		mine = sl && sl->v == (uint64_t)c->slot + 1;
		if (keyed_out(f, c->slot, 0))
			return -1;
	}
	sl = kx_keymap_find(&f->keys, c->k[0], c->k[1], c->k[2]);
	/* Opened again since: remembered again when it closes. */
	if (!sl || !(mine || sl->v == KEY_CLOSED))
		return 0;
	kx_keymap_del(&f->keys, sl);
	if (!c->reusable) {
		/* A unique key: its context's seqnos up to it may be forgotten ones. */
		sl = kx_keymap_get(&f->passed, c->k[0], c->k[1], 0);
		if (!sl)
			return -1;
		if (c->k[2] + 1 > sl->v)
			sl->v = c->k[2] + 1;
		return 0;
	}
	if (!f->gone && !(f->gone = calloc(KX_JOBFLOW_GONE, sizeof(*f->gone))))
		return -1;
	g = &f->gone[kx_hash_bytes(c->k, sizeof(c->k)) % KX_JOBFLOW_GONE];
	if (g->used && memcmp(g->k, c->k, sizeof(g->k)))
		g->lost = 1;
	memcpy(g->k, c->k, sizeof(g->k));
	g->used = 1;
	return 0;
}

/* Was key k forgotten (1), never (0), or cannot it be told (-1)? A unique
 * key at or below one of its context forgotten cannot be told. */
static int forgotten(const struct kx_jobflow *f, const uint64_t k[3], int reusable)
{
	const struct kx_jobflow_key *g;

	if (!reusable) {
		const struct kx_keyslot *sl = kx_keymap_find(&f->passed, k[0], k[1], 0);

		return sl && k[2] < sl->v ? -1 : 0;
	}
	if (!f->gone)
		return 0;
	g = &f->gone[kx_hash_bytes(k, 3 * sizeof(*k)) % KX_JOBFLOW_GONE];
	if (g->used && !memcmp(g->k, k, sizeof(g->k)))
		return 1;
	return g->lost ? -1 : 0;
}

/* Key k closed at done (ns), its job held in slot (gen) or counted
 * (NO_SLOT): remembered; the oldest forgotten past KX_JOBFLOW_CLOSED or
 * KX_JOBFLOW_WINDOW_NS before the latest record paired. */
static int remember(struct kx_jobflow *f, const uint64_t k[3], uint64_t done, uint32_t slot,
                    uint32_t gen, int reusable)
{
	struct kx_jobflow_key *c;

	if (f->chead && f->chead * 2 >= f->nclosed) {
		memmove(f->closed, f->closed + f->chead, (f->nclosed - f->chead) * sizeof(*c));
		f->nclosed -= f->chead;
		f->chead = 0;
	}
	if (kx_grow((void **)&f->closed, &f->ccap, f->nclosed, sizeof(*f->closed)))
		return -1;
	c = &f->closed[f->nclosed++];
	*c = (struct kx_jobflow_key){{k[0], k[1], k[2]}, done, slot, gen, (uint8_t)reusable, 0, 0};
	return 0;
}

/* The oldest closed keys past the bounds forgotten. */
static int forget_old(struct kx_jobflow *f)
{
	while (f->chead < f->nclosed &&
	       (f->nclosed - f->chead > KX_JOBFLOW_CLOSED ||
	        f->closed[f->chead].done + KX_JOBFLOW_WINDOW_NS < f->rel_ts)) {
		struct kx_jobflow_key c = f->closed[f->chead++];

		if (forget(f, &c))
			return -1;
	}
	return 0;
}

/* Job slot of f->open closed (its key's entry sl): a block request is
 * counted and held now; a GPU job stays (a later event of another source
 * may rename it, its waiter's call returns after it) until its key is
 * forgotten. */
static int keyed_close(struct kx_jobflow *f, struct kx_keyslot *sl, size_t slot, int reusable)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	uint64_t k[3], done = o->t.r.done_ts;

	memcpy(k, sl->k, sizeof(k));
	if (kx_job_src_gpu(o->t.r.src))
		return remember(f, k, done, (uint32_t)slot, o->gen, reusable);
	sl->v = KEY_CLOSED;
	if (remember(f, k, done, NO_SLOT, 0, reusable))
		return -1;
	return keyed_out(f, slot, 0);
}

/* A new job of record r on key k (jobs.c's pair_event and link_submit). */
static int keyed_open(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3])
{
	struct kx_keyslot *sl;
	struct fl_kjob *o;
	uint64_t at;
	long slot;

	if (kx_slots_live(&f->open) >= KX_JOBFLOW_OPEN) {
		because(f, "too many device jobs open at once");
		return 0;
	}
	sl = kx_keymap_get(&f->keys, k[0], k[1], k[2]);
	slot = kx_slots_get(&f->open);
	if (!sl || slot < 0)
		return -1;
	o = kx_slots_at(&f->open, (size_t)slot);
	kx_tjob_init(&o->t);
	kx_tjob_first(&o->t, &r->e);
	o->ts = r->e.ts;
	o->seq = r->seq;
	o->gen = new_gen(f);
	at = kx_tjob_link_at(&o->t);
	if (at && r->cand_id && kx_tjob_links_to(&o->t, &r->cand)) {
		o->t.r.submit = 0;
		o->submit_drv = r->cand.drv;
		if (kx_job_src_gpu(o->t.r.src) &&
		    kx_minheap_push(&f->linkq,
		                    &(struct fl_openref){0, o->ts, o->seq, (uint32_t)slot, o->gen}))
			return -1;
	} else if (at) {
		kx_tjob_no_link(&o->t);
	}
	if (kx_slots_live(&f->open) > f->peak_open)
		f->peak_open = kx_slots_live(&f->open);
	sl->v = (uint64_t)slot + 1;
	if (kx_minheap_push(&f->opens, &(struct fl_openref){kx_jobrec_start(&o->t.r), o->ts, o->seq,
	                                                    (uint32_t)slot, o->gen}))
		return -1;
	return o->t.closed ? keyed_close(f, sl, (size_t)slot, kx_jobpair_reusable(&r->e)) : 0;
}

/* A phase on a key none of whose jobs is held any more (jobs.c's
 * pair_event on a closed job): a reused key's DONE repeats it, another
 * phase opens a new job; on a unique key forgotten it would change or
 * count against a job already counted. 1: open a new job. */
static int keyed_unheld(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3],
                        int remembered)
{
	int reuse = kx_jobpair_reusable(&r->e), gone;

	if (reuse && r->e.phase != KX_JOB_DONE)
		return 1;
	gone = remembered ? 1 : forgotten(f, k, reuse);
	if (gone < 0 || (gone && !reuse)) {
		because(f, reuse ? "a DONE came on a key that may have closed before the streamed "
		                   "read's window (a duplicate, or a new job)"
		                 : "an event of a GPU job came on a key at or below one forgotten "
		                   "(more than the streamed read's window after its DONE)");
		return 0;
	}
	if (!gone)
		return 1;
	f->anom.duplicate++;
	return 0;
}

/* Phase record r in time order: jobs.c's pair_event. */
static int keyed_phase(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3],
                       struct kx_keyslot *sl)
{
	struct fl_kjob *o;
	int was;

	if (!sl || sl->v == KEY_CLOSED)
		return keyed_unheld(f, r, k, sl != NULL) ? keyed_open(f, r, k) : 0;
	o = kx_slots_at(&f->open, (size_t)sl->v - 1);
	was = o->t.closed;
	if (kx_jobpair_phase(&o->t, &r->e, &f->anom))
		return keyed_open(f, r, k);
	if (!was && o->t.closed)
		return keyed_close(f, sl, (size_t)sl->v - 1, kx_jobpair_reusable(&r->e));
	return 0;
}

/* Record r in time order: jobs.c's pair_event, wait_event. */
static int keyed_pair(struct kx_jobflow *f, const struct fl_rec *r)
{
	struct kx_keyslot *sl;
	uint64_t k[3];

	kx_jobpair_key(&r->e, k);
	sl = kx_keymap_find(&f->keys, k[0], k[1], k[2]);
	if (kx_jobpair_kind(&r->e) == KX_JEV_PHASE)
		return keyed_phase(f, r, k, sl) || forget_old(f) ? -1 : 0;
	/* A wait phase names the waiter of the job its key holds. */
	if (sl && sl->v != KEY_CLOSED)
		kx_tjob_wait(&((struct fl_kjob *)kx_slots_at(&f->open, (size_t)sl->v - 1))->t,
		             &r->e);
	else if (sl || forgotten(f, k, kx_jobpair_reusable(&r->e)))
		because(f, "a wait phase came for a device job already counted");
	return 0;
}

/* The records whose turn has come: KX_JOBFLOW_WINDOW_NS before the latest
 * time seen, or past KX_JOBFLOW_RECS (all: at the end). A record still
 * looking at its task's calls takes its candidate now: a call of the task
 * that began at or before it and comes later sends the file to memory. */
static int recs_release(struct kx_jobflow *f, int all)
{
	while (f->recq.n) {
		const struct fl_recref *top = kx_minheap_top(&f->recq);
		struct fl_recref ref;
		struct fl_rec r;

		if (!all && f->recq.n <= KX_JOBFLOW_RECS &&
		    top->ts + KX_JOBFLOW_WINDOW_NS >= f->now)
			return 0;
		kx_minheap_pop(&f->recq, &ref);
		r = *(struct fl_rec *)kx_slots_at(&f->recs, ref.slot);
		((struct fl_rec *)kx_slots_at(&f->recs, ref.slot))->gen = 0;
		kx_slots_put(&f->recs, ref.slot);
		f->rel_ts = r.e.ts;
		if (r.looking) {
			struct fl_thread *t = kx_tidtab_get(&f->threads, r.e.tid, 0);

			if (t && r.e.ts > t->forced_at)
				t->forced_at = r.e.ts;
		}
		if (keyed_pair(f, &r))
			return -1;
	}
	return 0;
}

/* A keyed job record (QUEUE, RUN, DONE, a wait phase) of place seq, in file order. */
static int keyed_rec(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq)
{
	struct fl_rec *r;
	struct fl_thread *t = NULL;
	long slot;

	f->gpu_seen |= kx_job_src_gpu(j->src);
	if (j->ts < f->rel_ts) {
		because(f, "device job records came out of time order by more than the streamed "
		           "read's window");
		return 0;
	}
	if (kx_job_names_submitter(j)) {
		t = kx_tidtab_get(&f->threads, j->tid, 1);
		if (!t || probe_room(f, t))
			return -1;
		if (t->last_id && t->last.ts > j->ts) {
			because(f, "a job record came after a later call of its task");
			return 0;
		}
	}
	slot = kx_slots_get(&f->recs);
	if (slot < 0)
		return -1;
	r = kx_slots_at(&f->recs, (size_t)slot);
	r->e = *j;
	r->seq = seq;
	r->gen = new_gen(f);
	if (t) {
		r->looking = 1;
		if (t->last_id) {
			r->cand = t->last;
			r->cand_id = t->last_id;
		}
		t->probes[t->nprobes++] = (struct fl_probe){(uint32_t)slot, r->gen};
	}
	if (kx_minheap_push(&f->recq, &(struct fl_recref){j->ts, seq, (uint32_t)slot, r->gen}))
		return -1;
	if (f->recq.n > f->peak_recs)
		f->peak_recs = f->recq.n;
	return recs_release(f, 0);
}

/* Every job still held at the end: those never done are incomplete,
 * ending at end_ns. */
static int keyed_end(struct kx_jobflow *f, uint64_t end_ns)
{
	for (size_t i = 0; i < f->open.n; i++)
		if (((struct fl_kjob *)kx_slots_at(&f->open, i))->gen && keyed_out(f, i, end_ns))
			return -1;
	return 0;
}

/* ---- the feed ---- */

int kx_jobflow_ioctl(struct kx_jobflow *f, const struct kx_ioctl *e)
{
	struct fl_thread *t;

	span(f, e->ts, kx_ioctl_end(e));
	f->calls++;
	f->runs += kx_kvm_run(e) != 0;
	t = kx_tidtab_get(&f->threads, e->tid, 1);
	if (!t)
		return -1;
	if (t->nopen && kvm_call(f, t, e, f->calls))
		return -1;
	if (t->forced_at && e->ts <= t->forced_at)
		because(f, "a call came after a later block record of its task was paired (it "
		           "began more than the streamed read's window before the latest record)");
	if (t->nprobes)
		probe_call(f, t, e, f->calls);
	if (wait_call(f, e, f->calls))
		return -1;
	t->last = *e;
	t->last_id = f->calls;
	return 0;
}

int kx_jobflow_job(struct kx_jobflow *f, const struct kx_job *j)
{
	uint64_t seq = f->jobrecs++;

	span(f, j->ts, j->ts);
	switch (kx_jobpair_kind(j)) {
	case KX_JEV_KVM:
		f->has_kvm = 1;
		/* Intermediate exits are not jobs. */
		return j->phase == KX_JOB_DONE ? kvm_exit(f, j, seq) : 0;
	case KX_JEV_UNKNOWN:
		f->anom.unknown++;
		return 0;
	case KX_JEV_DEP:
		return 0;
	default:
		return keyed_rec(f, j, seq);
	}
}

/* ---- the result ---- */

/* Every exit still open, with what its thread gave. */
static int close_exits(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->threads.n; i++) {
		struct fl_thread *t = kx_tidtab_at(&f->threads, i);

		for (size_t k = 0; k < t->nopen; k++)
			if (kvm_resolve(f, t, &t->open[k]))
				return -1;
		t->nopen = 0;
	}
	f->exits = 0;
	return 0;
}

/* What ring_cmp sorts by. */
struct ring_order {
	const struct kx_jobflow_ring *rings;
	const uint32_t *newidx; /* the devices' final order */
};

static int ring_cmp(const void *pa, const void *pb, void *arg)
{
	const struct ring_order *o = arg;
	const struct kx_jobflow_ring *a = &o->rings[*(const size_t *)pa],
	                             *b = &o->rings[*(const size_t *)pb];
	uint32_t da = o->newidx[a->dev], db = o->newidx[b->dev];

	if (da != db)
		return da < db ? -1 : 1;
	return strcmp(a->name, b->name);
}

static void dist_of_row(struct kx_dist *d, struct kx_stat_row *r)
{
	memset(d, 0, sizeof(*d));
	if (!r->count)
		return;
	kx_stat_row_percentiles(r);
	*d = (struct kx_dist){r->count, r->total, r->min, r->max, r->p50, r->p90, r->p99};
}

/* A ring's row (exec or queue) moved to the end of rows. */
static int row_out(struct kx_stats *rows, struct kx_stat_row *r, const char *dev, const char *ring,
                   const char *what)
{
	struct kx_stat_row *nr = realloc(rows->rows, (rows->nrows + 1) * sizeof(*nr));
	char name[64];

	if (!nr)
		return -1;
	rows->rows = nr;
	snprintf(name, sizeof(name), "%s %s", ring, what);
	snprintf(r->cat, sizeof(r->cat), "jobs/%.42s", dev);
	r->name = strdup(name);
	if (!r->name)
		return -1;
	nr[rows->nrows++] = *r;
	memset(r, 0, sizeof(*r));
	return 0;
}

/* The rings in their final order (by device, then name), with ids; ord
 * gets f->rings' index of each. 0, or -1 when out of memory. */
static int make_rings(struct kx_jobflow *f, struct kx_jobs *o, const uint32_t *newidx, size_t *ord)
{
	struct ring_order ro = {f->rings, newidx};

	o->rings = calloc(f->nrings ? f->nrings : 1, sizeof(*o->rings));
	if (!o->rings)
		return -1;
	for (size_t i = 0; i < f->nrings; i++)
		ord[i] = i;
	qsort_r(ord, f->nrings, sizeof(*ord), ring_cmp, &ro);
	for (size_t k = 0; k < f->nrings; k++) {
		struct kx_jobflow_ring *r = &f->rings[ord[k]];
		struct kx_jobring *g = &o->rings[k];
		struct kx_jobdev *d = &o->devs[newidx[r->dev]];

		snprintf(g->name, sizeof(g->name), "%s", r->name);
		g->dev = newidx[r->dev];
		if (!d->nrings)
			d->first_ring = (uint32_t)k;
		g->id = d->nrings++;
		g->nlanes = r->nlanes;
		g->njobs = r->njobs;
		g->completed = r->completed;
		g->linked = r->linked;
		g->waited = r->waited;
		g->busy_ns = union_len(&r->busy);
		dist_of_row(&g->exec, &r->exec);
		dist_of_row(&g->queue, &r->queue);
	}
	o->nrings = f->nrings;
	return 0;
}

static void dev_figures(struct kx_jobflow *f, struct kx_jobs *o, const uint32_t *newidx)
{
	for (size_t i = 0; i < f->nfdev; i++) {
		struct kx_jobflow_dev *s = &f->fdev[i];
		struct kx_jobdev *d = &o->devs[newidx[i]];

		if (s->any)
			depth_note(s);
		d->njobs = s->njobs;
		d->completed = s->completed;
		d->incomplete = s->incomplete;
		d->no_queue = s->no_queue;
		d->linked = s->linked;
		d->busy_ns = union_len(&s->busy);
		d->max_depth = s->max_depth;
		if (o->end_ns > o->start_ns) {
			d->busy_fraction = (double)d->busy_ns / (double)(o->end_ns - o->start_ns);
			if (d->busy_fraction > 1.0)
				d->busy_fraction = 1.0;
		}
	}
}

/* The job rows, as stats.c's add_job_rows makes them: per ring in order
 * (ord: f->rings' index of each), "<ring> exec" and "<ring> queue delay"
 * when it timed any. */
static int job_rows(struct kx_jobflow *f, const struct kx_jobs *o, const size_t *ord,
                    struct kx_stats *rows)
{
	for (size_t k = 0; k < o->nrings; k++) {
		const struct kx_jobring *g = &o->rings[k];
		struct kx_jobflow_ring *r = &f->rings[ord[k]];
		const char *dev = o->devs[g->dev].name;

		if (!g->exec.count && !g->queue.count)
			continue;
		if (row_out(rows, &r->exec, dev, g->name, "exec"))
			return -1;
		if (g->queue.count && row_out(rows, &r->queue, dev, g->name, "queue delay"))
			return -1;
	}
	return 0;
}

struct kx_jobs *kx_jobflow_finish(struct kx_jobflow *f, const struct kx_store *mem,
                                  struct kx_stats *rows)
{
	const struct kx_capinfo *ci = f->devs.ci;
	struct kx_jobs *o = calloc(1, sizeof(*o));
	uint32_t *newidx = NULL;
	size_t *ord = NULL;

	if (!o || recs_release(f, 1) || close_exits(f))
		goto fail;
	o->start_ns =
	        ci && ci->start_mono_ns ? ci->start_mono_ns : (f->lo == UINT64_MAX ? 0 : f->lo);
	o->end_ns = ci && ci->stop_mono_ns > o->start_ns ? ci->stop_mono_ns : f->hi;
	if (o->end_ns < o->start_ns)
		o->end_ns = o->start_ns;
	if (keyed_end(f, o->end_ns) || release(f, 1))
		goto fail;
	if (f->why)
		goto fail;
	f->anom.runs_without_exit = f->has_kvm ? f->runs - f->runs_used : 0;
	o->anom = f->anom;
	o->store = mem;
	o->jobs = calloc(1, sizeof(*o->jobs));
	o->submitted = calloc(1, 1);
	if (!o->jobs || !o->submitted || kx_jobs_memory(mem, &f->devs, &o->nvmem))
		goto fail;
	newidx = malloc((f->devs.n ? f->devs.n : 1) * sizeof(*newidx));
	ord = malloc((f->nrings ? f->nrings : 1) * sizeof(*ord));
	if (!newidx || !ord || kx_jobdevtab_order(&f->devs, newidx))
		goto fail;
	o->devs = f->devs.devs;
	o->ndevs = f->devs.n;
	f->devs.devs = NULL;
	f->devs.n = 0;
	if (make_rings(f, o, newidx, ord))
		goto fail;
	dev_figures(f, o, newidx);
	kx_jobdevs_unique_names(o->devs, o->ndevs);
	if (job_rows(f, o, ord, rows))
		goto fail;
	free(newidx);
	free(ord);
	return o;
fail:
	free(newidx);
	free(ord);
	kx_jobs_free(o);
	return NULL;
}

void kx_jobflow_free(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->threads.n; i++) {
		struct fl_thread *t = kx_tidtab_at(&f->threads, i);

		free(t->open);
		free(t->probes);
	}
	kx_slots_free(&f->recs);
	kx_minheap_free(&f->recq);
	kx_keymap_free(&f->keys);
	kx_slots_free(&f->open);
	kx_minheap_free(&f->opens);
	free(f->closed);
	free(f->gone);
	free(f->waits);
	kx_keymap_free(&f->names);
	kx_keymap_free(&f->passed);
	kx_keymap_free(&f->ringdrv);
	free(f->rdrv);
	kx_minheap_free(&f->linkq);
	kx_tidtab_free(&f->threads);
	for (size_t i = 0; i < f->nrings; i++) {
		kx_minheap_free(&f->rings[i].ends);
		kx_stat_row_free(&f->rings[i].exec);
		kx_stat_row_free(&f->rings[i].queue);
	}
	free(f->rings);
	for (size_t i = 0; i < f->nfdev; i++)
		kx_minheap_free(&f->fdev[i].outs);
	free(f->fdev);
	kx_minheap_free(&f->held);
	for (size_t i = 0; i < f->devs.n; i++)
		free(f->devs.devs[i].mem);
	free(f->devs.devs);
	kx_jobdevtab_free(&f->devs);
	memset(f, 0, sizeof(*f));
}
