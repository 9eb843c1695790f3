/*
 * DRM client usage statistics: the fdinfo parser over fixtures of several
 * drivers (tests/fixtures/fdinfo/), the tracker's busy figures over passes,
 * and the sampler over a fixture /proc tree (KXPROF_PROC_ROOT) and over the
 * real /proc, where a process without a DRM fd costs no fdinfo read.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "kxtest.h"
#include "capture/drmfdinfo.h"
#include "io/kxp.h"
#include "model/drmusage.h"

static char fixture_text[16384];

/* Reads tests/fixtures/fdinfo/NAME.fdinfo into fixture_text; its length, or -1. */
static ssize_t load_fixture(const char *name)
{
	const char *dir = getenv("KX_FIXTURES");
	char path[512];
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "%s/fdinfo/%s.fdinfo", dir && *dir ? dir : "tests/fixtures",
	         name);
	if (!(f = fopen(path, "r")))
		return -1;
	n = (ssize_t)fread(fixture_text, 1, sizeof(fixture_text) - 1, f);
	fclose(f);
	fixture_text[n] = 0;
	return n;
}

static int parse_fixture(const char *name, struct kx_drm_fdinfo *f)
{
	ssize_t n = load_fixture(name);

	return n < 0 ? -2 : kx_drm_fdinfo_parse(fixture_text, (size_t)n, f);
}

static const struct kx_drm_engine *eng(const struct kx_drm_fdinfo *f, const char *name)
{
	for (int i = 0; i < f->nengines; i++)
		if (!strcmp(f->engine[i].name, name))
			return &f->engine[i];
	return NULL;
}

static const struct kx_drm_region *reg(const struct kx_drm_fdinfo *f, const char *name)
{
	for (int i = 0; i < f->nregions; i++)
		if (!strcmp(f->region[i].name, name))
			return &f->region[i];
	return NULL;
}

/* amdgpu: pdev, client id, KiB and MiB, bytes without a unit, the legacy
 * drm-memory- key overridden by drm-resident-, amd- keys ignored. */
static void parse_amdgpu(void)
{
	struct kx_drm_fdinfo f;
	const struct kx_drm_region *v;

	CHECK(parse_fixture("amdgpu", &f) == 0);
	CHECK_STR(f.driver, "amdgpu");
	CHECK_STR(f.pdev, "0000:03:00.0");
	CHECK_EQ_U(f.client_id, 52);
	CHECK_EQ_U(f.nengines, 3);
	CHECK_EQ_U(eng(&f, "gfx")->busy_ns, 2000000000ull);
	CHECK_EQ_U(eng(&f, "gfx")->capacity, 1);
	CHECK(eng(&f, "gfx")->has == KX_DRM_E_BUSY);
	CHECK_EQ_U(f.nregions, 3);
	CHECK((v = reg(&f, "vram")) != NULL);
	CHECK_EQ_U(v->bytes[KX_DRM_MEM_TOTAL], 13256ull * 1024);
	CHECK_EQ_U(v->bytes[KX_DRM_MEM_RESIDENT], 13256ull * 1024);
	CHECK_EQ_U(v->bytes[KX_DRM_MEM_SHARED], 4096);
	CHECK_EQ_U(v->bytes[KX_DRM_MEM_ACTIVE], 8 * 1024);
	CHECK_EQ_U(v->has, 0x1f);
	CHECK_EQ_U(reg(&f, "gtt")->bytes[KX_DRM_MEM_TOTAL], 2u << 20);
	CHECK_EQ_U(f.bad, 0);
}

/* i915: capacity of a class given after its engine line. */
static void parse_i915(void)
{
	struct kx_drm_fdinfo f;

	CHECK(parse_fixture("i915", &f) == 0);
	CHECK_STR(f.driver, "i915");
	CHECK_EQ_U(f.nengines, 4);
	CHECK_EQ_U(eng(&f, "video")->capacity, 2);
	CHECK_EQ_U(eng(&f, "video-enhance")->capacity, 1);
	CHECK_EQ_U(eng(&f, "render")->busy_ns, 25662044495ull);
	CHECK(reg(&f, "stolen-system0") != NULL);
	CHECK_EQ_U(reg(&f, "system0")->bytes[KX_DRM_MEM_RESIDENT], 4u << 20);
	CHECK_EQ_U(f.bad, 0);
}

