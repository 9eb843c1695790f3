#!/usr/bin/env bash
# kxprof list: devices present and hook families, with the fallback chain
# this machine forces (fentry refused, kprobes absent) reported, not fatal.
. "$(dirname "$0")/lib.sh"

"$KXPROF" list >"$TMP/list.txt" 2>&1
check list_runs test $? -eq 0
kx 0 list --json >"$TMP/list.json"
check list_json_parses python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$TMP/list.json"
if [ -c /dev/kvm ]; then
	check list_shows_kvm test "$(jget "$TMP/list.json" \
		'any(x["node"]=="/dev/kvm" and x["driver"]=="kvm" and x["major"]==10 and x["minor"]==232 for x in d["devices"])')" = True
	check list_shows_kvm_vcpu_anon test "$(jget "$TMP/list.json" \
		'any(x["node"]=="anon_inode:kvm-vcpu" and x["kind"]=="anon" for x in d["devices"])')" = True
fi
check list_ioctl_mech_chosen test "$(jget "$TMP/list.json" \
	'[h["mechanism"] for h in d["hooks"] if h["family"]=="ioctl syscall hooks"][0] in ("fentry","tp_btf","raw_tp","tp")')" = True
# Driver entry hooks: whatever this kernel allows must be said, with a reason when skipped.
check list_driver_hooks_reason test "$(jget "$TMP/list.json" \
	'[h for h in d["hooks"] if h["family"]=="driver entry hooks"][0]["state"] in ("available","skipped") and len([h for h in d["hooks"] if h["family"]=="driver entry hooks"][0]["note"])>10')" = True
if grep -q 'fentry refused' "$TMP/list.txt"; then
	check list_fentry_refused_reported grep -q 'kprobe' "$TMP/list.txt"
fi
