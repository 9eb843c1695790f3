/* Live DRM usage for top and serve (see live/drmseries.h). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "capture/clock.h"
#include "capture/drmfdinfo.h"
#include "capture/sampler.h"
#include "export/prometheus.h"
#include "live/drmseries.h"
#include "util/grow.h"

/* One engine series of serve: a client's engine. */
struct series {
	uint32_t pid;
	char comm[16];
	char driver[KX_DRM_NAME];
	char pdev[KX_DRM_PDEV];
	uint64_t client_id;
	char engine[KX_DRM_NAME];
	uint32_t capacity;
	double busy_s; /* busy seconds since the series began (bases other than ns) */
	double kern_s; /* the kernel's running busy total (ns basis), seconds */
	int ns_basis;  /* the driver gives busy ns: kern_s is the counter */
	uint64_t seen; /* the pass it was last in */
};

struct kx_drmlive {
	struct kx_drm_sampler *smp;
	struct kx_session *s;
	int all;
	unsigned int interval_ms;
	uint32_t max_keys;
	pthread_mutex_t lock;         /* everything below, and the sampler */
	const struct kx_drm_ev *rows; /* the last pass's (the sampler's) */
	size_t nrows;
	uint64_t pass;
	struct series *ser;
	size_t nser, ser_cap;
	uint64_t refused; /* engine rows of the last pass without room for their series */
	pthread_t thread;
	int running, stop;
	pthread_cond_t wake;
};

struct kx_drmlive *kx_drmlive_new(const struct kx_drmlive_opts *o)
{
	struct kx_drmlive *l = calloc(1, sizeof(*l));
	pthread_condattr_t ca;

	if (!l)
		return NULL;
	l->smp = kx_drm_sampler_new(o->devs, o->ndevs, o->all);
	if (!l->smp) {
		free(l);
		return NULL;
	}
	l->s = o->s;
	l->all = o->all;
	l->interval_ms = o->interval_ms ? o->interval_ms : KX_DRM_INTERVAL_DEFAULT_MS;
	l->max_keys = o->max_keys ? o->max_keys : 4096;
	pthread_mutex_init(&l->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &ca);
	pthread_condattr_destroy(&ca);
	return l;
}

static struct series *series_of(struct kx_drmlive *l, const struct kx_drm_ev *e)
{
	struct series *s;

	for (size_t i = 0; i < l->nser; i++) {
		s = &l->ser[i];
		if (s->pid == e->pid && s->client_id == e->client_id &&
		    !strcmp(s->engine, e->name) && !strcmp(s->driver, e->driver) &&
		    !strcmp(s->pdev, e->pdev))
			return s;
	}
	if (l->nser >= l->max_keys || kx_grow((void **)&l->ser, &l->ser_cap, l->nser, sizeof(*s)))
		return NULL;
	s = &l->ser[l->nser++];
	memset(s, 0, sizeof(*s));
	s->pid = e->pid;
	s->client_id = e->client_id;
	memcpy(s->driver, e->driver, sizeof(s->driver));
	memcpy(s->pdev, e->pdev, sizeof(s->pdev));
	memcpy(s->engine, e->name, sizeof(s->engine));
	return s;
}

/* The engine series after a pass; those whose client is gone are dropped. */
static void update_series(struct kx_drmlive *l)
{
	size_t keep = 0;

	l->refused = 0;
	for (size_t i = 0; i < l->nrows; i++) {
		const struct kx_drm_ev *e = &l->rows[i];
		struct series *s;
		double share;

		if (e->kind != KX_DRM_ENGINE)
			continue;
		if (!(s = series_of(l, e))) {
			l->refused++;
			continue;
		}
		s->seen = l->pass;
		memcpy(s->comm, e->comm, sizeof(s->comm));
		s->capacity = e->capacity ? e->capacity : 1;
		s->ns_basis = !!(e->has & KX_DRM_E_BUSY);
		s->kern_s = (double)e->v[KX_DRM_V_BUSY_NS] / 1e9;
		share = kx_drm_ev_busy(e);
		if (share >= 0)
			s->busy_s += share * (double)e->interval_ns / 1e9 * s->capacity;
	}
	for (size_t i = 0; i < l->nser; i++)
		if (l->ser[i].seen == l->pass)
			l->ser[keep++] = l->ser[i];
	l->nser = keep;
}

