/*
 * libkxprof_nvtx.so: an NVTX v3 injection library (NVTX_INJECTION64_PATH)
 * that turns NVTX marks and ranges into kxprof annotations, with domain
 * names as categories (kxprof nests a thread's ranges of every domain in one
 * stack). Only one injection is loaded per process, so when
 * KXPROF_NVTX_FORWARD names a previous injection library, it is loaded and
 * initialised through a wrapped export table: it fills kxprof's copy of the
 * slots, and every call goes to kxprof then to it, with its own domain,
 * string and range handles. Slots kxprof does not handle go to it directly.
 * Owns the domain and registered-string handles it gives out and the map of
 * cross-thread range ids to the previous tool's ids.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "glibc_compat.h"
#include "kxprof_annotate.h"
#include "nvtx_types.h"

#define MSG_MAX 96 /* bytes of a converted wide message */

struct string {
	char text[MSG_MAX];
	nvtxStringHandle_t prev;
	struct string *next; /* of its domain */
};

struct domain {
	char name[64];
	nvtxDomainHandle_t prev;
	struct string *strings; /* registered in it: freed with it */
};

/* Strings registered in the default domain (NULL): live as long as the process. */
static struct string *default_strings;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- the previous injection ---- */

/* Its functions: kxprof's copy of the slots, filled by its initialisation. */
static NvtxFunctionPointer prev_core[NVTX_CBID_CORE_SIZE];
static NvtxFunctionPointer prev_core2[NVTX_CBID_CORE2_SIZE];
static NvtxFunctionPointer *prev_core_tab[NVTX_CBID_CORE_SIZE + 1];
static NvtxFunctionPointer *prev_core2_tab[NVTX_CBID_CORE2_SIZE + 1];
static NvtxInitializeInjectionNvtxFunc_t prev_init;
static int prev_tried;
/* The client being initialised: what the previous tool's export table defers to. */
static NvtxGetExportTableFunc_t client_get;
static const NvtxExportTableCallbacks *client_cb;

#define PREV(mod, id, type) ((type)prev_##mod[NVTX_CBID_##id])

static int fwd_module_table(NvtxCallbackModule module, NvtxFunctionTable *out, unsigned int *size)
{
	if (module == NVTX_CB_MODULE_CORE || module == NVTX_CB_MODULE_CORE2) {
		if (out)
			*out = module == NVTX_CB_MODULE_CORE ? prev_core_tab : prev_core2_tab;
		if (size)
			*size = module == NVTX_CB_MODULE_CORE ? NVTX_CBID_CORE_SIZE
			                                      : NVTX_CBID_CORE2_SIZE;
		return 1;
	}
	/* Modules kxprof does not handle: the client's own slots. */
	return client_cb ? client_cb->GetModuleFunctionTable(module, out, size) : 0;
}

static const NvtxExportTableCallbacks fwd_callbacks = {sizeof(fwd_callbacks), fwd_module_table};

static const void *fwd_export_table(uint32_t id)
{
	if (id == NVTX_ETID_CALLBACKS)
		return &fwd_callbacks;
	return client_get ? client_get(id) : NULL;
}

static int same_object(void *a, void *b)
{
	Dl_info ia, ib;

	return dladdr(a, &ia) && dladdr(b, &ib) && ia.dli_fbase == ib.dli_fbase;
}

