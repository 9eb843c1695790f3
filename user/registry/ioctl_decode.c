/*
 * Ioctl naming and argument decoding (contract in ioctl_decode.h): driver
 * names, command names looked up in the generated tables (ioctl_table.c),
 * errno names, and the argument copy requests with their field decoders.
 * Struct layouts come from the uapi headers named in the ioctl spec
 * (scripts/ioctl-tables/ioctls.md); each one is consistent with the size
 * the spec gives for its command.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "kxprof.h"
#include "registry/ioctl_decode.h"
#include "registry/ioctl_table.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* _IOC fields (asm-generic/ioctl.h, as used by x86_64). */
#define IOC_NR(c)         ((c)&0xffU)
#define IOC_TYPE(c)       (((c) >> 8) & 0xffU)
#define IOC_SIZE(c)       (((c) >> 16) & 0x3fffU)
#define IOC_DIR(c)        (((c) >> 30) & 3U)
#define IOC(d, t, nr, sz) ((uint32_t)(d) << 30 | (uint32_t)(sz) << 16 | (uint32_t)(t) << 8 | (nr))
#define IOC_WR            3U

#define DRM_TYPE    0x64 /* 'd', DRM and accel */
#define NV_TYPE     0x46 /* 'F', NVIDIA frontend */
#define NV_ESC_XFER 0xd3 /* NV_ESC_IOCTL_XFER_CMD */

/* ---- drivers ---- */

static const char *const drv_names[KX_DRV_MAX] = {
        [KX_DRV_UNKNOWN] = "unknown",
        [KX_DRV_DRM] = "drm",
        [KX_DRV_AMDGPU] = "amdgpu",
        [KX_DRV_I915] = "i915",
        [KX_DRV_XE] = "xe",
        [KX_DRV_NOUVEAU] = "nouveau",
        [KX_DRV_MSM] = "msm",
        [KX_DRV_PANFROST] = "panfrost",
        [KX_DRV_PANTHOR] = "panthor",
        [KX_DRV_V3D] = "v3d",
        [KX_DRV_ETNAVIV] = "etnaviv",
        [KX_DRV_LIMA] = "lima",
        [KX_DRV_HABANALABS] = "habanalabs",
        [KX_DRV_IVPU] = "ivpu",
        [KX_DRV_QAIC] = "qaic",
        [KX_DRV_AMDXDNA] = "amdxdna",
        [KX_DRV_ROCKET] = "rocket",
        [KX_DRV_ETHOSU] = "ethosu",
        [KX_DRV_KFD] = "kfd",
        [KX_DRV_NVIDIA] = "nvidia",
        [KX_DRV_NVIDIA_UVM] = "nvidia-uvm",
        [KX_DRV_NVIDIA_MODESET] = "nvidia-modeset",
        [KX_DRV_NEURON] = "neuron",
        [KX_DRV_TENSTORRENT] = "tenstorrent",
        [KX_DRV_GASKET] = "gasket",
        [KX_DRV_VFIO] = "vfio",
        [KX_DRV_KVM] = "kvm",
        [KX_DRV_LOOP] = "loop",
        [KX_DRV_BLOCK] = "block",
};

/* Kernel names (driver->name, chrdev region names) that differ from ours. */
static const struct {
	const char *name;
	enum kx_driver drv;
} drv_aliases[] = {
        {"intel_vpu", KX_DRV_IVPU},        {"amdkfd", KX_DRV_KFD},
        {"nvidia_uvm", KX_DRV_NVIDIA_UVM}, {"nvidia_modeset", KX_DRV_NVIDIA_MODESET},
        {"vfio-pci", KX_DRV_VFIO},
};

const char *kx_driver_name(enum kx_driver drv)
{
	if ((unsigned int)drv >= KX_DRV_MAX || !drv_names[drv])
		return "unknown";
	return drv_names[drv];
}

enum kx_driver kx_driver_from_name(const char *name)
{
	size_t i;

	if (!name)
		return KX_DRV_UNKNOWN;
	for (i = 0; i < KX_DRV_MAX; i++)
		if (drv_names[i] && strcmp(drv_names[i], name) == 0)
			return (enum kx_driver)i;
	for (i = 0; i < ARRAY_SIZE(drv_aliases); i++)
		if (strcmp(drv_aliases[i].name, name) == 0)
			return drv_aliases[i].drv;
	return KX_DRV_UNKNOWN;
}

/* DRM and accel drivers share drm_ioctl: core nrs plus a private range. */
static int drm_family(enum kx_driver drv)
{
	return drv >= KX_DRV_DRM && drv <= KX_DRV_ETHOSU;
}

static int drm_driver_nr(uint32_t nr)
{
	return nr >= 0x40 && nr < 0xa0; /* DRM_COMMAND_BASE..DRM_COMMAND_END */
}

int kx_driver_by_nr(enum kx_driver drv)
{
	return drm_family(drv) || drv == KX_DRV_KFD || drv == KX_DRV_NVIDIA;
}

/* ---- names ---- */

const char *kx_ioc_format(uint32_t cmd, char *buf, size_t len)
{
	static const char *const dirs[4] = {"_IO", "_IOW", "_IOR", "_IOWR"};
	unsigned int t = IOC_TYPE(cmd);

	if (!buf || !len)
		return buf;
	if (t > ' ' && t < 0x7f && t != '\'' && t != '\\')
		snprintf(buf, len, "%s('%c',0x%02x,%u)", dirs[IOC_DIR(cmd)], t, IOC_NR(cmd),
		         IOC_SIZE(cmd));
	else
		snprintf(buf, len, "%s(0x%02x,0x%02x,%u)", dirs[IOC_DIR(cmd)], t, IOC_NR(cmd),
		         IOC_SIZE(cmd));
	return buf;
}

/* An _IO command never has a size: such a number is not _IOC-encoded. */
static int ioc_plausible(uint32_t cmd)
{
	return IOC_DIR(cmd) != 0 || IOC_SIZE(cmd) == 0;
}

static uint32_t tab_key(const struct kx_ioctl_tab *t, uint32_t cmd)
{
	return t->keying == KX_TAB_NR ? cmd & 0xffffU : cmd;
}

