#!/bin/sh
# make bundle: a self-contained kxprof for any x86-64 Linux with BTF, whatever
# its own libraries and glibc are.
# Usage: scripts/bundle.sh BUILD_DIR STATIC_WORKLOAD_DIR OUT.tar.gz
#
# Layout of the archive (one top folder, kxprof/):
#   bin/kxprof        POSIX sh wrapper: runs libexec/kxprof with the bundled
#                     dynamic loader and libraries
#   libexec/          the kxprof executable; kvm_workload and loop_workload
#                     (static) for the checks
#   lib/              the libraries that load into other processes (TF plugin,
#                     annotation, NVTX, ITT when built) and the non-glibc
#                     libraries any of them needs: those find each other by
#                     RUNPATH $ORIGIN and use the host's glibc
#   glibc/            the dynamic loader and glibc's libraries, for kxprof only
#                     (never on a RUNPATH: a host process keeps its own glibc)
#   scripts/          gpu-check.sh and its PyTorch workload
#   GLIBC             the glibc version the lib/ libraries need of a host (2.33
#                     when made on Debian 12)
set -eu
B=$1
WL=$2
OUT=$3
MAX_BYTES=$((32 * 1024 * 1024))
LOADER_NAME=ld-linux-x86-64.so.2

die() {
	echo "kxprof bundle: $*" >&2
	exit 1
}

STAGE=$B/bundle-stage
ROOT=$STAGE/kxprof
rm -rf "$STAGE"
mkdir -p "$ROOT/bin" "$ROOT/libexec" "$ROOT/lib" "$ROOT/glibc" "$ROOT/scripts"

# The libraries that load into other processes; ITT only where it was built.
INPROC="libkxprof_tf.so libkxprof_annotate.so libkxprof_nvtx.so"
[ -f "$B/libkxprof_itt.so" ] && INPROC="$INPROC libkxprof_itt.so"
for f in kxprof $INPROC; do
	[ -f "$B/$f" ] || die "$B/$f is missing: run make first"
done

# Debug info stays in build/: the bundle carries what runs.
install -m 0755 "$B/kxprof" "$ROOT/libexec/kxprof"
strip --strip-debug "$ROOT/libexec/kxprof"
for f in $INPROC; do
	install -m 0755 "$B/$f" "$ROOT/lib/$f"
	strip --strip-debug "$ROOT/lib/$f"
done
for w in kvm_workload loop_workload; do
	install -m 0755 "$WL/$w" "$ROOT/libexec/$w"
done

# glibc's own objects (the loader, libc, libm, ...): kxprof's private copy.
is_glibc() {
	case $1 in
	ld-linux*.so.* | libc.so.* | libm.so.* | libmvec.so.* | libpthread.so.* | libdl.so.* | \
		librt.so.* | libresolv.so.* | libanl.so.* | libutil.so.* | libnss_*.so.* | \
		libBrokenLocale.so.* | libthread_db.so.* | libc_malloc_debug.so.*)
		return 0
		;;
	esac
	return 1
}

# The NEEDED closure as ldd resolves it on this machine (ldd follows every
# level); our own libraries are already in lib/.
copy_closure() {
	ldd "$1" | while read -r name arrow path _; do
		case $name in
		linux-vdso.so.* | libkxprof_*) continue ;;
		/*)
			# the loader: "/lib64/ld-linux-x86-64.so.2 (0x...)"
			path=$name
			name=${name##*/}
			;;
		*)
			[ "$arrow" = "=>" ] || continue
			[ "$path" != "not" ] || die "$1 needs $name, which is not found here"
			;;
		esac
		if is_glibc "$name"; then dir=glibc; else dir=lib; fi
		[ -e "$ROOT/$dir/$name" ] || install -m 0755 "$(readlink -f "$path")" "$ROOT/$dir/$name"
	done
}
copy_closure "$ROOT/libexec/kxprof"
for f in $INPROC; do
	copy_closure "$B/$f"
done
[ -f "$ROOT/glibc/$LOADER_NAME" ] || die "the dynamic loader $LOADER_NAME was not found by ldd"

