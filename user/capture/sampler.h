/*
 * CPU sampler: loads bpf/sample.bpf.c, opens one cpu-clock perf event per
 * online CPU at a given frequency (offline CPUs are skipped) and attaches
 * the program to each; optionally attaches the off-CPU program to
 * sched_switch (threads blocked inside traced ioctls). Standalone it owns a
 * ring buffer and hands each record to a callback; inside a capture session
 * it shares the session's ring buffer, pid set and in-flight call entries
 * (struct kx_sampler_maps), so samples arrive with the other events and
 * carry the traced call they were taken in. It owns the perf events, the
 * links and its own ring buffer, and leaves none of them behind at close.
 * Loss accounting: the programs count emitted and dropped per CPU and per
 * kind, the receiver counts what it received, so received + dropped ==
 * emitted after stop; missing and cut stacks are counted too.
 */
#ifndef KX_CAPTURE_SAMPLER_H
#define KX_CAPTURE_SAMPLER_H

#include <stddef.h>
#include <stdint.h>

#include "model/sample.h"

/* Parses a sample or off-CPU record of len bytes; 0, or -1 when it is not a
 * whole, consistent record. */
int kx_sample_parse(const void *rec, size_t len, struct kx_sample *out);

/* Called on the polling thread for each record (at stop too, for the last ones). */
typedef void (*kx_sample_fn)(void *ctx, const struct kx_sample *s);

/* A capture session's maps the sampler uses instead of its own. */
struct kx_sampler_maps {
	int events;    /* ring buffer (records go to the session's consumer); -1: its own */
	int pids;      /* traced pid set */
	int inflight;  /* in-flight calls by tid (bpf/inflight.bpf.h) */
	int task_call; /* the same in task storage, -1 when the session has none */
	int call_btf;  /* the session keeps its calls in task storage (tp_btf) */
	uint32_t wakeup_bytes;
};

struct kx_sampler_opts {
	uint32_t freq_hz; /* samples per second on each CPU; 0: no cpu-clock sampling */
	int off_cpu;      /* also off-CPU intervals of threads blocked inside traced ioctls */
	int all;          /* every process, else only the pids added (or the session's set) */
	/* A daemon session for an unprivileged client: only threads whose real
	 * and effective uid are uid, checked in the kernel at every sample and
	 * switch-out (as capture/session.h's uid rule). */
	int uid_only;
	uint32_t uid;
	int no_kstacks; /* user frames only: kernel stacks are never read */
	/* --call-graph dwarf: bytes of user stack copied at each sample (at
	 * most KX_USTACK_MAX), each copy a record before its sample; 0: none. */
	uint32_t ustack_bytes;
	/* Standalone with ustack_bytes: where the stack copies go (the
	 * KX_REC_USTACK records, each before its sample's; e.g. to
	 * capture/ustack.h's pairing); NULL: they are counted as malformed. */
	void (*copy_fn)(void *ctx, const void *rec, size_t len);
	const struct kx_sampler_maps *maps; /* NULL: standalone, with its own maps */
	uint32_t ringbuf_bytes;             /* standalone: 0 is 8 MiB; a power of two */
	uint32_t offcpu_slots;              /* threads blocked at once that can be kept (0: 4096) */
	kx_sample_fn fn;                    /* standalone: where records go */
	void *ctx;
};

/* Summed over CPUs; live while sampling, final after kx_sampler_stop. */
struct kx_sample_counts {
	uint64_t emitted;        /* samples of traced processes the kernel tried to submit */
	uint64_t dropped;        /* lost: ring buffer full */
	uint64_t received;       /* standalone: handed to the callback */
	uint64_t malformed;      /* standalone: records that did not parse (never expected) */
	uint64_t no_ustack;      /* user tasks sampled without any user frame */
	uint64_t no_kstack;      /* kernel-mode samples without any kernel frame */
	uint64_t ustack_full;    /* user stacks cut at KX_SAMPLE_MAX_DEPTH */
	uint64_t kstack_full;    /* kernel stacks cut at KX_SAMPLE_MAX_DEPTH */
	uint64_t off_emitted;    /* off-CPU records tried */
	uint64_t off_dropped;    /* lost: ring buffer full */
	uint64_t off_received;   /* standalone: off-CPU records handed to the callback */
	uint64_t off_noslot;     /* blocked threads not kept: the stash was full */
	uint64_t off_stale;      /* blocked threads whose switch-in was not seen within the call */
	uint64_t ustack_emitted; /* user stack copies tried (--call-graph dwarf) */
	uint64_t ustack_dropped; /* lost: ring buffer full */
	uint64_t ustack_fault;   /* copies with nothing readable at the stack pointer */
	uint32_t cpus;           /* CPUs sampled (perf events open) */
	uint32_t cpus_offline;
};

struct kx_sampler;

/* Loads the programs (nothing sampled yet). NULL with err set. */
struct kx_sampler *kx_sampler_open(const struct kx_sampler_opts *o, char *err, size_t len);
/* Standalone: adds a pid to the sampler's own pid set. */
int kx_sampler_add_pid(struct kx_sampler *s, uint32_t pid, char *err, size_t len);
/* Opens the perf events and attaches: sampling starts. */
int kx_sampler_start(struct kx_sampler *s, char *err, size_t len);
/* The attach mechanism of the off-CPU program ("tp_btf", "raw_tp"), NULL when none. */
const char *kx_sampler_offcpu_mech(const struct kx_sampler *s);
/* Standalone: hands waiting records to the callback, waiting up to
 * timeout_ms for some; the number handed, or -1 with err set. */
int kx_sampler_poll(struct kx_sampler *s, int timeout_ms, char *err, size_t len);
/* Detaches and closes the perf events, drains its own ring buffer, reads
 * the counters. Idempotent. */
void kx_sampler_stop(struct kx_sampler *s);
void kx_sampler_counts(struct kx_sampler *s, struct kx_sample_counts *c);
/* Stops if needed and frees everything (NULL is fine). */
/* Runs of its programs the kernel skipped (capture/progmiss.h); 0 for NULL. */
uint64_t kx_sampler_missed(const struct kx_sampler *s);
void kx_sampler_close(struct kx_sampler *s);

/* --call-graph MODE[,SIZE] (fp, dwarf[,SIZE] or auto[,SIZE]) into *bytes,
 * the stack copied per sample (0: frame pointers), and *autom (1: auto). 0,
 * or -1 with err set. */
int kx_call_graph_parse(const char *s, uint32_t *bytes, int *autom, char *err, size_t len);

#endif /* KX_CAPTURE_SAMPLER_H */
