/* Capturing through the kxprof daemon, client side (contract: remote.h). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capture/clock.h"
#include "capture/remote.h"
#include "io/kxp.h"
#include "util/fdio.h"
#include "util/outfile.h"
#include "util/printable.h"

/* Generous: a loaded host takes long to verify many sessions' programs at once. */
#define REPLY_WAIT_NS (300ull * 1000000000ull) /* for OPENED and STARTED */
#define STOP_QUIET_NS (300ull * 1000000000ull) /* after STOP: longest silence accepted */

enum state { RUNNING, ENDED, FAILED };

struct kx_remote {
	int fd;
	const char *socket;
	const char *record_path;
	struct kx_store *store;
	size_t mem_limit;
	char mech[16];
	struct kx_outfile of; /* the record file being written (record_path) */
	int of_open;
	struct kx_bytes mem;     /* the kept stream (store) */
	struct kx_bytes pending; /* the last DATA piece, kept back: it may be the trailer */
	uint64_t mem_dropped;    /* stream bytes over mem_limit, not kept */
	uint64_t data_bytes;     /* stream bytes received */
	int write_error;         /* errno of the first failed write into the file */
	pthread_t thread;
	int thread_running;
	pthread_mutex_t lock; /* everything below */
	pthread_cond_t cond;
	enum state state;
	int stopping;                  /* STOP sent */
	uint64_t last_msg_ns;          /* when the last message arrived */
	struct kx_dw_status live;      /* the last STATUS */
	struct kx_dw_end end;          /* after END */
	char why[KX_DW_TEXT_MAX + 64]; /* FAILED, or ENDED early: the reason */
};

const char *kx_remote_socket_path(void)
{
	const char *p = getenv("KXPROF_SOCKET");

	return p && *p ? p : KX_DAEMON_SOCKET_DEFAULT;
}

int kx_remote_available(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

/*
 * Whoever listens at the path gets the request (the command line, the paths)
 * and prints to this user's terminal, so only a daemon run by root, or by
 * this very uid (a daemon of one's own can do nothing the user cannot), is
 * spoken to. The kernel's credentials of the listening socket decide: with
 * socket activation they are systemd's (root). 0, or -1 with err and fd
 * closed.
 */
static int trusted_server(int fd, const char *path, char *err, size_t len)
{
	struct ucred uc;
	socklen_t l = sizeof(uc);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &l) != 0) {
		snprintf(err, len, "cannot tell who runs the kxprof daemon at %s: %s", path,
		         strerror(errno));
		close(fd);
		return -1;
	}
	if (uc.uid == 0 || uc.uid == geteuid())
		return 0;
	snprintf(err, len,
	         "refusing the kxprof daemon at %s: it is run by uid %u (pid %d), not by root: "
	         "another user may have put it there; check $KXPROF_SOCKET or ask an "
	         "administrator",
	         path, (unsigned int)uc.uid, (int)uc.pid);
	close(fd);
	return -1;
}

/* A connected socket to path, or -1 with err saying what to do. */
static int dial(const char *path, char *err, size_t len)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		snprintf(err, len, "daemon socket path too long: %s", path);
		return -1;
	}
	memcpy(a.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		snprintf(err, len, "cannot create a socket: %s", strerror(errno));
		return -1;
	}
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0)
		return trusted_server(fd, path, err, len) ? -1 : fd;
	if (errno == EACCES || errno == EPERM)
		snprintf(err, len,
		         "no permission to use the kxprof daemon at %s: ask an administrator "
		         "for its group (kxprof serve --socket-group)",
		         path);
	else
		snprintf(err, len,
		         "cannot reach the kxprof daemon at %s: %s (is kxprof serve --socket "
		         "running?)",
		         path, strerror(errno));
	close(fd);
	return -1;
}

static void on_data(struct kx_remote *r, const struct kx_bytes *msg);

/* Waits for the reply to a request: want, or ERROR (the daemon's reason).
 * Record data may come first (the header is written as the capture starts). */
