/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the capture objects share: the ring buffer, the loss counters, the pid
 * set and the device filter. ioctl.bpf.c owns them; jobs.bpf.c declares the
 * same maps and user space points them at the ioctl object's before load
 * (bpf_map__reuse_fd), so ordering and loss accounting stay in one place.
 */
#ifndef KXPROF_SHARED_BPF_H
#define KXPROF_SHARED_BPF_H

const volatile bool targ_all = false;           /* trace every process */
const volatile __u64 wakeup_bytes = 256 * 1024; /* wake the consumer past this much data */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 * 1024 * 1024); /* resized by user space */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KX_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Target processes by tgid (children are added at fork). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/* Traced devices: (fkind, dev) -> driver id. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct kx_dev_key);
	__type(value, __u32);
} devs SEC(".maps");

static __always_inline void stat_inc(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
}

static __always_inline __u64 submit_flags(void)
{
	/* Sampled notification: wake the consumer only once enough data waits. */
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
	                                                                     : BPF_RB_NO_WAKEUP;
}

#endif /* KXPROF_SHARED_BPF_H */
