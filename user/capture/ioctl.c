/*
 * Loader of bpf/ioctl.bpf.c (contract: ioctl.h). Owns the skeleton, its links
 * and the kernel side of the aggregate-slot protocol.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "capture/progmiss.h"
#include "capture/clock.h"
#include "capture/counters.h"
#include "capture/ioctl.h"
#include "capture/percpu.h"
#include "capture/probe.h"
#include "ioctl.skel.h"
#include "registry/ioctl_decode.h"
#include "util/grow.h"

/* A retired slot waits this long before reuse: far longer than any program
 * run that may still hold it. */
#define RECYCLE_AFTER_NS 1000000000ULL

struct recycle {
	uint32_t slot;
	uint64_t retired_ns;
};

struct kx_ioctl_bpf {
	struct ioctl_bpf *skel;
	struct bpf_link *links[16];
	int nlinks;
	char entry_fn[64];    /* fentry: the function hooked, else "" */
	uint32_t agg_max;     /* 0: not aggregating */
	int use_lad;          /* the kernel has lookup-and-delete on hash maps */
	struct recycle *wait; /* retired slots, oldest first */
	size_t nwait, capwait;
	struct kx_counters *ctr; /* perf counters read inside calls, NULL when none */
	int exec_needed;         /* uid rule: without the exec hook no session (session.h) */
};

/* Each mechanism: the program name prefix of its ioctl enter/exit pair, and
 * of the task hooks it runs with (see bpf/ioctl.bpf.c). */
static const struct {
	const char *mech;
	const char *prefix; /* the ioctl pair */
	const char *hooks;  /* fork, exit, exec, rename, sched_switch */
	const char *hooks_mech;
} mechs[] = {
        {"fentry", "fen_", "btf_", "tp_btf"},
        {"tp_btf", "btf_", "btf_", "tp_btf"},
        {"raw_tp", "raw_", "raw_", "raw_tp"},
        {"tp", "tp_", "btf_", "tp_btf"},
};
#define NMECHS (sizeof(mechs) / sizeof(mechs[0]))

/* Programs of one mechanism, by name after the prefix; the syscall pair is mandatory. */
static const struct {
	const char *suffix;
	const char *hook;
	int mandatory; /* also: the ioctl pair, named by mechs[].prefix */
} progs[] = {
        {"sys_enter", "ioctl enter", 1},
        {"sys_exit", "ioctl exit", 1},
        {"fork", "sched_process_fork", 0},
        {"exit", "sched_process_exit", 0},
        {"exec", "sched_process_exec", 0},
        {"rename", "task_rename", 0},
        {"sched_switch", "sched_switch (off-CPU)", 0},
};

static const struct kx_agg_val empty_slot = {.min_ns = ~0ULL}; /* min: the first call sets it */

static int mech_index(const char *mech)
{
	for (int m = 0; m < (int)NMECHS; m++)
		if (strcmp(mech, mechs[m].mech) == 0)
			return m;
	return -1;
}

const char *kx_ioctl_hooks_mech(const char *mech)
{
	int m = mech ? mech_index(mech) : -1;

	return m < 0 ? NULL : mechs[m].hooks_mech;
}

/* Index in progs[] of program name under mechanism m, or -1 when the
 * mechanism does not run it. */
static int prog_index(const char *name, int m)
{
	for (size_t i = 0; i < sizeof(progs) / sizeof(progs[0]); i++) {
		const char *prefix = progs[i].mandatory ? mechs[m].prefix : mechs[m].hooks;
		size_t n = strlen(prefix);

		if (!strncmp(name, prefix, n) && !strcmp(name + n, progs[i].suffix))
			return (int)i;
	}
	return -1;
}

static int is_exec(int i)
{
	return !strcmp(progs[i].suffix, "exec");
}

static int is_offcpu(int i)
{
	return !strcmp(progs[i].suffix, "sched_switch");
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = (uint32_t)sysconf(_SC_PAGESIZE);

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

static struct kx_dev_key dev_key(const struct kx_device *d)
{
	struct kx_dev_key k = {.fkind = d->fkind};

	if (d->fkind == KX_FK_CHR || d->fkind == KX_FK_BLK)
		k.dev = d->any_minor ? KX_DEV_ANY_MINOR(KX_MAJOR(d->dev)) : d->dev;
	return k;
}

/* Aggregates unwrap NVIDIA XFER escapes only while such a device is traced. */
static void set_agg_xfer(struct kx_ioctl_bpf *b, const struct kx_device *d, int n)
{
	int nv = 0;

	for (int i = 0; i < n; i++)
		nv |= d[i].drv == KX_DRV_NVIDIA;
	b->skel->bss->agg_xfer = nv;
}

static int slot_free(struct kx_ioctl_bpf *b, uint32_t slot)
{
	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.agg), &slot, &empty_slot, BPF_ANY))
		return -1;
	return bpf_map_update_elem(bpf_map__fd(b->skel->maps.agg_free), NULL, &slot, BPF_ANY);
}

