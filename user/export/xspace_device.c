/*
 * The device planes of an XSpace (see xspace_int.h): one
 * /device:CUSTOM:<n> (or GPU) plane per traced device and per job device no
 * traced device stands for, with plane stats (driver, node, dev_t, vendor;
 * job counts, max_in_flight, busy_fraction; NVIDIA memory per process), one
 * line per ring lane of its jobs (id = 1 + the ring's index in its device,
 * + LANE_ID_STEP per extra lane, as the Chrome tids; one event per job from
 * RUN, or QUEUE, to DONE, with its flow and correlation_id), a "memory" line
 * (an instant per allocation or free) and its driver's DRM usage line.
 * Device planes are small: they go through the growing buffer x->out.
 */
#include <stdio.h>
#include <stdlib.h>

#include "export/evnames.h"
#include "export/xspace_int.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"

#define LANE_ID_STEP 1000 /* line id of lane l of ring r: r + 1 + l * LANE_ID_STEP */
#define MEM_LINE_ID  9999

static int anon_kind(unsigned int fkind)
{
	return fkind == KX_FK_KVM_VM || fkind == KX_FK_KVM_VCPU || fkind == KX_FK_KVM_DEV ||
	       fkind == KX_FK_VFIO_DEV;
}

static const char *device_driver(const struct kx_device *d)
{
	return d->driver[0] ? d->driver : kx_driver_name((enum kx_driver)d->drv);
}

static void device_node(const struct kx_capinfo *ci, const struct kx_device *d, char *buf,
                        size_t len)
{
	if (d->node[0])
		snprintf(buf, len, "%s", d->node);
	else if (d->any_minor)
		snprintf(buf, len, "%s %u:*", d->fkind == KX_FK_BLK ? "block" : "char",
		         KX_MAJOR(d->dev));
	else
		kx_device_label(ci->devices, (int)ci->ndevices, d->fkind, d->dev, buf, len);
}

/*
 * One plane per traced device: anon-inode kinds (kvm-vm, kvm-vcpu, ...) are
 * files of a driver's real device, so they get a plane only when their
 * driver has no device node in the set; equal (driver, node) pairs once.
 */
static int device_has_plane(const struct kx_capinfo *ci, uint32_t i)
{
	const struct kx_device *d = &ci->devices[i];
	char node[80], other[80];

	if (anon_kind(d->fkind)) {
		for (uint32_t j = 0; j < ci->ndevices; j++)
			if (!anon_kind(ci->devices[j].fkind) && ci->devices[j].drv == d->drv)
				return 0;
	}
	device_node(ci, d, node, sizeof(node));
	for (uint32_t j = 0; j < i; j++) {
		if (!device_has_plane(ci, j) ||
		    strcmp(device_driver(&ci->devices[j]), device_driver(d)))
			continue;
		device_node(ci, &ci->devices[j], other, sizeof(other));
		if (!strcmp(node, other))
			return 0;
	}
	return 1;
}

/* Who makes the hardware a driver runs, where that is known. */
static const char *device_vendor(enum kx_driver drv)
{
	switch (drv) {
	case KX_DRV_AMDGPU:
	case KX_DRV_KFD:
	case KX_DRV_AMDXDNA:
		return "amd";
	case KX_DRV_I915:
	case KX_DRV_XE:
	case KX_DRV_IVPU:
		return "intel";
	case KX_DRV_NVIDIA:
	case KX_DRV_NVIDIA_UVM:
	case KX_DRV_NVIDIA_MODESET:
	case KX_DRV_NOUVEAU:
		return "nvidia";
	case KX_DRV_HABANALABS:
		return "habana";
	case KX_DRV_NEURON:
		return "aws";
	case KX_DRV_GASKET:
		return "google";
	case KX_DRV_QAIC:
		return "qualcomm";
	case KX_DRV_TENSTORRENT:
		return "tenstorrent";
	default:
		return NULL;
	}
}

/* A job's ids: its source's (sector and bytes, or context and seqno). */
static uint8_t *job_ids(struct ptabs *t, const struct kx_jobrec *j, uint8_t *p)
{
	char buf[32];

	p = xs_pstat_ref(t, p, "source", kx_job_src_name(j->src));
	if (j->src == KX_JOB_SRC_BLOCK) {
		p = xs_pstat_u(t, p, "sector", j->seqno);
		return xs_pstat_u(t, p, "bytes", j->aux);
	}
	/* XProf's context_id is a string "$$<n>". */
	snprintf(buf, sizeof(buf), "$$%llu", (unsigned long long)j->ctx);
	p = xs_pstat_ref(t, p, "context_id", buf);
	return xs_pstat_u(t, p, "seqno", j->seqno);
}

/* A job's other stats: submitter, queue delay (ps), waiter, what its source
 * adds, flags, and the flow and correlation id of its submitting ioctl. */