/* Loads KXPROF_NVTX_FORWARD once; says what failed (kxprof goes on alone). */
static void prev_load(void)
{
	const char *path = getenv("KXPROF_NVTX_FORWARD");
	void *h;

	prev_tried = 1;
	if (!path || !*path)
		return;
	for (int i = 1; i <= NVTX_CBID_CORE_SIZE; i++)
		prev_core_tab[i] = i < NVTX_CBID_CORE_SIZE ? &prev_core[i] : NULL;
	for (int i = 1; i <= NVTX_CBID_CORE2_SIZE; i++)
		prev_core2_tab[i] = i < NVTX_CBID_CORE2_SIZE ? &prev_core2[i] : NULL;
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr,
		        "kxprof_nvtx: cannot load KXPROF_NVTX_FORWARD=%s: %s; NVTX calls "
		        "go to kxprof only\n",
		        path, dlerror());
		return;
	}
	prev_init = (NvtxInitializeInjectionNvtxFunc_t)dlsym(h, "InitializeInjectionNvtx2");
	if (!prev_init)
		fprintf(stderr,
		        "kxprof_nvtx: KXPROF_NVTX_FORWARD=%s exports no "
		        "InitializeInjectionNvtx2 (not an NVTX injection): NVTX calls go to "
		        "kxprof only\n",
		        path);
	else if (same_object((void *)prev_init, (void *)fwd_export_table)) {
		fprintf(stderr,
		        "kxprof_nvtx: KXPROF_NVTX_FORWARD=%s is this library: not "
		        "forwarding to itself\n",
		        path);
		prev_init = NULL;
	}
}

/* ---- messages ---- */

