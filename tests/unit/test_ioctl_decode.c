/*
 * Unit tests of the ioctl decoder: _IOC formatting, driver names, every row
 * of the generated name tables, spec spot checks, errno names, the argument
 * decoders on crafted bytes and the argument copy requests.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "kxtest.h"
#include "kxprof.h"
#include "registry/ioctl_decode.h"
#include "registry/ioctl_table.h"

static char buf[96];

static const char *name(enum kx_driver drv, uint32_t cmd)
{
	return kx_ioctl_name(drv, cmd, 0, buf, sizeof(buf));
}

static const struct kx_field *field(const struct kx_field *f, int n, const char *fname)
{
	int i;

	for (i = 0; i < n; i++)
		if (strcmp(f[i].name, fname) == 0)
			return &f[i];
	return NULL;
}

static void put_le(uint8_t *p, uint64_t v, int width)
{
	int i;

	for (i = 0; i < width; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void test_ioc_format(void)
{
	char small[5];

	CHECK_STR(kx_ioc_format(0xc0406400, buf, sizeof(buf)), "_IOWR('d',0x00,64)");
	CHECK_STR(kx_ioc_format(0x0000ae80, buf, sizeof(buf)), "_IO(0xae,0x80,0)");
	CHECK_STR(kx_ioc_format(0x8090ae81, buf, sizeof(buf)), "_IOR(0xae,0x81,144)");
	CHECK_STR(kx_ioc_format(0x40086409, buf, sizeof(buf)), "_IOW('d',0x09,8)");
	CHECK_STR(kx_ioc_format(0xc0186444, buf, sizeof(buf)), "_IOWR('d',0x44,24)");
	CHECK_STR(kx_ioc_format(0x00004c0a, buf, sizeof(buf)), "_IO('L',0x0a,0)");
	CHECK_STR(kx_ioc_format(0xffff27ff, buf, sizeof(buf)), "_IOWR(0x27,0xff,16383)");
	CHECK_STR(kx_ioc_format(0x00002000, buf, sizeof(buf)), "_IO(0x20,0x00,0)");
	CHECK(kx_ioc_format(0xc0406400, small, sizeof(small)) == small);
	CHECK_STR(small, "_IOW");
	CHECK(kx_ioc_format(0xc0406400, NULL, 0) == NULL);
}

static void test_driver_names(void)
{
	int d;

	for (d = 0; d < KX_DRV_MAX; d++) {
		const char *n = kx_driver_name((enum kx_driver)d);

		CHECK(n && *n);
		CHECK((strcmp(n, "unknown") == 0) == (d == KX_DRV_UNKNOWN));
		CHECK_EQ_U(kx_driver_from_name(n), d);
		CHECK_EQ_U(!!kx_driver_by_nr((enum kx_driver)d),
		           (d >= KX_DRV_DRM && d <= KX_DRV_ETHOSU) || d == KX_DRV_KFD ||
		                   d == KX_DRV_NVIDIA);
	}
	CHECK_STR(kx_driver_name(KX_DRV_MAX), "unknown");
	CHECK_STR(kx_driver_name(KX_DRV_IVPU), "ivpu");
	CHECK_STR(kx_driver_name(KX_DRV_NVIDIA_UVM), "nvidia-uvm");
	CHECK_EQ_U(kx_driver_from_name("intel_vpu"), KX_DRV_IVPU);
	CHECK_EQ_U(kx_driver_from_name("amdgpu"), KX_DRV_AMDGPU);
	CHECK_EQ_U(kx_driver_from_name("bogus"), KX_DRV_UNKNOWN);
	CHECK_EQ_U(kx_driver_from_name(""), KX_DRV_UNKNOWN);
	CHECK_EQ_U(kx_driver_from_name(NULL), KX_DRV_UNKNOWN);
}

/* The name of the first row of t with cmd: the one that names it. */
static const char *first_with_cmd(const struct kx_ioctl_tab *t, uint32_t cmd)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (t->ents[i].cmd == cmd)
			return t->ents[i].name;
	return NULL;
}

static void test_table_shape(void)
{
	size_t i, j;
	int seen[KX_DRV_MAX] = {0};

	CHECK(kx_ioctl_ntabs >= 28);
	for (i = 0; i < kx_ioctl_ntabs; i++) {
		const struct kx_ioctl_tab *t = &kx_ioctl_tabs[i];

		CHECK(t->drv > KX_DRV_UNKNOWN && t->drv < KX_DRV_MAX);
		CHECK(!seen[t->drv]);
		seen[t->drv] = 1;
		CHECK(kx_ioctl_tab_by_drv[t->drv] == t);
		CHECK_STR(t->what, kx_driver_name(t->drv));
		CHECK(t->n > 0);
		for (j = 0; j < t->n; j++) {
			const struct kx_ioctl_ent *e = &t->ents[j];

			CHECK(e->name && *e->name);
			CHECK_EQ_U(e->key, t->keying == KX_TAB_NR ? (e->cmd & 0xffff) : e->cmd);
			if (j)
				CHECK(t->ents[j - 1].key <= e->key);
			CHECK_EQ_U(!!(e->flags & KX_ENT_SHADOWED),
			           strcmp(first_with_cmd(t, e->cmd), e->name) != 0);
		}
	}
}

static int drm_family(enum kx_driver d)
{
	return d >= KX_DRV_DRM && d <= KX_DRV_ETHOSU;
}

