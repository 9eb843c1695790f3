/*
 * kxprof record: trace driver ioctls of a command (and its children and
 * threads), of pids, or of every process, into a .kxp record file.
 *
 * Stops: SIGINT, SIGTERM, SIGHUP and SIGQUIT end the capture cleanly (the
 * file gets its trailer), as do -d, the command's exit and, with -p and no
 * command, the exit of every given process. A command still running at the
 * stop gets SIGTERM, then SIGKILL after KX_LAUNCH_GRACE_MS. SIGUSR1, SIGUSR2
 * and SIGPIPE are ignored (a reader of stderr that went away stops nothing).
 * Without the privilege to load BPF, the capture goes through the kxprof
 * daemon when its socket exists (--no-daemon refuses), with the same
 * options and the same file; record says so.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "capture/annotate.h"
#include "capture/clock.h"
#include "capture/counters.h"
#include "capture/drmfdinfo.h"
#include "analysis/warnings.h"
#include "capture/sampler.h"
#include "capture/setup.h"
#include "util/parse.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* Stop signals set stop_signal; the user signals and SIGPIPE are ignored. */
static void record_signals(void)
{
	static const int stops[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	static const int ignored[] = {SIGUSR1, SIGUSR2, SIGPIPE};
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sa.sa_handler = on_signal;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		sigaction(stops[i], &sa, NULL);
	sa.sa_handler = SIG_IGN;
	for (size_t i = 0; i < sizeof(ignored) / sizeof(ignored[0]); i++)
		sigaction(ignored[i], &sa, NULL);
}

static void record_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof record [-o FILE] [-p PID[,PID...]] [-a] [-d SECONDS]\n"
	        "                     [--device SPEC]... [--ringbuf-mb N] [--attach MECH]\n"
	        "                     [--no-jobs] [--no-annotations] [-F HZ] [--off-cpu]\n"
	        "                     [--call-graph fp|dwarf[,SIZE]|auto[,SIZE]]\n"
	        "                     [--counters LIST] [--drm-usage[=SECS]] [--no-drm-usage]\n"
	        "                     [-- CMD ARGS...]\n"
	        "  -o, --output FILE     record file (default kxprof.kxp); written to a temporary\n"
	        "                        file and renamed at the end, an existing FILE kept as\n"
	        "                        FILE.old; a device, a directory, the traced command\n"
	        "                        or an empty path is refused (exit 2)\n"
	        "  -p, --pid PIDS        trace these processes (and their future children);\n"
	        "                        without a command, stop when all of them have exited\n"
	        "  -a, --all             trace every process (not with -p)\n"
	        "  -d, --duration SECS   stop after this long\n"
	        "      --device SPEC     also trace this device: PATH, MAJOR:MINOR, MAJOR:*,\n"
	        "                        block:MAJOR:MINOR or a driver name from /proc/devices\n"
	        "                        (default: every accelerator device present, and kvm)\n"
	        "      --ringbuf-mb N    ring buffer size in MiB (default 8; fractions allowed)\n"
	        "      --attach MECH     force fentry, tp_btf, raw_tp or tp (default: fentry,\n"
	        "                        else tp_btf, the least per traced call; with -a,\n"
	        "                        fentry else tp, the least for other syscalls)\n"
	        "      --no-jobs         no device timelines (job lifecycle tracepoints)\n"
	        "      --no-annotations  no annotation ranges (probes of libkxprof_annotate.so)\n"
	        "      --no-daemon       never record through the kxprof daemon (which record\n"
	        "                        uses without BPF privilege: $KXPROF_SOCKET, default\n"
	        "                        " KX_DAEMON_SOCKET_DEFAULT ")\n"
	        "  -F, --freq HZ         also sample the traced processes' CPU stacks HZ times a\n"
	        "                        second per CPU (user and kernel frames, and the traced\n"
	        "                        ioctl a sample was taken in; off by default)\n"
	        "      --call-graph MODE how -F and --off-cpu walk user stacks: fp (frame\n"
	        "                        pointers, the default), or dwarf[,SIZE]: copy SIZE\n"
	        "                        bytes of the user stack at each sample (default 8192,\n"
	        "                        at most 65528) and unwind it with the modules' CFI\n"
	        "                        (code built without frame pointers), or auto[,SIZE]:\n"
	        "                        copy, but keep the frame-pointer walk of a CPU sample\n"
	        "                        whose modules all keep frame pointers (see\n"
	        "                        docs/stacks.md)\n"
	        "      --off-cpu         also record where threads blocked inside traced ioctls\n"
	        "                        waited: their stacks, weighted by the time off the CPU\n"
	        "      --counters LIST   also count these perf counters inside each traced ioctl,\n"
	        "                        on the calling thread only (at most 4): cycles,\n"
	        "                        instructions, cache-misses, page-faults,\n"
	        "                        context-switches, cpu-migrations, ... (counters this\n"
	        "                        machine lacks are skipped and reported)\n"
	        "      --drm-usage[=SECS] also sample the DRM client usage statistics of the\n"
	        "                        traced processes' DRM and accel fds (/proc/PID/fdinfo)\n"
	        "                        every SECS (default 1): engine busy and memory per\n"
	        "                        region; on by default when a DRM or accel device is\n"
	        "                        traced (not through the daemon)\n"
	        "      --no-drm-usage    do not sample them\n"
	        "  -- CMD ARGS           run CMD, trace it and its children, stop when it exits\n"
	        "Stops: SIGINT, SIGTERM, SIGHUP and SIGQUIT stop cleanly (the file is complete);\n"
	        "SIGUSR1 and SIGUSR2 are ignored. A command still running at a stop (a signal\n"
	        "or -d) gets SIGTERM, then SIGKILL after %d s, and record exits with its status\n"
	        "(143 after SIGTERM); if record is killed, the kernel kills the command.\n",
	        KX_LAUNCH_GRACE_MS / 1000);
}

