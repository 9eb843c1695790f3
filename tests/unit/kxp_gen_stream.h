/*
 * Captures of the streamed-report tests (test_report_stream, the
 * differential test's generator tests/tools/kxp_gen): a store (a replay
 * fixture) written as a record file in a layout (as a recorder writes it,
 * its ioctls alone, or grouped by kind); threads calling one after another
 * over many rows and errnos; annotated threads nesting ranges six deep
 * around their calls, with marks, cross-thread ranges, ranges left open and
 * lost pushes; threads' calls with counter records before and after them;
 * GPU jobs of a shared fence source on rings that link early, late or never.
 */
#ifndef KXP_GEN_STREAM_H
#define KXP_GEN_STREAM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/kxp.h"
#include "kxp_gen.h"
#include "model/event.h"
#include "model/store.h"
#include "registry/drivers.h"
#include "registry/ioctl_decode.h"

/* How a fixture is written as a record file. */
enum layout {
	L_RECORDED, /* tasks, then ioctls (at their return) and jobs in time order, as recorded */
	L_IOCTLS,   /* tasks and ioctls only */
	L_GROUPED,  /* tasks, every ioctl, then every job: no recorder's order */
	L_COUNT,
};

struct rec_ref {
	uint64_t at; /* when a recorder writes it: an ioctl's return, a job event's time */
	size_t idx;
	int job;
};

static inline int rec_ref_cmp(const void *pa, const void *pb)
{
	const struct rec_ref *a = pa, *b = pb;

	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	if (a->job != b->job)
		return a->job ? -1 : 1; /* an event inside a call before the call's return */
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* The ioctls and jobs of s in the order a recorder writes them. */
static inline int write_recorded(struct kx_kxp_writer *w, const struct kx_store *s)
{
	size_t ni = kx_store_ioctl_count(s), nj = kx_store_job_count(s), n = 0;
	struct rec_ref *v = malloc((ni + nj + 1) * sizeof(*v));
	int rc = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < ni; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		v[n++] = (struct rec_ref){e->ts + e->dur, i, 0};
	}
	for (size_t i = 0; i < nj; i++)
		v[n++] = (struct rec_ref){kx_store_job(s, i)->ts, i, 1};
	qsort(v, n, sizeof(*v), rec_ref_cmp);
	for (size_t k = 0; k < n; k++) {
		const struct kx_ioctl *e = v[k].job ? NULL : kx_store_ioctl(s, v[k].idx);

		rc |= v[k].job ? kx_kxp_add_job(w, kx_store_job(s, v[k].idx))
		               : kx_kxp_add_ioctl(w, e, kx_store_arg(s, e));
	}
	free(v);
	return rc;
}

/* Writes s as a record file in layout l. */
static inline int write_kxp(const char *path, const struct kx_store *s, const struct kx_capinfo *ci,
                            enum layout l)
{
	char err[256];
	struct kx_kxp_writer *w = kx_kxp_create(path, ci, err, sizeof(err));
	int rc = 0;

	if (!w)
		return -1;
	for (size_t i = 0; i < kx_store_task_count(s); i++)
		rc |= kx_kxp_add_task(w, kx_store_task(s, i));
	if (l == L_RECORDED) {
		rc |= write_recorded(w, s);
	} else {
		for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
			const struct kx_ioctl *e = kx_store_ioctl(s, i);

			rc |= kx_kxp_add_ioctl(w, e, kx_store_arg(s, e));
		}
		for (size_t i = 0; l == L_GROUPED && i < kx_store_job_count(s); i++)
			rc |= kx_kxp_add_job(w, kx_store_job(s, i));
	}
	if (rc) {
		kx_kxp_discard(w);
		return -1;
	}
	return kx_kxp_close(w, ci, err, sizeof(err));
}

/* Generated: threads calling one after another (never overlapping), many
 * rows and errnos, durations over six decades. */
