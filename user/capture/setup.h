/*
 * Capture set-up shared by every front end (record, top, serve, the
 * TensorFlow plugin): the traced device set (defaults plus --device specs or
 * KXPROF_DEVICES), the pid set (-p, -a or a launched command), the attach
 * mechanism, ring size, aggregate mode and sink, turned into a running
 * session; then start, stop (with the record file's trailer) and teardown.
 * A process that cannot load BPF captures into a record file or a store
 * through the kxprof daemon instead (capture/remote.h), when its socket is
 * there: the same calls, the same file or store, only the session runs in
 * the daemon.
 */
#ifndef KX_SETUP_H
#define KX_SETUP_H

#include <stddef.h>
#include <stdint.h>

#include "capture/launch.h"
#include "capture/remote.h"
#include "capture/session.h"
#include "capture/sinks.h"
#include "model/capinfo.h"

#define KX_MAX_DEVICE_SPECS 32
#define KX_MAX_PIDS         256

/* Devices to trace: every accelerator present and kvm, plus the given specs
 * (PATH, MAJOR:MINOR, MAJOR:*, block:MAJOR:MINOR, driver name), kept so a
 * rescan finds hot-plugged devices again. */
struct kx_devset {
	const char *specs[KX_MAX_DEVICE_SPECS]; /* not copied: must outlive the set */
	int nspecs;
	struct kx_device dev[KX_MAX_DEVICES];
	int n; /* devices in dev after kx_devset_resolve */
};

/* Adds one spec, resolved now so a typo fails at once. 0, or -1 with err. */
int kx_devset_add(struct kx_devset *ds, const char *spec, char *err, size_t len);
/* Says why a spec was skipped (a bad KXPROF_DEVICES entry, an unplugged device). */
typedef void (*kx_devset_warn_fn)(void *ctx, const char *msg);
/* Adds each spec of a comma-separated list (spaces around names allowed);
 * list is cut in place and must outlive the set. A bad spec is skipped and
 * passed to warn. Returns the number skipped. */
int kx_devset_add_list(struct kx_devset *ds, char *list, kx_devset_warn_fn warn, void *ctx);
/* Fills dev/n: the defaults, then each spec's devices in order. A spec that
 * no longer resolves is skipped and passed to warn (when not NULL). Returns n. */
int kx_devset_resolve(struct kx_devset *ds, kx_devset_warn_fn warn, void *ctx);
/* 1 when a and b hold the same devices in the same order. */
int kx_devset_same(const struct kx_devset *a, const struct kx_devset *b);

/* Parses "PID[,PID...]" into pids (*n counts, at most max). Empty entries
 * ("1,,2", ",1", "1,"), junk and ids below 1 are refused. 0, or -1 with err. */
int kx_pidset_parse(const char *list, uint32_t *pids, int max, int *n, char *err, size_t len);

/* What a front end asks to capture. */
struct kx_capture_opts {
	const struct kx_devset *devices; /* resolved */
	int all;                         /* every process (-a) */
	const uint32_t *pids;            /* processes to trace (kx_pidset_parse) */
	int npids;
	char **argv;            /* command to launch and trace, or NULL */
	const char *mech;       /* --attach, NULL: the best for the mode */
	uint32_t ringbuf_bytes; /* 0: KX_RINGBUF_DEFAULT */
	int verbose;            /* libbpf diagnostics */
	int no_jobs;            /* no device timelines */
	int no_drvhooks;        /* no driver entry hooks */
	int no_offcpu;          /* no off-CPU time (no sched_switch program) */
	/* Aggregate mode (top, serve): ioctls counted in the kernel, split by
	 * pid or cgroup, at most agg_max_keys keys (0: the default). */
	int aggregate, agg_by_pid, agg_by_cgroup;
	uint32_t agg_max_keys;
	uint32_t sample_hz;    /* cpu-clock samples per second per CPU (record -F); 0: none */
	int off_cpu;           /* off-CPU intervals inside traced ioctls (record --off-cpu) */
	uint32_t ustack_bytes; /* --call-graph dwarf: user stack bytes copied per sample; 0: fp */
	int ustack_auto;       /* --call-graph auto: DWARF only where frame pointers fail */
	const struct kx_counter_list *counters; /* perf counters inside calls (--counters) */
	unsigned int drm_usage_ms; /* DRM usage passes into the record file every this many ms
	                              (capture/drmfdinfo.h); 0: none. Not through the daemon */
	int annotate;              /* annotation probes (a launched command waits for them, see
	                              KX_ANN_WAIT_ENV) */
	const char *record_path;   /* stream into this record file (sink is then ignored) */
	/* Or stream the record's bytes here (a daemon's session; sink ignored). */
	const struct kx_kxp_stream *record_stream;
	struct kx_store *store; /* or events into this store (sink ignored) */
	struct kx_sink sink;    /* where events go otherwise; NULL callbacks are skipped */
	const char *cmdline;    /* what is traced, for the record header; NULL: from argv, -a, -p */
	int uid_only;           /* only processes of this uid (see kx_session_opts); the
	                           record then holds no kernel address (sinks.h) */
	uint32_t uid;
	uint32_t gid;              /* with uid_only: the client's (the exec rule) */
	const char *no_kernel_why; /* no kernel-mode profiling, for this reason (kx_session_opts) */
	/* Without the privilege to load BPF, a capture into record_path or store
	 * goes through the kxprof daemon when its socket exists (KXPROF_SOCKET,
	 * else KX_DAEMON_SOCKET_DEFAULT); no_daemon refuses that. */
	int no_daemon;
	/* The caller exits right after the capture (kxprof top): its stop
	 * leaves the release of its probes on perf events to a child process
	 * (util/bgrelease.h) instead of waiting for it. */
	int quick_exit;
};