static int await_reply(struct kx_remote *r, int want, struct kx_bytes *msg, char *err, size_t len)
{
	uint64_t deadline = kx_mono_ns() + REPLY_WAIT_NS;
	char why[256], text[4 * KX_DW_TEXT_MAX + 1];
	int type = 0, rc;

	while ((rc = kx_dw_read(r->fd, deadline, 0, &type, msg, why, sizeof(why))) == KX_DW_MSG &&
	       type == KX_DW_DATA && want == KX_DW_STARTED)
		on_data(r, msg);
	if (rc == KX_DW_MSG && type == want)
		return 0;
	if (rc == KX_DW_MSG && type == KX_DW_ERROR)
		snprintf(err, len, "kxprof daemon at %s: %s", r->socket,
		         kx_printable(text, sizeof(text), msg->p, msg->len));
	else if (rc == KX_DW_MSG)
		snprintf(err, len, "kxprof daemon at %s: sent %s instead of %s", r->socket,
		         kx_dw_type_name(type), kx_dw_type_name(want));
	else
		snprintf(err, len, "kxprof daemon at %s: %s", r->socket,
		         rc == KX_DW_EOF       ? "closed the connection without a reply"
		         : rc == KX_DW_TIMEOUT ? "no reply within 300 s"
		                               : why);
	return -1;
}

struct kx_remote *kx_remote_open(const struct kx_remote_opts *o, char *err, size_t len)
{
	struct kx_remote *r = calloc(1, sizeof(*r));
	struct kx_bytes req = {0}, msg = {0};
	char mech[sizeof(r->mech)];
	int e;

	if (!r) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	r->socket = o->socket;
	r->record_path = o->record_path;
	r->store = o->store;
	r->mem_limit = o->mem_limit;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->fd = dial(o->socket, err, len);
	if (r->fd < 0)
		goto fail;
	kx_dw_request_encode(&req, o->req);
	e = req.oom ? ENOMEM : kx_dw_send(r->fd, KX_DW_OPEN, req.p, req.len);
	/* A daemon that turns a client away says why and closes: read that. */
	if (e && e != ENOMEM && await_reply(r, KX_DW_OPENED, &msg, err, len) == 0)
		e = EPROTO;
	if (e) {
		if (e == ENOMEM || e == EPROTO || !strstr(err, "kxprof daemon"))
			snprintf(err, len, "kxprof daemon at %s: cannot send the request: %s",
			         o->socket, strerror(e));
		goto fail;
	}
	if (await_reply(r, KX_DW_OPENED, &msg, err, len) ||
	    kx_dw_opened_decode(msg.p, msg.len, r->mech, sizeof(r->mech), err, len))
		goto fail;
	memcpy(mech, r->mech, sizeof(mech));
	kx_printable(r->mech, sizeof(r->mech), mech, sizeof(mech));
	free(req.p);
	free(msg.p);
	return r;
fail:
	free(req.p);
	free(msg.p);
	kx_remote_close(r);
	return NULL;
}

/* Keeps a piece of the stream in memory, over the limit only the header and
 * the trailer (the last piece, kept back until the next one comes). */
static void keep_piece(struct kx_remote *r, const uint8_t *p, size_t n)
{
	struct kx_bytes *pend = &r->pending;
	uint8_t *room;

	if (pend->len) {
		if (!r->mem_limit || r->mem.len + pend->len <= r->mem_limit || !r->mem.len) {
			room = kx_bytes_room(&r->mem, pend->len);
			if (room) {
				memcpy(room, pend->p, pend->len);
				r->mem.len += pend->len;
			}
		} else {
			r->mem_dropped += pend->len;
		}
	}
	pend->len = 0;
	room = p ? kx_bytes_room(pend, n) : NULL;
	if (room) {
		memcpy(room, p, n);
		pend->len = n;
	}
}

