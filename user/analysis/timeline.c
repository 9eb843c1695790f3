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
 * (thread, rank in the thread) and placed once the ranges are known.
 * Threads found out of order are radix-sorted on (start, duration) copies
 * and get the rule on those, so the store is read in order only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/timeline.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/lbound.h"

#define TID_CACHE 64

/* A thread while building: its public record and what the first pass saw. */
struct line {
	struct kx_tl_thread t;
	uint32_t sorted;   /* stored events already in (start, longest first) order */
	uint64_t last_ts;  /* ns, start of the latest event seen */
	uint64_t last_dur; /* ns, its duration */
	uint64_t *stack;   /* ns, ends of the open events (while sorted) */
	size_t depth, scap;
	size_t nfix;   /* events the rule shortened */
	size_t fix_at; /* while placing the fixes: the next slot of this thread's */
};

/* A fix found in the first pass: the thread's tid and the event's rank in it. */
struct early_fix {
	uint32_t tid;
	size_t k, idx;
	uint64_t dur; /* ns */
};

struct build {
	const struct kx_store *s;
	struct kx_timeline *tl;
	struct line *lines;
	size_t nlines, cap;
	struct kx_hmap map;                         /* tid -> line index + 1 */
	uint32_t ctid[TID_CACHE], cline[TID_CACHE]; /* recent tid -> line id + 1 (0: none) */
	struct early_fix *early;
	size_t nearly, earlycap;
	struct kx_tl_fix *late; /* fixes of threads stored out of order, by pos */
	size_t nlate, latecap;
};

static uint64_t end_of(uint64_t ts, uint64_t dur)
{
	return dur > UINT64_MAX - ts ? UINT64_MAX : ts + dur;
}

/* kx_timeline_nest past its inline common case (timeline.h). */
int kx_timeline_nest_open(uint64_t **stack, size_t *depth, size_t *cap, uint64_t start,
                          uint64_t dur, uint64_t *end, int *cut)
{
	*end = end_of(start, dur);
	*cut = 0;
	if (*depth == 1 && (*stack)[0] <= start) {
		(*stack)[0] = *end;
		return 0;
	}
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

	if (kx_timeline_nest(&l->stack, &l->depth, &l->scap, e->ts, e->dur, &end, &cut))
		return -1;
	if (!cut)
		return 0;
	if (kx_grow((void **)&b->early, &b->earlycap, b->nearly, sizeof(*b->early)))
		return -1;
	b->early[b->nearly++] = (struct early_fix){l->t.tid, l->t.count, i, end - e->ts};
	l->nfix++;
	return 0;
}

/* The line of e's thread, created when new; NULL on OOM. */
static struct line *line_of(struct build *b, const struct kx_ioctl *e)
{
	unsigned int c = e->tid % TID_CACHE;
	uint32_t *sl;
	struct line *l;

	if (b->cline[c] && b->ctid[c] == e->tid)
		return &b->lines[b->cline[c] - 1];
	sl = kx_hmap_put(&b->map, e->tid, 0, NULL);
	if (!sl)
		return NULL;
	if (!*sl) {
		if (kx_grow((void **)&b->lines, &b->cap, b->nlines, sizeof(*b->lines)))
			return NULL;
		l = &b->lines[b->nlines++];
		memset(l, 0, sizeof(*l));
		l->t.tid = e->tid;
		l->t.pid = e->pid;
		l->sorted = 1;
		*sl = (uint32_t)b->nlines;
	}
	b->ctid[c] = e->tid;
	b->cline[c] = *sl;
	return &b->lines[*sl - 1];
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
		*kx_hmap_get(&b->map, b->lines[i].t.tid) = (uint32_t)(i + 1);
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
			b->cline[c] = *kx_hmap_get(&b->map, e->tid); /* known since count_events */
		}
		l = &b->lines[b->cline[c] - 1];

		b->tl->order[l->t.first + l->t.count++] = (uint32_t)i;
	}
}

struct sortent {
	uint64_t ts, dur;
	uint32_t idx;
};

/*
 * One stable counting pass on byte `shift / 8` of the key (ts, or the
 * duration complemented so that longer comes first) from a into out; 0
 * when every entry has the same byte there (nothing moved).
 */
static int radix_pass(const struct sortent *a, struct sortent *out, size_t n, int by_ts,
                      unsigned int shift)
{
	size_t count[256] = {0}, pos = 0;

	for (size_t k = 0; k < n; k++)
		count[((by_ts ? a[k].ts : ~a[k].dur) >> shift) & 0xff]++;
	for (int d = 0; d < 256; d++) {
		size_t c = count[d];

		if (c == n)
			return 0;
		count[d] = pos;
		pos += c;
	}
	for (size_t k = 0; k < n; k++)
		out[count[((by_ts ? a[k].ts : ~a[k].dur) >> shift) & 0xff]++] = a[k];
	return 1;
}

