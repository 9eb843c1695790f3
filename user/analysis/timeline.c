/*
 * Per-thread timeline and the nesting rule (contract: timeline.h).
 *
 * Grouping is a counting sort: a first pass over the store counts each
 * thread's events (a direct-mapped cache of recent tids spares most events
 * the hash lookup, since runs of one thread are the rule), threads are
 * sorted by tid, a second pass places the store indices, and threads whose
 * events were not stored in start order are sorted on their own.
 *
 * The rule keeps, per thread, a stack of the ends of its open events. A
 * thread stored in start order (the rule in a live capture) gets it during
 * the first pass, while its events are in cache; the fixes are noted by
 * (thread, rank in the thread) and placed once the ranges are known. Only
 * threads found out of order are walked again, in their sorted order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "util/grow.h"

#define TID_CACHE 64

/* A thread while building: its public record and what the first pass saw. */
struct line {
	struct kx_tl_thread t;
	uint32_t sorted;   /* stored events already in (start, longest first) order */
	uint64_t last_ts;  /* ns, start of the latest event seen */
	uint64_t last_dur; /* ns, its duration */
	uint64_t *stack;   /* ns, ends of the open events (while sorted) */
	size_t depth, scap;
	size_t nfix; /* events the rule shortened while sorted */
};

/* A fix found in the first pass: the thread's tid and the event's rank in it. */
struct early_fix {
	uint32_t tid;
	size_t k, idx;
	uint64_t dur; /* ns */
};

/* tid -> line index + 1 (0: empty slot); open addressing, at most half full. */
struct tidslot {
	uint32_t tid, id;
};
struct tidmap {
	struct tidslot *slot;
	size_t cap, used; /* cap: a power of two */
};

struct build {
	const struct kx_store *s;
	struct kx_timeline *tl;
	struct line *lines;
	size_t nlines, cap;
	struct tidmap map;
	uint32_t ctid[TID_CACHE], cline[TID_CACHE]; /* recent tid -> line id + 1 (0: none) */
	struct early_fix *early;
	size_t nearly, earlycap;
	size_t fixcap; /* room of tl->fix */
};

static uint64_t end_of(const struct kx_ioctl *e)
{
	return e->dur > UINT64_MAX - e->ts ? UINT64_MAX : e->ts + e->dur;
}

/*
 * The rule for the next event e of a thread: pops the enclosing events
 * that ended, then nests e in the innermost. Returns e's end (ns), cut to
 * that event's end on a partial overlap (*cut set).
 */
static int nest(uint64_t **stack, size_t *depth, size_t *cap, const struct kx_ioctl *e,
                uint64_t *end, int *cut)
{
	uint64_t start = e->ts;

	*end = end_of(e);
	*cut = 0;
	while (*depth && (*stack)[*depth - 1] <= start)
		(*depth)--;
	if (*depth && *end > (*stack)[*depth - 1]) {
		*end = (*stack)[*depth - 1];
		*cut = 1;
	}
	if (kx_grow((void **)stack, cap, *depth, sizeof(**stack)))
		return -1;
	(*stack)[(*depth)++] = *end;
	return 0;
}

/* The rule for event i, the next of line l, stored in order so far. */
static int nest_early(struct build *b, struct line *l, const struct kx_ioctl *e, size_t i)
{
	uint64_t end;
	int cut;

	/* The common case: calls one after the other, none open. */
	if (l->depth == 1 && l->stack[0] <= e->ts) {
		l->stack[0] = end_of(e);
		return 0;
	}
	if (nest(&l->stack, &l->depth, &l->scap, e, &end, &cut))
		return -1;
	if (!cut)
		return 0;
	if (kx_grow((void **)&b->early, &b->earlycap, b->nearly, sizeof(*b->early)))
		return -1;
	b->early[b->nearly++] = (struct early_fix){l->t.tid, l->t.count, i, end - e->ts};
	l->nfix++;
	return 0;
}

