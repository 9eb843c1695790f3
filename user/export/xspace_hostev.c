/*
 * An ioctl as an XEvent of the /host:CPU plane (see xspace_int.h): its
 * name (event metadata per driver and command), the fixed stats (driver
 * and device as refs, fd, cmd, ret, errno, pid), off-CPU time, the flow and
 * correlation id of a submitting ioctl, and its decoded argument fields.
 * Lookups take frozen: 0 in the sizing pass (names are added), 1 in the
 * writing pass (any thread, nothing changes).
 */
#include <inttypes.h>
#include <stdio.h>

#include "analysis/fields.h"
#include "export/xspace_int.h"
#include "registry/devices.h"
#include "registry/ioctl_decode.h"

/* The event metadata id of e's name (driver, command). */
static uint32_t event_meta_id(struct exporter *x, const struct kx_ioctl *e, int frozen)
{
	uint64_t key = (uint64_t)e->cmd << 32 | (uint32_t)e->xfer_cmd << 8 | e->drv;
	long id = frozen ? kx_strkey_get(&x->ev_by_cmd, key) : kx_strkey_find(&x->ev_by_cmd, key);
	const char *name;
	char buf[64];

	if (id >= 0 || frozen)
		return (uint32_t)(id + 1);
	name = kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, sizeof(buf));
	return (uint32_t)(kx_strkey_add(&x->ev_by_cmd, &x->ev, key, name, strlen(name)) + 1);
}

/* The ref of e's device label (file kind, device) as a stat value. */
static uint32_t device_ref(struct exporter *x, const struct kx_ioctl *e, int frozen)
{
	uint64_t key = (uint64_t)e->dev << 8 | e->fkind;
	long id = frozen ? kx_strkey_get(&x->dev_ref, key) : kx_strkey_find(&x->dev_ref, key);
	const char *label;
	char buf[128];

	if (id >= 0 || frozen)
		return (uint32_t)(id + 1);
	label = kx_device_label(x->ci->devices, (int)x->ci->ndevices, e->fkind, e->dev, buf,
	                        sizeof(buf));
	return (uint32_t)(kx_strkey_add(&x->dev_ref, &x->st, key, label, strlen(label)) + 1);
}

static uint32_t driver_ref(struct exporter *x, const struct kx_ioctl *e, int frozen)
{
	if (!x->drv_ref[e->drv] && !frozen)
		x->drv_ref[e->drv] = meta_cstr(&x->st, kx_driver_name((enum kx_driver)e->drv));
	return x->drv_ref[e->drv];
}

static uint32_t errno_ref(struct exporter *x, int32_t ret, int frozen)
{
	const char *name = kx_errno_name(ret);
	char buf[32];

	if (!name) {
		snprintf(buf, sizeof(buf), "errno %" PRId64, -(int64_t)ret);
		name = buf;
	}
	return frozen ? meta_find(&x->st, name, strlen(name)) : meta_cstr(&x->st, name);
}

static uint32_t field_stat_id(struct exporter *x, const char *name, int frozen)
{
	uint32_t *sl;

	if (frozen) {
		sl = kx_hmap_get(&x->field_id, (uintptr_t)name);
		return sl ? *sl : 0;
	}
	sl = kx_hmap_put(&x->field_id, (uintptr_t)name, 0, NULL);
	if (!sl)
		return 0;
	if (!*sl)
		*sl = meta_cstr(&x->st, name);
	return *sl;
}

/* Stats of the decoded argument fields; NULL on OOM (or a name not interned). */
static uint8_t *put_arg_stats(struct exporter *x, const struct kx_ioctl *e, uint8_t *p, int frozen)
{
	struct kx_field f[MAX_FIELDS];
	int nf = kx_event_fields(x->an, e, f, MAX_FIELDS);
	for (int i = 0; i < nf; i++) {
		uint32_t mid = field_stat_id(x, f[i].name, frozen), ref;
		char hex[24];
		size_t sl;

		if (!mid)
			return NULL;
		switch (f[i].kind) {
		case KX_FIELD_U64:
			p = put_stat_varint(p, XEVENT_STATS, mid, XSTAT_UINT64, f[i].u);
			break;
		case KX_FIELD_I64:
			p = put_stat_varint(p, XEVENT_STATS, mid, XSTAT_INT64, (uint64_t)f[i].i);
			break;
		case KX_FIELD_HEX: /* addresses and flags read best in hex */
			sl = (size_t)snprintf(hex, sizeof(hex), "0x%" PRIx64, f[i].u);
			p = put_stat_str(p, XEVENT_STATS, mid, hex, sl);
			break;
		case KX_FIELD_STR:
			sl = strnlen(f[i].s, sizeof(f[i].s));
			/* enum-like names repeat: interned, unless there are too many */
			ref = meta_find(&x->st, f[i].s, sl);
			if (!ref && !frozen && x->st.n < MAX_REF_STRINGS) {
				ref = meta_id(&x->st, f[i].s, sl);
				if (!ref)
					return NULL;
			}
			if (ref)
				p = put_stat_varint(p, XEVENT_STATS, mid, XSTAT_REF, ref);
			else
				p = put_stat_str(p, XEVENT_STATS, mid, f[i].s, sl);
			break;
		}
	}
	return p;
}

