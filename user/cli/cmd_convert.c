/* kxprof convert: a record file to XSpace (TensorBoard/XProf log directory) and/or Chrome trace
 * JSON. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "analysis/profile.h"
#include "export/chrome.h"
#include "export/folded.h"
#include "export/pprof.h"
#include "cli/cli.h"
#include "io/kxp.h"
#include "model/store.h"
#include "export/xspace.h"
#include "util/outfile.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof convert [FILE] [--xplane LOGDIR] [--chrome OUT.json[.gz]] [--gpu]\n"
	        "                      [--pprof OUT.pb.gz] [--folded OUT] [--off-cpu]\n"
	        "  FILE             record file (default kxprof.kxp)\n"
	        "  --xplane LOGDIR  write LOGDIR/plugins/profile/<run>/<host>.xplane.pb for\n"
	        "                   TensorBoard/XProf (tensorboard --logdir LOGDIR)\n"
	        "  --chrome OUT     Chrome trace JSON (Perfetto); gzip when OUT ends in .gz\n"
	        "  --gpu            name device planes /device:GPU:<n> (default "
	        "/device:CUSTOM:<n>)\n"
	        "  --pprof OUT      the CPU profile (record -F) as gzipped pprof (go tool pprof)\n"
	        "  --folded OUT     the CPU profile as folded stacks (flamegraph.pl, speedscope);\n"
	        "                   '-' for standard output\n"
	        "  --off-cpu        --pprof and --folded hold the off-CPU profile instead\n"
	        "                   (record --off-cpu; folded values are microseconds)\n"
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

/* Both outputs written, then committed together: an error or a signal
 * leaves neither. 0, or 1 with the message printed. */
static int convert_write(const struct kx_analysis *an, const struct kx_xspace_opts *xo,
                         const char *logdir, const char *chrome)
{
	struct kx_xspace_out xs;
	struct kx_outfile co = {.fd = -1, .slot = -1};
	int have_xs = 0, rc = 1;
	char err[512];
	sigset_t old;

	if (logdir) {
		if (kx_xspace_logdir_open(an->ci, logdir, &xs, err, sizeof(err)))
			goto fail;
		have_xs = 1;
	}
	if (chrome && kx_outfile_open(&co, chrome, KX_OUT_STDOUT, err, sizeof(err)))
		goto fail;
	if ((logdir && kx_xspace_logdir_write(an, xo, &xs, err, sizeof(err))) ||
	    (chrome && kx_chrome_write_to(an, &co, err, sizeof(err))))
		goto fail;
	kx_outfile_hold_signals(&old);
	if (logdir && kx_xspace_logdir_commit(&xs, err, sizeof(err))) {
		kx_outfile_release_signals(&old);
		goto fail;
	}
	have_xs = 0;
	if (chrome && kx_outfile_commit(&co, err, sizeof(err))) {
		kx_outfile_release_signals(&old);
		goto fail;
	}
	kx_outfile_release_signals(&old);
	/* The written paths, on stderr when the trace itself went to stdout. */
	if (logdir)
		fprintf(co.to_stdout ? stderr : stdout, "%s\n", xs.path);
	if (chrome && !co.to_stdout)
		printf("%s\n", chrome);
	return 0;
fail:
	kx_err("%s", err);
	if (have_xs)
		kx_xspace_logdir_abort(&xs);
	kx_outfile_abort(&co);
	return rc;
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

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"xplane", required_argument, NULL, 'x'}, {"chrome", required_argument, NULL, 'c'},
	        {"gpu", no_argument, NULL, 'g'},          {"pprof", required_argument, NULL, 'P'},
	        {"folded", required_argument, NULL, 'f'}, {"off-cpu", no_argument, NULL, 'O'},
	        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
	};
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res = {0};
	struct kx_xspace_opts xo = {0};
	const char *path = "kxprof.kxp", *logdir = NULL, *chrome = NULL, *pprof = NULL,
	           *folded = NULL;
	int off_cpu = 0;
	struct kx_store *store;
	struct kx_analysis *an = NULL;
	char err[512];
	int opt, rc = 1;

	optind = 1;
	while ((opt = kx_getopt(argc, argv, "h", opts)) != -1) {
		switch (opt) {
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
	if (!logdir && !chrome && !pprof && !folded) {
		kx_err("nothing to write: give --xplane LOGDIR, --chrome OUT.json, --pprof "
		       "OUT.pb.gz "
		       "or --folded OUT");
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
	    (logdir && kx_outdir_check(logdir, err, sizeof(err)))) {
		kx_err("%s", err);
		return 2;
	}
	/* Interrupted: the temporary files and the new run folder go, nothing else. */
	if (kx_outfile_catch_signals()) {
		kx_err("cannot set up signal handling: %s", strerror(errno));
		return 1;
	}
	store = kx_cli_load(path, &ci, &res);
	if (!store)
		return 1;
	/* One analysis for both outputs: they show the same jobs and durations. */
	an = kx_analysis_build(store, &ci, err, sizeof(err));
	if (!an) {
		kx_err("%s: %s", path, err);
		goto out;
	}
	kx_cli_read_loss(&res, &an->loss);
	rc = convert_write(an, &xo, logdir, chrome);
	if (!rc && (pprof || folded) &&
	    convert_profile(path, store, &ci, off_cpu ? KX_SAMPLE_OFFCPU : KX_SAMPLE_CPU, pprof,
	                    folded))
		rc = 1;
out:
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}