void kx_drmlive_pass(struct kx_drmlive *l)
{
	struct kx_sampler_maps m;

	pthread_mutex_lock(&l->lock);
	if (!l->all && l->s && kx_session_sampler_maps(l->s, &m) == 0)
		kx_drm_sampler_add_pid_map(l->smp, m.pids);
	l->rows = kx_drm_sampler_pass(l->smp, kx_mono_ns(), &l->nrows);
	l->pass++;
	update_series(l);
	pthread_mutex_unlock(&l->lock);
}

static void *drmlive_thread(void *arg)
{
	struct kx_drmlive *l = arg;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&l->lock);
	while (!l->stop) {
		pthread_mutex_unlock(&l->lock);
		kx_drmlive_pass(l);
		pthread_mutex_lock(&l->lock);
		ts.tv_nsec += (long)(l->interval_ms % 1000) * 1000000L;
		ts.tv_sec += l->interval_ms / 1000 + ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		while (!l->stop && pthread_cond_timedwait(&l->wake, &l->lock, &ts) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&l->lock);
	return NULL;
}

int kx_drmlive_start(struct kx_drmlive *l)
{
	if (pthread_create(&l->thread, NULL, drmlive_thread, l))
		return -1;
	l->running = 1;
	return 0;
}

struct kx_drmstats *kx_drmlive_fold(struct kx_drmlive *l)
{
	struct kx_drmstats *st;

	pthread_mutex_lock(&l->lock);
	st = kx_drmstats_build(l->rows, l->nrows);
	pthread_mutex_unlock(&l->lock);
	return st;
}

/* {pid="1",comm="x",driver="amdgpu",pdev="...",client="52", then the caller's labels. */
static void labels(FILE *f, int by_pid, uint32_t pid, const char *comm, const char *driver,
                   const char *pdev, uint64_t client)
{
	char a[64], b[2 * KX_DRM_NAME], c[2 * KX_DRM_PDEV];

	fputc('{', f);
	if (by_pid)
		fprintf(f, "pid=\"%u\",comm=\"%s\",", pid,
		        kx_prom_label_escape(comm, a, sizeof(a)));
	fprintf(f, "driver=\"%s\",pdev=\"%s\",client=\"",
	        kx_prom_label_escape(driver, b, sizeof(b)),
	        kx_prom_label_escape(pdev, c, sizeof(c)));
	if (client != KX_DRM_NO_CLIENT)
		fprintf(f, "%" PRIu64, client);
	fputc('"', f);
}

/* Without pid labels, clients without a drm-client-id cannot be told apart. */
static int unlabelled(int by_pid, uint64_t client)
{
	return !by_pid && client == KX_DRM_NO_CLIENT;
}

/* Returns the series left out (unlabelled). */
static uint64_t prom_engines(struct kx_drmlive *l, FILE *f, int by_pid)
{
	uint64_t left = 0;
	char e[2 * KX_DRM_NAME];

	fputs("# HELP kxprof_drm_engine_busy_seconds_total Time a DRM engine ran a client's work "
	      "(drm-engine-NAME in /proc/PID/fdinfo; where only cycles are given, busy cycles "
	      "over total cycles, or over drm-maxfreq, times the time between passes).\n"
	      "# TYPE kxprof_drm_engine_busy_seconds_total counter\n",
	      f);
	for (size_t i = 0; i < l->nser; i++) {
		const struct series *s = &l->ser[i];

		if (unlabelled(by_pid, s->client_id)) {
			left++;
			continue;
		}
		fputs("kxprof_drm_engine_busy_seconds_total", f);
		labels(f, by_pid, s->pid, s->comm, s->driver, s->pdev, s->client_id);
		fprintf(f, ",engine=\"%s\"} %.9g\n", kx_prom_label_escape(s->engine, e, sizeof(e)),
		        s->ns_basis ? s->kern_s : s->busy_s);
	}
	fputs("# HELP kxprof_drm_engine_capacity Identical hardware engines behind a DRM engine "
	      "name (drm-engine-capacity-NAME, 1 when not given).\n"
	      "# TYPE kxprof_drm_engine_capacity gauge\n",
	      f);
	for (size_t i = 0; i < l->nser; i++) {
		const struct series *s = &l->ser[i];

		if (unlabelled(by_pid, s->client_id))
			continue;
		fputs("kxprof_drm_engine_capacity", f);
		labels(f, by_pid, s->pid, s->comm, s->driver, s->pdev, s->client_id);
		fprintf(f, ",engine=\"%s\"} %u\n", kx_prom_label_escape(s->engine, e, sizeof(e)),
		        s->capacity);
	}
	return left;
}

