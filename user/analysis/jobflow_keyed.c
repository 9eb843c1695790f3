/*
 * The streamed device timelines' keyed jobs (jobflow_int.h): block
 * requests and GPU jobs paired by key, their records in time order.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"

_Static_assert(KX_JOBFLOW_OPEN == 65536u && KX_JOBFLOW_CLOSED == 16384u &&
                       KX_JOBFLOW_WINDOW_NS == 1000000000ull,
               "the reasons' messages name the bounds");

/* By time, then file order. */
static int rec_less(const void *pa, const void *pb)
{
	const struct fl_recref *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

KX_MINHEAP_TYPED(recq, struct fl_recref, rec_less)

static int open_less(const void *pa, const void *pb)
{
	const struct fl_openref *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start;
	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

/* By the record that made a job (the builder's order). */
static int made_less(const void *pa, const void *pb)
{
	const struct fl_openref *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts;
	return a->seq < b->seq;
}

void jf_keyed_init(struct kx_jobflow *f)
{
	f->recs = (struct kx_slots)KX_SLOTS_INIT(struct fl_rec);
	f->recq = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_recref, rec_less);
	f->keys = (struct kx_keymap)KX_KEYMAP_INIT;
	f->open = (struct kx_slots)KX_SLOTS_INIT(struct fl_kjob);
	f->opens = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_openref, open_less);
	f->passed = (struct kx_keymap)KX_KEYMAP_INIT;
	f->ringdrv = (struct kx_keymap)KX_KEYMAP_INIT;
	f->linkq = (struct kx_minheap)KX_MINHEAP_INIT(struct fl_openref, made_less);
}

void jf_keyed_free(struct kx_jobflow *f)
{
	kx_slots_free(&f->recs);
	kx_minheap_free(&f->recq);
	kx_keymap_free(&f->keys);
	kx_slots_free(&f->open);
	kx_minheap_free(&f->opens);
	free(f->closed);
	free(f->gone);
	kx_keymap_free(&f->passed);
	kx_keymap_free(&f->ringdrv);
	jf_pend_free(f);
	free(f->rdrv);
	kx_minheap_free(&f->linkq);
}

static uint32_t new_gen(struct kx_jobflow *f)
{
	if (!++f->gen)
		f->gen = 1;
	return f->gen;
}

/* Job slot of f->open counted and held (jobs.h's flags, device and waiter rules);
 * a GPU job of a shared fence source whose ring's driver is not known yet
 * waits for it (jobflow_pend.c). */
int jf_keyed_out(struct kx_jobflow *f, size_t slot, uint64_t end_ns)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	struct fl_kjob j = *o;
	unsigned int ring_drv = 0;
	int known = 1;

	/* A shared fence source's job learns its device from its submitter, else
	 * from the first linked job of its ring. */
	if (kx_job_src_gpu(j.t.r.src) && !kx_job_src_driver(j.t.r.src))
		known = jf_ring_driver(f, &j, &ring_drv);
	if (known < 0)
		return -1;
	if (!known)
		return jf_pend_add(f, slot);
	o->gen = 0;
	kx_slots_put(&f->open, slot);
	if (jf_job_out(f, &j.t, j.ts, j.seq, end_ns, j.submit_drv, ring_drv, KEYED_LATE))
		return -1;
	/* A linked job counted may make the driver of a waiting job's ring final,
	 * or of one counted on its fallback. */
	if (j.submit_drv && f->npend && jf_pend_retry(f))
		return -1;
	return j.submit_drv && f->nspilt ? jf_pend_check(f, 0) : 0;
}

/* Job slot of f->open closed (its key's entry sl): a block request is
 * counted and held now; a GPU job stays (a later event of another source
 * may rename it, its waiter's call returns after it) until its key is
 * forgotten. With no bound, every job stays until the end (a wait phase may
 * still name a request's waiter), counted in the order made. */
static int keyed_close(struct kx_jobflow *f, struct kx_keyslot *sl, size_t slot, int reusable)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	uint64_t k[3], done = o->t.r.done_ts;

	if (f->unbounded)
		return 0;
	memcpy(k, sl->k, sizeof(k));
	if (kx_job_src_gpu(o->t.r.src))
		return jf_remember(f, k, done, (uint32_t)slot, o->gen, reusable);
	sl->v = KEY_CLOSED;
	if (jf_remember(f, k, done, NO_SLOT, 0, reusable))
		return -1;
	return jf_keyed_out(f, slot, 0);
}

/* New job o (slot) of record r linked to its candidate call, if it links
 * to it (jobs.h's submit rule). */
