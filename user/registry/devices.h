/*
 * Device registry: which accelerator and test devices exist here, and what a
 * user's --device spec means. Reads /proc/devices, /sys/dev/{char,block} and
 * /dev; knows the fixed majors (DRM 226, accel 261, NVIDIA 195), the dynamic
 * ones by name (kfd, nvidia-uvm, habanalabs, neuron, tenstorrent, vfio) and
 * misc minors (kvm 10:232, vfio 10:196), plus the anon-inode kinds.
 */
#ifndef KX_DEVICES_H
#define KX_DEVICES_H

#include <stddef.h>
#include <stdint.h>

#include "model/capinfo.h"

/*
 * Fills out with the default filter set: every accelerator or test char
 * device present (one entry per node, or per major with any_minor where the
 * driver owns the whole major), and the anon kinds of present drivers
 * (kvm-vm, kvm-vcpu, kvm device fds when /dev/kvm exists; vfio-device when
 * vfio exists). Returns the count (<= max).
 */
int kx_devices_default(struct kx_device *out, int max);

/*
 * Resolves a user spec: a path (/dev/kvm, /dev/loop0: char or block from
 * stat), "MAJOR:MINOR" (char), "MAJOR:*" (char, any minor), "block:MAJOR:MINOR",
 * or a driver name from /proc/devices ("loop" -> block major 7, any minor;
 * "kfd"). Returns the number of entries written (>= 1) or -1 with err set
 * ("no such device: /dev/foo", "no driver named foo in /proc/devices").
 */
int kx_device_resolve(const char *spec, struct kx_device *out, int max, char *err, size_t errlen);

/* Entry of devs[0..n) that matches a record (fkind, dev), or NULL. */
const struct kx_device *kx_device_find(const struct kx_device *devs, int n, unsigned int fkind,
                                       unsigned int dev);

/* Human label for a record's file: node path, or "anon_inode:kvm-vcpu", or "char 10:232". */
const char *kx_device_label(const struct kx_device *devs, int n, unsigned int fkind,
                            unsigned int dev, char *buf, size_t len);

/* The whole disk of a block dev_t (a partition's requests carry their disk's dev_t). */
uint32_t kx_block_disk_of(uint32_t dev);

/*
 * Kernel name of a block disk ("vda", "loop0", as /sys/dev/block names it),
 * into buf; "" when this host does not know the dev_t. Read once per dev_t
 * and kept for the process's life (thread-safe), so per-record callers cost
 * a cache lookup. Returns buf.
 */
#define KX_DISK_NAME_LEN 16 /* bytes with the NUL: a record's ring name */
const char *kx_block_disk_name(uint32_t dev, char *buf, size_t len);

/*
 * Capture start: reads afresh the names of the set's block disks (a
 * partition's disk; every present disk of a whole-major entry), so they are
 * still known after a disk goes away during the capture.
 */
void kx_block_disks_note(const struct kx_device *devs, int n);

#endif /* KX_DEVICES_H */
