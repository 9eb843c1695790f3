/* JSON strings and numbers (contract: json.h). */
#include <string.h>

#include "util/json.h"

const char kx_json_digit_pairs[200] = "00010203040506070809"
                                      "10111213141516171819"
                                      "20212223242526272829"
                                      "30313233343536373839"
                                      "40414243444546474849"
                                      "50515253545556575859"
                                      "60616263646566676869"
                                      "70717273747576777879"
                                      "80818283848586878889"
                                      "90919293949596979899";

size_t kx_utf8_len(const unsigned char *s, size_t n)
{
	unsigned int c = s[0], lo = 0x80, hi = 0xbf;
	size_t len;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		len = 2;
	else if (c >= 0xe0 && c <= 0xef)
		len = 3;
	else if (c >= 0xf0 && c <= 0xf4)
		len = 4;
	else
		return 0;
	if (n < len)
		return 0;
	/* The second byte's range is what rules out overlongs, surrogates and
	 * code points above U+10FFFF. */
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

/* Printed as is inside a JSON string. */
static inline int plain(unsigned int c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* The escape or copy of what starts at p (not plain; left bytes to the
 * end) at o; returns the bytes written, *used the bytes consumed. */
static size_t esc_one(char *o, const unsigned char *p, size_t left, size_t *used)
{
	static const char hex[] = "0123456789abcdef";
	unsigned int c = *p;
	size_t l;

	*used = 1;
	switch (c) {
	case '"':
	case '\\':
		o[0] = '\\';
		o[1] = (char)c;
		return 2;
	case '\n':
		memcpy(o, "\\n", 2);
		return 2;
	case '\r':
		memcpy(o, "\\r", 2);
		return 2;
	case '\t':
		memcpy(o, "\\t", 2);
		return 2;
	}
	if (c < 0x80) {
		memcpy(o, "\\u00", 4);
		o[4] = hex[c >> 4];
		o[5] = hex[c & 15];
		return 6;
	}
	l = kx_utf8_len(p, left);
	if (!l) {
		memcpy(o, "\\ufffd", 6);
		return 6;
	}
	memcpy(o, p, l);
	*used = l;
	return l;
}

char *kx_json_put_str(char *o, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;

	*o++ = '"';
	while (p < end) {
		size_t used;

		if (plain(*p)) {
			*o++ = (char)*p++;
			continue;
		}
		o += esc_one(o, p, (size_t)(end - p), &used);
		p += used;
	}
	*o++ = '"';
	return o;
}

void kx_json_str(FILE *f, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + n;
	char tmp[8];

	fputc('"', f);
	while (p < end) {
		const unsigned char *run = p;
		size_t used, w;

		while (p < end && plain(*p))
			p++;
		fwrite(run, 1, (size_t)(p - run), f);
		if (p == end)
			break;
		w = esc_one(tmp, p, (size_t)(end - p), &used);
		fwrite(tmp, 1, w, f);
		p += used;
	}
	fputc('"', f);
}

void kx_json_cstr(FILE *f, const char *s)
{
	kx_json_str(f, s, strlen(s));
}