/* Wide (UTF-32 on Linux) to UTF-8, bounded. */
static const char *utf8(const wchar_t *w, char *buf, size_t len)
{
	size_t n = 0;

	for (; w && *w && n + 5 < len; w++) {
		uint32_t c = (uint32_t)*w;

		if (c < 0x80) {
			buf[n++] = (char)c;
		} else if (c < 0x800) {
			buf[n++] = (char)(0xc0 | c >> 6);
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else if (c < 0x10000) {
			buf[n++] = (char)(0xe0 | c >> 12);
			buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		} else {
			buf[n++] = (char)(0xf0 | (c >> 18 & 0x07));
			buf[n++] = (char)(0x80 | (c >> 12 & 0x3f));
			buf[n++] = (char)(0x80 | (c >> 6 & 0x3f));
			buf[n++] = (char)(0x80 | (c & 0x3f));
		}
	}
	buf[n] = 0;
	return buf;
}

static int has_message(const nvtxEventAttributes_t *a)
{
	return a && a->size >= offsetof(nvtxEventAttributes_t, message) + sizeof(a->message);
}

static const char *message(const nvtxEventAttributes_t *a, char *buf, size_t len)
{
	if (!has_message(a))
		return "";
	switch (a->messageType) {
	case NVTX_MESSAGE_TYPE_ASCII:
		return a->message.ascii;
	case NVTX_MESSAGE_TYPE_UNICODE:
		return utf8(a->message.unicode, buf, len);
	case NVTX_MESSAGE_TYPE_REGISTERED:
		return a->message.registered ? ((struct string *)a->message.registered)->text : "";
	default:
		return "";
	}
}

/* The attributes as the previous tool knows them: its string handle. */
static const nvtxEventAttributes_t *prev_attr(const nvtxEventAttributes_t *a,
                                              nvtxEventAttributes_t *copy)
{
	if (!has_message(a) || a->messageType != NVTX_MESSAGE_TYPE_REGISTERED ||
	    !a->message.registered)
		return a;
	*copy = *a;
	copy->message.registered = ((struct string *)a->message.registered)->prev;
	return copy;
}

static const char *category(nvtxDomainHandle_t d)
{
	return d ? ((struct domain *)d)->name : NULL;
}

static nvtxDomainHandle_t prev_domain(nvtxDomainHandle_t d)
{
	return d ? ((struct domain *)d)->prev : NULL;
}

/* ---- cross-thread ids: kxprof's id -> the previous tool's ---- */

#define ID_BUCKETS 256
struct id_pair {
	uint64_t id, prev;
	struct id_pair *next;
};
static struct id_pair *ids[ID_BUCKETS];

static void id_put(uint64_t id, uint64_t prev)
{
	struct id_pair *p = malloc(sizeof(*p));

	if (!p) {
		fprintf(stderr,
		        "kxprof_nvtx: out of memory: the forwarded tool will not see the "
		        "end of range %llu\n",
		        (unsigned long long)id);
		return;
	}
	p->id = id;
	p->prev = prev;
	pthread_mutex_lock(&lock);
	p->next = ids[id % ID_BUCKETS];
	ids[id % ID_BUCKETS] = p;
	pthread_mutex_unlock(&lock);
}

/* The previous tool's id for kxprof's id (removed); 0 when unknown. */
static uint64_t id_take(uint64_t id)
{
	struct id_pair **pp, *p;
	uint64_t prev = 0;

	pthread_mutex_lock(&lock);
	for (pp = &ids[id % ID_BUCKETS]; (p = *pp); pp = &p->next)
		if (p->id == id) {
			*pp = p->next;
			prev = p->prev;
			free(p);
			break;
		}
	pthread_mutex_unlock(&lock);
	return prev;
}

/* ---- ranges and marks: kxprof, then the previous tool ---- */

/* The thread's open pushes: the levels NVTX push and pop return (0-based). */
static __thread int depth;

static int push_level(void)
{
	return depth++;
}

static int pop_level(void)
{
	kxprof_range_pop();
	return depth > 0 ? --depth : -1;
}

static nvtxRangeId_t started(const char *name, const char *cat, nvtxRangeId_t prev_id)
{
	uint64_t id = kxprof_range_start_cat(name, cat);

	if (prev_id)
		id_put(id, prev_id);
	return id;
}

static void k_mark_a(const char *m)
{
	kxprof_mark_cat(m, NULL);
	if (PREV(core, CORE_MarkA, nvtx_mark_a_fn))
		PREV(core, CORE_MarkA, nvtx_mark_a_fn)(m);
}

static void k_mark_w(const wchar_t *m)
{
	char buf[MSG_MAX];

	kxprof_mark_cat(utf8(m, buf, sizeof(buf)), NULL);
	if (PREV(core, CORE_MarkW, nvtx_mark_w_fn))
		PREV(core, CORE_MarkW, nvtx_mark_w_fn)(m);
}

static void k_mark_ex(const nvtxEventAttributes_t *a)
{
	nvtxEventAttributes_t copy;
	char buf[MSG_MAX];

	kxprof_mark_cat(message(a, buf, sizeof(buf)), NULL);
	if (PREV(core, CORE_MarkEx, nvtx_mark_ex_fn))
		PREV(core, CORE_MarkEx, nvtx_mark_ex_fn)(prev_attr(a, &copy));
}

static nvtxRangeId_t k_start_a(const char *m)
{
	nvtx_start_a_fn p = PREV(core, CORE_RangeStartA, nvtx_start_a_fn);

	return started(m, NULL, p ? p(m) : 0);
}

static nvtxRangeId_t k_start_w(const wchar_t *m)
{
	nvtx_start_w_fn p = PREV(core, CORE_RangeStartW, nvtx_start_w_fn);
	char buf[MSG_MAX];

	return started(utf8(m, buf, sizeof(buf)), NULL, p ? p(m) : 0);
}

static nvtxRangeId_t k_start_ex(const nvtxEventAttributes_t *a)
{
	nvtx_start_ex_fn p = PREV(core, CORE_RangeStartEx, nvtx_start_ex_fn);
	nvtxEventAttributes_t copy;
	char buf[MSG_MAX];

	return started(message(a, buf, sizeof(buf)), NULL, p ? p(prev_attr(a, &copy)) : 0);
}

static void k_end(nvtxRangeId_t id)
{
	uint64_t prev = id_take(id);

	kxprof_range_end(id);
	if (prev && PREV(core, CORE_RangeEnd, nvtx_end_fn))
		PREV(core, CORE_RangeEnd, nvtx_end_fn)(prev);
}

static int k_push_a(const char *m)
{
	kxprof_range_push_cat(m, NULL);
	if (PREV(core, CORE_RangePushA, nvtx_push_a_fn))
		PREV(core, CORE_RangePushA, nvtx_push_a_fn)(m);
	return push_level();
}

static int k_push_w(const wchar_t *m)
{
	char buf[MSG_MAX];

	kxprof_range_push_cat(utf8(m, buf, sizeof(buf)), NULL);
	if (PREV(core, CORE_RangePushW, nvtx_push_w_fn))
		PREV(core, CORE_RangePushW, nvtx_push_w_fn)(m);
	return push_level();
}

static int k_push_ex(const nvtxEventAttributes_t *a)
{
	nvtxEventAttributes_t copy;
	char buf[MSG_MAX];

	kxprof_range_push_cat(message(a, buf, sizeof(buf)), NULL);
	if (PREV(core, CORE_RangePushEx, nvtx_push_ex_fn))
		PREV(core, CORE_RangePushEx, nvtx_push_ex_fn)(prev_attr(a, &copy));
	return push_level();
}

static int k_pop(void)
{
	if (PREV(core, CORE_RangePop, nvtx_pop_fn))
		PREV(core, CORE_RangePop, nvtx_pop_fn)();
	return pop_level();
}

/* ---- domains (CORE2): the domain name is the category ---- */

static void d_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	nvtx_d_mark_ex_fn p = PREV(core2, CORE2_DomainMarkEx, nvtx_d_mark_ex_fn);
	nvtxEventAttributes_t copy;
	char buf[MSG_MAX];

	kxprof_mark_cat(message(a, buf, sizeof(buf)), category(d));
	if (p)
		p(prev_domain(d), prev_attr(a, &copy));
}

