/*
 * The merge into another profiler's Chrome trace (export/chrome_merge.h)
 * and the clock conversion it uses (model/capinfo.h): the offset
 * interpolated between the start and stop syncs; calls at the span's edges
 * counted exactly; the input kept byte for byte, strings holding brackets
 * and quotes included.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/chrome_merge.h"
#include "kxtest.h"
#include "kxtest_analysis.h"
#include "model/capinfo.h"
#include "model/store.h"

static char dir[] = "/tmp/kxt_merge.XXXXXX";

static void sync_capinfo(struct kx_capinfo *ci)
{
	memset(ci, 0, sizeof(*ci));
	/* realtime = mono + 1e9 at mono 1000 ns, + 1e9 + 1000 at mono 1001000 ns. */
	ci->clock_start = (struct kx_clock_sync){1000000000, 40, 1000};
	ci->clock_stop = (struct kx_clock_sync){1000001000, 50, 1001000};
	ci->start_mono_ns = 1000;
	ci->stop_mono_ns = 1001000;
}

static void realtime_synced_interpolates(void)
{
	struct kx_capinfo ci;

	sync_capinfo(&ci);
	CHECK(kx_capinfo_realtime_synced(&ci, 1000) == 1000001000);
	CHECK(kx_capinfo_realtime_synced(&ci, 501000) == 1000501000 + 500);
	CHECK(kx_capinfo_realtime_synced(&ci, 1001000) == 1001002000);
	/* No stop sync: the start's offset alone. */
	ci.clock_stop = (struct kx_clock_sync){0, 0, 0};
	CHECK(kx_capinfo_realtime_synced(&ci, 501000) == 1000501000);
}

static void add(struct kx_store *s, uint64_t ts, uint64_t dur)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.dur = dur;
	e.pid = 42;
	e.tid = 43;
	e.cmd = 0xae80;
	e.fd = 5;
	kx_store_add_ioctl(s, &e, NULL);
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *b = calloc(1, 1 << 16);
	size_t n = 0;

	if (f && b)
		n = fread(b, 1, (1 << 16) - 1, f);
	if (f)
		fclose(f);
	if (b)
		b[n] = '\0';
	return b;
}

static void write_str(const char *path, const char *s)
{
	FILE *f = fopen(path, "w");

	if (f) {
		fputs(s, f);
		fclose(f);
	}
}

/* The trace spans realtime 1000101000..1000201000 (base 1000000000, ts in
 * µs); without interpolation every call below would be 50 ns earlier. */
#define TRACE_HEAD                                                                                 \
	"{\"schemaVersion\":1,\"traceEvents\":[\n"                                                 \
	"{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":42,\"ts\":1,\"args\":{\"name\":\"a]"      \
	"\\\"b\"}},\n"                                                                             \
	"{\"ph\":\"X\",\"name\":\"op ]}\",\"pid\":42,\"tid\":43,\"ts\":101.000,\"dur\":100,"       \
	"\"args\":{\"ts\":5,\"x\":[1,{\"y\":\"]\"}]}}\n"                                           \
	"],\"baseTimeNanoseconds\":1000000000,\"traceName\":\"t\"}"

static void edges_exact(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_capinfo ci;
	struct kx_analysis *an;
	struct kx_merge_stats st;
	char in[64], out[64], err[256], *o;

	sync_capinfo(&ci);
	/* realtime(mono) = mono + 1e9 + (mono - 1000) / 1000 */
	add(s, 100850, 10); /* realtime 1000100850 + 99: before the span */
	add(s, 101000, 10); /* 1000101000 + 100: the first inside */
	add(s, 150000, 5);
	add(s, 200700, 0);   /* 1000200700 + 199 = 1000200899 */
	add(s, 200701, 200); /* ends at 1000201101 + 199 > span end */
	add(s, 300000, 1);
	snprintf(in, sizeof(in), "%s/in.json", dir);
	snprintf(out, sizeof(out), "%s/out.json", dir);
	write_str(in, TRACE_HEAD);
	an = kxt_analyse(s, &ci);
	CHECK(an && !kx_chrome_merge(an, in, out, &st, err, sizeof(err)));
	CHECK_EQ_U(st.merged, 3);
	CHECK_EQ_U(st.before, 1);
	CHECK_EQ_U(st.after, 2);
	CHECK_EQ_U(st.uncertainty_ns, 50);
	o = slurp(out);
	CHECK(o && strstr(o, "\"kxprofMerge\":{\"merged\":3,\"left_out_before\":1,"));
	/* The first inside: 101000 + 1e9 + 100 - base, in µs. */
	CHECK(o && strstr(o, "\"pid\":42,\"tid\":43,\"ts\":101.100,\"dur\":0.010"));
	CHECK(o && strstr(o, "\"ts\":200.899,\"dur\":0.000"));
	/* The input around the added member and slices, byte for byte. */
	CHECK(o && strstr(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":42,\"ts\":1,\"args\":"
	                     "{\"name\":\"a]\\\"b\"}},\n{\"ph\":\"X\",\"name\":\"op ]}\""));
	CHECK(o && strstr(o, "}}\n,{\"ph\":\"X\",\"name\":"));
	CHECK(o &&
	      strstr(o, "\"kxprof\"}}],\"baseTimeNanoseconds\":1000000000,\"traceName\":\"t\"}"));
	free(o);
	kx_analysis_free(an);
	kx_store_free(s);
}

static void refuses_untimed_and_damaged(void)
{
	struct kx_store *s = kx_store_new(0);
	struct kx_capinfo ci;
	struct kx_analysis *an;
	struct kx_merge_stats st;
	char in[64], out[64], err[256];

	sync_capinfo(&ci);
	add(s, 150000, 5);
	an = kxt_analyse(s, &ci);
	snprintf(in, sizeof(in), "%s/in2.json", dir);
	snprintf(out, sizeof(out), "%s/out2.json", dir);
	write_str(in, "{\"traceEvents\":[{\"ph\":\"M\",\"ts\":3}]}");
	CHECK(an && kx_chrome_merge(an, in, out, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "no timed events") && strstr(err, in));
	write_str(in, "{\"traceEvents\":[{\"ph\":\"X\",\"ts\":3,\"name\":\"unterminated}]}");
	CHECK(an && kx_chrome_merge(an, in, out, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not a Chrome trace"));
	CHECK(access(out, F_OK) != 0);
	kx_analysis_free(an);
	kx_store_free(s);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	RUN(realtime_synced_interpolates);
	RUN(edges_exact);
	RUN(refuses_untimed_and_damaged);
	for (const char *const *f = (const char *const[]){"in.json", "out.json", "in2.json", NULL};
	     *f; f++) {
		char p[64];

		snprintf(p, sizeof(p), "%s/%s", dir, *f);
		unlink(p);
	}
	rmdir(dir);
	KXT_EXIT();
}