/* Every row of every table resolves to its name (or, when shadowed, to the row naming its cmd). */
static void test_tables_resolve(void)
{
	size_t i, j;
	int d;

	for (i = 0; i < kx_ioctl_ntabs; i++) {
		const struct kx_ioctl_tab *t = &kx_ioctl_tabs[i];

		for (j = 0; j < t->n; j++) {
			const struct kx_ioctl_ent *e = &t->ents[j];
			const char *want = first_with_cmd(t, e->cmd);

			CHECK_STR(name(t->drv, e->cmd), want);
			if (t->drv == KX_DRV_DRM) {
				/* core rows name the same on every DRM and accel driver */
				for (d = KX_DRV_DRM; d <= KX_DRV_ETHOSU; d++)
					CHECK_STR(name((enum kx_driver)d, e->cmd), want);
			} else if (drm_family(t->drv) && ((e->cmd >> 8) & 0xff) == 'd') {
				/* a private nr needs the driver */
				CHECK(strncmp(name(KX_DRV_DRM, e->cmd), "_IO", 3) == 0);
			}
		}
	}
}

/*
 * A name maps back to one command up to size/dir drift: rows sharing a name
 * share (type, nr), and no name is claimed by two tables.
 */
static void test_names_map_back(void)
{
	size_t i, j, k, l;

	for (i = 0; i < kx_ioctl_ntabs; i++) {
		const struct kx_ioctl_tab *t = &kx_ioctl_tabs[i];

		for (j = 0; j < t->n; j++) {
			const struct kx_ioctl_ent *e = &t->ents[j];
			uint32_t back = 0;
			int found = 0;

			for (k = 0; k < t->n; k++) {
				if (strcmp(t->ents[k].name, e->name) != 0)
					continue;
				if (found++ == 0)
					back = t->ents[k].cmd;
				CHECK_EQ_U(t->ents[k].cmd & 0xffff, e->cmd & 0xffff);
			}
			if (found == 1)
				CHECK_EQ_U(back, e->cmd);
			for (k = i + 1; k < kx_ioctl_ntabs; k++)
				for (l = 0; l < kx_ioctl_tabs[k].n; l++)
					CHECK(strcmp(kx_ioctl_tabs[k].ents[l].name, e->name) != 0);
		}
	}
}

/* Name -> cmd (the replay fixtures' notation): the driver's table, then the DRM core's. */
static void test_cmd_by_name(void)
{
	uint32_t cmd = 0;

	CHECK(kx_ioctl_cmd_by_name(KX_DRV_KVM, "KVM_RUN", &cmd) == 0);
	CHECK_EQ_U(cmd, 0xae80);
	CHECK(kx_ioctl_cmd_by_name(KX_DRV_AMDGPU, "DRM_IOCTL_VERSION", &cmd) == 0);
	CHECK_EQ_U(cmd, 0xc0406400);
	CHECK(kx_ioctl_cmd_by_name(KX_DRV_UNKNOWN, "DRM_IOCTL_VERSION", &cmd) == 0);
	CHECK_EQ_U(cmd, 0xc0406400);
	/* Another driver's name is not found, and *cmd is left alone. */
	cmd = 7;
	CHECK(kx_ioctl_cmd_by_name(KX_DRV_LOOP, "KVM_RUN", &cmd) == -1);
	CHECK(kx_ioctl_cmd_by_name(KX_DRV_MAX, "KVM_RUN", &cmd) == -1);
	CHECK(kx_ioctl_cmd_by_name(KX_DRV_KVM, "NO_SUCH_IOCTL", &cmd) == -1);
	CHECK_EQ_U(cmd, 7);
	/* Every row's name maps back to a command named the same way (a shadowed
	 * row's cmd is named by the earlier row that shares it). */
	for (size_t i = 0; i < kx_ioctl_ntabs; i++) {
		const struct kx_ioctl_tab *t = &kx_ioctl_tabs[i];
		char buf[64];

		for (size_t j = 0; j < t->n; j++) {
			CHECK(kx_ioctl_cmd_by_name(t->drv, t->ents[j].name, &cmd) == 0);
			if (t->ents[j].flags & KX_ENT_SHADOWED)
				continue;
			CHECK_STR(kx_ioctl_name(t->drv, cmd, 0, buf, sizeof(buf)), t->ents[j].name);
		}
	}
}

