/* The calls a windowed read's device timelines took, by place (contract: wcallmap.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/jobrec.h"
#include "analysis/wcallmap.h"

struct kx_wcallmap_ent {
	uint64_t n;   /* its number among its thread's calls (0: no call at this place yet) */
	uint64_t end; /* ns, its recorded end */
	uint32_t tid;
};

/* A thread: its calls taken, and its last ones (place + 1, number; 0: none). */
struct wc_thread {
	uint64_t n;
	struct {
		uint64_t place1, n;
	} last[KX_JOBFLOW_RECENT];
};

void kx_wcallmap_init(struct kx_wcallmap *m)
{
	memset(m, 0, sizeof(*m));
	m->threads = (struct kx_tidtab)KX_TIDTAB_INIT(struct wc_thread);
}

static struct kx_wcallmap_ent *at(const struct kx_wcallmap *m, uint64_t p)
{
	return &m->ring[p & (m->cap - 1)];
}

/* Room for places up to idx: the ring doubled (to the bound), else the
 * oldest let go. 0, or -1 when out of memory. */
static int room(struct kx_wcallmap *m, uint64_t idx)
{
	while (idx - m->lo >= m->cap && m->cap < KX_WCALLMAP_MAX) {
		size_t ncap = m->cap ? 2 * m->cap : 1024;
		struct kx_wcallmap_ent *v = calloc(ncap, sizeof(*v));

		if (!v)
			return -1;
		for (uint64_t p = m->lo; p < m->hi; p++)
			v[p & (ncap - 1)] = *at(m, p);
		free(m->ring);
		m->ring = v;
		m->cap = ncap;
	}
	while (idx - m->lo >= m->cap) {
		at(m, m->lo)->n = 0;
		m->lost = ++m->lo;
	}
	return 0;
}

int kx_wcallmap_add(struct kx_wcallmap *m, const struct kx_ioctl *e, uint64_t idx, int keep)
{
	struct wc_thread *t = kx_tidtab_get(&m->threads, e->tid, 1);

	if (!t)
		return -1;
	t->n++;
	t->last[t->n % KX_JOBFLOW_RECENT].place1 = idx + 1;
	t->last[t->n % KX_JOBFLOW_RECENT].n = t->n;
	if (!keep || idx < m->lo)
		return 0; /* its place was let go: a job of it is a reason */
	if (room(m, idx))
		return -1;
	for (; m->hi <= idx; m->hi++)
		at(m, m->hi)->n = 0;
	*at(m, idx) = (struct kx_wcallmap_ent){t->n, kx_ioctl_end(e), e->tid};
	return 0;
}

void kx_wcallmap_forget(struct kx_wcallmap *m, uint64_t swept_ns)
{
	while (m->lo < m->hi) {
		const struct kx_wcallmap_ent *c = at(m, m->lo);

		if (!c->n || c->end + KX_JOBS_LINK_WINDOW_NS >= swept_ns)
			return;
		m->lo++;
	}
}

int kx_wcallmap_find(const struct kx_wcallmap *m, uint64_t idx, uint32_t *tid, uint64_t *n,
                     int *lost)
{
	const struct kx_wcallmap_ent *c = idx >= m->lo && idx < m->hi ? at(m, idx) : NULL;
	const struct wc_thread *t;

	*lost = 0;
	if (c && c->n) {
		*tid = c->tid;
		*n = c->n;
		return 1;
	}
	t = kx_tidtab_find(&m->threads, *tid);
	for (unsigned int k = 0; t && k < KX_JOBFLOW_RECENT; k++)
		if (t->last[k].place1 == idx + 1) {
			*n = t->last[k].n;
			return 1;
		}
	*lost = idx < m->lost;
	return 0;
}

void kx_wcallmap_free(struct kx_wcallmap *m)
{
	kx_tidtab_free(&m->threads);
	free(m->ring);
	m->ring = NULL;
	m->cap = 0;
}
