/*
 * The profile of a capture's samples (see profile.h). Two passes: the
 * samples are first counted per raw key (interned stack, image, thread,
 * call, mode), so each distinct raw stack is named once; each raw key then
 * becomes a stack of frame ids, interned with its process, thread and call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/profile.h"
#include "model/perfdata.h"
#include "model/symres.h"
#include "registry/ioctl_decode.h"
#include "symbol/symbolizer.h"
#include "util/grow.h"
#include "util/hashmap.h"

#define CALL_MODULE "[driver call]"

/* Samples of one raw key. */
struct raw {
	uint32_t stack, pid, gen, tid;
	uint32_t name; /* the thread's name at the sample (kx_samples_comm_id_at) */
	uint32_t cmd;
	uint8_t drv, xfer, in_call, kmode;
	uint64_t count, weight;
};

struct builder {
	const struct kx_store *s;
	const struct kx_samples *t;
	const struct kx_symres *syms;
	struct kx_profile *p;
	struct raw *raw;
	size_t nraw, raw_cap;
	struct kx_hmap raw_ix;   /* raw key hash -> raw index */
	struct kx_hmap frame_ix; /* frame hash -> frame id */
	struct kx_hmap stack_ix; /* stack hash -> stack id */
	size_t frames_cap, fids_cap, stacks_cap;
	int oom;
};

static uint64_t raw_hash(const struct raw *r)
{
	uint64_t h = kx_hash_combine(0, (uint64_t)r->stack << 32 | r->pid);

	h = kx_hash_combine(h, (uint64_t)r->gen << 32 | r->tid);
	h = kx_hash_combine(h, r->name);
	h = kx_hash_combine(h, (uint64_t)r->cmd << 32 | (uint64_t)r->drv << 24 |
	                               (uint64_t)r->xfer << 16 | (uint64_t)r->in_call << 8 |
	                               r->kmode);
	return h;
}

static int raw_eq(const struct raw *a, const struct raw *b)
{
	return a->stack == b->stack && a->pid == b->pid && a->gen == b->gen && a->tid == b->tid &&
	       a->name == b->name && a->cmd == b->cmd && a->drv == b->drv && a->xfer == b->xfer &&
	       a->in_call == b->in_call && a->kmode == b->kmode;
}

/* Counts one sample under its raw key; the key's index. */
static uint32_t count_sample(struct builder *b, const struct kx_sample_ev *e)
{
	struct raw k = {
	        .stack = e->stack,
	        .pid = e->pid,
	        .gen = e->exec_id,
	        .tid = e->tid,
	        .name = kx_samples_comm_id_at(b->t, e->tid, e->ts),
	        .cmd = e->call_ts ? e->call_cmd : 0,
	        .drv = e->call_ts ? e->call_drv : 0,
	        .xfer = e->call_ts ? e->call_xfer : 0,
	        .in_call = e->call_ts != 0,
	        .kmode = (e->flags & KX_SAMPLE_F_KERNEL) != 0,
	};
	uint64_t h = raw_hash(&k);
	size_t pos = KX_HMAP_START, i;
	uint32_t *v;

	while ((v = kx_hmap_next(&b->raw_ix, h, &pos)) != NULL)
		if (raw_eq(&b->raw[*v], &k))
			break;
	if (v) {
		i = *v;
	} else {
		if (b->nraw >= UINT32_MAX ||
		    kx_grow((void **)&b->raw, &b->raw_cap, b->nraw, sizeof(*b->raw)) ||
		    kx_hmap_add(&b->raw_ix, h, (uint32_t)b->nraw)) {
			b->oom = 1;
			return 0;
		}
		i = b->nraw++;
		b->raw[i] = k;
	}
	b->raw[i].count++;
	b->raw[i].weight += e->weight;
	return (uint32_t)i;
}

/* A name made here (unknown frames, calls, thread names), freed with the
 * profile. NULL when out of memory. */
