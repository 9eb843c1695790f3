/*
 * The DRM usage sampler: /proc walks feeding model/drmusage.h (see
 * capture/drmfdinfo.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "capture/drmfdinfo.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define FDINFO_MAX 16384 /* bytes of one fdinfo read; amdgpu's is about 1 KiB */

struct kx_drm_sampler {
	char root[256]; /* "/proc" or $KXPROF_PROC_ROOT */
	int all;
	struct kx_device devs[KX_MAX_DEVICES];
	int ndevs;
	uint32_t *pids; /* the processes to walk (not all) */
	size_t npids, pids_cap;
	struct kx_hmap pidset; /* pid -> index in pids */
	struct kx_drm_tracker *t;
	struct kx_drm_sampler_stats st;
	char buf[FDINFO_MAX];
};

int kx_drm_devices_traced(const struct kx_device *d, int n)
{
	for (int i = 0; i < n; i++) {
		unsigned int ma = KX_MAJOR(d[i].dev);

		if (d[i].fkind == KX_FK_CHR && (ma == KX_DRM_MAJOR || ma == KX_ACCEL_MAJOR))
			return 1;
	}
	return 0;
}

struct kx_drm_sampler *kx_drm_sampler_new(const struct kx_device *devs, int ndevs, int all)
{
	struct kx_drm_sampler *s = calloc(1, sizeof(*s));
	const char *root = getenv("KXPROF_PROC_ROOT");

	if (!s)
		return NULL;
	if (!(s->t = kx_drm_tracker_new(0))) {
		free(s);
		return NULL;
	}
	snprintf(s->root, sizeof(s->root), "%s", root && *root ? root : "/proc");
	s->all = all;
	for (int i = 0; i < ndevs && i < KX_MAX_DEVICES; i++) {
		unsigned int ma = KX_MAJOR(devs[i].dev);

		if (devs[i].fkind == KX_FK_CHR && (ma == KX_DRM_MAJOR || ma == KX_ACCEL_MAJOR))
			s->devs[s->ndevs++] = devs[i];
	}
	return s;
}

void kx_drm_sampler_free(struct kx_drm_sampler *s)
{
	if (!s)
		return;
	kx_drm_tracker_free(s->t);
	kx_hmap_free(&s->pidset);
	free(s->pids);
	free(s);
}

void kx_drm_sampler_add_pid(struct kx_drm_sampler *s, uint32_t pid)
{
	int isnew = 0;

	if (s->all || kx_hmap_get(&s->pidset, pid))
		return;
	if (kx_grow((void **)&s->pids, &s->pids_cap, s->npids, sizeof(*s->pids)) ||
	    !kx_hmap_put(&s->pidset, pid, (uint32_t)s->npids, &isnew))
		return; /* out of memory: the process is not sampled */
	s->pids[s->npids++] = pid;
}

void kx_drm_sampler_add_pid_map(struct kx_drm_sampler *s, int map_fd)
{
	uint32_t key, next;
	int first = 1;

	if (map_fd < 0 || s->all)
		return;
	while (bpf_map_get_next_key(map_fd, first ? NULL : &key, &next) == 0) {
		kx_drm_sampler_add_pid(s, next);
		key = next;
		first = 0;
	}
}

/* 1 when rdev is a DRM or accel node: one of the traced ones when the
 * capture traces any, else any. */
static int drm_rdev(const struct kx_drm_sampler *s, dev_t rdev)
{
	unsigned int ma = major(rdev), mi = minor(rdev);

	if (ma != KX_DRM_MAJOR && ma != KX_ACCEL_MAJOR)
		return 0;
	if (!s->ndevs)
		return 1;
	for (int i = 0; i < s->ndevs; i++)
		if (KX_MAJOR(s->devs[i].dev) == ma &&
		    (s->devs[i].any_minor || KX_MINOR(s->devs[i].dev) == mi))
			return 1;
	return 0;
}

/* 1 when fd name of the process directory pdir is a DRM client. Only links
 * into /dev are looked at further (a stat of the fd); a link to a DRM path
 * that does not exist counts (the fixture tree of KXPROF_PROC_ROOT). */
static int is_drm_fd(struct kx_drm_sampler *s, int fddir, const char *name)
{
	char link[128];
	ssize_t n = readlinkat(fddir, name, link, sizeof(link) - 1);
	struct stat st;

	s->st.fds++;
	if (n <= 5)
		return 0;
	link[n] = 0;
	if (strncmp(link, "/dev/", 5) != 0)
		return 0; /* sockets, pipes, files, anon inodes */
	if (fstatat(fddir, name, &st, 0) == 0)
		return S_ISCHR(st.st_mode) && drm_rdev(s, st.st_rdev);
	return !strncmp(link, "/dev/dri/", 9) || !strncmp(link, "/dev/accel/", 11);
}