# An in-process library that needs a bundled library must find it by RUNPATH.
for f in $INPROC; do
	needs=$(readelf -d "$ROOT/lib/$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
	for n in $needs; do
		is_glibc "$n" && continue
		readelf -d "$ROOT/lib/$f" | grep -q 'R.*PATH.*\[\$ORIGIN' ||
			die "lib/$f needs $n but has no RUNPATH \$ORIGIN: link it with -Wl,-rpath,'\$ORIGIN'"
	done
done

# The glibc the in-process libraries need (they use the host process's):
# the newest GLIBC_2.N any of them or their bundled libraries refers to,
# written to GLIBC and said. Debian 12's libraries need 2.33 (libelf's
# fstat); a newer build host's may need more (Debian 13's libbpf and libelf
# call glibc 2.38's __isoc23_* functions), which only its own release fixes.
glibc_needs() { # FILE: "2.N symbol@GLIBC_2.N" for each versioned glibc symbol it needs
	objdump -T "$1" | awk '/\*UND\*/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(?GLIBC_2\.[0-9]+/) {
		v = $i; gsub(/[()]/, "", v); split(v, p, "."); print p[2] + 0, $NF "@" v } }'
}
# lib/'s libraries an in-process library loads: ldd's closure of each.
inproc_closure() {
	for f in $INPROC; do
		echo "$f"
		ldd "$B/$f" | awk '$2 == "=>" { print $1 }' | while read -r n; do
			[ -e "$ROOT/lib/$n" ] && echo "$n"
		done
	done | sort -u
}
floor_minor=0 floor_why=
for f in $(inproc_closure); do
	top=$(glibc_needs "$ROOT/lib/$f" | sort -n -k1,1 | tail -n 1)
	[ -n "$top" ] || continue
	minor=${top%% *}
	if [ "$minor" -gt "$floor_minor" ]; then
		floor_minor=$minor floor_why="$f: ${top#* }"
	fi
done
echo "2.$floor_minor" >"$ROOT/GLIBC"
echo "kxprof bundle: the libraries other processes load need glibc 2.$floor_minor or newer ($floor_why)" >&2
[ "$floor_minor" -le 33 ] ||
	echo "kxprof bundle: warning: this host's libraries need glibc 2.$floor_minor, so the TF plugin and the annotation libraries load only on hosts with it; a bundle made on Debian 12 needs 2.33" >&2

cat >"$ROOT/bin/kxprof" <<'EOF'
#!/bin/sh
# kxprof from the bundle: the bundled loader and libraries, whatever this
# machine's glibc is. Programs kxprof runs use their own.
self=$0
case $self in */*) ;; *) self=$(command -v -- "$self") || self=./$0 ;; esac
# Through a symbolic link (e.g. /usr/local/bin/kxprof): the bundle is where it points.
real=$(readlink -f -- "$self" 2>/dev/null) && [ -n "$real" ] && self=$real
here=${self%/*}
top=$(cd "$here/.." && pwd -P) || exit 1
exec "$top/glibc/ld-linux-x86-64.so.2" --library-path "$top/lib:$top/glibc" "$top/libexec/kxprof" "$@"
EOF
chmod 0755 "$ROOT/bin/kxprof"
install -m 0755 scripts/gpu-check.sh "$ROOT/scripts/gpu-check.sh"
install -m 0644 scripts/gpu_workload.py "$ROOT/scripts/gpu_workload.py"
install -m 0644 README.md "$ROOT/README.md"
install -d "$ROOT/docs"
install -m 0644 docs/*.md "$ROOT/docs/"

mkdir -p "$(dirname "$OUT")"
tar -C "$STAGE" --owner=0 --group=0 --numeric-owner -czf "$OUT.tmp" kxprof
size=$(wc -c <"$OUT.tmp")
if [ "$size" -gt "$MAX_BYTES" ]; then
	rm -f "$OUT.tmp"
	die "the bundle is $size bytes, over the $MAX_BYTES-byte limit"
fi
mv "$OUT.tmp" "$OUT"
echo "$OUT: $size bytes"
