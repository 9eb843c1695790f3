/* Safe outputs: temporary file, rename when complete, NAME.old, refusals. */
#include "util/outfile.h"
#include "util/fdio.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NSLOTS 8   /* live temporary files at once (convert holds two) */
#define NTRIES 100 /* unique names tried before giving up */

static char live_path[NSLOTS][PATH_MAX];
static volatile sig_atomic_t live[NSLOTS];
static unsigned int name_seq;

static int slot_add(const char *tmp)
{
	for (int i = 0; i < NSLOTS; i++) {
		if (live[i])
			continue;
		snprintf(live_path[i], sizeof(live_path[i]), "%s", tmp);
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

void kx_outfile_unlink_live(void)
{
	for (int i = 0; i < NSLOTS; i++)
		if (live[i]) {
			unlink(live_path[i]);
			live[i] = 0;
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
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (sigaction(sigs[i], &sa, NULL))
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
	o->fd = create_unique(o->path, "", o->tmp, sizeof(o->tmp));
	if (o->fd < 0) {
		snprintf(err, len, "cannot create %s: %s", path, strerror(errno));
		o->tmp[0] = '\0';
		return -1;
	}
	o->slot = slot_add(o->tmp);
	return 0;
}

void kx_outfile_abort(struct kx_outfile *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp[0])
		unlink(o->tmp);
	o->tmp[0] = '\0';
	slot_drop(o);
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
	if (rename(o->tmp, o->path))
		return fail_commit(o, errno, "rename the finished file to", err, len);
	o->tmp[0] = '\0';
	slot_drop(o);
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
