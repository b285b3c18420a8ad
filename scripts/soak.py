#!/usr/bin/env python3
"""Soak: pushes 10^8 messages through Aeron IPC at the highest rate this machine sustains and
checks that none was lost, duplicated, reordered or undecodable.

First it calibrates: short latency-probe runs at falling rates (--rates) until one achieves at
least --keep percent of its target with nothing lost; then one long run at that rate sends
--messages messages (no warm-up, so sent == --messages), and prints the accounting, the
achieved rate, the latency percentiles and the wall time. Timing model: the probe's
(CLOCK_MONOTONIC, latency from the intended send time; see docs/reading-a-report.md). The long run's report
is kept as JSON (--json). Exit 1 when anything is lost, duplicated, reordered or undecodable,
or the run is incomplete.

    scripts/soak.py [--messages 100000000] [--rates 4000000,3000000,2000000,1500000,1000000,500000]
                    [--rate R (skip the calibration)] [--msg-size 64] [--json results/soak.json]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "..", "target", "release", "latency-probe")


def probe(rate, messages, msg_size, out, extra=()):
    # --warmup 0: every message counts; duration * rate == messages exactly.
    cmd = [PROBE, "--rate", str(rate), "--duration", repr(messages / rate), "--warmup", "0",
           "--msg-size", str(msg_size), "--quiet", "--json", out, *extra]
    t = time.monotonic()
    rc = subprocess.run(cmd).returncode
    wall = time.monotonic() - t
    try:
        with open(out) as f:
            return rc, wall, json.load(f)
    except (OSError, ValueError):
        return rc, wall, None


def fmt_ns(ns):
    return f"{ns / 1e3:,.1f} us" if ns < 1e6 else f"{ns / 1e6:,.2f} ms"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--messages", type=int, default=100_000_000)
    p.add_argument("--rates", default="4000000,3000000,2000000,1500000,1000000,500000",
                   help="calibration rates, highest first")
    p.add_argument("--rate", type=int, help="skip the calibration and soak at this rate")
    p.add_argument("--calibrate-seconds", type=float, default=3.0)
    p.add_argument("--keep", type=float, default=97.0,
                   help="a rate is sustained when it achieves this percent of its target")
    p.add_argument("--msg-size", type=int, default=64)
    p.add_argument("--json", default="results/soak.json")
    args = p.parse_args()
    if not os.path.exists(PROBE):
        sys.exit(f"soak: {PROBE} is missing; build it first (make build)")

    rate = args.rate
    with tempfile.TemporaryDirectory() as tmp:
        for r in ([] if rate else [int(x) for x in args.rates.split(",")]):
            n = int(r * args.calibrate_seconds)
            rc, _, rep = probe(r, n, args.msg_size, os.path.join(tmp, f"{r}.json"), ["--floor", "0"])
            achieved = rep["rate_achieved"] if rep else 0.0
            ok = rep is not None and rc == 0 and rep["lost"] == 0 and achieved >= r * args.keep / 100
            print(f"soak: calibration {r:>12,} msg/s -> achieved {achieved:>12,.0f} msg/s, lost "
                  f"{rep['lost'] if rep else '?'}: {'sustained' if ok else 'not sustained'}", flush=True)
            if ok:
                rate = r
                break
    if not rate:
        sys.exit("soak: no calibration rate was sustained; pass lower --rates")

    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    load = os.getloadavg()
    print(f"soak: {args.messages:,} messages at {rate:,} msg/s ({args.messages / rate:,.0f} s), "
          f"{args.msg_size} B, load average {load[0]:.2f}", flush=True)
    rc, wall, rep = probe(rate, args.messages, args.msg_size, args.json)
    if rep is None:
        sys.exit(f"soak: latency-probe wrote no report (exit {rc})")
    bad = {k: rep[k] for k in ("lost", "duplicates", "reordered", "decode_errors") if rep[k]}
    lat = rep["latency_ns"]
    print(f"soak: sent {rep['sent']:,} received {rep['received']:,} lost {rep['lost']} duplicates "
          f"{rep['duplicates']} reordered {rep['reordered']} decode errors {rep['decode_errors']}; "
          f"complete {rep['complete']}")
    print(f"soak: achieved {rep['rate_achieved']:,.0f} msg/s; latency from the intended time p50 "
          f"{fmt_ns(lat['p50'])} p99 {fmt_ns(lat['p99'])} p99.9 {fmt_ns(lat['p999'])} max "
          f"{fmt_ns(lat['max'])}; wall {wall:,.0f} s; load average after {os.getloadavg()[0]:.2f}; "
          f"report {args.json}")
    if rc != 0 or bad or not rep["complete"] or rep["sent"] != args.messages or rep["received"] != args.messages:
        sys.exit(f"soak: FAILED (exit {rc}, {bad or 'incomplete'}): {rep.get('incomplete_reason')}")
    print("soak: OK: every message arrived once and in order")


if __name__ == "__main__":
    main()