/* A capture in progress. Zero it, then kx_capture_open; never copy it (the
 * record sink points into it). */
struct kx_capture {
	struct kx_session *s;
	struct kx_kxp_sink rec;          /* record file, when record_path */
	struct kx_launch cmd;            /* launched command, when argv */
	char **argv;                     /* set once the command is held */
	int started;                     /* the session ran (events reached the sink) */
	struct kx_remote *remote;        /* capturing through the daemon: no session here */
	const char *daemon;              /* then its socket path */
	struct kx_capinfo rci;           /* then the live, later the final, capture facts */
	uint32_t live_pids[KX_MAX_PIDS]; /* kx_live_open's pid list */
	struct {
		uint32_t pid;
		int fd;       /* pidfd, readable once pid exits; -1: checked with kill(pid, 0) */
	} watch[KX_MAX_PIDS]; /* the given pids (not the command) */
	int nwatch;
};

/* Opens the session, adds the pid set, launches the command held before exec
 * and adds its pid; or asks the daemon for all that (see no_daemon). 0, or
 * -1 with err (kx_capture_close still needed). */
int kx_capture_open(struct kx_capture *c, const struct kx_capture_opts *o, char *err, size_t len);
/* The record file o names (record_path) is one kxprof may write: a regular
 * file or a new path, not empty, not the command to run (util/outfile).
 * 0, or -1 with err. kx_capture_open checks it too. */
int kx_capture_check_output(const struct kx_capture_opts *o, char *err, size_t len);
/* Starts the session (the record file is created with its start clock), then
 * releases the command. 0; -1 with err; or 127/126 when the command cannot
 * run (err says so; the capture is stopped and the record file removed). */
int kx_capture_start(struct kx_capture *c, char *err, size_t len);
/* 1 while there is no command or it still runs. */
int kx_capture_cmd_running(struct kx_capture *c);
/* 1 while no pid was given or one of the given pids still runs; 0 once
 * every one has exited. */
int kx_capture_pids_running(const struct kx_capture *c);
/* Stops the session and writes the record file's trailer with the session's
 * final facts and stop clock. 0, or -1 with err. */
int kx_capture_stop(struct kx_capture *c, char *err, size_t len);
/* The command's exit code as a shell gives it (ending it first if it still
 * runs: SIGTERM, SIGKILL after KX_LAUNCH_GRACE_MS); 0 without a command. */
int kx_capture_cmd_exit(struct kx_capture *c);
/* 1 when a job lifecycle source attached (the sink's job callback gets records). */
int kx_capture_jobs_attached(const struct kx_capinfo *ci);
/* Ends whatever is left: a command still held, an unfinished file, the session. */
void kx_capture_close(struct kx_capture *c);

/* 1 between a successful open and close (locally or through the daemon). */
int kx_capture_opened(const struct kx_capture *c);
/* Capture facts: counters live while running, final after stop. */
const struct kx_capinfo *kx_capture_capinfo(struct kx_capture *c);
/* The ioctl hooks' attach mechanism. */
const char *kx_capture_mech(const struct kx_capture *c);
/* NULL while the capture can go on; else why it ended by itself (the
 * daemon's time limit or shutdown, a lost connection to it). */
const char *kx_capture_ended(struct kx_capture *c);
/* 1 when writing the record file failed during the capture. */
int kx_capture_write_error(const struct kx_capture *c);

#endif /* KX_SETUP_H */
