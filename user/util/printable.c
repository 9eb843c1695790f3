/* Escaping text for a terminal (contract: printable.h). */
#include <stdio.h>

#include "util/printable.h"

char *kx_printable(char *dst, size_t dstlen, const void *src, size_t n)
{
	const unsigned char *s = src;
	size_t o = 0;

	if (!dstlen)
		return dst;
	for (size_t i = 0; i < n && s[i]; i++) {
		if (s[i] >= 0x20 && s[i] < 0x7f) {
			if (o + 1 >= dstlen)
				break;
			dst[o++] = (char)s[i];
		} else {
			if (o + 4 >= dstlen)
				break;
			snprintf(dst + o, 5, "\\x%02x", s[i]);
			o += 4;
		}
	}
	dst[o] = '\0';
	return dst;
}

const char *kx_ctrl_find(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			return s;
	return NULL;
}
