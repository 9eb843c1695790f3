/*
 * Device registry (contract: devices.h). Owns the mapping from device files
 * to drivers: the /proc/devices major table, the fixed majors (DRM 226,
 * accel 261, NVIDIA 195), misc minors (kvm 10:232, vfio 10:196,
 * loop-control 10:237), the drivers known by their /proc/devices name, the
 * anon-inode kinds, and the meaning of a --device spec.
 *
 * Every path the registry reads (/proc/devices, /sys/dev/char/..., /dev/...)
 * is prefixed with $KXPROF_SYSROOT when that variable is set, so tests can
 * build a fake tree. Node paths stored in struct kx_device never carry it.
 *
 * Entries with any_minor set use dev = KX_DEV_ANY_MINOR(major), the same key
 * the BPF device filter matches, so a filter map can be filled from dev as is.
 *
 * Block disk names (records carry the disk's dev_t, some also its name) come
 * from /sys/dev/block once per dev_t into a cache shared by the capture
 * (which fills it for its device set at start) and the analysis (which asks
 * for the disks the records name), never from the record path.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "registry/devices.h"
#include "registry/ioctl_decode.h"

#define DRM_MAJOR            226
#define ACCEL_MAJOR          261
#define NVIDIA_MAJOR         195
#define NVIDIA_MODESET_MINOR 254
#define MISC_MAJOR           10
#define KVM_MINOR            232
#define VFIO_MINOR           196
#define LOOP_CTRL_MINOR      237
#define LOOP_MAJOR           7
#define MAX_MAJOR            4095U /* 12 bits in the kernel's dev_t */

#define PROCDEV_MAX 512

struct procdev {
	uint8_t block;
	unsigned int major;
	char name[32];
};

struct procdevs {
	int n;
	struct procdev e[PROCDEV_MAX];
};

/* Drivers that allocate a dynamic major by name and own all of its minors. */
static const struct {
	const char *name;
	enum kx_driver drv;
} dyn_drivers[] = {
        {"kfd", KX_DRV_KFD},
        {"nvidia-uvm", KX_DRV_NVIDIA_UVM},
        {"nvidia-modeset", KX_DRV_NVIDIA_MODESET},
        {"neuron", KX_DRV_NEURON},
        {"tenstorrent", KX_DRV_TENSTORRENT},
        {"vfio", KX_DRV_VFIO},             /* groups, /dev/vfio/N */
        {"vfio-dev", KX_DRV_VFIO},         /* cdevs, /dev/vfio/devices/vfioN */
        {"habanalabs", KX_DRV_HABANALABS}, /* legacy /dev/hlN (<= 6.2) */
};

/* Where accelerator nodes live; /dev itself is not walked recursively. */
static const char *const node_dirs[] = {
        "/dev", "/dev/dri", "/dev/accel", "/dev/vfio", "/dev/vfio/devices", "/dev/tenstorrent",
};

static const char *sysroot(void)
{
	const char *r = getenv("KXPROF_SYSROOT");

	return r ? r : "";
}

/* Host path of a registry path: sysroot prefix + formatted path. */
static int rpath(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s", sysroot());
	if (n < 0 || (size_t)n >= len)
		return -1;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - n, fmt, ap);
	va_end(ap);
	if (m < 0 || (size_t)m >= len - n)
		return -1;
	return 0;
}

/* Truncating copy into a fixed field. */
static void set_str(char *dst, size_t len, const char *src)
{
	size_t i;

	for (i = 0; i + 1 < len && src[i]; i++)
		dst[i] = src[i];
	dst[i] = '\0';
}

/* Reads /proc/devices; a missing file leaves the table empty. */
static void procdevs_load(struct procdevs *pd)
{
	char path[4096], line[256];
	int block = 0;
	FILE *f;

	pd->n = 0;
	if (rpath(path, sizeof(path), "/proc/devices"))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f) && pd->n < PROCDEV_MAX) {
		struct procdev *e = &pd->e[pd->n];
		unsigned int major;
		char name[64];

		if (!strncmp(line, "Character devices:", 18)) {
			block = 0;
			continue;
		}
		if (!strncmp(line, "Block devices:", 14)) {
			block = 1;
			continue;
		}
		if (sscanf(line, "%u %63s", &major, name) != 2)
			continue;
		e->block = block;
		e->major = major;
		set_str(e->name, sizeof(e->name), name);
		pd->n++;
	}
	fclose(f);
}

