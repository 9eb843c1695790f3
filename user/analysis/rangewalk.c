/*
 * Annotation ranges built as the records stream by (contract: rangewalk.h):
 * pairing is analysis/rangetrack.h's; each thread's records come in the
 * nesting rule's order out of the engine's reorder stage
 * (analysis/engine.h); here their walk through the rule (analysis/
 * timeline.h's), the checks of the ranges that left it before their end,
 * the rows and the ranges kept.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/engine.h"
#include "analysis/jobflow.h"
#include "analysis/jobrec.h"
#include "analysis/rangewalk.h"
#include "util/grow.h"

#define NONE KX_ENGINE_NOREF

#define STR_(x) #x
#define STR(x)  STR_(x)

/* The reorder stage's bound (analysis/engine.h: a thread with ranges keeps
 * its last KX_ENGINE_RANGE_HOLD records, or its measured window). */
static const char *const LATE =
        "annotation ranges and calls of a thread out of order by more "
        "than the reorder window holds (" STR(KX_ENGINE_RANGE_HOLD) " records)";

/* Ranges a walk that keeps them (out) tells apart for their jobs: serials. */
static const char *const SERIALS = "annotation ranges with device jobs: more than 4294967295 "
                                   "ranges (the numbers that name them for their calls' jobs)";
_Static_assert(sizeof(((struct kx_rangewalk *)0)->serial) == 4,
               "SERIALS states the serials' bound");

/* A range paired or walking. */
struct kx_rw_rec {
	uint64_t begin,
	        end;       /* ns; end: valid once ended (its pop or END, or where it stayed open) */
	uint64_t bound;    /* ns, the end of what it was walked inside (UINT64_MAX: none known) */
	uint64_t hi_start; /* ns, the latest start walked inside it while its end was not known */
	uint64_t hi_end;   /* ns, the latest end walked inside it while its end was not known */
	uint64_t tie;      /* ns: walked before records of its start as the longest, it must be
	                      at least this long (longer when tie_strict) */
	uint64_t cap;      /* ns: walked inside a range of its start as shorter, it must be at
	                      most this long (shorter when cap_strict; UINT64_MAX: no bound) */
	uint64_t ioctls;   /* calls of its thread walked inside it */
	uint64_t device_ns; /* the device time of their jobs (kx_rangewalk.dev) */
	uint64_t jobs;      /* those jobs */
	long row;           /* its row in kx_rangewalk.rows */
	int64_t out;        /* its index in out; -1: none */
	uint32_t name, cat; /* string ids in out's strings (0 when out is NULL) */
	uint32_t next_free;
	uint32_t serial; /* given when made (0: free), for the calls that name it */
	uint16_t depth;  /* its level */
	/* known: ended when walked (it left the reorder stage in its place) */
	uint8_t ended, walked, popped, open, inside, tie_strict, cap_strict, known;
};

/* The rule's stack: an event's start and end (UINT64_MAX: not known yet)
 * and its range (NONE: a call). */
struct entry {
	uint64_t start, end;
	uint32_t rec;
};

/* A thread's walk (the tracker's thread data). */
struct line {
	struct entry *stack;
	size_t depth, scap;
	uint64_t ncalls;   /* its calls walked (a call's number: jobflow.h's on_linked) */
	uint64_t early_hi; /* the number of its last call inside ranges forgotten before jobs
	                      came (older than its last KX_JOBFLOW_RECENT calls; 0: none) */
	uint64_t drop_hi;  /* the number of its last call let go for the budget (0: none) */
	uint64_t link_hi;  /* the number of its last call let go once no record to come could
	                      link to it (kx_rangewalk_dev_forget's linked_ns; 0: none) */
	/* Before the first job record (streamed): its last KX_JOBFLOW_RECENT
	 * calls walked since one was inside ranges, a ring from ehead (those
	 * inside ranges: nref > 0), NULL: none yet. */
	struct kx_rw_devcall *early;
	uint32_t ehead;
	int cut; /* the walk cut a call of it to nest */
};

_Static_assert(sizeof(struct kx_rt_open) + sizeof(uint32_t) + 8 <=
                       sizeof(((struct kx_rangewalk *)0)->ended),
               "kx_rangewalk.ended holds an open range");

static void dc_init(struct kx_rangewalk *w);

void kx_rangewalk_init(struct kx_rangewalk *w)
{
	memset(w, 0, sizeof(*w));
	kx_rangetrack_init(&w->track, sizeof(uint32_t), sizeof(struct line));
	w->ends = (struct kx_range_ends)KX_RANGE_ENDS_INIT;
	w->free_rec = NONE;
	w->dc_map = (struct kx_keymap)KX_KEYMAP_INIT;
	w->aside_map = (struct kx_keymap)KX_KEYMAP_INIT;
	dc_init(w);
	w->dc_budget = KX_RANGEWALK_DEV_BYTES / KX_RANGEWALK_DEV_CALL_BYTES;
	kx_range_rows_init(&w->builder, &w->rows);
}

static void because(struct kx_rangewalk *w, const char *why)
{
	if (!w->why)
		w->why = why;
}

/* ---- records ---- */

static uint32_t rec_new(struct kx_rangewalk *w)
{
	uint32_t i = w->free_rec;

	if (i != NONE) {
		w->free_rec = w->recs[i].next_free;
	} else {
		if (w->nrecs >= NONE ||
		    kx_grow((void **)&w->recs, &w->rec_cap, w->nrecs, sizeof(*w->recs)))
			return NONE;
		i = (uint32_t)w->nrecs++;
	}
	memset(&w->recs[i], 0, sizeof(w->recs[i]));
	if (!++w->serial) {
		w->serial = 1;
		if (w->out && w->dev_stream)
			because(w, SERIALS); /* serial_out would name two ranges */
	}
	w->recs[i].serial = w->serial;
	w->recs[i].bound = w->recs[i].cap = UINT64_MAX;
	w->recs[i].out = -1;
	return i;
}

static void rec_free(struct kx_rangewalk *w, uint32_t i)
{
	w->recs[i].next_free = w->free_rec;
	w->recs[i].serial = 0;
	w->free_rec = i;
}

static uint32_t rec_of(struct kx_rt_open *o)
{
	uint32_t i;

	memcpy(&i, kx_rt_data(o), sizeof(i));
	return i;
}

