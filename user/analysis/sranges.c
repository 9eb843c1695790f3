/*
 * Annotation ranges paired as the records stream by (contract: sranges.h):
 * a stack of open ranges per annotating thread, the open cross-thread
 * ranges by (process, id), and the rows.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sranges.h"
#include "util/grow.h"

/* What a range kept for kx_sranges.out needs of the event that began it. */
struct range_begin {
	uint64_t seq;       /* its place among the annotation events */
	uint32_t name, cat; /* string ids in out's strings (0 when out is NULL) */
	uint32_t pid, tid;  /* tid: the thread that began it */
	uint16_t depth;     /* the event's depth */
};

/* An open thread range. */
struct open_range {
	uint64_t ts;     /* ns, its push */
	uint64_t ioctls; /* ioctls of the thread inside it so far (nested ranges' included) */
	long row;        /* its row in kx_sranges.rows */
	uint16_t depth;  /* the push's level */
	struct range_begin b;
};

struct kx_srange_thread {
	struct open_range *stack; /* open ranges, outermost first */
	size_t depth, cap;
	uint64_t last_ann; /* ns, its last push or pop */
	uint64_t io_start; /* ns, the start of its last ioctl since its first annotation */
	int has_io;
	uint32_t tid;
};

struct kx_srange_cross {
	uint64_t ts; /* ns, its start */
	long row;
	uint32_t pid;
	uint64_t id;
	struct range_begin b;
};

static uint64_t cross_key(uint32_t pid, uint64_t id)
{
	return kx_hash_combine(kx_hash_combine(2, pid), id);
}

void kx_sranges_init(struct kx_sranges *s)
{
	memset(s, 0, sizeof(*s));
	s->cross = (struct kx_slots)KX_SLOTS_INIT(struct kx_srange_cross);
	s->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct kx_srange_thread);
	s->ends = (struct kx_range_ends)KX_RANGE_ENDS_INIT;
	kx_range_rows_init(&s->builder, &s->rows);
}

static void because(struct kx_sranges *s, const char *why)
{
	if (!s->why)
		s->why = why;
}

static struct kx_srange_thread *thread_find(struct kx_sranges *s, uint32_t tid)
{
	return kx_tidtab_find(&s->threads, tid);
}

static struct kx_srange_thread *thread_get(struct kx_sranges *s, uint32_t tid)
{
	struct kx_srange_thread *t = kx_tidtab_get(&s->threads, tid, 1);

	if (t)
		t->tid = tid;
	return t;
}

/* The row of a name, as the store would keep the name (cut to its limit). */
static long row_of(struct kx_sranges *s, const char *cat, const char *name, int mark)
{
	char c[KX_ANN_NAME_MAX], n[KX_ANN_NAME_MAX];

	snprintf(c, sizeof(c), "%.*s", KX_ANN_NAME_MAX - 1, cat ? cat : "");
	snprintf(n, sizeof(n), "%.*s", KX_ANN_NAME_MAX - 1, name ? name : "");
	return kx_range_rows_get(&s->builder, c, n, mark);
}

static int row_add(struct kx_sranges *s, long row, uint64_t dur, uint64_t ioctls)
{
	struct kx_stat_row *r = &s->rows.rows[row];

	if (kx_stat_row_add_streamed(r, dur, 0))
		return -1;
	r->ioctls += ioctls;
	s->found++;
	return 0;
}

/* The begin event's facts a kept range needs (names interned in out's
 * strings; names the store refuses are a reason: it would refuse the event). */
static void begin_of(struct kx_sranges *s, const struct kx_ann *a, const char *name,
                     const char *cat, struct range_begin *b)
{
	*b = (struct range_begin){s->events - 1, 0, 0, a->pid, a->tid, a->depth};
	if (!s->out)
		return;
	b->name = kx_store_ann_intern(s->strings, name);
	b->cat = kx_store_ann_intern(s->strings, cat);
	if (b->name == UINT32_MAX || b->cat == UINT32_MAX)
		because(s, "the annotation names do not fit the store");
}

