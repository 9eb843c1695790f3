/* Feature probes: privileges, BTF, tracefs, fentry, kprobes, uprobes, perf events. */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "capture/probe.h"

#define TRACEFS_MAGIC 0x74726163

int kx_probe_privileges(char *why, size_t len)
{
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[2] = {};
	unsigned long long eff;

	if (geteuid() == 0)
		return 1;
	if (syscall(SYS_capget, &hdr, data) != 0) {
		snprintf(why, len, "cannot read capabilities: %s", strerror(errno));
		return 0;
	}
	eff = (unsigned long long)data[1].effective << 32 | data[0].effective;
	if ((eff & (1ull << CAP_SYS_ADMIN)) ||
	    ((eff & (1ull << CAP_BPF)) && (eff & (1ull << CAP_PERFMON))))
		return 1;
	snprintf(why, len,
	         "not root and no CAP_BPF+CAP_PERFMON: run as root (sudo) or grant "
	         "cap_bpf,cap_perfmon");
	return 0;
}

int kx_probe_btf(char *why, size_t len)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 1;
	snprintf(why, len,
	         "no kernel BTF at /sys/kernel/btf/vmlinux: a kernel with "
	         "CONFIG_DEBUG_INFO_BTF=y is required");
	return 0;
}

static int is_tracefs(const char *path)
{
	struct statfs st;
	char probe[256];

	if (statfs(path, &st) != 0 || (unsigned long)st.f_type != TRACEFS_MAGIC)
		return 0;
	snprintf(probe, sizeof(probe), "%s/events", path);
	return access(probe, F_OK) == 0;
}

const char *kx_probe_tracefs(char *why, size_t len)
{
	static const char *const paths[] = {"/sys/kernel/tracing", "/sys/kernel/debug/tracing"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (is_tracefs(paths[i]))
			return paths[i];
	if (mount("nodev", "/sys/kernel/tracing", "tracefs", 0, NULL) == 0 &&
	    is_tracefs("/sys/kernel/tracing"))
		return "/sys/kernel/tracing";
	snprintf(why, len,
	         "tracefs not mounted and mounting it failed (%s): run "
	         "'mount -t tracefs nodev /sys/kernel/tracing'",
	         strerror(errno));
	return NULL;
}

static int kfunc_btf_id(const char *fn)
{
	struct btf *btf = btf__load_vmlinux_btf();
	int id;

	if (!btf)
		return -1;
	id = btf__find_by_name_kind(btf, fn, BTF_KIND_FUNC);
	btf__free(btf);
	return id;
}

int kx_probe_kfunc_exists(const char *fn)
{
	return kfunc_btf_id(fn) > 0;
}

/* The ioctl syscall's entry function of this architecture: the wrapper that
 * takes the syscall's registers (ARCH_HAS_SYSCALL_WRAPPER). */
#if defined(__x86_64__)
#define IOCTL_ENTRY "__x64_sys_ioctl"
#elif defined(__aarch64__)
#define IOCTL_ENTRY "__arm64_sys_ioctl"
#elif defined(__s390x__)
#define IOCTL_ENTRY "__s390x_sys_ioctl"
#elif defined(__riscv)
#define IOCTL_ENTRY "__riscv_sys_ioctl"
#else
#define IOCTL_ENTRY NULL
#endif

/* 1 when function id of btf takes exactly one argument, a struct pt_regs pointer. */
static int takes_regs(const struct btf *btf, int id)
{
	const struct btf_type *t = btf__type_by_id(btf, btf__type_by_id(btf, id)->type);
	const struct btf_param *p;

	if (!t || !btf_is_func_proto(t) || btf_vlen(t) != 1)
		return 0;
	p = btf_params(t);
	t = btf__type_by_id(btf, p->type);
	if (!t || !btf_is_ptr(t))
		return 0;
	t = btf__type_by_id(btf, t->type);
	while (t && (btf_is_const(t) || btf_is_volatile(t) || btf_is_typedef(t)))
		t = btf__type_by_id(btf, t->type);
	return t && btf_is_struct(t) && !strcmp(btf__name_by_offset(btf, t->name_off), "pt_regs");
}

int kx_probe_ioctl_entry(char *fn, size_t fnlen, char *why, size_t len)
{
	const char *name = IOCTL_ENTRY;
	struct btf *btf;
	int id, ok;

	if (!name) {
		snprintf(why, len, "no known ioctl syscall entry function on this architecture");
		return 0;
	}
	btf = btf__load_vmlinux_btf();
	if (!btf) {
		snprintf(why, len, "cannot read the kernel's BTF (%s)", strerror(errno));
		return 0;
	}
	id = btf__find_by_name_kind(btf, name, BTF_KIND_FUNC);
	ok = id > 0 && takes_regs(btf, id);
	btf__free(btf);
	if (!ok) {
		snprintf(why, len, "%s %s", name,
		         id > 0 ? "does not take the syscall's registers" : "not in kernel BTF");
		return 0;
	}
	snprintf(fn, fnlen, "%s", name);
	return 1;
}

static const struct bpf_insn ret0[] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
        {.code = BPF_JMP | BPF_EXIT},
};

