/* Strict number parsing: what is accepted, what is refused and what the message says. */
#include "kxtest.h"
#include "util/parse.h"

static const struct kx_num_range mib = {.lo = 0, .hi = 1024, .lo_open = 1};
static const struct kx_num_range secs = {.lo = 0.05, .hi = 86400};

static void decimals_accepted(void)
{
	char err[128];
	double v = -1;

	CHECK(kx_parse_double("--ringbuf-mb", "0.0625", &mib, &v, err, sizeof(err)) == 0);
	CHECK(v == 0.0625);
	CHECK(kx_parse_double("--ringbuf-mb", "1024", &mib, &v, err, sizeof(err)) == 0);
	CHECK(v == 1024);
	CHECK(kx_parse_double("-i", "0.05", &secs, &v, err, sizeof(err)) == 0);
	CHECK(v == 0.05);
	CHECK(kx_parse_double("-i", "1e2", &secs, &v, err, sizeof(err)) == 0);
	CHECK(v == 100);
	CHECK(kx_parse_double("-i", ".5", &secs, &v, err, sizeof(err)) == 0);
	CHECK(v == 0.5);
}

/* Each refused text leaves the output alone and says the range. */
static void decimals_refused(void)
{
	static const char *const bad[] = {"", "nan", "NaN", "inf", "-inf", "infinity", "1x", " 1",
	                                  "1 ", "0x10", "+1", "--1", "0", "-1", "1025", "1e400",
	                                  ".", "e5",
	                                  /* decimal characters strtod stops short of */
	                                  "1..5", "2-3", "1e", "1.5e+"};
	char err[128];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		double v = 7;

		err[0] = 0;
		if (kx_parse_double("--ringbuf-mb", bad[i], &mib, &v, err, sizeof(err)) != -1 ||
		    v != 7 || !strstr(err, "is not a number above 0 and at most 1024")) {
			printf("FAIL decimals_refused: '%s' gave '%s'\n", bad[i], err);
			kxt_cur_failed = 1;
			return;
		}
	}
}

static void decimal_messages(void)
{
	char err[128];
	double v;

	CHECK(kx_parse_double("--ringbuf-mb", "nan", &mib, &v, err, sizeof(err)) == -1);
	CHECK_STR(err, "--ringbuf-mb: 'nan' is not a number above 0 and at most 1024");
	CHECK(kx_parse_double("-d", "0.01", &secs, &v, err, sizeof(err)) == -1);
	CHECK_STR(err, "-d: '0.01' is not a number between 0.05 and 86400");
	CHECK(kx_parse_double(NULL, "lots", &mib, &v, err, sizeof(err)) == -1);
	CHECK_STR(err, "not a number above 0 and at most 1024");
	{
		struct kx_num_range r = {.lo = 0.00390625, .hi = 1048576};

		CHECK(kx_parse_double("X", "2e6", &r, &v, err, sizeof(err)) == -1);
		CHECK_STR(err, "X: '2e6' is not a number between 0.00390625 and 1048576");
	}
}

static void integers(void)
{
	char err[128];
	long long v = 0;

	CHECK(kx_parse_long("--max-keys", "16", 16, 1 << 20, &v, err, sizeof(err)) == 0);
	CHECK_EQ_U(v, 16);
	CHECK(kx_parse_long("--max-keys", "1048576", 16, 1 << 20, &v, err, sizeof(err)) == 0);
	CHECK_EQ_U(v, 1048576);
	CHECK(kx_parse_long("port", "-3", -5, 5, &v, err, sizeof(err)) == 0);
	CHECK(v == -3);
	CHECK(kx_parse_long("--max-keys", "15", 16, 1 << 20, &v, err, sizeof(err)) == -1);
	CHECK_STR(err, "--max-keys: '15' is not a whole number between 16 and 1048576");
	v = 9;
	{
		static const char *const bad[] = {
		        "",    "16.5", "1e3",  "-20", " 20",
		        "20 ", "+20",  "0x20", "nan", "99999999999999999999"};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
			if (kx_parse_long("-n", bad[i], 16, 1 << 20, &v, err, sizeof(err)) != -1 ||
			    v != 9 || !strstr(err, "whole number between 16 and 1048576")) {
				printf("FAIL integers: '%s' gave '%s'\n", bad[i], err);
				kxt_cur_failed = 1;
				return;
			}
	}
}

int main(void)
{
	RUN(decimals_accepted);
	RUN(decimals_refused);
	RUN(decimal_messages);
	RUN(integers);
	KXT_EXIT();
}
