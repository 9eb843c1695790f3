/* The rules of device timelines (contract: jobpair.h; the rules: jobs.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/jobpair.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "util/grow.h"

#define KVM_SET_MEM  0x4020ae46u /* KVM_SET_USER_MEMORY_REGION */
#define KVM_SET_MEM2 0x40a0ae49u /* KVM_SET_USER_MEMORY_REGION2 */
#define MAX_FIELDS   16

/* Pairing namespaces (see jobs.h). */
enum { NS_NONE, NS_BLOCK, NS_FENCE, NS_SCHED_OLD, NS_XE, NS_MSM, NS_V3D, NS_VPU };

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

enum kx_jev kx_jobpair_kind(const struct kx_job *e)
{
	if (e->src == KX_JOB_SRC_KVM)
		return KX_JEV_KVM;
	if (namespace_of(e) == NS_NONE || !e->phase || e->phase >= KX_JOB_PHASE_MAX)
		return KX_JEV_UNKNOWN;
	if (e->phase == KX_JOB_WAIT_BEGIN || e->phase == KX_JOB_WAIT_END)
		return KX_JEV_WAIT;
	if (e->phase > KX_JOB_DONE)
		return KX_JEV_DEP;
	return KX_JEV_PHASE;
}

void kx_jobpair_key(const struct kx_job *e, uint64_t k[3])
{
	int ns = namespace_of(e);

	k[0] = (uint64_t)ns << 32 | (ns == NS_BLOCK ? e->dev : 0);
	k[1] = e->ctx;
	k[2] = ns == NS_SCHED_OLD ? 0 : e->seqno;
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

int kx_job_src_gpu(unsigned int src)
{
	return src != KX_JOB_SRC_BLOCK && src != KX_JOB_SRC_KVM;
}

int kx_drv_gpu(unsigned int drv)
{
	return drv >= KX_DRV_DRM && drv <= KX_DRV_KFD;
}

unsigned int kx_job_src_driver(unsigned int src)
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
	unsigned int want = kx_job_src_driver(src);

	if (src == KX_JOB_SRC_BLOCK)
		return drv == KX_DRV_LOOP || drv == KX_DRV_BLOCK;
	if (want)
		return drv == want;
	return kx_drv_gpu(drv);
}

static int anon_fkind(unsigned int fkind)
{
	return fkind == KX_FK_KVM_VM || fkind == KX_FK_KVM_VCPU || fkind == KX_FK_KVM_DEV ||
	       fkind == KX_FK_VFIO_DEV;
}

/* ---- pairing ---- */

void kx_tjob_init(struct kx_tjob *t)
{
	memset(t, 0, sizeof(*t));
	t->r.submit = -1;
	t->r.wait = -1;
}

/* What any event of a job tells about it besides times: naming, ring, aux. */
static void tjob_note(struct kx_tjob *t, const struct kx_job *e, unsigned int p)
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
static void tjob_set(struct kx_tjob *t, const struct kx_job *e, unsigned int p)
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
	if (kx_job_names_submitter(e) && (p == KX_JOB_QUEUE || !t->r.queue_ts)) {
		t->r.pid = e->pid;
		t->r.tid = e->tid;
	}
	if (e->src == KX_JOB_SRC_BLOCK)
		t->blkdev = e->dev;
}

int kx_job_names_submitter(const struct kx_job *e)
{
	return e->tid && e->src != KX_JOB_SRC_KVM &&
	       (e->phase == KX_JOB_QUEUE || (e->phase == KX_JOB_RUN && e->src == KX_JOB_SRC_BLOCK));
}

void kx_tjob_first(struct kx_tjob *t, const struct kx_job *e)
{
	tjob_set(t, e, e->phase);
}

/* Did src set a phase of t later in the lifecycle than p? */
static int later_by(const struct kx_tjob *t, unsigned int p, unsigned int src)
{
	for (unsigned int q = p + 1; q <= KX_JOB_DONE; q++)
		if (t->psrc[q] == src)
			return 1;
	return 0;
}

