/*
 * Streaming job aggregates (contract: jobagg.h). The pending table is a
 * fixed pool of entries, indexed by a fixed-size util/hashmap.h map (so
 * memory stays bounded) and kept on an age list for eviction, oldest first.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/jobs.h"
#include "analysis/jobs.h"
#include "registry/devices.h"
#include "util/hashmap.h"
#include "util/hist.h"

struct pend {
	uint64_t ctx, seqno;
	uint64_t q_ts, r_ts; /* 0: phase not seen */
	uint64_t first_ts;
	uint32_t dev;
	uint16_t src;
	uint16_t series;
	uint32_t nextfree;     /* free list (index + 1, 0 = end) */
	uint32_t older, newer; /* age list */
};

struct devst {
	char device[48];
	uint64_t inflight, busy_ns, busy_since;
};

struct kx_jobagg {
	pthread_mutex_t mu;
	uint32_t max_pending, max_series;
	struct pend *p;
	struct kx_hmap map; /* key of (src, dev, ctx, seqno) -> index in p */
	uint32_t free_head, npending, oldest, newest;
	struct kx_jobagg_series *series;
	uint16_t *series_dev;
	size_t nseries, last;
	struct devst *devs;
	size_t ndevs;
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
	if (!a->p || !a->series || !a->series_dev || !a->devs ||
	    kx_hmap_init_fixed(&a->map, a->max_pending)) {
		kx_jobagg_free(a);
		return NULL;
	}
	for (uint32_t i = 0; i < a->max_pending; i++)
		a->p[i].nextfree = i + 1 < a->max_pending ? i + 2 : 0;
	a->free_head = 1;
	pthread_mutex_init(&a->mu, NULL);
	return a;
}

void kx_jobagg_free(struct kx_jobagg *a)
{
	if (!a)
		return;
	if (a->p && a->map.slot && a->series && a->series_dev && a->devs)
		pthread_mutex_destroy(&a->mu);
	free(a->p);
	kx_hmap_free(&a->map);
	free(a->series);
	free(a->series_dev);
	free(a->devs);
	free(a);
}

static uint64_t pend_key(uint16_t src, uint32_t dev, uint64_t ctx, uint64_t seqno)
{
	return kx_hash_combine(kx_hash_combine(kx_hash_combine(0, (uint64_t)src << 32 | dev), ctx),
	                       seqno);
}

static void dev_up(struct devst *d, uint64_t ts)
{
	if (d->inflight++ == 0)
		d->busy_since = ts;
}

static void dev_down(struct devst *d, uint64_t ts)
{
	if (!d->inflight)
		return;
	if (--d->inflight == 0 && ts > d->busy_since)
		d->busy_ns += ts - d->busy_since;
}

/* Series index of (device, ring), added when new; -1 past the limit. */
static long series_get(struct kx_jobagg *a, const struct kx_job *j)
{
	char device[48], ring[sizeof(a->series->ring)], disk[KX_DISK_NAME_LEN];
	size_t rl = strnlen(j->ring, sizeof(j->ring)), d;
	const char *name = j->ring;
	struct kx_jobagg_series *s;

	/* Classic block records carry the disk's dev_t only: the registry names it. */
	if (!rl && j->src == KX_JOB_SRC_BLOCK && j->dev)
		rl = strlen(name = kx_block_disk_name(j->dev, disk, sizeof(disk)));
	if (rl)
		snprintf(ring, sizeof(ring), "%.*s", (int)rl, name);
	else
		snprintf(ring, sizeof(ring), "default");
	if (j->src == KX_JOB_SRC_BLOCK)
		if (rl)
			snprintf(device, sizeof(device), "%s", ring);
		else
			snprintf(device, sizeof(device), "block %u:%u", KX_MAJOR(j->dev),
			         KX_MINOR(j->dev));
	else
		snprintf(device, sizeof(device), "%s", kx_job_src_name(j->src));
	if (a->last < a->nseries && !strcmp(a->series[a->last].device, device) &&
	    !strcmp(a->series[a->last].ring, ring))
		return (long)a->last;
	for (size_t i = 0; i < a->nseries; i++)
		if (!strcmp(a->series[i].device, device) && !strcmp(a->series[i].ring, ring))
			return (long)(a->last = i);
	if (a->nseries >= a->max_series)
		return -1;
	for (d = 0; d < a->ndevs; d++)
		if (!strcmp(a->devs[d].device, device))
			break;
	if (d == a->ndevs) {
		memset(&a->devs[d], 0, sizeof(a->devs[d]));
		memcpy(a->devs[d].device, device, sizeof(device));
		a->ndevs++;
	}
	s = &a->series[a->nseries];
	memset(s, 0, sizeof(*s));
	memcpy(s->device, device, sizeof(device));
	memcpy(s->ring, ring, sizeof(ring));
	a->series_dev[a->nseries] = (uint16_t)d;
	a->last = a->nseries;
	return (long)a->nseries++;
}