static uint8_t *job_stats(struct exporter *x, struct ptabs *t, const struct kx_jobrec *j,
                          uint8_t *p)
{
	struct kx_flow fl;
	uint64_t qd; /* ns */

	if (j->pid)
		p = xs_pstat_i(t, p, "pid", j->pid);
	if (j->tid)
		p = xs_pstat_i(t, p, "tid", j->tid);
	if (j->client)
		p = xs_pstat_u(t, p, "client_id", j->client);
	if (kx_jobrec_queue_delay(j, 0, &qd))
		p = xs_pstat_u(t, p, "queue_delay_ps", qd * 1000);
	if (j->waiter_tid)
		p = xs_pstat_i(t, p, "waiter_tid", j->waiter_tid);
	if (j->src == KX_JOB_SRC_KVM && j->done_ts)
		p = xs_pstat_u(t, p, "exit_reason", j->aux);
	if (j->src == KX_JOB_SRC_MSM && j->aux && j->aux2 >= j->aux)
		p = xs_pstat_u(t, p, "device_ticks", j->aux2 - j->aux);
	if (j->flags & KX_JOBF_INCOMPLETE)
		p = xs_pstat_u(t, p, "incomplete", 1);
	if (j->flags & KX_JOBF_NO_QUEUE)
		p = xs_pstat_u(t, p, "no_queue", 1);
	if (j->submit >= 0) {
		/* Only a flow that runs forward (analysis/flows.h). */
		if (kx_job_flow(x->an, (size_t)(j - x->jobs->jobs), &fl))
			p = xs_pstat_u(t, p, "flow", flow_value((uint64_t)j->submit + 1, FLOW_IN));
		p = xs_pstat_u(t, p, "correlation_id", (uint64_t)j->submit + 1);
	}
	return p;
}

/* One job as an XEvent into p (EVENT_SCRATCH bytes). */
static uint8_t *put_job_event(struct exporter *x, struct ptabs *t, const struct kx_jobrec *j,
                              uint64_t t0, uint8_t *p)
{
	uint64_t start = kx_jobrec_start(j), end = kx_jobrec_end(j, x->jobs->end_ns);
	char buf[96];
	uint32_t mid = xs_pname(t, &t->ev,
	                        kx_job_name(x->an, (size_t)(j - x->jobs->jobs), buf, sizeof(buf)));

	if (!mid)
		return p;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, (start - t0) * 1000);
	if (end > start)
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, (end - start) * 1000);
	return job_stats(x, t, j, job_ids(t, j, p));
}

/* The window's jobs of ring rg by lane, each lane's by start as the ring
 * has them (a counting sort): lane l's are rg->first + ord[at[l]..at[l+1]).
 * One pass however many lanes there are (a job never done holds its lane to
 * the capture's end, so a ring can have thousands). 0, or -1 out of memory. */
static int lane_order(const struct exporter *x, const struct kx_jobring *rg, size_t **ord,
                      size_t **at)
{
	const struct kx_jobrec *jobs = &x->jobs->jobs[rg->first];
	size_t lo, hi;

	kx_jobring_starting(x->jobs, rg, x->o.from_mono_ns, x->o.to_mono_ns, &lo, &hi);
	*ord = malloc((hi > lo ? hi - lo : 1) * sizeof(**ord));
	*at = calloc((size_t)rg->nlanes + 2, sizeof(**at));
	if (!*ord || !*at) {
		free(*ord);
		free(*at);
		return -1;
	}
	for (size_t k = lo; k < hi; k++)
		if (jobs[k].lane < rg->nlanes)
			(*at)[jobs[k].lane + 2]++;
	for (uint32_t l = 0; l < rg->nlanes; l++)
		(*at)[l + 2] += (*at)[l + 1];
	for (size_t k = lo; k < hi; k++)
		if (jobs[k].lane < rg->nlanes)
			(*ord)[(*at)[jobs[k].lane + 1]++] = k;
	return 0;
}

