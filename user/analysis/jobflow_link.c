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

/* Linked job j teaches its ring (ring name hash h; e: what it learnt so
 * far, NULL: nothing) its driver unless an earlier-made one did. 1, or -1
 * when out of memory. */
static int ring_learn(struct kx_jobflow *f, const struct fl_kjob *j, uint64_t h,
                      struct kx_jobflow_ringdrv *e)
{
	struct kx_keyslot *sl;

	if (e && (e->ts < j->ts || (e->ts == j->ts && e->seq < j->seq)))
		return 1;
	if (!e) {
		sl = kx_keymap_get(&f->ringdrv, j->t.r.src, h, 0);
		if (!sl || kx_grow((void **)&f->rdrv, &f->rdcap, f->nrdrv, sizeof(*f->rdrv)))
			return -1;
		sl->v = ++f->nrdrv;
		e = &f->rdrv[sl->v - 1];
	}
	*e = (struct kx_jobflow_ringdrv){j->ts, j->seq, j->submit_drv};
	return 1;
}

/* The learnt driver of job j's ring (jobs.c's learn_ring_drivers): a linked
 * job teaches it (the first made wins); an unlinked one gets it in
 * *drv when the first linked job of its ring is known: one was counted,
 * and no linked job held was made before it. 1 when known, 0 when not,
 * -1 when out of memory. */
int jf_ring_driver(struct kx_jobflow *f, const struct fl_kjob *j, unsigned int *drv)
{
	uint64_t h = kx_hash_bytes(j->t.ring, strlen(j->t.ring));
	struct kx_keyslot *sl = kx_keymap_find(&f->ringdrv, j->t.r.src, h, 0);
	struct kx_jobflow_ringdrv *e = sl ? &f->rdrv[sl->v - 1] : NULL;

	if (j->submit_drv)
		return ring_learn(f, j, h, e);
	if (!e)
		return 0;
	while (f->linkq.n) {
		const struct fl_openref *o = kx_minheap_top(&f->linkq);

		if (((const struct fl_kjob *)kx_slots_at(&f->open, o->slot))->gen != o->gen) {
			kx_minheap_pop(&f->linkq, NULL);
			continue;
		}
		if (o->ts < e->ts || (o->ts == e->ts && o->seq < e->seq))
			return 0;
		break;
	}
	*drv = e->drv;
	return 1;
}
