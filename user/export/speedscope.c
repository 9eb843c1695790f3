/*
 * speedscope file format (contract: speedscope.h): the threads of the
 * capture gathered from its timeline, ranges and samples; the frame table
 * filled as each profile is written; the file made in memory and written
 * through util/outfile.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "analysis/ranges.h"
#include "analysis/timeline.h"
#include "export/speedscope.h"
#include "model/perfdata.h"
#include "registry/ioctl_decode.h"
#include "util/grow.h"
#include "util/intern.h"
#include "util/json.h"
#include "util/lbound.h"
#include "util/outfile.h"

#define SCHEMA "https://www.speedscope.app/file-format-schema.json"

/* The shared frame table: each (name, file) once, interned as "name\0file". */
struct frames {
	struct kx_intern v;
	struct kx_bytes key; /* the key being looked up */
};

/* A thread of the capture. */
struct thr {
	uint32_t pid, tid;
};

/* An interval of a thread's evented profile. */
struct span {
	uint64_t start, dur; /* ns, CLOCK_MONOTONIC */
	uint32_t frame;      /* index in the frame table */
	uint8_t rank; /* at equal start and length, the lower encloses: range, ioctl, off-CPU */
};

enum { RANK_RANGE, RANK_IOCTL, RANK_OFFCPU };

/* A sample of the store, in the order the profiles list them. */
struct skey {
	uint64_t ts; /* ns */
	size_t i;    /* its index in the store's samples */
	uint32_t tid;
};

struct writer {
	const struct kx_analysis *an;
	const struct kx_store *s;
	FILE *f;
	struct frames fr;
	struct kx_profile *prof[2]; /* CPU, off-CPU */
	uint32_t *map[2];           /* per profile frame: its index in the frame table */
	uint64_t origin;            /* ns, the capture's first event: time 0 */
	struct span *sp;            /* the spans of the thread being written */
	size_t nsp, spcap;
	struct skey *smp; /* every sample, by thread and time */
	size_t nsmp;
	size_t from, to; /* the thread being written: its samples smp[from .. to) */
	uint32_t *names; /* the names a thread's samples were taken under, so far */
	size_t names_cap;
	int nprofiles; /* written so far */
	int oom;
};

/* The index of frame (name, file), added when new; -1 out of memory. */
static long frame_of(struct frames *fs, const char *name, const char *file)
{
	size_t nl, fl;
	uint8_t *d;

	name = name ? name : "";
	file = file ? file : "";
	nl = strlen(name);
	fl = strlen(file);
	fs->key.len = 0;
	d = kx_bytes_room(&fs->key, nl + fl + 1);
	if (!d)
		return -1;
	memcpy(d, name, nl);
	d[nl] = '\0';
	memcpy(d + nl + 1, file, fl);
	return kx_intern_add(&fs->v, (const char *)d, nl + 1 + fl);
}

static void frames_free(struct frames *fs)
{
	kx_intern_free(&fs->v);
	free(fs->key.p);
}

/* ---- the threads ---- */

static int by_tid(const void *pa, const void *pb)
{
	const struct thr *a = pa, *b = pb;

	return a->tid < b->tid ? -1 : a->tid > b->tid;
}

static int by_pid_tid(const void *pa, const void *pb)
{
	const struct thr *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return by_tid(pa, pb);
}

static int add_thr(struct thr **v, size_t *n, size_t *cap, uint32_t pid, uint32_t tid)
{
	if (kx_grow((void **)v, cap, *n, sizeof(**v)))
		return -1;
	(*v)[(*n)++] = (struct thr){pid, tid};
	return 0;
}

/* Every thread with ioctls, ranges or samples, once, by process and thread. */
static struct thr *threads_of(const struct writer *w, size_t *count)
{
	const struct kx_timeline *tl = w->an->timeline;
	const struct kx_ranges *rg = w->an->ranges;
	const struct kx_samples *t = kx_store_samples(w->s);
	size_t n = 0, cap = 0, m = 0;
	struct thr *v = NULL;
	int oom = 0;

