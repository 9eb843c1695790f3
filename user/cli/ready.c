/*
 * Readiness: record, top and serve say when their hooks are attached and the
 * capture runs, so that a script (the tests too) starts its workload then
 * instead of sleeping a guessed time. Under -v a line on stderr; with
 * KXPROF_READY_FILE=PATH in the environment, PATH appears (written by the
 * safe-output rule: complete or absent) holding kxprof's pid and a newline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/outfile.h"

void kx_say_attached(const char *what)
{
	const char *path = getenv(KX_READY_FILE_ENV);
	char buf[32], err[512];
	int n;

	if (kx_verbose)
		kx_err("attached: %s", what);
	if (!path || !path[0])
		return;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (kx_outfile_write(path, 0, buf, (size_t)n, err, sizeof(err)))
		kx_err("warning: %s=%s not written: %s", KX_READY_FILE_ENV, path, err);
}
