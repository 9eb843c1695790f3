/*
 * Chrome trace JSON exporter (contract: chrome.h). Owns the JSON layout of a
 * capture for Perfetto, chrome://tracing successors and PyTorch tooling: the
 * buffered writer (plain file, or gzip through user/util/pgz.h in 1 MiB blocks),
 * JSON string escaping, the process/thread/device metadata and the
 * warnings a trace carries.
 *
 * The threads, the first timestamp and each slice's duration (the nesting
 * rule applied) come from the analysis (analysis/analysis.h), as in every
 * other output. One pass over the store streams the events through a 1 MiB
 * buffer, so memory does not grow with the capture; the ioctl events are
 * formatted on worker threads in pieces put back in order (util/fragq.h). Names, categories and
 * device labels are escaped once per distinct (driver, cmd) or (file kind, dev) and cached, per
 * thread. Numbers are formatted by hand: snprintf would dominate the run time.
 *
 * Device timelines (user/analysis/jobs.h): each device pseudo-process gets one
 * thread per ring lane (tid = ring index + 1, + 1000 per extra lane, named
 * after the ring) with an "X" slice per job, a flow arrow ("s" at the
 * submit point inside the submitting ioctl, "f" with "bp":"e" at the job's
 * start, never earlier: analysis/flows.h; id = job index + 1) and
 * "C" counter tracks "in flight" (jobs queued or running) and "memory"
 * (bytes allocated through the device's ioctls).
 */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analysis/fields.h"
#include "analysis/flows.h"
#include "export/chrome.h"
#include "analysis/threadnames.h"
#include "model/drmusage.h"
#include "export/chrome_samples.h"
#include "registry/devices.h"
#include "util/fdio.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/intern.h"
#include "util/json.h"
#include "registry/ioctl_decode.h"
#include "analysis/analysis.h"
#include "util/outfile.h"
#include "util/pgz.h"
#include "util/fragq.h"

#define WBUF_SIZE (1u << 20)
#define EV_ROOM   1024                        /* bytes the fixed part of one event may take */
#define STR_MAX   ((WBUF_SIZE - EV_ROOM) / 6) /* longest string escaped in one go */
/* zlib level 1: JSON this repetitive compresses almost as well as at 6, 3x faster. */
#define GZ_LEVEL 1
/* Device pseudo-processes: real pids stay below 2^22 (pid_max limit). */
#define DEV_PID_BASE  1000000000u
#define MANY_EVENTS   1000000
#define MAX_WARN      (KX_MAX_HOOKS + 16)
#define WARN_LEN      1024
#define MAX_FIELDS    16
#define LANE_TID_STEP 1000 /* tid of lane l of ring r: r + 1 + l * LANE_TID_STEP */

/* ---- buffered writer ---- */

struct wbuf {
	char *buf; /* where events go: own, or the gzip writer's block */
	char *own; /* WBUF_SIZE bytes for plain output */
	size_t len;
	int fd; /* plain output */
	struct kx_pgz *gz;
	int err;              /* errno of the first failure, 0 while fine */
	char zmsg[128];       /* zlib's own message when the failure is not an errno */
	uint64_t bytes;       /* uncompressed bytes written */
	struct kx_bytes *mem; /* instead of fd: a worker's piece, appended here */
};

static void wb_write(struct wbuf *w, const char *p, size_t n)
{
	if (!w->err)
		w->err = kx_write_all(w->fd, p, n);
}

/* Hands the buffer on; last: it ends the output. */
static void wb_flush_end(struct wbuf *w, int last)
{
	w->bytes += w->len;
	if (w->gz && w->err) {
		/* Failed: nothing more to compress, the error is reported at the end. */
	} else if (w->gz && w->buf != w->own) {
		kx_pgz_put(w->gz, w->len, last);
		w->buf = last ? w->own : kx_pgz_next(w->gz);
		if (!w->err)
			w->err = kx_pgz_error(w->gz);
		if (!w->buf) {
			/* Out of memory: events go nowhere until the failure is reported. */
			w->buf = w->own;
			if (!w->err)
				w->err = ENOMEM;
		}
	} else if (w->mem) {
		kx_bytes_put(w->mem, w->buf, w->len);
		if (w->mem->oom && !w->err)
			w->err = ENOMEM;
	} else if (!w->gz) {
		wb_write(w, w->buf, w->len);
	}
	w->len = 0;
}

static void wb_flush(struct wbuf *w)
{
	if (w->len)
		wb_flush_end(w, 0);
}

/* Guarantees n bytes of room (n <= WBUF_SIZE). */
static inline void wb_need(struct wbuf *w, size_t n)
{
	if (WBUF_SIZE - w->len < n)
		wb_flush(w);
}

/* Unchecked appends: the caller made room with wb_need. */
static inline void put_mem(struct wbuf *w, const char *p, size_t n)
{
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}
#define PUT_LIT(w, lit) put_mem(w, lit, sizeof(lit) - 1)

static inline void put_u64(struct wbuf *w, uint64_t v)
{
	w->len = (size_t)(kx_json_put_u64(w->buf + w->len, v) - w->buf);
}

static inline void put_i64(struct wbuf *w, int64_t v)
{
	w->len = (size_t)(kx_json_put_i64(w->buf + w->len, v) - w->buf);
}

/* ns as microseconds with 3 decimals: exact, no floating point. */
static inline void put_us(struct wbuf *w, uint64_t ns)
{
	uint64_t frac = ns % 1000;

	put_u64(w, ns / 1000);
	w->buf[w->len] = '.';
	w->buf[w->len + 1] = (char)('0' + frac / 100);
	w->buf[w->len + 2] = (char)('0' + frac / 10 % 10);
	w->buf[w->len + 3] = (char)('0' + frac % 10);
	w->len += 4;
}

static inline void put_hex(struct wbuf *w, uint64_t v)
{
	static const char digits[] = "0123456789abcdef";
	char tmp[16];
	int i = 16;

	do {
		tmp[--i] = digits[v & 15];
		v >>= 4;
	} while (v);
	PUT_LIT(w, "0x");
	put_mem(w, tmp + i, (size_t)(16 - i));
}

/* ---- JSON strings ---- */

static void wb_strn(struct wbuf *w, const char *s, size_t n)
{
	if (n > STR_MAX)
		n = STR_MAX;
	wb_need(w, KX_JSON_STR_ROOM(n));
	w->len = (size_t)(kx_json_put_str(w->buf + w->len, s, n) - w->buf);
}

static void wb_str(struct wbuf *w, const char *s)
{
	wb_strn(w, s, strlen(s));
}

/* A char array from the capture header, which may lack its terminator. */
static void wb_field(struct wbuf *w, const char *s, size_t size)
{
	wb_strn(w, s, strnlen(s, size));
}

static void wb_lit(struct wbuf *w, const char *s)
{
	size_t n = strlen(s);

	wb_need(w, n);
	put_mem(w, s, n);
}

/* ---- the name and label fragments ---- */

/* Escaped JSON fragments by key, each made once: the text interned
 * (util/intern.h), the key's fragment id in ids. */
struct fragtab {
	struct kx_hmap ids; /* key -> fragment id */
	uint64_t last_key;  /* the key found last (events repeat keys in runs) */
	uint32_t last;      /* 1 + its fragment id; 0: none yet */
};

