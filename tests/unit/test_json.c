/* util/json: escaping, UTF-8 validation (invalid, overlong, surrogates,
 * truncated), the buffer and FILE writers agreeing, numbers (every digit
 * count, both sides of each power of ten, against printf). */
#include <stdint.h>

#include "kxtest.h"
#include "util/json.h"

/* s[0..n) escaped by both writers; they must agree. NULL when they differ. */
static const char *esc(const char *s, size_t n)
{
	static char a[512], b[512];
	char *e = kx_json_put_str(a, s, n);
	FILE *f = fmemopen(b, sizeof(b), "w");

	*e = '\0';
	if (!f)
		return NULL;
	kx_json_str(f, s, n);
	fputc('\0', f);
	fclose(f);
	return strcmp(a, b) ? NULL : a;
}
#define ESC(lit) esc(lit, sizeof(lit) - 1)

static void ascii_and_controls(void)
{
	CHECK_STR(ESC(""), "\"\"");
	CHECK_STR(ESC("KVM_RUN"), "\"KVM_RUN\"");
	CHECK_STR(ESC("a\"b\\c"), "\"a\\\"b\\\\c\"");
	CHECK_STR(ESC("\n\r\t"), "\"\\n\\r\\t\"");
	CHECK_STR(ESC("\x01\x1f\x7f"), "\"\\u0001\\u001f\\u007f\"");
	CHECK_STR(esc("a\0b", 3), "\"a\\u0000b\"");
}

static void valid_utf8_copied(void)
{
	CHECK_STR(ESC("\xc3\xa9"), "\"\xc3\xa9\"");                 /* U+00E9 */
	CHECK_STR(ESC("\xe2\x82\xac"), "\"\xe2\x82\xac\"");         /* U+20AC */
	CHECK_STR(ESC("\xf0\x9f\x98\x80"), "\"\xf0\x9f\x98\x80\""); /* U+1F600 */
	CHECK_STR(ESC("\xf4\x8f\xbf\xbf"), "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
	CHECK_STR(ESC("\xed\x9f\xbf"), "\"\xed\x9f\xbf\"");         /* U+D7FF */
}

static void invalid_utf8_replaced(void)
{
	/* Lone continuation, Latin-1, invalid leads. */
	CHECK_STR(ESC("\x80"), "\"\\ufffd\"");
	CHECK_STR(ESC("caf\xe9"), "\"caf\\ufffd\"");
	CHECK_STR(ESC("\xff\xfe"), "\"\\ufffd\\ufffd\"");
	/* Overlongs: each byte replaced. */
	CHECK_STR(ESC("\xc0\xaf"), "\"\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xc1\xbf"), "\"\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xe0\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xf0\x80\x80\xaf"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* Surrogates and beyond U+10FFFF. */
	CHECK_STR(ESC("\xed\xa0\x80"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xed\xbf\xbf"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xf4\x90\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xf5\x80\x80\x80"), "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
	/* Truncated at the end, and cut by an ASCII byte. */
	CHECK_STR(ESC("ab\xe2\x82"), "\"ab\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xf0\x9f\x98"), "\"\\ufffd\\ufffd\\ufffd\"");
	CHECK_STR(ESC("\xc3z"), "\"\\ufffdz\"");
	/* A valid sequence cut by n: the tail is not read. */
	CHECK_STR(esc("\xc3\xa9", 1), "\"\\ufffd\"");
}

static void utf8_len_rule(void)
{
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"a", 1), 1);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xc2\x80", 2), 2);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xc2\x80", 1), 0);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xe0\xa0\x80", 3), 3);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xe0\x9f\xbf", 3), 0);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xf0\x90\x80\x80", 4), 4);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xf0\x8f\xbf\xbf", 4), 0);
	CHECK_EQ_U(kx_utf8_len((const unsigned char *)"\xe2\x28\xa1", 3), 0);
}

static void long_string_room(void)
{
	char in[64], out[KX_JSON_STR_ROOM(64)], *e;

	memset(in, 0x01, sizeof(in)); /* the worst case: 6 bytes each */
	e = kx_json_put_str(out, in, sizeof(in));
	CHECK_EQ_U((size_t)(e - out), KX_JSON_STR_ROOM(64));
}

static void numbers(void)
{
	char b[KX_JSON_NUM_ROOM + 1];

	*kx_json_put_u64(b, 0) = '\0';
	CHECK_STR(b, "0");
	*kx_json_put_u64(b, UINT64_MAX) = '\0';
	CHECK_STR(b, "18446744073709551615");
	*kx_json_put_i64(b, -1) = '\0';
	CHECK_STR(b, "-1");
	*kx_json_put_i64(b, INT64_MIN) = '\0';
	CHECK_STR(b, "-9223372036854775808");
	*kx_json_put_i64(b, INT64_MAX) = '\0';
	CHECK_STR(b, "9223372036854775807");
	/* Every digit count and both sides of every power of ten, against printf. */
	for (uint64_t p = 1;; p *= 10) {
		const uint64_t vals[] = {p - 1, p, p + 1, p * 3 + 7};

		for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
			char want[32];

			snprintf(want, sizeof(want), "%llu", (unsigned long long)vals[i]);
			*kx_json_put_u64(b, vals[i]) = '\0';
			CHECK_STR(b, want);
		}
		if (p > UINT64_MAX / 10)
			break;
	}
	for (uint64_t v = 0; v < 100000; v += 7) {
		char want[32];

		snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
		*kx_json_put_u64(b, v) = '\0';
		CHECK_STR(b, want);
	}
}

int main(void)
{
	RUN(ascii_and_controls);
	RUN(valid_utf8_copied);
	RUN(invalid_utf8_replaced);
	RUN(utf8_len_rule);
	RUN(long_string_room);
	RUN(numbers);
	KXT_EXIT();
}
