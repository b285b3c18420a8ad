#!/usr/bin/env bash
# Runs a `cargo test` command and fails unless at least MIN tests ran and passed: a filter that
# matches nothing, a cfg that compiled the tests away, or a toolchain that skipped them must
# not look like a pass. Usage: scripts/expect-tests.sh MIN cargo test ...
set -uo pipefail
min="$1"
shift
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
passed=$(grep -Eo 'test result: [a-zA-Z]+\. [0-9]+ passed' "$out" | awk '{s += $4} END {print s + 0}')
if [ "$status" -ne 0 ]; then
    echo "expect-tests: the command failed (exit $status)" >&2
    exit "$status"
fi
if [ "$passed" -lt "$min" ]; then
    echo "expect-tests: $passed tests passed, at least $min were expected: the filter or the build ran fewer than it should (nothing is reported as a pass)" >&2
    exit 1
fi
echo "expect-tests: $passed tests passed (at least $min expected)"
