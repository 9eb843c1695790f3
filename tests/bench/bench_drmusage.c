/*
 * bench_drmusage: what a DRM usage pass (capture/drmfdinfo.h) costs, in µs
 * of the sampler thread's CPU time (CLOCK_THREAD_CPUTIME_ID: a busy machine
 * does not inflate it) per process per pass, over a fixture /proc
 * (KXPROF_PROC_ROOT) of NPROC processes with NFD fds each: processes with
 * one DRM fd among them (its fdinfo: tests/fixtures/fdinfo/amdgpu.fdinfo,
 * read and parsed each pass), and processes without (one readlink per fd,
 * no fdinfo read); and this machine's real /proc, every process (what a
 * host-wide pass costs where no process holds a DRM fd). Each figure is the median (min–max) of
 * ROUNDS rounds of PASSES passes; the two kinds alternate within a round. The fixture tree lives in
 * /tmp, not in procfs: the kernel's own work of making the real files (resolving an fd's path,
 * printing its fdinfo) is not in the figure. -r prints raw.tsv lines (row "drm") for
 * tests/bench/run.sh and report.py instead. Usage: bench_drmusage [-r] [ROUNDS]   (run from the
 * repository root)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture/drmfdinfo.h"

#define NPROC      200
#define NFD        16
#define PASSES     50
#define MAX_ROUNDS 15

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static char fixture[16384];
static size_t fixture_len;

static int put(const char *path, const char *text, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fwrite(text, 1, n, f);
	return fclose(f);
}

/* root/PID: NFD fds, the first a DRM node when drm, the others pipes and files. */
static int make_proc(const char *root, int pid, int drm)
{
	char p[512], t[64];

	snprintf(p, sizeof(p), "%s/%d", root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/fd", root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/fdinfo", root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%d/comm", root, pid);
	if (put(p, "bench\n", 6))
		return -1;
	for (int fd = 0; fd < NFD; fd++) {
		if (fd == 5 && drm)
			snprintf(t, sizeof(t), "/dev/dri/renderD128");
		else if (fd % 2)
			snprintf(t, sizeof(t), "pipe:[%d]", 1000 + fd);
		else
			snprintf(t, sizeof(t), "/home/user/file%d", fd);
		snprintf(p, sizeof(p), "%s/%d/fd/%d", root, pid, fd);
		if (symlink(t, p))
			return -1;
		snprintf(p, sizeof(p), "%s/%d/fdinfo/%d", root, pid, fd);
		if (fd == 5 && drm ? put(p, fixture, fixture_len) : put(p, "pos:\t0\n", 7))
			return -1;
	}
	return 0;
}

/* µs per process per pass over root. */
static double measure(const char *root)
{
	struct kx_drm_sampler *s;
	double t0, t;
	size_t n;

	setenv("KXPROF_PROC_ROOT", root, 1);
	s = kx_drm_sampler_new(NULL, 0, 1);
	unsetenv("KXPROF_PROC_ROOT");
	if (!s)
		return -1;
	kx_drm_sampler_pass(s, 1, &n); /* the baseline, and a warm cache */
	t0 = now_ns();
	for (int i = 0; i < PASSES; i++)
		kx_drm_sampler_pass(s, (uint64_t)(i + 2) * 1000000000ull, &n);
	t = (now_ns() - t0) / PASSES / NPROC / 1000;
	kx_drm_sampler_free(s);
	return t;
}

/* µs per process per pass over the real /proc, every process (none holds a
 * DRM fd on a machine without a GPU: the cost of looking). */
static double measure_proc(void)
{
	struct kx_drm_sampler *s = kx_drm_sampler_new(NULL, 0, 1);
	uint64_t procs0;
	double t0, t;
	size_t n;

	if (!s)
		return -1;
	kx_drm_sampler_pass(s, 1, &n);
	procs0 = kx_drm_sampler_stats(s)->procs;
	t0 = now_ns();
	for (int i = 0; i < PASSES / 5; i++)
		kx_drm_sampler_pass(s, (uint64_t)(i + 2) * 1000000000ull, &n);
	t = (now_ns() - t0) / (double)(kx_drm_sampler_stats(s)->procs - procs0) / 1000;
	kx_drm_sampler_free(s);
	return t;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	static const char *const names[3] = {"drm_fd", "no_drm_fd", "proc_all"};
	char roots[2][64], cmd[200];
	double v[3][MAX_ROUNDS];
	int raw = argc > 1 && !strcmp(argv[1], "-r");
	int rounds = argc > 1 + raw ? atoi(argv[1 + raw]) : 5;
	FILE *f = fopen("tests/fixtures/fdinfo/amdgpu.fdinfo", "r");

	if (rounds < 1 || rounds > MAX_ROUNDS || !f) {
		fprintf(stderr,
		        "usage: bench_drmusage [-r] [ROUNDS 1..%d], from the repository root\n",
		        MAX_ROUNDS);
		return 2;
	}
	fixture_len = fread(fixture, 1, sizeof(fixture) - 1, f);
	fclose(f);
	for (int k = 0; k < 2; k++) {
		snprintf(roots[k], sizeof(roots[k]), "/tmp/kxbench-drm-XXXXXX");
		if (!mkdtemp(roots[k]))
			return 1;
		for (int p = 1; p <= NPROC; p++)
			if (make_proc(roots[k], p, k == 0))
				return 1;
	}
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++)
			v[k][r] = measure(roots[k]);
		v[2][r] = measure_proc();
	}
	for (int k = 0; k < 2; k++) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", roots[k]);
		if (system(cmd))
			fprintf(stderr, "bench_drmusage: could not remove %s\n", roots[k]);
	}
	for (int k = 0; k < 3; k++) {
		if (raw) {
			for (int r = 0; r < rounds; r++)
				printf("drm\t%s\t%d\tus_per_proc\t%.3f\n", names[k], r + 1,
				       v[k][r]);
			continue;
		}
		qsort(v[k], (size_t)rounds, sizeof(double), cmp_d);
		printf("%-10s %.2f µs per process per pass (%.2f–%.2f), %s, %d rounds\n", names[k],
		       v[k][rounds / 2], v[k][0], v[k][rounds - 1],
		       k < 2 ? "fixture tree: 200 processes of 16 fds, 50 passes"
		             : "this machine's /proc, every process, 10 passes",
		       rounds);
	}
	return 0;
}
