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
 *
 * Job mode (the loop driver standing in for an accelerator where there is no
 * /dev/kvm): -t THREADS threads each issue -j JOBS jobs on the device, one
 * ioctl per job, of kind -k:
 *   zero   BLKZEROOUT of -z KiB at the thread's own range: a submit-and-wait
 *          ioctl (block requests queued, issued and completed inside it; the
 *          caller sleeps until they are done).
 *   flush  BLKFLSBUF after reading the whole device through the page cache:
 *          the call drops the cached pages (needs CAP_SYS_ADMIN); on 6.18 it
 *          also waits for lru_add_drain_all's per-CPU work, so it is mostly
 *          off the CPU too. BLKGETSIZE64 (-g) is the call that stays on it.
 * -g N adds N BLKGETSIZE64 calls from the main thread while the jobs run;
 * -i USEC pauses each job thread that long between its jobs (outside the
 * ioctl), to make a long-running workload.
 * -D DEV uses an already attached loop device (no loop-control, no attach or
 * detach): what a user given the device through its group can run.
 * -e N issues, N times each, ioctls the loop driver rejects (errnos as the
 * kernel returns them, counted): an unknown command on the device and on
 * loop-control, LOOP_SET_FD on the bound device, LOOP_CTL_REMOVE of a device
 * that does not exist, BLKGETSIZE64 into a NULL pointer, a misaligned
 * BLKZEROOUT. With -D only the device's own cases.
 * -f forks first: a child runs the same jobs with one thread on a loop device
 * of its own (the -D device with -D); its JSON is under "children".
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <linux/fs.h>
#include <linux/loop.h>

#include "workload.h"

#define IO_BLOCK    4096u
#define MAX_TRIES   20 /* LOOP_CTL_GET_FREE rounds when other processes race us */
#define MAX_THREADS 64

struct state {
	char dir[PATH_MAX];
	char file[PATH_MAX + 16];
	char dev[64];
	int have_dir, have_file;
	int backing_fd, ctl_fd, loop_fd, dio_fd;
	int attached;
	int given; /* -D: the device was attached by someone else */
	struct wl_counts counts;
};

enum job_kind { JOB_NONE, JOB_ZERO, JOB_FLUSH };

struct jobs;

/* One job thread: its own counts and timings, merged after join. */
struct job_thread {
	struct jobs *J;
	pthread_t th;
	int idx;
	int tid;
	int fd; /* flush: its own buffered fd for the page-cache fill */
	struct wl_counts counts;
	struct wl_stats job_ns;
};

struct jobs {
	enum job_kind kind;
	unsigned long nthreads, njobs, extra;
	unsigned long pause_us; /* -i: between a thread's jobs */
	unsigned long long zero_bytes, size;
	uint64_t elapsed_ns; /* from the start of the jobs to the last one's end */
	pthread_barrier_t go;
	struct job_thread t[MAX_THREADS];
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

/* Reads the whole device through the page cache (the flush job's set-up). */
static void fill_cache(int fd, unsigned long long size)
{
	static __thread char buf[1 << 16];
	unsigned long long off = 0;
	ssize_t n;

	while (off < size) {
		n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n <= 0)
			wl_die("reading %s at %llu failed: %s", st.dev, off,
			       n < 0 ? strerror(errno) : "end of device");
		off += (unsigned long long)n;
	}
}

static void one_job(struct jobs *J, struct job_thread *t, unsigned long j)
{
	uint64_t range[2];
	uint64_t t0;

	if (J->kind == JOB_FLUSH) {
		fill_cache(t->fd, J->size);
		t0 = wl_now_ns();
		wl_ioctl_ok(&t->counts, "BLKFLSBUF", t->fd, BLKFLSBUF, 0);
	} else {
		/* Each thread zeroes its own stretch, a different range per job. */
		unsigned long long slots = J->size / J->zero_bytes / J->nthreads;

		range[0] = ((unsigned long long)t->idx * slots + j % slots) * J->zero_bytes;
		range[1] = J->zero_bytes;
		t0 = wl_now_ns();
		wl_ioctl_ok(&t->counts, "BLKZEROOUT", st.loop_fd, BLKZEROOUT, (unsigned long)range);
	}
	wl_stats_add(&t->job_ns, wl_now_ns() - t0);
}

static void *job_main(void *arg)
{
	struct job_thread *t = arg;
	struct jobs *J = t->J;
	unsigned long j;

	t->tid = (int)gettid();
	pthread_barrier_wait(&J->go);
	for (j = 0; j < J->njobs; j++) {
		one_job(J, t, j);
		if (J->pause_us && j + 1 < J->njobs)
			usleep((useconds_t)J->pause_us);
	}
	return NULL;
}