/* At load, before any program runs: every slot cleared and queued as free. */
static int agg_init(struct kx_ioctl_bpf *b, char *err, size_t len)
{
	for (uint32_t i = 0; i < b->agg_max; i++)
		if (slot_free(b, i)) {
			snprintf(err, len, "cannot fill the aggregation slots: %s",
			         strerror(errno));
			return -1;
		}
	return 0;
}

/* Counter slots (bpf/counters.bpf.h): the kept counters' arrays sized per CPU,
 * a state per thread in a call; one entry each while unused. */
static void configure_counters(struct kx_ioctl_bpf *b)
{
	struct ioctl_bpf *sk = b->skel;
	struct bpf_map *arrays[KX_MAX_COUNTERS] = {sk->maps.ctr0, sk->maps.ctr1, sk->maps.ctr2,
	                                           sk->maps.ctr3};
	uint32_t n = kx_counters_nslots(b->ctr);
	int ncpu = libbpf_num_possible_cpus();

	sk->rodata->nr_counters = n;
	sk->rodata->ctr_migrations = kx_counters_switch_slot(b->ctr);
	for (uint32_t i = 0; i < n; i++)
		bpf_map__set_max_entries(arrays[i], ncpu > 0 ? (uint32_t)ncpu : 1);
	if (n)
		bpf_map__set_max_entries(sk->maps.ctr_state, KX_CTR_THREADS);
}

/* Sizes the maps and sets the read-only configuration before load. */
static void configure(struct kx_ioctl_bpf *b, const struct kx_ioctl_bpf_opts *o, int m)
{
	struct ioctl_bpf *sk = b->skel;
	uint32_t rb = pow2_at_least(o->ringbuf_bytes ? o->ringbuf_bytes : KX_RINGBUF_DEFAULT);
	uint32_t slots;

	sk->rodata->targ_all = o->all != 0;
	sk->rodata->targ_uid_only = o->uid_only != 0;
	sk->rodata->targ_uid = o->uid;
	sk->rodata->targ_gid = o->gid;
	b->exec_needed = o->uid_only != 0;
	sk->rodata->wakeup_bytes = rb / 4;
	sk->rodata->aggregate = o->aggregate != 0;
	sk->rodata->agg_by_pid = o->aggregate && o->agg_by_pid;
	sk->rodata->agg_by_cgroup = o->aggregate && !o->agg_by_pid && o->agg_by_cgroup;
	/* Live KVM jobs start at their KVM_RUN's enter: those calls keep a record. */
	for (int i = 0; o->aggregate && i < o->ndevices; i++)
		if (o->devices[i].drv == KX_DRV_KVM) {
			sk->rodata->agg_rec_drv = KX_DRV_KVM;
			sk->rodata->agg_rec_cmd = KX_KVM_RUN_CMD;
		}
	/* The agg maps are preallocated: one entry only when they are not used. */
	b->agg_max = o->aggregate ? (o->agg_max_keys ? o->agg_max_keys : KX_AGG_MAX_KEYS) : 0;
	slots = b->agg_max ? b->agg_max : 1;
	bpf_map__set_max_entries(sk->maps.agg_index, slots);
	bpf_map__set_max_entries(sk->maps.agg, slots);
	bpf_map__set_max_entries(sk->maps.agg_free, slots);
	bpf_map__set_max_entries(sk->maps.events, rb);
	/* In-flight calls: task storage, else (raw_tp) the tid hash. Only the
	 * one in use is sized (task storage needs 5.11: not made for raw_tp,
	 * the fallback older kernels use). */
	if (strcmp(mechs[m].mech, "raw_tp") != 0)
		bpf_map__set_max_entries(sk->maps.inflight, 1);
	else
		bpf_map__set_autocreate(sk->maps.task_call, false);
	configure_counters(b);
}

