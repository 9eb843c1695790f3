/*
 * ioctl_flood: a tight loop of cheap KVM_GET_API_VERSION ioctls on /dev/kvm,
 * used to measure a tracer's per-ioctl overhead and to check that it loses no
 * events under a flood. Prints the exact count and the measured cost.
 *
 * Options: -n N (ioctls per thread, default 1000000), -t THREADS (default 1),
 * -w SECONDS (run for a duration instead of a count; decimals allowed),
 * -D DEV (flood the cheap BLKGETSIZE64 on block device DEV instead, e.g. an
 * attached loop device: the same measurement where there is no /dev/kvm),
 * -L (the same on a free loop device, found with one LOOP_CTL_GET_FREE on
 * /dev/loop-control, counted; the device is only opened, never attached, so
 * there is nothing to undo).
 */
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/loop.h>

#include "workload.h"

#define MAX_THREADS 256
#define CLOCK_EVERY 1024 /* iterations between clock reads in -w mode */

/* The flooded call: KVM_GET_API_VERSION on /dev/kvm, or BLKGETSIZE64 with -D. */
static int blk_mode;
static uint64_t blk_size; /* -D: the answer every call must give */

static long one_call(int fd)
{
	uint64_t size;
	long r;

	if (!blk_mode)
		return ioctl(fd, KVM_GET_API_VERSION, 0);
	r = ioctl(fd, BLKGETSIZE64, &size);
	return r < 0 ? r : size == blk_size ? KVM_API_VERSION : -2;
}

static const char *call_name(void)
{
	return blk_mode ? "BLKGETSIZE64" : "KVM_GET_API_VERSION";
}

struct flood {
	pthread_t th;
	int fd;
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

	f->tid = gettid();
	pthread_barrier_wait(f->start);
	t0 = wl_now_ns();
	if (f->deadline) {
		for (;;) {
			unsigned int i;

			for (i = 0; i < CLOCK_EVERY; i++) {
				r = one_call(f->fd);
				n++;
				if (r != KVM_API_VERSION)
					goto bad;
			}
			if (wl_now_ns() >= f->deadline)
				break;
		}
	} else {
		while (n < f->target) {
			r = one_call(f->fd);
			n++;
			if (r != KVM_API_VERSION)
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
	fprintf(stderr, "usage: ioctl_flood [-n N] [-t THREADS] [-w SECONDS] [-D BLOCKDEV | -L]\n"
	                "  -n  KVM_GET_API_VERSION ioctls per thread (default 1000000)\n"
	                "  -t  threads, each flooding the same /dev/kvm fd (default 1)\n"
	                "  -w  run for SECONDS (e.g. 0.5) instead of a count\n"
	                "  -D  flood BLKGETSIZE64 on this block device instead of /dev/kvm\n"
	                "  -L  the same on a free loop device (not attached)\n");
	exit(2);
}

/* -D: the block device, whose size every call checks. */
static int open_block(const char *dev)
{
	struct stat sb;
	int fd = open(dev, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		wl_die("cannot open %s: %s", dev, strerror(errno));
	if (fstat(fd, &sb) || !S_ISBLK(sb.st_mode))
		wl_die("%s is not a block device", dev);
	if (ioctl(fd, BLKGETSIZE64, &blk_size) < 0)
		wl_die("BLKGETSIZE64 on %s failed: %s", dev, strerror(errno));
	blk_mode = 1;
	return fd;
}

/* -L: a free loop device's node, its number from one LOOP_CTL_GET_FREE. */
static const char *free_loop(char *buf, size_t len, unsigned long *getfree_calls)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	long n;

	if (ctl < 0)
		wl_die("cannot open /dev/loop-control: %s", strerror(errno));
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	(*getfree_calls)++;
	if (n < 0)
		wl_die("LOOP_CTL_GET_FREE failed: %s", strerror(errno));
	close(ctl);
	snprintf(buf, len, "/dev/loop%ld", n);
	return buf;
}

int main(int argc, char **argv)
{
	unsigned long n = 1000000, total = 0;
	unsigned int threads = 1, i;
	double seconds = 0;
	const char *dev = NULL;
	unsigned long getfree = 0;
	char loopdev[32];
	int use_free_loop = 0;
	struct flood *fl;
	pthread_barrier_t start;
	uint64_t t0, wall, busy = 0;
	int fd, c;

	wl_prog = "ioctl_flood";
	while ((c = getopt(argc, argv, "n:t:w:D:Lh")) != -1) {
		switch (c) {
		case 'n':
			n = wl_parse_num("-n", optarg, 0, ULONG_MAX);
			break;
		case 't':
			threads = wl_parse_num("-t", optarg, 1, MAX_THREADS);
			break;
		case 'w':
			seconds = wl_parse_seconds("-w", optarg, 86400);
			break;
		case 'D':
			dev = optarg;
			break;
		case 'L':
			use_free_loop = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc || (dev && use_free_loop))
		usage();

	if (use_free_loop)
		dev = free_loop(loopdev, sizeof(loopdev), &getfree);
	fd = dev ? open_block(dev) : wl_open_kvm();
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
		if (fl[i].bad && fl[i].bad_ret == -2)
			wl_die("BLKGETSIZE64 changed its answer after %lu calls", fl[i].done);
		if (fl[i].bad && fl[i].bad_ret < 0)
			wl_die("%s failed after %lu calls: %s", call_name(), fl[i].done,
			       strerror(fl[i].err));
		if (fl[i].bad)
			wl_die("KVM_GET_API_VERSION returned %ld, expected %d", fl[i].bad_ret,
			       KVM_API_VERSION);
		total += fl[i].done;
		busy += fl[i].elapsed_ns;
	}

	printf("{\"workload\":\"ioctl_flood\",\"pid\":%d,\"tids\":[", (int)getpid());
	for (i = 0; i < threads; i++)
		printf("%s%d", i ? "," : "", (int)fl[i].tid);
	/* ioctls: every call issued, -D's size check at open included. */
	printf("],\"threads\":%u,\"mode\":\"%s\",\"ioctls\":{\"%s\":%lu", threads,
	       seconds > 0 ? "duration" : "count", call_name(), total + (unsigned long)blk_mode);
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
