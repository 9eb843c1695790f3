/*
 * err_workload: issues ioctls that the kvm driver rejects, each a known number
 * of times, and reports the errno the kernel really returned for each, so a
 * tracer's error accounting (per request name and per errno) can be checked.
 *
 * Cases, each issued -n N times (default 10):
 *   unknown_cmd     _IO(0xAE, 0xff) on /dev/kvm, counted as "unknown:0xaeff"
 *   unknown_vm_cmd  _IO(0xAE, 0xfe) on a VM fd, counted as "unknown:0xaefe"
 *   vcpu_on_system  KVM_CREATE_VCPU on the /dev/kvm fd (wrong fd kind)
 *   misaligned_slot KVM_SET_USER_MEMORY_REGION, guest address not page aligned
 *   bad_pointer     KVM_SET_USER_MEMORY_REGION with a NULL argument
 *   nonsense_cap    KVM_CHECK_EXTENSION of an unknown cap (returns 0, no error)
 * Setup adds one KVM_GET_API_VERSION and one KVM_CREATE_VM.
 */
#include <fcntl.h>
#include <sys/mman.h>
#include <linux/kvm.h>

#include "workload.h"

#define UNKNOWN_CMD    _IO(KVMIO, 0xff)
#define UNKNOWN_VM_CMD _IO(KVMIO, 0xfe)
#define NONSENSE_CAP   0x7ffffu

struct errspec {
	const char *id;
	const char *name; /* request name as a profiler prints it */
	const char *fd_kind;
	int fd;
	unsigned long req;
	unsigned long arg;
};

struct errcase {
	struct errspec s;
	struct wl_counts counts;
	long last_ret;
};

static void print_case(const struct errcase *c, int first)
{
	const struct wl_counter *k = &c->counts.c[0];
	char buf[16];
	unsigned long failed = 0;
	int e, any = 0;

	printf("%s{\"case\":\"%s\",\"name\":\"%s\",\"cmd\":\"0x%lx\",\"fd\":\"%s\",\"calls\":%lu,"
	       "\"errors\":{",
	       first ? "" : ",", c->s.id, c->s.name, c->s.req, c->s.fd_kind, k->calls);
	for (e = 0; e < WL_MAX_ERRNO; e++) {
		if (!k->err[e])
			continue;
		printf("%s\"%s\":%lu", any ? "," : "", wl_errno_name(e, buf, sizeof(buf)),
		       k->err[e]);
		failed += k->err[e];
		any = 1;
	}
	printf("},\"ok\":%lu,\"last_ret\":%ld}", k->calls - failed, c->last_ret);
}

static void usage(void)
{
	fprintf(stderr, "usage: err_workload [-n N]\n"
	                "  -n  times each rejected ioctl is issued (default 10)\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct kvm_userspace_memory_region misaligned;
	struct wl_counts *total;
	struct errcase *cases;
	unsigned long n = 10, i;
	int kvm_fd, vm_fd, c;
	size_t k, ncases;
	void *mem;
	long r;

	wl_prog = "err_workload";
	while ((c = getopt(argc, argv, "n:h")) != -1) {
		switch (c) {
		case 'n':
			n = wl_parse_num("-n", optarg, 0, ULONG_MAX);
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();

	total = calloc(1, sizeof(*total));
	if (!total)
		wl_die("out of memory");
	kvm_fd = wl_open_kvm();
	r = wl_ioctl_ok(total, "KVM_GET_API_VERSION", kvm_fd, KVM_GET_API_VERSION, 0);
	if (r != KVM_API_VERSION)
		wl_die("KVM_GET_API_VERSION returned %ld, expected %d", r, KVM_API_VERSION);
	vm_fd = wl_ioctl_ok(total, "KVM_CREATE_VM", kvm_fd, KVM_CREATE_VM, 0);

	mem = mmap(NULL, 0x2000, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		wl_die("mmap: %s", strerror(errno));
	misaligned = (struct kvm_userspace_memory_region){
	        .slot = 0,
	        .guest_phys_addr = 0x1001,
	        .memory_size = 0x1000,
	        .userspace_addr = (uint64_t)(uintptr_t)mem,
	};

	{
		const struct errspec init[] = {
		        {"unknown_cmd", "unknown:0xaeff", "system", kvm_fd, UNKNOWN_CMD, 0},
		        {"unknown_vm_cmd", "unknown:0xaefe", "vm", vm_fd, UNKNOWN_VM_CMD, 0},
		        {"vcpu_on_system", "KVM_CREATE_VCPU", "system", kvm_fd, KVM_CREATE_VCPU, 0},
		        {"misaligned_slot", "KVM_SET_USER_MEMORY_REGION", "vm", vm_fd,
		         KVM_SET_USER_MEMORY_REGION, (unsigned long)&misaligned},
		        {"bad_pointer", "KVM_SET_USER_MEMORY_REGION", "vm", vm_fd,
		         KVM_SET_USER_MEMORY_REGION, 0},
		        {"nonsense_cap", "KVM_CHECK_EXTENSION", "system", kvm_fd,
		         KVM_CHECK_EXTENSION, NONSENSE_CAP},
		};

		ncases = sizeof(init) / sizeof(init[0]);
		cases = calloc(ncases, sizeof(*cases));
		if (!cases)
			wl_die("out of memory");
		for (k = 0; k < ncases; k++) {
			cases[k].s = init[k];
			wl_counter(&cases[k].counts, init[k].name);
		}
	}

	for (k = 0; k < ncases; k++) {
		struct errcase *ec = &cases[k];

		for (i = 0; i < n; i++)
			ec->last_ret =
			        wl_ioctl(&ec->counts, ec->s.name, ec->s.fd, ec->s.req, ec->s.arg);
		wl_counts_merge(total, &ec->counts);
	}

	printf("{\"workload\":\"err_workload\",\"pid\":%d,\"tids\":[%d],\"n\":%lu,", (int)getpid(),
	       (int)gettid(), n);
	wl_print_counts(stdout, total);
	fputs(",\"cases\":[", stdout);
	for (k = 0; k < ncases; k++)
		print_case(&cases[k], k == 0);
	puts("]}");
	if (fflush(stdout))
		wl_die("writing stdout failed: %s", strerror(errno));

	munmap(mem, 0x2000);
	close(vm_fd);
	close(kvm_fd);
	free(cases);
	free(total);
	return 0;
}
