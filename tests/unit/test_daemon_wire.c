/*
 * The daemon protocol's wire format (capture/daemon_wire.h), no privilege
 * needed: frame headers and every refusal of a bad one; the request's round
 * trip and its limits; the replies; whole messages over a socket pair, cut
 * short, stalled and oversized; seeded fuzzing of the request decoder and
 * of the message reader (nothing crashes, every failure has a reason); and
 * the record stream: streamed pieces are the bytes of the file the same
 * capture writes, and read back into the same events.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kxtest.h"
#include "kxp_gen.h"
#include "capture/clock.h"
#include "capture/daemon_wire.h"
#include "util/pbwire.h"

/* An OPEN announcing 16 payload bytes, then 3 of them. */
static const uint8_t open_cut[] = {'K', 'D', 1, 1, 16, 0, 0, 0, 'a', 'b', 'c'};

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static struct kx_dw_request full_request(void)
{
	struct kx_dw_request r;

	memset(&r, 0, sizeof(r));
	for (int i = 0; i < 5; i++)
		r.pids[r.npids++] = (uint32_t)(1000 + i * 7919);
	r.pids[r.npids++] = 0x7fffffff;
	snprintf(r.devices[r.ndevices++], KX_DW_SPEC_MAX, "/dev/loop3");
	snprintf(r.devices[r.ndevices++], KX_DW_SPEC_MAX, "loop");
	snprintf(r.devices[r.ndevices++], KX_DW_SPEC_MAX, "block:7:3");
	snprintf(r.mech, sizeof(r.mech), "raw_tp");
	r.ringbuf_bytes = 3u << 20;
	r.no_jobs = 1;
	r.annotate = 1;
	r.sample_hz = 999;
	r.off_cpu = 1;
	r.ustack_bytes = 16384;
	r.ustack_auto = 1;
	snprintf(r.counters, sizeof(r.counters), "context-switches,cycles");
	snprintf(r.cmdline, sizeof(r.cmdline), "loop_workload -t 2 -j 5 --name \"a b\"");
	return r;
}

static int same_request(const struct kx_dw_request *a, const struct kx_dw_request *b)
{
	if (a->npids != b->npids || a->ndevices != b->ndevices || a->all != b->all ||
	    a->no_jobs != b->no_jobs || a->annotate != b->annotate ||
	    a->ringbuf_bytes != b->ringbuf_bytes || strcmp(a->mech, b->mech) ||
	    strcmp(a->cmdline, b->cmdline) || a->sample_hz != b->sample_hz ||
	    a->off_cpu != b->off_cpu || a->ustack_bytes != b->ustack_bytes ||
	    a->ustack_auto != b->ustack_auto || strcmp(a->counters, b->counters))
		return 0;
	for (int i = 0; i < a->npids; i++)
		if (a->pids[i] != b->pids[i])
			return 0;
	for (int i = 0; i < a->ndevices; i++)
		if (strcmp(a->devices[i], b->devices[i]))
			return 0;
	return 1;
}

static void request_round_trip(void)
{
	struct kx_dw_request r = full_request(), back, empty = {0};
	struct kx_bytes b = {0};
	char err[256];

	kx_dw_request_encode(&b, &r);
	CHECK(!b.oom);
	CHECK(kx_dw_request_decode(b.p, b.len, &back, err, sizeof(err)) == 0);
	CHECK(same_request(&r, &back));
	/* -a alone, and the empty request (the daemon refuses it, the codec does not). */
	b.len = 0;
	empty.all = 1;
	kx_dw_request_encode(&b, &empty);
	CHECK(kx_dw_request_decode(b.p, b.len, &back, err, sizeof(err)) == 0);
	CHECK(back.all == 1 && back.npids == 0 && back.ndevices == 0);
	CHECK(kx_dw_request_decode(b.p, 0, &back, err, sizeof(err)) == 0);
	CHECK(back.all == 0);
	free(b.p);
}

