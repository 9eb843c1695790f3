/*
 * The samples of a capture (see samples.h): arrays of samples, interned
 * stacks and their frames, thread names, each grown by doubling with the
 * growth charged to the budget before it is allocated.
 */
#include <stdlib.h>
#include <string.h>

#include "model/perfdata.h"
#include "model/symres.h"
#include "util/hashmap.h"

/* A thread's name from a sample on: the names of a thread chain back in
 * the order its samples brought them. */
struct comm_ent {
	char comm[KX_COMM_LEN];
	uint64_t since; /* ns, the first sample that carried it */
	uint32_t prev;  /* the thread's name before it: index + 1, 0 when none */
};

struct kx_samples {
	kx_charge_fn charge;
	void *ctx;
	struct kx_sample_ev *ev;
	size_t n, cap;
	struct kx_stack *stacks;
	size_t nstacks, stacks_cap;
	uint64_t *frames; /* every stack's frames, one after another */
	size_t nframes, frames_cap;
	struct kx_hmap by_hash; /* stack hash -> stack index (several per hash possible) */
	struct comm_ent *comms;
	size_t ncomms, comms_cap;
	struct kx_hmap by_tid; /* tid -> index in comms of its latest name */
	struct kx_ctr_ev *ctr; /* counters per traced call */
	size_t nctr, ctr_cap;
	uint64_t not_stored;
	uint64_t kinds[3]; /* samples stored per kind */
	struct kx_symres syms;
};

struct kx_samples *kx_samples_new(kx_charge_fn charge, void *ctx)
{
	struct kx_samples *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->charge = charge;
	t->ctx = ctx;
	return t;
}

void kx_samples_free(struct kx_samples *t)
{
	if (!t)
		return;
	free(t->ev);
	free(t->stacks);
	free(t->frames);
	free(t->comms);
	free(t->ctr);
	kx_hmap_free(&t->by_hash);
	kx_hmap_free(&t->by_tid);
	kx_symres_free(&t->syms);
	free(t);
}

/* Room for `more` elements after `used` in *p (capacity *cap), the growth
 * charged first. 0, or -1 when the budget or memory refuse. */
static int room(struct kx_samples *t, void **p, size_t *cap, size_t used, size_t more, size_t size)
{
	size_t ncap = *cap ? *cap : 64;
	void *np;

	if (*cap - used >= more)
		return 0;
	while (ncap - used < more) {
		if (ncap > SIZE_MAX / 2 / size)
			return -1;
		ncap *= 2;
	}
	if (t->charge && t->charge(t->ctx, (long long)((ncap - *cap) * size)))
		return -1;
	np = realloc(*p, ncap * size);
	if (!np) {
		if (t->charge)
			t->charge(t->ctx, -(long long)((ncap - *cap) * size));
		return -1;
	}
	*p = np;
	*cap = ncap;
	return 0;
}

/* Room for one more entry in map m, charged. */
static int map_room(struct kx_samples *t, struct kx_hmap *m)
{
	size_t grow = kx_hmap_grow_bytes(m), old = m->cap * sizeof(struct kx_hslot);

	if (!grow)
		return 0;
	if (t->charge && t->charge(t->ctx, (long long)grow))
		return -1;
	if (kx_hmap_reserve(m)) {
		if (t->charge)
			t->charge(t->ctx, -(long long)grow);
		return -1;
	}
	if (t->charge)
		t->charge(t->ctx, -(long long)old);
	return 0;
}

static uint64_t stack_hash(const uint64_t *ips, uint32_t nk, uint32_t nu)
{
	uint64_t h = kx_hash_combine(0, (uint64_t)nk << 32 | nu);

	for (uint32_t i = 0; i < nk + nu; i++)
		h = kx_hash_combine(h, ips[i]);
	return h;
}

static int same_stack(const struct kx_samples *t, const struct kx_stack *s, const uint64_t *ips,
                      uint32_t nk, uint32_t nu)
{
	return s->nk == nk && s->nu == nu &&
	       !memcmp(t->frames + s->off, ips, (size_t)(nk + nu) * sizeof(*ips));
}

