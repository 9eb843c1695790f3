/*
 * Unit tests of the device registry (user/registry/devices.c): a fake /proc, /sys and
 * /dev tree under a temporary KXPROF_SYSROOT, plus a check of the real
 * /dev/kvm when this machine has one. Device nodes in the fake tree need
 * mknod, so the node-based cases are skipped when not root.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "registry/devices.h"
#include "registry/ioctl_decode.h"
#include "kxtest.h"

static char root[64];
static int have_nodes; /* mknod worked: the fake /dev has device nodes */

static const char proc_devices[] = "Character devices:\n"
                                   "  1 mem\n"
                                   "  4 /dev/vc/0\n"
                                   "  4 tty\n"
                                   " 10 misc\n"
                                   "195 nvidia-frontend\n"
                                   "226 drm\n"
                                   "237 kfd\n"
                                   "238 nvidia-uvm\n"
                                   "\n"
                                   "Block devices:\n"
                                   "  7 loop\n"
                                   "254 virtblk\n";

static int put(const char *rel, const char *text)
{
	char p[256];
	FILE *f;

	snprintf(p, sizeof(p), "%s%s", root, rel);
	f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

static void mk(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	mkdir(p, 0755);
}

static int node(const char *rel, int blk, unsigned int ma, unsigned int mi)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	return mknod(p, (blk ? S_IFBLK : S_IFCHR) | 0600, makedev(ma, mi));
}

static int setup(void)
{
	char p[256];

	snprintf(root, sizeof(root), "/tmp/kxprof-devices.XXXXXX");
	if (!mkdtemp(root))
		return -1;
	mk("/proc");
	mk("/sys");
	mk("/sys/dev");
	mk("/sys/dev/char");
	mk("/sys/dev/char/226:128");
	mk("/sys/dev/char/226:128/device");
	mk("/dev");
	mk("/dev/dri");
	if (put("/proc/devices", proc_devices) || put("/dev/notadev", "x\n"))
		return -1;
	snprintf(p, sizeof(p), "%s/sys/dev/char/226:128/device/driver", root);
	if (symlink("../../../bus/pci/drivers/amdgpu", p))
		return -1;
	have_nodes = !node("/dev/dri/renderD128", 0, 226, 128) &&
	             !node("/dev/dri/card0", 0, 226, 0) && !node("/dev/kfd", 0, 237, 0) &&
	             !node("/dev/nvidiactl", 0, 195, 255) && !node("/dev/nvidia0", 0, 195, 0) &&
	             !node("/dev/nvidia-modeset", 0, 195, 254) &&
	             !node("/dev/nvidia-uvm", 0, 238, 0) && !node("/dev/kvm", 0, 10, 232) &&
	             !node("/dev/loop-control", 0, 10, 237) && !node("/dev/loop0", 1, 7, 0) &&
	             !node("/dev/null", 0, 1, 3);
	return setenv("KXPROF_SYSROOT", root, 1);
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void teardown(void)
{
	if (root[0])
		nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const struct kx_device *find_entry(const struct kx_device *d, int n, unsigned int fkind,
                                          unsigned int dev)
{
	for (int i = 0; i < n; i++)
		if (d[i].fkind == fkind && d[i].dev == dev)
			return &d[i];
	return NULL;
}

static void test_resolve_drm_minor(void)
{
	struct kx_device d[8];
	char err[256];
	int n = kx_device_resolve("226:128", d, 8, err, sizeof(err));

	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].fkind, KX_FK_CHR);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(226, 128));
	CHECK_EQ_U(d[0].any_minor, 0);
	CHECK_EQ_U(d[0].drv, KX_DRV_AMDGPU);
	CHECK_STR(d[0].driver, "amdgpu");
	CHECK_STR(d[0].node, have_nodes ? "/dev/dri/renderD128" : "char 226:128");

	/* No sysfs driver link: a DRM device of unknown driver. */
	n = kx_device_resolve("226:0", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_DRM);
	CHECK_STR(d[0].driver, "drm");

	n = kx_device_resolve("226:*", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].any_minor, 1);
	CHECK_EQ_U(d[0].dev, KX_DEV_ANY_MINOR(226));
	CHECK_EQ_U(d[0].drv, KX_DRV_DRM);
}

