/*
 * The streamed device timelines (contract: jobflow.h): the feed of calls
 * and job records to their parts (jobflow_int.h), the end of the stream,
 * and a struct kx_jobflow's lifetime.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"

void jf_because(struct kx_jobflow *f, const char *why)
{
	if (!f->why)
		f->why = why;
}

int jf_out_of_window(const struct kx_jobflow *f, uint64_t ts, uint64_t ref)
{
	return ref > ts && ref - ts > f->lim.window_ns;
}

int jf_recent_find(const struct fl_thread *t, uint64_t ts, struct kx_ioctl *e, uint64_t *id)
{
	int found = 0;

	for (uint32_t k = t->nrecent; k > 0; k--) {
		uint32_t i = (t->rhead + k - 1) % FL_RECENT;

		if (found && t->recent[i].ts != e->ts)
			break;
		/* At one start the longest, the last of those in order. */
		if (found ? t->recent[i].dur > e->dur : t->recent[i].ts <= ts) {
			*e = t->recent[i];
			*id = t->recent_id[i];
			found = 1;
		}
	}
	return found;
}

/* Call e (id) is now t's last. */
static void recent_add(struct fl_thread *t, const struct kx_ioctl *e, uint64_t id)
{
	uint32_t i = (t->rhead + t->nrecent) % FL_RECENT;

	if (t->nrecent == FL_RECENT)
		t->rhead = (t->rhead + 1) % FL_RECENT;
	else
		t->nrecent++;
	t->recent[i] = *e;
	t->recent_id[i] = id;
}

int64_t jf_call_ref(const struct kx_jobflow *f, const struct kx_ioctl *e, uint64_t id)
{
	(void)e;
	return f->whole ? (int64_t)(id - 1) : (int64_t)id;
}

void kx_jobflow_init(struct kx_jobflow *f, const struct kx_capinfo *ci)
{
	memset(f, 0, sizeof(*f));
	f->devs.ci = ci;
	f->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct fl_thread);
	f->names = (struct kx_keymap)KX_KEYMAP_INIT;
	jf_sweep_init(f);
	jf_keyed_init(f);
	f->lo = UINT64_MAX;
	f->pend_max = KX_JOBFLOW_PENDING;
	f->lim = (struct kx_jobflow_lim){KX_JOBFLOW_WINDOW_NS, KX_JOBFLOW_HELD,  KX_JOBFLOW_EXACT,
	                                 KX_JOBFLOW_EXITS,     KX_JOBFLOW_RECS,  KX_JOBFLOW_OPEN,
	                                 KX_JOBFLOW_CLOSED,    KX_JOBFLOW_WAITS, KX_JOBFLOW_BEHIND};
}

void kx_jobflow_init_whole(struct kx_jobflow *f, const struct kx_capinfo *ci,
                           const struct kx_jobflow_sink *sink)
{
	kx_jobflow_init(f, ci);
	f->whole = 1;
	f->sink = sink;
	f->lim.exact = SIZE_MAX; /* the jobs are kept: their rows are exact */
	f->lim.recs = 0;         /* records come in time order: none waits for an earlier one */
}

void kx_jobflow_unbound(struct kx_jobflow *f)
{
	f->unbounded = 1;
	f->pend_max = SIZE_MAX;
	f->wprune = SIZE_MAX;
	f->lim = (struct kx_jobflow_lim){UINT64_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX, 0,
	                                 SIZE_MAX,   SIZE_MAX, SIZE_MAX, SIZE_MAX};
}

static void span(struct kx_jobflow *f, uint64_t a, uint64_t b)
{
	if (a < f->lo)
		f->lo = a;
	if (b > f->hi)
		f->hi = b;
	if (b > f->now)
		f->now = b;
}

/* ---- the feed ---- */

/* Call e, its id (> 0) naming it; 0: streamed, its number among its
 * thread's calls names it (its place among all calls orders the waiters). */
