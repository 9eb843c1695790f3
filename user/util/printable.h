/*
 * Text from another process made safe to print on a terminal: owns the rule
 * that bytes outside printable ASCII (control characters such as ESC, which
 * start terminal escape sequences, DEL, and every byte >= 0x80, which can
 * encode C1 controls) are written as \xNN, never raw; and finds the control
 * characters a request string must not hold (a newline would forge a log line).
 */
#ifndef KX_PRINTABLE_H
#define KX_PRINTABLE_H

#include <stddef.h>

/* The n bytes at src (stopping at a NUL) into dst, escaped and NUL-terminated,
 * cut at dstlen - 1 bytes without splitting an escape. Returns dst. */
char *kx_printable(char *dst, size_t dstlen, const void *src, size_t n);

/* The first control character of s (bytes below 0x20, and 0x7f), or NULL. */
const char *kx_ctrl_find(const char *s);

#endif /* KX_PRINTABLE_H */