static void test_resolve_names(void)
{
	struct kx_device d[8];
	char err[256];
	int n;

	n = kx_device_resolve("loop", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(d[0].fkind, KX_FK_BLK);
	CHECK_EQ_U(d[0].dev, KX_DEV_ANY_MINOR(7));
	CHECK_EQ_U(d[0].any_minor, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_LOOP);
	CHECK_STR(d[0].driver, "loop");
	CHECK_STR(d[0].node, have_nodes ? "/dev/loop*" : "block 7:*");
	CHECK_EQ_U(d[1].fkind, KX_FK_CHR);
	CHECK_EQ_U(d[1].dev, KX_MKDEV(10, 237));
	CHECK_EQ_U(d[1].any_minor, 0);
	CHECK_EQ_U(d[1].drv, KX_DRV_LOOP);
	CHECK_STR(d[1].node, "/dev/loop-control");

	n = kx_device_resolve("kfd", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].fkind, KX_FK_CHR);
	CHECK_EQ_U(d[0].dev, KX_DEV_ANY_MINOR(237));
	CHECK_EQ_U(d[0].any_minor, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_KFD);
	CHECK_STR(d[0].driver, "kfd");
	CHECK_STR(d[0].node, have_nodes ? "/dev/kfd" : "char 237:*");

	n = kx_device_resolve("virtblk", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].fkind, KX_FK_BLK);
	CHECK_EQ_U(d[0].dev, KX_DEV_ANY_MINOR(254));
	CHECK_EQ_U(d[0].drv, KX_DRV_BLOCK);
	CHECK_STR(d[0].driver, "virtblk");

	/* A char driver nobody knows: traced as unknown, named as /proc/devices says. */
	n = kx_device_resolve("mem", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].dev, KX_DEV_ANY_MINOR(1));
	CHECK_EQ_U(d[0].drv, KX_DRV_UNKNOWN);
	CHECK_STR(d[0].driver, "mem");

	n = kx_device_resolve("nvidia-uvm", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_NVIDIA_UVM);
	CHECK_EQ_U(d[0].dev, KX_DEV_ANY_MINOR(238));
}

static void test_resolve_numbers(void)
{
	struct kx_device d[8];
	char err[256];
	int n;

	n = kx_device_resolve("block:7:0", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].fkind, KX_FK_BLK);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(7, 0));
	CHECK_EQ_U(d[0].any_minor, 0);
	CHECK_EQ_U(d[0].drv, KX_DRV_LOOP);
	CHECK_STR(d[0].node, have_nodes ? "/dev/loop0" : "block 7:0");

	n = kx_device_resolve("237:*", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_KFD);
	CHECK_EQ_U(d[0].any_minor, 1);

	n = kx_device_resolve("195:255", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_NVIDIA);
	n = kx_device_resolve("195:254", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_NVIDIA_MODESET);

	/* Raw numbers mean exactly that device: no anon kinds added. */
	n = kx_device_resolve("10:232", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_KVM);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(10, 232));
}

static void check_err(const char *spec, const char *want)
{
	struct kx_device d[4];
	char err[256] = "";
	int n = kx_device_resolve(spec, d, 4, err, sizeof(err));

	if (n != -1 || strcmp(err, want)) {
		printf("FAIL %s: spec \"%s\": got %d \"%s\", want -1 \"%s\"\n", kxt_cur, spec, n,
		       err, want);
		kxt_cur_failed = 1;
	}
}

