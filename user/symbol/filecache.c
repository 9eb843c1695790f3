/*
 * Symbol files (see filecache.h). Files are opened through the process
 * (/proc/PID/map_files, then /proc/PID/root), so deleted files and other
 * mount namespaces still resolve while the process lives; as_process, each
 * only when the process's own credentials could read it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/filecache.h"
#include "util/grow.h"
#include "util/procstatus.h"

struct entry {
	struct kx_symfile f;
	struct kx_elfsyms *owned; /* freed with the entry; NULL when shared or none */
};

struct kx_filecache {
	struct entry **e; /* pointers: entries never move */
	size_t n, cap;
	int as_process; /* kx_filecache_as_process */
	struct kx_filecache_stats st;
};

struct kx_filecache *kx_filecache_new(void)
{
	return calloc(1, sizeof(struct kx_filecache));
}

static struct entry *by_inode(struct kx_filecache *fc, uint64_t dev, uint64_t inode)
{
	for (size_t i = 0; i < fc->n; i++)
		if (fc->e[i]->f.inode == inode && fc->e[i]->f.dev == dev)
			return fc->e[i];
	return NULL;
}

static struct entry *by_build_id(struct kx_filecache *fc, const char *hex)
{
	for (size_t i = 0; *hex && i < fc->n; i++)
		if (fc->e[i]->f.syms && strcmp(fc->e[i]->f.build_id, hex) == 0)
			return fc->e[i];
	return NULL;
}

static struct entry *add(struct kx_filecache *fc, const struct kx_procmap *m)
{
	struct entry *e;