int kx_jobpair_reusable(const struct kx_job *e)
{
	int ns = namespace_of(e);

	return ns == NS_BLOCK || ns == NS_SCHED_OLD;
}

int kx_jobpair_phase(struct kx_tjob *t, const struct kx_job *e, struct kx_jobs_anomalies *an)
{
	int reusable = kx_jobpair_reusable(e);
	unsigned int p = e->phase;

	if (!t || (t->closed && reusable && p != KX_JOB_DONE))
		return 1;
	if (t->psrc[p]) {
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

void kx_tjob_wait(struct kx_tjob *t, const struct kx_job *e)
{
	if (!e->tid || t->r.waiter_tid)
		return;
	t->r.waiter_tid = e->tid;
	t->r.flags |= KX_JOBF_WAIT_PHASE;
}

/* ---- KVM ---- */

uint32_t kx_kvm_tid(const struct kx_job *e)
{
	return e->ctx ? (uint32_t)e->ctx : e->tid;
}

int kx_kvm_run(const struct kx_ioctl *io)
{
	return io->drv == KX_DRV_KVM && io->cmd == KX_KVM_RUN_CMD;
}

int kx_kvm_run_holds(const struct kx_ioctl *io, uint64_t at)
{
	return kx_kvm_run(io) && kx_ioctl_end(io) >= at;
}

void kx_tjob_kvm(struct kx_tjob *t, const struct kx_job *e, const struct kx_ioctl *io, int64_t idx)
{
	uint32_t tid = kx_kvm_tid(e);

	kx_tjob_init(t);
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
	if (!io)
		return;
	t->r.queue_ts = io->ts;
	t->r.run_ts = io->ts;
	t->r.pid = io->pid;
	t->r.tid = io->tid;
	t->r.submit = idx;
	t->psrc[KX_JOB_QUEUE] = t->psrc[KX_JOB_RUN] = KX_JOB_SRC_KVM;
}

/* ---- submit links, flags ---- */

uint64_t kx_tjob_link_at(const struct kx_tjob *t)
{
	uint64_t at = t->r.queue_ts ? t->r.queue_ts : t->r.run_ts;

	if (t->r.src == KX_JOB_SRC_KVM || !t->r.tid)
		return 0;
	return at;
}

/* The source whose event queued t. */
static unsigned int queue_src(const struct kx_tjob *t)
{
	return t->psrc[KX_JOB_QUEUE] ? t->psrc[KX_JOB_QUEUE] : t->r.src;
}

int kx_tjob_links_to(const struct kx_tjob *t, const struct kx_ioctl *io)
{
	uint64_t at = kx_tjob_link_at(t);
	unsigned int src = queue_src(t);

	return can_submit(io->drv, src) &&
	       (kx_ioctl_end(io) >= at ||
	        (kx_job_src_gpu(src) && at - kx_ioctl_end(io) <= KX_JOBS_LINK_WINDOW_NS));
}

void kx_tjob_no_link(struct kx_tjob *t)
{
	/* Block I/O comes from read/write: only a missing ioctl of a GPU source is news. */
	if (t->r.queue_ts && kx_job_src_gpu(queue_src(t)))
		t->r.flags |= KX_JOBF_UNLINKED;
}

void kx_tjob_classify(struct kx_tjob *t, struct kx_jobs_anomalies *an)
{
	if (!t->r.done_ts)
		t->r.flags |= KX_JOBF_INCOMPLETE;
	if (t->r.src == KX_JOB_SRC_BLOCK && !t->r.queue_ts && t->r.run_ts)
		t->r.flags |= KX_JOBF_DIRECT;
	else if (t->r.done_ts && !t->r.queue_ts)
		t->r.flags |= KX_JOBF_NO_QUEUE;
	an->incomplete += (t->r.flags & KX_JOBF_INCOMPLETE) != 0;
	an->no_queue += (t->r.flags & KX_JOBF_NO_QUEUE) != 0;
	an->unlinked += (t->r.flags & KX_JOBF_UNLINKED) != 0;
}

/* ---- devices ---- */

static int ci_count(const struct kx_jobdevtab *t)
{
	if (!t->ci)
		return 0;
	return t->ci->ndevices < KX_MAX_DEVICES ? (int)t->ci->ndevices : KX_MAX_DEVICES;
}

/* The traced device of driver drv, a device node first; -1. */
static int ci_by_drv(const struct kx_jobdevtab *t, unsigned int drv)
{
	int n = ci_count(t), anon = -1;

	for (int i = 0; i < n; i++) {
		const struct kx_device *d = &t->ci->devices[i];

		if (d->drv != drv)
			continue;
		if (!anon_fkind(d->fkind))
			return i;
		if (anon < 0)
			anon = i;
	}
	return anon;
}

static int ci_by_blk(const struct kx_jobdevtab *t, uint32_t dev)
{
	int n = ci_count(t);

	for (int i = 0; i < n; i++) {
		const struct kx_device *d = &t->ci->devices[i];

		if (d->fkind != KX_FK_BLK)
			continue;
		if (d->dev == dev || (d->any_minor && KX_MAJOR(d->dev) == KX_MAJOR(dev)))
			return i;
	}
	return -1;
}

/* The only GPU driver of the traced devices, or KX_DRV_UNKNOWN. */
static unsigned int only_gpu_drv(const struct kx_jobdevtab *t)
{
	unsigned int found = KX_DRV_UNKNOWN;
	int n = ci_count(t);

	for (int i = 0; i < n; i++) {
		unsigned int drv = t->ci->devices[i].drv;

		/* KFD comes with amdgpu: it does not make the choice ambiguous. */
		if (!kx_drv_gpu(drv) || drv == KX_DRV_KFD || drv == found)
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

static void name_ci_device(const struct kx_jobdevtab *t, struct kx_jobdev *d, int i)
{
	const struct kx_device *c = &t->ci->devices[i];
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

static void name_device(const struct kx_jobdevtab *t, struct kx_jobdev *d, int kind, uint64_t val,
                        const char *ring)
{
	d->ci_index = -1;
	switch (kind) {
	case KX_DK_CI:
		d->ci_index = (int)val;
		name_ci_device(t, d, (int)val);
		break;
	case KX_DK_DRV:
		d->drv = (uint8_t)val;
		snprintf(d->name, sizeof(d->name), "%s", kx_driver_name((enum kx_driver)val));
		snprintf(d->label, sizeof(d->label), "%s", d->name);
		break;
	case KX_DK_BLK:
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
}

long kx_jobdevtab_get(struct kx_jobdevtab *t, int kind, uint64_t val, const char *ring)
{
	size_t cap = t->cap;

	for (size_t i = 0; i < t->n; i++)
		if (t->keys[i].kind == kind && t->keys[i].val == val)
			return (long)i;
	if (kx_grow((void **)&t->devs, &t->cap, t->n, sizeof(*t->devs)))
		return -1;
	/* keys keeps the capacity of devs, exactly. */
	if (t->cap != cap) {
		struct kx_devkey *k = realloc(t->keys, t->cap * sizeof(*k));

		if (!k)
			return -1;
		t->keys = k;
	}
	t->keys[t->n] = (struct kx_devkey){kind, val};
	memset(&t->devs[t->n], 0, sizeof(t->devs[t->n]));
	name_device(t, &t->devs[t->n], kind, val, ring);
	return (long)t->n++;
}

long kx_jobdevtab_for_drv(struct kx_jobdevtab *t, unsigned int drv)
{
	int ci = ci_by_drv(t, drv);

	return ci >= 0 ? kx_jobdevtab_get(t, KX_DK_CI, (uint64_t)ci, NULL)
	               : kx_jobdevtab_get(t, KX_DK_DRV, drv, NULL);
}

long kx_jobdevtab_mem(struct kx_jobdevtab *t, const struct kx_ioctl *e)
{
	int n = ci_count(t);

	if (!anon_fkind(e->fkind)) {
		for (int i = 0; i < n; i++) {
			const struct kx_device *d = &t->ci->devices[i];

			if (d->fkind == e->fkind &&
			    (d->dev == e->dev ||
			     (d->any_minor && KX_MAJOR(d->dev) == KX_MAJOR(e->dev))))
				return kx_jobdevtab_get(t, KX_DK_CI, (uint64_t)i, NULL);
		}
	}
	return kx_jobdevtab_for_drv(t, e->drv);
}

long kx_jobdevtab_assign(struct kx_jobdevtab *t, const struct kx_tjob *j, unsigned int submit_drv,
                         unsigned int ring_drv)
{
	unsigned int drv = kx_job_src_driver(j->r.src);

	if (j->r.src == KX_JOB_SRC_BLOCK) {
		int ci = ci_by_blk(t, j->blkdev);

		if (ci >= 0)
			return kx_jobdevtab_get(t, KX_DK_CI, (uint64_t)ci, NULL);
		return kx_jobdevtab_get(t, KX_DK_BLK, j->blkdev, j->ring);
	}
	if (!drv)
		drv = submit_drv;
	if (!drv)
		drv = ring_drv;
	if (!drv)
		drv = only_gpu_drv(t);
	if (!drv)
		return kx_jobdevtab_get(t, KX_DK_SRC, j->r.src, NULL);
	return kx_jobdevtab_for_drv(t, drv);
}

void kx_tjob_ring_name(struct kx_tjob *t)
{
	/* Classic block records carry the disk's dev_t only: the registry names it. */
	if (!t->ring[0] && t->r.src == KX_JOB_SRC_BLOCK)
		kx_block_disk_name(t->blkdev, t->ring, KX_DISK_NAME_LEN);
}

void kx_tjob_ring_fallback(struct kx_tjob *t)
{
	if (t->ring[0])
		return;
	if (t->r.src == KX_JOB_SRC_BLOCK)
		snprintf(t->ring, sizeof(t->ring), "%u:%u", KX_MAJOR(t->blkdev),
		         KX_MINOR(t->blkdev));
	else
		snprintf(t->ring, sizeof(t->ring),
		         t->r.ctx > UINT32_MAX ? "ctx 0x%llx" : "ctx %llu",
		         (unsigned long long)t->r.ctx);
}

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

int kx_jobdevtab_order(struct kx_jobdevtab *t, uint32_t *newidx)
{
	uint32_t *order = malloc((t->n ? t->n : 1) * sizeof(*order));
	struct kx_jobdev *nd = malloc((t->n ? t->n : 1) * sizeof(*nd));
	struct kx_devkey *nk = malloc((t->n ? t->n : 1) * sizeof(*nk));

	if (!order || !nd || !nk) {
		free(order);
		free(nd);
		free(nk);
		return -1;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		uint32_t k = i;

		/* Insertion sort: a handful of devices. */
		for (; k > 0 && dev_cmp(t->devs, order[k - 1], i) > 0; k--)
			order[k] = order[k - 1];
		order[k] = i;
	}
	for (uint32_t i = 0; i < t->n; i++) {
		nd[i] = t->devs[order[i]];
		nk[i] = t->keys[order[i]];
		newidx[order[i]] = i;
	}
	free(t->devs);
	free(t->keys);
	t->devs = nd;
	t->keys = nk;
	t->cap = t->n;
	free(order);
	return 0;
}

/* The base name of the device node that ends a label ("amdgpu
 * /dev/dri/renderD128": "renderD128"), or NULL. */
static const char *label_node(const char *label)
{
	const char *sp = strrchr(label, ' ');

	return sp && !strncmp(sp + 1, "/dev/", 5) ? base_name(sp + 1) : NULL;
}

/* Device i's name is shared, and each device sharing it has a node. */
static int name_shared_by_nodes(const struct kx_jobdev *devs, size_t n, size_t i)
{
	int shared = 0;

	for (size_t j = 0; j < n; j++) {
		if (strcmp(devs[i].name, devs[j].name))
			continue;
		if (!label_node(devs[j].label))
			return 0;
		shared |= j != i;
	}
	return shared;
}

void kx_jobdevs_unique_names(struct kx_jobdev *devs, size_t n)
{
	uint8_t *rep = n ? calloc(n, 1) : NULL;
	const char *node;

	for (size_t i = 0; rep && i < n; i++)
		rep[i] = (uint8_t)name_shared_by_nodes(devs, n, i);
	for (size_t i = 0; rep && i < n; i++) {
		size_t len = strlen(devs[i].name);

		if (rep[i] && (node = label_node(devs[i].label)))
			snprintf(devs[i].name + len, sizeof(devs[i].name) - len, " (%s)", node);
	}
	free(rep);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < i; j++) {
			if (strcmp(devs[i].name, devs[j].name))
				continue;
			snprintf(devs[i].name + strlen(devs[i].name),
			         sizeof(devs[i].name) - strlen(devs[i].name), " #%zu", i);
			break;
		}
	}
}

void kx_jobdevtab_free(struct kx_jobdevtab *t)
{
	free(t->keys);
	t->keys = NULL;
}

int kx_jobrec_busy(const struct kx_jobrec *j, uint64_t end_ns, uint64_t *a, uint64_t *b)
{
	if (!j->run_ts && !(j->queue_ts && j->done_ts))
		return 0;
	*a = kx_jobrec_start(j);
	*b = kx_jobrec_end(j, end_ns);
	return 1;
}

/* ---- waits ---- */

int kx_wait_ioctl(struct kx_keymap *names, const struct kx_ioctl *e, int *wait)
{
	struct kx_keyslot *sl = kx_keymap_get(names, e->drv, e->cmd, e->xfer_cmd);
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

int kx_waiter_fits(const struct kx_jobdev *d, const struct kx_ioctl *e)
{
	return d->drv ? e->drv == d->drv : kx_drv_gpu(e->drv);
}

int kx_waiter_better(const struct kx_waitcand *a, const struct kx_waitcand *b, uint32_t pid)
{
	int sa = pid && a->pid == pid, sb = pid && b->pid == pid;

	if (sa != sb)
		return sa > sb;
	if (a->end != b->end)
		return a->end < b->end;
	return a->idx < b->idx;
}

/* ---- memory ---- */

static const struct kx_field *field(const struct kx_field *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

/* KVM memory slots: created, resized or (size 0) deleted. */
static int kvm_slot(struct kx_memacct *m, uint64_t who, const struct kx_field *slot,
                    const struct kx_field *msize, int64_t *delta)
{
	struct kx_keyslot *sl = kx_keymap_find(&m->slots, who, slot->u, 0);

	if (!msize->u) {
		if (!sl)
			return KX_MEM_UNKNOWN_FREE;
		*delta = -(int64_t)sl->v;
		kx_keymap_del(&m->slots, sl);
		return KX_MEM_DELTA;
	}
	*delta = (int64_t)msize->u - (int64_t)(sl ? sl->v : 0);
	sl = kx_keymap_get(&m->slots, who, slot->u, 0);
	if (!sl)
		return -1;
	sl->v = msize->u;
	return KX_MEM_DELTA;
}

/*
 * NVIDIA RM objects: memory allocations by (pid, client, handle); the value
 * holds the size and the region in its top bit. RM_FREE of a handle that is
 * no allocation of the capture frees some other object (most are): no
 * memory event. Freeing the client (hObjectOld == hRoot) frees all its
 * objects.
 */
#define NV_NR_ALLOC_MEMORY 0x4627 /* type 'F' << 8 | nr */
#define NV_NR_FREE         0x4629
#define NV_NR_ALLOC        0x462b
#define NV_REGION_BIT      63
#define NV_CLASS_SYSTEM    0x3e /* NV01_MEMORY_SYSTEM, cl003e.h */
#define NV_CLASS_LOCAL     0x40 /* NV01_MEMORY_LOCAL_USER, cl0040.h */
#define NV_CLASS_OS_DESC   0x71 /* NV01_MEMORY_SYSTEM_OS_DESCRIPTOR, cl0071.h */

static void nv_take(struct kx_memacct *m, struct kx_keyslot *sl)
{
	int reg = (int)(sl->v >> NV_REGION_BIT);

	m->nv[reg] -= (int64_t)(sl->v & ~(1ULL << NV_REGION_BIT));
	kx_keymap_del(&m->handles, sl);
}

static int nv_free(struct kx_memacct *m, const struct kx_ioctl *e, const struct kx_field *f, int nf)
{
	const struct kx_field *root = field(f, nf, "h_root"), *old = field(f, nf, "h_old");
	const struct kx_field *st = field(f, nf, "status");
	uint64_t who;

	if (!root || !old || (st && st->u)) /* an RM error: nothing was freed */
		return KX_MEM_NONE;
	who = (uint64_t)e->pid << 32 | (uint32_t)root->u;
	if (old->u == root->u) {
		/* Backwards: the last entry moves into a deleted one's place. */
		for (size_t i = m->handles.n; i-- > 0;) {
			struct kx_keyslot *sl = &m->handles.v[i];

			if (sl->k[0] == KX_DRV_NVIDIA && sl->k[1] == who)
				nv_take(m, sl);
		}
	} else {
		struct kx_keyslot *sl = kx_keymap_find(&m->handles, KX_DRV_NVIDIA, who, old->u);

		if (sl)
			nv_take(m, sl);
	}
	return m->nv[KX_NVMEM_VID] || m->nv[KX_NVMEM_SYS] ? KX_MEM_DELTA : KX_MEM_NONE;
}

static int nv_alloc(struct kx_memacct *m, const struct kx_ioctl *e, const struct kx_field *f,
                    int nf)
{
	const struct kx_field *root = field(f, nf, "h_root"), *handle = field(f, nf, "handle");
	const struct kx_field *cls = field(f, nf, "rm_class"), *st = field(f, nf, "status");
	const struct kx_field *size = field(f, nf, "size"), *limit = field(f, nf, "limit");
	uint64_t bytes = size ? size->u : limit ? limit->u + 1 : 0;
	struct kx_keyslot *sl;
	int reg;

	if (!root || !handle || !cls || !st || st->u || !bytes || bytes >> NV_REGION_BIT)
		return KX_MEM_NONE;
	if (cls->u == NV_CLASS_LOCAL)
		reg = KX_NVMEM_VID;
	else if (cls->u == NV_CLASS_SYSTEM || cls->u == NV_CLASS_OS_DESC)
		reg = KX_NVMEM_SYS;
	else
		return KX_MEM_NONE;
	sl = kx_keymap_get(&m->handles, KX_DRV_NVIDIA, (uint64_t)e->pid << 32 | (uint32_t)root->u,
	                   handle->u);
	if (!sl)
		return -1;
	if (sl->v) /* the same handle again: the old object is gone */
		m->nv[sl->v >> NV_REGION_BIT] -= (int64_t)(sl->v & ~(1ULL << NV_REGION_BIT));
	sl->v = bytes | (uint64_t)reg << NV_REGION_BIT;
	m->nv[reg] += (int64_t)bytes;
	return KX_MEM_DELTA;
}

/* NVIDIA's RM allocations and frees: 0 (not one), or a step's result. */
static int nv_step(struct kx_memacct *m, const struct kx_ioctl *e, const struct kx_field *f, int nf,
                   int64_t *delta, int *r)
{
	uint32_t nr = e->cmd & 0xffffU;

	if (e->drv != KX_DRV_NVIDIA || e->xfer_cmd)
		return 0;
	if (nr == NV_NR_FREE)
		*r = nv_free(m, e, f, nf);
	else if (nr == NV_NR_ALLOC || nr == NV_NR_ALLOC_MEMORY)
		*r = nv_alloc(m, e, f, nf);
	else
		return 0;
	*delta = m->nv[KX_NVMEM_VID] + m->nv[KX_NVMEM_SYS];
	return 1;
}

int kx_memacct_step(struct kx_memacct *m, const struct kx_ioctl *e, const uint8_t *arg,
                    int64_t *delta)
{
	const struct kx_field *size, *handle, *slot, *msize, *op;
	uint64_t who = (uint64_t)e->pid << 32 | (uint32_t)e->fd;
	struct kx_field f[MAX_FIELDS];
	struct kx_keyslot *sl;
	char buf[96];
	const char *name;
	int nf, nv;

	memset(m->nv, 0, sizeof(m->nv));
	if (!arg || e->ret < 0)
		return KX_MEM_NONE;
	nf = kx_ioctl_decode_args((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, arg, e->arg_in_len,
	                          arg + e->arg_in_len, e->arg_out_len, f, MAX_FIELDS);
	if (nf <= 0)
		return KX_MEM_NONE;
	if (nv_step(m, e, f, nf, delta, &nv))
		return nv;
	size = field(f, nf, "size");
	handle = field(f, nf, "handle");
	slot = field(f, nf, "slot");
	msize = field(f, nf, "memory_size");
	op = field(f, nf, "op");
	if (e->drv == KX_DRV_KVM && (e->cmd == KVM_SET_MEM || e->cmd == KVM_SET_MEM2) && slot &&
	    msize)
		return kvm_slot(m, who, slot, msize, delta);
	/* Allocations return a handle, frees name one. */
	if (!handle)
		return KX_MEM_NONE;
	name = kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, sizeof(buf));
	if (strstr(name, "CLOSE") || strstr(name, "FREE") || strstr(name, "DESTROY") ||
	    (op && op->u == 1 && !size)) {
		sl = kx_keymap_find(&m->handles, e->drv, who, handle->u);
		if (!sl)
			return KX_MEM_UNKNOWN_FREE;
		*delta = -(int64_t)sl->v;
		kx_keymap_del(&m->handles, sl);
		return KX_MEM_DELTA;
	}
	if (!size || !size->u)
		return KX_MEM_NONE;
	*delta = (int64_t)size->u;
	sl = kx_keymap_get(&m->handles, e->drv, who, handle->u);
	if (!sl)
		return -1;
	sl->v = size->u;
	return KX_MEM_DELTA;
}

uint64_t kx_jobdev_mem_apply(struct kx_jobdev *d, int64_t delta)
{
	uint64_t u = d->mem_usage;

	u = delta < 0 && (uint64_t)-delta > u ? 0 : u + (uint64_t)delta;
	if (!d->nmem)
		d->mem_min = UINT64_MAX;
	d->nmem++;
	d->mem_usage = u;
	if (delta >= 0)
		d->mem_allocs++;
	else
		d->mem_frees++;
	d->mem_sum += (double)u;
	if (u > d->mem_max)
		d->mem_max = u;
	if (u < d->mem_min)
		d->mem_min = u;
	return u;
}

void kx_jobdev_mem_finish(struct kx_jobdev *d)
{
	d->mem_avg = d->nmem ? d->mem_sum / (double)d->nmem : 0;
}

void kx_memacct_free(struct kx_memacct *m)
{
	kx_keymap_free(&m->handles);
	kx_keymap_free(&m->slots);
}
