/*
 * nvtx_driver: an NVTX v3 client without the NVTX headers (not packaged
 * here): it loads the tool named by NVTX_INJECTION64_PATH and initialises
 * it exactly as the headers' init stubs do (dlopen, InitializeInjectionNvtx2
 * with the client's export-table function, then calls through the function
 * slots the tool filled), as two clients (two libraries built with NVTX in
 * one process). Then a known sequence: marks, push/pop in the A, W and Ex
 * forms, a domain with a registered string, cross-thread ranges ended on
 * another thread. With -S it stops itself (SIGSTOP) once the tool is loaded.
 * Prints one JSON object: pid, tids, the levels push/pop returned and, when
 * KXPROF_NVTX_FORWARD names a recording tool (tests/unit/nvtx_recorder.c),
 * what that tool saw.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "nvtx_types.h"

/* One client's state, as the headers keep it per library. */
struct client {
	NvtxFunctionPointer core[NVTX_CBID_CORE_SIZE];
	NvtxFunctionPointer core2[NVTX_CBID_CORE2_SIZE];
	/* Pointers to the slots, 0 at index 0 and at the end. */
	NvtxFunctionPointer *core_tab[NVTX_CBID_CORE_SIZE + 1];
	NvtxFunctionPointer *core2_tab[NVTX_CBID_CORE2_SIZE + 1];
	uint32_t tool_version;
};

static struct client clients[2];

static void die(const char *msg)
{
	fprintf(stderr, "nvtx_driver: %s\n", msg);
	exit(1);
}

static int module_table(struct client *c, NvtxCallbackModule m, NvtxFunctionTable *out,
                        unsigned int *size)
{
	NvtxFunctionTable t = m == NVTX_CB_MODULE_CORE    ? c->core_tab
	                      : m == NVTX_CB_MODULE_CORE2 ? c->core2_tab
	                                                  : NULL;
	unsigned int n = m == NVTX_CB_MODULE_CORE    ? NVTX_CBID_CORE_SIZE
	                 : m == NVTX_CB_MODULE_CORE2 ? NVTX_CBID_CORE2_SIZE
	                                             : 0;

	if (!t)
		return 0; /* this client has no CUDA, OpenCL or sync module */
	if (out)
		*out = t;
	if (size)
		*size = n;
	return 1;
}

static int module_table0(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned int *size)
{
	return module_table(&clients[0], m, out, size);
}

static int module_table1(NvtxCallbackModule m, NvtxFunctionTable *out, unsigned int *size)
{
	return module_table(&clients[1], m, out, size);
}

static void set_version0(uint32_t v)
{
	clients[0].tool_version = v;
}

static void set_version1(uint32_t v)
{
	clients[1].tool_version = v;
}

static const NvtxExportTableCallbacks callbacks[2] = {
        {sizeof(NvtxExportTableCallbacks), module_table0},
        {sizeof(NvtxExportTableCallbacks), module_table1}};
static const NvtxExportTableVersionInfo versions[2] = {
        {sizeof(NvtxExportTableVersionInfo), NVTX_VERSION, 0, set_version0},
        {sizeof(NvtxExportTableVersionInfo), NVTX_VERSION, 0, set_version1}};

static const void *export_table(int c, uint32_t id)
{
	if (id == NVTX_ETID_CALLBACKS)
		return &callbacks[c];
	if (id == NVTX_ETID_VERSIONINFO)
		return &versions[c];
	return NULL;
}

static const void *export_table0(uint32_t id)
{
	return export_table(0, id);
}

static const void *export_table1(uint32_t id)
{
	return export_table(1, id);
}

static void client_init(int i, NvtxInitializeInjectionNvtxFunc_t init)
{
	struct client *c = &clients[i];

	for (int k = 1; k < NVTX_CBID_CORE_SIZE; k++)
		c->core_tab[k] = &c->core[k];
	for (int k = 1; k < NVTX_CBID_CORE2_SIZE; k++)
		c->core2_tab[k] = &c->core2[k];
	if (!init(i ? export_table1 : export_table0))
		die("InitializeInjectionNvtx2 returned 0 (the headers then turn NVTX off)");
}

