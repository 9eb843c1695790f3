#!/usr/bin/env bash
# make mutate: apply each mutation of tests/mutate/mutations.txt in a copy of
# the tree, run the tests it names, report caught/survived (tests/mutate/mutate.py).
exec python3 "$(dirname "$0")/mutate.py" "$@"
