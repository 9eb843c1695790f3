/*
 * Bounded event store: holds the ioctl, task, job and annotation events of
 * a capture in chunked arrays plus an arena for argument copies and the
 * interned annotation names. When the memory limit is
 * reached it stops storing and counts what it refused; it never grows past
 * the limit. Single writer (the consumer thread); readers after capture.
 */
#ifndef KX_STORE_H
#define KX_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "model/annot.h"
#include "model/event.h"

struct kx_store;

/* limit_bytes: total memory the store may allocate (0 = default 512 MiB). */
struct kx_store *kx_store_new(size_t limit_bytes);
void kx_store_free(struct kx_store *s);
/* Drops every event, keeps the limit, resets counters. */
void kx_store_reset(struct kx_store *s);

/* Appends a copy. arg points at arg_in_len + arg_out_len bytes (may be NULL
 * when both are 0); e->arg_off is ignored and set by the store.
 * Returns 0, or -1 when the limit refused it (counted in not_stored). */
int kx_store_add_ioctl(struct kx_store *s, const struct kx_ioctl *e, const uint8_t *arg);
/* Appends n events that have no argument bytes (their lengths and arg_off
 * are set so); returns how many were stored, the rest counted refused. */
size_t kx_store_add_ioctls(struct kx_store *s, const struct kx_ioctl *e, size_t n);
/*
 * Bulk loading: memory for ioctl slots [count, upto) can be set up ahead
 * (allocated and charged, not used yet), so that another thread can fault
 * it in while this one still fills earlier slots. kx_store_ioctl_reserve
 * returns how far it got (the limit may stop it); kx_store_ioctl_ranges
 * gives the memory of reserved slots [from, to) as at most max ranges and
 * returns how many; kx_store_prefault (any thread, store untouched) faults
 * ranges in without changing their bytes.
 */
struct kx_store_range {
	void *p;
	size_t len;
};
size_t kx_store_ioctl_reserve(struct kx_store *s, size_t upto);
size_t kx_store_ioctl_ranges(const struct kx_store *s, size_t from, size_t to,
                             struct kx_store_range *r, size_t max);
void kx_store_prefault(const struct kx_store_range *r, size_t n);
int kx_store_add_task(struct kx_store *s, const struct kx_task *t);
int kx_store_add_job(struct kx_store *s, const struct kx_job *j);

size_t kx_store_ioctl_count(const struct kx_store *s);
size_t kx_store_task_count(const struct kx_store *s);
/* i < kx_store_ioctl_count; stable pointers until reset/free. */
const struct kx_ioctl *kx_store_ioctl(const struct kx_store *s, size_t i);
const struct kx_task *kx_store_task(const struct kx_store *s, size_t i);
/* Ioctl i and, in *n, how many stored ioctls follow it contiguously (i included). */
const struct kx_ioctl *kx_store_ioctl_run(const struct kx_store *s, size_t i, size_t *n);
size_t kx_store_job_count(const struct kx_store *s);
const struct kx_job *kx_store_job(const struct kx_store *s, size_t i);
/* Argument bytes of e (in then out), or NULL when it has none. */
const uint8_t *kx_store_arg(const struct kx_store *s, const struct kx_ioctl *e);

uint64_t kx_store_not_stored(const struct kx_store *s); /* events refused by the limit */
size_t kx_store_bytes(const struct kx_store *s);        /* memory currently allocated */
size_t kx_store_limit(const struct kx_store *s);

struct kx_sample;
struct kx_samples;
/* The CPU samples of the capture with their stacks and symbols
 * (model/perfdata.h), charged to the same limit; NULL only when out of
 * memory. Samples refused are counted by the samples table. */
struct kx_samples *kx_store_samples(const struct kx_store *s);
int kx_store_add_sample(struct kx_store *s, const struct kx_sample *smp);
/* Makes t (another store's, which must outlive this one) the samples this
 * store gives out, read-only: its own stay empty, and adding one is refused.
 * A store holding one time window of a capture shows the capture's samples. */
void kx_store_borrow_samples(struct kx_store *s, struct kx_samples *t);

struct kx_ctr_ev; /* model/counter.h */

/* The counter records of traced calls (model/counter.h), in the store's own
 * samples table even when another's samples are borrowed: a window's calls
 * keep their own. kx_store_add_ctr: 0, or -1 when the budget refused it
 * (counted by the table). kx_store_ctrs: NULL only when out of memory. */
int kx_store_add_ctr(struct kx_store *s, const struct kx_ctr_ev *e);
const struct kx_samples *kx_store_ctrs(const struct kx_store *s);

struct kx_drm_ev; /* model/drmusage.h */

/* DRM usage rows (record --drm-usage), in arrival order, charged to the
 * limit. kx_store_add_drm: 0, or -1 when refused (counted as not stored). */
int kx_store_add_drm(struct kx_store *s, const struct kx_drm_ev *e);
const struct kx_drm_ev *kx_store_drm(const struct kx_store *s, size_t *n);

/* Latest comm known for tid (from task events), or NULL. */
const char *kx_store_comm(const struct kx_store *s, uint32_t tid);
/* Latest command line recorded for process pid (a task event's cmd), or
 * NULL when the capture has none (older files, unreadable /proc). */
const char *kx_store_cmd(const struct kx_store *s, uint32_t pid);

/*
 * Annotation events (model/annot.h), in arrival order. name and cat are
 * interned (at most KX_ANN_NAME_MAX - 1 bytes kept; NULL or "": id 0) and
 * a's name and cat fields ignored; events without names (POP, END) ignore
 * both. 0, or -1 when the limit refused it (counted in not_stored).
 */
int kx_store_add_ann(struct kx_store *s, const struct kx_ann *a, const char *name, const char *cat);
/* The id of an annotation string, interned as kx_store_add_ann interns it,
 * without an event (a stream that keeps the ranges, not their events). 0
 * for NULL or ""; UINT32_MAX when the limit refused it. */
uint32_t kx_store_ann_intern(struct kx_store *s, const char *str);
size_t kx_store_ann_count(const struct kx_store *s);
const struct kx_ann *kx_store_ann(const struct kx_store *s, size_t i);
/* The string of an id of an annotation event's name or cat; "" for 0 or unknown ids. */
const char *kx_store_ann_str(const struct kx_store *s, uint32_t id);
/* Strings interned: ids run from 1 to this. */
size_t kx_store_ann_strings(const struct kx_store *s);

#endif /* KX_STORE_H */
