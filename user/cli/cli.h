/*
 * CLI front end: subcommand entry points and the small helpers they share.
 * Everything a subcommand does beyond parsing options and printing lives in
 * the core library.
 */
#ifndef KX_CLI_H
#define KX_CLI_H

#include <stdint.h>

extern int kx_verbose;

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_top(int argc, char **argv);
int cmd_serve(int argc, char **argv);

/* "kxprof CMD: <message>" on stderr ("kxprof: " outside a subcommand). */
void kx_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The environment variable naming the file record, top and serve write once
 * attached (user/cli/ready.c). */
#define KX_READY_FILE_ENV "KXPROF_READY_FILE"
/* Says the capture is attached and running: a line under -v ("attached:
 * WHAT"), and the file KXPROF_READY_FILE names, holding the pid. */
void kx_say_attached(const char *what);
struct option;
/*
 * getopt_long for a subcommand, which also takes -v/--verbose (sets
 * kx_verbose) anywhere among its options; never returns 'v'.
 */
int kx_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts);
struct kx_store;
struct kx_capinfo;
struct kx_kxp_read_result;
struct kx_read_loss;
/* Bytes a subcommand's store may take: a capture of millions of events
 * needs more than the store's default. */
#define KX_CLI_STORE_BUDGET ((size_t)8 << 30)
/*
 * Reads a record file (or a replay fixture, *.jsonl) for a subcommand into a
 * new store (with a budget large enough for big captures) and ci. Prints the error, or the
 * "incomplete file" warning, itself. NULL on error.
 */
struct kx_store *kx_cli_load(const char *path, struct kx_capinfo *ci,
                             struct kx_kxp_read_result *res);
/* The warning kx_cli_load prints when err (a reader's message) says what a
 * damaged or cut file lost. */
void kx_cli_load_warning(const char *path, const struct kx_kxp_read_result *res, const char *err);
/* What kx_cli_load's reading lost, for the analysis' warnings and unknown figures. */
void kx_cli_read_loss(const struct kx_kxp_read_result *res, struct kx_read_loss *loss);

/* Prints msg as "kxprof: MSG" (a kx_devset_warn_fn: a spec that was skipped). */
void kx_cli_warn(void *ctx, const char *msg);

/* Checks a -p list (PID[,PID...]) before any capture, so a bad one is a
 * usage error. 0, or -1 after a message. */
int kx_cli_check_pids(const char *list);

/* Human size: "12.3 KiB". */
const char *kx_human_bytes(unsigned long long b, char *buf, unsigned long len);

#endif /* KX_CLI_H */
