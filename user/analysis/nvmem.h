/*
 * NVIDIA device memory per process: what the RM allocation ioctls
 * (NV_ESC_RM_ALLOC of a memory class with its followed parameters,
 * NV_ESC_RM_ALLOC_MEMORY) allocated and NV_ESC_RM_FREE freed, per process
 * and region. Regions: video memory (NV01_MEMORY_LOCAL_USER) and system
 * memory the GPU uses (NV01_MEMORY_SYSTEM, NV01_MEMORY_SYSTEM_OS_DESCRIPTOR).
 * Virtual address space (NV01_MEMORY_VIRTUAL, NV50_MEMORY_VIRTUAL, VA
 * spaces) is not memory and is not counted. The deltas come from
 * analysis/jobpair.h's memory accounting (kx_memacct_step); this module
 * keeps the per-process series the exporters show.
 */
#ifndef KX_NVMEM_H
#define KX_NVMEM_H

#include <stddef.h>
#include <stdint.h>

enum { KX_NVMEM_VID, KX_NVMEM_SYS, KX_NVMEM_NREG };

/* "vidmem", "sysmem". */
const char *kx_nvmem_region_name(int region);

struct kx_nvmem_pt {
	uint64_t ts;    /* ns: the ioctl's return */
	uint64_t usage; /* bytes live in the region after this event */
};

struct kx_nvmem_reg {
	uint64_t allocs, frees;    /* events */
	uint64_t allocated, freed; /* bytes */
	uint64_t live, peak;       /* bytes: after the last event, the most after any */
	struct kx_nvmem_pt *pts;   /* usage after each event */
	size_t npts, cap;
};

struct kx_nvmem_proc {
	uint32_t pid; /* tgid */
	struct kx_nvmem_reg reg[KX_NVMEM_NREG];
};

struct kx_nvmem {
	struct kx_nvmem_proc *procs; /* by pid */
	size_t nprocs, cap;
};

/* One event of process pid at ts: delta[r] bytes per region (> 0 allocated,
 * < 0 freed, 0 untouched). 0, or -1 when out of memory. */
int kx_nvmem_add(struct kx_nvmem *m, uint32_t pid, uint64_t ts, const int64_t *delta);
void kx_nvmem_free(struct kx_nvmem *m);

#endif /* KX_NVMEM_H */
