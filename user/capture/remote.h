/*
 * Capturing through the kxprof daemon (`kxprof serve --socket`), for a
 * process that cannot load BPF itself: the client half of the daemon
 * protocol (capture/daemon_wire.h). Sends the capture request; the daemon
 * authenticates this process by its kernel credentials and decides what may
 * be traced (its refusal comes back as a one-line reason). Once started, a
 * thread of its own receives the daemon's stream of the record file's own
 * bytes: into a record file (a temporary file renamed into place at the end,
 * as a local capture's) or into memory, read into an event store at the end
 * with the record file's reader. Either way the result is what a local
 * capture would have produced.
 */
#ifndef KX_REMOTE_H
#define KX_REMOTE_H

#include <stddef.h>

#include "capture/daemon_wire.h"
#include "model/capinfo.h"
#include "model/store.h"

#define KX_DAEMON_SOCKET_DEFAULT "/run/kxprof/kxprof.sock"

/* The daemon's socket: $KXPROF_SOCKET when set and not empty, else the default. */
const char *kx_remote_socket_path(void);
/* 1 when path names a Unix socket (a daemon may listen there). */
int kx_remote_available(const char *path);

struct kx_remote_opts {
	const char *socket;              /* the daemon's socket path */
	const struct kx_dw_request *req; /* what to capture */
	const char *record_path;         /* stream into this record file, or */
	struct kx_store *store;          /* keep the stream in memory, read into this store */
	size_t mem_limit;                /* with store: stream bytes kept at most (0: no limit) */
};

struct kx_remote;

/* Connects and asks for the capture; the daemon loads and attaches it (its
 * events wait until start). NULL with err: why the daemon could not be
 * reached, or its refusal. */
struct kx_remote *kx_remote_open(const struct kx_remote_opts *o, char *err, size_t len);
/* Creates the record file (record_path), starts the capture and the
 * receiving thread. 0, or -1 with err. */
int kx_remote_start(struct kx_remote *r, char *err, size_t len);
/* NULL while the session runs; else why it ended without a stop (the daemon's
 * time limit, its shutdown, a lost connection). */
const char *kx_remote_ended(struct kx_remote *r);
/* The attach mechanism the daemon chose. */
const char *kx_remote_mech(const struct kx_remote *r);
/* Live counters: emitted, received and dropped as the daemon last reported. */
void kx_remote_status(struct kx_remote *r, struct kx_capinfo *ci);
/*
 * Stops the capture and receives the rest, the trailer last; then renames
 * the record file into place, or reads the kept stream into the store. ci
 * gets the stopped session's final facts. 0, or -1 with err (a session
 * that ended badly still leaves what arrived: the record file without its
 * trailer, or the events read from it).
 */
int kx_remote_stop(struct kx_remote *r, struct kx_capinfo *ci, char *err, size_t len);
/* 1 when writing the record file failed during the capture. */
int kx_remote_write_error(const struct kx_remote *r);
/* Ends whatever is left: the connection (the daemon then ends the session
 * and releases its BPF state), an unfinished file. NULL: nothing to do. */
void kx_remote_close(struct kx_remote *r);
/* In a forked child: closes its copy of the connection, touches nothing
 * else (the parent's capture goes on). NULL: nothing to do. */
void kx_remote_forget(struct kx_remote *r);

#endif /* KX_REMOTE_H */
