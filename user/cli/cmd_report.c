/* kxprof report: per driver and ioctl statistics of a record file, or of the
 * live aggregates of a running kxprof serve (--from, --reset). A record file
 * is read as a stream (analysis/sreport.h) when its report can be made so
 * exactly, else into memory (--in-memory forces that). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/capread.h"
#include "analysis/jobflow.h"
#include "analysis/sreport.h"
#include "cli/cli.h"
#include "export/ctrtable.h"
#include "export/drmtable.h"
#include "export/proftable.h"
#include "util/http_get.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "model/store.h"
#include "export/summary.h"

static void report_usage(FILE *f)
{
	fprintf(f, "usage: kxprof report [FILE] [--json] [--sort-by avg|min|max|total|count]\n"
	           "                     [--ascending] [--hist] [--wide] [--in-memory]\n"
	           "       kxprof report --from URL [--reset] [--json] [--sort-by KEY] "
	           "[--ascending] [--hist] [--wide]\n"
	           "  FILE             record file (default kxprof.kxp)\n"
	           "  --from URL       the live aggregates of a running kxprof serve\n"
	           "                   (e.g. http://127.0.0.1:9464)\n"
	           "  --reset          with --from: clear the aggregates after reading them\n"
	           "                   (a record file is a finished capture: nothing to reset)\n"
	           "  --json           summary JSON (Time/Memory/Unit, plus Capture and Warnings)\n"
	           "  --sort-by KEY    order rows within a category (default avg)\n"
	           "  --ascending      smallest first (default largest first)\n"
	           "  --hist           add a log2 latency histogram per row\n"
	           "  --wide           every column: Min, p90, Blocked and On-CPU times too\n"
	           "                   (the default table fits in 120 columns)\n"
	           "  --in-memory      load every event before summarising (exact percentiles;\n"
	           "                   by default the file is streamed: p50/p90/p99 within 0.4%%)\n"
	           "Times are in ns, µs, ms or s, the unit chosen per value; --json keeps ms.\n"
	           "A damaged FILE is read around the damage (exit 0): corrupt chunks are skipped\n"
	           "and named in a warning; without a trailer, the figures only the trailer holds\n"
	           "print as unknown (JSON null).\n");
}

/* The summary of a running kxprof serve, rendered by the server (same code). */
static int report_remote(const char *url, int json, int sort, int ascending, int hist, int wide,
                         int reset, int extra)
{
	static const char *const keys[] = {"avg", "min", "max", "total", "count"};
	char path[160], err[512], *body;
	size_t len;

	if (extra) {
		kx_err("--from reads a server, not a file");
		return 2;
	}
	/* wide only when asked: a server that does not know it refuses it. */
	snprintf(path, sizeof(path), "/summary%s?sort=%s&ascending=%d&hist=%d&reset=%d%s",
	         json ? ".json" : "", keys[sort], ascending, hist, reset, wide ? "&wide=1" : "");
	if (kx_http_get(url, path, 10, &body, &len, err, sizeof(err))) {
		kx_err("%s", err);
		return 1;
	}
	fwrite(body, 1, len, stdout);
	free(body);
	return 0;
}

/* The CPU and off-CPU profiles of a capture, for the report. */
struct report_profiles {
	struct kx_profile *p[2];
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	const struct kx_ctrstats *counters;
	struct kx_drmstats *drm; /* record --drm-usage rows, NULL when none */
};

static int report_profiles_build(struct report_profiles *rp, const char *path)
{
	size_t nrows;
	static const unsigned int kinds[2] = {KX_SAMPLE_CPU, KX_SAMPLE_OFFCPU};
	const struct kx_drm_ev *rows = kx_store_drm(rp->s, &nrows);
	char err[256];

	for (int i = 0; i < 2; i++) {
		rp->p[i] = kx_profile_build(rp->s, rp->ci, kinds[i], err, sizeof(err));
		if (!rp->p[i]) {
			kx_err("%s: %s", path, err);
			return -1;
		}
	}
	if (nrows && !(rp->drm = kx_drmstats_build(rows, nrows))) {
		kx_err("%s: out of memory summing the DRM usage", path);
		return -1;
	}
	return 0;
}

/* "Counters", "Profile" and "OffCpuProfile" keys of the report JSON (when
 * the capture has them). */
static void report_profiles_json(void *ctx, FILE *f)
{
	static const char *const keys[2] = {"Profile", "OffCpuProfile"};
	struct report_profiles *rp = ctx;

	if (rp->counters) {
		fputs("  \"Counters\": ", f);
		kx_ctrtable_json(rp->counters, f);
		fputs(",\n", f);
	}
	if (rp->drm || rp->ci->drm.interval_ms) {
		fputs("  \"DrmUsage\": ", f);
		kx_drmtable_json(rp->drm, rp->ci, f);
		fputs(",\n", f);
	}
	for (int i = 0; i < 2; i++) {
		if (!rp->p[i]->samples)
			continue;
		fprintf(f, "  \"%s\": ", keys[i]);
		if (kx_proftable_json(rp->p[i], rp->s, rp->ci, f))
			fputs("null", f);
		fputs(",\n", f);
	}
}

static void report_profiles_free(struct report_profiles *rp)
{
	kx_profile_free(rp->p[0]);
	kx_profile_free(rp->p[1]);
	kx_drmstats_free(rp->drm);
}

/* How a record file's report is printed. */
struct report_opts {
	int json, sort, ascending, hist, wide;
};

/* The report of an analysed capture whose ioctl rows are st (NULL: made
 * from the store). 0, or 1 with the error printed. */
