#!/usr/bin/env bash
# Installs what a fresh Debian/Ubuntu machine lacks to build and test aeron-latency, and says
# what it installs. Idempotent: a second run installs nothing.
#   scripts/bootstrap.sh               install what is missing
#   scripts/bootstrap.sh --print-cmake print the CMake (>= 3.30) to build Aeron C with
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS="$PWD/.tools"
MIN_CMAKE=3.30

cmake_ok() { # $1 = cmake binary; true if its version >= MIN_CMAKE
  local v
  v=$("$1" --version 2>/dev/null | head -1 | sed -E 's/[^0-9]*([0-9]+\.[0-9]+).*/\1/') || return 1
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$MIN_CMAKE" "$v" | sort -V | head -1)" = "$MIN_CMAKE" ]
}

pick_cmake() {
  if [ -n "${CMAKE:-}" ] && cmake_ok "$CMAKE"; then echo "$CMAKE"; return; fi
  if [ -x "$TOOLS/venv/bin/cmake" ] && cmake_ok "$TOOLS/venv/bin/cmake"; then echo "$TOOLS/venv/bin/cmake"; return; fi
  if command -v cmake >/dev/null && cmake_ok "$(command -v cmake)"; then command -v cmake; return; fi
  return 1
}

if [ "${1:-}" = "--print-cmake" ]; then
  pick_cmake || { echo "cmake"; }
  exit 0
fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

missing=()
command -v capnp >/dev/null || missing+=(capnproto)
for pkg in libclang-dev uuid-dev libbsd-dev; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
command -v cc >/dev/null || missing+=(build-essential)
command -v python3 >/dev/null || missing+=(python3)
if ! pick_cmake >/dev/null && ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=(python3-venv)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "bootstrap: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! pick_cmake >/dev/null; then
  echo "bootstrap: system CMake is older than $MIN_CMAKE (Aeron C needs it): installing PyPI's cmake into $TOOLS/venv"
  rm -rf "$TOOLS/venv"
  python3 -m venv "$TOOLS/venv"
  "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check cmake
fi
pick_cmake >/dev/null || { echo "bootstrap: no CMake >= $MIN_CMAKE could be installed; set CMAKE=/path/to/cmake" >&2; exit 1; }

if ! command -v cargo >/dev/null; then
  echo "bootstrap: cargo not found: install Rust (rustup) 1.88 or newer" >&2
  exit 1
fi

# Aeron Archive for `latency-probe stages` (docs/durability.md): a Java runtime and
# Aeron's aeron-all jar. Optional: where either cannot be had, say so and go on (the stages
# tests then skip, and everything else still builds and runs).
AERON_VERSION=1.51.0
AERON_JAR="$TOOLS/aeron-all-$AERON_VERSION.jar"
AERON_SHA1=4d17308cba9d4ff3ff97833d6dac52e3289f81e1
if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
  echo "bootstrap: installing a Java 17 runtime (openjdk-17-jre-headless) for latency-probe stages"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }; then
    echo "bootstrap: could not install Java: latency-probe stages and its tests are skipped (install a JRE 17 and rerun)"
  fi
fi
if [ ! -f "$AERON_JAR" ]; then
  mkdir -p "$TOOLS"
  echo "bootstrap: downloading aeron-all-$AERON_VERSION.jar from Maven Central into $TOOLS"
  if python3 - "$AERON_JAR" "$AERON_VERSION" "$AERON_SHA1" <<'PY'
import hashlib, sys, urllib.request
path, version, sha1 = sys.argv[1:]
url = f"https://repo1.maven.org/maven2/io/aeron/aeron-all/{version}/aeron-all-{version}.jar"
data = urllib.request.urlopen(url, timeout=60).read()
if hashlib.sha1(data).hexdigest() != sha1:
    sys.exit(f"{url}: sha1 {hashlib.sha1(data).hexdigest()}, expected {sha1}")
open(path + ".tmp", "wb").write(data)
PY
  then
    mv "$AERON_JAR.tmp" "$AERON_JAR"
  else
    rm -f "$AERON_JAR.tmp"
    echo "bootstrap: could not download the aeron-all jar: latency-probe stages and its tests are skipped (or set AERON_ALL_JAR)"
  fi
fi
exit 0