/* Starts the job threads, issues the main thread's extra calls, joins. */
static void run_jobs(struct jobs *J)
{
	unsigned long i;
	uint64_t got;

	if (pthread_barrier_init(&J->go, NULL, (unsigned)J->nthreads + 1))
		wl_die("pthread_barrier_init failed");
	for (i = 0; i < J->nthreads; i++) {
		struct job_thread *t = &J->t[i];

		t->J = J;
		t->idx = (int)i;
		t->fd = -1;
		if (J->kind == JOB_FLUSH) {
			t->fd = open(st.dev, O_RDONLY | O_CLOEXEC);
			if (t->fd < 0)
				wl_die("cannot open %s: %s", st.dev, strerror(errno));
		}
		if ((errno = pthread_create(&t->th, NULL, job_main, t)))
			wl_die("pthread_create: %s", strerror(errno));
	}
	pthread_barrier_wait(&J->go);
	J->elapsed_ns = wl_now_ns();
	for (i = 0; i < J->extra; i++)
		wl_ioctl_ok(&st.counts, "BLKGETSIZE64", st.loop_fd, BLKGETSIZE64,
		            (unsigned long)&got);
	for (i = 0; i < J->nthreads; i++) {
		pthread_join(J->t[i].th, NULL);
		if (J->t[i].fd >= 0)
			close(J->t[i].fd);
	}
	J->elapsed_ns = wl_now_ns() - J->elapsed_ns;
	pthread_barrier_destroy(&J->go);
}

static const char *kind_name(enum job_kind k)
{
	return k == JOB_ZERO ? "zero" : k == JOB_FLUSH ? "flush" : "none";
}

/* "tids":[...],"threads":[...],"jobs":{...}, for job mode. */
static void print_jobs(FILE *f, const struct jobs *J, const struct wl_counts *main_counts)
{
	struct wl_stats all = {0};
	unsigned long i;

	/* tids: the job threads, as kvm_workload's are its vCPU threads. */
	fprintf(f, "\"tids\":[");
	for (i = 0; i < J->nthreads; i++)
		fprintf(f, "%s%d", i ? "," : "", J->t[i].tid);
	fprintf(f, "],\"main_thread\":{\"tid\":%d,", (int)gettid());
	wl_print_counts(f, main_counts);
	fprintf(f, "},\"threads\":[");
	for (i = 0; i < J->nthreads; i++) {
		fprintf(f, "%s{\"tid\":%d,", i ? "," : "", J->t[i].tid);
		wl_print_counts(f, &J->t[i].counts);
		fputc(',', f);
		wl_print_stats(f, "job_ns", &J->t[i].job_ns);
		fputc('}', f);
		wl_stats_merge(&all, &J->t[i].job_ns);
	}
	fprintf(f,
	        "],\"jobs\":{\"kind\":\"%s\",\"threads\":%lu,\"per_thread\":%lu,\"bytes\":%llu,"
	        "\"elapsed_ns\":%llu,",
	        kind_name(J->kind), J->nthreads, J->njobs,
	        J->kind == JOB_ZERO ? J->zero_bytes : J->size, (unsigned long long)J->elapsed_ns);
	wl_print_stats(f, "job_ns", &all);
	fprintf(f, "},");
	/* The same, by the name every job workload uses. */
	wl_print_stats(f, "job_ns", &all);
	fprintf(f, ",");
}

/* -e: each rejected request n times, counted with the errno it returned. */
static void error_cases(unsigned long n)
{
	struct wl_counts *wc = &st.counts;
	uint64_t misaligned[2] = {1, IO_BLOCK};
	unsigned long i;

	for (i = 0; i < n; i++) {
		wl_ioctl(wc, "unknown:0x4cff", st.loop_fd, _IO('L', 0xff), 0);
		wl_ioctl(wc, "BLKGETSIZE64", st.loop_fd, BLKGETSIZE64, 0);
		wl_ioctl(wc, "BLKZEROOUT", st.loop_fd, BLKZEROOUT, (unsigned long)misaligned);
		if (st.given)
			continue;
		/* The device is bound: LOOP_SET_FD cannot take it. */
		wl_ioctl(wc, "LOOP_SET_FD", st.loop_fd, LOOP_SET_FD, (unsigned long)st.backing_fd);
		wl_ioctl(wc, "unknown:0x4cfe", st.ctl_fd, _IO('L', 0xfe), 0);
		wl_ioctl(wc, "LOOP_CTL_REMOVE", st.ctl_fd, LOOP_CTL_REMOVE, 0xfffff);
	}
	/* None of them may have worked: the counts say what happened, this checks it. */
	for (i = 0; i < (unsigned long)wc->n; i++) {
		const struct wl_counter *c = &wc->c[i];
		unsigned long errs = 0;

		for (int e = 0; e < WL_MAX_ERRNO; e++)
			errs += c->err[e];
		if (!strncmp(c->name, "unknown:", 8) || !strcmp(c->name, "LOOP_SET_FD") ||
		    !strcmp(c->name, "LOOP_CTL_REMOVE"))
			if (errs != c->calls)
				wl_die("%s succeeded where it should fail", c->name);
	}
}