/* xe: cycles only; drm-total-cycles- is not a memory region named "cycles-rcs". */
static void parse_xe(void)
{
	struct kx_drm_fdinfo f;
	const struct kx_drm_engine *e;

	CHECK(parse_fixture("xe", &f) == 0);
	CHECK_EQ_U(f.nengines, 4);
	CHECK((e = eng(&f, "rcs")) != NULL);
	CHECK_EQ_U(e->has, KX_DRM_E_CYCLES | KX_DRM_E_TOTCYC);
	CHECK_EQ_U(e->cycles, 1000);
	CHECK_EQ_U(e->total_cycles, 100000);
	CHECK_EQ_U(eng(&f, "vcs")->capacity, 2);
	CHECK_EQ_U(f.nregions, 2);
	CHECK(reg(&f, "cycles-rcs") == NULL);
	CHECK_EQ_U(reg(&f, "vram0")->bytes[KX_DRM_MEM_TOTAL], 64u << 20);
}

/* msm: no drm-pdev, maxfreq in MHz. */
static void parse_msm(void)
{
	struct kx_drm_fdinfo f;

	CHECK(parse_fixture("msm", &f) == 0);
	CHECK_STR(f.pdev, "");
	CHECK_EQ_U(eng(&f, "gpu")->maxfreq_hz, 800000000ull);
	CHECK_EQ_U(eng(&f, "gpu")->has, KX_DRM_E_BUSY | KX_DRM_E_CYCLES | KX_DRM_E_MAXFREQ);
	CHECK_EQ_U(reg(&f, "memory")->bytes[KX_DRM_MEM_ACTIVE], 1u << 20);
}

/* panfrost: the driver's own drm-curfreq- is ignored, not an error. */
static void parse_panfrost(void)
{
	struct kx_drm_fdinfo f;

	CHECK(parse_fixture("panfrost", &f) == 0);
	CHECK_EQ_U(f.nengines, 2);
	CHECK_EQ_U(eng(&f, "vertex-tiler")->maxfreq_hz, 799999987ull);
	CHECK_EQ_U(reg(&f, "memory")->bytes[KX_DRM_MEM_TOTAL], 290ull << 20);
	CHECK_EQ_U(f.bad, 0);
}

/* v3d: five queues; ivpu (accel): memory only. */
static void parse_v3d_ivpu(void)
{
	struct kx_drm_fdinfo f;

	CHECK(parse_fixture("v3d", &f) == 0);
	CHECK_EQ_U(f.nengines, 5);
	CHECK(eng(&f, "cache_clean") != NULL);
	CHECK(parse_fixture("ivpu", &f) == 0);
	CHECK_STR(f.driver, "intel_vpu");
	CHECK_EQ_U(f.nengines, 0);
	CHECK_EQ_U(reg(&f, "memory")->bytes[KX_DRM_MEM_RESIDENT], 8u << 20);
}

/* Text without drm-driver is no client; bad units, zero capacity and
 * values with junk are counted and ignored; the legacy key alone counts as
 * resident. */
static void parse_rules(void)
{
	static const char none[] = "pos:\t0\nflags:\t02\n";
	static const char odd[] = "drm-driver: x\n"
	                          "drm-engine-a: 10 us\n"
	                          "drm-engine-capacity-a: 0\n"
	                          "drm-engine-b: 12x ns\n"
	                          "drm-total-r: 1 GiB\n"
	                          "drm-memory-r: 3 MiB\n"
	                          "drm-client-id: 99 extra words\n"
	                          "drm-client-name: app\n"
	                          "drm-maxfreq-c: 2 KHz";
	struct kx_drm_fdinfo f;

	CHECK(kx_drm_fdinfo_parse(none, sizeof(none) - 1, &f) == -1);
	CHECK(kx_drm_fdinfo_parse(odd, sizeof(odd) - 1, &f) == 0);
	CHECK_EQ_U(f.bad, 5);
	CHECK_EQ_U(f.client_id, KX_DRM_NO_CLIENT);
	CHECK(eng(&f, "a") == NULL && eng(&f, "b") == NULL);
	CHECK_EQ_U(eng(&f, "c")->maxfreq_hz, 2000);
	CHECK_EQ_U(reg(&f, "r")->has, 1u << KX_DRM_MEM_RESIDENT);
	CHECK_EQ_U(reg(&f, "r")->bytes[KX_DRM_MEM_RESIDENT], 3u << 20);
}

