/*
 * The stand-in accelerator of the unit tests that drive a device in-process
 * (as tests/integration/lib.sh's is for the scripts): /dev/kvm where it can
 * be opened, with KVM_GET_API_VERSION as the cheap call (returns
 * KVM_API_VERSION); else a free loop device, found with LOOP_CTL_GET_FREE,
 * opened read-only and never attached, with BLKGETSIZE64 as the cheap call
 * (returns 0). The device set is the default one, plus the loop driver (as
 * --device loop) under loop.
 */
#ifndef KXTEST_ACCEL_H
#define KXTEST_ACCEL_H

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/kvm.h>
#include <linux/loop.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "registry/devices.h"
#include "registry/drivers.h"

struct kxt_accel {
	int fd;            /* the device the cheap calls go to */
	int loop;          /* 1: the loop driver stands in (no /dev/kvm) */
	const char *name;  /* "kvm" or "loop": the driver in reports */
	unsigned long cmd; /* the cheap call's request */
	long want;         /* what it returns */
	int drv;           /* KX_DRV_KVM or KX_DRV_LOOP */
	uint64_t size;     /* BLKGETSIZE64's answer */
	char path[32];     /* the device node */
};

/* Opens the stand-in's device. 0, or -1 with why set (the case then skips). */
static inline int kxt_accel_open(struct kxt_accel *a, char *why, size_t len)
{
	int ctl;
	long n;

	memset(a, 0, sizeof(*a));
	a->fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (a->fd >= 0) {
		a->name = "kvm";
		a->cmd = KVM_GET_API_VERSION;
		a->want = KVM_API_VERSION;
		a->drv = KX_DRV_KVM;
		snprintf(a->path, sizeof(a->path), "/dev/kvm");
		return 0;
	}
	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	n = ctl >= 0 ? ioctl(ctl, LOOP_CTL_GET_FREE) : -1;
	if (ctl >= 0)
		close(ctl);
	if (n < 0) {
		snprintf(why, len, "no /dev/kvm and no free loop device");
		return -1;
	}
	snprintf(a->path, sizeof(a->path), "/dev/loop%ld", n);
	a->fd = open(a->path, O_RDONLY | O_CLOEXEC);
	if (a->fd < 0) {
		snprintf(why, len, "no /dev/kvm, and %s cannot be opened", a->path);
		return -1;
	}
	a->loop = 1;
	a->name = "loop";
	a->cmd = BLKGETSIZE64;
	a->want = 0;
	a->drv = KX_DRV_LOOP;
	return 0;
}

/* One cheap call on fd: 1 when it returned what it should. */
static inline int kxt_accel_call_on(struct kxt_accel *a, int fd)
{
	return ioctl(fd, a->cmd, a->loop ? (unsigned long)&a->size : 0UL) == a->want;
}

/* n cheap calls on the stand-in's fd; how many returned what they should. */
static inline int kxt_accel_calls(struct kxt_accel *a, int n)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += kxt_accel_call_on(a, a->fd);
	return ok;
}

/* A second fd on the same device (-1 on failure). */
static inline int kxt_accel_reopen(const struct kxt_accel *a)
{
	return open(a->path, (a->loop ? O_RDONLY : O_RDWR) | O_CLOEXEC);
}

static inline void kxt_accel_close(struct kxt_accel *a)
{
	if (a->fd >= 0)
		close(a->fd);
	a->fd = -1;
}

/* The device set a capture of the stand-in traces: the default set, plus
 * the loop driver under loop. The count (<= max). */
static inline int kxt_accel_devices(const struct kxt_accel *a, struct kx_device *devs, int max)
{
	int n = kx_devices_default(devs, max);
	char err[128];

	if (a->loop && n < max) {
		int k = kx_device_resolve("loop", devs + n, max - n, err, sizeof(err));

		if (k > 0)
			n += k;
		else
			printf("# --device loop: %s\n", err);
	}
	return n;
}

#endif /* KXTEST_ACCEL_H */
