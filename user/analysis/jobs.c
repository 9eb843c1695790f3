/*
 * Device timelines (contract and rules: jobs.h). Owns pairing job phases
 * into jobs, KVM_RUN jobs, submit and wait links, device and ring
 * assignment, lanes, per-ring and per-device statistics, the anomaly
 * counters and memory accounting from decoded ioctl arguments.
 *
 * One pass over the job events in timestamp order pairs phases through a
 * hash of open keys; ioctls are indexed by (tid, enter) for the links and
 * by enter for the wait ioctls. Everything else is sorting small arrays.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/grow.h"
#include "util/hashmap.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "analysis/jobs.h"
#include "util/hist.h"

#define KVM_RUN_CMD  0xae80u     /* _IO(KVMIO, 0x80) */
#define KVM_SET_MEM  0x4020ae46u /* KVM_SET_USER_MEMORY_REGION */
#define KVM_SET_MEM2 0x40a0ae49u /* KVM_SET_USER_MEMORY_REGION2 */
#define MAX_FIELDS   16

/* Pairing namespaces (see jobs.h). */
enum { NS_NONE, NS_BLOCK, NS_FENCE, NS_SCHED_OLD, NS_XE, NS_MSM, NS_V3D, NS_VPU };

uint64_t kx_jobrec_start(const struct kx_jobrec *j)
{
	if (j->run_ts)
		return j->run_ts;
	if (j->queue_ts)
		return j->queue_ts;
	return j->done_ts;
}

uint64_t kx_jobrec_end(const struct kx_jobrec *j, uint64_t end_ns)
{
	uint64_t s = kx_jobrec_start(j);

	if (j->done_ts)
		return j->done_ts;
	return end_ns > s ? end_ns : s;
}

/* ---- a map of three u64 key words -> u64, indexed by util/hashmap.h ---- */

struct mslot {
	uint64_t k[3];
	uint64_t v;
};

struct map {
	struct kx_hmap idx; /* hash of k -> index in v */
	struct mslot *v;
	size_t n, cap;
};

static uint64_t map_key(const uint64_t k[3])
{
	return kx_hash_combine(kx_hash_combine(kx_hash_combine(0, k[0]), k[1]), k[2]);
}

/* The index of entry i (of key k) in m->idx, *pos its place; it must exist. */
static uint32_t *map_ref(const struct map *m, const uint64_t k[3], size_t i, size_t *pos)
{
	uint32_t *at;

	*pos = KX_HMAP_START;
	while ((at = kx_hmap_next(&m->idx, map_key(k), pos)) && *at != i)
		;
	return at;
}

static struct mslot *map_find(const struct map *m, uint64_t a, uint64_t b, uint64_t c)
{
	const uint64_t k[3] = {a, b, c};
	size_t pos = KX_HMAP_START;
	uint32_t *i;

	while ((i = kx_hmap_next(&m->idx, map_key(k), &pos)))
		if (!memcmp(m->v[*i].k, k, sizeof(k)))
			return &m->v[*i];
	return NULL;
}

/* The slot of the key, added with v = 0 when new; NULL on OOM. The pointer
 * is valid until the next change of m. */
static struct mslot *map_get(struct map *m, uint64_t a, uint64_t b, uint64_t c)
{
	struct mslot *s = map_find(m, a, b, c);

	if (s)
		return s;
	if (m->n >= UINT32_MAX || kx_grow((void **)&m->v, &m->cap, m->n, sizeof(*m->v)))
		return NULL;
	s = &m->v[m->n];
	*s = (struct mslot){{a, b, c}, 0};
	if (kx_hmap_add(&m->idx, map_key(s->k), (uint32_t)m->n))
		return NULL;
	m->n++;
	return s;
}

/* Removes s; the last entry moves into its place. */
static void map_del(struct map *m, struct mslot *s)
{
	size_t i = (size_t)(s - m->v), last = m->n - 1, pos;

	map_ref(m, s->k, i, &pos);
	kx_hmap_del_at(&m->idx, pos);
	if (i != last) {
		*map_ref(m, m->v[last].k, last, &pos) = (uint32_t)i;
		m->v[i] = m->v[last];
	}
	m->n--;
}