static const struct kx_drm_ev *row(const struct kx_drm_ev *r, size_t n, uint32_t pid, uint8_t kind,
                                   const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (r[i].pid == pid && r[i].kind == kind && !strcmp(r[i].name, name))
			return &r[i];
	return NULL;
}

static void set_busy(struct kx_drm_fdinfo *f, const char *name, uint64_t ns)
{
	for (int i = 0; i < f->nengines; i++)
		if (!strcmp(f->engine[i].name, name))
			f->engine[i].busy_ns = ns;
}

/* Busy over an interval with capacity; a dup of a client (another fd, or
 * another process it was passed to) counts once; a counter going back holds
 * the larger value; a client first seen later counts from 0; an engine
 * appearing later counts from 0. */
static void tracker_busy(void)
{
	struct kx_drm_tracker *t = kx_drm_tracker_new(0);
	struct kx_drm_fdinfo f, g;
	const struct kx_drm_ev *r, *e;
	size_t n;

	CHECK(t && parse_fixture("i915", &f) == 0);
	kx_drm_tracker_begin(t, 1000000000ull);
	CHECK(kx_drm_tracker_add(t, 10, "app", 4, &f) == 1);
	CHECK(kx_drm_tracker_add(t, 10, "app", 5, &f) == 0);
	CHECK(kx_drm_tracker_add(t, 11, "peer", 7, &f) == 0);
	r = kx_drm_tracker_end(t, &n);
	CHECK((e = row(r, n, 10, KX_DRM_ENGINE, "render")) != NULL);
	CHECK(e->basis == KX_DRM_BASIS_NONE && kx_drm_ev_busy(e) < 0);
	CHECK(row(r, n, 11, KX_DRM_ENGINE, "render") == NULL);
	CHECK_EQ_U(kx_drm_tracker_stats(t)->dup_clients, 2);

	/* 0.5 s later: render +250 ms, video +500 ms over capacity 2. */
	set_busy(&f, "render", 25662044495ull + 250000000ull);
	set_busy(&f, "video", 1000000000ull + 500000000ull);
	CHECK(parse_fixture("v3d", &g) == 0); /* a client opened since */
	kx_drm_tracker_begin(t, 1500000000ull);
	CHECK(kx_drm_tracker_add(t, 11, "peer", 7, &f) == 1);
	CHECK(kx_drm_tracker_add(t, 10, "app", 4, &f) == 0);
	CHECK(kx_drm_tracker_add(t, 12, "gl", 3, &g) == 1);
	r = kx_drm_tracker_end(t, &n);
	CHECK((e = row(r, n, 11, KX_DRM_ENGINE, "render")) != NULL);
	CHECK_EQ_U(e->interval_ns, 500000000ull);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.5) < 1e-9);
	CHECK((e = row(r, n, 11, KX_DRM_ENGINE, "video")) != NULL);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.5) < 1e-9);
	CHECK_EQ_U(e->capacity, 2);
	CHECK((e = row(r, n, 12, KX_DRM_ENGINE, "render")) != NULL);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.6) < 1e-9); /* 300 ms from 0 in 500 ms */
	CHECK((e = row(r, n, 11, KX_DRM_MEMORY, "system0")) != NULL);
	CHECK_EQ_U(e->v[KX_DRM_MEM_RESIDENT], 4u << 20);

	/* Render goes back 1 ms: held, 0 busy; a new engine appears with 100 ms. */
	set_busy(&f, "render", 25662044495ull + 249000000ull);
	snprintf(f.engine[f.nengines].name, KX_DRM_NAME, "compute");
	f.engine[f.nengines].busy_ns = 100000000ull;
	f.engine[f.nengines].capacity = 1;
	f.engine[f.nengines++].has = KX_DRM_E_BUSY;
	kx_drm_tracker_begin(t, 2500000000ull);
	CHECK(kx_drm_tracker_add(t, 11, "peer", 7, &f) == 1);
	r = kx_drm_tracker_end(t, &n);
	CHECK((e = row(r, n, 11, KX_DRM_ENGINE, "render")) != NULL);
	CHECK(kx_drm_ev_busy(e) == 0);
	CHECK_EQ_U(e->v[KX_DRM_V_BUSY_NS], 25662044495ull + 250000000ull);
	CHECK_EQ_U(kx_drm_tracker_stats(t)->went_back, 1);
	CHECK((e = row(r, n, 11, KX_DRM_ENGINE, "compute")) != NULL);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.1) < 1e-9);
	CHECK(row(r, n, 12, KX_DRM_ENGINE, "render") == NULL); /* closed: gone */
	kx_drm_tracker_free(t);
}

