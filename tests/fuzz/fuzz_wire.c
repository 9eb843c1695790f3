/*
 * libFuzzer target for the daemon protocol (capture/daemon_wire.h) as both
 * ends parse it, and the record stream it carries (io/kxp.h). The first
 * input byte picks what the rest is:
 *   0  bytes a client sends: read as the daemon reads them (kx_dw_read over
 *      a socket, the client's types and limits) and each OPEN decoded as a
 *      capture request, as user/daemon/conn.c does;
 *   1  bytes a daemon sends: read as the client reads them, OPENED, STATUS
 *      and END decoded, the DATA pieces joined and read as a record file;
 *   2  one payload, given to every decoder and to the record reader.
 * Passes when nothing crashes, leaks or trips ASan/UBSan. Run by
 * tests/integration/test_fuzz.sh for a fixed time from the seeds in
 * tests/fuzz/corpus/wire.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "capture/daemon_wire.h"
#include "io/kxp.h"
#include "model/store.h"

#define STORE_LIMIT (64u << 20) /* bytes a fuzzed record may fill */

static void read_record(const void *p, size_t n)
{
	struct kx_store *st = kx_store_new(STORE_LIMIT);
	struct kx_kxp_read_result res;
	struct kx_capinfo ci;
	char err[256];

	if (!st)
		return;
	memset(&res, 0, sizeof(res));
	kx_kxp_read_mem(p, n, st, &ci, &res, err, sizeof(err));
	kx_store_free(st);
}

static void decode_all(const uint8_t *p, size_t n)
{
	static struct kx_dw_request req; /* large: not on the stack */
	struct kx_dw_status s;
	struct kx_dw_end e;
	char mech[16], err[256];

	kx_dw_request_decode(p, n, &req, err, sizeof(err));
	kx_dw_opened_decode(p, n, mech, sizeof(mech), err, sizeof(err));
	kx_dw_status_decode(p, n, &s, err, sizeof(err));
	kx_dw_end_decode(p, n, &e, err, sizeof(err));
}

/* Writes the input into one end of a socket pair and closes it: the other
 * end then reads those bytes and an end of stream. -1 when no pair. */
static int feed(const uint8_t *p, size_t n)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	while (n > 0) {
		ssize_t w = write(sv[1], p, n);

		if (w <= 0)
			break; /* a full buffer: the reader sees a message cut short */
		p += w;
		n -= (size_t)w;
	}
	close(sv[1]);
	return sv[0];
}

static void read_stream(const uint8_t *p, size_t n, int from_client)
{
	static struct kx_dw_request req;
	struct kx_bytes msg = {0}, data = {0};
	char err[256];
	int fd = feed(p, n), type;

	if (fd < 0)
		return;
	while (kx_dw_read(fd, 0, from_client, &type, &msg, err, sizeof(err)) == KX_DW_MSG) {
		if (type == KX_DW_OPEN)
			kx_dw_request_decode(msg.p, msg.len, &req, err, sizeof(err));
		else if (type == KX_DW_DATA && msg.len) {
			uint8_t *room = kx_bytes_room(&data, msg.len);

			if (room) {
				memcpy(room, msg.p, msg.len);
				data.len += msg.len;
			}
		} else if (!from_client)
			decode_all(msg.p, msg.len);
	}
	close(fd);
	if (data.len)
		read_record(data.p, data.len);
	free(msg.p);
	free(data.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	if (n < 1)
		return 0;
	switch (d[0] % 3) {
	case 0:
		read_stream(d + 1, n - 1, 1);
		break;
	case 1:
		read_stream(d + 1, n - 1, 0);
		break;
	default:
		decode_all(d + 1, n - 1);
		read_record(d + 1, n - 1);
		break;
	}
	return 0;
}
