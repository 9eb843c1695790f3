/*
 * DRM client usage statistics (the kernel's Documentation/gpu/drm-usage-stats.rst):
 * the text a DRM or accel driver shows in /proc/PID/fdinfo/FD of its file
 * descriptors, parsed, and turned over successive passes into per-client
 * engine busy figures and memory per region. Owns the parser (what the
 * document specifies: "drm-" keys, optional keys, units, unknown keys
 * ignored) and the tracker (clients keyed by device and drm-client-id so a
 * client seen through several fds or processes counts once; held values
 * where a counter goes back; engines that appear later). Reading /proc is
 * capture/drmfdinfo.c's.
 */
#ifndef KX_MODEL_DRMUSAGE_H
#define KX_MODEL_DRMUSAGE_H

#include <stddef.h>
#include <stdint.h>

#define KX_DRM_NAME        32         /* bytes of a driver, engine or region name, NUL included */
#define KX_DRM_PDEV        24         /* "0000:03:00.0" */
#define KX_DRM_MAX_ENGINES 16         /* engines kept per fd; more are counted in dropped */
#define KX_DRM_MAX_REGIONS 8          /* memory regions kept per fd */
#define KX_DRM_NO_CLIENT   UINT64_MAX /* no drm-client-id key */

/* Memory figures of a region, in the order of the keys' names. */
enum kx_drm_mem {
	KX_DRM_MEM_TOTAL,     /* drm-total-: every buffer the client holds */
	KX_DRM_MEM_SHARED,    /* drm-shared-: of them, shared with another file */
	KX_DRM_MEM_RESIDENT,  /* drm-resident- (or the legacy drm-memory-): backed now */
	KX_DRM_MEM_PURGEABLE, /* drm-purgeable-: resident and the driver may drop them */
	KX_DRM_MEM_ACTIVE,    /* drm-active-: resident and in use by the device now */
	KX_DRM_MEM_MAX
};
extern const char *const kx_drm_mem_names[KX_DRM_MEM_MAX]; /* "total", ... */

/* Which keys of an engine were given. */
#define KX_DRM_E_BUSY    0x01 /* drm-engine-NAME: ns */
#define KX_DRM_E_CYCLES  0x02 /* drm-cycles-NAME */
#define KX_DRM_E_TOTCYC  0x04 /* drm-total-cycles-NAME */
#define KX_DRM_E_MAXFREQ 0x08 /* drm-maxfreq-NAME */

struct kx_drm_engine {
	char name[KX_DRM_NAME];
	uint64_t busy_ns;      /* time the engine ran this client's work, ns */
	uint64_t cycles;       /* busy cycles */
	uint64_t total_cycles; /* cycles the engine counted, busy or not */
	uint64_t maxfreq_hz;   /* its highest clock, Hz */
	uint32_t capacity;     /* identical engines behind the name (1 when not said) */
	uint32_t has;          /* KX_DRM_E_* */
};

struct kx_drm_region {
	char name[KX_DRM_NAME];
	uint64_t bytes[KX_DRM_MEM_MAX]; /* bytes */
	uint32_t has;                   /* bit (1 << enum kx_drm_mem): the key was given */
};

/* One fd's fdinfo, parsed. */
struct kx_drm_fdinfo {
	char driver[KX_DRM_NAME]; /* drm-driver (mandatory) */
	char pdev[KX_DRM_PDEV];   /* drm-pdev, "" when absent */
	uint64_t client_id;       /* drm-client-id, KX_DRM_NO_CLIENT when absent */
	int nengines, nregions;
	struct kx_drm_engine engine[KX_DRM_MAX_ENGINES];
	struct kx_drm_region region[KX_DRM_MAX_REGIONS];
	uint32_t bad;     /* drm- lines whose value or unit the document does not allow */
	uint32_t dropped; /* engines or regions past the maxima */
};

/*
 * Parses fdinfo text (len bytes, need not be terminated) into f. 0, or -1
 * when the text has no drm-driver line (not a DRM client's fdinfo). Keys
 * without the "drm-" prefix, and drm- keys the document does not define
 * (driver specific ones), are ignored.
 */
int kx_drm_fdinfo_parse(const char *text, size_t len, struct kx_drm_fdinfo *f);

