/*
 * Live job aggregates (contract: jobagg.h; the pairing rules are
 * analysis/jobpair.h's). The job table is a fixed pool of entries, indexed by
 * a fixed-size util/hashmap.h map (so memory stays bounded) and kept on an
 * age list for eviction, oldest first; entries are taken from a high-water
 * mark, so the pool's pages are touched only as jobs come.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobpair.h"
#include "live/jobagg.h"
#include "registry/devices.h"
#include "util/hashmap.h"
#include "util/hist.h"

struct ent {
	struct kx_tjob t;
	uint64_t key[3]; /* kx_jobpair_key */
	uint16_t series;
	uint32_t nextfree;     /* free list (index + 1, 0 = end) */
	uint32_t older, newer; /* age list (index + 1, 0 = end) */
};

struct ival {
	uint64_t a, b; /* CLOCK_MONOTONIC ns */
};

struct devst {
	char device[48];
	uint64_t jobs, completed, inflight;
	uint64_t busy_ns;  /* intervals folded in (and no longer in iv) */
	uint64_t floor;    /* ns: intervals are cut to start here (folded or reset before) */
	uint64_t reset_at; /* ns: the last reset (0: none) */
	uint64_t cut_ns;   /* busy time cut at a fold's floor (since the last reset) */
	struct ival *iv;   /* disjoint, by start: max_ivals of the table's ivs */
	uint32_t niv, max_ivals;
};

struct kx_jobagg {
	pthread_mutex_t mu;
	uint32_t max_pending, max_series;
	struct ent *p;
	struct kx_hmap map; /* hash of the key -> index in p */
	uint32_t free_head, hiwater, nopen, oldest, newest;
	struct kx_jobagg_series *series;
	uint16_t *series_dev;
	size_t nseries, last;
	struct devst *devs;
	size_t ndevs;
	struct ival *ivs; /* max_ivals per device */
	uint32_t max_ivals;
	struct kx_job *exits; /* KVM exits waiting for their KVM_RUN record, by arrival */
	size_t nexits;
	struct kx_jobs_anomalies anom; /* what the pairing rules count (not exported) */
	uint64_t overflow;
};

