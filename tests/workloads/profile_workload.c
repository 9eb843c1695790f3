/*
 * profile_workload: a known CPU profile for the sampling tests. Built with
 * frame pointers, so every sample unwinds through its callers to main.
 *
 * Phases, in order (each optional but the spin phase):
 *   spin    -s SECONDS: kxw_spin_phase calls kxw_heavy and kxw_light in
 *           rounds of 3 and 1 work units of equal cost, so their CPU time
 *           is 3:1
 *   flush   -f SECONDS on -D DEV (a loop device): kxw_flush_phase fills the
 *           page cache with the device (kxw_fill: readahead) then issues
 *           BLKFLSBUF, whose invalidation of those pages keeps the ioctl busy
 *           on the CPU in the kernel, over and over
 *   zero    -z SECONDS on -D DEV: kxw_zero_phase issues BLKZEROOUT of 1 MiB
 *           (-Z KiB), a submit-and-wait ioctl: the thread sleeps inside it
 *   exec    -- CMD ARGS: then becomes CMD (same pid), e.g. kvm_workload for a
 *           busy KVM_RUN; CMD prints its own JSON instead of this one
 * With -w it first waits for a line on its standard input (a tracer
 * attached to its pid gets ready meanwhile). With -n it makes itself not
 * dumpable (prctl PR_SET_DUMPABLE 0) before the spin phase, as the exec of
 * a program its user may not read would, and dumpable again after it.
 *
 * JSON: workload, pid, tid, spin{seconds, heavy_units, light_units},
 * ioctls{BLKFLSBUF, BLKZEROOUT}, errors, flush_ns{n,min,mean,max},
 * zero_ns{n,min,mean,max}, cpu_ns (its own user + system time).
 */
#include <fcntl.h>
#include <getopt.h>
#include <linux/fs.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workload.h"

#define UNIT_ITERS 10000 /* loop iterations of one work unit (tens of µs) */
/* Both work functions start on a cache line: the same instructions at other
 * offsets run at other speeds, which would skew their 3:1 split. */
#define SAME_LAYOUT __attribute__((noinline, aligned(64)))

static volatile unsigned long sink;
static unsigned long heavy_units, light_units;

SAME_LAYOUT void kxw_heavy(int units)
{
	volatile unsigned long acc = 0; /* on the stack: the function gets a frame */

	for (long i = 0; i < (long)units * UNIT_ITERS; i++)
		acc += i ^ (acc >> 3);
	sink += acc;
	heavy_units += units;
}

SAME_LAYOUT void kxw_light(int units)
{
	volatile unsigned long acc = 0;

	for (long i = 0; i < (long)units * UNIT_ITERS; i++)
		acc += i ^ (acc >> 3);
	sink += acc;
	light_units += units;
}

__attribute__((noinline)) void kxw_spin_phase(double secs)
{
	uint64_t end = wl_now_ns() + (uint64_t)(secs * 1e9);

	while (wl_now_ns() < end) {
		kxw_heavy(3);
		kxw_light(1);
	}
}

/* Fills the page cache with size bytes of fd (readahead: no copy to user
 * space, so the flush that follows is most of the phase's CPU time). */
__attribute__((noinline)) void kxw_fill(int fd, unsigned long long size)
{
	if (readahead(fd, 0, (size_t)size) < 0)
		wl_die("readahead of the device failed: %s", strerror(errno));
}

__attribute__((noinline)) void kxw_flush_phase(struct wl_counts *wc, struct wl_stats *st, int fd,
                                               unsigned long long size, double secs)
{
	uint64_t end = wl_now_ns() + (uint64_t)(secs * 1e9), t0;

	while (wl_now_ns() < end) {
		kxw_fill(fd, size);
		t0 = wl_now_ns();
		wl_ioctl_ok(wc, "BLKFLSBUF", fd, BLKFLSBUF, 0);
		wl_stats_add(st, wl_now_ns() - t0);
	}
}

__attribute__((noinline)) void kxw_zero_phase(struct wl_counts *wc, struct wl_stats *st, int fd,
                                              unsigned long long size, unsigned long long bytes,
                                              double secs)
{
	uint64_t end = wl_now_ns() + (uint64_t)(secs * 1e9), t0, range[2];
	unsigned long long slots = size / bytes, j = 0;

	while (wl_now_ns() < end) {
		range[0] = (j++ % slots) * bytes;
		range[1] = bytes;
		t0 = wl_now_ns();
		wl_ioctl_ok(wc, "BLKZEROOUT", fd, BLKZEROOUT, (unsigned long)range);
		wl_stats_add(st, wl_now_ns() - t0);
	}
}

/* A duration option: decimals allowed, at most an hour. */
static double parse_secs(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0 && v <= 3600))
		wl_die("option %s: expected seconds in [0, 3600], got '%s'", opt, s);
	return v;
}

