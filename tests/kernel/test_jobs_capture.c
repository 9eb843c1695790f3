/*
 * Capture side of device timelines against the real kernel (root only, else
 * skipped): block requests on a loop device become QUEUE/RUN/DONE job events
 * whose counts match what was issued (and the disk's own statistics); each
 * job ioctl of the stand-in accelerator (kxtest_accel.h) has its job done
 * inside it: a KVM_RUN of a traced vCPU thread ends in one KVM DONE, a
 * BLKZEROOUT's block request is issued by the calling thread and completed
 * before the call returns; off-CPU time inside an ioctl is measured (a
 * halting guest sleeps, a spinning one does not; a BLKZEROOUT is blocked at
 * least while the loop worker runs its request, a BLKGETSIZE64 stays on the
 * CPU); hooks that cannot attach here (GPU tracepoints, driver entry
 * functions) are reported with their reason while the session still
 * records; every classic job program passes this kernel's verifier.
 */
#include <bpf/bpf.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <signal.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capture/clock.h"
#include "registry/devices.h"
#include "capture/drvcall.h"
#include "registry/ioctl_decode.h"
#include "capture/jobsrc.h"
#include "kxtest.h"
#include "kxtest_accel.h"
#include "kxprof.h"
#include "capture/session.h"
#include "capture/sinks.h"
#include "model/store.h"

#define BLK     4096
#define IO_BASE (1u << 20) /* away from what udev/blkid probe at attach */

static char wl_dir[512]; /* where the workloads were built (next to this test) */
static struct kxt_accel acc;
static char no_acc[128]; /* why there is no stand-in device, when there is none */

static const struct kx_hook *find_hook(const struct kx_capinfo *ci, const char *name)
{
	for (uint32_t i = 0; i < ci->nhooks; i++)
		if (strcmp(ci->hooks[i].name, name) == 0)
			return &ci->hooks[i];
	return NULL;
}

static void print_hooks(const struct kx_capinfo *ci)
{
	static const char *const st[] = {"?", "attached", "skipped", "failed"};

	for (uint32_t i = 0; i < ci->nhooks; i++)
		printf("# hook %-36s %-7s %-8s %s\n", ci->hooks[i].name, ci->hooks[i].mech,
		       st[ci->hooks[i].state < 4 ? ci->hooks[i].state : 0], ci->hooks[i].why);
}

static const char *mech;    /* attach mechanism under test, NULL: best */
static const char *iosched; /* loop device I/O scheduler to set, NULL: leave ("none") */

static struct kx_session *open_on(const struct kx_device *devs, int n, struct kx_store *st,
                                  char *err, size_t len)
{
	struct kx_session_opts o = {
	        .devices = devs, .ndevices = n, .sink = kx_sink_store(st), .mech = mech};

	return kx_session_open(&o, err, len);
}

/* ---- loop device helpers ---- */

struct loopdev {
	char path[64];
	char backing[128];
	unsigned int minor;
};

