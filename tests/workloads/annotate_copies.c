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
 *
 * KXPROF_ANNOTATE_WAIT is dropped before the loads: copies a tracer does not
 * attach (past its caps) would each hold their constructor for its wait.
 * JSON: workload, pid, copies, iters.
 */
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_LIBS 512

struct api {
	void (*push)(const char *);
	void (*pop)(void);
	void (*mark)(const char *);
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
	if (!a->push || !a->pop || !a->mark)
		die("a copy lacks the API: ", path);
}

int main(int argc, char **argv)
{
	static struct api api[MAX_LIBS];
	int iters = 10, stop = 0, hold = 0, watchdog = 60, opt, n;

	while ((opt = getopt(argc, argv, "n:SHT:")) != -1) {
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
		default:
			fprintf(stderr, "usage: annotate_copies [-n ITERS] [-S] [-H] [-T SECONDS] "
			                "LIB...\n");
			return 2;
		}
	}
	n = argc - optind;
	if (n < 1 || n > MAX_LIBS || iters < 0)
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
	printf("{\"workload\": \"annotate_copies\", \"pid\": %d, \"copies\": %d, \"iters\": %d}\n",
	       (int)getpid(), n, iters);
	fflush(stdout);
	if (stop)
		raise(SIGSTOP);
	while (hold && !done)
		pause();
	return 0;
}