static inline int write_generated(const char *path, size_t n, uint64_t seed, uint32_t tid_mod)
{
	static struct kx_capinfo ci;
	struct kx_kxp_writer *w;
	uint64_t now[64] = {0};
	char err[256];
	int rc = 0;

	ci.start_mono_ns = 1000;
	ci.stop_mono_ns = 1000 + n * 100000;
	ci.emitted = ci.received = n;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct kx_ioctl e = {0};
		uint64_t r = gen_rng(&seed);
		uint32_t t = (uint32_t)(r % tid_mod);

		e.tid = 100 + t;
		e.pid = 100;
		e.drv = (uint8_t)(1 + r % 3);
		e.cmd = 0x4000u | (uint32_t)(r >> 8 & 31);
		e.dur = 1 + ((r >> 20 & 0x3ff) << (r >> 30 & 15));
		e.ts = 1000 + now[t % 64];
		now[t % 64] += e.dur + (r >> 40 & 1023);
		e.ret = (r >> 50 & 7) == 0 ? -(int64_t)(1 + (r >> 53 & 63)) : 0;
		e.offcpu_us = (uint32_t)((r >> 56 & 3) ? 0 : e.dur / 2000);
		e.arg_off = KX_NO_ARG;
		rc |= kx_kxp_add_ioctl(w, &e, NULL);
	}
	if (rc) {
		kx_kxp_discard(w);
		return -1;
	}
	return kx_kxp_close(w, &ci, err, sizeof(err));
}

/* A record and when the recorder wrote it (a call at its return). */
struct ann_rec {
	uint64_t at;
	int is_ann;
	struct kx_ioctl e;
	struct kx_ann a;
	const char *name, *cat;
};

struct ann_gen {
	struct ann_rec *v;
	size_t n, cap;
	uint64_t seed;
};

static inline struct ann_rec *rec_new(struct ann_gen *g, uint64_t at)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 1024;
		g->v = realloc(g->v, g->cap * sizeof(*g->v));
		if (!g->v)
			abort();
	}
	memset(&g->v[g->n], 0, sizeof(g->v[0]));
	g->v[g->n].at = at;
	return &g->v[g->n++];
}

static inline void gen_ann(struct ann_gen *g, uint32_t tid, int what, uint64_t ts, uint64_t begin,
                           uint16_t depth, uint64_t id, const char *name, const char *cat)
{
	struct ann_rec *r = rec_new(g, ts);

	r->is_ann = 1;
	r->a = (struct kx_ann){.ts = ts, .begin = begin, .id = id, .pid = 300, .tid = tid};
	r->a.what = (uint16_t)what;
	r->a.depth = depth;
	r->name = name ? name : "";
	r->cat = cat ? cat : "";
}

/* One thread: pushes, pops, calls and marks, a gap of at least 1 ns
 * between any two, so each is strictly after what came before. Thread 0
 * leaves its ranges open at the end; every thread has a push the ring
 * lost (its pop is recorded, its calls count for the ranges around it). */
