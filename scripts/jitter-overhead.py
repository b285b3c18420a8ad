#!/usr/bin/env python3
"""Measures what the jitter diagnostics cost: p50 with and without them, in the same session.

Runs target/release/latency-probe in pairs, alternating `--diagnostics off` and
`--diagnostics <mode>` in ABBA order (so a drift of the machine, e.g. the VM's inter-core
regime jumps, hits both modes alike), and prints every run, the median p50 per mode and the
difference. Timing model: the probe's (CLOCK_MONOTONIC, latency from the intended and from
the actual send time). Exit 1 when the difference of the medians exceeds --limit percent.

    scripts/jitter-overhead.py [--pairs 4] [--duration 3] [--rate 10000] [--mode auto] [--limit 5]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "..", "target", "release", "latency-probe")


def run(mode, args, tmp):
    out = os.path.join(tmp, f"{mode}.json")
    cmd = [PROBE, "--duration", str(args.duration), "--rate", str(args.rate), "--warmup", "10000",
           "--diagnostics", mode, "--quiet", "--json", out]
    subprocess.run(cmd, check=True, stderr=subprocess.DEVNULL)
    with open(out) as f:
        r = json.load(f)
    return r["latency_ns"]["p50"], r["latency_actual_ns"]["p50"], r["lost"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pairs", type=int, default=4)
    p.add_argument("--duration", type=float, default=3)
    p.add_argument("--rate", type=int, default=10000)
    p.add_argument("--mode", default="auto", help="diagnostics mode to compare with off")
    p.add_argument("--limit", type=float, default=5.0, help="allowed difference of the p50 medians, percent")
    args = p.parse_args()
    if not os.path.exists(PROBE):
        sys.exit(f"{PROBE} is missing: run `cargo build --release` first")
    res = {"off": [], args.mode: []}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.pairs):
            order = ["off", args.mode] if i % 2 == 0 else [args.mode, "off"]
            for mode in order:
                intended, actual, lost = run(mode, args, tmp)
                res[mode].append((intended, actual))
                print(f"run {i}: --diagnostics {mode:<5} p50 from intended {intended} ns, from actual {actual} ns, lost {lost}")
    print(f"load average: {os.getloadavg()[0]:.2f}")
    med = {m: (statistics.median(v[0] for v in r), statistics.median(v[1] for v in r)) for m, r in res.items()}
    worst = 0.0
    for k, name in ((0, "intended"), (1, "actual")):
        off, on = med["off"][k], med[args.mode][k]
        diff = (on - off) * 100.0 / off
        worst = max(worst, diff)
        print(f"median p50 from {name} send: off {off:.0f} ns, {args.mode} {on:.0f} ns, difference {diff:+.1f}%")
    if worst > args.limit:
        print(f"diagnostics cost more than {args.limit}% of p50")
        sys.exit(1)


if __name__ == "__main__":
    main()
