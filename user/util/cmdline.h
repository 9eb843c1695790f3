/*
 * A process's command line as a one-line label: owns the rule that turns
 * /proc/PID/cmdline (arguments separated by NULs) into "prog arg arg ...":
 * the program's path cut to its last component, the arguments joined by
 * spaces, bytes outside printable ASCII written as '?', cut to the room
 * given. One reader of the file for every part that asks (the recorder
 * naming the processes it traces).
 */
#ifndef KX_UTIL_CMDLINE_H
#define KX_UTIL_CMDLINE_H

#include <stddef.h>
#include <stdint.h>

/* The n bytes of raw (a cmdline's NUL-separated arguments) into dst as one
 * line, NUL-terminated, at most dstlen - 1 bytes. Returns its length (0:
 * no arguments, e.g. a kernel thread or a zombie). */
size_t kx_cmdline_format(char *dst, size_t dstlen, const char *raw, size_t n);

/* /proc/pid/cmdline formatted into dst. Returns its length, or -1 (dst "")
 * when it cannot be read (the process is gone, or not ours to read). */
long kx_cmdline_read(uint32_t pid, char *dst, size_t dstlen);

#endif /* KX_UTIL_CMDLINE_H */