/* The escaped name and label fragments of a worker's events. */
struct frags {
	struct kx_intern text;
	struct fragtab names;  /* key cmd << 32 | xfer_cmd << 8 | drv */
	struct fragtab labels; /* key dev << 8 | fkind */
};

/* The fragment id of key in t, -1 when not made yet. */
static long frag_find(struct fragtab *t, uint64_t key)
{
	uint32_t *id;

	if (t->last && t->last_key == key)
		return t->last - 1;
	id = kx_hmap_get(&t->ids, key);
	if (!id)
		return -1;
	t->last_key = key;
	t->last = *id + 1;
	return *id;
}

/* text[0..n) as key's fragment in t: its id, or -1 out of memory. */
static long frag_add(struct frags *fr, struct fragtab *t, uint64_t key, const char *text, size_t n)
{
	long id = kx_intern_add(&fr->text, text, n);

	return id < 0 || kx_hmap_add(&t->ids, key, (uint32_t)id) ? -1 : id;
}

static void frags_free(struct frags *fr)
{
	kx_intern_free(&fr->text);
	kx_hmap_free(&fr->names.ids);
	kx_hmap_free(&fr->labels.ids);
}

/* ---- the exporter state ---- */

struct ctx {
	const struct kx_analysis *an;
	const struct kx_store *s;
	const struct kx_capinfo *ci;
	const struct kx_timeline *tl; /* threads, first timestamp, resolved durations */
	int ndev;
	uint64_t first_ts;
	int64_t base_ns; /* baseTimeNanoseconds */
	const struct kx_jobs *jobs;
	uint32_t devpid[KX_MAX_DEVICES]; /* pseudo-process of each capinfo device */
	uint32_t *jobpid;                /* pseudo-process of each job device */
	char warn[MAX_WARN][WARN_LEN];
	int nwarn;
	struct kx_chrome_samples *smp;     /* CPU samples and off-CPU intervals */
	unsigned int flags;                /* KX_CHROME_* */
	struct kx_thread_names names;      /* threads renamed during the capture */
	uint64_t origin_ns;                /* the monotonic time of ts 0 */
	const struct kx_chrome_part *part; /* the time window written; NULL: all */
	struct kx_chrome_part part_copy;   /* part points here */
	uint64_t rem;                      /* ns, first_ts's offset from baseTimeNanoseconds */
	int first;                         /* no event written yet */
	int nwarn_head;                    /* warnings written at the head */
	size_t nadded;                     /* windows added */
	uint64_t not_stored, job_events;   /* sums over the windows added */
};

/* Whether an event starting at ts is in the part written. */
static inline int in_part(const struct ctx *c, uint64_t ts)
{
	return !c->part || (ts >= c->part->from_ns && (!c->part->to_ns || ts < c->part->to_ns));
}

/* ---- warnings ---- */

