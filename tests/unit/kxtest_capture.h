/*
 * Builders for synthetic captures in the exporter tests: thread names in a
 * store and devices in a capinfo, as a real session would record them.
 */
#ifndef KXTEST_CAPTURE_H
#define KXTEST_CAPTURE_H

#include <stdio.h>
#include <string.h>

#include "model/capinfo.h"
#include "model/store.h"

static inline void add_comm(struct kx_store *s, uint32_t pid, uint32_t tid, const char *comm)
{
	struct kx_task t;

	memset(&t, 0, sizeof(t));
	t.pid = pid;
	t.tid = tid;
	t.what = KX_TASK_SEEN;
	snprintf(t.comm, sizeof(t.comm), "%s", comm);
	kx_store_add_task(s, &t);
}

static inline void add_dev(struct kx_capinfo *ci, uint8_t fkind, uint32_t dev, uint8_t drv,
                           const char *node, const char *driver)
{
	struct kx_device *d = &ci->devices[ci->ndevices++];

	d->fkind = fkind;
	d->dev = dev;
	d->drv = drv;
	snprintf(d->node, sizeof(d->node), "%s", node);
	snprintf(d->driver, sizeof(d->driver), "%s", driver);
}

#endif /* KXTEST_CAPTURE_H */
