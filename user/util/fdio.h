/*
 * Writing whole buffers to file descriptors: retries short writes and
 * EINTR, so every exporter and the record writer fail the same way.
 */
#ifndef KX_FDIO_H
#define KX_FDIO_H

#include <stddef.h>

/* Writes all n bytes of p to fd. 0, or the errno of the failure (EIO when
 * the kernel wrote nothing and gave no reason). */
int kx_write_all(int fd, const void *p, size_t n);

#endif /* KX_FDIO_H */