/* ---- rows and the ranges kept ---- */

/* The row of a name, as the store would keep the name (cut to its limit). */
/* s (NULL: "") into d, cut to KX_ANN_NAME_MAX - 1 bytes: a range row's
 * name or category (every range looks its row up: a plain copy). */
static void name_cut(char d[KX_ANN_NAME_MAX], const char *s)
{
	size_t n = s ? strnlen(s, KX_ANN_NAME_MAX - 1) : 0;

	if (n)
		memcpy(d, s, n);
	d[n] = '\0';
}

static long row_of(struct kx_rangewalk *w, const char *cat, const char *name, int mark)
{
	char c[KX_ANN_NAME_MAX], n[KX_ANN_NAME_MAX];

	if (w->no_rows)
		return 0;
	name_cut(c, cat);
	name_cut(n, name);
	return kx_range_rows_get(&w->builder, c, n, mark);
}

static int row_add(struct kx_rangewalk *w, long row, uint64_t dur, uint64_t ioctls,
                   uint64_t device_ns, uint64_t jobs)
{
	struct kx_stat_row *r = &w->rows.rows[row];

	w->found++; /* with no rows too */
	if (w->no_rows)
		return 0;
	if (kx_stat_row_add_streamed(r, dur, 0))
		return -1;
	r->ioctls += ioctls;
	r->device_ns += device_ns;
	r->jobs += jobs;
	return 0;
}

/* The names a kept range needs, interned in out's strings (names the store
 * refuses are a reason: it would refuse the event), or a's ids. */
static void names_of(struct kx_rangewalk *w, const struct kx_ann *a, const char *name,
                     const char *cat, uint32_t *n, uint32_t *c)
{
	*n = a->name;
	*c = a->cat;
	if (!w->out || !w->strings)
		return;
	*n = kx_store_ann_intern(w->strings, name);
	*c = kx_store_ann_intern(w->strings, cat);
	if (*n == UINT32_MAX || *c == UINT32_MAX)
		because(w, "the annotation names do not fit the store");
}

/* A range or mark appended to out (when kept) from its begin b. 0, or -1 when out of memory. */
static int keep(struct kx_rangewalk *w, const struct kx_ann *b, int kind, int64_t *at)
{
	if (!w->out)
		return 0;
	if (!kx_ranges_add(w->out, &w->out_cap, b, kind))
		return -1;
	if (at)
		*at = (int64_t)w->out->n - 1;
	return 0;
}

/* The begin event of range r, as out keeps it. */
static struct kx_ann begin_of(const struct kx_rt_open *o, const struct kx_rw_rec *r, uint16_t depth)
{
	return (struct kx_ann){.ts = o->ts,
	                       .id = o->id,
	                       .pid = o->pid,
	                       .tid = o->tid,
	                       .name = r->name,
	                       .cat = r->cat,
	                       .depth = depth};
}

/* Streamed with device jobs, a retired range's index in out by its
 * serial (serial_out), for the jobs of its calls counted later (dc_give).
 * 0, or -1 when out of memory. */
static int out_of_serial(struct kx_rangewalk *w, uint32_t serial, int64_t at)
{
	size_t had = w->serial_cap;

	if (serial >= had) {
		if (kx_grow((void **)&w->serial_out, &w->serial_cap, serial,
		            sizeof(*w->serial_out)))
			return -1;
		memset(w->serial_out + had, 0xff, (w->serial_cap - had) * sizeof(*w->serial_out));
	}
	w->serial_out[serial] = (uint32_t)at;
	return 0;
}

/* A thread range that nothing can change any more: its row and its kept copy. */
static int retire(struct kx_rangewalk *w, uint32_t i)
{
	struct kx_rw_rec *r = &w->recs[i];
	uint64_t eff = r->end < r->bound ? r->end : r->bound;
	int rc = 0;

	if (r->end > r->bound)
		w->anom.shortened++;
	if (!r->open)
		rc = row_add(w, r->row, r->end - r->begin, r->ioctls, r->device_ns, r->jobs);
	if (w->out && r->out >= 0) {
		struct kx_range *o = &w->out->r[r->out];

		o->dur = eff - r->begin;
		o->dur_meas = r->end - r->begin;
		o->ioctls = r->ioctls;
		o->device_ns = r->device_ns;
		o->jobs = r->jobs;
		if (!rc && w->dev_stream)
			rc = out_of_serial(w, r->serial, r->out);
	}
	rec_free(w, i);
	return rc;
}

/* ---- the walk: a thread's records through the rule ---- */

static struct line *line_of(struct kx_rangewalk *w, uint32_t tid)
{
	struct kx_tidtab *t = &w->track.threads;
	unsigned int c = tid % 64;
	struct kx_rt_thread *th;

	if (w->line_tid[c] == tid + 1u)
		return kx_rt_tdata(kx_tidtab_at(t, w->line_at[c]));
	th = kx_rangetrack_thread(&w->track, tid, 1);
	if (!th)
		return NULL;
	w->line_tid[c] = tid + 1u;
	w->line_at[c] = (uint32_t)(((char *)th - (char *)t->v) / t->size);
	return kx_rt_tdata(th);
}

static int pop_entry(struct kx_rangewalk *w, struct line *l)
{
	uint32_t i = l->stack[--l->depth].rec;

	if (i == NONE)
		return 0;
	w->recs[i].popped = 1;
	return w->recs[i].ended ? retire(w, i) : 0;
}

/* What was walked at start with end eff (UINT64_MAX: not known) counts for
 * the ranges around it whose ends have not come. */
static void seen_inside(struct kx_rangewalk *w, const struct line *l, uint64_t start, uint64_t eff)
{
	for (size_t k = 0; k < l->depth; k++) {
		struct kx_rw_rec *r;

		if (l->stack[k].rec == NONE || (r = &w->recs[l->stack[k].rec])->ended)
			continue;
		r->inside = 1;
		if (start > r->hi_start)
			r->hi_start = start;
		if (eff != UINT64_MAX && eff > r->hi_end)
			r->hi_end = eff;
	}
}

/* A record walked: a range (rec) or a call (rec NONE, its end, pos). */
struct item {
	uint64_t start, end;
	uint32_t rec, pos;
};