/* Decodes raw request bytes; 0 when refused with a message containing want. */
static int refused(const uint8_t *p, size_t n, const char *want)
{
	struct kx_dw_request r;
	char err[256] = "";

	if (kx_dw_request_decode(p, n, &r, err, sizeof(err)) == 0)
		return 0;
	if (!strstr(err, want) || strncmp(err, "malformed request: ", 19)) {
		printf("  refused with '%s', expected '%s'\n", err, want);
		return 0;
	}
	return 1;
}

static void request_limits(void)
{
	static const uint8_t pid0[] = {0x08, 0x00};
	static const uint8_t big_pid[] = {0x08, 0x80, 0x80, 0x80, 0x80, 0x08};
	static const uint8_t flag2[] = {0x10, 0x02};
	static const uint8_t twice[] = {0x10, 0x01, 0x10, 0x01};
	static const uint8_t unknown[] = {0x70, 0x01};
	static const uint8_t auto2[] = {0x68, 0x02};
	static const uint8_t ustack0[] = {0x60, 0x00};
	static const uint8_t ustack_big[] = {0x60, 0xf9, 0xff, 0x03}; /* 65529 */
	static const uint8_t hz0[] = {0x48, 0x00};
	static const uint8_t hz_big[] = {0x48, 0xc1, 0x84, 0x3d}; /* 1000001 */
	static const uint8_t hz_twice[] = {0x48, 0x01, 0x48, 0x01};
	static const uint8_t off2[] = {0x50, 0x02};
	static const uint8_t no_ctrs[] = {0x5a, 0x00};
	static const uint8_t ctrs_nul[] = {0x5a, 0x02, 'a', 0};
	static const uint8_t nul[] = {0x1a, 0x03, 'a', 0, 'b'};
	static const uint8_t empty_spec[] = {0x1a, 0x00};
	static const uint8_t cut_len[] = {0x1a, 0x09, 'a'};
	static const uint8_t cut_varint[] = {0x08, 0x80};
	static const uint8_t fixed64[] = {0x09, 1, 2, 3, 4, 5, 6, 7, 8};
	static const uint8_t field0[] = {0x00, 0x01};
	struct kx_bytes b = {0};
	uint8_t *long_spec;

	CHECK(refused(pid0, sizeof(pid0), "bad pid"));
	CHECK(refused(big_pid, sizeof(big_pid), "bad pid"));
	CHECK(refused(flag2, sizeof(flag2), "not a flag"));
	CHECK(refused(twice, sizeof(twice), "given twice"));
	CHECK(refused(unknown, sizeof(unknown),
	              "unknown field 14 (a client newer than this daemon?)"));
	CHECK(refused(auto2, sizeof(auto2), "not a flag"));
	CHECK(refused(ustack0, sizeof(ustack0), "bad stack copy size (1 to 65528 bytes)"));
	CHECK(refused(ustack_big, sizeof(ustack_big), "bad stack copy size"));
	CHECK(refused(hz0, sizeof(hz0), "bad sampling frequency (1 to 1000000 Hz)"));
	CHECK(refused(hz_big, sizeof(hz_big), "bad sampling frequency"));
	CHECK(refused(hz_twice, sizeof(hz_twice), "given twice"));
	CHECK(refused(off2, sizeof(off2), "not a flag"));
	CHECK(refused(no_ctrs, sizeof(no_ctrs), "bad counter list"));
	CHECK(refused(ctrs_nul, sizeof(ctrs_nul), "bad counter list"));
	CHECK(refused(nul, sizeof(nul), "bad device spec"));
	CHECK(refused(empty_spec, sizeof(empty_spec), "bad device spec"));
	CHECK(refused(cut_len, sizeof(cut_len), "bad field encoding"));
	CHECK(refused(cut_varint, sizeof(cut_varint), "bad field encoding"));
	CHECK(refused(fixed64, sizeof(fixed64), "bad field encoding"));
	CHECK(refused(field0, sizeof(field0), "bad field encoding"));
	/* One pid and one device past the limits. */
	for (int i = 0; i <= KX_DW_PIDS_MAX; i++) {
		uint8_t *p = kx_bytes_room(&b, 8);

		b.len = (size_t)(kx_pb_vfield(p, 1, (uint64_t)i + 1) - b.p);
	}
	CHECK(refused(b.p, b.len, "more than 256 pids"));
	b.len = 0;
	for (int i = 0; i <= KX_DW_DEVICES_MAX; i++) {
		uint8_t *p = kx_bytes_room(&b, 8);

		b.len = (size_t)(kx_pb_bytes(p, 3, "kvm", 3) - b.p);
	}
	CHECK(refused(b.p, b.len, "more than 32 devices"));
	/* A spec of KX_DW_SPEC_MAX bytes has no room for its NUL. */
	long_spec = malloc(KX_DW_SPEC_MAX + 8);
	CHECK(long_spec != NULL);
	memset(long_spec, 'x', KX_DW_SPEC_MAX + 8);
	b.len = 0;
	b.len = (size_t)(kx_pb_bytes(kx_bytes_room(&b, KX_DW_SPEC_MAX + 8), 3, long_spec,
	                             KX_DW_SPEC_MAX) -
	                 b.p);
	CHECK(refused(b.p, b.len, "bad device spec"));
	free(long_spec);
	free(b.p);
}

