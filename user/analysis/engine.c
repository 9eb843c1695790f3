/* The analysis engine's front and its reorder stage (contract: engine.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "util/grow.h"

/* The kinds, in their order at one start and length: a counter record
 * before its call, a range before the calls as long as it. */
enum { REC_CTR, REC_RANGE, REC_IOCTL };

/* A waiting record and its place in its thread's order (32 bytes: a
 * capture in memory has one a call). */
struct kx_eng_rec {
	uint64_t ts;         /* ns, its start */
	uint64_t dur;        /* ns; UINT64_MAX: a counter record's (before its call), a
	                        range's whose end has not come (the longest) */
	uint64_t seq : 45;   /* its place in the file */
	uint64_t kind : 2;   /* REC_* */
	uint64_t copy : 1;   /* its copy kept (a call's or counter record's, not a span's) */
	uint64_t depth : 16; /* a range's level */
	uint32_t ref;        /* the caller's handle (KX_ENGINE_NOREF: none) */
	uint32_t at;         /* its copy's slot in kx_engine.copies; a range's or span's thread */
};
_Static_assert(sizeof(struct kx_eng_rec) == 32, "struct kx_eng_rec grew");

/* A call's or counter record's copy while it waits. */
union kx_eng_copy {
	struct kx_ioctl e;
	struct kx_ctr_ev c;
};

/* A thread's waiting records, in order: q[head .. n). */
struct kx_eng_thread {
	struct kx_eng_rec *q;
	size_t head, n, cap;
	uint64_t latest;        /* ns, the latest start fed */
	uint64_t lag;           /* ns, the most a record in order started before latest */
	int unsorted;           /* unbounded: records appended, sorted at the end (ORDER_*) */
	size_t run;             /* ORDER_RUNS: where the second run starts in q */
	struct kx_eng_rec last; /* the last to leave (its key) */
	int left;               /* some record left */
	int called;             /* a call of it was fed */
	int ranged;             /* a range of it was fed: KX_ENGINE_RANGE_HOLD records wait */
};

void kx_engine_init(struct kx_engine *e, uint64_t window_ns, size_t budget,
                    const struct kx_engine_sinks *out)
{
	memset(e, 0, sizeof(*e));
	e->out = *out;
	e->window_ns = window_ns;
	e->budget = budget;
	e->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct kx_eng_thread);
	e->copies = (struct kx_slots)KX_SLOTS_INIT(union kx_eng_copy);
	e->mem = (struct kx_memacct)KX_MEMACCT_INIT;
	e->low = UINT64_MAX;
}

/* A thread's waiting records, appended unbounded: in order, two runs in
 * order each (merged at the end), or neither (sorted at the end). */
enum { ORDER_SORTED, ORDER_RUNS, ORDER_NONE };

/* Does a come before b in a thread's order? */
static int before(const struct kx_eng_rec *a, const struct kx_eng_rec *b)
{
	if (a->ts != b->ts)
		return a->ts < b->ts;
	if (a->dur != b->dur)
		return a->dur > b->dur;
	if (a->kind != b->kind)
		return a->kind < b->kind;
	if (a->kind == REC_RANGE && a->depth != b->depth)
		return a->depth < b->depth;
	return a->seq < b->seq;
}

static int rec_cmp(const void *pa, const void *pb)
{
	const struct kx_eng_rec *a = pa, *b = pb;

	return before(a, b) ? -1 : before(b, a);
}

/* Are t's waiting records x and x + 1 out of order (not at the start of
 * its second run)? */
static int out_of_order(const struct kx_eng_thread *t, size_t x)
{
	return x >= t->head && x + 1 < t->n && !(t->unsorted == ORDER_RUNS && x + 1 == t->run) &&
	       before(&t->q[x + 1], &t->q[x]);
}

/* t's waiting records in order, after appends unbounded: two runs merged
 * (a copy of the first), or sorted (as when that copy cannot be made). */
static void sort_waiting(struct kx_eng_thread *t)
{
	struct kx_eng_rec *a = NULL, *q = t->q;
	size_t na = t->run - t->head, i = 0, j = t->run, k = t->head;

	if (t->unsorted == ORDER_RUNS && (a = malloc(na * sizeof(*a)))) {
		memcpy(a, q + t->head, na * sizeof(*a));
		while (i < na)
			q[k++] = j < t->n && before(&q[j], &a[i]) ? q[j++] : a[i++];
		free(a);
	} else if (t->unsorted) {
		qsort(q + t->head, t->n - t->head, sizeof(*q), rec_cmp);
	}
	t->unsorted = ORDER_SORTED;
}

static int fail(struct kx_engine *e)
{
	e->failed = 1;
	return -1;
}

