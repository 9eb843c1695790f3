/*
 * Benchmark of the Chrome trace JSON exporter (user/export/chrome.c): builds a
 * synthetic store of N ioctl events (8 threads in 2 processes, mostly
 * KVM_RUN, 1% with decoded arguments, 0.5% failing) and times
 * kx_chrome_write to .json and to .json.gz with each gzip engine (ISA-L, the
 * default, and zlib, in the same run), printing events/s, output bytes per
 * event and peak RSS next to the store's own size. Then the bound each
 * engine puts on .json.gz: its level-1 deflate and CRC-32 alone over the
 * same JSON bytes, on one CPU, and what that allows on all of them.
 *
 * usage: bench_chrome [N (default 5000000)] [DIR (default /tmp)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include <isa-l/crc.h>
#include <isa-l/igzip_lib.h>

#include "export/chrome.h"
#include "registry/ioctl_decode.h"
#include "model/store.h"
#include "util/pgz.h"

static double clock_s(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double now(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

/* CPU time too: on a shared machine the wall clock mostly measures neighbours. */
static double cpu(void)
{
	return clock_s(CLOCK_PROCESS_CPUTIME_ID);
}

static double peak_rss_mb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_maxrss / 1024.0;
}

static struct kx_store *synth(size_t n)
{
	struct kx_store *s = kx_store_new((size_t)4 << 30);
	uint64_t next[8] = {0};
	uint8_t mem[32] = {0};
	uint32_t rng = 12345;

	mem[9] = 0x10;
	mem[18] = 0x01;
	for (size_t i = 0; i < n; i++) {
		struct kx_ioctl e;
		unsigned int th = (unsigned int)(i & 7);
		const uint8_t *arg = NULL;

		rng = rng * 1664525u + 1013904223u;
		memset(&e, 0, sizeof(e));
		e.pid = th < 4 ? 4000 : 5000;
		e.tid = e.pid + th;
		e.dur = 2000 + (rng >> 8) % 50000;
		e.ts = 1000000000ULL + next[th] + (rng >> 20) % 3000;
		next[th] = e.ts - 1000000000ULL + e.dur + 100;
		e.fkind = KX_FK_KVM_VCPU;
		e.drv = KX_DRV_KVM;
		e.cmd = 0xae80;
		e.fd = (int32_t)(10 + th);
		e.cpu_lo = (uint8_t)th;
		if (i % 100 == 7) {
			e.fkind = KX_FK_KVM_VM;
			e.cmd = 0x4020ae46;
			e.arg_in_len = 32;
			arg = mem;
		} else if (i % 200 == 3) {
			e.ret = -4;
		}
		if (kx_store_add_ioctl(s, &e, arg)) {
			fprintf(stderr, "bench_chrome: store full at %zu events\n", i);
			exit(1);
		}
	}
	return s;
}

static unsigned char bin[1 << 20], bout[(1 << 20) + 65536];

/* One 1 MiB block deflated with a sync flush by each engine; CPU seconds. */
static double zlib_block(z_stream *z, size_t len)
{
	double c0 = cpu();

	z->next_in = bin;
	z->avail_in = (uInt)len;
	do {
		z->next_out = bout;
		z->avail_out = sizeof(bout);
		deflate(z, Z_SYNC_FLUSH);
	} while (z->avail_out == 0);
	return cpu() - c0;
}

static double isal_block(struct isal_zstream *z, size_t len)
{
	double c0 = cpu();

	z->next_in = bin;
	z->avail_in = (uint32_t)len;
	z->flush = SYNC_FLUSH;
	do {
		z->next_out = bout;
		z->avail_out = sizeof(bout);
		isal_deflate(z);
	} while (z->avail_out == 0);
	return cpu() - c0;
}

/*
 * Deflate (level 1, the exporter's) and CRC-32 of the JSON file alone, in
 * the exporter's 1 MiB blocks, timed in CPU seconds, with each engine: no
 * export can write .json.gz faster than all CPUs doing just this.
 */