/* A range appended to out (when kept) from its begin b at ts. NULL: not kept. */
static struct kx_range *keep(struct kx_sranges *s, const struct range_begin *b, uint64_t ts,
                             uint64_t id, int kind, int *oom)
{
	struct kx_ann a = {.ts = ts,
	                   .id = id,
	                   .pid = b->pid,
	                   .tid = b->tid,
	                   .name = b->name,
	                   .cat = b->cat,
	                   .depth = b->depth};
	struct kx_range *r;

	if (!s->out)
		return NULL;
	r = kx_ranges_add(s->out, &s->out_cap, &a, kind);
	*oom = !r;
	return r;
}

/* A closed range kept, ending at end_ts on thread end_tid. 0, or -1 when out of memory. */
static int keep_closed(struct kx_sranges *s, const struct range_begin *b, uint64_t ts, uint64_t id,
                       int kind, uint64_t end_ts, uint32_t end_tid, uint64_t ioctls)
{
	int oom = 0;
	struct kx_range *r = keep(s, b, ts, id, kind, &oom);

	if (r) {
		r->dur = r->dur_meas = end_ts > ts ? end_ts - ts : 0;
		r->end_tid = end_tid;
		r->ioctls = ioctls;
	}
	return oom ? -1 : 0;
}

static int on_push(struct kx_sranges *s, const struct kx_ann *a, const char *name, const char *cat,
                   const uint64_t *last_end)
{
	struct kx_srange_thread *t = thread_get(s, a->tid);
	struct open_range *o;

	if (!t)
		return -1;
	if (a->ts < t->last_ann || (last_end && a->ts <= *last_end))
		because(s, "an annotation range and a call of one thread overlap or touch");
	if (t->depth && a->depth <= t->stack[t->depth - 1].depth)
		because(s,
		        "an annotation range pushed no deeper than the open one (a pop was lost)");
	if (kx_grow((void **)&t->stack, &t->cap, t->depth, sizeof(*t->stack)))
		return -1;
	o = &t->stack[t->depth];
	o->row = row_of(s, cat, name, 0);
	if (o->row < 0)
		return -1;
	begin_of(s, a, name, cat, &o->b);
	o->ts = a->ts;
	o->ioctls = 0;
	o->depth = a->depth;
	t->depth++;
	t->last_ann = a->ts;
	return 0;
}

static int on_pop(struct kx_sranges *s, const struct kx_ann *a, const uint64_t *last_end)
{
	struct kx_srange_thread *t = thread_get(s, a->tid);
	struct open_range o;

	if (!t)
		return -1;
	if (a->ts < t->last_ann || (last_end && a->ts < *last_end) ||
	    (t->has_io && a->ts <= t->io_start))
		because(s, "an annotation range and a call of one thread overlap or touch");
	t->last_ann = a->ts;
	if (!t->depth || a->depth > t->stack[t->depth - 1].depth) {
		s->anom.lost_begin++; /* its push is not in the file */
		return 0;
	}
	o = t->stack[--t->depth];
	if (o.ts != a->begin || o.depth != a->depth) {
		because(s, "an annotation range whose pop was lost stays open over others");
		return 0;
	}
	if (t->depth)
		t->stack[t->depth - 1].ioctls += o.ioctls;
	if (keep_closed(s, &o.b, o.ts, 0, KX_RANGE_THREAD, a->ts, a->tid, o.ioctls))
		return -1;
	return row_add(s, o.row, a->ts > o.ts ? a->ts - o.ts : 0, o.ioctls);
}