static void warn_add(struct ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn_add(struct ctx *c, const char *fmt, ...)
{
	va_list ap;

	if (c->nwarn >= MAX_WARN)
		return;
	va_start(ap, fmt);
	vsnprintf(c->warn[c->nwarn], WARN_LEN, fmt, ap);
	va_end(ap);
	/* Each once: the windows of a part may say the same. */
	for (int i = 0; i < c->nwarn; i++)
		if (!strcmp(c->warn[i], c->warn[c->nwarn]))
			return;
	c->nwarn++;
}

static void warn_cb(void *ctx, const char *msg)
{
	warn_add(ctx, "%s", msg);
}

/* The same warnings as the summary, plus what this exporter had to do. */
static int collect_warnings(struct ctx *c)
{
	size_t n = kx_store_ioctl_count(c->s);
	struct kx_flows fl;

	if (kx_flows_build(&fl, c->an))
		return -1;
	kx_analysis_warnings(c->an, warn_cb, c);
	kx_flows_warnings(&fl, warn_cb, c);
	kx_flows_free(&fl);
	if (n > MANY_EVENTS && !c->part)
		warn_add(c,
		         "%zu events: Perfetto and chrome://tracing struggle past ~1M events; "
		         "record less (-p PID, --device, a shorter -d) or use the summary "
		         "(kxprof report)",
		         n);
	return 0;
}

/* ---- output ---- */

static void put_sep(struct wbuf *w, int *first)
{
	if (*first) {
		*first = 0;
		PUT_LIT(w, "\n");
	} else {
		PUT_LIT(w, ",\n");
	}
}

/* Warnings from the from-th on, as events. */
static void write_warn_events(struct wbuf *w, const struct ctx *c, int from, int *first)
{
	for (int i = from; i < c->nwarn; i++) {
		wb_need(w, 64);
		put_sep(w, first);
		/* Global instant at the start of the trace: visible without scrolling. */
		PUT_LIT(w, "{\"ph\":\"i\",\"s\":\"g\",\"ts\":0.000,\"name\":\"kxprof warning\","
		           "\"cat\":\"kxprof\",\"args\":{\"message\":");
		wb_str(w, c->warn[i]);
		wb_lit(w, "}}");
	}
}

static void meta_head(struct wbuf *w, int *first, const char *name, uint32_t pid, uint32_t tid)
{
	wb_need(w, 128);
	put_sep(w, first);
	PUT_LIT(w, "{\"ph\":\"M\",\"name\":\"");
	put_mem(w, name, strlen(name));
	PUT_LIT(w, "\",\"pid\":");
	put_u64(w, pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, tid);
	PUT_LIT(w, ",\"args\":{");
}

static void meta_sort(struct wbuf *w, int *first, uint32_t pid, uint32_t index)
{
	meta_head(w, first, "process_sort_index", pid, 0);
	PUT_LIT(w, "\"sort_index\":");
	put_u64(w, index);
	PUT_LIT(w, "}}");
}

/*
 * Job devices live in their traced device's pseudo-process, else in one of
 * their own; each ring lane is a named thread, sorted by ring.
 */
static void write_job_metadata(struct wbuf *w, struct ctx *c, int *first, uint32_t npids,
                               uint32_t ndevp)
{
	const struct kx_jobs *jb = c->jobs;
	char name[48];

	for (size_t k = 0; jb && k < jb->ndevs; k++) {
		const struct kx_jobdev *jd = &jb->devs[k];
		uint32_t pid;

		if (jd->ci_index >= 0 && jd->ci_index < c->ndev) {
			pid = c->devpid[jd->ci_index];
		} else {
			pid = DEV_PID_BASE + ndevp;
			meta_head(w, first, "process_name", pid, 0);
			PUT_LIT(w, "\"name\":");
			wb_str(w, jd->label);
			wb_lit(w, "}}");
			meta_head(w, first, "process_labels", pid, 0);
			PUT_LIT(w, "\"labels\":\"device\"}}");
			meta_sort(w, first, pid, npids + ndevp);
			ndevp++;
		}
		c->jobpid[k] = pid;
		for (uint32_t r = 0; r < jd->nrings; r++) {
			const struct kx_jobring *rg = &jb->rings[jd->first_ring + r];

			for (uint32_t l = 0; l < rg->nlanes; l++) {
				uint32_t tid = rg->id + 1 + l * LANE_TID_STEP;

				if (l)
					snprintf(name, sizeof(name), "%s #%u", rg->name, l + 1);
				else
					snprintf(name, sizeof(name), "%s", rg->name);
				meta_head(w, first, "thread_name", pid, tid);
				PUT_LIT(w, "\"name\":");
				wb_str(w, name);
				wb_lit(w, "}}");
				meta_head(w, first, "thread_sort_index", pid, tid);
				PUT_LIT(w, "\"sort_index\":");
				put_u64(w, tid);
				PUT_LIT(w, "}}");
			}
		}
	}
}

/*
 * The host threads as pid << 32 | tid, sorted (which groups threads under
 * their process), each once; NULL on OOM. A tid seen with several pids (a
 * reused tid) is a thread of each.
 */
/* The whole capture's threads (a window of it: analysis.h's kx_whole). */
static uint64_t *whole_thread_keys(const struct kx_whole *wh, size_t *nth)
{
	uint64_t *th = malloc((wh->nthreads + 1) * sizeof(*th));

	if (th && wh->nthreads)
		memcpy(th, wh->threads, wh->nthreads * sizeof(*th));
	*nth = wh->nthreads;
	return th;
}

static uint64_t *thread_keys(const struct ctx *c, size_t *nth)
{
	const struct kx_timeline *tl = c->tl;
	const struct kx_ranges *rg = c->an->ranges;
	size_t cap = tl->nthreads + rg->nthreads + 2 * (rg->n - rg->cross_first), n = 0, out = 0;
	uint64_t *th;

	for (size_t i = 0; i < tl->nthreads; i++)
		if (tl->threads[i].mixed_pids)
			cap += tl->threads[i].count;
	th = malloc((cap + 1) * sizeof(*th));
	if (!th)
		return NULL;
	for (size_t i = 0; i < tl->nthreads; i++) {
		const struct kx_tl_thread *t = &tl->threads[i];

		th[n++] = (uint64_t)t->pid << 32 | t->tid;
		for (size_t k = 0; t->mixed_pids && k < t->count; k++)
			th[n++] = (uint64_t)kx_store_ioctl(c->s, tl->order[t->first + k])->pid
			                  << 32 |
			          t->tid;
	}
	/* Threads with annotations only: their ranges, marks and async ends. */
	for (size_t i = 0; i < rg->nthreads; i++)
		th[n++] = (uint64_t)rg->threads[i].pid << 32 | rg->threads[i].tid;
	for (size_t i = rg->cross_first; i < rg->n; i++) {
		th[n++] = (uint64_t)rg->r[i].pid << 32 | rg->r[i].tid;
		if (rg->r[i].end_tid)
			th[n++] = (uint64_t)rg->r[i].pid << 32 | rg->r[i].end_tid;
	}
	kx_sort_u64(th, n);
	for (size_t i = 0; i < n; i++)
		if (!out || th[out - 1] != th[i])
			th[out++] = th[i];
	*nth = out;
	return th;
}

/* Devices i and j are one track: the same driver and node. */
static int same_track(const struct kx_device *a, const struct kx_device *b)
{
	return !strncmp(a->driver, b->driver, sizeof(a->driver)) &&
	       !strncmp(a->node, b->node, sizeof(a->node));
}

/* Whether device i's track holds jobs: a job device on it or on a device of its track. */
static int track_has_jobs(const struct ctx *c, int i)
{
	const struct kx_jobs *jb = c->jobs;

	for (size_t k = 0; jb && k < jb->ndevs; k++) {
		int d = jb->devs[k].ci_index;

		if (d >= 0 && d < c->ndev && same_track(&c->ci->devices[d], &c->ci->devices[i]))
			return 1;
	}
	return 0;
}

/*
 * Process and thread names of the host, then one pseudo-process per device
 * track that holds jobs (a traced device nothing ran on gets no empty track).
 */
static int write_metadata(struct wbuf *w, struct ctx *c, int *first)
{
	const struct kx_capinfo *ci = c->ci;
	uint32_t npids = 0, ndevp = 0;
	size_t nth = 0;
	uint64_t *th = c->an->whole ? whole_thread_keys(c->an->whole, &nth) : thread_keys(c, &nth);
	char buf[32];

	if (!th)
		return -1;
	for (size_t i = 0; i < nth; i++) {
		uint32_t pid = (uint32_t)(th[i] >> 32), tid = (uint32_t)th[i];
		const char *comm;

		if (i == 0 || (uint32_t)(th[i - 1] >> 32) != pid) {
			const char *cmd = kx_store_cmd(c->s, pid);

			comm = kx_store_comm(c->s, pid);
			meta_head(w, first, "process_name", pid, 0);
			PUT_LIT(w, "\"name\":");
			if (cmd) {
				wb_field(w, cmd, KX_CMD_LEN);
			} else if (comm) {
				wb_field(w, comm, KX_COMM_LEN);
			} else {
				snprintf(buf, sizeof(buf), "pid %u", pid);
				wb_str(w, buf);
			}
			wb_lit(w, "}}");
			meta_sort(w, first, pid, npids++);
		}
		comm = kx_store_comm(c->s, tid);
		if (comm) {
			meta_head(w, first, "thread_name", pid, tid);
			PUT_LIT(w, "\"name\":");
			wb_field(w, comm, KX_COMM_LEN);
			wb_lit(w, "}}");
		}
	}
	free(th);

	/* Device tracks: one per driver + node; their events come with ring tracing. */
	for (int i = 0; i < c->ndev; i++) {
		const struct kx_device *d = &ci->devices[i];
		char name[sizeof(d->driver) + sizeof(d->node) + 2];
		int dup = 0, dl = (int)strnlen(d->driver, sizeof(d->driver));
		int nl = (int)strnlen(d->node, sizeof(d->node));
		uint32_t pid = DEV_PID_BASE + ndevp;

		for (int j = 0; j < i && !dup; j++) {
			dup = same_track(&ci->devices[j], d);
			if (dup)
				c->devpid[i] = c->devpid[j];
		}
		if (dup || !track_has_jobs(c, i))
			continue;
		c->devpid[i] = pid;
		/* "kvm /dev/kvm"; the canonical driver name when the kernel's is not known. */
		snprintf(name, sizeof(name), "%.*s%s%.*s", dl ? dl : (int)sizeof(d->driver),
		         dl ? d->driver : kx_driver_name((enum kx_driver)d->drv), nl ? " " : "", nl,
		         d->node);
		meta_head(w, first, "process_name", pid, 0);
		PUT_LIT(w, "\"name\":");
		wb_str(w, name);
		wb_lit(w, "}}");
		meta_head(w, first, "process_labels", pid, 0);
		PUT_LIT(w, "\"labels\":\"device\"}}");
		meta_sort(w, first, pid, npids + ndevp);
		ndevp++;
	}
	write_job_metadata(w, c, first, npids, ndevp);
	return 0;
}

/* `"name":"KVM_RUN","cat":"ioctl/kvm"` of an event, escaped once per command:
 * its fragment id, -1 out of memory. */
static long name_frag(struct frags *fr, const struct kx_ioctl *e)
{
	uint64_t key = (uint64_t)e->cmd << 32 | (uint32_t)e->xfer_cmd << 8 | e->drv;
	enum kx_driver drv = (enum kx_driver)e->drv;
	long id = frag_find(&fr->names, key);
	char nbuf[64], frag[1024], *o;
	const char *name, *dname;

	if (id >= 0)
		return id;
	name = kx_ioctl_name(drv, e->cmd, e->xfer_cmd, nbuf, sizeof(nbuf));
	dname = kx_driver_name(drv);
	/* Names are C identifiers or _IOWR(...) forms; bounds keep frag big enough. */
	o = frag;
	memcpy(o, "\"name\":", 7);
	o = kx_json_put_str(o + 7, name, strnlen(name, 100));
	memcpy(o, ",\"cat\":", 7);
	snprintf(nbuf, sizeof(nbuf), "ioctl/%s", dname);
	o = kx_json_put_str(o + 7, nbuf, strnlen(nbuf, sizeof(nbuf)));
	return frag_add(fr, &fr->names, key, frag, (size_t)(o - frag));
}

/* The device label of an event as a JSON string, escaped once per file: its
 * fragment id, -1 out of memory. */
static long label_frag(const struct ctx *c, struct frags *fr, const struct kx_ioctl *e)
{
	uint64_t key = (uint64_t)e->dev << 8 | e->fkind;
	long id = frag_find(&fr->labels, key);
	char buf[160], esc[KX_JSON_STR_ROOM(sizeof(buf))];

	if (id >= 0)
		return id;
	buf[0] = '\0';
	kx_device_label(c->ci->devices, c->ndev, e->fkind, e->dev, buf, sizeof(buf));
	return frag_add(fr, &fr->labels, key, esc,
	                (size_t)(kx_json_put_str(esc, buf, strnlen(buf, sizeof(buf))) - esc));
}

static int reserved_key(const char *k)
{
	static const char *const keys[] = {"device", "fd", "cmd", "ret", "errno", "cpu"};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(k, keys[i]))
			return 1;
	return 0;
}

