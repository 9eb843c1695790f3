/*
 * Exporter calls for tests that start from a store: each builds the
 * capture's analysis, runs one exporter on it and frees it, so a test reads
 * as "export this store". Tests of the analysis itself, or of several
 * exporters sharing one, call kx_analysis_build directly.
 */
#ifndef KXTEST_ANALYSIS_H
#define KXTEST_ANALYSIS_H

#include <stdio.h>

#include "analysis/analysis.h"
#include "export/chrome.h"
#include "export/tblogdir.h"

/* The analysis of s, or NULL after printing why. */
static inline struct kx_analysis *kxt_analyse(const struct kx_store *s, const struct kx_capinfo *ci)
{
	char err[256];
	struct kx_analysis *an = kx_analysis_build(s, ci, err, sizeof(err));

	if (!an)
		printf("# analysis failed: %s\n", err);
	return an;
}

static inline int kxt_chrome_write(const struct kx_store *s, const struct kx_capinfo *ci,
                                   const char *path, char *err, size_t errlen)
{
	struct kx_analysis *an = kx_analysis_build(s, ci, err, errlen);
	int rc = an ? kx_chrome_write(an, path, err, errlen) : -1;

	kx_analysis_free(an);
	return rc;
}

static inline int kxt_xspace_serialize(const struct kx_store *s, const struct kx_capinfo *ci,
                                       const struct kx_xspace_opts *o, uint8_t **out, size_t *len,
                                       char *err, size_t errlen)
{
	struct kx_analysis *an = kx_analysis_build(s, ci, err, errlen);
	int rc = an ? kx_xspace_serialize(an, o, out, len, err, errlen) : -1;

	kx_analysis_free(an);
	return rc;
}

static inline int kxt_xspace_write_logdir(const struct kx_store *s, const struct kx_capinfo *ci,
                                          const struct kx_xspace_opts *o, const char *logdir,
                                          char *path_out, size_t path_len, char *err, size_t errlen)
{
	struct kx_analysis *an = kx_analysis_build(s, ci, err, errlen);
	int rc = an ? kx_tblogdir_write_run(an, o, logdir, path_out, path_len, err, errlen) : -1;

	kx_analysis_free(an);
	return rc;
}

#endif /* KXTEST_ANALYSIS_H */
