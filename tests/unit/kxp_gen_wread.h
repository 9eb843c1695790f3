/*
 * Captures of the windowed-read tests (test_wread, the differential test's
 * generator tests/tools/kxp_gen): THREADS threads calling back to back, a
 * few calls long (up to 300 ms, so their records come late), written in the
 * order they returned, with tasks, CPU samples and argument copies; on
 * request a job record, an overlapping call, nested and cross-thread
 * annotation ranges (some ending inside a call of their thread), marks,
 * counter records and KVM memory slot calls.
 */
#ifndef KXP_GEN_WREAD_H
#define KXP_GEN_WREAD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/kxp.h"
#include "kxp_gen.h"
#include "model/store.h"
#include "registry/drivers.h"

#define T0      5000000000ULL /* ns: the captures' start */
#define THREADS 6

/* One call of a thread, written when it returns. */
struct call {
	struct kx_ioctl e;
	uint8_t arg[32];
};

static inline int end_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;
	uint64_t ex = x->e.ts + x->e.dur, ey = y->e.ts + y->e.dur;

	return ex < ey ? -1 : ex > ey;
}

/* Thread by thread (a writer no recorder is): far from the order of time. */
static inline int tid_cmp(const void *a, const void *b)
{
	const struct call *x = a, *y = b;

	if (x->e.tid != y->e.tid)
		return x->e.tid < y->e.tid ? -1 : 1;
	return end_cmp(a, b);
}

static inline void capinfo(struct kx_capinfo *ci, uint64_t stop)
{
	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	snprintf(ci->kernel, sizeof(ci->kernel), "6.18.0-test");
	ci->clock_start.offset_ns = -1000000000ll;
	ci->clock_start.mono_ns = T0;
	ci->start_mono_ns = T0;
	ci->ndevices = 1;
	ci->devices[0] = (struct kx_device){(10u << 20) | 232, 1, 3, 0, "/dev/kvm", "kvm"};
	ci->all_pids = 1;
	ci->clock_stop = ci->clock_start;
	ci->clock_stop.mono_ns = stop;
	ci->stop_mono_ns = stop;
}

/* A thread of the first process that makes no call, only annotations. */
#define LONE_TID 799

/* An annotation record and its strings. */
struct annrec {
	struct kx_ann a;
	const char *name, *cat;
};

static inline void ann_put(struct annrec *r, size_t *n, unsigned int what, uint64_t ts,
                           uint32_t tid, uint16_t depth, uint64_t begin, uint64_t id,
                           const char *name)
{
	struct annrec *x = &r[(*n)++];

	memset(x, 0, sizeof(*x));
	x->a = (struct kx_ann){.ts = ts,
	                       .begin = begin ? begin : ts,
	                       .id = id,
	                       .tid = tid,
	                       .pid = tid == LONE_TID ? 700 : 700 + (tid - 700) / 20,
	                       .what = (uint16_t)what,
	                       .depth = depth};
	x->name = name ? name : "";
	x->cat = name && !strcmp(name, "layer") ? "nvtx" : "";
}

/* Open ranges of one thread while its calls are annotated. */
struct ann_thread {
	uint64_t outer, inner; /* ns, their pushes; 0: not open */
	uint64_t prev_ts;      /* ns, the start of its last call */
	uint64_t prev_end;     /* ns, the end of its last call */
	int prev_in;           /* its last call started inside the one before */
	size_t k;              /* its calls so far */
};

/* Where the inner range that ends before the thread's k-th call pops: in
 * the gap, or (cuts: every 32nd call, and after a call that started inside
 * the one before) halfway between its push or the last call's start,
 * whichever is later, and that call's end, so that the call spans the
 * range's end (the calls' timeline cuts it there; a call that started
 * inside the one before, which the rule shortens, is cut shorter, and so is
 * the one before when the range holds it). */
static inline uint64_t inner_pop(const struct ann_thread *t, uint64_t base, int cuts)
{
	uint64_t lo = t->prev_ts > t->inner ? t->prev_ts : t->inner;

	if (!cuts || (t->k % 32 != 16 && !t->prev_in) || lo + 2 >= t->prev_end)
		return base + 100;
	return lo + (t->prev_end - lo) / 2;
}

