/* Event sinks: bounded store, streamed record file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/clock.h"
#include "capture/sinks.h"
#include "model/perfdata.h"

static void store_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	kx_store_add_ioctl(ctx, e, arg);
}

static void store_task(void *ctx, const struct kx_task *t)
{
	kx_store_add_task(ctx, t);
}

static void store_job(void *ctx, const struct kx_job *j)
{
	kx_store_add_job(ctx, j);
}

static void store_sample(void *ctx, const struct kx_sample *s)
{
	kx_store_add_sample(ctx, s);
}

static void store_counters(void *ctx, const struct kx_ctr_ev *e)
{
	kx_store_add_ctr(ctx, e);
}

static void store_annot(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	kx_store_add_ann(ctx, a, name, cat);
}

struct kx_sink kx_sink_store(struct kx_store *store)
{
	return (struct kx_sink){.ctx = store,
	                        .ioctl = store_ioctl,
	                        .task = store_task,
	                        .job = store_job,
	                        .sample = store_sample,
	                        .counters = store_counters,
	                        .annot = store_annot};
}

static void kxp_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_ioctl(ks->w, e, arg) != 0 && !ks->write_error)
		ks->write_error = 1;
	if (ks->drm && e->pid != ks->drm_last_pid) /* a lookup per new caller, not per call */
		kx_drm_sampler_add_pid(ks->drm, ks->drm_last_pid = e->pid);
}

static void kxp_task(void *ctx, const struct kx_task *t)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_task(ks->w, t) != 0 && !ks->write_error)
		ks->write_error = 1;
	if (ks->drm)
		kx_drm_sampler_add_pid(ks->drm, t->pid);
}

/* j as stored: with for_user, a copy in *tmp whose kernel pointers (job
 * keys of pointer-keyed sources) are stand-ins, the same per pointer, so
 * the phases of a job still pair. */
static const struct kx_job *stored_job(struct kx_kxp_sink *ks, const struct kx_job *j,
                                       struct kx_job *tmp)
{
	if (!ks->for_user)
		return j;
	*tmp = *j;
	tmp->ctx = kx_kmask_key(&ks->jkeys, j->ctx);
	tmp->seqno = kx_kmask_key(&ks->jkeys, j->seqno);
	tmp->aux = kx_kmask_key(&ks->jkeys, j->aux);
	tmp->aux2 = kx_kmask_key(&ks->jkeys, j->aux2);
	return tmp;
}

static void kxp_job(void *ctx, const struct kx_job *j)
{
	struct kx_kxp_sink *ks = ctx;
	struct kx_job tmp;

	if (kx_kxp_add_job(ks->w, stored_job(ks, j, &tmp)) != 0 && !ks->write_error)
		ks->write_error = 1;
}

static void kxp_sample(void *ctx, const struct kx_sample *s)
{
	struct kx_kxp_sink *ks = ctx;
	uint64_t kips[KX_SAMPLE_MAX_DEPTH];
	struct kx_sample tmp;
	unsigned long long t0;
	/* With for_user, its kernel frames are stand-ins. */
	const struct kx_sample *st =
	        ks->for_user ? kx_kmask_sample(&ks->kmask, s, &tmp, kips, &ks->sym_oom) : s;

	if (kx_kxp_add_sample(ks->w, st) != 0 && !ks->write_error)
		ks->write_error = 1;
	if (!ks->syms)
		return;
	t0 = kx_mono_ns();
	if (kx_symcollect_sample(ks->syms, s))
		ks->sym_oom = 1;
	ks->sym_ns += kx_mono_ns() - t0;
}

static void kxp_counters(void *ctx, const struct kx_ctr_ev *e)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_ctr(ks->w, e) != 0 && !ks->write_error)
		ks->write_error = 1;
}

static void kxp_put_sym(void *ctx, const struct kx_symres *r, const struct kx_symres_entry *e)
{
	struct kx_kxp_sink *ks = ctx;
	struct kx_symres_entry hidden;

	if (ks->for_user && e->pid == KX_SYMRES_KERNEL) {
		/* Under its stand-in; none: its frames were stored as unknown. */
		hidden = *e;
		hidden.addr = kx_kmask_addr(&ks->kmask, e->addr);
		if (!hidden.addr)
			return;
		e = &hidden;
	}
	if (kx_kxp_add_sym(ks->w, r, e) != 0 && !ks->write_error)
		ks->write_error = 1;
}

/* Resolves what the samples since the last call noted, into the file. */
static void kxp_syms(struct kx_kxp_sink *ks)
{
	unsigned long long t0 = kx_mono_ns();

	if (ks->syms && kx_symcollect_resolve(ks->syms))
		ks->sym_oom = 1;
	ks->sym_ns += kx_mono_ns() - t0;
}

static void kxp_annot(void *ctx, const struct kx_ann *a, const char *name, const char *cat)
{
	struct kx_kxp_sink *ks = ctx;

	if (kx_kxp_add_ann(ks->w, a, name, cat) != 0 && !ks->write_error)
		ks->write_error = 1;
}

/* One DRM usage pass, its rows into the file. */
static void kxp_drm_pass(struct kx_kxp_sink *ks, unsigned long long now)
{
	const struct kx_drm_ev *r;
	size_t n;

	ks->last_drm_ns = now;
	r = kx_drm_sampler_pass(ks->drm, now, &n);
	for (size_t i = 0; i < n; i++) {
		if (kx_kxp_add_drm(ks->w, &r[i]) != 0) {
			ks->drm_rows_lost++;
			if (!ks->write_error)
				ks->write_error = 1;
		} else {
			ks->drm_rows++;
		}
	}
}

