/*
 * kxprof top: a live terminal view of driver ioctls for ops, over in-kernel
 * aggregation (no per-event traffic). Every interval, a snapshot diff gives
 * per device and ioctl (and per process with -P or the 'p' key): rate, error
 * rate, p50/p99/max latency (log2 bucket upper bounds) and off-CPU share.
 * Interactive on a terminal (raw mode, ANSI redraw on the alternate screen,
 * restored on exit and on signals; keys q p s r); plain text blocks with
 * --batch or when stdout is not a terminal.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "live/aggregate.h"
#include "cli/cli.h"
#include "capture/clock.h"
#include "registry/devices.h"
#include "capture/session.h"
#include "util/hist.h"

enum col {
	C_RATE,
	C_ERR,
	C_P50,
	C_P99,
	C_MAX,
	C_OFFCPU,
	C_DEVICE,
	C_DRIVER,
	C_IOCTL,
	C_PID,
	NSORT
};

static const char *const sort_names[NSORT] = {
        [C_RATE] = "rate",   [C_ERR] = "err",       [C_P50] = "p50",       [C_P99] = "p99",
        [C_MAX] = "max",     [C_OFFCPU] = "offcpu", [C_DEVICE] = "device", [C_DRIVER] = "driver",
        [C_IOCTL] = "ioctl", [C_PID] = "pid",
};

struct trow {
	const struct kx_agg_row *r;
	double rate, err_rate, offcpu_pct;
	uint64_t p50, p99, max;
};

struct view {
	int per_pid;
	int sort;
	int reverse;
	int nrows;
	int interactive;
	double interval;
	const char *mech;
	const char *who; /* "all processes" or "given processes" */
};

static volatile sig_atomic_t got_signal, got_winch;
static struct termios saved_tio;
static int tio_saved;

static void on_signal(int sig)
{
	got_signal = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	got_winch = 1;
}

static void term_restore(void)
{
	if (!tio_saved)
		return;
	tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved_tio);
	/* Cursor back, leave the alternate screen. */
	fputs("\033[?25h\033[?1049l", stdout);
	fflush(stdout);
	tio_saved = 0;
}

static int term_raw(void)
{
	struct termios t;

	if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &saved_tio))
		return -1;
	t = saved_tio;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t))
		return -1;
	tio_saved = 1;
	atexit(term_restore);
	fputs("\033[?1049h\033[?25l", stdout);
	return 0;
}

static void top_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof top [-i SECONDS] [-n ROWS] [-s COLUMN] [-P] [-p PID[,PID...]]\n"
	        "                  [--device SPEC]... [--batch] [-d SECONDS] [-c COUNT] [--attach "
	        "MECH]\n"
	        "  -i, --interval SECS   refresh interval (default 1; decimals allowed)\n"
	        "  -n, --rows N          show the top N rows (default 20; also bounded by the "
	        "terminal)\n"
	        "  -s, --sort COLUMN     rate (default), err, p50, p99, max, offcpu, device, "
	        "driver,\n"
	        "                        ioctl or pid\n"
	        "  -P, --per-process     one row per process too (PID, COMM)\n"
	        "  -p, --pid PIDS        only these processes and their children (default: all)\n"
	        "      --device SPEC     also trace this device (see kxprof record --help)\n"
	        "  -b, --batch           plain text blocks, one per interval (default when stdout\n"
	        "                        is not a terminal)\n"
	        "  -d, --duration SECS   stop after this long\n"
	        "  -c, --count N         stop after N refreshes\n"
	        "      --attach MECH     force tp_btf, raw_tp or tp\n"
	        "      --max-keys N      in-kernel key limit (default %u; keys are per process,\n"
	        "                        new keys past it are counted as overflow in the header)\n"
	        "Keys: q quit, p per-process on/off, s next sort column, r reverse order.\n"
	        "Rows are the ioctls seen in the last interval. P50/P99/MAX are log2 bucket upper\n"
	        "bounds (within a factor 2); OFFCPU%% is time blocked inside the calls ('-' when "
	        "not\n"
	        "measured). Jobs in flight and device busy %% need job sources ('-' without).\n",
	        KX_AGG_MAX_KEYS);
}

