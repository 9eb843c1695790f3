/*
 * The parts of Intel's ITT API (ittnotify, v3) a collector library sees,
 * written from the published interface (ittnotify.h, ittnotify_config.h):
 * the structures the static part linked into a program (e.g. PyTorch) hands
 * to __itt_api_init, and the handles it passes to the task calls. Layouts
 * are x86_64/aarch64 LP64 under the interface's `#pragma pack(8)`.
 */
#ifndef KX_ITT_TYPES_H
#define KX_ITT_TYPES_H

#include <pthread.h>

/* A domain (__itt_domain_create): flags 0 means disabled, never called. */
typedef struct itt_domain {
	volatile int flags;
	const char *nameA; /* its name, e.g. "PyTorch" */
	void *nameW;
	int extra1;
	void *extra2;
	struct itt_domain *next;
} itt_domain;

/* A name (__itt_string_handle_create): tasks name themselves with one. */
typedef struct itt_string_handle {
	const char *strA;
	void *strW;
	int extra1;
	void *extra2;
	struct itt_string_handle *next;
} itt_string_handle;

/* A task id, passed by value. */
typedef struct itt_id {
	unsigned long long d1, d2, d3;
} itt_id;

typedef int itt_group_id;

/* One entry of the static part's function table, ended by name NULL. */
typedef struct itt_api_info {
	const char *name; /* the API's name, e.g. "__itt_task_begin" */
	void **func_ptr;  /* the static part's pointer to set */
	void *init_func;  /* its lazy initialiser */
	void *null_func;  /* what an unbound pointer is set to */
	itt_group_id group;
} itt_api_info;

/* The head of the static part's global state, up to the function table. */
typedef struct itt_global {
	unsigned char magic[8];
	unsigned long version_major, version_minor, version_build;
	volatile long api_initialized, mutex_initialized, atomic_counter;
	pthread_mutex_t mutex;
	void *lib;
	void *error_handler;
	const char **dll_path_ptr;
	itt_api_info *api_list_ptr;
	struct itt_global *next;
	/* more the collector does not use */
} itt_global;

/* The magic at the start of every static part's global state. */
#define ITT_GLOBAL_MAGIC                                                                           \
	{                                                                                          \
		0xED, 0xAB, 0xAB, 0xEC, 0x0D, 0xEE, 0xDA, 0x30                                     \
	}

#endif