/* The counters' perf event fds into the loaded object's arrays. */
static int counters_attach(struct kx_ioctl_bpf *b, char *why, size_t len)
{
	struct ioctl_bpf *sk = b->skel;
	const int fds[KX_MAX_COUNTERS] = {bpf_map__fd(sk->maps.ctr0), bpf_map__fd(sk->maps.ctr1),
	                                  bpf_map__fd(sk->maps.ctr2), bpf_map__fd(sk->maps.ctr3)};

	return b->ctr ? kx_counters_attach(b->ctr, fds, why, len) : 0;
}

static void keep_link(struct kx_ioctl_bpf *b, struct bpf_link *l)
{
	if (b->nlinks < (int)(sizeof(b->links) / sizeof(b->links[0])))
		b->links[b->nlinks++] = l;
	else
		bpf_link__destroy(l);
}

/* Attaches the mechanism's programs: 0, or -1 with why when a mandatory one fails. */
static int attach(struct kx_ioctl_bpf *b, int m, struct kx_capinfo *ci, char *why, size_t len)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, b->skel->obj)
	{
		int i = prog_index(bpf_program__name(p), m);
		struct bpf_link *l;
		struct kx_hook *h;

		if (!bpf_program__autoload(p) || i < 0)
			continue;
		l = bpf_program__attach(p);
		if (!l) {
			int err = errno;

			if (progs[i].mandatory || (b->exec_needed && is_exec(i))) {
				snprintf(why, len, "attach of %s failed (%s)", progs[i].hook,
				         strerror(err));
				return -1;
			}
			/* Optional: threads keep their first name, children may be missed. */
			h = kx_capinfo_hook(ci, progs[i].hook, mechs[m].hooks_mech, KX_HOOK_FAILED);
			if (h)
				snprintf(h->why, sizeof(h->why), "attach failed (%s)",
				         strerror(err));
			continue;
		}
		keep_link(b, l);
		if (!progs[i].mandatory)
			kx_capinfo_hook(ci, progs[i].hook, mechs[m].hooks_mech, KX_HOOK_ATTACHED);
	}
	return 0;
}

/* The programs of mechanism m load, the others do not (nor the off-CPU one
 * with no_offcpu, which is then a skipped hook). */
static void select_programs(struct kx_ioctl_bpf *b, int m, const struct kx_ioctl_bpf_opts *o,
                            struct kx_capinfo *ci)
{
	struct bpf_program *p;
	struct kx_hook *h;

	bpf_object__for_each_program(p, b->skel->obj)
	{
		int i = prog_index(bpf_program__name(p), m);

		if (i >= 0 && o->no_offcpu && is_offcpu(i)) {
			h = kx_capinfo_hook(ci, progs[i].hook, "-", KX_HOOK_SKIPPED);
			if (h)
				snprintf(h->why, sizeof(h->why), "not attached (--no-offcpu)");
			i = -1;
		}
		bpf_program__set_autoload(p, i >= 0);
	}
}

/* fentry: the ioctl syscall's entry function, which must accept a fentry
 * program (probed with a minimal one first: far cheaper than a refused load
 * of the whole object), set as the target of the pair. 0, or -1 with why. */
static int fentry_target(struct kx_ioctl_bpf *b, const struct kx_ioctl_bpf_opts *o, char *why,
                         size_t len)
{
	char fn[64], pwhy[160];

	if (o->entry_fn)
		snprintf(fn, sizeof(fn), "%s", o->entry_fn);
	else if (!kx_probe_ioctl_entry(fn, sizeof(fn), why, len))
		return -1;
	if (!kx_probe_fentry(fn, pwhy, sizeof(pwhy))) {
		/* "fentry on F refused: load failed (...)", "fentry: F not in kernel BTF" */
		if (!strncmp(pwhy, "fentry ", 7))
			snprintf(why, len, "fentry on %s %s", fn, pwhy + 7);
		else
			snprintf(why, len, "fentry: %s", pwhy);
		return -1;
	}
	if (bpf_program__set_attach_target(b->skel->progs.fen_sys_enter, 0, fn) ||
	    bpf_program__set_attach_target(b->skel->progs.fen_sys_exit, 0, fn)) {
		snprintf(why, len, "fentry on %s: cannot set the target (%s)", fn, strerror(errno));
		return -1;
	}
	snprintf(b->entry_fn, sizeof(b->entry_fn), "%s", fn);
	return 0;
}