static const char *own(struct builder *b, const char *s)
{
	long id = kx_intern_cstr(&b->p->names, s);

	if (id < 0) {
		b->oom = 1;
		return NULL;
	}
	return kx_intern_str(&b->p->names, (size_t)id);
}

static uint64_t frame_hash(unsigned int kind, const char *name, const char *module)
{
	return kx_hash_combine(kx_hash_combine(kind, kx_hash_bytes(name, strlen(name))),
	                       kx_hash_bytes(module, strlen(module)));
}

/* The id of frame (kind, name, module), added when new; -1 when out of memory. */
static long frame_id(struct builder *b, const struct kx_pframe *f)
{
	struct kx_profile *p = b->p;
	uint64_t h = frame_hash(f->kind, f->name, f->module);
	size_t pos = KX_HMAP_START;
	uint32_t *v;

	while ((v = kx_hmap_next(&b->frame_ix, h, &pos)) != NULL) {
		const struct kx_pframe *g = &p->frames[*v];

		if (g->kind == f->kind && !strcmp(g->name, f->name) &&
		    !strcmp(g->module, f->module))
			return *v;
	}
	if (p->nframes >= UINT32_MAX ||
	    kx_grow((void **)&p->frames, &b->frames_cap, p->nframes, sizeof(*p->frames)) ||
	    kx_hmap_add(&b->frame_ix, h, (uint32_t)p->nframes))
		return -1;
	p->frames[p->nframes] = *f;
	return (long)p->nframes++;
}

/* The frame of a code address (pid KX_SYMRES_KERNEL: a kernel one). */
static void code_frame(struct builder *b, uint32_t pid, uint32_t gen, uint64_t addr,
                       struct kx_pframe *f)
{
	const struct kx_symres_entry *e = kx_symres_find(b->syms, pid, gen, addr);
	char name[300];

	f->kind = pid == KX_SYMRES_KERNEL ? KX_PF_KERNEL : KX_PF_USER;
	f->addr = addr;
	f->build_id = e ? kx_symres_str(b->syms, e->build_id) : "";
	f->module = e ? kx_symres_str(b->syms, e->module)
	              : (pid == KX_SYMRES_KERNEL ? KX_KERNEL_MOD : KX_UNKNOWN_MOD);
	f->known = e && e->known;
	if (f->known) {
		f->name = kx_symres_str(b->syms, e->func);
		return;
	}
	if (!e || !strcmp(f->module, KX_UNKNOWN_MOD)) {
		f->name = KX_UNKNOWN_FN;
		return;
	}
	snprintf(name, sizeof(name), "%s (%s)", KX_UNKNOWN_FN, basename(f->module));
	f->name = own(b, name);
	if (!f->name)
		f->name = KX_UNKNOWN_FN;
}

/* The frame of the traced call of r: "[driver] IOCTL". */
static void call_frame(struct builder *b, const struct raw *r, struct kx_pframe *f)
{
	char buf[96], name[160];

	snprintf(name, sizeof(name), "[%s] %s", kx_driver_name(r->drv),
	         kx_ioctl_name(r->drv, r->cmd, r->xfer, buf, sizeof(buf)));
	memset(f, 0, sizeof(*f));
	f->kind = KX_PF_CALL;
	f->known = 1;
	f->module = CALL_MODULE;
	f->build_id = "";
	f->name = own(b, name);
	if (!f->name)
		f->name = "[driver call]";
}

/* Appends frame f to the profile's frame ids; 0, or -1 out of memory. */
static int push(struct builder *b, const struct kx_pframe *f, uint64_t count, uint32_t *id)
{
	struct kx_profile *p = b->p;
	long fid = frame_id(b, f);

	if (fid < 0 || kx_grow((void **)&p->fids, &b->fids_cap, p->nfids, sizeof(*p->fids)))
		return -1;
	p->fids[p->nfids++] = (uint32_t)fid;
	if (!f->known)
		p->unknown[f->kind == KX_PF_KERNEL] += count;
	if (id)
		*id = (uint32_t)fid;
	return 0;
}