/* Decoded argument fields, as more members of the event's args. */
static void write_fields(struct wbuf *w, const struct ctx *c, const struct kx_ioctl *e)
{
	struct kx_field f[MAX_FIELDS];
	int nf = kx_event_fields(c->an, e, f, MAX_FIELDS);
	for (int i = 0; i < nf; i++) {
		wb_lit(w, ",");
		if (reserved_key(f[i].name)) {
			/* Keys stay unique: a field named like a fixed key gets a prefix. */
			char k[64];

			snprintf(k, sizeof(k), "arg_%s", f[i].name);
			wb_str(w, k);
		} else {
			wb_str(w, f[i].name);
		}
		wb_need(w, 64);
		PUT_LIT(w, ":");
		switch (f[i].kind) {
		case KX_FIELD_U64:
			put_u64(w, f[i].u);
			break;
		case KX_FIELD_I64:
			put_i64(w, f[i].i);
			break;
		case KX_FIELD_HEX:
			PUT_LIT(w, "\"");
			put_hex(w, f[i].u);
			PUT_LIT(w, "\"");
			break;
		case KX_FIELD_STR:
			wb_field(w, f[i].s, sizeof(f[i].s));
			break;
		}
	}
}

/* An event of tid at ts (a call, an annotation) made under another name
 * than its thread's track has (before an exec or a rename): that name, in
 * args.thread. */
static void write_thread_name(struct wbuf *w, const struct ctx *c, uint32_t tid, uint64_t ts)
{
	const char *then = kx_thread_name_at(&c->names, tid, ts);
	const char *now = then ? kx_store_comm(c->s, tid) : NULL;

	if (!then || (now && !strncmp(then, now, KX_COMM_LEN)))
		return;
	wb_lit(w, ",\"thread\":");
	wb_field(w, then, KX_COMM_LEN);
}

/* One "X" slice; rel_ns: start relative to baseTimeNanoseconds. */
static int write_event(struct wbuf *w, const struct ctx *c, struct frags *fr,
                       const struct kx_ioctl *e, uint64_t rel_ns, uint64_t dur)
{
	long nm = name_frag(fr, e), lb = label_frag(c, fr, e);
	const struct kx_istr *n, *l;

	if (nm < 0 || lb < 0)
		return -1;
	n = &fr->text.str[nm];
	l = &fr->text.str[lb];
	wb_need(w, EV_ROOM + n->len + l->len);
	PUT_LIT(w, "{\"ph\":\"X\",");
	put_mem(w, n->s, n->len);
	PUT_LIT(w, ",\"pid\":");
	put_u64(w, e->pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, e->tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, rel_ns);
	PUT_LIT(w, ",\"dur\":");
	put_us(w, dur);
	PUT_LIT(w, ",\"args\":{\"device\":");
	put_mem(w, l->s, l->len);
	PUT_LIT(w, ",\"fd\":");
	put_i64(w, e->fd);
	PUT_LIT(w, ",\"cmd\":\"");
	put_hex(w, e->cmd);
	PUT_LIT(w, "\",\"ret\":");
	put_i64(w, e->ret);
	if (e->ret < 0) {
		const char *en = kx_errno_name(e->ret);

		PUT_LIT(w, ",\"errno\":");
		if (en)
			w->len = (size_t)(kx_json_put_str(w->buf + w->len, en, strnlen(en, 32)) -
			                  w->buf);
		else
			put_u64(w, (uint64_t)0 - (uint64_t)e->ret);
	}
	PUT_LIT(w, ",\"cpu\":");
	put_u64(w, kx_ioctl_cpu(e));
	if (e->offcpu_us) {
		/* Time blocked (off-CPU) inside the call. */
		PUT_LIT(w, ",\"offcpu_us\":");
		put_u64(w, e->offcpu_us);
	}
	if (kx_event_has_fields(c->an, e))
		write_fields(w, c, e);
	write_thread_name(w, c, e->tid, e->ts);
	wb_lit(w, "}}");
	return 0;
}

/* ---- device timelines ---- */

/* Moves the time base to the jobs' first event if earlier. */
static int jobs_prepare(struct ctx *c)
{
	const struct kx_jobs *jb = c->jobs;

	c->jobpid = calloc(jb->ndevs + 1, sizeof(*c->jobpid));
	if (!c->jobpid)
		return -1;
	for (size_t k = 0; k < jb->njobs; k++) {
		uint64_t t = kx_jobrec_start(&jb->jobs[k]);

		if (t < c->first_ts)
			c->first_ts = t;
	}
	for (size_t d = 0; d < jb->ndevs; d++) {
		if (jb->devs[d].ndepth && jb->devs[d].depth[0].ts < c->first_ts)
			c->first_ts = jb->devs[d].depth[0].ts;
		if (jb->devs[d].nmem && jb->devs[d].mem[0].ts < c->first_ts)
			c->first_ts = jb->devs[d].mem[0].ts;
	}
	return 0;
}

static const char *job_name(const struct ctx *c, const struct kx_jobrec *j, char *buf, size_t len)
{
	if (j->submit >= 0) {
		const struct kx_ioctl *e = kx_store_ioctl(c->s, (size_t)j->submit);

		return kx_ioctl_name((enum kx_driver)e->drv, e->cmd, e->xfer_cmd, buf, len);
	}
	if (j->src == KX_JOB_SRC_KVM)
		return "KVM_RUN";
	if (j->src == KX_JOB_SRC_BLOCK)
		return j->aux2 == 1 ? "block read" : j->aux2 == 2 ? "block write" : "block other";
	return "job";
}

static void arg_u64(struct wbuf *w, const char *key, uint64_t v)
{
	wb_need(w, 64);
	PUT_LIT(w, ",\"");
	put_mem(w, key, strlen(key));
	PUT_LIT(w, "\":");
	put_u64(w, v);
}

