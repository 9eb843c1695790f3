/*
 * kxprof record: trace driver ioctls of a command (and its children and
 * threads), of pids, or of every process, into a .kxp record file.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "capture/clock.h"
#include "capture/setup.h"
#include "util/parse.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void record_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof record [-o FILE] [-p PID[,PID...]] [-a] [-d SECONDS]\n"
	        "                     [--device SPEC]... [--ringbuf-mb N] [--attach MECH] [-- CMD "
	        "ARGS...]\n"
	        "  -o, --output FILE     record file (default kxprof.kxp)\n"
	        "  -p, --pid PIDS        trace these processes (and their future children)\n"
	        "  -a, --all             trace every process\n"
	        "  -d, --duration SECS   stop after this long\n"
	        "      --device SPEC     also trace this device: PATH, MAJOR:MINOR, MAJOR:*,\n"
	        "                        block:MAJOR:MINOR or a driver name from /proc/devices\n"
	        "                        (default: every accelerator device present, and kvm)\n"
	        "      --ringbuf-mb N    ring buffer size in MiB (default 8; fractions allowed)\n"
	        "      --attach MECH     force tp_btf, raw_tp or tp (default: best available)\n"
	        "      --no-jobs         no device timelines (job lifecycle tracepoints)\n"
	        "  -- CMD ARGS           run CMD, trace it and its children, stop when it exits\n");
}

struct record_opts {
	const char *out;
	double duration; /* seconds, 0: until the command exits or a signal */
	uint32_t pids[KX_MAX_PIDS];
	struct kx_devset devices;
	struct kx_capture_opts cap;
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
	double mb;

	switch (opt) {
	case 'o':
		o->out = optarg;
		return 0;
	case 'p':
		if (kx_pidset_parse(optarg, o->pids, KX_MAX_PIDS, &o->cap.npids, err, sizeof(err)))
			break;
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
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int opt, rc;

	o->out = "kxprof.kxp";
	o->cap.pids = o->pids;
	o->cap.devices = &o->devices;
	optind = 1;
	while ((opt = kx_getopt(argc, argv, "+o:p:ad:h", opts)) != -1)
		if ((rc = record_opt(o, opt)) != 0)
			return rc < 0 ? 2 : -1;
	o->cap.verbose = kx_verbose;
	if (optind < argc)
		o->cap.argv = argv + optind;
	if (!o->cap.argv && !o->cap.npids && !o->cap.all) {
		kx_err("nothing to trace: give -- CMD, -p PID or -a (see kxprof record --help)");
		return 2;
	}
	if (kx_devset_resolve(&o->devices, kx_cli_warn, NULL) == 0) {
		kx_err("no accelerator device found here and none named: use --device PATH");
		return 2;
	}
	o->cap.record_path = o->out;
	return 0;
}

/* Records until a signal, the duration or the command's exit. */
static void record_loop(struct kx_capture *c, double duration)
{
	uint64_t t0 = kx_mono_ns();
	int tty = isatty(STDERR_FILENO);

	for (;;) {
		struct timespec nap = {0, 100 * 1000000};
		double elapsed = (double)(kx_mono_ns() - t0) / 1e9;

		if (stop_signal || (duration > 0 && elapsed >= duration))
			break;
		if (!kx_capture_cmd_running(c))
			break;
		if (tty)
			print_status(kx_session_capinfo(c->s), elapsed);
		nanosleep(&nap, NULL);
	}
	if (tty)
		fputs("\r\033[K", stderr);
}

static void record_report(const struct kx_capture *c, const char *out)
{
	const struct kx_capinfo *ci = kx_session_capinfo(c->s);
	struct stat st;
	uint64_t bytes = stat(out, &st) == 0 ? (uint64_t)st.st_size : 0;
	char sz[32];

	fprintf(stderr, "kxprof record: %llu events, %llu dropped -> %s (%s)\n",
	        (unsigned long long)ci->received, (unsigned long long)ci->dropped, out,
	        kx_human_bytes(bytes, sz, sizeof(sz)));
	if (ci->dropped)
		fprintf(stderr,
		        "kxprof record: warning: %llu events were dropped because the ring "
		        "buffer was full: raise --ringbuf-mb\n",
		        (unsigned long long)ci->dropped);
	if (c->rec.write_error)
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

	if (kx_capture_open(c, &o->cap, err, sizeof(err))) {
		kx_err("%s", err);
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	rc = kx_capture_start(c, err, sizeof(err));
	if (rc) {
		kx_err("%s", err);
		return rc < 0 ? 1 : rc;
	}
	record_loop(c, o->duration);
	if (kx_capture_stop(c, err, sizeof(err))) {
		kx_err("%s", err);
		return 1;
	}
	record_report(c, o->out);
	return kx_capture_cmd_exit(c);
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