struct kx_jobagg *kx_jobagg_new(uint32_t max_pending, uint32_t max_series)
{
	struct kx_jobagg *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->max_pending = max_pending ? max_pending : KX_JOBAGG_MAX_PENDING;
	a->max_series = max_series ? max_series : KX_JOBAGG_MAX_SERIES;
	if (a->max_series > UINT16_MAX)
		a->max_series = UINT16_MAX;
	a->p = calloc(a->max_pending, sizeof(*a->p));
	a->series = calloc(a->max_series, sizeof(*a->series));
	a->series_dev = calloc(a->max_series, sizeof(*a->series_dev));
	a->devs = calloc(a->max_series, sizeof(*a->devs));
	a->exits = calloc(KX_JOBAGG_MAX_EXITS, sizeof(*a->exits));
	a->max_ivals = KX_JOBAGG_MAX_IVALS;
	a->ivs = calloc((size_t)a->max_series * a->max_ivals, sizeof(*a->ivs));
	if (!a->p || !a->series || !a->series_dev || !a->devs || !a->exits || !a->ivs ||
	    kx_hmap_init_fixed(&a->map, a->max_pending)) {
		kx_jobagg_free(a);
		return NULL;
	}
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

void kx_jobagg_free(struct kx_jobagg *a)
{
	if (!a)
		return;
	if (a->p && a->map.slot && a->series && a->series_dev && a->devs && a->exits && a->ivs)
		pthread_mutex_destroy(&a->mu);
	free(a->p);
	kx_hmap_free(&a->map);
	free(a->series);
	free(a->series_dev);
	free(a->devs);
	free(a->exits);
	free(a->ivs);
	free(a);
}

int kx_jobagg_set_max_ivals(struct kx_jobagg *a, uint32_t max_ivals)
{
	struct ival *iv;

	if (a->ndevs || !max_ivals)
		return -1;
	iv = calloc((size_t)a->max_series * max_ivals, sizeof(*iv));
	if (!iv)
		return -1;
	free(a->ivs);
	a->ivs = iv;
	a->max_ivals = max_ivals;
	return 0;
}

/* ---- series and devices ---- */

/* The (device, ring) labels of a job whose first event is j. */
static void labels(const struct kx_job *j, char *device, size_t dlen, char *ring, size_t rlen)
{
	char disk[KX_DISK_NAME_LEN];
	size_t n = strnlen(j->ring, sizeof(j->ring));
	const char *name = j->ring;

	/* A ring per vCPU thread would make a series per thread that ever ran. */
	if (j->src == KX_JOB_SRC_KVM)
		n = strlen(name = "vcpu");
	/* Classic block records carry the disk's dev_t only: the registry names it. */
	if (!n && j->src == KX_JOB_SRC_BLOCK && j->dev)
		n = strlen(name = kx_block_disk_name(j->dev, disk, sizeof(disk)));
	if (n)
		snprintf(ring, rlen, "%.*s", (int)n, name);
	else
		snprintf(ring, rlen, "default");
	if (j->src != KX_JOB_SRC_BLOCK)
		snprintf(device, dlen, "%s", kx_job_src_name(j->src));
	else if (n)
		snprintf(device, dlen, "%s", ring);
	else
		snprintf(device, dlen, "block %u:%u", KX_MAJOR(j->dev), KX_MINOR(j->dev));
}

static size_t dev_get(struct kx_jobagg *a, const char *device)
{
	size_t d;

	for (d = 0; d < a->ndevs; d++)
		if (!strcmp(a->devs[d].device, device))
			return d;
	memset(&a->devs[d], 0, sizeof(a->devs[d]));
	snprintf(a->devs[d].device, sizeof(a->devs[d].device), "%s", device);
	a->devs[d].iv = a->ivs + d * a->max_ivals;
	a->devs[d].max_ivals = a->max_ivals;
	a->ndevs++;
	return d;
}

/* Series index of the job whose first event is j, added when new; -1 past the limit. */
static long series_get(struct kx_jobagg *a, const struct kx_job *j)
{
	char device[sizeof(a->series->device)], ring[sizeof(a->series->ring)];
	struct kx_jobagg_series *s;

	labels(j, device, sizeof(device), ring, sizeof(ring));
	if (a->last < a->nseries && !strcmp(a->series[a->last].device, device) &&
	    !strcmp(a->series[a->last].ring, ring))
		return (long)a->last;
	for (size_t i = 0; i < a->nseries; i++)
		if (!strcmp(a->series[i].device, device) && !strcmp(a->series[i].ring, ring))
			return (long)(a->last = i);
	if (a->nseries >= a->max_series)
		return -1;
	s = &a->series[a->nseries];
	memset(s, 0, sizeof(*s));
	memcpy(s->device, device, sizeof(device));
	memcpy(s->ring, ring, sizeof(ring));
	/* Devices are at most as many as series: the table has room. */
	a->series_dev[a->nseries] = (uint16_t)dev_get(a, device);
	a->last = a->nseries;
	return (long)a->nseries++;
}

/* ---- busy intervals ---- */

static void ival_fold_first(struct devst *d)
{
	d->busy_ns += d->iv[0].b - d->iv[0].a;
	if (d->iv[0].b > d->floor)
		d->floor = d->iv[0].b;
	memmove(&d->iv[0], &d->iv[1], (d->niv - 1) * sizeof(d->iv[0]));
	d->niv--;
}

/* The part of [a, b] that a fold's floor cuts (not a reset's: busy time
 * before a reset is not the snapshot's): busy time that may be missing. */
static uint64_t cut_by_fold(const struct devst *d, uint64_t a, uint64_t b)
{
	uint64_t lo = a > d->reset_at ? a : d->reset_at, hi = b < d->floor ? b : d->floor;

	return hi > lo ? hi - lo : 0;
}

/* Adds [a, b] to the device's union of busy intervals. */
static void ival_add(struct devst *d, uint64_t a, uint64_t b)
{
	uint32_t i, k;

	if (a < d->floor) {
		d->cut_ns += cut_by_fold(d, a, b);
		a = d->floor;
	}
	if (b <= a)
		return;
	for (i = 0; i < d->niv && d->iv[i].b < a; i++)
		;
	for (k = i; k < d->niv && d->iv[k].a <= b; k++) {
		if (d->iv[k].a < a)
			a = d->iv[k].a;
		if (d->iv[k].b > b)
			b = d->iv[k].b;
	}
	if (k == i && d->niv == d->max_ivals) {
		if (i == 0) { /* older than every interval kept: folded in at once */
			d->busy_ns += b - a;
			d->floor = b > d->floor ? b : d->floor;
			return;
		}
		ival_fold_first(d);
		i--;
		k--;
	}
	/* [i, k) merge into one at i. */
	memmove(&d->iv[i + 1], &d->iv[k], (d->niv - k) * sizeof(d->iv[0]));
	d->niv = d->niv - (k - i) + 1;
	d->iv[i] = (struct ival){a, b};
}

/* Busy time up to now: folded, kept, and since run0 (the earliest RUN of
 * jobs still running, UINT64_MAX: none) where no interval covers it; *cut:
 * the busy time that may be missing from it (cut at a fold's floor). */
static uint64_t dev_busy(const struct devst *d, uint64_t run0, uint64_t now, uint64_t *cut)
{
	uint64_t t = d->busy_ns, covered = 0;

	*cut = d->cut_ns;
	if (run0 < d->floor) {
		*cut += cut_by_fold(d, run0, now);
		run0 = d->floor;
	}
	for (uint32_t i = 0; i < d->niv; i++) {
		uint64_t a = d->iv[i].a > run0 ? d->iv[i].a : run0;
		uint64_t b = d->iv[i].b < now ? d->iv[i].b : now;

		t += d->iv[i].b - d->iv[i].a;
		if (b > a)
			covered += b - a;
	}
	if (run0 < now)
		t += now - run0 - covered;
	return t;
}

/* Starts the device's busy time over at now. */
static void dev_reset(struct devst *d, uint64_t now)
{
	uint32_t n = 0;

	d->busy_ns = d->jobs = d->completed = d->cut_ns = 0;
	if (now > d->floor)
		d->floor = now;
	if (now > d->reset_at)
		d->reset_at = now;
	for (uint32_t i = 0; i < d->niv; i++) {
		if (d->iv[i].b <= now)
			continue;
		d->iv[n] = d->iv[i];
		if (d->iv[n].a < now)
			d->iv[n].a = now;
		n++;
	}
	d->niv = n;
}

/* ---- what a job's progress adds ---- */

/* Job t of series s just got its RUN (had_run 0) or its DONE (was_closed 0). */
static void progress(struct kx_jobagg *a, const struct kx_tjob *t, uint16_t s, int had_run,
                     int was_closed)
{
	struct kx_jobagg_series *se = &a->series[s];
	struct devst *d = &a->devs[a->series_dev[s]];
	const struct kx_jobrec *r = &t->r;
	uint64_t x, y;

	/* Live events of two CPUs race: a RUN stamped before its QUEUE waited 0. */
	if (!had_run && kx_jobrec_queue_delay(r, 1, &x)) {
		se->queue_slots[kx_hist_slot(x)]++;
		se->queue_sum_ns += x;
	}
	if (was_closed || !t->closed)
		return;
	d->completed++;
	if (d->inflight)
		d->inflight--;
	if (kx_jobrec_exec(r, &x)) {
		se->exec_slots[kx_hist_slot(x)]++;
		se->exec_sum_ns += x;
	}
	if (kx_jobrec_busy(r, 0, &x, &y))
		ival_add(d, x, y);
}

/* ---- the job table ---- */

static uint64_t key_hash(const uint64_t k[3])
{
	return kx_hash_combine(kx_hash_combine(kx_hash_combine(0, k[0]), k[1]), k[2]);
}

/* Entry (index + 1) of the key, 0 when absent; *pos is its place in the map. */
static uint32_t find(const struct kx_jobagg *a, const uint64_t k[3], size_t *pos)
{
	uint32_t *i;

	*pos = KX_HMAP_START;
	while ((i = kx_hmap_next(&a->map, key_hash(k), pos)))
		if (!memcmp(a->p[*i].key, k, sizeof(a->p[*i].key)))
			return *i + 1;
	return 0;
}

/* Removes entry i (1-based), at pos in the map, and frees it; an open job is lost. */
static void drop(struct kx_jobagg *a, uint32_t i, size_t pos)
{
	struct ent *e = &a->p[i - 1];

	kx_hmap_del_at(&a->map, pos);
	if (e->older)
		a->p[e->older - 1].newer = e->newer;
	else
		a->oldest = e->newer;
	if (e->newer)
		a->p[e->newer - 1].older = e->older;
	else
		a->newest = e->older;
	if (!e->t.closed) {
		struct devst *d = &a->devs[a->series_dev[e->series]];

		if (d->inflight)
			d->inflight--;
		a->nopen--;
	}
	e->nextfree = a->free_head;
	a->free_head = i;
}

/* A free entry (index + 1): the free list, the high-water mark, else the
 * oldest job's (an open one is counted lost). */
static uint32_t take(struct kx_jobagg *a)
{
	uint32_t i;
	size_t pos;

	if (!a->free_head && a->hiwater < a->max_pending)
		return ++a->hiwater;
	if (!a->free_head) {
		struct ent *o = &a->p[a->oldest - 1];

		a->overflow += !o->t.closed;
		i = find(a, o->key, &pos);
		drop(a, i, pos);
	}
	i = a->free_head;
	a->free_head = a->p[i - 1].nextfree;
	return i;
}

/* Is there room for an entry without losing an open job? */
static int room(const struct kx_jobagg *a)
{
	return a->free_head || a->hiwater < a->max_pending || a->p[a->oldest - 1].t.closed;
}

/* A new job whose first phase is j. One done at once (its start was
 * missed) is counted, and kept only where it costs no open job. */
static void job_new(struct kx_jobagg *a, const struct kx_job *j, const uint64_t k[3])
{
	long s = series_get(a, j);
	struct kx_tjob t;
	struct ent *e;
	uint32_t i;

	if (s < 0) {
		a->overflow++;
		return;
	}
	kx_tjob_init(&t);
	kx_tjob_first(&t, j);
	a->devs[a->series_dev[s]].jobs++;
	a->devs[a->series_dev[s]].inflight++;
	progress(a, &t, (uint16_t)s, 0, 0);
	if (t.closed && !room(a))
		return;
	i = take(a);
	e = &a->p[i - 1];
	memset(e, 0, sizeof(*e));
	e->t = t;
	memcpy(e->key, k, sizeof(e->key));
	e->series = (uint16_t)s;
	/* Cannot fail: the map holds max_pending entries and one was free. */
	kx_hmap_add(&a->map, key_hash(k), i - 1);
	e->older = a->newest;
	if (a->newest)
		a->p[a->newest - 1].newer = i;
	else
		a->oldest = i;
	a->newest = i;
	a->nopen += !t.closed;
}

/* QUEUE, RUN or DONE of a keyed source. */
static void phase_add(struct kx_jobagg *a, const struct kx_job *j)
{
	uint64_t k[3];
	struct ent *e = NULL;
	size_t pos;
	uint32_t i;
	int had_run, was_closed;

	kx_jobpair_key(j, k);
	i = find(a, k, &pos);
	if (i)
		e = &a->p[i - 1];
	had_run = e && e->t.r.run_ts;
	was_closed = e && e->t.closed;
	if (kx_jobpair_phase(e ? &e->t : NULL, j, &a->anom)) {
		if (e) /* a finished job's reused key: the slot goes to the new job */
			drop(a, i, pos);
		job_new(a, j, k);
		return;
	}
	progress(a, &e->t, e->series, had_run, was_closed);
	if (!was_closed && e->t.closed)
		a->nopen--;
}

/* ---- KVM ---- */

/* The job of KVM exit x, inside the KVM_RUN io (NULL: in none). */
static void kvm_job(struct kx_jobagg *a, const struct kx_job *x, const struct kx_ioctl *io)
{
	struct kx_tjob t;
	long s;

	kx_tjob_kvm(&t, x, io, io ? 0 : -1);
	s = series_get(a, x);
	if (s < 0) {
		a->overflow++;
		return;
	}
	a->devs[a->series_dev[s]].jobs++;
	a->devs[a->series_dev[s]].inflight++;
	progress(a, &t, (uint16_t)s, 0, 0);
}

static void exit_add(struct kx_jobagg *a, const struct kx_job *x)
{
	if (a->nexits == KX_JOBAGG_MAX_EXITS) {
		/* Its KVM_RUN record is long overdue (its thread ran none since,
		 * or the call began before the capture): a job without a start. */
		kvm_job(a, &a->exits[0], NULL);
		memmove(&a->exits[0], &a->exits[1], (a->nexits - 1) * sizeof(*a->exits));
		a->nexits--;
	}
	a->exits[a->nexits++] = *x;
}

void kx_jobagg_ioctl(struct kx_jobagg *a, const struct kx_ioctl *io)
{
	size_t n = 0;
	int used = 0;

	if (!kx_kvm_run(io))
		return;
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->nexits; i++) {
		const struct kx_job *x = &a->exits[i];

		if (kx_kvm_tid(x) != io->tid || (x->ts >= io->ts && !kx_kvm_run_holds(io, x->ts))) {
			a->exits[n++] = *x;
			continue;
		}
		if (x->ts < io->ts) /* before this call: in no KVM_RUN */
			kvm_job(a, x, NULL);
		else if (used++) /* a second exit inside one KVM_RUN */
			a->anom.duplicate++;
		else
			kvm_job(a, x, io);
	}
	a->nexits = n;
	pthread_mutex_unlock(&a->mu);
}

