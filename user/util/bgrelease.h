/*
 * Releasing BPF links and perf events without waiting for it. The kernel
 * takes a uprobe off (the last close of its perf event or its link) under
 * a global mutex and waits for RCU grace periods there, about 0.1 s each
 * here: a capture holding the 64 annotation uprobes its caps allow takes
 * 6 to 10 s to close, one after the other, whatever the number of threads
 * closing. A front end that exits right after its capture (kxprof top on
 * q, at -d, at -c) hands that wait to a child process: kx_bgrelease forks
 * one that keeps a reference to each BPF link and perf event descriptor
 * and closes every other descriptor (terminal, pipes, files, sockets: no
 * reader waits for it), so the caller's own closes drop only references
 * and return at once; the child then closes its references, leaving the
 * probes where they would have been a few seconds later, and exits. The
 * probes stay attached until it has: their programs run on, recording into
 * buffers nobody reads. Owns the choice of descriptors and the child.
 */
#ifndef KX_UTIL_BGRELEASE_H
#define KX_UTIL_BGRELEASE_H

/* 0 when a child took the release over (or there was nothing to release),
 * -1 when none could be started: the caller's closes then wait as before. */
int kx_bgrelease(void);

#endif /* KX_UTIL_BGRELEASE_H */
