/*
 * CPU sampler: loads bpf/sample.bpf.c, opens one cpu-clock perf event per
 * online CPU at a given frequency (offline CPUs are skipped), attaches the
 * program to each, and hands every sample record of the ring buffer to a
 * callback. It owns the perf events, the links and the ring buffer, and
 * leaves none of them behind at close. Loss accounting: the program counts
 * emitted and dropped per CPU, the loader counts what it received, so
 * received + dropped == emitted after stop; missing and cut stacks are
 * counted too.
 */
#ifndef KX_CAPTURE_SAMPLE_H
#define KX_CAPTURE_SAMPLE_H

#include <stddef.h>
#include <stdint.h>

#include "kxprof.h"

/* One sample, as parsed from its record (pointers into the record). */
struct kx_sample {
	uint64_t ts_ns; /* CLOCK_MONOTONIC ns */
	uint32_t pid;   /* tgid */
	uint32_t tid;
	uint32_t cpu;
	uint16_t flags; /* KX_SAMPLE_F_* (bpf/sample_rec.h) */
	char comm[KX_COMM_LEN];
	const unsigned long long *kips; /* kernel frames, leaf first */
	uint32_t nk;
	const unsigned long long *uips; /* user frames, leaf first */
	uint32_t nu;
};

/* Parses a sample record of len bytes; 0, or -1 when it is not a whole,
 * consistent sample record. */
int kx_sample_parse(const void *rec, size_t len, struct kx_sample *out);

/* Called on the polling thread for each sample (at stop too, for the last ones). */
typedef void (*kx_sample_fn)(void *ctx, const struct kx_sample *s);

struct kx_sampler_opts {
	uint32_t freq_hz;       /* samples per second on each CPU */
	int all;                /* every process, else only the pids added */
	uint32_t ringbuf_bytes; /* 0: 8 MiB; rounded up to a power of two */
	kx_sample_fn fn;
	void *ctx;
};

/* Summed over CPUs; live while sampling, final after kx_sampler_stop. */
struct kx_sample_counts {
	uint64_t emitted;     /* samples of traced processes the kernel tried to submit */
	uint64_t dropped;     /* lost: ring buffer full */
	uint64_t received;    /* handed to the callback */
	uint64_t malformed;   /* records that did not parse (never expected) */
	uint64_t no_ustack;   /* user tasks sampled without any user frame */
	uint64_t no_kstack;   /* kernel-mode samples without any kernel frame */
	uint64_t ustack_full; /* user stacks cut at KX_SAMPLE_MAX_DEPTH */
	uint64_t kstack_full; /* kernel stacks cut at KX_SAMPLE_MAX_DEPTH */
	uint32_t cpus;        /* CPUs sampled (perf events open) */
	uint32_t cpus_offline;
};

struct kx_sampler;

/* Loads the program (nothing sampled yet). NULL with err set. */
struct kx_sampler *kx_sampler_open(const struct kx_sampler_opts *o, char *err, size_t len);
int kx_sampler_add_pid(struct kx_sampler *s, uint32_t pid, char *err, size_t len);
/* Opens the perf events and attaches: sampling starts. */
int kx_sampler_start(struct kx_sampler *s, char *err, size_t len);
/* Hands waiting samples to the callback, waiting up to timeout_ms for some;
 * the number handed, or -1 with err set. */
int kx_sampler_poll(struct kx_sampler *s, int timeout_ms, char *err, size_t len);
/* Detaches and closes the perf events, drains the ring buffer, reads the
 * counters. Idempotent. */
void kx_sampler_stop(struct kx_sampler *s);
void kx_sampler_counts(struct kx_sampler *s, struct kx_sample_counts *c);
/* Stops if needed and frees everything (NULL is fine). */
void kx_sampler_close(struct kx_sampler *s);

#endif /* KX_CAPTURE_SAMPLE_H */
