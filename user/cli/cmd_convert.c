/* kxprof convert: a record file to XSpace (TensorBoard/XProf log directory) and/or Chrome trace
 * JSON. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "export/chrome.h"
#include "cli/cli.h"
#include "io/kxp.h"
#include "model/store.h"
#include "export/xspace.h"

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
	        "A damaged FILE is read around the damage (exit 0): corrupt chunks are skipped\n"
	        "and named in a warning.\n");
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
	struct kx_analysis *an;
	char err[512], out[4096];
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
	if (logdir) {
		if (kx_xspace_write_logdir(an, &xo, logdir, out, sizeof(out), err, sizeof(err))) {
			kx_err("%s", err);
			goto out;
		}
		printf("%s\n", out);
	}
	if (chrome) {
		if (kx_chrome_write(an, chrome, err, sizeof(err))) {
			kx_err("%s", err);
			goto out;
		}
		printf("%s\n", chrome);
	}
	rc = 0;
out:
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}
