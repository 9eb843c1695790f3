/*
 * The merge of a capture into another profiler's XSpace (export/xspace_merge.h):
 * a framework-like input built here with protobuf-c, merged, read back.
 * The thread lines found by the hash of the recorded pthread_t, by tid, or
 * added; the input's planes, lines, events and metadata kept; kxprof's
 * events on the input's time base (saved and Unix-epoch lines), their
 * metadata ids above the input's; events outside the span left out and
 * counted; refusals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kxtest.h"
#include "kxtest_analysis.h"
#include "kxtest_capture.h"
#include "export/xspace_merge.h"
#include "model/store.h"
#include "proto/xplane.pb-c.h"
#include "util/stdhash.h"

#define KVM_RUN     0xae80U
#define KVM_DEV     KX_MKDEV(10, 232)
#define OFFSET_NS   1700000000000000000LL
#define START_MONO  2000000ULL /* the profile's span, CLOCK_MONOTONIC ns */
#define STOP_MONO   3000000ULL
#define TP_MAIN     0x7f0000001000ULL /* pthread_t of thread 100 */
#define TP_WORKER   0x7f0000002000ULL /* of 101 */
#define SAVED_TS_NS 5000              /* the saved line's timestamp, from profile_start_time */

typedef Tensorflow__Profiler__XSpace XSpace;
typedef Tensorflow__Profiler__XPlane XPlane;
typedef Tensorflow__Profiler__XLine XLine;
typedef Tensorflow__Profiler__XEvent XEvent;
typedef Tensorflow__Profiler__XStat XStat;

static void add_run(struct kx_store *s, uint32_t tid, uint64_t ts, uint64_t dur)
{
	struct kx_ioctl e;

	memset(&e, 0, sizeof(e));
	e.ts = ts;
	e.dur = dur;
	e.pid = 100;
	e.tid = tid;
	e.fkind = KX_FK_CHR;
	e.dev = KVM_DEV;
	e.drv = KX_DRV_KVM;
	e.cmd = KVM_RUN;
	e.fd = 3;
	kx_store_add_ioctl(s, &e, NULL);
}

static void add_seen(struct kx_store *s, uint32_t tid, uint64_t tp)
{
	struct kx_task t;

	memset(&t, 0, sizeof(t));
	t.pid = 100;
	t.tid = tid;
	t.what = KX_TASK_SEEN;
	t.tp = tp;
	snprintf(t.comm, sizeof(t.comm), "t%u", tid);
	kx_store_add_task(s, &t);
}

/*
 * Threads 100 and 101 with their pthread_t, 102 without: each 20 calls,
 * 100 µs apart from 1.55 ms (+ 1 µs a thread), 20 µs long: 5 before the
 * span (2 to 3 ms), 10 inside, 5 after.
 */
static struct kx_store *capture(struct kx_capinfo *ci)
{
	struct kx_store *s = kx_store_new(0);

	memset(ci, 0, sizeof(*ci));
	snprintf(ci->hostname, sizeof(ci->hostname), "testhost");
	ci->clock_start.offset_ns = OFFSET_NS;
	ci->start_mono_ns = 1000000;
	ci->stop_mono_ns = 9000000;
	add_dev(ci, KX_FK_CHR, KVM_DEV, KX_DRV_KVM, "/dev/kvm", "kvm");
	add_seen(s, 100, TP_MAIN);
	add_seen(s, 101, TP_WORKER);
	add_seen(s, 102, 0);
	for (uint32_t tid = 100; tid <= 102; tid++)
		for (int i = 0; i < 20; i++)
			add_run(s, tid, 1550000 + (uint64_t)i * 100000 + (tid - 100) * 1000, 20000);
	return s;
}

