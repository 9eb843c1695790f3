/* Trusted directories walked without following links (contract: safepath.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/safepath.h"

int kx_safe_dir_trusted(const struct stat *st, uid_t euid)
{
	if (!S_ISDIR(st->st_mode))
		return 0;
	if (st->st_uid != 0 && st->st_uid != euid)
		return 0;
	return !(st->st_mode & (S_IWGRP | S_IWOTH)) || (st->st_mode & S_ISVTX);
}

/* Checks the directory open at fd, named path (for messages). */
static int check_dir(int fd, const char *path, char *err, size_t len)
{
	struct stat st;

	if (fstat(fd, &st) != 0) {
		snprintf(err, len, "cannot stat %s: %s", path, strerror(errno));
		return -1;
	}
	if (kx_safe_dir_trusted(&st, geteuid()))
		return 0;
	if (st.st_uid != 0 && st.st_uid != geteuid())
		snprintf(err, len,
		         "%s is owned by uid %u, not by root: another user could replace the "
		         "socket; choose a directory owned by root",
		         path, (unsigned int)st.st_uid);
	else
		snprintf(err, len,
		         "%s is writable by group or others (mode %04o) without the sticky bit: "
		         "another user could replace the socket; choose a directory only root "
		         "can write",
		         path, (unsigned int)(st.st_mode & 07777));
	return -1;
}

/* Opens component name under parent (path: the walk so far, for messages). */
static int open_component(int parent, const char *name, const char *path, mode_t mkdir_mode,
                          char *err, size_t len)
{
	const int flags = O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	struct stat st;
	int fd = openat(parent, name, flags);

	if (fd < 0 && errno == ENOENT && mkdir_mode) {
		if (mkdirat(parent, name, mkdir_mode) != 0 && errno != EEXIST) {
			snprintf(err, len, "cannot create the directory %s: %s", path,
			         strerror(errno));
			return -1;
		}
		fd = openat(parent, name, flags);
	}
	if (fd >= 0)
		return fd;
	if (fstatat(parent, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode))
		snprintf(err, len,
		         "%s is a symbolic link: links are not followed here (another user "
		         "could redirect them); give the real path",
		         path);
	else
		snprintf(err, len, "cannot open the directory %s: %s", path, strerror(errno));
	return -1;
}

/* dir as an absolute path into abs. */
static int absolute(const char *dir, char *abs, size_t abslen, char *err, size_t len)
{
	char cwd[PATH_MAX];
	int n;

	if (dir[0] == '/')
		n = snprintf(abs, abslen, "%s", dir);
	else if (!getcwd(cwd, sizeof(cwd))) {
		snprintf(err, len, "cannot find the working directory: %s", strerror(errno));
		return -1;
	} else
		n = snprintf(abs, abslen, "%s/%s", cwd, dir);
	if (n < 0 || (size_t)n >= abslen) {
		snprintf(err, len, "path too long: %s", dir);
		return -1;
	}
	return 0;
}

int kx_safe_dir_open(const char *dir, mode_t mkdir_mode, char *err, size_t len)
{
	char abs[PATH_MAX], walked[PATH_MAX] = "", *save = NULL, *c, *next;
	int fd;

	if (absolute(dir, abs, sizeof(abs), err, len))
		return -1;
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || check_dir(fd, "/", err, len)) {
		if (fd < 0)
			snprintf(err, len, "cannot open /: %s", strerror(errno));
		else
			close(fd);
		return -1;
	}
	for (c = strtok_r(abs, "/", &save); c; c = next) {
		int sub;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(c, "."))
			continue;
		if (!strcmp(c, "..")) {
			snprintf(err, len, "%s: '..' is not allowed in this path; give it without",
			         dir);
			close(fd);
			return -1;
		}
		strcat(walked, "/");
		strcat(walked, c);
		sub = open_component(fd, c, walked, next ? 0 : mkdir_mode, err, len);
		close(fd);
		if (sub < 0)
			return -1;
		fd = sub;
		if (check_dir(fd, walked, err, len)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

int kx_safe_chmod_at(int dirfd, const char *name, mode_t mode, long gid)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	if (S_ISLNK(st.st_mode)) {
		errno = ELOOP;
		return -1;
	}
	if (fchmodat(dirfd, name, mode, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	if (gid >= 0 && fchownat(dirfd, name, (uid_t)-1, (gid_t)gid, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	return 0;
}
