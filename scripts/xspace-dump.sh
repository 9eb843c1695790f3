#!/usr/bin/env bash
# Prints an XSpace file (what `kxprof convert --xplane` writes, *.xplane.pb)
# for people: the whole message as protobuf text (protoc --decode), or with
# --summary per plane its lines, event counts per name and stats, plus the
# hostnames and warnings (--json: the same as JSON). Needs protoc
# (protobuf-compiler) for the text form and python3 for the summary, which
# reads the wire format itself.
#
#   scripts/xspace-dump.sh [--summary [--json]] FILE.xplane.pb
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
proto_dir=${KXPROF_PROTO_DIR:-$here/../proto}
summary=0 json=0 file=

usage() {
	echo "usage: $(basename "$0") [--summary [--json]] FILE.xplane.pb" >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--summary) summary=1 ;;
	--json) json=1 summary=1 ;;
	-h | --help) usage ;;
	-*) echo "unknown option $1" >&2; usage ;;
	*) [ -z "$file" ] || usage; file=$1 ;;
	esac
	shift
done
[ -n "$file" ] || usage
[ -r "$file" ] || { echo "cannot read $file" >&2; exit 1; }

if [ $summary -eq 0 ]; then
	command -v protoc >/dev/null || { echo "protoc not found: apt-get install protobuf-compiler" >&2; exit 1; }
	exec protoc --decode=tensorflow.profiler.XSpace -I "$proto_dir" "$proto_dir/xplane.proto" <"$file"
fi

exec python3 - "$file" "$json" <<'PY'
# Summary straight from the wire format (field numbers: proto/xplane.proto).
import json
import os
import struct
import sys


def varint(b, i):
    r = s = 0
    while True:
        c = b[i]
        i += 1
        r |= (c & 0x7F) << s
        if c < 0x80:
            return r, i
        s += 7


def fields(b, lo=0, hi=None):
    """(field, wire type, value or (start, end)) of one message in b[lo:hi]."""
    i, hi = lo, len(b) if hi is None else hi
    while i < hi:
        t, i = varint(b, i)
        f, w = t >> 3, t & 7
        if w == 0:
            v, i = varint(b, i)
            yield f, w, v
        elif w == 1:
            yield f, w, b[i:i + 8]
            i += 8
        elif w == 2:
            n, i = varint(b, i)
            yield f, w, (i, i + n)
            i += n
        elif w == 5:
            yield f, w, b[i:i + 4]
            i += 4
        else:
            raise ValueError("bad wire type %d at byte %d" % (w, i))
        if i > hi:
            raise ValueError("truncated message")


def text(b, span):
    return b[span[0]:span[1]].decode("utf-8", "replace")


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def stat_value(b, span, names):
    mid, val = 0, None
    for f, w, v in fields(b, *span):
        if f == 1:
            mid = v
        elif f == 2 and w == 1:
            val = struct.unpack("<d", v)[0]
        elif f in (3, 7):
            val = names.get(v, v) if f == 7 else v
        elif f == 4:
            val = signed(v)
        elif f in (5, 6):
            val = text(b, v)
    return names.get(mid, "#%d" % mid), val


def metadata_map(b, span):
    """One map entry {key, value: X*Metadata}: key -> the value's name."""
    key, name = 0, ""
    for f, w, v in fields(b, *span):
        if f == 1:
            key = v
        elif f == 2:
            name = next((text(b, u) for g, _, u in fields(b, *v) if g == 2), "")
    return {key: name}


def plane_summary(b, span):
    p = {"id": 0, "name": "", "lines": [], "events": {}, "stats": {}}
    ev_meta, st_meta, line_spans, stat_spans = {}, {}, [], []
    for f, w, v in fields(b, *span):
        if f == 1:
            p["id"] = signed(v)
        elif f == 2:
            p["name"] = text(b, v)
        elif f == 3:
            line_spans.append(v)
        elif f == 4:
            ev_meta.update(metadata_map(b, v))
        elif f == 5:
            st_meta.update(metadata_map(b, v))
        elif f == 6:
            stat_spans.append(v)
    for s in stat_spans:
        k, val = stat_value(b, s, st_meta)
        p["stats"][k] = val
    counts = {}
    for ls in line_spans:
        line = {"id": 0, "name": "", "display_name": "", "timestamp_ns": 0, "duration_ps": 0,
                "events": 0}
        for f, w, v in fields(b, *ls):
            if f == 1:
                line["id"] = signed(v)
            elif f == 2:
                line["name"] = text(b, v)
            elif f == 11:
                line["display_name"] = text(b, v)
            elif f == 3:
                line["timestamp_ns"] = signed(v)
            elif f == 9:
                line["duration_ps"] = signed(v)
            elif f == 4:
                line["events"] += 1
                mid = 0
                for g, _, u in fields(b, *v):
                    if g == 1:
                        mid = u
                        break
                counts[mid] = counts.get(mid, 0) + 1
        p["lines"].append(line)
    for mid, n in counts.items():
        name = ev_meta.get(mid, "#%d" % mid)
        p["events"][name] = p["events"].get(name, 0) + n
    p["num_events"] = sum(counts.values())
    return p


def main():
    b = open(sys.argv[1], "rb").read()
    want_json = sys.argv[2] == "1"
    space = {"planes": [], "errors": [], "warnings": [], "hostnames": []}
    try:
        for f, w, v in fields(b):
            if f == 1:
                space["planes"].append(plane_summary(b, v))
            elif f in (2, 3, 4) and w == 2:
                space[{2: "errors", 3: "warnings", 4: "hostnames"}[f]].append(text(b, v))
    except (IndexError, ValueError) as e:
        sys.exit("%s: not a valid XSpace (%s)" % (sys.argv[1], e))
    if want_json:
        json.dump(space, sys.stdout, indent=1)
        print()
        return
    print("hostnames: %s" % (", ".join(space["hostnames"]) or "-"))
    for p in space["planes"]:
        print('plane %d "%s": %d lines, %d events' % (p["id"], p["name"], len(p["lines"]),
                                                     p["num_events"]))
        for k, val in p["stats"].items():
            print("  stat %s = %s" % (k, val))
        for line in p["lines"]:
            print('  line %d "%s": %d events, %.3f ms' % (line["id"], line["name"],
                                                       line["events"], line["duration_ps"] / 1e9))
        for name, n in sorted(p["events"].items(), key=lambda x: (-x[1], x[0])):
            print("  %8d  %s" % (n, name))
    for kind in ("errors", "warnings"):
        for m in space[kind]:
            print("%s: %s" % (kind[:-1], m))



try:
    main()
except BrokenPipeError:
    # the reader went away (| head, | grep -q): not an error
    os._exit(0)
PY