/* A statistic of plane stat metadata id: uint64. */
static XStat *u64_stat(int64_t mid, uint64_t v)
{
	XStat *st = calloc(1, sizeof(*st));

	tensorflow__profiler__xstat__init(st);
	st->metadata_id = mid;
	st->value_case = TENSORFLOW__PROFILER__XSTAT__VALUE_UINT64_VALUE;
	st->uint64_value = v;
	return st;
}

static XEvent *event(int64_t mid, int64_t off_ps, int64_t dur_ps)
{
	XEvent *e = calloc(1, sizeof(*e));

	tensorflow__profiler__xevent__init(e);
	e->metadata_id = mid;
	e->data_case = TENSORFLOW__PROFILER__XEVENT__DATA_OFFSET_PS;
	e->offset_ps = off_ps;
	e->duration_ps = dur_ps;
	return e;
}

static XLine *line(int64_t id, const char *name, int64_t ts, XEvent *ev)
{
	XLine *l = calloc(1, sizeof(*l));

	tensorflow__profiler__xline__init(l);
	l->id = id;
	l->name = strdup(name);
	l->timestamp_ns = ts;
	l->n_events = 1;
	l->events = calloc(1, sizeof(*l->events));
	l->events[0] = ev;
	return l;
}

static Tensorflow__Profiler__XPlane__StatMetadataEntry *stat_meta(int64_t id, const char *name)
{
	Tensorflow__Profiler__XPlane__StatMetadataEntry *m = calloc(1, sizeof(*m));

	tensorflow__profiler__xplane__stat_metadata_entry__init(m);
	m->key = id;
	m->value = calloc(1, sizeof(*m->value));
	tensorflow__profiler__xstat_metadata__init(m->value);
	m->value->id = id;
	m->value->name = strdup(name);
	return m;
}

static Tensorflow__Profiler__XPlane__EventMetadataEntry *event_meta(int64_t id, const char *name)
{
	Tensorflow__Profiler__XPlane__EventMetadataEntry *m = calloc(1, sizeof(*m));

	tensorflow__profiler__xplane__event_metadata_entry__init(m);
	m->key = id;
	m->value = calloc(1, sizeof(*m->value));
	tensorflow__profiler__xevent_metadata__init(m->value);
	m->value->id = id;
	m->value->name = strdup(name);
	return m;
}

static XPlane *plane(int64_t id, const char *name)
{
	XPlane *p = calloc(1, sizeof(*p));

	tensorflow__profiler__xplane__init(p);
	p->id = id;
	p->name = strdup(name);
	return p;
}

/*
 * The framework's profile: a metadata plane, /host:CPU (when host) with
 * the main thread's line keyed by its pthread_t's hash and saved from
 * profile_start_time, the worker's keyed by its tid and stamped in
 * Unix-epoch ns, one event "op" each (metadata ids 1..3 taken), then
 * Task Environment, its span shift_ns from the capture's 2 to 3 ms. Packed
 * into a malloc'ed buffer.
 */
