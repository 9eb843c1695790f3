/* kxprof convert: a record file to XSpace (TensorBoard/XProf log directory) and/or Chrome trace
 * JSON. */
#include <getopt.h>
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
	        "A damaged FILE is read around the damage (exit 0): corrupt chunks are skipped\n"
	        "and named in a warning.\n");
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
	if ((pprof || folded) &&
	    convert_profile(path, store, &ci, off_cpu ? KX_SAMPLE_OFFCPU : KX_SAMPLE_CPU, pprof,
	                    folded))
		goto out;
	rc = 0;
out:
	kx_analysis_free(an);
	kx_store_free(store);
	return rc;
}