static nvtxRangeId_t d_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	nvtx_d_start_ex_fn p = PREV(core2, CORE2_DomainRangeStartEx, nvtx_d_start_ex_fn);
	nvtxEventAttributes_t copy;
	char buf[MSG_MAX];

	return started(message(a, buf, sizeof(buf)), category(d),
	               p ? p(prev_domain(d), prev_attr(a, &copy)) : 0);
}

static void d_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	uint64_t prev = id_take(id);

	kxprof_range_end(id);
	if (prev && PREV(core2, CORE2_DomainRangeEnd, nvtx_d_end_fn))
		PREV(core2, CORE2_DomainRangeEnd, nvtx_d_end_fn)(prev_domain(d), prev);
}

static int d_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	nvtx_d_push_ex_fn p = PREV(core2, CORE2_DomainRangePushEx, nvtx_d_push_ex_fn);
	nvtxEventAttributes_t copy;
	char buf[MSG_MAX];

	kxprof_range_push_cat(message(a, buf, sizeof(buf)), category(d));
	if (p)
		p(prev_domain(d), prev_attr(a, &copy));
	return push_level();
}

static int d_pop(nvtxDomainHandle_t d)
{
	if (PREV(core2, CORE2_DomainRangePop, nvtx_d_pop_fn))
		PREV(core2, CORE2_DomainRangePop, nvtx_d_pop_fn)(prev_domain(d));
	return pop_level();
}

static nvtxDomainHandle_t d_create(const char *name, nvtxDomainHandle_t prev)
{
	struct domain *d = calloc(1, sizeof(*d));

	if (!d) {
		fprintf(stderr, "kxprof_nvtx: out of memory creating NVTX domain %s\n", name);
		return NULL;
	}
	snprintf(d->name, sizeof(d->name), "%s", name);
	d->prev = prev;
	return (nvtxDomainHandle_t)d;
}

static nvtxDomainHandle_t d_create_a(const char *name)
{
	nvtx_d_create_a_fn p = PREV(core2, CORE2_DomainCreateA, nvtx_d_create_a_fn);

	return d_create(name ? name : "", p ? p(name) : NULL);
}

static nvtxDomainHandle_t d_create_w(const wchar_t *name)
{
	nvtx_d_create_w_fn p = PREV(core2, CORE2_DomainCreateW, nvtx_d_create_w_fn);
	char buf[MSG_MAX];

	return d_create(utf8(name, buf, sizeof(buf)), p ? p(name) : NULL);
}