static void test_spot_checks(void)
{
	/* KVM */
	CHECK_STR(name(KX_DRV_KVM, 0xae80), "KVM_RUN");
	CHECK_STR(name(KX_DRV_KVM, 0x8090ae81), "KVM_GET_REGS");
	CHECK_STR(name(KX_DRV_KVM, 0x4020ae46), "KVM_SET_USER_MEMORY_REGION");
	CHECK_STR(name(KX_DRV_KVM, 0x40a0ae49), "KVM_SET_USER_MEMORY_REGION2");
	CHECK_STR(name(KX_DRV_KVM, 0xae41), "KVM_CREATE_VCPU");
	CHECK_STR(name(KX_DRV_KVM, 0x8360ae81), "KVM_GET_REGS"); /* arm64 size, nr unambiguous */
	CHECK_STR(name(KX_DRV_KVM, 0xc008ae67), "KVM_IRQ_LINE_STATUS");
	CHECK_STR(name(KX_DRV_KVM, 0x4010ae67), "KVM_REGISTER_COALESCED_MMIO");
	CHECK_STR(name(KX_DRV_KVM, 0x4018ae67), "_IOW(0xae,0x67,24)"); /* ambiguous nr */
	CHECK_STR(name(KX_DRV_KVM, 0x0000aea3), "KVM_GET_TSC_KHZ");
	CHECK_STR(name(KX_DRV_KVM, 0x4068aea3), "KVM_ENABLE_CAP");
	/* DRM core on any DRM driver, driver nr only with the driver */
	CHECK_STR(name(KX_DRV_DRM, 0xc0406400), "DRM_IOCTL_VERSION");
	CHECK_STR(name(KX_DRV_AMDGPU, 0xc0406400), "DRM_IOCTL_VERSION");
	CHECK_STR(name(KX_DRV_HABANALABS, 0xc02864c3), "DRM_IOCTL_SYNCOBJ_WAIT");
	CHECK_STR(name(KX_DRV_DRM, 0xc0186444), "_IOWR('d',0x44,24)");
	CHECK_STR(name(KX_DRV_AMDGPU, 0xc0186444), "DRM_IOCTL_AMDGPU_CS");
	CHECK_STR(name(KX_DRV_XE, 0xc0186444), "DRM_IOCTL_XE_VM_DESTROY");     /* by nr */
	CHECK_STR(name(KX_DRV_AMDGPU, 0x40286448), "DRM_IOCTL_AMDGPU_GEM_VA"); /* old 40 B */
	CHECK_STR(name(KX_DRV_AMDGPU, 0x40406448), "DRM_IOCTL_AMDGPU_GEM_VA"); /* new 64 B */
	CHECK_STR(name(KX_DRV_AMDGPU, 0xc0106450), "DRM_IOCTL_AMDGPU_GEM_OP");
	CHECK_STR(name(KX_DRV_AMDGPU, 0xc01064a0), "DRM_IOCTL_MODE_GETRESOURCES"); /* size drift */
	/* i915 same-nr aliases */
	CHECK_STR(name(KX_DRV_I915, 0xc0106464), "DRM_IOCTL_I915_GEM_MMAP_GTT");
	CHECK_STR(name(KX_DRV_I915, 0xc0206464), "DRM_IOCTL_I915_GEM_MMAP_OFFSET");
	CHECK_STR(name(KX_DRV_I915, 0xc0286464), "DRM_IOCTL_I915_GEM_MMAP_OFFSET");
	CHECK_STR(name(KX_DRV_I915, 0x40406469), "DRM_IOCTL_I915_GEM_EXECBUFFER2");
	CHECK_STR(name(KX_DRV_I915, 0xc0406469), "DRM_IOCTL_I915_GEM_EXECBUFFER2_WR");
	CHECK_STR(name(KX_DRV_I915, 0xc008646d), "DRM_IOCTL_I915_GEM_CONTEXT_CREATE");
	CHECK_STR(name(KX_DRV_I915, 0xc010646d), "DRM_IOCTL_I915_GEM_CONTEXT_CREATE_EXT");
	/* a foreign type byte on a DRM fd is not a DRM ioctl name */
	CHECK_STR(name(KX_DRV_AMDGPU, 0x5401), "_IO('T',0x01,0)");
	/* habanalabs legacy 'H' ABI */
	CHECK_STR(name(KX_DRV_HABANALABS, 0xc0284805), "HL_IOCTL_MEMORY");
	CHECK_STR(name(KX_DRV_HABANALABS, 0xc0286444), "DRM_IOCTL_HL_MEMORY");
	/* KFD */
	CHECK_STR(name(KX_DRV_KFD, 0xc0284b16), "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
	CHECK_STR(name(KX_DRV_KFD, 0xc0304b16), "AMDKFD_IOC_ALLOC_MEMORY_OF_GPU");
	/* NVIDIA */
	CHECK_STR(name(KX_DRV_NVIDIA, 0xc020462a), "NV_ESC_RM_CONTROL");
	CHECK_STR(name(KX_DRV_NVIDIA, 0xc020462b), "NV_ESC_RM_ALLOC");
	CHECK_STR(name(KX_DRV_NVIDIA, 0xc030462b), "NV_ESC_RM_ALLOC");
	CHECK_STR(name(KX_DRV_NVIDIA, 0xc01046d3), "NV_ESC_IOCTL_XFER_CMD");
	CHECK_STR(kx_ioctl_name(KX_DRV_NVIDIA, 0xc01046d3, 0x2a, buf, sizeof(buf)),
	          "NV_ESC_RM_CONTROL");
	CHECK_STR(kx_ioctl_name(KX_DRV_NVIDIA, 0xc01046d3, 0x2b, buf, sizeof(buf)),
	          "NV_ESC_RM_ALLOC");
	CHECK_STR(kx_ioctl_name(KX_DRV_NVIDIA, 0xc01046d3, 0x77, buf, sizeof(buf)),
	          "NV_ESC_IOCTL_XFER_CMD(0x77)");
	/* xfer_cmd only matters for XFER */
	CHECK_STR(kx_ioctl_name(KX_DRV_NVIDIA, 0xc020462b, 0x2a, buf, sizeof(buf)),
	          "NV_ESC_RM_ALLOC");
	CHECK_STR(name(KX_DRV_NVIDIA_MODESET, 0xc0106d00), "NVKMS_IOCTL_IOWR");
	/* UVM raw numbers */
	CHECK_STR(name(KX_DRV_NVIDIA_UVM, 0x30000001), "UVM_INITIALIZE");
	CHECK_STR(name(KX_DRV_NVIDIA_UVM, 0x30000002), "UVM_DEINITIALIZE");
	CHECK_STR(name(KX_DRV_NVIDIA_UVM, 0x33), "UVM_MIGRATE");
	CHECK_STR(name(KX_DRV_NVIDIA_UVM, 0x30000003), "0x30000003");
	CHECK_STR(name(KX_DRV_NVIDIA_UVM, 0xc8), "0xc8");
	CHECK_STR(name(KX_DRV_KVM, 0x30000001), "0x30000001");
	/* others */
	CHECK_STR(name(KX_DRV_LOOP, 0x4c0a), "LOOP_CONFIGURE");
	CHECK_STR(name(KX_DRV_LOOP, 0x80081272), "BLKGETSIZE64");
	CHECK_STR(name(KX_DRV_BLOCK, 0x80081272), "BLKGETSIZE64");
	CHECK_STR(name(KX_DRV_BLOCK, 0x4c0a), "_IO('L',0x0a,0)");
	CHECK_STR(name(KX_DRV_BLOCK, 0x40086602), "FS_IOC_SETFLAGS");
	CHECK_STR(name(KX_DRV_VFIO, 0x3b71), "VFIO_IOMMU_MAP_DMA");
	CHECK_STR(name(KX_DRV_VFIO, 0x3b6b), "VFIO_DEVICE_GET_INFO");
	CHECK_STR(name(KX_DRV_GASKET, 0x4020dc08), "GASKET_IOCTL_MAP_BUFFER");
	CHECK_STR(name(KX_DRV_GASKET, 0x4018dc0d), "GASKET_IOCTL_MAP_DMA_BUF"); /* unpacked size */
	CHECK_STR(name(KX_DRV_TENSTORRENT, 0xfa03), "TENSTORRENT_IOCTL_ALLOCATE_DMA_BUF");
	CHECK_STR(name(KX_DRV_NEURON, 0x80384e66), "NEURON_IOCTL_MEM_ALLOC_V2MT64");
	CHECK_STR(name(KX_DRV_NEURON, 0x80084e66), "NEURON_IOCTL_MEM_ALLOC_V2");
	CHECK_STR(name(KX_DRV_NEURON, 0x80014e6a), "NEURON_IOCTL_DEVICE_RESET_STATUS");
	CHECK_STR(name(KX_DRV_UNKNOWN, 0xc0406400), "_IOWR('d',0x00,64)");
	CHECK_STR(name(KX_DRV_MAX, 0xae80), "_IO(0xae,0x80,0)");
}

static void test_unknown_format(void)
{
	char small[8];
	const char *n;

	n = kx_ioctl_name(KX_DRV_DRM, 0xc0186444, 0, small, sizeof(small));
	CHECK(n == small);
	CHECK(strlen(n) == sizeof(small) - 1);
	n = kx_ioctl_name(KX_DRV_KVM, 0xae80, 0, small, sizeof(small));
	CHECK_STR(n, "KVM_RUN");
	n = kx_ioctl_name(KX_DRV_DRM, 0xc0186444, 0, NULL, 0);
	CHECK(n && *n);
	n = kx_ioctl_name(KX_DRV_DRM, 0xc0186444, 0, small, 1);
	CHECK(n && *n);
	CHECK_STR(kx_ioctl_name(KX_DRV_KVM, 0xae80, 0, NULL, 0), "KVM_RUN");
	CHECK_STR(name(KX_DRV_AMDGPU, 0xc0186499), "_IOWR('d',0x99,24)");
	CHECK_STR(name(KX_DRV_NVIDIA, 0xc0104677), "_IOWR('F',0x77,16)");
	CHECK_STR(name(KX_DRV_KFD, 0x00004b7f), "_IO('K',0x7f,0)");
}

static void test_errno(void)
{
	CHECK_STR(kx_errno_name(-22), "EINVAL");
	CHECK_STR(kx_errno_name(-1), "EPERM");
	CHECK_STR(kx_errno_name(-11), "EAGAIN");
	CHECK_STR(kx_errno_name(-25), "ENOTTY");
	CHECK_STR(kx_errno_name(-110), "ETIMEDOUT");
	CHECK_STR(kx_errno_name(-95), "EOPNOTSUPP");
	CHECK_STR(kx_errno_name(-133), "EHWPOISON");
	CHECK_STR(kx_errno_name(-512), "ERESTARTSYS");
	CHECK_STR(kx_errno_name(-515), "ENOIOCTLCMD");
	CHECK(kx_errno_name(0) == NULL);
	CHECK(kx_errno_name(22) == NULL);
	CHECK(kx_errno_name(-41) == NULL);
	CHECK(kx_errno_name(-520) == NULL);
	CHECK(kx_errno_name(-4095) == NULL);
	CHECK(kx_errno_name(INT64_MIN) == NULL);
}

static void test_decode_kvm_region(void)
{
	uint8_t in[32] = {0};
	struct kx_field f[8];
	const struct kx_field *x;
	int n;

	put_le(in + 0, 3, 4);
	put_le(in + 4, 2, 4);
	put_le(in + 8, 0x100000, 8);
	put_le(in + 16, 0x200000, 8);
	put_le(in + 24, 0x7f1234560000ULL, 8);
	n = kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, in, sizeof(in), NULL, 0, f, 8);
	CHECK_EQ_U(n, 5);
	CHECK((x = field(f, n, "slot")) && x->kind == KX_FIELD_U64 && x->u == 3);
	CHECK((x = field(f, n, "guest_phys_addr")) && x->kind == KX_FIELD_HEX && x->u == 0x100000);
	CHECK((x = field(f, n, "memory_size")) && x->kind == KX_FIELD_U64 && x->u == 0x200000);
	CHECK((x = field(f, n, "userspace_addr")) && x->kind == KX_FIELD_HEX &&
	      x->u == 0x7f1234560000ULL);
	/* REGION2 shares the first 32 bytes */
	n = kx_ioctl_decode_args(KX_DRV_KVM, 0x40a0ae49, 0, in, sizeof(in), NULL, 0, f, 8);
	CHECK((x = field(f, n, "memory_size")) && x->u == 0x200000);
	/* value-argument ioctls have no decoder */
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_KVM, 0xae41, 0, in, sizeof(in), NULL, 0, f, 8), 0);
	/* a KVM cmd on another driver decodes nothing */
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_LOOP, 0x4020ae46, 0, in, sizeof(in), NULL, 0, f, 8),
	           0);
}