/* A call of l the rule cuts to end: listed (kept cuts), else noted for
 * the caller (cut_last, cut_end). 0, or -1 when out of memory. */
static int cut(struct kx_rangewalk *w, struct line *l, const struct item *it, uint64_t end)
{
	w->cut_last = 1;
	w->cut_end = end;
	l->cut = 1;
	if (!w->keep_cuts)
		return 0;
	if (kx_grow((void **)&w->cuts, &w->cuts_cap, w->ncuts, sizeof(*w->cuts)))
		return -1;
	w->cuts[w->ncuts++] = (struct kx_tl_fix){it->pos, 0, end - it->start};
	return 0;
}

/* A call counts for every range open around it, with its device time. */
static void attribute(struct kx_rangewalk *w, const struct line *l, uint32_t pos)
{
	uint64_t ns = 0, jobs = 0;

	if (w->dev && pos != NONE)
		ns = w->dev(w->dev_ctx, pos, &jobs);
	for (size_t k = 0; k < l->depth; k++) {
		struct kx_rw_rec *r;

		if (l->stack[k].rec == NONE)
			continue;
		r = &w->recs[l->stack[k].rec];
		r->ioctls++;
		r->device_ns += ns;
		r->jobs += jobs;
	}
}

/* ---- the rule's order at one start, for ranges that left before their end ---- */

/* Does a range lp long of depth dp go before a record of its start lq long
 * (a range of depth dq; a call: dq < 0) in the rule's order? */
static int rule_before(uint64_t lp, int dp, uint64_t lq, int dq)
{
	if (lp != lq)
		return lp > lq;
	return dq < 0 || dp < dq;
}

/* Range r, its end not come, went before a record of its start lq long
 * (dq: as rule_before): it must be long enough when it ends. */
static void tie_add(struct kx_rw_rec *r, uint64_t lq, int dq)
{
	int strict = dq >= 0 && !(r->depth < dq);

	if (lq > r->tie) {
		r->tie = lq;
		r->tie_strict = (uint8_t)strict;
	} else if (lq == r->tie) {
		r->tie_strict |= (uint8_t)strict;
	}
}

/* Range r, its end not come, went after a range of its start lp long of
 * depth dp: it must be short enough when it ends. */
static void cap_add(struct kx_rw_rec *r, uint64_t lp, int dp)
{
	int strict = !(dp < r->depth);

	if (lp < r->cap) {
		r->cap = lp;
		r->cap_strict = (uint8_t)strict;
	} else if (lp == r->cap) {
		r->cap_strict |= (uint8_t)strict;
	}
}

/* The record it, walked after the ranges of its start on l's stack: each
 * that left before its end is checked against it now, or when it ends. */
static void same_start(struct kx_rangewalk *w, const struct line *l, const struct item *it)
{
	const struct kx_rw_rec *q = it->rec == NONE ? NULL : &w->recs[it->rec];
	uint64_t lq = q ? q->end - q->begin : it->end - it->start;
	int dq = q ? q->depth : -1;

	for (size_t k = l->depth; k > 0 && l->stack[k - 1].start == it->start; k--) {
		struct kx_rw_rec *p;

		if (l->stack[k - 1].rec == NONE)
			continue; /* a call before it: the engine's order */
		p = &w->recs[l->stack[k - 1].rec];
		if (p->known)
			continue; /* it left in its place */
		if (p->ended && (q ? q->ended : 1)) {
			if (!rule_before(p->end - p->begin, p->depth, lq, dq))
				because(w, LATE);
		} else if (p->ended) {
			cap_add(&w->recs[it->rec], p->end - p->begin, p->depth);
		} else if (!q || q->ended) {
			tie_add(p, lq, dq);
		} /* neither ended: checked when the first ends (resolve) */
	}
}

static int walk_item(struct kx_rangewalk *w, struct line *l, const struct item *it)
{
	uint64_t parent, eff;

	while (l->depth && l->stack[l->depth - 1].end <= it->start)
		if (pop_entry(w, l))
			return -1;
	same_start(w, l, it);
	parent = l->depth ? l->stack[l->depth - 1].end : UINT64_MAX;
	if (it->rec == NONE) {
		eff = it->end;
		if (eff > parent && cut(w, l, it, parent))
			return -1;
		eff = eff > parent ? parent : eff;
		attribute(w, l, it->pos);
	} else {
		struct kx_rw_rec *r = &w->recs[it->rec];

		r->bound = parent;
		r->walked = 1;
		r->known = r->ended;
		eff = r->ended && r->end < parent ? r->end : parent;
	}
	seen_inside(w, l, it->start, it->rec == NONE || w->recs[it->rec].ended ? eff : UINT64_MAX);
	if (kx_grow((void **)&l->stack, &l->scap, l->depth, sizeof(*l->stack)))
		return -1;
	l->stack[l->depth++] = (struct entry){it->start, eff, it->rec};
	return 0;
}

/* Range i's end is known: checked against what was walked inside it and
 * beside it, and set on the stack (bounding what was walked above it). */
static int resolve(struct kx_rangewalk *w, struct line *l, uint32_t i)
{
	struct kx_rw_rec *r = &w->recs[i];
	uint64_t eff = r->end < r->bound ? r->end : r->bound, len = r->end - r->begin;
	size_t k;

	if (!r->walked)
		return 0; /* waiting in the reorder stage: it leaves in its place */
	if ((r->inside && (r->hi_start >= eff || r->hi_end > eff)) || len < r->tie ||
	    (len == r->tie && r->tie_strict) || len > r->cap || (len == r->cap && r->cap_strict))
		because(w, LATE);
	if (r->popped)
		return retire(w, i);
	for (k = l->depth; k > 0 && l->stack[k - 1].rec != i; k--)
		;
	if (!k)
		return 0; /* not on the stack: cannot be (walked, not popped) */
	k--;
	for (size_t j = k; j < l->depth; j++) {
		struct kx_rw_rec *q = l->stack[j].rec == NONE ? NULL : &w->recs[l->stack[j].rec];

		if (l->stack[j].end > eff)
			l->stack[j].end = eff;
		if (j > k && q && q->bound > eff)
			q->bound = eff;
		if (j > k && q && !q->ended && l->stack[j].start == r->begin)
			cap_add(q, len, r->depth);
	}
	for (size_t j = k; j > 0 && l->stack[j - 1].start == r->begin; j--) {
		struct kx_rw_rec *p =
		        l->stack[j - 1].rec == NONE ? NULL : &w->recs[l->stack[j - 1].rec];

		if (p && !p->ended)
			tie_add(p, len, r->depth);
	}
	seen_inside(w, &(struct line){.stack = l->stack, .depth = k}, 0, eff);
	return 0;
}