/* Off-CPU kernel stacks: where the leaf frames of the tracing machinery end. */
static uint32_t sched_start(struct builder *b, const uint64_t *kips, uint32_t nk)
{
	for (uint32_t i = 0; i < nk; i++) {
		const struct kx_symres_entry *e =
		        kx_symres_find(b->syms, KX_SYMRES_KERNEL, 0, kx_frame_addr(kips[i], i));

		if (e && e->known && !strcmp(kx_symres_str(b->syms, e->func), "__schedule"))
			return i;
	}
	return 0;
}

/* Frames of raw key r appended root first; *call gets the call frame's id + 1. */
static int name_frames(struct builder *b, const struct raw *r, uint32_t *call)
{
	uint32_t nk, nu, k0 = 0, id;
	const uint64_t *ips = kx_samples_stack(b->t, r->stack, &nk, &nu);
	struct kx_pframe f;

	for (uint32_t i = nu; i-- > 0;) {
		if (!ips[nk + i]) /* where a frame-pointer walk ended, not a frame */
			continue;
		code_frame(b, r->pid, r->gen, kx_user_frame_addr(ips[nk + i], i, r->kmode), &f);
		if (push(b, &f, r->count, NULL))
			return -1;
	}
	*call = 0;
	if (r->in_call) {
		call_frame(b, r, &f);
		if (push(b, &f, r->count, &id))
			return -1;
		*call = id + 1;
	}
	if (b->p->kind == KX_SAMPLE_OFFCPU)
		k0 = sched_start(b, ips, nk);
	for (uint32_t i = nk; i-- > k0;) {
		code_frame(b, KX_SYMRES_KERNEL, 0, kx_frame_addr(ips[i], i), &f);
		if (push(b, &f, r->count, NULL))
			return -1;
	}
	return 0;
}

static uint64_t stack_hash(const struct kx_profile *p, size_t first, size_t depth, uint32_t pid,
                           uint32_t tid, uint32_t call, uint32_t name)
{
	uint64_t h = kx_hash_combine(kx_hash_combine((uint64_t)pid << 32 | tid, call), name);

	for (size_t i = 0; i < depth; i++)
		h = kx_hash_combine(h, p->fids[first + i]);
	return h;
}

/* The stack just appended at fids[first ..] with its key: merged into an
 * equal one (its frames given back) or kept as a new stack; *id gets its index. */
static int add_stack(struct builder *b, const struct raw *r, size_t first, uint32_t call,
                     uint32_t *id)
{
	struct kx_profile *p = b->p;
	size_t depth = p->nfids - first, pos = KX_HMAP_START;
	uint64_t h = stack_hash(p, first, depth, r->pid, r->tid, call, r->name);
	struct kx_pstack *st;
	uint32_t *v;

	while ((v = kx_hmap_next(&b->stack_ix, h, &pos)) != NULL) {
		st = &p->stacks[*v];
		if (st->depth == depth && st->pid == r->pid && st->tid == r->tid &&
		    st->call == call && st->name == r->name &&
		    !memcmp(&p->fids[st->first], &p->fids[first], depth * sizeof(*p->fids)))
			break;
	}
	if (v) {
		p->nfids = first;
	} else {
		if (p->nstacks >= UINT32_MAX ||
		    kx_grow((void **)&p->stacks, &b->stacks_cap, p->nstacks, sizeof(*p->stacks)) ||
		    kx_hmap_add(&b->stack_ix, h, (uint32_t)p->nstacks))
			return -1;
		st = &p->stacks[p->nstacks++];
		*st = (struct kx_pstack){.first = (uint32_t)first,
		                         .depth = (uint32_t)depth,
		                         .pid = r->pid,
		                         .tid = r->tid,
		                         .call = call,
		                         .name = r->name};
		if (kx_samples_comm_name(b->t, r->name) &&
		    !(st->comm = own(b, kx_samples_comm_name(b->t, r->name))))
			return -1;
	}
	st->count += r->count;
	st->weight_ns += p->kind == KX_SAMPLE_OFFCPU ? r->weight : r->count * p->period_ns;
	*id = (uint32_t)(st - p->stacks);
	return 0;
}