/* Cycles: xe by total cycles (with capacity), msm by maxfreq when the
 * ns key is missing. */
static void tracker_cycles(void)
{
	struct kx_drm_tracker *t = kx_drm_tracker_new(0);
	struct kx_drm_fdinfo x, m;
	const struct kx_drm_ev *r, *e;
	size_t n;

	CHECK(t && parse_fixture("xe", &x) == 0 && parse_fixture("msm", &m) == 0);
	m.engine[0].has &= ~(uint32_t)KX_DRM_E_BUSY;
	kx_drm_tracker_begin(t, 1000000000ull);
	kx_drm_tracker_add(t, 20, "xe", 3, &x);
	kx_drm_tracker_add(t, 21, "msm", 3, &m);
	kx_drm_tracker_end(t, &n);
	x.engine[0].cycles += 25000; /* rcs: 25000 of 100000 */
	x.engine[0].total_cycles += 100000;
	x.engine[2].cycles += 100000; /* vcs: 100000 of 100000, capacity 2 */
	x.engine[2].total_cycles += 100000;
	m.engine[0].cycles += 400000000ull; /* 400 M of 800 MHz * 1 s */
	kx_drm_tracker_begin(t, 2000000000ull);
	kx_drm_tracker_add(t, 20, "xe", 3, &x);
	kx_drm_tracker_add(t, 21, "msm", 3, &m);
	r = kx_drm_tracker_end(t, &n);
	CHECK((e = row(r, n, 20, KX_DRM_ENGINE, "rcs")) != NULL);
	CHECK(e->basis == KX_DRM_BASIS_CYCLES);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.25) < 1e-9);
	CHECK((e = row(r, n, 20, KX_DRM_ENGINE, "vcs")) != NULL);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.5) < 1e-9);
	CHECK((e = row(r, n, 21, KX_DRM_ENGINE, "gpu")) != NULL);
	CHECK(e->basis == KX_DRM_BASIS_FREQ);
	CHECK(fabs(kx_drm_ev_busy(e) - 0.5) < 1e-9);
	kx_drm_tracker_free(t);
}

/* Writes a file; 0 or -1. */
static int put_file(const char *path, const char *text, size_t n)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fwrite(text, 1, n, f);
	return fclose(f);
}

/* A fixture process: root/PID/comm, fd/N -> target, fdinfo/N from a fixture. */
static int fake_proc(const char *root, uint32_t pid, const char *comm, int fd, const char *target,
                     const char *fixture)
{
	char p[512];
	ssize_t n = fixture ? load_fixture(fixture) : 0;

	snprintf(p, sizeof(p), "%s/%u", root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/fd", root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/fdinfo", root, pid);
	mkdir(p, 0755);
	snprintf(p, sizeof(p), "%s/%u/comm", root, pid);
	if (n < 0 || put_file(p, comm, strlen(comm)))
		return -1;
	snprintf(p, sizeof(p), "%s/%u/fd/%d", root, pid, fd);
	if (symlink(target, p))
		return -1;
	snprintf(p, sizeof(p), "%s/%u/fdinfo/%d", root, pid, fd);
	return put_file(p, fixture ? fixture_text : "pos:\t0\n", fixture ? (size_t)n : 7);
}

/* Two passes over a fixture tree: DRM fds only are read, a passed client
 * counts once, a pipe and /dev/null are never read. */
