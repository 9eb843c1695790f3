/*
 * Annotation ranges paired as the records stream by (contract: sranges.h):
 * the pairing is analysis/rangetrack.h's; here the rows, the ioctls each
 * open range holds and the reasons to read the file whole.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/sranges.h"

/* What an open range carries besides the tracker's facts. */
struct open_data {
	uint64_t ioctls;    /* ioctls of the thread inside it so far (nested ranges' included) */
	long row;           /* its row in kx_sranges.rows */
	uint32_t name, cat; /* string ids in out's strings (0 when out is NULL) */
};

/* What a thread carries. */
struct thread_data {
	uint64_t last_ann; /* ns, its last push or pop */
	uint64_t io_start; /* ns, the start of its last ioctl since its first annotation */
	int has_io;
};

_Static_assert(sizeof(struct kx_rt_open) + sizeof(struct open_data) + 8 <=
                       sizeof(((struct kx_sranges *)0)->ended),
               "kx_sranges.ended holds an open range");

static uint64_t cross_key(uint32_t pid, uint64_t id)
{
	return kx_hash_combine(kx_hash_combine(2, pid), id);
}

void kx_sranges_init(struct kx_sranges *s)
{
	memset(s, 0, sizeof(*s));
	kx_rangetrack_init(&s->track, sizeof(struct open_data), sizeof(struct thread_data));
	s->ends = (struct kx_range_ends)KX_RANGE_ENDS_INIT;
	kx_range_rows_init(&s->builder, &s->rows);
}

