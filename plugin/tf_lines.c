/* TensorFlow's host line ids: see tf_lines.h. */
#include <dlfcn.h>
#include <stddef.h>

#include "tf_lines.h"

#define HASH_SEED 0xc70f6907ULL
#define HASH_MUL  ((0xc6a4a793ULL << 32) + 0x5bd1e995ULL)

static uint64_t shift_mix(uint64_t v)
{
	return v ^ (v >> 47);
}

/* libstdc++'s _Hash_bytes of one 8-byte word (its 64-bit, 8-byte-aligned case). */
uint64_t kx_tf_line_id(uint64_t pthread_self)
{
	uint64_t h = HASH_SEED ^ (8 * HASH_MUL);

	h ^= shift_mix(pthread_self * HASH_MUL) * HASH_MUL;
	h *= HASH_MUL;
	h = shift_mix(h) * HASH_MUL;
	return shift_mix(h);
}

int kx_tf_present(void)
{
	/* Defined by TensorFlow's C API library, which it loads with global symbols. */
	return dlsym(RTLD_DEFAULT, "TF_LoadPluggableDeviceLibrary") != NULL;
}
