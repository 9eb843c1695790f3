/*
 * pprof exporter (see pprof.h): the profile's frames, stacks and labels as
 * a perftools.profiles.Profile, encoded with util/pbwire.h (field numbers:
 * proto/profile.proto), then gzipped. Each sub-message is encoded into a
 * scratch buffer first, so its length can precede it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/pprof.h"
#include "model/perfdata.h"
#include "util/intern.h"
#include "util/outfile.h"
#include "util/pbwire.h"
#include "util/pgz.h"

/* Field numbers of proto/profile.proto. */
enum {
	P_SAMPLE_TYPE = 1,
	P_SAMPLE = 2,
	P_MAPPING = 3,
	P_LOCATION = 4,
	P_FUNCTION = 5,
	P_STRING_TABLE = 6,
	P_TIME_NANOS = 9,
	P_DURATION_NANOS = 10,
	P_PERIOD_TYPE = 11,
	P_PERIOD = 12,
	P_COMMENT = 13,
	P_DEFAULT_SAMPLE_TYPE = 14,
};
enum { VT_TYPE = 1, VT_UNIT = 2 };
enum { S_LOCATION_ID = 1, S_VALUE = 2, S_LABEL = 3 };
enum { L_KEY = 1, L_STR = 2, L_NUM = 3 };
enum { M_ID = 1, M_FILENAME = 5, M_BUILD_ID = 6, M_HAS_FUNCTIONS = 7 };
enum { LOC_ID = 1, LOC_MAPPING_ID = 2, LOC_ADDRESS = 3, LOC_LINE = 4 };
enum { LINE_FUNCTION_ID = 1 };
enum { F_ID = 1, F_NAME = 2, F_SYSTEM_NAME = 3, F_FILENAME = 4 };

#define GZ_LEVEL 6 /* profiles are small: the default level */

struct enc {
	struct kx_bytes out;   /* the Profile message */
	struct kx_bytes msg;   /* a sub-message being built */
	struct kx_bytes lab;   /* a label being built */
	struct kx_intern strs; /* string table */
	uint32_t *frame_map;   /* frame id -> mapping id */
	int oom;
};

/* Message m as field f of b; m is emptied for the next one. */
static void sub(struct kx_bytes *b, unsigned int f, struct kx_bytes *m)
{
	if (m->oom)
		b->oom = 1;
	kx_pb_put_bytes(b, f, m->p, m->len);
	m->len = 0;
}

/* A packed repeated varint field. */
static void packed(struct kx_bytes *b, unsigned int f, const uint64_t *v, size_t n)
{
	size_t len = 0;
	uint8_t *d;

	for (size_t i = 0; i < n; i++)
		len += kx_pb_varint_size(v[i]);
	d = kx_bytes_room(b, 2 * KX_PB_VARINT_MAX + len);
	if (!d)
		return;
	d = kx_pb_len_head(d, f, len);
	for (size_t i = 0; i < n; i++)
		d = kx_pb_varint(d, v[i]);
	b->len = (size_t)(d - b->p);
}

/* The string table index of s (added when new). */
static uint64_t str(struct enc *e, const char *s)
{
	long id = kx_intern_cstr(&e->strs, s);

	if (id < 0)
		e->oom = 1;
	return id < 0 ? 0 : (uint64_t)id;
}

static void value_type(struct enc *e, unsigned int f, const char *type, const char *unit)
{
	kx_pb_put_vfield(&e->msg, VT_TYPE, str(e, type));
	kx_pb_put_vfield(&e->msg, VT_UNIT, str(e, unit));
	sub(&e->out, f, &e->msg);
}

/* The frame whose module pprof should name first ("File:"): the known user
 * code where the most samples were taken; -1 when there is none. */
static long main_frame(const struct kx_profile *p)
{
	uint64_t *self = calloc(p->nframes ? p->nframes : 1, sizeof(*self)), best = 0;
	long at = -1;

	if (!self)
		return -1;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct kx_pstack *st = &p->stacks[i];

		if (st->depth)
			self[p->fids[st->first + st->depth - 1]] += st->count;
	}
	for (size_t i = 0; i < p->nframes; i++) {
		const struct kx_pframe *f = &p->frames[i];

		if (f->kind == KX_PF_USER && f->known && f->module[0] != '[' && self[i] > best) {
			best = self[i];
			at = (long)i;
		}
	}
	free(self);
	return at;
}

