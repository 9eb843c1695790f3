/*
 * syscall_loop: what a tracer charges the rest of the host, measured on work
 * that issues no ioctl at all (the benchmarks' host-cost rows):
 *   getppid   a tight loop of getppid(), the cheapest syscall: ns per call;
 *   pingpong  two threads pinned to one CPU passing a byte back and forth
 *             through two pipes: every round trip is two context switches
 *             (each thread blocks in read and is woken by the other's write)
 *             and four syscalls (a write and a read per thread): ns per
 *             round trip, with the switches counted by getrusage.
 * Each part runs for -w SECONDS; -m picks one or both (default both, getppid
 * first). Costs are CPU time of the threads involved (CLOCK_THREAD_CPUTIME_ID:
 * on a shared machine, time spent running others is not counted), next to
 * the wall time. Prints one JSON object: getppid {calls, ns_per_call,
 * wall_ns_per_call}, pingpong {round_trips, ns_per_round_trip,
 * wall_ns_per_round_trip, switches, switches_per_round_trip,
 * syscalls_per_round_trip, cpu}, and empty "ioctls" and "errors".
 */
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>

#include "workload.h"

#define CLOCK_EVERY 1024 /* calls between clock reads */

static uint64_t clock_ns(clockid_t id)
{
	struct timespec t;

	if (clock_gettime(id, &t))
		wl_die("clock_gettime: %s", strerror(errno));
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

struct pp_side {
	int in, out;     /* pipe ends: read the peer's byte from in, answer on out */
	int cpu;         /* the CPU both sides run on */
	uint64_t rounds; /* round trips done */
	long switches;   /* voluntary + involuntary context switches of the thread */
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if ((errno = pthread_setaffinity_np(pthread_self(), sizeof(set), &set)))
		wl_die("cannot pin to CPU %d: %s", cpu, strerror(errno));
}

static long thread_switches(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_THREAD, &ru))
		wl_die("getrusage: %s", strerror(errno));
	return ru.ru_nvcsw + ru.ru_nivcsw;
}

static void xfer(int fd, int out)
{
	char c = 'x';
	ssize_t n = out ? write(fd, &c, 1) : read(fd, &c, 1);

	if (n != 1)
		wl_die("pipe %s failed: %s", out ? "write" : "read",
		       n < 0 ? strerror(errno) : "EOF");
}

/* The answering side: echoes every byte until the pipe closes. */
static void *pong(void *arg)
{
	struct pp_side *s = arg;
	long sw0;
	char c;

	pin(s->cpu);
	sw0 = thread_switches();
	while (read(s->in, &c, 1) == 1) {
		xfer(s->out, 1);
		s->rounds++;
	}
	s->switches = thread_switches() - sw0;
	return NULL;
}

/* ns[0]: CPU ns per call, ns[1]: wall ns per call. */
static void run_getppid(double seconds, uint64_t *calls, double *ns)
{
	uint64_t t0 = wl_now_ns(), c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	uint64_t end = t0 + (uint64_t)(seconds * 1e9), n = 0, t;
	volatile pid_t sink = 0;

	do {
		for (int i = 0; i < CLOCK_EVERY; i++)
			sink = getppid();
		n += CLOCK_EVERY;
		t = wl_now_ns();
	} while (t < end);
	(void)sink;
	*calls = n;
	ns[0] = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0) / (double)n;
	ns[1] = (double)(t - t0) / (double)n;
}