/* Lane lane of ring rg as one line: its n jobs rg->first + ord[0..n). */
static void put_lane(struct exporter *x, struct ptabs *t, const struct kx_jobring *rg,
                     uint32_t lane, const size_t *ord, size_t n)
{
	const struct kx_jobs *jb = x->jobs;
	uint8_t scratch[EVENT_SCRATCH];
	uint64_t t0 = kx_jobrec_start(&jb->jobs[rg->first + ord[0]]), max_end = 0;
	char name[48];
	size_t body;

	if (lane)
		snprintf(name, sizeof(name), "%s #%u", rg->name, lane + 1);
	else
		snprintf(name, sizeof(name), "%s", rg->name);
	body = xs_ob_open(&x->out, XPLANE_LINES);
	ob_vfield(&x->out, XLINE_ID, rg->id + 1 + (uint64_t)lane * LANE_ID_STEP);
	ob_str(&x->out, XLINE_NAME, name);
	ob_vfield(&x->out, XLINE_TIMESTAMP_NS, (uint64_t)kx_capinfo_realtime(x->ci, t0));
	for (size_t i = 0; i < n; i++) {
		const struct kx_jobrec *j = &jb->jobs[rg->first + ord[i]];
		uint64_t end = kx_jobrec_end(j, jb->end_ns);
		uint8_t *sp;

		if (end - t0 > max_end)
			max_end = end - t0;
		sp = put_job_event(x, t, j, t0, scratch);
		kx_pb_put_bytes(&x->out, XLINE_EVENTS, scratch, (size_t)(sp - scratch));
	}
	ob_vfield(&x->out, XLINE_DURATION_PS, max_end * 1000);
	xs_ob_close(&x->out, body);
	x->job_events += n;
}

/* One line per lane of each ring; lanes never overlap, jobs are by start. */
static void put_job_lines(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	for (uint32_t r = 0; r < jd->nrings; r++) {
		const struct kx_jobring *rg = &x->jobs->rings[jd->first_ring + r];
		size_t *ord, *at;

		if (lane_order(x, rg, &ord, &at)) {
			x->out.oom = 1;
			return;
		}
		for (uint32_t lane = 0; lane < rg->nlanes; lane++)
			if (at[lane + 1] > at[lane])
				put_lane(x, t, rg, lane, ord + at[lane], at[lane + 1] - at[lane]);
		free(ord);
		free(at);
	}
}

/* The device's memory usage: an instant per allocation or free. */
static void put_mem_line(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	uint8_t scratch[EVENT_SCRATCH];
	uint64_t t0 = 0, last = 0;
	size_t body = 0, n = 0;

	for (size_t k = 0; k < jd->nmem; k++) {
		const struct kx_mem_pt *m = &jd->mem[k];
		const struct kx_ioctl *e = kx_store_ioctl(x->jobs->store, m->ioctl);
		uint8_t *p = scratch;
		uint32_t mid;
		char buf[96];

		if (!in_window(&x->o, m->ts))
			continue;
		if (!n++) {
			t0 = m->ts;
			body = xs_ob_open(&x->out, XPLANE_LINES);
			ob_vfield(&x->out, XLINE_ID, MEM_LINE_ID);
			ob_str(&x->out, XLINE_NAME, "memory");
			ob_vfield(&x->out, XLINE_TIMESTAMP_NS,
			          (uint64_t)kx_capinfo_realtime(x->ci, t0));
		}
		last = m->ts - t0;
		mid = xs_pname(t, &t->ev, m->delta >= 0 ? "alloc" : "free");
		if (!mid)
			continue;
		p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
		p = kx_pb_vfield(p, XEVENT_OFFSET_PS, (m->ts - t0) * 1000);
		p = xs_pstat_u(t, p, "bytes_allocated", m->usage);
		p = xs_pstat_u(t, p, "allocation_bytes",
		               m->delta >= 0 ? (uint64_t)m->delta : (uint64_t)-m->delta);
		p = xs_pstat_ref(t, p, "ioctl",
		                 kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf,
		                               sizeof(buf)));
		p = xs_pstat_i(t, p, "pid", e->pid);
		kx_pb_put_bytes(&x->out, XLINE_EVENTS, scratch, (size_t)(p - scratch));
	}
	if (n) {
		ob_vfield(&x->out, XLINE_DURATION_PS, last * 1000);
		xs_ob_close(&x->out, body);
	}
}

/* Plane stats of a device with jobs: counts, busy fraction, depth. */
static void put_job_plane_stats(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	uint32_t mid;
	uint8_t *p;

	if (!jd->nrings)
		return;
	p = kx_bytes_room(&x->out, 64);
	mid = xs_pname(t, &t->st, "jobs");
	if (p && mid)
		ob_done(&x->out, put_stat_varint(p, XPLANE_STATS, mid, XSTAT_UINT64, jd->njobs));
	p = kx_bytes_room(&x->out, 64);
	mid = xs_pname(t, &t->st, "max_in_flight");
	if (p && mid)
		ob_done(&x->out,
		        put_stat_varint(p, XPLANE_STATS, mid, XSTAT_UINT64, jd->max_depth));
	p = kx_bytes_room(&x->out, 64);
	mid = xs_pname(t, &t->st, "busy_fraction");
	if (p && mid)
		ob_done(&x->out, put_stat_double(p, XPLANE_STATS, mid, jd->busy_fraction));
}

/* The first NVIDIA device plane: per process and region, the memory the RM
 * allocation ioctls allocated, freed, left live and peaked at (bytes):
 * stats "pid <pid> <region> allocated|freed|live|peak". Once: the figures
 * are the process's, whichever node (nvidiactl, nvidia0) its calls went to. */