void kx_jobagg_flush(struct kx_jobagg *a)
{
	pthread_mutex_lock(&a->mu);
	for (size_t i = 0; i < a->nexits; i++)
		kvm_job(a, &a->exits[i], NULL);
	a->nexits = 0;
	pthread_mutex_unlock(&a->mu);
}

void kx_jobagg_add(struct kx_jobagg *a, const struct kx_job *j)
{
	enum kx_jev k = kx_jobpair_kind(j);

	if (!j->ts || (k != KX_JEV_PHASE && !(k == KX_JEV_KVM && j->phase == KX_JOB_DONE)))
		return; /* waits and dependencies name no job; intermediate KVM exits are none */
	pthread_mutex_lock(&a->mu);
	if (k == KX_JEV_KVM)
		exit_add(a, j);
	else
		phase_add(a, j);
	pthread_mutex_unlock(&a->mu);
}

/* ---- snapshots ---- */

/* The earliest RUN of each device's jobs still running (UINT64_MAX: none). */
static void running_since(const struct kx_jobagg *a, uint64_t *run0)
{
	for (size_t d = 0; d < a->ndevs; d++)
		run0[d] = UINT64_MAX;
	for (uint32_t i = a->oldest; i; i = a->p[i - 1].newer) {
		const struct ent *e = &a->p[i - 1];
		uint16_t d = a->series_dev[e->series];

		if (!e->t.closed && e->t.r.run_ts && e->t.r.run_ts < run0[d])
			run0[d] = e->t.r.run_ts;
	}
}