/* First name registered for a major, or NULL. */
static const char *procdevs_name(const struct procdevs *pd, int block, unsigned int major)
{
	for (int i = 0; i < pd->n; i++)
		if (pd->e[i].block == block && pd->e[i].major == major)
			return pd->e[i].name;
	return NULL;
}

static int dyn_driver(const char *name, enum kx_driver *drv)
{
	for (size_t i = 0; i < sizeof(dyn_drivers) / sizeof(dyn_drivers[0]); i++) {
		if (!strcmp(dyn_drivers[i].name, name)) {
			*drv = dyn_drivers[i].drv;
			return 1;
		}
	}
	return 0;
}

/* Kernel driver bound to a char device, from its sysfs link; 0 when found. */
static int sysfs_driver(unsigned int major, unsigned int minor, char *out, size_t len)
{
	char path[4096], target[4096];
	const char *base;
	ssize_t n;

	if (rpath(path, sizeof(path), "/sys/dev/char/%u:%u/device/driver", major, minor))
		return -1;
	n = readlink(path, target, sizeof(target) - 1);
	if (n <= 0)
		return -1;
	target[n] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (!*base)
		return -1;
	set_str(out, len, base);
	return 0;
}

/*
 * Driver of a char device. *whole says the driver owns every minor of the
 * major (dynamic majors), so a filter should use any_minor. node is the
 * device path when known (tells a TPU /dev/accelN from DRM accel), else NULL.
 */
static enum kx_driver classify_chr(const struct procdevs *pd, unsigned int major,
                                   unsigned int minor, const char *node, char *driver, size_t len,
                                   int *whole)
{
	enum kx_driver drv = KX_DRV_UNKNOWN;
	const char *name;

	*whole = 0;
	if (major == DRM_MAJOR || major == ACCEL_MAJOR) {
		/* Shared majors: only the bound driver tells amdgpu from i915. */
		if (sysfs_driver(major, minor, driver, len)) {
			set_str(driver, len, major == DRM_MAJOR ? "drm" : "accel");
			return KX_DRV_DRM;
		}
		drv = kx_driver_from_name(driver);
		return drv == KX_DRV_UNKNOWN ? KX_DRV_DRM : drv;
	}
	if (major == NVIDIA_MAJOR) {
		if (minor == NVIDIA_MODESET_MINOR) {
			set_str(driver, len, "nvidia-modeset");
			return KX_DRV_NVIDIA_MODESET;
		}
		set_str(driver, len, "nvidia");
		return KX_DRV_NVIDIA;
	}
	if (major == MISC_MAJOR) {
		switch (minor) {
		case KVM_MINOR:
			set_str(driver, len, "kvm");
			return KX_DRV_KVM;
		case VFIO_MINOR:
			set_str(driver, len, "vfio");
			return KX_DRV_VFIO;
		case LOOP_CTRL_MINOR:
			set_str(driver, len, "loop");
			return KX_DRV_LOOP;
		default:
			set_str(driver, len, "misc");
			return KX_DRV_UNKNOWN;
		}
	}
	name = procdevs_name(pd, 0, major);
	set_str(driver, len, name ? name : "");
	if (name && dyn_driver(name, &drv)) {
		*whole = 1;
		return drv;
	}
	/* Google TPU v2-v4: /dev/accelN directly under /dev, not DRM accel. */
	if (node && !strncmp(node, "/dev/accel", 10) && node[10] >= '0' && node[10] <= '9') {
		set_str(driver, len, "gasket");
		*whole = 1;
		return KX_DRV_GASKET;
	}
	return KX_DRV_UNKNOWN;
}

static enum kx_driver classify_blk(const struct procdevs *pd, unsigned int major, char *driver,
                                   size_t len)
{
	const char *name = procdevs_name(pd, 1, major);

	if (major == LOOP_MAJOR) {
		set_str(driver, len, "loop");
		return KX_DRV_LOOP;
	}
	set_str(driver, len, name ? name : "block");
	return KX_DRV_BLOCK;
}

/* Output buffer of entries. */
struct devbuf {
	struct kx_device *out;
	int n, max;
};

static struct kx_device *devbuf_add(struct devbuf *b)
{
	struct kx_device *d;

	if (b->n >= b->max)
		return NULL;
	d = &b->out[b->n++];
	memset(d, 0, sizeof(*d));
	return d;
}