long kx_samples_intern(struct kx_samples *t, const uint64_t *ips, uint32_t nk, uint32_t nu)
{
	uint64_t h = stack_hash(ips, nk, nu);
	size_t pos = KX_HMAP_START;
	struct kx_stack *s;
	uint32_t *v;

	if (nk > UINT16_MAX || nu > UINT16_MAX)
		return -1;
	while ((v = kx_hmap_next(&t->by_hash, h, &pos)) != NULL)
		if (same_stack(t, &t->stacks[*v], ips, nk, nu))
			return *v;
	if (t->nstacks >= UINT32_MAX || t->nframes + nk + nu > UINT32_MAX ||
	    room(t, (void **)&t->stacks, &t->stacks_cap, t->nstacks, 1, sizeof(*t->stacks)) ||
	    room(t, (void **)&t->frames, &t->frames_cap, t->nframes, nk + nu, sizeof(*t->frames)) ||
	    map_room(t, &t->by_hash))
		return -1;
	s = &t->stacks[t->nstacks];
	s->hash = h;
	s->off = (uint32_t)t->nframes;
	s->nk = (uint16_t)nk;
	s->nu = (uint16_t)nu;
	memcpy(t->frames + t->nframes, ips, (size_t)(nk + nu) * sizeof(*ips));
	t->nframes += nk + nu;
	kx_hmap_add(&t->by_hash, h, (uint32_t)t->nstacks);
	return (long)t->nstacks++;
}

int kx_samples_add_ev(struct kx_samples *t, const struct kx_sample_ev *e)
{
	if (e->stack >= t->nstacks || room(t, (void **)&t->ev, &t->cap, t->n, 1, sizeof(*t->ev))) {
		t->not_stored++;
		return -1;
	}
	t->ev[t->n++] = *e;
	if (e->kind < sizeof(t->kinds) / sizeof(t->kinds[0]))
		t->kinds[e->kind]++;
	return 0;
}

/* The stack of s interned: kernel frames then user frames. */
static long intern_sample(struct kx_samples *t, const struct kx_sample *s)
{
	uint64_t ips[2 * KX_SAMPLE_MAX_DEPTH];

	if (s->nk > KX_SAMPLE_MAX_DEPTH || s->nu > KX_SAMPLE_MAX_DEPTH)
		return -1;
	memcpy(ips, s->kips, s->nk * sizeof(*ips));
	memcpy(ips + s->nk, s->uips, s->nu * sizeof(*ips));
	return kx_samples_intern(t, ips, s->nk, s->nu);
}

/* A new name entry for tid (the one before it: prev). 0, or -1 as room. */
static int new_comm(struct kx_samples *t, uint32_t tid, uint64_t since, const char *comm,
                    uint32_t prev)
{
	struct comm_ent *c;
	int isnew;

	if (t->ncomms >= UINT32_MAX - 1 ||
	    room(t, (void **)&t->comms, &t->comms_cap, t->ncomms, 1, sizeof(*t->comms)) ||
	    map_room(t, &t->by_tid))
		return -1;
	*kx_hmap_put(&t->by_tid, tid, (uint32_t)t->ncomms, &isnew) = (uint32_t)t->ncomms;
	c = &t->comms[t->ncomms++];
	memset(c, 0, sizeof(*c));
	strncpy(c->comm, comm, sizeof(c->comm) - 1);
	c->since = since;
	c->prev = prev;
	return 0;
}

/* The name a sample of tid at ts carried: a new entry when it changed. */
static int note_comm(struct kx_samples *t, uint32_t tid, uint64_t ts, const char *comm)
{
	const uint32_t *i = kx_hmap_get(&t->by_tid, tid);

	if (i && !strncmp(t->comms[*i].comm, comm, KX_COMM_LEN - 1))
		return 0;
	return new_comm(t, tid, ts, comm, i ? *i + 1 : 0);
}