#define SLOT(c, mod, id, type)                                                                     \
	((type)(clients[c].mod[NVTX_CBID_##id]                                                     \
	                ? clients[c].mod[NVTX_CBID_##id]                                           \
	                : (die("slot " #id " not filled"), (NvtxFunctionPointer)0)))

static nvtxEventAttributes_t attr(int type, const void *msg)
{
	nvtxEventAttributes_t a;

	memset(&a, 0, sizeof(a));
	a.version = NVTX_VERSION;
	a.size = (uint16_t)sizeof(a);
	a.messageType = type;
	if (type == NVTX_MESSAGE_TYPE_ASCII)
		a.message.ascii = msg;
	else if (type == NVTX_MESSAGE_TYPE_UNICODE)
		a.message.unicode = msg;
	else
		a.message.registered = (nvtxStringHandle_t)msg;
	return a;
}

static nvtxRangeId_t xid;
static nvtxDomainHandle_t dom;
static nvtxRangeId_t dxid;
static int ender_tid;

static void *ender(void *arg)
{
	(void)arg;
	ender_tid = (int)syscall(SYS_gettid);
	SLOT(0, core, CORE_RangeEnd, nvtx_end_fn)(xid);
	SLOT(0, core2, CORE2_DomainRangeEnd, nvtx_d_end_fn)(dom, dxid);
	return NULL;
}

static void sequence(char *levels, size_t len)
{
	nvtxEventAttributes_t a;
	nvtxStringHandle_t s;
	size_t n = 0;
	pthread_t th;
	int l[8], k = 0;

	SLOT(0, core, CORE_MarkA, nvtx_mark_a_fn)("m1");
	l[k++] = SLOT(0, core, CORE_RangePushA, nvtx_push_a_fn)("a");
	a = attr(NVTX_MESSAGE_TYPE_ASCII, "b");
	l[k++] = SLOT(0, core, CORE_RangePushEx, nvtx_push_ex_fn)(&a);
	l[k++] = SLOT(0, core, CORE_RangePushW, nvtx_push_w_fn)(L"c\u00e9");
	for (int i = 0; i < 3; i++)
		l[k++] = SLOT(0, core, CORE_RangePop, nvtx_pop_fn)();
	dom = SLOT(0, core2, CORE2_DomainCreateA, nvtx_d_create_a_fn)("dom1");
	a = attr(NVTX_MESSAGE_TYPE_ASCII, "d");
	SLOT(0, core2, CORE2_DomainRangePushEx, nvtx_d_push_ex_fn)(dom, &a);
	s = SLOT(0, core2, CORE2_DomainRegisterStringA, nvtx_d_register_a_fn)(dom, "reg");
	a = attr(NVTX_MESSAGE_TYPE_REGISTERED, s);
	SLOT(0, core2, CORE2_DomainMarkEx, nvtx_d_mark_ex_fn)(dom, &a);
	SLOT(0, core2, CORE2_DomainRangePop, nvtx_d_pop_fn)(dom);
	xid = SLOT(0, core, CORE_RangeStartA, nvtx_start_a_fn)("x");
	a = attr(NVTX_MESSAGE_TYPE_ASCII, "y");
	dxid = SLOT(0, core2, CORE2_DomainRangeStartEx, nvtx_d_start_ex_fn)(dom, &a);
	usleep(2000);
	if (pthread_create(&th, NULL, ender, NULL))
		die("pthread_create failed");
	pthread_join(th, NULL);
	if (clients[0].core[NVTX_CBID_CORE_NameOsThreadA]) /* else a no-op, as in the headers */
		SLOT(0, core, CORE_NameOsThreadA, nvtx_name_os_thread_a_fn)(0, "t");
	SLOT(1, core, CORE_RangePushA, nvtx_push_a_fn)("c2");
	SLOT(1, core, CORE_RangePop, nvtx_pop_fn)();
	SLOT(0, core2, CORE2_DomainDestroy, nvtx_d_destroy_fn)(dom);
	for (int i = 0; i < k && n < len; i++)
		n += (size_t)snprintf(levels + n, len - n, "%s%d", i ? "," : "", l[i]);
}

/* What the forwarded recording tool saw ("" without one). */
static const char *recorder_log(void)
{
	const char *path = getenv("KXPROF_NVTX_FORWARD");
	const char *(*fn)(void);
	void *h;

	if (!path || !(h = dlopen(path, RTLD_NOW | RTLD_NOLOAD)))
		return "";
	fn = (const char *(*)(void))dlsym(h, "nvtx_recorder_log");
	return fn ? fn() : "";
}

int main(int argc, char **argv)
{
	const char *path = getenv("NVTX_INJECTION64_PATH");
	NvtxInitializeInjectionNvtxFunc_t init;
	char levels[64];
	void *h;

	if (argc > 2 || (argc == 2 && strcmp(argv[1], "-S") != 0)) {
		fprintf(stderr, "usage: NVTX_INJECTION64_PATH=tool.so nvtx_driver [-S]\n");
		return 2;
	}
	if (!path)
		die("NVTX_INJECTION64_PATH is not set");
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		die(dlerror());
	init = (NvtxInitializeInjectionNvtxFunc_t)dlsym(h, "InitializeInjectionNvtx2");
	if (!init)
		die("the tool exports no InitializeInjectionNvtx2");
	client_init(0, init);
	client_init(1, init);
	if (argc == 2)
		raise(SIGSTOP);
	sequence(levels, sizeof(levels));
	printf("{\"workload\":\"nvtx_driver\",\"pid\":%d,\"tids\":[%d,%d],\"levels\":\"%s\","
	       "\"recorder\":\"%s\"}\n",
	       (int)getpid(), (int)syscall(SYS_gettid), ender_tid, levels, recorder_log());
	return 0;
}