/* One job slice and, when it has a submitting ioctl, its flow arrow. */
static void write_job(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem, size_t k,
                      uint32_t pid)
{
	const struct kx_jobs *jb = c->jobs;
	const struct kx_jobrec *j = &jb->jobs[k];
	const struct kx_jobring *rg = &jb->rings[j->ring];
	uint64_t start = kx_jobrec_start(j), end = kx_jobrec_end(j, jb->end_ns);
	uint32_t tid = rg->id + 1 + j->lane * LANE_TID_STEP;
	struct kx_flow fl;
	char buf[96];

	wb_need(w, 2);
	put_sep(w, first);
	wb_lit(w, "{\"ph\":\"X\",\"name\":");
	wb_str(w, job_name(c, j, buf, sizeof(buf)));
	snprintf(buf, sizeof(buf), "job/%s", kx_job_src_name(j->src));
	wb_lit(w, ",\"cat\":");
	wb_str(w, buf);
	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\"pid\":");
	put_u64(w, pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, start - c->first_ts + rem);
	PUT_LIT(w, ",\"dur\":");
	put_us(w, end - start);
	PUT_LIT(w, ",\"args\":{\"ring\":");
	wb_str(w, rg->name);
	arg_u64(w, j->src == KX_JOB_SRC_BLOCK ? "sector" : "ctx",
	        j->src == KX_JOB_SRC_BLOCK ? j->seqno : j->ctx);
	if (j->src != KX_JOB_SRC_BLOCK)
		arg_u64(w, "seqno", j->seqno);
	if (j->pid)
		arg_u64(w, "submitter_pid", j->pid);
	if (j->tid)
		arg_u64(w, "submitter_tid", j->tid);
	if (j->client)
		arg_u64(w, "client_id", j->client);
	if (j->waiter_tid)
		arg_u64(w, "waiter_tid", j->waiter_tid);
	if (j->src == KX_JOB_SRC_BLOCK)
		arg_u64(w, "bytes", j->aux);
	if (j->src == KX_JOB_SRC_KVM && j->done_ts)
		arg_u64(w, "exit_reason", j->aux);
	if (j->src == KX_JOB_SRC_MSM && j->aux && j->aux2 >= j->aux)
		arg_u64(w, "device_ticks", j->aux2 - j->aux);
	if (j->submit >= 0)
		arg_u64(w, "correlation_id", (uint64_t)j->submit + 1);
	wb_need(w, 96);
	if ((j->queue_ts && j->run_ts && j->src != KX_JOB_SRC_KVM) || (j->flags & KX_JOBF_DIRECT)) {
		PUT_LIT(w, ",\"queue_delay_us\":");
		put_us(w, j->queue_ts && j->run_ts ? j->run_ts - j->queue_ts : 0);
	}
	if (j->flags & KX_JOBF_INCOMPLETE)
		PUT_LIT(w, ",\"incomplete\":true");
	if (j->flags & KX_JOBF_NO_QUEUE)
		PUT_LIT(w, ",\"no_queue\":true");
	PUT_LIT(w, "}}");
	/* The arrow from the submit point to the job's start (analysis/flows.h). */
	if (kx_job_flow(c->an, k, &fl)) {
		const struct kx_ioctl *e = kx_store_ioctl(c->s, (size_t)j->submit);

		/* The start lies inside the ioctl's slice on its thread: it binds there. */
		wb_need(w, EV_ROOM);
		PUT_LIT(w, ",\n{\"ph\":\"s\",\"id\":");
		put_u64(w, k + 1);
		PUT_LIT(w, ",\"name\":\"submit\",\"cat\":\"job\",\"pid\":");
		put_u64(w, e->pid);
		PUT_LIT(w, ",\"tid\":");
		put_u64(w, e->tid);
		PUT_LIT(w, ",\"ts\":");
		put_us(w, fl.from_ns - c->first_ts + rem);
		PUT_LIT(w, "},\n{\"ph\":\"f\",\"bp\":\"e\",\"id\":");
		put_u64(w, k + 1);
		PUT_LIT(w, ",\"name\":\"submit\",\"cat\":\"job\",\"pid\":");
		put_u64(w, pid);
		PUT_LIT(w, ",\"tid\":");
		put_u64(w, tid);
		PUT_LIT(w, ",\"ts\":");
		put_us(w, fl.to_ns - c->first_ts + rem);
		PUT_LIT(w, "}");
	}
}

static void write_counter(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem,
                          uint32_t pid, const char *name, const char *key, uint64_t ts, uint64_t v)
{
	wb_need(w, EV_ROOM);
	put_sep(w, first);
	PUT_LIT(w, "{\"ph\":\"C\",\"name\":\"");
	put_mem(w, name, strlen(name));
	PUT_LIT(w, "\",\"pid\":");
	put_u64(w, pid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, ts - c->first_ts + rem);
	PUT_LIT(w, ",\"args\":{\"");
	put_mem(w, key, strlen(key));
	PUT_LIT(w, "\":");
	put_u64(w, v);
	PUT_LIT(w, "}}");
}

/* Job slices, flows, and the in-flight and memory counters of every device. */
static void write_jobs(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	const struct kx_jobs *jb = c->jobs;

	for (size_t d = 0; d < jb->ndevs && !w->err; d++) {
		const struct kx_jobdev *jd = &jb->devs[d];
		uint32_t pid = c->jobpid[d];

		for (uint32_t r = 0; r < jd->nrings; r++) {
			const struct kx_jobring *rg = &jb->rings[jd->first_ring + r];

			for (size_t k = 0; k < rg->njobs; k++)
				if (in_part(c, kx_jobrec_start(&jb->jobs[rg->first + k])))
					write_job(w, c, first, rem, rg->first + k, pid);
		}
		for (size_t k = 0; k < jd->ndepth; k++)
			if (in_part(c, jd->depth[k].ts))
				write_counter(w, c, first, rem, pid, "in flight", "jobs",
				              jd->depth[k].ts, jd->depth[k].depth);
		for (size_t k = 0; k < jd->nmem; k++)
			if (in_part(c, jd->mem[k].ts))
				write_counter(w, c, first, rem, pid, "memory", "bytes",
				              jd->mem[k].ts, jd->mem[k].usage);
	}
	/* NVIDIA memory per process: counters on the process's own track. */
	for (size_t i = 0; i < jb->nvmem.nprocs && !w->err; i++) {
		const struct kx_nvmem_proc *p = &jb->nvmem.procs[i];

		for (int r = 0; r < KX_NVMEM_NREG; r++)
			for (size_t k = 0; k < p->reg[r].npts; k++)
				if (in_part(c, p->reg[r].pts[k].ts))
					write_counter(w, c, first, rem, p->pid,
					              r == KX_NVMEM_VID ? "nvidia vidmem"
					                                : "nvidia sysmem",
					              "bytes", p->reg[r].pts[k].ts,
					              p->reg[r].pts[k].usage);
	}
}

/* ---- DRM usage (record --drm-usage) ---- */

/* Where a DRM row's counter value starts: its interval's start (a busy
 * share holds over the interval), never before the trace's first ts. */
static uint64_t drm_start(const struct ctx *c, const struct kx_drm_ev *e)
{
	uint64_t t =
	        e->kind == KX_DRM_ENGINE && e->ts > e->interval_ns ? e->ts - e->interval_ns : e->ts;

	return t < c->first_ts ? c->first_ts : t;
}

/* "DRM busy % amdgpu gfx" or "DRM memory amdgpu vram", as a JSON string. */
static void drm_counter_name(struct wbuf *w, const struct kx_drm_ev *e)
{
	char name[16 + 2 * KX_DRM_NAME];

	snprintf(name, sizeof(name), "%s %s %s",
	         e->kind == KX_DRM_ENGINE ? "DRM busy %" : "DRM memory", e->driver, e->name);
	wb_str(w, name);
}