/* ---- events ---- */

static int on_push(struct kx_rangewalk *w, const struct kx_ann *a, const char *name,
                   const char *cat, uint32_t *ref)
{
	uint32_t i = rec_new(w);
	struct kx_rt_open *o;
	struct kx_rw_rec *r;
	long row = row_of(w, cat, name, 0);

	if (i == NONE || row < 0 || (a->what == KX_ANN_PUSH && !line_of(w, a->tid)) ||
	    !(o = kx_rangetrack_begin(&w->track, a)))
		return -1;
	memcpy(kx_rt_data(o), &i, sizeof(i));
	r = &w->recs[i];
	r->begin = a->ts;
	r->row = row;
	r->depth = a->depth;
	names_of(w, a, name, cat, &r->name, &r->cat);
	if (a->what == KX_ANN_PUSH)
		*ref = i;
	return 0;
}

static int on_pop(struct kx_rangewalk *w, const struct kx_ann *a, uint32_t *ref)
{
	struct kx_rt_open *o = (struct kx_rt_open *)w->ended;
	struct kx_ann b;
	struct kx_rw_rec *r;
	uint32_t i;
	size_t above;

	if (!kx_rangetrack_end(&w->track, a, o, &above)) {
		w->anom.lost_begin++; /* its push or start is not in the file */
		return 0;
	}
	i = rec_of(o);
	r = &w->recs[i];
	r->end = a->ts > r->begin ? a->ts : r->begin;
	r->ended = 1;
	b = begin_of(o, r, a->what == KX_ANN_POP ? a->depth : o->depth);
	if (keep(w, &b, a->what == KX_ANN_POP ? KX_RANGE_THREAD : KX_RANGE_CROSS, &r->out))
		return -1;
	if (w->out)
		w->out->r[r->out].end_tid = a->tid;
	if (a->what == KX_ANN_END) {
		long row = r->row;
		uint64_t dur = r->end - r->begin;

		if (w->out)
			w->out->r[r->out].dur = w->out->r[r->out].dur_meas = dur;
		rec_free(w, i);
		return row_add(w, row, dur, 0, 0, 0);
	}
	*ref = i;
	return resolve(w, line_of(w, a->tid), i);
}

static int on_mark(struct kx_rangewalk *w, const struct kx_ann *a, const char *name,
                   const char *cat)
{
	struct kx_ann b = *a;
	long row = row_of(w, cat, name, 1);

	names_of(w, a, name, cat, &b.name, &b.cat);
	return row < 0 || keep(w, &b, KX_RANGE_MARK, NULL) ? -1 : row_add(w, row, 0, 0, 0, 0);
}

int kx_rangewalk_ann(struct kx_rangewalk *w, const struct kx_ann *a, const char *name,
                     const char *cat, uint32_t *ref)
{
	*ref = NONE;
	w->events++;
	if (kx_range_ends_ann(&w->ends, a->pid, a->tid, a->ts))
		return -1;
	switch (a->what) {
	case KX_ANN_PUSH:
	case KX_ANN_START:
		return on_push(w, a, name, cat, ref);
	case KX_ANN_POP:
	case KX_ANN_END:
		return on_pop(w, a, ref);
	case KX_ANN_MARK:
		return on_mark(w, a, name, cat);
	default:
		return 0; /* unknown: in memory too, no range */
	}
}

void kx_rangewalk_ioctl(struct kx_rangewalk *w, const struct kx_ioctl *e)
{
	kx_range_ends_ioctl(&w->ends, e->pid, e->tid, e->ts + e->dur);
}

static int dev_call(struct kx_rangewalk *w, struct line *l, uint32_t tid, uint64_t n, uint64_t end);

int kx_rangewalk_call(struct kx_rangewalk *w, const struct kx_ioctl *e, uint64_t end_ns,
                      uint32_t pos)
{
	struct line *l = line_of(w, e->tid);

	w->cut_last = 0;
	if (!l || walk_item(w, l, &(struct item){e->ts, end_ns, NONE, pos}))
		return -1;
	l->ncalls++;
	return w->dev_stream ? dev_call(w, l, e->tid, l->ncalls, end_ns) : 0;
}

int kx_rangewalk_range(struct kx_rangewalk *w, uint32_t tid, uint32_t ref)
{
	struct line *l = line_of(w, tid);

	return l ? walk_item(w, l, &(struct item){w->recs[ref].begin, 0, ref, NONE}) : -1;
}

void kx_rangewalk_late(struct kx_rangewalk *w)
{
	because(w, LATE);
}

/* ---- the device time of the calls' jobs, streamed (kx_rangewalk_dev) ---- */

#define DC_REFS 8 /* ranges around a call remembered at most */

static const char *const DC_BUDGET =
        "annotation ranges with device jobs: calls inside ranges waited for their jobs past the "
        "streamed read's memory budget (16 MiB: 65536 calls)";
_Static_assert(KX_RANGEWALK_DEV_BYTES == 16u << 20 && KX_RANGEWALK_DEV_CALL_BYTES == 256u,
               "DC_BUDGET states KX_RANGEWALK_DEV_BYTES / KX_RANGEWALK_DEV_CALL_BYTES");
static const char *const DC_DEEP = "annotation ranges with device jobs: a call that submitted jobs "
                                   "is inside more than " STR(DC_REFS) " ranges";
static const char *const DC_UNLINKED =
        "annotation ranges with device jobs: a KVM exit came for a call inside ranges "
        "let go once no device job record to come could link to it (KVM records after "
        "other device job records)";
static const char *const DC_EARLY =
        "annotation ranges with device jobs: a job of a call inside ranges came after "
        "more than " STR(KX_JOBFLOW_RECENT) " later calls of its thread, before the first "
                                            "job record";

/* A range around a remembered call: its record while it lives, then its row. */
struct dc_ref {
	uint32_t rec, serial;
	long row;
};

/* A call remembered (by its thread and number): the ranges around it, or
 * (pending) the device time of its jobs counted before it was walked. */