/* -D: a loop device someone else attached; this process only opens it. */
static void use_given(const char *dev)
{
	snprintf(st.dev, sizeof(st.dev), "%s", dev);
	st.loop_fd = open(st.dev, O_RDWR | O_CLOEXEC);
	if (st.loop_fd < 0)
		wl_die("cannot open %s: %s", st.dev, strerror(errno));
	st.given = 1;
}

static void usage(void)
{
	fprintf(stderr,
	        "usage: loop_workload [-s MiB] [-d] [-b BLOCKS] [-L] [-p DIR] [-F] [-e N] [-f]\n"
	        "                     [-t THREADS -j JOBS [-k zero|flush] [-z KiB] [-g N] [-i "
	        "USEC]]\n"
	        "                     [-D DEV]\n"
	        "  -s  backing file size in MiB (default 8)\n"
	        "  -d  O_DIRECT writes then reads of -b blocks on the loop device\n"
	        "  -b  4 KiB blocks for -d (default 64)\n"
	        "  -L  attach with LOOP_SET_FD + LOOP_SET_STATUS64 instead of LOOP_CONFIGURE\n"
	        "  -p  parent dir of the temp dir (default $TMPDIR or /tmp)\n"
	        "  -F  fail on purpose once attached (tests cleanup)\n"
	        "  -t  job threads (default 0: no jobs; at most 64)\n"
	        "  -j  jobs per thread, one ioctl each (default 10)\n"
	        "  -k  job kind: zero (BLKZEROOUT, submit and wait; default) or flush\n"
	        "      (read the device, then BLKFLSBUF: drops the cache; needs root)\n"
	        "  -z  KiB zeroed per job (default 64)\n"
	        "  -g  BLKGETSIZE64 calls from the main thread while the jobs run\n"
	        "  -i  pause between a thread's jobs, in microseconds (default 0)\n"
	        "  -D  use this attached loop device (no set-up or detach ioctls)\n"
	        "  -e  issue N times each ioctl the driver rejects (errno counts)\n"
	        "  -f  fork a child running the same jobs with one thread\n");
	exit(2);
}

/* The one JSON object on stdout. */
static void output(FILE *f, const struct jobs *J, const struct stat *sb, unsigned long long size,
                   const char *how, int direct, unsigned long writes, unsigned long reads,
                   const char *children)
{
	struct wl_counts all = st.counts;
	unsigned long i;

	cleanup();
	for (i = 0; i < J->nthreads; i++)
		wl_counts_merge(&all, &J->t[i].counts);
	fprintf(f, "{\"workload\":\"loop_workload\",\"pid\":%d,", (int)getpid());
	if (J->nthreads)
		print_jobs(f, J, &st.counts);
	else
		fprintf(f, "\"tids\":[%d],", (int)gettid());
	fprintf(f,
	        "\"loop_dev\":\"%s\",\"loop_major\":%u,\"loop_minor\":%u,\"backing_file\":", st.dev,
	        major(sb->st_rdev), minor(sb->st_rdev));
	wl_print_str(f, st.given ? "" : st.file);
	fprintf(f, ",\"size_bytes\":%llu,\"attach\":\"%s\",", size, how);
	wl_print_counts(f, &all);
	fprintf(f,
	        ",\"io\":{\"direct\":%s,\"block_size\":%u,\"writes\":%lu,\"reads\":%lu,"
	        "\"write_bytes\":%llu,\"read_bytes\":%llu}",
	        direct ? "true" : "false", IO_BLOCK, writes, reads,
	        (unsigned long long)writes * IO_BLOCK, (unsigned long long)reads * IO_BLOCK);
	fprintf(f, ",\"children\":[%s]}\n", children ? children : "");
	if (fflush(f))
		wl_die("writing the result failed: %s", strerror(errno));
}