static void map_free(struct map *m)
{
	kx_hmap_free(&m->idx);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

/* ---- the builder ---- */

/* A job while pairing. */
struct tjob {
	struct kx_jobrec r;
	char ring[32]; /* the event's (16 bytes) or a made-up "ctx 0x..." */
	uint32_t blkdev;
	uint8_t psrc[4]; /* source that set QUEUE, RUN, DONE (index = phase) */
	uint8_t maxrank, closed, prio, ringprio;
};

/* An ioctl in the (tid, enter) index. */
struct tix {
	uint32_t tid;
	uint64_t ts;
	size_t idx;
};

struct devkey {
	int kind; /* DK_* */
	uint64_t val;
};
enum { DK_CI, DK_DRV, DK_BLK, DK_SRC };

struct builder {
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	struct kx_jobs *out;

	struct tjob *tj;
	size_t ntj, tjcap;
	struct tix *tix; /* ioctls by (tid, ts) */
	size_t ntix;
	struct devkey *dkeys; /* parallel to out->devs */
	size_t devcap;
	struct map names; /* (drv, cmd, xfer) -> 1 + is_wait */
};

static uint64_t ioctl_end(const struct kx_ioctl *e)
{
	return e->dur > UINT64_MAX - e->ts ? UINT64_MAX : e->ts + e->dur;
}

static int namespace_of(const struct kx_job *e)
{
	switch (e->src) {
	case KX_JOB_SRC_BLOCK:
		return NS_BLOCK;
	case KX_JOB_SRC_GPU_SCHED:
		return e->seqno ? NS_FENCE : NS_SCHED_OLD;
	case KX_JOB_SRC_DMA_FENCE:
	case KX_JOB_SRC_I915:
	case KX_JOB_SRC_AMDGPU:
	case KX_JOB_SRC_AMDXDNA:
		return NS_FENCE;
	case KX_JOB_SRC_XE:
		return NS_XE;
	case KX_JOB_SRC_MSM:
		return NS_MSM;
	case KX_JOB_SRC_V3D:
		return NS_V3D;
	case KX_JOB_SRC_VPU:
		return NS_VPU;
	default:
		return NS_NONE;
	}
}

/* Which source names a job shared by several: the driver's own first. */
static uint8_t src_prio(unsigned int src)
{
	switch (src) {
	case KX_JOB_SRC_DMA_FENCE:
		return 1;
	case KX_JOB_SRC_GPU_SCHED:
		return 2;
	default:
		return 3;
	}
}

static int gpu_src(unsigned int src)
{
	return src != KX_JOB_SRC_BLOCK && src != KX_JOB_SRC_KVM;
}

/* DRM and accel drivers, and KFD, can submit fence-tracked work. */
static int gpu_drv(unsigned int drv)
{
	return drv >= KX_DRV_DRM && drv <= KX_DRV_KFD;
}

static unsigned int src_driver(unsigned int src)
{
	switch (src) {
	case KX_JOB_SRC_KVM:
		return KX_DRV_KVM;
	case KX_JOB_SRC_I915:
		return KX_DRV_I915;
	case KX_JOB_SRC_XE:
		return KX_DRV_XE;
	case KX_JOB_SRC_AMDGPU:
		return KX_DRV_AMDGPU;
	case KX_JOB_SRC_MSM:
		return KX_DRV_MSM;
	case KX_JOB_SRC_V3D:
		return KX_DRV_V3D;
	case KX_JOB_SRC_VPU:
		return KX_DRV_IVPU;
	case KX_JOB_SRC_AMDXDNA:
		return KX_DRV_AMDXDNA;
	default:
		return KX_DRV_UNKNOWN;
	}
}

/* Can an ioctl of driver drv have queued a job of source src? */
static int can_submit(unsigned int drv, unsigned int src)
{
	unsigned int want = src_driver(src);

	if (src == KX_JOB_SRC_BLOCK)
		return drv == KX_DRV_LOOP || drv == KX_DRV_BLOCK;
	if (want)
		return drv == want;
	return gpu_drv(drv);
}

static int anon_fkind(unsigned int fkind)
{
	return fkind == KX_FK_KVM_VM || fkind == KX_FK_KVM_VCPU || fkind == KX_FK_KVM_DEV ||
	       fkind == KX_FK_VFIO_DEV;
}

/* ---- pairing ---- */

static const struct kx_job *job_ev(const struct builder *b, size_t i)
{
	return kx_store_job(b->s, i);
}

static int ev_cmp(const void *pa, const void *pb, void *arg)
{
	size_t a = *(const size_t *)pa, b = *(const size_t *)pb;
	uint64_t ta = kx_store_job(arg, a)->ts, tb = kx_store_job(arg, b)->ts;

	if (ta != tb)
		return ta < tb ? -1 : 1;
	return a < b ? -1 : a > b;
}

static struct tjob *tjob_new(struct builder *b)
{
	struct tjob *t;

	if (kx_grow((void **)&b->tj, &b->tjcap, b->ntj, sizeof(*b->tj)))
		return NULL;
	t = &b->tj[b->ntj++];
	memset(t, 0, sizeof(*t));
	t->r.submit = -1;
	t->r.wait = -1;
	return t;
}

/* What any event of a job tells about it besides times: naming, ring, aux. */
static void tjob_note(struct tjob *t, const struct kx_job *e, unsigned int p)
{
	uint8_t pr = src_prio(e->src);

	if (!t->r.src || pr > t->prio) {
		t->r.src = e->src;
		t->prio = pr;
		t->r.ctx = e->ctx;
		t->r.seqno = e->seqno;
	}
	if (e->ring[0] && (!t->ring[0] || pr > t->ringprio)) {
		snprintf(t->ring, sizeof(t->ring), "%.*s", (int)sizeof(e->ring), e->ring);
		t->ringprio = pr;
	}
	if (e->src == t->r.src) {
		if (e->aux)
			t->r.aux = e->aux;
		if (e->aux2)
			t->r.aux2 = e->aux2;
	}
	if (e->src == KX_JOB_SRC_GPU_SCHED && e->seqno && e->aux && p != KX_JOB_DONE)
		t->r.client = e->aux;
}

/* Applies phase p of event e to job t (the phase is new to t). */
static void tjob_set(struct tjob *t, const struct kx_job *e, unsigned int p)
{
	if (p == KX_JOB_QUEUE)
		t->r.queue_ts = e->ts;
	else if (p == KX_JOB_RUN)
		t->r.run_ts = e->ts;
	else
		t->r.done_ts = e->ts;
	t->psrc[p] = (uint8_t)e->src;
	if (p > t->maxrank)
		t->maxrank = (uint8_t)p;
	if (p == KX_JOB_DONE)
		t->closed = 1;
	tjob_note(t, e, p);
	/* The submitter is the queueing task; a direct block issue runs in it. */
	if ((p == KX_JOB_QUEUE ||
	     (p == KX_JOB_RUN && !t->r.queue_ts && e->src == KX_JOB_SRC_BLOCK)) &&
	    e->tid) {
		t->r.pid = e->pid;
		t->r.tid = e->tid;
	}
	if (e->src == KX_JOB_SRC_BLOCK)
		t->blkdev = e->dev;
}

/* Did src set a phase of t later in the lifecycle than p? */
static int later_by(const struct tjob *t, unsigned int p, unsigned int src)
{
	for (unsigned int q = p + 1; q <= KX_JOB_DONE; q++)
		if (t->psrc[q] == src)
			return 1;
	return 0;
}

static int phase_seen(const struct tjob *t, unsigned int p)
{
	return t->psrc[p] != 0;
}

/* One QUEUE/RUN/DONE event of a keyed source. */
static int pair_event(struct builder *b, struct map *open, const struct kx_job *e)
{
	struct kx_jobs_anomalies *an = &b->out->anom;
	int ns = namespace_of(e), reusable = ns == NS_BLOCK || ns == NS_SCHED_OLD;
	unsigned int p = e->phase;
	struct mslot *sl;
	struct tjob *t;

	sl = map_get(open, (uint64_t)ns << 32 | (ns == NS_BLOCK ? e->dev : 0), e->ctx,
	             ns == NS_SCHED_OLD ? 0 : e->seqno);
	if (!sl)
		return -1;
	if (sl->v) {
		t = &b->tj[sl->v - 1];
		if (!t->closed || !reusable || p == KX_JOB_DONE) {
			if (phase_seen(t, p)) {
				/* Same source twice: duplicate; another source corroborates. */
				if (t->psrc[p] == e->src)
					an->duplicate++;
				else
					tjob_note(t, e, p);
				return 0;
			}
			if (p < t->maxrank) {
				if (later_by(t, p, e->src))
					an->out_of_order++;
				return 0;
			}
			tjob_set(t, e, p);
			return 0;
		}
	}
	t = tjob_new(b);
	if (!t)
		return -1;
	tjob_set(t, e, p);
	sl->v = b->ntj;
	return 0;
}

/* A wait phase names the waiter of the job its key points at. */
static void wait_event(struct builder *b, const struct map *open, const struct kx_job *e)
{
	int ns = namespace_of(e);
	struct mslot *sl = map_find(open, (uint64_t)ns << 32 | (ns == NS_BLOCK ? e->dev : 0),
	                            e->ctx, ns == NS_SCHED_OLD ? 0 : e->seqno);
	struct tjob *t;

	if (!sl || !sl->v || !e->tid)
		return;
	t = &b->tj[sl->v - 1];
	if (!t->r.waiter_tid) {
		t->r.waiter_tid = e->tid;
		t->r.flags |= KX_JOBF_WAIT_PHASE;
	}
}

/* ---- the (tid, enter) ioctl index ---- */

static int tix_cmp(const void *pa, const void *pb)
{
	const struct tix *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int build_tix(struct builder *b)
{
	size_t n = kx_store_ioctl_count(b->s);

	b->tix = malloc((n ? n : 1) * sizeof(*b->tix));
	if (!b->tix)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		b->tix[i] = (struct tix){e->tid, e->ts, i};
	}
	b->ntix = n;
	qsort(b->tix, n, sizeof(*b->tix), tix_cmp);
	return 0;
}

/* The last ioctl of tid entered at or before t, or NULL. */
static const struct tix *tix_at(const struct builder *b, uint32_t tid, uint64_t t)
{
	size_t lo = 0, hi = b->ntix;

	/* First entry after (tid, t). */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct tix *x = &b->tix[mid];

		if (x->tid < tid || (x->tid == tid && x->ts <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || b->tix[lo - 1].tid != tid)
		return NULL;
	return &b->tix[lo - 1];
}

/* ---- KVM: one job per KVM_RUN ---- */

static int kvm_event(struct builder *b, uint8_t *used, const struct kx_job *e)
{
	uint32_t tid = e->ctx ? (uint32_t)e->ctx : e->tid;
	const struct tix *x;
	const struct kx_ioctl *io = NULL;
	struct tjob *t;

	if (e->phase != KX_JOB_DONE)
		return 0; /* intermediate exits: not jobs */
	x = tix_at(b, tid, e->ts);
	if (x) {
		io = kx_store_ioctl(b->s, x->idx);
		if (io->drv != KX_DRV_KVM || io->cmd != KVM_RUN_CMD || ioctl_end(io) < e->ts)
			io = NULL;
	}
	if (io && (used[x->idx / 8] >> (x->idx % 8) & 1)) {
		b->out->anom.duplicate++;
		return 0;
	}
	t = tjob_new(b);
	if (!t)
		return -1;
	t->r.src = KX_JOB_SRC_KVM;
	t->r.ctx = tid;
	t->r.seqno = e->seqno;
	t->r.done_ts = e->ts;
	t->r.aux = e->aux;
	t->r.aux2 = e->aux2;
	t->psrc[KX_JOB_DONE] = KX_JOB_SRC_KVM;
	t->closed = 1;
	t->prio = 3;
	snprintf(t->ring, sizeof(t->ring), "vcpu %u", tid);
	if (io) {
		used[x->idx / 8] |= (uint8_t)(1u << (x->idx % 8));
		t->r.queue_ts = io->ts;
		t->r.run_ts = io->ts;
		t->r.pid = io->pid;
		t->r.tid = io->tid;
		t->r.submit = (int64_t)x->idx;
		t->psrc[KX_JOB_QUEUE] = t->psrc[KX_JOB_RUN] = KX_JOB_SRC_KVM;
	}
	return 0;
}

/* ---- submit links ---- */

static void link_submit(struct builder *b, struct tjob *t)
{
	const struct tix *x;
	const struct kx_ioctl *io;
	uint64_t at = t->r.queue_ts ? t->r.queue_ts : t->r.run_ts;
	unsigned int src = t->psrc[KX_JOB_QUEUE] ? t->psrc[KX_JOB_QUEUE] : t->r.src;

	if (t->r.src == KX_JOB_SRC_KVM || !t->r.tid || !at)
		return;
	x = tix_at(b, t->r.tid, at);
	if (x) {
		io = kx_store_ioctl(b->s, x->idx);
		if (can_submit(io->drv, src) &&
		    (ioctl_end(io) >= at ||
		     (gpu_src(src) && at - ioctl_end(io) <= KX_JOBS_LINK_WINDOW_NS))) {
			t->r.submit = (int64_t)x->idx;
			return;
		}
	}
	/* Block I/O comes from read/write: only a missing ioctl of a GPU source is news. */
	if (t->r.queue_ts && gpu_src(src))
		t->r.flags |= KX_JOBF_UNLINKED;
}

/* ---- devices ---- */

static int ci_count(const struct builder *b)
{
	if (!b->ci)
		return 0;
	return b->ci->ndevices < KX_MAX_DEVICES ? (int)b->ci->ndevices : KX_MAX_DEVICES;
}

/* The traced device of driver drv, a device node first; -1. */
static int ci_by_drv(const struct builder *b, unsigned int drv)
{
	int n = ci_count(b), anon = -1;

	for (int i = 0; i < n; i++) {
		const struct kx_device *d = &b->ci->devices[i];

		if (d->drv != drv)
			continue;
		if (!anon_fkind(d->fkind))
			return i;
		if (anon < 0)
			anon = i;
	}
	return anon;
}

static int ci_by_blk(const struct builder *b, uint32_t dev)
{
	int n = ci_count(b);

	for (int i = 0; i < n; i++) {
		const struct kx_device *d = &b->ci->devices[i];

		if (d->fkind != KX_FK_BLK)
			continue;
		if (d->dev == dev || (d->any_minor && KX_MAJOR(d->dev) == KX_MAJOR(dev)))
			return i;
	}
	return -1;
}

/* The only GPU driver of the traced devices, or KX_DRV_UNKNOWN. */
static unsigned int only_gpu_drv(const struct builder *b)
{
	unsigned int found = KX_DRV_UNKNOWN;
	int n = ci_count(b);

	for (int i = 0; i < n; i++) {
		unsigned int drv = b->ci->devices[i].drv;

		/* KFD comes with amdgpu: it does not make the choice ambiguous. */
		if (!gpu_drv(drv) || drv == KX_DRV_KFD || drv == found)
			continue;
		if (found)
			return KX_DRV_UNKNOWN;
		found = drv;
	}
	return found;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static void name_ci_device(const struct builder *b, struct kx_jobdev *d, int i)
{
	const struct kx_device *c = &b->ci->devices[i];
	char drvname[sizeof(c->driver)], node[sizeof(c->node)];

	snprintf(drvname, sizeof(drvname), "%.*s", (int)sizeof(c->driver) - 1,
	         c->driver[0] ? c->driver : kx_driver_name((enum kx_driver)c->drv));
	snprintf(node, sizeof(node), "%.*s", (int)sizeof(c->node) - 1, c->node);
	if (c->fkind == KX_FK_BLK && !c->any_minor && !strncmp(node, "/dev/", 5))
		snprintf(d->name, sizeof(d->name), "%.*s", (int)sizeof(d->name) - 1,
		         base_name(node));
	else
		snprintf(d->name, sizeof(d->name), "%s", drvname);
	snprintf(d->label, sizeof(d->label), "%s%s%s", drvname, node[0] ? " " : "", node);
	d->drv = c->drv;
	d->dev = c->fkind == KX_FK_BLK ? c->dev : 0;
}

/* Index of the device with this key, added when new; -1 on OOM. */
static long dev_get(struct builder *b, int kind, uint64_t val, const char *ring)
{
	struct kx_jobs *o = b->out;
	struct kx_jobdev *d;
	size_t cap = b->devcap;

	for (size_t i = 0; i < o->ndevs; i++)
		if (b->dkeys[i].kind == kind && b->dkeys[i].val == val)
			return (long)i;
	if (kx_grow((void **)&o->devs, &b->devcap, o->ndevs, sizeof(*o->devs)))
		return -1;
	/* dkeys keeps the capacity of devs, exactly. */
	if (b->devcap != cap) {
		struct devkey *k = realloc(b->dkeys, b->devcap * sizeof(*k));

		if (!k)
			return -1;
		b->dkeys = k;
	}
	b->dkeys[o->ndevs] = (struct devkey){kind, val};
	d = &o->devs[o->ndevs];
	memset(d, 0, sizeof(*d));
	d->ci_index = -1;
	switch (kind) {
	case DK_CI:
		d->ci_index = (int)val;
		name_ci_device(b, d, (int)val);
		break;
	case DK_DRV:
		d->drv = (uint8_t)val;
		snprintf(d->name, sizeof(d->name), "%s", kx_driver_name((enum kx_driver)val));
		snprintf(d->label, sizeof(d->label), "%s", d->name);
		break;
	case DK_BLK:
		d->dev = (uint32_t)val;
		d->drv = KX_MAJOR(val) == 7 ? KX_DRV_LOOP : KX_DRV_BLOCK;
		if (ring && ring[0])
			snprintf(d->name, sizeof(d->name), "%s", ring);
		else
			snprintf(d->name, sizeof(d->name), "block %u:%u", KX_MAJOR(val),
			         KX_MINOR(val));
		snprintf(d->label, sizeof(d->label), "%s", d->name);
		break;
	default:
		d->src = (uint16_t)val;
		snprintf(d->name, sizeof(d->name), "%s", kx_job_src_name((unsigned int)val));
		snprintf(d->label, sizeof(d->label), "%s", d->name);
		break;
	}
	return (long)o->ndevs++;
}

/* Device of a driver: its traced device when there is one. */
static long dev_for_drv(struct builder *b, unsigned int drv)
{
	int ci = ci_by_drv(b, drv);

	return ci >= 0 ? dev_get(b, DK_CI, (uint64_t)ci, NULL) : dev_get(b, DK_DRV, drv, NULL);
}

/* Ring name -> driver learnt from the linked jobs of that ring. */
static int learn_ring_drivers(struct builder *b, struct map *m)
{
	for (size_t i = 0; i < b->ntj; i++) {
		const struct tjob *t = &b->tj[i];
		struct mslot *sl;
		if (t->r.submit < 0 || src_driver(t->r.src) || !gpu_src(t->r.src))
			continue;
		sl = map_get(m, t->r.src, kx_hash_bytes(t->ring, strlen(t->ring)), 0);
		if (!sl)
			return -1;
		if (!sl->v)
			sl->v = kx_store_ioctl(b->s, (size_t)t->r.submit)->drv;
	}
	return 0;
}

static long assign_device(struct builder *b, const struct map *ringdrv, const struct tjob *t)
{
	unsigned int drv = src_driver(t->r.src);
	struct mslot *sl;

	if (t->r.src == KX_JOB_SRC_BLOCK) {
		int ci = ci_by_blk(b, t->blkdev);

		if (ci >= 0)
			return dev_get(b, DK_CI, (uint64_t)ci, NULL);
		return dev_get(b, DK_BLK, t->blkdev, t->ring);
	}
	if (!drv && t->r.submit >= 0)
		drv = kx_store_ioctl(b->s, (size_t)t->r.submit)->drv;
	if (!drv) {
		sl = map_find(ringdrv, t->r.src, kx_hash_bytes(t->ring, strlen(t->ring)), 0);
		if (sl)
			drv = (unsigned int)sl->v;
	}
	if (!drv)
		drv = only_gpu_drv(b);
	if (!drv)
		return dev_get(b, DK_SRC, t->r.src, NULL);
	return dev_for_drv(b, drv);
}

/* Device names are summary categories: keep them unique. */
static void unique_names(struct kx_jobs *o)
{
	for (size_t i = 0; i < o->ndevs; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(o->devs[i].name, o->devs[j].name))
				continue;
			snprintf(o->devs[i].name + strlen(o->devs[i].name),
			         sizeof(o->devs[i].name) - strlen(o->devs[i].name), " #%zu", i);
			break;
		}
	}
}

/* ---- rings, lanes, statistics ---- */

struct jref {
	uint32_t dev;
	const char *ring;
	uint64_t start;
	size_t idx;
};

/* Devices in capture order, then the others by name. */
static int dev_cmp(const struct kx_jobdev *devs, uint32_t a, uint32_t b)
{
	const struct kx_jobdev *x = &devs[a], *y = &devs[b];

	if (a == b)
		return 0;
	if ((x->ci_index >= 0) != (y->ci_index >= 0))
		return x->ci_index >= 0 ? -1 : 1;
	if (x->ci_index != y->ci_index)
		return x->ci_index < y->ci_index ? -1 : 1;
	if (strcmp(x->name, y->name))
		return strcmp(x->name, y->name);
	return a < b ? -1 : 1;
}

static int jref_cmp(const void *pa, const void *pb, void *devs)
{
	const struct jref *a = pa, *b = pb;
	int c = dev_cmp(devs, a->dev, b->dev);

	if (c)
		return c;
	c = strcmp(a->ring, b->ring);
	if (c)
		return c;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Count, total, extremes and nearest-rank percentiles of v[0..n) (reordered). */
static void dist_of(struct kx_dist *d, uint64_t *v, size_t n)
{
	static const uint32_t ppm[3] = {KX_PPM(50), KX_PPM(90), KX_PPM(99)};
	uint64_t q[3];

	memset(d, 0, sizeof(*d));
	if (!n)
		return;
	d->count = n;
	d->min = UINT64_MAX;
	for (size_t i = 0; i < n; i++) {
		d->total += v[i];
		if (v[i] < d->min)
			d->min = v[i];
		if (v[i] > d->max)
			d->max = v[i];
	}
	kx_quantiles_exact(v, n, ppm, q, 3);
	d->p50 = q[0];
	d->p90 = q[1];
	d->p99 = q[2];
}

struct ival {
	uint64_t a, b;
};

static int ival_cmp(const void *pa, const void *pb)
{
	const struct ival *x = pa, *y = pb;

	if (x->a != y->a)
		return x->a < y->a ? -1 : 1;
	return x->b < y->b ? -1 : x->b > y->b;
}

/* Length of the union of intervals (sorted here). */
static uint64_t union_len(struct ival *v, size_t n)
{
	uint64_t total = 0, a = 0, e = 0;

	qsort(v, n, sizeof(*v), ival_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i && v[i].a <= e) {
			if (v[i].b > e)
				e = v[i].b;
			continue;
		}
		if (i)
			total += e - a;
		a = v[i].a;
		e = v[i].b;
	}
	return n ? total + (e - a) : 0;
}

/* A busy interval: running (or queued where the source has no RUN) until done or the end. */
static int busy_ival(const struct kx_jobrec *j, uint64_t end_ns, struct ival *iv)
{
	if (!j->run_ts && !(j->queue_ts && j->done_ts))
		return 0;
	iv->a = kx_jobrec_start(j);
	iv->b = kx_jobrec_end(j, end_ns);
	return 1;
}

static int ring_stats(struct kx_jobs *o, struct kx_jobring *r, uint64_t *tmp, struct ival *iv)
{
	uint64_t *lane_end = NULL;
	size_t nexec = 0, nq = 0, niv = 0, lanecap = 0;

	r->nlanes = 0;
	for (size_t k = 0; k < r->njobs; k++) {
		struct kx_jobrec *j = &o->jobs[r->first + k];
		uint64_t s = kx_jobrec_start(j), e = kx_jobrec_end(j, o->end_ns);
		uint32_t l;

		for (l = 0; l < r->nlanes && lane_end[l] > s; l++)
			;
		if (l == r->nlanes) {
			if (kx_grow((void **)&lane_end, &lanecap, r->nlanes, sizeof(*lane_end))) {
				free(lane_end);
				return -1;
			}
			r->nlanes++;
		}
		lane_end[l] = e;
		j->lane = l;
		if (j->done_ts)
			r->completed++;
		if (j->submit >= 0)
			r->linked++;
		if (j->done_ts && (j->run_ts || j->queue_ts))
			tmp[nexec++] = j->done_ts - s;
		if (busy_ival(j, o->end_ns, &iv[niv]))
			niv++;
	}
	free(lane_end);
	dist_of(&r->exec, tmp, nexec);
	for (size_t k = 0; k < r->njobs; k++) {
		const struct kx_jobrec *j = &o->jobs[r->first + k];

		/* KVM jobs start running at KVM_RUN entry: no queue to measure. */
		if (j->src == KX_JOB_SRC_KVM)
			continue;
		if (j->queue_ts && j->run_ts)
			tmp[nq++] = j->run_ts - j->queue_ts;
		else if (j->flags & KX_JOBF_DIRECT)
			tmp[nq++] = 0;
	}
	dist_of(&r->queue, tmp, nq);
	r->busy_ns = union_len(iv, niv);
	return 0;
}

struct dpt {
	uint64_t ts;
	int d;
};

static int dpt_cmp(const void *pa, const void *pb)
{
	const struct dpt *x = pa, *y = pb;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->d - y->d; /* completions first at equal times */
}

static int dev_stats(struct kx_jobs *o, struct kx_jobdev *d, struct ival *iv, struct dpt *dp)
{
	size_t niv = 0, ndp = 0, first = o->rings[d->first_ring].first, n = 0;
	uint32_t depth = 0;

	for (uint32_t r = 0; r < d->nrings; r++)
		n += o->rings[d->first_ring + r].njobs;
	for (size_t k = 0; k < n; k++) {
		const struct kx_jobrec *j = &o->jobs[first + k];
		uint64_t in = j->queue_ts ? j->queue_ts : j->run_ts;

		d->njobs++;
		d->completed += j->done_ts != 0;
		d->incomplete += (j->flags & KX_JOBF_INCOMPLETE) != 0;
		d->no_queue += (j->flags & KX_JOBF_NO_QUEUE) != 0;
		d->linked += j->submit >= 0;
		if (busy_ival(j, o->end_ns, &iv[niv]))
			niv++;
		if (!in)
			continue;
		dp[ndp++] = (struct dpt){in, +1};
		if (j->done_ts)
			dp[ndp++] = (struct dpt){j->done_ts, -1};
	}
	d->busy_ns = union_len(iv, niv);
	if (o->end_ns > o->start_ns) {
		d->busy_fraction = (double)d->busy_ns / (double)(o->end_ns - o->start_ns);
		if (d->busy_fraction > 1.0)
			d->busy_fraction = 1.0;
	}
	qsort(dp, ndp, sizeof(*dp), dpt_cmp);
	d->depth = malloc((ndp ? ndp : 1) * sizeof(*d->depth));
	if (!d->depth)
		return -1;
	for (size_t k = 0; k < ndp; k++) {
		depth = (uint32_t)((int)depth + dp[k].d);
		if (k + 1 < ndp && dp[k + 1].ts == dp[k].ts)
			continue;
		d->depth[d->ndepth++] = (struct kx_depth_pt){dp[k].ts, depth};
		if (depth > d->max_depth)
			d->max_depth = depth;
	}
	return 0;
}

/* Rings, job order and every statistic, from the paired jobs. */
static int finish_jobs(struct builder *b)
{
	struct kx_jobs *o = b->out;
	struct jref *ref = malloc((b->ntj ? b->ntj : 1) * sizeof(*ref));
	uint64_t *tmp = malloc((b->ntj ? b->ntj : 1) * sizeof(*tmp));
	struct ival *iv = malloc((b->ntj ? b->ntj : 1) * sizeof(*iv));
	struct dpt *dp = malloc((2 * b->ntj + 1) * sizeof(*dp));
	size_t rcap = 0;
	int rc = -1;

	o->jobs = malloc((b->ntj ? b->ntj : 1) * sizeof(*o->jobs));
	if (!ref || !tmp || !iv || !dp || !o->jobs)
		goto out;
	for (size_t i = 0; i < b->ntj; i++)
		ref[i] = (struct jref){b->tj[i].r.dev, b->tj[i].ring, kx_jobrec_start(&b->tj[i].r),
		                       i};
	qsort_r(ref, b->ntj, sizeof(*ref), jref_cmp, o->devs);
	/* Devices get their final order; jobs carry the new indices. */
	{
		uint32_t *order = malloc((o->ndevs ? o->ndevs : 1) * sizeof(*order));
		uint32_t *newidx = malloc((o->ndevs ? o->ndevs : 1) * sizeof(*newidx));
		struct kx_jobdev *nd = malloc((o->ndevs ? o->ndevs : 1) * sizeof(*nd));

		if (!order || !newidx || !nd) {
			free(order);
			free(newidx);
			free(nd);
			goto out;
		}
		for (uint32_t i = 0; i < o->ndevs; i++) {
			uint32_t k = i;

			/* Insertion sort: a handful of devices. */
			for (; k > 0 && dev_cmp(o->devs, order[k - 1], i) > 0; k--)
				order[k] = order[k - 1];
			order[k] = i;
		}
		for (uint32_t i = 0; i < o->ndevs; i++) {
			nd[i] = o->devs[order[i]];
			newidx[order[i]] = i;
		}
		free(o->devs);
		o->devs = nd;
		b->devcap = o->ndevs;
		for (size_t i = 0; i < b->ntj; i++)
			b->tj[i].r.dev = newidx[b->tj[i].r.dev];
		free(order);
		free(newidx);
	}
	for (size_t k = 0; k < b->ntj; k++) {
		const struct tjob *t = &b->tj[ref[k].idx];
		struct kx_jobring *r = o->nrings ? &o->rings[o->nrings - 1] : NULL;

		if (!r || r->dev != t->r.dev || strcmp(r->name, t->ring)) {
			if (kx_grow((void **)&o->rings, &rcap, o->nrings, sizeof(*o->rings)))
				goto out;
			r = &o->rings[o->nrings++];
			memset(r, 0, sizeof(*r));
			snprintf(r->name, sizeof(r->name), "%s", t->ring);
			r->dev = t->r.dev;
			r->first = k;
		}
		o->jobs[k] = t->r;
		o->jobs[k].ring = (uint32_t)(o->nrings - 1);
		r->njobs++;
	}
	o->njobs = b->ntj;
	for (size_t i = 0; i < o->nrings; i++) {
		struct kx_jobring *r = &o->rings[i];
		struct kx_jobdev *d = &o->devs[r->dev];

		if (!d->nrings)
			d->first_ring = (uint32_t)i;
		r->id = d->nrings++;
		if (ring_stats(o, r, tmp, iv))
			goto out;
	}
	for (size_t i = 0; i < o->ndevs; i++)
		if (o->devs[i].nrings && dev_stats(o, &o->devs[i], iv, dp))
			goto out;
	rc = 0;
out:
	free(ref);
	free(tmp);
	free(iv);
	free(dp);
	return rc;
}

/* ---- waits by ioctl ---- */

static int is_wait_ioctl(struct builder *b, const struct kx_ioctl *e, int *wait)
{
	struct mslot *sl = map_get(&b->names, e->drv, e->cmd, e->xfer_cmd);
	char buf[96];
	const char *n;

	if (!sl)
		return -1;
	if (!sl->v) {
		n = kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, sizeof(buf));
		sl->v = 1 + (strstr(n, "WAIT") && !strstr(n, "VBLANK"));
	}
	*wait = sl->v == 2;
	return 0;
}