static int open_link(struct kx_jobflow *f, struct fl_kjob *o, const struct fl_rec *r, long slot)
{
	uint64_t at = kx_tjob_link_at(&o->t);

	if (at && r->cand_id && kx_tjob_links_to(&o->t, &r->cand)) {
		o->t.r.submit = jf_call_ref(f, &r->cand, r->cand_id);
		o->submit_drv = r->cand.drv;
		if (f->on_link && f->on_link(f->linked_ctx, o->t.r.tid, (uint64_t)o->t.r.submit))
			return -1;
		/* With no bound, jobs are counted in the order made: none waits. */
		if (kx_job_src_gpu(o->t.r.src) && !f->unbounded &&
		    kx_minheap_push(&f->linkq,
		                    &(struct fl_openref){0, o->ts, o->seq, (uint32_t)slot, o->gen}))
			return -1;
	} else if (at) {
		kx_tjob_no_link(&o->t);
	}
	return 0;
}

/* A new job of record r on key k (jobs.h's pairing and submit rules). */
static int keyed_open(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3])
{
	struct kx_keyslot *sl;
	struct fl_kjob *o;
	long slot;

	if (kx_slots_live(&f->open) >= f->lim.open) {
		jf_because(f,
		           "too many device jobs open at once (more than 65536 held: the streamed "
		           "read's memory budget)");
		return 0;
	}
	sl = kx_keymap_get(&f->keys, k[0], k[1], k[2]);
	slot = kx_slots_get(&f->open);
	if (!sl || slot < 0)
		return -1;
	o = kx_slots_at(&f->open, (size_t)slot);
	kx_tjob_init(&o->t);
	kx_tjob_first(&o->t, &r->e);
	o->ts = r->e.ts;
	o->seq = r->seq;
	o->gen = new_gen(f);
	o->pending = 0;
	if (open_link(f, o, r, slot))
		return -1;
	if (kx_slots_live(&f->open) > f->peak_open)
		f->peak_open = kx_slots_live(&f->open);
	sl->v = (uint64_t)slot + 1;
	/* With no bound, the sweeps wait for the end, not for the open jobs. */
	if (!f->unbounded &&
	    kx_minheap_push(&f->opens, &(struct fl_openref){kx_jobrec_start(&o->t.r), o->ts, o->seq,
	                                                    (uint32_t)slot, o->gen}))
		return -1;
	return o->t.closed ? keyed_close(f, sl, (size_t)slot, kx_jobpair_reusable(&r->e)) : 0;
}

/* A phase on a key none of whose jobs is held any more (jobs.h's
 * pairing rule, on a closed job): a reused key's DONE repeats it, another
 * phase opens a new job; on a unique key forgotten it would change or
 * count against a job already counted. 1: open a new job. */
static int keyed_unheld(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3],
                        int remembered)
{
	int reuse = kx_jobpair_reusable(&r->e), gone;

	if (reuse && r->e.phase != KX_JOB_DONE)
		return 1;
	gone = remembered ? 1 : jf_forgotten(f, k, reuse);
	if (gone < 0 || (gone && !reuse)) {
		jf_because(f,
		           reuse ? "a DONE came on a key that may have closed before the streamed "
		                   "read's window (a duplicate, or a new job)"
		                 : "an event of a GPU job came on a key at or below one forgotten "
		                   "(more than the streamed read's window after its DONE, or after "
		                   "it was taken as never done: open while more than 32768 later "
		                   "jobs completed)");
		return 0;
	}
	if (!gone)
		return 1;
	f->anom.duplicate++;
	return 0;
}

/* Phase record r in time order: jobs.h's pairing rule. */
static int keyed_phase(struct kx_jobflow *f, const struct fl_rec *r, const uint64_t k[3],
                       struct kx_keyslot *sl)
{
	struct fl_kjob *o;
	int was;

	if (sl && sl->v == KEY_PRESUMED) {
		jf_because(f, PRESUMED_EVENT);
		return 0;
	}
	if (!sl || sl->v == KEY_CLOSED)
		return keyed_unheld(f, r, k, sl != NULL) ? keyed_open(f, r, k) : 0;
	o = kx_slots_at(&f->open, (size_t)sl->v - 1);
	was = o->t.closed;
	if (kx_jobpair_phase(&o->t, &r->e, &f->anom))
		return keyed_open(f, r, k);
	if (!was && o->t.closed)
		return keyed_close(f, sl, (size_t)sl->v - 1, kx_jobpair_reusable(&r->e));
	return 0;
}