static void test_resolve_errors(void)
{
	char want[256];

	check_err("foo", "no driver named foo in /proc/devices");
	snprintf(want, sizeof(want), "no such device: /dev/nope (%s)", strerror(ENOENT));
	check_err("/dev/nope", want);
	check_err("/dev/notadev", "not a device node: /dev/notadev");
	check_err("/dev", "not a device node: /dev");
	check_err("300:1", "no char device major 300 in /proc/devices");
	check_err("block:226:0", "no block device major 226 in /proc/devices");
	check_err("", "empty device spec");
	check_err("12:x", "bad device spec: 12:x (expected a path, MAJOR:MINOR, MAJOR:*, "
	                  "block:MAJOR:MINOR or a driver name)");
	check_err("block:1", "bad device spec: block:1 (expected a path, MAJOR:MINOR, "
	                     "MAJOR:*, block:MAJOR:MINOR or a driver name)");
	check_err("10:1048575", "bad device spec: 10:1048575 (expected a path, MAJOR:MINOR, "
	                        "MAJOR:*, block:MAJOR:MINOR or a driver name)");
	/* kvm is a misc device: without /dev/kvm there is nothing to trace. */
	if (!have_nodes) {
		snprintf(want, sizeof(want), "no such device: /dev/kvm (%s)", strerror(ENOENT));
		check_err("kvm", want);
	}
}

static void test_resolve_paths(void)
{
	struct kx_device d[8];
	char err[256];
	int n;

	if (!have_nodes)
		SKIP("mknod needs root: no device nodes in the fake tree");
	n = kx_device_resolve("/dev/kvm", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 4);
	CHECK_EQ_U(d[0].fkind, KX_FK_CHR);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(10, 232));
	CHECK_EQ_U(d[0].drv, KX_DRV_KVM);
	CHECK_STR(d[0].node, "/dev/kvm");
	CHECK(find_entry(d, n, KX_FK_KVM_VM, 0) != NULL);
	CHECK(find_entry(d, n, KX_FK_KVM_VCPU, 0) != NULL);
	CHECK(find_entry(d, n, KX_FK_KVM_DEV, 0) != NULL);
	CHECK_STR(find_entry(d, n, KX_FK_KVM_VCPU, 0)->node, "anon_inode:kvm-vcpu");

	n = kx_device_resolve("kvm", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 4);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(10, 232));

	n = kx_device_resolve("/dev/loop0", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].fkind, KX_FK_BLK);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(7, 0));
	CHECK_EQ_U(d[0].drv, KX_DRV_LOOP);

	n = kx_device_resolve("/dev/dri/renderD128", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(d[0].drv, KX_DRV_AMDGPU);

	/* A kernel driver name that is not in /proc/devices: its present nodes. */
	n = kx_device_resolve("amdgpu", d, 8, err, sizeof(err));
	CHECK_EQ_U(n, 1);
	CHECK_STR(d[0].node, "/dev/dri/renderD128");
}