struct wix {
	uint64_t ts, end;
	size_t idx;
};

static int wix_cmp(const void *pa, const void *pb)
{
	const struct wix *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int link_waiters(struct builder *b)
{
	struct kx_jobs *o = b->out;
	size_t n = kx_store_ioctl_count(b->s), nw = 0, cap = 0;
	struct wix *w = NULL;
	uint64_t maxdur = 0;

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);
		int wait;

		if (!gpu_drv(e->drv))
			continue;
		if (is_wait_ioctl(b, e, &wait))
			goto oom;
		if (!wait)
			continue;
		if (kx_grow((void **)&w, &cap, nw, sizeof(*w)))
			goto oom;
		w[nw++] = (struct wix){e->ts, ioctl_end(e), i};
		if (e->dur > maxdur)
			maxdur = e->dur;
	}
	if (nw > 1)
		qsort(w, nw, sizeof(*w), wix_cmp);
	for (size_t k = 0; nw && k < o->njobs; k++) {
		struct kx_jobrec *j = &o->jobs[k];
		const struct kx_jobdev *d = &o->devs[j->dev];
		size_t lo = 0, hi = nw, best = SIZE_MAX;
		int best_same = 0;

		if (j->waiter_tid || !j->done_ts || !gpu_src(j->src))
			continue;
		/* Past the last wait entered at or before DONE, then back over maxdur. */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (w[mid].ts <= j->done_ts)
				lo = mid + 1;
			else
				hi = mid;
		}
		while (lo-- > 0 && j->done_ts - w[lo].ts <= maxdur) {
			const struct kx_ioctl *e = kx_store_ioctl(b->s, w[lo].idx);
			int same;

			if (w[lo].end < j->done_ts)
				continue;
			if (d->drv ? e->drv != d->drv : !gpu_drv(e->drv))
				continue;
			same = j->pid && e->pid == j->pid;
			if (best == SIZE_MAX || same > best_same ||
			    (same == best_same &&
			     (w[lo].end < w[best].end ||
			      (w[lo].end == w[best].end && w[lo].idx < w[best].idx)))) {
				best = lo;
				best_same = same;
			}
		}
		if (best != SIZE_MAX) {
			j->wait = (int64_t)w[best].idx;
			j->waiter_tid = kx_store_ioctl(b->s, w[best].idx)->tid;
		}
	}
	for (size_t k = 0; k < o->njobs; k++)
		if (o->jobs[k].waiter_tid)
			o->rings[o->jobs[k].ring].waited++;
	free(w);
	return 0;