/* Record r in time order: jobs.h's pairing and waiter rules. */
static int keyed_pair(struct kx_jobflow *f, const struct fl_rec *r)
{
	struct kx_keyslot *sl;
	uint64_t k[3];

	kx_jobpair_key(&r->e, k);
	sl = kx_keymap_find(&f->keys, k[0], k[1], k[2]);
	if (kx_jobpair_kind(&r->e) == KX_JEV_PHASE)
		return keyed_phase(f, r, k, sl) || jf_forget_old(f) ? -1 : 0;
	/* A wait phase names the waiter of the job its key holds. */
	if (sl && sl->v == KEY_PRESUMED)
		jf_because(f, PRESUMED_EVENT);
	else if (sl && sl->v != KEY_CLOSED)
		kx_tjob_wait(&((struct fl_kjob *)kx_slots_at(&f->open, (size_t)sl->v - 1))->t,
		             &r->e);
	else if (sl || jf_forgotten(f, k, kx_jobpair_reusable(&r->e)))
		jf_because(f,
		           "a wait phase came for a device job already counted (a block request, "
		           "whose records have none, or a GPU job whose key closed more than the "
		           "streamed read's window, 1 s or 16384 closed keys, before it)");
	return 0;
}

/* The records whose turn has come: the window (f->lim) before the latest
 * time seen, or past its records, and those of time below upto (the
 * sweeps are to pass them: jf_release; all at the end). A record still
 * looking at its task's calls takes its candidate now: a call of the task
 * that began at or before it and comes later sends the file to memory. */
int jf_recs_release(struct kx_jobflow *f, uint64_t upto)
{
	while (f->recq.n) {
		const struct fl_recref *top = kx_minheap_top(&f->recq);
		struct fl_recref ref;
		struct fl_rec r;

		if (top->ts >= upto && f->recq.n <= f->lim.recs &&
		    !jf_out_of_window(f, top->ts, f->now))
			return 0;
		if (f->calls_upto && top->ts >= f->calls_to) {
			f->calls_to = top->ts + 1;
			if (f->calls_upto(f->calls_ctx, top->ts))
				return -1;
			continue; /* the calls let out may have moved the time on */
		}
		recq_pop(&f->recq, &ref);
		r = *(struct fl_rec *)kx_slots_at(&f->recs, ref.slot);
		((struct fl_rec *)kx_slots_at(&f->recs, ref.slot))->gen = 0;
		kx_slots_put(&f->recs, ref.slot);
		f->rel_ts = r.e.ts;
		if (r.looking) {
			struct fl_thread *t = kx_tidtab_get(&f->threads, r.e.tid, 0);

			if (t && r.e.ts > t->forced_at)
				t->forced_at = r.e.ts;
		}
		if (keyed_pair(f, &r))
			return -1;
	}
	return 0;
}

/* The task of record j in *t when j names its submitter (NULL when not),
 * with room for one more probe. 0, 1 when j is not taken (f->why set), 2
 * when a later call of the task came already (its candidate is final:
 * found among the task's recent calls, in r), or -1 when out of memory. */
static int rec_task(struct kx_jobflow *f, const struct kx_job *j, struct fl_thread **t,
                    struct fl_rec *r)
{
	*t = NULL;
	if (!kx_job_names_submitter(j))
		return 0;
	*t = kx_tidtab_get(&f->threads, j->tid, 1);
	if (!*t || jf_probe_room(f, *t))
		return -1;
	if ((*t)->last_id && (*t)->last.ts > j->ts) {
		if (jf_recent_find(*t, j->ts, &r->cand, &r->cand_id) ||
		    (*t)->nrecent < FL_RECENT) /* none of them earlier: the task had none */
			return 2;
		jf_because(f, REC_LATE);
		return 1;
	}
	return 0;
}

/* A keyed job record (QUEUE, RUN, DONE, a wait phase) of place seq, in file order. */
int jf_keyed_rec(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq)
{
	struct fl_rec *r, early = {0};
	struct fl_thread *t;
	long slot;
	int taken;

	f->gpu_seen |= kx_job_src_gpu(j->src);
	if (j->ts < f->rel_ts) {
		jf_because(f, "device job records came out of time order by more than the streamed "
		              "read's window (1 s, 16384 records waiting, or 16384 later jobs "
		              "counted)");
		return 0;
	}
	taken = rec_task(f, j, &t, &early);
	if (taken < 0 || taken == 1)
		return taken < 0 ? -1 : 0;
	slot = kx_slots_get(&f->recs);
	if (slot < 0)
		return -1;
	r = kx_slots_at(&f->recs, (size_t)slot);
	r->e = *j;
	r->seq = seq;
	r->gen = new_gen(f);
	if (taken == 2) { /* its candidate known: it looks no more */
		r->cand = early.cand;
		r->cand_id = early.cand_id;
		r->looking = 0;
	} else if (t) {
		jf_probe_add(t, r, (uint32_t)slot);
	}
	if (recq_push(&f->recq, &(struct fl_recref){j->ts, seq, (uint32_t)slot, r->gen}))
		return -1;
	if (f->recq.n > f->peak_recs)
		f->peak_recs = f->recq.n;
	return jf_recs_release(f, 0);
}

