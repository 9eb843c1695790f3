/*
 * The follow rule of the argument copies (bpf/kxprof.h), against the real
 * kernel with each attach mechanism that loads here (root and /dev/kvm only,
 * else skipped): a rule for KVM_SET_USER_MEMORY_REGION (selector: slot @0,
 * pointer: userspace_addr @24) makes the records of the selected slot hold
 * the argument, zeros, and 16 bytes of the guest memory it points at, in the
 * in copy and again in the out copy, each 64 bytes long; a slot that is not
 * selected, and a pointer that cannot be read, leave the copies as without
 * the rule. The same path follows NVIDIA RM_ALLOC's allocation parameters.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <linux/kvm.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture/ioctl.h"
#include "kxtest.h"
#include "registry/drivers.h"

#define SLOT_FOLLOWED 7
#define SLOT_OTHER    8
#define SLOT_BAD      9 /* followed, but its window is not readable */
#define WINDOW_OFF    16
#define PAGE          65536

struct seen {
	struct kx_ioctl_rec r[16];
	int n;
};

static int on_rec(void *ctx, void *data, size_t len)
{
	struct seen *s = ctx;
	const struct kx_hdr *h = data;

	if (h->type == KX_REC_IOCTL && s->n < 16) {
		memset(&s->r[s->n], 0, sizeof(s->r[0]));
		memcpy(&s->r[s->n], data, len < sizeof(s->r[0]) ? len : sizeof(s->r[0]));
		s->n++;
	}
	return 0;
}

static const struct kx_ioctl_rec *by_slot(const struct seen *s, uint32_t slot)
{
	for (int i = 0; i < s->n; i++)
		if (s->r[i].cmd == KVM_SET_USER_MEMORY_REGION && s->r[i].arg_in_len >= 4 &&
		    s->r[i].arg[0] == slot)
			return &s->r[i];
	return NULL;
}

static int set_region(int vm, uint32_t slot, uint64_t gpa, void *mem)
{
	struct kvm_userspace_memory_region r = {
	        .slot = slot,
	        .guest_phys_addr = gpa,
	        .memory_size = PAGE,
	        .userspace_addr = (uint64_t)(uintptr_t)mem,
	};

	return ioctl(vm, KVM_SET_USER_MEMORY_REGION, &r);
}

