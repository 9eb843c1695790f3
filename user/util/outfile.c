/* Safe outputs: temporary file, rename when complete, NAME.old, refusals, run folders. */
#include "util/outfile.h"
#include "util/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSLOTS 8   /* live temporary files at once (convert holds three) */
#define NDIRS  32  /* live new directories at once */
#define NTRIES 100 /* unique names tried before giving up */

/* Stop signals, and SIGPIPE for a reader of standard output that went away. */
static const int caught[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};

static char live_path[NSLOTS][PATH_MAX];
static volatile sig_atomic_t live[NSLOTS];
/* The process that made each entry: a child forked before its exec (a
 * workload, util/bgrelease) holds a copy of the registry and, until it resets
 * them, these handlers; a signal there must not remove its parent's files. */
static pid_t live_pid[NSLOTS];
/* New directories: 0 when free, else the order of creation (removed in reverse). */
static char dir_path[NDIRS][PATH_MAX];
static volatile sig_atomic_t dir_seq[NDIRS];
static pid_t dir_pid[NDIRS];
static sig_atomic_t dir_next = 1;
static unsigned int name_seq;

static void caught_set(sigset_t *set)
{
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		sigaddset(set, caught[i]);
}

void kx_outfile_hold_signals(sigset_t *old)
{
	sigset_t set;

	caught_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void kx_outfile_release_signals(const sigset_t *old)
{
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

static int slot_add(const char *tmp)
{
	for (int i = 0; i < NSLOTS; i++) {
		if (live[i])
			continue;
		snprintf(live_path[i], sizeof(live_path[i]), "%s", tmp);
		live_pid[i] = getpid();
		live[i] = 1;
		return i;
	}
	return -1;
}

static void slot_drop(struct kx_outfile *o)
{
	if (o->slot >= 0)
		live[o->slot] = 0;
	o->slot = -1;
}

static int dir_add(const char *path)
{
	for (int i = 0; i < NDIRS; i++) {
		if (dir_seq[i])
			continue;
		snprintf(dir_path[i], sizeof(dir_path[i]), "%s", path);
		dir_pid[i] = getpid();
		dir_seq[i] = dir_next++;
		return i;
	}
	return -1;
}

/* The live directory created last, or -1. */
static int dir_last(void)
{
	int best = -1;

	for (int i = 0; i < NDIRS; i++)
		if (dir_seq[i] && (best < 0 || dir_seq[i] > dir_seq[best]))
			best = i;
	return best;
}

void kx_outfile_unlink_live(void)
{
	pid_t me = getpid();
	int d;

	for (int i = 0; i < NSLOTS; i++)
		if (live[i]) {
			if (live_pid[i] == me)
				unlink(live_path[i]);
			live[i] = 0;
		}
	/* Deepest first: a parent is empty once its new children are gone. */
	while ((d = dir_last()) >= 0) {
		if (dir_pid[d] == me)
			rmdir(dir_path[d]);
		dir_seq[d] = 0;
	}
}

static void on_fatal(int sig)
{
	kx_outfile_unlink_live();
	signal(sig, SIG_DFL);
	raise(sig);
}

int kx_outfile_catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	/* One handler at a time: a second signal waits until the first is done. */
	caught_set(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		if (sigaction(caught[i], &sa, NULL))
			return -1;
	return 0;
}

static const char *kind_of(mode_t m)
{
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISCHR(m) || S_ISBLK(m))
		return "a device";
	if (S_ISFIFO(m))
		return "a fifo";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

static int check_target(const char *path, unsigned int flags, char *err, size_t len)
{
	struct stat st;

	if (!path[0]) {
		snprintf(err, len, "empty output path: give a file name");
		return -1;
	}
	if ((flags & KX_OUT_STDOUT) && !strcmp(path, "-"))
		return 0;
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		snprintf(err, len, "%s is %s, not a regular file: give the path of a file to write",
		         path, kind_of(st.st_mode));
		return -1;
	}
	return 0;
}

int kx_outfile_check(const char *path, unsigned int flags, const char *const *inputs, int n,
                     char *err, size_t len)
{
	struct stat out, in;

	if (check_target(path, flags, err, len))
		return -1;
	if (stat(path, &out))
		return 0; /* a new file cannot be an input */
	for (int i = 0; i < n; i++) {
		if (!inputs[i] || stat(inputs[i], &in))
			continue;
		if (in.st_dev == out.st_dev && in.st_ino == out.st_ino) {
			snprintf(err, len,
			         "%s is the same file as the input %s: write the output to another "
			         "path",
			         path, inputs[i]);
			return -1;
		}
	}
	return 0;
}

/* The final path: an existing symbolic link is followed, so that the file it
 * names is replaced, not the link. */
static int final_path(struct kx_outfile *o, const char *path, char *err, size_t len)
{
	struct stat st;
	char *real;

	if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (real = realpath(path, NULL))) {
		int over = snprintf(o->path, sizeof(o->path), "%s", real) >= (int)sizeof(o->path);

		free(real);
		if (!over)
			return 0;
	} else if ((size_t)snprintf(o->path, sizeof(o->path), "%s", path) < sizeof(o->path)) {
		return 0;
	}
	snprintf(err, len, "cannot create %s: path too long", path);
	return -1;
}