/* Memory of the last pass; returns the region rows left out past the key limit. */
static uint64_t prom_memory(struct kx_drmlive *l, FILE *f, int by_pid)
{
	char r[2 * KX_DRM_NAME];
	uint64_t shown = 0, left = 0;

	fputs("# HELP kxprof_drm_memory_bytes Memory of a DRM client in a region at the last "
	      "pass, by kind: total, shared, resident, purgeable, active (drm-KIND-REGION in "
	      "/proc/PID/fdinfo; resident also from the older drm-memory-REGION).\n"
	      "# TYPE kxprof_drm_memory_bytes gauge\n",
	      f);
	for (size_t i = 0; i < l->nrows; i++) {
		const struct kx_drm_ev *e = &l->rows[i];

		if (e->kind != KX_DRM_MEMORY)
			continue;
		if (shown >= l->max_keys || unlabelled(by_pid, e->client_id)) {
			left++;
			continue;
		}
		shown++;
		for (int k = 0; k < KX_DRM_MEM_MAX; k++) {
			if (!(e->has & (1u << k)))
				continue;
			fputs("kxprof_drm_memory_bytes", f);
			labels(f, by_pid, e->pid, e->comm, e->driver, e->pdev, e->client_id);
			fprintf(f, ",region=\"%s\",kind=\"%s\"} %" PRIu64 "\n",
			        kx_prom_label_escape(e->name, r, sizeof(r)), kx_drm_mem_names[k],
			        e->v[k]);
		}
	}
	return left;
}

int kx_drmlive_prom(struct kx_drmlive *l, FILE *f, int by_pid)
{
	const struct kx_drm_sampler_stats *st;
	uint64_t left;

	pthread_mutex_lock(&l->lock);
	st = kx_drm_sampler_stats(l->smp);
	left = prom_engines(l, f, by_pid);
	left += prom_memory(l, f, by_pid);
	fprintf(f,
	        "# HELP kxprof_drm_series_dropped DRM engine and region series of the last pass "
	        "left out: more than --max-keys, or clients without a drm-client-id while series "
	        "carry no pid label (--by-pid).\n"
	        "# TYPE kxprof_drm_series_dropped gauge\n"
	        "kxprof_drm_series_dropped %" PRIu64 "\n"
	        "# HELP kxprof_drm_passes_total Passes of the DRM usage sampler over the traced "
	        "processes.\n"
	        "# TYPE kxprof_drm_passes_total counter\n"
	        "kxprof_drm_passes_total %" PRIu64 "\n"
	        "# HELP kxprof_drm_fdinfo_reads_total fdinfo files read (DRM and accel fds only).\n"
	        "# TYPE kxprof_drm_fdinfo_reads_total counter\n"
	        "kxprof_drm_fdinfo_reads_total %" PRIu64 "\n",
	        l->refused + left, st->passes, st->fdinfo_reads);
	pthread_mutex_unlock(&l->lock);
	return ferror(f) ? -1 : 0;
}

void kx_drmlive_free(struct kx_drmlive *l)
{
	if (!l)
		return;
	if (l->running) {
		pthread_mutex_lock(&l->lock);
		l->stop = 1;
		pthread_cond_signal(&l->wake);
		pthread_mutex_unlock(&l->lock);
		pthread_join(l->thread, NULL);
	}
	kx_drm_sampler_free(l->smp);
	free(l->ser);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->lock);
	free(l);
}
