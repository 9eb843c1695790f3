/*
 * Samples in Chrome trace JSON (see chrome_samples.h). The CPU and off-CPU
 * profiles are built once; each stack's text (frames root first, joined by
 * ';') is escaped once and reused by every sample of it; the call tree of
 * "stackFrames" gives each CPU stack the node of its leaf.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "export/chrome_json.h"
#include "export/chrome_samples.h"
#include "model/perfdata.h"
#include "util/grow.h"
#include "util/hashmap.h"
#include "util/json.h"

struct node {
	uint32_t parent; /* node id, 0 for a root */
	uint32_t fid;    /* frame in the CPU profile */
};

struct kx_chrome_samples {
	const struct kx_analysis *an;
	struct kx_profile *prof[2]; /* CPU, off-CPU */
	struct kx_bytes text;       /* each stack's escaped text, one after another */
	size_t *text_off[2];        /* per stack of each profile: [off, off + len) */
	struct node *nodes;         /* stackFrames, node id i + 1 */
	size_t nnodes, nodes_cap;
	uint32_t *leaf_node; /* per CPU stack */
	uint64_t first_ts;
	uint64_t from_ns, to_ns; /* the window written (to_ns 0: no end) */
};

/* A sample is written when it starts in the window and not before the origin. */
static int written(const struct kx_chrome_samples *cs, uint64_t ts, uint64_t origin_ns)
{
	return ts >= origin_ns && ts >= cs->from_ns && (!cs->to_ns || ts < cs->to_ns);
}

/* Escaped "a;b;c" of stack st into cs->text; its offset. */
static size_t stack_text(struct kx_chrome_samples *cs, const struct kx_profile *p,
                         const struct kx_pstack *st)
{
	struct kx_bytes raw = {0};
	size_t off = cs->text.len;
	char *d;

	for (uint32_t k = 0; k < st->depth; k++) {
		const char *n = p->frames[p->fids[st->first + k]].name;
		size_t len = strlen(n);
		uint8_t *q = kx_bytes_room(&raw, len + 1);

		if (!q)
			break;
		if (k)
			*q++ = ';';
		memcpy(q, n, len);
		raw.len += len + (k ? 1 : 0);
	}
	d = (char *)kx_bytes_room(&cs->text, KX_JSON_STR_ROOM(raw.len));
	if (d && !raw.oom)
		cs->text.len = (size_t)(kx_json_put_str(d, (const char *)raw.p, raw.len) -
		                        (char *)cs->text.p);
	else
		cs->text.oom = 1;
	free(raw.p);
	return off;
}

/* The node of (parent, fid), added when new. */
static uint32_t node_of(struct kx_chrome_samples *cs, struct kx_hmap *ix, uint32_t parent,
                        uint32_t fid)
{
	uint64_t key = (uint64_t)parent << 32 | fid;
	uint32_t *v = kx_hmap_get(ix, key);

	if (v)
		return *v;
	if (cs->nnodes >= UINT32_MAX - 1 ||
	    kx_grow((void **)&cs->nodes, &cs->nodes_cap, cs->nnodes, sizeof(*cs->nodes)) ||
	    kx_hmap_add(ix, key, (uint32_t)cs->nnodes + 1))
		return 0;
	cs->nodes[cs->nnodes] = (struct node){parent, fid};
	return (uint32_t)++cs->nnodes;
}

/* The call tree of the CPU stacks; 0, or -1 out of memory. */
static int build_tree(struct kx_chrome_samples *cs)
{
	const struct kx_profile *p = cs->prof[0];
	struct kx_hmap ix = KX_HMAP_INIT;
	int rc = 0;

	cs->leaf_node = calloc(p->nstacks ? p->nstacks : 1, sizeof(*cs->leaf_node));
	if (!cs->leaf_node)
		return -1;
	for (size_t i = 0; i < p->nstacks && !rc; i++) {
		const struct kx_pstack *st = &p->stacks[i];
		uint32_t at = 0;

		for (uint32_t k = 0; k < st->depth && !rc; k++) {
			at = node_of(cs, &ix, at, p->fids[st->first + k]);
			rc = at ? 0 : -1;
		}
		cs->leaf_node[i] = at;
	}
	kx_hmap_free(&ix);
	return rc;
}

