/*
 * The metadata events of a Chrome trace (see chrome_int.h): each host
 * process's name (its command line, else its comm) and sort index, each
 * thread's name; one pseudo-process per device track that holds jobs (pid
 * DEV_PID_BASE + n, labelled "device"), and in it one thread per ring lane
 * (tid = ring index + 1, + LANE_TID_STEP per extra lane, named after the
 * ring).
 */
#include <stdio.h>
#include <stdlib.h>

#include "export/chrome_int.h"
#include "registry/ioctl_decode.h"
#include "util/hist.h"

static void meta_head(struct wbuf *w, int *first, const char *name, uint32_t pid, uint32_t tid)
{
	wb_need(w, 128);
	wb_sep(w, first);
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

/* A device pseudo-process: its name, its "device" label, its place. */
static void device_process(struct wbuf *w, int *first, uint32_t pid, const char *name,
                           uint32_t index)
{
	meta_head(w, first, "process_name", pid, 0);
	PUT_LIT(w, "\"name\":");
	wb_str(w, name);
	wb_lit(w, "}}");
	meta_head(w, first, "process_labels", pid, 0);
	PUT_LIT(w, "\"labels\":\"device\"}}");
	meta_sort(w, first, pid, index);
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
			device_process(w, first, pid, jd->label, npids + ndevp);
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

/* Process and thread names of the host: the number of processes, -1 out of memory. */
static long write_host_names(struct wbuf *w, struct ctx *c, int *first)
{
	uint32_t npids = 0;
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
	return npids;
}

/* Device tracks: one per driver + node that holds jobs (their events come
 * with ring tracing), sorted after the npids host processes; how many. */
static uint32_t write_device_tracks(struct wbuf *w, struct ctx *c, int *first, uint32_t npids)
{
	const struct kx_capinfo *ci = c->ci;
	uint32_t ndevp = 0;

	for (int i = 0; i < c->ndev; i++) {
		const struct kx_device *d = &ci->devices[i];
		char name[sizeof(d->driver) + sizeof(d->node) + 2];
		int dup = 0, dl = (int)strnlen(d->driver, sizeof(d->driver));
		int nl = (int)strnlen(d->node, sizeof(d->node));

		for (int j = 0; j < i && !dup; j++) {
			dup = same_track(&ci->devices[j], d);
			if (dup)
				c->devpid[i] = c->devpid[j];
		}
		if (dup || !track_has_jobs(c, i))
			continue;
		c->devpid[i] = DEV_PID_BASE + ndevp;
		/* "kvm /dev/kvm"; the canonical driver name when the kernel's is not known. */
		snprintf(name, sizeof(name), "%.*s%s%.*s", dl ? dl : (int)sizeof(d->driver),
		         dl ? d->driver : kx_driver_name((enum kx_driver)d->drv), nl ? " " : "", nl,
		         d->node);
		device_process(w, first, c->devpid[i], name, npids + ndevp);
		ndevp++;
	}
	return ndevp;
}

/*
 * Process and thread names of the host, then one pseudo-process per device
 * track that holds jobs (a traced device nothing ran on gets no empty track).
 */
int cr_write_metadata(struct wbuf *w, struct ctx *c, int *first)
{
	long npids = write_host_names(w, c, first);

	if (npids < 0)
		return -1;
	write_job_metadata(w, c, first, (uint32_t)npids,
	                   write_device_tracks(w, c, first, (uint32_t)npids));
	return 0;
}