static void gzip_bound(const char *path, size_t n, enum kx_pgz_engine e)
{
	static uint8_t lvl[ISAL_DEF_LVL1_DEFAULT];
	FILE *f = fopen(path, "rb");
	double c_def = 0, c_crc = 0, c0;
	size_t total = 0, got;
	uint32_t crc = 0;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct isal_zstream iz;
	z_stream z;

	if (!f) {
		perror(path);
		exit(1);
	}
	memset(&z, 0, sizeof(z));
	if (e == KX_PGZ_ZLIB &&
	    deflateInit2(&z, 1, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		fprintf(stderr, "bench_chrome: deflateInit2 failed\n");
		exit(1);
	}
	isal_deflate_init(&iz);
	iz.level = 1;
	iz.level_buf = lvl;
	iz.level_buf_size = sizeof(lvl);
	while ((got = fread(bin, 1, sizeof(bin), f)) > 0) {
		total += got;
		c0 = cpu();
		crc = e == KX_PGZ_ZLIB ? (uint32_t)crc32(crc, bin, (uInt)got)
		                       : crc32_gzip_refl(crc, bin, got);
		c_crc += cpu() - c0;
		c_def += e == KX_PGZ_ZLIB ? zlib_block(&z, got) : isal_block(&iz, got);
	}
	if (e == KX_PGZ_ZLIB)
		deflateEnd(&z);
	fclose(f);
	if (ncpu < 1)
		ncpu = 1;
	printf("chrome gzip bound (%s): %.0f MB of JSON, deflate level 1 %.2f s CPU (%.0f MB/s), "
	       "crc32 %.2f s CPU; on %ld CPUs at most %.2f M events/s (crc %08x)\n",
	       kx_pgz_engine_name(e), (double)total / 1e6, c_def, (double)total / c_def / 1e6,
	       c_crc, ncpu, (double)n * (double)ncpu / (c_def + c_crc) / 1e6, crc);
}

/* Exports to path (gzip with engine e when it ends in .gz). */
static void run(const struct kx_store *s, const struct kx_capinfo *ci, const char *path,
                enum kx_pgz_engine e)
{
	size_t n = kx_store_ioctl_count(s);
	char err[512];
	struct stat st;
	struct kx_analysis *an;
	double t0, c0, dt, dc;

	setenv("KXPROF_GZIP", kx_pgz_engine_name(e), 1);
	t0 = now();
	c0 = cpu();
	/* Timed with its analysis (jobs, per-thread ordering), as convert runs it. */
	an = kx_analysis_build(s, ci, err, sizeof(err));
	if (!an || kx_chrome_write(an, path, err, sizeof(err))) {
		fprintf(stderr, "bench_chrome: %s\n", err);
		exit(1);
	}
	dt = now() - t0;
	dc = cpu() - c0;
	kx_analysis_free(an);
	if (stat(path, &st)) {
		perror(path);
		exit(1);
	}
	printf("chrome %-8s %zu events in %.2f s (%.2f s CPU): %.2f M events/s "
	       "(%.2f M per CPU second), %.1f bytes/event (%.0f MB), peak RSS %.0f MB\n",
	       !strstr(path, ".gz") ? ".json"
	       : e == KX_PGZ_ISAL   ? ".json.gz"
	                            : ".json.gz/zlib",
	       n, dt, dc, (double)n / dt / 1e6, (double)n / dc / 1e6,
	       (double)st.st_size / (double)n, (double)st.st_size / 1e6, peak_rss_mb());
	if (!strstr(path, ".gz")) {
		gzip_bound(path, n, KX_PGZ_ISAL);
		gzip_bound(path, n, KX_PGZ_ZLIB);
	}
	unlink(path);
}

int main(int argc, char **argv)
{
	size_t n = argc > 1 ? strtoull(argv[1], NULL, 10) : 5000000;
	const char *dir = argc > 2 ? argv[2] : "/tmp";
	struct kx_capinfo ci;
	struct kx_store *s;
	char path[512];
	double t0;

	memset(&ci, 0, sizeof(ci));
	snprintf(ci.hostname, sizeof(ci.hostname), "bench");
	ci.clock_start.offset_ns = 1700000000000000000LL;
	ci.ndevices = 1;
	ci.devices[0].fkind = KX_FK_KVM_VCPU;
	ci.devices[0].drv = KX_DRV_KVM;
	snprintf(ci.devices[0].node, sizeof(ci.devices[0].node), "anon_inode:kvm-vcpu");
	snprintf(ci.devices[0].driver, sizeof(ci.devices[0].driver), "kvm");

	t0 = now();
	s = synth(n);
	printf("chrome store: %zu events, %.0f MB, built in %.2f s, peak RSS %.0f MB\n", n,
	       (double)kx_store_bytes(s) / 1e6, now() - t0, peak_rss_mb());
	snprintf(path, sizeof(path), "%s/bench_chrome.%d.json", dir, (int)getpid());
	run(s, &ci, path, KX_PGZ_ISAL);
	snprintf(path, sizeof(path), "%s/bench_chrome.%d.json.gz", dir, (int)getpid());
	run(s, &ci, path, KX_PGZ_ISAL);
	run(s, &ci, path, KX_PGZ_ZLIB);
	kx_store_free(s);
	return 0;
}
