/* One client's session in the daemon (contract: conn.h). */
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/setup.h"
#include "daemon/conn.h"
#include "daemon/pending.h"
#include "util/printable.h"
#include "util/procstatus.h"

#define TICK_MS         250                    /* how often the session loop looks around */
#define STATUS_NS       (1000ull * 1000000ull) /* live counters to the client this often */
#define FIRST_REQUEST_S 5.0 /* the longest wait for a request (the idle limit when shorter), s */
#define FD_RESERVE      64  /* fds a session leaves free: accepts, refusals, the daemon's own */
#define FD_SESSION_BASE 64  /* fds of a session besides its pids and per-CPU events */

struct conn {
	int fd;
	struct kx_peer *peer;
	uint64_t id;
	const struct kx_conn_cfg *cfg;
	pthread_mutex_t send_lock; /* one message at a time: session thread and consumer */
	atomic_int broken;         /* errno of a failed send: the client is gone or stuck */
	struct kx_dw_request req;
	struct kx_targets targets;
	struct kx_profile_grant grant; /* what it gets of the profiles it asks */
	struct kx_devset devices;
	struct kx_kxp_stream stream;
	struct kx_capture cap;
	uint64_t t0;               /* session start, kx_mono_ns */
	char line[KX_DW_TEXT_MAX]; /* say()'s */
	char reason[64];           /* look_around()'s */
	struct kx_pending wait;    /* while it waits for its request */
};

