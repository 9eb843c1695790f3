/* Readable times and shares for tables (see units.h). */
#include <inttypes.h>
#include <stdio.h>

#include "util/units.h"

/*
 * ns as a time a reader takes in at a glance, the unit chosen per value as
 * perf and bcc scale theirs: whole ns below 1 µs ("412ns"), else 4
 * significant digits in µs, ms or s ("9.512µs", "834.2µs", "1.379ms",
 * "333.7ms", "12.41s"; whole seconds from 10000 s). Columns: "-" for 0 (not
 * measured), whole ns below 1 µs, else 1 decimal in us, 2 in ms and s.
 */
void kx_fmt_time_as(char *buf, size_t len, uint64_t ns, enum kx_time_style style)
{
	static const struct {
		uint64_t ns;
		const char *name;
	} unit[] = {{1000, "µs"}, {1000000, "ms"}, {1000000000, "s"}};

	if (style == KX_TIME_COLUMN && !ns) {
		snprintf(buf, len, "-");
		return;
	}
	if (ns < 1000) {
		snprintf(buf, len, "%" PRIu64 "ns", ns);
		return;
	}
	if (style == KX_TIME_COLUMN) {
		if (ns < 1000000)
			snprintf(buf, len, "%.1fus", ns / 1e3);
		else if (ns < 1000000000)
			snprintf(buf, len, "%.2fms", ns / 1e6);
		else
			snprintf(buf, len, "%.2fs", ns / 1e9);
		return;
	}
	for (int u = 0; u < 3; u++) {
		uint64_t pow10 = 1000;

		/* The most decimals that keep 4 digits; 0 decimals only in seconds. */
		for (int dec = 3; dec >= (u == 2 ? 0 : 1); dec--, pow10 /= 10) {
			unsigned __int128 v =
			        ((unsigned __int128)ns * pow10 + unit[u].ns / 2) / unit[u].ns;

			if (v >= 10000 && !(u == 2 && dec == 0))
				continue;
			if (dec)
				snprintf(buf, len, "%" PRIu64 ".%0*" PRIu64 "%s",
				         (uint64_t)(v / pow10), dec, (uint64_t)(v % pow10),
				         unit[u].name);
			else
				snprintf(buf, len, "%" PRIu64 "%s", (uint64_t)v, unit[u].name);
			return;
		}
	}
}

void kx_fmt_time(char *buf, size_t len, uint64_t ns)
{
	kx_fmt_time_as(buf, len, ns, KX_TIME_TABLE);
}

/* part / whole as a percentage with one decimal, rounded. */
void kx_fmt_share(char *buf, size_t len, uint64_t part, uint64_t whole)
{
	uint64_t permille =
	        whole ? (uint64_t)(((unsigned __int128)part * 1000 + whole / 2) / whole) : 0;

	snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%%", permille / 10, permille % 10);
}
