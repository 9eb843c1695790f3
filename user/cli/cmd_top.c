/*
 * kxprof top: a live terminal view of driver ioctls for ops, over in-kernel
 * aggregation (no per-event traffic). Every interval (live/interval.h
 * computes it), per device and ioctl (and per process with -P or the 'p'
 * key): rate, error rate, p50/p99/max latency and off-CPU share.
 * Interactive on a terminal (raw mode, ANSI redraw on the alternate screen,
 * restored on exit and on signals; keys q p s r); plain text blocks with
 * --batch or when stdout is not a terminal. Annotation ranges of the
 * interval follow the ioctls: rate and latency per name. This file sorts
 * and draws them.
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

#include "cli/cli.h"
#include "capture/clock.h"
#include "live/interval.h"
#include "export/drmtable.h"
#include "util/parse.h"
#include "util/units.h"

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

struct view {
	int per_pid;
	int sort;
	int reverse;
	int nrows;
	int interactive;
	double interval;
	const char *mech;
	const char *who;                   /* "all processes" or "given processes" */
	int jobs_attached;                 /* jobs in flight and device busy are known */
	const struct kx_live_interval *iv; /* the last interval */
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
	        "      --attach MECH     force fentry, tp_btf, raw_tp or tp (default: fentry,\n"
	        "                        else tp: the least for the host's other syscalls)\n"
	        "      --max-keys N      in-kernel key limit (default %u, %zu bytes each; keys\n"
	        "                        are per process, new keys past it are counted as\n"
	        "                        overflow in the header)\n"
	        "      --drm-usage       also show, per process and engine, the busy %% and the\n"
	        "                        resident memory from the DRM usage statistics of the\n"
	        "                        processes' DRM and accel fds (/proc/PID/fdinfo), read at\n"
	        "                        each refresh (default when a DRM or accel device is\n"
	        "                        traced)\n"
	        "      --no-drm-usage    do not read them\n"
	        "Keys: q quit, p per-process on/off, s next sort column, r reverse order.\n"
	        "Rows are the ioctls seen in the last interval. P50/P99/MAX are within 6.25%% (8\n"
	        "histogram buckets a power of two); OFFCPU%% is time blocked inside the calls "
	        "('-'\n"
	        "when not measured). Jobs in flight and device busy %% need job sources ('-'\n"
	        "without); '>=' marks a busy %% that is a lower bound: the busy time cut at\n"
	        "the limit of busy intervals kept apart per device, said after the device.\n"
	        "Annotation ranges of the interval follow: RATE/s, P50, P99, MAX per name.\n",
	        KX_AGG_MAX_KEYS, sizeof(struct kx_agg_val));
}

/* A latency cell: "-" when none. */
static const char *dur_str(uint64_t ns, char *buf, size_t len)
{
	kx_fmt_time_as(buf, len, ns, KX_TIME_COLUMN);
	return buf;
}

static int cmp_num(double a, double b)
{
	return a < b ? -1 : a > b;
}

static int sort_col, sort_rev;

/* The sort column's value of t: a number, or NULL and a name. */
static double sort_key(const struct kx_live_row *t, const char **text)
{
	const char *s[NSORT] = {
	        [C_DEVICE] = t->r->device, [C_DRIVER] = t->r->driver, [C_IOCTL] = t->r->ioctl};
	const double n[NSORT] = {[C_RATE] = t->rate,
	                         [C_ERR] = t->err_rate,
	                         [C_P50] = (double)t->p50,
	                         [C_P99] = (double)t->p99,
	                         [C_MAX] = (double)t->max,
	                         [C_OFFCPU] = t->offcpu_pct,
	                         [C_PID] = (double)t->r->key.who};

	*text = s[sort_col];
	return n[sort_col];
}

static int cmp_trow(const void *pa, const void *pb)
{
	const struct kx_live_row *a = pa, *b = pb;
	const char *ta, *tb;
	double na = sort_key(a, &ta), nb = sort_key(b, &tb);
	int c = ta ? strcmp(ta, tb) : cmp_num(na, nb);

	/* Numbers largest first, names and pids A to Z; r flips either. */
	if (sort_col < C_DEVICE)
		c = -c;
	if (sort_rev)
		c = -c;
	if (!c)
		c = -cmp_num(a->rate, b->rate);
	if (!c)
		c = strcmp(a->r->ioctl, b->r->ioctl);
	return c;
}

struct widths {
	int dev, drv, ioc;
};

static struct widths col_widths(const struct kx_live_row *t, int shown)
{
	struct widths w = {6, 6, 5};

