/*
 * The streamed report of a record file (contract: sreport.h). Owns the
 * decision whether a capture can be reported from a stream, and the
 * per-thread state that decision needs (the end of each thread's last call).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobpair.h"
#include "analysis/sreport.h"
#include "model/samples.h"
#include "util/grow.h"
#include "util/hashmap.h"

/* What the visitor keeps between records. */
struct sr_ctx {
	struct kx_sreport *r;
	struct kx_stats_acc acc;
	struct kx_memacct mem;
	struct kx_hmap tids; /* tid -> index in ends */
	uint64_t *ends;      /* ns, the end of each thread's last call */
	size_t nends, endcap;
	int oom;
	int stop; /* set when the stream cannot give the report: the reader ends early */
};

/* The first reason found; the read then stops at the next chunk. */
static void sr_fall_back(struct sr_ctx *c, const char *why)
{
	if (c->r->in_memory)
		return;
	c->r->in_memory = why;
	__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
}

static int sr_active(const struct sr_ctx *c)
{
	return !c->oom && !c->r->in_memory;
}

/* Does e start before its thread's last call ended? Records e's end. -1: OOM. */
static int sr_overlaps(struct sr_ctx *c, const struct kx_ioctl *e)
{
	uint32_t *idx = kx_hmap_get(&c->tids, e->tid);
	uint64_t end = e->ts + e->dur;
	int ov;

	if (!idx) {
		if (c->nends >= UINT32_MAX ||
		    kx_grow((void **)&c->ends, &c->endcap, c->nends, sizeof(*c->ends)) ||
		    kx_hmap_add(&c->tids, e->tid, (uint32_t)c->nends))
			return -1;
		c->ends[c->nends++] = end;
		return 0;
	}
	ov = e->ts < c->ends[*idx];
	c->ends[*idx] = end;
	return ov;
}

static void sr_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct sr_ctx *c = ctx;
	int64_t delta = 0;
	int ov, mem = KX_MEM_NONE;

	if (!sr_active(c))
		return;
	ov = sr_overlaps(c, e);
	if (e->ret >= 0 && arg)
		mem = kx_memacct_step(&c->mem, e, arg, &delta);
	if (ov < 0 || mem < 0 || kx_stats_acc_add(&c->r->st, &c->acc, e)) {
		c->oom = 1;
		__atomic_store_n(&c->stop, 1, __ATOMIC_RELAXED);
		return;
	}
	if (ov)
		sr_fall_back(c, "calls of one thread overlap (the nesting rule applies)");
	if (mem != KX_MEM_NONE)
		sr_fall_back(c, "ioctls allocate or free device memory (memory rows)");
}

static void sr_task(void *ctx, const struct kx_task *t)
{
	struct sr_ctx *c = ctx;

	/* A refused task is counted by the store, as when reading into one. */
	if (sr_active(c))
		kx_store_add_task(c->r->side, t);
}

static void sr_job(void *ctx, const struct kx_job *j)
{
	(void)j;
	sr_fall_back(ctx, "device jobs (timelines link jobs to their ioctls)");
}

static void sr_ann(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	(void)a, (void)name, (void)cat;
	sr_fall_back(ctx, "annotations (ranges nest with the thread's ioctls)");
}

static void sr_sample(void *ctx, const struct kx_sample *s)
{
	struct sr_ctx *c = ctx;

	if (sr_active(c))
		kx_store_add_sample(c->r->side, s);
}

static void sr_ctr(void *ctx, const struct kx_ctr_ev *e)
{
	(void)e;
	sr_fall_back(ctx, "perf counters (matched with their calls)");
}

int kx_sreport_read(struct kx_sreport *r, const char *path, char *err, size_t errlen)
{
	struct sr_ctx c = {
	        .r = r, .acc = KX_STATS_ACC_INIT, .mem = KX_MEMACCT_INIT, .tids = KX_HMAP_INIT};
	struct kx_kxp_visitor v = {
	        .ctx = &c,
	        .ioctl = sr_ioctl,
	        .task = sr_task,
	        .job = sr_job,
	        .ann = sr_ann,
	        .sample = sr_sample,
	        .ctr = sr_ctr,
	        .stop = &c.stop,
	};
	int rc;

	memset(r, 0, sizeof(*r));
	/* The budget of reading into a store (cli's), for what is kept here. */
	r->side = kx_store_new((size_t)8 << 30);
	if (!r->side || !kx_store_samples(r->side)) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	v.syms = kx_samples_syms(kx_store_samples(r->side));
	err[0] = 0;
	rc = kx_kxp_read_stream(path, &v, &r->ci, &r->res, err, errlen);
	r->threads = c.nends;
	kx_memacct_free(&c.mem);
	kx_hmap_free(&c.tids);
	free(c.ends);
	if (kx_stats_acc_finish(&r->st, &c.acc, &r->ci, rc == 0 && !c.oom) && rc == 0) {
		snprintf(err, errlen, "out of memory summarising the ioctls");
		rc = -1;
	}
	if (rc == 0 && r->in_memory)
		kx_stats_free(&r->st);
	return rc;
}

void kx_sreport_free(struct kx_sreport *r)
{
	kx_stats_free(&r->st);
	kx_store_free(r->side);
	r->side = NULL;
}
