#!/usr/bin/env bash
# Installs the Debian packages kxprof needs to build and test, when missing.
# Usage: scripts/install-deps.sh [--check]   (--check: only report, exit 1 if missing)
set -euo pipefail

# package -> a file that proves it is installed
declare -A need=(
	[clang]=/usr/bin/clang
	[llvm]=/usr/bin/llvm-strip
	[make]=/usr/bin/make
	[gcc]=/usr/bin/gcc
	[libbpf-dev]=/usr/include/bpf/libbpf.h
	[libelf-dev]=/usr/include/libelf.h
	# record --call-graph dwarf: libdw's dwfl unwinder (elfutils; 0.188 in Debian 12):
	# its header to build, libdw1 (opened at run time) to unwind
	[libdw-dev]=/usr/include/elfutils/libdwfl.h
	[zlib1g-dev]=/usr/include/zlib.h
	[libisal-dev]=/usr/include/isa-l.h
	[libzstd-dev]=/usr/include/zstd.h
	[bpftool]=/usr/sbin/bpftool
	[protobuf-c-compiler]=/usr/bin/protoc-c
	[libprotobuf-c-dev]=/usr/include/protobuf-c/protobuf-c.h
	[protobuf-compiler]=/usr/bin/protoc
	[python3]=/usr/bin/python3
	[util-linux]=/usr/sbin/losetup
	[libcap2-bin]=/usr/sbin/setcap
	[procps]=/usr/bin/pgrep
	[bpftrace]=/usr/bin/bpftrace
	[strace]=/usr/bin/strace
	[linux-perf]=/usr/bin/perf
	[valgrind]=/usr/bin/valgrind
	[time]=/usr/bin/time
	[libmicrohttpd-dev]=/usr/include/microhttpd.h
	[prometheus]=/usr/bin/promtool
	[curl]=/usr/bin/curl
	[iproute2]=/bin/ss
	# systemd-analyze verify of the installed units runs man for their Documentation= pages
	[man-db]=/usr/bin/man
	[systemtap-sdt-dev]=/usr/bin/dtrace
	[binutils]=/usr/bin/objcopy
	[golang-go]=/usr/bin/go
	# make man: the manual pages from docs/kxprof-*.md
	[go-md2man]=/usr/bin/go-md2man
	[python3-venv]=/usr/share/doc/python3-venv/copyright
	# the viewer test (tests/integration/test_viewers.sh): speedscope from npm in Chromium
	[chromium]=/usr/bin/chromium
	[nodejs]=/usr/bin/node
	[npm]=/usr/bin/npm
	[python3-jsonschema]=/usr/lib/python3/dist-packages/jsonschema/__init__.py
)

missing=()
for pkg in "${!need[@]}"; do
	[ -e "${need[$pkg]}" ] || missing+=("$pkg")
done
# libFuzzer and the sanitizer runtimes of the installed clang (make fuzz).
if command -v clang >/dev/null &&
	! compgen -G "$(clang -print-resource-dir)/lib/*/libclang_rt.fuzzer*.a" >/dev/null; then
	missing+=("libclang-rt-$(clang -dumpversion | cut -d. -f1)-dev")
fi

if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
if [ "${1:-}" = "--check" ]; then
	echo "missing packages: ${missing[*]}" >&2
	exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
	echo "kxprof: missing packages: ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
	exit 1
fi
echo "kxprof: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