oom:
	free(w);
	return -1;
}

/* ---- memory ---- */

struct mem_ev {
	uint64_t ts;
	size_t idx;
};

static int mem_ev_cmp(const void *pa, const void *pb)
{
	const struct mem_ev *a = pa, *b = pb;

	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static const struct kx_field *field(const struct kx_field *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

/* The device of an ioctl's memory: its own node, else its driver's device. */
static long mem_dev(struct builder *b, const struct kx_ioctl *e)
{
	int n = ci_count(b);

	if (!anon_fkind(e->fkind)) {
		for (int i = 0; i < n; i++) {
			const struct kx_device *d = &b->ci->devices[i];

			if (d->fkind == e->fkind &&
			    (d->dev == e->dev ||
			     (d->any_minor && KX_MAJOR(d->dev) == KX_MAJOR(e->dev))))
				return dev_get(b, DK_CI, (uint64_t)i, NULL);
		}
	}
	return dev_for_drv(b, e->drv);
}

static int mem_add(struct builder *b, long dev, const struct kx_ioctl *e, size_t idx, int64_t delta)
{
	struct kx_jobdev *d = &b->out->devs[dev];
	uint64_t usage = d->nmem ? d->mem[d->nmem - 1].usage : 0;
	size_t n = d->nmem;
	/* The capacity is not kept: kx_grow's sizes are 0, 16, 32, 64, ..., so
	 * it is the count rounded up to one of them. */
	size_t cap = n <= 16 ? (n ? 16 : 0) : (size_t)1 << (64 - __builtin_clzll(n - 1));

	if (kx_grow((void **)&d->mem, &cap, n, sizeof(*d->mem)))
		return -1;
	usage = delta < 0 && (uint64_t)-delta > usage ? 0 : usage + (uint64_t)delta;
	d->mem[d->nmem++] = (struct kx_mem_pt){ioctl_end(e), delta, usage, idx};
	if (delta >= 0)
		d->mem_allocs++;
	else
		d->mem_frees++;
	return 0;
}

static int memory(struct builder *b)
{
	size_t n = kx_store_ioctl_count(b->s), nev = 0;
	struct mem_ev *ev = malloc((n ? n : 1) * sizeof(*ev));
	struct map handles = {0}, slots = {0};
	int rc = -1;

	if (!ev)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		if (e->ret >= 0 && e->arg_off != KX_NO_ARG)
			ev[nev++] = (struct mem_ev){ioctl_end(e), i};
	}
	qsort(ev, nev, sizeof(*ev), mem_ev_cmp);
	for (size_t k = 0; k < nev; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, ev[k].idx);
		const uint8_t *arg = kx_store_arg(b->s, e);
		const struct kx_field *size, *handle, *slot, *msize, *op;
		uint64_t who = (uint64_t)e->pid << 32 | (uint32_t)e->fd;
		struct kx_field f[MAX_FIELDS];
		struct mslot *sl;
		char buf[96];
		const char *name;
		long dev;
		int nf;

		if (!arg)
			continue;
		nf = kx_ioctl_decode_args((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, arg,
		                          e->arg_in_len, arg + e->arg_in_len, e->arg_out_len, f,
		                          MAX_FIELDS);
		if (nf <= 0)
			continue;
		size = field(f, nf, "size");
		handle = field(f, nf, "handle");
		slot = field(f, nf, "slot");
		msize = field(f, nf, "memory_size");
		op = field(f, nf, "op");
		if (e->drv == KX_DRV_KVM && (e->cmd == KVM_SET_MEM || e->cmd == KVM_SET_MEM2) &&
		    slot && msize) {
			/* A slot is created, resized or (size 0) deleted. */
			dev = mem_dev(b, e);
			sl = map_find(&slots, who, slot->u, 0);
			if (dev < 0)
				goto out;
			if (!msize->u) {
				if (!sl) {
					b->out->devs[dev].mem_unknown_frees++;
					continue;
				}
				if (mem_add(b, dev, e, ev[k].idx, -(int64_t)sl->v))
					goto out;
				map_del(&slots, sl);
				continue;
			}
			if (mem_add(b, dev, e, ev[k].idx,
			            (int64_t)msize->u - (int64_t)(sl ? sl->v : 0)))
				goto out;
			sl = map_get(&slots, who, slot->u, 0);
			if (!sl)
				goto out;
			sl->v = msize->u;
			continue;
		}
		/* Allocations return a handle, frees name one. */
		if (!handle)
			continue;
		name = kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, sizeof(buf));
		if (strstr(name, "CLOSE") || strstr(name, "FREE") || strstr(name, "DESTROY") ||
		    (op && op->u == 1 && !size)) {
			dev = mem_dev(b, e);
			if (dev < 0)
				goto out;
			sl = map_find(&handles, e->drv, who, handle->u);
			if (!sl) {
				b->out->devs[dev].mem_unknown_frees++;
				continue;
			}
			if (mem_add(b, dev, e, ev[k].idx, -(int64_t)sl->v))
				goto out;
			map_del(&handles, sl);
			continue;
		}
		if (size && size->u) {
			dev = mem_dev(b, e);
			if (dev < 0 || mem_add(b, dev, e, ev[k].idx, (int64_t)size->u))
				goto out;
			sl = map_get(&handles, e->drv, who, handle->u);
			if (!sl)
				goto out;
			sl->v = size->u;
		}
	}
	for (size_t i = 0; i < b->out->ndevs; i++) {
		struct kx_jobdev *d = &b->out->devs[i];
		double sum = 0;

		if (!d->nmem)
			continue;
		d->mem_min = UINT64_MAX;
		for (size_t k = 0; k < d->nmem; k++) {
			uint64_t u = d->mem[k].usage;

			sum += (double)u;
			if (u > d->mem_max)
				d->mem_max = u;
			if (u < d->mem_min)
				d->mem_min = u;
		}
		d->mem_avg = sum / (double)d->nmem;
	}
	rc = 0;
out:
	free(ev);
	map_free(&handles);
	map_free(&slots);
	return rc;
}

