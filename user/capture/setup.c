/* Capture set-up shared by the front ends: devices, pids, options -> a running session. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "capture/counters.h"
#include "capture/probe.h"
#include "capture/setup.h"
#include "annotate_rec.h" /* bpf/: KX_ANN_WAIT_ENV */
#include "registry/devices.h"
#include "util/outfile.h"
#include "util/parse.h"

int kx_devset_add(struct kx_devset *ds, const char *spec, char *err, size_t len)
{
	struct kx_device
	        scratch[KX_MAX_DEVICES]; /* checked, not kept (not static: daemon threads) */

	if (ds->nspecs == KX_MAX_DEVICE_SPECS) {
		snprintf(err, len, "at most %d --device options", KX_MAX_DEVICE_SPECS);
		return -1;
	}
	if (kx_device_resolve(spec, scratch, KX_MAX_DEVICES, err, len) < 0)
		return -1;
	ds->specs[ds->nspecs++] = spec;
	return 0;
}

int kx_devset_add_list(struct kx_devset *ds, char *list, kx_devset_warn_fn warn, void *ctx)
{
	char *save = NULL, err[256];
	int skipped = 0;

	for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *end;

		while (*tok == ' ')
			tok++;
		for (end = tok + strlen(tok); end > tok && end[-1] == ' '; end--)
			end[-1] = 0;
		if (!*tok)
			continue;
		if (kx_devset_add(ds, tok, err, sizeof(err)) != 0) {
			skipped++;
			if (warn)
				warn(ctx, err);
		}
	}
	return skipped;
}

int kx_devset_resolve(struct kx_devset *ds, kx_devset_warn_fn warn, void *ctx)
{
	char err[256];

	ds->n = kx_devices_default(ds->dev, KX_MAX_DEVICES);
	for (int i = 0; i < ds->nspecs && ds->n < KX_MAX_DEVICES; i++) {
		int k = kx_device_resolve(ds->specs[i], ds->dev + ds->n, KX_MAX_DEVICES - ds->n,
		                          err, sizeof(err));

		if (k < 0) {
			if (warn)
				warn(ctx, err);
			continue;
		}
		ds->n += k;
	}
	return ds->n;
}

int kx_devset_same(const struct kx_devset *a, const struct kx_devset *b)
{
	if (a->n != b->n)
		return 0;
	for (int i = 0; i < a->n; i++) {
		const struct kx_device *x = &a->dev[i], *y = &b->dev[i];

		if (x->dev != y->dev || x->fkind != y->fkind || x->drv != y->drv ||
		    x->any_minor != y->any_minor || strcmp(x->node, y->node))
			return 0;
	}
	return 1;
}

/* One entry of a pid list (tok, n bytes, not terminated) into *pid. 0, or -1 with err. */
static int pid_entry(const char *tok, size_t n, uint32_t *pid, char *err, size_t len)
{
	char buf[24];
	long long v;

	if (n == 0 || n >= sizeof(buf)) {
		snprintf(err, len, "bad pid list: %s (expected PID[,PID...], process ids above 0)",
		         n ? "an entry is too long" : "an empty entry");
		return -1;
	}
	memcpy(buf, tok, n);
	buf[n] = 0;
	if (kx_parse_long(NULL, buf, 1, 0x7fffffff, &v, err, len) != 0) {
		snprintf(err, len,
		         "bad pid '%s' (expected a comma-separated list of process ids above 0)",
		         buf);
		return -1;
	}
	*pid = (uint32_t)v;
	return 0;
}

int kx_pidset_parse(const char *list, uint32_t *pids, int max, int *n, char *err, size_t len)
{
	const char *p = list;

	for (;;) {
		size_t k = strcspn(p, ",");
		uint32_t pid;

		if (pid_entry(p, k, &pid, err, len))
			return -1;
		if (*n >= max) {
			snprintf(err, len, "too many pids (at most %d)", max);
			return -1;
		}
		pids[(*n)++] = pid;
		if (!p[k])
			return 0;
		p += k + 1;
	}
}

/* The longest a launched command's copy of the annotation library waits
 * for its probes, ms (they attach in a few ms). */
#define ANN_WAIT_MS 2000

