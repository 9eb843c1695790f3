/*
 * ioctl_flood: a tight loop of cheap KVM_GET_API_VERSION ioctls on /dev/kvm,
 * used to measure a tracer's per-ioctl overhead and to check that it loses no
 * events under a flood. Prints the exact count and the measured cost.
 *
 * Options: -n N (ioctls per thread, default 1000000), -t THREADS (default 1),
 * -w SECONDS (run for a duration instead of a count; decimals allowed).
 * Where there is no /dev/kvm the loop driver's cheap call stands in:
 * -L floods BLKGETSIZE64 on a free loop device (found with one
 * LOOP_CTL_GET_FREE on /dev/loop-control, counted; the device is only opened,
 * never attached), -D DEV on the given block device.
 */
#include <fcntl.h>
#include <pthread.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/loop.h>

#include "workload.h"

#define MAX_THREADS 256
#define CLOCK_EVERY 1024 /* iterations between clock reads in -w mode */

/* The call flooded: KVM_GET_API_VERSION, or BLKGETSIZE64 on a block device. */
struct call {
	const char *name;
	unsigned long req;
	int with_arg; /* BLKGETSIZE64 writes a u64 */
	long want;    /* its return value */
};

static const struct call kvm_call = {"KVM_GET_API_VERSION", KVM_GET_API_VERSION, 0,
                                     KVM_API_VERSION};
static const struct call blk_call = {"BLKGETSIZE64", BLKGETSIZE64, 1, 0};
static const struct call *call = &kvm_call;

struct flood {
	pthread_t th;
	int fd;
	uint64_t size;        /* BLKGETSIZE64's answer */
	unsigned long target; /* count mode: ioctls to issue */
	uint64_t deadline;    /* duration mode: CLOCK_MONOTONIC end, else 0 */
	pthread_barrier_t *start;
	pid_t tid;
	unsigned long done;
	uint64_t elapsed_ns;
	int bad, err;
	long bad_ret;
};

static void *flood_main(void *arg)
{
	struct flood *f = arg;
	unsigned long n = 0;
	uint64_t t0;
	long r;

	unsigned long req = call->req, ioarg = call->with_arg ? (unsigned long)&f->size : 0;
	long want = call->want;

	f->tid = gettid();
	pthread_barrier_wait(f->start);
	t0 = wl_now_ns();
	if (f->deadline) {
		for (;;) {
			unsigned int i;

			for (i = 0; i < CLOCK_EVERY; i++) {
				r = ioctl(f->fd, req, ioarg);
				n++;
				if (r != want)
					goto bad;
			}
			if (wl_now_ns() >= f->deadline)
				break;
		}
	} else {
		while (n < f->target) {
			r = ioctl(f->fd, req, ioarg);
			n++;
			if (r != want)
				goto bad;
		}
	}
	f->elapsed_ns = wl_now_ns() - t0;
	f->done = n;
	return NULL;
bad:
	f->bad = 1;
	f->err = r < 0 ? errno : 0;
	f->bad_ret = r;
	f->done = n;
	return NULL;
}

static void usage(void)
{
	fprintf(stderr, "usage: ioctl_flood [-n N] [-t THREADS] [-w SECONDS] [-L | -D DEV]\n"
	                "  -n  KVM_GET_API_VERSION ioctls per thread (default 1000000)\n"
	                "  -t  threads, each flooding the same /dev/kvm fd (default 1)\n"
	                "  -w  run for SECONDS (e.g. 0.5) instead of a count\n"
	                "  -L  BLKGETSIZE64 on a free loop device instead (not attached)\n"
	                "  -D  BLKGETSIZE64 on this block device instead\n");
	exit(2);
}

/* A free loop device, opened read-only: its number comes from one counted
 * LOOP_CTL_GET_FREE. Nothing is attached, so there is nothing to undo. */
static int open_free_loop(unsigned long *getfree_calls)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC), fd;
	char dev[32];
	long n;

	if (ctl < 0)
		wl_die("cannot open /dev/loop-control: %s", strerror(errno));
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	(*getfree_calls)++;
	if (n < 0)
		wl_die("LOOP_CTL_GET_FREE failed: %s", strerror(errno));
	close(ctl);
	snprintf(dev, sizeof(dev), "/dev/loop%ld", n);
	fd = open(dev, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		wl_die("cannot open %s: %s", dev, strerror(errno));
	return fd;
}