static const char *dur_str(uint64_t ns, char *buf, size_t len)
{
	if (!ns)
		snprintf(buf, len, "-");
	else if (ns < 1000)
		snprintf(buf, len, "%" PRIu64 "ns", ns);
	else if (ns < 1000000)
		snprintf(buf, len, "%.1fus", ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, len, "%.2fms", ns / 1e6);
	else
		snprintf(buf, len, "%.2fs", ns / 1e9);
	return buf;
}

static int cmp_num(double a, double b)
{
	return a < b ? -1 : a > b;
}

static int sort_col, sort_rev;

static int cmp_trow(const void *pa, const void *pb)
{
	const struct trow *a = pa, *b = pb;
	int c = 0, text = 0;

	switch (sort_col) {
	case C_RATE:
		c = cmp_num(a->rate, b->rate);
		break;
	case C_ERR:
		c = cmp_num(a->err_rate, b->err_rate);
		break;
	case C_P50:
		c = cmp_num((double)a->p50, (double)b->p50);
		break;
	case C_P99:
		c = cmp_num((double)a->p99, (double)b->p99);
		break;
	case C_MAX:
		c = cmp_num((double)a->max, (double)b->max);
		break;
	case C_OFFCPU:
		c = cmp_num(a->offcpu_pct, b->offcpu_pct);
		break;
	case C_DEVICE:
		c = strcmp(a->r->device, b->r->device);
		text = 1;
		break;
	case C_DRIVER:
		c = strcmp(a->r->driver, b->r->driver);
		text = 1;
		break;
	case C_IOCTL:
		c = strcmp(a->r->ioctl, b->r->ioctl);
		text = 1;
		break;
	case C_PID:
		c = cmp_num((double)a->r->key.who, (double)b->r->key.who);
		text = 1;
		break;
	}
	/* Numbers largest first, names A to Z; r flips either. */
	if (!text)
		c = -c;
	if (sort_rev)
		c = -c;
	if (!c)
		c = -cmp_num(a->rate, b->rate);
	if (!c)
		c = strcmp(a->r->ioctl, b->r->ioctl);
	return c;
}

