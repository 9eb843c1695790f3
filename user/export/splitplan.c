/* The split plan of a conversion: its parts' names and notes (export/splitplan.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "export/splitplan.h"
#include "util/outfile.h"

/* NAME.0001.json.gz for NAME.json.gz (and .json, .gz, or no suffix). 0, or -1 when too long. */
static int part_name(char *buf, size_t len, const char *path, size_t index, size_t count)
{
	static const char *const sfx[] = {".json.gz", ".json", ".gz"};
	size_t n = strlen(path), cut = n;
	int w = count > 9999 ? snprintf(NULL, 0, "%zu", count) : 4;

	for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]) && cut == n; i++) {
		size_t m = strlen(sfx[i]);

		if (n > m && !strcmp(path + n - m, sfx[i]))
			cut = n - m;
	}
	return (size_t)snprintf(buf, len, "%.*s.%0*zu%s", (int)cut, path, w, index, path + cut) >=
	                       len
	               ? -1
	               : 0;
}

/* Seconds of t from the capture start (negative for events before it). */
static double rel_s(const struct kx_capinfo *ci, uint64_t t)
{
	return (double)((int64_t)t - (int64_t)ci->start_mono_ns) / 1e9;
}

void kx_split_whole(struct kx_split_part *pt, const struct kx_xspace_opts *xo, const char *chrome)
{
	memset(pt, 0, sizeof(*pt));
	pt->xo = *xo;
	pt->chrome = chrome;
}

int kx_split_part_of(const struct kx_capinfo *ci, const struct kx_windows *wn, size_t k,
                     const struct kx_xspace_opts *base, const char *chrome, const char *input,
                     struct kx_split_part *pt, char *err, size_t errlen)
{
	const struct kx_window *w = &wn->w[k];
	uint64_t from = k ? w->from_ns : w->first_ns, to = k + 1 < wn->n ? w->to_ns : w->last_ns;

	memset(pt, 0, sizeof(*pt));
	pt->is_part = 1;
	pt->xo = *base;
	pt->xo.from_mono_ns = w->from_ns;
	pt->xo.to_mono_ns = w->to_ns;
	pt->xo.note = pt->note;
	pt->cp = (struct kx_chrome_part){k + 1, wn->n, w->from_ns, w->to_ns, w->events};
	snprintf(pt->suffix, sizeof(pt->suffix), "_part%04zu_%.3fs-%.3fs", k + 1, rel_s(ci, from),
	         rel_s(ci, to));
	snprintf(pt->note, sizeof(pt->note),
	         "part %zu of %zu of a capture split by time (--split-events): the %zu events "
	         "starting from %.3f s to %.3f s after the capture start; an event spanning a cut "
	         "is in the part where it starts",
	         k + 1, wn->n, w->events, rel_s(ci, from), rel_s(ci, to));
	if (!chrome)
		return 0;
	if (part_name(pt->chrome_path, sizeof(pt->chrome_path), chrome, k + 1, wn->n)) {
		snprintf(err, errlen, "output path too long: %s", chrome);
		return -1;
	}
	if (kx_outfile_check(pt->chrome_path, 0, &input, 1, err, errlen))
		return -1;
	pt->chrome = pt->chrome_path;
	return 0;
}

int kx_split_check(const struct kx_capinfo *ci, const struct kx_windows *wn,
                   const struct kx_xspace_opts *xo, const char *chrome, size_t split,
                   const char *input, char *err, size_t errlen)
{
	struct kx_split_part pt;

	if (chrome && !strcmp(chrome, "-")) {
		snprintf(
		        err, errlen,
		        "%zu events need %zu traces of at most %zu (--split-events): give --chrome "
		        "a file name for the parts, or --split-events 0 for one trace on standard "
		        "output",
		        wn->total, wn->n, split);
		return -1;
	}
	for (size_t k = 0; k < wn->n; k++)
		if (kx_split_part_of(ci, wn, k, xo, chrome, input, &pt, err, errlen))
			return -1;
	return 0;
}
