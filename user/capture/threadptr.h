/*
 * Thread pointers of a live process's threads, read in the kernel by a BPF
 * task iterator (bpf/threadptr.bpf.c): on x86_64 with glibc, a thread's
 * pthread_t. For frameworks that name their threads by pthread_t
 * (TensorFlow's host trace lines), so kxprof can use the same names.
 * Needs the privilege to load BPF.
 */
#ifndef KX_CAPTURE_THREADPTR_H
#define KX_CAPTURE_THREADPTR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct kx_threadptr {
	uint32_t tid;
	uint64_t tp; /* the thread pointer; never 0 in a list */
};

/*
 * Adds the live threads of process tgid to *list (*n entries, *cap room;
 * realloc'ed), each tid once: a tid already listed keeps its entry, so
 * calls at start and stop of a session cover threads that ended between.
 * Returns the number added, or -1 with err (no privilege, no iterator
 * support, out of memory; the list is left as it was).
 */
int kx_threadptr_collect(pid_t tgid, struct kx_threadptr **list, size_t *n, size_t *cap, char *err,
                         size_t errlen);

#endif