/*
 * The profile fields came after the first release. A request that asks for
 * no profile is the first release's bytes exactly (so an older daemon serves
 * it as before), and each profile option alone is encoded as fields past
 * the first release's last (8), which an older daemon refuses by its
 * unknown-field rule (checked above with field 12) instead of ignoring them.
 */
static void profile_fields_are_new(void)
{
	/* pid 4242, device "/dev/loop3", 256 KiB ring, no jobs, cmdline "wl -j 1",
	 * annotations: as the first release's encoder wrote it. */
	static const uint8_t v1[] = {0x08, 0x92, 0x21, 0x1a, 0x0a, '/',  'd',  'e',
	                             'v',  '/',  'l',  'o',  'o',  'p',  '3',  0x28,
	                             0x80, 0x80, 0x10, 0x30, 0x01, 0x3a, 0x07, 'w',
	                             'l',  ' ',  '-',  'j',  ' ',  '1',  0x40, 0x01};
	struct kx_dw_request r, alone;
	struct kx_bytes b = {0};
	char err[256];

	CHECK(kx_dw_request_decode(v1, sizeof(v1), &r, err, sizeof(err)) == 0);
	CHECK(r.npids == 1 && r.pids[0] == 4242 && r.ndevices == 1 && r.no_jobs && r.annotate);
	CHECK(r.ringbuf_bytes == 256 * 1024);
	CHECK(r.sample_hz == 0 && r.off_cpu == 0 && r.counters[0] == 0);
	kx_dw_request_encode(&b, &r);
	CHECK(b.len == sizeof(v1) && memcmp(b.p, v1, sizeof(v1)) == 0);
	for (int opt = 0; opt < 4; opt++) {
		const uint8_t *p, *end;
		int bad = 0, fields = 0;

		memset(&alone, 0, sizeof(alone));
		if (opt == 0)
			alone.sample_hz = 99;
		else if (opt == 1)
			alone.off_cpu = 1;
		else if (opt == 3)
			alone.ustack_bytes = 8192;
		else
			snprintf(alone.counters, sizeof(alone.counters), "page-faults");
		b.len = 0;
		kx_dw_request_encode(&b, &alone);
		CHECK(!b.oom && b.len > 0);
		for (p = b.p, end = b.p + b.len; p < end && !bad; fields++) {
			uint64_t tag = kx_pb_read_varint(&p, end, &bad);

			CHECK(!bad && tag >> 3 > 8);
			if ((tag & 7) == KX_PB_LEN)
				p += kx_pb_read_varint(&p, end, &bad);
			else
				kx_pb_read_varint(&p, end, &bad);
		}
		CHECK(!bad && fields == 1);
		CHECK(kx_dw_request_decode(b.p, b.len, &r, err, sizeof(err)) == 0);
		CHECK(r.sample_hz == alone.sample_hz && r.off_cpu == alone.off_cpu &&
		      r.ustack_bytes == alone.ustack_bytes && !strcmp(r.counters, alone.counters));
	}
	free(b.p);
}