static size_t tid_home(uint32_t tid, size_t cap)
{
	/* Fibonacci hashing: consecutive tids spread over the table. */
	return (size_t)(((uint64_t)tid * 0x9e3779b97f4a7c15ULL) >> 32) & (cap - 1);
}

static struct tidslot *tid_find(const struct tidmap *m, uint32_t tid)
{
	size_t h = tid_home(tid, m->cap);

	while (m->slot[h].id && m->slot[h].tid != tid)
		h = (h + 1) & (m->cap - 1);
	return &m->slot[h];
}

static int tid_grow(struct tidmap *m)
{
	struct tidmap n = {NULL, m->cap ? m->cap * 2 : 64, 0};

	n.slot = calloc(n.cap, sizeof(*n.slot));
	if (!n.slot)
		return -1;
	for (size_t i = 0; i < m->cap; i++)
		if (m->slot[i].id)
			*tid_find(&n, m->slot[i].tid) = m->slot[i];
	n.used = m->used;
	free(m->slot);
	*m = n;
	return 0;
}

/* The slot of tid, its id 0 when new (the caller sets it); NULL on OOM. */
static struct tidslot *tid_slot(struct tidmap *m, uint32_t tid)
{
	struct tidslot *sl = m->cap ? tid_find(m, tid) : NULL;

	if (sl && sl->id)
		return sl;
	/* New: grow first, so that the table stays at most half full. */
	if ((m->used + 1) * 2 > m->cap) {
		if (tid_grow(m))
			return NULL;
		sl = tid_find(m, tid);
	}
	sl->tid = tid;
	m->used++;
	return sl;
}

/* The line of e's thread, created when new; NULL on OOM. */
static struct line *line_of(struct build *b, const struct kx_ioctl *e)
{
	unsigned int c = e->tid % TID_CACHE;
	struct tidslot *sl;
	struct line *l;

	if (b->cline[c] && b->ctid[c] == e->tid)
		return &b->lines[b->cline[c] - 1];
	sl = tid_slot(&b->map, e->tid);
	if (!sl)
		return NULL;
	if (!sl->id) {
		if (kx_grow((void **)&b->lines, &b->cap, b->nlines, sizeof(*b->lines)))
			return NULL;
		l = &b->lines[b->nlines++];
		memset(l, 0, sizeof(*l));
		l->t.tid = e->tid;
		l->t.pid = e->pid;
		l->sorted = 1;
		sl->id = (uint32_t)b->nlines;
	}
	b->ctid[c] = e->tid;
	b->cline[c] = sl->id;
	return &b->lines[sl->id - 1];
}

/* First pass: the threads and how many events each has. */
static int count_events(struct build *b, size_t n)
{
	const struct kx_ioctl *cur = NULL;

	for (size_t i = 0, run = 0; i < n; i++, run--) {
		const struct kx_ioctl *e = cur = run ? cur + 1 : kx_store_ioctl_run(b->s, i, &run);
		struct line *l = line_of(b, e);

		if (!l)
			return -1;
		if (l->t.count &&
		    (e->ts < l->last_ts || (e->ts == l->last_ts && e->dur > l->last_dur)))
			l->sorted = 0;
		if (l->sorted && nest_early(b, l, e, i))
			return -1;
		if (e->pid != l->t.pid)
			l->t.mixed_pids = 1;
		l->last_ts = e->ts;
		l->last_dur = e->dur;
		l->t.count++;
	}
	return 0;
}

static int line_tid_cmp(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	return x->t.tid < y->t.tid ? -1 : x->t.tid > y->t.tid;
}

/* Threads by tid, each given its range of the order. */
static void lay_out(struct build *b)
{
	size_t pos = 0;

	if (b->nlines)
		qsort(b->lines, b->nlines, sizeof(*b->lines), line_tid_cmp);
	for (size_t i = 0; i < b->nlines; i++) {
		tid_find(&b->map, b->lines[i].t.tid)->id = (uint32_t)(i + 1);
		b->lines[i].t.first = pos;
		pos += b->lines[i].t.count;
		b->lines[i].t.count = 0; /* refilled by place_events */
	}
	memset(b->cline, 0, sizeof(b->cline));
}