	if (kx_grow((void **)&fc->e, &fc->cap, fc->n, sizeof(*fc->e)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->f.path = strdup(m->path);
	if (!e->f.path) {
		free(e);
		return NULL;
	}
	e->f.dev = m->dev;
	e->f.inode = m->inode;
	fc->e[fc->n++] = e;
	return e;
}

/* The mapped file, through the process first; -1 with why set. */
static int open_mapped(pid_t pid, const struct kx_procmap *m, char *why, size_t len)
{
	char p[4200];
	struct stat st;
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", (int)pid,
	         (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return fd;
	snprintf(p, sizeof(p), "/proc/%d/root%s", (int)pid, m->path);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		fd = open(m->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(why, len, "cannot open %s: %s", m->path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) != 0 || st.st_ino != m->inode || st.st_dev != m->dev) {
		snprintf(why, len, "%s was replaced since the process mapped it", m->path);
		close(fd);
		return -1;
	}
	return fd;
}

void kx_filecache_as_process(struct kx_filecache *fc)
{
	fc->as_process = 1;
}

/* The permission bit that decides whether credentials c may read a file of st. */
static mode_t read_bit(const struct kx_procstatus *c, const struct stat *st)
{
	if ((long)st->st_uid == c->uid[3])
		return S_IRUSR;
	if ((long)st->st_gid == c->gid[3])
		return S_IRGRP;
	for (int i = 0; i < c->ngroups; i++)
		if (st->st_gid == c->groups[i])
			return S_IRGRP;
	return S_IROTH;
}

/* Whether process pid could read the file open at fd (mode bits); why when not. */
static int process_may_read(pid_t pid, int fd, const char *path, char *why, size_t len)
{
	struct kx_procstatus c;
	struct stat st;

	if (kx_procstatus_read((uint32_t)pid, &c) != 0 || fstat(fd, &st) != 0) {
		snprintf(why, len, "cannot tell whether process %d may read %s", (int)pid, path);
		return 0;
	}
	if (c.uid[3] == 0 || (st.st_mode & read_bit(&c, &st)))
		return 1;
	snprintf(why, len, "%s: not readable by its process's user (uid %ld): not read", path,
	         c.uid[3]);
	return 0;
}

/* Reads the symbols, or shares those of a file with the same build id. */
static void load(struct kx_filecache *fc, struct entry *e, const uint8_t *id, int idlen,
                 struct kx_elfsyms *(*read)(const void *arg, char *err, size_t len),
                 const void *arg)
{
	struct entry *same;

	if (idlen > 0)
		kx_build_id_hex(id, idlen, e->f.build_id);
	same = by_build_id(fc, e->f.build_id);
	if (same) {
		e->f.syms = same->f.syms;
		fc->st.shared_build_id++;
		return;
	}
	e->owned = read(arg, e->f.why, sizeof(e->f.why));
	e->f.syms = e->owned;
	if (e->owned)
		fc->st.files_read++;
	else
		fc->st.failed++;
}

static struct kx_elfsyms *read_fd(const void *arg, char *err, size_t len)
{
	return kx_elfsyms_read_fd(*(const int *)arg, err, len);
}

struct image {
	const void *p;
	size_t size;
};

static struct kx_elfsyms *read_image(const void *arg, char *err, size_t len)
{
	const struct image *im = arg;

	return kx_elfsyms_read_mem(im->p, im->size, err, len);
}

static void load_file(struct kx_filecache *fc, struct entry *e, pid_t pid,
                      const struct kx_procmap *m)
{
	uint8_t id[KX_BUILD_ID_MAX];
	int fd = open_mapped(pid, m, e->f.why, sizeof(e->f.why)), n;

	if (fd >= 0 && fc->as_process &&
	    !process_may_read(pid, fd, m->path, e->f.why, sizeof(e->f.why))) {
		close(fd);
		fd = -1;
	}
	if (fd < 0) {
		fc->st.failed++;
		return;
	}
	n = kx_elf_build_id_fd(fd, id);
	load(fc, e, id, n, read_fd, &fd);
	close(fd);
}

/* The vdso image copied out of the process's memory, or NULL with why set. */
static void *copy_vdso(pid_t pid, const struct kx_procmap *m, char *why, size_t len)
{
	size_t size = m->end - m->start;
	char p[64];
	void *img = malloc(size);
	int fd;

	snprintf(p, sizeof(p), "/proc/%d/mem", (int)pid);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (!img || fd < 0 || pread(fd, img, size, (off_t)m->start) != (ssize_t)size) {
		snprintf(why, len, "cannot copy the vdso out of process %d: %s", (int)pid,
		         img ? strerror(errno) : "out of memory");
		free(img);
		img = NULL;
	}
	if (fd >= 0)
		close(fd);
	return img;
}

/* The vdso entry for an image with build id hex, or for an image that could
 * not be copied (copied == 0); NULL when there is none yet. */
static struct entry *vdso_entry(struct kx_filecache *fc, const char *hex, int copied)
{
	for (size_t i = 0; i < fc->n; i++) {
		const struct kx_symfile *f = &fc->e[i]->f;

		if (strcmp(f->path, "[vdso]") != 0)
			continue;
		if (copied ? f->syms && *hex && strcmp(f->build_id, hex) == 0 : !f->syms)
			return fc->e[i];
	}
	return NULL;
}

/* One entry per distinct vdso image (by build id), and one for all that
 * could not be copied. */
static const struct kx_symfile *get_vdso(struct kx_filecache *fc, pid_t pid,
                                         const struct kx_procmap *m)
{
	char why[sizeof(((struct kx_symfile *)0)->why)] = "", hex[2 * KX_BUILD_ID_MAX + 1] = "";
	struct image im = {.size = m->end - m->start};
	uint8_t id[KX_BUILD_ID_MAX];
	struct entry *e;
	int n = 0;

	im.p = copy_vdso(pid, m, why, sizeof(why));
	if (im.p)
		n = kx_elf_build_id_mem(im.p, im.size, id);
	if (n > 0)
		kx_build_id_hex(id, n, hex);
	e = vdso_entry(fc, hex, im.p != NULL);
	if (!e && (e = add(fc, m)) != NULL) {
		snprintf(e->f.why, sizeof(e->f.why), "%s", why);
		if (im.p)
			load(fc, e, id, n, read_image, &im);
		else
			fc->st.failed++;
	}
	free((void *)im.p);
	return e ? &e->f : NULL;
}

const struct kx_symfile *kx_filecache_get(struct kx_filecache *fc, pid_t pid,
                                          const struct kx_procmap *m)
{
	struct entry *e;

	if (strcmp(m->path, "[vdso]") == 0)
		return get_vdso(fc, pid, m);
	e = m->inode ? by_inode(fc, m->dev, m->inode) : NULL;
	if (e)
		return &e->f;
	e = add(fc, m);
	if (!e)
		return NULL;
	if (m->inode)
		load_file(fc, e, pid, m);
	else
		snprintf(e->f.why, sizeof(e->f.why), "anonymous code (no file): %s",
		         *m->path ? m->path : "JIT or unnamed mapping");
	return &e->f;
}

void kx_filecache_stats(const struct kx_filecache *fc, struct kx_filecache_stats *st)
{
	*st = fc->st;
}

void kx_filecache_free(struct kx_filecache *fc)
{
	if (!fc)
		return;
	for (size_t i = 0; i < fc->n; i++) {
		kx_elfsyms_free(fc->e[i]->owned);
		free(fc->e[i]->f.path);
		free(fc->e[i]);
	}
	free(fc->e);
	free(fc);
}