struct kx_rw_devcall {
	uint64_t n;        /* its number among its thread's calls (from 1) */
	uint64_t end;      /* ns, its end (once walked) */
	uint64_t ns, jobs; /* pending: its jobs counted so far, their device time */
	uint32_t tid;
	uint32_t held;   /* jobs linked to it (kx_rangewalk_link) not counted yet */
	uint8_t pending; /* not walked yet: counted or linked jobs wait for it */
	uint8_t deep;    /* more ranges than refs */
	uint8_t nref;
	uint8_t aside; /* set aside (in w->aside) until its jobs are counted */
	struct dc_ref ref[DC_REFS];
};

/* A call's record, its map entry and its share of the map's index (at
 * least half full) within the bytes the budget counts a call. */
_Static_assert(sizeof(struct kx_rw_devcall) + sizeof(struct kx_keyslot) +
                               2 * sizeof(struct kx_hslot) <=
                       KX_RANGEWALK_DEV_CALL_BYTES,
               "a remembered call takes at most KX_RANGEWALK_DEV_CALL_BYTES");

static void dc_init(struct kx_rangewalk *w)
{
	w->aside = (struct kx_slots)KX_SLOTS_INIT(struct kx_rw_devcall);
}

static struct kx_rw_devcall *dc_at(struct kx_rangewalk *w, uint64_t v)
{
	return &w->dc[v - w->dc_base];
}

/* Call n of thread tid remembered, in the order walked or set aside; NULL: none. */
static struct kx_rw_devcall *dc_find(struct kx_rangewalk *w, uint32_t tid, uint64_t n)
{
	struct kx_keyslot *s;

	if (w->dc_map.n && (s = kx_keymap_find(&w->dc_map, tid, n, 0)))
		return dc_at(w, s->v);
	if (w->aside_map.n && (s = kx_keymap_find(&w->aside_map, tid, n, 0)))
		return kx_slots_at(&w->aside, s->v);
	return NULL;
}

/* The calls remembered: in the order walked, and set aside. */
static size_t dc_count(const struct kx_rangewalk *w)
{
	return w->dc_n - w->dc_head + kx_slots_live(&w->aside);
}

/* Walked call p, no job to come linking to it, set aside while jobs linked
 * to it are not counted (dc_pop then lets its place go). 0, or -1 when out
 * of memory. */
static int dc_set_aside(struct kx_rangewalk *w, const struct kx_rw_devcall *p)
{
	long slot = kx_slots_get(&w->aside);
	struct kx_keyslot *s = slot < 0 ? NULL : kx_keymap_get(&w->aside_map, p->tid, p->n, 0);
	struct kx_rw_devcall *q;

	if (!s)
		return -1;
	s->v = (uint64_t)slot;
	q = kx_slots_at(&w->aside, (size_t)slot);
	*q = *p;
	q->aside = 1;
	return 0;
}

/* Set-aside call p, its jobs all counted, forgotten. */
static void dc_unset(struct kx_rangewalk *w, struct kx_rw_devcall *p)
{
	struct kx_keyslot *s = kx_keymap_find(&w->aside_map, p->tid, p->n, 0);

	if (!s)
		return;
	kx_slots_put(&w->aside, s->v);
	kx_keymap_del(&w->aside_map, s);
}

/* Device time ns of jobs counted for the range of ref: on its record while
 * it lives (retire adds it to the row unless left open, and to its entry
 * in out), else on its row (a range that ended before the end: not open)
 * and its entry in out (found by its serial: serial_out). */
static void dc_give(struct kx_rangewalk *w, const struct dc_ref *f, uint64_t ns, uint64_t jobs)
{
	if (f->rec < w->nrecs && w->recs[f->rec].serial == f->serial) {
		w->recs[f->rec].device_ns += ns;
		w->recs[f->rec].jobs += jobs;
		return;
	}
	if (w->out && f->serial < w->serial_cap && w->serial_out[f->serial] != UINT32_MAX) {
		struct kx_range *o = &w->out->r[w->serial_out[f->serial]];

		o->device_ns += ns;
		o->jobs += jobs;
	}
	if (!w->no_rows) {
		w->rows.rows[f->row].device_ns += ns;
		w->rows.rows[f->row].jobs += jobs;
	}
}

static void dc_apply(struct kx_rangewalk *w, const struct kx_rw_devcall *p, uint64_t ns,
                     uint64_t jobs)
{
	if (p->deep)
		because(w, DC_DEEP);
	for (unsigned int k = 0; k < p->nref; k++)
		dc_give(w, &p->ref[k], ns, jobs);
}

/* The oldest call remembered let go (its map entry deleted). */
static void dc_pop(struct kx_rangewalk *w)
{
	struct kx_rw_devcall *p = &w->dc[w->dc_head++];
	struct kx_keyslot *s;

	if ((s = kx_keymap_find(&w->dc_map, p->tid, p->n, 0)) &&
	    s->v == w->dc_base + w->dc_head - 1)
		kx_keymap_del(&w->dc_map, s);
	if (w->dc_head > 1024 && w->dc_head * 2 > w->dc_n) {
		memmove(w->dc, w->dc + w->dc_head, (w->dc_n - w->dc_head) * sizeof(*w->dc));
		w->dc_base += w->dc_head;
		w->dc_n -= w->dc_head;
		w->dc_head = 0;
	}
}

/* Past the budget, room for one more call: the oldest that no job record
 * to come links to go (those with jobs linked to them not counted yet
 * set aside until they are), else the oldest goes (a reason if one of its
 * jobs comes). 0, or -1 when out of memory. */
static int dc_room(struct kx_rangewalk *w)
{
	while (dc_count(w) >= w->dc_budget && w->dc_head < w->dc_n) {
		const struct kx_rw_devcall *p = &w->dc[w->dc_head];
		struct kx_rt_thread *th = kx_rangetrack_thread(&w->track, p->tid, 0);
		struct line *l = th ? kx_rt_tdata(th) : NULL; /* walked: its line is there */

		if (!p->pending && p->end + KX_JOBS_LINK_WINDOW_NS < w->linked_ns) {
			if (p->held && dc_set_aside(w, p))
				return -1;
			if (l)
				l->link_hi = p->n;
		} else if (p->pending) {
			because(w, DC_BUDGET);
		} else if (l && p->n > l->drop_hi) {
			l->drop_hi = p->n;
		}
		dc_pop(w);
	}
	if (dc_count(w) >= w->dc_budget)
		because(w, DC_BUDGET); /* those set aside alone: their jobs are not counted yet */
	return 0;
}

