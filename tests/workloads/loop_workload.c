/*
 * loop_workload: a known, countable block-driver workload for kxprof tests.
 *
 * Creates a backing file in a fresh temp dir, takes a free loop device
 * (LOOP_CTL_GET_FREE), attaches the file (LOOP_CONFIGURE, or LOOP_SET_FD +
 * LOOP_SET_STATUS64 where LOOP_CONFIGURE is missing), checks BLKGETSIZE64,
 * optionally does O_DIRECT writes and reads on the device, then detaches it
 * (LOOP_CLR_FD) and removes the temp dir. The device is detached and the
 * files removed on every error path too (and the device is configured with
 * LO_FLAGS_AUTOCLEAR, so even a killed run frees it once its fd closes).
 * Prints every ioctl it issued, by name, as one JSON object on stdout.
 *
 * Options: -s MiB (backing size, default 8), -d (O_DIRECT I/O), -b BLOCKS
 * (4 KiB blocks written then read back with -d, default 64), -L (legacy
 * attach: LOOP_SET_FD + LOOP_SET_STATUS64), -p DIR (parent of the temp dir),
 * -F (fail on purpose once attached, to test the cleanup path).
 */
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <linux/loop.h>

#include "workload.h"

#define IO_BLOCK  4096u
#define MAX_TRIES 20 /* LOOP_CTL_GET_FREE rounds when other processes race us */

struct state {
	char dir[PATH_MAX];
	char file[PATH_MAX + 16];
	char dev[64];
	int have_dir, have_file;
	int backing_fd, ctl_fd, loop_fd, dio_fd;
	int attached;
	struct wl_counts counts;
};

static struct state st = {.backing_fd = -1, .ctl_fd = -1, .loop_fd = -1, .dio_fd = -1};

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Undo whatever has been set up so far. Only async-signal-safe calls. */
static void cleanup(void)
{
	close_fd(&st.dio_fd);
	if (st.attached && st.loop_fd >= 0) {
		long r = ioctl(st.loop_fd, LOOP_CLR_FD, 0);

		wl_record(&st.counts, "LOOP_CLR_FD", r, errno);
		st.attached = 0;
	}
	close_fd(&st.loop_fd);
	close_fd(&st.ctl_fd);
	close_fd(&st.backing_fd);
	if (st.have_file)
		unlink(st.file);
	st.have_file = 0;
	if (st.have_dir)
		rmdir(st.dir);
	st.have_dir = 0;
}

static void on_signal(int sig)
{
	static const char msg[] = "loop_workload: interrupted, cleaned up\n";

	cleanup();
	if (write(STDERR_FILENO, msg, sizeof(msg) - 1) < 0) {
		/* nothing more to do */
	}
	_exit(128 + sig);
}

