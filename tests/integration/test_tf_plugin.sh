#!/usr/bin/env bash
# TensorFlow plugin as shipped: the .so exports exactly TF_InitProfiler,
# needs no TensorFlow symbol to load, loads into a host without TensorFlow,
# and `make install` puts it under PREFIX/lib/kxprof and TF_PLUGIN_DIR.
# (The ABI and session behaviour are checked by tests/unit/test_tf_plugin.c.)
# kxtest: both check (loading without TensorFlow is checked in the normal build)
. "$(dirname "$0")/lib.sh"
SO=$BUILD_DIR/libkxprof_tf.so
ROOT=$(cd "$(dirname "$0")/../.." && pwd)

if [ ! -f "$SO" ]; then
	fail tf_plugin_built "no $SO"
	exit 0
fi

exports=$(nm -D --defined-only "$SO" | awk '{print $NF}' | sed 's/@.*//' | sort -u)
check tf_plugin_exports_only_entry test "$exports" = "TF_InitProfiler"
[ "$exports" = "TF_InitProfiler" ] || echo "exported: $exports"

# TF_Status functions are looked up at run time, never linked.
check tf_plugin_no_tf_undefined test -z "$(nm -D --undefined-only "$SO" | grep -E ' (TF|TP)_')"
check tf_plugin_libs_resolve test -z "$(ldd "$SO" | grep 'not found')"

# A host without TensorFlow (an ASan build can only load into an ASan host).
case "$BUILD_DIR" in
*san*) skip tf_plugin_loads_without_tf "sanitizer build" ;;
*)
	check tf_plugin_loads_without_tf python3 -c '
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1], os.RTLD_NOW | os.RTLD_LOCAL)
lib.TF_InitProfiler' "$SO"
	;;
esac

# make install: PREFIX/lib/kxprof and, when given, TF_PLUGIN_DIR.
san=0
case "$BUILD_DIR" in *san*) san=1 ;; esac
if make -s -C "$ROOT" SAN=$san BUILD="$(basename "$BUILD_DIR")" install DESTDIR="$TMP/inst" \
	PREFIX=/usr TF_PLUGIN_DIR=/site/tensorflow-plugins >"$TMP/install.log" 2>&1; then
	check tf_plugin_installed_lib cmp -s "$SO" "$TMP/inst/usr/lib/kxprof/libkxprof_tf.so"
	check tf_plugin_installed_tf_dir cmp -s "$SO" "$TMP/inst/site/tensorflow-plugins/libkxprof_tf.so"
else
	fail tf_plugin_install "make install failed: $(tail -5 "$TMP/install.log")"
fi
