/* Control characters in others' text (contract: ctrlchar.h). */
#include <stdio.h>
#include <string.h>

#include "util/ctrlchar.h"

static int is_ctrl(unsigned char c)
{
	return c < 0x20 || c == 0x7f;
}

const char *kx_ctrl_find(const char *s)
{
	for (; *s; s++)
		if (is_ctrl((unsigned char)*s))
			return s;
	return NULL;
}

/* The escape of c ("" when c stands for itself), in buf. */
static const char *escape_of(unsigned char c, char buf[8])
{
	if (c == '\n')
		return "\\n";
	if (c == '\t')
		return "\\t";
	if (c == '\r')
		return "\\r";
	if (c == '\\')
		return "\\\\";
	if (is_ctrl(c)) {
		snprintf(buf, 8, "\\x%02x", c);
		return buf;
	}
	return "";
}

char *kx_ctrl_escape(char *dst, size_t len, const char *s)
{
	size_t n = 0;
	char buf[8];

	if (!len)
		return dst;
	for (; *s; s++) {
		const char *e = escape_of((unsigned char)*s, buf);
		size_t k = *e ? strlen(e) : 1;

		if (n + k >= len)
			break;
		if (*e)
			memcpy(dst + n, e, k);
		else
			dst[n] = *s;
		n += k;
	}
	dst[n] = 0;
	return dst;
}
