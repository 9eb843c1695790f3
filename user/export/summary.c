/*
 * Summary of a capture (contract: summary.h). Owns the order of the rows,
 * the warnings a summary shows, and the table and JSON renderings; the
 * rows are the statistics of analysis/stats.h, the device timelines and
 * warnings those of the capture's analysis (analysis/analysis.h).
 *
 * Rows also carry the time blocked off-CPU inside the calls ("Blocked
 * Time", "On-CPU Time" when measured). Device timelines (user/analysis/jobs.h) add
 * rows "<ring> exec" and "<ring> queue delay" under "jobs/<device>", the
 * "Memory" section ("memory/<device>" -> "allocated"), a "Jobs" section
 * (anomalies, per device and ring counts, busy time, depth) and a warning
 * per anomaly.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/agg.h"
#include "registry/ioctl_decode.h"
#include "analysis/stats.h"
#include "export/summary.h"
#include "util/units.h"
#include "util/hist.h"
#include "util/json.h"

#define NS_PER_MS 1e6

struct kx_summary {
	struct kx_stats st; /* the rows */
	struct kx_capinfo ci;
	uint64_t not_stored;
	const struct kx_analysis *an; /* the capture's analysis; NULL from aggregates */
	const struct kx_jobs *jobs;   /* its device timelines, memory and anomalies */
	int from_agg;                 /* built from live aggregates: bucket percentiles */
	uint64_t agg_overflow;        /* ioctls not aggregated: key limit */
	uint32_t agg_max_keys;
	uint64_t ann_overflow; /* live annotation ranges not aggregated: series limit */
	uint64_t ann_lost;     /* live annotation range ends whose start was not seen */
	struct kx_jobagg_snapshot live_jobs; /* live job aggregates: devs only (copied) */
	int has_live_jobs;
};

struct kx_summary *kx_summary_build(const struct kx_analysis *an)
{
	struct kx_stats st = {0};

	if (kx_stats_build(&st, an->store, an->ci, an->jobs))
		return NULL;
	if (kx_stats_add_ranges(&st, an->ranges, an->store)) {
		kx_stats_free(&st);
		return NULL;
	}
	return kx_summary_build_stats(an, &st);
}

struct kx_summary *kx_summary_build_stats(const struct kx_analysis *an, struct kx_stats *st)
{
	struct kx_summary *sum = calloc(1, sizeof(*sum));

	if (!sum) {
		kx_stats_free(st);
		return NULL;
	}
	sum->an = an;
	sum->ci = *an->ci;
	sum->jobs = an->jobs;
	sum->not_stored = sum->ci.not_stored;
	if (kx_store_not_stored(an->store) > sum->not_stored)
		sum->not_stored = kx_store_not_stored(an->store);
	sum->st = *st;
	memset(st, 0, sizeof(*st));
	kx_summary_sort(sum, KX_SORT_AVG, 0);
	return sum;
}

struct kx_summary *kx_summary_from_agg(const struct kx_agg_snapshot *snap,
                                       const struct kx_capinfo *ci)
{
	struct kx_summary *sum = calloc(1, sizeof(*sum));

	if (!sum)
		return NULL;
	if (ci)
		sum->ci = *ci;
	sum->from_agg = 1;
	sum->ci.start_mono_ns = snap->since_mono_ns;
	sum->ci.stop_mono_ns = snap->mono_ns;
	sum->ci.dropped = snap->dropped;
	sum->ci.inflight_full = snap->inflight_full;
	sum->ci.bpf_missed = snap->bpf_missed;
	sum->ci.job_done_lost = snap->job_done_lost;
	sum->agg_overflow = snap->overflow;
	sum->agg_max_keys = snap->max_keys;
	if (kx_stats_from_agg(&sum->st, snap)) {
		free(sum);
		return NULL;
	}
	kx_summary_sort(sum, KX_SORT_AVG, 0);
	return sum;
}

/* A row of a live annotation series; a mark sharing its name with a range says it is one. */
static int annagg_row(struct kx_stat_row *r, const struct kx_annagg_snapshot *as, size_t i)
{
	const struct kx_annagg_series *s = &as->series[i];
	uint64_t lo, hi; /* the slots' bounds: not needed, the series' extremes are exact */
	int clash = 0;

	memset(r, 0, sizeof(*r));
	for (size_t k = 0; s->mark && k < as->nseries; k++)
		clash |= !as->series[k].mark && !strcmp(as->series[k].name, s->name) &&
		         !strcmp(as->series[k].cat, s->cat);
	if (s->cat[0])
		snprintf(r->cat, sizeof(r->cat), "annotation/%.*s", KX_STAT_CAT_LEN - 12, s->cat);
	else
		snprintf(r->cat, sizeof(r->cat), "annotation");
	r->name = malloc(strlen(s->name) + sizeof(" (mark)"));
	if (!r->name)
		return -1;
	sprintf(r->name, "%s%s", s->name, clash ? " (mark)" : "");
	r->annot = 2;
	r->mark = s->mark;
	r->count = s->count;
	r->total = s->sum_ns;
	r->min = s->min_ns;
	r->max = s->max_ns;
	if (s->mark)
		return 0;
	if (kx_stat_row_add_fine(r, s->fine, &lo, &hi))
		return -1;
	kx_stat_row_percentiles(r);
	return 0;
}

int kx_summary_add_annagg(struct kx_summary *sum, const struct kx_annagg_snapshot *as)
{
	struct kx_stat_row *rows;
	size_t n = 0;

	for (size_t i = 0; i < as->nseries; i++)
		n += as->series[i].count != 0;
	if (!n)
		return 0;
	rows = realloc(sum->st.rows, (sum->st.nrows + n) * sizeof(*rows));
	if (!rows)
		return -1;
	sum->st.rows = rows;
	for (size_t i = 0; i < as->nseries; i++) {
		if (!as->series[i].count)
			continue;
		if (annagg_row(&sum->st.rows[sum->st.nrows], as, i))
			return -1;
		sum->st.nrows++;
	}
	sum->ann_overflow = as->overflow;
	sum->ann_lost = as->lost;
	kx_summary_sort(sum, KX_SORT_AVG, 0);
	return 0;
}

