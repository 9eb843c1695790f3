/* Thread pointers of a process's threads: see threadptr.h. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture/threadptr.h"
#include "kxprof.h"
#include "threadptr.skel.h"

static int listed(const struct kx_threadptr *list, size_t n, uint32_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (list[i].tid == tid)
			return 1;
	return 0;
}

/* Adds one record unless its tid is listed or its pointer unknown: 1 added, 0 not, -1 OOM. */
static int add(const struct kx_threadptr_rec *r, struct kx_threadptr **list, size_t *n, size_t *cap)
{
	if (!r->tp || listed(*list, *n, r->tid))
		return 0;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 64;
		struct kx_threadptr *l = realloc(*list, c * sizeof(*l));

		if (!l)
			return -1;
		*list = l;
		*cap = c;
	}
	(*list)[(*n)++] = (struct kx_threadptr){.tid = r->tid, .tp = r->tp};
	return 1;
}

int kx_threadptr_collect(pid_t tgid, struct kx_threadptr **list, size_t *n, size_t *cap, char *err,
                         size_t errlen)
{
	struct threadptr_bpf *skel = threadptr_bpf__open();
	struct kx_threadptr_rec r;
	struct bpf_link *link = NULL;
	size_t n0 = *n;
	int fd = -1, added = 0, rc = -1;
	ssize_t got;

	if (!skel) {
		snprintf(err, errlen, "cannot open the thread pointer iterator: %s",
		         strerror(errno));
		return -1;
	}
	skel->rodata->targ_tgid = (uint32_t)tgid;
	if (threadptr_bpf__load(skel) != 0) {
		snprintf(err, errlen, "cannot load the thread pointer iterator: %s",
		         strerror(errno));
		goto out;
	}
	link = bpf_program__attach_iter(skel->progs.kx_thread_ptrs, NULL);
	fd = link ? bpf_iter_create(bpf_link__fd(link)) : -1;
	if (fd < 0) {
		snprintf(err, errlen, "cannot run the thread pointer iterator: %s",
		         strerror(errno));
		goto out;
	}
	while ((got = read(fd, &r, sizeof(r))) == (ssize_t)sizeof(r)) {
		int a = add(&r, list, n, cap);

		if (a < 0) {
			*n = n0;
			snprintf(err, errlen, "out of memory listing thread pointers");
			goto out;
		}
		added += a;
	}
	if (got != 0) {
		*n = n0;
		snprintf(err, errlen, "reading the thread pointer iterator: %s",
		         got < 0 ? strerror(errno) : "short record");
		goto out;
	}
	rc = added;
out:
	if (fd >= 0)
		close(fd);
	bpf_link__destroy(link);
	threadptr_bpf__destroy(skel);
	return rc;
}
