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
AERON_SHA1=4d17308cba9d4ff3ff97833d6dac52e3289f81e1
if ! java -version 2>&1 | grep -qE 'version "(1[7-9]|[2-9][0-9])'; then
  echo "bootstrap: installing a Java 17 runtime (openjdk-17-jre-headless) for latency-probe stages"
  if ! { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openjdk-17-jre-headless >/dev/null; }; then
    echo "bootstrap: could not install Java: latency-probe stages and its tests are skipped (install a JRE 17 and rerun)"
  fi
fi
# fetch_jar GROUP_PATH ARTIFACT VERSION SHA1 WHAT: downloads ARTIFACT-VERSION.jar from Maven
# Central into $TOOLS unless it is there, checking its SHA-1; on failure says which tests skip.
fetch_jar() {
  local group="$1" artifact="$2" version="$3" sha1="$4" what="$5"
  local jar="$TOOLS/$artifact-$version.jar"
  [ -f "$jar" ] && return 0
  mkdir -p "$TOOLS"
  echo "bootstrap: downloading $artifact-$version.jar from Maven Central into $TOOLS"
  if python3 - "$jar" "https://repo1.maven.org/maven2/$group/$artifact/$version/$artifact-$version.jar" "$sha1" <<'PY'
import hashlib, sys, urllib.request
path, url, sha1 = sys.argv[1:]
data = urllib.request.urlopen(url, timeout=60).read()
if hashlib.sha1(data).hexdigest() != sha1:
    sys.exit(f"{url}: sha1 {hashlib.sha1(data).hexdigest()}, expected {sha1}")
open(path + ".tmp", "wb").write(data)
PY
  then
    mv "$jar.tmp" "$jar"
  else
    rm -f "$jar.tmp"
    echo "bootstrap: could not download $artifact-$version.jar: $what"
  fi
}
fetch_jar io/aeron aeron-all "$AERON_VERSION" "$AERON_SHA1" \
  "latency-probe stages and its tests are skipped (or set AERON_ALL_JAR)"
# HdrHistogram's Java tools (HistogramLogProcessor), which the tap's tests run over the logs the
# tap writes. Optional as above: without Java or the jar those tests skip.
fetch_jar org/hdrhistogram HdrHistogram 2.2.2 7959933ebcc0f05b2eaa5af0a0c8689fa257b15c \
  "the tap's HistogramLogProcessor test is skipped"

# The Prometheus Python client, whose text-format parser the tap's tests run over tap.prom.
# Optional: without it that test skips.
if [ ! -x "$TOOLS/venv/bin/python" ]; then
  python3 -m venv "$TOOLS/venv" || true
fi
if [ -x "$TOOLS/venv/bin/python" ] && ! "$TOOLS/venv/bin/python" -c 'import prometheus_client' 2>/dev/null; then
  echo "bootstrap: installing PyPI's prometheus_client into $TOOLS/venv (the tap's textfile test)"
  "$TOOLS/venv/bin/pip" install -q --disable-pip-version-check 'prometheus_client>=0.20' ||
    echo "bootstrap: could not install prometheus_client: the tap's textfile test is skipped"
fi
exit 0