int kx_summary_add_jobagg(struct kx_summary *sum, const struct kx_jobagg_snapshot *js)
{
	struct kx_jobagg_dev *devs = NULL;

	if (js->ndevs && !(devs = malloc(js->ndevs * sizeof(*devs))))
		return -1;
	if (js->ndevs)
		memcpy(devs, js->devs, js->ndevs * sizeof(*devs));
	free(sum->live_jobs.devs);
	sum->live_jobs = (struct kx_jobagg_snapshot){
	        .devs = devs, .ndevs = js->ndevs, .overflow = js->overflow, .pending = js->pending};
	sum->has_live_jobs = 1;
	return 0;
}

void kx_summary_free(struct kx_summary *sum)
{
	if (!sum)
		return;
	kx_stats_free(&sum->st);
	free(sum->live_jobs.devs);
	free(sum);
}

/* Reading the record file lost its trailer: the closing figures are unknown. */
static int no_trailer(const struct kx_summary *sum)
{
	return sum->an && sum->an->loss.no_trailer;
}

int kx_sort_key_parse(const char *s)
{
	static const char *const keys[] = {
	        [KX_SORT_AVG] = "avg",     [KX_SORT_MIN] = "min",     [KX_SORT_MAX] = "max",
	        [KX_SORT_TOTAL] = "total", [KX_SORT_COUNT] = "count",
	};

	for (size_t i = 0; s && i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(s, keys[i]))
			return (int)i;
	return -1;
}

struct sort_ctx {
	enum kx_sort_key key;
	int ascending;
};

static int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}

static int cmp_rows(const void *pa, const void *pb, void *arg)
{
	const struct kx_stat_row *a = pa, *b = pb;
	const struct sort_ctx *sc = arg;
	int c = strcmp(a->cat, b->cat);

	if (c)
		return c;
	switch (sc->key) {
	case KX_SORT_MIN:
		c = cmp_u64(a->min, b->min);
		break;
	case KX_SORT_MAX:
		c = cmp_u64(a->max, b->max);
		break;
	case KX_SORT_TOTAL:
		c = cmp_u64(a->total, b->total);
		break;
	case KX_SORT_COUNT:
		c = cmp_u64(a->count, b->count);
		break;
	case KX_SORT_AVG:
	default: {
		/* Exact: total_a / count_a vs total_b / count_b. */
		unsigned __int128 x = (unsigned __int128)a->total * b->count;
		unsigned __int128 y = (unsigned __int128)b->total * a->count;

		c = x < y ? -1 : x > y;
		break;
	}
	}
	if (!sc->ascending)
		c = -c;
	/* Ties by name, always ascending, so output is stable. */
	return c ? c : strcmp(a->name, b->name);
}

void kx_summary_sort(struct kx_summary *sum, enum kx_sort_key key, int ascending)
{
	struct sort_ctx sc = {key, ascending};

	if (sum->st.nrows > 1)
		qsort_r(sum->st.rows, sum->st.nrows, sizeof(*sum->st.rows), cmp_rows, &sc);
}

static double ms(uint64_t ns)
{
	return (double)ns / NS_PER_MS;
}

static double row_avg_ms(const struct kx_stat_row *r)
{
	return r->count ? (double)r->total / (double)r->count / NS_PER_MS : 0.0;
}

static uint64_t row_min(const struct kx_stat_row *r)
{
	return r->count ? r->min : 0;
}

static double capture_ms(const struct kx_capinfo *ci)
{
	if (ci->stop_mono_ns <= ci->start_mono_ns)
		return 0.0;
	return ms(ci->stop_mono_ns - ci->start_mono_ns);
}