/* The records in the gap before call e, the thread's k-th: the inner and
 * outer ranges that end, those that begin ("step" around 8 calls, "layer"
 * around 2), a mark every 5 calls. With touch, the 10th call's "layer"
 * begins at the nanosecond the call before it ended; with cuts, some
 * "layer" ends inside the call before (inner_pop). */
static inline void ann_gap(struct annrec *r, size_t *n, struct ann_thread *t,
                           const struct kx_ioctl *e, int touch, int cuts)
{
	uint64_t base = t->k ? t->prev_end : e->ts - 900;

	if (t->k % 2 == 0 && t->inner) {
		ann_put(r, n, KX_ANN_POP, inner_pop(t, base, cuts), e->tid, 2, t->inner, 0, NULL);
		t->inner = 0;
	}
	if (t->k % 8 == 0 && t->outer) {
		ann_put(r, n, KX_ANN_POP, base + 200, e->tid, 1, t->outer, 0, NULL);
		t->outer = 0;
	}
	if (t->k % 8 == 0) {
		t->outer = base + 300;
		ann_put(r, n, KX_ANN_PUSH, t->outer, e->tid, 1, 0, 0, "step");
	}
	if (t->k % 2 == 0) {
		t->inner = touch && t->k == 10 ? base : base + 500;
		ann_put(r, n, KX_ANN_PUSH, t->inner, e->tid, 2, 0, 0, "layer");
	}
	if (t->k % 5 == 0)
		ann_put(r, n, KX_ANN_MARK, base + 700, e->tid, 2, 0, 0, "tick");
}

static inline int ann_cmp(const void *a, const void *b)
{
	const struct annrec *x = a, *y = b;

	return x->a.ts < y->a.ts ? -1 : x->a.ts > y->a.ts;
}

/*
 * The annotations of the calls c (in the order they were made), in time
 * order, into r (room for 4 a call and 2 a thread): every thread's calls in
 * nested ranges, those of the first thread left open at the end; every 300
 * calls of the first thread, a cross-thread range it starts and the second
 * thread (same process) ends in its next gap, the last one never ended; the
 * first ended, and a mark made, by a thread that makes no call.
 * touch: one range begins as a call of its thread ends; cuts: some range
 * ends inside a call of its thread. Returns the records made; *stop moves
 * past the last.
 */
static inline size_t annotate(const struct call *c, size_t n, struct annrec *r, int touch, int cuts,
                              uint64_t *stop)
{
	struct ann_thread th[THREADS] = {0};
	uint64_t starts[64], xid = 0;
	size_t m = 0, ended = 0;

	for (int t = 0; t < THREADS; t++)
		for (size_t i = 0; i < n; i++) {
			const struct kx_ioctl *e = &c[i].e;
			struct ann_thread *a = &th[t];
			uint64_t base = a->k ? a->prev_end : e->ts - 900;

			if (e->tid != 700 + (uint32_t)t * 10)
				continue;
			ann_gap(r, &m, a, e, touch && t == 2, cuts);
			if (t == 0 && a->k % 300 == 150 && xid < 64) {
				starts[xid++] = base + 800;
				ann_put(r, &m, KX_ANN_START, base + 800, e->tid, 0, 0, xid,
				        "batch");
			}
			if (t == 1 && ended + 1 < xid && starts[ended] < base + 800) {
				ann_put(r, &m, KX_ANN_END, base + 800, ended ? e->tid : LONE_TID, 0,
				        starts[ended], ended + 1, NULL);
				ended++;
			}
			if (t == 1 && a->k == 500)
				ann_put(r, &m, KX_ANN_MARK, base + 900, LONE_TID, 0, 0, 0, "lone");
			a->prev_in = a->k && e->ts < a->prev_end;
			a->prev_ts = e->ts;
			a->prev_end = e->ts + e->dur;
			a->k++;
		}
	for (int t = 1; t < THREADS; t++) {
		if (th[t].inner)
			ann_put(r, &m, KX_ANN_POP, th[t].prev_end + 100, 700 + (uint32_t)t * 10, 2,
			        th[t].inner, 0, NULL);
		if (th[t].outer)
			ann_put(r, &m, KX_ANN_POP, th[t].prev_end + 200, 700 + (uint32_t)t * 10, 1,
			        th[t].outer, 0, NULL);
		if (th[t].prev_end + 200 >= *stop)
			*stop = th[t].prev_end + 201;
	}
	qsort(r, m, sizeof(*r), ann_cmp);
	return m;
}

