/* Strict number parsing with plain-number range messages. */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/parse.h"

/* The shortest text that reads back as v: "0.0625", "1024", "1048576". */
static void plain(double v, char *buf, size_t len)
{
	/* (whole: no floor(), so nothing here needs libm) */
	if (fabs(v) < 1e15 && v == (double)(int64_t)v) {
		snprintf(buf, len, "%.0f", v);
		return;
	}
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(buf, len, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

static void say(const char *name, const char *s, const char *what, char *err, size_t len)
{
	if (name)
		snprintf(err, len, "%s: '%s' is not %s", name, s, what);
	else
		snprintf(err, len, "not %s", what);
}

/* Digits, at most one '.', an exponent, and a leading '-' only: no spaces, no "0x". */
static int looks_decimal(const char *s)
{
	if (*s == '-')
		s++;
	if (!*s || (!(*s >= '0' && *s <= '9') && *s != '.'))
		return 0;
	for (; *s; s++)
		if (!strchr("0123456789.eE+-", *s))
			return 0;
	return 1;
}

int kx_parse_double(const char *name, const char *s, const struct kx_num_range *r, double *out,
                    char *err, size_t len)
{
	char lo[32], hi[32], what[96];
	char *end;
	double v;

	plain(r->lo, lo, sizeof(lo));
	plain(r->hi, hi, sizeof(hi));
	if (r->lo_open)
		snprintf(what, sizeof(what), "a number above %s and at most %s", lo, hi);
	else
		snprintf(what, sizeof(what), "a number between %s and %s", lo, hi);
	errno = 0;
	v = looks_decimal(s) ? strtod(s, &end) : NAN;
	if (isnan(v) || *end || errno || !isfinite(v) || v < r->lo || v > r->hi ||
	    (r->lo_open && v == r->lo)) {
		say(name, s, what, err, len);
		return -1;
	}
	*out = v;
	return 0;
}

int kx_parse_long(const char *name, const char *s, long long lo, long long hi, long long *out,
                  char *err, size_t len)
{
	char what[96];
	const char *p = *s == '-' ? s + 1 : s;
	char *end;
	long long v;

	snprintf(what, sizeof(what), "a whole number between %lld and %lld", lo, hi);
	errno = 0;
	v = *p >= '0' && *p <= '9' ? strtoll(s, &end, 10) : 0;
	if (!(*p >= '0' && *p <= '9') || *end || errno || v < lo || v > hi) {
		say(name, s, what, err, len);
		return -1;
	}
	*out = v;
	return 0;
}
