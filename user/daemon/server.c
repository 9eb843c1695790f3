/* The daemon's listener and session threads (contract: server.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "capture/remote.h"
#include "daemon/server.h"
#include "util/safepath.h"

#define SD_LISTEN_FDS_START 3

struct uid_count {
	uid_t uid;
	int n;
};

struct kx_daemon {
	struct kx_daemon_opts o;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char name[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* its last component */
	int dirfd;   /* O_PATH fd of its checked directory, -1: none */
	int fd;      /* listening socket */
	int bound;   /* we created the socket file (removed at stop) */
	int wake[2]; /* written at stop: the accept thread leaves */
	pthread_t thread;
	atomic_int shutdown;
	pthread_mutex_t lock; /* below */
	pthread_cond_t idle;  /* signalled when a session ends */
	int sessions;
	struct uid_count *per_uid; /* max_sessions entries, n > 0 in use */
	uint64_t next_id;
};

/* What a session thread needs. */
struct job {
	struct kx_daemon *d;
	int fd;
	struct kx_peer peer;
	uint64_t id;
};

static void logf_(struct kx_daemon *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void logf_(struct kx_daemon *d, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (!d->o.conn.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	d->o.conn.log(d->o.conn.log_ctx, line);
}

/* ---- binding ---- */

/* The address of name inside the directory open at dirfd: through
 * /proc/self/fd, so that bind and connect reach the directory checked, not
 * whatever its path names by then. 0, or -1 when it does not fit. */
static int addr_at(int dirfd, const char *name, struct sockaddr_un *a)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	n = snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	return n < 0 || (size_t)n >= sizeof(a->sun_path) ? -1 : 0;
}

/* A live daemon answers at a: connecting succeeds. */
static int someone_listens(const struct sockaddr_un *a)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

	if (fd < 0)
		return 0;
	ok = connect(fd, (const struct sockaddr *)a, sizeof(*a)) == 0;
	close(fd);
	return ok;
}

/* Makes room for the socket: a stale socket goes, anything else is refused. */
static int clear_path(struct kx_daemon *d, const struct sockaddr_un *a, char *err, size_t len)
{
	struct stat st;

	if (fstatat(d->dirfd, d->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(err, len, "%s exists and is not a socket: choose another --socket path",
		         d->path);
		return -1;
	}
	if (someone_listens(a)) {
		snprintf(err, len, "another daemon already listens on %s", d->path);
		return -1;
	}
	unlinkat(d->dirfd, d->name, 0);
	return 0;
}

/* The socket's directory, checked component by component (util/safepath.h):
 * a directory another user owns or can write, or a symbolic link on the way,
 * would let that user replace the socket or redirect it. */
static int open_dir(struct kx_daemon *d, char *err, size_t len)
{
	char dir[PATH_MAX], why[PATH_MAX + 256];
	const char *slash = strrchr(d->path, '/');

	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == d->path)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - d->path), d->path);
	snprintf(d->name, sizeof(d->name), "%s", slash ? slash + 1 : d->path);
	if (!d->name[0] || !strcmp(d->name, ".") || !strcmp(d->name, "..")) {
		snprintf(err, len, "--socket %s names no file: give a path such as %s", d->path,
		         KX_DAEMON_SOCKET_DEFAULT);
		return -1;
	}
	d->dirfd = kx_safe_dir_open(dir, 0755, why, sizeof(why));
	if (d->dirfd < 0) {
		snprintf(err, len, "refusing --socket %s: %s", d->path, why);
		return -1;
	}
	return 0;
}

static int bind_path(struct kx_daemon *d, char *err, size_t len)
{
	struct sockaddr_un a;

	if (strlen(d->o.path) >= sizeof(a.sun_path)) {
		snprintf(err, len, "socket path too long (at most %zu bytes): %s",
		         sizeof(a.sun_path) - 1, d->o.path);
		return -1;
	}
	if (open_dir(d, err, len))
		return -1;
	if (addr_at(d->dirfd, d->name, &a)) {
		snprintf(err, len, "socket file name too long: %s: choose a shorter one", d->name);
		return -1;
	}
	if (clear_path(d, &a, err, len))
		return -1;
	d->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (d->fd < 0 || bind(d->fd, (struct sockaddr *)&a, sizeof(a)) != 0) {
		snprintf(err, len, "cannot bind %s: %s", d->path, strerror(errno));
		return -1;
	}
	d->bound = 1;
	/* Until listen, a connect is refused whatever the file's mode. The mode
	 * and group are set through the checked directory, never through a link
	 * someone put at the name. */
	if (kx_safe_chmod_at(d->dirfd, d->name, d->o.mode, d->o.gid) != 0) {
		snprintf(err, len, "cannot set the mode or group of %s: %s", d->path,
		         strerror(errno));
		return -1;
	}
	if (listen(d->fd, 64) != 0) {
		snprintf(err, len, "cannot listen on %s: %s", d->path, strerror(errno));
		return -1;
	}
	return 0;
}

