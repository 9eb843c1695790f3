/*
 * Live aggregates (contract: aggregate.h). Owns making snapshots of the
 * session's aggregates (naming and sorting rows), diffs, folds, and which
 * keys are reset or pruned. One mutex serializes every map walk with
 * device-list changes, so several HTTP threads and a signal-driven rescan
 * can share one session.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "analysis/stats.h"
#include "live/aggregate.h"
#include "capture/clock.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "util/hist.h"

struct kx_agg {
	struct kx_session *s;
	enum kx_agg_by by;
	uint64_t since_mono_ns;
	pthread_mutex_t lock; /* serializes every session call */
};

struct kx_agg *kx_agg_new(struct kx_session *s, enum kx_agg_by by)
{
	struct kx_agg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->s = s;
	a->by = by;
	a->since_mono_ns = kx_session_capinfo(s)->start_mono_ns;
	if (!a->since_mono_ns)
		a->since_mono_ns = kx_mono_ns();
	pthread_mutex_init(&a->lock, NULL);
	return a;
}

void kx_agg_free(struct kx_agg *a)
{
	if (!a)
		return;
	pthread_mutex_destroy(&a->lock);
	free(a);
}

static void read_comm(uint64_t pid, char *out, size_t len)
{
	char path[48];
	FILE *f;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%llu/comm", (unsigned long long)pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)len, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

static void row_set(struct kx_agg_row *r, const struct kx_agg_key *k, const struct kx_agg_val *v,
                    const struct kx_capinfo *ci, enum kx_agg_by by)
{
	char buf[96];

	memset(r, 0, sizeof(*r));
	r->key = *k;
	memcpy(r->fine, v->fine, sizeof(r->fine));
	r->count = kx_hist_fine_count(r->fine);
	r->errors = v->errors;
	r->sum_ns = v->sum_ns;
	r->offcpu_ns = v->offcpu_ns;
	r->max_ns = v->max_ns;
	/* A key is created before its first update: min may still be the template's. */
	r->min_ns = r->count && v->min_ns != ~0ULL ? v->min_ns : 0;
	snprintf(r->driver, sizeof(r->driver), "%s", kx_driver_name(k->drv));
	kx_device_label(ci->devices, (int)ci->ndevices, k->fkind, k->dev, r->device,
	                sizeof(r->device));
	snprintf(r->ioctl, sizeof(r->ioctl), "%s",
	         kx_ioctl_name(k->drv, k->cmd, k->xfer_cmd, buf, sizeof(buf)));
	if (by == KX_AGG_BY_PID)
		read_comm(k->who, r->comm, sizeof(r->comm));
}

/* Everything about the capture a snapshot carries besides its rows. */
static void snapshot_facts(struct kx_agg *a, struct kx_agg_snapshot *out)
{
	const struct kx_capinfo *ci = kx_session_capinfo(a->s);

	out->since_mono_ns = a->since_mono_ns;
	out->realtime_offset_ns = ci->clock_start.offset_ns;
	out->by = a->by;
	out->offcpu_measured = kx_stats_offcpu_attached(ci);
	out->max_keys = kx_session_agg_max_keys(a->s);
	out->overflow = kx_session_stat(a->s, KX_STAT_AGG_OVERFLOW);
	out->dropped = kx_session_stat(a->s, KX_STAT_DROPPED) +
	               kx_session_stat(a->s, KX_STAT_TASK_DROPPED);
	out->inflight_full = kx_session_stat(a->s, KX_STAT_INFLIGHT_FULL);
	out->bpf_missed = ci->bpf_missed;
	out->job_done_lost = kx_session_stat(a->s, KX_STAT_JOB_DONE_LOST);
}

int kx_agg_snapshot(struct kx_agg *a, struct kx_agg_snapshot *out, int reset, char *err, size_t len)
{
	const struct kx_capinfo *ci;
	struct kx_agg_entry *e = NULL;
	size_t n;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->lock);
	if (kx_session_agg_read(a->s, reset, &e, &n, err, len))
		goto fail;
	out->mono_ns = kx_mono_ns();
	out->rows = n ? calloc(n, sizeof(*out->rows)) : NULL;
	if (n && !out->rows) {
		snprintf(err, len, "out of memory");
		goto fail;
	}
	ci = kx_session_capinfo(a->s);
	for (size_t i = 0; i < n; i++)
		row_set(&out->rows[i], &e[i].key, &e[i].val, ci, a->by);
	out->nrows = n;
	kx_agg_snapshot_sort(out);
	snapshot_facts(a, out);
	if (reset)
		a->since_mono_ns = out->mono_ns;
	pthread_mutex_unlock(&a->lock);
	free(e);
	return 0;
fail:
	pthread_mutex_unlock(&a->lock);
	free(e);
	kx_agg_snapshot_free(out);
	return -1;
}

int kx_agg_set_devices(struct kx_agg *a, const struct kx_device *d, int n, char *err, size_t len)
{
	int rc;

	pthread_mutex_lock(&a->lock);
	rc = kx_session_set_devices(a->s, d, n, err, len);
	pthread_mutex_unlock(&a->lock);
	return rc;
}

/* Keys of processes that no longer exist. */
static int exited(const struct kx_agg_key *k, void *ctx)
{
	(void)ctx;
	return k->who && kill((pid_t)k->who, 0) != 0 && errno == ESRCH;
}

int kx_agg_prune_exited(struct kx_agg *a)
{
	int pruned;

	if (a->by != KX_AGG_BY_PID)
		return 0;
	pthread_mutex_lock(&a->lock);
	pruned = kx_session_agg_drop(a->s, exited, NULL);
	pthread_mutex_unlock(&a->lock);
	return pruned;
}

void kx_agg_capinfo(struct kx_agg *a, struct kx_capinfo *out)
{
	pthread_mutex_lock(&a->lock);
	*out = *kx_session_capinfo(a->s);
	pthread_mutex_unlock(&a->lock);
}
