/*
 * Captures with annotation ranges around calls that submit device jobs
 * (test_wread, the differential test's generator tests/tools/kxp_gen): each
 * thread's steps, most a range "step" holding a range "inner" (every other
 * step) around a submitting call (an xe exec queueing a job: QUEUE, RUN and
 * DONE records; kvm: a KVM_RUN with an exit), then a call with no job;
 * every fourth step outside any range; jobs done long after their ranges
 * ended (every fifth 40 us, every 97th 120 ms after), some never done; job
 * records up to lag ns late; thread 0's last step's ranges (if any) left
 * open; on request ranges that begin only after the first steps, jobs that
 * begin only after them, a call inside deeper ranges, every job done,
 * more calls without jobs inside each step's ranges. Records are written
 * as a recorder writes them: a call at its return, an annotation or job
 * event at its time (plus its lag). aj_rec, aj_add and aj_write also write
 * test_report_stream's hand-made block, fence and KVM captures (aj_write_ci:
 * with a header of its own).
 */
#ifndef KXP_GEN_ANNJOBS_H
#define KXP_GEN_ANNJOBS_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/kxp.h"
#include "model/capinfo.h"
#include "registry/drivers.h"

#define AJ_XE_EXEC  0x40386449u /* DRM_IOCTL_XE_EXEC */
#define AJ_XE_WAIT  0xc048644au /* DRM_IOCTL_XE_WAIT_USER_FENCE */
#define AJ_XE_QUERY 0xc0286440u /* DRM_IOCTL_XE_DEVICE_QUERY */

/* A record and when the recorder writes it. */
struct aj_rec {
	uint64_t at;
	uint64_t seq; /* the order made (ties of at) */
	int kind;     /* 0 ioctl, 1 job, 2 annotation */
	struct kx_ioctl e;
	struct kx_job j;
	struct kx_ann a;
	const char *name; /* the annotation's (NULL: "") */
};

struct aj_list {
	struct aj_rec *v;
	size_t n, cap;
};

static inline void aj_add(struct aj_list *l, struct aj_rec *r)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->v = realloc(l->v, l->cap * sizeof(*l->v));
		if (!l->v)
			abort();
	}
	r->seq = l->n;
	l->v[l->n++] = *r;
}

/* A thread's range event (name: a push's) at ts. */
static inline void aj_ann(struct aj_list *l, uint32_t pid, uint32_t tid, int what, uint64_t ts,
                          uint64_t begin, uint16_t depth, const char *name)
{
	struct aj_rec r = {.at = ts, .kind = 2, .name = name};

	r.a = (struct kx_ann){.tid = tid,
	                      .pid = pid,
	                      .ts = ts,
	                      .begin = begin,
	                      .depth = depth,
	                      .what = (uint8_t)what};
	aj_add(l, &r);
}

static inline void aj_call(struct aj_list *l, uint32_t pid, uint32_t tid, uint64_t ts, uint64_t dur,
                           unsigned int drv, uint32_t cmd)
{
	struct aj_rec r = {.at = ts + dur};

	r.e = (struct kx_ioctl){.ts = ts,
	                        .dur = dur,
	                        .pid = pid,
	                        .tid = tid,
	                        .dev = drv == KX_DRV_XE ? 226u << 20 | 128 : 10u << 20 | 232,
	                        .drv = (uint8_t)drv,
	                        .cmd = cmd,
	                        .arg_off = KX_NO_ARG};
	aj_add(l, &r);
}

static inline void aj_job(struct aj_list *l, const struct kx_job *j, uint64_t lag)
{
	struct aj_rec r = {.at = j->ts + lag, .kind = 1, .j = *j};

	aj_add(l, &r);
}

