/*
 * The daemon protocol's wire format: how `kxprof serve --socket` and its
 * clients (record, the TensorFlow plugin) talk over a Unix stream socket.
 * Owns the framing, the capture request, the small replies, and reading
 * and sending one whole message. Every limit is enforced here: a malformed,
 * truncated or oversized message is an error with its reason, never a crash
 * and never a partial result.
 *
 * Frame: "KD", u8 version (KX_DW_VERSION), u8 type, u32 payload length
 * (little-endian), then the payload.
 *   client -> daemon: OPEN (the request), START, STOP (empty payloads)
 *   daemon -> client: OPENED (attach mechanism), STARTED (empty), DATA (the
 *   record file's own bytes: its header, then one chunk per message, the
 *   trailer last), STATUS (live counters), END (why the session ended and
 *   its final capture facts), ERROR (one line; the session is over)
 * Payloads other than DATA and ERROR are protocol-buffer wire fields
 * (util/pbwire.h). The request refuses fields it does not know: a newer
 * client's option must not be silently ignored by an older daemon. The
 * protocol grows by new field numbers, never by a new meaning for an old
 * one: fields 9-11 (CPU sampling, off-CPU stacks, counters) came after the
 * first release, so a daemon from before them refuses a client that asks
 * for them ("unknown field 9 (a client newer than this daemon?)") and a
 * client from before them, which never sends them, is served as it was.
 */
#ifndef KX_DAEMON_WIRE_H
#define KX_DAEMON_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"
#include "util/grow.h"

#define KX_DW_VERSION     1
#define KX_DW_HDR         8            /* frame header, bytes */
#define KX_DW_CLIENT_MAX  (64u * 1024) /* largest client message payload, bytes */
#define KX_DW_DAEMON_MAX  (8u << 20)   /* largest daemon message payload (a record chunk), bytes */
#define KX_DW_SPEC_MAX    128          /* a device spec in a request, bytes with the NUL */
#define KX_DW_PIDS_MAX    256          /* pids in a request (as capture/setup.h's KX_MAX_PIDS) */
#define KX_DW_DEVICES_MAX 32           /* device specs in a request (KX_MAX_DEVICE_SPECS) */
#define KX_DW_TEXT_MAX    512          /* an ERROR line or END reason, bytes */
#define KX_DW_HZ_MAX      1000000      /* sampling frequency in a request (record -F's limit), Hz */
#define KX_DW_CTRS_MAX    256          /* the counter list in a request, bytes with the NUL */

enum kx_dw_type {
	KX_DW_OPEN = 1,
	KX_DW_START = 2,
	KX_DW_STOP = 3,
	KX_DW_OPENED = 16,
	KX_DW_STARTED = 17,
	KX_DW_DATA = 18,
	KX_DW_STATUS = 19,
	KX_DW_END = 20,
	KX_DW_ERROR = 21,
};

/* "OPEN" for a type, "unknown" otherwise (for messages). */
const char *kx_dw_type_name(int type);

/* What a client asks to capture (kx_capture_opts, as far as it crosses). */
struct kx_dw_request {
	uint32_t pids[KX_DW_PIDS_MAX]; /* processes to trace */
	int npids;
	int all;                                         /* every process (-a) */
	char devices[KX_DW_DEVICES_MAX][KX_DW_SPEC_MAX]; /* specs, as for --device */
	int ndevices;
	char mech[16];          /* "" or tp_btf, raw_tp, tp */
	uint32_t ringbuf_bytes; /* 0: the daemon's default */
	int no_jobs;
	int annotate;                  /* annotation probes (capture/annotate.h) */
	uint32_t sample_hz;            /* CPU samples per second per CPU (record -F); 0: none */
	int off_cpu;                   /* off-CPU stacks inside traced ioctls (--off-cpu) */
	uint32_t ustack_bytes;         /* --call-graph dwarf: stack bytes per sample; 0: fp */
	int ustack_auto;               /* --call-graph auto (with ustack_bytes) */
	char counters[KX_DW_CTRS_MAX]; /* perf counters inside calls, as --counters takes them; ""
	                                */
	char cmdline[sizeof(((struct kx_capinfo *)0)->cmdline)]; /* for the record header */
};

/* Live counters of a running session. */
struct kx_dw_status {
	uint64_t emitted, received, dropped;
};

/* How a session ended: the reason ("stopped by the client", "time limit
 * (60 s)") and the stopped session's capture facts. */
struct kx_dw_end {
	char reason[KX_DW_TEXT_MAX];
	struct kx_capinfo ci;
};

/* Encoders append a payload to b (b->oom on failure). Decoders return 0,
 * or -1 with the reason in err. */
void kx_dw_request_encode(struct kx_bytes *b, const struct kx_dw_request *r);
int kx_dw_request_decode(const uint8_t *p, size_t len, struct kx_dw_request *r, char *err,
                         size_t errlen);
void kx_dw_opened_encode(struct kx_bytes *b, const char *mech);
int kx_dw_opened_decode(const uint8_t *p, size_t len, char *mech, size_t mechlen, char *err,
                        size_t errlen);
void kx_dw_status_encode(struct kx_bytes *b, const struct kx_dw_status *s);
int kx_dw_status_decode(const uint8_t *p, size_t len, struct kx_dw_status *s, char *err,
                        size_t errlen);
void kx_dw_end_encode(struct kx_bytes *b, const struct kx_dw_end *e);
int kx_dw_end_decode(const uint8_t *p, size_t len, struct kx_dw_end *e, char *err, size_t errlen);

/* The frame header of a message of type with len payload bytes. */
void kx_dw_header(uint8_t h[KX_DW_HDR], int type, uint32_t len);
/* Checks a received frame header: magic, version, a type the sender may send
 * (from_client: the client's types, else the daemon's) and a length within
 * that side's limit (empty types must be empty). 0 with *type and *len, or
 * -1 with the reason. */
int kx_dw_header_parse(const uint8_t h[KX_DW_HDR], int from_client, int *type, uint32_t *len,
                       char *err, size_t errlen);

/* Sends one whole message (never raises SIGPIPE). 0, or the errno: EAGAIN
 * when the socket's send timeout passed with nothing sent. */
int kx_dw_send(int fd, int type, const void *payload, size_t len);
/* Sends an ERROR whose text is fmt (cut at KX_DW_TEXT_MAX). */
int kx_dw_send_error(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

enum kx_dw_read_rc { KX_DW_MSG = 1, KX_DW_EOF = 0, KX_DW_BAD = -1, KX_DW_TIMEOUT = -2 };
/*
 * Reads one whole message into *type and payload (reset first), waiting at
 * most until deadline_ns (kx_mono_ns clock; 0: no limit). KX_DW_MSG; KX_DW_EOF
 * when the peer closed before a message began; KX_DW_TIMEOUT; or KX_DW_BAD
 * with err (a bad header, a message cut short, a read error, no memory).
 */
int kx_dw_read(int fd, uint64_t deadline_ns, int from_client, int *type, struct kx_bytes *payload,
               char *err, size_t errlen);

#endif /* KX_DAEMON_WIRE_H */