static double parse_seconds(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || *end || !(v > 0) || v > 86400)
		wl_die("option -w: expected seconds in (0, 86400], got '%s'", s);
	return v;
}

int main(int argc, char **argv)
{
	unsigned long n = 1000000, total = 0;
	unsigned int threads = 1, i;
	double seconds = 0;
	struct flood *fl;
	pthread_barrier_t start;
	uint64_t t0, wall, busy = 0;
	unsigned long getfree = 0;
	const char *dev = NULL;
	int fd, c, free_loop = 0;

	wl_prog = "ioctl_flood";
	while ((c = getopt(argc, argv, "n:t:w:LD:h")) != -1) {
		switch (c) {
		case 'n':
			n = wl_parse_num("-n", optarg, 0, ULONG_MAX);
			break;
		case 't':
			threads = wl_parse_num("-t", optarg, 1, MAX_THREADS);
			break;
		case 'w':
			seconds = parse_seconds(optarg);
			break;
		case 'L':
			free_loop = 1;
			call = &blk_call;
			break;
		case 'D':
			dev = optarg;
			call = &blk_call;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (free_loop && dev))
		usage();

	if (free_loop)
		fd = open_free_loop(&getfree);
	else
		fd = open(dev ? dev : "/dev/kvm", (dev ? O_RDONLY : O_RDWR) | O_CLOEXEC);
	if (fd < 0)
		wl_die("cannot open %s: %s", dev ? dev : "/dev/kvm", strerror(errno));
	fl = calloc(threads, sizeof(*fl));
	if (!fl)
		wl_die("out of memory");
	errno = pthread_barrier_init(&start, NULL, threads + 1);
	if (errno)
		wl_die("pthread_barrier_init: %s", strerror(errno));
	for (i = 0; i < threads; i++) {
		fl[i].fd = fd;
		fl[i].target = n;
		fl[i].start = &start;
	}
	for (i = 0; i < threads; i++) {
		errno = pthread_create(&fl[i].th, NULL, flood_main, &fl[i]);
		if (errno)
			wl_die("pthread_create: %s", strerror(errno));
	}
	t0 = wl_now_ns();
	if (seconds > 0)
		for (i = 0; i < threads; i++)
			fl[i].deadline = t0 + (uint64_t)(seconds * 1e9);
	pthread_barrier_wait(&start);
	for (i = 0; i < threads; i++) {
		errno = pthread_join(fl[i].th, NULL);
		if (errno)
			wl_die("pthread_join: %s", strerror(errno));
	}
	wall = wl_now_ns() - t0;
	for (i = 0; i < threads; i++) {
		if (fl[i].bad && fl[i].bad_ret < 0)
			wl_die("%s failed after %lu calls: %s", call->name, fl[i].done,
			       strerror(fl[i].err));
		if (fl[i].bad)
			wl_die("%s returned %ld, expected %ld", call->name, fl[i].bad_ret,
			       call->want);
		total += fl[i].done;
		busy += fl[i].elapsed_ns;
	}

	printf("{\"workload\":\"ioctl_flood\",\"pid\":%d,\"tids\":[", (int)getpid());
	for (i = 0; i < threads; i++)
		printf("%s%d", i ? "," : "", (int)fl[i].tid);
	printf("],\"threads\":%u,\"mode\":\"%s\",\"ioctls\":{\"%s\":%lu", threads,
	       seconds > 0 ? "duration" : "count", call->name, total);
	if (getfree)
		printf(",\"LOOP_CTL_GET_FREE\":%lu", getfree);
	printf("},\"errors\":{},\"per_thread\":[");
	for (i = 0; i < threads; i++)
		printf("%s%lu", i ? "," : "", fl[i].done);
	printf("],\"elapsed_ns\":%llu,\"ns_per_ioctl\":%.1f,\"ioctls_per_sec\":%.0f}\n",
	       (unsigned long long)wall, total ? (double)busy / total : 0.0,
	       wall ? total * 1e9 / wall : 0.0);
	if (fflush(stdout))
		wl_die("writing stdout failed: %s", strerror(errno));
	pthread_barrier_destroy(&start);
	free(fl);
	close(fd);
	return 0;
}
