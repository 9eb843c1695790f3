/* util/pbwire: varint and zigzag boundaries, sizes, tags, fixed64, fields. */
#include <stdint.h>

#include "kxtest.h"
#include "util/pbwire.h"

static void varint_boundaries(void)
{
	static const struct {
		uint64_t v;
		size_t len;
	} c[] = {
	        {0, 1},           {1, 1},           {127, 1},
	        {128, 2},         {16383, 2},       {16384, 3},
	        {UINT32_MAX, 5},  {1ULL << 56, 9},  {(1ULL << 63) - 1, 9},
	        {1ULL << 63, 10}, {UINT64_MAX, 10},
	};
	uint8_t buf[16];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const uint8_t *p = buf;
		int bad = 0;
		uint8_t *end = kx_pb_varint(buf, c[i].v);

		CHECK_EQ_U((size_t)(end - buf), c[i].len);
		CHECK_EQ_U(kx_pb_varint_size(c[i].v), c[i].len);
		CHECK_EQ_U(kx_pb_read_varint(&p, end, &bad), c[i].v);
		CHECK(!bad && p == end);
	}
	kx_pb_varint(buf, 128);
	CHECK(buf[0] == 0x80 && buf[1] == 0x01);
	kx_pb_varint(buf, UINT64_MAX);
	CHECK(buf[8] == 0xff && buf[9] == 0x01);
}

static void varint_bad_input(void)
{
	uint8_t trunc[] = {0x80, 0x80};
	uint8_t toolong[] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};
	uint8_t eleven[11];
	const uint8_t *p = trunc;
	int bad = 0;

	CHECK_EQ_U(kx_pb_read_varint(&p, trunc + sizeof(trunc), &bad), 0);
	CHECK(bad && p == trunc);
	bad = 0;
	p = toolong;
	kx_pb_read_varint(&p, toolong + sizeof(toolong), &bad);
	CHECK(bad);
	memset(eleven, 0x80, sizeof(eleven));
	bad = 0;
	p = eleven;
	kx_pb_read_varint(&p, eleven + sizeof(eleven), &bad);
	CHECK(bad);
	bad = 0;
	p = trunc;
	kx_pb_read_varint(&p, trunc, &bad); /* empty */
	CHECK(bad);
}

static void zigzag(void)
{
	CHECK_EQ_U(kx_pb_zigzag(0), 0);
	CHECK_EQ_U(kx_pb_zigzag(-1), 1);
	CHECK_EQ_U(kx_pb_zigzag(1), 2);
	CHECK_EQ_U(kx_pb_zigzag(INT64_MAX), UINT64_MAX - 1);
	CHECK_EQ_U(kx_pb_zigzag(INT64_MIN), UINT64_MAX);
	CHECK(kx_pb_unzigzag(UINT64_MAX) == INT64_MIN);
	CHECK(kx_pb_unzigzag(UINT64_MAX - 1) == INT64_MAX);
	for (int64_t v = -300; v <= 300; v++)
		CHECK(kx_pb_unzigzag(kx_pb_zigzag(v)) == v);
}

static void fields(void)
{
	uint8_t buf[64], *e;

	e = kx_pb_vfield(buf, 1, 150); /* the protobuf documentation's example */
	CHECK_EQ_U((size_t)(e - buf), 3);
	CHECK(buf[0] == 0x08 && buf[1] == 0x96 && buf[2] == 0x01);
	CHECK_EQ_U(kx_pb_vfield_size(1, 150), 3);
	e = kx_pb_bytes(buf, 2, "testing", 7);
	CHECK_EQ_U((size_t)(e - buf), 9);
	CHECK(buf[0] == 0x12 && buf[1] == 0x07 && !memcmp(buf + 2, "testing", 7));
	CHECK_EQ_U(kx_pb_len_size(2, 7), 9);
	CHECK_EQ_U(kx_pb_tag_size(15), 1);
	CHECK_EQ_U(kx_pb_tag_size(16), 2);
	e = kx_pb_tag(buf, 16, KX_PB_LEN);
	CHECK(e - buf == 2 && buf[0] == 0x82 && buf[1] == 0x01);
	e = kx_pb_f64field(buf, 3, 0x0102030405060708ULL);
	CHECK(e - buf == 9 && buf[0] == 0x19 && buf[1] == 0x08 && buf[8] == 0x01);
	CHECK_EQ_U(kx_pb_len_size(1, 200), 1 + 2 + 200);
}

int main(void)
{
	RUN(varint_boundaries);
	RUN(varint_bad_input);
	RUN(zigzag);
	RUN(fields);
	KXT_EXIT();
}