/* r (c: its copy, NULL for a range or span) to its sink. */
static int emit(struct kx_engine *e, const struct kx_eng_rec *r, const union kx_eng_copy *c,
                int late)
{
	int rc = 0;

	e->out_seq = r->seq;
	e->out_ref = r->ref;
	e->out_ts = r->ts;
	e->out_dur = r->dur;
	if (r->kind == REC_RANGE) {
		int (*fn)(void *, uint32_t, uint32_t) = late ? e->out.late_range : e->out.range;

		rc = fn ? fn(e->out.ctx, r->at, r->ref) : 0;
	} else if (r->kind == REC_IOCTL) {
		int (*fn)(void *, const struct kx_ioctl *) =
		        late ? e->out.late_ioctl : e->out.ioctl;

		if (fn && c) {
			rc = fn(e->out.ctx, &c->e);
		} else if (fn) {
			struct kx_ioctl span = {.ts = r->ts, .dur = r->dur, .tid = r->at};

			rc = fn(e->out.ctx, &span);
		}
	} else {
		int (*fn)(void *, const struct kx_ctr_ev *) = late ? e->out.late_ctr : e->out.ctr;

		rc = fn ? fn(e->out.ctx, &c->c) : 0;
	}
	return rc ? fail(e) : 0;
}

/* Bytes a waiting record takes (copied: its copy kept). */
static size_t rec_bytes(int copied)
{
	return sizeof(struct kx_eng_rec) + (copied ? sizeof(union kx_eng_copy) : 0);
}

/* Thread t's earliest waiting record out (its copy's slot freed first). */
static int leave(struct kx_engine *e, struct kx_eng_thread *t)
{
	struct kx_eng_rec *r = &t->q[t->head++];
	union kx_eng_copy c;
	int copied = r->copy;

	t->last = *r;
	t->left = 1;
	e->held -= rec_bytes(copied);
	if (copied) {
		c = *(union kx_eng_copy *)kx_slots_at(&e->copies, r->at);
		kx_slots_put(&e->copies, r->at);
	}
	if (t->head == t->n)
		t->head = t->n = 0;
	return emit(e, &t->last, copied ? &c : NULL, 0);
}

/* The records of t that nothing later within the window can precede. */
static int drain(struct kx_engine *e, struct kx_eng_thread *t)
{
	uint64_t window = e->measured && t->lag < e->window_ns ? t->lag : e->window_ns;

	while (t->head < t->n && t->latest - t->q[t->head].ts > window &&
	       (!t->ranged || t->n - t->head > KX_ENGINE_RANGE_HOLD))
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
		t->run -= t->unsorted == ORDER_RUNS ? t->head : 0;
		t->head = 0;
	}
	if (kx_grow((void **)&t->q, &t->cap, t->n, sizeof(*t->q)))
		return -1;
	i = t->n;
	if (e->window_ns == KX_ENGINE_UNBOUNDED && !e->budget) { /* sorted once, at the end */
		if (i > t->head && before(r, &t->q[i - 1])) {
			t->run = i;
			t->unsorted = t->unsorted == ORDER_SORTED ? ORDER_RUNS : ORDER_NONE;
		}
	} else
		for (; i > t->head && before(r, &t->q[i - 1]); i--)
			;
	if (i < t->n)
		memmove(t->q + i + 1, t->q + i, (t->n - i) * sizeof(*t->q));
	t->q[i] = *r;
	t->n++;
	if (r->ts < e->low)
		e->low = r->ts;
	e->held += rec_bytes(r->copy);
	if (e->held > e->peak)
		e->peak = e->held;
	return 0;
}

/* Record r of thread tid, c its copy (NULL: none kept). */
static int feed(struct kx_engine *e, uint32_t tid, struct kx_eng_rec *r, const union kx_eng_copy *c)
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
	}
	t->ranged |= r->kind == REC_RANGE;
	if (t->left && before(r, &t->last)) { /* its place has gone by */
		if (r->kind == REC_IOCTL)
			e->late_ioctls++;
		else if (r->kind == REC_CTR)
			e->late_ctrs++;
		else
			e->late_ranges++;
		return emit(e, r, c, 1);
	}
	if (c) {
		long i = kx_slots_take(&e->copies);

		if (i < 0)
			return fail(e);
		*(union kx_eng_copy *)kx_slots_at(&e->copies, (size_t)i) = *c;
		r->at = (uint32_t)i;
		r->copy = 1;
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
	struct kx_eng_rec r = {
	        .ts = ev->ts, .dur = ev->dur, .kind = REC_IOCTL, .ref = KX_ENGINE_NOREF};
	union kx_eng_copy c = {.e = *ev};
	int64_t delta = 0;
	int mem = KX_MEM_NONE;

	if (!e->failed && ev->ret >= 0 && arg)
		mem = kx_memacct_step(&e->mem, ev, arg, &delta);
	if (mem < 0)
		return fail(e);
	e->last_mem = mem != KX_MEM_NONE;
	return feed(e, ev->tid, &r, &c);
}

int kx_engine_feed_span(struct kx_engine *e, uint32_t tid, uint64_t ts, uint64_t dur, uint32_t ref)
{
	struct kx_eng_rec r = {.ts = ts, .dur = dur, .kind = REC_IOCTL, .ref = ref, .at = tid};

	return feed(e, tid, &r, NULL);
}

