/* Where annotation ranges left open end (contract: range_ends.h). */
#include "analysis/range_ends.h"

static void later(uint64_t *at, uint64_t ns)
{
	if (at && ns > *at)
		*at = ns;
}

int kx_range_ends_ann(struct kx_range_ends *e, uint32_t pid, uint32_t tid, uint64_t ns)
{
	uint64_t *t = kx_tidtab_get(&e->threads, tid, 1);
	uint64_t *p = t ? kx_tidtab_get(&e->procs, pid, 1) : NULL;

	if (!p)
		return -1;
	later(t, ns);
	later(p, ns);
	return 0;
}

void kx_range_ends_ioctl(struct kx_range_ends *e, uint32_t pid, uint32_t tid, uint64_t end_ns)
{
	uint64_t *t = kx_tidtab_find(&e->threads, tid);

	if (!t)
		return;
	later(t, end_ns);
	later(kx_tidtab_find(&e->procs, pid), end_ns);
}

void kx_range_ends_exits(struct kx_range_ends *e, const struct kx_store *s)
{
	size_t n = kx_store_task_count(s);

	for (size_t i = 0; i < n; i++) {
		const struct kx_task *t = kx_store_task(s, i);

		if (t->what != KX_TASK_EXIT)
			continue;
		later(kx_tidtab_find(&e->threads, t->tid), t->ts);
		later(kx_tidtab_find(&e->procs, t->pid), t->ts);
	}
}

static uint64_t end_of(const struct kx_tidtab *tab, uint32_t id, uint64_t begin)
{
	const uint64_t *at = kx_tidtab_find(tab, id);

	return at && *at > begin ? *at : begin;
}

uint64_t kx_range_end_thread(const struct kx_range_ends *e, uint32_t tid, uint64_t begin)
{
	return end_of(&e->threads, tid, begin);
}

uint64_t kx_range_end_process(const struct kx_range_ends *e, uint32_t pid, uint64_t begin)
{
	return end_of(&e->procs, pid, begin);
}

void kx_range_ends_free(struct kx_range_ends *e)
{
	kx_tidtab_free(&e->threads);
	kx_tidtab_free(&e->procs);
}
