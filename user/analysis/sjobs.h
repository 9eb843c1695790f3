/*
 * What the device timelines (analysis/jobs.h) need of a record file read as
 * a stream (the streamed report, analysis/sreport.h), kept in the side
 * store so that its analysis gives exactly the jobs, links, devices,
 * anomalies and memory rows of the whole file: the job records, and of the
 * ioctls only those the timelines look at:
 *   - the ones device memory accounting counts (the caller says which),
 *   - every KVM_RUN (a KVM job is one; runs without an exit are counted),
 *   - every wait ioctl of a GPU driver (a job's waiter is looked for among them),
 *   - for each job record of a task, the last ioctl that task entered at or
 *     before it (the submit link looks there): the task's last ioctl
 *     record when the job record comes, or the next one if it entered
 *     before (the call the job record came from, still running),
 *   - the earliest and latest ioctls (the capture's span, for a file cut
 *     short of its trailer).
 * Of the job records, a KVM exit that does not end its KVM_RUN (an
 * intermediate exit: the timelines skip it) is kept only when it is the
 * first KVM exit, the earliest or the latest job record.
 * Memory grows with the jobs and those ioctls, not with the other events.
 *
 * Reasons to read the file into memory instead (why): a job record of a
 * task whose last ioctl record entered after it (the one the link wants
 * came earlier and was not kept), and KVM_RUN or wait ioctls passed over
 * before the first job record (they are kept only once the file has jobs).
 */
#ifndef KX_SJOBS_H
#define KX_SJOBS_H

#include <stddef.h>
#include <stdint.h>

#include "model/event.h"
#include "model/store.h"
#include "util/hashmap.h"
#include "util/keymap.h"
#include "util/tidtab.h"

struct kx_sjob_thread; /* sjobs.c */

struct kx_sjobs {
	const char *why;          /* NULL: the kept records give the timelines exactly */
	struct kx_store *side;    /* borrowed: the kept records go there */
	int have_jobs;            /* a job record came */
	int passed;               /* a KVM_RUN or wait ioctl went by before the first job record */
	struct kx_keymap names;   /* wait ioctl names (analysis/jobpair.h's cache) */
	struct kx_tidtab threads; /* each task's last ioctl (struct kx_sjob_thread) */
	struct kx_ioctl first, last; /* the earliest start, the latest end (any: set) */
	int any;
	struct kx_job jfirst, jlast; /* the earliest and latest job records */
	uint64_t jfirst_seq, jlast_seq;
	int jfirst_kept, jlast_kept;
	int kvm_seen;                   /* a KVM exit was kept */
	uint64_t jobs, kept_jobs, kept; /* job records read, kept; ioctls kept */
};

void kx_sjobs_init(struct kx_sjobs *s, struct kx_store *side);
/* An ioctl with its argument bytes (NULL: none); mem: one memory accounting
 * counts. Kept when the timelines need it. 0, or -1 when out of memory. */
int kx_sjobs_ioctl(struct kx_sjobs *s, const struct kx_ioctl *e, const uint8_t *arg, int mem);
/* A job record: kept, with the ioctl its task's link may want. 0, or -1 when out of memory. */
int kx_sjobs_job(struct kx_sjobs *s, const struct kx_job *j);
/* Once every record is in: the span's ioctls kept. 0, or -1 when out of memory. */
int kx_sjobs_finish(struct kx_sjobs *s);
void kx_sjobs_free(struct kx_sjobs *s);

#endif /* KX_SJOBS_H */