/*
 * n calls over THREADS threads, each thread's calls back to back with gaps,
 * a few of them long (up to 300 ms, so their records come late), written in
 * the order they returned (with by_thread, thread by thread); a task naming
 * each thread first; a CPU sample every 40 calls; with job != 0 a job record
 * after the n/2-th call (job 2: a KVM exit before every call, of that call's
 * thread, whose last calls all began after it: a reason to read the file
 * whole, analysis/jobflow.h), with overlap 1 one thread's call starts inside its previous one (2:
 * and ends after it; 3: each long call's next, ending 1 us after it); with ann (ANN_*), the
 * annotations of annotate() and counter records before every 7th call, each record where a recorder
 * writes it. Returns 0 when written.
 */
/* Call c (the i-th) as KVM_SET_USER_MEMORY_REGION of one of 5 slots of its
 * fd: 64 or 128 KiB, or deleted (size 0). */
static inline void memory_slot(struct call *c, size_t i)
{
	uint32_t slot = (uint32_t)(i / 50 % 5);
	uint64_t size = (uint64_t)(i / 50 % 3) * 65536;

	c->e.cmd = 0x4020ae46; /* KVM_SET_USER_MEMORY_REGION */
	c->e.ret = 0;
	c->e.arg_in_len = 32;
	memset(c->arg, 0, sizeof(c->arg));
	memcpy(c->arg, &slot, sizeof(slot));
	memcpy(c->arg + 16, &size, sizeof(size));
}

#define ANN_RANGES   1  /* annotate() */
#define ANN_TOUCH    2  /* annotate() with touch */
#define ANN_COUNTERS 4  /* counter records */
#define ANN_MEMORY   8  /* a KVM memory slot set, resized or deleted every 50 calls */
#define ANN_CUTS     16 /* annotate() with cuts (with ANN_RANGES) */