static void say(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say(struct conn *c, const char *fmt, ...)
{
	char text[KX_DW_TEXT_MAX];
	va_list ap;
	int n;

	if (!c->cfg->log)
		return;
	n = snprintf(c->line, sizeof(c->line),
	             "session %llu (uid %u, pid %d): ", (unsigned long long)c->id,
	             (unsigned int)c->peer->uid, (int)c->peer->pid);
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* Whatever a client's strings hold, one log line of printable text. */
	kx_printable(c->line + n, sizeof(c->line) - (size_t)n, text, sizeof(text));
	c->cfg->log(c->cfg->log_ctx, c->line);
}

/* Sends one message unless the connection already failed. 0 or the errno. */
static int send_msg(struct conn *c, int type, const void *p, size_t n)
{
	int e = atomic_load(&c->broken);

	pthread_mutex_lock(&c->send_lock);
	if (!e && (e = kx_dw_send(c->fd, type, p, n)) != 0)
		atomic_store(&c->broken, e);
	pthread_mutex_unlock(&c->send_lock);
	return e;
}

/* Refuses or ends the session with one line to the client and the log. */
static void refuse(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void refuse(struct conn *c, const char *fmt, ...)
{
	char text[KX_DW_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	send_msg(c, KX_DW_ERROR, text, strlen(text));
	say(c, "closed: %s", text);
}

/* The record stream's sink: each piece is one DATA message. */
static int stream_write(void *ctx, const void *p, size_t n)
{
	return send_msg(ctx, KX_DW_DATA, p, n);
}

static uint64_t secs_ns(double s)
{
	return (uint64_t)(s * 1e9);
}

/* Reads the next client message within the idle limit. KX_DW_MSG or the
 * reason it could not (said to the client when it is still there; an end
 * of file is logged unless quiet_eof). */
static int next_msg(struct conn *c, int *type, struct kx_bytes *msg, const char *waiting_for,
                    int quiet_eof, double wait_s)
{
	char why[256];
	int rc = kx_dw_read(c->fd, kx_mono_ns() + secs_ns(wait_s), 1, type, msg, why, sizeof(why));

	if (rc == KX_DW_TIMEOUT)
		refuse(c, "no %s within %.0f s: closing", waiting_for, wait_s);
	else if (rc == KX_DW_BAD)
		refuse(c, "bad message: %s", why);
	else if (rc == KX_DW_EOF && !quiet_eof)
		say(c, "disconnected before the %s", waiting_for);
	return rc;
}

static int read_request(struct conn *c)
{
	double wait_s =
	        c->cfg->idle_seconds < FIRST_REQUEST_S ? c->cfg->idle_seconds : FIRST_REQUEST_S;
	struct kx_bytes msg = {0};
	char why[256];
	int type, rc;

	c->wait = (struct kx_pending){.fd = c->fd, .peer = c->peer};
	kx_pending_enter(&c->wait);
	rc = next_msg(c, &type, &msg, "request", 1, wait_s);
	if (kx_pending_leave(&c->wait)) {
		/* Its reading side is shut, even if the request came in time. */
		refuse(c, "too many connections are waiting to send a request: this one, waiting "
		          "longest, was closed for a newer one (try again)");
		rc = KX_DW_EOF;
	} else if (rc == KX_DW_EOF) {
		say(c, "disconnected before the request");
	}
	if (rc == KX_DW_MSG && type != KX_DW_OPEN) {
		refuse(c, "expected a request (OPEN), got %s", kx_dw_type_name(type));
		rc = KX_DW_BAD;
	} else if (rc == KX_DW_MSG &&
	           kx_dw_request_decode(msg.p, msg.len, &c->req, why, sizeof(why))) {
		refuse(c, "%s", why);
		rc = KX_DW_BAD;
	}
	free(msg.p);
	return rc == KX_DW_MSG ? 0 : -1;
}

/* A control character in a request string: one line saying which string
 * (the strings go into messages and the log). 0, or -1 after refusing. */
static int request_text_ok(struct conn *c)
{
	const char *bad = kx_ctrl_find(c->req.mech)       ? "the attach mechanism"
	                  : kx_ctrl_find(c->req.counters) ? "the counter list"
	                                                  : NULL;

	for (int i = 0; !bad && i < c->req.ndevices; i++)
		if (kx_ctrl_find(c->req.devices[i]))
			bad = "a device spec";
	if (!bad)
		return 0;
	refuse(c,
	       "%s in the request holds a control character (a newline, tab or the like): "
	       "refused",
	       bad);
	return -1;
}

/* The daemon thread's own groups while it acts as a client (fs_identity). */
struct own_groups {
	gid_t g[KX_PROCSTATUS_GROUPS];
	int n;
};

/* The thread's file-system identity and groups become the client's, so
 * paths resolve as they would for the client (no answer about what only
 * root may see), or (own: the saved groups) back to the daemon's. Per
 * thread: raw syscalls (glibc would change every thread's groups). */
static void fs_identity(const struct kx_peer *p, struct own_groups *own, int as_client)
{
	struct kx_procstatus st;
	gid_t groups[KX_PROCSTATUS_GROUPS];
	int n = 0;

	if (!as_client) {
		syscall(SYS_setfsuid, geteuid());
		syscall(SYS_setfsgid, getegid());
		syscall(SYS_setgroups, (size_t)(own->n > 0 ? own->n : 0), own->g);
		return;
	}
	own->n = (int)syscall(SYS_getgroups, KX_PROCSTATUS_GROUPS, own->g);
	/* The client's supplementary groups, as the kernel shows them. */
	if (p->pid > 0 && kx_procstatus_read((uint32_t)p->pid, &st) == 0 && kx_peer_alive(p))
		for (n = 0; n < st.ngroups; n++)
			groups[n] = (gid_t)st.groups[n];
	syscall(SYS_setgroups, (size_t)n, groups);
	syscall(SYS_setfsgid, p->gid);
	syscall(SYS_setfsuid, p->uid);
}

/* The devices of the request, resolved here (with the client's file-system
 * identity unless it is root). 0, or -1 after refusing. */
static int resolve_devices(struct conn *c)
{
	int as_client = c->peer->uid != 0 && geteuid() == 0, n, rc = 0;
	struct own_groups own = {.n = 0};
	char err[256];

	if (as_client)
		fs_identity(c->peer, &own, 1);
	for (int i = 0; !rc && i < c->req.ndevices; i++)
		rc = kx_devset_add(&c->devices, c->req.devices[i], err, sizeof(err));
	n = rc ? 0 : kx_devset_resolve(&c->devices, NULL, NULL);
	if (as_client)
		fs_identity(c->peer, &own, 0);
	if (rc) {
		refuse(c, "%s", err);
		return -1;
	}
	if (n == 0) {
		refuse(c, "no accelerator device found here and none named: name one (--device)");
		return -1;
	}
	return 0;
}

/* Open fds of this process. */
static long fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* What the session will hold, roughly: its pinned pids, its per-CPU perf
 * events and its BPF objects. */
static long session_fds(const struct conn *c)
{
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	long per_cpu = (c->req.sample_hz ? 1 : 0) + c->grant.counters.n;

	return FD_SESSION_BASE + c->targets.n + (ncpu > 0 ? ncpu : 1) * per_cpu;
}

/* Room for the session's fds with FD_RESERVE left: else a clean refusal
 * now, not a failed load (nor a failed accept) later. 0, or -1 after refusing. */
static int fds_left(struct conn *c)
{
	struct rlimit rl;
	long used = fds_open(), need = session_fds(c) + FD_RESERVE;

	if (used < 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY ||
	    used + need <= (long)rl.rlim_cur)
		return 0;
	refuse(c,
	       "the daemon is short of file descriptors (%ld of %llu in use, this session needs "
	       "about %ld): try again later",
	       used, (unsigned long long)rl.rlim_cur, need - FD_RESERVE);
	return -1;
}

/* The capture options of the request, for this peer. */
static void capture_opts(struct conn *c, struct kx_capture_opts *o, uint32_t *pids)
{
	memset(o, 0, sizeof(*o));
	for (int i = 0; i < c->targets.n; i++)
		pids[i] = c->targets.t[i].pid;
	o->devices = &c->devices;
	o->all = c->req.all;
	o->pids = pids;
	o->npids = c->targets.n;
	o->mech = c->req.mech[0] ? c->req.mech : NULL;
	o->ringbuf_bytes =
	        c->req.ringbuf_bytes ? c->req.ringbuf_bytes : c->cfg->default_ringbuf_bytes;
	o->verbose = c->cfg->verbose;
	o->no_jobs = c->req.no_jobs;
	o->annotate = c->req.annotate;
	o->record_stream = &c->stream;
	o->cmdline = c->req.cmdline;
	o->uid_only = c->peer->uid != 0;
	o->uid = (uint32_t)c->peer->uid;
	o->gid = (uint32_t)c->peer->gid;
	o->sample_hz = c->req.sample_hz;
	o->off_cpu = c->req.off_cpu;
	o->ustack_bytes = c->req.ustack_bytes;
	o->ustack_auto = c->req.ustack_auto;
	o->counters = c->grant.counters.n ? &c->grant.counters : NULL;
	o->no_kernel_why = c->grant.no_kernel_why[0] ? c->grant.no_kernel_why : NULL;
	o->no_daemon = 1;
}

/* Authorised, loaded and attached, OPENED sent. 0, or -1 after refusing. */
static int open_capture(struct conn *c)
{
	uint32_t pids[KX_DW_PIDS_MAX];
	struct kx_capture_opts o;
	struct kx_bytes msg = {0};
	char err[512];
	int e;

	if (request_text_ok(c))
		return -1;
	if (kx_auth_check(c->peer, &c->req, &c->targets, err, sizeof(err))) {
		refuse(c, "%s", err);
		return -1;
	}
	if (c->req.ringbuf_bytes > c->cfg->max_ringbuf_bytes) {
		refuse(c,
		       "a ring buffer of %.2f MiB is over this daemon's limit of %.2f MiB per "
		       "session",
		       c->req.ringbuf_bytes / 1048576.0, c->cfg->max_ringbuf_bytes / 1048576.0);
		return -1;
	}
	if (kx_profile_grant(&c->cfg->profiles, c->peer->uid, &c->req, &c->grant, err,
	                     sizeof(err))) {
		refuse(c, "%s", err);
		return -1;
	}
	if (resolve_devices(c) || fds_left(c))
		return -1;
	capture_opts(c, &o, pids);
	if (kx_capture_open(&c->cap, &o, err, sizeof(err)) ||
	    kx_auth_confirm(c->peer, &c->targets, err, sizeof(err))) {
		refuse(c, "%s", err);
		return -1;
	}
	kx_dw_opened_encode(&msg, kx_capture_mech(&c->cap));
	e = msg.oom ? ENOMEM : send_msg(c, KX_DW_OPENED, msg.p, msg.len);
	free(msg.p);
	return e ? -1 : 0;
}

/* The profiles of the session for the log ("" when none), in buf. */
static const char *profiles_said(const struct conn *c, char *buf, size_t len)
{
	const struct kx_dw_request *r = &c->req;
	int n = 0;

	buf[0] = 0;
	if (r->sample_hz)
		n += snprintf(buf + n, len - (size_t)n, ", CPU samples at %u Hz", r->sample_hz);
	if (r->off_cpu && n < (int)len)
		n += snprintf(buf + n, len - (size_t)n, ", off-CPU stacks");
	if (c->grant.counters.n && n < (int)len)
		n += snprintf(buf + n, len - (size_t)n, ", counters %s", r->counters);
	if ((r->sample_hz || r->off_cpu || c->grant.counters.n) && n < (int)len)
		snprintf(buf + n, len - (size_t)n, ", kernel-mode profiling %s",
		         c->grant.no_kernel_why[0] ? "not given" : "given");
	return buf;
}

/* Waits for START and starts: 0; or -1 (refused, or the client left). */
static int start_capture(struct conn *c)
{
	struct kx_bytes msg = {0};
	char err[512];
	int type, rc = next_msg(c, &type, &msg, "START", 0, c->cfg->idle_seconds);

	free(msg.p);
	if (rc != KX_DW_MSG)
		return -1;
	if (type == KX_DW_STOP) {
		say(c, "stopped before it started");
		return -1;
	}
	if (type != KX_DW_START) {
		refuse(c, "expected START, got %s", kx_dw_type_name(type));
		return -1;
	}
	if (kx_capture_start(&c->cap, err, sizeof(err))) {
		refuse(c, "cannot start the capture: %s", err);
		return -1;
	}
	c->t0 = kx_mono_ns();
	say(c, "tracing %d process%s (%s), %d devices%s", c->targets.n,
	    c->targets.n == 1 ? "" : "es", kx_capture_mech(&c->cap), c->devices.n,
	    profiles_said(c, err, sizeof(err)));
	return send_msg(c, KX_DW_STARTED, NULL, 0) ? -1 : 0;
}

/* Live counters, unless the consumer is busy sending (never wait for it). */
static void send_status(struct conn *c)
{
	const struct kx_capinfo *ci = kx_capture_capinfo(&c->cap);
	struct kx_dw_status st = {ci->emitted, ci->received, ci->dropped};
	uint8_t buf[64];
	struct kx_bytes b = {.p = buf, .cap = sizeof(buf)};

	kx_dw_status_encode(&b, &st);
	if (b.oom || pthread_mutex_trylock(&c->send_lock) != 0)
		return;
	if (!atomic_load(&c->broken)) {
		int e = kx_dw_send(c->fd, KX_DW_STATUS, b.p, b.len);

		if (e)
			atomic_store(&c->broken, e);
	}
	pthread_mutex_unlock(&c->send_lock);
}

/* A message during the session: STOP ends it ("" to stop cleanly), anything
 * else is refused (NULL: abort). */
static const char *on_client(struct conn *c)
{
	struct kx_bytes msg = {0};
	int type, rc = next_msg(c, &type, &msg, "whole message", 1, c->cfg->idle_seconds);

	free(msg.p);
	if (rc == KX_DW_EOF) {
		say(c, "the client disconnected: session aborted");
		return NULL;
	}
	if (rc != KX_DW_MSG)
		return NULL;
	if (type == KX_DW_STOP)
		return "stopped by the client";
	refuse(c, "unexpected %s during the session", kx_dw_type_name(type));
	return NULL;
}

/* Why the session should end now: a reason to stop cleanly, "" to go on,
 * NULL to abort (the client is gone or broke the protocol). */
static const char *look_around(struct conn *c, uint64_t now)
{
	int e = atomic_load(&c->broken);

	if (e) {
		say(c, "%s: session aborted",
		    e == EAGAIN ? "the client read nothing for the idle limit"
		                : "the connection to the client failed");
		return NULL;
	}
	if (!kx_peer_alive(c->peer)) {
		say(c, "the client process exited: session aborted");
		return NULL;
	}
	if (atomic_load(c->cfg->shutdown))
		return "the daemon is shutting down";
	if (c->cfg->max_seconds > 0 && now - c->t0 >= secs_ns(c->cfg->max_seconds)) {
		snprintf(c->reason, sizeof(c->reason), "time limit (%.0f s)", c->cfg->max_seconds);
		return c->reason;
	}
	return "";
}

/* Streams until a reason to end: returned (NULL: abort). */
static const char *run(struct conn *c)
{
	uint64_t last_status = kx_mono_ns();

	for (;;) {
		struct pollfd p[2] = {{.fd = c->fd, .events = POLLIN | POLLRDHUP},
		                      {.fd = c->peer->pidfd, .events = POLLIN}};
		uint64_t now;
		const char *why;
		int k = poll(p, c->peer->pidfd >= 0 ? 2 : 1, TICK_MS);

		now = kx_mono_ns();
		if (k > 0 && (p[0].revents & (POLLIN | POLLRDHUP | POLLHUP | POLLERR)))
			return on_client(c);
		why = look_around(c, now);
		if (!why || *why)
			return why;
		if (now - last_status >= STATUS_NS) {
			send_status(c);
			last_status = now;
		}
	}
}

/* Stops cleanly: trailer through the stream, then END with the final facts. */
static void finish(struct conn *c, const char *why)
{
	struct kx_dw_end *end = calloc(1, sizeof(*end));
	struct kx_bytes msg = {0};
	const struct kx_capinfo *ci;
	char err[512];

	if (kx_capture_stop(&c->cap, err, sizeof(err))) {
		say(c, "cannot finish the stream: %s", err);
		free(end);
		return;
	}
	ci = kx_capture_capinfo(&c->cap);
	if (end) {
		snprintf(end->reason, sizeof(end->reason), "%s", why);
		end->ci = *ci;
		kx_dw_end_encode(&msg, end);
	}
	if (end && !msg.oom)
		send_msg(c, KX_DW_END, msg.p, msg.len);
	free(msg.p);
	free(end);
	say(c, "ended (%s): %llu events, %llu dropped, %.1f s", why,
	    (unsigned long long)ci->received, (unsigned long long)ci->dropped,
	    (double)(kx_mono_ns() - c->t0) / 1e9);
}

/* The socket's send timeout: a client that reads nothing that long is cut off. */
static void set_send_timeout(int fd, double s)
{
	struct timeval tv = {.tv_sec = (time_t)s, .tv_usec = (suseconds_t)((s - (time_t)s) * 1e6)};

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

void kx_conn_limits(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, raise_nofile);
}

void kx_conn_serve(int fd, struct kx_peer *peer, uint64_t id, const struct kx_conn_cfg *cfg)
{
	struct conn *c;

	kx_conn_limits();
	c = calloc(1, sizeof(*c));

	if (!c) {
		kx_dw_send_error(fd, "the daemon is out of memory");
		goto out;
	}
	c->fd = fd;
	c->peer = peer;
	c->id = id;
	c->cfg = cfg;
	c->stream = (struct kx_kxp_stream){.write = stream_write, .ctx = c};
	pthread_mutex_init(&c->send_lock, NULL);
	set_send_timeout(fd, cfg->idle_seconds);
	if (read_request(c) == 0 && open_capture(c) == 0 && start_capture(c) == 0) {
		const char *why = run(c);

		if (why)
			finish(c, why);
	}
	/* Anything unfinished is aborted: a blocked send fails at once, the
	 * session is detached and every fd and map is closed. */
	shutdown(fd, SHUT_RDWR);
	kx_capture_close(&c->cap);
	kx_auth_release(&c->targets);
	pthread_mutex_destroy(&c->send_lock);
	free(c);
out:
	kx_peer_release(peer);
	close(fd);
}
