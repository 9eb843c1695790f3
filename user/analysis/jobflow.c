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
};

/* An open request's place in the sweeps' order, at the earliest. */
struct fl_openref {
	uint64_t start, ts, seq;
	uint32_t slot, gen;
};

/* A closed key, remembered or forgotten. */
struct kx_jobflow_key {
	uint64_t k[3];
	uint64_t done; /* ns, its DONE (remembered keys) */
	uint8_t used;  /* a forgotten key is in this table slot */
	uint8_t lost;  /* a forgotten key was put over another here */
};

#define KEY_CLOSED UINT64_MAX /* f->keys: the key's request is closed */

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
	uint64_t njobs, completed, linked;
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
				because(f, "a block request stayed open (no DONE) while more than "
				           "16384 later jobs completed");
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

/* A job whose phases are all in (t; made by the record of time ts and
 * place seq): classified, given its device and ring (as jobs.c's
 * classify), counted, held. end_ns: the capture's end (an incomplete job
 * ends there; 0 before the end). late: why, when it comes after later
 * jobs were swept. */
static int job_out(struct kx_jobflow *f, struct kx_tjob *t, uint64_t ts, uint64_t seq,
                   uint64_t end_ns, const char *late)
{
	struct kx_jobflow_ring *r;
	struct fl_job h;
	uint64_t a, b; /* ns, its busy interval (as drawn: start and end) */
	long dev;

	kx_tjob_classify(t, &f->anom);
	kx_tjob_ring_name(t);
	dev = kx_jobdevtab_assign(&f->devs, t, 0, 0);
	if (dev < 0 || devs_room(f))
		return -1;
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
	return job_out(f, &t, x->e.ts, x->seq, 0,
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

/* ---- block requests ---- */

#define BLOCK_LATE                                                                                 \
	"a block request started before jobs already counted in start order (it stayed open "      \
	"longer than the streamed read's window)"

static uint32_t new_gen(struct kx_jobflow *f)
{
	if (!++f->gen)
		f->gen = 1;
	return f->gen;
}

/* Call e (id) of thread t: the block records of t looking at its calls
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

/* A key closed long ago, forgotten: into the table. */
static int forget(struct kx_jobflow *f, const uint64_t k[3])
{
	struct kx_keyslot *sl = kx_keymap_find(&f->keys, k[0], k[1], k[2]);
	struct kx_jobflow_key *g;

	/* Opened again since: remembered again when it closes. */
	if (!sl || sl->v != KEY_CLOSED)
		return 0;
	kx_keymap_del(&f->keys, sl);
	if (!f->gone && !(f->gone = calloc(KX_JOBFLOW_GONE, sizeof(*f->gone))))
		return -1;
	g = &f->gone[kx_hash_bytes(k, 3 * sizeof(*k)) % KX_JOBFLOW_GONE];
	if (g->used && memcmp(g->k, k, sizeof(g->k)))
		g->lost = 1;
	memcpy(g->k, k, sizeof(g->k));
	g->used = 1;
	return 0;
}

/* Was key k forgotten (1), never (0), or cannot it be told (-1)? */
static int forgotten(const struct kx_jobflow *f, const uint64_t k[3])
{
	const struct kx_jobflow_key *g;

	if (!f->gone)
		return 0;
	g = &f->gone[kx_hash_bytes(k, 3 * sizeof(*k)) % KX_JOBFLOW_GONE];
	if (g->used && !memcmp(g->k, k, sizeof(g->k)))
		return 1;
	return g->lost ? -1 : 0;
}

/* Key k closed at done (ns): remembered; the oldest forgotten past
 * KX_JOBFLOW_CLOSED or KX_JOBFLOW_WINDOW_NS before the latest record paired. */
static int remember(struct kx_jobflow *f, const uint64_t k[3], uint64_t done)
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
	memset(c, 0, sizeof(*c));
	memcpy(c->k, k, sizeof(c->k));
	c->done = done;
	while (f->chead < f->nclosed &&
	       (f->nclosed - f->chead > KX_JOBFLOW_CLOSED ||
	        f->closed[f->chead].done + KX_JOBFLOW_WINDOW_NS < f->rel_ts))
		if (forget(f, f->closed[f->chead++].k))
			return -1;
	return 0;
}

/* Request slot of f->open closed (its key's entry sl): counted and held. */
static int block_close(struct kx_jobflow *f, struct kx_keyslot *sl, size_t slot)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	struct kx_tjob t = o->t;
	uint64_t ts = o->ts, seq = o->seq, k[3];

	memcpy(k, sl->k, sizeof(k));
	sl->v = KEY_CLOSED;
	o->gen = 0;
	kx_slots_put(&f->open, slot);
	if (remember(f, k, t.r.done_ts))
		return -1;
	return job_out(f, &t, ts, seq, 0, BLOCK_LATE);
}

