/*
 * kxprof record: trace driver ioctls of a command (and its children and
 * threads), of pids, or of every process, into a .kxp record file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "capture/clock.h"
#include "registry/devices.h"
#include "io/kxp.h"
#include "capture/session.h"
#include "capture/sinks.h"

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

/*
 * Starts CMD stopped at a pipe: the parent adds its pid to the filter before
 * the child execs, so its first ioctl is traced. Exec failures come back over
 * a close-on-exec pipe.
 */
struct child {
	pid_t pid;
	int go_fd;  /* write end: release the child */
	int err_fd; /* read end: errno of a failed exec */
};

static int spawn_stopped(char **argv, struct child *c)
{
	int go[2], err[2];

	if (pipe2(go, O_CLOEXEC) || pipe2(err, O_CLOEXEC)) {
		kx_err("cannot create a pipe: %s", strerror(errno));
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0) {
		kx_err("cannot fork: %s", strerror(errno));
		return -1;
	}
	if (c->pid == 0) {
		char b;
		int e;

		close(go[1]);
		close(err[0]);
		if (read(go[0], &b, 1) != 1)
			_exit(127);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	c->go_fd = go[1];
	c->err_fd = err[0];
	return 0;
}

/* Releases the child; returns 0 when exec worked, else the errno. */
static int release_child(struct child *c)
{
	int e = 0;
	ssize_t n;

	if (write(c->go_fd, "g", 1) != 1)
		return EPIPE;
	close(c->go_fd);
	n = read(c->err_fd, &e, sizeof(e));
	close(c->err_fd);
	return n == (ssize_t)sizeof(e) ? e : 0;
}

static void print_status(const struct kx_capinfo *ci, double elapsed)
{
	fprintf(stderr, "\r\033[Krecording: %llu events, %llu dropped, %.1f s",
	        (unsigned long long)ci->received, (unsigned long long)ci->dropped, elapsed);
}

int cmd_record(int argc, char **argv)
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
	static struct kx_device devices[KX_MAX_DEVICES];
	const char *out = "kxprof.kxp", *mech = NULL;
	uint32_t pids[256];
	int npids = 0, all = 0, no_jobs = 0, ndev, opt, status = 0, rc = 1;
	double duration = 0;
	double ringbuf_mb = 0;
	struct kx_session_opts so = {0};
	struct kx_kxp_sink ks = {0};
	struct kx_session *s = NULL;
	struct child child = {.pid = -1};
	char err[512], sz[32];
	char **cmd = NULL;
	int tty = isatty(STDERR_FILENO);
	uint64_t t0;
	struct stat st;

	ndev = kx_devices_default(devices, KX_MAX_DEVICES);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "+o:p:ad:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'o':
			out = optarg;
			break;
		case 'p':
			if (kx_cli_parse_pids(optarg, pids, 256, &npids))
				return 2;
			break;
		case 'a':
			all = 1;
			break;
		case 'd': {
			char *end;

			duration = strtod(optarg, &end);
			if (*end || duration <= 0) {
				kx_err("bad duration '%s' (seconds, e.g. 10 or 0.5)", optarg);
				return 2;
			}
			break;
		}
		case 'D':
			if (kx_cli_add_devices(optarg, devices, KX_MAX_DEVICES, &ndev))
				return 2;
			break;
		case 'r': {
			char *end;

			/* Fractions allowed (0.0625 = 64 KiB); the kernel needs a power of two
			 * number of pages, so the size is rounded up. */
			ringbuf_mb = strtod(optarg, &end);
			if (*end || ringbuf_mb <= 0 || ringbuf_mb > 1024) {
				kx_err("bad --ringbuf-mb '%s' (a size in MiB, up to 1024)", optarg);
				return 2;
			}
			break;
		}
		case 'J':
			no_jobs = 1;
			break;
		case 'm':
			mech = optarg;
			break;
		case 'h':
			record_usage(stdout);
			return 0;
		default:
			kx_err("see kxprof record --help");
			return 2;
		}
	}
	if (optind < argc)
		cmd = argv + optind;
	if (!cmd && !npids && !all) {
		kx_err("nothing to trace: give -- CMD, -p PID or -a (see kxprof record --help)");
		return 2;
	}
	if (ndev == 0) {
		kx_err("no accelerator device found here and none named: use --device PATH");
		return 2;
	}

	so.all = all;
	so.devices = devices;
	so.ndevices = ndev;
	so.ringbuf_bytes = (uint32_t)(ringbuf_mb * (1 << 20));
	so.mech = mech;
	so.verbose = kx_verbose;
	so.no_jobs = no_jobs;
	so.sink = kx_sink_kxp(&ks);

	s = kx_session_open(&so, err, sizeof(err));
	if (!s) {
		kx_err("%s", err);
		return 1;
	}
	for (int i = 0; i < npids; i++)
		if (kx_session_add_pid(s, pids[i], err, sizeof(err))) {
			kx_err("%s", err);
			goto out;
		}
	if (cmd) {
		if (spawn_stopped(cmd, &child))
			goto out;
		if (!all && kx_session_add_pid(s, (uint32_t)child.pid, err, sizeof(err))) {
			kx_err("%s", err);
			kill(child.pid, SIGKILL);
			waitpid(child.pid, NULL, 0);
			goto out;
		}
	}
	{
		struct kx_capinfo ci = *kx_session_capinfo(s);
		int n = 0;

		for (char **a = cmd; a && *a && n < (int)sizeof(ci.cmdline) - 2; a++)
			n += snprintf(ci.cmdline + n, sizeof(ci.cmdline) - (size_t)n, "%s%s",
			              n ? " " : "", *a);
		if (!cmd)
			snprintf(ci.cmdline, sizeof(ci.cmdline), "%s", all ? "-a" : "-p");
		kx_session_set_cmdline(s, ci.cmdline);
		kx_clock_sync_measure(&ci.clock_start);
		ci.start_mono_ns = kx_mono_ns();
		ks.w = kx_kxp_create(out, &ci, err, sizeof(err));
		if (!ks.w) {
			kx_err("%s", err);
			if (child.pid > 0) {
				kill(child.pid, SIGKILL);
				waitpid(child.pid, NULL, 0);
			}
			goto out;
		}
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	if (kx_session_start(s, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	t0 = kx_mono_ns();
	if (cmd) {
		int e = release_child(&child);

		if (e) {
			kx_err("cannot run '%s': %s", cmd[0], strerror(e));
			waitpid(child.pid, NULL, 0);
			child.pid = -1;
			rc = e == ENOENT ? 127 : 126;
			kx_session_stop(s);
			kx_kxp_close(ks.w, kx_session_capinfo(s), err, sizeof(err));
			ks.w = NULL;
			unlink(out);
			goto out;
		}
	}

	for (;;) {
		struct timespec nap = {0, 100 * 1000000};
		double elapsed = (double)(kx_mono_ns() - t0) / 1e9;

		if (stop_signal)
			break;
		if (duration > 0 && elapsed >= duration)
			break;
		if (child.pid > 0) {
			pid_t w = waitpid(child.pid, &status, WNOHANG);

			if (w == child.pid) {
				child.pid = -1;
				break;
			}
		}
		if (tty)
			print_status(kx_session_capinfo(s), elapsed);
		nanosleep(&nap, NULL);
	}
	if (tty)
		fputs("\r\033[K", stderr);
	kx_session_stop(s);
	{
		const struct kx_capinfo *ci = kx_session_capinfo(s);
		uint64_t bytes;

		if (kx_kxp_close(ks.w, ci, err, sizeof(err)) != 0) {
			ks.w = NULL;
			kx_err("%s", err);
			goto out;
		}
		ks.w = NULL;
		bytes = stat(out, &st) == 0 ? (uint64_t)st.st_size : 0;
		fprintf(stderr, "kxprof: %llu events, %llu dropped -> %s (%s)\n",
		        (unsigned long long)ci->received, (unsigned long long)ci->dropped, out,
		        kx_human_bytes(bytes, sz, sizeof(sz)));
		if (ci->dropped)
			fprintf(stderr,
			        "kxprof: warning: %llu events were dropped because the ring "
			        "buffer was full: raise --ringbuf-mb\n",
			        (unsigned long long)ci->dropped);
		if (ks.write_error)
			fprintf(stderr,
			        "kxprof: warning: writing %s failed during the capture; the "
			        "file holds what was written before\n",
			        out);
	}
	rc = 0;
	if (cmd) {
		if (child.pid > 0) {
			/* Stopped by a signal or -d while the command still runs. */
			kill(child.pid, SIGTERM);
			waitpid(child.pid, &status, 0);
		}
		if (WIFEXITED(status))
			rc = WEXITSTATUS(status);
		else if (WIFSIGNALED(status))
			rc = 128 + WTERMSIG(status);
	}
out:
	if (ks.w) {
		kx_kxp_close(ks.w, kx_session_capinfo(s), err, sizeof(err));
		ks.w = NULL;
	}
	kx_session_close(s);
	return rc;
}
