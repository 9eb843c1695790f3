/* kxprof convert: a record file to XSpace (TensorBoard/XProf log directory), Chrome trace
 * JSON, pprof, folded stacks and speedscope. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "analysis/capread.h"
#include "analysis/flows.h"
#include "analysis/profile.h"
#include "analysis/wread.h"
#include "export/chrome.h"
#include "export/chrome_merge.h"
#include "export/xspace_merge.h"
#include "export/folded.h"
#include "export/pprof.h"
#include "export/speedscope.h"
#include "export/splitplan.h"
#include "export/traceparts.h"
#include "export/tracewindows.h"
#include "cli/cli.h"
#include "io/kxp.h"
#include "model/store.h"
#include "util/outfile.h"
#include "util/parse.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof convert [FILE] [--xplane LOGDIR] [--chrome OUT.json[.gz]] [--gpu]\n"
	        "                      [--chrome-stacks] [--pprof OUT.pb.gz] [--folded OUT]\n"
	        "                      [--off-cpu] [--speedscope OUT.json]\n"
	        "                      [--split-events N] [--in-memory]\n"
	        "       kxprof convert [FILE] --merge TRACE.json[.gz] --chrome OUT.json[.gz]\n"
	        "       kxprof convert [FILE] --merge PROFILE.xplane.pb --xplane OUT.xplane.pb\n"
	        "  FILE             record file (default kxprof.kxp)\n"
	        "  --xplane LOGDIR  write LOGDIR/plugins/profile/<run>/<host>.xplane.pb for\n"
	        "                   TensorBoard/XProf (tensorboard --logdir LOGDIR)\n"
	        "  --chrome OUT     Chrome trace JSON (Perfetto): the timeline, CPU samples as\n"
	        "                   instants on their threads; gzip when OUT ends in .gz\n"
	        "  --chrome-stacks  the trace also holds the format's stackFrames/samples\n"
	        "                   members (catapult); viewers that read them (speedscope)\n"
	        "                   then show the CPU samples alone, without the timeline\n"
	        "  --gpu            name device planes /device:GPU:<n> (default "
	        "/device:CUSTOM:<n>)\n"
	        "  --pprof OUT      the CPU profile (record -F) as gzipped pprof (go tool pprof)\n"
	        "  --folded OUT     the CPU profile as folded stacks (flamegraph.pl, speedscope);\n"
	        "                   '-' for standard output\n"
	        "  --off-cpu        --pprof and --folded hold the off-CPU profile instead\n"
	        "                   (record --off-cpu; folded values are microseconds)\n"
	        "  --speedscope OUT speedscope's own format (speedscope OUT): per thread its\n"
	        "                   ioctls, annotation ranges and off-CPU time in time order,\n"
	        "                   its CPU samples weighted by the sampling period and its\n"
	        "                   off-CPU intervals by their time; '-' for standard output;\n"
	        "                   reads the capture into memory whole\n"
	        "  --split-events N at most N trace events per XSpace run and Chrome file\n"
	        "                   (default 1000000, XProf's viewer limit; 0: never split):\n"
	        "                   more are split by time into runs <run>_partNNNN_<from>-<to>s\n"
	        "                   and files OUT.NNNN.json[.gz], each complete; an event\n"
	        "                   spanning a cut is in the part where it starts; parts\n"
	        "                   are committed in turn (a failure keeps those before it)\n"
	        "  --in-memory      read the whole capture into memory even when it could be\n"
	        "                   read one time window at a time (the same outputs; a\n"
	        "                   Chrome file alone, written in slices, may list its\n"
	        "                   events in another order)\n"
	        "  --merge TRACE    with --chrome OUT alone: OUT is TRACE, a Chrome trace of\n"
	        "                   the same run by another profiler (PyTorch's Kineto,\n"
	        "                   export_chrome_trace), kept as it was, with kxprof's\n"
	        "                   calls and ranges added on their pid/tid rows and its\n"
	        "                   device tracks as processes of their own, aligned through\n"
	        "                   its baseTimeNanoseconds (the capture's clock syncs at\n"
	        "                   start and stop); events outside TRACE's span are left out,\n"
	        "                   counted on stderr and in OUT's kxprofMerge member;\n"
	        "                   TRACE may be gzipped, OUT is when it ends in .gz;\n"
	        "                   with --xplane OUT alone: TRACE is an XSpace TensorFlow or\n"
	        "                   JAX saved of the same run, OUT that XSpace with kxprof's\n"
	        "                   calls and ranges on the /host:CPU lines of their threads\n"
	        "                   and its device planes added, on TRACE's time base\n"
	        "                   (profile_start_time); events outside its span are left\n"
	        "                   out and counted on stderr\n"
	        "At least one output; the written paths are printed.\n"
	        "Each output is written to a temporary file beside it and renamed into place\n"
	        "when complete; the XSpace and the Chrome trace when both are: an error or a\n"
	        "signal (INT, TERM, HUP, QUIT) leaves neither, and an existing OUT stays as it\n"
	        "was. Each conversion gets a new run folder (<run>-2, -3, ... when <run>\n"
	        "exists). OUT '-' is standard output (--chrome, --folded).\n"
	        "Refused (exit 2): an empty path, an OUT that is not a regular file or is\n"
	        "FILE itself, a LOGDIR that is not a directory.\n"
	        "A damaged FILE is read around the damage (exit 0): corrupt chunks are skipped\n"
	        "and named in a warning.\n");
}

/* A Chrome file alone (no XSpace, whose run is built whole) is written from
 * this many slices of its part's time window, read one at a time: a
 * quarter of the memory. */