/* Killed by SIGALRM (its default action) past the watchdog. */
static void watchdog(unsigned long long secs)
{
	alarm((unsigned int)secs);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: profile_workload [-s SECONDS] [-D DEV [-f SECONDS] [-z SECONDS] [-Z KiB]]\n"
	        "                        [-T SECONDS] [-w] [-n] [-- CMD ARGS...]\n"
	        "  -s  spin phase: kxw_heavy and kxw_light at 3:1 CPU (default 1)\n"
	        "  -D  block device (a loop device) for the flush and zero phases\n"
	        "  -f  flush phase: read DEV through the page cache, then BLKFLSBUF, repeated\n"
	        "  -z  zero phase: BLKZEROOUT of -Z KiB (default 1024), repeated (sleeps inside)\n"
	        "  -T  watchdog seconds (default 60, 0 = off)\n"
	        "  -w  wait for a line on standard input before the first phase\n"
	        "  -n  not dumpable during the spin phase\n"
	        "  --  then exec CMD (its JSON replaces this one)\n");
	exit(2);
}

struct opts {
	double spin, flush, zero;
	const char *dev;
	unsigned long long zero_bytes;
	char **cmd;
	int wait;       /* -w */
	int undumpable; /* -n */
};

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	o->spin = 1;
	o->zero_bytes = 1 << 20;
	while ((c = getopt(argc, argv, "s:D:f:z:Z:T:wnh")) != -1) {
		switch (c) {
		case 's':
			o->spin = parse_secs("-s", optarg);
			break;
		case 'D':
			o->dev = optarg;
			break;
		case 'f':
			o->flush = parse_secs("-f", optarg);
			break;
		case 'z':
			o->zero = parse_secs("-z", optarg);
			break;
		case 'Z':
			o->zero_bytes = wl_parse_num("-Z", optarg, 4, 1 << 20) << 10;
			break;
		case 'T':
			watchdog(wl_parse_num("-T", optarg, 0, 86400));
			break;
		case 'w':
			o->wait = 1;
			break;
		case 'n':
			o->undumpable = 1;
			break;
		default:
			usage();
		}
	}
	if ((o->flush > 0 || o->zero > 0) && !o->dev)
		wl_die("-f and -z need a block device: -D /dev/loopN");
	if (optind < argc)
		o->cmd = argv + optind;
}

/* This process's CPU time so far (user + system), ns. */
static unsigned long long cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (unsigned long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (unsigned long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

static void print_json(const struct opts *o, const struct wl_counts *wc, const struct wl_stats *fl,
                       const struct wl_stats *zs)
{
	printf("{\"workload\":\"profile_workload\",\"pid\":%d,\"tid\":%d,"
	       "\"spin\":{\"seconds\":%.3f,\"heavy_units\":%lu,\"light_units\":%lu},",
	       (int)getpid(), (int)gettid(), o->spin, heavy_units, light_units);
	wl_print_counts(stdout, wc);
	fputc(',', stdout);
	wl_print_stats(stdout, "flush_ns", fl);
	fputc(',', stdout);
	wl_print_stats(stdout, "zero_ns", zs);
	printf(",\"cpu_ns\":%llu}\n", cpu_ns());
}

int main(int argc, char **argv)
{
	struct wl_stats fl = {0}, zs = {0};
	struct wl_counts wc = {0};
	struct opts o = {0};
	unsigned long long size = 0;
	int fd = -1;

	wl_prog = "profile_workload";
	watchdog(60);
	parse(argc, argv, &o);
	if (o.dev) {
		fd = open(o.dev, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			wl_die("cannot open %s: %s", o.dev, strerror(errno));
		if (ioctl(fd, BLKGETSIZE64, &size) < 0 || !size)
			wl_die("cannot read the size of %s: %s", o.dev, strerror(errno));
		if (o.zero > 0 && size < o.zero_bytes)
			wl_die("%s is smaller than -Z", o.dev);
	}
	if (o.wait) {
		char line[16];

		if (!fgets(line, sizeof(line), stdin))
			wl_die("-w: standard input ended before the go line");
	}
	if (o.undumpable && prctl(PR_SET_DUMPABLE, 0))
		wl_die("prctl PR_SET_DUMPABLE 0 failed");
	kxw_spin_phase(o.spin);
	if (o.undumpable && prctl(PR_SET_DUMPABLE, 1))
		wl_die("prctl PR_SET_DUMPABLE 1 failed");
	if (o.flush > 0)
		kxw_flush_phase(&wc, &fl, fd, size, o.flush);
	if (o.zero > 0)
		kxw_zero_phase(&wc, &zs, fd, size, o.zero_bytes, o.zero);
	if (fd >= 0)
		close(fd);
	if (o.cmd) {
		fflush(NULL);
		execvp(o.cmd[0], o.cmd);
		wl_die("cannot run %s: %s", o.cmd[0], strerror(errno));
	}
	print_json(&o, &wc, &fl, &zs);
	return 0;
}