	for (size_t i = 0; i < tl->nthreads && !oom; i++)
		oom = add_thr(&v, &n, &cap, tl->threads[i].pid, tl->threads[i].tid);
	for (size_t i = 0; rg && i < rg->nthreads && !oom; i++)
		oom = add_thr(&v, &n, &cap, rg->threads[i].pid, rg->threads[i].tid);
	for (size_t i = 0; t && i < kx_samples_count(t) && !oom; i++)
		oom = add_thr(&v, &n, &cap, kx_samples_get(t, i)->pid, kx_samples_get(t, i)->tid);
	if (oom) {
		free(v);
		return NULL;
	}
	if (n)
		qsort(v, n, sizeof(*v), by_tid);
	for (size_t i = 0; i < n; i++)
		if (!m || v[m - 1].tid != v[i].tid)
			v[m++] = v[i];
	if (m)
		qsort(v, m, sizeof(*v), by_pid_tid);
	*count = m;
	return v ? v : calloc(1, sizeof(*v));
}

/* ---- the evented profile ---- */

static void add_span(struct writer *w, uint64_t start, uint64_t dur, long frame, int rank)
{
	if (frame < 0 || kx_grow((void **)&w->sp, &w->spcap, w->nsp, sizeof(*w->sp))) {
		w->oom = 1;
		return;
	}
	if (dur)
		w->sp[w->nsp++] = (struct span){start, dur, (uint32_t)frame, (uint8_t)rank};
}

/* The timeline's thread tid (its threads are by tid), or NULL. */
static uint64_t tl_tid_at(const void *threads, size_t i)
{
	return ((const struct kx_tl_thread *)threads)[i].tid;
}

static const struct kx_tl_thread *tl_thread(const struct kx_timeline *tl, uint32_t tid)
{
	size_t lo = kx_lbound(0, tl->nthreads, tid, tl_tid_at, tl->threads);

	return lo < tl->nthreads && tl->threads[lo].tid == tid ? &tl->threads[lo] : NULL;
}

static void ioctl_spans(struct writer *w, uint32_t tid)
{
	const struct kx_timeline *tl = w->an->timeline;
	const struct kx_tl_thread *t = tl_thread(tl, tid);
	char buf[96], name[160];

	for (size_t k = t ? t->first : 0; t && k < t->first + t->count && !w->oom; k++) {
		const struct kx_ioctl *e = kx_store_ioctl(w->s, tl->order[k]);
		enum kx_driver drv = (enum kx_driver)e->drv;

		snprintf(name, sizeof(name), "[%s] %s", kx_driver_name(drv),
		         kx_ioctl_name(drv, e->cmd, e->xfer_cmd, buf, sizeof(buf)));
		add_span(w, e->ts, kx_timeline_dur(tl, tl->order[k], e->dur),
		         frame_of(&w->fr, name, "[driver call]"), RANK_IOCTL);
	}
}

static void range_spans(struct writer *w, uint32_t tid)
{
	const struct kx_ranges *rg = w->an->ranges;
	const struct kx_range_thread *t = rg ? kx_ranges_thread(rg, tid) : NULL;
	char file[160];

	for (size_t i = t ? t->first : 0; t && i < t->first + t->count && !w->oom; i++) {
		const struct kx_range *r = &rg->r[i];
		const char *cat = r->cat ? kx_store_ann_str(rg->strings, r->cat) : "";

		if (r->kind != KX_RANGE_THREAD)
			continue;
		snprintf(file, sizeof(file), "annotation%s%s", cat[0] ? "/" : "", cat);
		add_span(w, r->begin, r->dur,
		         frame_of(&w->fr, kx_store_ann_str(rg->strings, r->name), file),
		         RANK_RANGE);
	}
}

static void offcpu_spans(struct writer *w)
{
	const struct kx_samples *t = kx_store_samples(w->s);
	long frame = -2;

	for (size_t k = w->from; k < w->to && !w->oom; k++) {
		const struct kx_sample_ev *e = kx_samples_get(t, w->smp[k].i);

		if (e->kind != KX_SAMPLE_OFFCPU)
			continue;
		if (frame == -2)
			frame = frame_of(&w->fr, "off-CPU", "[scheduler]");
		add_span(w, e->ts, e->weight, frame, RANK_OFFCPU);
	}
}

