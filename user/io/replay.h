/*
 * Replay of recorded event streams: loads a fixture (a text file describing
 * a capture's facts and events) into a store and capture info, so the
 * analysis and every exporter run on sources that cannot fire on this
 * machine (GPU schedulers, dma_fence, i915, xe, msm, NVIDIA). The CLI reads
 * fixtures wherever it reads record files (by the .jsonl extension), and
 * `kxprof replay FIXTURE -o OUT.kxp` turns one into a record file.
 *
 * Format: JSON Lines. One flat JSON object per line; blank lines and lines
 * starting with '#' are comments. Numbers are integers; where a number is
 * expected a string may carry it too ("0xc0186444", "-11"). Keys not listed
 * here are errors, so typos do not pass silently. Every object has "type":
 *
 *   capture  host, kernel, cmdline (strings); start_ns, stop_ns (monotonic);
 *            realtime_offset_ns (realtime = monotonic + offset); emitted,
 *            received, dropped, not_stored, inflight_full, pidset_full,
 *            protected_exec, arg_faults, ringbuf_bytes, all_pids, and the
 *            job_* counters of struct kx_capinfo
 *   device   node, driver (kernel name, e.g. "amdgpu", "kvm", "loop"),
 *            kind ("chr", "blk", "kvm-vm", "kvm-vcpu", "kvm-dev", "vfio"),
 *            dev ("MAJOR:MINOR" or a number), any_minor (0/1)
 *   hook     name, mech, state ("attached", "skipped", "failed"), why
 *   task     ts, pid, tid, ppid, what ("fork", "exec", "rename", "exit",
 *            "seen"), comm
 *   ioctl    ts (enter), dur, pid, tid, driver, kind, dev, fd, cmd (name
 *            from the ioctl tables, e.g. "DRM_IOCTL_AMDGPU_CS", or number),
 *            xfer_cmd (NVIDIA XFER inner escape: name or number), ret, cpu,
 *            offcpu_us, in / out (argument copies, see below)
 *   job      ts, src ("block", "kvm", "gpu_scheduler", "dma_fence", "i915",
 *            "xe", "amdgpu", "msm", "v3d", "vpu", "amdxdna"), phase
 *            ("queue", "run", "done", "wait_begin", "wait_end", "dep",
 *            "unschedulable"), ctx, seqno, aux, aux2, dev, pid, tid, ring,
 *            flags: the fields of struct kx_job, per source as event.h says
 *
 * Argument copies are space-separated tokens laid out in order: "u8:V",
 * "u16:V", "u32:V", "u64:V" (and i8..i64) write V little-endian in that
 * width; anything else is raw hex bytes ("00ff10"). At most 64 bytes each.
 */
#ifndef KX_REPLAY_H
#define KX_REPLAY_H

#include <stddef.h>

#include "model/capinfo.h"
#include "model/store.h"

/* True when path names a fixture (ends in .jsonl). */
int kx_replay_is_fixture(const char *path);

/*
 * Loads the fixture at path into s (events appended) and ci (overwritten).
 * Returns 0, or -1 with err set to "path:line: what is wrong".
 */
int kx_replay_load(const char *path, struct kx_store *s, struct kx_capinfo *ci, char *err,
                   size_t errlen);
/* Same, from memory; name is used in messages. */
int kx_replay_load_mem(const char *text, size_t len, const char *name, struct kx_store *s,
                       struct kx_capinfo *ci, char *err, size_t errlen);

#endif /* KX_REPLAY_H */