/* A new call remembered, n of thread tid (past the budget: dc_room); NULL
 * when out of memory. */
static struct kx_rw_devcall *dc_new(struct kx_rangewalk *w, uint32_t tid, uint64_t n)
{
	struct kx_keyslot *s;
	struct kx_rw_devcall *p;

	if (dc_count(w) >= w->dc_budget && dc_room(w))
		return NULL;
	if (kx_grow((void **)&w->dc, &w->dc_cap, w->dc_n, sizeof(*w->dc)) ||
	    !(s = kx_keymap_get(&w->dc_map, tid, n, 0)))
		return NULL;
	s->v = w->dc_base + w->dc_n;
	p = &w->dc[w->dc_n++];
	memset(p, 0, sizeof(*p));
	p->tid = tid;
	p->n = n;
	if (dc_count(w) > w->dc_peak)
		w->dc_peak = dc_count(w);
	return p;
}

/* The ranges around the call just walked on l (under it on the stack). */
static void dc_refs(struct kx_rangewalk *w, const struct line *l, struct kx_rw_devcall *p)
{
	for (size_t k = 0; k + 1 < l->depth; k++) {
		const struct kx_rw_rec *r;

		if (l->stack[k].rec == NONE)
			continue;
		if (p->nref == DC_REFS) {
			p->deep = 1;
			return;
		}
		r = &w->recs[l->stack[k].rec];
		p->ref[p->nref++] = (struct dc_ref){l->stack[k].rec, r->serial, r->row};
	}
}

static int in_ranges(const struct line *l)
{
	for (size_t k = 0; k + 1 < l->depth; k++)
		if (l->stack[k].rec != NONE)
			return 1;
	return 0;
}

/* Call n of thread tid (its end) just walked on l: its jobs counted
 * before are given to its ranges; it is remembered for those to come. */
static int dev_remember(struct kx_rangewalk *w, const struct line *l, uint32_t tid, uint64_t n,
                        uint64_t end)
{
	struct kx_keyslot *s = w->dc_map.n ? kx_keymap_find(&w->dc_map, tid, n, 0) : NULL;
	struct kx_rw_devcall *p = s ? dc_at(w, s->v) : NULL;

	if (!p && !in_ranges(l))
		return 0;
	if (!p && !(p = dc_new(w, tid, n)))
		return -1;
	p->end = end;
	dc_refs(w, l, p);
	if (!p->nref && !p->deep)
		p->held = 0; /* in no range: its jobs give nothing, it need not wait for them */
	if (p->pending) {
		p->pending = 0;
		if (p->jobs)
			dc_apply(w, p, p->ns, p->jobs);
	}
	return 0;
}

/* Call n of thread tid (its end) just walked on l before the first job
 * record: l keeps its last KX_JOBFLOW_RECENT calls, those inside ranges
 * with the ranges around them (a job record to come links only to one of
 * them, or to a call walked after it: jobflow.h's recent calls). A capture
 * without jobs pays for a thread's ring once a call of it is inside
 * ranges, and a slot a call. 0, or -1 when out of memory. */
static int dev_early(struct kx_rangewalk *w, struct line *l, uint32_t tid, uint64_t n, uint64_t end)
{
	int in = in_ranges(l);
	struct kx_rw_devcall *p;

	if (!l->early) {
		if (!in)
			return 0;
		if (!(l->early = calloc(KX_JOBFLOW_RECENT, sizeof(*l->early))))
			return -1;
	}
	p = &l->early[l->ehead];
	l->ehead = (l->ehead + 1) % KX_JOBFLOW_RECENT;
	if (p->nref)
		l->early_hi = p->n; /* forgotten: its jobs, if any, would be a reason */
	p->nref = p->deep = 0;
	if (!in)
		return 0;
	p->tid = tid;
	p->n = n;
	p->end = end;
	dc_refs(w, l, p);
	return 0;
}

/* Call n of thread tid (its end) just walked on l. */
static int dev_call(struct kx_rangewalk *w, struct line *l, uint32_t tid, uint64_t n, uint64_t end)
{
	if (!w->dev_jobs)
		return dev_early(w, l, tid, n, end);
	return dev_remember(w, l, tid, n, end);
}

int kx_rangewalk_dev_start(struct kx_rangewalk *w)
{
	if (w->dev_jobs)
		return 0;
	w->dev_jobs = 1;
	for (size_t t = 0; t < w->track.threads.n; t++) {
		struct line *l = kx_rt_tdata(kx_tidtab_at(&w->track.threads, t));

		for (uint32_t k = 0; l->early && k < KX_JOBFLOW_RECENT; k++) {
			const struct kx_rw_devcall *p =
			        &l->early[(l->ehead + k) % KX_JOBFLOW_RECENT];
			struct kx_rw_devcall *q;

			if (!p->nref)
				continue;
			if (!(q = dc_new(w, p->tid, p->n)))
				return -1;
			*q = *p;
		}
		free(l->early);
		l->early = NULL;
	}
	return 0;
}

/* A job of a call not walked yet: it waits for the call. 0, or -1 when out of memory. */
static int dev_wait(struct kx_rangewalk *w, uint32_t tid, uint64_t call_n, uint64_t dev_ns)
{
	struct kx_rw_devcall *p = dc_new(w, tid, call_n);

	if (!p)
		return -1;
	p->pending = 1;
	p->ns = dev_ns;
	p->jobs = 1;
	return 0;
}

/* The walk of thread tid, NULL: none yet. */
static const struct line *line_find(struct kx_rangewalk *w, uint32_t tid)
{
	struct kx_rt_thread *th = kx_rangetrack_thread(&w->track, tid, 0);

	return th ? kx_rt_tdata(th) : NULL;
}

int kx_rangewalk_link(struct kx_rangewalk *w, uint32_t tid, uint64_t call_n)
{
	struct kx_rw_devcall *p = dc_find(w, tid, call_n);
	const struct line *l;

	if (p) {
		p->held++;
		return 0;
	}
	l = line_find(w, tid);
	if (l && call_n <= l->ncalls)
		return 0; /* walked: in no range, or let go (a job counted for it says so) */
	if (!(p = dc_new(w, tid, call_n)))
		return -1;
	p->pending = 1;
	p->held = 1;
	return 0;
}