static inline void gen_thread(struct ann_gen *g, uint32_t tid, int k, uint64_t steps)
{
	static const char *const names[] = {"step", "layer", "forward", "backward", "io"};
	static const char *const cats[] = {"", "", "nvtx"};
	struct {
		uint64_t ts;
		int lost;
	} st[8];
	int depth = 0;
	uint64_t now = 1000 + (uint64_t)k * 7;

	for (uint64_t i = 0; i < steps; i++) {
		uint64_t r = gen_rng(&g->seed), c = r % 10;

		now += 1 + (r >> 8 & 1023);
		if (c < 3 && depth < 6) {
			st[depth].ts = now;
			st[depth].lost = (r >> 20 & 63) == 0;
			if (!st[depth].lost)
				gen_ann(g, tid, KX_ANN_PUSH, now, now, (uint16_t)(depth + 1), 0,
				        names[r >> 24 & 3], cats[r >> 30 & 1 ? 2 : 0]);
			depth++;
		} else if (c < 5 && depth && !(k == 0 && i > steps - 40)) {
			depth--;
			gen_ann(g, tid, KX_ANN_POP, now, st[depth].ts, (uint16_t)(depth + 1), 0,
			        NULL, NULL);
		} else if (c < 6) {
			gen_ann(g, tid, KX_ANN_MARK, now, now, (uint16_t)depth, 0,
			        names[(r >> 24 & 7) % 5], cats[(r >> 40) % 3]);
		} else {
			struct ann_rec *e;
			uint64_t dur = 1 + (r >> 32 & 0xfff);

			e = rec_new(g, now + dur);
			e->e = (struct kx_ioctl){.ts = now, .dur = dur, .pid = 300, .tid = tid};
			e->e.drv = 1;
			e->e.cmd = 0x4000u | (uint32_t)(r >> 44 & 3);
			e->e.arg_off = KX_NO_ARG;
			now += dur;
		}
	}
}

static inline int cmp_rec(const void *pa, const void *pb)
{
	const struct ann_rec *a = pa, *b = pb;

	return a->at < b->at ? -1 : a->at > b->at;
}

/* Cross-thread ranges of process 300: started on one thread, ended on
 * another later; the last never ends, and one end has no start. */
static inline void gen_cross(struct ann_gen *g, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = gen_rng(&g->seed), t0 = 2000 + i * 5000 + (r & 255);

		gen_ann(g, 400, KX_ANN_START, t0, t0, 0, i + 1, i & 1 ? "upload" : "transfer",
		        "copy");
		if (i + 1 < n)
			gen_ann(g, 401, KX_ANN_END, t0 + 3000 + (r >> 8 & 4095), t0, 0, i + 1, NULL,
			        NULL);
	}
	gen_ann(g, 401, KX_ANN_END, 1500, 1400, 0, 999999, NULL, NULL);
}

static inline int write_annotated(const char *path, uint64_t seed)
{
	static struct kx_capinfo ci;
	struct ann_gen g = {NULL, 0, 0, seed};
	struct kx_kxp_writer *w;
	char err[256];
	int rc = 0;

	for (int k = 0; k < 6; k++)
		gen_thread(&g, 300 + (uint32_t)k, k, 4000);
	gen_cross(&g, 60);
	qsort(g.v, g.n, sizeof(*g.v), cmp_rec);
	ci.start_mono_ns = 1000;
	ci.stop_mono_ns = g.v[g.n - 1].at + 10;
	ci.ann.enabled = 1;
	ci.ann.emitted = ci.ann.received = g.n;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w) {
		free(g.v);
		return -1;
	}
	for (size_t i = 0; i < g.n; i++) {
		const struct ann_rec *r = &g.v[i];

		if (r->is_ann)
			rc |= kx_kxp_add_ann(w, &r->a, r->name, r->cat);
		else
			rc |= kx_kxp_add_ioctl(w, &r->e, NULL);
	}
	free(g.v);
	if (rc) {
		kx_kxp_discard(w);
		return -1;
	}
	return kx_kxp_close(w, &ci, err, sizeof(err));
}

#define CTR_LATE    1 /* write_counted: records after later calls of their thread */
#define CTR_UNNAMED 2 /* write_counted: the header names no counter */

/* Four threads' calls with counter records, most written just before their
 * call's record (as the recorder writes them), a tenth right after it;
 * some calls without a record, some records whose call was lost, partial
 * readings, multiplexed and uncounted values. how (CTR_*): with CTR_LATE,
 * a record in 64 comes after one to four later calls of its thread, the
 * last ones after every call; with CTR_UNNAMED, the header names none of
 * the counters. */
