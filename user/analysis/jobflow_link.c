/*
 * The streamed device timelines' submit links (jobflow_int.h): a keyed
 * record's look at its task's calls, and the driver a shared fence
 * source's ring learns from its first linked job.
 */
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"
#include "util/grow.h"
#include "util/hashmap.h"

/* Call e (id) of thread t: the job records of t looking at its calls
 * take it as their candidate when it began at or before them, else stop
 * looking (the calls come in start order). */
void jf_probe_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e, uint64_t id)
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

/* Record r (slot of f->recs) of task t looks at t's calls from now on,
 * t's last call its candidate (room made by jf_probe_room). */
void jf_probe_add(struct fl_thread *t, struct fl_rec *r, uint32_t slot)
{
	r->looking = 1;
	if (t->last_id) {
		r->cand = t->last;
		r->cand_id = t->last_id;
	}
	t->probes[t->nprobes++] = (struct fl_probe){slot, r->gen};
}

/* Room for one more probe of t (the stale ones dropped first). */
int jf_probe_room(struct kx_jobflow *f, struct fl_thread *t)
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

/* The entry of a shared fence source's ring (src, ring name), added
 * (nothing learnt) when add and new; NULL when none, or out of memory. */
struct kx_jobflow_ringdrv *jf_ring_entry(struct kx_jobflow *f, unsigned int src, const char *ring,
                                         int add)
{
	uint64_t h = kx_hash_bytes(ring, strlen(ring));
	struct kx_keyslot *sl = add ? kx_keymap_get(&f->ringdrv, src, h, 0)
	                            : kx_keymap_find(&f->ringdrv, src, h, 0);

	if (!sl)
		return NULL;
	if (!sl->v) {
		if (kx_grow((void **)&f->rdrv, &f->rdcap, f->nrdrv, sizeof(*f->rdrv)))
			return NULL;
		memset(&f->rdrv[f->nrdrv], 0, sizeof(*f->rdrv));
		sl->v = ++f->nrdrv;
	}
	return &f->rdrv[sl->v - 1];
}

/* Linked job j teaches its ring (e: its entry, NULL: none yet) its driver
 * unless an earlier-made one did. 1, or -1 when out of memory. */
static int ring_learn(struct kx_jobflow *f, const struct fl_kjob *j, struct kx_jobflow_ringdrv *e)
{
	if (e && e->learnt && (e->ts < j->ts || (e->ts == j->ts && e->seq < j->seq)))
		return 1;
	if (!e && !(e = jf_ring_entry(f, j->t.r.src, j->t.ring, 1)))
		return -1;
	e->ts = j->ts;
	e->seq = j->seq;
	e->drv = j->submit_drv;
	e->learnt = 1;
	return 1;
}

/* Is the driver of ring e final: a linked job of it was counted, and no
 * linked job still held was made before that one? */
int jf_ring_known(struct kx_jobflow *f, const struct kx_jobflow_ringdrv *e)
{
	if (!e || !e->learnt)
		return 0;
	while (f->linkq.n) {
		const struct fl_openref *o = kx_minheap_top(&f->linkq);

		if (((const struct fl_kjob *)kx_slots_at(&f->open, o->slot))->gen != o->gen) {
			kx_minheap_pop(&f->linkq, NULL);
			continue;
		}
		return !(o->ts < e->ts || (o->ts == e->ts && o->seq < e->seq));
	}
	return 1;
}

/* The learnt driver of job j's ring (jobs.h's device rule): a linked
 * job teaches it (the first made wins); an unlinked one gets it in
 * *drv when the ring's driver is final (jf_ring_known), 0 (the fallback)
 * when its ring went past the budget (jobflow_pend.c). 1 when known, 0
 * when not (the job waits: jobflow_pend.c), -1 when out of memory. */
int jf_ring_driver(struct kx_jobflow *f, const struct fl_kjob *j, unsigned int *drv)
{
	struct kx_jobflow_ringdrv *e = jf_ring_entry(f, j->t.r.src, j->t.ring, 0);

	if (j->submit_drv)
		return ring_learn(f, j, e);
	/* Past the budget: on the fallback (jf_pend_check tells if not). */
	if (e && e->counted) {
		*drv = 0;
		return 1;
	}
	if (!jf_ring_known(f, e))
		return 0;
	*drv = e->drv;
	return 1;
}