static int loop_setup(struct loopdev *l)
{
	char cmd[256];
	FILE *p;
	int fd;

	snprintf(l->backing, sizeof(l->backing), "/tmp/kxtest-jobs-%d.img", (int)getpid());
	fd = open(l->backing, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || ftruncate(fd, 8 << 20) != 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	snprintf(cmd, sizeof(cmd), "losetup -f --show %s 2>/dev/null", l->backing);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	if (!fgets(l->path, sizeof(l->path), p)) {
		pclose(p);
		unlink(l->backing);
		return -1;
	}
	pclose(p);
	l->path[strcspn(l->path, "\n")] = 0;
	if (sscanf(l->path, "/dev/loop%u", &l->minor) != 1) {
		unlink(l->backing);
		return -1;
	}
	return 0;
}

static void loop_teardown(struct loopdev *l)
{
	char cmd[128];
	FILE *f;

	/* The scheduler setting outlives the attachment: put back the default. */
	snprintf(cmd, sizeof(cmd), "/sys/block/loop%u/queue/scheduler", l->minor);
	f = fopen(cmd, "w");
	if (f) {
		fputs("none", f);
		fclose(f);
	}
	snprintf(cmd, sizeof(cmd), "losetup -d %s 2>/dev/null", l->path);
	if (system(cmd) != 0)
		printf("# losetup -d %s failed\n", l->path);
	unlink(l->backing);
}

/* Completed reads + writes of a disk, from /sys/block/<name>/stat. */
static long long disk_ios(unsigned int minor)
{
	unsigned long long v[11] = {0};
	char path[64];
	FILE *f;
	int n;

	snprintf(path, sizeof(path), "/sys/block/loop%u/stat", minor);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fscanf(f, "%llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
	           &v[5], &v[6], &v[7]);
	fclose(f);
	return n == 8 ? (long long)(v[0] + v[4]) : -1;
}

/* nblocks O_DIRECT writes then reads of 4 KiB at IO_BASE. */
static int direct_io(const char *dev, int nblocks)
{
	void *buf;
	int fd = open(dev, O_RDWR | O_DIRECT), ok = 0;

	if (fd < 0 || posix_memalign(&buf, BLK, BLK)) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (int i = 0; i < nblocks; i++) {
		memset(buf, i, BLK);
		ok += pwrite(fd, buf, BLK, IO_BASE + (off_t)i * BLK) == BLK;
	}
	for (int i = 0; i < nblocks; i++)
		ok += pread(fd, buf, BLK, IO_BASE + (off_t)i * BLK) == BLK;
	free(buf);
	close(fd);
	return ok;
}

/* The block job events of one request: (sector, op) in our range. */
struct req {
	uint64_t q, r, d;
	int nq, nr, nd;
};

/* Requests planted open at the first PLANTED blocks' sectors before the
 * I/O: as if their completions never reached the program, so each block's
 * first request counts one lost completion (job_done_lost). */
#define PLANTED 3

static int plant_open(struct kx_session *s, uint32_t disk)
{
	int fd = kx_session_blkopen_fd(s);
	unsigned char run = KX_JOB_RUN;

	for (int b = 0; b < PLANTED; b++) {
		struct kx_blk_key k = {.dev = disk, .sector = (IO_BASE + (uint64_t)b * BLK) / 512};

		if (fd < 0 || bpf_map_update_elem(fd, &k, &run, BPF_ANY))
			return -1;
	}
	return 0;
}

static void check_block(const char *spec)
{
	enum { N = 32 };
	struct kx_device devs[8];
	struct loopdev l;
	struct kx_store *st;
	struct kx_session *s;
	struct req reqs[2][N];
	const struct kx_capinfo *ci;
	uint64_t emitted, received, dropped, missed, lost, skipped = 0;
	long long ios0, ios1;
	uint64_t t0, t1, done_in_window = 0, other = 0;
	uint32_t disk;
	char err[256];
	int n, ok;

	if (loop_setup(&l) != 0)
		SKIP("cannot set up a loop device (losetup)");
	n = kx_device_resolve(spec[0] == '/' ? l.path : spec, devs, 8, err, sizeof(err));
	if (n <= 0) {
		loop_teardown(&l);
		printf("# %s\n", err);
		CHECK(n > 0);
	}
	disk = KX_MKDEV(7u, l.minor);
	if (iosched) {
		/* With a scheduler, requests are inserted (QUEUE) before dispatch. */
		char path[96];
		FILE *f;

		snprintf(path, sizeof(path), "/sys/block/loop%u/queue/scheduler", l.minor);
		f = fopen(path, "w");
		if (!f || fprintf(f, "%s", iosched) < 0 || fclose(f) != 0) {
			loop_teardown(&l);
			SKIP("cannot set the loop device's I/O scheduler");
		}
	}
	st = kx_store_new(0);
	s = open_on(devs, n, st, err, sizeof(err));
	if (!s) {
		loop_teardown(&l);
		printf("# %s\n", err);
		CHECK(s != NULL);
	}
	if (kx_session_start(s, err, sizeof(err)) != 0) {
		kx_session_close(s);
		loop_teardown(&l);
		CHECK(0);
	}
	usleep(20000);
	CHECK(plant_open(s, disk) == 0);
	ios0 = disk_ios(l.minor);
	t0 = kx_mono_ns();
	ok = direct_io(l.path, N);
	t1 = kx_mono_ns();
	ios1 = disk_ios(l.minor);
	kx_session_stop(s);
	ci = kx_session_capinfo(s);

	memset(reqs, 0, sizeof(reqs));
	for (size_t i = 0; i < kx_store_job_count(st); i++) {
		const struct kx_job *j = kx_store_job(st, i);
		int64_t blk;
		struct req *r;

		if (j->src != KX_JOB_SRC_BLOCK)
			continue;
		if (j->dev != disk) {
			/* The driver spec ("loop") traces every loop device, and other
			 * programs may use theirs meanwhile: only another driver's
			 * disk is out of place then. */
			if (spec[0] == '/' || KX_MAJOR(j->dev) != 7u)
				other++;
			continue;
		}
		if (j->phase == KX_JOB_DONE && j->ts >= t0 && j->ts <= t1)
			done_in_window++;
		blk = ((int64_t)j->seqno * 512 - IO_BASE) / BLK;
		if ((int64_t)j->seqno * 512 < IO_BASE || blk >= N || (j->aux2 != 1 && j->aux2 != 2))
			continue;
		r = &reqs[j->aux2 - 1][blk];
		if (j->phase == KX_JOB_QUEUE)
			r->q = j->ts, r->nq++;
		else if (j->phase == KX_JOB_RUN)
			r->r = j->ts, r->nr++;
		else if (j->phase == KX_JOB_DONE) {
			/* Classic records carry no disk name: the registry gives it. */
			char dn[KX_DISK_NAME_LEN], want[KX_DISK_NAME_LEN];
			const char *name =
			        j->ring[0] ? j->ring : kx_block_disk_name(j->dev, dn, sizeof(dn));

			snprintf(want, sizeof(want), "loop%u", l.minor);

			r->d = j->ts, r->nd++;
			if (j->aux != BLK || j->pid != 0 || strcmp(name, want) != 0) {
				printf("# DONE fields: aux %llu pid %u ring '%s' disk '%s'\n",
				       (unsigned long long)j->aux, j->pid, j->ring, name);
				r->nd = 99;
			}
		}
	}
	{
		const struct kx_hook *h = find_hook(ci, "jobs:block");

		printf("# jobs:block via %s\n", h ? h->mech : "(none)");
	}
	printf("# %s: %d I/Os, disk stat delta %lld, DONE in window %llu, other disks %llu, "
	       "job records %llu (emitted %llu, dropped %llu)\n",
	       spec, ok, ios1 - ios0, (unsigned long long)done_in_window, (unsigned long long)other,
	       (unsigned long long)ci->job_received, (unsigned long long)ci->job_emitted,
	       (unsigned long long)ci->job_dropped);
	emitted = ci->job_emitted;
	received = ci->job_received;
	dropped = ci->job_dropped;
	missed = ci->bpf_missed;
	lost = ci->job_done_lost;
	printf("# completions counted lost: %llu (%d planted)\n", (unsigned long long)lost,
	       PLANTED);
	if (missed)
		printf("# the kernel skipped %llu runs of the programs\n",
		       (unsigned long long)missed);
	kx_session_close(s);
	kx_store_free(st);
	loop_teardown(&l);

	CHECK_EQ_U(ok, 2 * N);
	/* One request per O_DIRECT 4 KiB I/O: exactly one DONE each, RUN before it. */
	for (int op = 0; op < 2; op++)
		for (int b = 0; b < N; b++) {
			const struct req *r = &reqs[op][b];

			if (r->nd != 1 || r->nr != 1 || r->nq > 1)
				printf("# %s block %d: %d queue %d run %d done\n",
				       op ? "write" : "read", b, r->nq, r->nr, r->nd);
			/* A phase the kernel's recursion guard skipped is
			 * missing, and counted: not silent. */
			if (missed && (r->nd == 0 || r->nr == 0 || (iosched && !r->nq))) {
				skipped++;
				continue;
			}
			CHECK_EQ_U(r->nd, 1);
			CHECK_EQ_U(r->nr, 1);
			CHECK(r->nq <= 1);
			CHECK(!iosched || r->nq == 1);
			CHECK(!r->nq || r->q <= r->r);
			CHECK(r->r <= r->d);
		}
	CHECK(skipped <= missed);
	/* The disk counted what we saw complete in the same window. */
	CHECK((uint64_t)(ios1 - ios0) >= done_in_window &&
	      (uint64_t)(ios1 - ios0) <= done_in_window + missed);
	CHECK_EQ_U(ios1 - ios0, 2 * N);
	CHECK(done_in_window + missed >= 2 * N);
	CHECK_EQ_U(other, 0);
	CHECK_EQ_U(emitted, received + dropped);
	CHECK_EQ_U(dropped, 0);
	/* Each planted sector's first request counted one (unless skipped); a
	 * driver spec traces other loop devices too, whose losses count. */
	CHECK(lost + missed >= PLANTED);
	CHECK(spec[0] != '/' || lost <= PLANTED);
}

static void block_jobs_loop_node(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	check_block("/dev/loopN");
}

static void block_jobs_queued(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	iosched = "mq-deadline";
	check_block("/dev/loopN");
	iosched = NULL;
}

/* The same through the fallback flavours of the block programs. */
static void block_jobs_raw_tp(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	mech = "raw_tp";
	check_block("/dev/loopN");
	mech = NULL;
}

static void block_jobs_classic_tp(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	mech = "tp";
	iosched = "mq-deadline";
	check_block("/dev/loopN");
	iosched = NULL;
	mech = NULL;
}

static void block_jobs_loop_driver(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	check_block("loop"); /* major 7, any minor */
}

/* ---- the stand-in accelerator's jobs ---- */

/* Runs build/tests/PROG ARGS traced by s (its pid added before it starts). */
static int run_workload(struct kx_session *s, const char *prog, char *const *args, char *err,
                        size_t len)
{
	char path[600];
	char *argv[24];
	int go[2], status, n = 0;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", wl_dir, prog);
	argv[n++] = path;
	while (*args && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	if (pipe(go))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char b;
		int null = open("/dev/null", O_WRONLY);

		close(go[1]);
		if (null >= 0)
			dup2(null, 1);
		if (read(go[0], &b, 1) != 1)
			_exit(126);
		execv(path, argv);
		_exit(127);
	}
	close(go[0]);
	if (kx_session_add_pid(s, (uint32_t)pid, err, len) != 0 ||
	    kx_session_start(s, err, len) != 0 || write(go[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		return -1;
	}
	close(go[1]);
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status)) {
		snprintf(err, len, "%s failed (status 0x%x)", prog, status);
		return -1;
	}
	kx_session_stop(s);
	return 0;
}

/* A session on the stand-in's devices (the defaults, plus loop under loop). */
static struct kx_session *open_accel(struct kx_store *st, char *err, size_t len)
{
	static struct kx_device devs[KX_MAX_DEVICES];
	int n = kxt_accel_devices(&acc, devs, KX_MAX_DEVICES);

	return open_on(devs, n, st, err, len);
}

/* Records PROG ARGS into a new store (NULL on failure, said why). */
static struct kx_store *record_workload(const char *prog, char *const *args)
{
	struct kx_store *st = kx_store_new(0);
	struct kx_session *s;
	char err[256];

	s = open_accel(st, err, sizeof(err));
	if (!s || run_workload(s, prog, args, err, sizeof(err)) != 0) {
		printf("# %s\n", err);
		kx_session_close(s);
		kx_store_free(st);
		return NULL;
	}
	kx_session_close(s);
	return st;
}

/* KVM: every KVM_RUN of a traced vCPU thread ends in one KVM DONE inside it. */
static void check_kvm(void)
{
	char *const args[] = {"-t", "2", "-j", "25", "-l", "100", NULL};
	struct kx_store *st = record_workload("kvm_workload", args);
	uint64_t runs = 0, dones = 0, inside = 0, pio = 0;

	CHECK(st != NULL);
	for (size_t i = 0; i < kx_store_ioctl_count(st); i++)
		runs += kx_store_ioctl(st, i)->cmd == KVM_RUN;
	for (size_t k = 0; k < kx_store_job_count(st); k++) {
		const struct kx_job *j = kx_store_job(st, k);

		if (j->src != KX_JOB_SRC_KVM)
			continue;
		if (j->phase == KX_JOB_RUN) {
			pio += j->aux == 0x10;
			continue;
		}
		if (j->phase != KX_JOB_DONE)
			continue;
		dones++;
		/* ctx is the vCPU thread, and the exit lies inside one of its KVM_RUNs. */
		for (size_t i = 0; i < kx_store_ioctl_count(st); i++) {
			const struct kx_ioctl *e = kx_store_ioctl(st, i);

			if (e->cmd == KVM_RUN && e->tid == j->ctx && e->tid == j->tid &&
			    e->ts <= j->ts && j->ts <= e->ts + e->dur && j->aux == KVM_EXIT_IO) {
				inside++;
				break;
			}
		}
	}
	printf("# KVM_RUN %llu, DONE %llu (inside their run %llu), pio RUN %llu\n",
	       (unsigned long long)runs, (unsigned long long)dones, (unsigned long long)inside,
	       (unsigned long long)pio);
	kx_store_free(st);
	CHECK_EQ_U(runs, 50);
	CHECK_EQ_U(dones, runs);
	CHECK_EQ_U(inside, dones);
	CHECK_EQ_U(pio, runs);
}

/* The next event of phase ph of the block request at index k (same disk and
 * sector, at or after it), or -1. */
static long next_phase(const struct kx_store *st, size_t k, int ph)
{
	const struct kx_job *r = kx_store_job(st, k);

	for (size_t m = k; m < kx_store_job_count(st); m++) {
		const struct kx_job *d = kx_store_job(st, m);

		if (d->src == KX_JOB_SRC_BLOCK && d->phase == ph && d->dev == r->dev &&
		    d->seqno == r->seqno && d->ts >= r->ts)
			return (long)m;
	}
	return -1;
}

/* A block request the thread of call e queued or issued inside it (QUEUE,
 * or RUN when issued directly): its index, or -1 past the last. */
static long request_of(const struct kx_store *st, const struct kx_ioctl *e, size_t from)
{
	for (size_t k = from; k < kx_store_job_count(st); k++) {
		const struct kx_job *r = kx_store_job(st, k);

		if (r->src == KX_JOB_SRC_BLOCK && r->tid == e->tid && r->ts >= e->ts &&
		    r->ts <= e->ts + e->dur && (r->phase == KX_JOB_QUEUE || r->phase == KX_JOB_RUN))
			return (long)k;
	}
	return -1;
}

/* The request a BLKZEROOUT call e submitted was completed (DONE of the same
 * disk and sector) before the call returned: 1 when it was. */
static int zeroout_done_inside(const struct kx_store *st, const struct kx_ioctl *e)
{
	long k = request_of(st, e, 0);
	long d = k < 0 ? -1 : next_phase(st, (size_t)k, KX_JOB_DONE);

	return d >= 0 && kx_store_job(st, (size_t)d)->ts <= e->ts + e->dur;
}

/* loop: every BLKZEROOUT has its block request issued and done inside it. */
static void check_loop(void)
{
	char *const args[] = {"-s", "16", "-p", "/tmp", "-t", "2", "-j", "25", "-k", "zero", NULL};
	struct kx_store *st = record_workload("loop_workload", args);
	uint64_t calls = 0, inside = 0;

	CHECK(st != NULL);
	for (size_t i = 0; i < kx_store_ioctl_count(st); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(st, i);

		if (e->cmd != BLKZEROOUT)
			continue;
		calls++;
		inside += zeroout_done_inside(st, e);
	}
	printf("# BLKZEROOUT %llu, with their request issued and done inside %llu\n",
	       (unsigned long long)calls, (unsigned long long)inside);
	kx_store_free(st);
	CHECK_EQ_U(calls, 50);
	CHECK_EQ_U(inside, calls);
}

static void job_done_inside_each_call(void)
{
	static const char *const mechs[] = {"tp_btf", "raw_tp", "tp"};

	if (geteuid() != 0)
		SKIP("needs root");
	if (no_acc[0])
		SKIP(no_acc);
	for (size_t m = 0; m < 3; m++) {
		mech = mechs[m];
		printf("# mechanism %s\n", mech);
		if (acc.loop)
			check_loop();
		else
			check_kvm();
		mech = NULL;
		if (kxt_cur_failed || kxt_cur_skipped)
			return;
	}
}

/* Off-CPU time of the calls with request cmd: per call, min and max share,
 * overall share, the calls, those under half; and the exec time (ns) of the
 * block requests in the store. */
struct offcpu {
	double min, max, all;
	int n, nhalf;
	uint64_t off_ns, exec_ns;
};

static void offcpu_of(const struct kx_store *st, uint32_t cmd, struct offcpu *o)
{
	uint64_t dur = 0;

	memset(o, 0, sizeof(*o));
	o->min = 1e9;
	for (size_t i = 0; i < kx_store_ioctl_count(st); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(st, i);
		double f;

		if (e->cmd != cmd || !e->dur)
			continue;
		f = e->offcpu_us * 1000.0 / (double)e->dur;
		o->min = f < o->min ? f : o->min;
		o->max = f > o->max ? f : o->max;
		o->nhalf += f < 0.5;
		dur += e->dur;
		o->off_ns += e->offcpu_us * 1000ull;
		o->n++;
	}
	o->all = dur ? (double)o->off_ns / (double)dur : 0;
	/* The block requests these calls submitted (other processes' loop
	 * devices are traced too): RUN to the DONE of the same disk and sector. */
	for (size_t i = 0; i < kx_store_ioctl_count(st); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(st, i);
		long k, r, d;

		if (e->cmd != cmd)
			continue;
		for (k = request_of(st, e, 0); k >= 0; k = request_of(st, e, (size_t)k + 1)) {
			r = next_phase(st, (size_t)k, KX_JOB_RUN);
			d = r < 0 ? -1 : next_phase(st, (size_t)r, KX_JOB_DONE);
			if (d >= 0)
				o->exec_ns += kx_store_job(st, (size_t)d)->ts -
				              kx_store_job(st, (size_t)r)->ts;
			/* A queued request's own RUN is not a second request. */
			if (kx_store_job(st, (size_t)k)->phase == KX_JOB_QUEUE && r >= 0 &&
			    kx_store_job(st, (size_t)r)->tid == e->tid)
				k = r;
		}
	}
}

static int offcpu_share(const char *prog, char *const *args, uint32_t cmd, struct offcpu *o)
{
	struct kx_store *st = record_workload(prog, args);

	if (!st)
		return -1;
	offcpu_of(st, cmd, o);
	kx_store_free(st);
	return 0;
}

static void offcpu_kvm(void)
{
	/* Halts on the LAPIC timer with halt polling off: blocked ~2 ms per run. */
	char *const sleep_args[] = {"-t", "1", "-j", "20", "-l", "0", "-s", "-u", "2000", NULL};
	/* Spins ~4 ms in the guest per run. */
	char *const busy_args[] = {"-t", "1", "-j", "20", "-l", "5000", NULL};
	struct offcpu o;

	CHECK(offcpu_share("kvm_workload", sleep_args, KVM_RUN, &o) == 0);
	printf("# sleeping KVM_RUN x%d: off-CPU share min %.3f max %.3f overall %.3f, %d under "
	       "half\n",
	       o.n, o.min, o.max, o.all, o.nhalf);
	CHECK_EQ_U(o.n, 20);
	/* Overall share is the claim. Single runs may lose to wakeup latency on
	 * a busy machine, and a vCPU thread preempted for longer than the guest's
	 * 2 ms timer between arming it and halting does not sleep at all. */
	CHECK(o.all > 0.80);
	CHECK(o.nhalf <= 2);
	CHECK(offcpu_share("kvm_workload", busy_args, KVM_RUN, &o) == 0);
	printf("# busy KVM_RUN x%d: off-CPU share min %.3f max %.3f overall %.3f\n", o.n, o.min,
	       o.max, o.all);
	CHECK_EQ_U(o.n, 20);
	CHECK(o.all < 0.20);
	CHECK(o.min < 0.05);
	/* The sched_switch flavours of the fallback mechanisms. */
	for (int m = 0; m < 2; m++) {
		int rc;

		mech = m ? "tp" : "raw_tp";
		rc = offcpu_share("kvm_workload", sleep_args, KVM_RUN, &o);
		printf("# %s: sleeping KVM_RUN x%d: off-CPU share min %.3f overall %.3f\n", mech,
		       o.n, o.min, o.all);
		mech = NULL;
		CHECK(rc == 0);
		CHECK_EQ_U(o.n, 20);
		CHECK(o.all > 0.80);
	}
}

/* loop: a BLKZEROOUT waits while the loop worker runs its request, so its
 * blocked time covers most of the requests' execution (RUN to DONE, measured by the
 * block tracepoints); the page-cache work around the wait keeps it on the
 * CPU for a varying share, so no share is claimed for it. BLKGETSIZE64 never
 * sleeps. */
static void offcpu_loop(void)
{
	char *const args[] = {"-s", "16", "-p",   "/tmp", "-t",   "1", "-j",
	                      "20", "-k", "zero", "-g",   "2000", NULL};
	static const char *const mechs[] = {NULL, "raw_tp", "tp"};
	struct offcpu z, g;

	for (int m = 0; m < 3; m++) {
		struct kx_store *st;

		mech = mechs[m];
		st = record_workload("loop_workload", args);
		CHECK(st != NULL);
		offcpu_of(st, BLKZEROOUT, &z);
		offcpu_of(st, BLKGETSIZE64, &g);
		kx_store_free(st);
		printf("# %s: BLKZEROOUT x%d blocked %.1f us, its requests ran %.1f us; "
		       "BLKGETSIZE64 x%d off-CPU share overall %.3f min %.3f\n",
		       mech ? mech : "best", z.n, z.off_ns / 1e3, z.exec_ns / 1e3, g.n, g.all,
		       g.min);
		mech = NULL;
		CHECK_EQ_U(z.n, 20);
		/* Not all of it: the caller is still on the CPU when the worker
		 * starts its first request, and the requests' times come from
		 * another CPU's clock reads (90% held on most runs, 89% on one). */
		CHECK(z.exec_ns > 0 && (double)z.off_ns >= 0.6 * (double)z.exec_ns);
		CHECK_EQ_U(g.n, 2001);
		CHECK(g.all < 0.20);
		CHECK(g.min < 0.05);
	}
}

static void offcpu_sleeping_vs_busy(void)
{
	if (geteuid() != 0)
		SKIP("needs root");
	if (no_acc[0])
		SKIP(no_acc);
	if (acc.loop)
		offcpu_loop();
	else
		offcpu_kvm();
}

/* ---- reporting ---- */

static void unavailable_hooks_reported(void)
{
	struct kx_store *st;
	struct kx_session *s;
	const struct kx_capinfo *ci;
	const struct kx_hook *h;
	char err[256], name[64];
	int calls;

	if (geteuid() != 0)
		SKIP("needs root");
	if (no_acc[0])
		SKIP(no_acc);
	st = kx_store_new(0);
	s = open_accel(st, err, sizeof(err));
	if (!s)
		printf("# %s\n", err);
	CHECK(s != NULL);
	CHECK(kx_session_add_pid(s, (uint32_t)getpid(), err, sizeof(err)) == 0);
	CHECK(kx_session_start(s, err, sizeof(err)) == 0);
	calls = kxt_accel_calls(&acc, 10);
	kx_session_stop(s);
	ci = kx_session_capinfo(s);
	print_hooks(ci);

	/* The session recorded although most optional hooks could not attach. */
	CHECK_EQ_U(calls, 10);
	CHECK(kx_store_ioctl_count(st) >= 10);
	h = find_hook(ci, "sched_switch (off-CPU)");
	CHECK(h && h->state == KX_HOOK_ATTACHED);
	/* The stand-in's job source attached; the other one, with none of its
	 * devices traced, skipped and said why. */
	h = find_hook(ci, acc.loop ? "jobs:block" : "jobs:kvm");
	CHECK(h && h->state == KX_HOOK_ATTACHED);
	h = find_hook(ci, acc.loop ? "jobs:kvm" : "jobs:block");
	CHECK(h && h->state == KX_HOOK_SKIPPED &&
	      strstr(h->why, acc.loop ? "no kvm device traced" : "no block device traced"));
	/* Sources this kernel lacks: skipped, with the tracepoint named. */
	h = find_hook(ci, "jobs:gpu_scheduler");
	CHECK(h && h->state == KX_HOOK_SKIPPED);
	CHECK(strstr(h->why, "gpu_scheduler:drm_sched_job_queue not in this kernel") != NULL);
	h = find_hook(ci, "jobs:i915");
	CHECK(h && h->state == KX_HOOK_SKIPPED && strstr(h->why, "not in this kernel"));
	/* Driver entry functions: skipped with what the fallback chain found. */
	for (int i = 0; i < kx_drvhook_nfns(); i++) {
		snprintf(name, sizeof(name), "driver:%s", kx_drvhook_fn(i));
		h = find_hook(ci, name);
		if (!h)
			printf("# no hook line for %s\n", name);
		CHECK(h != NULL);
		CHECK(h->state == KX_HOOK_SKIPPED);
		CHECK(strstr(h->why, "fentry") && strstr(h->why, "kprobe"));
	}
	CHECK_EQ_U(ci->ndrvcalls, 0);
	kx_session_close(s);
	kx_store_free(st);
}

static void classic_job_programs_verify(void)
{
	char err[256];

	if (geteuid() != 0)
		SKIP("needs root");
	if (kx_jobsrc_verify_all(err, sizeof(err)) != 0)
		printf("# %s\n", err);
	CHECK(kx_jobsrc_verify_all(err, sizeof(err)) == 0);
}

int main(int argc, char **argv)
{
	char *slash;

	(void)argc;
	snprintf(wl_dir, sizeof(wl_dir), "%s", argv[0]);
	slash = strrchr(wl_dir, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(wl_dir, sizeof(wl_dir), ".");
	if (kxt_accel_open(&acc, no_acc, sizeof(no_acc)) == 0)
		printf("# stand-in accelerator: %s (%s)\n", acc.name, acc.path);
	RUN(unavailable_hooks_reported);
	RUN(classic_job_programs_verify);
	RUN(block_jobs_loop_node);
	RUN(block_jobs_loop_driver);
	RUN(block_jobs_queued);
	RUN(block_jobs_raw_tp);
	RUN(block_jobs_classic_tp);
	RUN(job_done_inside_each_call);
	RUN(offcpu_sleeping_vs_busy);
	kxt_accel_close(&acc);
	KXT_EXIT();
}