static int build(struct builder *b)
{
	struct kx_profile *p = b->p;
	size_t n = kx_samples_count(b->t);
	uint32_t *raw_stack;

	p->by_sample = malloc((n ? n : 1) * sizeof(*p->by_sample));
	if (!p->by_sample)
		return -1;
	p->nby_sample = n;
	for (size_t i = 0; i < n && !b->oom; i++) {
		const struct kx_sample_ev *e = kx_samples_get(b->t, i);

		p->by_sample[i] = UINT32_MAX;
		if (e->kind != p->kind)
			continue;
		p->by_sample[i] = count_sample(b, e); /* the raw key, for now */
		p->samples++;
		p->in_calls += e->call_ts != 0;
		if (!p->start_ns || e->ts < p->start_ns)
			p->start_ns = e->ts;
		if (e->ts > p->end_ns)
			p->end_ns = e->ts;
	}
	raw_stack = malloc((b->nraw ? b->nraw : 1) * sizeof(*raw_stack));
	if (!raw_stack)
		b->oom = 1;
	for (size_t i = 0; i < b->nraw && !b->oom; i++) {
		size_t first = p->nfids;
		uint32_t call;

		if (name_frames(b, &b->raw[i], &call) ||
		    add_stack(b, &b->raw[i], first, call, &raw_stack[i]))
			b->oom = 1;
	}
	for (size_t i = 0; i < n && !b->oom; i++)
		if (p->by_sample[i] != UINT32_MAX)
			p->by_sample[i] = raw_stack[p->by_sample[i]];
	free(raw_stack);
	for (size_t i = 0; i < p->nstacks; i++)
		p->weight_ns += p->stacks[i].weight_ns;
	return b->oom ? -1 : 0;
}

static void builder_free(struct builder *b)
{
	free(b->raw);
	kx_hmap_free(&b->raw_ix);
	kx_hmap_free(&b->frame_ix);
	kx_hmap_free(&b->stack_ix);
}

struct kx_profile *kx_profile_build(const struct kx_store *s, const struct kx_capinfo *ci,
                                    unsigned int kind, char *err, size_t len)
{
	struct kx_profile *p = calloc(1, sizeof(*p));
	struct builder b = {0};
	int rc;

	if (!p || !kx_store_samples(s)) {
		free(p);
		snprintf(err, len, "out of memory for the profile");
		return NULL;
	}
	p->kind = kind;
	p->hz = ci ? ci->samples.hz : 0;
	p->period_ns = kind == KX_SAMPLE_CPU && p->hz ? 1000000000ull / p->hz : 0;
	b.s = s;
	b.t = kx_store_samples(s);
	b.syms = kx_samples_syms_const(b.t);
	b.p = p;
	rc = build(&b);
	builder_free(&b);
	if (rc) {
		snprintf(err, len, "out of memory building the profile");
		kx_profile_free(p);
		return NULL;
	}
	return p;
}

void kx_profile_free(struct kx_profile *p)
{
	if (!p)
		return;
	kx_intern_free(&p->names);
	free(p->frames);
	free(p->fids);
	free(p->stacks);
	free(p->by_sample);
	free(p);
}

const char *kx_profile_stack_comm(const struct kx_store *s, const struct kx_pstack *st)
{
	return st->comm ? st->comm : kx_profile_comm(s, st->tid);
}

const char *kx_profile_comm(const struct kx_store *s, uint32_t tid)
{
	const char *c = kx_store_samples(s) ? kx_samples_comm(kx_store_samples(s), tid) : NULL;

	if (!c)
		c = kx_store_comm(s, tid);
	return c ? c : "";
}