static void on_data(struct kx_remote *r, const struct kx_bytes *msg)
{
	int e;

	r->data_bytes += msg->len;
	if (r->store) {
		keep_piece(r, msg->p, msg->len);
		return;
	}
	if (r->write_error)
		return;
	e = kx_write_all(r->of.fd, msg->p, msg->len);
	if (e)
		r->write_error = e;
}

/* One message while running; returns 0 to go on, 1 when the session is over. */
static int on_message(struct kx_remote *r, int type, const struct kx_bytes *msg)
{
	char why[160], text[sizeof(r->why)];
	int over = 1;

	pthread_mutex_lock(&r->lock);
	r->last_msg_ns = kx_mono_ns();
	if (type == KX_DW_DATA) {
		pthread_mutex_unlock(&r->lock);
		on_data(r, msg);
		return 0;
	}
	if (type == KX_DW_STATUS &&
	    kx_dw_status_decode(msg->p, msg->len, &r->live, why, sizeof(why)) == 0) {
		over = 0;
	} else if (type == KX_DW_END &&
	           kx_dw_end_decode(msg->p, msg->len, &r->end, why, sizeof(why)) == 0) {
		r->state = ENDED;
		if (!r->stopping)
			snprintf(r->why, sizeof(r->why), "the daemon ended the session: %s",
			         kx_printable(text, sizeof(text), r->end.reason,
			                      sizeof(r->end.reason)));
	} else {
		r->state = FAILED;
		if (type == KX_DW_ERROR)
			snprintf(r->why, sizeof(r->why), "kxprof daemon: %s",
			         kx_printable(text, sizeof(text), msg->p, msg->len));
		else if (type == KX_DW_STATUS || type == KX_DW_END)
			snprintf(r->why, sizeof(r->why), "kxprof daemon: %s", why);
		else
			snprintf(r->why, sizeof(r->why), "kxprof daemon: unexpected %s message",
			         kx_dw_type_name(type));
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return over;
}

/* The receiving thread: messages until END, ERROR or the connection's end. */
static void *receive(void *arg)
{
	struct kx_remote *r = arg;
	struct kx_bytes msg = {0};
	char why[256];
	int type, rc;

	for (;;) {
		rc = kx_dw_read(r->fd, 0, 0, &type, &msg, why, sizeof(why));
		if (rc != KX_DW_MSG)
			break;
		if (on_message(r, type, &msg))
			break;
	}
	pthread_mutex_lock(&r->lock);
	if (r->state == RUNNING) {
		r->state = FAILED;
		snprintf(r->why, sizeof(r->why), "kxprof daemon: %s",
		         rc == KX_DW_EOF ? "connection closed before the end of the session" : why);
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	free(msg.p);
	return NULL;
}

int kx_remote_start(struct kx_remote *r, char *err, size_t len)
{
	struct kx_bytes msg = {0};
	int e;

	if (r->record_path) {
		if (kx_outfile_open(&r->of, r->record_path, KX_OUT_KEEP_OLD, err, len))
			return -1;
		r->of_open = 1;
	}
	e = kx_dw_send(r->fd, KX_DW_START, NULL, 0);
	if (e) {
		snprintf(err, len, "kxprof daemon at %s: cannot start: %s", r->socket, strerror(e));
		return -1;
	}
	if (await_reply(r, KX_DW_STARTED, &msg, err, len)) {
		free(msg.p);
		return -1;
	}
	free(msg.p);
	r->last_msg_ns = kx_mono_ns();
	if ((e = pthread_create(&r->thread, NULL, receive, r)) != 0) {
		snprintf(err, len, "cannot start the receiving thread: %s", strerror(e));
		return -1;
	}
	r->thread_running = 1;
	return 0;
}

const char *kx_remote_ended(struct kx_remote *r)
{
	const char *why;

	pthread_mutex_lock(&r->lock);
	why = r->state == RUNNING ? NULL : r->why;
	pthread_mutex_unlock(&r->lock);
	return why;
}

const char *kx_remote_mech(const struct kx_remote *r)
{
	return r->mech;
}

void kx_remote_status(struct kx_remote *r, struct kx_capinfo *ci)
{
	pthread_mutex_lock(&r->lock);
	ci->emitted = r->live.emitted;
	ci->received = r->live.received;
	ci->dropped = r->live.dropped;
	pthread_mutex_unlock(&r->lock);
}

/* Waits for the session's end after STOP; a daemon silent for STOP_QUIET_NS
 * is given up on. */
static void await_end(struct kx_remote *r)
{
	pthread_mutex_lock(&r->lock);
	while (r->state == RUNNING) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait(&r->cond, &r->lock, &ts);
		if (r->state == RUNNING && kx_mono_ns() - r->last_msg_ns > STOP_QUIET_NS) {
			r->state = FAILED;
			snprintf(r->why, sizeof(r->why),
			         "kxprof daemon: nothing received for 300 s after the stop");
			shutdown(r->fd, SHUT_RDWR);
		}
	}
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	r->thread_running = 0;
}

/* The kept stream into the store; ci from its header and trailer. */
static int read_memory(struct kx_remote *r, struct kx_capinfo *ci, char *err, size_t len)
{
	struct kx_kxp_read_result res;

	keep_piece(r, NULL, 0);
	if (!r->mem.len) {
		snprintf(err, len, "kxprof daemon: no record data arrived");
		return -1;
	}
	if (r->mem.oom) {
		snprintf(err, len, "out of memory for the record stream");
		return -1;
	}
	return kx_kxp_read_mem(r->mem.p, r->mem.len, r->store, ci, &res, err, len);
}

int kx_remote_stop(struct kx_remote *r, struct kx_capinfo *ci, char *err, size_t len)
{
	int e = kx_dw_send(r->fd, KX_DW_STOP, NULL, 0), ok;

	pthread_mutex_lock(&r->lock);
	r->stopping = 1;
	if (e && r->state == RUNNING) {
		r->state = FAILED;
		snprintf(r->why, sizeof(r->why), "kxprof daemon: cannot send the stop: %s",
		         strerror(e));
		shutdown(r->fd, SHUT_RDWR);
	}
	pthread_mutex_unlock(&r->lock);
	if (r->thread_running)
		await_end(r);
	ok = r->state == ENDED;
	*ci = r->end.ci;
	if (r->store) {
		char rerr[512] = "";
		int rc = read_memory(r, ci, rerr, sizeof(rerr));

		if (ok && rc) {
			snprintf(err, len, "%s", rerr);
			return -1;
		}
	} else if (r->of_open && r->write_error) {
		r->of_open = 0;
		kx_outfile_abort(&r->of);
		snprintf(err, len, "cannot write %s: %s", r->record_path, strerror(r->write_error));
		return -1;
	} else if (r->of_open && (ok || r->data_bytes)) {
		/* A session that ended badly keeps what arrived, readable without
		 * its trailer, as a crashed local capture's file is. */
		char cerr[512];

		r->of_open = 0;
		if (kx_outfile_commit(&r->of, cerr, sizeof(cerr))) {
			snprintf(err, len, "%s", cerr);
			return -1;
		}
	}
	if (!ok)
		snprintf(err, len, "%s%s", r->why,
		         r->record_path && r->data_bytes
		                 ? "; the record file holds what arrived, without its trailer"
		                 : "");
	return ok ? 0 : -1;
}

int kx_remote_write_error(const struct kx_remote *r)
{
	return r->write_error != 0;
}

void kx_remote_close(struct kx_remote *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		shutdown(r->fd, SHUT_RDWR);
	if (r->thread_running)
		pthread_join(r->thread, NULL);
	if (r->fd >= 0)
		close(r->fd);
	if (r->of_open)
		kx_outfile_abort(&r->of);
	free(r->mem.p);
	free(r->pending.p);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}

void kx_remote_forget(struct kx_remote *r)
{
	if (r && r->fd >= 0)
		close(r->fd);
}
