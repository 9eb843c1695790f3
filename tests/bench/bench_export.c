/*
 * Benchmark of the XSpace exporter: builds a synthetic store of N ioctl
 * events (16 threads, a mix of KVM and loop commands, 1% failures, 5% with
 * decodable argument bytes) and times kx_xspace_serialize. Prints events/s,
 * output bytes per event and how much the export raised the peak RSS.
 *
 *     bench_export [-n EVENTS] [-r ROUNDS]     (default 5000000, 1)
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "registry/ioctl_decode.h"
#include "model/store.h"
#include "export/xspace.h"

#define THREADS 16

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double peak_rss_mib(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

static void fill(struct kx_store *s, size_t n, struct kx_capinfo *ci)
{
	static const uint32_t kvm_cmds[] = {0xae80, 0xae80, 0xae80, 0xae00, 0xae41, 0x4020ae46};
	uint8_t arg[32];
	uint64_t t[THREADS];

	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "benchhost");
	ci->clock_start.offset_ns = 1700000000000000000LL;
	ci->ndevices = 2;
	ci->devices[0] = (struct kx_device){.dev = KX_MKDEV(10, 232),
	                                    .fkind = KX_FK_CHR,
	                                    .drv = KX_DRV_KVM,
	                                    .node = "/dev/kvm",
	                                    .driver = "kvm"};
	ci->devices[1] = (struct kx_device){.dev = KX_MKDEV(7, 0),
	                                    .fkind = KX_FK_BLK,
	                                    .drv = KX_DRV_LOOP,
	                                    .node = "/dev/loop0",
	                                    .driver = "loop"};
	memset(arg, 0x11, sizeof(arg));
	for (int i = 0; i < THREADS; i++)
		t[i] = 1000000000ULL + (uint64_t)i * 333;
	for (size_t i = 0; i < n; i++) {
		unsigned int k = (unsigned int)(i * 2654435761u >> 7);
		int th = (int)(i % THREADS);
		struct kx_ioctl e;

		memset(&e, 0, sizeof(e));
		e.pid = 4000;
		e.tid = 4000 + (uint32_t)th;
		e.ts = t[th];
		e.dur = 500 + k % 20000;
		t[th] += e.dur + 100 + k % 900;
		e.fd = 3 + th % 4;
		e.ret = k % 100 ? 0 : -22;
		if (k % 50 == 7) {
			e.fkind = KX_FK_BLK;
			e.dev = KX_MKDEV(7, 0);
			e.drv = KX_DRV_LOOP;
			e.cmd = 0x4c00;
		} else {
			e.fkind = KX_FK_KVM_VCPU;
			e.drv = KX_DRV_KVM;
			e.cmd = kvm_cmds[k % 6];
			if (e.cmd == 0x4020ae46 && k % 4 == 0)
				e.arg_in_len = sizeof(arg);
		}
		if (kx_store_add_ioctl(s, &e, e.arg_in_len ? arg : NULL)) {
			fprintf(stderr, "bench_export: store full after %zu events\n", i);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	size_t n = 5000000, len = 0;
	int rounds = 1, opt;
	static struct kx_capinfo ci;
	struct kx_store *s;
	double best = 0, rss0, rss1;
	char err[256];

	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		switch (opt) {
		case 'n':
			n = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench_export [-n EVENTS] [-r ROUNDS]\n");
			return 2;
		}
	}
	s = kx_store_new((size_t)16 << 30);
	if (!s)
		return 1;
	fill(s, n, &ci);
	rss0 = peak_rss_mib();
	for (int r = 0; r < rounds; r++) {
		uint8_t *buf;
		double t0 = now_s(), dt;
		/* Timed with its analysis (jobs, per-thread ordering), as convert runs it. */
		struct kx_analysis *an = kx_analysis_build(s, &ci, err, sizeof(err));

		if (!an || kx_xspace_serialize(an, NULL, &buf, &len, err, sizeof(err))) {
			fprintf(stderr, "bench_export: %s\n", err);
			return 1;
		}
		dt = now_s() - t0;
		kx_analysis_free(an);
		if (!r || dt < best)
			best = dt;
		free(buf);
	}
	rss1 = peak_rss_mib();
	printf("bench_export: %zu events in %.3f s: %.2f M events/s; %.1f MiB out, %.1f B/event; "
	       "peak RSS %.0f MiB (store) -> %.0f MiB, export +%.0f MiB = %.2fx its output\n",
	       n, best, (double)n / best / 1e6, (double)len / 1048576.0, (double)len / (double)n,
	       rss0, rss1, rss1 - rss0, (rss1 - rss0) / ((double)len / 1048576.0));
	kx_store_free(s);
	return 0;
}