static int report_print(const struct report_opts *o, struct kx_analysis *an, struct kx_stats *st,
                        const char *path)
{
	struct report_profiles rp = {0};
	struct kx_summary *sum;
	int rc = 1;

	sum = st ? kx_summary_build_stats(an, st) : kx_summary_build(an);
	if (!sum) {
		kx_err("out of memory building the summary");
		return 1;
	}
	kx_summary_sort(sum, (enum kx_sort_key)o->sort, o->ascending);
	rp.s = an->store;
	rp.ci = an->ci;
	rp.counters = an->counters;
	if (report_profiles_build(&rp, path))
		goto out;
	if (o->json) {
		kx_summary_print_json_ext(sum, stdout, o->hist, report_profiles_json, &rp);
	} else {
		kx_summary_print_table(
		        sum, stdout, (o->hist ? KX_TABLE_HIST : 0) | (o->wide ? KX_TABLE_WIDE : 0));
		kx_ctrtable_print(an->counters, stdout);
		kx_drmtable_print(rp.drm, an->ci, stdout);
		for (int i = 0; i < 2; i++)
			if (kx_proftable_print(rp.p[i], an->store, an->ci, stdout))
				kx_err("out of memory printing the profile");
	}
	rc = 0;
out:
	report_profiles_free(&rp);
	kx_summary_free(sum);
	return rc;
}

/* What the stream kept (-v). */
static void say_streamed(const char *path, const struct kx_sreport *sr)
{
	char early[128] = "";

	if (sr->flow_unblocked)
		snprintf(
		        early, sizeof(early),
		        ", %llu device jobs counted early (each held back more than %u later ones)",
		        (unsigned long long)sr->flow_unblocked, KX_JOBFLOW_BEHIND);
	if (sr->timelines)
		kx_err("%s was streamed: memory grows with the rows, the %llu threads, the open "
		       "annotation ranges and the %llu ioctls the memory rows need, not with the "
		       "other events; its %llu device jobs were paired as they came, at most %zu "
		       "held at once%s, no job record kept",
		       path, (unsigned long long)sr->threads, (unsigned long long)sr->kept,
		       (unsigned long long)sr->flow_jobs, sr->flow_held, early);
	else
		kx_err("%s was streamed: memory grows with the rows, the %llu threads, the open "
		       "annotation ranges and the %llu ioctls the memory rows need, not with the "
		       "other events",
		       path, (unsigned long long)sr->threads, (unsigned long long)sr->kept);
}

/* The capture read as analysis/capread.h decides (streamed, or whole), printed. */
static int report_file(const struct report_opts *o, const char *path, int whole)
{
	static struct kx_capread_report r;
	char err[512];
	int rc = 1;

	if (kx_capread_report(&r, path, whole, KX_CLI_STORE_BUDGET, kx_verbose, err, sizeof(err))) {
		kx_err("%s", err);
		kx_capread_report_free(&r);
		return 1;
	}
	if (r.why[0])
		kx_err("%s is read into memory whole: %s", path, r.why);
	else if (kx_verbose && r.sr)
		say_streamed(path, r.sr);
	if (r.damage[0])
		kx_cli_load_warning(path, r.res, r.damage);
	kx_cli_read_loss(r.res, &r.an->loss);
	rc = report_print(o, r.an, r.rows, path);
	kx_capread_report_free(&r);
	return rc;
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"json", no_argument, NULL, 'j'},       {"sort-by", required_argument, NULL, 's'},
	        {"ascending", no_argument, NULL, 'A'},  {"hist", no_argument, NULL, 'H'},
	        {"from", required_argument, NULL, 'F'}, {"reset", no_argument, NULL, 'R'},
	        {"wide", no_argument, NULL, 'W'},       {"in-memory", no_argument, NULL, 'M'},
	        {"help", no_argument, NULL, 'h'},       {NULL, 0, NULL, 0},
	};
	struct report_opts o = {.sort = KX_SORT_AVG};
	const char *path = "kxprof.kxp";
	int opt, reset = 0, whole = 0; /* --in-memory */
	const char *from = NULL;

	optind = 1;
	while ((opt = kx_getopt(argc, argv, "h", opts)) != -1) {
		switch (opt) {
		case 'j':
			o.json = 1;
			break;
		case 's':
			o.sort = kx_sort_key_parse(optarg);
			if (o.sort < 0) {
				kx_err("bad --sort-by '%s' (avg, min, max, total or count)",
				       optarg);
				return 2;
			}
			break;
		case 'A':
			o.ascending = 1;
			break;
		case 'H':
			o.hist = 1;
			break;
		case 'W':
			o.wide = 1;
			break;
		case 'M':
			whole = 1;
			break;
		case 'F':
			from = optarg;
			break;
		case 'R':
			reset = 1;
			break;
		case 'h':
			report_usage(stdout);
			return 0;
		default:
			kx_err("see kxprof report --help");
			return 2;
		}
	}
	if (reset && !from) {
		kx_err("--reset clears the live aggregates of a running kxprof serve: give --from "
		       "URL "
		       "(a record file is a finished capture, nothing to reset)");
		return 2;
	}
	if (from && whole) {
		kx_err("--in-memory is about reading a record file, not --from");
		return 2;
	}
	if (from)
		return report_remote(from, o.json, o.sort, o.ascending, o.hist, o.wide, reset,
		                     optind < argc);
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		kx_err("one record file at a time ('%s' is extra)", argv[optind]);
		return 2;
	}
	return report_file(&o, path, whole);
}