static int on_start(struct kx_sranges *s, const struct kx_ann *a, const char *name, const char *cat)
{
	uint64_t key = cross_key(a->pid, a->id);
	struct kx_srange_cross *c;
	long i;

	if (kx_hmap_get(&s->open, key) || kx_hmap_get(&s->lost, kx_hash_combine(key, a->ts)))
		because(s, "a cross-thread annotation range id started twice, or ended before its "
		           "start");
	i = kx_slots_get(&s->cross);
	if (i < 0)
		return -1;
	c = kx_slots_at(&s->cross, (size_t)i);
	c->row = row_of(s, cat, name, 0);
	begin_of(s, a, name, cat, &c->b);
	if (c->row < 0 || kx_hmap_add(&s->open, key, (uint32_t)i)) {
		kx_slots_put(&s->cross, (size_t)i);
		return -1;
	}
	c->ts = a->ts;
	c->pid = a->pid;
	c->id = a->id;
	return 0;
}

static int on_end(struct kx_sranges *s, const struct kx_ann *a)
{
	uint64_t key = cross_key(a->pid, a->id);
	size_t pos = KX_HMAP_START;
	struct kx_srange_cross *c = NULL;
	uint32_t *i;

	while ((i = kx_hmap_next(&s->open, key, &pos))) {
		c = kx_slots_at(&s->cross, *i);
		if (c->pid == a->pid && c->id == a->id)
			break;
	}
	if (!i) {
		s->anom.lost_begin++;
		return kx_hmap_add(&s->lost, kx_hash_combine(key, a->begin), 0);
	}
	if (c->ts != a->begin) {
		because(s, "a cross-thread annotation range ended with another start time");
		return 0;
	}
	kx_slots_put(&s->cross, *i);
	kx_hmap_del_at(&s->open, pos);
	if (keep_closed(s, &c->b, c->ts, c->id, KX_RANGE_CROSS, a->ts, a->tid, 0))
		return -1;
	return row_add(s, c->row, a->ts > c->ts ? a->ts - c->ts : 0, 0);
}

static int keep_mark(struct kx_sranges *s, const struct kx_ann *a, const char *name,
                     const char *cat)
{
	struct range_begin b;
	int oom = 0;

	if (!s->out)
		return 0;
	begin_of(s, a, name, cat, &b);
	keep(s, &b, a->ts, 0, KX_RANGE_MARK, &oom);
	return oom ? -1 : 0;
}

int kx_sranges_ann(struct kx_sranges *s, const struct kx_ann *a, const char *name, const char *cat,
                   const uint64_t *last_end)
{
	long row;

	s->events++;
	if (kx_range_ends_ann(&s->ends, a->pid, a->tid, a->ts))
		return -1;
	switch (a->what) {
	case KX_ANN_PUSH:
		return on_push(s, a, name, cat, last_end);
	case KX_ANN_POP:
		return on_pop(s, a, last_end);
	case KX_ANN_START:
		return on_start(s, a, name, cat);
	case KX_ANN_END:
		return on_end(s, a);
	case KX_ANN_MARK:
		row = row_of(s, cat, name, 1);
		return row < 0 || keep_mark(s, a, name, cat) ? -1 : row_add(s, row, 0, 0);
	default:
		return 0; /* unknown: in memory too, no range */
	}
}

int kx_sranges_ioctl(struct kx_sranges *s, const struct kx_ioctl *e)
{
	struct kx_srange_thread *t = thread_find(s, e->tid);

	kx_range_ends_ioctl(&s->ends, e->pid, e->tid, e->ts + e->dur);
	if (!t)
		return 0;
	if (e->ts < t->last_ann)
		because(s, "an annotation range and a call of one thread overlap or touch");
	t->io_start = e->ts;
	t->has_io = 1;
	if (t->depth)
		t->stack[t->depth - 1].ioctls++;
	return 0;
}

/* A range still open at the end, for out. */
struct left_open {
	const struct range_begin *b;
	uint64_t ts, id, ioctls;
	int kind;
};

