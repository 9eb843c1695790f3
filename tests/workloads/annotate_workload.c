/*
 * annotate_workload: known annotations through libkxprof_annotate.so, for
 * the capture tests. THREADS threads each run ITERS times:
 *   push "outer"; mark "tick"; push "inner"; sleep SLEEP_US; pop; pop
 * the main thread starts XRANGES cross-thread ranges "xrange" that a helper
 * thread ends, then issues UNBALANCED pops with no push and one nest of
 * DEPTH ranges "deep"; with -O OPEN it ends leaving OPEN ranges "open"
 * pushed and never popped. Each -l PATH dlopens another copy of the library
 * and repeats the thread part through it with names prefixed "dlN/" (N from
 * 1, in -l order). With -S the process stops itself (SIGSTOP) before its
 * first call and again after the dlopens, so a tracer can attach.
 *
 * With -i DEV each thread also issues cheap query ioctls on DEV (/dev/kvm:
 * KVM_GET_API_VERSION; a block device: BLKGETSIZE64), per iteration:
 *   QUERY; push outer; mark tick; QUERY; push inner; QUERY; [ZERO]; QUERY;
 *   sleep; pop; pop
 * so "inner" holds 2 (3 with -z), "outer" 3 (4), and 1 is outside every
 * range. -z (block devices) adds one BLKZEROOUT of 4 KiB, a device job,
 * inside "inner". Prints one JSON object: what it did, and with -i the
 * workload's "ioctls" and "errors" (tests/workloads/README.md).
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kxprof_annotate.h"
#include "workload.h"

#define MAX_THREADS 64
#define MAX_COPIES  4

struct api {
	void (*push)(const char *);
	void (*pop)(void);
	void (*mark)(const char *);
	char prefix[16];
};

static int threads = 4, iters = 20, sleep_us = 1000, xranges = 10, unbalanced = 0, depth = 0,
           left_open = 0;
static int tids[MAX_THREADS];
static int dev_fd = -1, dev_blk, zero_jobs;
static struct wl_counts dev_counts[MAX_THREADS + 1]; /* per worker; the last: merged */

static void die(const char *msg)
{
	fprintf(stderr, "annotate_workload: %s\n", msg);
	exit(1);
}

struct worker {
	const struct api *api;
	int idx;
};

/* One cheap query on the device (-i), counted for worker idx. */
static void query(int idx)
{
	uint64_t size;

	if (dev_fd < 0)
		return;
	if (dev_blk)
		wl_ioctl_ok(&dev_counts[idx], "BLKGETSIZE64", dev_fd, BLKGETSIZE64,
		            (unsigned long)&size);
	else
		wl_ioctl_ok(&dev_counts[idx], "KVM_GET_API_VERSION", dev_fd, KVM_GET_API_VERSION,
		            0);
}

/* One device job (-z): 4 KiB zeroed at a block of the worker's own. */
static void zero_job(int idx)
{
	uint64_t range[2] = {(uint64_t)idx * 4096, 4096};

	if (dev_fd >= 0 && zero_jobs)
		wl_ioctl_ok(&dev_counts[idx], "BLKZEROOUT", dev_fd, BLKZEROOUT,
		            (unsigned long)range);
}

static void open_dev(const char *path)
{
	struct stat st;

	dev_fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev_fd < 0 || fstat(dev_fd, &st))
		wl_die("cannot open %s: %s", path, strerror(errno));
	dev_blk = S_ISBLK(st.st_mode);
	if (!dev_blk && wl_ioctl(&dev_counts[MAX_THREADS], "KVM_GET_API_VERSION", dev_fd,
	                         KVM_GET_API_VERSION, 0) < 0)
		wl_die("%s is neither a block device nor /dev/kvm", path);
	if (zero_jobs && !dev_blk)
		wl_die("-z needs a block device");
}

static void *thread_main(void *arg)
{
	const struct worker *w = arg;
	char outer[32], inner[32], tick[32];

	snprintf(outer, sizeof(outer), "%souter", w->api->prefix);
	snprintf(inner, sizeof(inner), "%sinner", w->api->prefix);
	snprintf(tick, sizeof(tick), "%stick", w->api->prefix);
	tids[w->idx] = (int)syscall(SYS_gettid);
	for (int i = 0; i < iters; i++) {
		query(w->idx);
		w->api->push(outer);
		w->api->mark(tick);
		query(w->idx);
		w->api->push(inner);
		query(w->idx);
		zero_job(w->idx);
		query(w->idx);
		usleep((useconds_t)sleep_us);
		w->api->pop();
		w->api->pop();
	}
	return NULL;
}