/*
 * Sorts a[0..n) by (start, longer first, store index) with a radix sort,
 * least significant key first: the entries come in store order, so each
 * stable pass keeps the order of the keys after it. Returns the sorted
 * array: a or tmp.
 */
static struct sortent *sort_entries(struct sortent *a, struct sortent *tmp, size_t n)
{
	for (int by_ts = 0; by_ts < 2; by_ts++)
		for (unsigned int shift = 0; shift < 64; shift += 8) {
			if (radix_pass(a, tmp, n, by_ts, shift)) {
				struct sortent *t = a;

				a = tmp;
				tmp = t;
			}
		}
	return a;
}

/* The rule over a thread stored out of order, on its sorted entries. */
static int nest_sorted(struct build *b, struct line *l, const struct sortent *se, uint64_t **stack,
                       size_t *cap)
{
	size_t depth = 0;

	l->nfix = 0;
	for (size_t k = 0; k < l->t.count; k++) {
		uint64_t end;
		int cut;

		if (kx_timeline_nest(stack, &depth, cap, se[k].ts, se[k].dur, &end, &cut))
			return -1;
		if (!cut)
			continue;
		if (kx_grow((void **)&b->late, &b->latecap, b->nlate, sizeof(*b->late)))
			return -1;
		b->late[b->nlate++] = (struct kx_tl_fix){l->t.first + k, se[k].idx, end - se[k].ts};
		l->nfix++;
	}
	return 0;
}

/* Threads whose events were not stored in start order are sorted, then walked by the rule. */
static int sort_lines(struct build *b)
{
	struct sortent *tmp = NULL, *sorted;
	uint64_t *stack = NULL;
	size_t tmp_cap = 0, cap = 0;
	int rc = 0;

	for (size_t i = 0; i < b->nlines && !rc; i++) {
		struct line *l = &b->lines[i];
		uint32_t *ord = b->tl->order + l->t.first;

		if (l->sorted)
			continue;
		if (l->t.count > tmp_cap) {
			free(tmp);
			tmp_cap = l->t.count;
			tmp = malloc(2 * tmp_cap * sizeof(*tmp));
			if (!tmp) {
				rc = -1;
				break;
			}
		}
		for (size_t k = 0; k < l->t.count; k++) {
			const struct kx_ioctl *e = kx_store_ioctl(b->s, ord[k]);

			tmp[k] = (struct sortent){e->ts, e->dur, ord[k]};
		}
		sorted = sort_entries(tmp, tmp + tmp_cap, l->t.count);
		for (size_t k = 0; k < l->t.count; k++)
			ord[k] = sorted[k].idx;
		rc = nest_sorted(b, l, sorted, &stack, &cap);
	}
	free(tmp);
	free(stack);
	return rc;
}

/*
 * All fixes by position without sorting: each thread's run starts after
 * those of the threads before it; a thread stored in order brings its
 * first-pass fixes (in store order, which is its order), one walked again
 * its late ones. Threads found out of order drop their first-pass fixes.
 */
static int place_fixes(struct build *b)
{
	struct kx_timeline *tl = b->tl;
	size_t n = 0, li = 0;

	for (size_t i = 0; i < b->nlines; i++) {
		b->lines[i].fix_at = n;
		n += b->lines[i].nfix;
		tl->fixed_threads += b->lines[i].nfix > 0;
	}
	tl->fix = malloc((n ? n : 1) * sizeof(*tl->fix));
	if (!tl->fix)
		return -1;
	tl->nfix = n;
	for (size_t i = 0; i < b->nearly; i++) {
		const struct early_fix *f = &b->early[i];
		struct line *l = &b->lines[*kx_hmap_get(&b->map, f->tid) - 1];

		if (l->sorted)
			tl->fix[l->fix_at++] =
			        (struct kx_tl_fix){l->t.first + f->k, f->idx, f->dur};
	}
	for (size_t i = 0; i < b->nlate; i++) {
		while (b->lines[li].t.first + b->lines[li].t.count <= b->late[i].pos)
			li++;
		tl->fix[b->lines[li].fix_at++] = b->late[i];
	}
	return 0;
}