static void nvos54(uint8_t *p)
{
	memset(p, 0, 32);
	put_le(p + 0, 0xc1d00001, 4);
	put_le(p + 4, 0x5c000002, 4);
	put_le(p + 8, 0x20800102, 4);
	put_le(p + 16, 0x7ffe00001000ULL, 8);
	put_le(p + 24, 0x48, 4);
}

static void test_decode_nv_control(void)
{
	uint8_t in[32], out[32];
	struct kx_field f[16];
	const struct kx_field *x;
	int n;

	nvos54(in);
	nvos54(out);
	put_le(out + 28, 0x1f, 4);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc020462a, 0, in, 32, out, 32, f, 16);
	CHECK((x = field(f, n, "h_client")) && x->u == 0xc1d00001);
	CHECK((x = field(f, n, "h_object")) && x->u == 0x5c000002);
	CHECK((x = field(f, n, "rm_control_cmd")) && x->kind == KX_FIELD_HEX && x->u == 0x20800102);
	CHECK((x = field(f, n, "params_size")) && x->u == 0x48);
	CHECK((x = field(f, n, "status")) && x->u == 0x1f);
	/* by nr: a type-'F' cmd of another size still decodes */
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc018462a, 0, in, 32, NULL, 0, f, 16);
	CHECK((x = field(f, n, "rm_control_cmd")) && x->u == 0x20800102);
	CHECK(field(f, n, "status") == NULL);
}

