/*
 * Parallel gzip writer: one standard gzip member (RFC 1952) written to a
 * file descriptor, its deflate blocks compressed on worker threads. The
 * input is cut in blocks by the caller; each block is deflated on its own,
 * primed with the 32 KiB of input before it (so matches still reach back
 * across blocks) and ended byte-aligned with a sync flush, the last one
 * with the final block; the CRC-32s of the blocks are combined. The bytes
 * depend only on the input and where the caller cut it, never on the
 * thread count. For small outputs, one call gzips a buffer in memory.
 */
#ifndef KX_PGZ_H
#define KX_PGZ_H

#include <stddef.h>

#include "util/grow.h"

#define KX_PGZ_BLOCK (1u << 20) /* room of one block */

struct kx_pgz;

/* level: zlib level (1 fast .. 9 small). NULL on OOM. */
struct kx_pgz *kx_pgz_new(int fd, int level);
/* The buffer to fill for the next block (KX_PGZ_BLOCK bytes). */
char *kx_pgz_next(struct kx_pgz *z);
/* Hands over the block kx_pgz_next returned, holding len bytes; last ends the stream. */
void kx_pgz_put(struct kx_pgz *z, size_t len, int last);
/*
 * Waits for every block, writes the trailer. Returns 0, or -1 with the
 * errno of the first failure in *err_no (0 when zlib failed: msg says why).
 */
int kx_pgz_finish(struct kx_pgz *z, int *err_no, char *msg, size_t msglen);
/* The errno of the first failure so far (EIO when zlib failed), or 0. */
int kx_pgz_error(const struct kx_pgz *z);
/* Frees (after kx_pgz_finish, or to give up). NULL is fine. */
void kx_pgz_free(struct kx_pgz *z);

/* One gzip member of the n bytes at in, appended to out in one call (small
 * outputs kept in memory: a pprof profile). 0, or -1 out of memory. */
int kx_gzip_buf(const void *in, size_t n, int level, struct kx_bytes *out);

#endif /* KX_PGZ_H */