/* A new request of record r on key k (jobs.c's pair_event and link_submit). */
static int block_open(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3])
{
	struct kx_keyslot *sl;
	struct fl_kjob *o;
	uint64_t at;
	long slot;

	if (kx_slots_live(&f->open) >= KX_JOBFLOW_OPEN) {
		because(f, "too many block requests open at once");
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
	if (at && r->cand_id && kx_tjob_links_to(&o->t, &r->cand))
		o->t.r.submit = 0;
	else if (at)
		kx_tjob_no_link(&o->t);
	if (kx_slots_live(&f->open) > f->peak_open)
		f->peak_open = kx_slots_live(&f->open);
	if (o->t.closed)
		return block_close(f, sl, (size_t)slot);
	sl->v = (uint64_t)slot + 1;
	return kx_minheap_push(&f->opens, &(struct fl_openref){kx_jobrec_start(&o->t.r), o->ts,
	                                                       o->seq, (uint32_t)slot, o->gen});
}

/* Record r in time order: jobs.c's pair_event. */
static int block_pair(struct kx_jobflow *f, const struct fl_rec *r)
{
	struct kx_keyslot *sl;
	uint64_t k[3];

	kx_jobpair_key(&r->e, k);
	sl = kx_keymap_find(&f->keys, k[0], k[1], k[2]);
	if (sl && sl->v != KEY_CLOSED) {
		size_t slot = (size_t)sl->v - 1;

		kx_jobpair_phase(&((struct fl_kjob *)kx_slots_at(&f->open, slot))->t, &r->e,
		                 &f->anom);
		if (((struct fl_kjob *)kx_slots_at(&f->open, slot))->t.closed)
			return block_close(f, sl, slot);
		return 0;
	}
	/* A closed request's key: a DONE repeats it, another phase opens a new one. */
	if (r->e.phase == KX_JOB_DONE) {
		int gone = sl ? 1 : forgotten(f, k);

		if (gone < 0) {
			because(f, "a block DONE came on a key that may have closed before the "
			           "streamed read's window (a duplicate, or a new request)");
			return 0;
		}
		if (gone) {
			f->anom.duplicate++;
			return 0;
		}
	}
	return block_open(f, r, k);
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
		if (block_pair(f, &r))
			return -1;
	}
	return 0;
}

/* A block record (QUEUE, RUN, DONE) of place seq, in file order. */
static int block_rec(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq)
{
	struct fl_rec *r;
	struct fl_thread *t = NULL;
	long slot;

	if (j->ts < f->rel_ts) {
		because(f, "block job records came out of time order by more than the streamed "
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

/* Every request still open at the end: incomplete, ending at end_ns. */
static int block_end(struct kx_jobflow *f, uint64_t end_ns)
{
	for (size_t i = 0; i < f->open.n; i++) {
		struct fl_kjob *o = kx_slots_at(&f->open, i);

		if (!o->gen)
			continue;
		o->gen = 0;
		if (job_out(f, &o->t, o->ts, o->seq, end_ns, BLOCK_LATE))
			return -1;
	}
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
	case KX_JEV_WAIT:
		because(f, "wait phases of device jobs (their waiters)");
		return 0;
	default:
		if (j->src == KX_JOB_SRC_BLOCK)
			return block_rec(f, j, seq);
		because(f, "device jobs of a GPU source (their devices are learnt from later jobs "
		           "of their ring, a later event of another source may rename them, their "
		           "waiters come after them)");
		return 0;
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
	if (block_end(f, o->end_ns) || release(f, 1))
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
