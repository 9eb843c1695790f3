/*
 * Control characters in text that came from someone else (a daemon
 * client's request strings): found, so they can be refused, and escaped,
 * so a line written to a log or terminal is one line of printable text.
 */
#ifndef KX_UTIL_CTRLCHAR_H
#define KX_UTIL_CTRLCHAR_H

#include <stddef.h>

/* The first control character of s (bytes below 0x20, and 0x7f), or NULL. */
const char *kx_ctrl_find(const char *s);

/* s into dst (len bytes, NUL-terminated, cut to fit): a newline, tab or
 * carriage return as \n, \t, \r, any other control character as \xNN, a
 * backslash as \\. Returns dst. */
char *kx_ctrl_escape(char *dst, size_t len, const char *s);

#endif /* KX_UTIL_CTRLCHAR_H */