static inline int write_capture_as(const char *path, size_t n, int job, int overlap, int by_thread,
                                   int ann)
{
	struct call *c = calloc(n, sizeof(*c));
	struct annrec *ar = ann ? calloc(4 * n + 2 * THREADS + 64, sizeof(*ar)) : NULL;
	size_t nar = 0, ai = 0;
	uint64_t clock[THREADS], rng = 0x9e3779b97f4a7c15ULL, stop = T0;
	struct kx_kxp_writer *w;
	struct kx_capinfo ci;
	char err[256];
	int rc = -1;

	if (!c || (ann && !ar)) {
		free(c);
		free(ar);
		return -1;
	}
	for (int t = 0; t < THREADS; t++)
		clock[t] = T0 + (uint64_t)t * 777;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = gen_rng(&rng);
		int t = (int)(r % THREADS);
		struct kx_ioctl *e = &c[i].e;

		e->ts = clock[t] + 1000 + (r >> 8) % 20000;
		e->dur = (r >> 20) % 97 == 0 ? 50000000 + (r >> 30) % 250000000
		                             : 300 + (r >> 40) % 9000;
		e->pid = 700 + (uint32_t)t / 2;
		e->tid = 700 + (uint32_t)t * 10;
		e->dev = (10u << 20) | 232;
		e->fkind = KX_FK_CHR;
		e->drv = KX_DRV_KVM;
		e->cmd = (r >> 50) % 3 ? 0xae03 : 0xae00;
		e->fd = 3 + t;
		e->ret = (r >> 55) % 40 ? 0 : -22;
		e->arg_off = KX_NO_ARG;
		if ((r >> 45) % 10 == 0) {
			e->arg_in_len = 16;
			for (int k = 0; k < 16; k++)
				c[i].arg[k] = (uint8_t)(i + k);
		}
		if ((ann & ANN_MEMORY) && i % 50 == 7)
			memory_slot(&c[i], i);
		clock[t] = e->ts + e->dur;
		if (clock[t] > stop)
			stop = clock[t];
	}
	if (overlap == 3) /* each long call's next of its thread starts halfway through it
	                     and ends 1 us after it (the rule shortens it, windows later) */
		for (size_t i = 0; i < n; i++)
			for (size_t k = i + 1; c[i].e.dur >= 50000000 && k < n; k++)
				if (c[k].e.tid == c[i].e.tid) {
					c[k].e.ts = c[i].e.ts + c[i].e.dur / 2;
					c[k].e.dur = c[i].e.dur / 2 + 1000;
					break;
				}
	if (overlap && overlap < 3 && n > 10) /* the next call of c[5]'s thread starts inside it */
		for (size_t i = 6; i < n; i++)
			if (c[i].e.tid == c[5].e.tid) {
				c[i].e.ts = c[5].e.ts + c[5].e.dur / 2;
				if (overlap == 2) /* and ends after it (the rule shortens it) */
					c[i].e.dur = c[5].e.dur;
				break;
			}
	if (ann & (ANN_RANGES | ANN_TOUCH))
		nar = annotate(c, n, ar, ann & ANN_TOUCH, ann & ANN_CUTS, &stop);
	qsort(c, n, sizeof(*c), by_thread ? tid_cmp : end_cmp);
	capinfo(&ci, stop + 1);
	if (ann & ANN_COUNTERS)
		snprintf(ci.counters.names, sizeof(ci.counters.names), "cycles");
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		goto out;
	for (int t = 0; t < THREADS; t++) {
		struct kx_task k = {
		        .ts = T0, .pid = 700 + (uint32_t)t / 2, .tid = 700 + (uint32_t)t * 10};

		k.what = KX_TASK_SEEN;
		snprintf(k.comm, sizeof(k.comm), "worker%d", t);
		if (kx_kxp_add_task(w, &k))
			goto out;
	}
	if (ann) {
		struct kx_task k = {.ts = T0, .pid = 700, .tid = LONE_TID, .what = KX_TASK_SEEN};

		snprintf(k.comm, sizeof(k.comm), "lone");
		if (kx_kxp_add_task(w, &k))
			goto out;
	}
	for (size_t i = 0; i < n; i++) {
		for (; ai < nar && ar[ai].a.ts < c[i].e.ts + c[i].e.dur; ai++)
			if (kx_kxp_add_ann(w, &ar[ai].a, ar[ai].name, ar[ai].cat))
				goto out;
		if ((ann & ANN_COUNTERS) && i % 7 == 0) {
			struct kx_ctr_ev ce = {.ts = c[i].e.ts,
			                       .pid = c[i].e.pid,
			                       .tid = c[i].e.tid,
			                       .n = 1,
			                       .v = {i}};

			if (kx_kxp_add_ctr(w, &ce))
				goto out;
		}
		if (kx_kxp_add_ioctl(w, &c[i].e, c[i].e.arg_in_len ? c[i].arg : NULL))
			goto out;
		if (i % 40 == 0) {
			uint64_t ips[3] = {0x401000 + i % 7, 0x402000, 0x403000};
			struct kx_sample s = {.ts_ns = c[i].e.ts + c[i].e.dur,
			                      .pid = c[i].e.pid,
			                      .tid = c[i].e.tid,
			                      .kind = KX_SAMPLE_CPU,
			                      .uips = ips,
			                      .nu = 3};

			snprintf(s.comm, sizeof(s.comm), "worker");
			if (kx_kxp_add_sample(w, &s))
				goto out;
		}
		if (job && i == n / 2) {
			struct kx_job j = {.ts = c[i].e.ts, .src = 1, .phase = 1, .seqno = 1};

			if (job == 2)
				j = (struct kx_job){.ts = T0 + 1,
				                    .ctx = c[i].e.tid,
				                    .pid = c[i].e.pid,
				                    .tid = c[i].e.tid,
				                    .src = KX_JOB_SRC_KVM,
				                    .phase = KX_JOB_DONE};

			if (kx_kxp_add_job(w, &j))
				goto out;
		}
	}
	for (; ai < nar; ai++)
		if (kx_kxp_add_ann(w, &ar[ai].a, ar[ai].name, ar[ai].cat))
			goto out;
	rc = kx_kxp_close(w, &ci, err, sizeof(err));
	w = NULL;
out:
	if (rc)
		printf("# writing the capture: %s\n", err);
	if (w)
		kx_kxp_discard(w);
	free(c);
	free(ar);
	return rc;
}

static inline int write_capture(const char *path, size_t n, int job, int overlap)
{
	return write_capture_as(path, n, job, overlap, 0, 0);
}

#endif /* KXP_GEN_WREAD_H */