static enum job_kind parse_kind(const char *s)
{
	if (strcmp(s, "zero") == 0)
		return JOB_ZERO;
	if (strcmp(s, "flush") == 0)
		return JOB_FLUSH;
	wl_die("option -k: expected zero or flush, got '%s'", s);
}

static void check_jobs(struct jobs *J, int direct)
{
	if (!J->nthreads) {
		if (J->extra)
			wl_die("-g needs job threads (-t)");
		return;
	}
	if (!J->kind)
		J->kind = JOB_ZERO;
	if (direct)
		wl_die("-d and job threads (-t) exclude each other");
	if (J->kind == JOB_ZERO && J->size / J->zero_bytes < J->nthreads)
		wl_die("-t %lu threads of -z %llu KiB do not fit in the device", J->nthreads,
		       J->zero_bytes >> 10);
}

int main(int argc, char **argv)
{
	static struct jobs J = {.njobs = 10, .zero_bytes = 64 << 10};
	unsigned long long mib = 8, size, got = 0;
	unsigned long blocks = 64, writes = 0, reads = 0;
	const char *parent = getenv("TMPDIR");
	const char *how = "none", *given = NULL;
	unsigned long nerr = 0;
	int direct = 0, legacy = 0, fail = 0, forking = 0, rfd = -1, wfd = -1, c;
	struct sigaction sa = {.sa_handler = on_signal};
	FILE *out = stdout;
	char *children = NULL;
	pid_t child = -1;
	struct stat sb;

	wl_prog = "loop_workload";
	if (!parent || !*parent)
		parent = "/tmp";
	while ((c = getopt(argc, argv, "s:db:Lp:Ft:j:k:z:g:i:D:e:fh")) != -1) {
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
		case 't':
			J.nthreads = wl_parse_num("-t", optarg, 0, MAX_THREADS);
			break;
		case 'j':
			J.njobs = wl_parse_num("-j", optarg, 0, 100000000);
			break;
		case 'k':
			J.kind = parse_kind(optarg);
			break;
		case 'z':
			J.zero_bytes = wl_parse_num("-z", optarg, 4, 1 << 20) << 10;
			break;
		case 'g':
			J.extra = wl_parse_num("-g", optarg, 0, 100000000);
			break;
		case 'i':
			J.pause_us = wl_parse_num("-i", optarg, 0, 10000000);
			break;
		case 'D':
			given = optarg;
			break;
		case 'e':
			nerr = wl_parse_num("-e", optarg, 0, 100000000);
			break;
		case 'f':
			forking = 1;
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

	/* Fork before any fd or thread exists: the child sets up its own device. */
	if (forking && (child = wl_fork_child(&rfd, &wfd)) == 0) {
		wl_prog = "loop_workload (child)";
		J.nthreads = J.nthreads ? 1 : 0;
		J.extra = 0;
		nerr = 0;
		forking = 0;
		out = fdopen(wfd, "w");
		if (!out)
			wl_die("fdopen: %s", strerror(errno));
	}
	if (atexit(cleanup))
		wl_die("atexit failed");
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	if (given) {
		use_given(given);
	} else {
		make_backing(parent, size);
		how = attach(legacy);
	}
	if (fstat(st.loop_fd, &sb) || !S_ISBLK(sb.st_mode))
		wl_die("%s is not a block device", st.dev);
	wl_ioctl_ok(&st.counts, "BLKGETSIZE64", st.loop_fd, BLKGETSIZE64, (unsigned long)&got);
	if (given)
		size = got;
	else if (got != size)
		wl_die("BLKGETSIZE64 on %s says %llu bytes, expected %llu", st.dev, got, size);
	J.size = size;
	check_jobs(&J, direct);
	if (direct)
		direct_io(blocks, &writes, &reads);
	if (fail)
		wl_die("injected failure (-F) with %s attached", st.dev);
	error_cases(nerr);
	if (J.nthreads)
		run_jobs(&J);

	if (!given) {
		wl_ioctl_ok(&st.counts, "LOOP_CLR_FD", st.loop_fd, LOOP_CLR_FD, 0);
		st.attached = 0;
	}
	if (forking)
		children = wl_collect_child(child, rfd);
	output(out, &J, &sb, size, how, direct, writes, reads, children);
	free(children);
	if (out != stdout && fclose(out))
		wl_die("writing to the parent failed: %s", strerror(errno));
	return 0;
}
