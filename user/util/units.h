/*
 * Numbers for people: a time in the unit that suits it and a share as a
 * percentage, as every table of kxprof prints them.
 */
#ifndef KX_UTIL_UNITS_H
#define KX_UTIL_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* ns with the unit chosen per value: "412ns", "9.512µs", "1.379ms", "12.41s". */
void kx_fmt_time(char *buf, size_t len, uint64_t ns);
/* part / whole as a percentage with one decimal, rounded ("37.5%"). */
void kx_fmt_share(char *buf, size_t len, uint64_t part, uint64_t whole);

#endif /* KX_UTIL_UNITS_H */
