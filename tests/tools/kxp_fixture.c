/*
 * kxp_fixture: writes a record file as a replay fixture (the JSON Lines
 * format of user/io/replay.h), so that fixtures can be recorded live rather
 * than written by hand: every fact the replay loader reads (capture, devices,
 * hooks, tasks, ioctls with their argument copies, job events) is written
 * from the file, numbers as the kernel gave them. Lines given with -c come
 * first, as comments. The format holds no annotations: a capture that traced
 * them (record without --no-annotations) is refused.
 *
 * usage: kxp_fixture FILE.kxp [-c COMMENT]... > FIXTURE.jsonl
 * Exit 0, 1 when the file cannot be read (or is damaged: a fixture is made
 * only from a complete capture, or traced annotations), 2 for bad usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/kxp.h"
#include "model/store.h"
#include "registry/ioctl_decode.h"
#include "util/json.h"

static void str(const char *key, const char *v)
{
	printf(",\"%s\":", key);
	kx_json_cstr(stdout, v);
}

static const char *fkind_name(unsigned int k)
{
	static const char *const kinds[KX_FK_MAX] = {
	        [KX_FK_NONE] = "none",         [KX_FK_CHR] = "chr",
	        [KX_FK_BLK] = "blk",           [KX_FK_KVM_VM] = "kvm-vm",
	        [KX_FK_KVM_VCPU] = "kvm-vcpu", [KX_FK_VFIO_DEV] = "vfio",
	        [KX_FK_KVM_DEV] = "kvm-dev",
	};

	return k < KX_FK_MAX ? kinds[k] : "none";
}

static void dev(const char *key, uint32_t d)
{
	printf(",\"%s\":\"%u:%u\"", key, KX_MAJOR(d), KX_MINOR(d));
}

static void capture(const struct kx_capinfo *ci)
{
	printf("{\"type\":\"capture\"");
	str("host", ci->hostname);
	str("kernel", ci->kernel);
	str("cmdline", ci->cmdline);
	printf(",\"start_ns\":%" PRIu64 ",\"stop_ns\":%" PRIu64 ",\"realtime_offset_ns\":%" PRId64,
	       (uint64_t)ci->start_mono_ns, (uint64_t)ci->stop_mono_ns,
	       (int64_t)ci->clock_start.offset_ns);
	printf(",\"emitted\":%" PRIu64 ",\"received\":%" PRIu64 ",\"dropped\":%" PRIu64
	       ",\"not_stored\":%" PRIu64 ",\"inflight_full\":%" PRIu64 ",\"pidset_full\":%" PRIu64
	       ",\"arg_faults\":%" PRIu64 ",\"ringbuf_bytes\":%" PRIu64 ",\"all_pids\":%" PRIu64
	       ",\"job_emitted\":%" PRIu64 ",\"job_received\":%" PRIu64 ",\"job_dropped\":%" PRIu64
	       "}\n",
	       (uint64_t)ci->emitted, (uint64_t)ci->received, (uint64_t)ci->dropped,
	       (uint64_t)ci->not_stored, (uint64_t)ci->inflight_full, (uint64_t)ci->pidset_full,
	       (uint64_t)ci->arg_faults, (uint64_t)ci->ringbuf_bytes, (uint64_t)ci->all_pids,
	       (uint64_t)ci->job_emitted, (uint64_t)ci->job_received, (uint64_t)ci->job_dropped);
}

static void devices_and_hooks(const struct kx_capinfo *ci)
{
	static const char *const states[] = {"attached", "attached", "skipped", "failed"};

	for (uint32_t i = 0; i < ci->ndevices && i < KX_MAX_DEVICES; i++) {
		const struct kx_device *d = &ci->devices[i];

		printf("{\"type\":\"device\"");
		str("node", d->node);
		str("driver", d->driver);
		str("kind", fkind_name(d->fkind));
		dev("dev", d->dev);
		printf(",\"any_minor\":%u}\n", d->any_minor);
	}
	for (uint32_t i = 0; i < ci->nhooks && i < KX_MAX_HOOKS; i++) {
		const struct kx_hook *h = &ci->hooks[i];

		printf("{\"type\":\"hook\"");
		str("name", h->name);
		str("mech", h->mech);
		str("state", states[h->state < 4 ? h->state : 0]);
		str("why", h->why);
		printf("}\n");
	}
}

static void hex(const char *key, const uint8_t *p, unsigned int n)
{
	if (!n)
		return;
	printf(",\"%s\":\"", key);
	for (unsigned int i = 0; i < n; i++)
		printf("%02x", p[i]);
	printf("\"");
}

static void events(const struct kx_store *s)
{
	static const char *const whats[] = {"seen", "fork", "exec", "rename", "exit", "seen"};

	for (size_t i = 0; i < kx_store_task_count(s); i++) {
		const struct kx_task *t = kx_store_task(s, i);

		printf("{\"type\":\"task\",\"ts\":%" PRIu64 ",\"pid\":%u,\"tid\":%u,\"ppid\":%u",
		       (uint64_t)t->ts, t->pid, t->tid, t->ppid);
		str("what", whats[t->what < 6 ? t->what : 0]);
		str("comm", t->comm);
		if (t->cmd[0])
			str("cmd", t->cmd);
		printf("}\n");
	}
	for (size_t i = 0; i < kx_store_ioctl_count(s); i++) {
		const struct kx_ioctl *e = kx_store_ioctl(s, i);
		const uint8_t *arg = kx_store_arg(s, e);

		printf("{\"type\":\"ioctl\",\"ts\":%" PRIu64 ",\"dur\":%" PRIu64 ",\"pid\":%u,\"tid\":%u",
		       (uint64_t)e->ts, (uint64_t)e->dur, e->pid, e->tid);
		str("driver", kx_driver_name((enum kx_driver)e->drv));
		str("kind", fkind_name(e->fkind));
		dev("dev", e->dev);
		printf(",\"fd\":%d,\"cmd\":\"0x%x\",\"ret\":%d,\"cpu\":%u,\"offcpu_us\":%u", e->fd,
		       e->cmd, e->ret, (unsigned int)(e->cpu_hi << 8 | e->cpu_lo), e->offcpu_us);
		if (e->xfer_cmd)
			printf(",\"xfer_cmd\":%u", e->xfer_cmd);
		if (arg) {
			hex("in", arg, e->arg_in_len);
			hex("out", arg + e->arg_in_len, e->arg_out_len);
		}
		printf("}\n");
	}
	for (size_t i = 0; i < kx_store_job_count(s); i++) {
		const struct kx_job *j = kx_store_job(s, i);

		printf("{\"type\":\"job\",\"ts\":%" PRIu64, (uint64_t)j->ts);
		str("src", kx_job_src_name(j->src));
		str("phase", kx_job_phase_name(j->phase));
		printf(",\"ctx\":%" PRIu64 ",\"seqno\":%" PRIu64 ",\"aux\":%" PRIu64
		       ",\"aux2\":%" PRIu64,
		       (uint64_t)j->ctx, (uint64_t)j->seqno, (uint64_t)j->aux, (uint64_t)j->aux2);
		dev("dev", j->dev);
		printf(",\"pid\":%u,\"tid\":%u,\"flags\":%u", j->pid, j->tid, j->flags);
		str("ring", j->ring);
		printf("}\n");
	}
}

int main(int argc, char **argv)
{
	static struct kx_capinfo ci;
	struct kx_kxp_read_result res;
	struct kx_store *s;
	char err[512];

	if (argc < 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: kxp_fixture FILE.kxp [-c COMMENT]... > FIXTURE.jsonl\n");
		return 2;
	}
	for (int i = 2; i < argc; i += 2) {
		if (strcmp(argv[i], "-c") || i + 1 >= argc) {
			fprintf(stderr, "kxp_fixture: unexpected '%s' (-c COMMENT)\n", argv[i]);
			return 2;
		}
		printf("# %s\n", argv[i + 1]);
	}
	s = kx_store_new(0);
	if (!s || kx_kxp_read(argv[1], s, &ci, &res, err, sizeof(err))) {
		fprintf(stderr, "kxp_fixture: %s\n", s ? err : "out of memory");
		kx_store_free(s);
		return 1;
	}
	if (res.truncated || res.ncorrupt || res.bad_tail_bytes) {
		fprintf(stderr, "kxp_fixture: %s is not a complete capture: %s\n", argv[1], err);
		kx_store_free(s);
		return 1;
	}
	/* The replay format has no annotations: a fixture would lose them. */
	if (ci.ann.enabled) {
		fprintf(stderr,
		        "kxp_fixture: %s traced annotations, which the replay format does not hold: "
		        "record with --no-annotations\n",
		        argv[1]);
		kx_store_free(s);
		return 1;
	}
	capture(&ci);
	devices_and_hooks(&ci);
	events(s);
	kx_store_free(s);
	if (fflush(stdout)) {
		perror("kxp_fixture: writing the fixture");
		return 1;
	}
	return 0;
}