/* What a busy figure of an engine is based on. */
enum kx_drm_basis {
	KX_DRM_BASIS_NONE,   /* first sight: no interval yet */
	KX_DRM_BASIS_NS,     /* busy ns / (interval ns * capacity) */
	KX_DRM_BASIS_CYCLES, /* busy cycles / total cycles */
	KX_DRM_BASIS_FREQ,   /* busy cycles / (maxfreq * interval) */
};

enum kx_drm_kind { KX_DRM_ENGINE = 1, KX_DRM_MEMORY = 2 };

/*
 * One row of a pass: a client's engine over the interval, or its memory in
 * one region at the pass. The record file stores these (io/kxp_drm.h).
 */
struct kx_drm_ev {
	uint64_t ts;          /* the pass, CLOCK_MONOTONIC ns */
	uint64_t interval_ns; /* since the pass before; 0: no earlier pass saw the client */
	uint32_t pid;         /* the process the client was first seen in this pass */
	uint8_t kind;         /* enum kx_drm_kind */
	uint8_t basis;        /* engines: enum kx_drm_basis */
	uint16_t has;         /* engines: KX_DRM_E_*; memory: bits of enum kx_drm_mem */
	uint32_t capacity;    /* engines: identical engines (>= 1) */
	uint32_t pad;
	uint64_t client_id;       /* KX_DRM_NO_CLIENT: none given (then per pid and fd) */
	char comm[16];            /* the process's name */
	char driver[KX_DRM_NAME]; /* drm-driver */
	char pdev[KX_DRM_PDEV];   /* drm-pdev or "" */
	char name[KX_DRM_NAME];   /* the engine or region */
	/* Engines: busy (ns, or cycles with a cycles basis) in the interval, the
	 * kernel's running busy ns total, busy cycles and total cycles in the
	 * interval, maxfreq Hz. Memory: bytes by enum kx_drm_mem. */
	uint64_t v[KX_DRM_MEM_MAX];
};
#define KX_DRM_V_BUSY    0
#define KX_DRM_V_BUSY_NS 1 /* running total, ns (monotonic as the document asks) */
#define KX_DRM_V_CYCLES  2
#define KX_DRM_V_TOTCYC  3
#define KX_DRM_V_MAXFREQ 4

/* An engine row's busy share of the interval, 0..1 per unit of capacity
 * (may exceed 1 slightly where the driver's clock and ours differ); -1 when
 * the row has none (first sight, no usable keys). */
double kx_drm_ev_busy(const struct kx_drm_ev *e);

/* The tracker: clients across passes. */
struct kx_drm_tracker;

struct kx_drm_tracker_stats {
	uint64_t passes;
	uint64_t fds;         /* fdinfo texts given */
	uint64_t dup_clients; /* of them, a client already counted in the pass */
	uint64_t went_back;   /* counters lower than before (the held value was used) */
	uint64_t clients_max; /* clients not kept: the table was full */
	uint64_t bad_lines;   /* parser's bad, summed */
	uint64_t dropped;     /* engines or regions past the maxima */
};

/* NULL when out of memory. max_clients: clients kept at once (0: 4096). */
struct kx_drm_tracker *kx_drm_tracker_new(uint32_t max_clients);
void kx_drm_tracker_free(struct kx_drm_tracker *t);
/* Starts a pass at ts (CLOCK_MONOTONIC ns). */
void kx_drm_tracker_begin(struct kx_drm_tracker *t, uint64_t ts);
/* One fd of process pid (name comm). Returns 1 when counted, 0 when its
 * client was already counted this pass (a dup, a passed fd), -1 when not
 * kept (table full, out of memory). */
int kx_drm_tracker_add(struct kx_drm_tracker *t, uint32_t pid, const char *comm, int fd,
                       const struct kx_drm_fdinfo *f);
/* Ends the pass: the rows of every client seen in it (per client, its
 * engines, then its regions), valid until the next begin. Clients not seen
 * are forgotten. */
const struct kx_drm_ev *kx_drm_tracker_end(struct kx_drm_tracker *t, size_t *n);
const struct kx_drm_tracker_stats *kx_drm_tracker_stats(const struct kx_drm_tracker *t);

#endif /* KX_MODEL_DRMUSAGE_H */