static uint8_t *framework_profile(int host, int64_t shift_ns, size_t *len)
{
	XSpace xs = TENSORFLOW__PROFILER__XSPACE__INIT;
	XPlane *planes[3];
	uint8_t *buf;
	size_t n = 0;

	planes[n] = plane(0, "/host:metadata");
	planes[n]->n_stat_metadata = 1;
	planes[n]->stat_metadata = calloc(1, sizeof(void *));
	planes[n]->stat_metadata[0] = stat_meta(1, "process_id");
	planes[n]->n_stats = 1;
	planes[n]->stats = calloc(1, sizeof(void *));
	planes[n]->stats[0] = u64_stat(1, 100);
	n++;
	if (host) {
		XPlane *h = planes[n++] = plane(0, "/host:CPU");

		h->n_lines = 2;
		h->lines = calloc(2, sizeof(void *));
		h->lines[0] = line((int64_t)kx_stdhash_u64(TP_MAIN), "python", SAVED_TS_NS,
		                   event(1, 1000, 500000000));
		h->lines[1] =
		        line(101, "worker", OFFSET_NS + START_MONO + shift_ns, event(1, 0, 1000));
		h->n_event_metadata = 1;
		h->event_metadata = calloc(1, sizeof(void *));
		h->event_metadata[0] = event_meta(3, "op");
		h->n_stat_metadata = 1;
		h->stat_metadata = calloc(1, sizeof(void *));
		h->stat_metadata[0] = stat_meta(7, "tf_op");
	}
	planes[n] = plane(0, "Task Environment");
	planes[n]->n_stat_metadata = 2;
	planes[n]->stat_metadata = calloc(2, sizeof(void *));
	planes[n]->stat_metadata[0] = stat_meta(1, "profile_start_time");
	planes[n]->stat_metadata[1] = stat_meta(2, "profile_stop_time");
	planes[n]->n_stats = 2;
	planes[n]->stats = calloc(2, sizeof(void *));
	planes[n]->stats[0] = u64_stat(1, OFFSET_NS + START_MONO + shift_ns);
	planes[n]->stats[1] = u64_stat(2, OFFSET_NS + STOP_MONO + shift_ns);
	n++;
	xs.n_planes = n;
	xs.planes = planes;
	*len = tensorflow__profiler__xspace__get_packed_size(&xs);
	buf = malloc(*len);
	tensorflow__profiler__xspace__pack(&xs, buf);
	for (size_t i = 0; i < n; i++)
		tensorflow__profiler__xplane__free_unpacked(planes[i], NULL);
	return buf;
}

static int write_file(const char *path, const uint8_t *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(p, 1, n, f) == n;

	if (f)
		fclose(f);
	return ok ? 0 : -1;
}

static XSpace *read_space(const char *path)
{
	FILE *f = fopen(path, "rb");
	static uint8_t buf[1 << 20];
	size_t n = f ? fread(buf, 1, sizeof(buf), f) : 0;

	if (f)
		fclose(f);
	return tensorflow__profiler__xspace__unpack(NULL, n, buf);
}

static const XPlane *find_plane(const XSpace *xs, const char *name)
{
	for (size_t i = 0; xs && i < xs->n_planes; i++)
		if (!strcmp(xs->planes[i]->name, name))
			return xs->planes[i];
	return NULL;
}

static const XLine *find_line(const XPlane *p, int64_t id)
{
	for (size_t i = 0; p && i < p->n_lines; i++)
		if (p->lines[i]->id == id)
			return p->lines[i];
	return NULL;
}

static const char *event_name(const XPlane *p, int64_t id)
{
	for (size_t i = 0; i < p->n_event_metadata; i++)
		if (p->event_metadata[i]->key == id)
			return p->event_metadata[i]->value->name;
	return NULL;
}

/* Events check_runs found where the capture did not put them. */
static size_t misplaced;

/* The KVM_RUN events of a line (origin: its base, ns from the epoch): their
 * count; each one's start and length checked against the capture's. */
static size_t check_runs(const XPlane *host, const XLine *l, int64_t origin, uint32_t tid)
{
	size_t n = 0;

	for (size_t i = 0; l && i < l->n_events; i++) {
		const XEvent *e = l->events[i];
		const char *name = event_name(host, e->metadata_id);
		int64_t mono;

		if (!name || strcmp(name, "KVM_RUN"))
			continue;
		mono = origin + e->offset_ps / 1000 - OFFSET_NS;
		/* 1.55 ms + k * 100 µs + (tid - 100) µs, inside [2 ms, 3 ms] */
		if ((mono - 1550000 - (int64_t)(tid - 100) * 1000) % 100000 != 0 ||
		    mono < (int64_t)START_MONO || mono + 20000 > (int64_t)STOP_MONO ||
		    e->duration_ps != 20000 * 1000)
			misplaced++;
		n++;
	}
	return n;
}