	for (int i = 0; i < shown; i++) {
		int l;

		if ((l = (int)strlen(t[i].r->device)) > w.dev)
			w.dev = l < 28 ? l : 28;
		if ((l = (int)strlen(t[i].r->driver)) > w.drv)
			w.drv = l;
		if ((l = (int)strlen(t[i].r->ioctl)) > w.ioc)
			w.ioc = l < 32 ? l : 32;
	}
	return w;
}

static void print_header(FILE *f, const struct view *v, const struct kx_agg_snapshot *d,
                         uint32_t nkeys, int shown, int n, int cols)
{
	char tbuf[16], line[512], jobs[160];
	time_t now = time(NULL);
	struct tm tm;

	localtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%H:%M:%S", &tm);
	snprintf(line, sizeof(line),
	         "kxprof top %s  every %.2gs  %s  %s  sort %s%s  rows %d/%d  keys %u/%u  overflow "
	         "%" PRIu64,
	         tbuf, v->interval, v->mech, v->who, sort_names[v->sort],
	         v->reverse ? " (rev)" : "", shown, n, nkeys, d->max_keys, d->overflow);
	fprintf(f, "%.*s\n", cols, line);
	kx_live_busy_line(&v->iv->busy, v->jobs_attached, jobs, sizeof(jobs));
	snprintf(line, sizeof(line), "%s%s", jobs,
	         v->interactive ? "  [q quit, p per-process, s sort, r reverse]" : "");
	fprintf(f, "%.*s\n", cols, line);
	if (v->interactive)
		fputc('\n', f);
}

static void print_titles(FILE *f, const struct view *v, struct widths w, int cols)
{
	char line[512], who[32] = "";

	if (v->per_pid)
		snprintf(who, sizeof(who), " %7s %-15s", "PID", "COMM");
	snprintf(line, sizeof(line), "%-*s %-*s %-*s%s %10s %9s %9s %9s %9s %7s", w.dev, "DEVICE",
	         w.drv, "DRIVER", w.ioc, "IOCTL", who, "RATE/s", "ERR/s", "P50", "P99", "MAX",
	         "OFFCPU%");
	fprintf(f, "%.*s\n", cols, line);
}

static void print_row(FILE *f, const struct view *v, const struct kx_live_row *t, struct widths w,
                      int offcpu_measured, int cols)
{
	const struct kx_agg_row *r = t->r;
	char line[512], a[16], b[16], c[16], off[16] = "-", who[32] = "";

	if (offcpu_measured)
		snprintf(off, sizeof(off), "%.1f", t->offcpu_pct);
	if (v->per_pid)
		snprintf(who, sizeof(who), " %7" PRIu64 " %-15.15s", (uint64_t)r->key.who,
		         r->comm[0] ? r->comm : "-");
	snprintf(line, sizeof(line), "%-*.*s %-*s %-*.*s%s %10.1f %9.1f %9s %9s %9s %7s", w.dev,
	         w.dev, r->device, w.drv, r->driver, w.ioc, w.ioc, r->ioctl, who, t->rate,
	         t->err_rate, dur_str(t->p50, a, sizeof(a)), dur_str(t->p99, b, sizeof(b)),
	         dur_str(t->max, c, sizeof(c)), off);
	fprintf(f, "%.*s\n", cols, line);
}

/* Annotation ranges and marks seen in the interval, busiest first, at most rows of them. */
static void render_ranges(FILE *f, const struct view *v, double interval_s, int rows, int cols)
{
	struct kx_live_range *s = malloc((v->iv->anns.nseries + 1) * sizeof(*s));
	char line[512], a[16], b[16], c[16], name[KX_ANN_NAME_MAX + 8];
	size_t n;

	if (!s)
		return;
	n = kx_live_ranges(&v->iv->anns, interval_s, s);
	if (n && rows > 0) {
		snprintf(line, sizeof(line), "\n%-40s %-16s %10s %9s %9s %9s", "RANGE", "CATEGORY",
		         "RATE/s", "P50", "P99", "MAX");
		fprintf(f, "%.*s\n", cols + 1, line);
	}
	for (size_t i = 0; i < n && (int)i < rows; i++) {
		const struct kx_annagg_series *r = s[i].s;

		snprintf(name, sizeof(name), "%s%s", r->name, r->mark ? " (mark)" : "");
		snprintf(line, sizeof(line), "%-40.40s %-16.16s %10.1f %9s %9s %9s", name,
		         r->cat[0] ? r->cat : "-", s[i].rate, dur_str(s[i].p50, a, sizeof(a)),
		         dur_str(s[i].p99, b, sizeof(b)), dur_str(s[i].max, c, sizeof(c)));
		fprintf(f, "%.*s\n", cols, line);
	}
	free(s);
}

