/*
 * Counters joined to their calls as the records stream by (contract:
 * sctrstats.h): the waiting records by (thread, enter time), each thread's
 * last ioctl.
 */
#include <stdlib.h>
#include <string.h>

#include "analysis/sctrstats.h"
#include "util/grow.h"

/* A thread's last ioctl: where a record that comes after its call goes. */
struct kx_sctr_thread {
	uint64_t ts; /* ns, its enter */
	int joined;  /* it has its record (or there is none yet) */
	struct kx_ioctl e;
};

int kx_sctrstats_init(struct kx_sctrstats *s, const struct kx_capinfo *ci)
{
	memset(s, 0, sizeof(*s));
	s->wait = (struct kx_slots)KX_SLOTS_INIT(struct kx_ctr_ev);
	s->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct kx_sctr_thread);
	s->cs = kx_ctrstats_new(ci);
	return s->cs ? 0 : -1;
}

static struct kx_sctr_thread *thread_get(struct kx_sctrstats *s, uint32_t tid, int make)
{
	struct kx_sctr_thread *t = kx_tidtab_find(&s->threads, tid);

	if (t || !make)
		return t;
	t = kx_tidtab_get(&s->threads, tid, 1);
	if (t)
		t->joined = 1; /* no ioctl yet: nothing to join */
	return t;
}

/* Call e's readings c into its row. */
static int join(struct kx_sctrstats *s, const struct kx_ioctl *e, const struct kx_ctr_ev *c)
{
	long r = kx_ctrstats_row(s->cs, &s->ix, &s->rcap, e);

	if (r < 0)
		return -1;
	kx_ctrrow_add(s->cs, &s->cs->rows[r], c);
	s->matched++;
	return 0;
}

static int wait_add(struct kx_sctrstats *s, const struct kx_ctr_ev *c)
{
	long i = kx_slots_get(&s->wait);

	if (i < 0)
		return -1;
	if (kx_ctr_join_add(&s->waiting, c, (uint32_t)i)) {
		kx_slots_put(&s->wait, (size_t)i);
		return -1;
	}
	*(struct kx_ctr_ev *)kx_slots_at(&s->wait, (size_t)i) = *c;
	return 0;
}

int kx_sctrstats_ctr(struct kx_sctrstats *s, const struct kx_ctr_ev *c)
{
	struct kx_sctr_thread *t = thread_get(s, c->tid, 0);

	s->records++;
	kx_ctrstats_note(s->cs, c);
	if (t && !t->joined && t->ts == c->ts) {
		t->joined = 1; /* after its call */
		return join(s, &t->e, c);
	}
	if (t && c->ts < t->ts && !s->why)
		s->why = "a counter record came after a later call of its thread";
	return wait_add(s, c);
}

static const struct kx_ctr_ev *waiting(const void *wait, uint32_t v)
{
	return kx_slots_at(wait, v);
}

/* The waiting record of call e, taken out of the table; NULL when none. */
static const struct kx_ctr_ev *take(struct kx_sctrstats *s, const struct kx_ioctl *e)
{
	const struct kx_ctr_ev *c;
	size_t pos;
	uint32_t v;

	c = kx_ctr_join_find(&s->waiting, e->tid, e->ts, waiting, &s->wait, &v, &pos);
	if (c) {
		kx_slots_put(&s->wait, v); /* c stays readable until the next get */
		kx_hmap_del_at(&s->waiting, pos);
	}
	return c;
}

int kx_sctrstats_ioctl(struct kx_sctrstats *s, const struct kx_ioctl *e)
{
	struct kx_sctr_thread *t = thread_get(s, e->tid, 1);
	const struct kx_ctr_ev *c;

	if (!t)
		return -1;
	c = s->waiting.n ? take(s, e) : NULL;
	t->ts = e->ts;
	t->e = *e;
	t->joined = c != NULL;
	return c ? join(s, e, c) : 0;
}

struct kx_ctrstats *kx_sctrstats_finish(struct kx_sctrstats *s, const struct kx_capinfo *ci)
{
	struct kx_ctrstats *fresh = kx_ctrstats_new(ci), *cs = s->cs;

	if (!fresh)
		return NULL;
	/* The capture's counts from the trailer; the rows and flags from the stream. */
	memcpy(cs->stats, fresh->stats, sizeof(cs->stats));
	kx_ctrstats_free(fresh);
	cs->unmatched = s->records - s->matched;
	kx_ctrstats_sort(cs);
	s->cs = NULL;
	return cs;
}

void kx_sctrstats_free(struct kx_sctrstats *s)
{
	kx_ctrstats_free(s->cs);
	kx_hmap_free(&s->ix);
	kx_hmap_free(&s->waiting);
	kx_slots_free(&s->wait);
	kx_tidtab_free(&s->threads);
	memset(s, 0, sizeof(*s));
}