static void mapping(struct enc *e, uint64_t id, const struct kx_pframe *f)
{
	kx_pb_put_vfield(&e->msg, M_ID, id);
	kx_pb_put_vfield(&e->msg, M_FILENAME, str(e, f->module));
	if (f->build_id[0])
		kx_pb_put_vfield(&e->msg, M_BUILD_ID, str(e, f->build_id));
	kx_pb_put_vfield(&e->msg, M_HAS_FUNCTIONS, 1); /* symbolised: pprof must not try again */
	sub(&e->out, P_MAPPING, &e->msg);
}

/* Mappings: one per module, the main one first, the others in order of
 * first use; frame_map gets each frame's. */
static void mappings(struct enc *e, const struct kx_profile *p)
{
	long first = main_frame(p);
	uint64_t nmaps = 0;

	if (first >= 0)
		mapping(e, ++nmaps, &p->frames[first]);
	for (size_t i = 0; i < p->nframes && !e->oom; i++) {
		const struct kx_pframe *f = &p->frames[i];
		size_t j;

		if (first >= 0 && !strcmp(p->frames[first].module, f->module)) {
			e->frame_map[i] = 1;
			continue;
		}
		for (j = 0; j < i && strcmp(p->frames[j].module, f->module); j++)
			;
		if (j < i) {
			e->frame_map[i] = e->frame_map[j];
			continue;
		}
		e->frame_map[i] = (uint32_t)++nmaps;
		mapping(e, nmaps, f);
	}
}

/* A function and a location per frame, both with the frame's id + 1. */
static void frames(struct enc *e, const struct kx_profile *p)
{
	for (size_t i = 0; i < p->nframes && !e->oom; i++) {
		const struct kx_pframe *f = &p->frames[i];
		uint64_t name = str(e, f->name);

		kx_pb_put_vfield(&e->msg, F_ID, i + 1);
		kx_pb_put_vfield(&e->msg, F_NAME, name);
		kx_pb_put_vfield(&e->msg, F_SYSTEM_NAME, name);
		kx_pb_put_vfield(&e->msg, F_FILENAME, str(e, f->module));
		sub(&e->out, P_FUNCTION, &e->msg);
		kx_pb_put_vfield(&e->lab, LINE_FUNCTION_ID, i + 1);
		kx_pb_put_vfield(&e->msg, LOC_ID, i + 1);
		kx_pb_put_vfield(&e->msg, LOC_MAPPING_ID, e->frame_map[i]);
		kx_pb_put_vfield(&e->msg, LOC_ADDRESS, f->addr);
		sub(&e->msg, LOC_LINE, &e->lab);
		sub(&e->out, P_LOCATION, &e->msg);
	}
}

static void label_num(struct enc *e, const char *key, uint64_t v)
{
	kx_pb_put_vfield(&e->lab, L_KEY, str(e, key));
	kx_pb_put_vfield(&e->lab, L_NUM, v);
	sub(&e->msg, S_LABEL, &e->lab);
}

static void label_str(struct enc *e, const char *key, const char *v)
{
	kx_pb_put_vfield(&e->lab, L_KEY, str(e, key));
	kx_pb_put_vfield(&e->lab, L_STR, str(e, v));
	sub(&e->msg, S_LABEL, &e->lab);
}

static void samples(struct enc *e, const struct kx_profile *p, const struct kx_store *s)
{
	uint64_t ids[2 * KX_SAMPLE_MAX_DEPTH + 1];
	uint32_t cmd_pid = 0; /* the process cmd was looked up for (stacks come by thread) */
	const char *cmd = NULL;

	for (size_t i = 0; i < p->nstacks && !e->oom; i++) {
		const struct kx_pstack *st = &p->stacks[i];
		uint64_t vals[2] = {st->count, st->weight_ns};
		size_t n = st->depth < sizeof(ids) / sizeof(ids[0]) ? st->depth
		                                                    : sizeof(ids) / sizeof(ids[0]);

		for (size_t k = 0; k < n; k++) /* leaf first */
			ids[k] = (uint64_t)p->fids[st->first + st->depth - 1 - k] + 1;
		packed(&e->msg, S_LOCATION_ID, ids, n);
		packed(&e->msg, S_VALUE, vals, 2);
		label_num(e, "pid", st->pid);
		label_num(e, "tid", st->tid);
		label_str(e, "thread", kx_profile_stack_comm(s, st));
		if (!i || st->pid != cmd_pid) {
			cmd_pid = st->pid;
			cmd = kx_store_cmd(s, cmd_pid);
		}
		if (cmd) /* the process's command line, when the capture has it */
			label_str(e, "process", cmd);
		if (st->call)
			label_str(e, "driver_call", p->frames[st->call - 1].name);
		sub(&e->out, P_SAMPLE, &e->msg);
	}
}

