/*
 * Internal to the ioctl decoder: layout of the generated name tables
 * (ioctl_table.c, written by `make ioctl-tables`: scripts/gen-ioctl-tables.py
 * from scripts/ioctl-tables/ioctls.md). ioctl_decode.c looks names up in
 * them (others use its functions: kx_ioctl_name, kx_ioctl_cmd_by_name); the
 * unit test iterates them. Includes only the driver ids, never the decoder.
 */
#ifndef KX_IOCTL_TABLE_H
#define KX_IOCTL_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "registry/drivers.h"

#define KX_ENT_NOSIZE   1 /* the spec gives no size: cmd carries size 0 */
#define KX_ENT_SHADOWED 2 /* same cmd as an earlier row, which names it */

/* One spec row. */
struct kx_ioctl_ent {
	uint32_t key;   /* sort key, see enum kx_tab_keying */
	uint32_t cmd;   /* the full cmd of the row */
	uint32_t flags; /* KX_ENT_* */
	const char *name;
};

enum kx_tab_keying {
	KX_TAB_NR,  /* key = cmd & 0xffff (type, nr): size/dir drift tolerated */
	KX_TAB_CMD, /* key = full cmd, (type, nr) fallback when unambiguous */
	KX_TAB_RAW, /* key = the plain integer (UVM), exact match only */
};

/* One driver's table; ents sorted by key, ties in spec order. */
struct kx_ioctl_tab {
	const char *what; /* "drm" (core), "amdgpu", "loop", ... */
	enum kx_driver drv;
	enum kx_tab_keying keying;
	const struct kx_ioctl_ent *ents;
	size_t n;
};

extern const struct kx_ioctl_tab kx_ioctl_tabs[];
extern const size_t kx_ioctl_ntabs;
/* The table of each driver (KX_DRV_DRM: the DRM core table), NULL if none. */
extern const struct kx_ioctl_tab *const kx_ioctl_tab_by_drv[KX_DRV_MAX];

#endif /* KX_IOCTL_TABLE_H */
