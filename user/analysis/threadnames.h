/*
 * The names a thread had over a capture, from its task records (model/store.h:
 * the first traced call names a thread, then its execs and renames): for the
 * threads that had more than one, the name in force at a time, so that an
 * event is labelled with the name its thread had when it happened. Threads
 * with one name cost nothing; memory is a record per name change.
 */
#ifndef KX_THREADNAMES_H
#define KX_THREADNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "model/store.h"
#include "util/hashmap.h"

struct kx_name_run {
	uint64_t since; /* ns, the task record that gave it */
	uint32_t tid;
	uint32_t task;          /* that record's index in the store (for the order) */
	char comm[KX_COMM_LEN]; /* the name */
};

/* Owns copies of the names: the store may go first. */
struct kx_thread_names {
	struct kx_name_run *runs; /* by (tid, since): only threads with several names */
	size_t n;
	struct kx_hmap first; /* tid -> index of its first run */
};

/* The name history of s's threads. 0, or -1 when out of memory. */
int kx_thread_names_build(struct kx_thread_names *tn, const struct kx_store *s);
/* The name tid had at ts (its first when ts is earlier), or NULL when tid
 * had one name all along (or none). */
const char *kx_thread_name_at(const struct kx_thread_names *tn, uint32_t tid, uint64_t ts);
void kx_thread_names_free(struct kx_thread_names *tn);

#endif /* KX_THREADNAMES_H */
