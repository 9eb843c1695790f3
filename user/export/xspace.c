/*
 * XSpace exporter (see xspace.h). Owns a run of the exporter: the
 * XSpace's parts in their order (the /host:CPU plane, the device planes,
 * the DRM usage planes, the warnings, the hostname), where its bytes go (a
 * file as they are encoded, or a buffer) and its limits (protobuf's 2 GiB).
 * The parts: xspace_int.h; the TensorBoard log directory around an
 * XSpace: export/tblogdir.c.
 *
 * Device timelines (analysis/jobs.h) go on the device planes
 * (xspace_device.c). A job and the ioctl that submitted it carry the same
 * correlation_id and XProf flow stat (id = the ioctl's store index + 1, out
 * on the ioctl, in on the job, category generic), so XProf draws the arrow;
 * the flow only when it runs forward, from the ioctl's enter to a job that
 * starts at or after its submit point (analysis/flows.h).
 *
 * Host lines are the threads of the analysis' timeline (analysis/timeline.h):
 * its ordering and its resolved durations, so events nest as in every other
 * output; the exporter has no nesting rule of its own.
 *
 * The encoder writes the wire format directly instead of building
 * protobuf-c message trees: millions of events would cost several small
 * allocations each and a second full copy at pack time. The host plane
 * (nearly all the bytes) is sized first and then streamed (xspace_host.c):
 * to a file it never exists whole in memory, peak memory is a few MiB of
 * segments beyond the analysis.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "export/xspace.h"
#include "export/xspace_int.h"

int xs_fail(struct exporter *x, const char *fmt, ...)
{
	va_list ap;

	if (x->errlen) {
		va_start(ap, fmt);
		vsnprintf(x->err, x->errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* ---- warnings ---- */

static void warn(struct exporter *x, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(struct exporter *x, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ob_str(&x->out, XSPACE_WARNINGS, msg);
}

static void warn_cb(void *ctx, const char *msg)
{
	warn(ctx, "%s", msg);
}

static void put_warnings(struct exporter *x)
{
	kx_analysis_warnings(x->an, warn_cb, x);
	kx_flows_warnings(&x->flows, warn_cb, x);
	if (x->o.note && x->o.note[0])
		warn(x, "%s", x->o.note);
	if (x->nevents + x->job_events + x->ann_events > VIEWER_EVENT_LIMIT)
		warn(x,
		     "%zu events exported: XProf's trace viewer shows only the first "
		     "1,000,000 by default; export shorter time windows to see the rest "
		     "(kxprof convert splits by time unless --split-events is 0 or larger)",
		     x->nevents + x->job_events + x->ann_events);
}

/* ---- entry points ---- */

static void exporter_free(struct exporter *x)
{
	for (size_t i = 0; x->lines && i < x->nlines; i++) {
		free(x->lines[i].ann);
		free(x->lines[i].ins);
	}
	free(x->lines);
	free(x->ann_mid);
	free(x->ann_cat);
	kx_thread_names_free(&x->names);
	free(x->hl);
	kx_intern_free(&x->ev);
	kx_intern_free(&x->st);
	kx_strkey_free(&x->ev_by_cmd);
	kx_strkey_free(&x->dev_ref);
	kx_hmap_free(&x->field_id);
	kx_flows_free(&x->flows);
	free(x->out.p);
}

/*
 * The XSpace to fd (streamed: the host plane through a bounded buffer, the
 * rest, which is small, from x->out), or into x->out when fd < 0.
 */
static int export(struct exporter *x, int fd)
{
	struct sink k = {fd, &x->out, 0, 0};

	if (kx_flows_build(&x->flows, x->an))
		return xs_fail(x, "out of memory finding the flows of %zu ioctls",
		               kx_store_ioctl_count(x->s));
	x->ann_mid = calloc(kx_store_ann_strings(x->rg->strings) + 1, sizeof(*x->ann_mid));
	x->ann_cat = calloc(kx_store_ann_strings(x->rg->strings) + 1, sizeof(*x->ann_cat));
	if (!x->ann_mid || !x->ann_cat || kx_thread_names_build(&x->names, x->s))
		return xs_fail(x, "out of memory");
	if (xs_select_events(x))
		return -1;
	if (xs_put_host_plane(x, &k))
		return -1;
	if (fd >= 0)
		x->out.len = 0; /* the rest goes here first */
	xs_put_drm_planes(x, xs_put_device_planes(x));
	put_warnings(x);
	if (x->ci->hostname[0])
		ob_str(&x->out, XSPACE_HOSTNAMES, x->ci->hostname);
	if (x->out.oom)
		return xs_fail(x, "out of memory serializing the XSpace (%zu bytes so far)",
		               x->out.len);
	if (fd >= 0) {
		uint64_t host = k.bytes;

		xs_sink_put(&k, x->out.p, x->out.len);
		if (k.err) {
			errno = k.err;
			return xs_fail(x, "%s", strerror(k.err));
		}
		if (host + x->out.len > PB_MAX_MSG)
			return xs_fail(
			        x,
			        "XSpace of %" PRIu64 " bytes is over protobuf's 2 GiB limit: "
			        "export a shorter time window (kxprof convert --split-events N "
			        "with a smaller N)",
			        host + x->out.len);
	} else if (x->out.len > PB_MAX_MSG) {
		return xs_fail(
		        x,
		        "XSpace of %zu bytes is over protobuf's 2 GiB limit: export a shorter "
		        "time window",
		        x->out.len);
	}
	return 0;
}

static void exporter_init(struct exporter *x, const struct kx_analysis *an,
                          const struct kx_xspace_opts *o, char *err, size_t errlen)
{
	memset(x, 0, sizeof(*x));
	x->an = an;
	x->s = an->store;
	x->ci = an->ci;
	x->tl = an->timeline;
	x->jobs = an->jobs;
	x->rg = an->ranges;
	if (o)
		x->o = *o;
	x->err = err;
	x->errlen = errlen;
}

int kx_xspace_write_fd(const struct kx_analysis *an, const struct kx_xspace_opts *o, int fd,
                       char *err, size_t errlen)
{
	struct exporter x;
	int rc;

	exporter_init(&x, an, o, err, errlen);
	rc = export(&x, fd);
	exporter_free(&x);
	return rc;
}

int kx_xspace_serialize(const struct kx_analysis *an, const struct kx_xspace_opts *o, uint8_t **out,
                        size_t *len, char *err, size_t errlen)
{
	struct exporter x;
	int rc = -1;

	exporter_init(&x, an, o, err, errlen);
	*out = NULL;
	*len = 0;
	if (!export(&x, -1)) {
		*out = realloc(x.out.p, x.out.len ? x.out.len : 1);
		if (!*out)
			*out = x.out.p;
		*len = x.out.len;
		x.out.p = NULL;
		rc = 0;
	}
	exporter_free(&x);
	return rc;
}
