/*
 * libkxprof_itt.so: an ITT collector (INTEL_LIBITTNOTIFY64) that turns ITT
 * tasks into kxprof annotations: __itt_task_begin(domain, ..., name) is a
 * thread range named `name` with the domain's name as its category,
 * __itt_task_end(domain) ends it. PyTorch calls them for every operator and
 * record_function scope under torch.autograd.profiler.emit_itt(), in domain
 * "PyTorch". The ITT static part linked into the program loads this library
 * on its first call and hands __itt_api_init its table of function
 * pointers: the two task calls are bound to kxprof, and the two create
 * calls to this library (once a collector is bound, the static part creates
 * no more names itself); every other one to the static part's own no-op.
 * Owns the domains and names it creates, interned by their text (PyTorch
 * asks for an operator's name at every call) and kept for the life of the
 * process, as ITT's own are.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "itt_types.h"
#include "kxprof_annotate.h"
#include "util/hashmap.h"

/* ---- names and domains: interned, never freed ---- */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct kx_hmap by_text = KX_HMAP_INIT; /* hash of text -> index in recs */
static const char **texts;                    /* the interned texts */
static void **recs;                           /* their handles (names or domains) */
static size_t nrecs, caprecs;

/* The handle interned for (kind, text), made by make() when absent; NULL on OOM. */
static void *intern(int kind, const char *text, void *(*make)(const char *))
{
	uint64_t key = kx_hash_combine(kx_hash_bytes(text, strlen(text)), (uint64_t)kind);
	size_t pos = KX_HMAP_START;
	void *h = NULL;
	uint32_t *v;

	pthread_mutex_lock(&lock);
	while ((v = kx_hmap_next(&by_text, key, &pos)))
		if (strcmp(texts[*v], text) == 0) {
			h = recs[*v];
			goto out;
		}
	if (nrecs == caprecs) {
		size_t cap = caprecs ? caprecs * 2 : 256;
		const char **t = realloc(texts, cap * sizeof(*t));
		void **r = t ? realloc(recs, cap * sizeof(*r)) : NULL;

		if (t)
			texts = t;
		if (!r)
			goto out;
		recs = r;
		caprecs = cap;
	}
	h = make(text);
	if (!h || kx_hmap_add(&by_text, key, (uint32_t)nrecs) != 0) {
		h = NULL; /* a handle lost to OOM: at most one, never freed twice */
		goto out;
	}
	texts[nrecs] = kind ? ((itt_domain *)h)->nameA : ((itt_string_handle *)h)->strA;
	recs[nrecs++] = h;
out:
	pthread_mutex_unlock(&lock);
	return h;
}

static void *make_name(const char *text)
{
	itt_string_handle *h = calloc(1, sizeof(*h));

	if (h && !(h->strA = strdup(text))) {
		free(h);
		return NULL;
	}
	return h;
}

static void *make_domain(const char *text)
{
	itt_domain *d = calloc(1, sizeof(*d));

	if (d && !(d->nameA = strdup(text))) {
		free(d);
		return NULL;
	}
	if (d)
		d->flags = 1; /* enabled: the static part calls nothing for a disabled domain */
	return d;
}

static itt_string_handle *string_handle_create(const char *name)
{
	return name ? intern(0, name, make_name) : NULL;
}

static itt_domain *domain_create(const char *name)
{
	return name ? intern(1, name, make_domain) : NULL;
}

/* ---- tasks ---- */

static void task_begin(const itt_domain *d, itt_id id, itt_id parent, itt_string_handle *name)
{
	(void)id;
	(void)parent;
	kxprof_range_push_cat(name && name->strA ? name->strA : "(unnamed task)",
	                      d && d->nameA ? d->nameA : NULL);
}

static void task_end(const itt_domain *d)
{
	(void)d;
	kxprof_range_pop();
}

static const struct {
	const char *name;
	void *fn;
} bound[] = {
        {"__itt_task_begin", (void *)task_begin},
        {"__itt_task_end", (void *)task_end},
        {"__itt_string_handle_create", (void *)string_handle_create},
        {"__itt_domain_create", (void *)domain_create},
};

static void *lookup(const char *name)
{
	for (size_t i = 0; i < sizeof(bound) / sizeof(bound[0]); i++)
		if (strcmp(name, bound[i].name) == 0)
			return bound[i].fn;
	return NULL;
}

/* The collector's entry point (ITT v2 collectors): called once per static part. */
__attribute__((visibility("default"))) void __itt_api_init(itt_global *g, itt_group_id groups)
{
	static const unsigned char magic[8] = ITT_GLOBAL_MAGIC;

	(void)groups;
	/* Another layout than the one written here: bind nothing, stay silent. */
	if (!g || memcmp(g->magic, magic, sizeof(magic)) != 0 || !g->api_list_ptr)
		return;
	for (itt_api_info *a = g->api_list_ptr; a->name; a++) {
		void *fn = lookup(a->name);

		if (a->func_ptr)
			*a->func_ptr = fn ? fn : a->null_func;
	}
}
