/*
 * How a capture is read for a front end's outputs: for a report, streamed
 * (analysis/sreport.h) or whole (kx_capread_report, below); for a
 * conversion, one time window at a time (analysis/wread.h), or whole into
 * one store. Owns those choices, the
 * read whole (record files and replay fixtures, io/replay.h) and what is
 * said of it (-v). The front end asks for windows of a part's events, or
 * for none (window KX_CAPREAD_WHOLE: --in-memory, and outputs that need the
 * whole capture), and gets either the windows to write (pass 2 is its
 * call: kx_wread_run) or one store with its facts and what reading lost.
 *
 * A file is read in windows when a stream gives it exactly and its records
 * are more than one window holds; every other file is read whole, and read
 * once where it can be: the first read (wread's pass 1) stores the file as
 * it streams it while the file may be wanted whole (it fits one window, a
 * reason to read it whole came, or the store holds at most keep records:
 * KX_WREAD_KEEP_RECORDS, a window of the default split's), and that store
 * is handed over. What is left read twice: a file whose first read gave its
 * store up (past a window's records and the keep records, or so many at
 * the rate of its first records, so that a long capture read in windows is
 * not held whole) before a reason to read it whole came (a job record, a
 * call the nesting rule shortens, more late calls than a window holds,
 * found late in the file or at its end), or that turned out to fit one
 * trace after all. That second read is counted (rereads) and said (again,
 * -v).
 */
#ifndef KX_CAPREAD_H
#define KX_CAPREAD_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/analysis.h"
#include "analysis/sreport.h"
#include "analysis/wread.h"
#include "io/kxp.h"
#include "model/capinfo.h"
#include "model/store.h"

#define KX_CAPREAD_WHOLE SIZE_MAX /* window: unbounded, the capture read whole */

struct kx_capread_opts {
	size_t window; /* events per window (an output part's), KX_CAPREAD_WHOLE: read whole */
	size_t slice;  /* events per slice of a window (windows.h; window: unsliced) */
	size_t budget; /* bytes a store may take */
	size_t keep;   /* records the first read's store may hold past a smaller window's */
	int say;       /* 1: why the file is read whole, in why (-v; a file that fits one
	                  window is planned for it: its parts' count) */
};

struct kx_capread {
	struct kx_wread w;             /* read in windows: pass 1 done, w.plan to write */
	struct kx_store *store;        /* read whole: the capture; NULL: read in windows */
	struct kx_capinfo ci;          /* header and trailer facts */
	struct kx_kxp_read_result res; /* what reading lost */
	char damage[512];              /* its message for the warning (empty: nothing lost) */
	char why[512];                 /* say: why it was read whole ("": asked to) */
	char again[256];               /* say: why it was read a second time ("": once) */
	unsigned int rereads;          /* times the file was read again: 0 or 1 */
};

/*
 * Reads path as o asks: r zeroed and filled. 0 (r->store NULL: read in
 * windows, r->w's), or -1 when the file is not a readable record file or
 * fixture, or memory ran out (err says which).
 */
int kx_capread_open(struct kx_capread *r, const char *path, const struct kx_capread_opts *o,
                    char *err, size_t errlen);

/* How a file read in windows was read, for -v, once they are written. */
void kx_capread_windows_said(const struct kx_capread *r, char *buf, size_t len);

/*
 * A record file or replay fixture read whole into a new store of budget
 * bytes, and ci and res: the store, or NULL with err set. A damaged or cut
 * file is read around the damage, its message in damage (else empty).
 */
struct kx_store *kx_capread_whole(const char *path, size_t budget, struct kx_capinfo *ci,
                                  struct kx_kxp_read_result *res, char *damage, size_t damagelen,
                                  char *err, size_t errlen);

void kx_capread_free(struct kx_capread *r);

/*
 * What a report is made of: the analysis of the capture, and the rows it
 * prints when they were aggregated as the records passed (streamed). A
 * record file is streamed when the stream gives exactly the report a read
 * into memory gives; it is read whole when asked (--in-memory), when it is
 * a replay fixture, or when the stream found a reason it cannot (why, with
 * say: -v). That reason stops the stream at its next chunk and the file is
 * read again, whole: counted in rereads.
 */
struct kx_capread_report {
	struct kx_analysis *an;         /* of the capture; its loss is the caller's to fill */
	struct kx_stats *rows;          /* the streamed rows; NULL: read whole (an's own) */
	const struct kx_sreport *sr;    /* the stream's facts (-v); NULL: read whole */
	struct kx_kxp_read_result *res; /* what reading lost */
	char damage[512];               /* its message for the warning (empty: nothing lost) */
	char why[512];                  /* say: why it was read whole ("": streamed or asked to) */
	unsigned int rereads;           /* times the file was read again: 0 or 1 */
	struct kx_sreport stream;       /* (owned) */
	struct kx_store *store;         /* (owned) read whole; NULL: streamed */
	struct kx_capinfo ci;           /* (owned) the facts of a file read whole */
	struct kx_kxp_read_result wres; /* (owned) */
};

/* Reads path for a report (whole: --in-memory): r zeroed and filled. 0, or
 * -1 with err set (not a readable record file or fixture, out of memory). */
int kx_capread_report(struct kx_capread_report *r, const char *path, int whole, size_t budget,
                      int say, char *err, size_t errlen);
void kx_capread_report_free(struct kx_capread_report *r);

#endif /* KX_CAPREAD_H */