static void d_destroy(nvtxDomainHandle_t d)
{
	struct domain *dom = (struct domain *)d;

	if (PREV(core2, CORE2_DomainDestroy, nvtx_d_destroy_fn))
		PREV(core2, CORE2_DomainDestroy, nvtx_d_destroy_fn)(prev_domain(d));
	if (!dom)
		return;
	while (dom->strings) {
		struct string *s = dom->strings;

		dom->strings = s->next;
		free(s);
	}
	free(dom);
}

static nvtxStringHandle_t d_string(nvtxDomainHandle_t d, const char *text, nvtxStringHandle_t prev)
{
	struct string *s = calloc(1, sizeof(*s));
	struct string **list = d ? &((struct domain *)d)->strings : &default_strings;

	if (!s) {
		fprintf(stderr, "kxprof_nvtx: out of memory registering NVTX string %s\n", text);
		return NULL;
	}
	snprintf(s->text, sizeof(s->text), "%s", text);
	s->prev = prev;
	pthread_mutex_lock(&lock);
	s->next = *list;
	*list = s;
	pthread_mutex_unlock(&lock);
	return (nvtxStringHandle_t)s;
}

static nvtxStringHandle_t d_register_a(nvtxDomainHandle_t d, const char *text)
{
	nvtx_d_register_a_fn p = PREV(core2, CORE2_DomainRegisterStringA, nvtx_d_register_a_fn);

	return d_string(d, text ? text : "", p ? p(prev_domain(d), text) : NULL);
}

static nvtxStringHandle_t d_register_w(nvtxDomainHandle_t d, const wchar_t *text)
{
	nvtx_d_register_w_fn p = PREV(core2, CORE2_DomainRegisterStringW, nvtx_d_register_w_fn);
	char buf[MSG_MAX];

	return d_string(d, utf8(text, buf, sizeof(buf)), p ? p(prev_domain(d), text) : NULL);
}

/* Calls that only need the previous tool's domain handle. */
static nvtxResourceHandle_t d_resource_create(nvtxDomainHandle_t d, void *attribs)
{
	nvtx_d_resource_create_fn p =
	        PREV(core2, CORE2_DomainResourceCreate, nvtx_d_resource_create_fn);

	return p ? p(prev_domain(d), attribs) : NULL;
}

static void d_name_category_a(nvtxDomainHandle_t d, uint32_t c, const char *name)
{
	nvtx_d_name_category_a_fn p =
	        PREV(core2, CORE2_DomainNameCategoryA, nvtx_d_name_category_a_fn);

	if (p)
		p(prev_domain(d), c, name);
}

static void d_name_category_w(nvtxDomainHandle_t d, uint32_t c, const wchar_t *name)
{
	nvtx_d_name_category_w_fn p =
	        PREV(core2, CORE2_DomainNameCategoryW, nvtx_d_name_category_w_fn);

	if (p)
		p(prev_domain(d), c, name);
}

/* ---- initialisation ---- */

#define FN(f) ((NvtxFunctionPointer)(f))

static const NvtxFunctionPointer core_fns[NVTX_CBID_CORE_SIZE] = {
        [NVTX_CBID_CORE_MarkEx] = FN(k_mark_ex),
        [NVTX_CBID_CORE_MarkA] = FN(k_mark_a),
        [NVTX_CBID_CORE_MarkW] = FN(k_mark_w),
        [NVTX_CBID_CORE_RangeStartEx] = FN(k_start_ex),
        [NVTX_CBID_CORE_RangeStartA] = FN(k_start_a),
        [NVTX_CBID_CORE_RangeStartW] = FN(k_start_w),
        [NVTX_CBID_CORE_RangeEnd] = FN(k_end),
        [NVTX_CBID_CORE_RangePushEx] = FN(k_push_ex),
        [NVTX_CBID_CORE_RangePushA] = FN(k_push_a),
        [NVTX_CBID_CORE_RangePushW] = FN(k_push_w),
        [NVTX_CBID_CORE_RangePop] = FN(k_pop),
};

