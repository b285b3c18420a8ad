#!/usr/bin/env bash
# Instructions per message of the bench's tap variants (crates/probe/benches/roundtrip/tap.rs),
# counted by valgrind's callgrind inside `Subscriber::poll` (what it calls included: the clock
# read's libc wrapper, the slowest buffer): a figure that does not move with the machine's
# noise, beside the bench's ns, which do. Each variant runs alone (BENCH_TAP_VARIANT) in the
# bench's test plan (1,000 messages a round, 3 rounds), against a driver of its own started
# here: the embedded C driver is built for this CPU (AVX-512), which valgrind cannot run.
#   scripts/poll-instructions.sh        build, count, print (about 1 min on the 2-core VM, built)
#   BENCH_EXE=PATH scripts/...          count another build's bench executable (a copy of
#                                       target/release/deps/roundtrip-*), to compare builds
# Needs valgrind (apt-get install valgrind). Not part of `make test`; `make poll-instructions`.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || {
  echo "poll-instructions: valgrind is missing: apt-get install valgrind" >&2
  exit 1
}
cargo build -q --release -p latency-probe --bin latency-probe
bench="${BENCH_EXE:-}"
[ -n "$bench" ] || bench=$(scripts/bench-builds.py path)
[ -x "$bench" ] || {
  echo "poll-instructions: no bench executable from cargo bench --no-run" >&2
  exit 1
}
work=$(mktemp -d /tmp/poll-instructions.XXXXXX)
driver_pid=
cleanup() {
  [ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
target/release/latency-probe driver --dir "$work/aeron" --seconds 900 </dev/null >"$work/driver.log" 2>&1 &
driver_pid=$!
for _ in $(seq 100); do
  [ -e "$work/aeron/cnc.dat" ] && break
  sleep 0.1
done
[ -e "$work/aeron/cnc.dat" ] || {
  echo "poll-instructions: the driver did not start: $(cat "$work/driver.log")" >&2
  exit 1
}
names=("plain" "stamped" "recorded" "stamped, 1 per poll" "recorded, 1 per poll"
  "clocked, 1 per poll" "clocked, keeping up" "recorded, keeping up")
# Set apart from each count, as callgrind_annotate gives them (callees included): a session's
# first message (its sources and their arrays made: once) and the slowest buffer's entries
# (how many enter depends on the latencies, which valgrind's slowdown stretches).
inclusive() { # FILE FUNCTION: the function's inclusive instructions in FILE
  callgrind_annotate --inclusive=yes "$1" 2>/dev/null |
    awk -v f="$2" 'index($0, f " [") && $1 !~ /=>/ { gsub(",", "", $1); s += $1 } END { print s + 0 }'
}
declare -a steady
printf '%-24s %11s %8s %8s %8s\n' "instructions a message" all slowest "session" steady
for v in "${!names[@]}"; do
  rm -f "$work"/cg.*
  out=$(AERON_DIR="$work/aeron" BENCH_TAP_ONLY=1 BENCH_TAP_VARIANT=$v valgrind --tool=callgrind \
    --trace-children=yes --callgrind-out-file="$work/cg.%p" \
    --toggle-collect='messaging::subscription::Subscriber::poll*' "$bench" 2>&1)
  # The bench measures in a child process: the largest count is that child's.
  ir=$(grep -o 'Collected : [0-9]*' <<<"$out" | awk '{ if ($3 > m) m = $3 } END { print m + 0 }')
  msgs=$(grep -o 'k = [0-9]* messages a round, [0-9]* rounds' <<<"$out" | awk '{ print $3 * $7 }')
  if [ "$ir" -eq 0 ] || [ -z "$msgs" ]; then
    echo "poll-instructions: variant '${names[$v]}' counted nothing; its output:" >&2
    tail -20 <<<"$out" >&2
    exit 1
  fi
  file=$(ls -S "$work"/cg.* | head -1)
  slow=$(inclusive "$file" "messaging::tap::slowest::Slowest::admit")
  first=$(inclusive "$file" "messaging::tap::record::SubscriberTap::add_session")
  read -r all slow first steady[v] < <(awk -v i="$ir" -v s="$slow" -v f="$first" -v m="$msgs" \
    'BEGIN { printf "%.1f %.1f %.1f %.1f\n", i / m, s / m, f / m, (i - s - f) / m }')
  printf '%-24s %11s %8s %8s %8s\n' "${names[$v]}" "$all" "$slow" "$first" "${steady[v]}"
done
echo "($msgs messages each, in Subscriber::poll and what it calls; steady = all - slowest - session)"
change() { awk -v a="${steady[$1]}" -v b="${steady[$2]}" 'BEGIN { printf "%+.1f", a - b }'; }
echo "recording, 256 fragments a poll (recorded - stamped): $(change 2 1)"
echo "recording, 1 fragment a poll (recorded - stamped): $(change 4 3)"
echo "  a clock read in the handler (clocked - stamped, 1 per poll): $(change 5 3)"
echo "  recording beyond that clock read (recorded - clocked, 1 per poll): $(change 4 5)"
echo "  the same, keeping up: $(change 7 6)"