/* Prints one refresh: header, column titles, up to max rows. */
static void render(FILE *f, const struct view *v, const struct kx_agg_snapshot *d, uint32_t nkeys,
                   int max_lines, int cols)
{
	struct kx_live_row *t = calloc(d->nrows ? d->nrows : 1, sizeof(*t));
	int n, shown, room;
	struct widths w;

	if (!t)
		return;
	n = (int)kx_live_rows(d, t);
	sort_col = v->sort;
	sort_rev = v->reverse;
	if (n > 1)
		qsort(t, (size_t)n, sizeof(*t), cmp_trow);
	shown = n < v->nrows ? n : v->nrows;
	if (max_lines > 0 && shown > max_lines - 4)
		shown = max_lines - 4 > 0 ? max_lines - 4 : 0;
	w = col_widths(t, shown);
	print_header(f, v, d, nkeys, shown, n, cols);
	print_titles(f, v, w, cols);
	for (int i = 0; i < shown; i++)
		print_row(f, v, &t[i], w, d->offcpu_measured, cols);
	if (!n)
		fprintf(f, "(no traced ioctls in this interval)\n");
	/* The ranges get the lines left, at most rows of them. */
	room = max_lines > 0 ? max_lines - 7 - (shown > 1 ? shown : 1) : v->nrows;
	render_ranges(f, v, d->interval_s, room < v->nrows ? room : v->nrows, cols);
	kx_drmtable_print_live(v->iv->drm, f, v->nrows, cols);
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

static int sort_parse(const char *s)
{
	for (int i = 0; i < NSORT; i++)
		if (!strcmp(s, sort_names[i]))
			return i;
	return -1;
}

/* One key: 1 when it asks to quit; *redraw when the view changed. */
static int on_key(struct view *v, char ch, int *redraw)
{
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
	return 0;
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
		if (on_key(v, ch, redraw))
			return 1;
		if (*redraw)
			return 0;
	}
}

struct top_opts {
	struct view v;
	int batch;
	long long count;  /* refreshes, 0: no limit */
	double duration;  /* seconds, 0: no limit */
	const char *pids; /* -p list, checked when the capture opens */
	int drm;          /* --drm-usage 1, --no-drm-usage -1, 0: when a DRM device is traced */
	struct kx_devset devices;
	struct kx_capture_opts cap;
};

/* One numeric option into o. 0, or -1 with err. */
static int top_num(struct top_opts *o, int opt, char *err, size_t len)
{
	static const struct kx_num_range secs = {.lo = 0.05, .hi = 86400};
	long long v = 0;
	int rc;

	switch (opt) {
	case 'i':
		return kx_parse_double("-i", optarg, &secs, &o->v.interval, err, len);
	case 'd':
		return kx_parse_double("-d", optarg, &secs, &o->duration, err, len);
	case 'n':
		rc = kx_parse_long("-n", optarg, 1, 10000, &v, err, len);
		o->v.nrows = rc ? o->v.nrows : (int)v;
		return rc;
	case 'c':
		return kx_parse_long("-c", optarg, 1, 1000000000, &o->count, err, len);
	default: /* 'k' */
		rc = kx_parse_long("--max-keys", optarg, 16, 1 << 20, &v, err, len);
		o->cap.agg_max_keys = rc ? o->cap.agg_max_keys : (uint32_t)v;
		return rc;
	}
}

/* One option into o. 0, 1 for --help, or -1 after a message. */
static int top_opt(struct top_opts *o, int opt)
{
	char err[256];

	switch (opt) {
	case 'i':
	case 'n':
	case 'd':
	case 'c':
	case 'k':
		if (top_num(o, opt, err, sizeof(err)))
			break;
		return 0;
	case 's':
		o->v.sort = sort_parse(optarg);
		if (o->v.sort >= 0)
			return 0;
		snprintf(err, sizeof(err),
		         "bad -s '%s' (rate, err, p50, p99, max, offcpu, device, driver, ioctl, "
		         "pid)",
		         optarg);
		break;
	case 'P':
		o->v.per_pid = 1;
		return 0;
	case 'p':
		o->pids = optarg;
		return 0;
	case 'D':
		if (kx_devset_add(&o->devices, optarg, err, sizeof(err)))
			break;
		return 0;
	case 'b':
		o->batch = 1;
		return 0;
	case 'u':
		o->drm = 1;
		return 0;
	case 'U':
		o->drm = -1;
		return 0;
	case 'm':
		o->cap.mech = optarg;
		return 0;
	case 'h':
		top_usage(stdout);
		return 1;
	default:
		snprintf(err, sizeof(err), "see kxprof top --help");
	}
	kx_err("%s", err);
	return -1;
}

