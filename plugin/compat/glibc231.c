/*
 * The glibc floor of the libraries that load into other processes (the
 * TensorFlow plugin, the annotation and NVTX libraries): linked with
 * -Wl,--wrap=NAME for each function below (Makefile: GLIBC231_WRAPS), their
 * calls land here and go to a symbol version glibc 2.31 already had, so they
 * load into a process whose glibc is 2.31 or newer whatever glibc built them.
 *  - pthread_* and dl*: moved into libc in 2.34 (2.32 for pthread_sigmask)
 *    under new versions; the GLIBC_2.2.5 ones are the same functions.
 *  - stat, lstat, fstat, fstatat: exported functions only since 2.33 (before, inline
 *    wrappers of __xstat): the system calls themselves (x86-64's struct stat
 *    is the kernel's).
 *  - strerrorname_np (2.32): the names of the errors kxprof reports.
 *  - __isoc23_strto* and __isoc23_*scanf (2.38, what glibc 2.38+ headers call
 *    under _GNU_SOURCE): the C99 functions (no 0b prefixes, no %b).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define OLD(name) __asm__(".symver kx_old_" #name "," #name "@GLIBC_2.2.5")

int kx_old_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
int kx_old_pthread_join(pthread_t, void **);
int kx_old_pthread_once(pthread_once_t *, void (*)(void));
int kx_old_pthread_mutex_trylock(pthread_mutex_t *);
int kx_old_pthread_sigmask(int, const sigset_t *, sigset_t *);
int kx_old_pthread_key_create(pthread_key_t *, void (*)(void *));
int kx_old_pthread_key_delete(pthread_key_t);
void *kx_old_dlopen(const char *, int);
void *kx_old_dlsym(void *, const char *);
char *kx_old_dlerror(void);
int kx_old_dlclose(void *);
int kx_old_dladdr(const void *, Dl_info *);
long kx_old_strtol(const char *, char **, int);
unsigned long kx_old_strtoul(const char *, char **, int);
long long kx_old_strtoll(const char *, char **, int);
unsigned long long kx_old_strtoull(const char *, char **, int);
int kx_old_vsscanf(const char *, const char *, va_list);
int kx_old_vfscanf(FILE *, const char *, va_list);
OLD(pthread_create);
OLD(pthread_join);
OLD(pthread_once);
OLD(pthread_mutex_trylock);
OLD(pthread_sigmask);
OLD(pthread_key_create);
OLD(pthread_key_delete);
OLD(dlopen);
OLD(dlsym);
OLD(dlerror);
OLD(dlclose);
OLD(dladdr);
OLD(strtol);
OLD(strtoul);
OLD(strtoll);
OLD(strtoull);
OLD(vsscanf);
OLD(vfscanf);

/* Declared here only: the wrappers are what --wrap points the calls at. */
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg);
int __wrap_pthread_join(pthread_t t, void **ret);
int __wrap_pthread_once(pthread_once_t *o, void (*fn)(void));
int __wrap_pthread_mutex_trylock(pthread_mutex_t *m);
int __wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old);
int __wrap_pthread_key_create(pthread_key_t *k, void (*dtor)(void *));
int __wrap_pthread_key_delete(pthread_key_t k);
void *__wrap_dlopen(const char *file, int mode);
void *__wrap_dlsym(void *h, const char *name);
char *__wrap_dlerror(void);
int __wrap_dlclose(void *h);
int __wrap_dladdr(const void *addr, Dl_info *info);
int __wrap_stat(const char *path, struct stat *st);
int __wrap_lstat(const char *path, struct stat *st);
int __wrap_fstat(int fd, struct stat *st);
int __wrap_fstatat(int dirfd, const char *path, struct stat *st, int flags);
const char *__wrap_strerrorname_np(int e);
long __wrap___isoc23_strtol(const char *s, char **end, int base);
unsigned long __wrap___isoc23_strtoul(const char *s, char **end, int base);
long long __wrap___isoc23_strtoll(const char *s, char **end, int base);
unsigned long long __wrap___isoc23_strtoull(const char *s, char **end, int base);
int __wrap___isoc23_sscanf(const char *s, const char *fmt, ...);
int __wrap___isoc23_vsscanf(const char *s, const char *fmt, va_list ap);
int __wrap___isoc23_fscanf(FILE *f, const char *fmt, ...);

