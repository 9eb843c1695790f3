/* Releasing BPF links and perf events in a child process (see bgrelease.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/bgrelease.h"

#define KEEP_MAX 4096 /* descriptors handed over, at most (the rest close here, as before) */

/* A BPF link whose release takes a probe off: on a perf event (a uprobe's, a
 * kprobe's: the kernel names its type "perf") or a multi-probe link. Its
 * fdinfo says which. */
static int probe_link(const char *name)
{
	char path[300], buf[512];
	int fd, n;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = (int)read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return strstr(buf, "link_type:\tperf\n") || strstr(buf, "link_type:\tperf_event\n") ||
	       strstr(buf, "link_type:\tuprobe_multi\n") ||
	       strstr(buf, "link_type:\tkprobe_multi\n");
}

/* A descriptor whose last close may wait for grace periods: a perf event,
 * or a BPF link on one (tracing links, fentry and tp_btf, close fast). */
static int slow_kind(int dir, const char *name)
{
	char target[64];
	ssize_t n = readlinkat(dir, name, target, sizeof(target) - 1);

	if (n <= 0)
		return 0;
	target[n] = 0;
	return !strcmp(target, "anon_inode:[perf_event]") ||
	       (!strcmp(target, "anon_inode:bpf_link") && probe_link(name));
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* The slow descriptors, sorted: how many (at most max), -1 without /proc. */
static int slow_fds(int *fds, int max)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)) && n < max) {
		char *end;
		long fd = strtol(de->d_name, &end, 10);

		if (!*end && fd >= 0 && fd != dirfd(d) && slow_kind(dirfd(d), de->d_name))
			fds[n++] = (int)fd;
	}
	closedir(d);
	qsort(fds, (size_t)n, sizeof(*fds), cmp_int);
	return n;
}

/* close_range(2) through syscall(2): the wrapper came with glibc 2.34, and the
 * TensorFlow plugin, which links this library, must load on glibc 2.31. */
static void close_fds(unsigned int first, unsigned int last)
{
	syscall(SYS_close_range, first, last, 0U);
}

/* In the child: no allocation, no stdio (another thread may have held
 * their locks at the fork). Keeps fds[0..n) and the pipe's read end rfd,
 * closes the rest; once the parent is gone (the pipe's end of file), the
 * references kept are the last: closes them. */
static void child(const int *fds, int n, int rfd)
{
	unsigned int from = 0;
	char c;

	setsid(); /* out of the terminal's process group: its signals are not ours */
	for (int i = 0; i <= n; i++) {
		unsigned int keep = i < n ? (unsigned int)fds[i] : ~0U;

		if ((unsigned int)rfd >= from && (unsigned int)rfd < keep) {
			if ((unsigned int)rfd > from)
				close_fds(from, (unsigned int)rfd - 1);
			from = (unsigned int)rfd + 1;
		}
		if (keep > from)
			close_fds(from, keep - 1);
		if (i < n)
			from = keep + 1;
	}
	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	for (int i = 0; i < n; i++)
		close(fds[i]);
	_exit(0);
}

int kx_bgrelease(void)
{
	static int fds[KEEP_MAX];
	int n = slow_fds(fds, KEEP_MAX), p[2];
	pid_t pid;

	if (n <= 0)
		return n;
	/* The write end stays open in this process until it exits. */
	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid == 0)
		child(fds, n, p[0]);
	close(p[0]);
	return 0;
}
