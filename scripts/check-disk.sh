#!/usr/bin/env bash
# Says, before a build that would fail on it, that the disk holding cargo's target directory
# has too little room: a full disk fails a link minutes in with a bus error or "No space left
# on device", far from its cause.
#   scripts/check-disk.sh GIB   fail (exit 1) unless GIB GiB are free, or target/ has grown
#                               to GIB already (an incremental build needs far less)
# A clean `make test` peaked at 5.4 GiB in its clone (2026-11-28, CARGO_INCREMENTAL=0 as CI
# runs it; 7.6 GiB with incremental caches). CHECK_DISK=0 skips the check.
set -euo pipefail
cd "$(dirname "$0")/.."
need_gib="${1:?usage: scripts/check-disk.sh GIB}"
[ "${CHECK_DISK:-1}" = 0 ] && exit 0
target="${CARGO_TARGET_DIR:-target}"
where="$target"
[ -d "$where" ] || where=.
free_kib=$(df -Pk "$where" | awk 'NR == 2 { print $4 }')
built_kib=0
[ -d "$target" ] && built_kib=$(du -sk "$target" 2>/dev/null | cut -f1)
need_kib=$((need_gib * 1024 * 1024))
if [ "$free_kib" -lt "$need_kib" ] && [ "$built_kib" -lt "$need_kib" ]; then
  echo "check-disk: $((free_kib / 1024 / 1024)) GiB free on $(df -P "$where" | awk 'NR == 2 { print $6 }') for $target/, a clean build needs about $need_gib GiB: free some (old checkouts' target/ directories, cargo clean) or set CHECK_DISK=0 to try anyway" >&2
  exit 1
fi