/* Second pass: store indices into their thread's range, in store order. */
static void place_events(struct build *b, size_t n)
{
	const struct kx_ioctl *cur = NULL;

	for (size_t i = 0, run = 0; i < n; i++, run--) {
		const struct kx_ioctl *e = cur = run ? cur + 1 : kx_store_ioctl_run(b->s, i, &run);
		unsigned int c = e->tid % TID_CACHE;
		struct line *l;

		if (!b->cline[c] || b->ctid[c] != e->tid) {
			b->ctid[c] = e->tid;
			b->cline[c] = tid_find(&b->map, e->tid)->id; /* known since count_events */
		}
		l = &b->lines[b->cline[c] - 1];

		b->tl->order[l->t.first + l->t.count++] = (uint32_t)i;
	}
}

struct sortent {
	uint64_t ts, dur;
	uint32_t idx;
};

static int sortent_cmp(const void *a, const void *b)
{
	const struct sortent *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	if (x->dur != y->dur) /* the longer one first, so shorter ones nest in it */
		return x->dur > y->dur ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Threads whose events were not stored in start order are sorted. */
static int sort_lines(struct build *b)
{
	struct sortent *tmp = NULL;
	size_t tmp_cap = 0;

	for (size_t i = 0; i < b->nlines; i++) {
		const struct line *l = &b->lines[i];
		uint32_t *ord = b->tl->order + l->t.first;

		if (l->sorted)
			continue;
		if (l->t.count > tmp_cap) {
			free(tmp);
			tmp_cap = l->t.count;
			tmp = malloc(tmp_cap * sizeof(*tmp));
			if (!tmp)
				return -1;
		}
		for (size_t k = 0; k < l->t.count; k++) {
			const struct kx_ioctl *e = kx_store_ioctl(b->s, ord[k]);

			tmp[k] = (struct sortent){e->ts, e->dur, ord[k]};
		}
		qsort(tmp, l->t.count, sizeof(*tmp), sortent_cmp);
		for (size_t k = 0; k < l->t.count; k++)
			ord[k] = tmp[k].idx;
	}
	free(tmp);
	return 0;
}

static int add_fix(struct build *b, size_t pos, size_t idx, uint64_t dur)
{
	struct kx_timeline *tl = b->tl;

	if (kx_grow((void **)&tl->fix, &b->fixcap, tl->nfix, sizeof(*tl->fix)))
		return -1;
	tl->fix[tl->nfix++] = (struct kx_tl_fix){pos, idx, dur};
	return 0;
}

/* The rule over a thread stored out of order, in its sorted order. */
static int nest_sorted(struct build *b, const struct kx_tl_thread *t, uint64_t **stack, size_t *cap)
{
	struct kx_timeline *tl = b->tl;
	size_t depth = 0, nfix0 = tl->nfix;

	for (size_t pos = t->first; pos < t->first + t->count; pos++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, tl->order[pos]);
		uint64_t end;
		int cut;

		if (nest(stack, &depth, cap, e, &end, &cut) ||
		    (cut && add_fix(b, pos, tl->order[pos], end - e->ts)))
			return -1;
	}
	if (tl->nfix > nfix0)
		tl->fixed_threads++;
	return 0;
}

