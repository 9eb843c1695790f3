/*
 * Chrome trace JSON exporter (Perfetto, chrome://tracing successors, PyTorch
 * tooling): host events on real pid/tid with process and thread name
 * metadata, one pseudo-process per device (a thread per job ring, flow
 * arrows from the submitting ioctls, in-flight and memory counters),
 * ts/dur in microseconds with
 * sub-microsecond precision. Written streaming, gzip when the path ends in .gz.
 */
#ifndef KX_CHROME_H
#define KX_CHROME_H

#include <stddef.h>

#include "analysis/analysis.h"

/* Writes the analysed capture (analysis/analysis.h) to path ("-": stdout).
 * Returns 0, or -1 with err set (path in the message). */
int kx_chrome_write(const struct kx_analysis *an, const char *path, char *err, size_t errlen);

#endif /* KX_CHROME_H */
