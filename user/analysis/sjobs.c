/*
 * The records the device timelines need, kept as a file streams by
 * (contract: sjobs.h): each task's last ioctl and the latest job record
 * time a later ioctl of it may answer.
 */
#include <string.h>

#include "analysis/jobpair.h"
#include "analysis/sjobs.h"
#include "registry/drivers.h"
#include "util/grow.h"

struct kx_sjob_thread {
	struct kx_ioctl last; /* its last ioctl record */
	int has_last, last_kept;
	uint64_t pend_at; /* ns: a later ioctl of it entered at or before this is kept (0: none) */
};

void kx_sjobs_init(struct kx_sjobs *s, struct kx_store *side)
{
	memset(s, 0, sizeof(*s));
	s->side = side;
	s->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct kx_sjob_thread);
}

static void because(struct kx_sjobs *s, const char *why)
{
	if (!s->why)
		s->why = why;
}

static struct kx_sjob_thread *thread_get(struct kx_sjobs *s, uint32_t tid)
{
	return kx_tidtab_get(&s->threads, tid, 1);
}

/* Kept; a refusal (the store's budget) is counted by the store. */
static void keep(struct kx_sjobs *s, const struct kx_ioctl *e, const uint8_t *arg)
{
	if (!kx_store_add_ioctl(s->side, e, arg))
		s->kept++;
}

/* A KVM_RUN or a GPU driver's wait ioctl: the timelines look at every one. 0/1, -1 on OOM. */
static int always_needed(struct kx_sjobs *s, const struct kx_ioctl *e)
{
	int wait = 0;

	if (e->drv == KX_DRV_KVM && e->cmd == KX_KVM_RUN_CMD)
		return 1;
	if (!kx_drv_gpu(e->drv))
		return 0;
	return kx_wait_ioctl(&s->names, e, &wait) ? -1 : wait;
}

static void span_note(struct kx_sjobs *s, const struct kx_ioctl *e)
{
	if (!s->any || e->ts < s->first.ts)
		s->first = *e;
	if (!s->any || e->ts + e->dur > s->last.ts + s->last.dur)
		s->last = *e;
	s->any = 1;
}

int kx_sjobs_ioctl(struct kx_sjobs *s, const struct kx_ioctl *e, const uint8_t *arg, int mem)
{
	struct kx_sjob_thread *t = thread_get(s, e->tid);
	int need = always_needed(s, e), k = mem;

	if (!t || need < 0)
		return -1;
	if (need && s->have_jobs)
		k = 1;
	else if (need)
		s->passed = 1;
	if (t->pend_at && e->ts <= t->pend_at)
		k = 1; /* the call a job record of this task came from */
	if (k)
		keep(s, e, arg);
	t->last = *e;
	t->has_last = 1;
	t->last_kept = k;
	span_note(s, e);
	return 0;
}

/* The task (and time) whose ioctl the timelines link job record j to;
 * 0 when j is no link's anchor: only a QUEUE, a block request's RUN
 * (issued directly, in its task) and a KVM exit (in its KVM_RUN) are. */
static uint32_t anchor_tid(const struct kx_job *j)
{
	if (j->src == KX_JOB_SRC_KVM)
		return j->phase == KX_JOB_DONE ? kx_kvm_tid(j) : 0;
	if (j->phase == KX_JOB_QUEUE || (j->phase == KX_JOB_RUN && j->src == KX_JOB_SRC_BLOCK))
		return j->tid;
	return 0;
}

/* Is j a KVM exit that is not a job's end? The timelines skip those
 * (KVM_RUN is the job); only the first says the capture has KVM jobs. */
static int skipped_exit(struct kx_sjobs *s, const struct kx_job *j)
{
	if (kx_jobpair_kind(j) != KX_JEV_KVM || j->phase == KX_JOB_DONE)
		return 0;
	if (!s->kvm_seen) {
		s->kvm_seen = 1;
		return 0;
	}
	return 1;
}

/* The earliest and latest job records (the capture's span) and whether they are kept. */
static void jspan_note(struct kx_sjobs *s, const struct kx_job *j, int kept)
{
	if (!s->jobs || j->ts < s->jfirst.ts) {
		s->jfirst = *j;
		s->jfirst_seq = s->jobs;
		s->jfirst_kept = kept;
	}
	if (!s->jobs || j->ts > s->jlast.ts) {
		s->jlast = *j;
		s->jlast_seq = s->jobs;
		s->jlast_kept = kept;
	}
}

int kx_sjobs_job(struct kx_sjobs *s, const struct kx_job *j)
{
	uint32_t tid = anchor_tid(j);
	struct kx_sjob_thread *t;
	int skip = skipped_exit(s, j);

	if (s->passed && !s->have_jobs)
		because(s, "device jobs began after calls their timelines need had gone by");
	s->have_jobs = 1;
	jspan_note(s, j, !skip);
	s->jobs++;
	if (!skip && !kx_store_add_job(s->side, j))
		s->kept_jobs++; /* a refusal is counted by the store */
	if (!tid)
		return 0;
	t = thread_get(s, tid);
	if (!t)
		return -1;
	if (t->has_last && t->last.ts > j->ts)
		because(s, "a job record came after a later call of its task");
	else if (t->has_last && !t->last_kept) {
		keep(s, &t->last, NULL);
		t->last_kept = 1;
	}
	if (j->ts > t->pend_at)
		t->pend_at = j->ts;
	return 0;
}

/* Is an ioctl of e's thread and start kept? */
static int kept(const struct kx_sjobs *s, const struct kx_ioctl *e)
{
	for (size_t i = 0; i < kx_store_ioctl_count(s->side); i++) {
		const struct kx_ioctl *k = kx_store_ioctl(s->side, i);

		if (k->tid == e->tid && k->ts == e->ts)
			return 1;
	}
	return 0;
}

int kx_sjobs_finish(struct kx_sjobs *s)
{
	if (!s->have_jobs)
		return 0;
	if (s->any && !kept(s, &s->first))
		keep(s, &s->first, NULL);
	if (s->any && !kept(s, &s->last))
		keep(s, &s->last, NULL);
	if (!s->jfirst_kept && !kx_store_add_job(s->side, &s->jfirst))
		s->kept_jobs++;
	if (!s->jlast_kept && s->jlast_seq != s->jfirst_seq &&
	    !kx_store_add_job(s->side, &s->jlast))
		s->kept_jobs++;
	return 0;
}

void kx_sjobs_free(struct kx_sjobs *s)
{
	kx_keymap_free(&s->names);
	kx_tidtab_free(&s->threads);
}
