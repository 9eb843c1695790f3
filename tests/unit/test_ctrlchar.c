/*
 * util/ctrlchar.h: the first control character is found (none in plain or
 * UTF-8 text; newline, escape, DEL found); escaping turns a forged log line
 * into one printable line, and cuts at the buffer without a half escape.
 */
#include <string.h>

#include "kxtest.h"
#include "util/ctrlchar.h"

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

	CHECK_STR(kx_ctrl_escape(out, sizeof(out), "/x\nkxprof serve: s 7\t\r"),
	          "/x\\nkxprof serve: s 7\\t\\r");
	CHECK_STR(kx_ctrl_escape(out, sizeof(out), "a\x1b[2J\\b"), "a\\x1b[2J\\\\b");
	CHECK(kx_ctrl_find(out) == NULL);
	/* Cut: never half an escape. */
	CHECK_STR(kx_ctrl_escape(out, 5, "ab\ncd"), "ab\\n");
	CHECK_STR(kx_ctrl_escape(out, 4, "ab\ncd"), "ab");
	CHECK_STR(kx_ctrl_escape(out, 1, "abc"), "");
}

int main(void)
{
	RUN(finds);
	RUN(escapes);
	KXT_EXIT();
}