static void test_decode_nv_alloc(void)
{
	uint8_t in[48] = {0}, out[48] = {0};
	struct kx_field f[16];
	const struct kx_field *x;
	int n;

	put_le(in + 0, 0xc1d00001, 4);
	put_le(in + 4, 0xc1d00001, 4);
	put_le(in + 8, 0xcaf00001, 4);
	put_le(in + 12, 0xc46f, 4);
	put_le(in + 24, 0x30, 4); /* NVOS21 paramsSize / NVOS64 pRightsRequested low */
	put_le(in + 32, 0x40, 4); /* NVOS64 paramsSize */
	memcpy(out, in, sizeof(in));
	put_le(out + 28, 0x11, 4); /* NVOS21 status */
	put_le(out + 40, 0x22, 4); /* NVOS64 status */

	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc020462b, 0, in, 32, out, 32, f, 16);
	CHECK((x = field(f, n, "rm_class")) && x->kind == KX_FIELD_HEX && x->u == 0xc46f);
	CHECK((x = field(f, n, "h_root")) && x->u == 0xc1d00001);
	CHECK((x = field(f, n, "h_new")) && x->u == 0xcaf00001);
	CHECK((x = field(f, n, "params_size")) && x->u == 0x30);
	CHECK((x = field(f, n, "status")) && x->u == 0x11);

	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc030462b, 0, in, 44, out, 44, f, 16);
	CHECK((x = field(f, n, "rm_class")) && x->u == 0xc46f);
	CHECK((x = field(f, n, "params_size")) && x->u == 0x40);
	CHECK((x = field(f, n, "status")) && x->u == 0x22);
}

/* RM_ALLOC of memory classes: the followed window (bpf/kxprof.h follow rule)
 * gives the size asked (in) and allocated (out); RM_ALLOC_MEMORY its limit. */
static void test_decode_nv_alloc_memory(void)
{
	uint8_t in[KX_ARG_MAX] = {0}, out[KX_ARG_MAX] = {0};
	struct kx_field f[16];
	const struct kx_field *x;
	int n;

	put_le(in + 0, 0xc1d00001, 4);
	put_le(in + 8, 0, 4); /* hObjectNew 0: the driver picks the handle */
	put_le(in + 12, 0x40, 4);
	put_le(in + 16, 0x7ffd0100, 8);
	put_le(in + KX_FOLLOW_AT, 20000000, 8);
	memcpy(out, in, sizeof(in));
	put_le(out + 8, 0xcaf00011, 4);
	put_le(out + KX_FOLLOW_AT, 20971520, 8);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc030462b, 0, in, KX_ARG_MAX, out, KX_ARG_MAX, f,
	                         16);
	CHECK((x = field(f, n, "handle")) && x->u == 0xcaf00011);
	CHECK((x = field(f, n, "size")) && x->u == 20971520);
	CHECK((x = field(f, n, "requested_size")) && x->u == 20000000);
	/* no window at exit (the re-read failed): the size asked */
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc030462b, 0, in, KX_ARG_MAX, out, 44, f, 16);
	CHECK((x = field(f, n, "size")) && x->u == 20000000);
	/* no window at all (another class, or an old capture): no size */
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc030462b, 0, in, 44, out, 44, f, 16);
	CHECK(field(f, n, "size") == NULL);
	/* OS descriptor: the limit at pAllocParms + 24 */
	put_le(in + 12, 0x71, 4);
	put_le(in + KX_FOLLOW_AT, 4095, 8);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc030462b, 0, in, KX_ARG_MAX, NULL, 0, f, 16);
	CHECK((x = field(f, n, "limit")) && x->u == 4095);
	CHECK(field(f, n, "size") == NULL);
	/* NVOS02 (RM_ALLOC_MEMORY): limit @32, status @40 */
	memset(in, 0, sizeof(in));
	put_le(in + 8, 0xcaf00030, 4);
	put_le(in + 12, 0x71, 4);
	put_le(in + 32, 4095, 8);
	memcpy(out, in, sizeof(in));
	put_le(out + 40, 0x51, 4);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc0384627, 0, in, 44, out, 44, f, 16);
	CHECK((x = field(f, n, "handle")) && x->u == 0xcaf00030);
	CHECK((x = field(f, n, "limit")) && x->u == 4095);
	CHECK((x = field(f, n, "status")) && x->u == 0x51);
}

