/*
 * The libraries that load into other programs (annotations, NVTX, ITT)
 * bind the glibc functions that glibc 2.34 moved into libc to their
 * original versions, so that they load where glibc is as old as 2.31
 * (Ubuntu 20.04, Debian 11). Include before any call of them; link with
 * -lpthread -ldl, where those versions live on such systems.
 */
#ifndef KX_GLIBC_COMPAT_H
#define KX_GLIBC_COMPAT_H

#if defined(__GLIBC__) && defined(__x86_64__)
#define KX_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__GLIBC__) && defined(__aarch64__)
#define KX_GLIBC_BASE "GLIBC_2.17"
#endif

#ifdef KX_GLIBC_BASE
__asm__(".symver pthread_key_create, pthread_key_create@" KX_GLIBC_BASE);
__asm__(".symver pthread_key_delete, pthread_key_delete@" KX_GLIBC_BASE);
__asm__(".symver dlopen, dlopen@" KX_GLIBC_BASE);
__asm__(".symver dlsym, dlsym@" KX_GLIBC_BASE);
__asm__(".symver dlerror, dlerror@" KX_GLIBC_BASE);
__asm__(".symver dladdr, dladdr@" KX_GLIBC_BASE);
#endif

#endif