static void make_backing(const char *parent, unsigned long long size)
{
	snprintf(st.dir, sizeof(st.dir), "%s/kxprof-loop-XXXXXX", parent);
	if (!mkdtemp(st.dir))
		wl_die("cannot create a temp dir under %s: %s", parent, strerror(errno));
	st.have_dir = 1;
	snprintf(st.file, sizeof(st.file), "%s/backing.img", st.dir);
	st.backing_fd = open(st.file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (st.backing_fd < 0)
		wl_die("cannot create %s: %s", st.file, strerror(errno));
	st.have_file = 1;
	if (ftruncate(st.backing_fd, size))
		wl_die("cannot size %s: %s", st.file, strerror(errno));
}

/* Attach the backing file to a free loop device; returns the name used. */
static const char *attach(int legacy)
{
	struct wl_counts *wc = &st.counts;
	int tries;

	st.ctl_fd = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (st.ctl_fd < 0)
		wl_die("cannot open /dev/loop-control: %s", strerror(errno));
	for (tries = 0; tries < MAX_TRIES; tries++) {
		struct loop_config cfg;
		long n, r;

		n = wl_ioctl_ok(wc, "LOOP_CTL_GET_FREE", st.ctl_fd, LOOP_CTL_GET_FREE, 0);
		snprintf(st.dev, sizeof(st.dev), "/dev/loop%ld", n);
		st.loop_fd = open(st.dev, O_RDWR | O_CLOEXEC);
		if (st.loop_fd < 0 && (errno == ENXIO || errno == EBUSY)) {
			/* Being torn down by its previous user: try another one. */
			usleep(1000 * (tries + 1));
			continue;
		}
		if (st.loop_fd < 0)
			wl_die("cannot open %s: %s", st.dev, strerror(errno));

		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = st.backing_fd;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		/* The kernel keeps only LO_NAME_SIZE bytes of the name; a prefix will do. */
		memcpy(cfg.info.lo_file_name, st.file, strnlen(st.file, LO_NAME_SIZE - 1));
		if (!legacy) {
			r = wl_ioctl(wc, "LOOP_CONFIGURE", st.loop_fd, LOOP_CONFIGURE,
			             (unsigned long)&cfg);
			if (r == 0) {
				st.attached = 1;
				return "LOOP_CONFIGURE";
			}
			if (errno != EINVAL && errno != ENOTTY && errno != EBUSY)
				wl_die("LOOP_CONFIGURE on %s failed: %s", st.dev, strerror(errno));
		}
		if (legacy || errno != EBUSY) {
			r = wl_ioctl(wc, "LOOP_SET_FD", st.loop_fd, LOOP_SET_FD, st.backing_fd);
			if (r == 0) {
				st.attached = 1;
				wl_ioctl_ok(wc, "LOOP_SET_STATUS64", st.loop_fd, LOOP_SET_STATUS64,
				            (unsigned long)&cfg.info);
				return "LOOP_SET_FD";
			}
			if (errno != EBUSY)
				wl_die("LOOP_SET_FD on %s failed: %s", st.dev, strerror(errno));
		}
		/* Someone else took this device between GET_FREE and attach: retry. */
		close_fd(&st.loop_fd);
		usleep(1000 * (tries + 1));
	}
	wl_die("no usable free loop device after %d tries (all busy)", MAX_TRIES);
}

/* Writes BLOCKS blocks with O_DIRECT, then reads them back and checks them. */
static void direct_io(unsigned long blocks, unsigned long *writes, unsigned long *reads)
{
	unsigned char *buf;
	unsigned long i;
	ssize_t n;

	st.dio_fd = open(st.dev, O_RDWR | O_DIRECT | O_CLOEXEC);
	if (st.dio_fd < 0)
		wl_die("cannot open %s with O_DIRECT: %s", st.dev, strerror(errno));
	errno = posix_memalign((void **)&buf, IO_BLOCK, IO_BLOCK);
	if (errno)
		wl_die("posix_memalign: %s", strerror(errno));
	for (i = 0; i < blocks; i++) {
		memset(buf, (int)(i & 0xff), IO_BLOCK);
		memcpy(buf, &i, sizeof(i));
		n = pwrite(st.dio_fd, buf, IO_BLOCK, (off_t)i * IO_BLOCK);
		if (n != IO_BLOCK) {
			free(buf);
			wl_die("O_DIRECT write of block %lu on %s failed: %s", i, st.dev,
			       n < 0 ? strerror(errno) : "short write");
		}
		(*writes)++;
	}
	for (i = 0; i < blocks; i++) {
		unsigned long tag;

		n = pread(st.dio_fd, buf, IO_BLOCK, (off_t)i * IO_BLOCK);
		if (n != IO_BLOCK) {
			free(buf);
			wl_die("O_DIRECT read of block %lu on %s failed: %s", i, st.dev,
			       n < 0 ? strerror(errno) : "short read");
		}
		(*reads)++;
		memcpy(&tag, buf, sizeof(tag));
		if (tag != i || buf[IO_BLOCK - 1] != (unsigned char)(i & 0xff)) {
			free(buf);
			wl_die("block %lu on %s read back wrong data", i, st.dev);
		}
	}
	free(buf);
	close_fd(&st.dio_fd);
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: loop_workload [-s MiB] [-d] [-b BLOCKS] [-L] [-p DIR] [-F]\n"
	        "  -s  backing file size in MiB (default 8)\n"
	        "  -d  O_DIRECT writes then reads of -b blocks on the loop device\n"
	        "  -b  4 KiB blocks for -d (default 64)\n"
	        "  -L  attach with LOOP_SET_FD + LOOP_SET_STATUS64 instead of LOOP_CONFIGURE\n"
	        "  -p  parent dir of the temp dir (default $TMPDIR or /tmp)\n"
	        "  -F  fail on purpose once attached (tests cleanup)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	unsigned long long mib = 8, size, got = 0;
	unsigned long blocks = 64, writes = 0, reads = 0;
	const char *parent = getenv("TMPDIR");
	const char *how;
	int direct = 0, legacy = 0, fail = 0, c;
	struct sigaction sa = {.sa_handler = on_signal};
	struct stat sb;

	wl_prog = "loop_workload";
	if (!parent || !*parent)
		parent = "/tmp";
	while ((c = getopt(argc, argv, "s:db:Lp:Fh")) != -1) {
		switch (c) {
		case 's':
			mib = wl_parse_num("-s", optarg, 1, 1024 * 1024);
			break;
		case 'd':
			direct = 1;
			break;
		case 'b':
			blocks = wl_parse_num("-b", optarg, 0, ULONG_MAX);
			break;
		case 'L':
			legacy = 1;
			break;
		case 'p':
			parent = optarg;
			break;
		case 'F':
			fail = 1;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	size = mib << 20;
	if (direct && blocks > size / IO_BLOCK)
		wl_die("-b %lu blocks of %u bytes do not fit in %llu MiB", blocks, IO_BLOCK, mib);

	if (atexit(cleanup))
		wl_die("atexit failed");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	make_backing(parent, size);
	how = attach(legacy);
	if (fstat(st.loop_fd, &sb) || !S_ISBLK(sb.st_mode))
		wl_die("%s is not a block device", st.dev);
	wl_ioctl_ok(&st.counts, "BLKGETSIZE64", st.loop_fd, BLKGETSIZE64, (unsigned long)&got);
	if (got != size)
		wl_die("BLKGETSIZE64 on %s says %llu bytes, expected %llu", st.dev, got, size);
	if (direct)
		direct_io(blocks, &writes, &reads);
	if (fail)
		wl_die("injected failure (-F) with %s attached", st.dev);

	wl_ioctl_ok(&st.counts, "LOOP_CLR_FD", st.loop_fd, LOOP_CLR_FD, 0);
	st.attached = 0;
	cleanup();

	printf("{\"workload\":\"loop_workload\",\"pid\":%d,\"tids\":[%d],\"loop_dev\":\"%s\","
	       "\"loop_major\":%u,\"loop_minor\":%u,\"backing_file\":",
	       (int)getpid(), (int)gettid(), st.dev, major(sb.st_rdev), minor(sb.st_rdev));
	wl_print_str(stdout, st.file);
	printf(",\"size_bytes\":%llu,\"attach\":\"%s\",", size, how);
	wl_print_counts(stdout, &st.counts);
	printf(",\"io\":{\"direct\":%s,\"block_size\":%u,\"writes\":%lu,\"reads\":%lu,"
	       "\"write_bytes\":%llu,\"read_bytes\":%llu}}\n",
	       direct ? "true" : "false", IO_BLOCK, writes, reads,
	       (unsigned long long)writes * IO_BLOCK, (unsigned long long)reads * IO_BLOCK);
	if (fflush(stdout))
		wl_die("writing stdout failed: %s", strerror(errno));
	return 0;
}
