/* The live interval protocol of top and serve (contract: interval.h). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/clock.h"
#include "capture/drmfdinfo.h"
#include "live/annagg.h"
#include "live/drmseries.h"
#include "live/interval.h"
#include "live/jobagg.h"
#include "util/hist.h"

/* The capture's sink: job records (and the KVM_RUN ioctls that start KVM
 * jobs) and annotation records, paired online. */
static void on_job(void *ctx, const struct kx_job *j)
{
	kx_jobagg_add(((struct kx_live *)ctx)->jobs, j);
}

static void on_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	(void)arg;
	kx_jobagg_ioctl(((struct kx_live *)ctx)->jobs, e);
}

static void on_annot(void *ctx, const struct kx_ann *e, const char *name, const char *cat)
{
	kx_annagg_add(((struct kx_live *)ctx)->anns, e, name, cat);
}

int kx_live_open(struct kx_live *l, struct kx_capture_opts *o, const char *pid_list,
                 enum kx_agg_by by, char *err, size_t len)
{
	o->all = l->all = pid_list == NULL;
	o->agg_by_pid = by == KX_AGG_BY_PID;
	o->agg_by_cgroup = by == KX_AGG_BY_CGROUP;
	l->devices = o->devices;
	o->pids = l->c.live_pids;
	o->npids = 0;
	if (pid_list &&
	    kx_pidset_parse(pid_list, l->c.live_pids, KX_MAX_PIDS, &o->npids, err, len) != 0)
		return -1;
	l->jobs = kx_jobagg_new(0, 0);
	l->anns = kx_annagg_new(o->agg_max_keys);
	if (!l->jobs || !l->anns) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	/* Aggregate mode sends no ioctl records; job and annotation records do flow. */
	o->ringbuf_bytes = 1 << 20;
	o->no_drvhooks = 1;
	o->aggregate = 1;
	o->annotate = 1;
	o->sink = (struct kx_sink){.ctx = l, .ioctl = on_ioctl, .job = on_job, .annot = on_annot};
	if (kx_capture_open(&l->c, o, err, len) || kx_capture_start(&l->c, err, len))
		return -1;
	l->by = by;
	if (!(l->agg = kx_agg_new(l->c.s, by))) {
		snprintf(err, len, "out of memory");
		return -1;
	}
	l->jobs_attached = kx_capture_jobs_attached(kx_session_capinfo(l->c.s));
	return 0;
}

int kx_live_drm(struct kx_live *l, int want, unsigned int interval_ms, uint32_t max_keys,
                int thread, char *err, size_t len)
{
	struct kx_drmlive_opts d = {.devs = l->devices->dev,
	                            .ndevs = l->devices->n,
	                            .all = l->all,
	                            .s = l->c.s,
	                            .interval_ms = interval_ms,
	                            .max_keys = max_keys};

	if (want < 0 || (!want && !kx_drm_devices_traced(d.devs, d.ndevs)))
		return 0;
	l->drm = kx_drmlive_new(&d);
	if (!l->drm || (thread && kx_drmlive_start(l->drm))) {
		snprintf(err, len, "cannot start the DRM usage sampler: out of memory or threads");
		return -1;
	}
	if (!thread)
		kx_drmlive_pass(l->drm);
	return 0;
}

void kx_live_close(struct kx_live *l)
{
	kx_drmlive_free(l->drm); /* it reads the session's pid set */
	kx_agg_free(l->agg);
	kx_capture_close(&l->c);
	/* The consumer fed these until the capture closed. */
	kx_jobagg_free(l->jobs);
	kx_annagg_free(l->anns);
}

int kx_live_read(struct kx_live *l, struct kx_live_snap *out, int reset, char *err, size_t len)
{
	memset(out, 0, sizeof(*out));
	if (kx_agg_snapshot(l->agg, &out->agg, reset, err, len))
		return -1;
	if (kx_jobagg_snapshot(l->jobs, &out->jobs, kx_mono_ns(), reset) ||
	    kx_annagg_snapshot(l->anns, &out->anns, reset)) {
		kx_live_snap_free(out);
		snprintf(err, len, "out of memory");
		return -2;
	}
	return 0;
}

void kx_live_snap_free(struct kx_live_snap *s)
{
	kx_agg_snapshot_free(&s->agg);
	kx_jobagg_snapshot_free(&s->jobs);
	kx_annagg_snapshot_free(&s->anns);
}

int kx_live_begin(struct kx_live *l, struct kx_live_interval *iv, char *err, size_t len)
{
	memset(iv, 0, sizeof(*iv));
	return kx_agg_snapshot(l->agg, &iv->prev, 0, err, len);
}

/* Rows of cur without a process name take the one prev had for the process. */
static void keep_names(struct kx_agg_snapshot *cur, const struct kx_agg_snapshot *prev)
{
	for (size_t i = 0; i < cur->nrows; i++) {
		struct kx_agg_row *r = &cur->rows[i];

		for (size_t j = 0; !r->comm[0] && j < prev->nrows; j++)
			if (prev->rows[j].key.who == r->key.who && prev->rows[j].comm[0])
				memcpy(r->comm, prev->rows[j].comm, sizeof(r->comm));
	}
}

int kx_live_push(struct kx_live_interval *iv, struct kx_agg_snapshot *cur)
{
	keep_names(cur, &iv->prev);
	kx_agg_snapshot_free(&iv->last);
	if (kx_agg_diff(cur, &iv->prev, &iv->last)) {
		kx_agg_snapshot_free(cur);
		return -1;
	}
	kx_agg_snapshot_free(&iv->prev);
	iv->prev = *cur;
	iv->have_last = 1;
	return 0;
}

