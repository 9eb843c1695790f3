/*
 * Parallel gzip writer: one standard gzip member (RFC 1952) written to a
 * file descriptor, its deflate blocks compressed on worker threads. The
 * input is cut in blocks by the caller; each block is deflated on its own,
 * primed with the 32 KiB of input before it (so matches still reach back
 * across blocks) and ended byte-aligned with a sync flush, the last one
 * with the final block; the CRC-32s of the blocks are combined. The bytes
 * depend only on the input, where the caller cut it and the engine, never on
 * the thread count. Two engines: ISA-L's igzip (the default: several times
 * zlib's speed at level 1, its CRC-32 folded with carry-less multiplies) and
 * zlib; KXPROF_GZIP=zlib picks zlib. For small outputs, one call gzips a
 * buffer in memory.
 */
#ifndef KX_PGZ_H
#define KX_PGZ_H

#include <stddef.h>

#include "util/grow.h"

#define KX_PGZ_BLOCK (1u << 20) /* room of one block */

struct kx_pgz;

enum kx_pgz_engine { KX_PGZ_ISAL, KX_PGZ_ZLIB };

/* The engine KXPROF_GZIP asks for ("zlib"; anything else: ISA-L). */
enum kx_pgz_engine kx_pgz_engine_env(void);
const char *kx_pgz_engine_name(enum kx_pgz_engine e); /* "isa-l", "zlib" */

/* level: zlib level (1 fast .. 9 small; ISA-L maps 1 to its level 1, up to 5
 * to 2, above to 3); the engine from KXPROF_GZIP. NULL on OOM. */
struct kx_pgz *kx_pgz_new(int fd, int level);
/* The same with the engine given. */
struct kx_pgz *kx_pgz_new_engine(int fd, int level, enum kx_pgz_engine engine);
/* The buffer to fill for the next block (KX_PGZ_BLOCK bytes). */
char *kx_pgz_next(struct kx_pgz *z);
/* Hands over the block kx_pgz_next returned, holding len bytes; last ends the stream. */
void kx_pgz_put(struct kx_pgz *z, size_t len, int last);
/*
 * Waits for every block, writes the trailer. Returns 0, or -1 with the
 * errno of the first failure in *err_no (0 when the engine failed: msg says why).
 */
int kx_pgz_finish(struct kx_pgz *z, int *err_no, char *msg, size_t msglen);
/* The errno of the first failure so far (EIO when the engine failed), or 0. */
int kx_pgz_error(const struct kx_pgz *z);
/* Frees (after kx_pgz_finish, or to give up). NULL is fine. */
void kx_pgz_free(struct kx_pgz *z);

/* One gzip member of the n bytes at in, appended to out in one call (small
 * outputs kept in memory: a pprof profile). 0, or -1 out of memory. */
int kx_gzip_buf(const void *in, size_t n, int level, struct kx_bytes *out);

#endif /* KX_PGZ_H */
