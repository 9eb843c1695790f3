/* kxprof replay: a recorded event stream fixture (user/io/replay.h) to a .kxp record file. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "model/store.h"
#include "util/outfile.h"

static void replay_usage(FILE *f)
{
	fprintf(f, "usage: kxprof replay FIXTURE.jsonl -o OUT.kxp\n"
	           "  Loads a fixture (format: user/io/replay.h) and writes it as a record file\n"
	           "  (as record does: a temporary file renamed into place, an existing OUT\n"
	           "  kept as OUT.old; a device or the fixture itself as OUT is refused).\n"
	           "  report and convert also read fixtures directly, by their .jsonl name.\n");
}

/* FIXTURE and -o OUT. -1 to replay; else the exit code. */
static int replay_parse(int argc, char **argv, const char **in, const char **out)
{
	static const struct option opts[] = {
	        {"output", required_argument, NULL, 'o'},
	        {"help", no_argument, NULL, 'h'},
	        {NULL, 0, NULL, 0},
	};
	char err[512];
	int opt;

	optind = 1;
	while ((opt = kx_getopt(argc, argv, "o:h", opts)) != -1) {
		switch (opt) {
		case 'o':
			*out = optarg;
			break;
		case 'h':
			replay_usage(stdout);
			return 0;
		default:
			kx_err("see kxprof replay --help");
			return 2;
		}
	}
	if (optind < argc)
		*in = argv[optind++];
	if (!*in || !*out || optind < argc) {
		kx_err(!*in    ? "no fixture given (kxprof replay FIXTURE.jsonl -o OUT.kxp)"
		       : !*out ? "no output given: -o OUT.kxp"
		               : "one fixture at a time");
		return 2;
	}
	/* An output kxprof will not write (a device, the fixture itself) is a usage error. */
	if (kx_outfile_check(*out, 0, in, 1, err, sizeof(err))) {
		kx_err("%s", err);
		return 2;
	}
	return -1;
}

int cmd_replay(int argc, char **argv)
{
	struct kx_capinfo *ci = NULL;
	struct kx_kxp_writer *w = NULL;
	const char *in = NULL, *out = NULL;
	struct kx_store *s = NULL;
	int rc = replay_parse(argc, argv, &in, &out);
	char err[512];

	if (rc >= 0)
		return rc;
	rc = 1;
	/* Interrupted: the temporary file goes; an existing OUT stays as it was. */
	if (kx_outfile_catch_signals()) {
		kx_err("cannot set up signal handling: %s", strerror(errno));
		return 1;
	}
	ci = calloc(1, sizeof(*ci));
	if (!ci) {
		kx_err("out of memory");
		return 1;
	}
	s = kx_store_new(KX_CLI_STORE_BUDGET);
	if (!s) {
		kx_err("out of memory");
		goto out;
	}
	if (kx_replay_load(in, s, ci, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	w = kx_kxp_create(out, ci, err, sizeof(err));
	if (!w) {
		kx_err("%s", err);
		goto out;
	}
	for (size_t i = 0; i < kx_store_task_count(s); i++)
		kx_kxp_add_task(w, kx_store_task(s, i));
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);

		kx_kxp_add_ioctl(w, e, kx_store_arg(s, e));
	}
	for (size_t i = 0; i < kx_store_job_count(s); i++)
		kx_kxp_add_job(w, kx_store_job(s, i));
	/* A failed add makes the writer fail: close reports it. */
	if (kx_kxp_close(w, ci, err, sizeof(err))) {
		kx_err("%s", err);
		goto out;
	}
	printf("%s\n", out);
	rc = 0;
out:
	kx_store_free(s);
	free(ci);
	return rc;
}
