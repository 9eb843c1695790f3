/*
 * libkxprof_annotate.so: the annotation API of plugin/kxprof_annotate.h.
 * Owns the five USDT probes of provider "kxprof" and their semaphores, and
 * the ids of cross-thread ranges. The probes and their arguments (what
 * bpf/annotate.bpf.c reads):
 *   kxprof:range_push(name, category)   kxprof:range_pop()
 *   kxprof:mark(name, category)
 *   kxprof:range_start(id, name, category)   kxprof:range_end(id)
 * name and category are C strings; category is 0 when there is none.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define _SDT_HAS_SEMAPHORES 1
#include <sys/sdt.h>

#include "glibc_compat.h"
#include "annotate_rec.h" /* bpf/: KX_ANN_NAME_MAX, KX_ANN_WAIT_ENV */
#include "kxprof_annotate.h"

/* Bytes of a name kxprof keeps. */
#define NAME_KEEP    KX_ANN_NAME_MAX
#define WAIT_MAX_MS  10000 /* the longest hold KX_ANN_WAIT_ENV may ask for */
#define WAIT_STEP_NS 200000

/*
 * One semaphore per probe: the kernel raises it while a uprobe with a
 * reference counter is attached there, and lowers it at detach. Hidden, so
 * each copy of the library reads its own (another copy's exported one would
 * interpose).
 */
#define SEMAPHORE(probe)                                                                           \
	__attribute__((section(".probes"),                                                         \
	               visibility("hidden"))) volatile unsigned short kxprof_##probe##_semaphore
SEMAPHORE(range_push);
SEMAPHORE(range_pop);
SEMAPHORE(mark);
SEMAPHORE(range_start);
SEMAPHORE(range_end);

#define TRACED(probe) __builtin_expect(kxprof_##probe##_semaphore != 0, 0)

/*
 * Cross-thread range ids: (copy tag << ID_SEQ_BITS) | sequence. A process
 * may map several copies of this library (vendored ones, dlopen'ed ones),
 * each with its own counter; the tag tells them apart. It is the number of
 * a pthread key the copy holds, which no other live copy can hold.
 */
#define ID_SEQ_BITS 52
#define ID_TAG_NONE 0xfffU /* no key could be had: above every key number */
static pthread_key_t id_key;
static uint64_t id_tag = ID_TAG_NONE;
static _Atomic uint64_t id_seq;

static int all_attached(void)
{
	return kxprof_range_push_semaphore && kxprof_range_pop_semaphore && kxprof_mark_semaphore &&
	       kxprof_range_start_semaphore && kxprof_range_end_semaphore;
}

/*
 * A tracer that launched this program asks (KX_ANN_WAIT_ENV
 * "TRACER_PID:MAX_MS") that this copy wait here, before the program can
 * annotate, until the tracer has attached its probes: it notices the new
 * copy when the dynamic loader maps it, before constructors run. The wait
 * ends when every probe is attached, the tracer is gone, or MAX_MS passed.
 */
static void wait_for_tracer(void)
{
	const char *v = getenv(KX_ANN_WAIT_ENV);
	struct timespec step = {0, WAIT_STEP_NS}, now, end;
	long pid, ms;
	char *p;

	if (!v || all_attached())
		return;
	pid = strtol(v, &p, 10);
	if (pid <= 0 || *p != ':')
		return;
	ms = strtol(p + 1, &p, 10);
	if (*p || ms <= 0)
		return;
	if (ms > WAIT_MAX_MS)
		ms = WAIT_MAX_MS;
	clock_gettime(CLOCK_MONOTONIC, &end);
	end.tv_sec += ms / 1000 + (end.tv_nsec + ms % 1000 * 1000000L) / 1000000000L;
	end.tv_nsec = (end.tv_nsec + ms % 1000 * 1000000L) % 1000000000L;
	while (!all_attached()) {
		if (kill((pid_t)pid, 0) && errno == ESRCH)
			return;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > end.tv_sec ||
		    (now.tv_sec == end.tv_sec && now.tv_nsec >= end.tv_nsec)) {
			fprintf(stderr,
			        "kxprof_annotate: the tracer (pid %ld) did not attach this copy's "
			        "probes within %ld ms: going on; its annotations are not traced "
			        "(a copy stripped of its probe notes cannot be)\n",
			        pid, ms);
			return;
		}
		nanosleep(&step, NULL);
	}
}

__attribute__((constructor)) static void id_init(void)
{
	wait_for_tracer();
	if (pthread_key_create(&id_key, NULL) == 0 && id_key < ID_TAG_NONE - 1) {
		id_tag = (uint64_t)id_key + 1;
		return;
	}
	fprintf(stderr, "kxprof_annotate: no pthread key left for this copy's range ids: ids of "
	                "cross-thread ranges may repeat those of another copy of the library\n");
}

__attribute__((destructor)) static void id_fini(void)
{
	if (id_tag != ID_TAG_NONE)
		pthread_key_delete(id_key);
}

/* The probe reads the string from the kernel without faulting pages in:
 * touch it here first (traced calls only). NULL becomes "". */
static const char *touched(const char *s)
{
	if (!s)
		return "";
	(void)strnlen(s, NAME_KEEP);
	return s;
}

static const char *touched_cat(const char *c)
{
	if (c)
		(void)strnlen(c, NAME_KEEP);
	return c;
}

/* The exported functions call these, not each other: a call between two
 * exported functions would go through the PLT, to whichever copy of the
 * library came first. */
static inline void push(const char *name, const char *category)
{
	if (TRACED(range_push))
		STAP_PROBE2(kxprof, range_push, touched(name), touched_cat(category));
}

static inline void mark(const char *name, const char *category)
{
	if (TRACED(mark))
		STAP_PROBE2(kxprof, mark, touched(name), touched_cat(category));
}

static inline uint64_t start(const char *name, const char *category)
{
	uint64_t seq = atomic_fetch_add_explicit(&id_seq, 1, memory_order_relaxed) + 1;
	uint64_t id = id_tag << ID_SEQ_BITS | (seq & ((1ULL << ID_SEQ_BITS) - 1));

	if (TRACED(range_start))
		STAP_PROBE3(kxprof, range_start, id, touched(name), touched_cat(category));
	return id;
}

void kxprof_range_push(const char *name)
{
	push(name, NULL);
}

void kxprof_range_push_cat(const char *name, const char *category)
{
	push(name, category);
}

void kxprof_range_pop(void)
{
	if (TRACED(range_pop))
		STAP_PROBE(kxprof, range_pop);
}

void kxprof_mark(const char *name)
{
	mark(name, NULL);
}

void kxprof_mark_cat(const char *name, const char *category)
{
	mark(name, category);
}

uint64_t kxprof_range_start(const char *name)
{
	return start(name, NULL);
}

uint64_t kxprof_range_start_cat(const char *name, const char *category)
{
	return start(name, category);
}

void kxprof_range_end(uint64_t id)
{
	if (TRACED(range_end))
		STAP_PROBE1(kxprof, range_end, id);
}