/* ns as a share of interval_s, in percent (0 without an interval). */
static double pct_of(uint64_t ns, double interval_s)
{
	return interval_s > 0 ? 100.0 * (double)ns / 1e9 / interval_s : 0;
}

void kx_live_busiest(const struct kx_jobagg_snapshot *js, double interval_s,
                     struct kx_live_busy *out)
{
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < js->ndevs; i++) {
		double pct = pct_of(js->devs[i].busy_ns, interval_s);

		out->inflight += js->devs[i].inflight;
		if (!out->device[0] || pct > out->busy_pct) {
			out->busy_pct = pct > 100 ? 100 : pct;
			/* the share the cut may hide, up to the interval */
			out->cut_pct = pct_of(js->devs[i].busy_cut_ns, interval_s);
			if (out->cut_pct > 100 - out->busy_pct)
				out->cut_pct = 100 - out->busy_pct;
			snprintf(out->device, sizeof(out->device), "%s", js->devs[i].device);
		}
	}
}

void kx_live_busy_line(const struct kx_live_busy *b, int attached, char *buf, size_t len)
{
	if (!attached)
		snprintf(buf, len, "jobs in flight: -  device busy: -  (no job source attached)");
	else if (!b->device[0])
		snprintf(buf, len,
		         "jobs in flight: %" PRIu64 "  device busy: -  (no jobs seen yet)",
		         b->inflight);
	else if (b->cut_pct > 0)
		snprintf(buf, len,
		         "jobs in flight: %" PRIu64 "  device busy: >=%.0f%% (%s; up to %s%.0f%% "
		         "more cut)",
		         b->inflight, b->busy_pct, b->device, b->cut_pct < 1 ? "<" : "",
		         b->cut_pct < 1 ? 1 : b->cut_pct);
	else
		snprintf(buf, len, "jobs in flight: %" PRIu64 "  device busy: %.0f%% (%s)",
		         b->inflight, b->busy_pct, b->device);
}

int kx_live_step(struct kx_live *l, struct kx_live_interval *iv, char *err, size_t len)
{
	struct kx_live_snap s;

	if (kx_live_read(l, &s, 1, err, len))
		return -1;
	if (kx_live_push(iv, &s.agg)) {
		s.agg = (struct kx_agg_snapshot){0};
		kx_live_snap_free(&s);
		snprintf(err, len, "out of memory");
		return -1;
	}
	kx_live_busiest(&s.jobs, iv->last.interval_s, &iv->busy);
	kx_jobagg_snapshot_free(&s.jobs);
	kx_annagg_snapshot_free(&iv->anns);
	iv->anns = s.anns;
	if (l->drm) {
		kx_drmlive_pass(l->drm);
		kx_drmstats_free(iv->drm);
		iv->drm = kx_drmlive_fold(l->drm);
	}
	/* Per-process keys of exited processes would fill the map. */
	kx_agg_prune_exited(l->agg);
	return 0;
}

void kx_live_interval_free(struct kx_live_interval *iv)
{
	kx_agg_snapshot_free(&iv->prev);
	kx_agg_snapshot_free(&iv->last);
	kx_annagg_snapshot_free(&iv->anns);
	kx_drmstats_free(iv->drm);
}

size_t kx_live_rows(const struct kx_agg_snapshot *d, struct kx_live_row *out)
{
	size_t n = 0;

	for (size_t i = 0; i < d->nrows; i++) {
		const struct kx_agg_row *r = &d->rows[i];
		struct kx_live_row *t = &out[n];

		if (!r->count && !r->errors)
			continue;
		t->r = r;
		t->rate = d->interval_s > 0 ? r->count / d->interval_s : 0;
		t->err_rate = d->interval_s > 0 ? r->errors / d->interval_s : 0;
		t->p50 = kx_hist_fine_quantile(r->fine, r->count, KX_PPM(50), r->min_ns, r->max_ns);
		t->p99 = kx_hist_fine_quantile(r->fine, r->count, KX_PPM(99), r->min_ns, r->max_ns);
		/* The exact max when the key knows it (not in diffs), else the top slot's. */
		t->max = r->max_ns ? r->max_ns
		                   : kx_hist_fine_quantile(r->fine, r->count, KX_PPM(100), 0, 0);
		t->offcpu_pct = r->sum_ns ? 100.0 * (double)r->offcpu_ns / (double)r->sum_ns : 0;
		n++;
	}
	return n;
}

static int cmp_range(const void *pa, const void *pb)
{
	const struct kx_annagg_series *a = ((const struct kx_live_range *)pa)->s;
	const struct kx_annagg_series *b = ((const struct kx_live_range *)pb)->s;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return strcmp(a->name, b->name);
}

size_t kx_live_ranges(const struct kx_annagg_snapshot *s, double interval_s,
                      struct kx_live_range *out)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nseries; i++) {
		const struct kx_annagg_series *r = &s->series[i];
		uint64_t durs = r->mark ? 0 : r->count; /* a mark has no duration */
		struct kx_live_range *t = &out[n];

		if (!r->count)
			continue;
		t->s = r;
		t->rate = interval_s > 0 ? (double)r->count / interval_s : 0;
		t->p50 = kx_hist_fine_quantile(r->fine, durs, KX_PPM(50), r->min_ns, r->max_ns);
		t->p99 = kx_hist_fine_quantile(r->fine, durs, KX_PPM(99), r->min_ns, r->max_ns);
		t->max = durs ? r->max_ns : 0;
		n++;
	}
	qsort(out, n, sizeof(*out), cmp_range);
	return n;
}