/* Counter tracks per process: each engine's busy % over each interval, and
 * each memory region's bytes at each pass. */
static void write_drm(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	size_t n;
	const struct kx_drm_ev *r = kx_store_drm(c->s, &n);

	for (size_t i = 0; i < n && !w->err; i++) {
		const struct kx_drm_ev *e = &r[i];
		double share = kx_drm_ev_busy(e);
		uint64_t ts = drm_start(c, e);
		char v[32];

		if ((e->kind == KX_DRM_ENGINE && share < 0) || !in_part(c, ts))
			continue;
		wb_need(w, EV_ROOM);
		put_sep(w, first);
		PUT_LIT(w, "{\"ph\":\"C\",\"name\":");
		drm_counter_name(w, e);
		PUT_LIT(w, ",\"pid\":");
		put_u64(w, e->pid);
		PUT_LIT(w, ",\"ts\":");
		put_us(w, ts - c->first_ts + rem);
		if (e->kind == KX_DRM_ENGINE) {
			snprintf(v, sizeof(v), "%.2f", share * 100);
			PUT_LIT(w, ",\"args\":{\"busy\":");
			put_mem(w, v, strlen(v));
		} else {
			PUT_LIT(w, ",\"args\":{\"resident\":");
			put_u64(w, e->v[KX_DRM_MEM_RESIDENT]);
			PUT_LIT(w, ",\"total\":");
			put_u64(w, e->v[KX_DRM_MEM_TOTAL]);
		}
		PUT_LIT(w, "}}");
	}
}

/* The first DRM row's start, UINT64_MAX when none. */
static uint64_t drm_first_ts(const struct kx_store *s)
{
	size_t n;
	const struct kx_drm_ev *r = kx_store_drm(s, &n);
	uint64_t t = UINT64_MAX;

	for (size_t i = 0; i < n; i++) {
		uint64_t st = r[i].kind == KX_DRM_ENGINE && r[i].ts > r[i].interval_ns
		                      ? r[i].ts - r[i].interval_ns
		                      : r[i].ts;

		if (kx_drm_ev_busy(&r[i]) >= 0 || r[i].kind == KX_DRM_MEMORY)
			t = st < t ? st : t;
	}
	return t;
}

/* Text of the sample writer, in pieces of any size. */
static void put_text(void *ctx, const char *p, size_t n)
{
	struct wbuf *w = ctx;

	while (n) {
		size_t k = n < WBUF_SIZE / 2 ? n : WBUF_SIZE / 2;

		wb_need(w, k);
		put_mem(w, p, k);
		p += k;
		n -= k;
	}
}

/* ---- annotations ---- */

/* The start of an annotation event: phase, name, category, pid, tid, ts. */
static void ann_head(struct wbuf *w, const struct ctx *c, int *first, const char *ph,
                     const struct kx_range *r, uint32_t tid, uint64_t rel_ns)
{
	wb_need(w, 64);
	put_sep(w, first);
	PUT_LIT(w, "{\"ph\":\"");
	put_mem(w, ph, strlen(ph));
	PUT_LIT(w, "\",\"name\":");
	wb_str(w, kx_store_ann_str(c->an->ranges->strings, r->name));
	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\"cat\":\"annotation\",\"pid\":");
	put_u64(w, r->pid);
	PUT_LIT(w, ",\"tid\":");
	put_u64(w, tid);
	PUT_LIT(w, ",\"ts\":");
	put_us(w, rel_ns);
}

/* The args of an annotation: its category, what it holds, whether it stayed open. */
static void ann_args(struct wbuf *w, const struct ctx *c, const struct kx_range *r)
{
	const char *cat = kx_store_ann_str(c->an->ranges->strings, r->cat);

	wb_need(w, EV_ROOM);
	PUT_LIT(w, ",\"args\":{\"depth\":");
	put_u64(w, r->depth);
	if (r->kind == KX_RANGE_THREAD) {
		PUT_LIT(w, ",\"ioctls\":");
		put_u64(w, r->ioctls);
	}
	if (r->jobs) {
		PUT_LIT(w, ",\"device_jobs\":");
		put_u64(w, r->jobs);
		PUT_LIT(w, ",\"device_us\":");
		put_us(w, r->device_ns);
	}
	if (r->kind == KX_RANGE_CROSS) {
		PUT_LIT(w, ",\"range_id\":");
		put_u64(w, r->id);
	}
	write_thread_name(w, c, r->tid, r->begin);
	if (r->open)
		PUT_LIT(w, ",\"open\":true");
	if (cat[0]) {
		wb_lit(w, ",\"category\":");
		wb_str(w, cat);
	}
	wb_lit(w, "}}");
}

/*
 * Thread ranges as "X" slices on their thread (the ioctls they hold nest
 * under them), marks as thread-scoped instants, cross-thread ranges as
 * async "b"/"e" pairs (id: the range's index + 1, on the threads that
 * started and ended them).
 */
static void write_annotations(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	const struct kx_ranges *rg = c->an->ranges;

	for (size_t i = 0; i < rg->n && !w->err; i++) {
		const struct kx_range *r = &rg->r[i];
		uint64_t rel = r->begin - c->first_ts + rem;

		if (!in_part(c, r->begin))
			continue;
		if (r->kind == KX_RANGE_MARK) {
			ann_head(w, c, first, "i", r, r->tid, rel);
			PUT_LIT(w, ",\"s\":\"t\"");
			ann_args(w, c, r);
			continue;
		}
		if (r->kind == KX_RANGE_THREAD) {
			ann_head(w, c, first, "X", r, r->tid, rel);
			PUT_LIT(w, ",\"dur\":");
			put_us(w, r->dur);
			ann_args(w, c, r);
			continue;
		}
		ann_head(w, c, first, "b", r, r->tid, rel);
		PUT_LIT(w, ",\"id\":");
		put_u64(w, i + 1);
		ann_args(w, c, r);
		ann_head(w, c, first, "e", r, r->end_tid ? r->end_tid : r->tid, rel + r->dur);
		PUT_LIT(w, ",\"id\":");
		put_u64(w, i + 1);
		wb_lit(w, "}");
	}
}

/* otherData.part: which part of a split capture this file holds. */
static void write_part(struct wbuf *w, const struct kx_chrome_part *p)
{
	wb_need(w, 256);
	PUT_LIT(w, ",\"part\":{\"index\":");
	put_u64(w, p->index);
	PUT_LIT(w, ",\"count\":");
	put_u64(w, p->count);
	PUT_LIT(w, ",\"from_mono_ns\":");
	put_u64(w, p->from_ns);
	PUT_LIT(w, ",\"to_mono_ns\":");
	if (p->to_ns)
		put_u64(w, p->to_ns);
	else
		PUT_LIT(w, "null");
	PUT_LIT(w, ",\"events\":");
	put_u64(w, p->events);
	PUT_LIT(w, "}");
}