/* NUL-terminated copy of a fixed capinfo field, which may come from a file. */
static void field_str(char *dst, size_t len, const char *src, size_t srclen)
{
	size_t n = strnlen(src, srclen);

	if (n >= len)
		n = len - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static const char *errno_label(int64_t ret, char *buf, size_t len)
{
	const char *n;

	if (ret == KX_STAT_ERRNO_OTHER)
		return "other";
	n = kx_errno_name(ret);
	if (n)
		return n;
	snprintf(buf, len, "errno %" PRId64, -ret);
	return buf;
}

typedef kx_warn_fn warn_fn;

/* "busy time of kvm is a lower bound: up to 20.849 ms more was cut ..." per device. */
static void live_jobs_warnings(const struct kx_summary *sum, warn_fn fn, void *ctx)
{
	for (size_t i = 0; i < sum->live_jobs.ndevs; i++) {
		const struct kx_jobagg_dev *d = &sum->live_jobs.devs[i];

		if (d->busy_cut_ns)
			kx_warnf(fn, ctx,
			         "busy time of %s is a lower bound: up to %.3f ms more was cut "
			         "(its busy intervals past the live limit were folded together)",
			         d->device, ms(d->busy_cut_ns));
	}
	if (sum->live_jobs.overflow)
		kx_warnf(fn, ctx,
		         "%" PRIu64 " jobs not aggregated (pending or series limit reached)",
		         sum->live_jobs.overflow);
}

/* Every warning of the summary, in a fixed order. */
static void each_warning(const struct kx_summary *sum, warn_fn fn, void *ctx)
{
	const struct kx_capinfo *ci = &sum->ci;
	kx_capture_warnings(ci, sum->not_stored, fn, ctx);
	if (sum->agg_overflow)
		kx_warnf(fn, ctx,
		         "%" PRIu64
		         " ioctls not aggregated (key limit %u reached): raise --max-keys",
		         sum->agg_overflow, sum->agg_max_keys);
	if (sum->from_agg)
		fn(ctx,
		   "live aggregates: p50/p90/p99 are within 6.25% (8 histogram buckets a power "
		   "of two); errors are not broken down by errno");
	if (sum->ann_overflow)
		kx_warnf(fn, ctx,
		         "%" PRIu64 " annotation ranges not aggregated (name limit %u reached): "
		         "raise --max-keys",
		         sum->ann_overflow, sum->agg_max_keys);
	kx_warn_count(fn, ctx, sum->ann_lost,
	              "annotation range ends whose start was not seen (begun before the start or "
	              "a reset)");
	live_jobs_warnings(sum, fn, ctx);
	kx_jobs_warnings(sum->jobs, fn, ctx);
	kx_ranges_warnings(sum->an ? sum->an->ranges : NULL, fn, ctx);
	kx_timeline_warnings(sum->an ? sum->an->timeline : NULL, fn, ctx);
	kx_read_loss_warnings(sum->an ? &sum->an->loss : NULL, fn, ctx);
}

/* ---- table ---- */

#define TABLE_WIDTH 120 /* columns: the default table fits a terminal this wide */
#define NAME_MIN_W  12  /* the name column never narrows below this */
#define CELL_LEN    32

/* Which tables show a column: ioctl, job or annotation rows, default or --wide. */
#define IN_IOCTL      0x1u
#define IN_IOCTL_WIDE 0x2u
#define IN_JOB        0x4u
#define IN_JOB_WIDE   0x8u
#define IN_ANN        0x20u
#define IN_ANN_WIDE   0x40u
#define IN_ALL        0x6fu
#define NEEDS_OFFCPU  0x10u /* only when off-CPU time was measured */

/* The tables: ioctl rows, job rows, annotation rows. */
enum table { T_IOCTL, T_JOB, T_ANN, NTABLE };

static enum table row_table(const struct kx_stat_row *r)
{
	return r->annot ? T_ANN : r->job ? T_JOB : T_IOCTL;
}

enum col {
	COL_COUNT,   /* calls */
	COL_JOBS,    /* jobs timed */
	COL_ERR,     /* calls that failed */
	COL_TOTAL,   /* ns */
	COL_MIN,     /* ns */
	COL_AVG,     /* ns */
	COL_P50,     /* ns */
	COL_P90,     /* ns */
	COL_P99,     /* ns */
	COL_MAX,     /* ns */
	COL_BLOCKED, /* ns blocked off-CPU inside the calls */
	COL_ONCPU,   /* ns on the CPU */
	COL_SHARE,   /* blocked share of the total time, % */
	COL_IOCTLS,  /* annotation rows: ioctls inside the ranges */
	COL_DEVICE,  /* annotation rows: device time of their jobs, ns */
	NCOL
};

static const struct {
	const char *head;
	unsigned int in; /* IN_* and NEEDS_OFFCPU */
} cols[NCOL] = {
        [COL_COUNT] = {"Count", IN_IOCTL | IN_IOCTL_WIDE | IN_ANN | IN_ANN_WIDE},
        [COL_JOBS] = {"Jobs", IN_JOB | IN_JOB_WIDE},
        [COL_ERR] = {"Errors", IN_IOCTL | IN_IOCTL_WIDE},
        [COL_TOTAL] = {"Total", IN_ALL},
        [COL_MIN] = {"Min", IN_IOCTL_WIDE | IN_JOB_WIDE | IN_ANN_WIDE},
        [COL_AVG] = {"Avg", IN_ALL},
        [COL_P50] = {"p50", IN_ALL},
        [COL_P90] = {"p90", IN_IOCTL_WIDE | IN_JOB_WIDE | IN_ANN_WIDE},
        [COL_P99] = {"p99", IN_ALL},
        [COL_MAX] = {"Max", IN_ALL},
        [COL_BLOCKED] = {"Blocked", IN_IOCTL_WIDE | NEEDS_OFFCPU},
        [COL_ONCPU] = {"On-CPU", IN_IOCTL_WIDE | NEEDS_OFFCPU},
        [COL_SHARE] = {"Blocked%", IN_IOCTL | IN_IOCTL_WIDE | NEEDS_OFFCPU},
        [COL_IOCTLS] = {"Ioctls", IN_ANN | IN_ANN_WIDE},
        [COL_DEVICE] = {"Device", IN_ANN | IN_ANN_WIDE},
};

/* The columns and widths of one kind of table (ioctl or job rows). */
struct layout {
	enum col col[NCOL];
	int w[NCOL]; /* display columns of each */
	int n;
	int namew; /* display columns of the name; longer names get a line of their own */
};

/* Terminal columns of a UTF-8 string ("µs" is two). */
static int disp_width(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* s right-aligned (left when left is set) in w terminal columns. */
static void put_padded(FILE *f, const char *s, int w, int left)
{
	int pad = w - disp_width(s);

	if (left)
		fputs(s, f);
	for (; pad > 0; pad--)
		fputc(' ', f);
	if (!left)
		fputs(s, f);
}

static void cell(const struct kx_stat_row *r, enum col c, char *buf)
{
	switch (c) {
	case COL_COUNT:
	case COL_JOBS:
		snprintf(buf, CELL_LEN, "%" PRIu64, r->count);
		return;
	case COL_ERR:
		snprintf(buf, CELL_LEN, "%" PRIu64, r->errors);
		return;
	case COL_TOTAL:
		return kx_fmt_time(buf, CELL_LEN, r->total);
	case COL_MIN:
		return kx_fmt_time(buf, CELL_LEN, row_min(r));
	case COL_AVG:
		return kx_fmt_time(buf, CELL_LEN, r->count ? r->total / r->count : 0);
	case COL_P50:
		return kx_fmt_time(buf, CELL_LEN, r->p50);
	case COL_P90:
		return kx_fmt_time(buf, CELL_LEN, r->p90);
	case COL_P99:
		return kx_fmt_time(buf, CELL_LEN, r->p99);
	case COL_MAX:
		return kx_fmt_time(buf, CELL_LEN, r->max);
	case COL_BLOCKED:
		return kx_fmt_time(buf, CELL_LEN, r->offcpu);
	case COL_ONCPU:
		return kx_fmt_time(buf, CELL_LEN, r->total - r->offcpu);
	case COL_IOCTLS:
		if (r->mark || r->annot == 2)
			snprintf(buf, CELL_LEN, "-");
		else
			snprintf(buf, CELL_LEN, "%" PRIu64, r->ioctls);
		return;
	case COL_DEVICE:
		if (!r->jobs)
			snprintf(buf, CELL_LEN, "-");
		else
			kx_fmt_time(buf, CELL_LEN, r->device_ns);
		return;
	case COL_SHARE:
	default:
		kx_fmt_share(buf, CELL_LEN, r->offcpu, r->total);
		return;
	}
}

/* The columns of one table and their widths over its rows. */
static void layout_build(const struct kx_summary *sum, enum table t, int wide, struct layout *lo)
{
	static const unsigned int in_of[NTABLE][2] = {
	        [T_IOCTL] = {IN_IOCTL, IN_IOCTL_WIDE},
	        [T_JOB] = {IN_JOB, IN_JOB_WIDE},
	        [T_ANN] = {IN_ANN, IN_ANN_WIDE},
	};
	unsigned int in = in_of[t][wide != 0];
	int used = 0, cap;
	char buf[CELL_LEN];

	lo->n = 0;
	lo->namew = 4;
	for (int c = 0; c < NCOL; c++)
		if ((cols[c].in & in) &&
		    (sum->st.offcpu_measured || !(cols[c].in & NEEDS_OFFCPU))) {
			lo->w[lo->n] = (int)strlen(cols[c].head);
			lo->col[lo->n++] = (enum col)c;
		}
	for (size_t i = 0; i < sum->st.nrows; i++) {
		const struct kx_stat_row *r = &sum->st.rows[i];

		if (row_table(r) != t)
			continue;
		if (disp_width(r->name) > lo->namew)
			lo->namew = disp_width(r->name);
		for (int k = 0; k < lo->n; k++) {
			cell(r, lo->col[k], buf);
			if (disp_width(buf) > lo->w[k])
				lo->w[k] = disp_width(buf);
		}
	}
	for (int k = 0; k < lo->n; k++)
		used += 2 + lo->w[k];
	cap = TABLE_WIDTH - used < NAME_MIN_W ? NAME_MIN_W : TABLE_WIDTH - used;
	if (!wide && lo->namew > cap)
		lo->namew = cap;
}

static void print_head(const struct layout *lo, const char *cat, FILE *f)
{
	fprintf(f, "\n%s\n", cat);
	put_padded(f, "Name", lo->namew, 1);
	for (int k = 0; k < lo->n; k++) {
		fputs("  ", f);
		put_padded(f, cols[lo->col[k]].head, lo->w[k], 0);
	}
	fputc('\n', f);
}

static void print_row(const struct layout *lo, const struct kx_stat_row *r, FILE *f)
{
	char buf[CELL_LEN];

	/* A name wider than its column: alone on its line, the figures below it. */
	if (disp_width(r->name) > lo->namew) {
		fprintf(f, "%s\n", r->name);
		put_padded(f, "", lo->namew, 1);
	} else {
		put_padded(f, r->name, lo->namew, 1);
	}
	for (int k = 0; k < lo->n; k++) {
		cell(r, lo->col[k], buf);
		fputs("  ", f);
		put_padded(f, buf, lo->w[k], 0);
	}
	fputc('\n', f);
}

/*
 * lead then msg, broken at spaces into lines of at most TABLE_WIDTH
 * columns; the lines after the first are indented by indent columns.
 */
static void put_wrapped(FILE *f, const char *lead, int indent, const char *msg)
{
	int col = disp_width(lead), start = col;

	fputs(lead, f);
	while (*msg) {
		size_t word = strcspn(msg, " ");
		int ww = 0;

		for (size_t i = 0; i < word; i++)
			ww += ((unsigned char)msg[i] & 0xc0) != 0x80;
		if (col > start && col + 1 + ww > TABLE_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = start = indent;
		} else if (col > start) {
			fputc(' ', f);
			col++;
		}
		fwrite(msg, 1, word, f);
		col += ww;
		msg += word;
		while (*msg == ' ')
			msg++;
	}
	fputc('\n', f);
}

static void table_warning(void *ctx, const char *msg)
{
	put_wrapped(ctx, "WARNING: ", 9, msg);
}

static void print_errors(const struct kx_stat_row *r, FILE *f)
{
	struct kx_errno_count e[KX_STAT_ERRNO_SLOTS];
	int n = r->nerrs;
	char buf[32];

	/* Live aggregates count errors without a breakdown (a warning says so). */
	if (!r->errors || !n)
		return;
	memcpy(e, r->errs, n * sizeof(*e));
	/* Most frequent first. */
	for (int i = 1; i < n; i++) {
		struct kx_errno_count t = e[i];
		int j = i;

		for (; j > 0 && e[j - 1].count < t.count; j--)
			e[j] = e[j - 1];
		e[j] = t;
	}
	fprintf(f, "    errors:");
	for (int i = 0; i < n; i++)
		fprintf(f, "%s %s x%" PRIu64, i ? "," : "", errno_label(e[i].ret, buf, sizeof(buf)),
		        e[i].count);
	fputc('\n', f);
}

/* The last ns of slot i in µs; the open last slot ends at UINT64_MAX. */
static double slot_last_us(unsigned int i)
{
	uint64_t hi = kx_hist_upper_ns(i);

	return (double)(hi == UINT64_MAX ? hi : hi - 1) / 1e3;
}

/* log2 buckets in ns, printed as microsecond ranges, biolatency style. */
static void print_hist(const struct kx_stat_row *r, FILE *f)
{
	int first = -1, last = -1, lw = 5, hw = 0;
	uint64_t peak = 0;
	char lo[32], hi[32];

	for (int i = 0; i < KX_HIST_SLOTS; i++) {
		if (!r->hist[i])
			continue;
		if (first < 0)
			first = i;
		last = i;
		if (r->hist[i] > peak)
			peak = r->hist[i];
	}
	if (first < 0)
		return;
	for (int i = first; i <= last; i++) {
		int a = snprintf(lo, sizeof(lo), "%.3f", (double)kx_hist_lower_ns(i) / 1e3);
		int b = snprintf(hi, sizeof(hi), "%.3f", slot_last_us(i));

		if (a > lw)
			lw = a;
		if (b > hw)
			hw = b;
	}
	fprintf(f, "    %*s%-*s : count    distribution\n", lw + 4 - 5, "", hw + 5, "usecs");
	for (int i = first; i <= last; i++) {
		char stars[41];
		int ns = (int)(r->hist[i] * 40 / peak);

		memset(stars, '*', ns);
		memset(stars + ns, ' ', 40 - ns);
		stars[40] = '\0';
		snprintf(lo, sizeof(lo), "%.3f", (double)kx_hist_lower_ns(i) / 1e3);
		snprintf(hi, sizeof(hi), "%.3f", slot_last_us(i));
		fprintf(f, "    %*s -> %-*s : %-8" PRIu64 " |%s|\n", lw, lo, hw, hi, r->hist[i],
		        stars);
	}
}

/* Per device: jobs, busy fraction, depth and links; then the Memory rows. */
/* NVIDIA device memory per process and region (analysis/nvmem.h). */
static void print_nvmem(const struct kx_nvmem *nm, FILE *f)
{
	int any = 0;

	for (size_t i = 0; i < nm->nprocs; i++) {
		for (int r = 0; r < KX_NVMEM_NREG; r++) {
			const struct kx_nvmem_reg *g = &nm->procs[i].reg[r];

			if (!g->npts)
				continue;
			if (!any++)
				fprintf(f,
				        "\nNVIDIA memory (bytes)\n%-8s  %-6s  %7s  %7s  %14s  %14s "
				        " "
				        "%14s  %14s\n",
				        "Pid", "Region", "Allocs", "Frees", "Allocated", "Freed",
				        "Live at end", "Peak");
			fprintf(f,
			        "%-8u  %-6s  %7" PRIu64 "  %7" PRIu64 "  %14" PRIu64 "  %14" PRIu64
			        "  %14" PRIu64 "  %14" PRIu64 "\n",
			        nm->procs[i].pid, kx_nvmem_region_name(r), g->allocs, g->frees,
			        g->allocated, g->freed, g->live, g->peak);
		}
	}
}

/* Per device of the live job aggregates: jobs, in flight, busy time (">=" and
 * the most that was cut when it is a lower bound). */
static void print_live_jobs(const struct kx_summary *sum, FILE *f)
{
	const struct kx_jobagg_snapshot *js = &sum->live_jobs;
	char line[512];

	if (!sum->has_live_jobs)
		return;
	fprintf(f, "\nDevices (live jobs)\n");
	if (!js->ndevs)
		fprintf(f, "    no jobs seen yet\n");
	for (size_t i = 0; i < js->ndevs; i++) {
		const struct kx_jobagg_dev *d = &js->devs[i];
		int n = snprintf(line, sizeof(line),
		                 "%s: %" PRIu64 " jobs, %" PRIu64 " completed, %" PRIu64
		                 " in flight; busy %s%.3f ms",
		                 d->device, d->jobs, d->completed, d->inflight,
		                 d->busy_cut_ns ? ">=" : "", ms(d->busy_ns));

		if (d->busy_cut_ns && n > 0 && (size_t)n < sizeof(line))
			snprintf(line + n, sizeof(line) - (size_t)n, " (up to %.3f ms more cut)",
			         ms(d->busy_cut_ns));
		put_wrapped(f, "", 4, line);
	}
}

/* "Memory (bytes)": a row per device with memory events, the name column
 * as wide as its longest "memory/<device>" (24 at least). */
static void print_memory_table(const struct kx_jobs *jb, FILE *f)
{
	int any = 0, w = 24;

	for (size_t i = 0; i < jb->ndevs; i++)
		if (jb->devs[i].nmem && (int)strlen(jb->devs[i].name) + 7 > w)
			w = (int)strlen(jb->devs[i].name) + 7;
	for (size_t i = 0; i < jb->ndevs; i++) {
		const struct kx_jobdev *d = &jb->devs[i];

		if (!d->nmem)
			continue;
		if (!any++)
			fprintf(f, "\nMemory (bytes)\n%-*s  %11s  %14s  %14s  %16s\n", w, "Name",
			        "Total Count", "Min Usage", "Max Usage", "Avg Usage");
		fprintf(f, "memory/%-*s  %11" PRIu64 "  %14" PRIu64 "  %14" PRIu64 "  %16.1f\n",
		        w - 7, d->name, (uint64_t)d->nmem, d->mem_min, d->mem_max, d->mem_avg);
	}
}

static void print_jobs_table(const struct kx_jobs *jb, FILE *f)
{
	char line[512];
	int any = 0;

	for (size_t i = 0; i < jb->ndevs; i++) {
		const struct kx_jobdev *d = &jb->devs[i];

		if (!d->nrings)
			continue;
		if (!any++)
			fprintf(f, "\nDevices (job timelines)\n");
		snprintf(line, sizeof(line),
		         "%s (%s): %" PRIu64 " jobs, %" PRIu64 " completed, %" PRIu64
		         " incomplete, %" PRIu64 " linked to their submitting ioctl",
		         d->name, d->label, d->njobs, d->completed, d->incomplete, d->linked);
		put_wrapped(f, "", 4, line);
		fprintf(f, "    busy %.1f%%; max in flight %u\n", 100.0 * d->busy_fraction,
		        d->max_depth);
	}
	print_memory_table(jb, f);
	print_nvmem(&jb->nvmem, f);
}

/* "; ioctl hooks: tp_btf" and the end of the header line (nothing when the
 * capture facts do not say). */
static void print_mech(const struct kx_capinfo *ci, FILE *f)
{
	char mech[sizeof(ci->hooks[0].mech) + sizeof(ci->hooks[0].why) + 8];

	if (kx_capinfo_ioctl_mech(ci, mech, sizeof(mech)))
		fprintf(f, "; ioctl hooks: %s", mech);
	fputc('\n', f);
}

/*
 * "Capture: ..." line. Without a trailer the stop time and the capture's
 * counters were never written: unknown, not 0; received is then what the
 * file held.
 */
static void print_capture_line(const struct kx_summary *sum, const char *host, const char *kernel,
                               FILE *f)
{
	const struct kx_capinfo *ci = &sum->ci;

	if (no_trailer(sum)) {
		fprintf(f,
		        "Capture: host %s, kernel %s, duration unknown; events emitted unknown (no "
		        "trailer), received %" PRIu64
		        ", dropped unknown, not stored unknown; %" PRIu64 " ioctls summarized",
		        host, kernel, sum->st.stored, sum->st.stored);
	} else {
		fprintf(f,
		        "Capture: host %s, kernel %s, %.3f s; events emitted %" PRIu64
		        ", received %" PRIu64 ", dropped %" PRIu64 ", not stored %" PRIu64
		        "; %" PRIu64 " ioctls summarized",
		        host, kernel, capture_ms(ci) / 1e3, ci->emitted, ci->received, ci->dropped,
		        sum->not_stored, sum->st.stored);
	}
	print_mech(ci, f);
}

/* JSON "Capture" figures; null where the file has no trailer to say them. */
static void json_capture_figures(const struct kx_summary *sum, FILE *f)
{
	const struct kx_capinfo *ci = &sum->ci;

	if (no_trailer(sum)) {
		fprintf(f,
		        ", \"duration_ms\": null, \"emitted\": null, \"received\": %" PRIu64
		        ", \"dropped\": null, \"not_stored\": null, \"truncated\": true"
		        ", \"job_emitted\": null, \"job_received\": null, \"job_dropped\": null"
		        ", \"job_done_lost\": null"
		        ", \"bpf_missed\": null",
		        sum->st.stored);
		return;
	}
	fprintf(f,
	        ", \"duration_ms\": %.6f, \"emitted\": %" PRIu64 ", \"received\": %" PRIu64
	        ", \"dropped\": %" PRIu64 ", \"not_stored\": %" PRIu64 ", \"truncated\": false"
	        ", \"job_emitted\": %" PRIu64 ", \"job_received\": %" PRIu64
	        ", \"job_dropped\": %" PRIu64 ", \"job_done_lost\": %" PRIu64
	        ", \"bpf_missed\": %" PRIu64,
	        capture_ms(ci), ci->emitted, ci->received, ci->dropped, sum->not_stored,
	        ci->job_emitted, ci->job_received, ci->job_dropped, ci->job_done_lost,
	        ci->bpf_missed);
}

/* The header of a summary of live aggregates: no record, so no emitted or received counts. */
static void print_live_line(const struct kx_summary *sum, FILE *f)
{
	const struct kx_capinfo *ci = &sum->ci;
	char host[sizeof(ci->hostname) + 1], kernel[sizeof(ci->kernel) + 1];

	field_str(host, sizeof(host), ci->hostname, sizeof(ci->hostname));
	field_str(kernel, sizeof(kernel), ci->kernel, sizeof(ci->kernel));
	fprintf(f,
	        "Live aggregates: host %s, kernel %s, %.3f s since the start or the last reset; "
	        "%" PRIu64 " ioctls aggregated",
	        host[0] ? host : "?", kernel[0] ? kernel : "?", capture_ms(ci) / 1e3,
	        sum->st.stored);
	print_mech(ci, f);
}

void kx_summary_print_table(const struct kx_summary *sum, FILE *f, unsigned int flags)
{
	const struct kx_capinfo *ci = &sum->ci;
	char host[sizeof(ci->hostname) + 1], kernel[sizeof(ci->kernel) + 1];
	int wide = (flags & KX_TABLE_WIDE) != 0;
	struct layout lo[NTABLE];
	const char *cat = NULL;

	field_str(host, sizeof(host), ci->hostname, sizeof(ci->hostname));
	field_str(kernel, sizeof(kernel), ci->kernel, sizeof(ci->kernel));
	if (sum->from_agg)
		print_live_line(sum, f);
	else
		print_capture_line(sum, host[0] ? host : "?", kernel[0] ? kernel : "?", f);
	each_warning(sum, table_warning, f);

	for (int t = 0; t < NTABLE; t++)
		layout_build(sum, (enum table)t, wide, &lo[t]);
	if (!sum->st.nrows)
		fprintf(f, "\nno ioctl events\n");
	for (size_t i = 0; i < sum->st.nrows; i++) {
		const struct kx_stat_row *r = &sum->st.rows[i];

		if (!cat || strcmp(cat, r->cat)) {
			cat = r->cat;
			print_head(&lo[row_table(r)], cat, f);
		}
		print_row(&lo[row_table(r)], r, f);
		print_errors(r, f);
		if (flags & KX_TABLE_HIST)
			print_hist(r, f);
	}
	if (sum->jobs)
		print_jobs_table(sum->jobs, f);
	print_live_jobs(sum, f);
}

/* ---- JSON ---- */

/* A JSON string of a char array that may lack its terminator (util/json.h). */
static void json_str(FILE *f, const char *s, size_t maxlen)
{
	kx_json_str(f, s, strnlen(s, maxlen));
}

struct json_warn_ctx {
	FILE *f;
	int n;
};

static void json_warning(void *ctx, const char *msg)
{
	struct json_warn_ctx *c = ctx;

	fputs(c->n++ ? ",\n    " : "\n    ", c->f);
	kx_json_cstr(c->f, msg);
}

static void json_row(const struct kx_stat_row *r, FILE *f, int hist, int offcpu)
{
	char buf[32];

	kx_json_cstr(f, r->name);
	fprintf(f,
	        ": {\"Total Count\": %" PRIu64 ", \"Total Time\": %.6f, \"Min Time\": %.6f, "
	        "\"Max Time\": %.6f, \"Avg Time\": %.6f",
	        r->count, ms(r->total), ms(row_min(r)), ms(r->max), row_avg_ms(r));
	if (r->annot) {
		fprintf(f, ", \"Kind\": \"%s\"", r->mark ? "mark" : "range");
		if (!r->mark && r->annot == 1)
			fprintf(f, ", \"Ioctls\": %" PRIu64, r->ioctls);
		if (r->annot == 1)
			fprintf(f, ", \"Device Jobs\": %" PRIu64, r->jobs);
		if (r->jobs)
			fprintf(f, ", \"Device Time\": %.6f", ms(r->device_ns));
	} else if (!r->job) {
		fprintf(f, ", \"Errors\": %" PRIu64 ", \"Errno\": {", r->errors);
		for (int i = 0; i < r->nerrs; i++) {
			fputs(i ? ", " : "", f);
			kx_json_cstr(f, errno_label(r->errs[i].ret, buf, sizeof(buf)));
			fprintf(f, ": %" PRIu64, r->errs[i].count);
		}
		fputc('}', f);
		if (offcpu)
			fprintf(f, ", \"Blocked Time\": %.6f, \"On-CPU Time\": %.6f", ms(r->offcpu),
			        ms(r->total - r->offcpu));
	}
	fprintf(f, ", \"p50\": %.6f, \"p90\": %.6f, \"p99\": %.6f", ms(r->p50), ms(r->p90),
	        ms(r->p99));
	if (hist) {
		int last = 0;

		for (int i = 0; i < KX_HIST_SLOTS; i++)
			if (r->hist[i])
				last = i;
		fputs(", \"Histogram\": {\"unit\": \"ns\", \"log2_buckets\": [", f);
		for (int i = 0; i <= last; i++)
			fprintf(f, "%s%" PRIu64, i ? ", " : "", r->hist[i]);
		fputs("]}", f);
	}
	fputc('}', f);
}

/* "Memory": {"memory/<device>": {"allocated": {Count, Max/Min/Avg Usage}}} */
static void json_memory(const struct kx_jobs *jb, FILE *f)
{
	int n = 0;
	char cat[64];

	fputs("  \"Memory\": {", f);
	for (size_t i = 0; jb && i < jb->ndevs; i++) {
		const struct kx_jobdev *d = &jb->devs[i];

		if (!d->nmem)
			continue;
		snprintf(cat, sizeof(cat), "memory/%s", d->name);
		fputs(n++ ? ",\n    " : "\n    ", f);
		json_str(f, cat, sizeof(cat));
		fprintf(f,
		        ": {\"allocated\": {\"Count\": %zu, \"Max Usage\": %" PRIu64
		        ", \"Min Usage\": %" PRIu64 ", \"Avg Usage\": %.3f"
		        ", \"Allocations\": %" PRIu64 ", \"Frees\": %" PRIu64
		        ", \"Unknown Frees\": %" PRIu64 "}}",
		        d->nmem, d->mem_max, d->mem_min, d->mem_avg, d->mem_allocs, d->mem_frees,
		        d->mem_unknown_frees);
	}
	fputs(n ? "\n  },\n" : "},\n", f);
}

/* "NVIDIA Memory": {"<pid>": {"vidmem": {Allocations, Frees, Allocated,
 * Freed, Live, Peak}, "sysmem": {...}}}: bytes. */
static void json_nvmem(const struct kx_jobs *jb, FILE *f)
{
	size_t np = jb ? jb->nvmem.nprocs : 0;

	fputs("  \"NVIDIA Memory\": {", f);
	for (size_t i = 0; i < np; i++) {
		const struct kx_nvmem_proc *p = &jb->nvmem.procs[i];
		int n = 0;

		fprintf(f, "%s\"%u\": {", i ? ",\n    " : "\n    ", p->pid);
		for (int r = 0; r < KX_NVMEM_NREG; r++) {
			const struct kx_nvmem_reg *g = &p->reg[r];

			if (!g->npts)
				continue;
			fprintf(f,
			        "%s\"%s\": {\"Allocations\": %" PRIu64 ", \"Frees\": %" PRIu64
			        ", \"Allocated\": %" PRIu64 ", \"Freed\": %" PRIu64
			        ", \"Live\": %" PRIu64 ", \"Peak\": %" PRIu64 "}",
			        n++ ? ", " : "", kx_nvmem_region_name(r), g->allocs, g->frees,
			        g->allocated, g->freed, g->live, g->peak);
		}
		fputc('}', f);
	}
	fputs(np ? "\n  },\n" : "},\n", f);
}

static void json_dist(const char *key, const struct kx_dist *d, FILE *f)
{
	fprintf(f,
	        ", \"%s\": {\"count\": %" PRIu64 ", \"total_ms\": %.6f, \"min_ms\": %.6f, "
	        "\"max_ms\": %.6f, \"p50_ms\": %.6f, \"p90_ms\": %.6f, \"p99_ms\": %.6f}",
	        key, d->count, ms(d->total), ms(d->min), ms(d->max), ms(d->p50), ms(d->p90),
	        ms(d->p99));
}

/* "Jobs": anomalies and, per device and ring, counts, links, busy time and depth. */
static void json_jobs(const struct kx_jobs *jb, FILE *f)
{
	const struct kx_jobs_anomalies *a;
	int n = 0;

	if (!jb)
		return;
	a = &jb->anom;
	fprintf(f,
	        "  \"Jobs\": {\"anomalies\": {\"incomplete\": %" PRIu64 ", \"no_queue\": %" PRIu64
	        ", \"duplicate\": %" PRIu64 ", \"out_of_order\": %" PRIu64
	        ", \"unlinked\": %" PRIu64 ", \"runs_without_exit\": %" PRIu64
	        ", \"unknown\": %" PRIu64 "}, \"devices\": {",
	        a->incomplete, a->no_queue, a->duplicate, a->out_of_order, a->unlinked,
	        a->runs_without_exit, a->unknown);
	for (size_t i = 0; i < jb->ndevs; i++) {
		const struct kx_jobdev *d = &jb->devs[i];

		if (!d->nrings)
			continue;
		fputs(n++ ? ",\n    " : "\n    ", f);
		json_str(f, d->name, sizeof(d->name));
		fputs(": {\"label\": ", f);
		json_str(f, d->label, sizeof(d->label));
		fprintf(f,
		        ", \"jobs\": %" PRIu64 ", \"completed\": %" PRIu64
		        ", \"incomplete\": %" PRIu64 ", \"no_queue\": %" PRIu64
		        ", \"linked\": %" PRIu64
		        ", \"busy_ms\": %.6f, \"busy_fraction\": %.6f, \"max_in_flight\": %u"
		        ", \"rings\": {",
		        d->njobs, d->completed, d->incomplete, d->no_queue, d->linked,
		        ms(d->busy_ns), d->busy_fraction, d->max_depth);
		for (uint32_t k = 0; k < d->nrings; k++) {
			const struct kx_jobring *r = &jb->rings[d->first_ring + k];

			fputs(k ? ",\n      " : "\n      ", f);
			json_str(f, r->name, sizeof(r->name));
			fprintf(f,
			        ": {\"id\": %u, \"jobs\": %zu, \"completed\": %" PRIu64
			        ", \"linked\": %" PRIu64 ", \"waited\": %" PRIu64
			        ", \"lanes\": %u, \"busy_ms\": %.6f",
			        r->id, r->njobs, r->completed, r->linked, r->waited, r->nlanes,
			        ms(r->busy_ns));
			json_dist("exec", &r->exec, f);
			json_dist("queue_delay", &r->queue, f);
			fputc('}', f);
		}
		fputs("}}", f);
	}
	fputs(n ? "\n  }},\n" : "}},\n", f);
}

/* "Live jobs": per device of the live job aggregates, counts and busy time
 * (busy_cut_ms: at most this much more is busy time cut; busy_exact when 0). */
static void json_live_jobs(const struct kx_summary *sum, FILE *f)
{
	const struct kx_jobagg_snapshot *js = &sum->live_jobs;

	if (!sum->has_live_jobs)
		return;
	fprintf(f,
	        "  \"Live jobs\": {\"overflow\": %" PRIu64 ", \"pending\": %" PRIu64
	        ", \"devices\": {",
	        js->overflow, js->pending);
	for (size_t i = 0; i < js->ndevs; i++) {
		const struct kx_jobagg_dev *d = &js->devs[i];

		fputs(i ? ",\n    " : "\n    ", f);
		json_str(f, d->device, sizeof(d->device));
		fprintf(f,
		        ": {\"jobs\": %" PRIu64 ", \"completed\": %" PRIu64
		        ", \"in_flight\": %" PRIu64 ", \"busy_ms\": %.6f, \"busy_cut_ms\": %.6f"
		        ", \"busy_exact\": %s}",
		        d->jobs, d->completed, d->inflight, ms(d->busy_ns), ms(d->busy_cut_ns),
		        d->busy_cut_ns ? "false" : "true");
	}
	fputs(js->ndevs ? "\n  }},\n" : "}},\n", f);
}

/* "late": copies whose probes attached too late for their wait (model/annot.h). */
static void json_late(const struct kx_ann_info *k, FILE *f)
{
	for (uint32_t i = 0; i < k->nlate && i < KX_ANN_MAX_LATE; i++) {
		const struct kx_ann_late *l = &k->late[i];

		fprintf(f, "%s{\"pid\": %u, \"command\": ", i ? ",\n    " : "\n    ", l->pid);
		json_str(f, l->comm, sizeof(l->comm));
		fputs(", \"path\": ", f);
		json_str(f, l->path, sizeof(l->path));
		fprintf(f,
		        ", \"hold_ms\": %u, \"map_ns\": %" PRIu64 ", \"from_ns\": %" PRIu64
		        ", \"to_ns\": %" PRIu64 "}",
		        l->hold_ms, l->map_ns, l->from_ns, l->to_ns);
	}
}

/* "Annotations": the capture's counts, the anomalies and the library copies found. */
static void json_annotations(const struct kx_summary *sum, FILE *f)
{
	const struct kx_ranges *rg = sum->an ? sum->an->ranges : NULL;
	const struct kx_ann_info *k = &sum->ci.ann;

	if (!rg)
		return;
	fprintf(f,
	        "  \"Annotations\": {\"enabled\": %s, \"emitted\": %" PRIu64
	        ", \"received\": %" PRIu64 ", \"dropped\": %" PRIu64 ", \"events\": %" PRIu64
	        ", \"ranges\": %" PRIu64 ", \"anomalies\": {\"open\": %" PRIu64
	        ", \"open_cross\": %" PRIu64 ", \"lost_begin\": %" PRIu64
	        ", \"shortened\": %" PRIu64 ", \"pop_no_push\": %" PRIu64
	        ", \"depth_overflow\": %" PRIu64 ", \"end_no_start\": %" PRIu64
	        ", \"threads_full\": %" PRIu64 ", \"ranges_full\": %" PRIu64
	        ", \"name_faults\": %" PRIu64 "}, \"copies_capped\": %" PRIu64 ", \"copies\": [",
	        k->enabled ? "true" : "false", k->emitted, k->received, k->dropped, rg->events,
	        rg->found, rg->anom.open, rg->anom.open_cross, rg->anom.lost_begin,
	        rg->anom.shortened, k->pop_no_push, k->depth_overflow, k->end_no_start,
	        k->threads_full, k->ranges_full, k->name_faults, k->capped);
	for (uint32_t i = 0; i < k->ncopies && i < KX_ANN_MAX_COPIES; i++) {
		const struct kx_ann_copy *c = &k->copies[i];

		fputs(i ? ",\n    {\"path\": " : "\n    {\"path\": ", f);
		json_str(f, c->path, sizeof(c->path));
		fprintf(f, ", \"probes_found\": %u, \"probes_attached\": %u, \"why\": ",
		        (unsigned int)__builtin_popcount(c->found),
		        (unsigned int)__builtin_popcount(c->attached));
		json_str(f, c->why, sizeof(c->why));
		fputc('}', f);
	}
	fputs(k->ncopies ? "\n  ], \"late\": [" : "], \"late\": [", f);
	json_late(k, f);
	fprintf(f, "%s], \"more_late\": %u},\n", k->nlate ? "\n  " : "", k->more_late);
}

void kx_summary_print_json(const struct kx_summary *sum, FILE *f, int hist)
{
	kx_summary_print_json_ext(sum, f, hist, NULL, NULL);
}

void kx_summary_print_json_ext(const struct kx_summary *sum, FILE *f, int hist,
                               void (*extra)(void *ctx, FILE *f), void *ctx)
{
	const struct kx_capinfo *ci = &sum->ci;
	struct json_warn_ctx wc = {f, 0};
	const char *cat = NULL;
	char mech[sizeof(ci->hooks[0].mech) + sizeof(ci->hooks[0].why) + 8];

	fputs("{\n  \"Time\": {", f);
	for (size_t i = 0; i < sum->st.nrows; i++) {
		const struct kx_stat_row *r = &sum->st.rows[i];

		if (!cat || strcmp(cat, r->cat)) {
			fputs(cat ? "\n    },\n    " : "\n    ", f);
			cat = r->cat;
			json_str(f, cat, sizeof(r->cat));
			fputs(": {\n      ", f);
		} else {
			fputs(",\n      ", f);
		}
		json_row(r, f, hist, sum->st.offcpu_measured);
	}
	fputs(cat ? "\n    }\n  },\n" : "},\n", f);
	json_memory(sum->jobs, f);
	json_nvmem(sum->jobs, f);
	fputs("  \"Unit\": {\"Time\": \"ms\", \"Memory\": \"byte\"},\n", f);
	json_jobs(sum->jobs, f);
	json_live_jobs(sum, f);
	json_annotations(sum, f);
	fputs("  \"Capture\": {\"host\": ", f);
	json_str(f, ci->hostname, sizeof(ci->hostname));
	fputs(", \"kernel\": ", f);
	json_str(f, ci->kernel, sizeof(ci->kernel));
	json_capture_figures(sum, f);
	fputs(", \"ioctl_hooks\": ", f);
	if (kx_capinfo_ioctl_mech(ci, mech, sizeof(mech)))
		json_str(f, mech, sizeof(mech));
	else
		fputs("null", f);
	fprintf(f, ", \"offcpu_measured\": %s},\n", sum->st.offcpu_measured ? "true" : "false");
	if (extra)
		extra(ctx, f);
	fputs("  \"Warnings\": [", f);
	each_warning(sum, json_warning, &wc);
	fputs(wc.n ? "\n  ]\n}\n" : "]\n}\n", f);
}
