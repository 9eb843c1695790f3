/*
 * Numbers for people: a time in the unit that suits it and a share as a
 * percentage, as every table of kxprof prints them.
 */
#ifndef KX_UTIL_UNITS_H
#define KX_UTIL_UNITS_H

#include <stddef.h>
#include <stdint.h>

/* How a time is written: for tables (4 significant digits, "µs"), or for
 * fixed-width columns of a live view (fixed decimals per unit, ASCII "us" so
 * a byte is a column, "-" for 0: nothing measured). */
enum kx_time_style { KX_TIME_TABLE, KX_TIME_COLUMN };

/* ns with the unit chosen per value: "412ns", "9.512µs", "1.379ms", "12.41s". */
void kx_fmt_time(char *buf, size_t len, uint64_t ns);
/* The same in a style: KX_TIME_COLUMN gives "-", "412ns", "9.5us", "1.38ms", "12.41s". */
void kx_fmt_time_as(char *buf, size_t len, uint64_t ns, enum kx_time_style style);
/* part / whole as a percentage with one decimal, rounded ("37.5%"). */
void kx_fmt_share(char *buf, size_t len, uint64_t part, uint64_t whole);

#endif /* KX_UTIL_UNITS_H */
