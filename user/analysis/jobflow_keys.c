/*
 * The streamed device timelines' closed keys (jobflow_int.h): remembered
 * while among the last KX_JOBFLOW_CLOSED closed and within the window,
 * then forgotten: a reused key into a table, a unique key as the top
 * seqno forgotten of its context.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/jobflow.h"
#include "analysis/jobflow_int.h"
#include "util/grow.h"
#include "util/hashmap.h"

/* Unique key c forgotten: its context's seqnos up to it may be forgotten ones. */
static int passed_put(struct kx_jobflow *f, const struct kx_jobflow_key *c)
{
	struct kx_keyslot *sl = kx_keymap_get(&f->passed, c->k[0], c->k[1], 0);

	if (!sl)
		return -1;
	if (c->k[2] + 1 > sl->v)
		sl->v = c->k[2] + 1;
	return 0;
}

/* Unique key k of a job taken as never done (jf_keyed_unblock): forgotten
 * now, so that a later event on it is told (a reason, jf_forgotten). */
int jf_pass_key(struct kx_jobflow *f, const uint64_t k[3])
{
	struct kx_keyslot *sl = kx_keymap_find(&f->keys, k[0], k[1], k[2]);
	struct kx_jobflow_key c = {{k[0], k[1], k[2]}, 0, NO_SLOT, 0, 0, 0, 0};

	if (sl)
		kx_keymap_del(&f->keys, sl);
	return passed_put(f, &c);
}

/* Reused key c forgotten: into the table (over another: that slot is lost). */
static int gone_put(struct kx_jobflow *f, const struct kx_jobflow_key *c)
{
	struct kx_jobflow_key *g;

	if (!f->gone && !(f->gone = calloc(KX_JOBFLOW_GONE, sizeof(*f->gone))))
		return -1;
	g = &f->gone[kx_hash_bytes(c->k, sizeof(c->k)) % KX_JOBFLOW_GONE];
	if (g->used && memcmp(g->k, c->k, sizeof(g->k)))
		g->lost = 1;
	memcpy(g->k, c->k, sizeof(g->k));
	g->used = 1;
	return 0;
}

/* A key closed long ago, forgotten (its job counted if still held): into the table. */
static int forget(struct kx_jobflow *f, const struct kx_jobflow_key *c)
{
	struct kx_keyslot *sl;
	int mine = 0;

	if (c->slot != NO_SLOT &&
	    ((struct fl_kjob *)kx_slots_at(&f->open, c->slot))->gen == c->gen) {
		sl = kx_keymap_find(&f->keys, c->k[0], c->k[1], c->k[2]);
		mine = sl && sl->v == (uint64_t)c->slot + 1;
		if (jf_keyed_out(f, c->slot, 0))
			return -1;
	}
	sl = kx_keymap_find(&f->keys, c->k[0], c->k[1], c->k[2]);
	/* Opened again since: remembered again when it closes. */
	if (!sl || !(mine || sl->v == KEY_CLOSED))
		return 0;
	kx_keymap_del(&f->keys, sl);
	return c->reusable ? gone_put(f, c) : passed_put(f, c);
}

/* Was key k forgotten (1), never (0), or cannot it be told (-1)? A unique
 * key at or below one of its context forgotten cannot be told. */
int jf_forgotten(const struct kx_jobflow *f, const uint64_t k[3], int reusable)
{
	const struct kx_jobflow_key *g;

	if (!reusable) {
		const struct kx_keyslot *sl = kx_keymap_find(&f->passed, k[0], k[1], 0);

		return sl && k[2] < sl->v ? -1 : 0;
	}
	if (!f->gone)
		return 0;
	g = &f->gone[kx_hash_bytes(k, 3 * sizeof(*k)) % KX_JOBFLOW_GONE];
	if (g->used && !memcmp(g->k, k, sizeof(g->k)))
		return 1;
	return g->lost ? -1 : 0;
}

/* Key k closed at done (ns), its job held in slot (gen) or counted
 * (NO_SLOT): remembered; the oldest forgotten past KX_JOBFLOW_CLOSED or
 * KX_JOBFLOW_WINDOW_NS before the latest record paired. */
int jf_remember(struct kx_jobflow *f, const uint64_t k[3], uint64_t done, uint32_t slot,
                uint32_t gen, int reusable)
{
	struct kx_jobflow_key *c;

	if (f->chead && f->chead * 2 >= f->nclosed) {
		memmove(f->closed, f->closed + f->chead, (f->nclosed - f->chead) * sizeof(*c));
		f->nclosed -= f->chead;
		f->chead = 0;
	}
	if (kx_grow((void **)&f->closed, &f->ccap, f->nclosed, sizeof(*f->closed)))
		return -1;
	c = &f->closed[f->nclosed++];
	*c = (struct kx_jobflow_key){{k[0], k[1], k[2]}, done, slot, gen, (uint8_t)reusable, 0, 0};
	return 0;
}

/* The oldest closed keys past the bounds forgotten. */
int jf_forget_old(struct kx_jobflow *f)
{
	while (f->chead < f->nclosed &&
	       (f->nclosed - f->chead > f->lim.closed ||
	        jf_out_of_window(f, f->closed[f->chead].done, f->rel_ts))) {
		struct kx_jobflow_key c = f->closed[f->chead++];

		if (forget(f, &c))
			return -1;
	}
	return 0;
}
