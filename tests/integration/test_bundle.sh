#!/usr/bin/env bash
# make bundle: the archive runs in an otherwise empty root (only /proc, /sys,
# /dev and a tmp dir bound in): list, record of the stand-in driver's
# workload, report and convert; the GPU check runs end to end there (with the
# host's /usr bound in for its shell tools, falling back to the KVM or loop
# workload with no torch); the libraries that load into other processes need
# no glibc symbol version newer than 2.31 and find the bundle's other
# libraries by RUNPATH $ORIGIN.
# kxtest: normal (the bundle is made from the normal build)
. "$(dirname "$0")/lib.sh"
REPO=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${SAN_PASS:-}" = 1 ]; then
	skip bundle "the bundle is made from the normal build (make bundle)"
	exit 0
fi
command -v unshare >/dev/null && command -v chroot >/dev/null ||
	{ skip bundle "no unshare or chroot"; exit 0; }

if ! make -s -C "$REPO" BUILD="$BUILD_DIR" bundle >"$TMP/make.out" 2>&1; then
	fail bundle_make "$(tail -n 5 "$TMP/make.out")"
	exit 0
fi
TGZ=$BUILD_DIR/kxprof-bundle.tar.gz
check bundle_size_limit test "$(wc -c <"$TGZ")" -le $((32 * 1024 * 1024))

# ---- glibc symbol versions of the in-process libraries ----
MAX_MINOR=31 # glibc 2.31
mkdir -p "$TMP/x"
tar -xzf "$TGZ" -C "$TMP/x"
B=$TMP/x/kxprof
# newer_than_231 FILE: the symbols FILE needs in a GLIBC_2.N version newer than 2.31.
newer_than_231() {
	objdump -T "$1" | awk -v max=$MAX_MINOR '/\*UND\*/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^\(?GLIBC_2\.[0-9]+/) {
			v = $i; gsub(/[()]/, "", v); split(v, p, "."); if (p[2] + 0 > max) print $NF "@" v } }'
}
# The known exceptions, Debian's own libraries (which cannot be linked
# statically into a shared object): Debian 12's libelf (which libbpf needs)
# calls fstat@GLIBC_2.33, so the TF plugin needs glibc 2.33 (docs/limits.md);
# Debian 13's libbpf and libelf were built for C23 and call glibc 2.38's
# __isoc23_* functions. Anything else fails.
declare -A KNOWN=([libelf.so.1]=fstat@GLIBC_2.33)
if grep -q '^13' /etc/debian_version 2>/dev/null; then
	KNOWN[libelf.so.1]=$'fstat@GLIBC_2.33\n__isoc23_strtol@GLIBC_2.38'
	KNOWN[libbpf.so.1]=$'__isoc23_fscanf@GLIBC_2.38\n__isoc23_sscanf@GLIBC_2.38\n__isoc23_strtoull@GLIBC_2.38'
