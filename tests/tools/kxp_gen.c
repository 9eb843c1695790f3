/*
 * kxp_gen: writes the generated captures of the unit tests as record files,
 * so that the command-line paths can read them too (the differential test,
 * tests/integration/test_paths_equal.sh, and tests/tools/outputs-snapshot.sh).
 * The generators are the unit tests' own (tests/unit/kxp_gen*.h).
 *
 * usage: kxp_gen KIND OUT.kxp [N]
 *   wread N            test_wread's capture: N calls over 6 threads, a few
 *                      up to 300 ms long whose records come late, tasks, CPU
 *                      samples, argument copies
 *   wread-annotated N  the same with nested and cross-thread annotation
 *                      ranges, marks, counter records and KVM memory slots
 *   wread-job N        the same with one job record
 *   wread-nested N     wread-annotated with each long call's next call of
 *                      its thread starting inside it and ending after it
 *                      (the nesting rule shortens it)
 *   wread-cut N        wread-nested with some ranges ending inside a call of
 *                      their thread (the calls' timeline cuts it there: some
 *                      calls the rule shortens cut shorter)
 *   stream N           test_report_stream's: N calls over 64 threads, many
 *                      rows and errnos
 *   stream-annotated N test_report_stream's annotated capture of seed N
 *   stream-counted N   test_report_stream's counted capture of seed N
 *   stream-counted-late N  the same, some records after later calls of
 *                      their thread
 *   stream-counted-unnamed N  the same, the header naming no counter
 *   annjobs N          test_wread's annotation ranges around calls that submit
 *                      xe jobs (QUEUE, RUN, DONE): 4 threads of N steps
 *   annjobs-kvm N      the same with KVM_RUNs and their exits
 *   annjobs-done N     the xe form's 2 threads of N steps, every job done
 *                      (its 120 ms late jobs about 10,400 behind)
 *   vmdisk N           a VM's vCPU: N KVM_RUNs 3 us apart, each with its
 *                      exit, and a block request of its disk every 333 runs
 *   fence-SOURCE N     test_report_stream's GPU jobs of a shared fence source
 *                      (i915, amdgpu, amdxdna, gpu_scheduler, dma_fence): N
 *                      steps of a ring linked from its 6th job and a ring
 *                      linked from step 300, their calls and wait calls
 *   fence-SOURCE-sdma N  the same with a ring that never links (every other
 *                      step: N + N/3 + N/2 jobs), the header naming one GPU
 *                      (the first ring's driver's: the fallback device)
 *   events N           kxp_gen.h's event stream of N ioctls: tasks, jobs of
 *                      every source and phase, argument copies, off-CPU time
 *   recorded FIXTURE   a replay fixture written as a recorder writes it
 *                      (ioctls at their return, job records in time order)
 * Exit 0, 1 when the file cannot be written, 2 for bad usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../unit/kxp_gen_annjobs.h"
#include "../unit/kxp_gen_stream.h"
#include "../unit/kxp_gen_wread.h"
#include "io/replay.h"

static int write_fixture_recorded(const char *fixture, const char *out)
{
	static struct kx_capinfo ci;
	struct kx_store *s = kx_store_new(0);
	char err[512];
	int rc;

	if (!s || kx_replay_load(fixture, s, &ci, err, sizeof(err))) {
		fprintf(stderr, "kxp_gen: %s: %s\n", fixture, s ? err : "out of memory");
		kx_store_free(s);
		return -1;
	}
	rc = write_kxp(out, s, &ci, L_RECORDED);
	kx_store_free(s);
	return rc;
}

static int write_events(const char *out, size_t n)
{
	struct gen g;
	int rc;

	gen_events(&g, n, 42);
	rc = gen_write(out, &g, 4096, 1);
	gen_free(&g);
	return rc;
}

/* A fence-SOURCE[-sdma] kind's capture; -2 when SOURCE is none of them. */
static int write_fence_kind(const char *source, const char *out, size_t n)
{
	size_t len = strlen(source);
	int sdma = len > 5 && !strcmp(source + len - 5, "-sdma");

	for (size_t i = 0; i < FENCE_KINDS; i++)
		if (!strncmp(source, fence_kinds[i].name, sdma ? len - 5 : len) &&
		    strlen(fence_kinds[i].name) == (sdma ? len - 5 : len))
			return write_fence(out, &fence_kinds[i], n, 20000, 300, sdma, sdma);
	return -2;
}