static int devbuf_has(const struct devbuf *b, unsigned int fkind, unsigned int dev)
{
	for (int i = 0; i < b->n; i++)
		if (b->out[i].fkind == fkind && b->out[i].dev == dev)
			return 1;
	return 0;
}

static void add_entry(struct devbuf *b, unsigned int fkind, unsigned int dev, int any_minor,
                      enum kx_driver drv, const char *node, const char *driver)
{
	struct kx_device *d;

	if (devbuf_has(b, fkind, dev))
		return;
	d = devbuf_add(b);
	if (!d)
		return;
	d->fkind = fkind;
	d->dev = dev;
	d->any_minor = any_minor;
	d->drv = drv;
	set_str(d->node, sizeof(d->node), node);
	set_str(d->driver, sizeof(d->driver), driver);
}

/* Length of node without its trailing digits ("/dev/neuron12" -> "/dev/neuron"). */
static size_t node_stem(const char *node)
{
	size_t n = strlen(node);
	const char *slash = strrchr(node, '/');
	size_t base = slash ? (size_t)(slash - node) + 1 : 0;

	while (n > base && node[n - 1] >= '0' && node[n - 1] <= '9')
		n--;
	return n;
}

static void anon_node(unsigned int fkind, char *out, size_t len)
{
	switch (fkind) {
	case KX_FK_KVM_VM:
		set_str(out, len, "anon_inode:kvm-vm");
		break;
	case KX_FK_KVM_VCPU:
		set_str(out, len, "anon_inode:kvm-vcpu");
		break;
	case KX_FK_KVM_DEV:
		set_str(out, len, "anon_inode:kvm-device");
		break;
	case KX_FK_VFIO_DEV:
		set_str(out, len, "anon_inode:[vfio-device]");
		break;
	default:
		set_str(out, len, "anon_inode:?");
		break;
	}
}

static void add_anon(struct devbuf *b, unsigned int fkind)
{
	char node[64];
	int kvm = fkind != KX_FK_VFIO_DEV;

	anon_node(fkind, node, sizeof(node));
	add_entry(b, fkind, 0, 0, kvm ? KX_DRV_KVM : KX_DRV_VFIO, node, kvm ? "kvm" : "vfio");
}

static void add_kvm_anon(struct devbuf *b)
{
	add_anon(b, KX_FK_KVM_VM);
	add_anon(b, KX_FK_KVM_VCPU);
	add_anon(b, KX_FK_KVM_DEV);
}

/* Calls fn for every char and block node in node_dirs, in name order per directory. */
typedef void (*node_fn)(void *ctx, const char *node, int block, unsigned int major,
                        unsigned int minor);

static void visit_node(node_fn fn, void *ctx, const char *dir, const char *name)
{
	char node[64], host[4096];
	struct stat st;

	if (name[0] == '.')
		return;
	if ((size_t)snprintf(node, sizeof(node), "%s/%s", dir, name) >= sizeof(node))
		return;
	/* lstat: symlinks such as /dev/dri/by-path would only duplicate. */
	if (rpath(host, sizeof(host), "%s", node) || lstat(host, &st))
		return;
	if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))
		fn(ctx, node, S_ISBLK(st.st_mode), major(st.st_rdev), minor(st.st_rdev));
}

static void walk_nodes(node_fn fn, void *ctx)
{
	for (size_t i = 0; i < sizeof(node_dirs) / sizeof(node_dirs[0]); i++) {
		struct dirent **ents;
		char dir[4096];
		int n;

		if (rpath(dir, sizeof(dir), "%s", node_dirs[i]))
			continue;
		n = scandir(dir, &ents, NULL, versionsort);
		if (n < 0)
			continue;
		for (int j = 0; j < n; j++) {
			visit_node(fn, ctx, node_dirs[i], ents[j]->d_name);
			free(ents[j]);
		}
		free(ents);
	}
}

/*
 * Node of an exact device, or (minor < 0) of a whole major: "/dev/neuron*"
 * when its nodes are numbered alike, the node when it is the only one
 * ("/dev/kfd"), else "char MAJ:*"; "char MAJ:MIN" when no node exists.
 */
struct find_ctx {
	int block;
	unsigned int major;
	long minor;
	int count;
	int alike; /* every node so far is stem + digits, same stem */
	char node[64];
};

