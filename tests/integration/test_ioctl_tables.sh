#!/usr/bin/env bash
# The generated ioctl name tables are what the generator makes from the spec
# kept in the tree: `make ioctl-tables` into a temporary file, compared byte
# for byte with the committed user/registry/ioctl_table.c.
# kxtest: check (no root, no BPF)
. "$(dirname "$0")/lib.sh"

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
if ! command -v python3 >/dev/null; then
	fail ioctl_tables_regenerate "python3 not found (scripts/install-deps.sh installs it)"
	exit 0
fi
if make -s -C "$ROOT" ioctl-tables IOCTL_TABLE="$TMP/ioctl_table.c" >"$TMP/gen.log" 2>&1; then
	pass ioctl_tables_regenerate
else
	fail ioctl_tables_regenerate "make ioctl-tables failed: $(tail -3 "$TMP/gen.log" | tr '\n' ' ')"
	exit 0
fi
if cmp -s "$TMP/ioctl_table.c" "$ROOT/user/registry/ioctl_table.c"; then
	pass ioctl_tables_committed_match
else
	fail ioctl_tables_committed_match "user/registry/ioctl_table.c differs from what scripts/ioctl-tables/ioctls.md generates (run make ioctl-tables and commit): $(diff "$TMP/ioctl_table.c" "$ROOT/user/registry/ioctl_table.c" | head -4 | tr '\n' ' ')"
fi