static void replies_round_trip(void)
{
	struct kx_dw_status st = {123456789012ull, 123456789000ull, 12}, st2;
	struct kx_dw_end *e = calloc(1, sizeof(*e)), *e2 = calloc(1, sizeof(*e2));
	struct kx_bytes b = {0};
	char mech[16], err[256];

	CHECK(e && e2);
	kx_dw_opened_encode(&b, "tp_btf");
	CHECK(kx_dw_opened_decode(b.p, b.len, mech, sizeof(mech), err, sizeof(err)) == 0);
	CHECK_STR(mech, "tp_btf");
	b.len = 0;
	kx_dw_status_encode(&b, &st);
	CHECK(kx_dw_status_decode(b.p, b.len, &st2, err, sizeof(err)) == 0);
	CHECK(st2.emitted == st.emitted && st2.received == st.received && st2.dropped == 12);
	b.len = 0;
	snprintf(e->reason, sizeof(e->reason), "time limit (60 s)");
	gen_capinfo(&e->ci, 1);
	kx_dw_end_encode(&b, e);
	CHECK(!b.oom);
	CHECK(kx_dw_end_decode(b.p, b.len, e2, err, sizeof(err)) == 0);
	CHECK_STR(e2->reason, "time limit (60 s)");
	CHECK_STR(e2->ci.cmdline, e->ci.cmdline);
	CHECK(e2->ci.emitted == e->ci.emitted && e2->ci.dropped == e->ci.dropped);
	CHECK(e2->ci.ndevices == 3 && e2->ci.nhooks == 2 && e2->ci.ndrvcalls == 2);
	CHECK_STR(e2->ci.devices[2].node, "/dev/dri/renderD128");
	/* An END cut anywhere is refused, never half-read. */
	for (size_t n = 0; n < b.len; n++)
		CHECK(kx_dw_end_decode(b.p, n, e2, err, sizeof(err)) != 0);
	free(b.p);
	free(e);
	free(e2);
}

/* A header parse expected to fail with want in the message. */
static int header_refused(const uint8_t h[KX_DW_HDR], int from_client, const char *want)
{
	char err[256] = "";
	uint32_t len;
	int type;

	if (kx_dw_header_parse(h, from_client, &type, &len, err, sizeof(err)) == 0)
		return 0;
	if (!strstr(err, want)) {
		printf("  refused with '%s', expected '%s'\n", err, want);
		return 0;
	}
	return 1;
}

static void headers(void)
{
	uint8_t h[KX_DW_HDR];
	char err[256];
	uint32_t len;
	int type;

	kx_dw_header(h, KX_DW_OPEN, 77);
	CHECK(kx_dw_header_parse(h, 1, &type, &len, err, sizeof(err)) == 0);
	CHECK(type == KX_DW_OPEN && len == 77);
	CHECK(header_refused(h, 0, "unexpected message type 1"));
	kx_dw_header(h, KX_DW_DATA, KX_DW_DAEMON_MAX);
	CHECK(kx_dw_header_parse(h, 0, &type, &len, err, sizeof(err)) == 0);
	CHECK(header_refused(h, 1, "unexpected message type 18"));
	kx_dw_header(h, KX_DW_DATA, KX_DW_DAEMON_MAX + 1);
	CHECK(header_refused(h, 0, "over the limit"));
	kx_dw_header(h, KX_DW_OPEN, KX_DW_CLIENT_MAX + 1);
	CHECK(header_refused(h, 1, "over the limit"));
	kx_dw_header(h, KX_DW_START, 1);
	CHECK(header_refused(h, 1, "START message with a payload"));
	kx_dw_header(h, 0, 0);
	CHECK(header_refused(h, 1, "unexpected message type 0"));
	kx_dw_header(h, KX_DW_OPEN, 1);
	h[2] = 9;
	CHECK(header_refused(h, 1, "protocol version 9"));
	memcpy(h, "GET / HT", 8);
	CHECK(header_refused(h, 1, "bad magic"));
}