static void test_default_set(void)
{
	struct kx_device d[KX_MAX_DEVICES];
	const struct kx_device *e;
	int n = kx_devices_default(d, KX_MAX_DEVICES);

	if (!have_nodes) {
		/* Nothing under the fake /dev: nothing to trace. */
		CHECK_EQ_U(n, 0);
		SKIP("mknod needs root: default set checked empty only");
	}
	/* renderD128, card0, kfd (any + exact), nvidia0, nvidia-modeset,
	 * nvidiactl, nvidia-uvm (any + exact), kvm, 3 kvm anon kinds. */
	CHECK_EQ_U(n, 13);
	e = find_entry(d, n, KX_FK_CHR, KX_MKDEV(226, 128));
	CHECK(e && e->drv == KX_DRV_AMDGPU && !strcmp(e->node, "/dev/dri/renderD128"));
	e = find_entry(d, n, KX_FK_CHR, KX_MKDEV(226, 0));
	CHECK(e && e->drv == KX_DRV_DRM);
	e = find_entry(d, n, KX_FK_CHR, KX_DEV_ANY_MINOR(237));
	CHECK(e && e->drv == KX_DRV_KFD && e->any_minor);
	e = find_entry(d, n, KX_FK_CHR, KX_MKDEV(195, 255));
	CHECK(e && e->drv == KX_DRV_NVIDIA && !strcmp(e->node, "/dev/nvidiactl"));
	e = find_entry(d, n, KX_FK_CHR, KX_MKDEV(195, 254));
	CHECK(e && e->drv == KX_DRV_NVIDIA_MODESET);
	e = find_entry(d, n, KX_FK_CHR, KX_DEV_ANY_MINOR(238));
	CHECK(e && e->drv == KX_DRV_NVIDIA_UVM);
	e = find_entry(d, n, KX_FK_CHR, KX_MKDEV(10, 232));
	CHECK(e && e->drv == KX_DRV_KVM && !strcmp(e->driver, "kvm"));
	e = find_entry(d, n, KX_FK_KVM_VM, 0);
	CHECK(e && e->drv == KX_DRV_KVM && !strcmp(e->node, "anon_inode:kvm-vm"));
	CHECK(find_entry(d, n, KX_FK_KVM_VCPU, 0) != NULL);
	e = find_entry(d, n, KX_FK_KVM_DEV, 0);
	CHECK(e && !strcmp(e->node, "anon_inode:kvm-device"));
	/* Loop is only traced when named; vfio is absent; /dev/null is no accelerator. */
	CHECK(find_entry(d, n, KX_FK_CHR, KX_MKDEV(10, 237)) == NULL);
	CHECK(find_entry(d, n, KX_FK_BLK, KX_MKDEV(7, 0)) == NULL);
	CHECK(find_entry(d, n, KX_FK_CHR, KX_MKDEV(1, 3)) == NULL);
	CHECK(find_entry(d, n, KX_FK_VFIO_DEV, 0) == NULL);
	/* Never more than max. */
	CHECK_EQ_U(kx_devices_default(d, 3), 3);
}