int kx_samples_add(struct kx_samples *t, const struct kx_sample *s)
{
	long stack = intern_sample(t, s);
	struct kx_sample_ev e;

	if (stack < 0 || note_comm(t, s->tid, s->ts_ns, s->comm)) {
		t->not_stored++;
		return -1;
	}
	e = (struct kx_sample_ev){
	        .ts = s->ts_ns,
	        .weight = s->weight_ns,
	        .call_ts = s->call.ts,
	        .pid = s->pid,
	        .tid = s->tid,
	        .stack = (uint32_t)stack,
	        .exec_id = s->exec_id,
	        .call_cmd = s->call.cmd,
	        .call_dev = s->call.dev,
	        .cpu = (uint16_t)s->cpu,
	        .call_fkind = (uint8_t)s->call.fkind,
	        .call_drv = (uint8_t)s->call.drv,
	        .call_xfer = s->call.xfer_cmd <= 0xff ? (uint8_t)s->call.xfer_cmd : 0,
	        .kind = s->kind,
	        .flags = (uint8_t)s->flags,
	};
	return kx_samples_add_ev(t, &e);
}

size_t kx_samples_count(const struct kx_samples *t)
{
	return t->n;
}

const struct kx_sample_ev *kx_samples_get(const struct kx_samples *t, size_t i)
{
	return i < t->n ? &t->ev[i] : NULL;
}

size_t kx_samples_nstacks(const struct kx_samples *t)
{
	return t->nstacks;
}

const uint64_t *kx_samples_stack(const struct kx_samples *t, uint32_t i, uint32_t *nk, uint32_t *nu)
{
	if (i >= t->nstacks) {
		*nk = *nu = 0;
		return NULL;
	}
	*nk = t->stacks[i].nk;
	*nu = t->stacks[i].nu;
	return t->frames + t->stacks[i].off;
}

uint64_t kx_samples_not_stored(const struct kx_samples *t)
{
	return t->not_stored;
}

uint64_t kx_samples_of_kind(const struct kx_samples *t, unsigned int kind)
{
	return kind < sizeof(t->kinds) / sizeof(t->kinds[0]) ? t->kinds[kind] : 0;
}

const char *kx_samples_comm(const struct kx_samples *t, uint32_t tid)
{
	const uint32_t *i = kx_hmap_get(&t->by_tid, tid);

	return i ? t->comms[*i].comm : NULL;
}

int kx_samples_set_comm(struct kx_samples *t, uint32_t tid, const char *comm)
{
	uint32_t *i = kx_hmap_get(&t->by_tid, tid);
	struct comm_ent *c;

	if (!i)
		return new_comm(t, tid, 0, comm, 0);
	c = &t->comms[*i];
	strncpy(c->comm, comm, sizeof(c->comm) - 1);
	c->comm[sizeof(c->comm) - 1] = 0;
	return 0;
}

uint32_t kx_samples_comm_id_at(const struct kx_samples *t, uint32_t tid, uint64_t ts)
{
	const uint32_t *i = kx_hmap_get(&t->by_tid, tid);
	uint32_t at = i ? *i : UINT32_MAX;

	while (at != UINT32_MAX && t->comms[at].since > ts && t->comms[at].prev)
		at = t->comms[at].prev - 1;
	return at == UINT32_MAX ? 0 : at + 1;
}

const char *kx_samples_comm_name(const struct kx_samples *t, uint32_t id)
{
	return id && id <= t->ncomms ? t->comms[id - 1].comm : NULL;
}

struct kx_symres *kx_samples_syms(struct kx_samples *t)
{
	return &t->syms;
}

const struct kx_symres *kx_samples_syms_const(const struct kx_samples *t)
{
	return &t->syms;
}

int kx_samples_add_ctr(struct kx_samples *t, const struct kx_ctr_ev *e)
{
	if (room(t, (void **)&t->ctr, &t->ctr_cap, t->nctr, 1, sizeof(*t->ctr))) {
		t->not_stored++;
		return -1;
	}
	t->ctr[t->nctr++] = *e;
	return 0;
}

size_t kx_samples_nctr(const struct kx_samples *t)
{
	return t->nctr;
}

const struct kx_ctr_ev *kx_samples_ctr(const struct kx_samples *t, size_t i)
{
	return i < t->nctr ? &t->ctr[i] : NULL;
}