static int prepare(struct kx_chrome_samples *cs, char *err, size_t len)
{
	static const unsigned int kinds[2] = {KX_SAMPLE_CPU, KX_SAMPLE_OFFCPU};
	const struct kx_store *s = cs->an->store;

	for (int k = 0; k < 2; k++) {
		struct kx_profile *p = kx_profile_build(s, cs->an->ci, kinds[k], err, len);

		if (!p)
			return -1;
		cs->prof[k] = p;
		cs->text_off[k] = malloc((p->nstacks + 1) * sizeof(*cs->text_off[k]));
		if (!cs->text_off[k])
			goto oom;
		for (size_t i = 0; i < p->nstacks; i++)
			cs->text_off[k][i] = stack_text(cs, p, &p->stacks[i]);
		cs->text_off[k][p->nstacks] = cs->text.len;
		if (p->samples && p->start_ns < cs->first_ts)
			cs->first_ts = p->start_ns;
	}
	if (!cs->text.oom && build_tree(cs) == 0)
		return 0;
oom:
	snprintf(err, len, "out of memory for the samples");
	return -1;
}

struct kx_chrome_samples *kx_chrome_samples_new(const struct kx_analysis *an, char *err, size_t len)
{
	struct kx_chrome_samples *cs = calloc(1, sizeof(*cs));

	if (!cs) {
		snprintf(err, len, "out of memory for the samples");
		return NULL;
	}
	cs->an = an;
	cs->first_ts = UINT64_MAX;
	if (prepare(cs, err, len)) {
		kx_chrome_samples_free(cs);
		return NULL;
	}
	return cs;
}

void kx_chrome_samples_rebind(struct kx_chrome_samples *cs, const struct kx_analysis *an)
{
	if (cs)
		cs->an = an;
}

void kx_chrome_samples_window(struct kx_chrome_samples *cs, uint64_t from_ns, uint64_t to_ns)
{
	cs->from_ns = from_ns;
	cs->to_ns = to_ns;
}

uint64_t kx_chrome_samples_first_ts(const struct kx_chrome_samples *cs)
{
	return cs->first_ts;
}

/* The args of a sample of stack i of profile k: its stack and call. */
static void args(struct wbuf *w, const struct kx_chrome_samples *cs, int k, uint32_t i)
{
	const struct kx_profile *p = cs->prof[k];
	const struct kx_pstack *st = &p->stacks[i];

	wb_lit(w, ",\"args\":{\"stack\":");
	wb_text(w, (const char *)cs->text.p + cs->text_off[k][i],
	        cs->text_off[k][i + 1] - cs->text_off[k][i]);
	if (st->call) {
		wb_lit(w, ",\"driver_call\":");
		wb_str(w, p->frames[st->call - 1].name);
	}
	/* Taken under another name than the thread's track has (before an exec
	 * or a rename): the name then. */
	if (st->comm && strcmp(st->comm, kx_profile_comm(cs->an->store, st->tid))) {
		wb_lit(w, ",\"thread\":");
		wb_str(w, st->comm);
	}
	wb_lit(w, "}}");
}

/* One sample of the store (e, its stack i in profile k) as an event. */
static void event(struct wbuf *w, int *first, const struct kx_chrome_samples *cs, int k,
                  const struct kx_sample_ev *e, uint32_t i, uint64_t origin)
{
	const struct kx_profile *p = cs->prof[k];
	const struct kx_pstack *st = &p->stacks[i];
	const char *leaf = st->depth ? p->frames[p->fids[st->first + st->depth - 1]].name : "?";

	if (k == 0) {
		wb_sep(w, first);
		wb_lit(w, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_sample\",\"name\":");
		wb_str(w, leaf);
	} else {
		wb_sep(w, first);
		wb_lit(w, "{\"ph\":\"X\",\"cat\":\"off_cpu\",\"name\":\"off-CPU\",\"dur\":");
		wb_us(w, e->weight);
	}
	wb_lit(w, ",\"pid\":");
	wb_u64(w, e->pid);
	wb_lit(w, ",\"tid\":");
	wb_u64(w, e->tid);
	wb_lit(w, ",\"ts\":");
	wb_us(w, e->ts - origin);
	args(w, cs, k, i);
}

/* Did the ioctls name thread tid (the whole capture's, for a window of it)? */
static int ioctl_thread(const struct kx_chrome_samples *cs, uint32_t tid)
{
	const struct kx_whole *wh = cs->an->whole;
	const struct kx_timeline *tl = cs->an->timeline;

	for (size_t k = 0; wh && k < wh->nthreads; k++)
		if ((uint32_t)wh->threads[k] == tid)
			return 1;
	for (size_t k = 0; !wh && k < tl->nthreads; k++)
		if (tl->threads[k].tid == tid)
			return 1;
	return 0;
}

