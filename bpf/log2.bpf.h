/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Latency histogram slots, log2 and fine (log-linear; bpf/kxprof.h): the
 * one rule of the project. The BPF programs include it, and so does user
 * space through user/util/hist.h (which supplies the __u64 and
 * __always_inline it needs).
 */
#ifndef KXPROF_LOG2_BPF_H
#define KXPROF_LOG2_BPF_H

/* floor(log2(v)) for v > 0 by halving steps: no loop for the verifier. */
static __always_inline __u32 log2_u64(__u64 v)
{
	__u32 r = 0;

	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	return r + (__u32)(v >> 1);
}

/* Histogram slot of a duration in ns: slot i holds [2^i, 2^(i+1)), the last the rest. */
static __always_inline __u32 log2_slot(__u64 ns)
{
	__u32 r = ns ? log2_u64(ns) : 0;

	return r < KX_HIST_SLOTS ? r : KX_HIST_SLOTS - 1;
}

/*
 * Fine slot of a duration in ns: below KX_FINE_SUB the value itself; in
 * octave o = floor(log2(ns)) >= KX_FINE_BITS, (o - KX_FINE_BITS + 1) *
 * KX_FINE_SUB plus the KX_FINE_BITS bits below the leading one; from octave
 * KX_HIST_SLOTS on, the last slot.
 */
static __always_inline __u32 fine_slot(__u64 ns)
{
	__u32 o;

	if (ns < KX_FINE_SUB)
		return (__u32)ns;
	o = log2_u64(ns);
	if (o >= KX_HIST_SLOTS)
		return KX_FINE_SLOTS - 1;
	return (o - KX_FINE_BITS + 1) * KX_FINE_SUB +
	       (__u32)((ns >> (o - KX_FINE_BITS)) & (KX_FINE_SUB - 1));
}

#endif /* KXPROF_LOG2_BPF_H */