/* Entry (index + 1) of the key, 0 when absent; *pos is its place in the map. */
static uint32_t find(const struct kx_jobagg *a, uint16_t src, uint32_t dev, uint64_t ctx,
                     uint64_t seqno, size_t *pos)
{
	uint32_t *i;

	*pos = KX_HMAP_START;
	while ((i = kx_hmap_next(&a->map, pend_key(src, dev, ctx, seqno), pos))) {
		const struct pend *e = &a->p[*i];

		if (e->src == src && e->dev == dev && e->ctx == ctx && e->seqno == seqno)
			return *i + 1;
	}
	return 0;
}

/* Removes entry i (1-based), at pos in the map, and frees it. */
static void drop(struct kx_jobagg *a, uint32_t i, size_t pos, uint64_t ts)
{
	struct pend *e = &a->p[i - 1];

	kx_hmap_del_at(&a->map, pos);
	if (e->older)
		a->p[e->older - 1].newer = e->newer;
	else
		a->oldest = e->newer;
	if (e->newer)
		a->p[e->newer - 1].older = e->older;
	else
		a->newest = e->older;
	dev_down(&a->devs[a->series_dev[e->series]], ts);
	e->nextfree = a->free_head;
	a->free_head = i;
	a->npending--;
}

static void evict_oldest(struct kx_jobagg *a, uint64_t ts)
{
	const struct pend *o = &a->p[a->oldest - 1];
	size_t pos;
	uint32_t i = find(a, o->src, o->dev, o->ctx, o->seqno, &pos);

	drop(a, i, pos, ts);
	a->overflow++;
}

