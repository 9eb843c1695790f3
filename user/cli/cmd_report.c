/* kxprof report: per driver and ioctl statistics of a record file, or of the
 * live aggregates of a running kxprof serve (--from, --reset). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "cli/cli.h"
#include "export/ctrtable.h"
#include "export/proftable.h"
#include "util/http_get.h"
#include "io/kxp.h"
#include "model/store.h"
#include "export/summary.h"

static void report_usage(FILE *f)
{
	fprintf(f, "usage: kxprof report [FILE] [--json] [--sort-by avg|min|max|total|count]\n"
	           "                     [--ascending] [--hist] [--wide]\n"
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
};

static int report_profiles_build(struct report_profiles *rp, const char *path)
{
	static const unsigned int kinds[2] = {KX_SAMPLE_CPU, KX_SAMPLE_OFFCPU};
	char err[256];

	for (int i = 0; i < 2; i++) {
		rp->p[i] = kx_profile_build(rp->s, rp->ci, kinds[i], err, sizeof(err));
		if (!rp->p[i]) {
			kx_err("%s: %s", path, err);
			return -1;
		}
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
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"json", no_argument, NULL, 'j'},
	        {"sort-by", required_argument, NULL, 's'},
	        {"ascending", no_argument, NULL, 'A'},
	        {"hist", no_argument, NULL, 'H'},
	        {"from", required_argument, NULL, 'F'},
	        {"reset", no_argument, NULL, 'R'},
	        {"wide", no_argument, NULL, 'W'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res = {0};
	const char *path = "kxprof.kxp";
	int json = 0, ascending = 0, hist = 0, wide = 0, opt, rc = 1;
	int sort = KX_SORT_AVG, reset = 0;
	const char *from = NULL;
	struct report_profiles rp = {0};
	struct kx_summary *sum;
	struct kx_store *store;
	struct kx_analysis *an;
	char err[512];

	optind = 1;
	while ((opt = kx_getopt(argc, argv, "h", opts)) != -1) {
		switch (opt) {
		case 'j':
			json = 1;
			break;
		case 's':
			sort = kx_sort_key_parse(optarg);
			if (sort < 0) {
				kx_err("bad --sort-by '%s' (avg, min, max, total or count)",
				       optarg);
				return 2;
			}
			break;
		case 'A':
			ascending = 1;
			break;
		case 'H':
			hist = 1;
			break;
		case 'W':
			wide = 1;
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
	if (from)
		return report_remote(from, json, sort, ascending, hist, wide, reset, optind < argc);
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		kx_err("one record file at a time ('%s' is extra)", argv[optind]);
		return 2;
	}
	store = kx_cli_load(path, &ci, &res);
	if (!store)
		return 1;
	an = kx_analysis_build(store, &ci, err, sizeof(err));
	if (!an) {
		kx_err("%s: %s", path, err);
		goto out;
	}
	kx_cli_read_loss(&res, &an->loss);
	sum = kx_summary_build(an);
	if (!sum) {
		kx_err("out of memory building the summary");
		goto out;
	}
	kx_summary_sort(sum, (enum kx_sort_key)sort, ascending);
	rp.s = store;
	rp.ci = &ci;
	rp.counters = an->counters;
	if (report_profiles_build(&rp, path)) {
		kx_summary_free(sum);
		goto out;
	}
	if (json) {
		kx_summary_print_json_ext(sum, stdout, hist, report_profiles_json, &rp);
	} else {
		kx_summary_print_table(sum, stdout,
		                       (hist ? KX_TABLE_HIST : 0) | (wide ? KX_TABLE_WIDE : 0));
		kx_ctrtable_print(an->counters, stdout);
		for (int i = 0; i < 2; i++)
			if (kx_proftable_print(rp.p[i], store, &ci, stdout))
				kx_err("out of memory printing the profile");
	}
	kx_summary_free(sum);
	rc = 0;
out:
	report_profiles_free(&rp);
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}
