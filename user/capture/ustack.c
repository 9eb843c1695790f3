/*
 * Stack copies paired with their samples (see ustack.h): per-CPU slots of
 * unwound frames.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/ustack.h"
#include "sample_rec.h" /* bpf/: struct kx_ustack_rec */
#include "symbol/unwind.h"

#define PAIR_MAX_CPUS 4096
/* Off-CPU copies waiting for their record, by tid modulo this (a power of
 * two): one slot per thread blocked at once, a later copy replacing one of
 * another tid (whose record then counts as without a copy). */
#define PAIR_OFF_SLOTS 1024

struct pair_slot {
	int full;       /* frames wait for their sample */
	uint32_t tid;   /* the sample's */
	uint64_t ts;    /* the sample's, CLOCK_MONOTONIC ns */
	unsigned int n; /* frames in ips */
	int end;        /* how the unwind ended: enum kx_unwind_end */
	uint64_t ips[KX_SAMPLE_MAX_DEPTH];
	/* auto: the copy itself, unwound only when its sample's frame-pointer
	 * walk is not kept (NULL until the first; pending: not unwound yet). */
	struct kx_ustack_rec *raw;
	int pending;
};

struct kx_ustack_pair {
	struct kx_unwinder *uw;
	int autom;               /* --call-graph auto */
	struct pair_slot *slots; /* by CPU */
	uint32_t nslots;
	struct pair_slot *off; /* off-CPU copies, by tid (PAIR_OFF_SLOTS); NULL until one */
	struct kx_ustack_counts c;
	uint64_t out[KX_SAMPLE_MAX_DEPTH]; /* the frames the last sample took */
};

struct kx_ustack_pair *kx_ustack_pair_new(int autom, char *err, size_t len)
{
	struct kx_ustack_pair *p = calloc(1, sizeof(*p));

	if (!p) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	p->uw = kx_unwinder_new(err, len);
	if (!p->uw) {
		free(p);
		return NULL;
	}
	p->autom = autom;
	return p;
}

/* The slot of cpu, grown as needed; NULL when out of memory or range. */
static struct pair_slot *slot_of(struct kx_ustack_pair *p, uint32_t cpu)
{
	struct pair_slot *ns;
	uint32_t n;

	if (cpu >= PAIR_MAX_CPUS)
		return NULL;
	if (cpu < p->nslots)
		return &p->slots[cpu];
	n = cpu + 1 > 2 * p->nslots ? cpu + 1 : 2 * p->nslots;
	ns = realloc(p->slots, n * sizeof(*ns));
	if (!ns)
		return NULL;
	memset(ns + p->nslots, 0, (n - p->nslots) * sizeof(*ns));
	p->slots = ns;
	p->nslots = n;
	return &p->slots[cpu];
}

/* The off-CPU slot of tid, the table made on first use; NULL when out of memory. */
static struct pair_slot *off_slot_of(struct kx_ustack_pair *p, uint32_t tid)
{
	if (!p->off && !(p->off = calloc(PAIR_OFF_SLOTS, sizeof(*p->off))))
		return NULL;
	return &p->off[tid & (PAIR_OFF_SLOTS - 1)];
}

/* Where copy r waits for its record: its CPU's slot, or its thread's (off-CPU). */
static struct pair_slot *copy_slot(struct kx_ustack_pair *p, const struct kx_ustack_rec *r)
{
	return (r->flags & KX_USTACK_F_OFFCPU) ? off_slot_of(p, r->tid) : slot_of(p, r->hdr.cpu);
}

/* The slot holding the copy of sample s, if any waits. */
static struct pair_slot *sample_slot(struct kx_ustack_pair *p, const struct kx_sample *s)
{
	if (s->kind == KX_SAMPLE_OFFCPU)
		return p->off ? &p->off[s->tid & (PAIR_OFF_SLOTS - 1)] : NULL;
	return s->cpu < p->nslots ? &p->slots[s->cpu] : NULL;
}

/* The unwinder's view of copy r. */
static struct kx_ustack ustack_of(const struct kx_ustack_rec *r)
{
	return (struct kx_ustack){.pid = r->pid,
	                          .exec_id = r->exec_id,
	                          .ts_ns = r->ts,
	                          .regs = (const uint64_t *)r->regs,
	                          .stack = r->data,
	                          .len = r->len};
}

/* Unwinds copy r into slot sl. */
static void unwind_copy(struct kx_ustack_pair *p, struct pair_slot *sl,
                        const struct kx_ustack_rec *r)
{
	struct kx_ustack s = ustack_of(r);

	sl->n = kx_unwind(p->uw, &s, sl->ips, KX_SAMPLE_MAX_DEPTH, &sl->end);
}