void kx_jobagg_add(struct kx_jobagg *a, const struct kx_job *j)
{
	uint32_t dev = j->src == KX_JOB_SRC_BLOCK ? j->dev : 0, i;
	size_t pos;
	struct pend *e;
	long s;

	if (!j->src || j->src >= KX_JOB_SRC_MAX || j->src == KX_JOB_SRC_KVM || !j->ts)
		return;
	if (j->phase != KX_JOB_QUEUE && j->phase != KX_JOB_RUN && j->phase != KX_JOB_DONE)
		return;
	pthread_mutex_lock(&a->mu);
	i = find(a, j->src, dev, j->ctx, j->seqno, &pos);
	if (i) {
		e = &a->p[i - 1];
		if (j->phase == KX_JOB_QUEUE) {
			if (e->r_ts) { /* requeued after it ran: a new attempt */
				e->q_ts = j->ts;
				e->r_ts = 0;
			}
		} else if (j->phase == KX_JOB_RUN) {
			if (!e->r_ts) {
				struct kx_jobagg_series *se = &a->series[e->series];
				uint64_t d = e->q_ts && j->ts > e->q_ts ? j->ts - e->q_ts : 0;

				e->r_ts = j->ts;
				if (e->q_ts) {
					se->queue_slots[kx_hist_slot(d)]++;
					se->queue_sum_ns += d;
				}
			}
		} else {
			struct kx_jobagg_series *se = &a->series[e->series];
			uint64_t start = e->r_ts ? e->r_ts : e->q_ts;
			uint64_t d = j->ts > start ? j->ts - start : 0;

			se->exec_slots[kx_hist_slot(d)]++;
			se->exec_sum_ns += d;
			drop(a, i, pos, j->ts);
		}
		goto out;
	}
	if (j->phase == KX_JOB_DONE) /* started before we looked: unpaired */
		goto out;
	s = series_get(a, j);
	if (s < 0) {
		a->overflow++;
		goto out;
	}
	if (!a->free_head)
		evict_oldest(a, j->ts);
	i = a->free_head;
	e = &a->p[i - 1];
	a->free_head = e->nextfree;
	memset(e, 0, sizeof(*e));
	e->src = j->src;
	e->dev = dev;
	e->ctx = j->ctx;
	e->seqno = j->seqno;
	e->series = (uint16_t)s;
	e->first_ts = j->ts;
	if (j->phase == KX_JOB_QUEUE)
		e->q_ts = j->ts;
	else
		e->r_ts = j->ts;
	/* Cannot fail: the map holds max_pending entries and one was free. */
	kx_hmap_add(&a->map, pend_key(e->src, dev, e->ctx, e->seqno), i - 1);
	e->older = a->newest;
	if (a->newest)
		a->p[a->newest - 1].newer = i;
	else
		a->oldest = i;
	a->newest = i;
	a->npending++;
	dev_up(&a->devs[a->series_dev[s]], j->ts);
out:
	pthread_mutex_unlock(&a->mu);
}

int kx_jobagg_snapshot(struct kx_jobagg *a, struct kx_jobagg_snapshot *out, uint64_t now_ns,
                       int reset)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&a->mu);
	out->series = malloc((a->nseries ? a->nseries : 1) * sizeof(*out->series));
	out->devs = malloc((a->ndevs ? a->ndevs : 1) * sizeof(*out->devs));
	if (!out->series || !out->devs) {
		pthread_mutex_unlock(&a->mu);
		kx_jobagg_snapshot_free(out);
		return -1;
	}
	memcpy(out->series, a->series, a->nseries * sizeof(*out->series));
	out->nseries = a->nseries;
	for (size_t d = 0; d < a->ndevs; d++) {
		struct devst *s = &a->devs[d];

		memcpy(out->devs[d].device, s->device, sizeof(s->device));
		out->devs[d].inflight = s->inflight;
		out->devs[d].busy_ns = s->busy_ns;
		if (s->inflight && now_ns > s->busy_since)
			out->devs[d].busy_ns += now_ns - s->busy_since;
		if (reset) {
			s->busy_ns = 0;
			if (s->inflight && now_ns > s->busy_since)
				s->busy_since = now_ns;
		}
	}
	out->ndevs = a->ndevs;
	out->overflow = a->overflow;
	out->pending = a->npending;
	if (reset)
		for (size_t i = 0; i < a->nseries; i++) {
			struct kx_jobagg_series *s = &a->series[i];

			memset(s->queue_slots, 0, sizeof(s->queue_slots));
			memset(s->exec_slots, 0, sizeof(s->exec_slots));
			s->queue_sum_ns = s->exec_sum_ns = 0;
		}
	pthread_mutex_unlock(&a->mu);
	return 0;
}

void kx_jobagg_snapshot_free(struct kx_jobagg_snapshot *s)
{
	free(s->series);
	free(s->devs);
	memset(s, 0, sizeof(*s));
}

static void sink_job(void *ctx, const struct kx_job *j)
{
	kx_jobagg_add(ctx, j);
}

struct kx_sink kx_jobagg_sink(struct kx_jobagg *a)
{
	return (struct kx_sink){.ctx = a, .job = sink_job};
}