/* Prints one refresh: header, column titles, up to max rows. */
static void render(FILE *f, const struct view *v, const struct kx_agg_snapshot *d, uint32_t nkeys,
                   int max_lines, int cols)
{
	struct trow *t = calloc(d->nrows ? d->nrows : 1, sizeof(*t));
	int n = 0, wdev = 6, wdrv = 6, wioc = 5, shown;
	char tbuf[16], line[512], a[16], b[16], c[16], off[16];
	time_t now = time(NULL);
	struct tm tm;

	if (!t)
		return;
	for (size_t i = 0; i < d->nrows; i++) {
		const struct kx_agg_row *r = &d->rows[i];

		if (!r->count && !r->errors)
			continue;
		t[n].r = r;
		t[n].rate = d->interval_s > 0 ? r->count / d->interval_s : 0;
		t[n].err_rate = d->interval_s > 0 ? r->errors / d->interval_s : 0;
		t[n].p50 = kx_hist_quantile(r->slots, r->count, KX_PPM(50), r->min_ns, r->max_ns);
		t[n].p99 = kx_hist_quantile(r->slots, r->count, KX_PPM(99), r->min_ns, r->max_ns);
		t[n].max = kx_hist_max(r->slots, r->min_ns, r->max_ns);
		t[n].offcpu_pct = r->sum_ns ? 100.0 * (double)r->offcpu_ns / (double)r->sum_ns : 0;
		n++;
	}
	sort_col = v->sort;
	sort_rev = v->reverse;
	if (n > 1)
		qsort(t, (size_t)n, sizeof(*t), cmp_trow);
	shown = n < v->nrows ? n : v->nrows;
	if (max_lines > 0 && shown > max_lines - 4)
		shown = max_lines - 4 > 0 ? max_lines - 4 : 0;
	for (int i = 0; i < shown; i++) {
		int l;

		if ((l = (int)strlen(t[i].r->device)) > wdev)
			wdev = l < 28 ? l : 28;
		if ((l = (int)strlen(t[i].r->driver)) > wdrv)
			wdrv = l;
		if ((l = (int)strlen(t[i].r->ioctl)) > wioc)
			wioc = l < 32 ? l : 32;
	}
	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	snprintf(line, sizeof(line),
	         "kxprof top %s  every %.2gs  %s  %s  sort %s%s  rows %d/%d  keys %u/%u  overflow "
	         "%" PRIu64,
	         tbuf, v->interval, v->mech, v->who, sort_names[v->sort],
	         v->reverse ? " (rev)" : "", shown, n, nkeys, d->max_keys, d->overflow);
	fprintf(f, "%.*s\n", cols, line);
	snprintf(line, sizeof(line),
	         "jobs in flight: -  device busy: -  (no job source attached)%s",
	         v->interactive ? "  [q quit, p per-process, s sort, r reverse]" : "");
	fprintf(f, "%.*s\n", cols, line);
	if (v->interactive)
		fputc('\n', f);
	if (v->per_pid)
		snprintf(line, sizeof(line), "%-*s %-*s %-*s %7s %-15s %10s %9s %9s %9s %9s %7s",
		         wdev, "DEVICE", wdrv, "DRIVER", wioc, "IOCTL", "PID", "COMM", "RATE/s",
		         "ERR/s", "P50", "P99", "MAX", "OFFCPU%");
	else
		snprintf(line, sizeof(line), "%-*s %-*s %-*s %10s %9s %9s %9s %9s %7s", wdev,
		         "DEVICE", wdrv, "DRIVER", wioc, "IOCTL", "RATE/s", "ERR/s", "P50", "P99",
		         "MAX", "OFFCPU%");
	fprintf(f, "%.*s\n", cols, line);
	for (int i = 0; i < shown; i++) {
		const struct kx_agg_row *r = t[i].r;

		if (d->offcpu_measured)
			snprintf(off, sizeof(off), "%.1f", t[i].offcpu_pct);
		else
			snprintf(off, sizeof(off), "-");
		if (v->per_pid)
			snprintf(line, sizeof(line),
			         "%-*.*s %-*s %-*.*s %7" PRIu64
			         " %-15.15s %10.1f %9.1f %9s %9s %9s %7s",
			         wdev, wdev, r->device, wdrv, r->driver, wioc, wioc, r->ioctl,
			         (uint64_t)r->key.who, r->comm[0] ? r->comm : "-", t[i].rate,
			         t[i].err_rate, dur_str(t[i].p50, a, sizeof(a)),
			         dur_str(t[i].p99, b, sizeof(b)), dur_str(t[i].max, c, sizeof(c)),
			         off);
		else
			snprintf(line, sizeof(line),
			         "%-*.*s %-*s %-*.*s %10.1f %9.1f %9s %9s %9s %7s", wdev, wdev,
			         r->device, wdrv, r->driver, wioc, wioc, r->ioctl, t[i].rate,
			         t[i].err_rate, dur_str(t[i].p50, a, sizeof(a)),
			         dur_str(t[i].p99, b, sizeof(b)), dur_str(t[i].max, c, sizeof(c)),
			         off);
		fprintf(f, "%.*s\n", cols, line);
	}
	if (!n)
		fprintf(f, "(no traced ioctls in this interval)\n");
	free(t);
}

/* One refresh on stdout: folded for the view, redrawn or appended. */
static int show(const struct view *v, const struct kx_agg_snapshot *last, uint32_t nkeys)
{
	struct kx_agg_snapshot d;
	int lines = 0, cols = 511;
	struct winsize ws;

	if (kx_agg_snapshot_copy(last, &d)) {
		kx_err("out of memory");
		return -1;
	}
	if (!v->per_pid)
		kx_agg_fold_who(&d);
	kx_agg_fold_names(&d);
	if (v->interactive) {
		if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
			lines = ws.ws_row;
			cols = ws.ws_col < 511 ? ws.ws_col : 511;
		}
		/* Home and clear: one redraw per refresh, no scrolling. */
		fputs("\033[H\033[2J", stdout);
	}
	render(stdout, v, &d, nkeys, lines, cols);
	if (!v->interactive)
		fputc('\n', stdout);
	fflush(stdout);
	kx_agg_snapshot_free(&d);
	return 0;
}

