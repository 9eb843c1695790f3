/*
 * The streamed device timelines' KVM jobs (jobflow_int.h): a KVM exit
 * paired with the KVM_RUN of its thread that holds it, once its thread's
 * last call entered at or before it is known.
 */
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"
#include "util/grow.h"

_Static_assert(KX_JOBFLOW_EXITS == 65536u, "the reason's message names the bound");

/* The job of exit x, inside the KVM_RUN io (NULL: in none). */
static int kvm_job(struct kx_jobflow *f, const struct fl_exit *x, const struct kx_ioctl *io)
{
	struct kx_tjob t;

	kx_tjob_kvm(&t, &x->e, io, io ? jf_call_ref(f, io, x->cand_id) : -1);
	return jf_job_out(f, &t, x->e.ts, x->seq, 0, 0, 0,
	                  "a KVM job started before jobs already counted in start order (its "
	                  "KVM_RUN ran longer than the streamed read's window of 1 s, or 16384 "
	                  "later jobs were made meanwhile)");
}

/* Exit x of thread t, its thread's last call entered at or before it now
 * known (x->cand): jobs.h's KVM rule. */
static int kvm_resolve(struct kx_jobflow *f, struct fl_thread *t, const struct fl_exit *x)
{
	if (x->e.ts > t->resolved_ts)
		t->resolved_ts = x->e.ts;
	if (!x->cand_id || !kx_kvm_run_holds(&x->cand, x->e.ts))
		return kvm_job(f, x, NULL);
	if (x->cand_id == t->used_id) {
		f->anom.duplicate++;
		return 0;
	}
	t->used_id = x->cand_id;
	f->runs_used++;
	return kvm_job(f, x, &x->cand);
}

/* Call e (id) of thread t: the exits it starts after are resolved, the
 * others now look at it. */
int jf_kvm_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e, uint64_t id)
{
	size_t keep = 0;
	int rc = 0;

	for (size_t i = 0; i < t->nopen; i++) {
		struct fl_exit *x = &t->open[i];

		if (e->ts <= x->e.ts) {
			x->cand = *e;
			x->cand_id = id;
			t->open[keep++] = *x;
			continue;
		}
		if (!rc && kvm_resolve(f, t, x))
			rc = -1;
		f->exits--;
	}
	t->nopen = keep;
	return rc;
}

/* Does exit j (place seq) come before x in the builder's time order? */
static int before(const struct kx_job *j, uint64_t seq, const struct fl_exit *x)
{
	return j->ts != x->e.ts ? j->ts < x->e.ts : seq < x->seq;
}

/* KVM exit j (place seq) after a later call of its thread t came: its
 * candidate is final, the last of t's recent calls begun at or before it,
 * and it is resolved now if no later exit of t was (the builder's order). */
static int kvm_late(struct kx_jobflow *f, struct fl_thread *t, const struct kx_job *j, uint64_t seq)
{
	struct fl_exit x = {.e = *j, .seq = seq};

	if (j->ts < t->resolved_ts ||
	    (!jf_recent_find(t, j->ts, &x.cand, &x.cand_id) && t->nrecent == FL_RECENT)) {
		jf_because(f, KVM_LATE);
		return 0;
	}
	return kvm_resolve(f, t, &x);
}

/* KVM exit j (place seq): it waits on its thread for the call that holds it. */
int jf_kvm_exit(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq)
{
	struct fl_thread *t = kx_tidtab_get(&f->threads, kx_kvm_tid(j), 1);
	struct fl_exit *x;
	size_t i;

	if (!t)
		return -1;
	if (t->last_id && t->last.ts > j->ts)
		return kvm_late(f, t, j, seq);
	if (f->exits >= f->lim.exits) {
		jf_because(f, "too many KVM exits waiting for their KVM_RUN (more than 65536: the "
		              "streamed read's memory budget)");
		return 0;
	}
	if (kx_grow((void **)&t->open, &t->cap, t->nopen, sizeof(*t->open)))
		return -1;
	/* The builder takes a thread's exits by time: the first inside a run
	 * makes its job. They wait so ordered (their calls to come resolve them). */
	for (i = t->nopen++; i && before(j, seq, &t->open[i - 1]); i--)
		t->open[i] = t->open[i - 1];
	x = &t->open[i];
	memset(x, 0, sizeof(*x));
	x->e = *j;
	x->seq = seq;
	if (t->last_id) {
		x->cand = t->last;
		x->cand_id = t->last_id;
	}
	f->exits++;
	return 0;
}

/* Every exit still open, with what its thread gave. */
int jf_close_exits(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->threads.n; i++) {
		struct fl_thread *t = kx_tidtab_at(&f->threads, i);

		for (size_t k = 0; k < t->nopen; k++)
			if (kvm_resolve(f, t, &t->open[k]))
				return -1;
		t->nopen = 0;
	}
	f->exits = 0;
	return 0;
}
