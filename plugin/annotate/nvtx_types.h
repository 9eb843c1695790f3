/*
 * The NVTX v3 injection interface, as much of it as kxprof's NVTX library
 * and its tests use, written from the published interface (NVIDIA's
 * header-only NVTX v3: nvToolsExt.h and nvtxDetail/nvtxTypes.h; the values
 * and layouts below are those of its public ABI):
 * - a tool is a shared library exporting
 *   int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t), which each NVTX
 *   client (every program or library built with the headers) calls once,
 *   after dlopen($NVTX_INJECTION64_PATH); non-zero means success;
 * - getExportTable(NVTX_ETID_CALLBACKS) gives GetModuleFunctionTable, which
 *   for a module returns an array of pointers to the client's function
 *   pointer slots (index: the callback id; entry 0 unused) and the array's
 *   size (ids below it are valid); the tool writes its functions there;
 * - event attributes carry the message as ASCII, wide or registered string.
 */
#ifndef KXPROF_NVTX_TYPES_H
#define KXPROF_NVTX_TYPES_H

#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

typedef uint64_t nvtxRangeId_t;
typedef struct nvtxDomainRegistration_st *nvtxDomainHandle_t; /* opaque, the tool's */
typedef struct nvtxStringRegistration_st *nvtxStringHandle_t; /* opaque, the tool's */
typedef struct nvtxResourceHandle *nvtxResourceHandle_t;

/* nvtxMessageType_t */
#define NVTX_MESSAGE_UNKNOWN         0
#define NVTX_MESSAGE_TYPE_ASCII      1
#define NVTX_MESSAGE_TYPE_UNICODE    2
#define NVTX_MESSAGE_TYPE_REGISTERED 3

#define NVTX_VERSION 3

/* nvtxEventAttributes_v2: 48 bytes on LP64. */
typedef struct nvtxEventAttributes_v2 {
	uint16_t version; /* NVTX_VERSION */
	uint16_t size;    /* sizeof the structure as the caller knows it */
	uint32_t category;
	int32_t colorType;
	uint32_t color;
	int32_t payloadType;
	int32_t reserved0;
	union {
		uint64_t ullValue;
		int64_t llValue;
		double dValue;
		uint32_t uiValue;
		int32_t iValue;
		float fValue;
	} payload;
	int32_t messageType; /* NVTX_MESSAGE_TYPE_* */
	union {
		const char *ascii;
		const wchar_t *unicode;
		nvtxStringHandle_t registered;
	} message;
} nvtxEventAttributes_t;

/* NvtxCallbackModule */
enum {
	NVTX_CB_MODULE_CORE = 1,
	NVTX_CB_MODULE_CUDA = 2,
	NVTX_CB_MODULE_OPENCL = 3,
	NVTX_CB_MODULE_CUDART = 4,
	NVTX_CB_MODULE_CORE2 = 5,
	NVTX_CB_MODULE_SYNC = 6,
};
typedef int NvtxCallbackModule;

/* NvtxCallbackIdCore: slots of the CORE module. */
enum {
	NVTX_CBID_CORE_MarkEx = 1,
	NVTX_CBID_CORE_MarkA = 2,
	NVTX_CBID_CORE_MarkW = 3,
	NVTX_CBID_CORE_RangeStartEx = 4,
	NVTX_CBID_CORE_RangeStartA = 5,
	NVTX_CBID_CORE_RangeStartW = 6,
	NVTX_CBID_CORE_RangeEnd = 7,
	NVTX_CBID_CORE_RangePushEx = 8,
	NVTX_CBID_CORE_RangePushA = 9,
	NVTX_CBID_CORE_RangePushW = 10,
	NVTX_CBID_CORE_RangePop = 11,
	NVTX_CBID_CORE_NameCategoryA = 12,
	NVTX_CBID_CORE_NameCategoryW = 13,
	NVTX_CBID_CORE_NameOsThreadA = 14,
	NVTX_CBID_CORE_NameOsThreadW = 15,
	NVTX_CBID_CORE_SIZE = 16,
};