static void find_node(void *ctx, const char *node, int block, unsigned int major,
                      unsigned int minor)
{
	struct find_ctx *c = ctx;
	size_t stem = node_stem(node);

	if (block != c->block || major != c->major)
		return;
	if (c->minor >= 0 && minor != (unsigned long)c->minor)
		return;
	if (!c->count++) {
		set_str(c->node, sizeof(c->node), node);
		c->alike = stem < strlen(node);
		return;
	}
	if (stem == strlen(node) || stem != node_stem(c->node) || strncmp(node, c->node, stem))
		c->alike = 0;
}

static void node_of(int block, unsigned int major, long minor, char *out, size_t len)
{
	struct find_ctx c = {block, major, minor, 0, 0, ""};
	const char *kind = block ? "block" : "char";

	walk_nodes(find_node, &c);
	if (c.count && minor >= 0)
		set_str(out, len, c.node);
	else if (c.count && c.alike)
		snprintf(out, len, "%.*s*", (int)node_stem(c.node), c.node);
	else if (c.count == 1)
		set_str(out, len, c.node);
	else if (minor >= 0)
		snprintf(out, len, "%s %u:%ld", kind, major, minor);
	else
		snprintf(out, len, "%s %u:*", kind, major);
}

struct default_ctx {
	const struct procdevs *pd;
	struct devbuf *b;
	int kvm, vfio;
};

static void default_node(void *ctx, const char *node, int block, unsigned int major,
                         unsigned int minor)
{
	struct default_ctx *c = ctx;
	enum kx_driver drv;
	char driver[32], pat[64];
	int whole;

	if (block)
		return;
	drv = classify_chr(c->pd, major, minor, node, driver, sizeof(driver), &whole);
	/* Loop and unknown devices are only traced when named. */
	if (drv == KX_DRV_UNKNOWN || drv == KX_DRV_LOOP || drv == KX_DRV_BLOCK)
		return;
	if (drv == KX_DRV_KVM)
		c->kvm = 1;
	if (drv == KX_DRV_VFIO)
		c->vfio = 1;
	if (whole && !devbuf_has(c->b, KX_FK_CHR, KX_DEV_ANY_MINOR(major))) {
		node_of(0, major, -1, pat, sizeof(pat));
		add_entry(c->b, KX_FK_CHR, KX_DEV_ANY_MINOR(major), 1, drv, pat, driver);
	}
	/* Exact entries too, so labels name the node. */
	add_entry(c->b, KX_FK_CHR, KX_MKDEV(major, minor), 0, drv, node, driver);
}

int kx_devices_default(struct kx_device *out, int max)
{
	struct procdevs *pd = malloc(sizeof(*pd));
	struct devbuf b = {out, 0, max};
	struct default_ctx c = {pd, &b, 0, 0};
	char path[4096];
	struct stat st;

	if (!pd || max <= 0) {
		free(pd);
		return 0;
	}
	procdevs_load(pd);
	walk_nodes(default_node, &c);
	if (!rpath(path, sizeof(path), "/dev/vfio") && !stat(path, &st) && S_ISDIR(st.st_mode))
		c.vfio = 1;
	if (c.kvm)
		add_kvm_anon(&b);
	if (c.vfio)
		add_anon(&b, KX_FK_VFIO_DEV);
	free(pd);
	return b.n;
}

static int errf(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -1;
}

/* One char or block entry by numbers; minor < 0 means any minor. */
static int add_numeric(struct devbuf *b, const struct procdevs *pd, int block, unsigned int major,
                       long minor, char *err, size_t errlen)
{
	enum kx_driver drv;
	char driver[32], node[64];
	int whole = 0;

	if (!procdevs_name(pd, block, major))
		return errf(err, errlen, "no %s device major %u in /proc/devices",
		            block ? "block" : "char", major);
	node_of(block, major, minor, node, sizeof(node));
	if (block)
		drv = classify_blk(pd, major, driver, sizeof(driver));
	else if (minor >= 0)
		drv = classify_chr(pd, major, (unsigned int)minor, node, driver, sizeof(driver),
		                   &whole);
	else if (major == DRM_MAJOR || major == ACCEL_MAJOR) {
		/* Every minor: the bound driver may differ per node. */
		set_str(driver, sizeof(driver), major == DRM_MAJOR ? "drm" : "accel");
		drv = KX_DRV_DRM;
	} else {
		/* Minor 0 stands for the major: misc 10:0 is no known misc device. */
		drv = classify_chr(pd, major, 0, node, driver, sizeof(driver), &whole);
	}
	add_entry(b, block ? KX_FK_BLK : KX_FK_CHR,
	          minor < 0 ? KX_DEV_ANY_MINOR(major) : KX_MKDEV(major, (unsigned int)minor),
	          minor < 0, drv, node, driver);
	return 0;
}

