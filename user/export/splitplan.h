/*
 * The split plan of a conversion (kxprof convert --split-events): how many
 * trace events one output may hold, and what each time window of the plan
 * (analysis/windows.h) becomes: a part with its XSpace run suffix, its
 * Chrome file name and the note it carries. Owns the part names; the
 * writers and the order parts are written in are export/traceparts.h's.
 */
#ifndef KX_SPLITPLAN_H
#define KX_SPLITPLAN_H

#include <limits.h>
#include <stddef.h>

#include "analysis/windows.h"
#include "export/chrome.h"
#include "export/xspace.h"
#include "model/capinfo.h"

/* Trace events per output before a capture is split by time (XProf's trace
 * viewer keeps 1,000,000), and the most --split-events takes. */
#define KX_SPLIT_EVENTS_DEFAULT 1000000
#define KX_SPLIT_EVENTS_MAX     1000000000000LL

/* One output of the XSpace/Chrome pair: the whole capture, or one time window of it. */
struct kx_split_part {
	const char *chrome;         /* its Chrome file, or NULL */
	char suffix[96];            /* run folder suffix ("" for the whole capture) */
	struct kx_xspace_opts xo;   /* with the window and the note of a part */
	struct kx_chrome_part cp;   /* the window, for the Chrome writer */
	int is_part;                /* 0: the whole capture */
	char chrome_path[PATH_MAX]; /* the part's Chrome file name */
	char note[256];             /* the warning each part carries */
};

/* The whole capture as one output: xo, and the Chrome file chrome (or NULL). */
void kx_split_whole(struct kx_split_part *pt, const struct kx_xspace_opts *xo, const char *chrome);
/*
 * Part k of the plan wn of the capture ci: its window, names and note, base
 * giving the other XSpace options. Its Chrome file (NAME.0001.json.gz for a
 * chrome of NAME.json.gz) must not be input (util/outfile.h). 0, or -1 with
 * the reason in err.
 */
int kx_split_part_of(const struct kx_capinfo *ci, const struct kx_windows *wn, size_t k,
                     const struct kx_xspace_opts *base, const char *chrome, const char *input,
                     struct kx_split_part *pt, char *err, size_t errlen);
/* Every part's names checked before the first part is written (parts of at
 * most split events): 0, or -1 with the reason in err. */
int kx_split_check(const struct kx_capinfo *ci, const struct kx_windows *wn,
                   const struct kx_xspace_opts *xo, const char *chrome, size_t split,
                   const char *input, char *err, size_t errlen);

#endif /* KX_SPLITPLAN_H */
