/* Stand-ins for kernel addresses (see kmask.h). */
#include "symbol/kmask.h"
#include "symbol/symbolizer.h"

static uint64_t stand_in(uint32_t id)
{
	return KX_KMASK_BASE + KX_KMASK_STEP * ((uint64_t)id + 1);
}

int kx_kmask_frames(struct kx_kmask *m, const uint64_t *ips, uint32_t nk, uint64_t *out)
{
	int rc = 0;

	for (uint32_t i = 0; i < nk; i++) {
		uint64_t a = kx_frame_addr(ips[i], i);
		uint32_t *id;
		int isnew;

		out[i] = 0;
		if (!a)
			continue;
		id = kx_hmap_put(&m->ids, a, m->n, &isnew);
		if (!id) {
			rc = -1;
			continue;
		}
		if (isnew)
			m->n++;
		/* A caller's frame: kx_frame_addr takes one off again. */
		out[i] = stand_in(*id) + (i > 0);
	}
	return rc;
}

const struct kx_sample *kx_kmask_sample(struct kx_kmask *m, const struct kx_sample *s,
                                        struct kx_sample *tmp, uint64_t *kips, int *oom)
{
	if (!s->nk)
		return s;
	*tmp = *s;
	tmp->nk = s->nk < KX_SAMPLE_MAX_DEPTH ? s->nk : KX_SAMPLE_MAX_DEPTH;
	if (kx_kmask_frames(m, s->kips, tmp->nk, kips))
		*oom = 1;
	tmp->kips = kips;
	return tmp;
}

uint64_t kx_kmask_addr(const struct kx_kmask *m, uint64_t addr)
{
	const uint32_t *id = kx_hmap_get(&m->ids, addr);

	return id ? stand_in(*id) : 0;
}

uint64_t kx_kmask_key(struct kx_kmask *m, uint64_t v)
{
	uint32_t *id;
	int isnew;

	if (v < KX_KMASK_KERNEL_MIN)
		return v;
	id = kx_hmap_put(&m->ids, v, m->n, &isnew);
	if (!id)
		return 0;
	if (isnew)
		m->n++;
	return stand_in(*id);
}

void kx_kmask_free(struct kx_kmask *m)
{
	kx_hmap_free(&m->ids);
	m->n = 0;
}
