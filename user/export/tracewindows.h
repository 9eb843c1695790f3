/*
 * The trace outputs of a capture read in windows (analysis/wread.h: pass 1
 * done, w->plan the parts to write): pass 2 (kx_wread_run) hands each
 * window's store over, analysed with the whole capture's facts (w->whole,
 * its annotation ranges and memory accounting, what reading lost), and the
 * window becomes its part through export/traceparts.h: the parts the whole
 * capture converted in memory gives. A Chrome file alone (no XSpace, whose
 * run is built from a window whole) is written a slice at a time
 * (windows.h): its part's file opened at the part's first slice, committed
 * after its last, so that its memory is a slice's. Owns that loop; the
 * parts' names, order and messages are traceparts'.
 */
#ifndef KX_TRACEWINDOWS_H
#define KX_TRACEWINDOWS_H

#include "analysis/wread.h"
#include "export/traceparts.h"

/*
 * The parts of w's plan (every part's names checked first), each committed
 * when complete; a read that stops inside a part leaves nothing of it.
 * 0, 1 (failed: said, and which parts stay) or 2 (refused: a part's name,
 * said; nothing written).
 */
int kx_tracewindows_write(const struct kx_traceparts *t, struct kx_wread *w);

#endif /* KX_TRACEWINDOWS_H */