static void session_opts(struct kx_capture *c, const struct kx_capture_opts *o,
                         struct kx_session_opts *so)
{
	memset(so, 0, sizeof(*so));
	so->all = o->all;
	so->devices = o->devices->dev;
	so->ndevices = o->devices->n;
	so->ringbuf_bytes = o->ringbuf_bytes;
	so->mech = o->mech;
	so->verbose = o->verbose;
	so->no_jobs = o->no_jobs;
	so->no_drvhooks = o->no_drvhooks;
	so->no_offcpu = o->no_offcpu;
	so->aggregate = o->aggregate;
	so->agg_by_pid = o->agg_by_pid;
	so->agg_by_cgroup = o->agg_by_cgroup;
	so->agg_max_keys = o->agg_max_keys;
	so->uid_only = o->uid_only;
	so->uid = o->uid;
	so->gid = o->gid;
	so->sample_hz = o->sample_hz;
	so->off_cpu = o->off_cpu;
	so->ustack_bytes = o->ustack_bytes;
	so->ustack_auto = o->ustack_auto;
	so->counters = o->counters;
	so->no_kernel_why = o->no_kernel_why;
	so->annotate = o->annotate;
	so->quick_exit = o->quick_exit;
	if (o->record_path || o->record_stream) {
		c->rec.path = o->record_path;
		c->rec.stream = o->record_stream;
		c->rec.for_user = o->uid_only;
		so->sink = kx_sink_kxp(&c->rec);
	} else if (o->store) {
		so->sink = kx_sink_store(o->store);
	} else {
		so->sink = o->sink;
	}
}

/* What was traced, for the header: the given line, the command, or -a / -p. */
static void cmdline_of(const struct kx_capture_opts *o, char *line, size_t size)
{
	int n = 0;

	line[0] = 0;
	if (o->cmdline)
		snprintf(line, size, "%s", o->cmdline);
	else if (!o->argv)
		snprintf(line, size, "%s", o->all ? "-a" : "-p");
	for (char **a = o->cmdline ? NULL : o->argv; a && *a && n < (int)size - 2; a++)
		n += snprintf(line + n, size - (size_t)n, "%s%s", n ? " " : "", *a);
}

static void set_cmdline(struct kx_capture *c, const struct kx_capture_opts *o)
{
	char line[sizeof(((struct kx_capinfo *)0)->cmdline)];

	cmdline_of(o, line, sizeof(line));
	kx_session_set_cmdline(c->s, line);
}

/* Watches pid for its exit: a pidfd where the kernel has them, else kill(pid, 0). */
static void watch_pid(struct kx_capture *c, uint32_t pid)
{
	int fd = -1;

#ifdef SYS_pidfd_open
	fd = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
#endif
	c->watch[c->nwatch].pid = pid;
	c->watch[c->nwatch].fd = fd < 0 ? -1 : fd;
	c->nwatch++;
}

/* The file execvp would run for name (searched in PATH when it has no '/'),
 * or NULL when there is none. */
static const char *command_file(const char *name, char *buf, size_t len)
{
	const char *dirs = getenv("PATH");

	if (strchr(name, '/'))
		return name;
	for (const char *d = dirs ? dirs : "/bin:/usr/bin"; *d;) {
		size_t n = strcspn(d, ":");

		if ((size_t)snprintf(buf, len, "%.*s/%s", (int)n, n ? d : ".", name) < len &&
		    access(buf, X_OK) == 0)
			return buf;
		d += n + (d[n] == ':');
	}
	return NULL;
}

int kx_capture_check_output(const struct kx_capture_opts *o, char *err, size_t len)
{
	char buf[PATH_MAX];
	const char *cmd = o->argv && o->argv[0] ? command_file(o->argv[0], buf, sizeof(buf)) : NULL;

	if (!o->record_path)
		return 0;
	return kx_outfile_check(o->record_path, 0, &cmd, 1, err, len);
}

_Static_assert(KX_DW_PIDS_MAX == KX_MAX_PIDS && KX_DW_DEVICES_MAX == KX_MAX_DEVICE_SPECS,
               "a request carries what kx_capture_opts holds");

/* The daemon's socket when this capture should go through it (no privilege
 * here, a file or store to fill, a socket there), else NULL; err then says
 * what to do when privilege is missing. */
static const char *daemon_path(const struct kx_capture_opts *o, char *err, size_t len)
{
	const char *path = kx_remote_socket_path();
	char why[256];

	if (o->no_daemon || o->aggregate || o->record_stream || (!o->record_path && !o->store) ||
	    kx_probe_privileges(why, sizeof(why)))
		return NULL;
	if (kx_remote_available(path))
		return path;
	snprintf(err, len,
	         "not root and no CAP_BPF+CAP_PERFMON, and no kxprof daemon at %s: run as root "
	         "(sudo), grant cap_bpf,cap_perfmon, or have the daemon set up (kxprof serve "
	         "--socket; see docs/daemon.md)",
	         path);
	return NULL;
}

