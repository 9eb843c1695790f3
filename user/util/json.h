/*
 * JSON writing: the one string escaper (with the one UTF-8 validator) and
 * number formatting, to a memory buffer (fast, for the exporters) or to a
 * FILE *.
 *
 * Strings: quote, backslash, \n, \r and \t get their short escapes; other
 * control characters and DEL become \u00XX; valid UTF-8 (RFC 3629: no
 * overlongs, no surrogates, nothing above U+10FFFF) is copied; every byte
 * that is not part of a valid sequence (a name cut mid-character, Latin-1)
 * becomes \ufffd, so the output always parses.
 */
#ifndef KX_JSON_H
#define KX_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Most bytes kx_json_put_str writes for n input bytes. */
#define KX_JSON_STR_ROOM(n) (6 * (size_t)(n) + 2)
/* Most bytes of a number from kx_json_put_u64 / kx_json_put_i64. */
#define KX_JSON_NUM_ROOM 20

/* Bytes of the valid UTF-8 sequence at s (n > 0 bytes left; 1 for ASCII),
 * 0 when the bytes there are not valid UTF-8. */
size_t kx_utf8_len(const unsigned char *s, size_t n);

/* Writes s[0..n) as a quoted JSON string at o (room: KX_JSON_STR_ROOM(n));
 * returns the end. */
char *kx_json_put_str(char *o, const char *s, size_t n);
/* The same to f. */
void kx_json_str(FILE *f, const char *s, size_t n);
/* A NUL-terminated string to f. */
void kx_json_cstr(FILE *f, const char *s);

/* "00" "01" ... "99": two digits per step. */
extern const char kx_json_digit_pairs[200];

/* Decimal digits of v (1 for 0). */
static inline unsigned int kx_json_digits(uint64_t v)
{
	unsigned int n = 1;

	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

/* Decimal v at o (room: KX_JSON_NUM_ROOM); returns the end. Inline: the
 * exporters write several numbers per event. Written from the end, two
 * digits at a time, straight into place. */
static inline char *kx_json_put_u64(char *o, uint64_t v)
{
	char *end = o + kx_json_digits(v), *p = end;

	while (v >= 100) {
		const char *d = kx_json_digit_pairs + (v % 100) * 2;

		v /= 100;
		p -= 2;
		p[0] = d[0];
		p[1] = d[1];
	}
	if (v >= 10) {
		p -= 2;
		p[0] = kx_json_digit_pairs[v * 2];
		p[1] = kx_json_digit_pairs[v * 2 + 1];
	} else {
		p[-1] = (char)('0' + v);
	}
	return end;
}

static inline char *kx_json_put_i64(char *o, int64_t v)
{
	if (v >= 0)
		return kx_json_put_u64(o, (uint64_t)v);
	*o++ = '-';
	return kx_json_put_u64(o, (uint64_t)0 - (uint64_t)v);
}

#endif /* KX_JSON_H */