/* A path: char or block from stat. */
static int add_path(struct devbuf *b, const struct procdevs *pd, const char *spec, char *err,
                    size_t errlen)
{
	char host[4096], driver[32];
	enum kx_driver drv;
	unsigned int ma, mi;
	struct stat st;
	int whole;

	if (strlen(spec) >= sizeof(b->out->node))
		return errf(err, errlen, "device path too long: %s", spec);
	if (rpath(host, sizeof(host), "%s", spec))
		return errf(err, errlen, "device path too long: %s", spec);
	if (stat(host, &st))
		return errf(err, errlen, "no such device: %s (%s)", spec, strerror(errno));
	if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
		return errf(err, errlen, "not a device node: %s", spec);
	ma = major(st.st_rdev);
	mi = minor(st.st_rdev);
	if (S_ISBLK(st.st_mode)) {
		drv = classify_blk(pd, ma, driver, sizeof(driver));
		add_entry(b, KX_FK_BLK, KX_MKDEV(ma, mi), 0, drv, spec, driver);
		return 0;
	}
	drv = classify_chr(pd, ma, mi, spec, driver, sizeof(driver), &whole);
	add_entry(b, KX_FK_CHR, KX_MKDEV(ma, mi), 0, drv, spec, driver);
	/* KVM work happens on VM and vCPU fds, never on /dev/kvm itself. */
	if (drv == KX_DRV_KVM)
		add_kvm_anon(b);
	if (drv == KX_DRV_VFIO)
		add_anon(b, KX_FK_VFIO_DEV);
	return 0;
}

struct drv_ctx {
	const struct procdevs *pd;
	struct devbuf *b;
	enum kx_driver drv;
};

static void drv_node(void *ctx, const char *node, int block, unsigned int major, unsigned int minor)
{
	struct drv_ctx *c = ctx;
	char driver[32], pat[64];
	enum kx_driver drv;
	int whole;

	if (block)
		return;
	drv = classify_chr(c->pd, major, minor, node, driver, sizeof(driver), &whole);
	if (drv != c->drv)
		return;
	if (whole && !devbuf_has(c->b, KX_FK_CHR, KX_DEV_ANY_MINOR(major))) {
		node_of(0, major, -1, pat, sizeof(pat));
		add_entry(c->b, KX_FK_CHR, KX_DEV_ANY_MINOR(major), 1, drv, pat, driver);
	}
	add_entry(c->b, KX_FK_CHR, KX_MKDEV(major, minor), 0, drv, node, driver);
}

/* A driver name: /proc/devices names first, then kernel driver names of present nodes. */
static int add_name(struct devbuf *b, const struct procdevs *pd, const char *spec, char *err,
                    size_t errlen)
{
	enum kx_driver drv;
	int found = 0;

	if (!strcmp(spec, "kvm"))
		return add_path(b, pd, "/dev/kvm", err, errlen);
	for (int i = 0; i < pd->n; i++) {
		const struct procdev *e = &pd->e[i];

		if (strcmp(e->name, spec))
			continue;
		if (add_numeric(b, pd, e->block, e->major, -1, err, errlen))
			return -1;
		found = 1;
	}
	if (found) {
		if (!strcmp(spec, "loop")) {
			char node[64];

			node_of(0, MISC_MAJOR, LOOP_CTRL_MINOR, node, sizeof(node));
			if (!strncmp(node, "char ", 5))
				set_str(node, sizeof(node), "/dev/loop-control");
			add_entry(b, KX_FK_CHR, KX_MKDEV(MISC_MAJOR, LOOP_CTRL_MINOR), 0,
			          KX_DRV_LOOP, node, "loop");
		}
		if (!strcmp(spec, "vfio")) {
			add_entry(b, KX_FK_CHR, KX_MKDEV(MISC_MAJOR, VFIO_MINOR), 0, KX_DRV_VFIO,
			          "/dev/vfio/vfio", "vfio");
			add_anon(b, KX_FK_VFIO_DEV);
		}
		return 0;
	}
	drv = kx_driver_from_name(spec);
	if (drv != KX_DRV_UNKNOWN) {
		struct drv_ctx c = {pd, b, drv};
		int before = b->n;

		walk_nodes(drv_node, &c);
		if (b->n > before)
			return 0;
		return errf(err, errlen, "no %s device found under /dev", spec);
	}
	return errf(err, errlen, "no driver named %s in /proc/devices", spec);
}

