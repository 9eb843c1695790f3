/*
 * DRM usage (record --drm-usage) in a Chrome trace (see chrome_int.h):
 * counter tracks per process, each engine's busy % over each interval
 * ("DRM busy % <driver> <engine>") and each memory region's resident and
 * total bytes at each pass ("DRM memory <driver> <region>").
 */
#include <stdio.h>

#include "export/chrome_int.h"
#include "model/drmusage.h"

/* Where a DRM row's counter value starts (ns): its interval's start (a
 * busy share holds over the interval). */
static uint64_t row_start(const struct kx_drm_ev *e)
{
	return e->kind == KX_DRM_ENGINE && e->ts > e->interval_ns ? e->ts - e->interval_ns : e->ts;
}

/* The same, never before the trace's first ts. */
static uint64_t drm_start(const struct ctx *c, const struct kx_drm_ev *e)
{
	uint64_t t = row_start(e);

	return t < c->first_ts ? c->first_ts : t;
}

/* "DRM busy % amdgpu gfx" or "DRM memory amdgpu vram", as a JSON string. */
static void drm_counter_name(struct wbuf *w, const struct kx_drm_ev *e)
{
	char name[16 + 2 * KX_DRM_NAME];

	snprintf(name, sizeof(name), "%s %s %s",
	         e->kind == KX_DRM_ENGINE ? "DRM busy %" : "DRM memory", e->driver, e->name);
	wb_str(w, name);
}

/* Counter tracks per process: each engine's busy % over each interval, and
 * each memory region's bytes at each pass. */
void cr_write_drm(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	size_t n;
	const struct kx_drm_ev *r = kx_store_drm(c->s, &n);

	for (size_t i = 0; i < n && !w->err; i++) {
		const struct kx_drm_ev *e = &r[i];
		double share = kx_drm_ev_busy(e);
		uint64_t ts = drm_start(c, e);
		char v[32];

		if ((e->kind == KX_DRM_ENGINE && share < 0) || !in_part(c, ts))
			continue;
		wb_need(w, EV_ROOM);
		wb_sep(w, first);
		PUT_LIT(w, "{\"ph\":\"C\",\"name\":");
		drm_counter_name(w, e);
		PUT_LIT(w, ",\"pid\":");
		put_u64(w, e->pid);
		PUT_LIT(w, ",\"ts\":");
		put_us(w, ts - c->first_ts + rem);
		if (e->kind == KX_DRM_ENGINE) {
			snprintf(v, sizeof(v), "%.2f", share * 100);
			PUT_LIT(w, ",\"args\":{\"busy\":");
			put_mem(w, v, strlen(v));
		} else {
			PUT_LIT(w, ",\"args\":{\"resident\":");
			put_u64(w, e->v[KX_DRM_MEM_RESIDENT]);
			PUT_LIT(w, ",\"total\":");
			put_u64(w, e->v[KX_DRM_MEM_TOTAL]);
		}
		PUT_LIT(w, "}}");
	}
}

/* The first DRM row's start, UINT64_MAX when none. */
uint64_t cr_drm_first_ts(const struct kx_store *s)
{
	size_t n;
	const struct kx_drm_ev *r = kx_store_drm(s, &n);
	uint64_t t = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		uint64_t st = row_start(&r[i]);

		if (kx_drm_ev_busy(&r[i]) >= 0 || r[i].kind == KX_DRM_MEMORY)
			t = st < t ? st : t;
	}
	return t;
}
