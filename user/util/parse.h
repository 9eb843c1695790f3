/*
 * Strict numbers from option values and environment variables: the whole
 * text must be one finite number inside the allowed range. Empty text,
 * trailing junk, NaN, infinity, a sign where none is allowed and values out
 * of range are refused with a message that names the range in plain
 * numbers ("--ringbuf-mb: 'nan' is not a number above 0 and at most 1024").
 */
#ifndef KX_PARSE_H
#define KX_PARSE_H

#include <stddef.h>

/* Allowed values of a decimal number: lo..hi, lo itself excluded when lo_open. */
struct kx_num_range {
	double lo;
	double hi;
	int lo_open; /* "above lo" instead of "from lo" */
};

/*
 * Parses s as a decimal number in r. 0, or -1 with err set to
 * "NAME: 'S' is not a number ..." (or "not a number ..." when name is NULL).
 */
int kx_parse_double(const char *name, const char *s, const struct kx_num_range *r, double *out,
                    char *err, size_t len);
/* Parses s as a whole number (base 10) in lo..hi. 0, or -1 with err as above. */
int kx_parse_long(const char *name, const char *s, long long lo, long long hi, long long *out,
                  char *err, size_t len);

#endif /* KX_PARSE_H */
