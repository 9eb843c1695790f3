/*
 * util/cmdline.h: a command line becomes one label (the program's last path
 * component, arguments joined by spaces, unprintable bytes as '?'), cut at
 * the room given without a trailing space; this process's own line is read.
 */
#include <string.h>
#include <unistd.h>

#include "kxtest.h"
#include "util/cmdline.h"

static void formats(void)
{
	static const char raw[] = "/usr/bin/python3\0train.py\0--lr\0"
	                          "0.1\0";
	char out[64];

	CHECK_EQ_U(kx_cmdline_format(out, sizeof(out), raw, sizeof(raw) - 1), 25);
	CHECK_STR(out, "python3 train.py --lr 0.1");
	/* Empty arguments collapse; a path ending in '/' keeps its name. */
	CHECK_STR((kx_cmdline_format(out, sizeof(out), "a\0\0b", 4), out), "a b");
	CHECK_STR((kx_cmdline_format(out, sizeof(out), "dir/\0x", 6), out), "dir/ x");
	/* Control and non-ASCII bytes cannot forge a line or an escape. */
	CHECK_STR((kx_cmdline_format(out, sizeof(out), "sh\0a\nb\x1b\xc3", 8), out), "sh a?b??");
	/* No arguments: a kernel thread, a zombie. */
	CHECK_EQ_U(kx_cmdline_format(out, sizeof(out), "", 0), 0);
	CHECK_STR(out, "");
}

static void cuts(void)
{
	char out[8];

	CHECK_EQ_U(kx_cmdline_format(out, sizeof(out), "/bin/prog\0argument", 18), 7);
	CHECK_STR(out, "prog ar");
	/* Never ends on the space before an argument that does not fit. */
	CHECK_STR((kx_cmdline_format(out, 7, "abcde\0fg", 8), out), "abcde");
	CHECK_EQ_U(kx_cmdline_format(out, 1, "abc", 3), 0);
	CHECK_STR(out, "");
}

static void reads_own(void)
{
	char out[128];

	CHECK(kx_cmdline_read((uint32_t)getpid(), out, sizeof(out)) > 0);
	CHECK(strstr(out, "test_cmdline") == out);
	CHECK(kx_cmdline_read(0, out, sizeof(out)) == -1 && out[0] == '\0');
}

int main(void)
{
	RUN(formats);
	RUN(cuts);
	RUN(reads_own);
	KXT_EXIT();
}