/* The bitmap and rank table of the shortened events, and their durations by store index. */
static int index_fixes(struct kx_timeline *tl)
{
	size_t words = (tl->nevents + 63) / 64;
	uint32_t rank = 0;

	tl->fixed = calloc(words, sizeof(*tl->fixed));
	tl->fixed_rank = malloc(words * sizeof(*tl->fixed_rank));
	tl->dur_by_rank = malloc(tl->nfix * sizeof(*tl->dur_by_rank));
	if (!tl->fixed || !tl->fixed_rank || !tl->dur_by_rank)
		return -1;
	for (size_t i = 0; i < tl->nfix; i++)
		tl->fixed[tl->fix[i].idx / 64] |= 1ULL << (tl->fix[i].idx % 64);
	for (size_t w = 0; w < words; w++) {
		tl->fixed_rank[w] = rank;
		rank += (uint32_t)__builtin_popcountll(tl->fixed[w]);
	}
	for (size_t i = 0; i < tl->nfix; i++)
		tl->dur_by_rank[kx_timeline_rank(tl, tl->fix[i].idx)] = tl->fix[i].dur;
	return 0;
}

/* Every fix placed by position and indexed by store index. */
static int resolve(struct build *b)
{
	if (place_fixes(b))
		return -1;
	return b->tl->nfix ? index_fixes(b->tl) : 0;
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
	kx_hmap_free(&b.map);
	free(b.early);
	free(b.late);
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
	free(tl->fixed);
	free(tl->fixed_rank);
	free(tl->dur_by_rank);
	free(tl);
}

static uint64_t fix_pos_at(const void *fix, size_t i)
{
	return ((const struct kx_tl_fix *)fix)[i].pos;
}

size_t kx_timeline_fix_from(const struct kx_timeline *tl, size_t pos)
{
	return kx_lbound(0, tl->nfix, pos, fix_pos_at, tl->fix);
}

static int fix_pos_cmp(const void *pa, const void *pb)
{
	const struct kx_tl_fix *a = pa, *b = pb;

	if (a->pos != b->pos)
		return a->pos < b->pos ? -1 : 1;
	return a->dur < b->dur ? -1 : a->dur > b->dur;
}

/* The timeline's cuts and their indexes freed (none kept). */
static void drop_fixes(struct kx_timeline *tl)
{
	free(tl->fix);
	free(tl->fixed);
	free(tl->fixed_rank);
	free(tl->dur_by_rank);
	tl->fix = NULL;
	tl->fixed = NULL;
	tl->fixed_rank = NULL;
	tl->dur_by_rank = NULL;
	tl->nfix = 0;
}

int kx_timeline_add_fixes(struct kx_timeline *tl, const struct kx_tl_fix *add, size_t n)
{
	struct kx_tl_fix *all;
	size_t out = 0, li = 0;

	if (!n)
		return 0;
	all = malloc((tl->nfix + n) * sizeof(*all));
	if (!all)
		return -1;
	memcpy(all, tl->fix, tl->nfix * sizeof(*all));
	memcpy(all + tl->nfix, add, n * sizeof(*all));
	qsort(all, tl->nfix + n, sizeof(*all), fix_pos_cmp);
	/* An event cut twice keeps the shorter duration (sorted first). */
	for (size_t i = 0; i < tl->nfix + n; i++)
		if (!out || all[out - 1].pos != all[i].pos)
			all[out++] = all[i];
	drop_fixes(tl);
	tl->fix = all;
	tl->nfix = out;
	tl->fixed_threads = 0;
	for (size_t i = 0; i < out; i++) {
		while (tl->threads[li].first + tl->threads[li].count <= all[i].pos)
			li++;
		if (!i || all[i - 1].pos < tl->threads[li].first)
			tl->fixed_threads++;
	}
	return index_fixes(tl);
}

int kx_timeline_set_fixes(struct kx_timeline *tl, const struct kx_store *s,
                          uint64_t (*cut)(void *ctx, const struct kx_ioctl *e), void *ctx)
{
	size_t cap = 0;

	drop_fixes(tl);
	tl->fixed_threads = 0;
	for (size_t t = 0; t < tl->nthreads; t++) {
		const struct kx_tl_thread *th = &tl->threads[t];
		size_t before = tl->nfix;

		for (size_t pos = th->first; pos < th->first + th->count; pos++) {
			const struct kx_ioctl *e = kx_store_ioctl(s, tl->order[pos]);
			uint64_t dur = cut(ctx, e);

			if (dur >= e->dur)
				continue;
			if (kx_grow((void **)&tl->fix, &cap, tl->nfix, sizeof(*tl->fix)))
				return -1;
			tl->fix[tl->nfix++] = (struct kx_tl_fix){pos, tl->order[pos], dur};
		}
		tl->fixed_threads += tl->nfix > before;
	}
	return tl->nfix ? index_fixes(tl) : 0;
}
