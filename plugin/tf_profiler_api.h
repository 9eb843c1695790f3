/*
 * The TensorFlow pluggable-profiler C ABI (TF_InitProfiler, TP_Profiler,
 * TP_ProfilerFns, TF_ProfilerRegistrationParams, TF_Status codes), written
 * from the layout facts in specs/tf-pluggable-profiler.md. Binary-compatible
 * with TensorFlow's pluggable_profiler.h: the asserts at the bottom pin every
 * size and offset. TF_ structs are filled by core, TP_ structs by the plugin.
 */
#ifndef KX_TF_PROFILER_API_H
#define KX_TF_PROFILER_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TP_MAJOR 0
#define TP_MINOR 0
#define TP_PATCH 1

/* Size of a struct up to and including MEMBER (the struct-size macros use the last one). */
#define TF_OFFSET_OF_END(TYPE, MEMBER) (offsetof(TYPE, MEMBER) + sizeof(((TYPE *)0)->MEMBER))

/* Opaque; owned by TensorFlow. */
typedef struct TF_Status TF_Status;

typedef enum TF_Code {
	TF_OK = 0,
	TF_CANCELLED = 1,
	TF_UNKNOWN = 2,
	TF_INVALID_ARGUMENT = 3,
	TF_DEADLINE_EXCEEDED = 4,
	TF_NOT_FOUND = 5,
	TF_ALREADY_EXISTS = 6,
	TF_PERMISSION_DENIED = 7,
	TF_RESOURCE_EXHAUSTED = 8,
	TF_FAILED_PRECONDITION = 9,
	TF_ABORTED = 10,
	TF_OUT_OF_RANGE = 11,
	TF_UNIMPLEMENTED = 12,
	TF_INTERNAL = 13,
	TF_UNAVAILABLE = 14,
	TF_DATA_LOSS = 15,
	TF_UNAUTHENTICATED = 16,
} TF_Code;

typedef struct TP_Profiler {
	size_t struct_size;
	void *ext;               /* unused: 0 */
	const char *device_type; /* must match [A-Z][A-Z_]* (the RFC calls it "type") */
} TP_Profiler;

#define TP_PROFILER_STRUCT_SIZE TF_OFFSET_OF_END(TP_Profiler, device_type)

typedef struct TP_ProfilerFns {
	size_t struct_size;
	void *ext; /* unused: 0 */
	void (*start)(const TP_Profiler *profiler, TF_Status *status);
	void (*stop)(const TP_Profiler *profiler, TF_Status *status);
	/* buffer NULL: write the size (0 = no data); else copy into a buffer of
	 * *size_in_bytes bytes. */
	void (*collect_data_xspace)(const TP_Profiler *profiler, uint8_t *buffer,
	                            size_t *size_in_bytes, TF_Status *status);
} TP_ProfilerFns;

#define TP_PROFILER_FNS_STRUCT_SIZE TF_OFFSET_OF_END(TP_ProfilerFns, collect_data_xspace)

typedef struct TF_ProfilerRegistrationParams {
	size_t struct_size;
	void *ext; /* unused: 0 */
	int32_t major_version;
	int32_t minor_version;
	int32_t patch_version;
	TP_Profiler *profiler;        /* core's struct, filled by the plugin */
	TP_ProfilerFns *profiler_fns; /* core's struct, filled by the plugin */
	void (*destroy_profiler)(TP_Profiler *profiler);
	void (*destroy_profiler_fns)(TP_ProfilerFns *profiler_fns);
} TF_ProfilerRegistrationParams;

#define TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE                                                \
	TF_OFFSET_OF_END(TF_ProfilerRegistrationParams, destroy_profiler_fns)

/* The plugin's entry point (C linkage, default visibility). */
void TF_InitProfiler(TF_ProfilerRegistrationParams *params, TF_Status *status);

/*
 * Status functions exported by TensorFlow's own libraries. The plugin never
 * links against them (it must load without TensorFlow): it looks them up at
 * run time. Declared here for hosts and test harnesses that provide them.
 */
TF_Status *TF_NewStatus(void);
void TF_DeleteStatus(TF_Status *s);
void TF_SetStatus(TF_Status *s, TF_Code code, const char *msg);
TF_Code TF_GetCode(const TF_Status *s);
const char *TF_Message(const TF_Status *s);

#if defined(__x86_64__) || defined(__aarch64__)
/* LP64 layouts from the spec: any change here breaks binary compatibility. */
_Static_assert(sizeof(TP_Profiler) == 24, "TP_Profiler size");
_Static_assert(TP_PROFILER_STRUCT_SIZE == 24, "TP_PROFILER_STRUCT_SIZE");
_Static_assert(offsetof(TP_Profiler, ext) == 8, "TP_Profiler.ext");
_Static_assert(offsetof(TP_Profiler, device_type) == 16, "TP_Profiler.device_type");

_Static_assert(sizeof(TP_ProfilerFns) == 40, "TP_ProfilerFns size");
_Static_assert(TP_PROFILER_FNS_STRUCT_SIZE == 40, "TP_PROFILER_FNS_STRUCT_SIZE");
_Static_assert(offsetof(TP_ProfilerFns, ext) == 8, "TP_ProfilerFns.ext");
_Static_assert(offsetof(TP_ProfilerFns, start) == 16, "TP_ProfilerFns.start");
_Static_assert(offsetof(TP_ProfilerFns, stop) == 24, "TP_ProfilerFns.stop");
_Static_assert(offsetof(TP_ProfilerFns, collect_data_xspace) == 32,
               "TP_ProfilerFns.collect_data_xspace");

_Static_assert(sizeof(TF_ProfilerRegistrationParams) == 64, "params size");
_Static_assert(TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE == 64,
               "TF_PROFILER_REGISTRATION_PARAMS_STRUCT_SIZE");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, ext) == 8, "params.ext");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, major_version) == 16, "params.major");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, minor_version) == 20, "params.minor");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, patch_version) == 24, "params.patch");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, profiler) == 32, "params.profiler");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, profiler_fns) == 40, "params.profiler_fns");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, destroy_profiler) == 48,
               "params.destroy_profiler");
_Static_assert(offsetof(TF_ProfilerRegistrationParams, destroy_profiler_fns) == 56,
               "params.destroy_profiler_fns");
#endif

#ifdef __cplusplus
}
#endif

#endif /* KX_TF_PROFILER_API_H */