/* A GPU job (slot of f->open) closed but held until its key is forgotten,
 * counted now: its key stays remembered as counted, so that an event on a
 * unique key is a reason (on a reused one, an old gpu_scheduler fence
 * pointer no other source names, a DONE repeats it and another phase opens
 * a new job, as in memory), and so is a wait call that comes later and
 * may have been its waiter (jobflow_wait.c). 1, or -1 when out of memory. */
static int count_closed(struct kx_jobflow *f, size_t slot, struct kx_keyslot *sl)
{
	sl->v = KEY_CLOSED;
	f->early++;
	return jf_keyed_out(f, slot, 0) ? -1 : 1;
}

/* An open job (slot of f->open) never done so far: taken as never done,
 * counted as the end counts it (incomplete, reaching to the end:
 * FL_TO_END). A unique key is forgotten (a later event of it is a reason,
 * jf_forgotten); a reused one (a block sector, the old gpu_scheduler's
 * fence pointer) is kept as KEY_PRESUMED, at most lim.open of them, since
 * any event on it would change the job in memory (keyed_phase: a reason).
 * 1 when counted, 0 past that budget, -1 when out of memory. */
static int count_never_done(struct kx_jobflow *f, size_t slot, struct kx_keyslot *sl,
                            const uint64_t k[3], int reusable)
{
	if (reusable) {
		if (f->presumed_keys >= f->lim.open) {
			jf_because(f,
			           "too many block requests or old gpu_scheduler jobs taken as "
			           "never done (more than 65536 of their keys kept: the streamed "
			           "read's memory budget)");
			return 0;
		}
		f->presumed_keys++;
		sl->v = KEY_PRESUMED;
	} else if (jf_pass_key(f, k)) {
		return -1;
	}
	f->presumed++;
	return jf_keyed_out(f, slot, FL_TO_END) ? -1 : 1;
}

/*
 * The job of slot of f->open holds the sweeps while more than
 * KX_JOBFLOW_BEHIND later jobs wait: counted now, closed (a GPU job held
 * after its DONE) or never done so far (count_closed, count_never_done).
 * What would have changed it later is then a reason. A shared fence
 * source's job whose ring has learnt no driver yet waits for it as any
 * counted one does (jobflow_pend.c: past the budget, on the ring's
 * fallback device). 1 when counted, 0 when it cannot be (the caller's
 * reason), -1 when out of memory.
 */
int jf_keyed_unblock(struct kx_jobflow *f, size_t slot)
{
	struct fl_kjob *o = kx_slots_at(&f->open, slot);
	struct kx_job e = {
	        .src = o->t.r.src, .ctx = o->t.r.ctx, .seqno = o->t.r.seqno, .dev = o->t.blkdev};
	struct kx_keyslot *sl;
	uint64_t k[3];
	int reusable = kx_jobpair_reusable(&e), rc;

	if (f->unbounded || o->pending)
		return 0;
	kx_jobpair_key(&e, k);
	sl = kx_keymap_find(&f->keys, k[0], k[1], k[2]);
	if (!sl || sl->v != (uint64_t)slot + 1)
		return 0;
	f->spilling = 1; /* counted, not swept meanwhile: the caller sweeps */
	rc = o->t.closed ? count_closed(f, slot, sl) : count_never_done(f, slot, sl, k, reusable);
	f->spilling = 0;
	return rc;
}

/* Every job still held at the end: those never done are incomplete,
 * ending at end_ns; then those waiting for their ring's driver. */
int jf_keyed_end(struct kx_jobflow *f, uint64_t end_ns)
{
	f->end_ns = end_ns;
	for (size_t i = 0; i < f->open.n; i++) {
		const struct fl_kjob *o = kx_slots_at(&f->open, i);

		if (o->gen && !o->pending && jf_keyed_out(f, i, end_ns))
			return -1;
	}
	return jf_pend_flush(f);
}
