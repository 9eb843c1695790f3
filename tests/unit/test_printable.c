/*
 * util/printable.h: the first control character is found (none in plain or
 * UTF-8 text; newline, escape, DEL found); escaping turns a forged log line
 * or a terminal escape into one line of printable text, and cuts at the
 * buffer without a half escape.
 */
#include <string.h>

#include "kxtest.h"
#include "util/printable.h"

static void finds(void)
{
	const char *s = "/dev/kvm\nkxprof serve: forged";

	CHECK(kx_ctrl_find("/dev/dri/renderD128") == NULL);
	CHECK(kx_ctrl_find("caf\xc3\xa9") == NULL);
	CHECK(kx_ctrl_find(s) == s + 8);
	CHECK(kx_ctrl_find("a\x1b[2Jb") != NULL);
	CHECK(kx_ctrl_find("a\x7f") != NULL);
	CHECK(kx_ctrl_find("") == NULL);
}

static void escapes(void)
{
	char out[64];
	const char *forged = "/x\nkxprof serve: s 7\t\r";

	CHECK_STR(kx_printable(out, sizeof(out), forged, strlen(forged)),
	          "/x\\x0akxprof serve: s 7\\x09\\x0d");
	CHECK_STR(kx_printable(out, sizeof(out), "a\x1b[2Jb\x9b", 7), "a\\x1b[2Jb\\x9b");
	CHECK(kx_ctrl_find(out) == NULL);
	/* Stops at a NUL, and at n bytes. */
	CHECK_STR(kx_printable(out, sizeof(out), "ab\0cd", 5), "ab");
	CHECK_STR(kx_printable(out, sizeof(out), "abcd", 2), "ab");
	/* Cut: never half an escape. */
	CHECK_STR(kx_printable(out, 7, "ab\ncd", 5), "ab\\x0a");
	CHECK_STR(kx_printable(out, 6, "ab\ncd", 5), "ab");
	CHECK_STR(kx_printable(out, 1, "abc", 3), "");
}

int main(void)
{
	RUN(finds);
	RUN(escapes);
	KXT_EXIT();
}