static int parse_secs(const char *opt, const char *s, double *out)
{
	char *end;

	*out = strtod(s, &end);
	if (*end || s == end || !(*out >= 0.05 && *out <= 86400)) {
		kx_err("bad %s '%s' (seconds from 0.05, e.g. 1 or 0.5)", opt, s);
		return -1;
	}
	return 0;
}

static int sort_parse(const char *s)
{
	for (int i = 0; i < NSORT; i++)
		if (!strcmp(s, sort_names[i]))
			return i;
	return -1;
}

static void nop_ioctl(void *ctx, const struct kx_ioctl *e, const uint8_t *arg)
{
	(void)ctx;
	(void)e;
	(void)arg;
}

/* Reads keys until the deadline; returns 1 to quit. */
static int wait_keys(struct view *v, uint64_t deadline, int *redraw)
{
	for (;;) {
		uint64_t now = kx_mono_ns();
		struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
		int ms, r;
		char ch;

		if (got_signal)
			return 1;
		if (got_winch && v->interactive) {
			got_winch = 0; /* terminal resized: redraw to the new size */
			*redraw = 1;
			return 0;
		}
		if (now >= deadline)
			return 0;
		ms = (int)((deadline - now + 999999) / 1000000);
		if (!v->interactive || !tio_saved) {
			struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

			nanosleep(&ts, NULL);
			continue;
		}
		r = poll(&p, 1, ms);
		if (r <= 0 || !(p.revents & POLLIN))
			continue;
		if (read(STDIN_FILENO, &ch, 1) != 1)
			continue;
		switch (ch) {
		case 'q':
		case 'Q':
			return 1;
		case 'p':
			v->per_pid = !v->per_pid;
			*redraw = 1;
			break;
		case 's':
			v->sort = (v->sort + 1) % NSORT;
			if (v->sort == C_PID && !v->per_pid)
				v->sort = C_RATE;
			*redraw = 1;
			break;
		case 'r':
			v->reverse = !v->reverse;
			*redraw = 1;
			break;
		}
		if (*redraw)
			return 0;
	}
}