static int left_cmp(const void *pa, const void *pb)
{
	const struct left_open *a = pa, *b = pb;

	return a->b->seq < b->b->seq ? -1 : a->b->seq > b->b->seq;
}

/* The open ones of thread t (each holding its nested ones' ioctls too) into v. */
static size_t left_of_thread(struct kx_srange_thread *t, struct left_open *v)
{
	for (size_t d = t->depth; d-- > 1;)
		t->stack[d - 1].ioctls += t->stack[d].ioctls;
	for (size_t d = 0; d < t->depth; d++)
		v[d] = (struct left_open){&t->stack[d].b, t->stack[d].ts, 0, t->stack[d].ioctls,
		                          KX_RANGE_THREAD};
	return t->depth;
}

/* The ranges still open at the end kept in out, closed where their thread
 * or process ended, in the order of the events that began them. 0, or -1
 * when out of memory. */
static int keep_open(struct kx_sranges *s)
{
	size_t n = 0, cap = kx_slots_live(&s->cross) + 1;
	struct left_open *v;
	int oom = 0;

	for (size_t i = 0; i < s->threads.n; i++)
		cap += ((struct kx_srange_thread *)kx_tidtab_at(&s->threads, i))->depth;
	v = malloc(cap * sizeof(*v));
	if (!v)
		return -1;
	for (size_t i = 0; i < s->threads.n; i++)
		n += left_of_thread(kx_tidtab_at(&s->threads, i), v + n);
	for (size_t i = 0; i < s->open.cap; i++) {
		const struct kx_srange_cross *c;

		if (!s->open.slot[i].used)
			continue;
		c = kx_slots_at(&s->cross, s->open.slot[i].val);
		v[n++] = (struct left_open){&c->b, c->ts, c->id, 0, KX_RANGE_CROSS};
	}
	qsort(v, n, sizeof(*v), left_cmp);
	for (size_t i = 0; i < n && !oom; i++) {
		struct kx_range *r = keep(s, v[i].b, v[i].ts, v[i].id, v[i].kind, &oom);

		if (r) {
			r->open = 1;
			r->dur = r->dur_meas =
			        (v[i].kind == KX_RANGE_THREAD
			                 ? kx_range_end_thread(&s->ends, v[i].b->tid, v[i].ts)
			                 : kx_range_end_process(&s->ends, v[i].b->pid, v[i].ts)) -
			        v[i].ts;
			r->ioctls = v[i].ioctls;
		}
	}
	free(v);
	return oom ? -1 : 0;
}

int kx_sranges_finish(struct kx_sranges *s, const struct kx_store *tasks, struct kx_stats *sum)
{
	for (size_t i = 0; i < s->threads.n; i++)
		s->anom.open +=
		        ((const struct kx_srange_thread *)kx_tidtab_at(&s->threads, i))->depth;
	s->anom.open_cross += kx_slots_live(&s->cross);
	s->found += s->anom.open + s->anom.open_cross;
	kx_range_ends_exits(&s->ends, tasks);
	if (s->out && keep_open(s))
		return -1;
	if (s->out)
		kx_sranges_counts(s, s->out);
	if (kx_range_rows_finish(&s->builder))
		return -1;
	return kx_stats_append(sum, &s->rows);
}

void kx_sranges_counts(const struct kx_sranges *s, struct kx_ranges *rg)
{
	rg->anom = s->anom;
	rg->events = s->events;
	rg->found = s->found;
}

void kx_sranges_free(struct kx_sranges *s)
{
	for (size_t i = 0; i < s->threads.n; i++)
		free(((struct kx_srange_thread *)kx_tidtab_at(&s->threads, i))->stack);
	kx_tidtab_free(&s->threads);
	kx_range_ends_free(&s->ends);
	kx_slots_free(&s->cross);
	kx_hmap_free(&s->open);
	kx_hmap_free(&s->lost);
	kx_hmap_free(&s->builder.map);
	kx_stats_free(&s->rows);
}