/* A socket pair: [0] the daemon's end, [1] the client's. */
static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
}

static void messages_over_a_socket(void)
{
	struct kx_bytes b = {0}, in = {0};
	struct kx_dw_request r = full_request(), back;
	char err[256];
	int sv[2], type;

	CHECK(pair(sv) == 0);
	kx_dw_request_encode(&b, &r);
	CHECK(kx_dw_send(sv[1], KX_DW_OPEN, b.p, b.len) == 0);
	CHECK(kx_dw_send(sv[1], KX_DW_STOP, NULL, 0) == 0);
	CHECK(kx_dw_read(sv[0], 0, 1, &type, &in, err, sizeof(err)) == KX_DW_MSG);
	CHECK(type == KX_DW_OPEN && in.len == b.len);
	CHECK(kx_dw_request_decode(in.p, in.len, &back, err, sizeof(err)) == 0);
	CHECK(same_request(&r, &back));
	CHECK(kx_dw_read(sv[0], 0, 1, &type, &in, err, sizeof(err)) == KX_DW_MSG);
	CHECK(type == KX_DW_STOP && in.len == 0);
	/* Nothing more: the deadline passes. */
	CHECK(kx_dw_read(sv[0], kx_mono_ns() + 50000000, 1, &type, &in, err, sizeof(err)) ==
	      KX_DW_TIMEOUT);
	/* A message cut short by the peer's close. */
	CHECK(write(sv[1], open_cut, sizeof(open_cut)) == (ssize_t)sizeof(open_cut));
	close(sv[1]);
	CHECK(kx_dw_read(sv[0], 0, 1, &type, &in, err, sizeof(err)) == KX_DW_BAD);
	CHECK(strstr(err, "cut short") != NULL);
	CHECK(kx_dw_read(sv[0], 0, 1, &type, &in, err, sizeof(err)) == KX_DW_EOF);
	close(sv[0]);
	/* A header cut short, an error message, a stalled payload. */
	CHECK(pair(sv) == 0);
	CHECK(write(sv[1], "KD\x01", 3) == 3);
	shutdown(sv[1], SHUT_WR);
	CHECK(kx_dw_read(sv[0], 0, 1, &type, &in, err, sizeof(err)) == KX_DW_BAD);
	close(sv[0]);
	close(sv[1]);
	CHECK(pair(sv) == 0);
	CHECK(kx_dw_send_error(sv[0], "process %d: no", 7) == 0);
	CHECK(kx_dw_read(sv[1], 0, 0, &type, &in, err, sizeof(err)) == KX_DW_MSG);
	CHECK(type == KX_DW_ERROR && in.len == 13 && !memcmp(in.p, "process 7: no", 13));
	CHECK(write(sv[1], open_cut, sizeof(open_cut)) == (ssize_t)sizeof(open_cut));
	CHECK(kx_dw_read(sv[0], kx_mono_ns() + 50000000, 1, &type, &in, err, sizeof(err)) ==
	      KX_DW_TIMEOUT);
	close(sv[0]);
	close(sv[1]);
	free(b.p);
	free(in.p);
}