/* ---- entry points ---- */

static void span(struct builder *b)
{
	struct kx_jobs *o = b->out;
	uint64_t lo = UINT64_MAX, hi = 0;
	size_t n = kx_store_ioctl_count(b->s), m = kx_store_job_count(b->s);

	for (size_t i = 0; i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		if (e->ts < lo)
			lo = e->ts;
		if (ioctl_end(e) > hi)
			hi = ioctl_end(e);
	}
	for (size_t i = 0; i < m; i++) {
		uint64_t t = job_ev(b, i)->ts;

		if (t < lo)
			lo = t;
		if (t > hi)
			hi = t;
	}
	o->start_ns =
	        b->ci && b->ci->start_mono_ns ? b->ci->start_mono_ns : (lo == UINT64_MAX ? 0 : lo);
	o->end_ns = b->ci && b->ci->stop_mono_ns > o->start_ns ? b->ci->stop_mono_ns : hi;
	if (o->end_ns < o->start_ns)
		o->end_ns = o->start_ns;
}

static int pair_all(struct builder *b, struct map *open)
{
	size_t m = kx_store_job_count(b->s), n = kx_store_ioctl_count(b->s);
	size_t *ord = malloc((m ? m : 1) * sizeof(*ord));
	uint8_t *used = calloc(n / 8 + 1, 1);
	int has_kvm = 0, rc = -1;

	if (!ord || !used)
		goto out;
	for (size_t i = 0; i < m; i++)
		ord[i] = i;
	qsort_r(ord, m, sizeof(*ord), ev_cmp, (void *)b->s);
	for (size_t k = 0; k < m; k++) {
		const struct kx_job *e = job_ev(b, ord[k]);

		if (e->src == KX_JOB_SRC_KVM) {
			has_kvm = 1;
			if (kvm_event(b, used, e))
				goto out;
			continue;
		}
		if (namespace_of(e) == NS_NONE || !e->phase || e->phase >= KX_JOB_PHASE_MAX) {
			b->out->anom.unknown++;
			continue;
		}
		if (e->phase == KX_JOB_WAIT_BEGIN || e->phase == KX_JOB_WAIT_END) {
			wait_event(b, open, e);
			continue;
		}
		if (e->phase > KX_JOB_DONE)
			continue; /* dependencies: not a lifecycle step */
		if (pair_event(b, open, e))
			goto out;
	}
	/* Every KVM_RUN should end in an exit event once the source is on. */
	for (size_t i = 0; has_kvm && i < n; i++) {
		const struct kx_ioctl *e = kx_store_ioctl(b->s, i);

		if (e->drv == KX_DRV_KVM && e->cmd == KVM_RUN_CMD && !(used[i / 8] >> (i % 8) & 1))
			b->out->anom.runs_without_exit++;
	}
	rc = 0;
out:
	free(ord);
	free(used);
	return rc;
}