#define CHROME_SLICES 4

/* An error or notice of the trace writer (export/traceparts.h). */
static void trace_say(void *ctx, const char *msg)
{
	(void)ctx;
	kx_err("%s", msg);
}

/* A path the trace writer committed, on stderr when the trace itself went
 * to stdout. */
static void trace_wrote(void *ctx, const char *path, int trace_on_stdout)
{
	(void)ctx;
	fprintf(trace_on_stdout ? stderr : stdout, "%s\n", path);
}

/* The CPU or off-CPU profile of the store to pprof and/or folded stacks. 0, or -1 after a message.
 */
static int convert_profile(const char *path, const struct kx_store *store,
                           const struct kx_capinfo *ci, unsigned int kind, const char *pprof,
                           const char *folded)
{
	struct kx_profile *p;
	char err[512];
	int rc = -1;

	p = kx_profile_build(store, ci, kind, err, sizeof(err));
	if (!p) {
		kx_err("%s: %s", path, err);
		return -1;
	}
	if (!p->samples) {
		if (kind == KX_SAMPLE_OFFCPU)
			kx_err("%s has no off-CPU intervals: record them with --off-cpu", path);
		else
			kx_err("%s has no CPU samples: record them with -F HZ (e.g. -F 99)", path);
		goto out;
	}
	if (pprof && kx_pprof_write(p, store, ci, pprof, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	if (pprof)
		printf("%s\n", pprof);
	if (folded && kx_folded_write(p, store, folded, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	if (folded && strcmp(folded, "-"))
		printf("%s\n", folded);
	rc = 0;
out:
	kx_profile_free(p);
	return rc;
}

/*
 * The outputs of a capture read in windows (r->w): the trace parts, then
 * the profile of its side store. 0, 1 or 2 as cmd_convert.
 */
static int convert_stream(struct kx_capread *r, const struct kx_traceparts *t, const char *pprof,
                          const char *folded, unsigned int kind)
{
	const char *path = t->input;
	char said[512];
	int rc = kx_tracewindows_write(t, &r->w);

	if (kx_verbose) {
		kx_capread_windows_said(r, said, sizeof(said));
		kx_err("%s", said);
	}
	if (!rc && (pprof || folded) &&
	    convert_profile(path, r->w.side, &r->w.ci, kind, pprof, folded))
		rc = 1;
	return rc;
}

static void report_xmerge(const struct kx_xmerge_stats *s, const char *trace)
{
	kx_err("merged %" PRIu64 " host events (calls and ranges) into %s: %" PRIu32
	       " threads on its own lines, %" PRIu32 " on new lines; left out %" PRIu64
	       " before and %" PRIu64 " after its span (%" PRId64 " to %" PRId64 " ns)",
	       s->host_merged, trace, s->lines_matched, s->lines_new, s->host_before, s->host_after,
	       s->span_from_ns, s->span_to_ns);
	kx_err("added %" PRIu32 " device planes: %" PRIu64 " events; left out %" PRIu64
	       " before and %" PRIu64 " after the span",
	       s->planes_added, s->dev_merged, s->dev_before, s->dev_after);
}

/* --merge TRACE --chrome OUT or --xplane OUT: 0, 1 (failed) or 2 (refused). */
static int convert_merge(const char *path, const char *trace, const char *logdir,
                         const char *chrome, int others)
{
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res = {0};
	const char *inputs[2] = {path, trace};
	struct kx_merge_stats st;
	struct kx_analysis *an = NULL;
	struct kx_store *store;
	char err[512];
	int rc = 1;

	const char *out = chrome ? chrome : logdir;
	struct kx_xmerge_stats xs;

	if (!!logdir == !!chrome || others || !strcmp(out, "-")) {
		kx_err("--merge TRACE writes one output and takes no other option: give --chrome "
		       "OUT.json alone (TRACE a Chrome trace) or --xplane OUT.xplane.pb alone "
		       "(TRACE an XSpace)");
		return 2;
	}
	if (kx_outfile_check(out, 0, inputs, 2, err, sizeof(err))) {
		kx_err("%s", err);
		return 2;
	}
	/* Interrupted: the temporary file goes, nothing else. */
	if (kx_outfile_catch_signals()) {
		kx_err("cannot set up signal handling: %s", strerror(errno));
		return 1;
	}
	store = kx_cli_load(path, &ci, &res);
	if (!store)
		return 1;
	an = kx_analysis_build(store, &ci, err, sizeof(err));
	if (!an) {
		kx_err("%s: %s", path, err);
	} else if (logdir) {
		if (kx_xspace_merge(an, trace, logdir, &xs, err, sizeof(err))) {
			kx_err("%s", err);
		} else {
			report_xmerge(&xs, trace);
			printf("%s\n", logdir);
			rc = 0;
		}
	} else if (kx_chrome_merge(an, trace, chrome, &st, err, sizeof(err))) {
		kx_err("%s", err);
	} else {
		kx_err("merged %" PRIu64 " calls into %s; left out %" PRIu64 " before and %" PRIu64
		       " after its span (clock offset %" PRId64 " ns, uncertainty %" PRIu64 " ns)",
		       st.merged, trace, st.before, st.after, st.offset_ns, st.uncertainty_ns);
		kx_err("merged %" PRIu64 " ranges (left out %" PRIu64 " before and %" PRIu64
		       " after) and %" PRIu64 " device track events (left out %" PRIu64
		       " before and %" PRIu64 " after)",
		       st.ranges_merged, st.ranges_before, st.ranges_after, st.dev_merged,
		       st.dev_before, st.dev_after);
		printf("%s\n", chrome);
		rc = 0;
	}
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}

/*
 * The capture read into r as the outputs ask (analysis/capread.h): in
 * windows of window events, each cut into slices of slice events, or whole
 * (window 0 or KX_CAPREAD_WHOLE), with what -v says of it and the warning
 * of what reading lost. 0, or 1 after a message.
 */
static int convert_read(struct kx_capread *r, const char *path, size_t window, size_t slice)
{
	struct kx_capread_opts o = {
	        .window = window ? window : KX_CAPREAD_WHOLE,
	        .slice = slice,
	        .budget = KX_CLI_STORE_BUDGET,
	        .keep = KX_WREAD_KEEP_RECORDS,
	        .say = kx_verbose,
	};
	char err[512];
	int rc = kx_capread_open(r, path, &o, err, sizeof(err));

	if (r->why[0])
		kx_err("%s", r->why);
	if (r->again[0])
		kx_err("%s", r->again);
	if (rc) {
		kx_err("%s", err);
		kx_capread_free(r);
		return 1;
	}
	if (r->damage[0])
		kx_cli_load_warning(path, &r->res, r->damage);
	return 0;
}

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"xplane", required_argument, NULL, 'x'},
	        {"chrome", required_argument, NULL, 'c'},
	        {"chrome-stacks", no_argument, NULL, 's'},
	        {"gpu", no_argument, NULL, 'g'},
	        {"pprof", required_argument, NULL, 'P'},
	        {"folded", required_argument, NULL, 'f'},
	        {"off-cpu", no_argument, NULL, 'O'},
	        {"speedscope", required_argument, NULL, 'p'},
	        {"split-events", required_argument, NULL, 'S'},
	        {"in-memory", no_argument, NULL, 'M'},
	        {"merge", required_argument, NULL, 'm'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	static struct kx_capread cr;
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res = {0};
	struct kx_xspace_opts xo = {0};
	/* The XSpace and Chrome outputs, and where their lines go. */
	struct kx_traceparts t = {.xo = &xo, .say = trace_say, .wrote = trace_wrote};
	const char *path = "kxprof.kxp", *logdir = NULL, *chrome = NULL, *pprof = NULL,
	           *folded = NULL, *speedscope = NULL, *merge = NULL;
	int off_cpu = 0, split_given = 0;
	/* Events per read window: the parts' (0: none asked), or unbounded. */
	size_t window = 0;
	long long split = KX_SPLIT_EVENTS_DEFAULT;
	struct kx_store *store = NULL;
	struct kx_analysis *an = NULL;
	char err[512];
	int opt, rc = 1;

	optind = 1;
	while ((opt = kx_getopt(argc, argv, "h", opts)) != -1) {
		switch (opt) {
		case 's':
			t.chrome_flags |= KX_CHROME_STACKS;
			break;
		case 'x':
			logdir = optarg;
			break;
		case 'c':
			chrome = optarg;
			break;
		case 'g':
			xo.device_planes_as_gpu = 1;
			break;
		case 'P':
			pprof = optarg;
			break;
		case 'f':
			folded = optarg;
			break;
		case 'O':
			off_cpu = 1;
			break;
		case 'p':
			speedscope = optarg;
			break;
		case 'M': /* --in-memory: the window unbounded, the capture read whole */
			window = KX_CAPREAD_WHOLE;
			break;
		case 'm':
			merge = optarg;
			break;
		case 'S':
			split_given = 1;
			if (kx_parse_long("--split-events", optarg, 0, KX_SPLIT_EVENTS_MAX, &split,
			                  err, sizeof(err))) {
				kx_err("%s", err);
				return 2;
			}
			break;
		case 'h':
			convert_usage(stdout);
			return 0;
		default:
			convert_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		path = argv[optind++];
	if (optind < argc) {
		kx_err("one record file at a time ('%s' is extra)", argv[optind]);
		return 2;
	}
	if (merge)
		return convert_merge(path, merge, logdir, chrome,
		                     pprof || folded || speedscope || t.chrome_flags ||
		                             xo.device_planes_as_gpu || off_cpu || window ||
		                             split_given);
	if (!logdir && !chrome && !pprof && !folded && !speedscope) {
		kx_err("nothing to write: give --xplane LOGDIR, --chrome OUT.json, --pprof "
		       "OUT.pb.gz, --folded OUT or --speedscope OUT.json");
		return 2;
	}
	if (speedscope && !strcmp(speedscope, "-") && (logdir || chrome || pprof || folded)) {
		kx_err("--speedscope - is the only output on standard output: give it alone, or "
		       "give it a file name");
		return 2;
	}
	if (t.chrome_flags && !chrome) {
		kx_err("--chrome-stacks adds to the trace of --chrome: give --chrome OUT.json");
		return 2;
	}
	if (off_cpu && !pprof && !folded) {
		kx_err("--off-cpu chooses the profile of --pprof and --folded: give one of them");
		return 2;
	}
	/* Outputs kxprof will not write are refused before any work (exit 2). */
	if ((chrome && kx_outfile_check(chrome, KX_OUT_STDOUT, &path, 1, err, sizeof(err))) ||
	    (pprof && kx_outfile_check(pprof, 0, &path, 1, err, sizeof(err))) ||
	    (folded && kx_outfile_check(folded, KX_OUT_STDOUT, &path, 1, err, sizeof(err))) ||
	    (speedscope &&
	     kx_outfile_check(speedscope, KX_OUT_STDOUT, &path, 1, err, sizeof(err))) ||
	    (logdir && kx_outdir_check(logdir, err, sizeof(err)))) {
		kx_err("%s", err);
		return 2;
	}
	/* Interrupted: the temporary files and the new run folder go, nothing else. */
	if (kx_outfile_catch_signals()) {
		kx_err("cannot set up signal handling: %s", strerror(errno));
		return 1;
	}
	/* Past one trace's events, a capture a stream gives exactly is read one
	 * window at a time; the others are read whole (analysis/capread.h). */
	if (!speedscope && (logdir || chrome) && split && !window)
		window = (size_t)split;
	/* A Chrome file alone is written in slices; an XSpace run a window whole. */
	if (convert_read(&cr, path, window,
	                 logdir ? (size_t)split
	                        : ((size_t)split + CHROME_SLICES - 1) / CHROME_SLICES))
		return 1;
	t.logdir = logdir;
	t.chrome = chrome;
	t.split = (size_t)split;
	t.input = path;
	if (!cr.store) {
		rc = convert_stream(&cr, &t, pprof, folded,
		                    off_cpu ? KX_SAMPLE_OFFCPU : KX_SAMPLE_CPU);
		kx_capread_free(&cr);
		return rc;
	}
	store = cr.store;
	cr.store = NULL;
	ci = cr.ci;
	res = cr.res;
	/* One analysis for both outputs: they show the same jobs and durations. */
	an = kx_analysis_build(store, &ci, err, sizeof(err));
	if (!an) {
		kx_err("%s: %s", path, err);
		goto out;
	}
	kx_cli_read_loss(&res, &an->loss);
	/* Both outputs and every part draw the same flows: found once (out of
	 * memory, each finds them again). */
	kx_flows_keep(an);
	rc = logdir || chrome ? kx_traceparts_write(&t, an) : 0;
	if (!rc && speedscope && kx_speedscope_write(an, speedscope, err, sizeof(err))) {
		kx_err("%s", err);
		rc = 1;
	} else if (!rc && speedscope && strcmp(speedscope, "-")) {
		printf("%s\n", speedscope);
	}
	if (!rc && (pprof || folded) &&
	    convert_profile(path, store, &ci, off_cpu ? KX_SAMPLE_OFFCPU : KX_SAMPLE_CPU, pprof,
	                    folded))
		rc = 1;
out:
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}