/* A message bigger than the socket buffer arrives whole (the sender is a child). */
static void large_message_whole(void)
{
	size_t n = 3u << 20;
	uint8_t *big = malloc(n);
	struct kx_bytes in = {0};
	char err[256];
	int sv[2], type, st;
	pid_t pid;

	CHECK(big != NULL);
	for (size_t i = 0; i < n; i++)
		big[i] = (uint8_t)(i * 7 + (i >> 13));
	CHECK(pair(sv) == 0);
	fflush(stdout);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		close(sv[1]);
		_exit(kx_dw_send(sv[0], KX_DW_DATA, big, n) == 0 ? 0 : 1);
	}
	close(sv[0]);
	CHECK(kx_dw_read(sv[1], 0, 0, &type, &in, err, sizeof(err)) == KX_DW_MSG);
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(type == KX_DW_DATA && in.len == n && memcmp(in.p, big, n) == 0);
	close(sv[1]);
	free(big);
	free(in.p);
}

/* Random and mutated requests: decoded or refused with a reason, never a crash. */
static void request_fuzz(void)
{
	struct kx_dw_request r = full_request(), back;
	struct kx_bytes good = {0};
	uint8_t buf[1024];
	int ok = 0, bad = 0;

	kx_dw_request_encode(&good, &r);
	CHECK(good.len < sizeof(buf));
	for (int it = 0; it < 20000; it++) {
		size_t n;
		char err[256] = "";

		if (it % 2) {
			n = (size_t)(gen_rng(&rng) % sizeof(buf));
			for (size_t i = 0; i < n; i++)
				buf[i] = (uint8_t)gen_rng(&rng);
		} else {
			memcpy(buf, good.p, good.len);
			n = good.len;
			for (int k = 0; k < 1 + (int)(gen_rng(&rng) % 4); k++)
				buf[gen_rng(&rng) % n] ^= (uint8_t)(1u << (gen_rng(&rng) % 8));
			if (gen_rng(&rng) % 3 == 0)
				n = (size_t)(gen_rng(&rng) % (n + 1));
		}
		if (kx_dw_request_decode(buf, n, &back, err, sizeof(err)) == 0) {
			ok++;
			CHECK(back.npids <= KX_DW_PIDS_MAX && back.ndevices <= KX_DW_DEVICES_MAX);
			for (int i = 0; i < back.npids; i++)
				CHECK(back.pids[i] >= 1 && back.pids[i] <= 0x7fffffff);
		} else {
			bad++;
			CHECK(strncmp(err, "malformed request: ", 19) == 0);
		}
	}
	printf("  20000 requests: %d decoded, %d refused\n", ok, bad);
	CHECK(ok > 0 && bad > 0);
	free(good.p);
}

/* Random byte streams into the reader: messages or one error, never a crash or a hang. */
static void reader_fuzz(void)
{
	struct kx_bytes in = {0};
	uint8_t buf[256];

	for (int it = 0; it < 2000; it++) {
		size_t n = 1 + (size_t)(gen_rng(&rng) % sizeof(buf));
		char err[256];
		int sv[2], type, rc, msgs = 0;

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)gen_rng(&rng);
		if (it % 2) /* a plausible header first: lengths and types get exercised */
			kx_dw_header(buf, (int)(gen_rng(&rng) % 4), (uint32_t)(gen_rng(&rng) % 64));
		CHECK(pair(sv) == 0);
		CHECK(write(sv[1], buf, n) == (ssize_t)n);
		close(sv[1]);
		while ((rc = kx_dw_read(sv[0], kx_mono_ns() + 1000000000, 1, &type, &in, err,
		                        sizeof(err))) == KX_DW_MSG)
			msgs++;
		close(sv[0]);
		CHECK(rc == KX_DW_EOF || rc == KX_DW_BAD);
		CHECK(msgs <= (int)(n / KX_DW_HDR));
	}
	free(in.p);
}

/* Pieces of a record stream, concatenated. */
static int collect(void *ctx, const void *p, size_t n)
{
	struct kx_bytes *b = ctx;
	uint8_t *room = kx_bytes_room(b, n);

	if (!room)
		return ENOMEM;
	memcpy(room, p, n);
	b->len += n;
	return 0;
}