static void run_threads(const struct api *api, int first)
{
	pthread_t th[MAX_THREADS];
	struct worker w[MAX_THREADS];

	for (int i = 0; i < threads; i++) {
		w[i].api = api;
		w[i].idx = i;
		if (pthread_create(&th[i], NULL, thread_main, &w[i]))
			die("pthread_create failed");
	}
	for (int i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	if (first) {
		printf("\"tids\":[");
		for (int i = 0; i < threads; i++)
			printf("%s%d", i ? "," : "", tids[i]);
		printf("],");
	}
}

/* Cross-thread ranges: started here, ended by the helper thread. */
static uint64_t xids[1024];

static void *ender(void *arg)
{
	(void)arg;
	for (int i = 0; i < xranges; i++)
		kxprof_range_end(xids[i]);
	return NULL;
}

static void run_xranges(void)
{
	pthread_t th;

	for (int i = 0; i < xranges; i++)
		xids[i] = kxprof_range_start("xrange");
	usleep((useconds_t)sleep_us);
	if (pthread_create(&th, NULL, ender, NULL))
		die("pthread_create failed");
	pthread_join(th, NULL);
}

static void load_copy(struct api *api, const char *path, int n)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		fprintf(stderr, "annotate_workload: dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	api->push = (void (*)(const char *))dlsym(h, "kxprof_range_push");
	api->pop = (void (*)(void))dlsym(h, "kxprof_range_pop");
	api->mark = (void (*)(const char *))dlsym(h, "kxprof_mark");
	if (!api->push || !api->pop || !api->mark)
		die("a dlopen'ed copy lacks the API");
	snprintf(api->prefix, sizeof(api->prefix), "dl%d/", n);
}

static void usage(void)
{
	fprintf(stderr, "usage: annotate_workload [-t THREADS] [-n ITERS] [-s SLEEP_US] "
	                "[-x XRANGES] [-u UNBALANCED] [-D DEPTH] [-O OPEN] [-l PATH]... [-S] "
	                "[-i DEV [-z]]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct api linked = {kxprof_range_push, kxprof_range_pop, kxprof_mark, ""};
	struct api copies[MAX_COPIES];
	const char *paths[MAX_COPIES];
	const char *dev = NULL;
	int ncopies = 0, stop = 0, c;

	wl_prog = "annotate_workload";
	while ((c = getopt(argc, argv, "t:n:s:x:u:D:O:l:Si:z")) != -1) {
		switch (c) {
		case 't':
			threads = atoi(optarg);
			break;
		case 'n':
			iters = atoi(optarg);
			break;
		case 's':
			sleep_us = atoi(optarg);
			break;
		case 'x':
			xranges = atoi(optarg);
			break;
		case 'u':
			unbalanced = atoi(optarg);
			break;
		case 'D':
			depth = atoi(optarg);
			break;
		case 'l':
			if (ncopies == MAX_COPIES)
				usage();
			paths[ncopies++] = optarg;
			break;
		case 'S':
			stop = 1;
			break;
		case 'i':
			dev = optarg;
			break;
		case 'z':
			zero_jobs = 1;
			break;
		case 'O':
			left_open = atoi(optarg);
			break;
		default:
			usage();
		}
	}
	if (threads < 1 || threads > MAX_THREADS || iters < 0 || xranges < 0 || xranges > 1024 ||
	    sleep_us < 0 || unbalanced < 0 || depth < 0 || left_open < 0)
		usage();
	if (dev)
		open_dev(dev);
	if (stop)
		raise(SIGSTOP);
	printf("{\"workload\":\"annotate_workload\",\"pid\":%d,", (int)getpid());
	run_threads(&linked, 1);
	run_xranges();
	for (int i = 0; i < unbalanced; i++)
		kxprof_range_pop();
	for (int i = 0; i < depth; i++)
		kxprof_range_push("deep");
	for (int i = 0; i < depth; i++)
		kxprof_range_pop();
	for (int i = 0; i < ncopies; i++)
		load_copy(&copies[i], paths[i], i + 1);
	if (stop && ncopies)
		raise(SIGSTOP);
	for (int i = 0; i < ncopies; i++)
		run_threads(&copies[i], 0);
	for (int i = 0; i < left_open; i++)
		kxprof_range_push("open");
	printf("\"threads\":%d,\"iters\":%d,\"sleep_us\":%d,\"xranges\":%d,\"unbalanced\":%d,"
	       "\"depth\":%d,\"open\":%d,\"copies\":%d,\"zero_jobs\":%d",
	       threads, iters, sleep_us, xranges, unbalanced, depth, left_open, ncopies, zero_jobs);
	if (dev) {
		for (int i = 0; i < MAX_THREADS; i++)
			wl_counts_merge(&dev_counts[MAX_THREADS], &dev_counts[i]);
		fputc(',', stdout);
		wl_print_counts(stdout, &dev_counts[MAX_THREADS]);
	}
	printf("}\n");
	return 0;
}
