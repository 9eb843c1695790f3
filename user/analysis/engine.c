/* The analysis engine's front and its reorder stage (contract: engine.h). */
#include <stdio.h>
#include <string.h>

#include "analysis/engine.h"
#include "util/grow.h"

enum { REC_IOCTL, REC_CTR };

/* A waiting record and its place in its thread's order. */
struct kx_eng_rec {
	uint64_t ts;  /* ns, its start */
	uint64_t dur; /* ns; a counter record's UINT64_MAX (before its call) */
	uint64_t seq; /* its place in the file */
	int kind;     /* REC_* */
	union {
		struct kx_ioctl e;
		struct kx_ctr_ev c;
	} u;
};

/* A thread's waiting records, in order: q[head .. n). */
struct kx_eng_thread {
	struct kx_eng_rec *q;
	size_t head, n, cap;
	uint64_t latest;        /* ns, the latest start fed */
	uint64_t lag;           /* ns, the most a record in order started before latest */
	struct kx_eng_rec last; /* the last to leave (its key) */
	int left;               /* some record left */
	int called;             /* a call of it was fed */
	uint64_t last_end;      /* ns, the end of its last call fed */
};

void kx_engine_init(struct kx_engine *e, uint64_t window_ns, size_t budget,
                    const struct kx_engine_sinks *out)
{
	memset(e, 0, sizeof(*e));
	e->out = *out;
	e->window_ns = window_ns;
	e->budget = budget;
	e->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct kx_eng_thread);
	e->mem = (struct kx_memacct)KX_MEMACCT_INIT;
}

/* Does a come before b in a thread's order? */
static int before(const struct kx_eng_rec *a, const struct kx_eng_rec *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->dur != b->dur)
		return a->dur > b->dur;
	return a->seq < b->seq;
}

static int fail(struct kx_engine *e)
{
	e->failed = 1;
	return -1;
}

static int emit(struct kx_engine *e, const struct kx_eng_rec *r, int late)
{
	int rc = 0;

	e->out_seq = r->seq;
	if (r->kind == REC_IOCTL) {
		int (*fn)(void *, const struct kx_ioctl *) =
		        late ? e->out.late_ioctl : e->out.ioctl;

		rc = fn ? fn(e->out.ctx, &r->u.e) : 0;
	} else {
		int (*fn)(void *, const struct kx_ctr_ev *) = late ? e->out.late_ctr : e->out.ctr;

		rc = fn ? fn(e->out.ctx, &r->u.c) : 0;
	}
	return rc ? fail(e) : 0;
}

/* Thread t's earliest waiting record out. */
static int leave(struct kx_engine *e, struct kx_eng_thread *t)
{
	struct kx_eng_rec *r = &t->q[t->head++];

	t->last = *r;
	t->left = 1;
	e->held -= sizeof(*r);
	if (t->head == t->n)
		t->head = t->n = 0;
	return emit(e, &t->last, 0);
}

/* The records of t that nothing later within the window can precede. */
static int drain(struct kx_engine *e, struct kx_eng_thread *t)
{
	uint64_t window = e->measured && t->lag < e->window_ns ? t->lag : e->window_ns;

	while (t->head < t->n && t->latest - t->q[t->head].ts > window)
		if (leave(e, t))
			return -1;
	return 0;
}

/* r into t's queue at its place (most come last). */
static int insert(struct kx_engine *e, struct kx_eng_thread *t, const struct kx_eng_rec *r)
{
	size_t i;

	if (t->head && t->n == t->cap) { /* room at the front: move down */
		memmove(t->q, t->q + t->head, (t->n - t->head) * sizeof(*t->q));
		t->n -= t->head;
		t->head = 0;
	}
	if (kx_grow((void **)&t->q, &t->cap, t->n, sizeof(*t->q)))
		return -1;
	for (i = t->n; i > t->head && before(r, &t->q[i - 1]); i--)
		;
	memmove(t->q + i + 1, t->q + i, (t->n - i) * sizeof(*t->q));
	t->q[i] = *r;
	t->n++;
	e->held += sizeof(*r);
	if (e->held > e->peak)
		e->peak = e->held;
	return 0;
}