/* Parses "MAJ:MIN" or "MAJ:*"; minor -1 for any. 0 when it is one. */
static int parse_majmin(const char *s, unsigned int *major, long *minor)
{
	unsigned long ma, mi;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	ma = strtoul(s, &end, 10);
	if (errno || *end != ':' || ma > MAX_MAJOR)
		return -1;
	s = end + 1;
	if (!strcmp(s, "*")) {
		*major = ma;
		*minor = -1;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	mi = strtoul(s, &end, 10);
	/* The all-ones minor is the filter's any-minor marker. */
	if (errno || *end || mi >= KX_MINORMASK)
		return -1;
	*major = ma;
	*minor = (long)mi;
	return 0;
}

int kx_device_resolve(const char *spec, struct kx_device *out, int max, char *err, size_t errlen)
{
	struct devbuf b = {out, 0, max};
	struct procdevs *pd;
	unsigned int major;
	long minor;
	int ret;

	if (err && errlen)
		err[0] = '\0';
	if (!spec || !*spec)
		return errf(err, errlen, "empty device spec");
	if (max <= 0)
		return errf(err, errlen, "no room for device %s", spec);
	pd = malloc(sizeof(*pd));
	if (!pd)
		return errf(err, errlen, "out of memory resolving device %s", spec);
	procdevs_load(pd);
	if (spec[0] == '/' || spec[0] == '.')
		ret = add_path(&b, pd, spec, err, errlen);
	else if (!parse_majmin(spec, &major, &minor))
		ret = add_numeric(&b, pd, 0, major, minor, err, errlen);
	else if (!strncmp(spec, "block:", 6) && !parse_majmin(spec + 6, &major, &minor))
		ret = add_numeric(&b, pd, 1, major, minor, err, errlen);
	else if ((spec[0] >= '0' && spec[0] <= '9') || !strncmp(spec, "block:", 6) ||
	         strpbrk(spec, ": \t/"))
		ret = errf(err, errlen,
		           "bad device spec: %s (expected a path, MAJOR:MINOR, MAJOR:*, "
		           "block:MAJOR:MINOR or a driver name)",
		           spec);
	else
		ret = add_name(&b, pd, spec, err, errlen);
	free(pd);
	if (ret)
		return -1;
	return b.n;
}

static int anon_kind(unsigned int fkind)
{
	return fkind == KX_FK_KVM_VM || fkind == KX_FK_KVM_VCPU || fkind == KX_FK_VFIO_DEV ||
	       fkind == KX_FK_KVM_DEV;
}

const struct kx_device *kx_device_find(const struct kx_device *devs, int n, unsigned int fkind,
                                       unsigned int dev)
{
	for (int i = 0; i < n; i++) {
		if (devs[i].fkind != fkind)
			continue;
		if (anon_kind(fkind) || (!devs[i].any_minor && devs[i].dev == dev))
			return &devs[i];
	}
	for (int i = 0; i < n; i++)
		if (devs[i].fkind == fkind && devs[i].any_minor &&
		    KX_MAJOR(devs[i].dev) == KX_MAJOR(dev))
			return &devs[i];
	return NULL;
}

const char *kx_device_label(const struct kx_device *devs, int n, unsigned int fkind,
                            unsigned int dev, char *buf, size_t len)
{
	const struct kx_device *d = kx_device_find(devs, n, fkind, dev);
	const char *kind = fkind == KX_FK_BLK ? "block" : "char";

	if (!len)
		return buf;
	if (anon_kind(fkind)) {
		if (d && d->node[0])
			set_str(buf, len, d->node);
		else
			anon_node(fkind, buf, len);
	} else if (fkind != KX_FK_CHR && fkind != KX_FK_BLK) {
		set_str(buf, len, "file");
	} else if (d && !d->any_minor && d->node[0]) {
		set_str(buf, len, d->node);
	} else if (d && d->driver[0]) {
		/* Any-minor entry: the node of this minor is not known here. */
		snprintf(buf, len, "%s %u:%u (%s)", kind, KX_MAJOR(dev), KX_MINOR(dev), d->driver);
	} else {
		snprintf(buf, len, "%s %u:%u", kind, KX_MAJOR(dev), KX_MINOR(dev));
	}
	return buf;
}

/* ---- block disks: the whole disk of a partition, and disk names ---- */

uint32_t kx_block_disk_of(uint32_t dev)
{
	char path[160], buf[32];
	unsigned int ma, mi;
	FILE *f;

	if (rpath(path, sizeof(path), "/sys/dev/block/%u:%u/partition", KX_MAJOR(dev),
	          KX_MINOR(dev)) ||
	    access(path, F_OK) != 0)
		return dev;
	if (rpath(path, sizeof(path), "/sys/dev/block/%u:%u/../dev", KX_MAJOR(dev), KX_MINOR(dev)))
		return dev;
	f = fopen(path, "r");
	if (!f)
		return dev;
	if (fgets(buf, sizeof(buf), f) && sscanf(buf, "%u:%u", &ma, &mi) == 2)
		dev = KX_MKDEV(ma, mi);
	fclose(f);
	return dev;
}

/*
 * Names by dev_t, kept for the process's life: one sysfs read per disk, not
 * per record. Misses are kept too (a record's disk may be gone); a capture
 * start reads its device set afresh. Full: the oldest entry is replaced.
 */
#define DISK_CACHE_MAX 256

struct disk_name {
	uint32_t dev;
	char name[KX_DISK_NAME_LEN]; /* "" when sysfs did not know the disk */
};

static pthread_mutex_t disk_lock = PTHREAD_MUTEX_INITIALIZER;
static struct disk_name disk_cache[DISK_CACHE_MAX];
static size_t disk_n, disk_next; /* entries in use; next to replace once full */

/* The kernel's name of a disk: the last component of /sys/dev/block/MA:MI's target. */
static void disk_read(uint32_t dev, char *name, size_t len)
{
	char path[160], link[256];
	const char *base;
	ssize_t n;

	name[0] = 0;
	if (rpath(path, sizeof(path), "/sys/dev/block/%u:%u", KX_MAJOR(dev), KX_MINOR(dev)))
		return;
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	base = strrchr(link, '/');
	set_str(name, len, base ? base + 1 : link);
}

/* The cache entry of dev, made (and read from sysfs) when new or when fresh is set. */
static const struct disk_name *disk_entry(uint32_t dev, int fresh)
{
	struct disk_name *e = NULL;

	for (size_t i = 0; i < disk_n; i++)
		if (disk_cache[i].dev == dev)
			e = &disk_cache[i];
	if (e && !fresh)
		return e;
	if (!e) {
		if (disk_n < DISK_CACHE_MAX) {
			e = &disk_cache[disk_n++];
		} else {
			e = &disk_cache[disk_next];
			disk_next = (disk_next + 1) % DISK_CACHE_MAX;
		}
		e->dev = dev;
	}
	disk_read(dev, e->name, sizeof(e->name));
	return e;
}

const char *kx_block_disk_name(uint32_t dev, char *buf, size_t len)
{
	if (!len)
		return buf;
	pthread_mutex_lock(&disk_lock);
	set_str(buf, len, disk_entry(dev, 0)->name);
	pthread_mutex_unlock(&disk_lock);
	return buf;
}

/* Every disk of a major present now (a whole-major entry such as "loop"). */
static void note_major(unsigned int major)
{
	char path[160];
	struct dirent *de;
	unsigned int ma, mi;
	DIR *d;

	if (rpath(path, sizeof(path), "/sys/dev/block"))
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) != NULL)
		if (sscanf(de->d_name, "%u:%u", &ma, &mi) == 2 && ma == major &&
		    kx_block_disk_of(KX_MKDEV(ma, mi)) == KX_MKDEV(ma, mi))
			disk_entry(KX_MKDEV(ma, mi), 1);
	closedir(d);
}

void kx_block_disks_note(const struct kx_device *devs, int n)
{
	pthread_mutex_lock(&disk_lock);
	for (int i = 0; i < n; i++) {
		if (devs[i].fkind != KX_FK_BLK)
			continue;
		if (devs[i].any_minor)
			note_major(KX_MAJOR(devs[i].dev));
		else
			disk_entry(kx_block_disk_of(devs[i].dev), 1);
	}
	pthread_mutex_unlock(&disk_lock);
}
