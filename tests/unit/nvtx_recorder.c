/*
 * A previous NVTX injection for the forwarding tests (built as
 * build/tests/libnvtx_recorder.so): fills some CORE and CORE2 slots and
 * records each call it gets, with the names behind its own domain and
 * string handles and its own range ids, so a test sees exactly what a tool
 * behind kxprof's injection would. nvtx_recorder_log() returns the record:
 * "event;event;...".
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "nvtx_types.h"

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char log_buf[8192];
static size_t log_len;
static char domains[8][32], strings[8][32];
static int ndomains, nstrings;
static uint64_t next_id = 500;

__attribute__((format(printf, 1, 2))) static void rec(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&lock);
	va_start(ap, fmt);
	if (log_len < sizeof(log_buf))
		log_len += (size_t)vsnprintf(log_buf + log_len, sizeof(log_buf) - log_len, fmt, ap);
	va_end(ap);
	if (log_len < sizeof(log_buf) - 1)
		log_buf[log_len++] = ';';
	pthread_mutex_unlock(&lock);
}

__attribute__((visibility("default"))) const char *nvtx_recorder_log(void)
{
	return log_buf;
}

static const char *domain_name(nvtxDomainHandle_t d)
{
	uintptr_t i = (uintptr_t)d - 0x1000;

	return d && i < (uintptr_t)ndomains ? domains[i] : "?";
}

static const char *msg(const nvtxEventAttributes_t *a)
{
	uintptr_t i;

	if (a->messageType == NVTX_MESSAGE_TYPE_ASCII)
		return a->message.ascii;
	if (a->messageType != NVTX_MESSAGE_TYPE_REGISTERED)
		return "?";
	i = (uintptr_t)a->message.registered - 0x2000;
	return i < (uintptr_t)nstrings ? strings[i] : "?";
}

static void r_mark_a(const char *m)
{
	rec("mark:%s", m);
}

static void r_mark_ex(const nvtxEventAttributes_t *a)
{
	rec("markex:%s", msg(a));
}

static int r_push_a(const char *m)
{
	rec("push:%s", m);
	return 0;
}

static int r_push_ex(const nvtxEventAttributes_t *a)
{
	rec("pushex:%s", msg(a));
	return 0;
}

static int r_pop(void)
{
	rec("pop");
	return 0;
}

static nvtxRangeId_t r_start_a(const char *m)
{
	rec("start:%s=%llu", m, (unsigned long long)next_id);
	return next_id++;
}

static void r_end(nvtxRangeId_t id)
{
	rec("end:%llu", (unsigned long long)id);
}

static void r_name_thread(uint32_t tid, const char *name)
{
	(void)tid;
	rec("thread:%s", name);
}

static nvtxDomainHandle_t r_domain_create(const char *name)
{
	snprintf(domains[ndomains], sizeof(domains[0]), "%s", name);
	rec("domain:%s", name);
	return (nvtxDomainHandle_t)(uintptr_t)(0x1000 + ndomains++);
}

static void r_domain_destroy(nvtxDomainHandle_t d)
{
	rec("destroy:%s", domain_name(d));
}

static nvtxStringHandle_t r_register(nvtxDomainHandle_t d, const char *s)
{
	snprintf(strings[nstrings], sizeof(strings[0]), "%s", s);
	rec("register:%s:%s", domain_name(d), s);
	return (nvtxStringHandle_t)(uintptr_t)(0x2000 + nstrings++);
}

static int r_d_push(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	rec("dpush:%s:%s", domain_name(d), msg(a));
	return 0;
}

static int r_d_pop(nvtxDomainHandle_t d)
{
	rec("dpop:%s", domain_name(d));
	return 0;
}

static void r_d_mark(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	rec("dmark:%s:%s", domain_name(d), msg(a));
}

static nvtxRangeId_t r_d_start(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a)
{
	rec("dstart:%s:%s=%llu", domain_name(d), msg(a), (unsigned long long)next_id);
	return next_id++;
}

static void r_d_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
	rec("dend:%s:%llu", domain_name(d), (unsigned long long)id);
}

static void set(NvtxFunctionTable t, unsigned int n, unsigned int id, NvtxFunctionPointer f)
{
	if (id < n && t[id])
		*t[id] = f;
}

#define FN(f) ((NvtxFunctionPointer)(f))

__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
	const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
	const NvtxExportTableVersionInfo *vi = get(NVTX_ETID_VERSIONINFO);
	NvtxFunctionTable c = NULL, c2 = NULL;
	unsigned int n = 0, n2 = 0;

	if (!cb || !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &c, &n) ||
	    !cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &c2, &n2)) {
		rec("init-failed");
		return 0;
	}
	rec("init:v%u", vi ? vi->version : 0);
	set(c, n, NVTX_CBID_CORE_MarkA, FN(r_mark_a));
	set(c, n, NVTX_CBID_CORE_MarkEx, FN(r_mark_ex));
	set(c, n, NVTX_CBID_CORE_RangePushA, FN(r_push_a));
	set(c, n, NVTX_CBID_CORE_RangePushEx, FN(r_push_ex));
	set(c, n, NVTX_CBID_CORE_RangePop, FN(r_pop));
	set(c, n, NVTX_CBID_CORE_RangeStartA, FN(r_start_a));
	set(c, n, NVTX_CBID_CORE_RangeEnd, FN(r_end));
	set(c, n, NVTX_CBID_CORE_NameOsThreadA, FN(r_name_thread));
	set(c2, n2, NVTX_CBID_CORE2_DomainCreateA, FN(r_domain_create));
	set(c2, n2, NVTX_CBID_CORE2_DomainDestroy, FN(r_domain_destroy));
	set(c2, n2, NVTX_CBID_CORE2_DomainRegisterStringA, FN(r_register));
	set(c2, n2, NVTX_CBID_CORE2_DomainRangePushEx, FN(r_d_push));
	set(c2, n2, NVTX_CBID_CORE2_DomainRangePop, FN(r_d_pop));
	set(c2, n2, NVTX_CBID_CORE2_DomainMarkEx, FN(r_d_mark));
	set(c2, n2, NVTX_CBID_CORE2_DomainRangeStartEx, FN(r_d_start));
	set(c2, n2, NVTX_CBID_CORE2_DomainRangeEnd, FN(r_d_end));
	return 1;
}