/* ---- limits ---- */

static struct uid_count *uid_slot(struct kx_daemon *d, uid_t uid)
{
	struct uid_count *free_slot = NULL;

	for (int i = 0; i < d->o.max_sessions; i++) {
		if (d->per_uid[i].n && d->per_uid[i].uid == uid)
			return &d->per_uid[i];
		if (!d->per_uid[i].n && !free_slot)
			free_slot = &d->per_uid[i];
	}
	if (free_slot)
		free_slot->uid = uid;
	return free_slot;
}

/* Takes a session slot for uid: 0, or -1 with the reason. */
static int admit(struct kx_daemon *d, uid_t uid, uint64_t *id, char *why, size_t len)
{
	struct uid_count *u;
	int rc = -1;

	pthread_mutex_lock(&d->lock);
	u = uid_slot(d, uid);
	if (d->sessions >= d->o.max_sessions || !u)
		snprintf(why, len, "the daemon serves its limit of %d sessions: try again later",
		         d->o.max_sessions);
	else if (u->n >= d->o.max_per_uid)
		snprintf(why, len, "uid %u has its limit of %d sessions open: end one first",
		         (unsigned int)uid, d->o.max_per_uid);
	else {
		u->n++;
		d->sessions++;
		*id = ++d->next_id;
		rc = 0;
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}

static void release(struct kx_daemon *d, uid_t uid)
{
	struct uid_count *u;

	pthread_mutex_lock(&d->lock);
	u = uid_slot(d, uid);
	if (u && u->n)
		u->n--;
	d->sessions--;
	pthread_cond_broadcast(&d->idle);
	pthread_mutex_unlock(&d->lock);
}

/* ---- sessions ---- */

static void *session_thread(void *arg)
{
	struct job *j = arg;
	struct kx_daemon *d = j->d;
	uid_t uid = j->peer.uid;

	kx_conn_serve(j->fd, &j->peer, j->id, &d->o.conn);
	free(j);
	release(d, uid);
	return NULL;
}

/* Refuses a connection with one line; a client that does not read it is not waited for. */
static void turn_away(int fd, const char *why)
{
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	kx_dw_send_error(fd, "%s", why);
	close(fd);
}

static void serve_one(struct kx_daemon *d, int fd)
{
	pthread_attr_t attr;
	struct job *j = calloc(1, sizeof(*j));
	char why[256];
	pthread_t t;
	int e;

	if (!j || kx_peer_get(fd, &j->peer, why, sizeof(why))) {
		turn_away(fd, j ? why : "the daemon is out of memory");
		free(j);
		return;
	}
	if (admit(d, j->peer.uid, &j->id, why, sizeof(why))) {
		logf_(d, "refused a connection of uid %u (pid %d): %s", (unsigned int)j->peer.uid,
		      (int)j->peer.pid, why);
		turn_away(fd, why);
		kx_peer_release(&j->peer);
		free(j);
		return;
	}
	j->d = d;
	j->fd = fd;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	e = pthread_create(&t, &attr, session_thread, j);
	pthread_attr_destroy(&attr);
	if (e) {
		release(d, j->peer.uid);
		kx_peer_release(&j->peer);
		turn_away(fd, "the daemon cannot start a thread for the session: try again later");
		free(j);
	}
}

static void *accept_loop(void *arg)
{
	struct kx_daemon *d = arg;

	for (;;) {
		struct pollfd p[2] = {{.fd = d->fd, .events = POLLIN},
		                      {.fd = d->wake[0], .events = POLLIN}};
		int fd;

		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4(d->fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0) {
			serve_one(d, fd);
		} else if (errno == EMFILE || errno == ENFILE || errno == ENOMEM) {
			logf_(d, "cannot accept a connection: %s (waiting a moment)",
			      strerror(errno));
			usleep(100 * 1000);
		}
	}
	return NULL;
}

/* ---- lifecycle ---- */

static void daemon_free(struct kx_daemon *d)
{
	if (d->fd >= 0)
		close(d->fd);
	if (d->bound)
		unlinkat(d->dirfd, d->name, 0);
	if (d->dirfd >= 0)
		close(d->dirfd);
	for (int i = 0; i < 2; i++)
		if (d->wake[i] >= 0)
			close(d->wake[i]);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->idle);
	free(d->per_uid);
	free(d);
}

