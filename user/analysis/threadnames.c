/* The names a thread had over a capture (contract: threadnames.h). */
#include <stdlib.h>
#include <string.h>

#include "analysis/threadnames.h"

static int run_cmp(const void *pa, const void *pb)
{
	const struct kx_name_run *a = pa, *b = pb;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->since != b->since)
		return a->since < b->since ? -1 : 1;
	return a->task < b->task ? -1 : a->task > b->task;
}

/* Keeps, per thread, the records where its name changed; drops the threads
 * left with one name. */
static void squeeze(struct kx_thread_names *tn)
{
	size_t m = 0;

	for (size_t i = 0; i < tn->n;) {
		size_t j = i, keep = m;

		for (; j < tn->n && tn->runs[j].tid == tn->runs[i].tid; j++)
			if (m == keep ||
			    strncmp(tn->runs[m - 1].comm, tn->runs[j].comm, KX_COMM_LEN))
				tn->runs[m++] = tn->runs[j];
		if (m - keep < 2)
			m = keep;
		i = j;
	}
	tn->n = m;
}

int kx_thread_names_build(struct kx_thread_names *tn, const struct kx_store *s)
{
	size_t n = kx_store_task_count(s);

	memset(tn, 0, sizeof(*tn));
	tn->runs = malloc((n ? n : 1) * sizeof(*tn->runs));
	if (!tn->runs || n > UINT32_MAX)
		return -1;
	for (size_t i = 0; i < n; i++) {
		const struct kx_task *t = kx_store_task(s, i);

		struct kx_name_run *r = &tn->runs[tn->n];

		if (!t->comm[0])
			continue;
		*r = (struct kx_name_run){.since = t->ts, .tid = t->tid, .task = (uint32_t)i};
		memcpy(r->comm, t->comm, sizeof(r->comm));
		r->comm[sizeof(r->comm) - 1] = 0;
		tn->n++;
	}
	if (tn->n > 1)
		qsort(tn->runs, tn->n, sizeof(*tn->runs), run_cmp);
	squeeze(tn);
	for (size_t i = 0; i < tn->n; i++)
		if ((!i || tn->runs[i - 1].tid != tn->runs[i].tid) &&
		    kx_hmap_add(&tn->first, tn->runs[i].tid, (uint32_t)i))
			return -1;
	return 0;
}

const char *kx_thread_name_at(const struct kx_thread_names *tn, uint32_t tid, uint64_t ts)
{
	const uint32_t *i = tn->n ? kx_hmap_get(&tn->first, tid) : NULL;
	size_t k;

	if (!i)
		return NULL;
	for (k = *i; k + 1 < tn->n && tn->runs[k + 1].tid == tid && tn->runs[k + 1].since <= ts;
	     k++)
		;
	return tn->runs[k].comm;
}

void kx_thread_names_free(struct kx_thread_names *tn)
{
	free(tn->runs);
	kx_hmap_free(&tn->first);
	memset(tn, 0, sizeof(*tn));
}