static int span_cmp(const void *pa, const void *pb)
{
	const struct span *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->dur != b->dur)
		return a->dur > b->dur ? -1 : 1;
	return (int)a->rank - (int)b->rank;
}

static void put_event(struct writer *w, int *first, char type, uint32_t frame, uint64_t at)
{
	fprintf(w->f, "%s{\"type\":\"%c\",\"frame\":%u,\"at\":%llu}", *first ? "" : ",", type,
	        frame, (unsigned long long)(at - w->origin));
	*first = 0;
}

/* A profile's name: the thread's (comm: its name then, NULL: its latest),
 * with its process's command line when the capture has it and the name is
 * the latest (a profile of before an exec ran another command). */
static void put_name(struct writer *w, const struct thr *t, const char *comm, const char *what)
{
	const char *latest = kx_profile_comm(w->s, t->tid);
	const char *cmd = kx_store_cmd(w->s, t->pid);
	char name[128 + KX_CMD_LEN];

	if (!comm)
		comm = latest;
	if (cmd && strcmp(comm, latest))
		cmd = NULL;
	snprintf(name, sizeof(name), "%s%s%s%s%s(pid %u, tid %u): %s", comm, comm[0] ? " " : "",
	         cmd ? "[" : "", cmd ? cmd : "", cmd ? "] " : "", t->pid, t->tid, what);
	fprintf(w->f, "%s{\"name\":", w->nprofiles++ ? ",\n" : "");
	kx_json_cstr(w->f, name);
}

/* The spans nested by the timeline's rule, as open and close events. */
static void put_evented(struct writer *w, const struct thr *t)
{
	uint64_t *ends = NULL, end, last = 0;
	uint32_t *open = NULL;
	size_t depth = 0, cap = 0, ocap = 0;
	int first = 1, cut;

	qsort(w->sp, w->nsp, sizeof(*w->sp), span_cmp);
	put_name(w, t, NULL, "ioctls, annotation ranges, off-CPU");
	fputs(",\"type\":\"evented\",\"unit\":\"nanoseconds\",\"events\":[", w->f);
	for (size_t i = 0; i < w->nsp && !w->oom; i++) {
		const struct span *s = &w->sp[i];

		/* What ended by its start closes first, innermost first. */
		for (; depth && ends[depth - 1] <= s->start; depth--)
			put_event(w, &first, 'C', open[depth - 1], ends[depth - 1]);
		if (kx_timeline_nest(&ends, &depth, &cap, s->start, s->dur, &end, &cut) ||
		    kx_grow((void **)&open, &ocap, depth, sizeof(*open))) {
			w->oom = 1;
			break;
		}
		if (end == s->start) { /* cut to nothing */
			depth--;
			continue;
		}
		open[depth - 1] = s->frame;
		put_event(w, &first, 'O', s->frame, s->start);
		if (end > last)
			last = end;
	}
	for (; depth && !w->oom; depth--)
		put_event(w, &first, 'C', open[depth - 1], ends[depth - 1]);
	fprintf(w->f, "],\"startValue\":%llu,\"endValue\":%llu}",
	        (unsigned long long)(w->nsp ? w->sp[0].start - w->origin : 0),
	        (unsigned long long)(last > w->origin ? last - w->origin : 0));
	free(ends);
	free(open);
}

/* ---- the sampled profiles ---- */

static int skey_cmp(const void *pa, const void *pb)
{
	const struct skey *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

/* Every sample by thread and time. 0, or -1 out of memory. */
static int sort_samples(struct writer *w)
{
	const struct kx_samples *t = kx_store_samples(w->s);
	size_t n = t ? kx_samples_count(t) : 0;

	w->smp = malloc((n ? n : 1) * sizeof(*w->smp));
	if (!w->smp)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct kx_sample_ev *e = kx_samples_get(t, i);

		w->smp[i] = (struct skey){e->ts, i, e->tid};
	}
	w->nsmp = n;
	if (n > 1)
		qsort(w->smp, n, sizeof(*w->smp), skey_cmp);
	return 0;
}

static uint64_t smp_tid_at(const void *smp, size_t i)
{
	return ((const struct skey *)smp)[i].tid;
}