int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*fn)(void *), void *arg)
{
	return kx_old_pthread_create(t, a, fn, arg);
}

int __wrap_pthread_join(pthread_t t, void **ret)
{
	return kx_old_pthread_join(t, ret);
}

int __wrap_pthread_once(pthread_once_t *o, void (*fn)(void))
{
	return kx_old_pthread_once(o, fn);
}

int __wrap_pthread_mutex_trylock(pthread_mutex_t *m)
{
	return kx_old_pthread_mutex_trylock(m);
}

int __wrap_pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	return kx_old_pthread_sigmask(how, set, old);
}

int __wrap_pthread_key_create(pthread_key_t *k, void (*dtor)(void *))
{
	return kx_old_pthread_key_create(k, dtor);
}

int __wrap_pthread_key_delete(pthread_key_t k)
{
	return kx_old_pthread_key_delete(k);
}

void *__wrap_dlopen(const char *file, int mode)
{
	return kx_old_dlopen(file, mode);
}

void *__wrap_dlsym(void *h, const char *name)
{
	return kx_old_dlsym(h, name);
}

char *__wrap_dlerror(void)
{
	return kx_old_dlerror();
}

int __wrap_dlclose(void *h)
{
	return kx_old_dlclose(h);
}

int __wrap_dladdr(const void *addr, Dl_info *info)
{
	return kx_old_dladdr(addr, info);
}

int __wrap_stat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_stat, path, st);
}

int __wrap_lstat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_lstat, path, st);
}

int __wrap_fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

int __wrap_fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dirfd, path, st, flags);
}

const char *__wrap_strerrorname_np(int e)
{
	static const struct {
		int e;
		const char *name;
	} names[] = {{EPERM, "EPERM"},           {ENOENT, "ENOENT"}, {ESRCH, "ESRCH"},
	             {EINTR, "EINTR"},           {EIO, "EIO"},       {E2BIG, "E2BIG"},
	             {EBADF, "EBADF"},           {EAGAIN, "EAGAIN"}, {ENOMEM, "ENOMEM"},
	             {EACCES, "EACCES"},         {EFAULT, "EFAULT"}, {EBUSY, "EBUSY"},
	             {EEXIST, "EEXIST"},         {ENODEV, "ENODEV"}, {EINVAL, "EINVAL"},
	             {ENOSPC, "ENOSPC"},         {ERANGE, "ERANGE"}, {ENOSYS, "ENOSYS"},
	             {EOPNOTSUPP, "EOPNOTSUPP"}, {524, "ENOTSUPP"}};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].e == e)
			return names[i].name;
	return NULL;
}

long __wrap___isoc23_strtol(const char *s, char **end, int base)
{
	return kx_old_strtol(s, end, base);
}

unsigned long __wrap___isoc23_strtoul(const char *s, char **end, int base)
{
	return kx_old_strtoul(s, end, base);
}

long long __wrap___isoc23_strtoll(const char *s, char **end, int base)
{
	return kx_old_strtoll(s, end, base);
}

unsigned long long __wrap___isoc23_strtoull(const char *s, char **end, int base)
{
	return kx_old_strtoull(s, end, base);
}

int __wrap___isoc23_vsscanf(const char *s, const char *fmt, va_list ap)
{
	return kx_old_vsscanf(s, fmt, ap);
}

int __wrap___isoc23_sscanf(const char *s, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kx_old_vsscanf(s, fmt, ap);
	va_end(ap);
	return n;
}

int __wrap___isoc23_fscanf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = kx_old_vfscanf(f, fmt, ap);
	va_end(ap);
	return n;
}
