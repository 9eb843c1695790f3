/* DRM usage per process (see analysis/drmstats.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/drmstats.h"
#include "util/grow.h"

static int same_key(uint32_t pid, const char *driver, const char *pdev, const char *name,
                    const struct kx_drm_ev *e)
{
	return pid == e->pid && !strcmp(driver, e->driver) && !strcmp(pdev, e->pdev) &&
	       !strcmp(name, e->name);
}

/* Closes an engine's pass: its summed share counts toward the peak. */
static void eng_close(struct kx_drm_proc_engine *g)
{
	if (g->cur_share > g->peak)
		g->peak = g->cur_share;
	g->cur_share = 0;
}

static void mem_close(struct kx_drm_proc_mem *m)
{
	if (!m->cur_ts)
		return;
	memcpy(m->last, m->cur, sizeof(m->last));
	if (m->cur[KX_DRM_MEM_RESIDENT] > m->peak_resident)
		m->peak_resident = m->cur[KX_DRM_MEM_RESIDENT];
}

static struct kx_drm_proc_engine *eng_of(struct kx_drmstats *s, const struct kx_drm_ev *e)
{
	struct kx_drm_proc_engine *g;

	for (size_t i = 0; i < s->neng; i++)
		if (same_key(s->eng[i].pid, s->eng[i].driver, s->eng[i].pdev, s->eng[i].engine, e))
			return &s->eng[i];
	if (kx_grow((void **)&s->eng, &s->eng_cap, s->neng, sizeof(*s->eng)))
		return NULL;
	g = &s->eng[s->neng++];
	memset(g, 0, sizeof(*g));
	g->pid = e->pid;
	memcpy(g->comm, e->comm, sizeof(g->comm));
	memcpy(g->driver, e->driver, sizeof(g->driver));
	memcpy(g->pdev, e->pdev, sizeof(g->pdev));
	memcpy(g->engine, e->name, sizeof(g->engine));
	return g;
}

static struct kx_drm_proc_mem *mem_of(struct kx_drmstats *s, const struct kx_drm_ev *e)
{
	struct kx_drm_proc_mem *m;

	for (size_t i = 0; i < s->nmem; i++)
		if (same_key(s->mem[i].pid, s->mem[i].driver, s->mem[i].pdev, s->mem[i].region, e))
			return &s->mem[i];
	if (kx_grow((void **)&s->mem, &s->mem_cap, s->nmem, sizeof(*s->mem)))
		return NULL;
	m = &s->mem[s->nmem++];
	memset(m, 0, sizeof(*m));
	m->pid = e->pid;
	memcpy(m->comm, e->comm, sizeof(m->comm));
	memcpy(m->driver, e->driver, sizeof(m->driver));
	memcpy(m->pdev, e->pdev, sizeof(m->pdev));
	memcpy(m->region, e->name, sizeof(m->region));
	return m;
}

static int add_engine(struct kx_drmstats *s, const struct kx_drm_ev *e)
{
	struct kx_drm_proc_engine *g = eng_of(s, e);
	double share = kx_drm_ev_busy(e);

	if (!g)
		return -1;
	if (share < 0)
		return 0; /* first sight: no figure */
	if (g->cur_ts != e->ts) {
		eng_close(g);
		g->cur_ts = e->ts;
		g->observed_ns += e->interval_ns; /* once per pass, whatever the clients */
	}
	g->capacity = e->capacity ? e->capacity : 1;
	g->basis = e->basis;
	g->cur_share += share;
	g->busy_ns += share * (double)e->interval_ns * g->capacity;
	return 0;
}

static int add_memory(struct kx_drmstats *s, const struct kx_drm_ev *e)
{
	struct kx_drm_proc_mem *m = mem_of(s, e);

	if (!m)
		return -1;
	if (m->cur_ts != e->ts) {
		mem_close(m);
		m->cur_ts = e->ts;
		memset(m->cur, 0, sizeof(m->cur));
	}
	m->has |= e->has;
	for (int i = 0; i < KX_DRM_MEM_MAX; i++)
		m->cur[i] += e->v[i];
	return 0;
}

/* Adds one row. 0, or -1 when out of memory. */
static int drmstats_add(struct kx_drmstats *s, const struct kx_drm_ev *e)
{
	s->rows++;
	if (e->kind == KX_DRM_ENGINE)
		return add_engine(s, e);
	if (e->kind == KX_DRM_MEMORY)
		return add_memory(s, e);
	return 0;
}

double kx_drm_proc_engine_busy(const struct kx_drm_proc_engine *e)
{
	if (!e->observed_ns)
		return -1;
	return e->busy_ns / ((double)e->observed_ns * (e->capacity ? e->capacity : 1));
}

static int eng_cmp(const void *a, const void *b)
{
	double x = kx_drm_proc_engine_busy(a), y = kx_drm_proc_engine_busy(b);
	const struct kx_drm_proc_engine *p = a, *q = b;

	if (x != y)
		return x < y ? 1 : -1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return strcmp(p->engine, q->engine);
}

static int mem_cmp(const void *a, const void *b)
{
	const struct kx_drm_proc_mem *p = a, *q = b;
	uint64_t x = p->last[KX_DRM_MEM_RESIDENT], y = q->last[KX_DRM_MEM_RESIDENT];

	if (x != y)
		return x < y ? 1 : -1;
	if (p->pid != q->pid)
		return p->pid < q->pid ? -1 : 1;
	return strcmp(p->region, q->region);
}

/* Ends the sums and sorts: engines busiest first, memory largest resident first. */
static void drmstats_finish(struct kx_drmstats *s)
{
	for (size_t i = 0; i < s->neng; i++)
		eng_close(&s->eng[i]);
	for (size_t i = 0; i < s->nmem; i++)
		mem_close(&s->mem[i]);
	if (s->neng)
		qsort(s->eng, s->neng, sizeof(*s->eng), eng_cmp);
	if (s->nmem)
		qsort(s->mem, s->nmem, sizeof(*s->mem), mem_cmp);
}

struct kx_drmstats *kx_drmstats_build(const struct kx_drm_ev *rows, size_t n)
{
	struct kx_drmstats *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (drmstats_add(s, &rows[i])) {
			kx_drmstats_free(s);
			return NULL;
		}
	drmstats_finish(s);
	return s;
}

void kx_drmstats_free(struct kx_drmstats *s)
{
	if (!s)
		return;
	free(s->eng);
	free(s->mem);
	free(s);
}