/* The samples of thread tid: smp[from .. to). */
static void samples_of(struct writer *w, uint32_t tid)
{
	w->from = w->to = kx_lbound(0, w->nsmp, tid, smp_tid_at, w->smp);
	while (w->to < w->nsmp && w->smp[w->to].tid == tid)
		w->to++;
}

/* Profile k's samples of thread t taken under the name of id name, each
 * weighted by the sampling period (CPU) or its time away (off-CPU). */
static void put_sampled(struct writer *w, int k, const struct thr *t, uint32_t name)
{
	const struct kx_samples *smp = kx_store_samples(w->s);
	const struct kx_profile *p = w->prof[k];
	int cpu = k == 0, counted = cpu && !p->period_ns, first = 1;
	uint64_t total = 0;
	const char *comm = NULL;

	for (size_t i = w->from; i < w->to && !comm; i++) {
		uint32_t sid = p->by_sample[w->smp[i].i];

		if (sid != UINT32_MAX && p->stacks[sid].name == name)
			comm = kx_profile_stack_comm(w->s, &p->stacks[sid]);
	}
	put_name(w, t, comm, cpu ? "CPU samples" : "off-CPU");
	fprintf(w->f, ",\"type\":\"sampled\",\"unit\":\"%s\",\"samples\":[",
	        counted ? "none" : "nanoseconds");
	for (size_t i = w->from; i < w->to; i++) {
		uint32_t sid = p->by_sample[w->smp[i].i];
		const struct kx_pstack *st;

		if (sid == UINT32_MAX || p->stacks[sid].name != name)
			continue;
		st = &p->stacks[sid];
		fputs(first ? "[" : ",[", w->f);
		first = 0;
		for (uint32_t d = 0; d < st->depth; d++)
			fprintf(w->f, "%s%u", d ? "," : "", w->map[k][p->fids[st->first + d]]);
		fputc(']', w->f);
	}
	fputs("],\"weights\":[", w->f);
	first = 1;
	for (size_t i = w->from; i < w->to; i++) {
		uint32_t sid = p->by_sample[w->smp[i].i];
		uint64_t v;

		if (sid == UINT32_MAX || p->stacks[sid].name != name)
			continue;
		v = cpu ? (counted ? 1 : p->period_ns) : kx_samples_get(smp, w->smp[i].i)->weight;
		fprintf(w->f, "%s%llu", first ? "" : ",", (unsigned long long)v);
		first = 0;
		total += v;
	}
	fprintf(w->f, "],\"startValue\":0,\"endValue\":%llu}", (unsigned long long)total);
}

/* Profile k's samples of the thread, a sampled profile per name it had
 * (an exec or a rename splits them), in the order the names came. */
static void put_sampled_all(struct writer *w, int k, const struct thr *t)
{
	const struct kx_profile *p = w->prof[k];
	size_t ndone = 0;

	for (size_t i = w->from; i < w->to && !w->oom; i++) {
		uint32_t sid = p->by_sample[w->smp[i].i], name;
		size_t j = 0;

		if (sid == UINT32_MAX)
			continue;
		name = p->stacks[sid].name;
		while (j < ndone && w->names[j] != name)
			j++;
		if (j < ndone)
			continue;
		if (kx_grow((void **)&w->names, &w->names_cap, ndone, sizeof(*w->names))) {
			w->oom = 1;
			break;
		}
		w->names[ndone++] = name;
		put_sampled(w, k, t, name);
	}
}

/* ---- the file ---- */

/* Both profiles and their frames in the table. 0, or -1 with err. */
static int profiles(struct writer *w, char *err, size_t len)
{
	static const unsigned int kind[2] = {KX_SAMPLE_CPU, KX_SAMPLE_OFFCPU};

	for (int k = 0; k < 2; k++) {
		struct kx_profile *p = kx_profile_build(w->s, w->an->ci, kind[k], err, len);

		w->prof[k] = p;
		if (!p)
			return -1;
		w->map[k] = malloc((p->nframes ? p->nframes : 1) * sizeof(*w->map[k]));
		if (!w->map[k])
			goto oom;
		for (size_t i = 0; i < p->nframes; i++) {
			long f = frame_of(&w->fr, p->frames[i].name, p->frames[i].module);

			if (f < 0)
				goto oom;
			w->map[k][i] = (uint32_t)f;
		}
		if (p->start_ns && p->start_ns < w->origin)
			w->origin = p->start_ns;
	}
	return 0;
oom:
	snprintf(err, len, "out of memory");
	return -1;
}