/* The header fields: value types, times, period, comment. */
static void header(struct enc *e, const struct kx_profile *p, const struct kx_capinfo *ci,
                   const char *comment, const char *loss)
{
	int cpu = p->kind == KX_SAMPLE_CPU;
	const char *type = cpu ? "cpu" : "off_cpu";

	value_type(e, P_SAMPLE_TYPE, "samples", "count");
	value_type(e, P_SAMPLE_TYPE, type, "nanoseconds");
	if (ci && ci->clock_start.mono_ns)
		kx_pb_put_vfield(&e->out, P_TIME_NANOS,
		                 (uint64_t)kx_capinfo_realtime(
		                         ci, p->start_ns ? p->start_ns : ci->start_mono_ns));
	if (ci && ci->stop_mono_ns > ci->start_mono_ns)
		kx_pb_put_vfield(&e->out, P_DURATION_NANOS, ci->stop_mono_ns - ci->start_mono_ns);
	else if (p->end_ns > p->start_ns)
		kx_pb_put_vfield(&e->out, P_DURATION_NANOS, p->end_ns - p->start_ns);
	value_type(e, P_PERIOD_TYPE, type, "nanoseconds");
	kx_pb_put_vfield(&e->out, P_PERIOD, cpu ? p->period_ns : 1);
	kx_pb_put_vfield(&e->out, P_DEFAULT_SAMPLE_TYPE, str(e, type));
	if (ci && ci->hostname[0])
		kx_pb_put_vfield(&e->out, P_COMMENT, str(e, comment));
	if (loss[0])
		kx_pb_put_vfield(&e->out, P_COMMENT, str(e, loss));
}

static void string_table(struct enc *e)
{
	for (size_t i = 0; i < e->strs.n; i++) {
		size_t n = kx_intern_len(&e->strs, i);
		uint8_t *d = kx_bytes_room(&e->out, 2 * KX_PB_VARINT_MAX + n);

		if (d)
			e->out.len += (size_t)(kx_pb_bytes(d, P_STRING_TABLE,
			                                   kx_intern_str(&e->strs, i), n) -
			                       d);
	}
}

static void enc_free(struct enc *e)
{
	free(e->out.p);
	free(e->msg.p);
	free(e->lab.p);
	kx_intern_free(&e->strs);
	free(e->frame_map);
}

int kx_pprof_encode(const struct kx_profile *p, const struct kx_store *s,
                    const struct kx_capinfo *ci, struct kx_bytes *out)
{
	struct enc e = {0};
	char comment[512] = "", loss[160] = "";
	uint64_t lost = kx_samples_not_stored(kx_store_samples(s));
	int rc = -1;

	if (ci)
		snprintf(comment, sizeof(comment), "kxprof: host %s, kernel %s, %s", ci->hostname,
		         ci->kernel, ci->cmdline);
	/* Samples the profile lacks: it says so, pprof shows comments. */
	if (ci && (ci->samples.dropped || lost))
		snprintf(loss, sizeof(loss),
		         "kxprof: %" PRIu64 " samples dropped (ring buffer full), %" PRIu64
		         " not stored (memory limit)",
		         ci->samples.dropped, lost);
	str(&e, ""); /* index 0 */
	e.frame_map = calloc(p->nframes ? p->nframes : 1, sizeof(*e.frame_map));
	if (!e.frame_map)
		goto out;
	header(&e, p, ci, comment, loss);
	mappings(&e, p);
	frames(&e, p);
	samples(&e, p, s);
	string_table(&e);
	if (e.oom || e.out.oom || e.msg.oom || e.lab.oom)
		goto out;
	rc = kx_gzip_buf(e.out.p, e.out.len, GZ_LEVEL, out);
out:
	enc_free(&e);
	return rc;
}

int kx_pprof_write(const struct kx_profile *p, const struct kx_store *s,
                   const struct kx_capinfo *ci, const char *path, char *err, size_t len)
{
	struct kx_bytes b = {0};
	int rc;

	if (kx_pprof_encode(p, s, ci, &b)) {
		snprintf(err, len, "%s: out of memory encoding the profile", path);
		free(b.p);
		return -1;
	}
	rc = kx_outfile_write(path, 0, b.p, b.len, err, len);
	free(b.p);
	return rc;
}