/* How aj_gen makes a capture. */
struct aj_opts {
	int kvm;           /* KVM_RUNs with exits, else xe execs with jobs */
	int nthreads;      /* threads, from tid 400 */
	uint64_t n;        /* steps a thread */
	uint64_t lag;      /* ns: job records written up to this late */
	uint64_t bare;     /* each thread's first steps in no range (annotations after jobs) */
	uint64_t no_jobs;  /* each thread's first steps submit no job (jobs after annotations) */
	uint64_t t0;       /* ns, the first step's start */
	unsigned int deep; /* ranges around thread 0's first submitting call (0: as the rest) */
	int done_all;      /* every job done (else some never are) */
	unsigned int more; /* calls without jobs a step besides its wait call, inside its ranges
	                      (xe device queries; kvm: as its wait call) */
};

/* One step of thread k (tid) from t: its records; the next step's start. */
static inline uint64_t aj_step(struct aj_list *l, const struct aj_opts *o, int k, uint64_t i,
                               uint64_t t)
{
	uint32_t pid = o->kvm ? 7 : 60, tid = 400 + (uint32_t)k;
	unsigned int drv = o->kvm ? KX_DRV_KVM : KX_DRV_XE;
	uint64_t d = 4000 + (i * 7919 + (uint64_t)k * 131) % 30000, c = t + 100;
	uint64_t jit = o->lag ? (i * 2654435761u) % o->lag : 0;
	int ranged = i >= o->bare && i % 4 != 3, inner = ranged && i % 2 == 0;
	int left = k == 0 && i + 1 == o->n;
	unsigned int deep = k == 0 && i == o->bare && o->deep ? o->deep : 0;
	uint64_t x = (uint64_t)o->more * 1100; /* ns, the more calls' time */

	if (ranged)
		aj_ann(l, pid, tid, KX_ANN_PUSH, t, t, 1, "step");
	if (inner)
		aj_ann(l, pid, tid, KX_ANN_PUSH, t + 10, t + 10, 2, "inner");
	for (unsigned int e = 0; e < deep; e++)
		aj_ann(l, pid, tid, KX_ANN_PUSH, t + 20 + e, t + 20 + e, (uint16_t)(3 + e), "deep");
	aj_call(l, pid, tid, c, d, drv, o->kvm ? KX_KVM_RUN_CMD : AJ_XE_EXEC);
	if (i < o->no_jobs) {
	} else if (o->kvm) {
		struct kx_job j = {.ts = c + d - 100 - i % 7,
		                   .ctx = tid,
		                   .pid = pid,
		                   .tid = tid,
		                   .src = KX_JOB_SRC_KVM,
		                   .phase = KX_JOB_DONE};

		if (i % 9 != 4) /* a run without an exit */
			aj_job(l, &j, 0);
	} else {
		uint64_t done =
		        c + d + 5000 + (i % 5 == 1 ? 40000 : 0) + (i % 97 == 50 ? 120000000 : 0);
		struct kx_job j = {.ts = c + d / 4,
		                   .ctx = 2 + (uint64_t)k,
		                   .seqno = i + 1,
		                   .pid = pid,
		                   .tid = tid,
		                   .src = KX_JOB_SRC_XE,
		                   .phase = KX_JOB_QUEUE};

		aj_job(l, &j, jit % (d / 2));
		j.pid = j.tid = 0;
		j.ts = c + d / 2, j.phase = KX_JOB_RUN;
		aj_job(l, &j, jit / 2);
		j.ts = done, j.phase = KX_JOB_DONE;
		if (i % 11 != 6 || o->done_all) /* a job never done: no device time */
			aj_job(l, &j, jit / 3);
	}
	aj_call(l, pid, tid, c + d + 50, 1000, drv, o->kvm ? 0xae81u : AJ_XE_WAIT);
	for (unsigned int e = 0; e < o->more; e++)
		aj_call(l, pid, tid, c + d + 1100 + e * 1100, 1000, drv,
		        o->kvm ? 0xae81u : AJ_XE_QUERY);
	for (unsigned int e = deep; e > 0; e--)
		aj_ann(l, pid, tid, KX_ANN_POP, c + d + 1100 + x + deep - e, t + 19 + e,
		       (uint16_t)(2 + e), "");
	if (inner && !left)
		aj_ann(l, pid, tid, KX_ANN_POP, c + d + 2000 + x, t + 10, 2, "");
	if (ranged && !left)
		aj_ann(l, pid, tid, KX_ANN_POP, c + d + 3000 + x, t, 1, "");
	return t + d + 4000 + x + i % 300;
}