static void stream_is_the_file(void)
{
	struct kx_capinfo *ci = malloc(sizeof(*ci));
	struct kx_bytes got = {0};
	struct kx_kxp_stream out = {collect, &got};
	struct kx_kxp_writer *w;
	struct kx_kxp_read_result res;
	struct gen_chunk ch[64];
	struct kx_store *st;
	struct gen g;
	uint8_t arg[256], *file;
	size_t flen, nch;
	char err[512];
	int rc = 0;

	CHECK(ci != NULL);
	gen_events(&g, 20000, 7);
	file = gen_file(&g, 3000, "dwire", &flen, ch, 64, &nch);
	CHECK(file != NULL && nch > 3);
	gen_capinfo(ci, 0);
	w = kx_kxp_create_stream(&out, ci, err, sizeof(err));
	CHECK(w != NULL);
	for (size_t i = 0; i < g.nitems; i++) {
		const struct gen_item *it = &g.items[i];

		if (it->kind == GEN_TASK)
			rc |= kx_kxp_add_task(w, &g.task[it->idx]);
		else if (it->kind == GEN_JOB)
			rc |= kx_kxp_add_job(w, &g.job[it->idx]);
		else {
			gen_arg(arg, (size_t)g.ioc[it->idx].arg_in_len + g.ioc[it->idx].arg_out_len,
			        it->idx);
			rc |= kx_kxp_add_ioctl(w, &g.ioc[it->idx], arg);
		}
		if (i % 3000 == 2999)
			rc |= kx_kxp_flush(w);
	}
	gen_capinfo(ci, 1);
	rc |= kx_kxp_close(w, ci, err, sizeof(err));
	CHECK(rc == 0);
	CHECK_EQ_U(got.len, flen);
	CHECK(memcmp(got.p, file, flen) == 0);
	st = kx_store_new(0);
	CHECK(kx_kxp_read_mem(got.p, got.len, st, ci, &res, err, sizeof(err)) == 0);
	CHECK(!res.truncated && res.ncorrupt == 0);
	CHECK_EQ_U(kx_store_ioctl_count(st), g.nioc);
	CHECK(gen_is_prefix(&g, st));
	CHECK_EQ_U(ci->emitted, 1000003);
	kx_store_free(st);
	free(file);
	free(got.p);
	free(ci);
	gen_free(&g);
}

/* A stream whose sink fails: the writer fails as on a full disk, with a reason. */
static int refuse_all(void *ctx, const void *p, size_t n)
{
	int *calls = ctx;

	(void)p;
	(void)n;
	return ++*calls > 1 ? EPIPE : 0;
}

static void stream_write_failure(void)
{
	struct kx_capinfo *ci = calloc(1, sizeof(*ci));
	int calls = 0;
	struct kx_kxp_stream out = {refuse_all, &calls};
	struct kx_kxp_writer *w;
	struct gen g;
	char err[512];

	CHECK(ci != NULL);
	gen_events(&g, 100, 3);
	w = kx_kxp_create_stream(&out, ci, err, sizeof(err));
	CHECK(w != NULL);
	for (size_t i = 0; i < g.nioc; i++)
		kx_kxp_add_ioctl(w, &g.ioc[i], NULL);
	CHECK(kx_kxp_flush(w) != 0);
	CHECK(kx_kxp_close(w, ci, err, sizeof(err)) != 0);
	CHECK(strstr(err, "record stream") && strstr(err, strerror(EPIPE)));
	gen_free(&g);
	free(ci);
}

int main(void)
{
	RUN(request_round_trip);
	RUN(request_limits);
	RUN(profile_fields_are_new);
	RUN(replies_round_trip);
	RUN(headers);
	RUN(messages_over_a_socket);
	RUN(large_message_whole);
	RUN(request_fuzz);
	RUN(reader_fuzz);
	RUN(stream_is_the_file);
	RUN(stream_write_failure);
	KXT_EXIT();
}