/* Flags, links and devices of the paired jobs. */
static int classify(struct builder *b)
{
	struct kx_jobs_anomalies *an = &b->out->anom;
	struct map ringdrv = {0};
	int rc = -1;

	for (size_t i = 0; i < b->ntj; i++) {
		struct tjob *t = &b->tj[i];

		if (!t->r.done_ts)
			t->r.flags |= KX_JOBF_INCOMPLETE;
		if (t->r.src == KX_JOB_SRC_BLOCK && !t->r.queue_ts && t->r.run_ts)
			t->r.flags |= KX_JOBF_DIRECT;
		else if (t->r.done_ts && !t->r.queue_ts)
			t->r.flags |= KX_JOBF_NO_QUEUE;
		link_submit(b, t);
		an->incomplete += (t->r.flags & KX_JOBF_INCOMPLETE) != 0;
		an->no_queue += (t->r.flags & KX_JOBF_NO_QUEUE) != 0;
		an->unlinked += (t->r.flags & KX_JOBF_UNLINKED) != 0;
		if (t->r.submit >= 0)
			b->out->submitted[t->r.submit / 8] |= (uint8_t)(1u << (t->r.submit % 8));
	}
	if (learn_ring_drivers(b, &ringdrv))
		goto out;
	for (size_t i = 0; i < b->ntj; i++) {
		struct tjob *t = &b->tj[i];
		long d;

		/* Classic block records carry the disk's dev_t only: the registry names it. */
		if (!t->ring[0] && t->r.src == KX_JOB_SRC_BLOCK)
			kx_block_disk_name(t->blkdev, t->ring, KX_DISK_NAME_LEN);
		d = assign_device(b, &ringdrv, t);

		if (d < 0)
			goto out;
		t->r.dev = (uint32_t)d;
		if (!t->ring[0]) {
			if (t->r.src == KX_JOB_SRC_BLOCK)
				snprintf(t->ring, sizeof(t->ring), "%u:%u", KX_MAJOR(t->blkdev),
				         KX_MINOR(t->blkdev));
			else
				snprintf(t->ring, sizeof(t->ring),
				         t->r.ctx > UINT32_MAX ? "ctx 0x%llx" : "ctx %llu",
				         (unsigned long long)t->r.ctx);
		}
	}
	rc = 0;
out:
	map_free(&ringdrv);
	return rc;
}