int kx_probe_fentry(const char *fn, char *why, size_t len)
{
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY);
	int id = kfunc_btf_id(fn), fd, link;

	if (id <= 0) {
		snprintf(why, len, "%s not in kernel BTF", fn);
		return 0;
	}
	opts.attach_btf_id = id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "kx_probe", "GPL", ret0, 2, &opts);
	if (fd < 0) {
		snprintf(why, len, "fentry refused: load failed (%s)", strerror(-fd));
		return 0;
	}
	link = bpf_link_create(fd, 0, BPF_TRACE_FENTRY, NULL);
	if (link < 0) {
		snprintf(why, len, "fentry refused: attach failed (%s)", strerror(errno));
		close(fd);
		return 0;
	}
	close(link);
	close(fd);
	return 1;
}

static int pmu_type(const char *pmu)
{
	char path[128];
	int type = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/bus/event_source/devices/%s/type", pmu);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%d", &type) != 1)
		type = -1;
	fclose(f);
	return type;
}

static int perf_open(struct perf_event_attr *attr, int pid, int cpu)
{
	return (int)syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

int kx_probe_kprobe(const char *fn, char *why, size_t len)
{
	struct perf_event_attr attr = {.size = sizeof(attr)};
	int type = pmu_type("kprobe"), fd;

	if (type < 0) {
		snprintf(why, len, "kprobes absent (no kprobe PMU: CONFIG_KPROBES off)");
		return 0;
	}
	attr.type = type;
	attr.config1 = (unsigned long long)(unsigned long)fn; /* kprobe_func */
	fd = perf_open(&attr, -1, 0);
	if (fd < 0) {
		snprintf(why, len, "kprobe on %s refused (%s)", fn, strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

int kx_probe_uprobe(char *why, size_t len)
{
	if (pmu_type("uprobe") >= 0)
		return 1;
	snprintf(why, len, "uprobes absent (no uprobe PMU)");
	return 0;
}

static int probe_perf(unsigned int type, unsigned long long config, const char *what, char *why,
                      size_t len)
{
	struct perf_event_attr attr = {.size = sizeof(attr), .type = type, .config = config};
	int fd;

	attr.sample_period = 1000000;
	fd = perf_open(&attr, -1, 0);
	if (fd < 0) {
		snprintf(why, len, "%s not supported (%s)", what, strerror(errno));
		return 0;
	}
	close(fd);
	return 1;
}

int kx_probe_perf_cpu_clock(char *why, size_t len)
{
	return probe_perf(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, "cpu-clock sampling", why,
	                  len);
}

int kx_probe_hw_counters(char *why, size_t len)
{
	return probe_perf(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, "hardware cycle counter",
	                  why, len);
}
