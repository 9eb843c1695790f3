/*
 * Annotation range pairing (contract: rangetrack.h): a stack per thread in
 * a util/tidtab.h table, the open cross-thread ranges in util/slots.h
 * found by (pid, id) through util/hashmap.h. Eviction under the bounds
 * scans for the least recently used entry, only when a table is full.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/rangetrack.h"
#include "util/grow.h"

/* Open range i (0: outermost) of thread th. */
static struct kx_rt_open *rt_at(const struct kx_rangetrack *t, const struct kx_rt_thread *th,
                                size_t i)
{
	return (struct kx_rt_open *)(th->stack + i * t->stride);
}

static size_t round8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

void kx_rangetrack_init(struct kx_rangetrack *t, size_t item, size_t titem)
{
	memset(t, 0, sizeof(*t));
	t->stride = round8(sizeof(struct kx_rt_open) + item);
	t->threads = (struct kx_tidtab){KX_HMAP_INIT, NULL,
	                                round8(sizeof(struct kx_rt_thread) + titem), 0, 0};
	t->cross = (struct kx_slots){NULL, t->stride, 0, 0, NULL, 0, 0};
}

void kx_rangetrack_bound(struct kx_rangetrack *t, uint32_t max_threads, uint32_t max_depth,
                         uint32_t max_cross)
{
	t->max_threads = max_threads;
	t->max_depth = max_depth;
	t->max_cross = max_cross;
}

void kx_rangetrack_free(struct kx_rangetrack *t)
{
	for (size_t i = 0; i < t->threads.n; i++)
		free(((struct kx_rt_thread *)kx_tidtab_at(&t->threads, i))->stack);
	kx_tidtab_free(&t->threads);
	kx_hmap_free(&t->cross_map);
	kx_slots_free(&t->cross);
}

/* ---- threads ---- */

/* Gives up thread i: its open ranges go with it (the last thread takes its place). */
static void thread_evict(struct kx_rangetrack *t, size_t i)
{
	struct kx_rt_thread *th = kx_tidtab_at(&t->threads, i);
	size_t last = t->threads.n - 1;

	t->evicted += th->depth;
	free(th->stack);
	kx_hmap_del(&t->threads.map, th->tid);
	if (i != last) {
		struct kx_rt_thread *l = kx_tidtab_at(&t->threads, last);
		uint32_t *at = kx_hmap_get(&t->threads.map, l->tid);

		memcpy(th, l, t->threads.size);
		if (at)
			*at = (uint32_t)i;
	}
	t->threads.n--;
}

static void thread_make_room(struct kx_rangetrack *t)
{
	size_t best = 0;

	if (!t->max_threads || t->threads.n < t->max_threads)
		return;
	for (size_t i = 1; i < t->threads.n; i++)
		if (((struct kx_rt_thread *)kx_tidtab_at(&t->threads, i))->used <
		    ((struct kx_rt_thread *)kx_tidtab_at(&t->threads, best))->used)
			best = i;
	thread_evict(t, best);
}

struct kx_rt_thread *kx_rangetrack_thread(struct kx_rangetrack *t, uint32_t tid, int make)
{
	struct kx_rt_thread *th = kx_tidtab_find(&t->threads, tid);

	if (th || !make)
		return th;
	thread_make_room(t);
	th = kx_tidtab_get(&t->threads, tid, 1);
	if (th)
		th->tid = tid;
	return th;
}

/* ---- begins ---- */

static uint64_t cross_key(uint32_t pid, uint64_t id)
{
	return kx_hash_combine(kx_hash_combine(2, pid), id);
}

/* A new open range on top of thread th; NULL when out of memory. */
static struct kx_rt_open *push(struct kx_rangetrack *t, struct kx_rt_thread *th)
{
	if (t->max_depth && th->depth >= t->max_depth) {
		/* The oldest gives way (its pop was surely lost). */
		memmove(th->stack, th->stack + t->stride, (th->depth - 1) * t->stride);
		th->depth--;
		t->evicted++;
	}
	if (kx_grow((void **)&th->stack, &th->cap, th->depth, t->stride))
		return NULL;
	return rt_at(t, th, th->depth++);
}