static int merge(int host, int64_t shift_ns, XSpace **out, struct kx_xmerge_stats *st, char *err,
                 size_t errlen)
{
	static struct kx_capinfo ci;
	struct kx_store *s = capture(&ci);
	struct kx_analysis *an = kxt_analyse(s, &ci);
	char in[] = "/tmp/kxprof-xmerge-in.XXXXXX", outp[64];
	size_t len;
	uint8_t *buf = framework_profile(host, shift_ns, &len);
	int fd = mkstemp(in), rc;

	snprintf(outp, sizeof(outp), "%s.out", in);
	close(fd);
	rc = buf && an && !write_file(in, buf, len) ? kx_xspace_merge(an, in, outp, st, err, errlen)
	                                            : -1;
	*out = rc ? NULL : read_space(outp);
	unlink(in);
	unlink(outp);
	free(buf);
	kx_analysis_free(an);
	kx_store_free(s);
	return rc;
}

static void test_threads_on_their_lines(void)
{
	struct kx_xmerge_stats st;
	const XPlane *host;
	const XLine *l;
	XSpace *xs = NULL;
	char err[256] = "";

	CHECK(merge(1, 0, &xs, &st, err, sizeof(err)) == 0);
	CHECK_STR(err, "");
	CHECK(xs);
	if (!xs)
		return;
	host = find_plane(xs, "/host:CPU");
	CHECK(host);
	/* The input's planes in order, kxprof's device plane after them. */
	CHECK_EQ_U(xs->n_planes, 4);
	CHECK_STR(xs->planes[0]->name, "/host:metadata");
	CHECK_STR(xs->planes[2]->name, "Task Environment");
	CHECK(!strncmp(xs->planes[3]->name, "/device:CUSTOM:0", 16));
	/* Both input lines kept first with their own event, a new line for 102. */
	CHECK_EQ_U(host->n_lines, 3);
	l = find_line(host, (int64_t)kx_stdhash_u64(TP_MAIN));
	CHECK(l && l->timestamp_ns == SAVED_TS_NS && !strcmp(l->name, "python"));
	CHECK(l && l->events[0]->metadata_id == 1 && l->events[0]->offset_ps == 1000);
	CHECK_EQ_U(check_runs(host, l, OFFSET_NS + START_MONO + SAVED_TS_NS, 100), 10);
	l = find_line(host, 101);
	CHECK(l && l->timestamp_ns == OFFSET_NS + (int64_t)START_MONO &&
	      !strcmp(l->name, "worker"));
	CHECK_EQ_U(check_runs(host, l, OFFSET_NS + START_MONO, 101), 10);
	l = find_line(host, 102);
	/* stamped as the input's epoch-stamped line is: at profile_start_time */
	CHECK(l && !strcmp(l->name, "t102"));
	CHECK(l && l->timestamp_ns == OFFSET_NS + (int64_t)START_MONO);
	CHECK_EQ_U(check_runs(host, l, OFFSET_NS + START_MONO, 102), 10);
	CHECK_EQ_U(misplaced, 0);
	/* The input's metadata kept; kxprof's above its largest ids. */
	CHECK_STR(event_name(host, 3), "op");
	for (size_t i = 0; i < host->n_event_metadata; i++)
		CHECK(host->event_metadata[i]->key == 3 || host->event_metadata[i]->key > 3);
	for (size_t i = 0; i < host->n_stat_metadata; i++)
		CHECK(host->stat_metadata[i]->key == 7 || host->stat_metadata[i]->key > 7);
	CHECK_EQ_U(st.lines_matched, 2);
	CHECK_EQ_U(st.lines_new, 1);
	CHECK_EQ_U(st.host_merged, 30);
	CHECK_EQ_U(st.host_before, 15); /* 1.55, 1.65, ... 1.95 ms: five a thread */
	CHECK_EQ_U(st.host_after, 15);  /* 3.05 ... 3.45 ms */
	CHECK_EQ_U(st.planes_added, 1);
	CHECK(st.span_from_ns == OFFSET_NS + (int64_t)START_MONO);
	tensorflow__profiler__xspace__free_unpacked(xs, NULL);
}

