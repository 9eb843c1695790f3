/*
 * Perf maps (see perfmap.h): reading and parsing /tmp/perf-PID.map.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "symbol/perfmap.h"
#include "util/grow.h"

void kx_perfmap_init(struct kx_perfmap *pm, pid_t pid, uint32_t uid)
{
	memset(pm, 0, sizeof(*pm));
	snprintf(pm->path, sizeof(pm->path), "/tmp/perf-%d.map", (int)pid);
	pm->owner = uid;
	pm->size = -1;
	pm->mtime_ns = -1;
}

static void clear(struct kx_perfmap *pm)
{
	pm->n = 0;
	pm->names.len = 0;
}

/* One "START SIZE NAME" line into pm; lines that are not are skipped. 0, or -1 out of memory. */
static int parse_line(struct kx_perfmap *pm, char *line)
{
	struct kx_perfmap_sym *s;
	char *p = line, *end;
	uint64_t start, size;
	size_t nlen;

	errno = 0;
	start = strtoull(p, &end, 16);
	if (end == p || *end != ' ' || errno)
		return 0;
	p = end + 1;
	size = strtoull(p, &end, 16);
	if (end == p || *end != ' ' || errno || !size)
		return 0;
	p = end + 1;
	nlen = strcspn(p, "\n");
	if (!nlen)
		return 0;
	if (kx_grow((void **)&pm->sym, &pm->cap, pm->n, sizeof(*pm->sym)))
		return -1;
	s = &pm->sym[pm->n];
	s->start = start;
	s->size = size;
	s->name = kx_arena_addn(&pm->names, p, nlen);
	if (s->name == KX_ARENA_NONE)
		return -1;
	pm->n++;
	return 0;
}

/* By start, then by line: the last line of a start wins (code replaced). */
static int by_start(const void *a, const void *b)
{
	const struct kx_perfmap_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Keeps one entry per start: the last line's. */
static void dedup(struct kx_perfmap *pm)
{
	size_t w = 0;

	for (size_t i = 0; i < pm->n; i++) {
		if (w && pm->sym[w - 1].start == pm->sym[i].start)
			w--;
		pm->sym[w++] = pm->sym[i];
	}
	pm->n = w;
}

static int parse_file(struct kx_perfmap *pm, FILE *f)
{
	char line[1024];

	clear(pm);
	while (fgets(line, sizeof(line), f))
		if (parse_line(pm, line))
			return -1;
	/* A map read while its process is still writing it may be empty. */
	if (pm->n)
		qsort(pm->sym, pm->n, sizeof(*pm->sym), by_start);
	dedup(pm);
	return 0;
}

int kx_perfmap_load(struct kx_perfmap *pm, char *err, size_t len)
{
	int fd = open(pm->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	int64_t mtime;
	FILE *f;
	int rc;

	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, len, "cannot open %s: %s", pm->path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_uid != pm->owner && st.st_uid != 0)) {
		snprintf(err, len, "%s is not a regular file of the process's user: not read",
		         pm->path);
		close(fd);
		return -1;
	}
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (st.st_size == pm->size && mtime == pm->mtime_ns) {
		close(fd);
		return 0;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		snprintf(err, len, "out of memory");
		return -1;
	}
	rc = parse_file(pm, f);
	fclose(f);
	if (rc) {
		snprintf(err, len, "out of memory reading %s", pm->path);
		return -1;
	}
	pm->size = st.st_size;
	pm->mtime_ns = mtime;
	return 1;
}

const char *kx_perfmap_find(const struct kx_perfmap *pm, uint64_t addr, uint64_t *off)
{
	long i = kx_addr_floor(pm->sym, pm->n, sizeof(*pm->sym), addr);

	if (i < 0 || addr - pm->sym[i].start >= pm->sym[i].size)
		return NULL;
	*off = addr - pm->sym[i].start;
	return kx_arena_str(&pm->names, pm->sym[i].name);
}

void kx_perfmap_free(struct kx_perfmap *pm)
{
	free(pm->sym);
	kx_arena_free(&pm->names);
	pm->sym = NULL;
	pm->n = pm->cap = 0;
}