static int fix_pos_cmp(const void *a, const void *b)
{
	const struct kx_tl_fix *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static int fix_idx_cmp(const void *a, const void *b)
{
	const struct kx_tl_fix *x = a, *y = b;

	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * The fixes: those of the first pass placed at their positions (threads
 * found out of order drop theirs), the out-of-order threads walked again;
 * then by position, and a copy by store index.
 */
static int resolve(struct build *b)
{
	struct kx_timeline *tl = b->tl;
	uint64_t *stack = NULL;
	size_t cap = 0;
	int rc = 0;

	for (size_t i = 0; i < b->nearly && !rc; i++) {
		const struct early_fix *f = &b->early[i];
		const struct line *l = &b->lines[tid_find(&b->map, f->tid)->id - 1];

		if (l->sorted)
			rc = add_fix(b, l->t.first + f->k, f->idx, f->dur);
	}
	for (size_t i = 0; i < b->nlines && !rc; i++) {
		if (b->lines[i].sorted)
			tl->fixed_threads += b->lines[i].nfix > 0;
		else
			rc = nest_sorted(b, &b->lines[i].t, &stack, &cap);
	}
	free(stack);
	if (rc || !tl->nfix)
		return rc;
	qsort(tl->fix, tl->nfix, sizeof(*tl->fix), fix_pos_cmp);
	tl->fix_by_idx = malloc(tl->nfix * sizeof(*tl->fix_by_idx));
	if (!tl->fix_by_idx)
		return -1;
	memcpy(tl->fix_by_idx, tl->fix, tl->nfix * sizeof(*tl->fix));
	qsort(tl->fix_by_idx, tl->nfix, sizeof(*tl->fix_by_idx), fix_idx_cmp);
	return 0;
}

/* The public thread records, and the earliest start. */
static int publish(struct build *b)
{
	struct kx_timeline *tl = b->tl;

	tl->threads = malloc((b->nlines ? b->nlines : 1) * sizeof(*tl->threads));
	if (!tl->threads)
		return -1;
	tl->nthreads = b->nlines;
	tl->first_ts = UINT64_MAX;
	for (size_t i = 0; i < b->nlines; i++) {
		uint64_t ts = kx_store_ioctl(b->s, tl->order[b->lines[i].t.first])->ts;

		tl->threads[i] = b->lines[i].t;
		if (ts < tl->first_ts)
			tl->first_ts = ts;
	}
	return 0;
}

struct kx_timeline *kx_timeline_build(const struct kx_store *s, char *err, size_t errlen)
{
	size_t n = kx_store_ioctl_count(s);
	struct kx_timeline *tl;
	struct build b;
	int rc = -1;

	if (n > UINT32_MAX) {
		snprintf(err, errlen, "too many events for one timeline (%zu, at most %u)", n,
		         UINT32_MAX);
		return NULL;
	}
	memset(&b, 0, sizeof(b));
	b.s = s;
	b.tl = tl = calloc(1, sizeof(*tl));
	if (!tl)
		goto out;
	tl->nevents = n;
	if (count_events(&b, n))
		goto out;
	lay_out(&b);
	tl->order = malloc((n ? n : 1) * sizeof(*tl->order));
	if (!tl->order)
		goto out;
	place_events(&b, n);
	if (sort_lines(&b) || publish(&b) || resolve(&b))
		goto out;
	rc = 0;
out:
	for (size_t i = 0; i < b.nlines; i++)
		free(b.lines[i].stack);
	free(b.lines);
	free(b.map.slot);
	free(b.early);
	if (rc) {
		snprintf(err, errlen, "out of memory ordering %zu events by thread", n);
		kx_timeline_free(tl);
		return NULL;
	}
	return tl;
}

void kx_timeline_free(struct kx_timeline *tl)
{
	if (!tl)
		return;
	free(tl->threads);
	free(tl->order);
	free(tl->fix);
	free(tl->fix_by_idx);
	free(tl);
}

/* The first of n fixes whose pos (by_idx: idx) is at least key; n when none. */
static size_t fix_lower(const struct kx_tl_fix *f, size_t n, size_t key, int by_idx)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if ((by_idx ? f[mid].idx : f[mid].pos) < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t kx_timeline_fix_from(const struct kx_timeline *tl, size_t pos)
{
	return fix_lower(tl->fix, tl->nfix, pos, 0);
}

uint64_t kx_timeline_dur(const struct kx_timeline *tl, size_t idx, uint64_t dur)
{
	size_t k = fix_lower(tl->fix_by_idx, tl->nfix, idx, 1);

	return k < tl->nfix && tl->fix_by_idx[k].idx == idx ? tl->fix_by_idx[k].dur : dur;
}
