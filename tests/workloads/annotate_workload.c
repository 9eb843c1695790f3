/*
 * annotate_workload: known annotations through libkxprof_annotate.so, for
 * the capture tests. THREADS threads each run ITERS times:
 *   push "outer"; mark "tick"; push "inner"; sleep SLEEP_US; pop; pop
 * the main thread starts XRANGES cross-thread ranges "xrange" that a helper
 * thread ends, then issues UNBALANCED pops with no push and one nest of
 * DEPTH ranges "deep". Each -l PATH dlopens another copy of the library
 * and repeats the thread part through it with names prefixed "dlN/" (N from
 * 1, in -l order). With -S the process stops itself (SIGSTOP) before its
 * first call and again after the dlopens, so a tracer can attach.
 * Prints one JSON object: what it did.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kxprof_annotate.h"

#define MAX_THREADS 64
#define MAX_COPIES  4

struct api {
	void (*push)(const char *);
	void (*pop)(void);
	void (*mark)(const char *);
	char prefix[16];
};

static int threads = 4, iters = 20, sleep_us = 1000, xranges = 10, unbalanced = 0, depth = 0;
static int tids[MAX_THREADS];

static void die(const char *msg)
{
	fprintf(stderr, "annotate_workload: %s\n", msg);
	exit(1);
}

struct worker {
	const struct api *api;
	int idx;
};

static void *thread_main(void *arg)
{
	const struct worker *w = arg;
	char outer[32], inner[32], tick[32];

	snprintf(outer, sizeof(outer), "%souter", w->api->prefix);
	snprintf(inner, sizeof(inner), "%sinner", w->api->prefix);
	snprintf(tick, sizeof(tick), "%stick", w->api->prefix);
	tids[w->idx] = (int)syscall(SYS_gettid);
	for (int i = 0; i < iters; i++) {
		w->api->push(outer);
		w->api->mark(tick);
		w->api->push(inner);
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
	                "[-x XRANGES] [-u UNBALANCED] [-D DEPTH] [-l PATH]... [-S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct api linked = {kxprof_range_push, kxprof_range_pop, kxprof_mark, ""};
	struct api copies[MAX_COPIES];
	const char *paths[MAX_COPIES];
	int ncopies = 0, stop = 0, c;

	while ((c = getopt(argc, argv, "t:n:s:x:u:D:l:S")) != -1) {
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
		default:
			usage();
		}
	}
	if (threads < 1 || threads > MAX_THREADS || iters < 0 || xranges < 0 || xranges > 1024 ||
	    sleep_us < 0 || unbalanced < 0 || depth < 0)
		usage();
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
	printf("\"threads\":%d,\"iters\":%d,\"sleep_us\":%d,\"xranges\":%d,\"unbalanced\":%d,"
	       "\"depth\":%d,\"copies\":%d}\n",
	       threads, iters, sleep_us, xranges, unbalanced, depth, ncopies);
	return 0;
}