/* A name no one else uses, next to path, created O_EXCL. fd or -1 (errno). */
static int create_unique(const char *path, const char *extra, char *out, size_t outlen)
{
	for (int t = 0; t < NTRIES; t++) {
		int fd;

		if ((size_t)snprintf(out, outlen, "%s%s.%ld-%u.tmp", path, extra, (long)getpid(),
		                     name_seq++) >= outlen) {
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

int kx_outfile_open(struct kx_outfile *o, const char *path, unsigned int flags, char *err,
                    size_t len)
{
	sigset_t old;
	int e;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->slot = -1;
	o->flags = flags;
	if (check_target(path, flags, err, len))
		return -1;
	if ((flags & KX_OUT_STDOUT) && !strcmp(path, "-")) {
		o->to_stdout = 1;
		snprintf(o->path, sizeof(o->path), "-");
		o->fd = dup(STDOUT_FILENO);
		if (o->fd < 0) {
			snprintf(err, len, "cannot write to standard output: %s", strerror(errno));
			return -1;
		}
		return 0;
	}
	if (final_path(o, path, err, len))
		return -1;
	/* Created and registered with no signal in between: never left behind. */
	kx_outfile_hold_signals(&old);
	o->fd = create_unique(o->path, "", o->tmp, sizeof(o->tmp));
	e = errno;
	if (o->fd >= 0)
		o->slot = slot_add(o->tmp);
	kx_outfile_release_signals(&old);
	if (o->fd < 0) {
		snprintf(err, len, "cannot create %s: %s", path, strerror(e));
		o->tmp[0] = '\0';
		return -1;
	}
	return 0;
}

void kx_outfile_abort(struct kx_outfile *o)
{
	sigset_t old;

	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	kx_outfile_hold_signals(&old);
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
	slot_drop(o);
	kx_outfile_release_signals(&old);
}

/* NAME.old: a hard link to the existing file (NAME never goes missing), or a
 * rename where the file system has no hard links. 0 or -1 (errno). */
static int keep_old(const char *path)
{
	char old[PATH_MAX], tmp[PATH_MAX];
	struct stat st;
	int fd;

	if (stat(path, &st) || !S_ISREG(st.st_mode))
		return 0;
	if ((size_t)snprintf(old, sizeof(old), "%s.old", path) >= sizeof(old)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* Reserve a unique name, then replace it with the link. */
	fd = create_unique(path, ".old", tmp, sizeof(tmp));
	if (fd < 0)
		return -1;
	close(fd);
	unlink(tmp);
	if (link(path, tmp) == 0) {
		if (rename(tmp, old) == 0)
			return 0;
		unlink(tmp);
		return -1;
	}
	return rename(path, old);
}

static int fail_commit(struct kx_outfile *o, int e, const char *what, char *err, size_t len)
{
	snprintf(err, len, "cannot %s %s: %s%s", what, o->path, strerror(e),
	         e == ENOSPC ? " (free some space or write elsewhere)" : "");
	kx_outfile_abort(o);
	return -1;
}

int kx_outfile_commit(struct kx_outfile *o, char *err, size_t len)
{
	int fd = o->fd;
	sigset_t old;

	o->fd = -1;
	if (o->to_stdout) {
		if (close(fd))
			return fail_commit(o, errno, "write", err, len);
		return 0;
	}
	if (fsync(fd)) {
		int e = errno;

		close(fd);
		return fail_commit(o, e, "write", err, len);
	}
	if (close(fd))
		return fail_commit(o, errno, "write", err, len);
	if ((o->flags & KX_OUT_KEEP_OLD) && keep_old(o->path))
		return fail_commit(o, errno, "keep the previous file as .old of", err, len);
	/* Renamed and unregistered with no signal in between. */
	kx_outfile_hold_signals(&old);
	if (rename(o->tmp, o->path)) {
		int e = errno;

		kx_outfile_release_signals(&old);
		return fail_commit(o, e, "rename the finished file to", err, len);
	}
	o->tmp[0] = '\0';
	slot_drop(o);
	kx_outfile_release_signals(&old);
	return 0;
}

int kx_outfile_write(const char *path, unsigned int flags, const void *p, size_t n, char *err,
                     size_t len)
{
	struct kx_outfile o;
	int e;

	if (kx_outfile_open(&o, path, flags, err, len))
		return -1;
	e = kx_write_all(o.fd, p, n);
	if (e) {
		snprintf(err, len, "cannot write %s: %s", path, strerror(e));
		kx_outfile_abort(&o);
		return -1;
	}
	return kx_outfile_commit(&o, err, len);
}

/* ---- run folders ---- */

int kx_outdir_check(const char *path, char *err, size_t len)
{
	struct stat st;

	if (!path[0]) {
		snprintf(err, len, "empty directory path: give a directory name");
		return -1;
	}
	if (stat(path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		snprintf(err, len, "%s is %s, not a directory: give a directory to write into",
		         path, S_ISREG(st.st_mode) ? "a file" : kind_of(st.st_mode));
		return -1;
	}
	return 0;
}

/* mkdir, and on success the directory joins d and the registry (signals held
 * in between). 0 made, 1 it existed, -1 other errors (errno). */
static int make_one(struct kx_outdir *d, const char *path)
{
	sigset_t old;
	int rc = 0, e = 0;

	if (d->n == KX_OUTDIR_MAX) {
		errno = EMLINK;
		return -1;
	}
	kx_outfile_hold_signals(&old);
	if (mkdir(path, 0755)) {
		e = errno;
		rc = e == EEXIST ? 1 : -1;
	} else if ((d->slot[d->n] = dir_add(path)) < 0) {
		rmdir(path);
		rc = -1;
		e = EMFILE;
	} else {
		d->n++;
	}
	kx_outfile_release_signals(&old);
	errno = e;
	return rc;
}

/* Every missing directory of path, outermost first. 0 or -1 (errno). */
static int make_parents(struct kx_outdir *d, const char *path)
{
	char tmp[PATH_MAX];
	size_t n = strlen(path);
	struct stat st;

	if (n >= sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1;; p++) {
		int end = !*p;

		if (*p != '/' && !end)
			continue;
		*p = '\0';
		if (make_one(d, tmp) < 0)
			return -1;
		if (stat(tmp, &st) || !S_ISDIR(st.st_mode)) {
			errno = ENOTDIR;
			return -1;
		}
		if (end)
			return 0;
		*p = '/';
	}
}

int kx_outdir_make(struct kx_outdir *d, const char *parent, const char *base, char *err, size_t len)
{
	memset(d, 0, sizeof(*d));
	if (kx_outdir_check(parent, err, len))
		return -1;
	if (make_parents(d, parent)) {
		snprintf(err, len, "cannot create %s: %s", parent, strerror(errno));
		kx_outdir_abort(d);
		return -1;
	}
	for (int t = 1; t <= NTRIES; t++) {
		int rc;

		if ((size_t)(t == 1 ? snprintf(d->path, sizeof(d->path), "%s/%s", parent, base)
		                    : snprintf(d->path, sizeof(d->path), "%s/%s-%d", parent, base,
		                               t)) >= sizeof(d->path)) {
			snprintf(err, len, "cannot create a directory in %s: path too long",
			         parent);
			break;
		}
		rc = make_one(d, d->path);
		if (rc == 0)
			return 0;
		if (rc < 0) {
			snprintf(err, len, "cannot create %s: %s", d->path, strerror(errno));
			break;
		}
		if (t == NTRIES)
			snprintf(err, len, "cannot create %s/%s: %d runs of that name exist",
			         parent, base, NTRIES);
	}
	kx_outdir_abort(d);
	d->path[0] = '\0';
	return -1;
}

void kx_outdir_keep(struct kx_outdir *d)
{
	sigset_t old;

	kx_outfile_hold_signals(&old);
	for (int i = 0; i < d->n; i++)
		dir_seq[d->slot[i]] = 0;
	d->n = 0;
	kx_outfile_release_signals(&old);
}

void kx_outdir_abort(struct kx_outdir *d)
{
	sigset_t old;

	kx_outfile_hold_signals(&old);
	while (d->n > 0) {
		int s = d->slot[--d->n];

		rmdir(dir_path[s]);
		dir_seq[s] = 0;
	}
	kx_outfile_release_signals(&old);
}