static void test_find_and_label(void)
{
	struct kx_device d[5] = {
	        {.dev = KX_DEV_ANY_MINOR(7),
	         .fkind = KX_FK_BLK,
	         .drv = KX_DRV_LOOP,
	         .any_minor = 1,
	         .node = "/dev/loop*",
	         .driver = "loop"},
	        {.dev = KX_MKDEV(7, 2),
	         .fkind = KX_FK_BLK,
	         .drv = KX_DRV_LOOP,
	         .node = "/dev/loop2",
	         .driver = "loop"},
	        {.dev = KX_MKDEV(10, 232),
	         .fkind = KX_FK_CHR,
	         .drv = KX_DRV_KVM,
	         .node = "/dev/kvm",
	         .driver = "kvm"},
	        {.dev = 0,
	         .fkind = KX_FK_KVM_VCPU,
	         .drv = KX_DRV_KVM,
	         .node = "anon_inode:kvm-vcpu",
	         .driver = "kvm"},
	        {.dev = KX_DEV_ANY_MINOR(237),
	         .fkind = KX_FK_CHR,
	         .drv = KX_DRV_KFD,
	         .any_minor = 1,
	         .node = "/dev/kfd",
	         .driver = "kfd"},
	};
	char buf[64];

	/* Exact before any-minor, whatever the order. */
	CHECK(kx_device_find(d, 5, KX_FK_BLK, KX_MKDEV(7, 2)) == &d[1]);
	CHECK(kx_device_find(d, 5, KX_FK_BLK, KX_MKDEV(7, 3)) == &d[0]);
	CHECK(kx_device_find(d, 5, KX_FK_CHR, KX_MKDEV(7, 3)) == NULL);
	CHECK(kx_device_find(d, 5, KX_FK_CHR, KX_MKDEV(10, 232)) == &d[2]);
	CHECK(kx_device_find(d, 5, KX_FK_CHR, KX_MKDEV(10, 233)) == NULL);
	CHECK(kx_device_find(d, 5, KX_FK_KVM_VCPU, 0) == &d[3]);
	CHECK(kx_device_find(d, 5, KX_FK_KVM_VM, 0) == NULL);
	CHECK(kx_device_find(d, 5, KX_FK_CHR, KX_MKDEV(237, 0)) == &d[4]);

	CHECK_STR(kx_device_label(d, 5, KX_FK_CHR, KX_MKDEV(10, 232), buf, sizeof(buf)),
	          "/dev/kvm");
	CHECK_STR(kx_device_label(d, 5, KX_FK_BLK, KX_MKDEV(7, 2), buf, sizeof(buf)), "/dev/loop2");
	CHECK_STR(kx_device_label(d, 5, KX_FK_BLK, KX_MKDEV(7, 5), buf, sizeof(buf)),
	          "block 7:5 (loop)");
	CHECK_STR(kx_device_label(d, 5, KX_FK_CHR, KX_MKDEV(10, 200), buf, sizeof(buf)),
	          "char 10:200");
	CHECK_STR(kx_device_label(d, 5, KX_FK_KVM_VCPU, 0, buf, sizeof(buf)),
	          "anon_inode:kvm-vcpu");
	/* Anon kinds have a label even when not in the set. */
	CHECK_STR(kx_device_label(d, 5, KX_FK_KVM_VM, 0, buf, sizeof(buf)), "anon_inode:kvm-vm");
	CHECK_STR(kx_device_label(NULL, 0, KX_FK_VFIO_DEV, 0, buf, sizeof(buf)),
	          "anon_inode:[vfio-device]");
	/* Truncates, never overflows. */
	CHECK_STR(kx_device_label(d, 5, KX_FK_CHR, KX_MKDEV(10, 232), buf, 5), "/dev");
}

static int link_at(const char *target, const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	return symlink(target, p);
}

static int unlink_at(const char *rel)
{
	char p[256];

	snprintf(p, sizeof(p), "%s%s", root, rel);
	return unlink(p);
}

static const char *disk(uint32_t dev)
{
	static char buf[KX_DISK_NAME_LEN];

	return kx_block_disk_name(dev, buf, sizeof(buf));
}