fi
inproc=$(cd "$B/lib" && ls libkxprof_*.so)
for f in $inproc; do
	bad=$(newer_than_231 "$B/lib/$f" | sort -u | tr '\n' ' ')
	check "bundle_glibc_231_$f" test -z "$bad" || echo "  $f needs: $bad"
	# Its non-glibc libraries: in lib/, found by RUNPATH $ORIGIN.
	for n in $(readelf -d "$B/lib/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		case $n in libc.so.* | ld-linux* | libm.so.* | libdl.so.* | libpthread.so.* | librt.so.*) continue ;; esac
		check "bundle_${f}_finds_$n" test -f "$B/lib/$n"
		check "bundle_${f}_runpath" sh -c "readelf -d '$B/lib/$f' | grep -q 'RUNPATH.*\\\$ORIGIN'"
		bad=$(newer_than_231 "$B/lib/$n" | grep -vxF "${KNOWN[$n]:-}" | sort -u | tr '\n' ' ')
		check "bundle_glibc_231_${f}_dep_$n" test -z "$bad" || echo "  $n needs: $bad"
		newer_than_231 "$B/lib/$n" >>"$TMP/newer"
	done
	newer_than_231 "$B/lib/$f" >>"$TMP/newer"
done
# The bundle states the newest glibc they need (GLIBC), and make bundle says
# it, with a warning past Debian 12's 2.33.
need=$(sed -n 's/.*@GLIBC_2\.\([0-9]*\)$/\1/p' "$TMP/newer" 2>/dev/null | sort -n | tail -n 1)
check bundle_states_glibc test "$(cat "$B/GLIBC")" = "2.${need:-31}"
check bundle_make_says_glibc grep -q "need glibc $(cat "$B/GLIBC") or newer" "$TMP/make.out"
if [ "${need:-31}" -gt 33 ]; then
	check bundle_make_warns_glibc grep -q "warning: this host's libraries need glibc 2.$need" "$TMP/make.out"
else
	check bundle_make_no_glibc_warning bash -c '! grep -q "warning: this host" "$1"' _ "$TMP/make.out"
fi
# The check itself fails on a library that needs a newer version.
cat >"$TMP/new.c" <<'EOF'
#include <pthread.h>
static void *run(void *a) { return a; }
int start(void) { pthread_t t; return pthread_create(&t, 0, run, 0) ?: pthread_join(t, 0); }
EOF
if cc -shared -fPIC -o "$TMP/new.so" "$TMP/new.c" 2>/dev/null; then
	check bundle_glibc_check_sees_new_versions test -n "$(newer_than_231 "$TMP/new.so")"
fi

# ---- the empty root ----
# in_root ROOT CMD...: CMD chrooted into ROOT, with /proc, /sys and /dev bound
# in, in a private mount namespace (the binds vanish with it).
in_root() {
	local root=$1
	shift
	unshare -m --propagation private sh -c '
		r=$1; shift
		for d in proc sys dev; do mkdir -p "$r/$d" && mount --rbind "/$d" "$r/$d" || exit 97; done
		exec chroot "$r" "$@"' in_root "$root" "$@"
}
R=$TMP/root
mkdir -p "$R/tmp"
tar -xzf "$TGZ" -C "$R"
check bundle_root_is_empty test "$(ls "$R" | tr '\n' ' ')" = "kxprof tmp "
KXR=(/kxprof/glibc/ld-linux-x86-64.so.2 --library-path /kxprof/lib:/kxprof/glibc /kxprof/libexec/kxprof)
in_root "$R" "${KXR[@]}" list >"$TMP/list.out" 2>"$TMP/list.err"
check bundle_list test $? -eq 0
check bundle_list_hooks grep -q 'ioctl syscall hooks' "$TMP/list.out"
if [ "$ACCEL" = kvm ]; then
	WLARGS=(/kxprof/libexec/kvm_workload -t 2 -j 50)
else
	WLARGS=(/kxprof/libexec/loop_workload -s 16 -p /tmp -t 2 -j 50 -k zero)
fi
in_root "$R" "${KXR[@]}" record "${ACCEL_DEV[@]}" -o /tmp/b.kxp -- "${WLARGS[@]}" \
	>"$TMP/rec.out" 2>"$TMP/rec.err"
rc=$?
check bundle_record test $rc -eq 0 || cat "$TMP/rec.err"
in_root "$R" "${KXR[@]}" report --json /tmp/b.kxp >"$TMP/b.json" 2>"$TMP/rep.err"
check bundle_report test $? -eq 0
check bundle_report_jobs test "$(jget "$TMP/b.json" "d['Time']['ioctl/$ACCEL']['$ACCEL_JOB']['Total Count']")" = 100
in_root "$R" "${KXR[@]}" convert /tmp/b.kxp --xplane /tmp/xp --chrome /tmp/b.json.gz \
	>"$TMP/conv.out" 2>"$TMP/conv.err"
check bundle_convert test $? -eq 0
check bundle_convert_outputs test -s "$R/tmp/b.json.gz" -a -n "$(find "$R/tmp/xp" -name '*.xplane.pb')"

# The sh wrapper (with dash, where there is one: POSIX sh) from any directory.
SH=$(command -v dash || echo sh)
(cd / && "$SH" "$B/bin/kxprof" list >"$TMP/wrap.out" 2>&1)
check bundle_wrapper_list test $? -eq 0
(cd "$B/bin" && PATH=$B/bin:$PATH "$SH" -c 'kxprof --help' >"$TMP/wrap2.out" 2>&1)
check bundle_wrapper_in_path grep -q '^usage: kxprof' "$TMP/wrap2.out"
mkdir -p "$TMP/linkbin" && ln -s "$B/bin/kxprof" "$TMP/linkbin/kxprof"
(cd / && PATH=$TMP/linkbin:$PATH "$SH" -c 'kxprof --help' >"$TMP/wrap3.out" 2>&1)
check bundle_wrapper_through_symlink grep -q '^usage: kxprof' "$TMP/wrap3.out"

# ---- the GPU check, in the root with the host's /usr for its shell tools ----
G=$TMP/groot
mkdir -p "$G/tmp" "$G/usr" "$G/out" "$G/proc" "$G/sys" "$G/dev"
tar -xzf "$TGZ" -C "$G"
for d in bin sbin lib lib64; do
	if [ -L "/$d" ]; then ln -s "$(readlink "/$d")" "$G/$d"; else mkdir -p "$G/$d"; fi
done
unshare -m --propagation private sh -c '
	g=$1
	for d in proc sys dev usr; do mount --rbind "/$d" "$g/$d" || exit 97; done
	for d in bin sbin lib lib64; do [ -L "$g/$d" ] || [ ! -d "/$d" ] || mount --rbind "/$d" "$g/$d"; done
	exec chroot "$g" /kxprof/scripts/gpu-check.sh /out --seconds 1' gc "$G" \
	>"$TMP/gc.out" 2>"$TMP/gc.err"
rc=$?
check bundle_gpu_check test $rc -eq 0 || tail -n 20 "$TMP/gc.err"
for f in facts.txt log.txt capture.kxp report.txt report.json trace.xplane.pb trace.json.gz cpu.pb.gz; do
	check "bundle_gpu_check_$f" test -s "$G/out/$f"
done
check bundle_gpu_check_at_most_8_files test "$(find "$G/out" -type f | wc -l)" -le 8
check bundle_gpu_check_bpf_works grep -q 'BPF works here' "$G/out/facts.txt"
check bundle_gpu_check_fallback grep -q 'no python3 with torch and CUDA' "$G/out/facts.txt"
check bundle_gpu_check_prints_report grep -q "$ACCEL_JOB" "$TMP/gc.out"
check bundle_gpu_check_facts grep -q '### kxprof list --json' "$G/out/facts.txt"

# Where BPF cannot work (here: no /sys, so no kernel BTF) it says so and stops.
mkdir -p "$G/out2"
rm -rf "$G/sys"
unshare -m --propagation private sh -c '
	g=$1
	for d in proc dev usr; do mount --rbind "/$d" "$g/$d" || exit 97; done
	exec chroot "$g" /kxprof/scripts/gpu-check.sh /out2 --seconds 1' gc "$G" \
	>"$TMP/gc2.out" 2>"$TMP/gc2.err"
check bundle_gpu_check_no_btf_fails test $? -eq 1
check bundle_gpu_check_no_btf_says grep -q 'NO KERNEL BTF: /sys/kernel/btf/vmlinux is missing' "$TMP/gc2.err"
check bundle_gpu_check_no_btf_facts grep -q '### kxprof list' "$G/out2/facts.txt"
check bundle_gpu_check_no_btf_no_capture test ! -e "$G/out2/capture.kxp"

# ---- the GPU check's torch branch, on the host with a stand-in torch ----
# (tests/integration/fake_torch: no GPU; its NVTX ranges go through the
# bundle's annotation library, loaded into the host's python3 after start).
if command -v python3 >/dev/null; then
	PYTHONPATH=$REPO/tests/integration/fake_torch PYTHONDONTWRITEBYTECODE=1 \
		"$B/scripts/gpu-check.sh" "$TMP/gt" --seconds 2 >"$TMP/gt.out" 2>"$TMP/gt.err"
	check bundle_gpu_check_torch test $? -eq 0 || tail -n 20 "$TMP/gt.err"
	check bundle_gpu_check_torch_workload grep -q 'workload: .*gpu_workload.py 2 (NVTX_INJECTION64_PATH=' "$TMP/gt/facts.txt"
	check bundle_gpu_check_torch_ranges test "$(jget "$TMP/gt/report.json" \
		'"step" in d["Time"].get("annotation", {}) and "matmul" in d["Time"].get("annotation", {})')" = True
	# The workload's own memory figures, the reference for the NVIDIA memory table.
	check bundle_gpu_check_torch_memory_reference \
		grep -q 'gpu_workload: torch memory_allocated 0 B, memory_reserved 0 B' "$TMP/gt/log.txt"
fi
