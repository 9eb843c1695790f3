/*
 * Ioctl naming and argument decoding. Owns driver names, command names
 * (looked up in the generated tables of ioctl_table.h, made from
 * scripts/ioctl-tables/ioctls.md by scripts/gen-ioctl-tables.py) and the
 * per-command argument decoders, including which argument bytes the BPF
 * side must copy. The driver ids themselves are registry/drivers.h's.
 */
#ifndef KX_IOCTL_DECODE_H
#define KX_IOCTL_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "kxprof.h"
#include "registry/drivers.h"

/* Canonical lower-case name ("amdgpu", "kvm", "nvidia-uvm", "unknown"). */
const char *kx_driver_name(enum kx_driver drv);
/* Inverse of kx_driver_name; also accepts kernel driver names such as
 * "intel_vpu". Returns KX_DRV_UNKNOWN when not known. */
enum kx_driver kx_driver_from_name(const char *name);
/* True when the driver dispatches on (type, nr) only (DRM, accel, KFD, NVIDIA). */
int kx_driver_by_nr(enum kx_driver drv);

/*
 * Name of an ioctl command issued on a file of driver drv. For NVIDIA
 * NV_ESC_IOCTL_XFER_CMD, xfer_cmd is the inner escape (0 if unknown) and the
 * name is that of the inner escape. Unknown commands are formatted like
 * _IOWR('d',0x44,24) (or 0x30000001 for non-_IOC raw numbers). Never returns
 * NULL or an empty string: the result is either a static string or buf.
 */
const char *kx_ioctl_name(enum kx_driver drv, uint32_t cmd, uint32_t xfer_cmd, char *buf,
                          size_t len);

/*
 * Inverse of kx_ioctl_name for the tables' names: the cmd of the row named
 * name in drv's table, else in the DRM core's (DRM drivers issue both).
 * Returns 0 and sets *cmd, or -1 when no table has that name.
 */
int kx_ioctl_cmd_by_name(enum kx_driver drv, const char *name, uint32_t *cmd);

/* Formats cmd as _IO/_IOR/_IOW/_IOWR('c',0xNN,size) into buf. Returns buf. */
const char *kx_ioc_format(uint32_t cmd, char *buf, size_t len);

/* Argument copy requests, for the BPF argument map (see bpf/kxprof.h). */
struct kx_arg_req {
	enum kx_driver drv;
	uint32_t key;   /* full cmd, or KX_ARG_BY_NR_KEY(cmd) when kx_driver_by_nr */
	uint16_t len;   /* <= KX_ARG_MAX */
	uint16_t flags; /* KX_ARGF_IN | KX_ARGF_OUT | KX_ARGF_XFER | KX_ARGF_FOLLOW */
	const struct kx_arg_follow *follow; /* the follow rule (KX_ARGF_FOLLOW), else NULL */
};
/* All requests; *n gets the count. Static storage. */
const struct kx_arg_req *kx_ioctl_arg_reqs(size_t *n);

/* A decoded argument field. */
enum kx_field_kind { KX_FIELD_U64, KX_FIELD_I64, KX_FIELD_HEX, KX_FIELD_STR };
struct kx_field {
	const char *name; /* static, snake_case, e.g. "memory_size", "rm_class" */
	enum kx_field_kind kind;
	uint64_t u; /* U64 and HEX */
	int64_t i;  /* I64 */
	char s[48]; /* STR */
};

/*
 * Decodes the argument copies of one ioctl into at most max fields.
 * in/out may be NULL with length 0; short copies decode what they cover.
 * Returns the number of fields written (0 when no decoder applies).
 */
int kx_ioctl_decode_args(enum kx_driver drv, uint32_t cmd, uint32_t xfer_cmd, const uint8_t *in,
                         size_t in_len, const uint8_t *out, size_t out_len, struct kx_field *fields,
                         int max);

/* errno name for a negative return ("EINVAL"), or NULL when ret >= 0 / unknown. */
const char *kx_errno_name(int64_t ret);

#endif /* KX_IOCTL_DECODE_H */