/* Block disks: a partition's disk, names read once per dev_t, and afresh at capture start. */
static void test_block_disks(void)
{
	struct kx_device set[2] = {{.dev = KX_DEV_ANY_MINOR(7), .fkind = KX_FK_BLK, .any_minor = 1},
	                           {.dev = KX_MKDEV(254, 1), .fkind = KX_FK_BLK}};
	char small[3];

	mk("/sys/dev/block");
	mk("/sys/devices");
	mk("/sys/devices/block");
	mk("/sys/devices/block/vda");
	mk("/sys/devices/block/vda/vda1");
	mk("/sys/devices/block/loop3");
	mk("/sys/devices/block/nvme0n1p12345678");
	CHECK(put("/sys/devices/block/vda/dev", "254:0\n") == 0);
	CHECK(put("/sys/devices/block/vda/vda1/partition", "1\n") == 0);
	CHECK(link_at("../../devices/block/vda", "/sys/dev/block/254:0") == 0);
	CHECK(link_at("../../devices/block/vda/vda1", "/sys/dev/block/254:1") == 0);
	CHECK(link_at("../../devices/block/loop3", "/sys/dev/block/7:3") == 0);
	CHECK(link_at("../../devices/block/nvme0n1p12345678", "/sys/dev/block/259:0") == 0);

	CHECK_EQ_U(kx_block_disk_of(KX_MKDEV(254, 1)), KX_MKDEV(254, 0));
	CHECK_EQ_U(kx_block_disk_of(KX_MKDEV(254, 0)), KX_MKDEV(254, 0));
	CHECK_EQ_U(kx_block_disk_of(KX_MKDEV(7, 3)), KX_MKDEV(7, 3));
	CHECK_EQ_U(kx_block_disk_of(KX_MKDEV(8, 0)), KX_MKDEV(8, 0)); /* unknown: itself */

	CHECK_STR(disk(KX_MKDEV(254, 0)), "vda");
	CHECK_STR(disk(KX_MKDEV(7, 3)), "loop3");
	CHECK_STR(disk(KX_MKDEV(8, 0)), "");
	CHECK_STR(disk(KX_MKDEV(259, 0)), "nvme0n1p1234567"); /* cut as a record's ring is */
	CHECK_STR(kx_block_disk_name(KX_MKDEV(254, 0), small, sizeof(small)), "vd");
	CHECK(kx_block_disk_name(KX_MKDEV(254, 0), small, 0) == small);

	/* Read once: a disk gone from sysfs keeps its name, an unknown one stays unknown. */
	CHECK(unlink_at("/sys/dev/block/7:3") == 0);
	CHECK_STR(disk(KX_MKDEV(7, 3)), "loop3");
	CHECK_STR(disk(KX_MKDEV(7, 5)), "");
	mk("/sys/devices/block/loop5");
	CHECK(link_at("../../devices/block/loop5", "/sys/dev/block/7:5") == 0);
	CHECK_STR(disk(KX_MKDEV(7, 5)), "");

	/* A capture start reads its set afresh: every disk of a whole major, a partition's disk. */
	CHECK(unlink_at("/sys/dev/block/254:0") == 0);
	CHECK(link_at("../../devices/block/loop5", "/sys/dev/block/254:0") == 0);
	kx_block_disks_note(set, 2);
	CHECK_STR(disk(KX_MKDEV(7, 5)), "loop5");
	CHECK_STR(disk(KX_MKDEV(7, 3)), "loop3");
	CHECK_STR(disk(KX_MKDEV(254, 0)), "loop5");
}

static void test_real_kvm(void)
{
	struct kx_device d[KX_MAX_DEVICES];
	struct stat st;
	char err[256];
	int n;

	unsetenv("KXPROF_SYSROOT");
	if (stat("/dev/kvm", &st) || !S_ISCHR(st.st_mode)) {
		setenv("KXPROF_SYSROOT", root, 1);
		SKIP("no /dev/kvm on this machine");
	}
	n = kx_device_resolve("/dev/kvm", d, KX_MAX_DEVICES, err, sizeof(err));
	setenv("KXPROF_SYSROOT", root, 1);
	CHECK(n >= 1);
	CHECK_EQ_U(d[0].fkind, KX_FK_CHR);
	CHECK_EQ_U(d[0].dev, KX_MKDEV(10, 232));
	CHECK_EQ_U(d[0].drv, KX_DRV_KVM);
	CHECK_STR(d[0].driver, "kvm");

	unsetenv("KXPROF_SYSROOT");
	n = kx_devices_default(d, KX_MAX_DEVICES);
	setenv("KXPROF_SYSROOT", root, 1);
	CHECK(find_entry(d, n, KX_FK_CHR, KX_MKDEV(10, 232)) != NULL);
	CHECK(find_entry(d, n, KX_FK_KVM_VCPU, 0) != NULL);
}

int main(void)
{
	if (setup()) {
		printf("FAIL setup: cannot build the fake tree under %s: %s\n", root,
		       strerror(errno));
		teardown();
		return 1;
	}
	RUN(test_resolve_drm_minor);
	RUN(test_resolve_names);
	RUN(test_resolve_numbers);
	RUN(test_resolve_errors);
	RUN(test_resolve_paths);
	RUN(test_default_set);
	RUN(test_find_and_label);
	RUN(test_block_disks);
	RUN(test_real_kvm);
	teardown();
	KXT_EXIT();
}