struct kx_ioctl_bpf *kx_ioctl_bpf_open(const struct kx_ioctl_bpf_opts *o, const char *mech,
                                       struct kx_capinfo *ci, char *why, size_t len)
{
	int m = mech_index(mech), err;
	uint32_t nhooks = ci->nhooks;
	struct kx_ioctl_bpf *b;

	if (m < 0) {
		snprintf(why, len, "unknown attach mechanism '%s'", mech);
		return NULL;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	b->use_lad = 1;
	b->skel = ioctl_bpf__open();
	if (!b->skel) {
		snprintf(why, len, "cannot open the BPF object: %s", strerror(errno));
		goto fail;
	}
	if (strcmp(mech, "fentry") == 0 && fentry_target(b, o, why, len))
		goto fail;
	select_programs(b, m, o, ci);
	if (o->counters && o->counters->n && !o->aggregate) {
		b->ctr = kx_counters_open(o->counters, o->no_hw_counters, ci);
		if (!b->ctr) {
			snprintf(why, len, "out of memory");
			goto fail;
		}
	}
	configure(b, o, m);
	ci->ringbuf_bytes = (uint32_t)bpf_map__max_entries(b->skel->maps.events);
	if (strcmp(mech, "tp") == 0 && !kx_probe_tracefs(why, len))
		goto fail;
	err = ioctl_bpf__load(b->skel);
	if (err) {
		snprintf(why, len, "load failed (%s)", strerror(-err));
		goto fail;
	}
	if (agg_init(b, why, len) || counters_attach(b, why, len) || attach(b, m, ci, why, len))
		goto fail;
	return b;
fail:
	ci->nhooks = nhooks;
	kx_ioctl_bpf_close(b);
	return NULL;
}

int kx_ioctl_bpf_fill(struct kx_ioctl_bpf *b, const struct kx_ioctl_bpf_opts *o, char *err,
                      size_t len)
{
	int arg_fd = bpf_map__fd(b->skel->maps.argspec);
	const struct kx_arg_req *reqs;
	size_t nreq;

	if (kx_ioctl_bpf_set_devices(b, o->devices, o->ndevices, err, len))
		return -1;
	reqs = kx_ioctl_arg_reqs(&nreq);
	for (size_t i = 0; i < nreq; i++) {
		struct kx_arg_key k = {.drv = reqs[i].drv, .cmd = reqs[i].key};
		struct kx_arg_spec v = {.len = reqs[i].len, .flags = reqs[i].flags};

		if (reqs[i].follow)
			v.follow = *reqs[i].follow;

		if (bpf_map_update_elem(arg_fd, &k, &v, BPF_ANY)) {
			snprintf(err, len, "cannot fill the argument-copy map: %s",
			         strerror(errno));
			return -1;
		}
	}
	return 0;
}

const char *kx_ioctl_bpf_entry_fn(const struct kx_ioctl_bpf *b)
{
	return b->entry_fn;
}

void kx_ioctl_bpf_fds(const struct kx_ioctl_bpf *b, struct kx_ioctl_bpf_fds *out)
{
	out->events = bpf_map__fd(b->skel->maps.events);
	out->stats = bpf_map__fd(b->skel->maps.stats);
	out->pids = bpf_map__fd(b->skel->maps.pids);
	out->devs = bpf_map__fd(b->skel->maps.devs);
	out->wakeup_bytes = b->skel->rodata->wakeup_bytes;
	out->inflight = bpf_map__fd(b->skel->maps.inflight);
	out->call_btf = bpf_map__autocreate(b->skel->maps.task_call);
	out->task_call = out->call_btf ? bpf_map__fd(b->skel->maps.task_call) : -1;
	out->argspec = bpf_map__fd(b->skel->maps.argspec);
}

int kx_ioctl_bpf_add_pid(struct kx_ioctl_bpf *b, uint32_t pid, char *err, size_t len)
{
	uint8_t one = 1;

	if (bpf_map_update_elem(bpf_map__fd(b->skel->maps.pids), &pid, &one, BPF_ANY)) {
		snprintf(err, len, "cannot add pid %u to the filter: %s", pid, strerror(errno));
		return -1;
	}
	return 0;
}

static int dev_in(const struct kx_dev_key *k, const struct kx_device *d, int n)
{
	for (int i = 0; i < n; i++) {
		struct kx_dev_key x = dev_key(&d[i]);

		if (x.fkind == k->fkind && x.dev == k->dev)
			return 1;
	}
	return 0;
}

int kx_ioctl_bpf_set_devices(struct kx_ioctl_bpf *b, const struct kx_device *d, int n, char *err,
                             size_t len)
{
	int fd = bpf_map__fd(b->skel->maps.devs);
	struct kx_dev_key k, next, *prev = NULL;
	struct kx_dev_key stale[1024]; /* the devs map holds at most 1024 */
	int nstale = 0;

	for (int i = 0; i < n; i++) {
		uint32_t drv = d[i].drv;

		k = dev_key(&d[i]);
		if (bpf_map_update_elem(fd, &k, &drv, BPF_ANY)) {
			snprintf(err, len, "cannot add device %s to the filter: %s", d[i].node,
			         strerror(errno));
			return -1;
		}
	}
	set_agg_xfer(b, d, n);
	/* Collect first, delete after: deleting while walking restarts the walk. */
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (!dev_in(&next, d, n) && nstale < (int)(sizeof(stale) / sizeof(stale[0])))
			stale[nstale++] = next;
		k = next;
		prev = &k;
	}
	for (int i = 0; i < nstale; i++)
		bpf_map_delete_elem(fd, &stale[i]);
	/* After the map is final: threads then drop their cached device answers. */
	__atomic_add_fetch(&b->skel->bss->devs_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

void kx_ioctl_bpf_stats(struct kx_ioctl_bpf *b, uint64_t *sum)
{
	kx_percpu_sum(bpf_map__fd(b->skel->maps.stats), KX_STAT_MAX, sum);
}

void kx_ioctl_bpf_ctr_stats(struct kx_ioctl_bpf *b, uint64_t *sum)
{
	kx_percpu_sum(bpf_map__fd(b->skel->maps.ctr_stats), KX_CSTAT_MAX, sum);
}

uint64_t kx_ioctl_bpf_stat(struct kx_ioctl_bpf *b, unsigned int which)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t *vals, sum = 0;

	if (which >= KX_STAT_MAX || ncpu <= 0)
		return 0;
	vals = calloc((size_t)ncpu, sizeof(*vals));
	if (!vals)
		return 0;
	if (bpf_map_lookup_elem(bpf_map__fd(b->skel->maps.stats), &which, vals) == 0)
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
	free(vals);
	return sum;
}

void kx_ioctl_bpf_detach(struct kx_ioctl_bpf *b)
{
	if (!b)
		return;
	for (int i = 0; i < b->nlinks; i++)
		bpf_link__destroy(b->links[i]);
	b->nlinks = 0;
}

uint64_t kx_ioctl_bpf_missed(const struct kx_ioctl_bpf *b)
{
	return b && b->skel ? kx_bpf_missed(b->skel->obj) : 0;
}

void kx_ioctl_bpf_close(struct kx_ioctl_bpf *b)
{
	if (!b)
		return;
	kx_ioctl_bpf_detach(b);
	if (b->skel)
		ioctl_bpf__destroy(b->skel);
	kx_counters_close(b->ctr);
	free(b->wait);
	free(b);
}

/* ---- aggregate maps ---- */

uint32_t kx_ioctl_agg_max_keys(const struct kx_ioctl_bpf *b)
{
	return b->agg_max;
}

/* Retired slots old enough go back to the free queue. */
static void recycle(struct kx_ioctl_bpf *b)
{
	uint64_t now = kx_mono_ns();
	size_t i = 0;

	while (i < b->nwait && now - b->wait[i].retired_ns >= RECYCLE_AFTER_NS &&
	       slot_free(b, b->wait[i].slot) == 0)
		i++;
	if (!i)
		return;
	memmove(b->wait, b->wait + i, (b->nwait - i) * sizeof(*b->wait));
	b->nwait -= i;
}

/* A key's slot leaves use now. A slot that cannot be queued (out of memory)
 * is lost to the limit, which the overflow counter shows. */
static void slot_retire(struct kx_ioctl_bpf *b, uint32_t slot, uint64_t now)
{
	if (kx_grow((void **)&b->wait, &b->capwait, b->nwait, sizeof(*b->wait)))
		return;
	b->wait[b->nwait++] = (struct recycle){.slot = slot, .retired_ns = now};
}

/* Takes key k out of the index; *slot gets its slot. 0, or -1 if gone. */
static int index_take(struct kx_ioctl_bpf *b, const struct kx_agg_key *k, uint32_t *slot)
{
	int fd = bpf_map__fd(b->skel->maps.agg_index), rc;

	if (b->use_lad) {
		rc = bpf_map_lookup_and_delete_elem(fd, k, slot);
		/* Hash maps gained lookup-and-delete in 5.14: else two calls. */
		if (!rc || !(errno == EINVAL || errno == 524 /* ENOTSUPP */ || errno == EOPNOTSUPP))
			return rc;
		b->use_lad = 0;
	}
	rc = bpf_map_lookup_elem(fd, k, slot);
	if (!rc)
		rc = bpf_map_delete_elem(fd, k);
	return rc;
}

/* Every key of the index now; *n gets the count. NULL with *n = 0 when empty. */
static struct kx_agg_key *all_keys(struct kx_ioctl_bpf *b, size_t *n, char *err, size_t len)
{
	int fd = bpf_map__fd(b->skel->maps.agg_index);
	/* The walk cannot return more keys than the map holds, plus inserts racing it. */
	size_t cap = (size_t)b->agg_max + 64;
	struct kx_agg_key *keys = calloc(cap, sizeof(*keys));
	struct kx_agg_key *prev = NULL;

