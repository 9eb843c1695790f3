/*
 * Chrome trace JSON exporter (contract: chrome.h). Owns the writer: its
 * output (a plain file, or gzip through util/pgz.h in 1 MiB blocks, at
 * level GZ_LEVEL), the trace's time base, head (warnings, metadata) and
 * tail (otherData: capture header, totals, warnings, the part), and the
 * windows a part is written from. The parts of the trace: chrome_int.h.
 *
 * The threads, the first timestamp and each slice's duration (the nesting
 * rule applied) come from the analysis (analysis/analysis.h), as in every
 * other output. One pass over the store streams the events through a 1 MiB
 * buffer (chrome_json.h), so memory does not grow with the capture.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/chrome.h"
#include "export/chrome_int.h"
#include "util/outfile.h"

/* zlib level 1: JSON this repetitive compresses almost as well as at 6, 3x faster. */
#define GZ_LEVEL 1

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

/* otherData's totals: events written, dropped, not stored; jobs, annotations. */
static void write_totals(struct wbuf *w, const struct ctx *c)
{
	const struct kx_capinfo *ci = c->ci;
	uint64_t not_stored = ci->not_stored;

	if (c->not_stored > not_stored)
		not_stored = c->not_stored;
	wb_need(w, 160);
	PUT_LIT(w, ",\"ioctl_events\":");
	put_u64(w, c->an->whole ? c->an->whole->ioctls : kx_store_ioctl_count(c->s));
	PUT_LIT(w, ",\"dropped_events\":");
	put_u64(w, ci->dropped);
	PUT_LIT(w, ",\"not_stored_events\":");
	put_u64(w, not_stored);
	PUT_LIT(w, ",\"job_events\":");
	put_u64(w, c->an->jview ? c->an->jview->job_events : c->job_events);
	PUT_LIT(w, ",\"jobs\":");
	put_u64(w, c->an->jview ? c->an->jview->njobs : c->jobs ? c->jobs->njobs : 0);
	PUT_LIT(w, ",\"dropped_job_events\":");
	put_u64(w, ci->job_dropped);
	PUT_LIT(w, ",\"annotation_events\":");
	put_u64(w, c->an->ranges->events);
	PUT_LIT(w, ",\"dropped_annotation_events\":");
	put_u64(w, ci->ann.dropped);
}

/* After the events: the samples' members, the time base, otherData. */
static void write_tail(struct wbuf *w, const struct ctx *c)
{
	const struct kx_capinfo *ci = c->ci;
	char mech[sizeof(ci->hooks[0].mech) + sizeof(ci->hooks[0].why) + 8];

	wb_lit(w, "\n],\n");
	if (c->flags & KX_CHROME_STACKS)
		kx_chrome_samples_members(c->smp, c->origin_ns, w);
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
	write_totals(w, c);
	cr_write_warn_list(w, c);
	if (c->part)
		write_part(w, c->part);
	wb_lit(w, "}\n}\n");
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
	cr_write_warn_events(w, c, 0, &c->first);
	c->nwarn_head = c->nwarn;
	return cr_write_metadata(w, c, &c->first);
}

/* After the ioctls: the warnings the later windows added, the device
 * tracks, annotations and samples of the part, the tail. */
static void write_end(struct wbuf *w, struct ctx *c)
{
	cr_write_warn_events(w, c, c->nwarn_head, &c->first);
	if (c->jobs)
		cr_write_jobs(w, c, &c->first, c->rem);
	cr_write_annotations(w, c, &c->first, c->rem);
	cr_write_drm(w, c, &c->first, c->rem);
	c->origin_ns = c->first_ts - c->rem;
	kx_chrome_samples_events(c->smp, c->origin_ns, &c->first, w);
	write_tail(w, c);
	wb_flush_end(w, 1);
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
	if (cr_drm_first_ts(c->s) < c->first_ts)
		c->first_ts = cr_drm_first_ts(c->s);
	c->ndev = c->ci->ndevices < KX_MAX_DEVICES ? (int)c->ci->ndevices : KX_MAX_DEVICES;
	if (cr_jobs_prepare(c) || cr_collect_warnings(c) ||
	    kx_thread_names_build(&c->names, an->store)) {
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
	if (!o->to_stdout && wb_gz_path(cw->path)) {
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
	if ((c->nadded && cr_collect_warnings(c)) ||
	    cr_write_ioctls(&cw->w, c, &c->first, c->rem)) {
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

	bind(&cw->c, an);
	write_end(w, &cw->c);
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