/* The request for the daemon: what o asks, with the pids given. */
static void request_of(const struct kx_capture_opts *o, struct kx_dw_request *r)
{
	memset(r, 0, sizeof(*r));
	for (int i = 0; i < o->npids && i < KX_DW_PIDS_MAX; i++)
		r->pids[r->npids++] = o->pids[i];
	r->all = o->all;
	for (int i = 0; i < o->devices->nspecs; i++)
		snprintf(r->devices[r->ndevices++], KX_DW_SPEC_MAX, "%s", o->devices->specs[i]);
	snprintf(r->mech, sizeof(r->mech), "%s", o->mech ? o->mech : "");
	r->ringbuf_bytes = o->ringbuf_bytes;
	r->no_jobs = o->no_jobs;
	r->annotate = o->annotate;
	r->sample_hz = o->sample_hz;
	r->off_cpu = o->off_cpu;
	r->ustack_bytes = o->ustack_bytes;
	r->ustack_auto = o->ustack_auto;
	if (o->counters)
		kx_counters_format(o->counters, r->counters, sizeof(r->counters));
	cmdline_of(o, r->cmdline, sizeof(r->cmdline));
}

/* The same as a local open, with the session in the daemon at path. */
static int open_remote(struct kx_capture *c, const struct kx_capture_opts *o, const char *path,
                       char *err, size_t len)
{
	struct kx_dw_request req;
	struct kx_remote_opts ro = {
	        .socket = path,
	        .req = &req,
	        .record_path = o->record_path,
	        .store = o->store,
	        .mem_limit = o->store ? kx_store_limit(o->store) : 0,
	};

	request_of(o, &req);
	for (int i = 0; i < o->npids; i++)
		watch_pid(c, o->pids[i]);
	if (o->argv) {
		/* The daemon attaches the annotation probes; the library holds
		 * while this process lives, as for a local capture. */
		if (o->annotate)
			snprintf(c->cmd.env, sizeof(c->cmd.env), "%s=%d:%d", KX_ANN_WAIT_ENV,
			         (int)getpid(), ANN_WAIT_MS);
		if (kx_launch_hold(&c->cmd, o->argv, err, len))
			return -1;
		c->argv = o->argv;
		if (!o->all && req.npids < KX_DW_PIDS_MAX)
			req.pids[req.npids++] = (uint32_t)c->cmd.pid;
	}
	c->remote = kx_remote_open(&ro, err, len);
	if (!c->remote)
		return -1;
	c->daemon = path;
	snprintf(c->rci.cmdline, sizeof(c->rci.cmdline), "%s", req.cmdline);
	return 0;
}

/* The DRM usage sampler of a capture into a record file (o->drm_usage_ms). 0, or -1 with err. */
static int drm_sampler(struct kx_capture *c, const struct kx_capture_opts *o, char *err, size_t len)
{
	if (!o->drm_usage_ms || !(o->record_path || o->record_stream))
		return 0;
	c->rec.drm = kx_drm_sampler_new(o->devices ? o->devices->dev : NULL,
	                                o->devices ? o->devices->n : 0, o->all);
	if (!c->rec.drm) {
		snprintf(err, len, "out of memory for the DRM usage sampler");
		return -1;
	}
	c->rec.drm_ms = o->drm_usage_ms;
	return 0;
}

int kx_capture_open(struct kx_capture *c, const struct kx_capture_opts *o, char *err, size_t len)
{
	struct kx_session_opts so;
	const char *path;

	if (kx_capture_check_output(o, err, len))
		return -1;
	err[0] = 0;
	path = daemon_path(o, err, len);
	if (path)
		return open_remote(c, o, path, err, len);
	if (err[0])
		return -1;
	session_opts(c, o, &so);
	if (drm_sampler(c, o, err, len))
		return -1;
	c->s = kx_session_open(&so, err, len);
	if (!c->s)
		return -1;
	for (int i = 0; i < o->npids; i++) {
		if (kx_session_add_pid(c->s, o->pids[i], err, len))
			return -1;
		watch_pid(c, o->pids[i]);
		if (c->rec.drm)
			kx_drm_sampler_add_pid(c->rec.drm, o->pids[i]);
	}
	set_cmdline(c, o);
	if (!o->argv)
		return 0;
	/* Its copies of the annotation library hold until their probes are
	 * attached, so its first annotations are traced too. */
	if (kx_session_annotating(c->s))
		snprintf(c->cmd.env, sizeof(c->cmd.env), "%s=%d:%d", KX_ANN_WAIT_ENV, (int)getpid(),
		         ANN_WAIT_MS);
	if (kx_launch_hold(&c->cmd, o->argv, err, len))
		return -1;
	c->argv = o->argv;
	if (!o->all && kx_session_add_pid(c->s, (uint32_t)c->cmd.pid, err, len))
		return -1;
	if (c->rec.drm)
		kx_drm_sampler_add_pid(c->rec.drm, (uint32_t)c->cmd.pid);
	return 0;
}