int cmd_top(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"interval", required_argument, NULL, 'i'},
	        {"rows", required_argument, NULL, 'n'},
	        {"sort", required_argument, NULL, 's'},
	        {"per-process", no_argument, NULL, 'P'},
	        {"pid", required_argument, NULL, 'p'},
	        {"device", required_argument, NULL, 'D'},
	        {"batch", no_argument, NULL, 'b'},
	        {"duration", required_argument, NULL, 'd'},
	        {"count", required_argument, NULL, 'c'},
	        {"attach", required_argument, NULL, 'm'},
	        {"max-keys", required_argument, NULL, 'k'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	static struct kx_device devices[KX_MAX_DEVICES];
	long max_keys = KX_AGG_MAX_KEYS;
	struct view v = {.sort = C_RATE, .nrows = 20, .interval = 1};
	const char *pids = NULL, *mech = NULL;
	int ndev, opt, batch = 0, rc = 1;
	long count = 0, iter = 0;
	double duration = 0;
	struct kx_session_opts so = {0};
	struct kx_session *s = NULL;
	struct kx_agg *agg = NULL;
	struct kx_agg_snapshot prev = {0}, cur, last = {0};
	uint64_t t0, next, stop;
	int have_last = 0;
	char err[512];
	char *end;

	ndev = kx_devices_default(devices, KX_MAX_DEVICES);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "i:n:s:Pp:bd:c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			if (parse_secs("-i", optarg, &v.interval))
				return 2;
			break;
		case 'n':
			v.nrows = (int)strtol(optarg, &end, 10);
			if (*end || v.nrows < 1 || v.nrows > 10000) {
				kx_err("bad -n '%s' (rows, 1 to 10000)", optarg);
				return 2;
			}
			break;
		case 's':
			v.sort = sort_parse(optarg);
			if (v.sort < 0) {
				kx_err("bad -s '%s' (rate, err, p50, p99, max, offcpu, device, "
				       "driver, ioctl, pid)",
				       optarg);
				return 2;
			}
			break;
		case 'P':
			v.per_pid = 1;
			break;
		case 'p':
			pids = optarg;
			break;
		case 'D':
			if (kx_cli_add_devices(optarg, devices, KX_MAX_DEVICES, &ndev))
				return 2;
			break;
		case 'b':
			batch = 1;
			break;
		case 'd':
			if (parse_secs("-d", optarg, &duration))
				return 2;
			break;
		case 'c':
			count = strtol(optarg, &end, 10);
			if (*end || count < 1) {
				kx_err("bad -c '%s' (a number of refreshes)", optarg);
				return 2;
			}
			break;
		case 'm':
			mech = optarg;
			break;
		case 'k':
			max_keys = strtol(optarg, &end, 10);
			if (*end || max_keys < 16 || max_keys > (1 << 20)) {
				kx_err("bad --max-keys '%s' (16 to %d)", optarg, 1 << 20);
				return 2;
			}
			break;
		case 'h':
			top_usage(stdout);
			return 0;
		default:
			kx_err("see kxprof top --help");
			return 2;
		}
	}
	if (optind < argc) {
		kx_err("unexpected argument '%s' (see kxprof top --help)", argv[optind]);
		return 2;
	}
	if (ndev == 0) {
		kx_err("no accelerator device found here and none named: use --device PATH");
		return 2;
	}
	if (v.sort == C_PID && !v.per_pid)
		v.per_pid = 1;

	so.all = pids == NULL;
	so.devices = devices;
	so.ndevices = ndev;
	so.ringbuf_bytes = 64 << 10; /* aggregate mode emits no ioctl records */
	so.mech = mech;
	so.verbose = kx_verbose;
	so.sink.ioctl = nop_ioctl;
	/* Always-on cost: no driver entry hooks; job sources need records (no sink.job). */
	so.no_drvhooks = 1;
	so.aggregate = 1;
	/* Always split by process in the kernel: 'p' then only changes the fold. */
	so.agg_by_pid = 1;
	so.agg_max_keys = (uint32_t)max_keys;
	s = kx_session_open(&so, err, sizeof(err));
	if (!s) {
		kx_err("%s", err);
		return 1;
	}
	if (pids && kx_cli_add_pids(s, pids))
		goto out;
	if (kx_session_start(s, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	agg = kx_agg_new(s, KX_AGG_BY_PID);
	if (!agg || kx_agg_snapshot(agg, &prev, 0, err, sizeof(err))) {
		kx_err("%s", agg ? err : "out of memory");
		goto out;
	}
	v.mech = kx_session_mech(s);
	v.who = pids ? "given processes" : "all processes";
	v.interactive = !batch && isatty(STDOUT_FILENO);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGWINCH, on_winch);
	if (v.interactive && term_raw() != 0 && isatty(STDIN_FILENO))
		kx_err("warning: cannot set the terminal to raw mode: keys need Enter");

	t0 = kx_mono_ns();
	next = t0 + (uint64_t)(v.interval * 1e9);
	stop = duration > 0 ? t0 + (uint64_t)(duration * 1e9) : UINT64_MAX;
	for (;;) {
		int redraw = 0;
		uint64_t now;

		if (wait_keys(&v, next < stop ? next : stop, &redraw))
			break;
		now = kx_mono_ns();
		if (!redraw) {
			if (kx_agg_snapshot(agg, &cur, 0, err, sizeof(err))) {
				kx_err("%s", err);
				goto out;
			}
			kx_agg_snapshot_free(&last);
			if (kx_agg_diff(&cur, &prev, &last)) {
				kx_agg_snapshot_free(&cur);
				kx_err("out of memory");
				goto out;
			}
			kx_agg_snapshot_free(&prev);
			prev = cur;
			have_last = 1;
			/* Per-process keys of exited processes would fill the map. */
			kx_agg_prune_exited(agg);
			iter++;
			next += (uint64_t)(v.interval * 1e9);
			if (next <= now)
				next = now + (uint64_t)(v.interval * 1e9);
		}
		if (have_last && show(&v, &last, (uint32_t)prev.nrows))
			goto out;
		if (!redraw && ((count && iter >= count) || now >= stop))
			break;
	}
	rc = 0;
out:
	term_restore();
	kx_agg_snapshot_free(&prev);
	kx_agg_snapshot_free(&last);
	kx_agg_free(agg);
	kx_session_close(s);
	return rc;
}