/* One mechanism: 1 checked, 0 not loadable here, -1 failed (reported). */
static int run_mech(const char *mech, uint8_t *mem, uint8_t *bad)
{
	struct kx_device dev = {.fkind = KX_FK_KVM_VM, .drv = KX_DRV_KVM};
	struct kx_ioctl_bpf_opts o = {.devices = &dev, .ndevices = 1, .no_offcpu = 1};
	struct kx_arg_key k = {.drv = KX_DRV_KVM, .cmd = KVM_SET_USER_MEMORY_REGION};
	struct kx_arg_spec spec = {
	        .len = 32,
	        .flags = KX_ARGF_IN | KX_ARGF_OUT | KX_ARGF_FOLLOW,
	        .follow = {.ptr_off = 24,
	                   .sel_off = 0,
	                   .n = 2,
	                   .sel = {SLOT_FOLLOWED, SLOT_BAD},
	                   .off = {WINDOW_OFF, WINDOW_OFF}},
	};
	static uint8_t zero[KX_FOLLOW_AT - 32];
	const struct kx_ioctl_rec *r;
	struct kx_ioctl_bpf_fds fds;
	struct ring_buffer *rb = NULL;
	struct kx_capinfo ci;
	struct kx_ioctl_bpf *b;
	struct seen seen = {.n = 0};
	char why[512];
	int kvm = -1, vm = -1, rc = -1;

	memset(&ci, 0, sizeof(ci));
	b = kx_ioctl_bpf_open(&o, mech, &ci, why, sizeof(why));
	if (!b)
		return 0;
	kx_ioctl_bpf_fds(b, &fds);
	if (kx_ioctl_bpf_fill(b, &o, why, sizeof(why)) ||
	    kx_ioctl_bpf_add_pid(b, (uint32_t)getpid(), why, sizeof(why)) ||
	    bpf_map_update_elem(fds.argspec, &k, &spec, BPF_ANY)) {
		printf("FAIL %s: %s: cannot set up: %s\n", kxt_cur, mech, why);
		goto out;
	}
	rb = ring_buffer__new(fds.events, on_rec, &seen, NULL);
	kvm = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	vm = kvm < 0 ? -1 : ioctl(kvm, KVM_CREATE_VM, 0);
	if (!rb || vm < 0 || set_region(vm, SLOT_FOLLOWED, 0, mem) ||
	    set_region(vm, SLOT_OTHER, PAGE, mem + PAGE)) {
		printf("FAIL %s: %s: KVM setup failed\n", kxt_cur, mech);
		goto out;
	}
	(void)set_region(vm, SLOT_BAD, 2 * PAGE, bad); /* may fail: its record is what counts */
	ring_buffer__consume(rb);                      /* records wake no one below wakeup_bytes */
	rc = 0;
	/* followed: argument, zeros, window; in and out */
	r = by_slot(&seen, SLOT_FOLLOWED);
	if (!r || r->arg_in_len != KX_ARG_MAX || r->arg_out_len != KX_ARG_MAX ||
	    memcmp(r->arg + 32, zero, sizeof(zero)) ||
	    memcmp(r->arg + KX_FOLLOW_AT, mem + WINDOW_OFF, KX_FOLLOW_LEN) ||
	    memcmp(r->arg + KX_ARG_MAX, r->arg, 32) ||
	    memcmp(r->arg + KX_ARG_MAX + 32, zero, sizeof(zero)) ||
	    memcmp(r->arg + KX_ARG_MAX + KX_FOLLOW_AT, mem + WINDOW_OFF, KX_FOLLOW_LEN))
		rc = -1;
	/* not selected: the copies as without the rule */
	r = by_slot(&seen, SLOT_OTHER);
	if (!r || r->arg_in_len != 32 || r->arg_out_len != 32)
		rc = -1;
	/* selected, window unreadable: the argument alone */
	r = by_slot(&seen, SLOT_BAD);
	if (!r || r->arg_in_len != 32 || r->arg_out_len > 32)
		rc = -1;
	if (rc)
		printf("FAIL %s: %s: records not as the follow rule says (%d records)\n", kxt_cur,
		       mech, seen.n);
	else
		rc = 1;
out:
	if (vm >= 0)
		close(vm);
	if (kvm >= 0)
		close(kvm);
	ring_buffer__free(rb);
	kx_ioctl_bpf_close(b);
	return rc;
}

static void follow_rule(void)
{
	static const char *mechs[] = {"fentry", "tp_btf", "raw_tp", "tp"};
	uint8_t *mem, *bad;
	int ran = 0;

	if (geteuid() != 0)
		SKIP("needs root");
	if (access("/dev/kvm", R_OK | W_OK))
		SKIP("no /dev/kvm");
	mem = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad = mmap(NULL, PAGE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(mem != MAP_FAILED && bad != MAP_FAILED);
	for (int i = 0; i < 2 * PAGE; i++)
		mem[i] = (uint8_t)(i * 7 + 3);
	for (size_t m = 0; m < sizeof(mechs) / sizeof(mechs[0]); m++) {
		int rc = run_mech(mechs[m], mem, bad);

		if (rc < 0)
			kxt_cur_failed = 1;
		ran += rc > 0;
	}
	munmap(mem, 2 * PAGE);
	munmap(bad, PAGE);
	if (kxt_cur_failed)
		return;
	if (!ran)
		SKIP("no attach mechanism loads here");
}

int main(void)
{
	RUN(follow_rule);
	KXT_EXIT();
}
