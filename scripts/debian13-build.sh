#!/usr/bin/env bash
# The build and tests on the other Debian release this project supports,
# from a Debian 12 host (gcc 14, clang 19, libbpf 1.5, Python 3.13 on Debian
# 13 against gcc 12, clang 14, libbpf 1.1, Python 3.11 here), as root:
#   scripts/debian13-build.sh CHROOT [--test [PATTERN]]
# makes CHROOT a Debian 13 (trixie) system with debootstrap when it is not
# one yet (about 1 GiB, then 3 to 4 GiB once the packages are in), copies this
# checkout's HEAD into CHROOT/src (replacing an earlier copy there), and runs
# there `make` (which installs the packages scripts/install-deps.sh names),
# `make SAN=1` and `make CC=clang BUILD=build-clang`, each with -Werror as
# always. /proc, /sys (kernel BTF for vmlinux.h) and /dev are bound in and
# unbound after. Prints each build's outcome; exits 0 when all three built.
# Needs debootstrap (installed with apt-get when missing) and the Debian mirror.
#
# --test: then the tests there too (tests/run.sh [PATTERN], as `make test`
# runs them; about 20 minutes in all), with CHROOT bound onto itself (so that
# test_bundle's private mount namespaces work inside it) and /sys and /dev
# bound recursively. The framework venv is made there from
# tests/requirements.txt, less torch: PyPI's torch for Python 3.13 is a CUDA
# build of several GB (this machine's CPU wheel is for 3.11), so the torch
# tests fail there, saying it is missing. This host's CA bundle is copied in
# for pip. Exits 0 when all built and no test failed.
set -u
usage() {
	echo "usage: $0 CHROOT [--test [PATTERN]]" >&2
	exit 2
}
[ $# -ge 1 ] && [ $# -le 3 ] || usage
TEST=0 PATTERN=
if [ $# -ge 2 ]; then
	[ "$2" = --test ] || usage
	TEST=1 PATTERN=${3:-}
fi
[ "$(id -u)" -eq 0 ] || {
	echo "$0: run as root (debootstrap, chroot and mounts need it)" >&2
	exit 2
}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
CH=$(mkdir -p "$1" && cd "$1" && pwd) || exit 1
LOG=$CH/build-logs
say() { echo "debian13-build: $*" >&2; }

if ! grep -q '^13' "$CH/etc/debian_version" 2>/dev/null; then
	if ! command -v debootstrap >/dev/null; then
		apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null ||
			{ say "could not install debootstrap"; exit 1; }
	fi
	say "making $CH a Debian 13 system (debootstrap trixie)"
	debootstrap --variant=minbase --include=ca-certificates trixie "$CH" \
		http://deb.debian.org/debian >"$CH.debootstrap.log" 2>&1 ||
		{ say "debootstrap failed: $CH.debootstrap.log"; exit 1; }
fi
cp /etc/resolv.conf "$CH/etc/resolv.conf"
mounted=()
cleanup() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R "${mounted[i]}"; done
}
trap cleanup EXIT
if [ "$TEST" = 1 ] && ! mountpoint -q "$CH"; then
	mount --bind "$CH" "$CH" && mount --make-private "$CH" || { say "could not bind $CH onto itself"; exit 1; }
	mounted+=("$CH")
fi
for d in proc sys dev; do
	mountpoint -q "$CH/$d" && continue
	if [ "$TEST" = 1 ] && [ "$d" != proc ]; then
		mount --rbind "/$d" "$CH/$d" && mount --make-rslave "$CH/$d"
	else
		mount --bind "/$d" "$CH/$d"
	fi || { say "could not bind /$d"; exit 1; }
	mounted+=("$CH/$d")
done
# make's first step installs the packages; git is needed only to copy the tree.
chroot "$CH" sh -c 'command -v make >/dev/null || { apt-get update -qq &&
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make >/dev/null; }' ||
	{ say "could not install make in $CH"; exit 1; }
rm -rf "$CH/src" && mkdir -p "$CH/src" "$LOG" &&
	git -C "$ROOT" archive HEAD | tar -x -C "$CH/src" || { say "could not copy HEAD"; exit 1; }
say "Debian $(cat "$CH/etc/debian_version"), HEAD $(git -C "$ROOT" rev-parse --short HEAD)"

fails=0
build() {
	local name=$1
	shift
	if chroot "$CH" sh -c "cd /src && make -j$(nproc) $*" >"$LOG/$name.log" 2>&1; then
		say "$name: built"
	else
		say "$name: FAILED ($LOG/$name.log):"
		grep -m 5 -E 'error|Error' "$LOG/$name.log" >&2
		fails=$((fails + 1))
	fi
}
build gcc ""
build gcc-san "SAN=1"
build clang "CC=clang BUILD=build-clang"
chroot "$CH" sh -c 'gcc --version | head -n 1; clang --version | head -n 1;
	dpkg-query -W -f "libbpf-dev \${Version}\n" libbpf-dev' | sed 's/^/debian13-build: /' >&2
[ "$TEST" = 1 ] || exit $((fails > 0))
if [ "$fails" -gt 0 ]; then
	say "tests not run: a build failed"
	exit 1
fi

# The framework venv (build/venv), as make pyenv makes it, less torch.
cp /etc/ssl/certs/ca-certificates.crt "$CH/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$CH/tmp"
chroot "$CH" sh -c 'cd /src && rm -rf build/venv && python3 -m venv build/venv &&
	grep -v "^torch==" tests/requirements.txt >/tmp/req.txt &&
	build/venv/bin/pip install -q -r /tmp/req.txt && cp tests/requirements.txt build/venv/.requirements-ok' \
	>"$LOG/venv.log" 2>&1 || { say "could not make the venv: $LOG/venv.log"; exit 1; }
say "venv: tests/requirements.txt less torch (the torch tests fail here)"
chroot "$CH" sh -c "cd /src && tests/run.sh '$PATTERN'" >"$LOG/tests.log" 2>&1
rc=$?
say "tests ($LOG/tests.log): $(tail -n 1 "$LOG/tests.log")"
grep '^FAIL' "$LOG/tests.log" | sort -u >&2
exit $((rc != 0))