/* An input without a host plane gets one (id 49) holding every thread's line. */
static void test_no_host_plane(void)
{
	struct kx_xmerge_stats st;
	const XPlane *host;
	XSpace *xs = NULL;
	char err[256] = "";

	CHECK(merge(0, 0, &xs, &st, err, sizeof(err)) == 0);
	host = find_plane(xs, "/host:CPU");
	CHECK(host && host->id == 49 && host->n_lines == 3);
	/* saved lines (from profile_start_time): new ones start at 0 */
	CHECK(host && host->lines[0]->timestamp_ns == 0);
	for (uint32_t tid = 100; host && tid <= 102; tid++)
		CHECK_EQ_U(check_runs(host, find_line(host, tid), OFFSET_NS + START_MONO, tid), 10);
	CHECK_EQ_U(misplaced, 0);
	CHECK_EQ_U(st.lines_new, 3);
	if (xs)
		tensorflow__profiler__xspace__free_unpacked(xs, NULL);
}

/* A profile of another day (a year earlier, later): every event left out, counted. */
static void test_far_span(void)
{
	static const int64_t shifts[] = {-31536000000000000LL, 31536000000000000LL};
	struct kx_xmerge_stats st;
	XSpace *xs = NULL;
	char err[256] = "";

	for (int i = 0; i < 2; i++) {
		CHECK(merge(1, shifts[i], &xs, &st, err, sizeof(err)) == 0);
		CHECK_EQ_U(st.host_merged + st.dev_merged, 0);
		CHECK_EQ_U(i ? st.host_before : st.host_after, 60);
		CHECK_EQ_U(i ? st.host_after : st.host_before, 0);
		if (xs)
			tensorflow__profiler__xspace__free_unpacked(xs, NULL);
		xs = NULL;
	}
}

/* Not an XSpace, no Task Environment: refused, saying why, nothing written. */
static void test_refusals(void)
{
	static struct kx_capinfo ci;
	struct kx_store *s = capture(&ci);
	struct kx_analysis *an = kxt_analyse(s, &ci);
	struct kx_xmerge_stats st;
	char in[] = "/tmp/kxprof-xmerge-bad.XXXXXX", outp[64], err[256];
	int fd = mkstemp(in);

	snprintf(outp, sizeof(outp), "%s.out", in);
	close(fd);
	CHECK(write_file(in, (const uint8_t *)"{\"json\": 1}", 11) == 0);
	CHECK(kx_xspace_merge(an, in, outp, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not an XSpace") != NULL);
	CHECK(access(outp, F_OK) != 0);
	/* an empty file is an empty XSpace: no Task Environment */
	CHECK(write_file(in, (const uint8_t *)"", 0) == 0);
	CHECK(kx_xspace_merge(an, in, outp, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, "Task Environment") != NULL);
	CHECK(access(outp, F_OK) != 0);
	unlink(in);
	CHECK(kx_xspace_merge(an, in, outp, &st, err, sizeof(err)) == -1);
	CHECK(strstr(err, in) != NULL);
	kx_analysis_free(an);
	kx_store_free(s);
}

/* The hash is libstdc++'s std::hash of an 8-byte value (checked against
 * _Hash_bytes in a JAX 0.10.2 run: main thread pthread_t 140422574629568). */
static void test_stdhash(void)
{
	CHECK(kx_stdhash_u64(140422574629568ULL) == 7089729559240985519ULL);
	CHECK(kx_stdhash_u64(140422090045120ULL) == 13112425300323160963ULL);
}

int main(void)
{
	RUN(test_threads_on_their_lines);
	RUN(test_no_host_plane);
	RUN(test_far_span);
	RUN(test_refusals);
	RUN(test_stdhash);
	KXT_EXIT();
}
