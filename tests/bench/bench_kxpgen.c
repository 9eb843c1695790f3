/*
 * Writes a synthetic record file of a long host-wide capture, for timing
 * `kxprof report` as a capture grows: N ioctl events of 16 threads in 4
 * processes, each thread calling one ioctl after another (never
 * overlapping), a mix of cheap and job-like KVM and loop commands with
 * durations spread over four decades, 1% failing with one of three errnos,
 * a fifth blocked off the CPU for part of the call; a task record per
 * thread. The records come in the order the calls start, about the order
 * a recorder writes them (as they return). No argument bytes and no job
 * records, as a flood of calls records. Prints the events and bytes
 * written.
 *
 * With -a, each thread's calls are annotated as a training loop annotates
 * them with NVTX: a "step" range around every 64 calls, a "layer" range
 * (category "nvtx") around every 8 calls inside it, a "tick" mark every 16
 * calls; EVENTS then counts the annotation records too.
 *
 *     bench_kxpgen [-a] -n EVENTS -o FILE.kxp
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/kxp.h"
#include "registry/drivers.h"

#define THREADS 16

struct cmdmix {
	uint8_t drv;
	uint32_t cmd;
	uint64_t base_ns; /* typical duration */
};

static const struct cmdmix mix[] = {
        {KX_DRV_KVM, 0xae00u, 180},      /* KVM_GET_API_VERSION */
        {KX_DRV_KVM, 0xae03u, 250},      /* KVM_CHECK_EXTENSION */
        {KX_DRV_KVM, 0xae80u, 40000},    /* KVM_RUN */
        {KX_DRV_LOOP, 0x80081272u, 200}, /* BLKGETSIZE64 */
        {KX_DRV_LOOP, 0x127fu, 900000},  /* BLKZEROOUT */
        {KX_DRV_LOOP, 0x1261u, 2000000}, /* BLKFLSBUF */
};

static uint64_t rng(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ull;
}

/* Event i of thread t at *now (ns, advanced past the call). */
static void make_event(struct kx_ioctl *e, uint64_t r, uint32_t t, uint64_t *now)
{
	/* Cheap calls most of the time, a job-like one every ~32. */
	static const uint8_t cheap[4] = {0, 1, 3, 3}, heavy[4] = {2, 2, 4, 5};
	const struct cmdmix *m = &mix[(r & 63) < 62 ? cheap[r >> 6 & 3] : heavy[r >> 8 & 3]];

	memset(e, 0, sizeof(*e));
	e->pid = 1000 + t / 4;
	e->tid = 2000 + t;
	e->drv = m->drv;
	e->cmd = m->cmd;
	e->fd = 3 + (int32_t)(t & 3);
	/* base x 1/2 .. 4, in 64 steps: durations over a decade per command */
	e->dur = m->base_ns / 2 + (m->base_ns * (r >> 16 & 63)) / 18;
	e->ts = *now;
	e->ret = (r >> 24 & 127) == 0 ? -(int64_t)(4 + (r >> 31 & 1) * 7) : 0;
	if ((r >> 32 & 7) == 0 && e->dur > 10000)
		e->offcpu_us = (uint32_t)(e->dur / 2000);
	e->arg_off = KX_NO_ARG;
	*now += e->dur + 100 + (r >> 40 & 511);
}

/* -a: the annotation records due before thread t's call number k (its
 * k-th, from 0) at *now, written and counted in *n; the time advances past
 * each. 0, or -1 when writing failed. */