static inline int write_counted(const char *path, uint64_t seed, int how)
{
	static struct kx_capinfo ci;
	uint64_t now[4] = {1000, 1003, 1007, 1011};
	struct kx_kxp_writer *w;
	struct kx_ctr_ev held[4] = {{0}};
	int wait[4] = {0}; /* the thread's calls its held record comes after (0: none held) */
	char err[256];
	int rc = 0;

	memset(&ci, 0, sizeof(ci));
	if (!(how & CTR_UNNAMED))
		snprintf(ci.counters.names, sizeof(ci.counters.names),
		         "context-switches,page-faults");
	ci.counters.stats[KX_CSTAT_EMITTED] = 20000;
	ci.start_mono_ns = 1000;
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	if (!w)
		return -1;
	for (uint64_t i = 0; i < 20000; i++) {
		uint64_t r = gen_rng(&seed);
		uint32_t t = (uint32_t)(r & 3);
		struct kx_ioctl e = {.pid = 70,
		                     .tid = 700 + t,
		                     .drv = (uint8_t)(1 + (r >> 4 & 1)),
		                     .arg_off = KX_NO_ARG};
		struct kx_ctr_ev c = {.pid = 70, .tid = 700 + t, .n = 2};
		int kind = (int)(r >> 8 & 31); /* 0-2 after, 3 no record, 4 lost call */

		e.cmd = 0x4000u | (uint32_t)(r >> 16 & 3);
		e.ts = now[t];
		e.dur = 100 + (r >> 20 & 4095);
		now[t] += e.dur + 1 + (r >> 36 & 255);
		c.ts = e.ts;
		c.v[0] = r >> 40 & 7;
		c.v[1] = r >> 44 & 63;
		c.flags = (r >> 50 & 63) == 0 ? KX_CTR_F_PARTIAL : 0;
		c.multiplexed = (uint8_t)((r >> 56 & 15) == 0);
		c.not_counted = (uint8_t)((r >> 60 & 7) == 0 ? 2 : 0);
		if ((how & CTR_LATE) && wait[t] && --wait[t] == 0)
			rc |= kx_kxp_add_ctr(w, &held[t]); /* before this call: after later ones */
		if ((how & CTR_LATE) && !wait[t] && kind > 4 &&
		    ((r >> 24 & 63) == 0 || i >= 19990)) {
			held[t] = c; /* its call now, the record after later calls of the thread */
			wait[t] = i >= 19990 ? 1000 : 2 + (int)(r >> 32 & 3);
			rc |= kx_kxp_add_ioctl(w, &e, NULL);
			continue;
		}
		if (kind > 4)
			rc |= kx_kxp_add_ctr(w, &c);
		if (kind != 4)
			rc |= kx_kxp_add_ioctl(w, &e, NULL);
		if (kind < 3 || kind == 4)
			rc |= kx_kxp_add_ctr(w, &c);
	}
	for (int t = 0; t < 4; t++)
		if (wait[t])
			rc |= kx_kxp_add_ctr(w, &held[t]);
	ci.stop_mono_ns = now[0] + now[1] + now[2] + now[3];
	ci.counters.stats[KX_CSTAT_DROPPED] = 3;
	if (rc) {
		kx_kxp_discard(w);
		return -1;
	}
	return kx_kxp_close(w, &ci, err, sizeof(err));
}

/* ---- GPU jobs of a shared fence source ---- */

/* A shared fence source and the calls that submit to it and wait: its ring
 * "gfx" is submitted by drv's calls, its ring "comp" by drv2's (the
 * source's own driver where it has one: its jobs are on its device; the
 * others, gpu_scheduler and dma_fence, learn each ring's device from its
 * first linked job). */
struct fence_kind {
	const char *name;
	uint8_t src, drv, drv2;
	uint32_t exec, wait, exec2, wait2; /* the calls' commands */
};