/* thread_name (and process_name) metadata for threads the ioctls did not name. */
static void names(struct wbuf *w, int *first, const struct kx_chrome_samples *cs)
{
	const struct kx_samples *t = kx_store_samples(cs->an->store);
	struct kx_hmap seen = KX_HMAP_INIT;

	for (size_t i = 0; i < kx_samples_count(t); i++) {
		const struct kx_sample_ev *e = kx_samples_get(t, i);
		int isnew;

		if (!kx_hmap_put(&seen, e->tid, 1, &isnew) || !isnew || ioctl_thread(cs, e->tid))
			continue;
		wb_sep(w, first);
		wb_lit(w, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
		wb_u64(w, e->pid);
		wb_lit(w, ",\"tid\":");
		wb_u64(w, e->tid);
		wb_lit(w, ",\"args\":{\"name\":");
		wb_str(w, kx_profile_comm(cs->an->store, e->tid));
		wb_lit(w, "}}");
	}
	kx_hmap_free(&seen);
}

void kx_chrome_samples_events(const struct kx_chrome_samples *cs, uint64_t origin_ns, int *first,
                              struct wbuf *w)
{
	const struct kx_samples *t = kx_store_samples(cs->an->store);
	if (cs->first_ts == UINT64_MAX)
		return;
	names(w, first, cs);
	for (size_t i = 0; i < kx_samples_count(t); i++) {
		const struct kx_sample_ev *e = kx_samples_get(t, i);
		int k = e->kind == KX_SAMPLE_OFFCPU;

		if (i < cs->prof[k]->nby_sample && cs->prof[k]->by_sample[i] != UINT32_MAX &&
		    written(cs, e->ts, origin_ns))
			event(w, first, cs, k, e, cs->prof[k]->by_sample[i], origin_ns);
	}
}

void kx_chrome_samples_members(const struct kx_chrome_samples *cs, uint64_t origin_ns,
                               struct wbuf *w)
{
	static const char *const cat[] = {"", "user", "kernel", "driver call"};
	const struct kx_profile *p = cs->prof[0];
	const struct kx_samples *t = kx_store_samples(cs->an->store);
	int first = 1;

	if (!p->samples)
		return;
	wb_lit(w, "\"stackFrames\":{");
	for (size_t i = 0; i < cs->nnodes; i++) {
		const struct kx_pframe *f = &p->frames[cs->nodes[i].fid];

		wb_lit(w, i ? ",\n\"" : "\n\"");
		wb_u64(w, i + 1);
		wb_lit(w, "\":{\"name\":");
		wb_str(w, f->name);
		wb_lit(w, ",\"category\":\"");
		wb_lit(w, cat[f->kind < 4 ? f->kind : 0]);
		wb_lit(w, "\"");
		if (cs->nodes[i].parent) {
			wb_lit(w, ",\"parent\":\"");
			wb_u64(w, cs->nodes[i].parent);
			wb_lit(w, "\"");
		}
		wb_lit(w, "}");
	}
	wb_lit(w, "},\n\"samples\":[");
	for (size_t i = 0; i < kx_samples_count(t); i++) {
		const struct kx_sample_ev *e = kx_samples_get(t, i);

		if (i >= p->nby_sample || p->by_sample[i] == UINT32_MAX ||
		    !written(cs, e->ts, origin_ns))
			continue;
		wb_lit(w, first ? "\n{\"cpu\":" : ",\n{\"cpu\":");
		first = 0;
		wb_u64(w, e->cpu);
		wb_lit(w, ",\"pid\":");
		wb_u64(w, e->pid);
		wb_lit(w, ",\"tid\":");
		wb_u64(w, e->tid);
		wb_lit(w, ",\"ts\":");
		wb_us(w, e->ts - origin_ns);
		wb_lit(w, ",\"name\":\"cpu-clock\",\"sf\":");
		wb_u64(w, cs->leaf_node[p->by_sample[i]]);
		wb_lit(w, ",\"weight\":1}");
	}
	wb_lit(w, "],\n");
}

void kx_chrome_samples_free(struct kx_chrome_samples *cs)
{
	if (!cs)
		return;
	for (int k = 0; k < 2; k++) {
		kx_profile_free(cs->prof[k]);
		free(cs->text_off[k]);
	}
	free(cs->text.p);
	free(cs->nodes);
	free(cs->leaf_node);
	free(cs);
}