static inline void aj_gen(struct aj_list *l, const struct aj_opts *o)
{
	for (int k = 0; k < o->nthreads; k++) {
		uint64_t t = o->t0 + 5000 + (uint64_t)k * 1313;

		for (uint64_t i = 0; i < o->n; i++)
			t = aj_step(l, o, k, i, t);
	}
}

static inline int aj_cmp(const void *pa, const void *pb)
{
	const struct aj_rec *a = pa, *b = pb;

	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	if ((a->kind == 0) != (b->kind == 0))
		return (a->kind == 0) - (b->kind == 0); /* an event inside a call first */
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The records in the order they are written; l emptied. 0 when written. */
static inline int aj_write_ci(const char *path, struct aj_list *l, const struct kx_capinfo *ci)
{
	char err[256];
	struct kx_kxp_writer *w = kx_kxp_create(path, ci, err, sizeof(err));
	int rc = 0;

	if (!w)
		return -1;
	qsort(l->v, l->n, sizeof(*l->v), aj_cmp);
	for (size_t i = 0; i < l->n; i++) {
		const struct aj_rec *r = &l->v[i];

		if (r->kind == 1)
			rc |= kx_kxp_add_job(w, &r->j);
		else if (r->kind == 2)
			rc |= kx_kxp_add_ann(w, &r->a, r->name ? r->name : "", "");
		else
			rc |= kx_kxp_add_ioctl(w, &r->e, NULL);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
	return kx_kxp_close(w, ci, err, sizeof(err)) || rc;
}

/* The same with a header that says nothing (no span, no host). */
static inline int aj_write(const char *path, struct aj_list *l)
{
	static struct kx_capinfo ci;

	return aj_write_ci(path, l, &ci);
}

/* aj_gen's capture written to path. 0 when written. */
static inline int aj_write_gen(const char *path, const struct aj_opts *o)
{
	struct aj_list l = {0};

	aj_gen(&l, o);
	return aj_write(path, &l);
}

/* A VM: vCPU thread 100's n KVM_RUNs, 3 us apart from t0, each with an
 * exit (a KVM job), and its disk's block requests on "vda" (RUN, DONE
 * after done_ns), one every every-th run: many jobs with no key beside
 * few records that wait for earlier ones. */
static inline void aj_vm_disk(struct aj_list *l, uint64_t t0, uint64_t n, uint64_t every,
                              uint64_t done_ns)
{
	uint64_t t = t0;

	for (uint64_t i = 0; i < n; i++, t += 3000) {
		struct kx_job x = {.ts = t + 1500,
		                   .ctx = 100,
		                   .pid = 7,
		                   .tid = 100,
		                   .src = KX_JOB_SRC_KVM,
		                   .phase = KX_JOB_DONE};

		aj_call(l, 7, 100, t, 2000, KX_DRV_KVM, KX_KVM_RUN_CMD);
		aj_job(l, &x, 0);
		if (i % every)
			continue;
		x = (struct kx_job){.ts = t + 100,
		                    .seqno = 9000000 + i,
		                    .aux = 4096,
		                    .dev = 7u << 20,
		                    .src = KX_JOB_SRC_BLOCK,
		                    .phase = KX_JOB_RUN};
		snprintf(x.ring, sizeof(x.ring), "vda");
		aj_job(l, &x, 0);
		x.ts = t + 100 + done_ns;
		x.phase = KX_JOB_DONE;
		aj_job(l, &x, 0);
	}
}

#endif /* KXP_GEN_ANNJOBS_H */