int kx_jobagg_snapshot(struct kx_jobagg *a, struct kx_jobagg_snapshot *out, uint64_t now_ns,
                       int reset)
{
	uint64_t *run0;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->mu);
	out->series = malloc((a->nseries ? a->nseries : 1) * sizeof(*out->series));
	out->devs = malloc((a->ndevs ? a->ndevs : 1) * sizeof(*out->devs));
	run0 = malloc((a->ndevs ? a->ndevs : 1) * sizeof(*run0));
	if (!out->series || !out->devs || !run0) {
		pthread_mutex_unlock(&a->mu);
		free(run0);
		kx_jobagg_snapshot_free(out);
		return -1;
	}
	memcpy(out->series, a->series, a->nseries * sizeof(*out->series));
	out->nseries = a->nseries;
	running_since(a, run0);
	for (size_t d = 0; d < a->ndevs; d++) {
		struct devst *s = &a->devs[d];

		memcpy(out->devs[d].device, s->device, sizeof(s->device));
		out->devs[d].jobs = s->jobs;
		out->devs[d].completed = s->completed;
		out->devs[d].inflight = s->inflight;
		out->devs[d].busy_ns = dev_busy(s, run0[d], now_ns, &out->devs[d].busy_cut_ns);
		if (reset)
			dev_reset(s, now_ns);
	}
	out->ndevs = a->ndevs;
	out->overflow = a->overflow;
	out->pending = a->nopen;
	if (reset)
		for (size_t i = 0; i < a->nseries; i++) {
			struct kx_jobagg_series *s = &a->series[i];

			memset(s->queue_slots, 0, sizeof(s->queue_slots));
			memset(s->exec_slots, 0, sizeof(s->exec_slots));
			s->queue_sum_ns = s->exec_sum_ns = 0;
		}
	pthread_mutex_unlock(&a->mu);
	free(run0);
	return 0;
}

void kx_jobagg_snapshot_free(struct kx_jobagg_snapshot *s)
{
	free(s->series);
	free(s->devs);
	memset(s, 0, sizeof(*s));
}
