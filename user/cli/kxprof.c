/* kxprof command line: subcommand dispatch and shared CLI helpers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/warnings.h"
#include "cli/cli.h"
#include "io/kxp.h"
#include "io/replay.h"
#include "model/store.h"

int kx_verbose;

void kx_err(const char *fmt, ...)
{
	va_list ap;

	fputs("kxprof: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

const char *kx_human_bytes(unsigned long long b, char *buf, unsigned long len)
{
	static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = 0;

	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", b);
	else
		snprintf(buf, len, "%.1f %s", v, unit[u]);
	return buf;
}

/* What the reader skipped or missed (err, which starts with the path), as a warning. */
static void load_warning(const char *path, const struct kx_kxp_read_result *res, const char *err)
{
	size_t n = strlen(path);

	if (!strncmp(err, path, n) && !strncmp(err + n, ": ", 2))
		err += n + 2;
	fprintf(stderr, "kxprof: warning: %s is %s: %s; using its %llu intact chunks\n", path,
	        res->ncorrupt ? "damaged" : "incomplete", err, (unsigned long long)res->chunks);
}

void kx_cli_read_loss(const struct kx_kxp_read_result *res, struct kx_read_loss *loss)
{
	memset(loss, 0, sizeof(*loss));
	loss->no_trailer = res->truncated;
	loss->corrupt_chunks = res->ncorrupt;
	loss->corrupt_bytes = res->corrupt_bytes;
	loss->first_corrupt = res->ncorrupt ? res->corrupt[0].chunk : 0;
	if (res->truncated)
		loss->cut_bytes = res->bad_tail_bytes;
}

struct kx_store *kx_cli_load(const char *path, struct kx_capinfo *ci,
                             struct kx_kxp_read_result *res)
{
	/* A capture of millions of events needs more than the default budget. */
	struct kx_store *store = kx_store_new((size_t)8 << 30);
	char err[512];

	if (!store) {
		kx_err("out of memory");
		return NULL;
	}
	/* Replay fixtures load wherever record files do (see replay.h). */
	if (kx_replay_is_fixture(path)) {
		memset(res, 0, sizeof(*res));
		if (kx_replay_load(path, store, ci, err, sizeof(err)) == 0)
			return store;
		kx_err("%s", err);
		kx_store_free(store);
		return NULL;
	}
	if (kx_kxp_read(path, store, ci, res, err, sizeof(err)) != 0) {
		kx_err("%s", err);
		kx_store_free(store);
		return NULL;
	}
	if (err[0])
		load_warning(path, res, err);
	return store;
}

void kx_cli_warn(void *ctx, const char *msg)
{
	(void)ctx;
	kx_err("%s", msg);
}

static const struct {
	const char *name;
	int (*fn)(int, char **);
	const char *help;
} cmds[] = {
        {"record", cmd_record,
         "trace driver ioctls of a command, pids or the whole system into a .kxp file"},
        {"report", cmd_report, "per driver and ioctl statistics of a .kxp file (table or JSON)"},
        {"convert", cmd_convert,
         "a .kxp file to XSpace (TensorBoard/XProf) and/or Chrome trace JSON"},
        {"list", cmd_list, "accelerator devices present and which kernel hooks work here"},
        {"replay", cmd_replay, "a recorded event stream fixture (.jsonl) to a .kxp file"},
        {"top", cmd_top, "live per device and ioctl rates and latencies (in-kernel aggregation)"},
        {"serve", cmd_serve,
         "always-on daemon: Prometheus /metrics and live summary JSON over HTTP"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: kxprof [-v] COMMAND [ARGS]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %-8s %s\n", cmds[i].name, cmds[i].help);
	fprintf(f, "\n'kxprof COMMAND --help' shows a command's options.\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			kx_verbose = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("kxprof 0.1\n");
			return 0;
		} else {
			kx_err("unknown option '%s' (kxprof --help lists them)", argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		if (!strcmp(argv[i], cmds[c].name))
			return cmds[c].fn(argc - i, argv + i);
	kx_err("unknown command '%s' (kxprof --help lists them)", argv[i]);
	return 2;
}
