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

/* How long an exit of f waits after a call of its thread begins after it:
 * streamed KX_JOBFLOW_EXIT_WAIT_NS (an exit written late is still paired
 * in time order), a whole store's none (its records come in time order). */
static uint64_t exit_wait(const struct kx_jobflow *f)
{
	return f->whole ? 0 : KX_JOBFLOW_EXIT_WAIT_NS;
}

/* t's exits made empty (their slots reused from the start). */
static void exits_empty(struct fl_thread *t)
{
	t->ohead = t->ofrozen = t->nopen = 0;
}

/* t's frozen exits, the front of its waiting ones, resolved while they are
 * older than `older` (ns before ts; UINT64_MAX: all of them). 0, or -1 when
 * out of memory. */
static int exits_resolve(struct kx_jobflow *f, struct fl_thread *t, uint64_t ts, uint64_t older)
{
	int rc = 0;

	while (t->ohead < t->ofrozen) {
		struct fl_exit *x = &t->open[t->ohead];

		f->exits_seen++;
		if (older != UINT64_MAX && (x->e.ts >= ts || ts - x->e.ts <= older))
			break;
		if (kvm_resolve(f, t, x))
			rc = -1;
		t->ohead++;
		f->exits--;
		f->exits_frozen--;
	}
	if (t->ohead == t->nopen)
		exits_empty(t);
	return rc;
}

/* Call e of thread t, before it is t's last: the exits it starts after
 * take t's last call as their candidate (final), and those a wait before
 * it are resolved; the others take e (t->last once it is), as they read
 * it. */
int jf_kvm_call(struct kx_jobflow *f, struct fl_thread *t, const struct kx_ioctl *e)
{
	while (t->ofrozen < t->nopen && t->open[t->ofrozen].e.ts < e->ts) {
		struct fl_exit *x = &t->open[t->ofrozen++];

		f->exits_seen++;
		f->exits_frozen++;
		x->cand = t->last;
		x->cand_id = t->last_id;
	}
	return exits_resolve(f, t, e->ts, exit_wait(f));
}

/* Past the budget, every thread's frozen exits are resolved (a KVM exit
 * written after them is then a reason); still past it, a reason. 1: room
 * for one more, 0: none, -1: out of memory. */
static int exits_room(struct kx_jobflow *f)
{
	if (f->exits < f->lim.exits)
		return 1;
	for (size_t i = 0; i < f->threads.n && f->exits_frozen; i++)
		if (exits_resolve(f, kx_tidtab_at(&f->threads, i), 0, UINT64_MAX))
			return -1;
	if (f->exits < f->lim.exits)
		return 1;
	jf_because(f, "too many KVM exits waiting for their KVM_RUN (more than 65536: the "
	              "streamed read's memory budget)");
	return 0;
}

/* Does exit j (place seq) come before x in the builder's time order? */
static int before(const struct kx_job *j, uint64_t seq, const struct fl_exit *x)
{
	return j->ts != x->e.ts ? j->ts < x->e.ts : seq < x->seq;
}

/* Room for one more exit at the back of t's: the dead front reused when
 * it is at least a quarter (each exit moved 3 times at most, amortized),
 * else the array grows. 0, or -1 when out of memory. */
static int exits_slot(struct fl_thread *t)
{
	if (t->nopen < t->cap)
		return 0;
	if (t->ohead && t->ohead >= t->cap / 4) {
		memmove(t->open, t->open + t->ohead, (t->nopen - t->ohead) * sizeof(*t->open));
		t->ofrozen -= t->ohead;
		t->nopen -= t->ohead;
		t->ohead = 0;
		return 0;
	}
	return kx_grow((void **)&t->open, &t->cap, t->nopen, sizeof(*t->open));
}

/* Exit x waits on its thread t, in the builder's order (it takes a
 * thread's exits by time: the first inside a run makes its job): from the
 * back, a short walk back for one written late; frozen (its candidate
 * final) when frozen is set. 0, or -1 when out of memory. */
static int exits_put(struct kx_jobflow *f, struct fl_thread *t, const struct fl_exit *x, int frozen)
{
	int room = exits_room(f);
	size_t i;

	if (room <= 0)
		return room;
	if (frozen && x->e.ts < t->resolved_ts) { /* a later exit resolved to make room */
		jf_because(f, KVM_LATE);
		return 0;
	}
	if (exits_slot(t))
		return -1;
	for (i = t->nopen++; i > t->ohead && before(&x->e, x->seq, &t->open[i - 1]); i--) {
		f->exits_seen++;
		t->open[i] = t->open[i - 1];
	}
	t->open[i] = *x;
	if (frozen) {
		t->ofrozen++;
		f->exits_frozen++;
	}
	f->exits++;
	return 0;
}

/* KVM exit j (place seq) after a later call of its thread t came: its
 * candidate is final, the last of t's recent calls begun at or before it;
 * it waits with t's exits not resolved yet if no later exit of t was (a
 * whole store's: resolved at once). */
static int kvm_late(struct kx_jobflow *f, struct fl_thread *t, const struct kx_job *j, uint64_t seq)
{
	struct fl_exit x = {.e = *j, .seq = seq};

	if (j->ts < t->resolved_ts ||
	    (!jf_recent_find(t, j->ts, &x.cand, &x.cand_id) && t->nrecent == FL_RECENT)) {
		jf_because(f, KVM_LATE);
		return 0;
	}
	return f->whole ? kvm_resolve(f, t, &x) : exits_put(f, t, &x, 1);
}

/* KVM exit j (place seq): it waits on its thread for the call that holds
 * it, its candidate t's last call until a later one comes. */
int jf_kvm_exit(struct kx_jobflow *f, const struct kx_job *j, uint64_t seq)
{
	struct fl_thread *t = kx_tidtab_get(&f->threads, kx_kvm_tid(j), 1);
	struct fl_exit x = {.e = *j, .seq = seq};

	if (!t)
		return -1;
	if (t->last_id && t->last.ts > j->ts)
		return kvm_late(f, t, j, seq);
	return exits_put(f, t, &x, 0);
}

/* Every exit still waiting, with what its thread gave, in order. */
int jf_close_exits(struct kx_jobflow *f)
{
	for (size_t i = 0; i < f->threads.n; i++) {
		struct fl_thread *t = kx_tidtab_at(&f->threads, i);

		for (; t->ofrozen < t->nopen; t->ofrozen++) {
			f->exits_frozen++;
			t->open[t->ofrozen].cand = t->last;
			t->open[t->ofrozen].cand_id = t->last_id;
		}
		if (exits_resolve(f, t, 0, UINT64_MAX))
			return -1;
	}
	return 0;
}