static int write_tail(struct wbuf *w, const struct ctx *c)
{
	const struct kx_capinfo *ci = c->ci;
	uint64_t not_stored = ci->not_stored;
	char mech[sizeof(ci->hooks[0].mech) + sizeof(ci->hooks[0].why) + 8];

	if (c->not_stored > not_stored)
		not_stored = c->not_stored;
	wb_lit(w, "\n],\n");
	if ((c->flags & KX_CHROME_STACKS) &&
	    kx_chrome_samples_members(c->smp, c->origin_ns, put_text, w))
		return -1;
	wb_lit(w, "\"displayTimeUnit\":\"ms\",\n\"schemaVersion\":1,\n"
	          "\"baseTimeNanoseconds\":");
	wb_need(w, 32);
	put_i64(w, c->base_ns);
	wb_lit(w, ",\n\"otherData\":{\"host\":");
	wb_field(w, ci->hostname, sizeof(ci->hostname));
	wb_lit(w, ",\"kernel\":");
	wb_field(w, ci->kernel, sizeof(ci->kernel));
	wb_lit(w, ",\"cmdline\":");
	wb_field(w, ci->cmdline, sizeof(ci->cmdline));
	wb_lit(w, ",\"ioctl_hooks\":");
	if (kx_capinfo_ioctl_mech(ci, mech, sizeof(mech)))
		wb_str(w, mech);
	else
		wb_lit(w, "null");
	wb_need(w, 160);
	PUT_LIT(w, ",\"ioctl_events\":");
	put_u64(w, c->an->whole ? c->an->whole->ioctls : kx_store_ioctl_count(c->s));
	PUT_LIT(w, ",\"dropped_events\":");
	put_u64(w, ci->dropped);
	PUT_LIT(w, ",\"not_stored_events\":");
	put_u64(w, not_stored);
	PUT_LIT(w, ",\"job_events\":");
	put_u64(w, c->job_events);
	PUT_LIT(w, ",\"jobs\":");
	put_u64(w, c->jobs ? c->jobs->njobs : 0);
	PUT_LIT(w, ",\"dropped_job_events\":");
	put_u64(w, ci->job_dropped);
	PUT_LIT(w, ",\"annotation_events\":");
	put_u64(w, c->an->ranges->events);
	PUT_LIT(w, ",\"dropped_annotation_events\":");
	put_u64(w, ci->ann.dropped);
	PUT_LIT(w, ",\"warnings\":[");
	for (int i = 0; i < c->nwarn; i++) {
		if (i)
			wb_lit(w, ",");
		wb_str(w, c->warn[i]);
	}
	wb_lit(w, "]");
	if (c->part)
		write_part(w, c->part);
	wb_lit(w, "}\n}\n");
	return 0;
}

/*
 * The ioctl events, formatted on worker threads in pieces of PIECE_EVENTS,
 * put back in order by the ordered fragment pipeline (util/fragq.h): the
 * same bytes for any thread count. Each worker keeps its own name and label
 * fragments.
 */
#define PIECE_EVENTS 4096 /* about 600 KB of JSON */

struct piece {
	size_t from, to; /* store indexes */
};

struct worker {
	struct frags fr;
	char *buf; /* WBUF_SIZE bytes: a piece's events on their way to its bytes */
};

struct pieces {
	const struct ctx *c;
	struct wbuf *w; /* the output */
	int *first;
	uint64_t rem;
};

static void *worker_new(void *arg)
{
	struct worker *wk = calloc(1, sizeof(*wk));

	(void)arg;
	if (wk && !(wk->buf = malloc(WBUF_SIZE))) {
		free(wk);
		return NULL;
	}
	return wk;
}

static void worker_free(void *wctx, void *arg)
{
	struct worker *wk = wctx;

	(void)arg;
	if (!wk)
		return;
	frags_free(&wk->fr);
	free(wk->buf);
	free(wk);
}

/* A piece's events, each led by ",\n", into out. */
static int piece_encode(const void *desc, struct kx_bytes *out, void *wctx, void *arg)
{
	const struct piece *p = desc;
	const struct pieces *ps = arg;
	const struct ctx *c = ps->c;
	struct worker *wk = wctx;
	struct wbuf w = {.buf = wk->buf, .own = wk->buf, .fd = -1, .mem = out};

	for (size_t i = p->from; i < p->to && !w.err;) {
		size_t run;
		const struct kx_ioctl *e = kx_store_ioctl_run(c->s, i, &run);

		if (run > p->to - i)
			run = p->to - i;
		for (size_t k = 0; k < run && !w.err; k++, e++) {
			if (!in_part(c, e->ts))
				continue;
			wb_need(&w, 2);
			PUT_LIT(&w, ",\n");
			if (write_event(&w, c, &wk->fr, e, e->ts - c->first_ts + ps->rem,
			                kx_timeline_dur(c->tl, i + k, e->dur)))
				w.err = ENOMEM;
		}
		i += run ? run : 1;
	}
	wb_flush(&w);
	return w.err;
}

/* The pieces' bytes into the output, in order, cut into blocks of WBUF_SIZE;
 * the first event's comma left out. */
static int piece_emit(const uint8_t *b, size_t n, void *arg)
{
	const struct pieces *ps = arg;
	struct wbuf *w = ps->w;

	if (n && *ps->first) {
		*ps->first = 0;
		b++;
		n--;
	}
	while (n && !w->err) {
		size_t k = WBUF_SIZE - w->len;

		if (!k) {
			wb_flush(w);
			continue;
		}
		k = n < k ? n : k;
		put_mem(w, (const char *)b, k);
		b += k;
		n -= k;
	}
	return w->err;
}

static int write_ioctls(struct wbuf *w, const struct ctx *c, int *first, uint64_t rem)
{
	static const struct kx_fragq_ops ops = {
	        .encode = piece_encode,
	        .emit = piece_emit,
	        .wctx_new = worker_new,
	        .wctx_free = worker_free,
	};
	size_t n = kx_store_ioctl_count(c->s);
	struct pieces ps = {c, w, first, rem};
	struct kx_fragq *q;
	int err = 0;

	if (!n)
		return 0;
	q = kx_fragq_new((n + PIECE_EVENTS - 1) / PIECE_EVENTS, sizeof(struct piece), &ops, &ps);
	if (!q)
		return -1;
	for (size_t from = 0; from < n && !err; from += PIECE_EVENTS) {
		struct piece p = {from, n - from > PIECE_EVENTS ? from + PIECE_EVENTS : n};

		err = kx_fragq_piece(q, &p);
	}
	err = kx_fragq_end(q);
	if (err && !w->err)
		w->err = err;
	return w->err == ENOMEM ? -1 : 0;
}

/* The head: the time base, the warnings, the metadata. */
static int write_head(struct wbuf *w, struct ctx *c)
{
	int64_t first_rt, rem;

	first_rt = kx_capinfo_realtime(c->ci, c->first_ts != UINT64_MAX ? c->first_ts
	                                                                : c->ci->start_mono_ns);
	/* Rounded down to a microsecond; ts are then exact offsets from it. */
	rem = first_rt % 1000;
	if (rem < 0)
		rem += 1000;
	c->base_ns = first_rt - rem;
	c->rem = (uint64_t)rem;
	wb_lit(w, "{\"traceEvents\":[");
	write_warn_events(w, c, 0, &c->first);
	c->nwarn_head = c->nwarn;
	return write_metadata(w, c, &c->first);
}

/* After the ioctls: the warnings the later windows added, the device
 * tracks, annotations and samples of the part, the tail. */