static int feed(struct kx_engine *e, uint32_t tid, struct kx_eng_rec *r)
{
	struct kx_eng_thread *t;

	if (e->failed)
		return -1;
	r->seq = e->seq++;
	t = kx_tidtab_get(&e->threads, tid, 1);
	if (!t)
		return fail(e);
	if (r->kind == REC_IOCTL) {
		e->ioctl_threads += !t->called;
		t->called = 1;
		t->last_end = r->u.e.ts + r->u.e.dur;
	}
	if (t->left && before(r, &t->last)) { /* its place has gone by */
		if (r->kind == REC_IOCTL)
			e->late_ioctls++;
		else
			e->late_ctrs++;
		return emit(e, r, 1);
	}
	if (insert(e, t, r))
		return fail(e);
	if (r->ts > t->latest)
		t->latest = r->ts;
	else if (t->latest - r->ts > t->lag)
		t->lag = t->latest - r->ts;
	if (e->budget && e->held > e->budget) {
		e->forced++;
		if (leave(e, t))
			return -1;
	}
	return drain(e, t);
}

int kx_engine_feed_ioctl(struct kx_engine *e, const struct kx_ioctl *ev, const uint8_t *arg)
{
	struct kx_eng_rec r = {.ts = ev->ts, .dur = ev->dur, .kind = REC_IOCTL};
	int64_t delta = 0;
	int mem = KX_MEM_NONE;

	if (!e->failed && ev->ret >= 0 && arg)
		mem = kx_memacct_step(&e->mem, ev, arg, &delta);
	if (mem < 0)
		return fail(e);
	e->last_mem = mem != KX_MEM_NONE;
	r.u.e = *ev;
	return feed(e, ev->tid, &r);
}

int kx_engine_feed_ctr(struct kx_engine *e, const struct kx_ctr_ev *c)
{
	struct kx_eng_rec r = {.ts = c->ts, .dur = UINT64_MAX, .kind = REC_CTR};

	r.u.c = *c;
	return feed(e, c->tid, &r);
}

int kx_engine_feed_ann(struct kx_engine *e, const struct kx_ann *a, const char *name,
                       const char *cat)
{
	if (e->failed)
		return -1;
	return e->out.ann && e->out.ann(e->out.ctx, a, name, cat) ? fail(e) : 0;
}

int kx_engine_feed_job(struct kx_engine *e, const struct kx_job *j)
{
	if (e->failed)
		return -1;
	return e->out.job && e->out.job(e->out.ctx, j) ? fail(e) : 0;
}

int kx_engine_feed_task(struct kx_engine *e, const struct kx_task *t)
{
	if (e->failed)
		return -1;
	return e->out.task && e->out.task(e->out.ctx, t) ? fail(e) : 0;
}

int kx_engine_finish(struct kx_engine *e)
{
	for (size_t i = 0; i < e->threads.n && !e->failed; i++) {
		struct kx_eng_thread *t = kx_tidtab_at(&e->threads, i);

		while (t->head < t->n)
			if (leave(e, t))
				return -1;
	}
	return e->failed ? -1 : 0;
}

int kx_engine_last_end(const struct kx_engine *e, uint32_t tid, uint64_t *end)
{
	const struct kx_eng_thread *t = kx_tidtab_find(&e->threads, tid);

	if (!t || !t->called)
		return 0;
	*end = t->last_end;
	return 1;
}

const char *kx_engine_budget_note(const struct kx_engine *e, char *buf, size_t len)
{
	if (!e->forced)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len,
		         "the reorder stage's memory budget (%zu bytes) was exceeded: %llu "
		         "records left before their turn",
		         e->budget, (unsigned long long)e->forced);
	return buf;
}

void kx_engine_free(struct kx_engine *e)
{
	for (size_t i = 0; i < e->threads.n; i++)
		free(((struct kx_eng_thread *)kx_tidtab_at(&e->threads, i))->q);
	kx_tidtab_free(&e->threads);
	kx_memacct_free(&e->mem);
	memset(e, 0, sizeof(*e));
}