static void put_thread(struct writer *w, const struct thr *t)
{
	w->nsp = 0;
	samples_of(w, t->tid);
	ioctl_spans(w, t->tid);
	range_spans(w, t->tid);
	offcpu_spans(w);
	if (w->nsp && !w->oom)
		put_evented(w, t);
	for (int k = 0; k < 2 && !w->oom; k++)
		put_sampled_all(w, k, t);
}

static void put_frames(struct writer *w)
{
	fprintf(w->f, "{\"$schema\":\"%s\",\n\"shared\":{\"frames\":[", SCHEMA);
	for (size_t i = 0; i < w->fr.v.n; i++) {
		const char *name = kx_intern_str(&w->fr.v, i);

		fputs(i ? ",\n{\"name\":" : "\n{\"name\":", w->f);
		kx_json_cstr(w->f, name);
		fputs(",\"file\":", w->f);
		kx_json_cstr(w->f, name + strlen(name) + 1);
		fputc('}', w->f);
	}
	fputs("]},\n", w->f);
}

/* The profiles into a memory stream, then the frames they named: the file
 * is their concatenation. */
static int print(struct writer *w, FILE *out, char *err, size_t len)
{
	const struct kx_analysis *an = w->an;
	struct thr *th = NULL;
	size_t nth = 0, blen = 0;
	char *body = NULL;
	int rc = -1;

	w->origin = an->timeline->first_ts;
	if (an->ranges && an->ranges->first_ts < w->origin)
		w->origin = an->ranges->first_ts;
	if (profiles(w, err, len))
		return -1;
	if (sort_samples(w))
		goto oom;
	th = threads_of(w, &nth);
	w->f = th ? open_memstream(&body, &blen) : NULL;
	if (!w->f)
		goto oom;
	for (size_t i = 0; i < nth && !w->oom; i++)
		put_thread(w, &th[i]);
	if (fclose(w->f) || w->oom)
		goto oom;
	if (!w->nprofiles) {
		snprintf(err, len,
		         "no ioctls, annotation ranges or samples: nothing for speedscope to show");
		goto out;
	}
	w->f = out;
	put_frames(w);
	fputs("\"profiles\":[\n", out);
	fwrite(body, 1, blen, out);
	fputs("],\n\"name\":", out);
	kx_json_cstr(out, an->ci->hostname[0] ? an->ci->hostname : "kxprof");
	fputs(",\"activeProfileIndex\":0,\"exporter\":\"kxprof\"}\n", out);
	rc = 0;
	goto out;
oom:
	snprintf(err, len, "out of memory");
out:
	free(body);
	free(th);
	return rc;
}

static void writer_free(struct writer *w)
{
	for (int k = 0; k < 2; k++) {
		kx_profile_free(w->prof[k]);
		free(w->map[k]);
	}
	frames_free(&w->fr);
	free(w->sp);
	free(w->smp);
	free(w->names);
}

int kx_speedscope_print(const struct kx_analysis *an, FILE *f, char *err, size_t len)
{
	struct writer w = {.an = an, .s = an->store};
	int rc = print(&w, f, err, len);

	writer_free(&w);
	return rc;
}

int kx_speedscope_write(const struct kx_analysis *an, const char *path, char *err, size_t len)
{
	char *buf = NULL, msg[256];
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	int rc = -1;

	if (!f) {
		snprintf(err, len, "%s: out of memory", path);
		return -1;
	}
	msg[0] = 0;
	rc = kx_speedscope_print(an, f, msg, sizeof(msg));
	if (fclose(f) && !rc) {
		snprintf(msg, sizeof(msg), "out of memory");
		rc = -1;
	}
	if (rc)
		snprintf(err, len, "%s: %s", path, msg);
	else
		rc = kx_outfile_write(path, KX_OUT_STDOUT, buf, n, err, len);
	free(buf);
	return rc;
}
