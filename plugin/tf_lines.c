/* TensorFlow's host line ids: see tf_lines.h. */
#include <dlfcn.h>
#include <stddef.h>

#include "tf_lines.h"
#include "util/stdhash.h"

/* libstdc++'s _Hash_bytes of the 8-byte pthread_t (util/stdhash.h). */
uint64_t kx_tf_line_id(uint64_t pthread_self)
{
	return kx_stdhash_u64(pthread_self);
}

int kx_tf_present(void)
{
	/* Defined by TensorFlow's C API library, which it loads with global symbols. */
	return dlsym(RTLD_DEFAULT, "TF_LoadPluggableDeviceLibrary") != NULL;
}
