/*
 * Chrome trace JSON exporter (Perfetto, chrome://tracing successors, PyTorch
 * tooling): host events on real pid/tid with process and thread name
 * metadata, one pseudo-process per device (a thread per job ring, flow
 * arrows from the submitting ioctls, in-flight and memory counters; a call
 * made under an earlier name of its thread, before an exec or a rename,
 * says that name in args.thread: analysis/threadnames.h),
 * ts/dur in microseconds with
 * sub-microsecond precision. Written streaming, gzip when the path ends in .gz,
 * through util/outfile (a temporary file renamed into place when complete).
 */
#ifndef KX_CHROME_H
#define KX_CHROME_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "export/chrome_part.h"
#include "util/outfile.h"

/* Writes the analysed capture (analysis/analysis.h) to path ("-": stdout),
 * the timeline without the stack members (flags 0: export/chrome_part.h):
 * opens, writes and commits one kx_outfile. Returns 0, or -1 with err set
 * (path in the message; nothing is left at path). */
int kx_chrome_write(const struct kx_analysis *an, const char *path, char *err, size_t errlen);

/* Writes it into o, opened with kx_outfile_open (gzip when o->path ends in
 * .gz); the caller commits o, or aborts it on -1 (err set). */
int kx_chrome_write_to(const struct kx_analysis *an, struct kx_outfile *o, char *err,
                       size_t errlen);

/* As kx_chrome_write_to, only the part's events (part NULL: all): every
 * part keeps the whole capture's metadata, time base and totals, and says
 * in otherData.part which part it is. flags: KX_CHROME_*. */
int kx_chrome_write_part(const struct kx_analysis *an, const struct kx_chrome_part *part,
                         unsigned int flags, struct kx_outfile *o, char *err, size_t errlen);

/*
 * A part written a window at a time (a capture read in slices,
 * analysis/wread.h), so that its memory is a slice's: kx_chrome_open with
 * the first slice's analysis (time base, warnings, metadata), then
 * kx_chrome_add with each slice's, the first's included (its ioctls, and
 * the warnings it adds), and kx_chrome_close with the last one's (the
 * part's memory counters, annotation ranges and samples, the tail: the
 * slices' analyses lend the same ones). Each analysis may be freed after
 * its call. The part holds the events kx_chrome_write_part writes from an
 * analysis of the whole part, slice after slice, each slice's in its
 * store's order (the same order, but where records near a cut came out of
 * order of time). kx_chrome_open: NULL with err set; add, close: 0, or -1
 * with err set. The caller commits o after a close, or aborts it; and
 * frees the writer in either case.
 */
struct kx_chrome_writer;
struct kx_chrome_writer *kx_chrome_open(const struct kx_analysis *an,
                                        const struct kx_chrome_part *part, unsigned int flags,
                                        struct kx_outfile *o, char *err, size_t errlen);
int kx_chrome_add(struct kx_chrome_writer *cw, const struct kx_analysis *an, char *err,
                  size_t errlen);
int kx_chrome_close(struct kx_chrome_writer *cw, const struct kx_analysis *an, char *err,
                    size_t errlen);
void kx_chrome_writer_free(struct kx_chrome_writer *cw);

#endif /* KX_CHROME_H */