static const NvtxFunctionPointer core2_fns[NVTX_CBID_CORE2_SIZE] = {
        [NVTX_CBID_CORE2_DomainMarkEx] = FN(d_mark_ex),
        [NVTX_CBID_CORE2_DomainRangeStartEx] = FN(d_start_ex),
        [NVTX_CBID_CORE2_DomainRangeEnd] = FN(d_end),
        [NVTX_CBID_CORE2_DomainRangePushEx] = FN(d_push_ex),
        [NVTX_CBID_CORE2_DomainRangePop] = FN(d_pop),
        [NVTX_CBID_CORE2_DomainResourceCreate] = FN(d_resource_create),
        [NVTX_CBID_CORE2_DomainNameCategoryA] = FN(d_name_category_a),
        [NVTX_CBID_CORE2_DomainNameCategoryW] = FN(d_name_category_w),
        [NVTX_CBID_CORE2_DomainRegisterStringA] = FN(d_register_a),
        [NVTX_CBID_CORE2_DomainRegisterStringW] = FN(d_register_w),
        [NVTX_CBID_CORE2_DomainCreateA] = FN(d_create_a),
        [NVTX_CBID_CORE2_DomainCreateW] = FN(d_create_w),
        [NVTX_CBID_CORE2_DomainDestroy] = FN(d_destroy),
};

/* Fills a client's slots: kxprof's function, else the previous tool's. */
static void fill(NvtxFunctionTable t, unsigned int n, const NvtxFunctionPointer *mine,
                 const NvtxFunctionPointer *prev, unsigned int size)
{
	for (unsigned int i = 1; i < n && i < size; i++) {
		if (!t[i])
			continue;
		if (mine[i])
			*t[i] = mine[i];
		else if (prev[i])
			*t[i] = prev[i];
	}
}

static int module_table(const NvtxExportTableCallbacks *cb, NvtxCallbackModule m,
                        NvtxFunctionTable *t, unsigned int *n)
{
	*t = NULL;
	*n = 0;
	return cb->GetModuleFunctionTable(m, t, n) && *t;
}

__attribute__((visibility("default"))) int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
	const NvtxExportTableCallbacks *cb =
	        get_export_table ? get_export_table(NVTX_ETID_CALLBACKS) : NULL;
	NvtxFunctionTable core, core2;
	unsigned int ncore, ncore2;

	if (!cb || cb->struct_size < sizeof(*cb) ||
	    !module_table(cb, NVTX_CB_MODULE_CORE, &core, &ncore) ||
	    !module_table(cb, NVTX_CB_MODULE_CORE2, &core2, &ncore2)) {
		fprintf(stderr, "kxprof_nvtx: this NVTX client offers no CORE/CORE2 function "
		                "tables: its annotations are not captured\n");
		return 0;
	}
	pthread_mutex_lock(&lock);
	if (!prev_tried)
		prev_load();
	if (prev_init) {
		/* Each client initialises the previous tool too, as it would without us. */
		client_get = get_export_table;
		client_cb = cb;
		if (!prev_init(fwd_export_table)) {
			fprintf(stderr, "kxprof_nvtx: the forwarded NVTX injection "
			                "(KXPROF_NVTX_FORWARD) failed to initialise: NVTX calls go "
			                "to kxprof only\n");
			prev_init = NULL;
			memset(prev_core, 0, sizeof(prev_core));
			memset(prev_core2, 0, sizeof(prev_core2));
		}
	}
	fill(core, ncore, core_fns, prev_core, NVTX_CBID_CORE_SIZE);
	fill(core2, ncore2, core2_fns, prev_core2, NVTX_CBID_CORE2_SIZE);
	pthread_mutex_unlock(&lock);
	return 1;
}