	*n = 0;
	if (!keys) {
		snprintf(err, len, "out of memory");
		return NULL;
	}
	while (*n < cap && bpf_map_get_next_key(fd, prev, &keys[*n]) == 0) {
		prev = &keys[*n];
		(*n)++;
	}
	return keys;
}

/* Slots of keys (taken out of the index with take); UINT32_MAX: gone since the walk. */
static int slots_of(struct kx_ioctl_bpf *b, const struct kx_agg_key *keys, size_t n, int take,
                    uint32_t *slots)
{
	int fd = bpf_map__fd(b->skel->maps.agg_index), taken = 0;

	for (size_t i = 0; i < n; i++) {
		int rc = take ? index_take(b, &keys[i], &slots[i])
		              : bpf_map_lookup_elem(fd, &keys[i], &slots[i]);

		if (rc)
			slots[i] = UINT32_MAX;
		else
			taken |= take;
	}
	/* Before reading: threads stop adding to the slots just taken. */
	if (taken)
		__atomic_add_fetch(&b->skel->bss->agg_gen, 1, __ATOMIC_SEQ_CST);
	return 0;
}

int kx_ioctl_agg_read(struct kx_ioctl_bpf *b, int take, struct kx_agg_entry **out, size_t *n,
                      char *err, size_t len)
{
	int vfd = bpf_map__fd(b->skel->maps.agg);
	struct kx_agg_key *keys;
	uint32_t *slots = NULL;
	size_t nkeys, m = 0;
	uint64_t now;

	*out = NULL;
	*n = 0;
	if (!b->agg_max) {
		snprintf(err, len, "the session does not aggregate");
		return -1;
	}
	recycle(b);
	keys = all_keys(b, &nkeys, err, len);
	if (!keys)
		return -1;
	slots = nkeys ? calloc(nkeys, sizeof(*slots)) : NULL;
	*out = nkeys ? calloc(nkeys, sizeof(**out)) : NULL;
	if (nkeys && (!slots || !*out)) {
		snprintf(err, len, "out of memory");
		free(keys), free(slots), free(*out);
		*out = NULL;
		return -1;
	}
	slots_of(b, keys, nkeys, take, slots);
	now = kx_mono_ns();
	for (size_t i = 0; i < nkeys; i++) {
		if (slots[i] == UINT32_MAX ||
		    bpf_map_lookup_elem(vfd, &slots[i], &(*out)[m].val) != 0)
			continue;
		(*out)[m++].key = keys[i];
		if (take)
			slot_retire(b, slots[i], now);
	}
	*n = m;
	free(keys);
	free(slots);
	return 0;
}

int kx_ioctl_agg_drop(struct kx_ioctl_bpf *b, int (*drop)(const struct kx_agg_key *, void *),
                      void *ctx)
{
	uint64_t now = kx_mono_ns();
	struct kx_agg_key *keys;
	uint32_t slot;
	size_t n;
	int dropped = 0;
	char err[64];

	if (!b->agg_max)
		return 0;
	recycle(b);
	keys = all_keys(b, &n, err, sizeof(err));
	for (size_t i = 0; keys && i < n; i++) {
		if (drop(&keys[i], ctx) && index_take(b, &keys[i], &slot) == 0) {
			slot_retire(b, slot, now);
			dropped++;
		}
	}
	if (dropped)
		__atomic_add_fetch(&b->skel->bss->agg_gen, 1, __ATOMIC_SEQ_CST);
	free(keys);
	return dropped;
}
