/*
 * libstdc++'s std::hash of an 8-byte value (_Hash_bytes(&v, 8, 0xc70f6907),
 * its 64-bit, 8-byte case): the id TensorFlow 2.21 and JAX 0.10 (TSL) give a
 * thread's /host:CPU line, std::hash<std::thread::id> of its pthread_t.
 */
#ifndef KX_STDHASH_H
#define KX_STDHASH_H

#include <stdint.h>

#define KX_STDHASH_SEED 0xc70f6907ULL
#define KX_STDHASH_MUL  ((0xc6a4a793ULL << 32) + 0x5bd1e995ULL)

static inline uint64_t kx_stdhash_shift_mix(uint64_t v)
{
	return v ^ (v >> 47);
}

static inline uint64_t kx_stdhash_u64(uint64_t v)
{
	uint64_t h = KX_STDHASH_SEED ^ (8 * KX_STDHASH_MUL);

	h ^= kx_stdhash_shift_mix(v * KX_STDHASH_MUL) * KX_STDHASH_MUL;
	h *= KX_STDHASH_MUL;
	h = kx_stdhash_shift_mix(h) * KX_STDHASH_MUL;
	return kx_stdhash_shift_mix(h);
}

#endif /* KX_STDHASH_H */