/* First row whose key is >= key. */
static size_t tab_lower(const struct kx_ioctl_tab *t, uint32_t key)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->ents[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * How far a same-nr row is from cmd: a dir mismatch outweighs any size
 * difference, so i915's EXECBUFFER2 (IOW) and EXECBUFFER2_WR (IOWR) split by
 * dir, MMAP_GTT (16) and MMAP_OFFSET (32) by nearest size.
 */
static unsigned int variant_dist(const struct kx_ioctl_ent *e, uint32_t cmd)
{
	unsigned int d = IOC_DIR(e->cmd) != IOC_DIR(cmd) ? 0x10000U : 0;
	unsigned int a = IOC_SIZE(e->cmd), b = IOC_SIZE(cmd);

	if (!(e->flags & KX_ENT_NOSIZE))
		d += a > b ? a - b : b - a;
	return d;
}

/* Full-cmd tables: match (type, nr) alone when all such rows agree on a name. */
static const char *tab_nr_fallback(const struct kx_ioctl_tab *t, uint32_t cmd)
{
	const char *name = NULL;
	size_t i;

	for (i = 0; i < t->n; i++) {
		if ((t->ents[i].cmd & 0xffffU) != (cmd & 0xffffU))
			continue;
		if (name && strcmp(name, t->ents[i].name) != 0)
			return NULL;
		name = t->ents[i].name;
	}
	return name;
}

static const char *tab_lookup(const struct kx_ioctl_tab *t, uint32_t cmd)
{
	uint32_t key;
	size_t i, best = SIZE_MAX;
	unsigned int best_dist = UINT_MAX;

	if (!t)
		return NULL;
	key = tab_key(t, cmd);
	for (i = tab_lower(t, key); i < t->n && t->ents[i].key == key; i++) {
		unsigned int d;

		/* Shadowed rows sort after the row that names their cmd. */
		if (t->ents[i].cmd == cmd)
			return t->ents[i].name;
		d = variant_dist(&t->ents[i], cmd);
		if (d < best_dist) {
			best_dist = d;
			best = i;
		}
	}
	if (best != SIZE_MAX)
		return t->ents[best].name;
	if (t->keying == KX_TAB_CMD)
		return tab_nr_fallback(t, cmd);
	return NULL;
}

/* The table that names cmd on drv, following drm_ioctl's core/driver split. */
static const struct kx_ioctl_tab *name_tab(enum kx_driver drv, uint32_t cmd)
{
	if (drm_family(drv) && IOC_TYPE(cmd) == DRM_TYPE) {
		if (!drm_driver_nr(IOC_NR(cmd)))
			return kx_ioctl_tab_by_drv[KX_DRV_DRM];
		/* A private nr means nothing without the driver. */
		if (drv == KX_DRV_DRM)
			return NULL;
	}
	return kx_ioctl_tab_by_drv[drv];
}

/* Rows in spec order within a key: the first row with the name gives its cmd. */
static int tab_find_name(const struct kx_ioctl_tab *t, const char *name, uint32_t *cmd)
{
	for (size_t i = 0; t && i < t->n; i++) {
		if (!strcmp(t->ents[i].name, name)) {
			*cmd = t->ents[i].cmd;
			return 0;
		}
	}
	return -1;
}

int kx_ioctl_cmd_by_name(enum kx_driver drv, const char *name, uint32_t *cmd)
{
	if ((unsigned int)drv < KX_DRV_MAX && !tab_find_name(kx_ioctl_tab_by_drv[drv], name, cmd))
		return 0;
	return tab_find_name(kx_ioctl_tab_by_drv[KX_DRV_DRM], name, cmd);
}

static int nv_is_xfer(enum kx_driver drv, uint32_t cmd)
{
	return drv == KX_DRV_NVIDIA && (cmd & 0xffffU) == (NV_TYPE << 8 | NV_ESC_XFER);
}

const char *kx_ioctl_name(enum kx_driver drv, uint32_t cmd, uint32_t xfer_cmd, char *buf,
                          size_t len)
{
	const char *name;
	int xfer;

	if ((unsigned int)drv >= KX_DRV_MAX)
		drv = KX_DRV_UNKNOWN;
	xfer = nv_is_xfer(drv, cmd) && xfer_cmd;
	if (xfer)
		/* Named by the wrapped escape, an nr of the same table. */
		name = xfer_cmd <= 0xff ? tab_lookup(kx_ioctl_tab_by_drv[KX_DRV_NVIDIA],
		                                     IOC(IOC_WR, NV_TYPE, xfer_cmd, 0))
		                        : NULL;
	else
		name = tab_lookup(name_tab(drv, cmd), cmd);
	/* Loop devices are block devices too. */
	if (!name && drv == KX_DRV_LOOP)
		name = tab_lookup(kx_ioctl_tab_by_drv[KX_DRV_BLOCK], cmd);
	if (name)
		return name;
	/* No room for even one character: still never NULL or empty. */
	if (!buf || len < 2)
		return "?";
	if (xfer)
		snprintf(buf, len, "NV_ESC_IOCTL_XFER_CMD(0x%x)", xfer_cmd);
	else if (drv == KX_DRV_NVIDIA_UVM || !ioc_plausible(cmd))
		snprintf(buf, len, "0x%x", cmd);
	else
		kx_ioc_format(cmd, buf, len);
	return buf;
}

/* ---- errno ---- */

#define E(x) [x] = #x
static const char *const errno_names[] = {
        E(EPERM),
        E(ENOENT),
        E(ESRCH),
        E(EINTR),
        E(EIO),
        E(ENXIO),
        E(E2BIG),
        E(ENOEXEC),
        E(EBADF),
        E(ECHILD),
        E(EAGAIN),
        E(ENOMEM),
        E(EACCES),
        E(EFAULT),
        E(ENOTBLK),
        E(EBUSY),
        E(EEXIST),
        E(EXDEV),
        E(ENODEV),
        E(ENOTDIR),
        E(EISDIR),
        E(EINVAL),
        E(ENFILE),
        E(EMFILE),
        E(ENOTTY),
        E(ETXTBSY),
        E(EFBIG),
        E(ENOSPC),
        E(ESPIPE),
        E(EROFS),
        E(EMLINK),
        E(EPIPE),
        E(EDOM),
        E(ERANGE),
        E(EDEADLK),
        E(ENAMETOOLONG),
        E(ENOLCK),
        E(ENOSYS),
        E(ENOTEMPTY),
        E(ELOOP),
        E(ENOMSG),
        E(EIDRM),
        E(ECHRNG),
        E(EL2NSYNC),
        E(EL3HLT),
        E(EL3RST),
        E(ELNRNG),
        E(EUNATCH),
        E(ENOCSI),
        E(EL2HLT),
        E(EBADE),
        E(EBADR),
        E(EXFULL),
        E(ENOANO),
        E(EBADRQC),
        E(EBADSLT),
        E(EBFONT),
        E(ENOSTR),
        E(ENODATA),
        E(ETIME),
        E(ENOSR),
        E(ENONET),
        E(ENOPKG),
        E(EREMOTE),
        E(ENOLINK),
        E(EADV),
        E(ESRMNT),
        E(ECOMM),
        E(EPROTO),
        E(EMULTIHOP),
        E(EDOTDOT),
        E(EBADMSG),
        E(EOVERFLOW),
        E(ENOTUNIQ),
        E(EBADFD),
        E(EREMCHG),
        E(ELIBACC),
        E(ELIBBAD),
        E(ELIBSCN),
        E(ELIBMAX),
        E(ELIBEXEC),
        E(EILSEQ),
        E(ERESTART),
        E(ESTRPIPE),
        E(EUSERS),
        E(ENOTSOCK),
        E(EDESTADDRREQ),
        E(EMSGSIZE),
        E(EPROTOTYPE),
        E(ENOPROTOOPT),
        E(EPROTONOSUPPORT),
        E(ESOCKTNOSUPPORT),
        E(EOPNOTSUPP),
        E(EPFNOSUPPORT),
        E(EAFNOSUPPORT),
        E(EADDRINUSE),
        E(EADDRNOTAVAIL),
        E(ENETDOWN),
        E(ENETUNREACH),
        E(ENETRESET),
        E(ECONNABORTED),
        E(ECONNRESET),
        E(ENOBUFS),
        E(EISCONN),
        E(ENOTCONN),
        E(ESHUTDOWN),
        E(ETOOMANYREFS),
        E(ETIMEDOUT),
        E(ECONNREFUSED),
        E(EHOSTDOWN),
        E(EHOSTUNREACH),
        E(EALREADY),
        E(EINPROGRESS),
        E(ESTALE),
        E(EUCLEAN),
        E(ENOTNAM),
        E(ENAVAIL),
        E(EISNAM),
        E(EREMOTEIO),
        E(EDQUOT),
        E(ENOMEDIUM),
        E(EMEDIUMTYPE),
        E(ECANCELED),
        E(ENOKEY),
        E(EKEYEXPIRED),
        E(EKEYREVOKED),
        E(EKEYREJECTED),
        E(EOWNERDEAD),
        E(ENOTRECOVERABLE),
        E(ERFKILL),
        E(EHWPOISON),
};
#undef E

/*
 * Kernel-internal codes (include/linux/errno.h, from 512). The syscall exit
 * tracepoint sees them before signal handling rewrites them, e.g. a KVM_RUN
 * interrupted by a signal returns -ERESTARTSYS there.
 */
static const char *const errno_kernel_names[] = {
        "ERESTARTSYS",
        "ERESTARTNOINTR",
        "ERESTARTNOHAND",
        "ENOIOCTLCMD",
        "ERESTART_RESTARTBLOCK",
        "EPROBE_DEFER",
        "EOPENSTALE",
        "ENOPARAM",
        NULL,
        "EBADHANDLE",
        "ENOTSYNC",
        "EBADCOOKIE",
        "ENOTSUPP",
        "ETOOSMALL",
        "ESERVERFAULT",
        "EBADTYPE",
        "EJUKEBOX",
        "EIOCBQUEUED",
        "ERECALLCONFLICT",
        "ENOGRACE",
};
#define ERRNO_KERNEL_BASE 512

const char *kx_errno_name(int64_t ret)
{
	uint64_t e;

	if (ret >= 0)
		return NULL;
	e = (uint64_t) - (ret + 1) + 1; /* no overflow for INT64_MIN */
	if (e < ARRAY_SIZE(errno_names))
		return errno_names[e];
	if (e >= ERRNO_KERNEL_BASE && e - ERRNO_KERNEL_BASE < ARRAY_SIZE(errno_kernel_names))
		return errno_kernel_names[e - ERRNO_KERNEL_BASE];
	return NULL;
}

/* ---- argument decoders ---- */

enum { SRC_IN, SRC_OUT };

/* A fixed field: little-endian, 4 or 8 bytes at off of the in or out copy. */
struct fdesc {
	const char *name;
	uint8_t kind; /* enum kx_field_kind, not STR */
	uint8_t src;
	uint8_t off;
	uint8_t width;
};

struct dctx {
	const uint8_t *buf[2];
	size_t len[2];
	uint32_t size; /* _IOC_SIZE of the call, 0 when not known */
	struct kx_field *out;
	int n, max;
};

struct dec {
	enum kx_driver drv; /* KX_DRV_DRM in core_decs: every DRM driver */
	uint32_t key;       /* as in struct kx_arg_req */
	uint16_t len;
	uint16_t flags;
	const struct fdesc *f;
	size_t nf;
	void (*extra)(struct dctx *c);      /* value- or size-dependent fields */
	const struct kx_arg_follow *follow; /* with KX_ARGF_FOLLOW */
};

#define IN(n, k, o, w)                                                                             \
	{                                                                                          \
		n, KX_FIELD_##k, SRC_IN, o, w                                                      \
	}
#define OUT(n, k, o, w)                                                                            \
	{                                                                                          \
		n, KX_FIELD_##k, SRC_OUT, o, w                                                     \
	}
#define IO (KX_ARGF_IN | KX_ARGF_OUT)
/* Requests keyed by nr (kx_driver_by_nr) or by the full cmd. */
#define DEC_NR(d, cmd, len, fl, f, x)                                                              \
	{                                                                                          \
		d, KX_ARG_BY_NR_KEY(cmd), len, fl, f, ARRAY_SIZE(f), x, NULL                       \
	}
#define DEC_FOLLOW(d, cmd, len, fl, f, x, fw)                                                      \
	{                                                                                          \
		d, KX_ARG_BY_NR_KEY(cmd), len, (fl) | KX_ARGF_FOLLOW, f, ARRAY_SIZE(f), x, fw      \
	}
#define DEC_CMD(d, cmd, len, fl, f, x)                                                             \
	{                                                                                          \
		d, cmd, len, fl, f, ARRAY_SIZE(f), x, NULL                                         \
	}

static uint64_t read_le(const uint8_t *p, unsigned int width)
{
	uint64_t v = 0;

	while (width--)
		v = v << 8 | p[width];
	return v;
}

static void put(struct dctx *c, const char *name, unsigned int kind, unsigned int src,
                unsigned int off, unsigned int width)
{
	struct kx_field *f;
	uint64_t v;

	/* Short copies decode what they cover. */
	if (c->n >= c->max || !c->buf[src] || off + width > c->len[src])
		return;
	v = read_le(c->buf[src] + off, width);
	f = &c->out[c->n++];
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->kind = (enum kx_field_kind)kind;
	if (kind == KX_FIELD_I64) {
		f->i = width == 4 ? (int64_t)(int32_t)v : (int64_t)v;
		f->u = (uint64_t)f->i;
	} else {
		f->u = v;
	}
}

/* The value of a fixed field, if covered. */
static int peek(const struct dctx *c, unsigned int src, unsigned int off, unsigned int width,
                uint64_t *v)
{
	if (!c->buf[src] || off + width > c->len[src])
		return 0;
	*v = read_le(c->buf[src] + off, width);
	return 1;
}

/* DRM core (drm.h), decoded for every DRM and accel driver. */
static const struct fdesc f_drm_version[] = {
        /* struct drm_version, 64 B */
        OUT("version_major", I64, 0, 4),
        OUT("version_minor", I64, 4, 4),
        OUT("version_patchlevel", I64, 8, 4),
        OUT("name_len", U64, 16, 8),
};
static const struct fdesc f_drm_gem_close[] = {
        /* {u32 handle, pad}, 8 B */
        IN("handle", U64, 0, 4),
};
static const struct fdesc f_drm_create_dumb[] = {
        /* drm_mode_create_dumb, 32 B */
        IN("height", U64, 0, 4),   IN("width", U64, 4, 4),   IN("bpp", U64, 8, 4),
        OUT("handle", U64, 16, 4), OUT("pitch", U64, 20, 4), OUT("size", U64, 24, 8),
};
static const struct fdesc f_drm_destroy_dumb[] = {
        /* {u32 handle}, 4 B */
        IN("handle", U64, 0, 4),
};
static const struct fdesc f_drm_syncobj_wait[] = {
        /*
         * {u64 handles, s64 timeout_nsec, u32 count_handles, flags,
         * first_signaled, pad, u64 deadline_nsec}, 40 B
         */
        IN("count_handles", U64, 16, 4),
        IN("timeout_nsec", I64, 8, 8),
        IN("flags", HEX, 20, 4),
        OUT("first_signaled", U64, 24, 4),
};
static const struct fdesc f_drm_syncobj_timeline_wait[] = {
        /*
         * {u64 handles, points, s64 timeout_nsec, u32 count_handles, flags,
         * first_signaled, pad, u64 deadline_nsec}, 48 B
         */
        IN("count_handles", U64, 24, 4),
        IN("timeout_nsec", I64, 16, 8),
        IN("flags", HEX, 28, 4),
        OUT("first_signaled", U64, 32, 4),
};

/* Sorted by key. */
static const struct dec core_decs[] = {
        DEC_NR(KX_DRV_DRM, 0xc0406400, 24, KX_ARGF_OUT, f_drm_version, NULL),
        DEC_NR(KX_DRV_DRM, 0x40086409, 8, KX_ARGF_IN, f_drm_gem_close, NULL),
        DEC_NR(KX_DRV_DRM, 0xc02064b2, 32, IO, f_drm_create_dumb, NULL),
        DEC_NR(KX_DRV_DRM, 0xc00464b4, 4, KX_ARGF_IN, f_drm_destroy_dumb, NULL),
        DEC_NR(KX_DRV_DRM, 0xc02864c3, 28, IO, f_drm_syncobj_wait, NULL),
        DEC_NR(KX_DRV_DRM, 0xc03064ca, 36, IO, f_drm_syncobj_timeline_wait, NULL),
};

/* amdgpu_drm.h */
static const struct fdesc f_amdgpu_gem_create[] = {
        /* in {u64 bo_size, alignment, domains, domain_flags}; out {u32 handle} */
        IN("size", U64, 0, 8),          IN("alignment", U64, 8, 8), IN("domains", HEX, 16, 8),
        IN("domain_flags", HEX, 24, 8), OUT("handle", U64, 0, 4),
};
static const struct fdesc f_amdgpu_cs[] = {
        /* in {u32 ctx_id, bo_list_handle, num_chunks, flags, u64 chunks}; out {u64 handle} */
        IN("ctx_id", U64, 0, 4), IN("bo_list_handle", U64, 4, 4), IN("num_chunks", U64, 8, 4),
        OUT("seqno", U64, 0, 8), /* the fence sequence number of the submission */
};
static const struct fdesc f_amdgpu_gem_va[] = {
        /*
         * {u32 handle, pad, operation, flags, u64 va_address, offset_in_bo,
         * map_size, ...}: 40 B before ~6.16, 64 B now; the head is the same
         */
        IN("handle", U64, 0, 4),      IN("operation", U64, 8, 4),     IN("flags", HEX, 12, 4),
        IN("va_address", HEX, 16, 8), IN("offset_in_bo", HEX, 24, 8), IN("map_size", U64, 32, 8),
};

/* i915_drm.h */
static const struct fdesc f_i915_gem_create[] = {
        /* {u64 size, u32 handle, pad} */
        IN("size", U64, 0, 8),
        OUT("handle", U64, 8, 4),
};
static const struct fdesc f_i915_gem_create_ext[] = {
        /* {u64 size, u32 handle, flags, u64 ext} */
        IN("size", U64, 0, 8),
        IN("flags", HEX, 12, 4),
        OUT("handle", U64, 8, 4),
};

/* xe_drm.h: {u64 extensions, size, u32 placement, flags, vm_id, handle, ...}, 56 B */
static const struct fdesc f_xe_gem_create[] = {
        IN("size", U64, 8, 8),   IN("placement", HEX, 16, 4), IN("flags", HEX, 20, 4),
        IN("vm_id", U64, 24, 4), OUT("handle", U64, 28, 4),
};

/*
 * nouveau_drm.h: gem_new = {gem_info {u32 handle, domain, u64 size, offset,
 * map_handle, u32 tile_mode, tile_flags}, u32 channel_hint, align}, 48 B
 */
static const struct fdesc f_nouveau_gem_new[] = {
        IN("size", U64, 8, 8),     IN("domain", HEX, 4, 4),       OUT("handle", U64, 0, 4),
        OUT("offset", HEX, 16, 8), OUT("map_handle", HEX, 24, 8),
};

/* msm and etnaviv gem_new: {u64 size, u32 flags, handle}, 16 B */
static const struct fdesc f_u64size_flags_handle[] = {
        IN("size", U64, 0, 8),
        IN("flags", HEX, 8, 4),
        OUT("handle", U64, 12, 4),
};

/* panfrost create_bo: {u32 size, flags, handle, pad, u64 offset}, 24 B */
static const struct fdesc f_panfrost_create_bo[] = {
        IN("size", U64, 0, 4),
        IN("flags", HEX, 4, 4),
        OUT("handle", U64, 8, 4),
        OUT("offset", HEX, 16, 8),
};

/* panthor bo_create: {u64 size, u32 flags, exclusive_vm_id, handle, pad}, 24 B */
static const struct fdesc f_panthor_bo_create[] = {
        IN("size", U64, 0, 8),
        IN("flags", HEX, 8, 4),
        IN("exclusive_vm_id", U64, 12, 4),
        OUT("handle", U64, 16, 4),
};

/* v3d create_bo: {u32 size, flags, handle, offset}, 16 B */
static const struct fdesc f_v3d_create_bo[] = {
        IN("size", U64, 0, 4),
        IN("flags", HEX, 4, 4),
        OUT("handle", U64, 8, 4),
        OUT("offset", HEX, 12, 4),
};

/* lima gem_create: {u32 size, flags, handle, pad}, 16 B */
static const struct fdesc f_lima_gem_create[] = {
        IN("size", U64, 0, 4),
        IN("flags", HEX, 4, 4),
        OUT("handle", U64, 8, 4),
};

/* habanalabs hl_mem_args: in {union (24 B), u32 op, flags, ctx_id, n}; out {union u64}, 40 B */
static const struct fdesc f_hl_memory[] = {
        IN("op", U64, 24, 4),
};

static void hl_memory_extra(struct dctx *c)
{
	uint64_t op;

	if (!peek(c, SRC_IN, 24, 4, &op))
		return;
	if (op == 0) { /* HL_MEM_OP_ALLOC: in.alloc.mem_size, out.handle */
		put(c, "size", KX_FIELD_U64, SRC_IN, 0, 8);
		put(c, "handle", KX_FIELD_HEX, SRC_OUT, 0, 8);
	} else if (op == 1) { /* HL_MEM_OP_FREE: in.free.handle */
		put(c, "handle", KX_FIELD_HEX, SRC_IN, 0, 8);
	}
}

/* ivpu bo_create: {u64 size, u32 flags, handle, u64 vpu_addr}, 24 B */
static const struct fdesc f_ivpu_bo_create[] = {
        IN("size", U64, 0, 8),
        IN("flags", HEX, 8, 4),
        OUT("handle", U64, 12, 4),
        OUT("vpu_addr", HEX, 16, 8),
};

/* qaic create_bo: {u64 size, u32 handle, pad}, 16 B */
static const struct fdesc f_qaic_create_bo[] = {
        IN("size", U64, 0, 8),
        OUT("handle", U64, 8, 4),
};

/* amdxdna create_bo: {u64 flags, vaddr, size, u32 type, handle}, 32 B */
static const struct fdesc f_amdxdna_create_bo[] = {
        IN("size", U64, 16, 8), IN("type", U64, 24, 4),    IN("flags", HEX, 0, 8),
        IN("vaddr", HEX, 8, 8), OUT("handle", U64, 28, 4),
};

/* kfd_ioctl.h */
static const struct fdesc f_kfd_alloc[] = {
        /* {u64 va_addr, size, handle, mmap_offset, u32 gpu_id, flags}, 40 B */
        IN("va_addr", HEX, 0, 8), IN("size", U64, 8, 8),     IN("gpu_id", U64, 32, 4),
        IN("flags", HEX, 36, 4),  OUT("handle", HEX, 16, 8), OUT("mmap_offset", HEX, 24, 8),
};
static const struct fdesc f_kfd_free[] = {
        /* {u64 handle}, 8 B */
        IN("handle", HEX, 0, 8),
};
static const struct fdesc f_kfd_map[] = {
        /* {u64 handle, device_ids_array_ptr, u32 n_devices, n_success}, 24 B */
        IN("handle", HEX, 0, 8),
        IN("n_devices", U64, 16, 4),
        OUT("n_success", U64, 20, 4),
};

/* NVIDIA nvos.h parameter blocks (offsets as listed in ioctls.md 10.1). */
static const struct fdesc f_nv_free[] = {
        /* NVOS00 {hRoot, hObjectParent, hObjectOld, status} */
        IN("h_root", HEX, 0, 4),
        IN("h_parent", HEX, 4, 4),
        IN("h_old", HEX, 8, 4),
        OUT("status", HEX, 12, 4),
};
static const struct fdesc f_nv_control[] = {
        /* NVOS54 */
        IN("h_client", HEX, 0, 4), IN("h_object", HEX, 4, 4),     IN("rm_control_cmd", HEX, 8, 4),
        IN("flags", HEX, 12, 4),   IN("params_size", U64, 24, 4), OUT("status", HEX, 28, 4),
};
static const struct fdesc f_nv_alloc[] = {
        /* NVOS21 / NVOS64 common head */
        IN("h_root", HEX, 0, 4),
        IN("h_parent", HEX, 4, 4),
        IN("h_new", HEX, 8, 4),
        IN("rm_class", HEX, 12, 4),
};

/*
 * Memory classes whose RM_ALLOC parameters the BPF side follows (the
 * follow rule of bpf/kxprof.h: pAllocParms @16, selected by hClass @12).
 * NV_MEMORY_ALLOCATION_PARAMS (nvos.h; classes NV01_MEMORY_SYSTEM 0x3e,
 * cl003e.h, and NV01_MEMORY_LOCAL_USER 0x40, cl0040.h): u64 size @64,
 * [IN/OUT], the driver writes the size it allocated back. NV_OS_DESC_
 * MEMORY_ALLOCATION_PARAMS (NV01_MEMORY_SYSTEM_OS_DESCRIPTOR 0x71,
 * cl0071.h): u64 limit @24, size - 1.
 */
#define NV_MEMORY_SYSTEM   0x3e
#define NV_MEMORY_LOCAL    0x40
#define NV_MEMORY_OS_DESC  0x71
#define NV_MEM_PARAMS_SIZE 64 /* offset of size in NV_MEMORY_ALLOCATION_PARAMS */
#define NV_OSDESC_LIMIT    24 /* offset of limit in NV_OS_DESC_MEMORY_ALLOCATION_PARAMS */
static const struct kx_arg_follow nv_alloc_follow = {
        .ptr_off = 16,
        .sel_off = 12,
        .n = 3,
        .sel = {NV_MEMORY_SYSTEM, NV_MEMORY_LOCAL, NV_MEMORY_OS_DESC},
        .off = {NV_MEM_PARAMS_SIZE, NV_MEM_PARAMS_SIZE, NV_OSDESC_LIMIT},
};

/* The followed window of a memory class's parameters: the size (or, for
 * OS descriptors, the limit) the driver wrote back, else the one asked for. */
static void nv_alloc_window(struct dctx *c)
{
	uint64_t cls;
	int src;

	if (!peek(c, SRC_IN, 12, 4, &cls))
		return;
	src = c->len[SRC_OUT] == KX_ARG_MAX ? SRC_OUT : SRC_IN;
	if (c->len[src] != KX_ARG_MAX)
		return;
	if (cls == NV_MEMORY_OS_DESC) {
		put(c, "limit", KX_FIELD_U64, src, KX_FOLLOW_AT, 8);
	} else if (cls == NV_MEMORY_SYSTEM || cls == NV_MEMORY_LOCAL) {
		put(c, "size", KX_FIELD_U64, src, KX_FOLLOW_AT, 8);
		if (src == SRC_OUT)
			put(c, "requested_size", KX_FIELD_U64, SRC_IN, KX_FOLLOW_AT, 8);
	}
}

/* NVOS21 (32 B) and NVOS64 (48 B) differ after hClass; only the size tells.
 * The handle is hObjectNew as the driver returns it (it picks one for 0). */
static void nv_alloc_extra(struct dctx *c)
{
	if (c->size == 32) {
		put(c, "params_size", KX_FIELD_U64, SRC_IN, 24, 4);
		put(c, "status", KX_FIELD_HEX, SRC_OUT, 28, 4);
	} else if (c->size == 48) {
		put(c, "params_size", KX_FIELD_U64, SRC_IN, 32, 4);
		put(c, "flags", KX_FIELD_HEX, SRC_IN, 36, 4);
		put(c, "status", KX_FIELD_HEX, SRC_OUT, 40, 4);
	}
	put(c, "handle", KX_FIELD_HEX, c->len[SRC_OUT] ? SRC_OUT : SRC_IN, 8, 4);
	nv_alloc_window(c);
}

/*
 * NVOS02 (RM_ALLOC_MEMORY, legacy) {hRoot, hObjectParent, hObjectNew,
 * hClass, flags, pMemory @24, u64 limit @32, status @40} + int fd = 56 B:
 * the size is in the argument (limit + 1).
 */
static const struct fdesc f_nv_alloc_memory[] = {
        IN("h_root", HEX, 0, 4),  IN("h_parent", HEX, 4, 4),  IN("h_new", HEX, 8, 4),
        IN("handle", HEX, 8, 4),  IN("rm_class", HEX, 12, 4), IN("flags", HEX, 16, 4),
        IN("memory", HEX, 24, 8), OUT("limit", U64, 32, 8),   OUT("status", HEX, 40, 4),
};

/*
 * NVOS33 {hClient, hDevice, hMemory, u64 offset @16, length @24,
 * pLinearAddress @32, status @40, flags @44} + int fd = 56 B.
 */
static const struct fdesc f_nv_map_memory[] = {
        IN("h_client", HEX, 0, 4),         IN("h_device", HEX, 4, 4), IN("h_memory", HEX, 8, 4),
        IN("offset", HEX, 16, 8),          IN("length", U64, 24, 8),  IN("flags", HEX, 44, 4),
        OUT("linear_address", HEX, 32, 8), OUT("status", HEX, 40, 4),
};
/*
 * NVOS46 {hClient, hDevice, hDma, hMemory, u64 offset @16, length @24,
 * u32 flags @32, flags2, kindOverride, u64 dmaOffset @48, u32 status @56} = 64 B.
 */
static const struct fdesc f_nv_map_memory_dma[] = {
        IN("h_client", HEX, 0, 4),  IN("h_device", HEX, 4, 4),     IN("h_dma", HEX, 8, 4),
        IN("h_memory", HEX, 12, 4), IN("offset", HEX, 16, 8),      IN("length", U64, 24, 8),
        IN("flags", HEX, 32, 4),    OUT("dma_offset", HEX, 48, 8), OUT("status", HEX, 56, 4),
};

/*
 * UVM (uvm_ioctl.h): every params struct starts with u64 base and (for
 * ranges) u64 length and ends with NV_STATUS rmStatus; the spec's sizes
 * match (FREE 8+4 -> 16, CREATE_EXTERNAL_RANGE 8+8+4 -> 24).
 */
static const struct fdesc f_uvm_free[] = {
        IN("base", HEX, 0, 8),
        OUT("rm_status", HEX, 8, 4),
};
static const struct fdesc f_uvm_range[] = {
        IN("base", HEX, 0, 8),
        IN("length", U64, 8, 8),
};
static const struct fdesc f_uvm_ext_range[] = {
        IN("base", HEX, 0, 8),
        IN("length", U64, 8, 8),
        OUT("rm_status", HEX, 16, 4),
};

/* NVKMS: NvKmsIoctlParams {u32 cmd, size, u64 address} */
static const struct fdesc f_nvkms[] = {
        IN("nvkms_cmd", U64, 0, 4),
        IN("params_size", U64, 4, 4),
};

/*
 * kvm_userspace_memory_region (32 B) and the first 32 B of ..._region2:
 * {u32 slot, flags, u64 guest_phys_addr, memory_size, userspace_addr}
 */
static const struct fdesc f_kvm_mem_region[] = {
        IN("slot", U64, 0, 4),
        IN("flags", HEX, 4, 4),
        IN("guest_phys_addr", HEX, 8, 8),
        IN("memory_size", U64, 16, 8),
        IN("userspace_addr", HEX, 24, 8),
};

/*
 * loop_info64 (232 B): {u64 lo_device, lo_inode, lo_rdevice, lo_offset @24,
 * lo_sizelimit @32, u32 lo_number, encrypt_type, key_size, lo_flags @52, ...}
 */
static const struct fdesc f_loop_status64[] = {
        IN("offset", U64, 24, 8),
        IN("size_limit", U64, 32, 8),
        IN("lo_flags", HEX, 52, 4),
};
/* loop_config: {u32 fd, block_size, loop_info64 info @8, ...}, 304 B */
static const struct fdesc f_loop_configure[] = {
        IN("backing_fd", I64, 0, 4),  IN("block_size", U64, 4, 4), IN("offset", U64, 32, 8),
        IN("size_limit", U64, 40, 8), IN("lo_flags", HEX, 60, 4),
};
static const struct fdesc f_blkgetsize64[] = {
        OUT("size_bytes", U64, 0, 8),
};

/* Sorted by (drv, key): looked up with a binary search. */
static const struct dec decs[] = {
        DEC_NR(KX_DRV_AMDGPU, 0xc0206440, 32, IO, f_amdgpu_gem_create, NULL),
        DEC_NR(KX_DRV_AMDGPU, 0xc0186444, 24, IO, f_amdgpu_cs, NULL),
        DEC_NR(KX_DRV_AMDGPU, 0x40406448, 40, KX_ARGF_IN, f_amdgpu_gem_va, NULL),
        DEC_NR(KX_DRV_I915, 0xc010645b, 16, IO, f_i915_gem_create, NULL),
        DEC_NR(KX_DRV_I915, 0xc018647c, 16, IO, f_i915_gem_create_ext, NULL),
        DEC_NR(KX_DRV_XE, 0xc0386441, 32, IO, f_xe_gem_create, NULL),
        DEC_NR(KX_DRV_NOUVEAU, 0xc0306480, 32, IO, f_nouveau_gem_new, NULL),
        DEC_NR(KX_DRV_MSM, 0xc0106442, 16, IO, f_u64size_flags_handle, NULL),
        DEC_NR(KX_DRV_PANFROST, 0xc0186442, 24, IO, f_panfrost_create_bo, NULL),
        DEC_NR(KX_DRV_PANTHOR, 0xc0186445, 20, IO, f_panthor_bo_create, NULL),
        DEC_NR(KX_DRV_V3D, 0xc0106442, 16, IO, f_v3d_create_bo, NULL),
        DEC_NR(KX_DRV_ETNAVIV, 0xc0106442, 16, IO, f_u64size_flags_handle, NULL),
        DEC_NR(KX_DRV_LIMA, 0xc0106441, 12, IO, f_lima_gem_create, NULL),
        /* legacy /dev/hlN ('H', nr 5) and accel (DRM nr 0x44) MEMORY */
        DEC_NR(KX_DRV_HABANALABS, 0xc0284805, 28, IO, f_hl_memory, hl_memory_extra),
        DEC_NR(KX_DRV_HABANALABS, 0xc0286444, 28, IO, f_hl_memory, hl_memory_extra),
        DEC_NR(KX_DRV_IVPU, 0xc0186442, 24, IO, f_ivpu_bo_create, NULL),
        DEC_NR(KX_DRV_QAIC, 0xc0106441, 12, IO, f_qaic_create_bo, NULL),
        DEC_NR(KX_DRV_AMDXDNA, 0xc0206443, 32, IO, f_amdxdna_create_bo, NULL),
        DEC_NR(KX_DRV_KFD, 0xc0284b16, 40, IO, f_kfd_alloc, NULL),
        DEC_NR(KX_DRV_KFD, 0x40084b17, 8, KX_ARGF_IN, f_kfd_free, NULL),
        DEC_NR(KX_DRV_KFD, 0xc0184b18, 24, IO, f_kfd_map, NULL),
        DEC_NR(KX_DRV_KFD, 0xc0184b19, 24, IO, f_kfd_map, NULL),
        DEC_NR(KX_DRV_NVIDIA, 0xc0384627, 44, IO, f_nv_alloc_memory, NULL),
        DEC_NR(KX_DRV_NVIDIA, 0xc0104629, 16, IO, f_nv_free, NULL),
        DEC_NR(KX_DRV_NVIDIA, 0xc020462a, 32, IO, f_nv_control, NULL),
        DEC_FOLLOW(KX_DRV_NVIDIA, 0xc030462b, 44, IO, f_nv_alloc, nv_alloc_extra, &nv_alloc_follow),
        DEC_NR(KX_DRV_NVIDIA, 0xc038464e, 48, IO, f_nv_map_memory, NULL),
        DEC_NR(KX_DRV_NVIDIA, 0xc0404657, 60, IO, f_nv_map_memory_dma, NULL),
        /*
         * XFER: the BPF side copies the wrapped block, decoded by the inner
         * escape's fields; 60 B covers the largest (MAP_MEMORY_DMA).
         */
        {KX_DRV_NVIDIA, KX_ARG_BY_NR_KEY(0xc01046d3), 60, IO | KX_ARGF_XFER, NULL, 0, NULL, NULL},
        DEC_CMD(KX_DRV_NVIDIA_UVM, 0x22, 16, IO, f_uvm_free, NULL),          /* UVM_FREE */
        DEC_CMD(KX_DRV_NVIDIA_UVM, 0x33, 16, KX_ARGF_IN, f_uvm_range, NULL), /* UVM_MIGRATE */
        DEC_CMD(KX_DRV_NVIDIA_UVM, 0x44, 16, KX_ARGF_IN, f_uvm_range,
                NULL), /* UVM_ALLOC_SEMAPHORE_POOL */
        DEC_CMD(KX_DRV_NVIDIA_UVM, 0x49, 24, IO, f_uvm_ext_range,
                NULL), /* UVM_CREATE_EXTERNAL_RANGE */
        DEC_CMD(KX_DRV_NVIDIA_MODESET, 0xc0106d00, 8, KX_ARGF_IN, f_nvkms, NULL),
        DEC_CMD(KX_DRV_KVM, 0x4020ae46, 32, KX_ARGF_IN, f_kvm_mem_region, NULL),
        DEC_CMD(KX_DRV_KVM, 0x40a0ae49, 32, KX_ARGF_IN, f_kvm_mem_region, NULL),
        DEC_CMD(KX_DRV_LOOP, 0x4c04, 56, KX_ARGF_IN, f_loop_status64, NULL),
        DEC_CMD(KX_DRV_LOOP, 0x4c0a, 64, KX_ARGF_IN, f_loop_configure, NULL),
        DEC_CMD(KX_DRV_LOOP, 0x80081272, 8, KX_ARGF_OUT, f_blkgetsize64, NULL),
        DEC_CMD(KX_DRV_BLOCK, 0x80081272, 8, KX_ARGF_OUT, f_blkgetsize64, NULL),
};

static const struct dec *dec_search(const struct dec *v, size_t n, enum kx_driver drv, uint32_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct dec *d = &v[mid];

		if (d->drv == drv && d->key == key)
			return d;
		if (d->drv < drv || (d->drv == drv && d->key < key))
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const struct dec *find_dec(enum kx_driver drv, uint32_t cmd)
{
	if ((unsigned int)drv >= KX_DRV_MAX)
		return NULL;
	if (drm_family(drv) && IOC_TYPE(cmd) == DRM_TYPE && !drm_driver_nr(IOC_NR(cmd)))
		return dec_search(core_decs, ARRAY_SIZE(core_decs), KX_DRV_DRM,
		                  KX_ARG_BY_NR_KEY(cmd));
	return dec_search(decs, ARRAY_SIZE(decs), drv,
	                  kx_driver_by_nr(drv) ? KX_ARG_BY_NR_KEY(cmd) : cmd);
}

int kx_ioctl_decode_args(enum kx_driver drv, uint32_t cmd, uint32_t xfer_cmd, const uint8_t *in,
                         size_t in_len, const uint8_t *out, size_t out_len, struct kx_field *fields,
                         int max)
{
	struct dctx c = {
	        .buf = {in, out},
	        .len = {in ? in_len : 0, out ? out_len : 0},
	        .size = IOC_SIZE(cmd),
	        .out = fields,
	        .max = fields && max > 0 ? max : 0,
	};
	const struct dec *d = find_dec(drv, cmd);
	size_t i;

	if (!d || !c.max)
		return 0;
	if (d->flags & KX_ARGF_XFER) {
		/* The copies hold the wrapped block; its own size is not recorded. */
		if (!xfer_cmd || xfer_cmd > 0xff)
			return 0;
		d = find_dec(drv, IOC(IOC_WR, NV_TYPE, xfer_cmd, 0));
		if (!d || (d->flags & KX_ARGF_XFER))
			return 0;
		c.size = 0;
	}
	for (i = 0; i < d->nf; i++)
		put(&c, d->f[i].name, d->f[i].kind, d->f[i].src, d->f[i].off, d->f[i].width);
	if (d->extra)
		d->extra(&c);
	return c.n;
}

/* Core requests repeat for every DRM-family driver: the BPF key holds the driver. */
#define DRM_FAMILY_N (KX_DRV_ETHOSU - KX_DRV_DRM + 1)
static struct kx_arg_req reqs[ARRAY_SIZE(core_decs) * DRM_FAMILY_N + ARRAY_SIZE(decs)];
static size_t nreqs;
static pthread_once_t reqs_once = PTHREAD_ONCE_INIT;

static void add_req(enum kx_driver drv, const struct dec *d)
{
	reqs[nreqs].drv = drv;
	reqs[nreqs].key = d->key;
	reqs[nreqs].len = d->len;
	reqs[nreqs].flags = d->flags;
	reqs[nreqs].follow = d->follow;
	nreqs++;
}

static void build_reqs(void)
{
	size_t i;
	int drv;

	for (drv = KX_DRV_DRM; drv <= KX_DRV_ETHOSU; drv++)
		for (i = 0; i < ARRAY_SIZE(core_decs); i++)
			add_req((enum kx_driver)drv, &core_decs[i]);
	for (i = 0; i < ARRAY_SIZE(decs); i++)
		add_req(decs[i].drv, &decs[i]);
}

const struct kx_arg_req *kx_ioctl_arg_reqs(size_t *n)
{
	pthread_once(&reqs_once, build_reqs);
	if (n)
		*n = nreqs;
	return reqs;
}