static void because(struct kx_sranges *s, const char *why)
{
	if (!s->why)
		s->why = why;
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

/* The names a kept range needs, interned in out's strings (names the store
 * refuses are a reason: it would refuse the event). */
static void names_of(struct kx_sranges *s, const char *name, const char *cat, struct open_data *d)
{
	if (!s->out)
		return;
	d->name = kx_store_ann_intern(s->strings, name);
	d->cat = kx_store_ann_intern(s->strings, cat);
	if (d->name == UINT32_MAX || d->cat == UINT32_MAX)
		because(s, "the annotation names do not fit the store");
}

/* A range appended to out (when kept) from its begin o. NULL: not kept. */
static struct kx_range *keep(struct kx_sranges *s, struct kx_rt_open *o, int kind, int *oom)
{
	const struct open_data *d = kx_rt_data(o);
	struct kx_ann a = {.ts = o->ts,
	                   .id = o->id,
	                   .pid = o->pid,
	                   .tid = o->tid,
	                   .name = d->name,
	                   .cat = d->cat,
	                   .depth = o->depth};
	struct kx_range *r;

	if (!s->out)
		return NULL;
	r = kx_ranges_add(s->out, &s->out_cap, &a, kind);
	*oom = !r;
	return r;
}

/* A closed range kept, ending at end_ts on thread end_tid. 0, or -1 when out of memory. */
static int keep_closed(struct kx_sranges *s, struct kx_rt_open *o, int kind, uint64_t end_ts,
                       uint32_t end_tid)
{
	int oom = 0;
	struct kx_range *r = keep(s, o, kind, &oom);

	if (r) {
		r->dur = r->dur_meas = end_ts > o->ts ? end_ts - o->ts : 0;
		r->end_tid = end_tid;
		r->ioctls = ((const struct open_data *)kx_rt_data(o))->ioctls;
	}
	return oom ? -1 : 0;
}

static struct kx_rt_open *top_of(struct kx_sranges *s, const struct kx_rt_thread *th)
{
	return th->depth ? kx_rt_at(&s->track, th, th->depth - 1) : NULL;
}

static int on_push(struct kx_sranges *s, const struct kx_ann *a, const char *name, const char *cat,
                   const uint64_t *last_end)
{
	struct kx_rt_thread *th = kx_rangetrack_thread(&s->track, a->tid, 1);
	struct thread_data *t;
	struct kx_rt_open *o;
	struct open_data *d;
	long row;

	if (!th)
		return -1;
	t = kx_rt_tdata(th);
	if (a->ts < t->last_ann || (last_end && a->ts <= *last_end))
		because(s, "an annotation range and a call of one thread overlap or touch");
	if (th->depth && a->depth <= top_of(s, th)->depth)
		because(s,
		        "an annotation range pushed no deeper than the open one (a pop was lost)");
	row = row_of(s, cat, name, 0);
	if (row < 0 || !(o = kx_rangetrack_begin(&s->track, a)))
		return -1;
	d = kx_rt_data(o);
	d->row = row;
	names_of(s, name, cat, d);
	t->last_ann = a->ts;
	return 0;
}

static int on_pop(struct kx_sranges *s, const struct kx_ann *a, const uint64_t *last_end)
{
	struct kx_rt_thread *th = kx_rangetrack_thread(&s->track, a->tid, 1);
	struct kx_rt_open *o = (struct kx_rt_open *)s->ended, *top;
	const struct open_data *d = kx_rt_data(o);
	struct thread_data *t;
	size_t above;

	if (!th)
		return -1;
	t = kx_rt_tdata(th);
	if (a->ts < t->last_ann || (last_end && a->ts < *last_end) ||
	    (t->has_io && a->ts <= t->io_start))
		because(s, "an annotation range and a call of one thread overlap or touch");
	t->last_ann = a->ts;
	top = top_of(s, th);
	if (!top || a->depth > top->depth) {
		s->anom.lost_begin++; /* its push is not in the file */
		return 0;
	}
	if (!kx_rangetrack_end(&s->track, a, o, &above) || above) {
		because(s, "an annotation range whose pop was lost stays open over others");
		return 0;
	}
	if ((top = top_of(s, th)))
		((struct open_data *)kx_rt_data(top))->ioctls += d->ioctls;
	if (keep_closed(s, o, KX_RANGE_THREAD, a->ts, a->tid))
		return -1;
	return row_add(s, d->row, a->ts > o->ts ? a->ts - o->ts : 0, d->ioctls);
}

static int on_start(struct kx_sranges *s, const struct kx_ann *a, const char *name, const char *cat)
{
	uint64_t key = cross_key(a->pid, a->id);
	struct kx_rt_open *o;
	struct open_data *d;
	long row;

	if (kx_rangetrack_cross_open(&s->track, a->pid, a->id) ||
	    kx_hmap_get(&s->lost, kx_hash_combine(key, a->ts)))
		because(s, "a cross-thread annotation range id started twice, or ended before its "
		           "start");
	row = row_of(s, cat, name, 0);
	if (row < 0 || !(o = kx_rangetrack_begin(&s->track, a)))
		return -1;
	d = kx_rt_data(o);
	d->row = row;
	names_of(s, name, cat, d);
	return 0;
}

static int on_end(struct kx_sranges *s, const struct kx_ann *a)
{
	struct kx_rt_open *o = (struct kx_rt_open *)s->ended;
	size_t above;

	if (!kx_rangetrack_end(&s->track, a, o, &above)) {
		if (kx_rangetrack_cross_open(&s->track, a->pid, a->id)) {
			because(s, "a cross-thread annotation range ended with another start time");
			return 0;
		}
		s->anom.lost_begin++;
		return kx_hmap_add(&s->lost, kx_hash_combine(cross_key(a->pid, a->id), a->begin),
		                   0);
	}
	if (keep_closed(s, o, KX_RANGE_CROSS, a->ts, a->tid))
		return -1;
	return row_add(s, ((const struct open_data *)kx_rt_data(o))->row,
	               a->ts > o->ts ? a->ts - o->ts : 0, 0);
}

static int keep_mark(struct kx_sranges *s, const struct kx_ann *a, const char *name,
                     const char *cat)
{
	struct kx_rt_open *o = (struct kx_rt_open *)s->ended;
	int oom = 0;

	if (!s->out)
		return 0;
	memset(o, 0, s->track.stride);
	*o = (struct kx_rt_open){.ts = a->ts, .pid = a->pid, .tid = a->tid, .depth = a->depth};
	names_of(s, name, cat, kx_rt_data(o));
	keep(s, o, KX_RANGE_MARK, &oom);
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
	struct kx_rt_thread *th = kx_rangetrack_thread(&s->track, e->tid, 0);
	struct thread_data *t;

	kx_range_ends_ioctl(&s->ends, e->pid, e->tid, e->ts + e->dur);
	if (!th)
		return 0;
	t = kx_rt_tdata(th);
	if (e->ts < t->last_ann)
		because(s, "an annotation range and a call of one thread overlap or touch");
	t->io_start = e->ts;
	t->has_io = 1;
	if (th->depth)
		((struct open_data *)kx_rt_data(top_of(s, th)))->ioctls++;
	return 0;
}

/* The ranges still open at the end kept in out, closed where their thread
 * or process ended, in the order of the events that began them (each
 * thread range holding its nested ones' ioctls too). 0, or -1 when out of
 * memory. */
static int keep_open(struct kx_sranges *s)
{
	struct kx_rangetrack *k = &s->track;
	struct kx_rt_open **v = malloc((kx_rangetrack_open_count(k) + 1) * sizeof(*v));
	size_t n;
	int oom = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < k->threads.n; i++) {
		const struct kx_rt_thread *th = kx_tidtab_at(&k->threads, i);

		for (size_t d = th->depth; d-- > 1;)
			((struct open_data *)kx_rt_data(kx_rt_at(k, th, d - 1)))->ioctls +=
			        ((struct open_data *)kx_rt_data(kx_rt_at(k, th, d)))->ioctls;
	}
	n = kx_rangetrack_left(k, v);
	for (size_t i = 0; i < n && !oom; i++) {
		int thread = v[i]->what == KX_ANN_PUSH;
		struct kx_range *r = keep(s, v[i], thread ? KX_RANGE_THREAD : KX_RANGE_CROSS, &oom);

		if (r) {
			r->open = 1;
			r->dur = r->dur_meas =
			        (thread ? kx_range_end_thread(&s->ends, v[i]->tid, v[i]->ts)
			                : kx_range_end_process(&s->ends, v[i]->pid, v[i]->ts)) -
			        v[i]->ts;
			r->ioctls = ((const struct open_data *)kx_rt_data(v[i]))->ioctls;
		}
	}
	free(v);
	return oom ? -1 : 0;
}

int kx_sranges_finish(struct kx_sranges *s, const struct kx_store *tasks, struct kx_stats *sum)
{
	uint64_t cross = kx_slots_live(&s->track.cross);

	s->anom.open += kx_rangetrack_open_count(&s->track) - cross;
	s->anom.open_cross += cross;
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
	kx_rangetrack_free(&s->track);
	kx_range_ends_free(&s->ends);
	kx_hmap_free(&s->lost);
	kx_hmap_free(&s->builder.map);
	kx_stats_free(&s->rows);
}