static void test_decode_xfer(void)
{
	uint8_t in[32], out[32];
	struct kx_field f[16];
	const struct kx_field *x;
	int n;

	nvos54(in);
	nvos54(out);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc01046d3, 0x2a, in, 32, out, 32, f, 16);
	CHECK((x = field(f, n, "rm_control_cmd")) && x->u == 0x20800102);
	CHECK((x = field(f, n, "status")) && x->u == 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc01046d3, 0, in, 32, out, 32, f, 16), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc01046d3, 0xd3, in, 32, out, 32, f, 16),
	           0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc01046d3, 0x12a, in, 32, out, 32, f, 16),
	           0);
	/* wrapped RM_ALLOC: the block size is unknown, so only the common head */
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc01046d3, 0x2b, in, 32, out, 32, f, 16);
	CHECK((x = field(f, n, "h_new")) && x->u == 0x20800102);
	CHECK((x = field(f, n, "rm_class")) && x->u == 0);
	CHECK(field(f, n, "status") == NULL);
}

static void test_decode_short(void)
{
	uint8_t in[64] = {0}, out[64] = {0};
	struct kx_field f[16];
	int n;

	put_le(in, 7, 4);
	/* 12 bytes cover slot and flags only */
	n = kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, in, 12, NULL, 0, f, 16);
	CHECK_EQ_U(n, 2);
	CHECK_STR(f[0].name, "slot");
	CHECK_EQ_U(f[0].u, 7);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, in, 3, NULL, 0, f, 16), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, NULL, 32, NULL, 32, f, 16), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, in, 32, NULL, 0, f, 1), 1);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, in, 32, NULL, 0, f, 0), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_KVM, 0x4020ae46, 0, in, 32, NULL, 0, NULL, 8), 0);
	/* out-only fields with no out copy */
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_BLOCK, 0x80081272, 0, in, 8, NULL, 0, f, 16), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_BLOCK, 0x80081272, 0, NULL, 0, out, 7, f, 16), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_UNKNOWN, 0x80081272, 0, in, 64, out, 64, f, 16), 0);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_MAX, 0x80081272, 0, in, 64, out, 64, f, 16), 0);
	/* NVOS54 cut before the control id */
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA, 0xc020462a, 0, in, 10, out, 10, f, 16);
	CHECK_EQ_U(n, 2);
}

static void test_decode_alloc_family(void)
{
	uint8_t in[64] = {0}, out[64] = {0};
	struct kx_field f[16];
	const struct kx_field *x;
	int n;

	/* amdgpu GEM_CREATE: in bo_size, alignment, domains; out handle */
	put_le(in + 0, 1 << 20, 8);
	put_le(in + 8, 4096, 8);
	put_le(in + 16, 4, 8);
	put_le(out + 0, 5, 4);
	n = kx_ioctl_decode_args(KX_DRV_AMDGPU, 0xc0206440, 0, in, 32, out, 32, f, 16);
	CHECK((x = field(f, n, "size")) && x->kind == KX_FIELD_U64 && x->u == 1 << 20);
	CHECK((x = field(f, n, "alignment")) && x->u == 4096);
	CHECK((x = field(f, n, "domains")) && x->u == 4);
	CHECK((x = field(f, n, "handle")) && x->u == 5);

	/* amdgpu CS: ctx, bo list, chunks; out seqno */
	memset(in, 0, sizeof(in));
	put_le(in + 0, 1, 4);
	put_le(in + 4, 2, 4);
	put_le(in + 8, 3, 4);
	put_le(out + 0, 0x1234567890ULL, 8);
	n = kx_ioctl_decode_args(KX_DRV_AMDGPU, 0xc0186444, 0, in, 24, out, 24, f, 16);
	CHECK((x = field(f, n, "ctx_id")) && x->u == 1);
	CHECK((x = field(f, n, "bo_list_handle")) && x->u == 2);
	CHECK((x = field(f, n, "num_chunks")) && x->u == 3);
	CHECK((x = field(f, n, "seqno")) && x->u == 0x1234567890ULL);

	/* i915 GEM_CREATE: {u64 size, u32 handle} */
	memset(in, 0, sizeof(in));
	put_le(in, 8192, 8);
	memcpy(out, in, 16);
	put_le(out + 8, 9, 4);
	n = kx_ioctl_decode_args(KX_DRV_I915, 0xc010645b, 0, in, 16, out, 16, f, 16);
	CHECK((x = field(f, n, "size")) && x->u == 8192);
	CHECK((x = field(f, n, "handle")) && x->u == 9);

	/* xe GEM_CREATE: size at 8 */
	memset(in, 0, sizeof(in));
	put_le(in + 8, 65536, 8);
	n = kx_ioctl_decode_args(KX_DRV_XE, 0xc0386441, 0, in, 32, NULL, 0, f, 16);
	CHECK((x = field(f, n, "size")) && x->u == 65536);

	/* KFD ALLOC_MEMORY_OF_GPU */
	memset(in, 0, sizeof(in));
	put_le(in + 0, 0x7f0000000000ULL, 8);
	put_le(in + 8, 2 << 20, 8);
	put_le(in + 36, 0x80000001, 4);
	memcpy(out, in, 40);
	put_le(out + 16, 0xabcd00000001ULL, 8);
	n = kx_ioctl_decode_args(KX_DRV_KFD, 0xc0284b16, 0, in, 40, out, 40, f, 16);
	CHECK((x = field(f, n, "va_addr")) && x->kind == KX_FIELD_HEX && x->u == 0x7f0000000000ULL);
	CHECK((x = field(f, n, "size")) && x->u == 2 << 20);
	CHECK((x = field(f, n, "flags")) && x->u == 0x80000001);
	CHECK((x = field(f, n, "handle")) && x->u == 0xabcd00000001ULL);
	n = kx_ioctl_decode_args(KX_DRV_KFD, 0x40084b17, 0, out + 16, 8, NULL, 0, f, 16);
	CHECK((x = field(f, n, "handle")) && x->u == 0xabcd00000001ULL);

	/* habanalabs MEMORY: op at 24 selects the union member */
	memset(in, 0, sizeof(in));
	put_le(in + 0, 1 << 21, 8);
	put_le(out + 0, 0x77, 8);
	n = kx_ioctl_decode_args(KX_DRV_HABANALABS, 0xc0286444, 0, in, 40, out, 40, f, 16);
	CHECK((x = field(f, n, "op")) && x->u == 0);
	CHECK((x = field(f, n, "size")) && x->u == 1 << 21);
	CHECK((x = field(f, n, "handle")) && x->u == 0x77);
	put_le(in + 24, 1, 4);
	n = kx_ioctl_decode_args(KX_DRV_HABANALABS, 0xc0284805, 0, in, 40, out, 40, f, 16);
	CHECK((x = field(f, n, "op")) && x->u == 1);
	CHECK(field(f, n, "size") == NULL);
	CHECK((x = field(f, n, "handle")) && x->u == 1 << 21);
	put_le(in + 24, 2, 4);
	n = kx_ioctl_decode_args(KX_DRV_HABANALABS, 0xc0286444, 0, in, 40, out, 40, f, 16);
	CHECK_EQ_U(n, 1);

	/* DRM core decoders serve every DRM driver */
	memset(out, 0, sizeof(out));
	put_le(out + 0, 3, 4);
	put_le(out + 4, 57, 4);
	put_le(out + 8, (uint32_t)-1, 4);
	put_le(out + 16, 6, 8);
	n = kx_ioctl_decode_args(KX_DRV_I915, 0xc0406400, 0, NULL, 0, out, 24, f, 16);
	CHECK((x = field(f, n, "version_major")) && x->kind == KX_FIELD_I64 && x->i == 3);
	CHECK((x = field(f, n, "version_minor")) && x->i == 57);
	CHECK((x = field(f, n, "version_patchlevel")) && x->i == -1);
	CHECK((x = field(f, n, "name_len")) && x->u == 6);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_DRM, 0xc0406400, 0, NULL, 0, out, 24, f, 16), 4);
	memset(in, 0, sizeof(in));
	put_le(in, 42, 4);
	n = kx_ioctl_decode_args(KX_DRV_PANTHOR, 0x40086409, 0, in, 8, NULL, 0, f, 16);
	CHECK((x = field(f, n, "handle")) && x->u == 42);
	put_le(in + 8, (uint64_t)-1, 8);
	put_le(in + 16, 4, 4);
	n = kx_ioctl_decode_args(KX_DRV_AMDXDNA, 0xc02864c3, 0, in, 28, NULL, 0, f, 16);
	CHECK((x = field(f, n, "count_handles")) && x->u == 4);
	CHECK((x = field(f, n, "timeout_nsec")) && x->kind == KX_FIELD_I64 && x->i == -1);
	/* but not a driver-private nr on an unknown DRM driver */
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_DRM, 0xc0206440, 0, in, 32, out, 32, f, 16), 0);
}

