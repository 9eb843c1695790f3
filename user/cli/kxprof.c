/* kxprof command line: subcommand dispatch and shared CLI helpers. */
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/setup.h"
#include "analysis/capread.h"
#include "analysis/warnings.h"
#include "cli/cli.h"
#include "io/kxp.h"
#include "model/version.h"
#include "model/store.h"

int kx_verbose;

/* The running subcommand ("report"), named in every message; NULL before one runs. */
static const char *cmd_name;

void kx_err(const char *fmt, ...)
{
	va_list ap;

	if (cmd_name)
		fprintf(stderr, "kxprof %s: ", cmd_name);
	else
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
void kx_cli_load_warning(const char *path, const struct kx_kxp_read_result *res, const char *err)
{
	size_t n = strlen(path);

	if (!strncmp(err, path, n) && !strncmp(err + n, ": ", 2))
		err += n + 2;
	kx_err("warning: %s is %s: %s; using its %llu intact chunks", path,
	       res->ncorrupt ? "damaged" : "incomplete", err, (unsigned long long)res->chunks);
}

void kx_cli_read_loss(const struct kx_kxp_read_result *res, struct kx_read_loss *loss)
{
	kx_read_loss_of(res, loss);
}

struct kx_store *kx_cli_load(const char *path, struct kx_capinfo *ci,
                             struct kx_kxp_read_result *res)
{
	char err[512], damage[512];
	struct kx_store *store = kx_capread_whole(path, KX_CLI_STORE_BUDGET, ci, res, damage,
	                                          sizeof(damage), err, sizeof(err));

	if (!store)
		kx_err("%s", err);
	else if (damage[0])
		kx_cli_load_warning(path, res, damage);
	return store;
}

int kx_cli_check_pids(const char *list)
{
	uint32_t pids[KX_MAX_PIDS];
	char err[256];
	int n = 0;

	if (kx_pidset_parse(list, pids, KX_MAX_PIDS, &n, err, sizeof(err)) == 0)
		return 0;
	kx_err("-p: %s", err);
	return -1;
}

void kx_cli_warn(void *ctx, const char *msg)
{
	(void)ctx;
	kx_err("%s", msg);
}

#define GETOPT_MAX_LONG 64 /* long options of one subcommand, without --verbose */

/*
 * The subcommand's tables with -v/--verbose added, built again when a
 * command passes other tables. 0, or -1 when they do not fit (or already use
 * 'v').
 */
static int verbose_tables(const char *shortopts, const struct option *longopts, char *so,
                          size_t solen, struct option *lo)
{
	size_t n = 0;

	if (strchr(shortopts, 'v') || strlen(shortopts) + 2 > solen)
		return -1;
	for (; longopts[n].name; n++) {
		if (n >= GETOPT_MAX_LONG || longopts[n].val == 'v')
			return -1;
		lo[n] = longopts[n];
	}
	lo[n] = (struct option){"verbose", no_argument, NULL, 'v'};
	lo[n + 1] = (struct option){NULL, 0, NULL, 0};
	snprintf(so, solen, "%sv", shortopts);
	return 0;
}

int kx_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts)
{
	static const char *last_so;
	static const struct option *last_lo;
	static char so[128];
	static struct option lo[GETOPT_MAX_LONG + 2];
	int opt;

	if (shortopts != last_so || longopts != last_lo) {
		if (verbose_tables(shortopts, longopts, so, sizeof(so), lo)) {
			kx_err("internal error: the options of this command do not fit kx_getopt");
			return '?';
		}
		last_so = shortopts;
		last_lo = longopts;
	}
	while ((opt = getopt_long(argc, argv, so, lo, NULL)) == 'v')
		kx_verbose = 1;
	return opt;
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
         "a .kxp file to XSpace, Chrome trace JSON, pprof, folded stacks or speedscope"},
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
	fprintf(f, "\n'kxprof help COMMAND' (or 'kxprof COMMAND --help') shows a command's "
	           "options.\n"
	           "-v, --verbose (before or after COMMAND) adds libbpf's diagnostics, and\n"
	           "says whether report and convert read a record file as a stream, and why not.\n"
	           "Exit status: 2 for usage errors (unknown, bad or conflicting options, and\n"
	           "outputs kxprof refuses to write), 1 for failures while running, 0 otherwise;\n"
	           "record with a command exits with the command's status.\n");
}

/* Runs command c; argv[0] becomes "kxprof NAME", which getopt's messages print. */
static int run_cmd(size_t c, int argc, char **argv)
{
	char prog[32];

	snprintf(prog, sizeof(prog), "kxprof %s", cmds[c].name);
	argv[0] = prog;
	cmd_name = cmds[c].name;
	return cmds[c].fn(argc, argv);
}

static int find_cmd(const char *name)
{
	for (size_t c = 0; c < sizeof(cmds) / sizeof(cmds[0]); c++)
		if (!strcmp(name, cmds[c].name))
			return (int)c;
	return -1;
}

/* kxprof help [COMMAND]: the command's --help, or the command list. */
static int help(int argc, char **argv)
{
	char opt[] = "--help", *hargv[] = {argv[1], opt, NULL};
	int c;

	cmd_name = "help";
	if (argc < 2 || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		kx_err("help takes one command ('%s' is extra)", argv[2]);
		return 2;
	}
	c = find_cmd(argv[1]);
	if (c < 0) {
		kx_err("unknown command '%s' (kxprof --help lists them)", argv[1]);
		return 2;
	}
	return run_cmd((size_t)c, 2, hargv);
}

int main(int argc, char **argv)
{
	int i = 1, c;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v") || !strcmp(argv[i], "--verbose")) {
			kx_verbose = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("kxprof %s\n", KX_VERSION);
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
	if (!strcmp(argv[i], "help"))
		return help(argc - i, argv + i);
	c = find_cmd(argv[i]);
	if (c >= 0)
		return run_cmd((size_t)c, argc - i, argv + i);
	kx_err("unknown command '%s' (kxprof --help lists them)", argv[i]);
	return 2;
}
