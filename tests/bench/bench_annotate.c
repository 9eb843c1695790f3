/*
 * bench_annotate: what an annotation costs the annotated program, in ns per
 * call of libkxprof_annotate.so: untraced (the semaphore branch), traced by
 * kxprof (uprobe, BPF program, ring buffer record, drained by a reader
 * thread), and probes attached for other processes only (the uprobe runs,
 * the pid filter drops the call). Each figure is the median of ROUNDS runs.
 * Traced modes need root; without it only the untraced row is printed.
 * Usage: bench_annotate [ROUNDS]
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "capture/annotate.h"
#include "kxprof_annotate.h"

#define MAX_ROUNDS 15

enum op { OP_PUSH_POP, OP_MARK, OP_START_END, NOPS };
static const char *const op_names[NOPS] = {"push+pop", "mark", "start+end"};

static double now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* ns per call of op over n calls. */
static double run(enum op op, long n)
{
	double t0 = now_ns();

	for (long i = 0; i < n; i++) {
		if (op == OP_PUSH_POP) {
			kxprof_range_push("bench");
			kxprof_range_pop();
		} else if (op == OP_MARK) {
			kxprof_mark("bench");
		} else {
			kxprof_range_end(kxprof_range_start("bench"));
		}
	}
	return (now_ns() - t0) / (double)n;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(enum op op, long n, int rounds)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = run(op, n);
	qsort(v, (size_t)rounds, sizeof(v[0]), cmp);
	return v[rounds / 2];
}

static atomic_int stop;
static atomic_long received;

static int on_rec(void *ctx, const struct kx_ann_rec *r, size_t size)
{
	(void)ctx;
	(void)r;
	(void)size;
	atomic_fetch_add(&received, 1);
	return 0;
}

static void *reader(void *arg)
{
	while (!atomic_load(&stop))
		kx_annot_poll(arg, 50, on_rec, NULL);
	return NULL;
}

static void row(const char *mode, long n, int rounds)
{
	printf("| %-36s", mode);
	for (int op = 0; op < NOPS; op++)
		printf(" | %10.1f", median((enum op)op, n, rounds));
	printf(" |\n");
	fflush(stdout);
}

/* Traced by a capture of pid (ours: traced; another: filtered out). */
static int traced_row(const char *mode, pid_t pid, long n, int rounds)
{
	struct kx_annot_opts o = {.pids = &pid, .npids = 1, .ring_bytes = 64u << 20};
	uint64_t st[KX_ANN_STAT_MAX];
	struct kx_annot *a;
	pthread_t th;
	char err[256];

	a = kx_annot_open(&o, err, sizeof(err));
	if (!a) {
		fprintf(stderr, "bench_annotate: %s\n", err);
		return -1;
	}
	if (kx_annot_scan_pid(a, getpid()) != 1) {
		fprintf(stderr, "bench_annotate: no probes found in this process's library\n");
		kx_annot_close(a);
		return -1;
	}
	atomic_store(&stop, 0);
	pthread_create(&th, NULL, reader, a);
	row(mode, n, rounds);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	if (kx_annot_stats(a, st) == 0 && st[KX_ANN_STAT_DROPPED])
		printf("  (%llu of %llu records dropped: ring buffer full)\n",
		       (unsigned long long)st[KX_ANN_STAT_DROPPED],
		       (unsigned long long)st[KX_ANN_STAT_EMITTED]);
	kx_annot_close(a);
	return 0;
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 5;

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_annotate [ROUNDS (1-%d)]\n", MAX_ROUNDS);
		return 2;
	}
	printf("ns per call, or per pair for push+pop and start+end (median of %d rounds)\n\n",
	       rounds);
	printf("| %-36s | %10s | %10s | %10s |\n", "mode", op_names[0], op_names[1], op_names[2]);
	printf("| %-36s | %10s | %10s | %10s |\n", "---", "---:", "---:", "---:");
	row("untraced", 20000000, rounds);
	if (geteuid() != 0) {
		printf("\n(traced rows need root)\n");
		return 0;
	}
	if (traced_row("traced", getpid(), 200000, rounds) ||
	    traced_row("probes attached, process not traced", 1, 200000, rounds))
		return 1;
	return 0;
}