struct kx_daemon *kx_daemon_start(const struct kx_daemon_opts *o, char *err, size_t len)
{
	struct kx_daemon *d = calloc(1, sizeof(*d));
	int e;

	if (!d || !(d->per_uid = calloc((size_t)o->max_sessions, sizeof(*d->per_uid)))) {
		snprintf(err, len, "out of memory");
		free(d);
		return NULL;
	}
	d->o = *o;
	d->o.conn.shutdown = &d->shutdown;
	d->fd = d->dirfd = d->wake[0] = d->wake[1] = -1;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->idle, NULL);
	snprintf(d->path, sizeof(d->path), "%s", o->path);
	if (o->listen_fd >= 0)
		d->fd = o->listen_fd;
	else if (bind_path(d, err, len))
		goto fail;
	if (pipe2(d->wake, O_CLOEXEC) != 0) {
		snprintf(err, len, "cannot create a pipe: %s", strerror(errno));
		goto fail;
	}
	if ((e = pthread_create(&d->thread, NULL, accept_loop, d)) != 0) {
		snprintf(err, len, "cannot start the accepting thread: %s", strerror(e));
		goto fail;
	}
	return d;
fail:
	daemon_free(d);
	return NULL;
}

int kx_daemon_sessions(struct kx_daemon *d)
{
	int n;

	pthread_mutex_lock(&d->lock);
	n = d->sessions;
	pthread_mutex_unlock(&d->lock);
	return n;
}

void kx_daemon_stop(struct kx_daemon *d)
{
	if (!d)
		return;
	atomic_store(&d->shutdown, 1);
	if (write(d->wake[1], "x", 1) != 1)
		logf_(d, "cannot wake the accepting thread: %s", strerror(errno));
	pthread_join(d->thread, NULL);
	/* No new clients from here; the sessions see shutdown within a tick. */
	close(d->fd);
	d->fd = -1;
	pthread_mutex_lock(&d->lock);
	while (d->sessions > 0)
		pthread_cond_wait(&d->idle, &d->lock);
	pthread_mutex_unlock(&d->lock);
	daemon_free(d);
}

/* fd is a listening Unix stream socket. */
static int usable_listener(int fd, char *err, size_t len)
{
	struct sockaddr_un a;
	socklen_t sl = sizeof(a);
	int type = 0, acc = 0;
	socklen_t il = sizeof(int);

	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &il) != 0 || type != SOCK_STREAM ||
	    getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &acc, &il) != 0 || !acc ||
	    getsockname(fd, (struct sockaddr *)&a, &sl) != 0 || a.sun_family != AF_UNIX) {
		snprintf(err, len,
		         "systemd passed fd %d, which is not a listening Unix stream socket "
		         "(the socket unit needs ListenStream=PATH)",
		         fd);
		return -1;
	}
	return 0;
}

int kx_daemon_inherited(int *fd, char *err, size_t len)
{
	const char *pid = getenv("LISTEN_PID"), *n = getenv("LISTEN_FDS");
	long p = pid ? strtol(pid, NULL, 10) : 0, k = n ? strtol(n, NULL, 10) : 0;

	if (!pid || !n || p != (long)getpid())
		return 0;
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (k != 1) {
		snprintf(err, len, "systemd passed %ld sockets, expected one (one ListenStream=)",
		         k);
		return -1;
	}
	if (usable_listener(SD_LISTEN_FDS_START, err, len))
		return -1;
	fcntl(SD_LISTEN_FDS_START, F_SETFD, FD_CLOEXEC);
	*fd = SD_LISTEN_FDS_START;
	return 1;
}
