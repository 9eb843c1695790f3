/*
 * Driver ids: the one numbering of the drivers kxprof knows, stored in
 * records (one byte) and in the BPF device filter. Names and the inverse
 * lookup are ioctl_decode.h's; the generated name tables (ioctl_table.h)
 * are indexed by these ids. Depends on nothing.
 */
#ifndef KX_DRIVERS_H
#define KX_DRIVERS_H

/* Driver ids. Stored in records as one byte: keep below 256, append only. */
enum kx_driver {
	KX_DRV_UNKNOWN = 0,
	KX_DRV_DRM, /* a DRM/accel device whose driver is not known */
	KX_DRV_AMDGPU,
	KX_DRV_I915,
	KX_DRV_XE,
	KX_DRV_NOUVEAU,
	KX_DRV_MSM,
	KX_DRV_PANFROST,
	KX_DRV_PANTHOR,
	KX_DRV_V3D,
	KX_DRV_ETNAVIV,
	KX_DRV_LIMA,
	KX_DRV_HABANALABS,
	KX_DRV_IVPU, /* "intel_vpu" */
	KX_DRV_QAIC,
	KX_DRV_AMDXDNA,
	KX_DRV_ROCKET,
	KX_DRV_ETHOSU,
	KX_DRV_KFD,
	KX_DRV_NVIDIA, /* /dev/nvidiactl, /dev/nvidiaN */
	KX_DRV_NVIDIA_UVM,
	KX_DRV_NVIDIA_MODESET,
	KX_DRV_NEURON,
	KX_DRV_TENSTORRENT,
	KX_DRV_GASKET, /* Google TPU v2-v4 */
	KX_DRV_VFIO,
	KX_DRV_KVM,
	KX_DRV_LOOP,  /* /dev/loopN and /dev/loop-control */
	KX_DRV_BLOCK, /* other block devices */
	KX_DRV_MAX
};

/* The ioctl a KVM job is one call of: _IO(KVMIO, 0x80). */
#define KX_KVM_RUN_CMD 0xae80u

#endif /* KX_DRIVERS_H */