/* Reads dir/name (relative to dirfd) into s->buf; its length, or -1. */
static ssize_t read_small(struct kx_drm_sampler *s, int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;

	if (fd < 0)
		return -1;
	while (got < (ssize_t)sizeof(s->buf) - 1 &&
	       (n = read(fd, s->buf + got, sizeof(s->buf) - 1 - (size_t)got)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			return -1;
		}
		got += n;
	}
	close(fd);
	s->buf[got] = 0;
	return got;
}

/* The process's name from pdir/comm ("" when unreadable). */
static void read_comm(struct kx_drm_sampler *s, int pdir, char comm[16])
{
	ssize_t n = read_small(s, pdir, "comm");

	comm[0] = 0;
	if (n <= 0)
		return;
	if (s->buf[n - 1] == '\n')
		s->buf[--n] = 0;
	if (n > 15)
		n = 15;
	memcpy(comm, s->buf, (size_t)n);
	comm[n] = 0;
}

/* One DRM fd: its fdinfo to the tracker. */
static void take_fd(struct kx_drm_sampler *s, int pdir, uint32_t pid, const char *fdname,
                    const char *comm)
{
	struct kx_drm_fdinfo f;
	char path[300];
	ssize_t n;

	snprintf(path, sizeof(path), "fdinfo/%s", fdname);
	s->st.fdinfo_reads++;
	if ((n = read_small(s, pdir, path)) < 0) {
		s->st.unreadable++; /* closed since the readlink, or not ours to read */
		return;
	}
	if (kx_drm_fdinfo_parse(s->buf, (size_t)n, &f)) {
		s->st.not_drm++;
		return;
	}
	kx_drm_tracker_add(s->t, pid, comm, atoi(fdname), &f);
}

/* Walks one process. 0, or -1 when it is gone. */
static int walk_pid(struct kx_drm_sampler *s, uint32_t pid)
{
	char path[300], comm[16] = "";
	int pdir, fddir, have_comm = 0;
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%u", s->root, pid);
	if ((pdir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		return -1;
	s->st.procs++;
	fddir = openat(pdir, "fd", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fddir < 0 || !(d = fdopendir(fddir))) {
		if (fddir >= 0)
			close(fddir);
		else if (errno != ENOENT)
			s->st.unreadable++; /* another user's process without the privilege */
		close(pdir);
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || !is_drm_fd(s, fddir, de->d_name))
			continue;
		if (!have_comm) {
			read_comm(s, pdir, comm);
			have_comm = 1;
		}
		take_fd(s, pdir, pid, de->d_name, comm);
	}
	closedir(d);
	close(pdir);
	return 0;
}

static int pid_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Every numeric entry of the root, lowest pid first (a client shared by
 * several processes is shown under the lowest). */
static void walk_all(struct kx_drm_sampler *s)
{
	DIR *d = opendir(s->root);
	struct dirent *de;

	if (!d) {
		s->st.unreadable++;
		return;
	}
	s->npids = 0;
	while ((de = readdir(d)) != NULL) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);

		if (de->d_name[0] < '1' || de->d_name[0] > '9' || *end || pid > UINT32_MAX)
			continue;
		if (kx_grow((void **)&s->pids, &s->pids_cap, s->npids, sizeof(*s->pids)))
			break; /* out of memory: the rest is not walked this pass */
		s->pids[s->npids++] = (uint32_t)pid;
	}
	closedir(d);
	qsort(s->pids, s->npids, sizeof(*s->pids), pid_cmp);
	for (size_t i = 0; i < s->npids; i++)
		walk_pid(s, s->pids[i]);
}

/* The given pids, lowest first (as walk_all); those gone are forgotten. */
static void walk_given(struct kx_drm_sampler *s)
{
	size_t keep = 0;

	qsort(s->pids, s->npids, sizeof(*s->pids), pid_cmp);
	for (size_t i = 0; i < s->npids; i++)
		*kx_hmap_get(&s->pidset, s->pids[i]) = (uint32_t)i;

	for (size_t i = 0; i < s->npids; i++) {
		if (walk_pid(s, s->pids[i]) < 0) {
			kx_hmap_del(&s->pidset, s->pids[i]);
			continue;
		}
		if (keep != i) {
			s->pids[keep] = s->pids[i];
			*kx_hmap_get(&s->pidset, s->pids[keep]) = (uint32_t)keep;
		}
		keep++;
	}
	s->npids = keep;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const struct kx_drm_ev *kx_drm_sampler_pass(struct kx_drm_sampler *s, uint64_t now, size_t *n)
{
	uint64_t t0 = mono_ns();
	const struct kx_drm_ev *rows;

	s->st.passes++;
	kx_drm_tracker_begin(s->t, now);
	if (s->all)
		walk_all(s);
	else
		walk_given(s);
	rows = kx_drm_tracker_end(s->t, n);
	s->st.pass_ns += mono_ns() - t0;
	return rows;
}

const struct kx_drm_sampler_stats *kx_drm_sampler_stats(const struct kx_drm_sampler *s)
{
	return &s->st;
}

const struct kx_drm_tracker_stats *kx_drm_sampler_tracker_stats(const struct kx_drm_sampler *s)
{
	return kx_drm_tracker_stats(s->t);
}