static void test_decode_loop_block_uvm(void)
{
	uint8_t in[64] = {0}, out[64] = {0};
	struct kx_field f[16];
	const struct kx_field *x;
	int n;

	/* loop_config {u32 fd, block_size, loop_info64 {.., lo_offset @24, lo_sizelimit @32}} */
	put_le(in + 0, 5, 4);
	put_le(in + 4, 4096, 4);
	put_le(in + 8 + 24, 1 << 20, 8);
	put_le(in + 8 + 32, 1 << 30, 8);
	n = kx_ioctl_decode_args(KX_DRV_LOOP, 0x4c0a, 0, in, 64, NULL, 0, f, 16);
	CHECK((x = field(f, n, "backing_fd")) && x->kind == KX_FIELD_I64 && x->i == 5);
	CHECK((x = field(f, n, "block_size")) && x->u == 4096);
	CHECK((x = field(f, n, "offset")) && x->u == 1 << 20);
	CHECK((x = field(f, n, "size_limit")) && x->u == 1 << 30);

	put_le(out, 1ULL << 33, 8);
	n = kx_ioctl_decode_args(KX_DRV_BLOCK, 0x80081272, 0, NULL, 0, out, 8, f, 16);
	CHECK_EQ_U(n, 1);
	CHECK_STR(f[0].name, "size_bytes");
	CHECK_EQ_U(f[0].u, 1ULL << 33);
	n = kx_ioctl_decode_args(KX_DRV_LOOP, 0x80081272, 0, NULL, 0, out, 8, f, 16);
	CHECK((x = field(f, n, "size_bytes")) && x->u == 1ULL << 33);

	memset(in, 0, sizeof(in));
	put_le(in + 0, 0x7f0000200000ULL, 8);
	put_le(in + 8, 1 << 21, 8);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA_UVM, 0x33, 0, in, 16, NULL, 0, f, 16);
	CHECK((x = field(f, n, "base")) && x->u == 0x7f0000200000ULL);
	CHECK((x = field(f, n, "length")) && x->u == 1 << 21);
	n = kx_ioctl_decode_args(KX_DRV_NVIDIA_UVM, 0x22, 0, in, 16, out, 16, f, 16);
	CHECK((x = field(f, n, "base")) && x->u == 0x7f0000200000ULL);
	CHECK(field(f, n, "length") == NULL);
	CHECK_EQ_U(kx_ioctl_decode_args(KX_DRV_NVIDIA_UVM, 0x30000001, 0, in, 16, out, 16, f, 16),
	           0);
}

static uint32_t req_cmd(const struct kx_arg_req *r)
{
	return kx_driver_by_nr(r->drv) ? r->key & 0xffff : r->key;
}