static int write_end(struct wbuf *w, struct ctx *c)
{
	write_warn_events(w, c, c->nwarn_head, &c->first);
	if (c->jobs)
		write_jobs(w, c, &c->first, c->rem);
	write_annotations(w, c, &c->first, c->rem);
	write_drm(w, c, &c->first, c->rem);
	c->origin_ns = c->first_ts - c->rem;
	if (kx_chrome_samples_events(c->smp, c->origin_ns, &c->first, put_text, w) ||
	    write_tail(w, c))
		return -1;
	wb_flush_end(w, 1);
	return 0;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

struct kx_chrome_writer {
	struct wbuf w;
	struct ctx c;
	const char *path;
};

/* The exporter's view of a window's analysis. */
static void bind(struct ctx *c, const struct kx_analysis *an)
{
	c->an = an;
	c->s = an->store;
	c->ci = an->ci;
	c->tl = an->timeline;
	c->jobs = an->jobs;
	kx_chrome_samples_rebind(c->smp, an);
}

void kx_chrome_writer_free(struct kx_chrome_writer *cw)
{
	if (!cw)
		return;
	kx_pgz_free(cw->w.gz);
	free(cw->w.own);
	free(cw->c.jobpid);
	kx_chrome_samples_free(cw->c.smp);
	kx_thread_names_free(&cw->c.names);
	free(cw);
}

/* The writer's state for an, before anything is written. 0, or -1 (err set). */
static int writer_init(struct kx_chrome_writer *cw, const struct kx_analysis *an,
                       const struct kx_chrome_part *part, unsigned int flags, char *err,
                       size_t errlen)
{
	struct ctx *c = &cw->c;

	bind(c, an);
	c->flags = flags;
	c->part = part ? &cw->c.part_copy : NULL;
	if (part)
		c->part_copy = *part;
	c->first = 1;
	c->first_ts = an->whole ? an->whole->first_ts : c->tl->first_ts;
	if (an->ranges->first_ts < c->first_ts)
		c->first_ts = an->ranges->first_ts;
	if (drm_first_ts(c->s) < c->first_ts)
		c->first_ts = drm_first_ts(c->s);
	c->ndev = c->ci->ndevices < KX_MAX_DEVICES ? (int)c->ci->ndevices : KX_MAX_DEVICES;
	if (jobs_prepare(c) || collect_warnings(c) || kx_thread_names_build(&c->names, an->store)) {
		snprintf(err, errlen, "%s: out of memory", cw->path);
		return -1;
	}
	c->smp = kx_chrome_samples_new(an, err, errlen);
	if (!c->smp)
		return -1;
	if (part)
		kx_chrome_samples_window(c->smp, part->from_ns, part->to_ns);
	if (kx_chrome_samples_first_ts(c->smp) < c->first_ts)
		c->first_ts = kx_chrome_samples_first_ts(c->smp);
	return 0;
}

/* The writer's output: o's file, through gzip when its name ends in .gz. */
static int writer_output(struct kx_chrome_writer *cw, struct kx_outfile *o, char *err,
                         size_t errlen)
{
	cw->w.fd = o->fd;
	cw->w.buf = cw->w.own;
	if (!o->to_stdout && ends_with(cw->path, ".gz")) {
		cw->w.gz = kx_pgz_new(cw->w.fd, GZ_LEVEL);
		cw->w.buf = cw->w.gz ? kx_pgz_next(cw->w.gz) : NULL;
		if (!cw->w.buf) {
			snprintf(err, errlen, "%s: out of memory", cw->path);
			return -1;
		}
	}
	return 0;
}

struct kx_chrome_writer *kx_chrome_open(const struct kx_analysis *an,
                                        const struct kx_chrome_part *part, unsigned int flags,
                                        struct kx_outfile *o, char *err, size_t errlen)
{
	struct kx_chrome_writer *cw = calloc(1, sizeof(*cw));

	if (!cw || !(cw->w.own = malloc(WBUF_SIZE))) {
		snprintf(err, errlen, "%s: out of memory", o->path);
		free(cw);
		return NULL;
	}
	cw->path = o->path;
	if (writer_init(cw, an, part, flags, err, errlen) || writer_output(cw, o, err, errlen))
		goto fail;
	if (write_head(&cw->w, &cw->c)) {
		snprintf(err, errlen, "%s: out of memory", cw->path);
		goto fail;
	}
	return cw;
fail:
	kx_chrome_writer_free(cw);
	return NULL;
}

/* The output's failure, in err: -1. */
static int write_error(const struct kx_chrome_writer *cw, char *err, size_t errlen)
{
	const struct wbuf *w = &cw->w;

	if (w->zmsg[0])
		snprintf(err, errlen, "write %s: %s", cw->path, w->zmsg);
	else
		snprintf(err, errlen, "write %s: %s%s", cw->path, strerror(w->err),
		         w->err == ENOSPC ? " (free some space or write elsewhere)" : "");
	return -1;
}

int kx_chrome_add(struct kx_chrome_writer *cw, const struct kx_analysis *an, char *err,
                  size_t errlen)
{
	struct ctx *c = &cw->c;

	bind(c, an);
	if ((c->nadded && collect_warnings(c)) || write_ioctls(&cw->w, c, &c->first, c->rem)) {
		snprintf(err, errlen, "%s: out of memory", cw->path);
		return -1;
	}
	c->nadded++;
	c->not_stored += kx_store_not_stored(an->store);
	c->job_events += kx_store_job_count(an->store);
	/* A write that failed fails the part now, not after its last window. */
	return cw->w.err ? write_error(cw, err, errlen) : 0;
}

int kx_chrome_close(struct kx_chrome_writer *cw, const struct kx_analysis *an, char *err,
                    size_t errlen)
{
	struct wbuf *w = &cw->w;
	int oom;

	bind(&cw->c, an);
	oom = write_end(w, &cw->c) != 0;
	if (w->gz) {
		char zmsg[128];
		int zerr = 0;

		zmsg[0] = '\0';
		if (kx_pgz_finish(w->gz, &zerr, zmsg, sizeof(zmsg)) && !w->err) {
			w->err = zerr ? zerr : EIO;
			if (!zerr)
				snprintf(w->zmsg, sizeof(w->zmsg), "%s", zmsg);
		}
	}
	if (oom) {
		snprintf(err, errlen, "%s: out of memory", cw->path);
		return -1;
	}
	return w->err ? write_error(cw, err, errlen) : 0;
}

int kx_chrome_write_to(const struct kx_analysis *an, struct kx_outfile *o, char *err, size_t errlen)
{
	return kx_chrome_write_part(an, NULL, 0, o, err, errlen);
}

int kx_chrome_write_part(const struct kx_analysis *an, const struct kx_chrome_part *part,
                         unsigned int flags, struct kx_outfile *o, char *err, size_t errlen)
{
	struct kx_chrome_writer *cw = kx_chrome_open(an, part, flags, o, err, errlen);
	int rc;

	if (!cw)
		return -1;
	rc = kx_chrome_add(cw, an, err, errlen) || kx_chrome_close(cw, an, err, errlen) ? -1 : 0;
	kx_chrome_writer_free(cw);
	return rc;
}

int kx_chrome_write(const struct kx_analysis *an, const char *path, char *err, size_t errlen)
{
	struct kx_outfile o;

	/* A temporary file renamed into place when complete: a failed or
	 * interrupted write leaves no partial trace and the previous file. */
	if (kx_outfile_open(&o, path, KX_OUT_STDOUT, err, errlen))
		return -1;
	if (kx_chrome_write_to(an, &o, err, errlen)) {
		kx_outfile_abort(&o);
		return -1;
	}
	return kx_outfile_commit(&o, err, errlen);
}
