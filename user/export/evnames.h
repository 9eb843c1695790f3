/*
 * Names the timeline exporters (XSpace, Chrome trace) give their events,
 * the same in both: a device job's name, and the name a thread had when an
 * event of it began where that is not the name its line or track shows.
 */
#ifndef KX_EVNAMES_H
#define KX_EVNAMES_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "analysis/jobs.h"
#include "analysis/threadnames.h"
#include "model/store.h"

/* Job k of an->jobs' name: its submitting ioctl's ("DRM_IOCTL_AMDGPU_CS"),
 * else "KVM_RUN", "block read|write|other" or "job"; buf may hold it. */
const char *kx_job_name(const struct kx_analysis *an, size_t k, char *buf, size_t len);

/* The name thread tid had at ts (ns) when its track is named otherwise (the
 * event began before an exec or a rename); NULL when not. At most
 * KX_COMM_LEN bytes, maybe without a NUL. */
const char *kx_thread_name_then(const struct kx_thread_names *tn, const struct kx_store *s,
                                uint32_t tid, uint64_t ts);

#endif /* KX_EVNAMES_H */