struct record_opts {
	const char *out;
	double duration; /* seconds, 0: until the command exits or a signal */
	uint32_t pids[KX_MAX_PIDS];
	struct kx_counter_list counters;
	struct kx_devset devices;
	struct kx_capture_opts cap;
	int drm_usage; /* -1: --no-drm-usage, 1: --drm-usage, 0: the default */
};

static void print_status(const struct kx_capinfo *ci, double elapsed)
{
	fprintf(stderr, "\r\033[Krecording: %llu events, %llu dropped, %.1f s",
	        (unsigned long long)ci->received, (unsigned long long)ci->dropped, elapsed);
}

/* One option into o. 0, 1 for --help, or -1 after a message. */
static int record_opt(struct record_opts *o, int opt)
{
	/* Fractions allowed (0.0625 = 64 KiB): the size is rounded up to a power of two pages. */
	static const struct kx_num_range mib = {.lo = 0, .hi = 1024, .lo_open = 1};
	static const struct kx_num_range secs = {.lo = 0, .hi = 1e9, .lo_open = 1};
	char err[256];
	long long hz;
	double mb;

	switch (opt) {
	case 'o':
		o->out = optarg;
		return 0;
	case 'p':
		if (kx_pidset_parse(optarg, o->pids, KX_MAX_PIDS, &o->cap.npids, err,
		                    sizeof(err))) {
			kx_err("-p: %s", err);
			return -1;
		}
		return 0;
	case 'a':
		o->cap.all = 1;
		return 0;
	case 'd':
		if (kx_parse_double("-d", optarg, &secs, &o->duration, err, sizeof(err)))
			break;
		return 0;
	case 'D':
		if (kx_devset_add(&o->devices, optarg, err, sizeof(err)))
			break;
		return 0;
	case 'r':
		if (kx_parse_double("--ringbuf-mb", optarg, &mib, &mb, err, sizeof(err)))
			break;
		o->cap.ringbuf_bytes = (uint32_t)(mb * (1 << 20));
		return 0;
	case 'J':
		o->cap.no_jobs = 1;
		return 0;
	case 'n':
		o->cap.no_daemon = 1;
		return 0;
	case 'F':
		if (kx_parse_long("-F", optarg, 1, 1000000, &hz, err, sizeof(err)))
			break;
		o->cap.sample_hz = (uint32_t)hz;
		return 0;
	case 'O':
		o->cap.off_cpu = 1;
		return 0;
	case 'G':
		if (kx_call_graph_parse(optarg, &o->cap.ustack_bytes, &o->cap.ustack_auto, err,
		                        sizeof(err)))
			break;
		return 0;
	case 'C':
		if (kx_counters_parse(optarg, &o->counters, err, sizeof(err)))
			break;
		o->cap.counters = &o->counters;
		return 0;
	case 'N':
		o->cap.annotate = 0;
		return 0;
	case 'u':
		o->drm_usage = 1;
		o->cap.drm_usage_ms = KX_DRM_INTERVAL_DEFAULT_MS;
		if (optarg) {
			static const struct kx_num_range ivl = {.lo = 0.01, .hi = 3600};
			double sec;

			if (kx_parse_double("--drm-usage", optarg, &ivl, &sec, err, sizeof(err)))
				break;
			o->cap.drm_usage_ms = (unsigned int)(sec * 1000 + 0.5);
		}
		return 0;
	case 'U':
		o->drm_usage = -1;
		o->cap.drm_usage_ms = 0;
		return 0;
	case 'm':
		o->cap.mech = optarg;
		return 0;
	case 'h':
		record_usage(stdout);
		return 1;
	default:
		snprintf(err, sizeof(err), "see kxprof record --help");
	}
	kx_err("%s", err);
	return -1;
}