#define FENCE_AMDGPU_CS    0xc0186444u /* DRM_IOCTL_AMDGPU_CS */
#define FENCE_AMDGPU_WAIT  0xc0206449u /* DRM_IOCTL_AMDGPU_WAIT_CS */
#define FENCE_I915_EXEC    0x40406469u /* DRM_IOCTL_I915_GEM_EXECBUFFER2 */
#define FENCE_I915_WAIT    0xc010646cu /* DRM_IOCTL_I915_GEM_WAIT */
#define FENCE_AMDXDNA_EXEC 0xc0386446u /* DRM_IOCTL_AMDXDNA_EXEC_CMD */
#define FENCE_AMDXDNA_WAIT 0x40106449u /* DRM_IOCTL_AMDXDNA_WAIT_CMD */

static const struct fence_kind fence_kinds[] = {
        {"i915", KX_JOB_SRC_I915, KX_DRV_I915, KX_DRV_I915, FENCE_I915_EXEC, FENCE_I915_WAIT,
         FENCE_I915_EXEC, FENCE_I915_WAIT},
        {"amdgpu", KX_JOB_SRC_AMDGPU, KX_DRV_AMDGPU, KX_DRV_AMDGPU, FENCE_AMDGPU_CS,
         FENCE_AMDGPU_WAIT, FENCE_AMDGPU_CS, FENCE_AMDGPU_WAIT},
        {"amdxdna", KX_JOB_SRC_AMDXDNA, KX_DRV_AMDXDNA, KX_DRV_AMDXDNA, FENCE_AMDXDNA_EXEC,
         FENCE_AMDXDNA_WAIT, FENCE_AMDXDNA_EXEC, FENCE_AMDXDNA_WAIT},
        {"gpu_scheduler", KX_JOB_SRC_GPU_SCHED, KX_DRV_AMDGPU, KX_DRV_I915, FENCE_AMDGPU_CS,
         FENCE_AMDGPU_WAIT, FENCE_I915_EXEC, FENCE_I915_WAIT},
        {"dma_fence", KX_JOB_SRC_DMA_FENCE, KX_DRV_AMDGPU, KX_DRV_I915, FENCE_AMDGPU_CS,
         FENCE_AMDGPU_WAIT, FENCE_I915_EXEC, FENCE_I915_WAIT},
};
#define FENCE_KINDS (sizeof(fence_kinds) / sizeof(*fence_kinds))

/* A call of tid (drv, cmd) from ts for dur ns. */
static inline int fence_call(struct kx_store *s, uint64_t ts, uint64_t dur, uint32_t tid,
                             uint8_t drv, uint32_t cmd)
{
	struct kx_ioctl e = {.ts = ts,
	                     .dur = dur,
	                     .pid = 60,
	                     .tid = tid,
	                     .dev = 226u << 20 | (128u + drv),
	                     .drv = drv,
	                     .cmd = cmd,
	                     .arg_off = KX_NO_ARG};

	return kx_store_add_ioctl(s, &e, NULL);
}

/* A phase of job (ctx, seqno) of source k on ring, in task tid (0: none). */
static inline int fence_ev(struct kx_store *s, const struct fence_kind *k, uint64_t ts,
                           uint64_t ctx, uint64_t seqno, uint32_t tid, int phase, const char *ring)
{
	struct kx_job j = {.ts = ts,
	                   .ctx = ctx,
	                   .seqno = seqno,
	                   .pid = tid ? 60 : 0,
	                   .tid = tid,
	                   .src = k->src,
	                   .phase = (uint8_t)phase};

	snprintf(j.ring, sizeof(j.ring), "%s", ring);
	return kx_store_add_job(s, &j);
}

/*
 * njobs steps of GPU jobs of source k, step ns apart besides their work,
 * as its driver reports them. Ring "gfx": the first 5 jobs no call
 * submitted, then a call of k->drv submits each (linked), but every 7th is
 * queued by a thread that makes no call (unlinked); a wait call across
 * every third DONE; the last 2 never done. Ring "comp" (every third step):
 * no call submits its jobs before step comp_link, then a call of k->drv2
 * does; a wait call of drv2 across every other DONE. Ring "sdma" (every
 * other step, when sdma): no call ever submits its jobs (its device is
 * learnt at the end: the fallback), a wait call of k->drv across every
 * other DONE. 0, or -1 when out of memory.
 */
