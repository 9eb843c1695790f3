#!/usr/bin/env bash
# Real TensorFlow (build/venv, `make pyenv`) loads kxprof's profiler plugin at
# import, by TF_PLUGGABLE_DEVICE_LIBRARY_PATH and from a tensorflow-plugins
# directory, and tf.profiler's sessions carry kxprof's ioctls, ranges and
# device planes (tests/integration/tf_real.py checks each session), which
# XProf's converter shows in the host process and as a device process
# (xprof_check.py); failures never abort the import; an ordinary user's
# session goes through the kxprof daemon. A missing package fails, never skips.
# kxtest: normal (an uninstrumented python cannot load the sanitizer build)
. "$(dirname "$0")/lib.sh"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
VENV=${KXPROF_VENV:-$ROOT/build/venv}
PY=$VENV/bin/python
SO=$(cd "$BUILD_DIR" && pwd)/libkxprof_tf.so
ANNOT=$ROOT/build/libkxprof_annotate.so

case "$BUILD_DIR" in
*san*)
	# Python is not built with ASan: the normal build's pass covers the plugin.
	skip tf_real "sanitizer build (an uninstrumented python cannot load it)"
	exit 0
	;;
esac
if ! "$PY" -c 'import tensorflow' >/dev/null 2>&1; then
	fail tf_real_venv "no TensorFlow in $VENV: run make pyenv"
	exit 0
fi
for f in "$SO" "$ANNOT"; do
	[ -f "$f" ] || { fail tf_real_built "no $f: run make"; exit 0; }
done

# The stand-in driver: kvm, else a loop device of our own.
if [ "$ACCEL" = loop ]; then
	truncate -s 16M "$TMP/loop.img"
	KX_LOOP_DEV=$(losetup --find --show "$TMP/loop.img") || {
		fail tf_real_loop "losetup failed"
		exit 0
	}
	export KX_LOOP_DEV KXPROF_DEVICES=$KX_LOOP_DEV
	at_exit 'losetup -d "$KX_LOOP_DEV"; rm -rf "$TMP"'
fi

export PYTHONPATH=$ROOT/tests/integration:$ROOT/plugin/python KXPROF_ANNOTATE_LIB=$ANNOT
export TF_CPP_MIN_LOG_LEVEL=3 PYTHONDONTWRITEBYTECODE=1
mkdir -p "$TMP/empty-root"

# tf_real.py prints the PASS/FAIL lines; a crash or abort is a FAIL of its own.
run_py() { # name, then env and args
	local name=$1 rc t0
	shift
	t0=$(date +%s%N)
	env "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	rc=$?
	grep -E '^(PASS|FAIL) ' "$TMP/$name.out"
	echo "$name: $((($(date +%s%N) - t0) / 1000000)) ms" >&2
	if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$TMP/$name.out"; then
		fail "$name" "exited $rc: $(tail -5 "$TMP/$name.err")"
	fi
	return $rc
}

# 1. The variable's route: disabled, no device, then two real sessions.
run_py tf_real_env_route TF_PLUGGABLE_DEVICE_LIBRARY_PATH="$SO" KXPROF_DISABLE=1 \
	KX_EMPTY_ROOT="$TMP/empty-root" "$PY" "$ROOT/tests/integration/tf_real.py" full "$TMP/log1"
# XProf's converter on the last session's profile.
run_py xprof_convert TF_CPP_MIN_LOG_LEVEL=3 "$PY" "$ROOT/tests/integration/xprof_check.py" \
	"$TMP/log1/session.json" "$TMP/xprof-run"
# XProf's server and trace viewer (headless Chromium) on it; the screenshot
# stays with the test logs.
SHOTS=${KXPROF_TEST_OUT:-$ROOT/build/test-logs}
mkdir -p "$SHOTS"
run_py xprof_browser TF_CPP_MIN_LOG_LEVEL=3 "$PY" "$ROOT/tests/integration/xprof_browser.py" \
	"$TMP/log1/session.json" "$TMP" "$SHOTS/tf_real_xprof_trace_viewer.png"
check tf_real_disabled_says_why grep -q 'inactive: disabled by KXPROF_DISABLE' "$TMP/tf_real_env_route.err"
check tf_real_no_device_says_why grep -q 'inactive: no accelerator device' "$TMP/tf_real_env_route.err"

# 2. Both routes at once: a copy in a tensorflow-plugins directory of a
#    site-packages path, and the build's file by the variable.
mkdir -p "$TMP/site-packages/tensorflow-plugins"
cp "$SO" "$TMP/site-packages/tensorflow-plugins/"
run_py tf_real_both_routes PYTHONPATH="$PYTHONPATH:$TMP/site-packages" \
	TF_PLUGGABLE_DEVICE_LIBRARY_PATH="$SO" "$PY" "$ROOT/tests/integration/tf_real.py" once "$TMP/log2"
check tf_real_second_copy_says_so grep -q 'another copy of it, loaded first' "$TMP/tf_real_both_routes.err"

# 3. No privilege and no daemon: an ordinary user's import and session go on.
chmod 0755 "$TMP"
mkdir -m 0777 "$TMP/log3"
run_py tf_real_unprivileged HOME="$TMP" KXPROF_SOCKET="$TMP/no-daemon.sock" \
	TF_PLUGGABLE_DEVICE_LIBRARY_PATH="$SO" setpriv --reuid=nobody --regid=nogroup --clear-groups \
	"$PY" "$ROOT/tests/integration/tf_real.py" inactive "$TMP/log3"
check tf_real_unprivileged_says_why grep -q 'inactive: not root' "$TMP/tf_real_unprivileged.err"

# 4. An ordinary user through the kxprof daemon: the same session, exact. The
#    user reaches kvm through its group (a node of its own, as in test_daemon).
SOCK=$TMP/run/kxprof.sock
mkdir -p "$TMP/run" && chmod 0755 "$TMP/run"
"$KXPROF" serve --socket "$SOCK" --idle-timeout 5 --session-limit 300 2>"$TMP/serve.log" &
DPID=$!
for _ in $(seq 1 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
user_env=()
if [ "$ACCEL" = kvm ]; then
	user_kvm "$TMP" 65534 && user_env=(KX_KVM_PATH="$USER_KVM")
else
	chgrp 65534 "$KX_LOOP_DEV" && chmod g+rw "$KX_LOOP_DEV"
fi
if [ ! -S "$SOCK" ]; then
	fail tf_real_daemon_starts "no socket after 10 s: $(cat "$TMP/serve.log")"
elif [ "$ACCEL" = kvm ] && [ -z "$USER_KVM" ]; then
	fail tf_real_daemon_kvm "no kvm node could be made for the user"
else
	mkdir -m 0777 "$TMP/log4"
	run_py tf_real_daemon HOME="$TMP" KXPROF_SOCKET="$SOCK" "${user_env[@]}" \
		TF_PLUGGABLE_DEVICE_LIBRARY_PATH="$SO" setpriv --reuid=65534 --regid=65534 \
		--clear-groups --inh-caps=-all "$PY" "$ROOT/tests/integration/tf_real.py" daemon "$TMP/log4"
	check tf_real_daemon_says_so grep -q 'capturing through the kxprof daemon' "$TMP/tf_real_daemon.err"
fi
kill "$DPID" 2>/dev/null
wait "$DPID" 2>/dev/null