/* Options into o. 0 to run; else the exit code (0 after --help). */
static int top_parse(int argc, char **argv, struct top_opts *o)
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
	        {"drm-usage", no_argument, NULL, 'u'},
	        {"no-drm-usage", no_argument, NULL, 'U'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	int opt, rc;

	o->v = (struct view){.sort = C_RATE, .nrows = 20, .interval = 1};
	o->cap.agg_max_keys = KX_AGG_MAX_KEYS;
	optind = 1;
	while ((opt = kx_getopt(argc, argv, "i:n:s:Pp:bd:c:h", opts)) != -1)
		if ((rc = top_opt(o, opt)) != 0)
			return rc < 0 ? 2 : -1;
	if (optind < argc) {
		kx_err("unexpected argument '%s' (see kxprof top --help)", argv[optind]);
		return 2;
	}
	if (o->pids && kx_cli_check_pids(o->pids))
		return 2;
	if (kx_devset_resolve(&o->devices, kx_cli_warn, NULL) == 0) {
		kx_err("no accelerator device found here and none named: use --device PATH");
		return 2;
	}
	if (o->v.sort == C_PID && !o->v.per_pid)
		o->v.per_pid = 1;
	o->cap.devices = &o->devices;
	o->cap.verbose = kx_verbose;
	o->cap.quick_exit = 1; /* q, -d and -c exit without waiting for the uprobes' release */
	return 0;
}

/* What top keeps between refreshes. */
struct top_state {
	struct kx_live l;
	struct kx_live_interval iv;
};

/* Refreshes every interval until q, a signal, -c or -d. 0 or -1. */
static int top_loop(struct top_state *t, struct top_opts *o)
{
	struct view *v = &o->v;
	uint64_t step = (uint64_t)(v->interval * 1e9), next = kx_mono_ns() + step;
	uint64_t stop = o->duration > 0 ? kx_mono_ns() + (uint64_t)(o->duration * 1e9) : UINT64_MAX;
	long long iter = 0;
	char err[512];

	for (;;) {
		int redraw = 0;
		uint64_t now;

		if (wait_keys(v, next < stop ? next : stop, &redraw))
			return 0;
		now = kx_mono_ns();
		if (!redraw) {
			if (kx_live_step(&t->l, &t->iv, err, sizeof(err))) {
				kx_err("%s", err);
				return -1;
			}
			iter++;
			next += step;
			if (next <= now)
				next = now + step;
		}
		if (t->iv.have_last && show(v, &t->iv.last, (uint32_t)t->iv.prev.nrows))
			return -1;
		if (!redraw && ((o->count && iter >= o->count) || now >= stop))
			return 0;
	}
}

/* Opens and starts the capture and the aggregate readers. 0, or -1 after a message. */
static int top_start(struct top_state *t, struct top_opts *o)
{
	char err[512];

	/* Always split by process in the kernel: 'p' then only changes the fold. */
	if (kx_live_open(&t->l, &o->cap, o->pids, KX_AGG_BY_PID, err, sizeof(err)) ||
	    kx_live_drm(&t->l, o->drm, 0, 0, 0, err, sizeof(err)) ||
	    kx_live_begin(&t->l, &t->iv, err, sizeof(err))) {
		kx_err("%s", err);
		return -1;
	}
	o->v.jobs_attached = t->l.jobs_attached;
	o->v.iv = &t->iv;
	return 0;
}

static void top_view(struct top_state *t, struct top_opts *o)
{
	struct view *v = &o->v;

	v->mech = kx_session_mech(t->l.c.s);
	v->who = o->pids ? "given processes" : "all processes";
	v->interactive = !o->batch && isatty(STDOUT_FILENO);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGWINCH, on_winch);
	if (v->interactive && term_raw() != 0 && isatty(STDIN_FILENO))
		kx_err("warning: cannot set the terminal to raw mode: keys need Enter");
}

int cmd_top(int argc, char **argv)
{
	static struct top_opts o;
	static struct top_state t;
	int rc = top_parse(argc, argv, &o);

	if (rc)
		return rc < 0 ? 0 : rc;
	rc = 1;
	if (top_start(&t, &o) == 0) {
		kx_say_attached("top is running");
		top_view(&t, &o);
		rc = top_loop(&t, &o) ? 1 : 0;
	}
	term_restore();
	kx_live_interval_free(&t.iv);
	kx_live_close(&t.l);
	return rc;
}
