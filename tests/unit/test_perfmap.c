/*
 * symbol/perfmap.h on files of its own (a made-up pid far above pid_max):
 * "START SIZE NAME" lines with and without 0x, names with spaces, lines
 * that are not entries skipped, the last line of a start winning, lookups
 * inside, at the end of and between entries, a file read again only when
 * it changed, no file at all, an empty one (still being written), and a
 * symlink or another user's file refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kxtest.h"
#include "symbol/perfmap.h"

#define FAKE_PID 987654321 /* above any pid_max: no process writes this map */

static char path[64];

static void write_map(const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void parses_and_finds(void)
{
	struct kx_perfmap pm;
	char err[200];
	uint64_t off = 99;
	const char *fn;

	write_map("1000 10 js:hot fn (a.js:1)\n"
	          "0x2000 0x20 py::kx_leaf:/t/x.py\n"
	          "junk line\n"
	          "3000 0 zero-size\n"
	          "1000 8 replaced\n"
	          "4000 10\n");
	kx_perfmap_init(&pm, FAKE_PID, getuid());
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) == 1);
	CHECK_EQ_U(pm.n, 2);
	fn = kx_perfmap_find(&pm, 0x1004, &off);
	CHECK(fn && !strcmp(fn, "replaced"));
	CHECK_EQ_U(off, 4);
	CHECK(kx_perfmap_find(&pm, 0x1008, &off) == NULL); /* past the replacing entry */
	fn = kx_perfmap_find(&pm, 0x201f, &off);
	CHECK(fn && !strcmp(fn, "py::kx_leaf:/t/x.py"));
	CHECK(kx_perfmap_find(&pm, 0x2020, &off) == NULL);
	CHECK(kx_perfmap_find(&pm, 0xfff, &off) == NULL);
	CHECK(kx_perfmap_find(&pm, 0x3000, &off) == NULL);
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) == 0); /* unchanged: not read again */
	write_map("1000 10 js:hot fn (a.js:1)\n5000 4 later\n");
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) == 1);
	fn = kx_perfmap_find(&pm, 0x5002, &off);
	CHECK(fn && !strcmp(fn, "later"));
	fn = kx_perfmap_find(&pm, 0x100f, &off);
	CHECK(fn && !strcmp(fn, "js:hot fn (a.js:1)"));
	kx_perfmap_free(&pm);
	unlink(path);
}

static void no_file(void)
{
	struct kx_perfmap pm;
	char err[200];
	uint64_t off;

	unlink(path);
	kx_perfmap_init(&pm, FAKE_PID, getuid());
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) == 0);
	CHECK(kx_perfmap_find(&pm, 0x1000, &off) == NULL);
	kx_perfmap_free(&pm);
}

/* A map read while its process has created it but written nothing yet. */
static void empty_file(void)
{
	struct kx_perfmap pm;
	char err[200];
	uint64_t off;

	write_map("");
	kx_perfmap_init(&pm, FAKE_PID, getuid());
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) >= 0);
	CHECK_EQ_U(pm.n, 0);
	CHECK(kx_perfmap_find(&pm, 0x1000, &off) == NULL);
	kx_perfmap_free(&pm);
	unlink(path);
}

static void refuses_symlink_and_others(void)
{
	struct kx_perfmap pm;
	char err[200] = "", target[64];

	snprintf(target, sizeof(target), "/tmp/kxtest-perfmap-%d", (int)getpid());
	/* A file of one user, asked for by another's process: refused (root
	 * makes it another user's; as a user, ask for the next uid). */
	write_map("1000 10 other\n");
	if (getuid() == 0)
		CHECK(chown(path, 65534, 65534) == 0);
	kx_perfmap_init(&pm, FAKE_PID, getuid() == 0 ? 65533 : getuid() + 1);
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) == -1);
	CHECK(strstr(err, "not read") != NULL);
	CHECK_EQ_U(pm.n, 0);
	kx_perfmap_free(&pm);
	unlink(path);
	/* A symlink to a file that would parse: never followed. */
	{
		FILE *f = fopen(target, "w");

		CHECK(f != NULL);
		if (f) {
			fputs("1000 10 planted\n", f);
			fclose(f);
		}
	}
	CHECK(symlink(target, path) == 0);
	kx_perfmap_init(&pm, FAKE_PID, getuid());
	CHECK(kx_perfmap_load(&pm, err, sizeof(err)) == -1);
	CHECK(strstr(err, path) != NULL);
	CHECK_EQ_U(pm.n, 0);
	kx_perfmap_free(&pm);
	unlink(path);
	unlink(target);
}

int main(void)
{
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", FAKE_PID);
	RUN(parses_and_finds);
	RUN(no_file);
	RUN(empty_file);
	RUN(refuses_symlink_and_others);
	KXT_EXIT();
}