int kx_capture_start(struct kx_capture *c, char *err, size_t len)
{
	int rc;

	if (c->remote ? kx_remote_start(c->remote, err, len) : kx_session_start(c->s, err, len))
		return -1;
	c->started = 1;
	if (!c->argv)
		return 0;
	rc = kx_launch_release(&c->cmd, c->argv, err, len);
	if (rc && c->remote) {
		/* The daemon ends the session; the unfinished file goes. */
		kx_remote_close(c->remote);
		c->remote = NULL;
	} else if (rc) {
		/* Nothing was traced: only the temporary file goes; whatever
		 * the output path names (a previous recording) is untouched. */
		kx_session_stop(c->s);
		kx_kxp_sink_discard(&c->rec);
	}
	return rc;
}

int kx_capture_cmd_running(struct kx_capture *c)
{
	return !c->argv || !kx_launch_exited(&c->cmd);
}

int kx_capture_pids_running(const struct kx_capture *c)
{
	for (int i = 0; i < c->nwatch; i++) {
		struct pollfd p = {.fd = c->watch[i].fd, .events = POLLIN};

		if (p.fd >= 0 ? poll(&p, 1, 0) == 0
		              : kill((pid_t)c->watch[i].pid, 0) == 0 || errno == EPERM)
			return 1;
	}
	return c->nwatch == 0;
}

int kx_capture_stop(struct kx_capture *c, char *err, size_t len)
{
	if (c->remote) {
		c->started = 0; /* over: rci holds the final facts from here on */
		return kx_remote_stop(c->remote, &c->rci, err, len);
	}
	kx_session_stop(c->s);
	return kx_kxp_sink_close(&c->rec, kx_session_capinfo(c->s), err, len);
}

int kx_capture_cmd_exit(struct kx_capture *c)
{
	return c->argv ? kx_launch_finish(&c->cmd) : 0;
}

int kx_capture_jobs_attached(const struct kx_capinfo *ci)
{
	for (uint32_t i = 0; i < ci->nhooks; i++)
		if (!strncmp(ci->hooks[i].name, "jobs:", 5) &&
		    ci->hooks[i].state == KX_HOOK_ATTACHED)
			return 1;
	return 0;
}

void kx_capture_close(struct kx_capture *c)
{
	char ignored[256];

	if (c->argv)
		kx_launch_abort(&c->cmd);
	kx_remote_close(c->remote);
	c->remote = NULL;
	/* The consumer writes into the file until the session stops. */
	if (c->started && c->s)
		kx_session_stop(c->s);
	/* Events recorded are kept; a capture that never started leaves the
	 * output path untouched. */
	if (c->s && c->started)
		kx_kxp_sink_close(&c->rec, kx_session_capinfo(c->s), ignored, sizeof(ignored));
	else
		kx_kxp_sink_discard(&c->rec);
	kx_session_close(c->s);
	c->s = NULL;
	for (int i = 0; i < c->nwatch; i++)
		if (c->watch[i].fd >= 0)
			close(c->watch[i].fd);
	c->nwatch = 0;
}

int kx_capture_opened(const struct kx_capture *c)
{
	return c->s || c->remote;
}

const struct kx_capinfo *kx_capture_capinfo(struct kx_capture *c)
{
	if (!c->remote)
		return kx_session_capinfo(c->s);
	if (c->started)
		kx_remote_status(c->remote, &c->rci);
	return &c->rci;
}

const char *kx_capture_mech(const struct kx_capture *c)
{
	return c->remote ? kx_remote_mech(c->remote) : kx_session_mech(c->s);
}

const char *kx_capture_ended(struct kx_capture *c)
{
	return c->remote && c->started ? kx_remote_ended(c->remote) : NULL;
}

int kx_capture_write_error(const struct kx_capture *c)
{
	return c->remote ? kx_remote_write_error(c->remote) : c->rec.write_error;
}