int kx_engine_feed_ctr(struct kx_engine *e, const struct kx_ctr_ev *c)
{
	struct kx_eng_rec r = {
	        .ts = c->ts, .dur = UINT64_MAX, .kind = REC_CTR, .ref = KX_ENGINE_NOREF};
	union kx_eng_copy copy = {.c = *c};

	return feed(e, c->tid, &r, &copy);
}

void kx_engine_range_end(struct kx_engine *e, uint32_t tid, uint32_t ref, uint64_t len)
{
	struct kx_eng_thread *t = kx_tidtab_find(&e->threads, tid);
	size_t i;

	if (!t)
		return;
	for (i = t->n; i > t->head; i--)
		if (t->q[i - 1].kind == REC_RANGE && t->q[i - 1].ref == ref)
			break;
	if (i == t->head)
		return; /* it has left, longest: the caller checks it */
	i--;
	t->q[i].dur = len;
	if (t->unsorted == ORDER_NONE)
		return;
	if (e->window_ns == KX_ENGINE_UNBOUNDED && !e->budget) { /* sorted at the end if need be */
		if (out_of_order(t, i) || (i > 0 && out_of_order(t, i - 1)))
			t->unsorted = ORDER_NONE;
		return;
	}
	for (; i + 1 < t->n && before(&t->q[i + 1], &t->q[i]); i++) { /* shorter: later */
		struct kx_eng_rec x = t->q[i];

		t->q[i] = t->q[i + 1];
		t->q[i + 1] = x;
	}
}

int kx_engine_feed_ann(struct kx_engine *e, const struct kx_ann *a, const char *name,
                       const char *cat)
{
	uint32_t ref = KX_ENGINE_NOREF;
	struct kx_eng_rec r = {.ts = a->ts, .dur = UINT64_MAX, .kind = REC_RANGE};

	if (e->failed)
		return -1;
	if (e->out.ann && e->out.ann(e->out.ctx, a, name, cat, &ref))
		return fail(e);
	if (ref == KX_ENGINE_NOREF)
		return 0;
	if (a->what == KX_ANN_POP) {
		kx_engine_range_end(e, a->tid, ref, a->ts > a->begin ? a->ts - a->begin : 0);
		return 0;
	}
	if (a->what != KX_ANN_PUSH)
		return 0;
	r.depth = a->depth;
	r.ref = ref;
	r.at = a->tid;
	return feed(e, a->tid, &r, NULL);
}

/* Every waiting record of t out, in order; its queue's memory freed. */
static int finish_thread(struct kx_engine *e, struct kx_eng_thread *t)
{
	sort_waiting(t);
	while (t->head < t->n)
		if (leave(e, t))
			return -1;
	free(t->q);
	t->q = NULL;
	t->cap = 0;
	return 0;
}

int kx_engine_release(struct kx_engine *e, uint64_t ts)
{
	uint64_t low = UINT64_MAX;

	if (e->failed)
		return -1;
	if (ts < e->low)
		return 0;
	for (size_t i = 0; i < e->threads.n; i++) {
		struct kx_eng_thread *t = kx_tidtab_at(&e->threads, i);

		sort_waiting(t);
		while (t->head < t->n && t->q[t->head].ts <= ts)
			if (leave(e, t))
				return -1;
		if (t->head < t->n && t->q[t->head].ts < low)
			low = t->q[t->head].ts;
	}
	e->low = low;
	return 0;
}

int kx_engine_hand_calls(struct kx_engine *e, struct kx_engine *to)
{
	for (size_t i = 0; i < e->threads.n; i++) {
		struct kx_eng_thread *t = kx_tidtab_at(&e->threads, i), *d;

		sort_waiting(t);
		for (size_t k = t->head; k < t->n; k++) {
			const struct kx_eng_rec *r = &t->q[k];
			const union kx_eng_copy *c;

			if (r->kind != REC_IOCTL || !r->copy)
				continue;
			c = kx_slots_at(&e->copies, r->at);
			d = kx_tidtab_get(&to->threads, c->e.tid, 1);
			if (!d)
				return fail(to);
			if (t->lag > d->lag)
				d->lag = t->lag;
			if (kx_engine_feed_ioctl(to, &c->e, NULL))
				return -1;
		}
	}
	return 0;
}

int kx_engine_finish_thread(struct kx_engine *e, uint32_t tid)
{
	struct kx_eng_thread *t = kx_tidtab_find(&e->threads, tid);

	if (e->failed)
		return -1;
	return t ? finish_thread(e, t) : 0;
}

int kx_engine_finish(struct kx_engine *e)
{
	for (size_t i = 0; i < e->threads.n && !e->failed; i++)
		if (finish_thread(e, kx_tidtab_at(&e->threads, i)))
			return -1;
	return e->failed ? -1 : 0;
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
	kx_slots_free(&e->copies);
	kx_memacct_free(&e->mem);
	memset(e, 0, sizeof(*e));
}
