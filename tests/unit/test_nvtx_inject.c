/*
 * The NVTX injection library (build/libkxprof_nvtx.so) driven as the NVTX v3
 * headers drive a tool (tests/workloads/nvtx_driver, two clients): it fills
 * the slots and answers push/pop with their levels; with KXPROF_NVTX_FORWARD
 * naming a previous tool (build/tests/libnvtx_recorder.so) that tool is
 * initialised once per client and sees every call, with its own domain,
 * string and range handles, plus the slots kxprof does not handle; a
 * forward that cannot be loaded, or that names the library itself, is said
 * on stderr and NVTX still reaches kxprof.
 */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "kxtest.h"

static char bdir[PATH_MAX];

/* Output (stdout and stderr) of the driver with forward (NULL: none); exit status. */
static int drive(const char *forward, char *out, size_t len)
{
	char cmd[PATH_MAX * 4];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
	         "NVTX_INJECTION64_PATH=%s/libkxprof_nvtx.so %s%s %s/tests/nvtx_driver 2>&1", bdir,
	         forward ? "KXPROF_NVTX_FORWARD=" : "", forward ? forward : "", bdir);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	return pclose(p);
}

#define LEVELS "\"levels\":\"0,1,2,2,1,0\""

static void test_forward_to_previous_tool(void)
{
	char fwd[PATH_MAX + 32], out[8192];

	snprintf(fwd, sizeof(fwd), "%s/tests/libnvtx_recorder.so", bdir);
	CHECK(drive(fwd, out, sizeof(out)) == 0 || !printf("# %s\n", out));
	CHECK(strstr(out, LEVELS));
	/* The W push is not a slot the recorder fills: it does not see it. */
	CHECK_STR(strstr(out, "\"recorder\":\""),
	          "\"recorder\":\"init:v3;init:v3;mark:m1;push:a;pushex:b;pop;pop;pop;"
	          "domain:dom1;dpush:dom1:d;register:dom1:reg;dmark:dom1:reg;dpop:dom1;"
	          "start:x=500;dstart:dom1:y=501;end:500;dend:dom1:501;thread:t;push:c2;pop;"
	          "destroy:dom1;\"}\n");
}

static void test_no_forward(void)
{
	char out[8192];

	CHECK(drive(NULL, out, sizeof(out)) == 0 || !printf("# %s\n", out));
	CHECK(strstr(out, LEVELS));
	CHECK(strstr(out, "\"recorder\":\"\""));
	CHECK(!strstr(out, "kxprof_nvtx:"));
}

static void test_forward_missing(void)
{
	char out[8192];

	CHECK(drive("/nonexistent/libtool.so", out, sizeof(out)) == 0 || !printf("# %s\n", out));
	CHECK(strstr(out, "kxprof_nvtx: cannot load KXPROF_NVTX_FORWARD=/nonexistent/libtool.so"));
	CHECK(strstr(out, LEVELS));
}

static void test_forward_to_itself(void)
{
	char self[PATH_MAX + 32], out[8192];

	snprintf(self, sizeof(self), "%s/libkxprof_nvtx.so", bdir);
	CHECK(drive(self, out, sizeof(out)) == 0 || !printf("# %s\n", out));
	CHECK(strstr(out, "is this library: not forwarding to itself"));
	CHECK(strstr(out, LEVELS));
}

int main(void)
{
	ssize_t n = readlink("/proc/self/exe", bdir, sizeof(bdir) - 1);

	if (n <= 0)
		return 1;
	bdir[n] = 0;
	*strrchr(bdir, '/') = 0;
	*strrchr(bdir, '/') = 0; /* build/tests/test_nvtx_inject -> build */
	RUN(test_forward_to_previous_tool);
	RUN(test_no_forward);
	RUN(test_forward_missing);
	RUN(test_forward_to_itself);
	KXT_EXIT();
}