uint32_t xs_host_stat(struct exporter *x, uint32_t *id, const char *name)
{
	if (!*id)
		*id = meta_cstr(&x->st, name);
	return *id;
}

/*
 * The sizing pass's view of put_event: the bytes it will write for e,
 * interning what it needs on the way. 0 on OOM.
 */
size_t xs_event_size(struct exporter *x, const struct kx_ioctl *e, size_t idx, uint64_t offset_ns,
                     uint64_t dur_ns)
{
	uint32_t mid = event_meta_id(x, e, 0), dev = device_ref(x, e, 0), drv = driver_ref(x, e, 0);
	size_t n;

	if (!mid || !dev || !drv)
		return 0;
	n = 1 + kx_pb_varint_size(mid) + 1 + kx_pb_varint_size(offset_ns * 1000);
	if (dur_ns)
		n += 1 + kx_pb_varint_size(dur_ns * 1000);
	n += stat_size(ST_DRIVER, drv) + stat_size(ST_DEVICE, dev) +
	     stat_size(ST_FD, (uint64_t)(int64_t)e->fd) + stat_size(ST_CMD, e->cmd) +
	     stat_size(ST_RET, (uint64_t)e->ret);
	if (e->ret < 0) {
		uint32_t ref = errno_ref(x, e->ret, 0);

		if (!ref)
			return 0;
		n += stat_size(ST_ERRNO, ref);
	}
	n += stat_size(ST_PID, e->pid);
	if (e->offcpu_us) {
		if (!xs_host_stat(x, &x->st_offcpu, "offcpu_ns"))
			return 0;
		n += stat_size(x->st_offcpu, (uint64_t)e->offcpu_us * 1000);
	}
	if (x->jobs && kx_analysis_submitted(x->an, idx)) {
		uint64_t id = kx_analysis_call_id(x->an, idx) + 1;

		if (!xs_host_stat(x, &x->st_flow, "flow") ||
		    !xs_host_stat(x, &x->st_corr, "correlation_id"))
			return 0;
		if (kx_flows_from(&x->flows, idx))
			n += stat_size(x->st_flow, flow_value(id, FLOW_OUT));
		n += stat_size(x->st_corr, id);
	}
	if (kx_event_has_fields(x->an, e)) {
		uint8_t scratch[EVENT_SCRATCH], *end = put_arg_stats(x, e, scratch, 0);

		if (!end)
			return 0;
		n += (size_t)(end - scratch);
	}
	return n;
}

/*
 * One XEvent of store ioctl idx into p (EVENT_SCRATCH bytes), with the
 * tables frozen. Returns the end, or NULL when a name was not interned.
 */
uint8_t *xs_put_event(struct exporter *x, const struct kx_ioctl *e, size_t idx, uint64_t offset_ns,
                      uint64_t dur_ns, uint8_t *p)
{
	uint32_t mid = event_meta_id(x, e, 1), dev = device_ref(x, e, 1), drv = driver_ref(x, e, 1);

	if (!mid || !dev || !drv)
		return NULL;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, offset_ns * 1000); /* oneof: written even when 0 */
	if (dur_ns)
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, dur_ns * 1000);
	p = put_stat_varint(p, XEVENT_STATS, ST_DRIVER, XSTAT_REF, drv);
	p = put_stat_varint(p, XEVENT_STATS, ST_DEVICE, XSTAT_REF, dev);
	p = put_stat_varint(p, XEVENT_STATS, ST_FD, XSTAT_INT64, (uint64_t)(int64_t)e->fd);
	p = put_stat_varint(p, XEVENT_STATS, ST_CMD, XSTAT_UINT64, e->cmd);
	p = put_stat_varint(p, XEVENT_STATS, ST_RET, XSTAT_INT64, (uint64_t)e->ret);
	if (e->ret < 0) {
		uint32_t ref = errno_ref(x, e->ret, 1);

		if (!ref)
			return NULL;
		p = put_stat_varint(p, XEVENT_STATS, ST_ERRNO, XSTAT_REF, ref);
	}
	p = put_stat_varint(p, XEVENT_STATS, ST_PID, XSTAT_INT64, e->pid);
	if (e->offcpu_us)
		p = put_stat_varint(p, XEVENT_STATS, x->st_offcpu, XSTAT_UINT64,
		                    (uint64_t)e->offcpu_us * 1000);
	/* The arrow to the jobs it submitted (those with a flow carry the same one). */
	if (x->jobs && kx_analysis_submitted(x->an, idx)) {
		uint64_t id = kx_analysis_call_id(x->an, idx) + 1;

		if (kx_flows_from(&x->flows, idx))
			p = put_stat_varint(p, XEVENT_STATS, x->st_flow, XSTAT_UINT64,
			                    flow_value(id, FLOW_OUT));
		p = put_stat_varint(p, XEVENT_STATS, x->st_corr, XSTAT_UINT64, id);
	}
	if (!kx_event_has_fields(x->an, e))
		return p;
	return put_arg_stats(x, e, p, 1);
}
