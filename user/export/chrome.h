/*
 * Chrome trace JSON exporter (Perfetto, chrome://tracing successors, PyTorch
 * tooling): host events on real pid/tid with process and thread name
 * metadata, one pseudo-process per device (a thread per job ring, flow
 * arrows from the submitting ioctls, in-flight and memory counters),
 * ts/dur in microseconds with
 * sub-microsecond precision. Written streaming, gzip when the path ends in .gz,
 * through util/outfile (a temporary file renamed into place when complete).
 */
#ifndef KX_CHROME_H
#define KX_CHROME_H

#include <stddef.h>

#include "analysis/analysis.h"
#include "util/outfile.h"

/* Writes the analysed capture (analysis/analysis.h) to path ("-": stdout):
 * opens, writes and commits one kx_outfile. Returns 0, or -1 with err set
 * (path in the message; nothing is left at path). */
int kx_chrome_write(const struct kx_analysis *an, const char *path, char *err, size_t errlen);

/* Writes it into o, opened with kx_outfile_open (gzip when o->path ends in
 * .gz); the caller commits o, or aborts it on -1 (err set). */
int kx_chrome_write_to(const struct kx_analysis *an, struct kx_outfile *o, char *err,
                       size_t errlen);

#endif /* KX_CHROME_H */