/* auto: 1 when sample smp keeps its frame-pointer walk (every frame in a
 * module that keeps frame pointers), else its copy in sl is unwound. */
static int fp_kept(struct kx_ustack_pair *p, struct pair_slot *sl, const struct kx_sample *smp)
{
	const struct kx_ustack_rec *r = sl->raw;
	struct kx_ustack s = ustack_of(r);

	sl->pending = 0;
	if (kx_unwind_fp_trusted(p->uw, &s, smp->uips, smp->nu))
		return 1;
	unwind_copy(p, sl, r);
	return 0;
}

void kx_ustack_pair_copy(struct kx_ustack_pair *p, const void *rec, size_t len)
{
	const struct kx_ustack_rec *r = rec;
	struct pair_slot *sl;

	if (len < KX_USTACK_REC_BASE_SIZE || r->version != KX_USTACK_VERSION ||
	    r->nregs != KX_USTACK_NREGS || r->len > KX_USTACK_MAX ||
	    len < KX_USTACK_REC_BASE_SIZE + r->len || !(sl = copy_slot(p, r))) {
		p->c.malformed++;
		return;
	}
	p->c.copies++;
	sl->tid = r->tid;
	sl->ts = r->ts;
	sl->full = 1;
	sl->pending = 0;
	/* auto: a CPU sample's copy waits for the sample's frame-pointer walk. */
	if (p->autom && !(r->flags & KX_USTACK_F_OFFCPU) &&
	    (sl->raw || (sl->raw = malloc(sizeof(*sl->raw))))) {
		memcpy(sl->raw, r, KX_USTACK_REC_BASE_SIZE + r->len);
		sl->pending = 1;
		return;
	}
	unwind_copy(p, sl, r);
}

void kx_ustack_pair_sample(struct kx_ustack_pair *p, struct kx_sample *s)
{
	struct pair_slot *sl;

	if ((s->kind != KX_SAMPLE_CPU && s->kind != KX_SAMPLE_OFFCPU) ||
	    (s->flags & KX_SAMPLE_F_KTHREAD))
		return;
	sl = sample_slot(p, s);
	if (!sl || !sl->full || sl->tid != s->tid || sl->ts != s->ts_ns) {
		p->c.no_copy++;
		return;
	}
	sl->full = 0;
	if (sl->pending && fp_kept(p, sl, s)) {
		p->c.fp_kept++;
		return;
	}
	if (!sl->n) {
		p->c.failed++;
		return;
	}
	if (sl->end == KX_UNWIND_ROOT)
		p->c.unwound++;
	else
		p->c.partial++;
	p->c.jit_stops += sl->end == KX_UNWIND_JIT;
	memcpy(p->out, sl->ips, sl->n * sizeof(p->out[0]));
	s->uips = p->out;
	s->nu = sl->n;
}

void kx_ustack_pair_counts(const struct kx_ustack_pair *p, struct kx_ustack_counts *c)
{
	*c = p->c;
}

void kx_ustack_facts(const struct kx_ustack_pair *p, const struct kx_sample_counts *sc,
                     struct kx_sample_info *si)
{
	struct kx_unwind_stats st;

	kx_unwinder_stats(p->uw, &st);
	si->stacks[KX_DW_UNWOUND] = p->c.unwound;
	si->stacks[KX_DW_PARTIAL] = p->c.partial;
	si->stacks[KX_DW_FAILED] = p->c.failed;
	si->stacks[KX_DW_NO_COPY] = p->c.no_copy;
	si->stacks[KX_DW_COPY_FAULT] = sc->ustack_fault;
	si->stacks[KX_DW_COPIES] = p->c.copies;
	si->stacks[KX_DW_FP_KEPT] = p->c.fp_kept;
	si->stacks[KX_DW_JIT_STOPS] = p->c.jit_stops;
	/* py_steps: of jit_steps, unless a trampoline's page lay in a module's extent */
	si->stacks[KX_DW_JIT_STEPS] = st.jit_steps > st.py_steps ? st.jit_steps - st.py_steps : 0;
	si->stacks[KX_DW_PY_STEPS] = st.py_steps;
}

void kx_ustack_pair_free(struct kx_ustack_pair *p)
{
	if (!p)
		return;
	kx_unwinder_free(p->uw);
	for (uint32_t i = 0; i < p->nslots; i++)
		free(p->slots[i].raw);
	free(p->slots);
	free(p->off);
	free(p);
}