static void sampler_fixture_root(void)
{
	char root[] = "/tmp/kxt-drm-XXXXXX", cmd[600];
	struct kx_drm_sampler *s;
	const struct kx_drm_sampler_stats *st;
	const struct kx_drm_ev *r;
	size_t n;

	CHECK(mkdtemp(root));
	CHECK(fake_proc(root, 100, "game\n", 5, "/dev/dri/renderD128", "amdgpu") == 0);
	CHECK(fake_proc(root, 101, "compositor\n", 9, "/dev/dri/renderD128", "amdgpu") == 0);
	CHECK(fake_proc(root, 102, "shell\n", 1, "pipe:[1234]", NULL) == 0);
	CHECK(fake_proc(root, 103, "null\n", 0, "/dev/null", NULL) == 0);
	CHECK(fake_proc(root, 104, "npu\n", 3, "/dev/accel/accel0", "ivpu") == 0);
	setenv("KXPROF_PROC_ROOT", root, 1);
	s = kx_drm_sampler_new(NULL, 0, 1);
	unsetenv("KXPROF_PROC_ROOT");
	CHECK(s);
	kx_drm_sampler_pass(s, 1000000000ull, &n);
	r = kx_drm_sampler_pass(s, 2000000000ull, &n);
	st = kx_drm_sampler_stats(s);
	CHECK_EQ_U(st->procs, 10);
	CHECK_EQ_U(st->fdinfo_reads, 6); /* 100, 101 and 104, twice */
	CHECK_EQ_U(kx_drm_sampler_tracker_stats(s)->dup_clients, 2);
	CHECK(row(r, n, 100, KX_DRM_ENGINE, "gfx") != NULL);
	CHECK_STR(row(r, n, 100, KX_DRM_ENGINE, "gfx")->comm, "game");
	CHECK(row(r, n, 101, KX_DRM_ENGINE, "gfx") == NULL);
	CHECK(kx_drm_ev_busy(row(r, n, 100, KX_DRM_ENGINE, "gfx")) == 0);
	CHECK(row(r, n, 104, KX_DRM_MEMORY, "memory") != NULL);
	kx_drm_sampler_free(s);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

/* Live: this process (no DRM fd, some other fds) and its pid set walked in
 * the real /proc: fds looked at, no fdinfo read. */
static void sampler_live_no_drm(void)
{
	struct kx_drm_sampler *s;
	const struct kx_drm_sampler_stats *st;
	int p[2];
	size_t n;

	CHECK(pipe(p) == 0);
	unsetenv("KXPROF_PROC_ROOT");
	CHECK((s = kx_drm_sampler_new(NULL, 0, 0)) != NULL);
	kx_drm_sampler_add_pid(s, (uint32_t)getpid());
	kx_drm_sampler_pass(s, 1, &n);
	kx_drm_sampler_pass(s, 2, &n);
	st = kx_drm_sampler_stats(s);
	printf("# %llu fds looked at, %llu fdinfo reads\n", (unsigned long long)st->fds,
	       (unsigned long long)st->fdinfo_reads);
	CHECK_EQ_U(st->procs, 2);
	CHECK(st->fds >= 4); /* the pipe's two ends, twice */
	CHECK_EQ_U(st->fdinfo_reads, 0);
	CHECK_EQ_U(n, 0);
	kx_drm_sampler_free(s);
	close(p[0]);
	close(p[1]);
}

/* DRM rows through the record file: written, read back whole and
 * streamed, every field kept. */
static void record_roundtrip(void)
{
	struct kx_drm_tracker *t = kx_drm_tracker_new(0);
	struct kx_kxp_visitor v = {0};
	struct kx_capinfo ci = {0}, ci2;
	struct kx_kxp_read_result res;
	struct kx_store *st = kx_store_new(0);
	struct kx_kxp_writer *w;
	struct kx_drm_fdinfo f;
	const struct kx_drm_ev *r, *got;
	char path[] = "/tmp/kxt-drm-rec-XXXXXX", err[512];
	size_t n, ngot;
	int fd = mkstemp(path);

	CHECK(fd >= 0 && t && st);
	close(fd);
	unlink(path); /* a name of our own: the writer would keep what is there as .old */
	CHECK(parse_fixture("amdgpu", &f) == 0);
	kx_drm_tracker_begin(t, 1000);
	kx_drm_tracker_add(t, 7, "app", 3, &f);
	kx_drm_tracker_end(t, &n);
	f.engine[0].busy_ns += 1000;
	kx_drm_tracker_begin(t, 5000);
	kx_drm_tracker_add(t, 7, "app", 3, &f);
	r = kx_drm_tracker_end(t, &n);
	CHECK(n == 6);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w);
	for (size_t i = 0; i < n; i++)
		CHECK(kx_kxp_add_drm(w, &r[i]) == 0);
	ci.drm.interval_ms = 250;
	ci.drm.stats[KX_DRMI_FDINFO_READS] = 7;
	ci.drm.stats[KX_DRMI_PASS_NS] = 123456789;
	CHECK(kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK(kx_kxp_read(path, st, &ci2, &res, err, sizeof(err)) == 0);
	got = kx_store_drm(st, &ngot);
	CHECK_EQ_U(ngot, n);
	for (size_t i = 0; i < n; i++)
		CHECK(memcmp(&got[i], &r[i], sizeof(*r)) == 0);
	CHECK(fabs(kx_drm_ev_busy(&got[0]) - 0.25) < 1e-9);
	CHECK_EQ_U(ci2.drm.interval_ms, 250); /* the sampler's facts, from the trailer */
	CHECK_EQ_U(ci2.drm.stats[KX_DRMI_FDINFO_READS], 7);
	CHECK_EQ_U(ci2.drm.stats[KX_DRMI_PASS_NS], 123456789);
	unlink(path);
	kx_store_free(st);
	kx_drm_tracker_free(t);
	(void)v;
}

/* Sets a record file's version, its header checksum (CRC32 over the header
 * but its last 4 bytes, io/kxp_layout.h) recomputed. */
static void set_version(unsigned char *buf, uint32_t v)
{
	uint32_t hlen = buf[12] | buf[13] << 8 | buf[14] << 16 | (uint32_t)buf[15] << 24;
	uLong crc;

	buf[8] = (unsigned char)v;
	crc = crc32(0, buf, hlen - 4);
	for (int i = 0; i < 4; i++)
		buf[hlen - 4 + i] = (unsigned char)(crc >> (8 * i));
}

/* Version 5 reads version 4 files (the same layout without DRM records),
 * and refuses a file newer than itself with a message saying so. */
static void record_versions(void)
{
	struct kx_capinfo ci = {0}, ci2;
	struct kx_kxp_read_result res;
	struct kx_store *st = kx_store_new(0);
	struct kx_kxp_writer *w;
	struct kx_task t = {.ts = 5, .pid = 9, .tid = 9, .what = 1};
	char path[] = "/tmp/kxt-drm-ver-XXXXXX", err[512];
	unsigned char *buf = NULL;
	long len;
	int fd = mkstemp(path);
	FILE *f;

	CHECK(fd >= 0 && st);
	close(fd);
	unlink(path);
	w = kx_kxp_create(path, &ci, err, sizeof(err));
	CHECK(w && kx_kxp_add_task(w, &t) == 0 && kx_kxp_close(w, &ci, err, sizeof(err)) == 0);
	CHECK((f = fopen(path, "rb")) != NULL);
	fseek(f, 0, SEEK_END);
	len = ftell(f);
	rewind(f);
	CHECK(len > 16 && (buf = malloc((size_t)len)) != NULL);
	CHECK(fread(buf, 1, (size_t)len, f) == (size_t)len);
	fclose(f);
	unlink(path);
	CHECK_EQ_U(buf[8], KX_KXP_VERSION);
	set_version(buf, 4);
	CHECK(kx_kxp_read_mem(buf, (size_t)len, st, &ci2, &res, err, sizeof(err)) == 0);
	CHECK_EQ_U(kx_store_task_count(st), 1);
	set_version(buf, KX_KXP_VERSION + 1);
	CHECK(kx_kxp_read_mem(buf, (size_t)len, st, &ci2, &res, err, sizeof(err)) == -1);
	CHECK(strstr(err, "is newer than this kxprof reads") != NULL);
	free(buf);
	kx_store_free(st);
}

int main(void)
{
	RUN(parse_amdgpu);
	RUN(parse_i915);
	RUN(parse_xe);
	RUN(parse_msm);
	RUN(parse_panfrost);
	RUN(parse_v3d_ivpu);
	RUN(parse_rules);
	RUN(tracker_busy);
	RUN(tracker_cycles);
	RUN(sampler_fixture_root);
	RUN(sampler_live_no_drm);
	RUN(record_roundtrip);
	RUN(record_versions);
	KXT_EXIT();
}