/* ns[0]: CPU ns of both threads per round trip, ns[1]: wall ns per round trip. */
static void run_pingpong(double seconds, struct pp_side *me, struct pp_side *peer, double *ns)
{
	int a[2], b[2];
	pthread_t th;
	clockid_t peer_clock;
	uint64_t t0, end, n = 0, t, c0;
	long sw0;

	if (pipe(a) || pipe(b))
		wl_die("pipe: %s", strerror(errno));
	me->cpu = peer->cpu = sched_getcpu() < 0 ? 0 : sched_getcpu();
	me->in = b[0], me->out = a[1];
	peer->in = a[0], peer->out = b[1];
	pin(me->cpu);
	if ((errno = pthread_create(&th, NULL, pong, peer)))
		wl_die("pthread_create: %s", strerror(errno));
	xfer(me->out, 1); /* one warm-up round trip: both threads are running */
	xfer(me->in, 0);
	if ((errno = pthread_getcpuclockid(th, &peer_clock)))
		wl_die("pthread_getcpuclockid: %s", strerror(errno));
	sw0 = thread_switches();
	c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID) + clock_ns(peer_clock);
	t0 = wl_now_ns();
	end = t0 + (uint64_t)(seconds * 1e9);
	do {
		for (int i = 0; i < CLOCK_EVERY / 8; i++) {
			xfer(me->out, 1);
			xfer(me->in, 0);
		}
		n += CLOCK_EVERY / 8;
		t = wl_now_ns();
	} while (t < end);
	/* The peer is blocked in read again (our last byte came back). */
	ns[0] = (double)(clock_ns(CLOCK_THREAD_CPUTIME_ID) + clock_ns(peer_clock) - c0) / (double)n;
	ns[1] = (double)(t - t0) / (double)n;
	me->switches = thread_switches() - sw0;
	me->rounds = n;
	close(me->out); /* the peer's read sees EOF */
	pthread_join(th, NULL);
	close(me->in);
	close(a[0]);
	close(b[1]);
}

static void usage(void)
{
	fprintf(stderr, "usage: syscall_loop [-m getppid|pingpong|both] [-w SECONDS]\n"
	                "  -m  which part to run (default both)\n"
	                "  -w  seconds per part (default 1; decimals allowed)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *mode = "both";
	double seconds = 1, gp_ns[2] = {0}, pp_ns[2] = {0};
	struct pp_side me = {0}, peer = {0};
	uint64_t gp_calls = 0;
	int c, gp, pp;

	wl_prog = "syscall_loop";
	while ((c = getopt(argc, argv, "m:w:h")) != -1) {
		if (c == 'm')
			mode = optarg;
		else if (c == 'w')
			seconds = wl_parse_seconds("-w", optarg, 3600);
		else
			usage();
	}
	if (optind != argc)
		usage();
	gp = !strcmp(mode, "getppid") || !strcmp(mode, "both");
	pp = !strcmp(mode, "pingpong") || !strcmp(mode, "both");
	if (!gp && !pp)
		wl_die("option -m: expected getppid, pingpong or both, got '%s'", mode);
	if (gp)
		run_getppid(seconds, &gp_calls, gp_ns);
	if (pp)
		run_pingpong(seconds, &me, &peer, pp_ns);
	printf("{\"workload\":\"syscall_loop\",\"pid\":%d,\"mode\":\"%s\",\"seconds\":%g", getpid(),
	       mode, seconds);
	if (gp)
		printf(",\"getppid\":{\"calls\":%llu,\"ns_per_call\":%.1f,\"wall_ns_per_call\":%."
		       "1f}",
		       (unsigned long long)gp_calls, gp_ns[0], gp_ns[1]);
	if (pp)
		printf(",\"pingpong\":{\"round_trips\":%llu,\"ns_per_round_trip\":%.1f,"
		       "\"wall_ns_per_round_trip\":%.1f,\"switches\":%ld,"
		       "\"switches_per_round_trip\":%.3f,\"syscalls_per_round_trip\":4,\"cpu\":%d}",
		       (unsigned long long)me.rounds, pp_ns[0], pp_ns[1],
		       me.switches + peer.switches,
		       me.rounds ? (double)(me.switches + peer.switches) / (double)me.rounds : 0.0,
		       me.cpu);
	printf(",\"ioctls\":{},\"errors\":{}}\n");
	if (fflush(stdout))
		wl_die("writing stdout failed: %s", strerror(errno));
	return 0;
}