static int usage(void)
{
	fprintf(stderr,
	        "usage: kxp_gen wread|wread-annotated|wread-job|wread-nested|wread-cut|"
	        "annjobs[-kvm|-done]|vmdisk|stream|"
	        "stream-annotated|stream-counted[-late|-unnamed]|events|fence-SOURCE[-sdma] "
	        "OUT.kxp N\n"
	        "       kxp_gen recorded OUT.kxp FIXTURE.jsonl\n");
	return 2;
}

int main(int argc, char **argv)
{
	const char *kind, *out;
	char *end = NULL;
	unsigned long long n = 0;
	int rc;

	if (argc != 4)
		return usage();
	kind = argv[1];
	out = argv[2];
	if (strcmp(kind, "recorded") != 0) {
		n = strtoull(argv[3], &end, 10);
		if (!*argv[3] || *end || n == 0 || n > 100000000)
			return usage();
	}
	if (!strcmp(kind, "wread"))
		rc = write_capture_as(out, n, 0, 0, 0, 0);
	else if (!strcmp(kind, "wread-annotated"))
		rc = write_capture_as(out, n, 0, 0, 0, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY);
	else if (!strcmp(kind, "wread-job"))
		rc = write_capture_as(out, n, 1, 0, 0, 0);
	else if (!strcmp(kind, "wread-nested"))
		rc = write_capture_as(out, n, 0, 3, 0, ANN_RANGES | ANN_COUNTERS | ANN_MEMORY);
	else if (!strcmp(kind, "wread-cut"))
		rc = write_capture_as(out, n, 0, 3, 0,
		                      ANN_RANGES | ANN_CUTS | ANN_COUNTERS | ANN_MEMORY);
	else if (!strcmp(kind, "stream"))
		rc = write_generated(out, n, 7, 64);
	else if (!strcmp(kind, "stream-annotated"))
		rc = write_annotated(out, n * 7919);
	else if (!strcmp(kind, "stream-counted"))
		rc = write_counted(out, n, 0);
	else if (!strcmp(kind, "stream-counted-late"))
		rc = write_counted(out, n, CTR_LATE);
	else if (!strcmp(kind, "stream-counted-unnamed"))
		rc = write_counted(out, n, CTR_UNNAMED | CTR_LATE);
	else if (!strcmp(kind, "events"))
		rc = write_events(out, n);
	else if (!strcmp(kind, "recorded"))
		rc = write_fixture_recorded(argv[3], out);
	else if (!strcmp(kind, "annjobs-done"))
		rc = aj_write_gen(out, &(struct aj_opts){.nthreads = 2,
		                                         .n = n,
		                                         .lag = 200000,
		                                         .t0 = 5000000000ULL,
		                                         .done_all = 1});
	else if (!strcmp(kind, "annjobs") || !strcmp(kind, "annjobs-kvm"))
		rc = aj_write_gen(out, &(struct aj_opts){.kvm = kind[7] == '-',
		                                         .nthreads = 4,
		                                         .n = n,
		                                         .lag = 200000,
		                                         .t0 = 5000000000ULL});
	else if (!strcmp(kind, "vmdisk")) {
		struct aj_list l = {0};

		aj_vm_disk(&l, 5000000000ULL, n, 333, 800);
		rc = aj_write(out, &l);
	} else if (!strncmp(kind, "fence-", 6))
		rc = write_fence_kind(kind + 6, out, n);
	else
		return usage();
	if (rc == -2)
		return usage();
	if (rc) {
		fprintf(stderr, "kxp_gen: writing %s failed (is its folder writable?)\n", out);
		return 1;
	}
	return 0;
}