static int feed_call(struct kx_jobflow *f, const struct kx_ioctl *e, uint64_t id)
{
	uint64_t place = id ? id : f->calls + 1, cid;
	struct fl_thread *t;
	struct kx_ioctl c;

	kx_jobflow_ioctl_alone(f, e);
	t = kx_tidtab_get(&f->threads, e->tid, 1);
	if (!t)
		return -1;
	t->ncalls++;
	if (!id)
		id = t->ncalls;
	/* Streamed, each thread's calls come in start order, the longer first:
	 * at one start the longest stays the candidate (the last to return,
	 * the last in the file: the one a whole store's feed, by time and then
	 * index, gives). */
	if (!f->whole && t->last_id && e->ts == t->last.ts && e->dur < t->last.dur) {
		c = t->last;
		cid = t->last_id;
	} else {
		c = *e;
		cid = id;
	}
	if (t->nopen && jf_kvm_call(f, t, &c))
		return -1;
	if (t->forced_at && e->ts <= t->forced_at)
		jf_because(f,
		           "a call came after a later job record of its task was paired (it came "
		           "more than the streamed read's window, 1 s or 16384 records, after "
		           "that record)");
	if (t->nprobes)
		jf_probe_call(f, t, &c, cid);
	if (jf_wait_call(f, e, place))
		return -1;
	t->last = c;
	t->last_id = cid;
	recent_add(t, e, id);
	return 0;
}

int kx_jobflow_ioctl(struct kx_jobflow *f, const struct kx_ioctl *e)
{
	return feed_call(f, e, 0);
}

int kx_jobflow_ioctl_at(struct kx_jobflow *f, const struct kx_ioctl *e, size_t idx)
{
	return feed_call(f, e, (uint64_t)idx + 1);
}

void kx_jobflow_ioctl_alone(struct kx_jobflow *f, const struct kx_ioctl *e)
{
	span(f, e->ts, kx_ioctl_end(e));
	f->calls++;
	f->runs += kx_kvm_run(e) != 0;
}

int kx_jobflow_job(struct kx_jobflow *f, const struct kx_job *j)
{
	uint64_t seq = f->jobrecs++;

	span(f, j->ts, j->ts);
	switch (kx_jobpair_kind(j)) {
	case KX_JEV_KVM:
		f->has_kvm = 1;
		/* Intermediate exits are not jobs. */
		return j->phase == KX_JOB_DONE ? jf_kvm_exit(f, j, seq) : 0;
	case KX_JEV_UNKNOWN:
		f->anom.unknown++;
		return 0;
	case KX_JEV_DEP:
		return 0;
	default:
		return jf_keyed_rec(f, j, seq);
	}
}

uint64_t kx_jobflow_linked_to(const struct kx_jobflow *f)
{
	return f->has_kvm ? 0 : f->rel_ts;
}

/* o's span: the capture's, else the records'. */
static void capture_span(const struct kx_jobflow *f, struct kx_jobs *o)
{
	const struct kx_capinfo *ci = f->devs.ci;

	o->start_ns =
	        ci && ci->start_mono_ns ? ci->start_mono_ns : (f->lo == UINT64_MAX ? 0 : f->lo);
	o->end_ns = ci && ci->stop_mono_ns > o->start_ns ? ci->stop_mono_ns : f->hi;
	if (o->end_ns < o->start_ns)
		o->end_ns = o->start_ns;
}

struct kx_jobs *kx_jobflow_finish(struct kx_jobflow *f, const struct kx_store *mem,
                                  struct kx_stats *rows)
{
	struct kx_jobs *o = calloc(1, sizeof(*o));

	if (!o || jf_recs_release(f, UINT64_MAX) || jf_close_exits(f))
		goto fail;
	capture_span(f, o);
	/* A job taken as never done reaches to the end, read as the capture's
	 * end at or after every record (jobflow_int.h's FL_TO_END). */
	if (f->presumed && o->end_ns < f->hi)
		jf_because(f, "a GPU job was taken as never done while streaming, and the "
		              "capture's stated end comes before its last records");
	if (jf_keyed_end(f, o->end_ns) || jf_release(f, 1))
		goto fail;
	if (f->why || jf_result(f, o, mem, rows))
		goto fail;
	return o;
fail:
	kx_jobs_free(o);
	return NULL;
}

void kx_jobflow_free(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->threads.n; i++) {
		struct fl_thread *t = kx_tidtab_at(&f->threads, i);

		free(t->open);
		free(t->probes);
	}
	jf_keyed_free(f);
	free(f->waits);
	kx_keymap_free(&f->names);
	kx_tidtab_free(&f->threads);
	jf_sweep_free(f);
	for (size_t i = 0; i < f->devs.n; i++)
		free(f->devs.devs[i].mem);
	free(f->devs.devs);
	kx_jobdevtab_free(&f->devs);
	memset(f, 0, sizeof(*f));
}