static void cross_make_room(struct kx_rangetrack *t)
{
	const struct kx_hmap *m = &t->cross_map;
	size_t best = SIZE_MAX;
	uint64_t oldest = UINT64_MAX;

	if (!t->max_cross || kx_slots_live(&t->cross) < t->max_cross)
		return;
	for (size_t i = 0; i < m->cap; i++) {
		const struct kx_rt_open *o;

		if (!m->slot[i].used)
			continue;
		o = kx_slots_at(&t->cross, m->slot[i].val);
		if (o->used < oldest) {
			oldest = o->used;
			best = i;
		}
	}
	if (best == SIZE_MAX)
		return;
	kx_slots_put(&t->cross, m->slot[best].val);
	kx_hmap_del_at(&t->cross_map, best); /* a map position is its slot */
	t->evicted++;
}

struct kx_rt_open *kx_rangetrack_begin(struct kx_rangetrack *t, const struct kx_ann *a)
{
	struct kx_rt_open *o;

	t->clock++;
	if (a->what == KX_ANN_PUSH) {
		struct kx_rt_thread *th = kx_rangetrack_thread(t, a->tid, 1);

		if (!th || !(o = push(t, th)))
			return NULL;
		th->used = t->clock;
	} else {
		long i;

		cross_make_room(t);
		i = kx_slots_get(&t->cross);
		if (i < 0)
			return NULL;
		if (kx_hmap_add(&t->cross_map, cross_key(a->pid, a->id), (uint32_t)i)) {
			kx_slots_put(&t->cross, (size_t)i);
			return NULL;
		}
		o = kx_slots_at(&t->cross, (size_t)i);
	}
	memset(o, 0, t->stride);
	*o = (struct kx_rt_open){a->ts,       a->what == KX_ANN_START ? a->id : 0,
	                         t->begins++, t->clock,
	                         a->pid,      a->tid,
	                         a->depth,    a->what};
	return o;
}

/* ---- ends ---- */

static int end_pop(struct kx_rangetrack *t, const struct kx_ann *a, struct kx_rt_open *out,
                   size_t *above)
{
	struct kx_rt_thread *th = kx_rangetrack_thread(t, a->tid, 0);

	if (!th)
		return 0;
	th->used = t->clock;
	for (size_t d = th->depth; d-- > 0;) {
		struct kx_rt_open *o = rt_at(t, th, d);

		if (o->ts != a->begin || o->depth != a->depth)
			continue;
		memcpy(out, o, t->stride);
		*above = th->depth - 1 - d;
		memmove(o, (unsigned char *)o + t->stride, *above * t->stride);
		th->depth--;
		return 1;
	}
	return 0;
}

static int end_cross(struct kx_rangetrack *t, const struct kx_ann *a, struct kx_rt_open *out)
{
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	while ((i = kx_hmap_next(&t->cross_map, cross_key(a->pid, a->id), &pos))) {
		struct kx_rt_open *o = kx_slots_at(&t->cross, *i);

		if (o->pid != a->pid || o->id != a->id || o->ts != a->begin)
			continue;
		memcpy(out, o, t->stride);
		kx_slots_put(&t->cross, *i);
		kx_hmap_del_at(&t->cross_map, pos);
		return 1;
	}
	return 0;
}

int kx_rangetrack_end(struct kx_rangetrack *t, const struct kx_ann *a, struct kx_rt_open *out,
                      size_t *above)
{
	t->clock++;
	*above = 0;
	return a->what == KX_ANN_POP ? end_pop(t, a, out, above) : end_cross(t, a, out);
}

/* ---- what stays open ---- */

size_t kx_rangetrack_open_count(const struct kx_rangetrack *t)
{
	size_t n = kx_slots_live(&t->cross);

	for (size_t i = 0; i < t->threads.n; i++)
		n += ((const struct kx_rt_thread *)kx_tidtab_at(&t->threads, i))->depth;
	return n;
}

static int seq_cmp(const void *pa, const void *pb)
{
	const struct kx_rt_open *a = *(struct kx_rt_open *const *)pa,
	                        *b = *(struct kx_rt_open *const *)pb;

	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

size_t kx_rangetrack_left(const struct kx_rangetrack *t, struct kx_rt_open **v)
{
	size_t n = 0;

	for (size_t i = 0; i < t->threads.n; i++) {
		const struct kx_rt_thread *th = kx_tidtab_at(&t->threads, i);

		for (size_t d = 0; d < th->depth; d++)
			v[n++] = rt_at(t, th, d);
	}
	for (size_t i = 0; i < t->cross_map.cap; i++)
		if (t->cross_map.slot[i].used)
			v[n++] = kx_slots_at(&t->cross, t->cross_map.slot[i].val);
	qsort(v, n, sizeof(*v), seq_cmp);
	return n;
}