int kx_rangewalk_dev(struct kx_rangewalk *w, uint32_t tid, uint64_t call_n, uint64_t dev_ns,
                     unsigned int how)
{
	struct kx_rw_devcall *p = dc_find(w, tid, call_n);
	const struct line *l;

	if (p) {
		if ((how & KX_JOBFLOW_LINKED) && p->held)
			p->held--;
		if (how & KX_JOBFLOW_DEV) {
			p->jobs++;
			if (p->pending)
				p->ns += dev_ns;
			else
				dc_apply(w, p, dev_ns, 1);
		}
		if (p->aside && !p->held)
			dc_unset(w, p);
		return 0;
	}
	if (!(how & KX_JOBFLOW_DEV))
		return 0;
	l = line_find(w, tid);
	if (l && call_n <= l->ncalls) {
		/* Walked: in no range, forgotten before jobs came, or let go for the budget. */
		if (call_n <= l->early_hi)
			because(w, DC_EARLY);
		else if (call_n <= l->drop_hi)
			because(w, DC_BUDGET);
		else if (call_n <= l->link_hi && !(how & KX_JOBFLOW_LINKED))
			because(w, DC_UNLINKED);
		return 0;
	}
	return dev_wait(w, tid, call_n, dev_ns);
}

int kx_rangewalk_dev_forget(struct kx_rangewalk *w, uint64_t swept_ns, uint64_t linked_ns)
{
	w->linked_ns = linked_ns;
	while (w->dc_head < w->dc_n) {
		const struct kx_rw_devcall *p = &w->dc[w->dc_head];

		if (p->pending || p->end + KX_JOBS_LINK_WINDOW_NS >= swept_ns)
			return 0;
		if (p->held && dc_set_aside(w, p)) /* none: its jobs started before the sweeps */
			return -1;
		dc_pop(w);
	}
	return 0;
}

/* ---- the end ---- */

/* The ranges still open, in the order of their begins: kept as open,
 * closed where their thread or process ended. 0, or -1 when out of memory. */
static int close_open(struct kx_rangewalk *w, struct kx_engine *eng)
{
	struct kx_rangetrack *k = &w->track;
	struct kx_rt_open **v = malloc((kx_rangetrack_open_count(k) + 1) * sizeof(*v));
	size_t n;
	int rc = 0;

	if (!v)
		return -1;
	n = kx_rangetrack_left(k, v);
	for (size_t j = 0; j < n && !rc; j++) {
		int thread = v[j]->what == KX_ANN_PUSH;
		uint32_t i = rec_of(v[j]);
		struct kx_rw_rec *r = &w->recs[i];
		struct kx_ann b = begin_of(v[j], r, v[j]->depth);

		r->open = r->ended = 1;
		r->end = thread ? kx_range_end_thread(&w->ends, v[j]->tid, r->begin)
		                : kx_range_end_process(&w->ends, v[j]->pid, r->begin);
		if (thread)
			w->anom.open++;
		else
			w->anom.open_cross++;
		rc = keep(w, &b, thread ? KX_RANGE_THREAD : KX_RANGE_CROSS, &r->out);
		if (!rc && w->out) {
			w->out->r[r->out].open = 1;
			w->out->r[r->out].dur = w->out->r[r->out].dur_meas = r->end - r->begin;
		}
		if (!rc && thread && eng)
			kx_engine_range_end(eng, v[j]->tid, i, r->end - r->begin);
		if (!rc && thread)
			rc = resolve(w, line_of(w, v[j]->tid), i);
		else if (!rc)
			rec_free(w, i);
	}
	free(v);
	return rc;
}

/* Every thread's stack emptied. */
static int walk_rest(struct kx_rangewalk *w)
{
	for (size_t t = 0; t < w->track.threads.n; t++) {
		struct line *l = kx_rt_tdata(kx_tidtab_at(&w->track.threads, t));

		while (l->depth)
			if (pop_entry(w, l))
				return -1;
	}
	return 0;
}

int kx_rangewalk_close(struct kx_rangewalk *w, const struct kx_store *tasks, struct kx_engine *eng)
{
	if (w->closed)
		return 0;
	w->closed = 1;
	kx_range_ends_exits(&w->ends, tasks);
	return close_open(w, eng);
}

int kx_rangewalk_finish(struct kx_rangewalk *w, const struct kx_store *tasks, struct kx_stats *sum)
{
	if (kx_rangewalk_close(w, tasks, NULL) || walk_rest(w))
		return -1;
	w->found += w->anom.open + w->anom.open_cross;
	if (w->out)
		kx_rangewalk_counts(w, w->out);
	if (w->no_rows)
		return 0;
	if (kx_range_rows_finish(&w->builder))
		return -1;
	return kx_stats_append(sum, &w->rows);
}

void kx_rangewalk_counts(const struct kx_rangewalk *w, struct kx_ranges *rg)
{
	rg->anom = w->anom;
	rg->events = w->events;
	rg->found = w->found;
}

uint64_t kx_rangewalk_cut_threads(const struct kx_rangewalk *w, const struct kx_nesttrack *n)
{
	uint64_t k = 0;

	for (size_t i = 0; i < w->track.threads.n; i++) {
		struct kx_rt_thread *th = kx_tidtab_at(&w->track.threads, i);
		const struct line *l = kx_rt_tdata(th);
		const struct kx_nest_thread *t = kx_tidtab_find(&n->threads, th->tid);

		k += l->cut && !(t && t->fixed);
	}
	return k;
}

void kx_rangewalk_free(struct kx_rangewalk *w)
{
	for (size_t t = 0; t < w->track.threads.n; t++) {
		struct line *l = kx_rt_tdata(kx_tidtab_at(&w->track.threads, t));

		free(l->stack);
		free(l->early);
	}
	kx_rangetrack_free(&w->track);
	kx_range_ends_free(&w->ends);
	kx_hmap_free(&w->builder.map);
	kx_stats_free(&w->rows);
	free(w->recs);
	free(w->cuts);
	kx_keymap_free(&w->dc_map);
	free(w->dc);
	kx_keymap_free(&w->aside_map);
	kx_slots_free(&w->aside);
	free(w->serial_out);
}

