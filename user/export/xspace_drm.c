/*
 * DRM usage (record --drm-usage) in an XSpace (see xspace_int.h): a "DRM
 * usage" line (id DRM_LINE_ID) on the driver's device plane, else on a
 * plane of its own: an event per engine and interval (its busy share over
 * the interval, busy_pct) and an instant per memory region and pass (bytes).
 */
#include <stdio.h>

#include "export/xspace_int.h"

#define DRM_LINE_ID 9998

/* 1 the first time driver is asked for (its line goes on that plane). */
int xs_drm_first(struct exporter *x, const char *driver)
{
	for (int i = 0; i < x->ndrm_done; i++)
		if (!strcmp(x->drm_done[i], driver))
			return 0;
	if (x->ndrm_done >= (int)(sizeof(x->drm_done) / sizeof(x->drm_done[0])))
		return 0;
	snprintf(x->drm_done[x->ndrm_done++], KX_DRM_NAME, "%s", driver);
	return 1;
}

/* One DRM row as an XEvent into p: an engine's busy share over its
 * interval, or a region's bytes at the pass (an instant). */
static uint8_t *put_drm_event(struct ptabs *t, uint8_t *p, const struct kx_drm_ev *e,
                              uint64_t start, uint64_t t0)
{
	char name[KX_DRM_NAME + 16];
	uint32_t mid;

	snprintf(name, sizeof(name), "%s %s", e->name,
	         e->kind == KX_DRM_ENGINE ? "busy" : "memory");
	if (!(mid = xs_pname(t, &t->ev, name)))
		return p;
	p = kx_pb_vfield(p, XEVENT_METADATA_ID, mid);
	p = kx_pb_vfield(p, XEVENT_OFFSET_PS, (start > t0 ? start - t0 : 0) * 1000);
	if (e->kind == KX_DRM_ENGINE) {
		p = kx_pb_vfield(p, XEVENT_DURATION_PS, e->interval_ns * 1000);
		p = xs_pstat_d(t, p, "busy_pct", kx_drm_ev_busy(e) * 100);
		p = xs_pstat_u(t, p, "capacity", e->capacity);
	} else {
		p = xs_pstat_u(t, p, "resident_bytes", e->v[KX_DRM_MEM_RESIDENT]);
		p = xs_pstat_u(t, p, "total_bytes", e->v[KX_DRM_MEM_TOTAL]);
	}
	p = xs_pstat_i(t, p, "pid", e->pid);
	if (e->comm[0])
		p = xs_pstat_ref(t, p, "comm", e->comm);
	return p;
}

/* The "DRM usage" line of driver's rows, when there are any. */
void xs_put_drm_line(struct exporter *x, struct ptabs *t, const char *driver)
{
	size_t n, body = 0, k = 0;
	const struct kx_drm_ev *r = kx_store_drm(x->s, &n);
	uint64_t t0 = 0, end = 0;

	for (size_t i = 0; i < n; i++) {
		const struct kx_drm_ev *e = &r[i];
		uint8_t scratch[EVENT_SCRATCH], *p;
		uint64_t start = e->kind == KX_DRM_ENGINE ? e->ts - e->interval_ns : e->ts;

		if (strcmp(e->driver, driver) ||
		    (e->kind == KX_DRM_ENGINE && kx_drm_ev_busy(e) < 0) || !in_window(&x->o, start))
			continue;
		if (!k++) {
			t0 = start;
			body = xs_ob_open(&x->out, XPLANE_LINES);
			ob_vfield(&x->out, XLINE_ID, DRM_LINE_ID);
			ob_str(&x->out, XLINE_NAME, "DRM usage");
			ob_vfield(&x->out, XLINE_TIMESTAMP_NS,
			          (uint64_t)kx_capinfo_realtime(x->ci, t0));
		}
		if (e->ts > end)
			end = e->ts;
		p = put_drm_event(t, scratch, e, start, t0);
		if (p != scratch)
			kx_pb_put_bytes(&x->out, XLINE_EVENTS, scratch, (size_t)(p - scratch));
	}
	if (k) {
		ob_vfield(&x->out, XLINE_DURATION_PS, (end - t0) * 1000);
		xs_ob_close(&x->out, body);
	}
}

/* A plane of its own for a driver whose DRM usage no traced device stands for. */
static void put_drm_plane(struct exporter *x, const char *driver, int n)
{
	struct ptabs t;
	char name[200];
	size_t body = xs_ob_open(&x->out, XSPACE_PLANES);

	memset(&t, 0, sizeof(t));
	snprintf(name, sizeof(name), "/device:%s:%d (%s DRM usage)",
	         x->o.device_planes_as_gpu ? "GPU" : "CUSTOM", n, driver);
	ob_vfield(&x->out, XPLANE_ID, (uint64_t)n);
	ob_str(&x->out, XPLANE_NAME, name);
	xs_put_plane_str_stat(&x->out, &t.st, "driver", driver);
	xs_put_drm_line(x, &t, driver);
	xs_put_metadata(&x->out, &t.ev, &t.st);
	xs_ob_close(&x->out, body);
	xs_ptabs_done(&t, &x->out);
}

/* Planes for the drivers of DRM rows no device plane took; n: the next plane id. */
void xs_put_drm_planes(struct exporter *x, int n)
{
	size_t nr;
	const struct kx_drm_ev *r = kx_store_drm(x->s, &nr);

	for (size_t i = 0; i < nr; i++)
		if (xs_drm_first(x, r[i].driver))
			put_drm_plane(x, r[i].driver, n++);
}