static inline int gen_fence(struct kx_store *s, const struct fence_kind *k, uint64_t njobs,
                            uint64_t step, uint64_t comp_link, int sdma)
{
	uint64_t t = 1000;
	int rc = 0;

	for (uint64_t i = 0; i < njobs; i++) {
		uint64_t dur = 3000 + (i * 7919) % 40000, done = t + dur + 5000;
		int linked = i >= 5 && i % 7 != 3;
		uint32_t qtid = linked ? 400 : i < 5 ? 0 : 401;

		if (linked)
			rc |= fence_call(s, t, dur, 400, k->drv, k->exec);
		rc |= fence_ev(s, k, t + dur / 4, 3000, i + 1, qtid, KX_JOB_QUEUE, "gfx");
		rc |= fence_ev(s, k, t + dur / 2, 3000, i + 1, 0, KX_JOB_RUN, "gfx");
		if (i + 2 < njobs)
			rc |= fence_ev(s, k, done, 3000, i + 1, 0, KX_JOB_DONE, "gfx");
		if (i % 3 == 0)
			rc |= fence_call(s, done - 3000, 5000, 420, k->drv, k->wait);
		if (i % 3 == 1) {
			uint32_t ctid = i >= comp_link ? 410 : 0;

			if (ctid)
				rc |= fence_call(s, t + 100, dur, 410, k->drv2, k->exec2);
			rc |= fence_ev(s, k, t + 100 + dur / 4, 3001, i + 1, ctid, KX_JOB_QUEUE,
			               "comp");
			rc |= fence_ev(s, k, done + 2000, 3001, i + 1, 0, KX_JOB_DONE, "comp");
			if (i % 2 == 0)
				rc |= fence_call(s, done + 1000, 3000, 430, k->drv2, k->wait2);
		}
		if (sdma && i % 2 == 0) {
			rc |= fence_ev(s, k, t + dur / 3, 3002, i + 1, 0, KX_JOB_QUEUE, "sdma");
			rc |= fence_ev(s, k, done + 1000, 3002, i + 1, 0, KX_JOB_DONE, "sdma");
			if (i % 4 == 0)
				rc |= fence_call(s, done + 500, 1000, 421, k->drv, k->wait);
		}
		t += dur + step;
	}
	return rc ? -1 : 0;
}

/* gen_fence's capture written as a recorder writes it; traced: its header
 * names one GPU, k->drv's render node (the fallback device of a ring that
 * never links), else none. */
static inline int write_fence(const char *path, const struct fence_kind *k, uint64_t njobs,
                              uint64_t step, uint64_t comp_link, int sdma, int traced)
{
	static struct kx_capinfo ci;
	struct kx_store *s = kx_store_new(0);
	int rc = -1;

	memset(&ci, 0, sizeof(ci));
	if (traced) {
		ci.ndevices = 1;
		ci.devices[0] = (struct kx_device){
		        .dev = 226u << 20 | (128u + k->drv), .fkind = KX_FK_CHR, .drv = k->drv};
		snprintf(ci.devices[0].node, sizeof(ci.devices[0].node), "/dev/dri/renderD%u",
		         128u + k->drv);
		snprintf(ci.devices[0].driver, sizeof(ci.devices[0].driver), "%s",
		         kx_driver_name(k->drv));
	}
	if (s && !gen_fence(s, k, njobs, step, comp_link, sdma))
		rc = write_kxp(path, s, &ci, L_RECORDED);
	kx_store_free(s);
	return rc;
}

#endif /* KXP_GEN_STREAM_H */
