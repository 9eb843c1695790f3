/*
 * annotate_copies: one process mapping many copies of libkxprof_annotate.so
 * (each a distinct file), for the tests of the annotation caps and of what
 * an attach may touch. Loads every LIB given (dlopen, in order), then for
 * each copy K (from 1) ITERS times: push "cK/outer"; mark "cK/tick"; pop.
 *
 *   -n ITERS   calls per copy (default 10; 0: none)
 *   -S         stop (SIGSTOP) after the loads, before the first call, so a
 *              tracer can attach; and again after the calls
 *   -H         after the calls and the JSON, hold the copies mapped until
 *              SIGTERM, SIGINT or the watchdog (exit 0)
 *   -T SECONDS watchdog (default 60; 0: off)
 *   -X         then cross-thread ranges of the first two copies, whose ids
 *              (each copy numbers its own, tagged with its own key) would
 *              collide untagged: started on the main thread, ended on
 *              another, at fixed times from t0 (ms):
 *                c1/cross 0-200, c2/cross 100-400 (overlapping);
 *                c1/nest 0-400, c2/nest 100-200 (nested),
 *              so that ends paired by id alone get the wrong starts either
 *              way (the latest or the earliest open start)
 *
 * KXPROF_ANNOTATE_WAIT is dropped before the loads: copies a tracer does not
 * attach (past its caps) would each hold their constructor for its wait.
 * JSON: workload, pid, copies, iters.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIBS 512

struct api {
	void (*push)(const char *);
	void (*pop)(void);
	void (*mark)(const char *);
	uint64_t (*start)(const char *);
	void (*end)(uint64_t);
};

static volatile sig_atomic_t done;

static void on_term(int sig)
{
	(void)sig;
	done = 1;
}

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "annotate_copies: %s%s\n", what, detail ? detail : "");
	exit(1);
}

static void load(const char *path, struct api *a)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!h)
		die("dlopen: ", dlerror());
	a->push = (void (*)(const char *))dlsym(h, "kxprof_range_push");
	a->pop = (void (*)(void))dlsym(h, "kxprof_range_pop");
	a->mark = (void (*)(const char *))dlsym(h, "kxprof_mark");
	a->start = (uint64_t(*)(const char *))dlsym(h, "kxprof_range_start");
	a->end = (void (*)(uint64_t))dlsym(h, "kxprof_range_end");
	if (!a->push || !a->pop || !a->mark || !a->start || !a->end)
		die("a copy lacks the API: ", path);
}

/* -X: the ends, on a thread of their own, at fixed times from t0. */
struct cross {
	struct api *api;
	struct timespec t0;
	uint64_t id[2][2]; /* [pattern][copy] */
};

static void at_ms(const struct timespec *t0, long ms)
{
	struct timespec t = *t0;

	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL))
		;
}

static void *cross_ends(void *arg)
{
	struct cross *x = arg;

	at_ms(&x->t0, 200);
	x->api[0].end(x->id[0][0]); /* c1/cross */
	x->api[1].end(x->id[1][1]); /* c2/nest */
	at_ms(&x->t0, 400);
	x->api[1].end(x->id[0][1]); /* c2/cross */
	x->api[0].end(x->id[1][0]); /* c1/nest */
	return NULL;
}

static void cross(struct api *api)
{
	static struct cross x;
	pthread_t th;

	x.api = api;
	clock_gettime(CLOCK_MONOTONIC, &x.t0);
	x.id[0][0] = api[0].start("c1/cross");
	x.id[1][0] = api[0].start("c1/nest");
	at_ms(&x.t0, 100);
	x.id[0][1] = api[1].start("c2/cross");
	x.id[1][1] = api[1].start("c2/nest");
	if (pthread_create(&th, NULL, cross_ends, &x))
		die("pthread_create failed", NULL);
	pthread_join(th, NULL);
}

int main(int argc, char **argv)
{
	static struct api api[MAX_LIBS];
	int iters = 10, stop = 0, hold = 0, watchdog = 60, xthread = 0, opt, n;

	while ((opt = getopt(argc, argv, "n:SHT:X")) != -1) {
		switch (opt) {
		case 'n':
			iters = atoi(optarg);
			break;
		case 'S':
			stop = 1;
			break;
		case 'H':
			hold = 1;
			break;
		case 'T':
			watchdog = atoi(optarg);
			break;
		case 'X':
			xthread = 1;
			break;
		default:
			fprintf(stderr,
			        "usage: annotate_copies [-n ITERS] [-S] [-H] [-T SECONDS] [-X] "
			        "LIB...\n");
			return 2;
		}
	}
	n = argc - optind;
	if (n < 1 + xthread || n > MAX_LIBS || iters < 0)
		die("give 1 to 512 libraries, ITERS >= 0", NULL);
	if (watchdog > 0)
		alarm((unsigned int)watchdog);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	unsetenv("KXPROF_ANNOTATE_WAIT");
	for (int k = 0; k < n; k++)
		load(argv[optind + k], &api[k]);
	if (stop)
		raise(SIGSTOP);
	for (int k = 0; k < n; k++) {
		char outer[32], tick[32];

		snprintf(outer, sizeof(outer), "c%d/outer", k + 1);
		snprintf(tick, sizeof(tick), "c%d/tick", k + 1);
		for (int i = 0; i < iters; i++) {
			api[k].push(outer);
			api[k].mark(tick);
			api[k].pop();
		}
	}
	if (xthread)
		cross(api);
	printf("{\"workload\": \"annotate_copies\", \"pid\": %d, \"copies\": %d, \"iters\": %d}\n",
	       (int)getpid(), n, iters);
	fflush(stdout);
	if (stop)
		raise(SIGSTOP);
	while (hold && !done)
		pause();
	return 0;
}
