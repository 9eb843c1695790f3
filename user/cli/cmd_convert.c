/* kxprof convert: a record file to XSpace (TensorBoard/XProf log directory) and/or Chrome trace
 * JSON. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "export/chrome.h"
#include "cli/cli.h"
#include "io/kxp.h"
#include "model/store.h"
#include "export/xspace.h"
#include "util/outfile.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
	        "usage: kxprof convert [FILE] [--xplane LOGDIR] [--chrome OUT.json[.gz]] [--gpu]\n"
	        "  FILE             record file (default kxprof.kxp)\n"
	        "  --xplane LOGDIR  write LOGDIR/plugins/profile/<run>/<host>.xplane.pb for\n"
	        "                   TensorBoard/XProf (tensorboard --logdir LOGDIR)\n"
	        "  --chrome OUT     Chrome trace JSON (Perfetto); gzip when OUT ends in .gz\n"
	        "  --gpu            name device planes /device:GPU:<n> (default "
	        "/device:CUSTOM:<n>)\n"
	        "At least one of --xplane and --chrome; the written paths are printed.\n"
	        "Each output is written to a temporary file beside it and renamed into place\n"
	        "when both are complete: an error or a signal (INT, TERM, HUP, QUIT) leaves\n"
	        "neither, and an existing OUT stays as it was. Each conversion gets a new run\n"
	        "folder (<run>-2, -3, ... when <run> exists). OUT '-' is standard output.\n"
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

int cmd_convert(int argc, char **argv)
{
	static const struct option opts[] = {
	        {"xplane", required_argument, NULL, 'x'},
	        {"chrome", required_argument, NULL, 'c'},
	        {"gpu", no_argument, NULL, 'g'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res = {0};
	struct kx_xspace_opts xo = {0};
	const char *path = "kxprof.kxp", *logdir = NULL, *chrome = NULL;
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
	if (!logdir && !chrome) {
		kx_err("nothing to write: give --xplane LOGDIR and/or --chrome OUT.json");
		return 2;
	}
	/* Outputs kxprof will not write are refused before any work (exit 2). */
	if ((chrome && kx_outfile_check(chrome, KX_OUT_STDOUT, &path, 1, err, sizeof(err))) ||
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
out:
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}