static int decode_count(const struct kx_arg_req *r, uint32_t xfer, size_t in_len, size_t out_len,
                        uint8_t fill)
{
	uint8_t in[KX_ARG_MAX], out[KX_ARG_MAX];
	struct kx_field f[32];

	memset(in, fill, sizeof(in));
	memset(out, fill, sizeof(out));
	return kx_ioctl_decode_args(r->drv, req_cmd(r), xfer, in, in_len, out, out_len, f, 32);
}

static void test_arg_reqs(void)
{
	static const uint32_t xfers[] = {0x29, 0x2a, 0x2b, 0x4e, 0x57};
	const struct kx_arg_req *r;
	size_t n, i, j, k;
	int d, versions = 0;

	r = kx_ioctl_arg_reqs(&n);
	CHECK(r && n > 0);
	CHECK(kx_ioctl_arg_reqs(NULL) == r);
	for (i = 0; i < n; i++) {
		uint16_t dirs = r[i].flags & (KX_ARGF_IN | KX_ARGF_OUT);
		uint32_t cmd = req_cmd(&r[i]);
		const char *nm;

		CHECK(r[i].len > 0 && r[i].len <= KX_ARG_MAX);
		CHECK(dirs != 0);
		CHECK((r[i].flags & ~(KX_ARGF_IN | KX_ARGF_OUT | KX_ARGF_XFER | KX_ARGF_FOLLOW)) ==
		      0);
		/* a follow rule: its fields inside the copy, its window after it */
		CHECK(!(r[i].flags & KX_ARGF_FOLLOW) == !r[i].follow);
		if (r[i].follow) {
			CHECK(r[i].len <= KX_FOLLOW_AT && (r[i].flags & KX_ARGF_IN));
			CHECK(r[i].follow->ptr_off % 8 == 0 &&
			      r[i].follow->ptr_off + 8u <= r[i].len);
			CHECK(r[i].follow->sel_off % 4 == 0 &&
			      r[i].follow->sel_off + 4u <= r[i].len);
			CHECK(r[i].follow->n > 0 && r[i].follow->n <= KX_FOLLOW_SEL);
		}
		CHECK(r[i].drv > KX_DRV_UNKNOWN && r[i].drv < KX_DRV_MAX);
		if (kx_driver_by_nr(r[i].drv))
			CHECK_EQ_U(r[i].key, KX_ARG_BY_NR_KEY(r[i].key));
		for (j = i + 1; j < n; j++)
			CHECK(r[j].drv != r[i].drv || r[j].key != r[i].key);
		/* every request is for a named ioctl of its driver */
		nm = name(r[i].drv, cmd);
		CHECK(strncmp(nm, "_IO", 3) != 0 && strncmp(nm, "0x", 2) != 0);
		if (strcmp(nm, "DRM_IOCTL_VERSION") == 0)
			versions++;
		/*
		 * Every field lies inside the copied prefix and in a copied
		 * direction: limiting the copies to the request changes nothing.
		 */
		for (k = 0; k < ((r[i].flags & KX_ARGF_XFER) ? 5 : 1); k++) {
			uint32_t x = (r[i].flags & KX_ARGF_XFER) ? xfers[k] : 0;
			int full = decode_count(&r[i], x, KX_ARG_MAX, KX_ARG_MAX, 0);
			int fit = decode_count(&r[i], x, (r[i].flags & KX_ARGF_IN) ? r[i].len : 0,
			                       (r[i].flags & KX_ARGF_OUT) ? r[i].len : 0, 0);

			CHECK(full > 0);
			CHECK_EQ_U(fit, full);
			CHECK_EQ_U(decode_count(&r[i], x, r[i].len, r[i].len, 0xff) <= 32, 1);
		}
	}
	CHECK_EQ_U(versions, KX_DRV_ETHOSU - KX_DRV_DRM + 1);
	for (d = KX_DRV_DRM; d <= KX_DRV_ETHOSU; d++) {
		for (i = 0; i < n; i++)
			if (r[i].drv == (enum kx_driver)d &&
			    r[i].key == KX_ARG_BY_NR_KEY(0x40086409))
				break;
		CHECK(i < n);
	}
}

/* Field names are unique per decode and snake_case. */
static void test_field_names(void)
{
	const struct kx_arg_req *r;
	uint8_t in[KX_ARG_MAX] = {0}, out[KX_ARG_MAX] = {0};
	struct kx_field f[32];
	size_t n, i;
	int m, a, b;

	r = kx_ioctl_arg_reqs(&n);
	for (i = 0; i < n; i++) {
		m = kx_ioctl_decode_args(r[i].drv, req_cmd(&r[i]),
		                         (r[i].flags & KX_ARGF_XFER) ? 0x57 : 0, in, sizeof(in),
		                         out, sizeof(out), f, 32);
		for (a = 0; a < m; a++) {
			const char *s;

			CHECK(f[a].kind <= KX_FIELD_STR);
			for (s = f[a].name; *s; s++)
				CHECK((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
				      *s == '_');
			for (b = a + 1; b < m; b++)
				CHECK(strcmp(f[a].name, f[b].name) != 0);
		}
	}
}

int main(void)
{
	RUN(test_ioc_format);
	RUN(test_driver_names);
	RUN(test_table_shape);
	RUN(test_tables_resolve);
	RUN(test_names_map_back);
	RUN(test_cmd_by_name);
	RUN(test_spot_checks);
	RUN(test_unknown_format);
	RUN(test_errno);
	RUN(test_decode_kvm_region);
	RUN(test_decode_nv_control);
	RUN(test_decode_nv_alloc);
	RUN(test_decode_nv_alloc_memory);
	RUN(test_decode_xfer);
	RUN(test_decode_short);
	RUN(test_decode_alloc_family);
	RUN(test_decode_loop_block_uvm);
	RUN(test_arg_reqs);
	RUN(test_field_names);
	KXT_EXIT();
}
