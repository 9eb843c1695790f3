/* Executable mappings of a process (see procmaps.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "util/arena.h"
#include "symbol/procmaps.h"
#include "util/grow.h"

int kx_procmap_parse(const char *line, struct kx_procmap *m)
{
	unsigned long long start, end, off, ino;
	unsigned int maj, min;
	char perms[8];
	int pos = 0;
	size_t plen;

	if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &off, &maj, &min,
	           &ino, &pos) < 7 ||
	    pos == 0)
		return -1;
	if (strlen(perms) < 3 || perms[2] != 'x')
		return 0;
	plen = strcspn(line + pos, "\n");
	m->path = strndup(line + pos, plen);
	if (!m->path)
		return -1;
	m->start = start;
	m->end = end;
	m->offset = off;
	m->dev = ino ? makedev(maj, min) : 0;
	m->inode = ino;
	return 1;
}

static int by_start(const void *a, const void *b)
{
	const struct kx_procmap *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int kx_procmaps_read(pid_t pid, struct kx_procmap **out, size_t *n, char *err, size_t len)
{
	struct kx_procmap *m = NULL, one;
	size_t cap = 0, used = 0;
	char path[64], line[4096 + 128];
	int rc = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "r");
	if (!f) {
		snprintf(err, len, "cannot read %s: %s", path,
		         errno == ENOENT ? "the process is gone" : strerror(errno));
		return -1;
	}
	while (rc >= 0 && fgets(line, sizeof(line), f)) {
		rc = kx_procmap_parse(line, &one);
		if (rc == 1 && kx_grow((void **)&m, &cap, used, sizeof(*m)) != 0) {
			free(one.path);
			rc = -1;
		} else if (rc == 1) {
			m[used++] = one;
		}
	}
	if (rc >= 0 && ferror(f)) {
		snprintf(err, len, "cannot read %s: %s", path, strerror(errno));
		rc = -2;
	} else if (rc < 0) {
		snprintf(err, len, "cannot parse %s (malformed line or out of memory)", path);
	} else if (used == 0) {
		/* Every process that runs user code maps some: a zombie's or a
		 * kernel thread's maps are empty. */
		snprintf(err, len, "%s lists no code: the process has exited", path);
		rc = -1;
	}
	fclose(f);
	if (rc < 0) {
		kx_procmaps_free(m, used);
		return -1;
	}
	if (used > 1)
		qsort(m, used, sizeof(*m), by_start);
	*out = m;
	*n = used;
	return 0;
}

const struct kx_procmap *kx_procmaps_find(const struct kx_procmap *m, size_t n, uint64_t addr)
{
	long i = kx_addr_floor(m, n, sizeof(*m), addr);

	return i >= 0 && addr < m[i].end ? &m[i] : NULL;
}

void kx_procmaps_free(struct kx_procmap *m, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(m[i].path);
	free(m);
}
