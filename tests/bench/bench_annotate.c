/*
 * bench_annotate: what an annotation costs the annotated program, in ns per
 * call of libkxprof_annotate.so: untraced (the semaphore branch), traced by
 * kxprof (uprobe, BPF program, ring buffer record, drained by a reader
 * thread), and probes attached in a process out of the capture's pid set
 * (the uprobe runs, the in-kernel pid filter drops the call). The modes
 * alternate round by round; each figure is the median (min–max) of ROUNDS rounds. Traced modes need
 * root; without it only the untraced row is measured. -r prints raw.tsv lines (row "annot") for
 * tests/bench/run.sh and report.py instead of the table. Usage: bench_annotate [-r] [ROUNDS]
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

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

enum mode { M_UNTRACED, M_TRACED, M_FILTERED, NMODES };
static const char *const mode_names[NMODES] = {"untraced", "traced", "filtered"};
static const char *const mode_labels[NMODES] = {"untraced (the semaphore branch)",
                                                "traced (uprobe, BPF, ring record)",
                                                "probes attached, process not traced"};
/* Calls per measurement: untraced calls cost ~1 ns, traced ones ~1 µs. */
static const long mode_calls[NMODES] = {20000000, 200000, 200000};

static double ns[NMODES][NOPS][MAX_ROUNDS];

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

/* A pid set of its own (bpf/shared.bpf.h's pids map) holding this process:
 * the filtered round attaches through it, then takes this process out. The
 * map's fd, or -1 after a message. */
static int own_pid_set(void)
{
	uint32_t k = (uint32_t)getpid();
	uint8_t v = 1;
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "pids", sizeof(k), sizeof(v), 8192, NULL);

	if (fd < 0 || bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
		fprintf(stderr, "bench_annotate: cannot make a pid set: %s\n", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/*
 * One round of every op. Traced: a capture of this process. Filtered: the
 * probes are attached for this process (a capture attaches per traced
 * process, so only for one in its pid set), then it leaves the pid set: the
 * uprobes still run and the BPF pid filter drops every call. 0, or -1 after
 * a message.
 */
static int traced_round(enum mode m, int round)
{
	pid_t self = getpid();
	struct kx_annot_opts o = {.ring_bytes = 64u << 20};
	uint64_t st[KX_ANN_STAT_MAX];
	uint32_t k = (uint32_t)self;
	struct kx_annot *a;
	int pids_fd = -1;
	pthread_t th;
	char err[256];

	if (m == M_FILTERED) {
		pids_fd = own_pid_set();
		if (pids_fd < 0)
			return -1;
		o.pids_fd = pids_fd;
	} else {
		o.pids = &self;
		o.npids = 1;
	}
	a = kx_annot_open(&o, err, sizeof(err));
	if (!a) {
		fprintf(stderr, "bench_annotate: %s\n", err);
		goto fail;
	}
	if (kx_annot_scan_pid(a, self) != 1) {
		fprintf(stderr, "bench_annotate: no probes found in this process's library\n");
		goto fail;
	}
	if (pids_fd >= 0 && bpf_map_delete_elem(pids_fd, &k)) {
		fprintf(stderr, "bench_annotate: cannot leave the pid set: %s\n", strerror(errno));
		goto fail;
	}
	atomic_store(&stop, 0);
	atomic_store(&received, 0);
	pthread_create(&th, NULL, reader, a);
	for (int op = 0; op < NOPS; op++)
		ns[m][op][round] = run((enum op)op, mode_calls[m]);
	atomic_store(&stop, 1);
	pthread_join(th, NULL);
	/* Each mode measures what it says: records when traced, none when filtered. */
	if ((m == M_TRACED) != (atomic_load(&received) > 0)) {
		fprintf(stderr, "bench_annotate: %ld records in a %s round\n",
		        atomic_load(&received), mode_names[m]);
		goto fail;
	}
	if (kx_annot_stats(a, st) == 0 && st[KX_ANN_STAT_DROPPED])
		fprintf(stderr, "bench_annotate: %llu of %llu records dropped (ring buffer full)\n",
		        (unsigned long long)st[KX_ANN_STAT_DROPPED],
		        (unsigned long long)st[KX_ANN_STAT_EMITTED]);
	kx_annot_close(a);
	if (pids_fd >= 0)
		close(pids_fd);
	return 0;
fail:
	kx_annot_close(a);
	if (pids_fd >= 0)
		close(pids_fd);
	return -1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* "median (min–max)" of one mode and op over the rounds. */
static const char *spread(enum mode m, int op, int rounds, char *buf, size_t len)
{
	double v[MAX_ROUNDS];

	memcpy(v, ns[m][op], sizeof(v[0]) * (size_t)rounds);
	qsort(v, (size_t)rounds, sizeof(v[0]), cmp);
	snprintf(buf, len, "%.1f (%.1f-%.1f)", v[rounds / 2], v[0], v[rounds - 1]);
	return buf;
}

static void print_table(int rounds, int nmodes)
{
	char buf[64];

	printf("ns per call, or per pair for push+pop and start+end: median (min-max) of %d "
	       "alternating rounds\n\n",
	       rounds);
	printf("| %-36s | %22s | %22s | %22s |\n", "mode", op_names[0], op_names[1], op_names[2]);
	printf("| %-36s | %22s | %22s | %22s |\n", "---", "---:", "---:", "---:");
	for (int m = 0; m < nmodes; m++) {
		printf("| %-36s", mode_labels[m]);
		for (int op = 0; op < NOPS; op++)
			printf(" | %22s", spread((enum mode)m, op, rounds, buf, sizeof(buf)));
		printf(" |\n");
	}
	if (nmodes == 1)
		printf("\n(traced rows need root)\n");
}

/* raw.tsv lines for tests/bench/report.py: row mode round op ns. */
static void print_raw(int rounds, int nmodes)
{
	for (int m = 0; m < nmodes; m++)
		for (int op = 0; op < NOPS; op++)
			for (int r = 0; r < rounds; r++)
				printf("annot\t%s\t%d\t%s\t%.3f\n", mode_names[m], r + 1,
				       op_names[op], ns[m][op][r]);
}

int main(int argc, char **argv)
{
	int raw = argc > 1 && !strcmp(argv[1], "-r");
	int rounds = argc > 1 + raw ? atoi(argv[1 + raw]) : 5, nmodes = NMODES;

	if (rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: bench_annotate [-r] [ROUNDS (1-%d)]\n", MAX_ROUNDS);
		return 2;
	}
	if (geteuid() != 0)
		nmodes = 1;
	/* The modes alternate round by round: drift hits them alike. */
	for (int r = 0; r < rounds; r++) {
		for (int op = 0; op < NOPS; op++)
			ns[M_UNTRACED][op][r] = run((enum op)op, mode_calls[M_UNTRACED]);
		if (nmodes > 1 && (traced_round(M_TRACED, r) || traced_round(M_FILTERED, r)))
			return 1;
	}
	if (raw)
		print_raw(rounds, nmodes);
	else
		print_table(rounds, nmodes);
	return 0;
}