/* ---- the whole capture at once (kx_ranges_build) ---- */

/* Device time of the jobs each ioctl submitted: ioctl index -> dev[] entry. */
struct devtime {
	struct kx_hmap map;
	struct {
		uint64_t ns, jobs;
	} * v;
	size_t n, cap;
};

static int devtime_build(struct devtime *d, const struct kx_jobs *jb)
{
	for (size_t k = 0; jb && k < jb->njobs; k++) {
		const struct kx_jobrec *j = &jb->jobs[k];
		uint64_t start = kx_jobrec_start(j);
		uint32_t *slot;
		int isnew;

		if (j->submit < 0 || !j->done_ts || j->done_ts < start)
			continue;
		slot = kx_hmap_put(&d->map, (uint64_t)j->submit, (uint32_t)d->n, &isnew);
		if (!slot)
			return -1;
		if (isnew) {
			if (kx_grow((void **)&d->v, &d->cap, d->n, sizeof(*d->v)))
				return -1;
			d->v[d->n].ns = d->v[d->n].jobs = 0;
			d->n++;
		}
		d->v[*slot].ns += j->done_ts - start;
		d->v[*slot].jobs++;
	}
	return 0;
}

/* The device time of the call at timeline position pos (rangewalk.h's dev). */
struct devctx {
	const struct devtime *dt;
	const struct kx_timeline *tl;
};

static uint64_t call_dev(void *ctx, uint32_t pos, uint64_t *jobs)
{
	const struct devctx *c = ctx;
	const uint32_t *d = kx_hmap_get(&c->dt->map, c->tl->order[pos]);

	*jobs = d ? c->dt->v[*d].jobs : 0;
	return d ? c->dt->v[*d].ns : 0;
}

/* The in-memory build's sinks: the engine's records to the walk. */
struct build {
	struct kx_rangewalk *w;
	struct kx_engine eng;
};

static int b_ann(void *ctx, const struct kx_ann *a, const char *name, const char *cat,
                 uint32_t *ref)
{
	return kx_rangewalk_ann(((struct build *)ctx)->w, a, name, cat, ref);
}

static int b_range(void *ctx, uint32_t tid, uint32_t ref)
{
	return kx_rangewalk_range(((struct build *)ctx)->w, tid, ref);
}

/* A call with the timeline's length, its timeline position its handle (a span). */
static int b_call(void *ctx, const struct kx_ioctl *e)
{
	struct build *b = ctx;

	return kx_rangewalk_call(b->w, e, e->ts + e->dur, b->eng.out_ref);
}

/* Every call of the timeline ends its thread's ranges left open no earlier
 * than its end. */
static void calls_end(struct build *b, const struct kx_store *s, const struct kx_timeline *tl)
{
	for (size_t t = 0; tl && t < tl->nthreads; t++)
		for (size_t k = 0; k < tl->threads[t].count; k++)
			kx_rangewalk_ioctl(b->w,
			                   kx_store_ioctl(s, tl->order[tl->threads[t].first + k]));
}

/* The calls of the threads with ranges through the engine, a thread at a
 * time, in the timeline's order, with the timeline's lengths: each
 * thread's records leave before the next one's calls go in. */
static int walk_calls(struct build *b, const struct kx_store *s, const struct kx_timeline *tl)
{
	for (size_t t = 0; tl && t < tl->nthreads; t++) {
		const struct kx_tl_thread *it = &tl->threads[t];

		if (!kx_rangetrack_thread(&b->w->track, it->tid, 0))
			continue;
		for (size_t k = 0; k < it->count; k++) {
			size_t pos = it->first + k, idx = tl->order[pos];
			const struct kx_ioctl *e = kx_store_ioctl(s, idx);

			if (kx_engine_feed_span(&b->eng, e->tid, e->ts,
			                        kx_timeline_dur(tl, idx, e->dur), (uint32_t)pos))
				return -1;
		}
		if (kx_engine_finish_thread(&b->eng, it->tid))
			return -1;
	}
	return 0;
}

/* The calls the ranges cut join the timeline's fixes. */
static int add_cuts(struct kx_timeline *tl, struct kx_rangewalk *w)
{
	if (!tl)
		return 0;
	for (size_t i = 0; i < w->ncuts; i++)
		w->cuts[i].idx = tl->order[w->cuts[i].pos];
	return kx_timeline_add_fixes(tl, w->cuts, w->ncuts);
}

struct kx_ranges *kx_ranges_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                  struct kx_timeline *tl, const struct kx_jobs *jobs)
{
	struct kx_ranges *rg = kx_ranges_new(s, ci);
	struct devtime dt = {KX_HMAP_INIT, NULL, 0, 0};
	struct devctx dc = {&dt, tl};
	size_t n = kx_store_ann_count(s);
	struct kx_rangewalk w;
	struct build b = {.w = &w};
	const struct kx_engine_sinks out = {
	        .ctx = &b, .ann = b_ann, .range = b_range, .ioctl = b_call};
	int rc = -1;

	if (!rg)
		return NULL;
	kx_rangewalk_init(&w);
	kx_engine_init(&b.eng, KX_ENGINE_UNBOUNDED, 0, &out);
	w.out = rg;
	w.no_rows = w.keep_cuts = 1;
	w.dev = call_dev;
	w.dev_ctx = &dc;
	if (devtime_build(&dt, jobs))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (kx_engine_feed_ann(&b.eng, kx_store_ann(s, i), NULL, NULL))
			goto out;
	if (n) /* the calls' ends close ranges left open: none without records */
		calls_end(&b, s, tl);
	if (kx_rangewalk_close(&w, s, &b.eng) || walk_calls(&b, s, tl) ||
	    kx_engine_finish(&b.eng) || kx_rangewalk_finish(&w, s, NULL) || add_cuts(tl, &w) ||
	    kx_ranges_finish(rg))
		goto out;
	rg->events = n;
	rc = 0;
out:
	kx_engine_free(&b.eng);
	kx_rangewalk_free(&w);
	kx_hmap_free(&dt.map);
	free(dt.v);
	if (rc) {
		kx_ranges_free(rg);
		return NULL;
	}
	return rg;
}