/* The sampler's figures into a capture's facts. */
static void kxp_drm_facts(const struct kx_kxp_sink *ks, struct kx_drm_info *d)
{
	const struct kx_drm_sampler_stats *s = kx_drm_sampler_stats(ks->drm);
	const struct kx_drm_tracker_stats *t = kx_drm_sampler_tracker_stats(ks->drm);

	d->interval_ms = ks->drm_ms;
	d->stats[KX_DRMI_PASSES] = s->passes;
	d->stats[KX_DRMI_PROCS] = s->procs;
	d->stats[KX_DRMI_FDS] = s->fds;
	d->stats[KX_DRMI_FDINFO_READS] = s->fdinfo_reads;
	d->stats[KX_DRMI_NOT_DRM] = s->not_drm;
	d->stats[KX_DRMI_UNREADABLE] = s->unreadable;
	d->stats[KX_DRMI_DUP_CLIENTS] = t->dup_clients;
	d->stats[KX_DRMI_WENT_BACK] = t->went_back;
	d->stats[KX_DRMI_BAD_LINES] = t->bad_lines;
	d->stats[KX_DRMI_ROWS] = ks->drm_rows;
	d->stats[KX_DRMI_ROWS_LOST] = ks->drm_rows_lost;
	d->stats[KX_DRMI_PASS_NS] = s->pass_ns;
}

static void kxp_tick(void *ctx)
{
	struct kx_kxp_sink *ks = ctx;
	unsigned long long now = kx_mono_ns();

	if (ks->drm && now - ks->last_drm_ns >= (unsigned long long)ks->drm_ms * 1000000ull)
		kxp_drm_pass(ks, now);

	if (now - ks->last_flush_ns >= (unsigned long long)ks->flush_ms * 1000000ull) {
		kxp_syms(ks);
		if (kx_kxp_flush(ks->w) != 0 && !ks->write_error)
			ks->write_error = 1;
		ks->last_flush_ns = now;
	}
}

static int kxp_begin(void *ctx, const struct kx_capinfo *ci, char *err, size_t len)
{
	struct kx_kxp_sink *ks = ctx;

	if ((ci->samples.hz || ci->samples.off_cpu) &&
	    !(ks->syms = kx_symcollect_new(&ks->res, NULL, kxp_put_sym, ks, err, len)))
		return -1;
	if (ks->syms && ks->for_user)
		kx_symcollect_as_process(ks->syms);
	ks->w = ks->stream ? kx_kxp_create_stream(ks->stream, ci, err, len)
	                   : kx_kxp_create(ks->path, ci, err, len);
	ks->last_flush_ns = kx_mono_ns();
	if (ks->w && ks->drm)
		kxp_drm_pass(ks, kx_mono_ns()); /* the baseline */
	return ks->w ? 0 : -1;
}

struct kx_sink kx_sink_kxp(struct kx_kxp_sink *ks)
{
	if (!ks->flush_ms)
		ks->flush_ms = 1000;
	ks->last_flush_ns = kx_mono_ns();
	return (struct kx_sink){.ctx = ks,
	                        .ioctl = kxp_ioctl,
	                        .task = kxp_task,
	                        .job = kxp_job,
	                        .sample = kxp_sample,
	                        .counters = kxp_counters,
	                        .annot = kxp_annot,
	                        .tick = kxp_tick,
	                        .begin = kxp_begin};
}

static void syms_free(struct kx_kxp_sink *ks)
{
	kx_symcollect_free(ks->syms);
	ks->syms = NULL;
	kx_symres_free(&ks->res);
	kx_kmask_free(&ks->kmask);
	kx_drm_sampler_free(ks->drm);
	ks->drm = NULL;
	kx_kmask_free(&ks->jkeys);
}

int kx_kxp_sink_close(struct kx_kxp_sink *ks, const struct kx_capinfo *ci, char *err, size_t len)
{
	struct kx_capinfo *fin = NULL; /* too large for the stack */
	struct kx_kxp_writer *w = ks->w;
	int rc;

	if (!w) {
		syms_free(ks);
		return 0;
	}
	if (ks->drm) {
		kxp_drm_pass(ks, kx_mono_ns()); /* the last interval */
		kxp_drm_facts(ks, &ks->drm_info);
	}
	if ((ks->syms || ks->drm) && ci) {
		kxp_syms(ks);
		fin = malloc(sizeof(*fin));
		if (fin) { /* else the trailer goes without the symbol and DRM figures */
			*fin = *ci;
			if (ks->syms) {
				kx_symcollect_facts(ks->syms, ks->sym_oom, &fin->samples);
				fin->samples.sym_ns = ks->sym_ns;
			}
			if (ks->drm)
				fin->drm = ks->drm_info;
			ci = fin;
		}
	}
	ks->w = NULL;
	rc = kx_kxp_close(w, ci, err, len);
	free(fin);
	syms_free(ks);
	return rc;
}

void kx_kxp_sink_discard(struct kx_kxp_sink *ks)
{
	if (ks->w)
		kx_kxp_discard(ks->w);
	ks->w = NULL;
	syms_free(ks);
}