/* Options into o. 0 to record; else the exit code (0 after --help). */
static int record_parse(int argc, char **argv, struct record_opts *o)
{
	static const struct option opts[] = {
	        {"output", required_argument, NULL, 'o'},
	        {"pid", required_argument, NULL, 'p'},
	        {"all", no_argument, NULL, 'a'},
	        {"duration", required_argument, NULL, 'd'},
	        {"device", required_argument, NULL, 'D'},
	        {"ringbuf-mb", required_argument, NULL, 'r'},
	        {"attach", required_argument, NULL, 'm'},
	        {"no-jobs", no_argument, NULL, 'J'},
	        {"freq", required_argument, NULL, 'F'},
	        {"off-cpu", no_argument, NULL, 'O'},
	        {"call-graph", required_argument, NULL, 'G'},
	        {"counters", required_argument, NULL, 'C'},
	        {"no-annotations", no_argument, NULL, 'N'},
	        {"drm-usage", optional_argument, NULL, 'u'},
	        {"no-drm-usage", no_argument, NULL, 'U'},
	        {"no-daemon", no_argument, NULL, 'n'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	char err[512];
	int opt, rc;

	o->out = "kxprof.kxp";
	o->cap.pids = o->pids;
	o->cap.devices = &o->devices;
	o->cap.annotate = 1;
	optind = 1;
	while ((opt = kx_getopt(argc, argv, "+o:p:ad:F:h", opts)) != -1)
		if ((rc = record_opt(o, opt)) != 0)
			return rc < 0 ? 2 : -1;
	o->cap.verbose = kx_verbose;
	if (optind < argc)
		o->cap.argv = argv + optind;
	else if (optind > 1 && !strcmp(argv[optind - 1], "--") &&
	         (optind < 3 || strcmp(argv[optind - 2], "-o"))) {
		kx_err("'--' without a command after it (see kxprof record --help)");
		return 2;
	}
	if (o->cap.npids && o->cap.all) {
		kx_err("-p and -a exclude each other: -a already traces every process");
		return 2;
	}
	if (!o->cap.argv && !o->cap.npids && !o->cap.all) {
		kx_err("nothing to trace: give -- CMD, -p PID or -a (see kxprof record --help)");
		return 2;
	}
	if (kx_devset_resolve(&o->devices, kx_cli_warn, NULL) == 0) {
		kx_err("no accelerator device found here and none named: use --device PATH");
		return 2;
	}
	if (!o->drm_usage && kx_drm_devices_traced(o->devices.dev, o->devices.n))
		o->cap.drm_usage_ms = KX_DRM_INTERVAL_DEFAULT_MS;
	o->cap.record_path = o->out;
	/* An output kxprof will not write is a bad option value, like a bad --device. */
	if (kx_capture_check_output(&o->cap, err, sizeof(err))) {
		kx_err("%s", err);
		return 2;
	}
	return 0;
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGINT:
		return "SIGINT";
	case SIGTERM:
		return "SIGTERM";
	case SIGHUP:
		return "SIGHUP";
	default:
		return "SIGQUIT";
	}
}

/* Why the capture should stop now, or NULL to go on. */
static const char *record_should_stop(struct kx_capture *c, double duration, double elapsed)
{
	if (stop_signal)
		return sig_name(stop_signal);
	if (kx_capture_ended(c))
		return kx_capture_ended(c);
	if (duration > 0 && elapsed >= duration)
		return "-d";
	if (!kx_capture_cmd_running(c))
		return "command exited";
	if (!c->argv && !kx_capture_pids_running(c))
		return "pids exited";
	return NULL;
}

/* Records until a signal, the duration, the command's or the pids' exit. */
static void record_loop(struct kx_capture *c, double duration)
{
	uint64_t t0 = kx_mono_ns();
	int tty = isatty(STDERR_FILENO);
	const char *why;

	for (;;) {
		struct timespec nap = {0, 100 * 1000000};
		double elapsed = (double)(kx_mono_ns() - t0) / 1e9;

		if ((why = record_should_stop(c, duration, elapsed)) != NULL)
			break;
		if (tty)
			print_status(kx_capture_capinfo(c), elapsed);
		nanosleep(&nap, NULL);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	if (!strcmp(why, "pids exited"))
		kx_err("every process given with -p has exited: stopping");
	else if (why[0] == 'S' || kx_capture_ended(c))
		kx_err("%s: stopping", why);
}

/* Ends a command that outlived the capture (a signal or -d); its exit code. */
static int record_end_cmd(struct kx_capture *c)
{
	if (c->argv && kx_capture_cmd_running(c))
		kx_err("ending the command (pid %d): SIGTERM, SIGKILL after %d s", (int)c->cmd.pid,
		       KX_LAUNCH_GRACE_MS / 1000);
	return kx_capture_cmd_exit(c);
}

/* --call-graph dwarf: JIT code (no CFI) stepped by its frame pointer or
 * as a CPython trampoline, or where walks stopped (no usable frame
 * pointer: no copy size helps). */
static void record_report_jit(const uint64_t *k)
{
	if (k[KX_DW_JIT_STEPS] || k[KX_DW_PY_STEPS] || k[KX_DW_JIT_STOPS])
		fprintf(stderr,
		        "kxprof record: JIT code (no CFI): %llu frames stepped by their frame "
		        "pointer, %llu CPython trampolines stepped, %llu stacks stopped there (no "
		        "usable frame pointer)\n",
		        (unsigned long long)k[KX_DW_JIT_STEPS],
		        (unsigned long long)k[KX_DW_PY_STEPS],
		        (unsigned long long)k[KX_DW_JIT_STOPS]);
	if (k[KX_DW_JIT_STOPS] * 2 > k[KX_DW_UNWOUND] + k[KX_DW_FP_KEPT] + k[KX_DW_PARTIAL])
		fprintf(stderr, "kxprof record: most stacks stopped at JIT code that keeps no "
		                "frame pointer (such as Python's -X perf trampolines in an "
		                "interpreter built without frame pointers): a larger copy does "
		                "not help; nothing past that code can be unwound\n");
}

/* --call-graph dwarf: what became of the user stacks. */
static void record_report_dwarf(const struct kx_sample_info *si)
{
	const uint64_t *k = si->stacks;

	fprintf(stderr,
	        "kxprof record: DWARF unwinding (%llu copies of %u bytes): %llu stacks to their "
	        "root, %llu stopped early, %llu without a frame, %llu without a copy\n",
	        (unsigned long long)k[KX_DW_COPIES], si->ustack_bytes,
	        (unsigned long long)k[KX_DW_UNWOUND], (unsigned long long)k[KX_DW_PARTIAL],
	        (unsigned long long)k[KX_DW_FAILED], (unsigned long long)k[KX_DW_NO_COPY]);
	if (k[KX_DW_FP_KEPT])
		fprintf(stderr,
		        "kxprof record: --call-graph auto: %llu frame-pointer walks kept (every "
		        "frame in a module that keeps frame pointers), not unwound\n",
		        (unsigned long long)k[KX_DW_FP_KEPT]);
	record_report_jit(k);
	/* Most stacks stopped early, not at JIT code. */
	if (k[KX_DW_PARTIAL] - k[KX_DW_JIT_STOPS] >
	    k[KX_DW_UNWOUND] + k[KX_DW_FP_KEPT] + k[KX_DW_JIT_STOPS])
		fprintf(stderr, "kxprof record: most stacks stopped early: a larger copy "
		                "(--call-graph dwarf,SIZE) reaches further up a deep stack\n");
	if (k[KX_DW_NO_COPY])
		fprintf(stderr, "kxprof record: stacks without a copy kept their frame-pointer "
		                "walk (copies lost: raise --ringbuf-mb or lower -F)\n");
}

/* The samples line, and what was lost of them. */
static void record_report_samples(const struct kx_capinfo *ci)
{
	const struct kx_sample_info *si = &ci->samples;

	fprintf(stderr, "kxprof record: %llu CPU samples, %llu dropped",
	        (unsigned long long)si->received, (unsigned long long)si->dropped);
	if (si->off_cpu)
		fprintf(stderr, "; %llu off-CPU intervals, %llu dropped",
		        (unsigned long long)si->off_received, (unsigned long long)si->off_dropped);
	fputc('\n', stderr);
	if (si->dropped || si->off_dropped)
		fprintf(stderr, "kxprof record: warning: samples were dropped because the ring "
		                "buffer was full: raise --ringbuf-mb or lower -F\n");
	if (si->ustack_bytes)
		record_report_dwarf(si);
	if (si->off_noslot)
		fprintf(stderr,
		        "kxprof record: warning: %llu blocked threads were not kept (more than "
		        "4096 blocked at once inside traced ioctls)\n",
		        (unsigned long long)si->off_noslot);
	if (si->off_stale)
		fprintf(stderr,
		        "kxprof record: warning: %llu off-CPU intervals were not recorded: the "
		        "thread's return to a CPU was not seen before its ioctl ended\n",
		        (unsigned long long)si->off_stale);
	for (uint32_t i = 0; i < ci->nhooks && i < KX_MAX_HOOKS; i++)
		if (!strcmp(ci->hooks[i].name, "kernel stacks") &&
		    ci->hooks[i].state != KX_HOOK_ATTACHED)
			fprintf(stderr, "kxprof record: user frames only, no kernel frames: %s\n",
			        ci->hooks[i].why);
}

/* The counters line (record --counters), what was lost of them, and the
 * counters this machine refused. */
static void record_report_counters(const struct kx_capinfo *ci)
{
	const uint64_t *st = ci->counters.stats;

	for (uint32_t i = 0; i < ci->nhooks && i < KX_MAX_HOOKS; i++)
		if (!strncmp(ci->hooks[i].name, "counter:", 8) &&
		    ci->hooks[i].state != KX_HOOK_ATTACHED)
			fprintf(stderr, "kxprof record: %s skipped: %s\n", ci->hooks[i].name + 8,
			        ci->hooks[i].why);
	if (!ci->counters.names[0])
		return;
	fprintf(stderr, "kxprof record: counters (%s) of %llu calls, %llu dropped\n",
	        ci->counters.names, (unsigned long long)st[KX_CTR_RECEIVED],
	        (unsigned long long)st[KX_CTR_DROPPED]);
	if (st[KX_CTR_READ_FAIL] || st[KX_CTR_NOSLOT])
		fprintf(stderr,
		        "kxprof record: warning: %llu counter readings failed and %llu calls "
		        "were not measured\n",
		        (unsigned long long)st[KX_CTR_READ_FAIL],
		        (unsigned long long)st[KX_CTR_NOSLOT]);
}

/* The DRM usage line (record --drm-usage): passes, reads, records. */
static void record_report_drm(const struct kx_capture *c, unsigned int want_ms)
{
	const struct kx_drm_info *d = &c->rec.drm_info;
	const uint64_t *st = d->stats;

	if (!want_ms)
		return;
	if (c->remote) {
		fprintf(stderr, "kxprof record: DRM usage not sampled: the capture ran in the "
		                "daemon (run record with BPF privilege to sample it)\n");
		return;
	}
	fprintf(stderr,
	        "kxprof record: DRM usage: %llu passes every %.3g s, %llu processes walked, "
	        "%llu fdinfo reads, %llu records",
	        (unsigned long long)st[KX_DRMI_PASSES], d->interval_ms / 1000.0,
	        (unsigned long long)st[KX_DRMI_PROCS], (unsigned long long)st[KX_DRMI_FDINFO_READS],
	        (unsigned long long)st[KX_DRMI_ROWS]);
	if (st[KX_DRMI_ROWS_LOST])
		fprintf(stderr, " (%llu lost to a write error)",
		        (unsigned long long)st[KX_DRMI_ROWS_LOST]);
	fputc('\n', stderr);
}

static void warn_line(void *ctx, const char *msg)
{
	(void)ctx;
	fprintf(stderr, "kxprof record: warning: %s\n", msg);
}

static void record_report(struct kx_capture *c, const char *out)
{
	const struct kx_capinfo *ci = kx_capture_capinfo(c);
	struct stat st;
	uint64_t bytes = stat(out, &st) == 0 ? (uint64_t)st.st_size : 0;
	char sz[32], mech[sizeof(ci->hooks[0].mech) + sizeof(ci->hooks[0].why) + 8];
	char ann[64] = "";

	if (ci->ann.received || ci->ann.dropped)
		snprintf(ann, sizeof(ann), ", %llu annotations (%llu dropped)",
		         (unsigned long long)ci->ann.received, (unsigned long long)ci->ann.dropped);
	fprintf(stderr, "kxprof record: %llu events, %llu dropped%s -> %s (%s); ioctl hooks: %s\n",
	        (unsigned long long)ci->received, (unsigned long long)ci->dropped, ann, out,
	        kx_human_bytes(bytes, sz, sizeof(sz)),
	        kx_capinfo_ioctl_mech(ci, mech, sizeof(mech)) ?: "?");
	if (ci->dropped || ci->ann.dropped)
		fprintf(stderr,
		        "kxprof record: warning: %llu events were dropped because the ring "
		        "buffer was full: raise --ringbuf-mb\n",
		        (unsigned long long)(ci->dropped + ci->ann.dropped));
	if (ci->bpf_missed)
		fprintf(stderr,
		        "kxprof record: warning: the kernel skipped %llu runs of kxprof's BPF "
		        "programs (one tracing program at a time per CPU: another was running "
		        "there): their events are missing\n",
		        (unsigned long long)ci->bpf_missed);
	if (ci->job_done_lost)
		fprintf(stderr,
		        "kxprof record: warning: %llu block request completions never reached "
		        "kxprof's program (the sector's next request came first): report shows "
		        "each as that request's duplicate events\n",
		        (unsigned long long)ci->job_done_lost);
	if (ci->ann.capped)
		fprintf(stderr,
		        "kxprof record: warning: %llu copies of the annotation library (per "
		        "process) not attached: past the capture's cap of %d copies and %d "
		        "uprobes; their annotations are not recorded\n",
		        (unsigned long long)ci->ann.capped, KX_ANN_MAX_ATTACHED,
		        KX_ANN_MAX_UPROBES);
	kx_ann_late_warnings(ci, warn_line, NULL);
	if (ci->samples.hz || ci->samples.off_cpu)
		record_report_samples(ci);
	record_report_counters(ci);
	if (kx_capture_write_error(c))
		fprintf(stderr,
		        "kxprof record: warning: writing %s failed during the capture; the "
		        "file holds what was written before\n",
		        out);
}

/* Set-up, capture, trailer. The exit code: the command's, else 0, or 1 on error. */
static int record_run(struct record_opts *o, struct kx_capture *c)
{
	char err[512];
	int rc;

	record_signals();
	if (kx_capture_open(c, &o->cap, err, sizeof(err))) {
		kx_err("%s", err);
		return 1;
	}
	if (c->daemon)
		kx_err("no BPF privilege here: recording through the kxprof daemon at %s (%s)",
		       c->daemon, kx_capture_mech(c));
	rc = kx_capture_start(c, err, sizeof(err));
	if (rc) {
		kx_err("%s", err);
		return rc < 0 ? 1 : rc;
	}
	kx_say_attached(c->argv ? "recording, the command runs" : "recording");
	record_loop(c, o->duration);
	/* The command ends first, so what it does on its way out is traced. */
	rc = record_end_cmd(c);
	if (c->cmd.killed)
		kx_err("the command ignored SIGTERM for %d s: killed it (SIGKILL)",
		       KX_LAUNCH_GRACE_MS / 1000);
	if (kx_capture_stop(c, err, sizeof(err))) {
		kx_err("%s", err);
		return 1;
	}
	record_report(c, o->out);
	record_report_drm(c, o->cap.drm_usage_ms);
	return rc;
}

int cmd_record(int argc, char **argv)
{
	static struct record_opts o;
	struct kx_capture c = {0};
	int rc = record_parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	rc = record_run(&o, &c);
	kx_capture_close(&c);
	return rc;
}