static void put_nvmem_plane_stats(struct exporter *x, struct ptabs *t, const struct kx_jobdev *jd)
{
	static const char *what[] = {"allocated", "freed", "live", "peak"};
	const struct kx_nvmem *nm = &x->jobs->nvmem;
	char name[64];

	if (jd->drv != KX_DRV_NVIDIA || x->nvmem_done)
		return;
	x->nvmem_done = nm->nprocs > 0;
	for (size_t i = 0; i < nm->nprocs; i++)
		for (int r = 0; r < KX_NVMEM_NREG; r++) {
			const struct kx_nvmem_reg *g = &nm->procs[i].reg[r];
			uint64_t v[] = {g->allocated, g->freed, g->live, g->peak};

			if (!g->npts)
				continue;
			for (int k = 0; k < 4; k++) {
				uint8_t *p = kx_bytes_room(&x->out, 64);
				uint32_t mid;

				snprintf(name, sizeof(name), "pid %u %s %s", nm->procs[i].pid,
				         kx_nvmem_region_name(r), what[k]);
				mid = xs_pname(t, &t->st, name);
				if (p && mid)
					ob_done(&x->out, put_stat_varint(p, XPLANE_STATS, mid,
					                                 XSTAT_UINT64, v[k]));
			}
		}
}

/* The job device of capinfo device i, or NULL. */
static const struct kx_jobdev *jobdev_of(const struct exporter *x, uint32_t i)
{
	for (size_t k = 0; x->jobs && k < x->jobs->ndevs; k++)
		if (x->jobs->devs[k].ci_index == (int)i)
			return &x->jobs->devs[k];
	return NULL;
}

/*
 * A device plane: a traced device d, with its job device jd if any, or a
 * job device no traced device matches (d NULL).
 */
static void put_device_plane(struct exporter *x, const struct kx_device *d,
                             const struct kx_jobdev *jd, int n)
{
	struct ptabs t;
	char node[80], name[200], devt[32];
	const char *vendor = d ? device_vendor((enum kx_driver)d->drv) : NULL;
	size_t body = xs_ob_open(&x->out, XSPACE_PLANES);

	memset(&t, 0, sizeof(t));
	if (d) {
		device_node(x->ci, d, node, sizeof(node));
		snprintf(name, sizeof(name), "/device:%s:%d (%s %s)",
		         x->o.device_planes_as_gpu ? "GPU" : "CUSTOM", n, device_driver(d), node);
	} else {
		snprintf(name, sizeof(name), "/device:%s:%d (%s)",
		         x->o.device_planes_as_gpu ? "GPU" : "CUSTOM", n, jd->label);
	}
	ob_vfield(&x->out, XPLANE_ID, (uint64_t)n);
	ob_str(&x->out, XPLANE_NAME, name);
	if (d) {
		xs_put_plane_str_stat(&x->out, &t.st, "driver", device_driver(d));
		xs_put_plane_str_stat(&x->out, &t.st, "node", node);
		if (d->any_minor)
			snprintf(devt, sizeof(devt), "%u:*", KX_MAJOR(d->dev));
		else
			snprintf(devt, sizeof(devt), "%u:%u", KX_MAJOR(d->dev), KX_MINOR(d->dev));
		if (!anon_kind(d->fkind))
			xs_put_plane_str_stat(&x->out, &t.st, "dev_t", devt);
	} else {
		xs_put_plane_str_stat(&x->out, &t.st, "driver", jd->name);
	}
	if (vendor)
		xs_put_plane_str_stat(&x->out, &t.st, "device_vendor", vendor);
	if (jd) {
		put_job_plane_stats(x, &t, jd);
		put_nvmem_plane_stats(x, &t, jd);
		put_job_lines(x, &t, jd);
		put_mem_line(x, &t, jd);
	}
	if (d && xs_drm_first(x, device_driver(d)))
		xs_put_drm_line(x, &t, device_driver(d));
	xs_put_metadata(&x->out, &t.ev, &t.st);
	xs_ob_close(&x->out, body);
	xs_ptabs_done(&t, &x->out);
}

int xs_put_device_planes(struct exporter *x)
{
	int n = 0;

	for (uint32_t i = 0; i < x->ci->ndevices && i < KX_MAX_DEVICES; i++)
		if (device_has_plane(x->ci, i))
			put_device_plane(x, &x->ci->devices[i], jobdev_of(x, i), n++);
	/* Job devices that no traced device stands for get planes of their own. */
	for (size_t k = 0; x->jobs && k < x->jobs->ndevs; k++) {
		const struct kx_jobdev *jd = &x->jobs->devs[k];

		if (jd->ci_index < 0 && (jd->nrings || jd->nmem))
			put_device_plane(x, NULL, jd, n++);
	}
	return n;
}