static int annotate(struct kx_kxp_writer *w, uint32_t t, uint64_t k, uint64_t *now,
                    uint64_t *step_ts, uint64_t *layer_ts, uint64_t *n)
{
	struct kx_ann a = {.pid = 1000 + t / 4, .tid = 2000 + t};
	int rc = 0;

	if (k % 8 == 0 && k) { /* the layer around calls k-8 .. k-1 ends */
		a.what = KX_ANN_POP, a.ts = (*now)++, a.begin = *layer_ts, a.depth = 2;
		rc |= kx_kxp_add_ann(w, &a, "", ""), (*n)++;
	}
	if (k % 64 == 0 && k) {
		a.what = KX_ANN_POP, a.ts = (*now)++, a.begin = *step_ts, a.depth = 1;
		rc |= kx_kxp_add_ann(w, &a, "", ""), (*n)++;
	}
	if (k % 64 == 0) {
		a.what = KX_ANN_PUSH, a.ts = a.begin = *step_ts = (*now)++, a.depth = 1;
		rc |= kx_kxp_add_ann(w, &a, "step", ""), (*n)++;
	}
	if (k % 8 == 0) {
		a.what = KX_ANN_PUSH, a.ts = a.begin = *layer_ts = (*now)++, a.depth = 2;
		rc |= kx_kxp_add_ann(w, &a, "layer", "nvtx"), (*n)++;
	}
	if (k % 16 == 5) {
		a.what = KX_ANN_MARK, a.ts = a.begin = (*now)++, a.depth = 2;
		rc |= kx_kxp_add_ann(w, &a, "tick", ""), (*n)++;
	}
	return rc;
}

/* The thread whose next call starts first: records come in the order the
 * calls start, about the order they return (a recorder's order). */
static uint32_t next_thread(const uint64_t *now)
{
	uint32_t t = 0;

	for (uint32_t k = 1; k < THREADS; k++)
		if (now[k] < now[t])
			t = k;
	return t;
}

int main(int argc, char **argv)
{
	static struct kx_capinfo ci;
	uint64_t now[THREADS], seed = 0x9e3779b97f4a7c15ull, n = 0, i = 0, nio = 0;
	uint64_t calls[THREADS] = {0}, step_ts[THREADS], layer_ts[THREADS];
	const char *out = NULL;
	int ann = 0;
	struct kx_kxp_writer *w;
	char err[256];
	int opt;

	while ((opt = getopt(argc, argv, "an:o:")) != -1) {
		if (opt == 'a')
			ann = 1;
		else if (opt == 'n')
			n = strtoull(optarg, NULL, 10);
		else if (opt == 'o')
			out = optarg;
		else
			goto usage;
	}
	if (!n || !out)
		goto usage;
	ci.start_mono_ns = 1000000;
	for (int t = 0; t < THREADS; t++)
		now[t] = ci.start_mono_ns + (uint64_t)t * 77;
	w = kx_kxp_create(out, &ci, err, sizeof(err));
	if (!w) {
		fprintf(stderr, "bench_kxpgen: %s\n", err);
		return 1;
	}
	for (uint32_t t = 0; t < THREADS; t++) {
		struct kx_task task = {
		        .pid = 1000 + t / 4, .tid = 2000 + t, .ts = ci.start_mono_ns};

		snprintf(task.comm, sizeof(task.comm), "gen%u", t);
		if (kx_kxp_add_task(w, &task))
			goto fail;
	}
	while (i < n) {
		uint64_t r = rng(&seed);
		uint32_t t = next_thread(now);
		struct kx_ioctl e;

		if (ann && annotate(w, t, calls[t]++, &now[t], &step_ts[t], &layer_ts[t], &i))
			goto fail;
		make_event(&e, r, t, &now[t]);
		if (kx_kxp_add_ioctl(w, &e, NULL))
			goto fail;
		i++, nio++;
	}
	ci.stop_mono_ns = ci.start_mono_ns;
	for (int t = 0; t < THREADS; t++)
		if (now[t] > ci.stop_mono_ns)
			ci.stop_mono_ns = now[t];
	ci.emitted = ci.received = nio;
	ci.ann.enabled = (uint32_t)ann;
	ci.ann.emitted = ci.ann.received = i - nio;
	if (kx_kxp_close(w, &ci, err, sizeof(err))) {
		fprintf(stderr, "bench_kxpgen: %s\n", err);
		return 1;
	}
	printf("events %llu\n", (unsigned long long)i);
	return 0;
fail:
	fprintf(stderr, "bench_kxpgen: writing %s failed\n", out);
	kx_kxp_discard(w);
	return 1;
usage:
	fprintf(stderr, "usage: bench_kxpgen [-a] -n EVENTS -o FILE.kxp\n");
	return 2;
}