/* NvtxCallbackIdCore2: slots of the CORE2 (domain) module. */
enum {
	NVTX_CBID_CORE2_DomainMarkEx = 1,
	NVTX_CBID_CORE2_DomainRangeStartEx = 2,
	NVTX_CBID_CORE2_DomainRangeEnd = 3,
	NVTX_CBID_CORE2_DomainRangePushEx = 4,
	NVTX_CBID_CORE2_DomainRangePop = 5,
	NVTX_CBID_CORE2_DomainResourceCreate = 6,
	NVTX_CBID_CORE2_DomainResourceDestroy = 7,
	NVTX_CBID_CORE2_DomainNameCategoryA = 8,
	NVTX_CBID_CORE2_DomainNameCategoryW = 9,
	NVTX_CBID_CORE2_DomainRegisterStringA = 10,
	NVTX_CBID_CORE2_DomainRegisterStringW = 11,
	NVTX_CBID_CORE2_DomainCreateA = 12,
	NVTX_CBID_CORE2_DomainCreateW = 13,
	NVTX_CBID_CORE2_DomainDestroy = 14,
	NVTX_CBID_CORE2_Initialize = 15,
	NVTX_CBID_CORE2_SIZE = 16,
};

/* NvtxExportTableID */
enum {
	NVTX_ETID_CALLBACKS = 1,
	NVTX_ETID_RESERVED0 = 2,
	NVTX_ETID_VERSIONINFO = 3,
};

/* A slot holds any function; callers cast it to the slot's signature. */
typedef void (*NvtxFunctionPointer)(void);
/* Array of pointers to slots. */
typedef NvtxFunctionPointer **NvtxFunctionTable;

typedef struct NvtxExportTableCallbacks {
	size_t struct_size;
	int (*GetModuleFunctionTable)(NvtxCallbackModule module, NvtxFunctionTable *out_table,
	                              unsigned int *out_size);
} NvtxExportTableCallbacks;

typedef struct NvtxExportTableVersionInfo {
	size_t struct_size;
	uint32_t version;
	uint32_t reserved0;
	void (*SetInjectionNvtxVersion)(uint32_t version);
} NvtxExportTableVersionInfo;

typedef const void *(*NvtxGetExportTableFunc_t)(uint32_t exportTableId);
typedef int (*NvtxInitializeInjectionNvtxFunc_t)(NvtxGetExportTableFunc_t exportTable);

/* Slot signatures (the client calls the slot with these). */
typedef void (*nvtx_mark_ex_fn)(const nvtxEventAttributes_t *);
typedef void (*nvtx_mark_a_fn)(const char *);
typedef void (*nvtx_mark_w_fn)(const wchar_t *);
typedef nvtxRangeId_t (*nvtx_start_ex_fn)(const nvtxEventAttributes_t *);
typedef nvtxRangeId_t (*nvtx_start_a_fn)(const char *);
typedef nvtxRangeId_t (*nvtx_start_w_fn)(const wchar_t *);
typedef void (*nvtx_end_fn)(nvtxRangeId_t);
typedef int (*nvtx_push_ex_fn)(const nvtxEventAttributes_t *);
typedef int (*nvtx_push_a_fn)(const char *);
typedef int (*nvtx_push_w_fn)(const wchar_t *);
typedef int (*nvtx_pop_fn)(void);
typedef void (*nvtx_name_os_thread_a_fn)(uint32_t, const char *);
typedef void (*nvtx_d_mark_ex_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef nvtxRangeId_t (*nvtx_d_start_ex_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef void (*nvtx_d_end_fn)(nvtxDomainHandle_t, nvtxRangeId_t);
typedef int (*nvtx_d_push_ex_fn)(nvtxDomainHandle_t, const nvtxEventAttributes_t *);
typedef int (*nvtx_d_pop_fn)(nvtxDomainHandle_t);
typedef nvtxResourceHandle_t (*nvtx_d_resource_create_fn)(nvtxDomainHandle_t, void *attribs);
typedef void (*nvtx_d_name_category_a_fn)(nvtxDomainHandle_t, uint32_t, const char *);
typedef void (*nvtx_d_name_category_w_fn)(nvtxDomainHandle_t, uint32_t, const wchar_t *);
typedef nvtxStringHandle_t (*nvtx_d_register_a_fn)(nvtxDomainHandle_t, const char *);
typedef nvtxStringHandle_t (*nvtx_d_register_w_fn)(nvtxDomainHandle_t, const wchar_t *);
typedef nvtxDomainHandle_t (*nvtx_d_create_a_fn)(const char *);
typedef nvtxDomainHandle_t (*nvtx_d_create_w_fn)(const wchar_t *);
typedef void (*nvtx_d_destroy_fn)(nvtxDomainHandle_t);

#endif /* KXPROF_NVTX_TYPES_H */