struct kx_jobs *kx_jobs_build(const struct kx_store *s, const struct kx_capinfo *ci)
{
	struct builder b;
	struct map open = {0};
	struct kx_jobs *o = calloc(1, sizeof(*o));

	memset(&b, 0, sizeof(b));
	if (!o)
		return NULL;
	b.s = s;
	b.ci = ci;
	b.out = o;
	o->nioctls = kx_store_ioctl_count(s);
	o->submitted = calloc(o->nioctls / 8 + 1, 1);
	/* The (tid, enter) index serves the links only: none without job events. */
	if (!o->submitted || (kx_store_job_count(s) && build_tix(&b)))
		goto fail;
	span(&b);
	if (pair_all(&b, &open) || classify(&b))
		goto fail;
	map_free(&open);
	/* Memory devices join before the final device order is fixed. */
	if (memory(&b) || finish_jobs(&b) || link_waiters(&b))
		goto fail;
	unique_names(o);
	free(b.tj);
	free(b.tix);
	free(b.dkeys);
	map_free(&b.names);
	return o;
fail:
	map_free(&open);
	free(b.tj);
	free(b.tix);
	free(b.dkeys);
	map_free(&b.names);
	kx_jobs_free(o);
	return NULL;
}

void kx_jobs_free(struct kx_jobs *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->ndevs; i++) {
		free(j->devs[i].depth);
		free(j->devs[i].mem);
	}
	free(j->jobs);
	free(j->rings);
	free(j->devs);
	free(j->submitted);
	free(j);
}
