#!/usr/bin/env python3
"""Compares builds of the round-trip bench pass by pass: the paired method of `latency-probe ab`
for a change to the code rather than to a run's settings.

Each pass runs every bench executable once, one after the other, the order rotating from pass
to pass and reversed every other pass, so that a machine that drifts or changes regime weighs
on every build alike. Each run writes its figures (`BENCH_FIGURES`, see
crates/probe/benches/roundtrip/figures.rs); a figure's change is the other build minus the
first, pass by pass. Printed per figure: each build's median over the passes, the median
[min, max] of the per-pass differences, in how many passes the other build was lower and
higher, and the exact two-sided sign test's p over those passes (ties left out). A change is
named only when p < --alpha (default 0.01); otherwise it says "no clear change". The sign
test assumes nothing of the differences' shape, only that a pass is as likely to favour
either build when they do not differ, which the alternating order gives.

  scripts/bench-builds.py save NAME        build the bench of the working tree and keep its
                                           executable as target/bench-builds/NAME
  scripts/bench-builds.py path             build it and print where cargo left its executable
  scripts/bench-builds.py [--passes N] [--only tap|oneway|all] [--json OUT] EXE_A EXE_B [...]
                                           compare them (`--only tap`: BENCH_TAP_ONLY=1, about
                                           3 s a run; `oneway`: BENCH_ONEWAY_ONLY=1; `all`: the
                                           whole bench, minutes a run)
  scripts/bench-builds.py --self-test [--figures FILE]
                                           check the comparison against a fake bench (and a
                                           real run's BENCH_FIGURES file)

Typical use, comparing a change with the commit before it:
  git stash; scripts/bench-builds.py save before; git stash pop
  scripts/bench-builds.py save after
  scripts/bench-builds.py --passes 30 --only tap target/bench-builds/before target/bench-builds/after

Run it with nothing else busy on the machine: every run pins its two hot threads to the last
two cores. A run that fails stops the comparison with its cause; what the passes before it
measured is still printed, marked incomplete.
"""

import argparse
import datetime
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECTIONS = {"tap": {"BENCH_TAP_ONLY": "1"}, "oneway": {"BENCH_ONEWAY_ONLY": "1"}, "all": {}}


def sign_test(lower, higher):
    """The exact two-sided sign test's p for `lower` passes one way and `higher` the other."""
    n = lower + higher
    if n == 0:
        return 1.0
    k = min(lower, higher)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def order_of(exes, p):
    """Pass `p`'s order: rotated by one each pass, and every other round of rotations reversed,
    so that each build runs in each position equally often, before and after each other one
    (two builds: A B, B A, B A, A B, as ABBA designs do)."""
    n = len(exes)
    order = exes[p % n:] + exes[:p % n]
    return order[::-1] if (p // n) % 2 else order


def run_once(exe, env, figures_path):
    """One run's figures, {(section, figure): (unit, better, value)}; raises RuntimeError with the
    cause when the run fails or writes no figure."""
    if os.path.exists(figures_path):
        os.remove(figures_path)
    done = subprocess.run([exe, "--bench"], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = " / ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"{exe} exited {done.returncode}: {tail[:400]}")
    try:
        with open(figures_path) as f:
            lines = [json.loads(line) for line in f if line.strip()]
    except OSError:
        lines = []
    if not lines:
        raise RuntimeError(f"{exe} wrote no figures: a bench built before BENCH_FIGURES existed? "
                           "Build it again with `scripts/bench-builds.py save NAME`")
    return {(f["section"], f["figure"]): (f["unit"], f["better"], f["value"]) for f in lines}


def measure(exes, passes, section, log=print):
    """Runs the passes; returns ({exe: [figures of each pass]}, the error that stopped them or None)."""
    env = dict(os.environ, **SECTIONS[section])
    env.pop("AERON_DIR", None)  # each run starts its own driver in a fresh directory
    runs = {e: [] for e in exes}
    with tempfile.TemporaryDirectory(prefix="bench-builds-") as tmp:
        env["BENCH_FIGURES"] = os.path.join(tmp, "figures.jsonl")
        for p in range(passes):
            got = {}
            for e in order_of(exes, p):
                try:
                    got[e] = run_once(e, env, env["BENCH_FIGURES"])
                except RuntimeError as err:
                    return runs, f"pass {p + 1}: {err}"
                except KeyboardInterrupt:
                    return runs, f"interrupted in pass {p + 1}"
            for e in exes:  # a pass counts only whole: every build ran in it
                runs[e].append(got[e])
            log(f"pass {p + 1} of {passes} done", flush=True)
    return runs, None


def compare(exes, runs, alpha):
    """Per figure of the first build: each build's median, and each other build's change."""
    base = exes[0]
    out = []
    if not runs[base]:
        return out
    for key, (unit, better, _) in runs[base][0].items():
        series = {e: [r[key][2] if key in r else math.nan for r in runs[e]] for e in exes}
        row = {"section": key[0], "figure": key[1], "unit": unit, "better": better, "alpha": alpha,
               "median": {e: median(series[e]) for e in exes}, "changes": {}}
        for e in exes[1:]:
            d = [b - a for a, b in zip(series[base], series[e]) if not (math.isnan(a) or math.isnan(b))]
            lower, higher = sum(x < 0 for x in d), sum(x > 0 for x in d)
            p = sign_test(lower, higher)
            if not d or p >= alpha:
                verdict = "no clear change"
            else:
                went = "lower" if lower > higher else "higher"
                verdict = f"{went}: {'better' if went == better else 'worse'}"
            row["changes"][e] = {"passes": len(d), "median": median(d), "min": min(d, default=math.nan),
                                 "max": max(d, default=math.nan), "lower": lower, "higher": higher, "p": p,
                                 "verdict": verdict}
        out.append(row)
    return out


def median(v):
    v = [x for x in v if not math.isnan(x)]
    return statistics.median(v) if v else math.nan


def load_average():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "unknown"


def describe(exe):
    st = os.stat(exe)
    when = datetime.datetime.fromtimestamp(st.st_mtime, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return f"{exe} ({st.st_size} bytes, built {when})"


def num(v, sign=""):
    """A figure for the table: one decimal, or in millions (M) from 100,000 up (msg/s)."""
    if abs(v) >= 1e5:
        return f"{v / 1e6:{sign}.2f}M"
    return f"{v:{sign}.1f}"


def show(exes, rows, passes_done, passes, error, out=print):
    names = {e: chr(ord("A") + i) for i, e in enumerate(exes)}
    for e in exes:
        out(f"{names[e]}: {describe(e)}")
    status = "" if error is None else f"; INCOMPLETE: {error}"
    out(f"{passes_done} of {passes} passes counted{status}")
    alpha = rows[0]["alpha"] if rows else 0.01
    if sign_test(0, passes_done) >= alpha:
        need = next(n for n in range(1, 64) if sign_test(0, n) < alpha)
        out(f"too few passes to name any change at p < {alpha:g}: it takes {need} passes at least")
    for e in exes[1:]:
        out("")
        out(f"{names[e]} vs {names[exes[0]]}: {names[e]} - {names[exes[0]]} pass by pass; "
            f"sign test over the passes that differ")
        out(f"{'figure':<58} {names[exes[0]]:>9} {names[e]:>9} {'change':>8} {'[min, max]':>18} "
            f"{'lower/higher':>12} {'p':>8}  verdict")
        for r in rows:
            c = r["changes"][e]
            spread = f"[{num(c['min'], '+')}, {num(c['max'], '+')}]"
            out(f"{(r['section'] + ': ' + r['figure'])[:58]:<58} {num(r['median'][exes[0]]):>9} "
                f"{num(r['median'][e]):>9} {num(c['median'], '+'):>8} {spread:>18} "
                f"{c['lower']:>5}/{c['higher']:<6} {c['p']:>8.2g}  {c['verdict']}")
    out("(medians over the passes, in each figure's unit: ns, msg/s or x; change: the median of the "
        "per-pass differences)")
    if rows:
        alpha = rows[0]["alpha"]
        out(f"({len(rows)} figures, each at p < {alpha:g}: between identical builds about "
            f"{len(rows) * alpha:.2g} would be named by chance on average; a change the code explains "
            f"is one to believe)")


def build():
    """Builds the bench of the working tree; its executable's path (what `path` prints)."""
    env = dict(os.environ)
    if "CMAKE" not in env:
        cmake = subprocess.run([os.path.join(ROOT, "scripts/bootstrap.sh"), "--print-cmake"],
                               capture_output=True, text=True, cwd=ROOT).stdout.strip()
        if cmake:
            env["CMAKE"] = cmake
    done = subprocess.run(["cargo", "bench", "-q", "-p", "latency-probe", "--bench", "roundtrip", "--no-run",
                           "--message-format=json"], capture_output=True, text=True, cwd=ROOT, env=env)
    exe = None
    for line in done.stdout.splitlines():
        try:
            m = json.loads(line)
        except ValueError:
            continue
        if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "roundtrip" and m.get("executable"):
            exe = m["executable"]
    if done.returncode != 0 or not exe:
        sys.exit(f"bench-builds: the bench did not build: {done.stderr.strip()[-600:]}")
    return exe


def save(name):
    """Builds the bench of the working tree and copies its executable to target/bench-builds/NAME."""
    exe = build()
    dest_dir = os.path.join(ROOT, "target", "bench-builds")
    os.makedirs(dest_dir, exist_ok=True)
    dest = os.path.join(dest_dir, name)
    shutil.copy2(exe, dest)
    print(dest)


FAKE_BENCH = r'''#!/usr/bin/env python3
import json, os, sys
# A fake bench: B's "planted" figure is 5 ns higher and its throughput 10% lower; "steady"
# moves around the same value in both, so that half the passes favour each build.
here = os.path.dirname(os.path.abspath(__file__))
me = os.path.basename(__file__)
count = os.path.join(here, me + ".runs")
n = int(open(count).read()) if os.path.exists(count) else 0
open(count, "w").write(str(n + 1))
if me == "broken" and n >= 2:
    sys.exit("broken: planted failure")
b = me != "a"
sign = 1 if (n // 2 + b) % 2 else -1  # B - A: +2, +2, -2, -2, ...
figs = [("tap", "steady", "ns", "lower", 50.0 + sign),
        ("tap", "planted", "ns", "lower", 20.0 + (5.0 if b else 0.0) + 0.1 * (n % 3)),
        ("throughput", "try_claim", "msg/s", "higher", 1e7 * (0.9 if b else 1.0) + n)]
with open(os.environ["BENCH_FIGURES"], "w") as f:
    for s, fig, u, bt, v in figs:
        f.write(json.dumps({"section": s, "figure": fig, "unit": u, "better": bt, "value": v}) + "\n")
'''


def check_figures(path):
    """A real bench run's BENCH_FIGURES file: every line a figure, from every section a run of the
    whole bench prints (`cargo test --bench roundtrip` runs it with tiny counts)."""
    with open(path) as f:
        figures = [json.loads(line) for line in f if line.strip()]
    for fig in figures:
        assert set(fig) == {"section", "figure", "unit", "better", "value"}, fig
        assert fig["better"] in ("lower", "higher") and isinstance(fig["value"], (int, float)), fig
    sections = {fig["section"] for fig in figures}
    want = {"round trip", "throughput", "each side alone", "tap", "figure", "one way"}
    assert want <= sections, f"{path}: sections {sorted(sections)}, missing {sorted(want - sections)}"
    keys = [(fig["section"], fig["figure"]) for fig in figures]
    assert len(keys) == len(set(keys)), f"{path}: a figure named twice"
    print(f"bench-builds: {path}: {len(figures)} figures in {len(sections)} sections")


def self_test():
    """The comparison against a fake bench whose changes are planted."""
    with tempfile.TemporaryDirectory(prefix="bench-builds-test-") as tmp:
        exes = []
        for name in ("a", "b", "broken"):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(FAKE_BENCH)
            os.chmod(path, 0o755)
            exes.append(path)
        a, b, broken = exes
        assert [order_of([a, b], p) for p in range(4)] == [[a, b], [b, a], [b, a], [a, b]], "ABBA"
        firsts = [order_of(exes, p)[0] for p in range(6)]
        assert all(firsts.count(e) == 2 for e in exes), "three builds: each first in two of six passes"
        runs, error = measure([a, b], 10, "tap", log=lambda *x, **k: None)
        assert error is None, error
        rows = {r["figure"]: r for r in compare([a, b], runs, 0.01)}
        got = {f: rows[f]["changes"][b]["verdict"] for f in rows}
        assert got == {"steady": "no clear change", "planted": "higher: worse", "try_claim": "lower: worse"}, got
        assert rows["planted"]["changes"][b]["lower"] == 0 and rows["planted"]["changes"][b]["higher"] == 10
        assert abs(rows["planted"]["changes"][b]["median"] - 5.0) < 0.2
        assert sign_test(0, 10) < 0.002 and sign_test(5, 5) == 1.0 and abs(sign_test(1, 7) - 0.0703125) < 1e-9
        steady = rows["steady"]["changes"][b]
        assert steady["lower"] + steady["higher"] == 10 and min(steady["lower"], steady["higher"]) >= 4, steady
        # A build that fails on its third run: the pass it failed in is not counted, those before are.
        runs, error = measure([a, broken], 5, "tap", log=lambda *x, **k: None)
        assert error and "planted failure" in error and len(runs[a]) == 2 == len(runs[broken]), (error, runs)
        lines = []
        show([a, broken], compare([a, broken], runs, 0.01), 2, 5, error, out=lines.append)
        assert any("INCOMPLETE" in line for line in lines), lines
    print("bench-builds self-test: ok")


def main():
    if sys.argv[1:] == ["path"]:
        return print(build())
    if sys.argv[1:2] == ["save"]:
        if len(sys.argv) != 3 or "/" in sys.argv[2]:
            sys.exit("usage: scripts/bench-builds.py save NAME (a plain file name)")
        return save(sys.argv[2])
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--passes", type=int, default=20, help="passes (default 20)")
    ap.add_argument("--only", choices=sorted(SECTIONS), default="tap", help="the bench's section (default tap)")
    ap.add_argument("--alpha", type=float, default=0.01, help="the sign test's level (default 0.01)")
    ap.add_argument("--json", help="also write the figures and changes here")
    ap.add_argument("--self-test", action="store_true", help="check the comparison against a fake bench")
    ap.add_argument("--figures", help="with --self-test: also check this BENCH_FIGURES file of a real run")
    ap.add_argument("exes", nargs="*", help="bench executables (the first is the base)")
    args = ap.parse_args()
    if args.self_test:
        if args.figures:
            check_figures(args.figures)
        return self_test()
    if len(args.exes) < 2:
        sys.exit("bench-builds: give two bench executables or more (scripts/bench-builds.py save NAME keeps one)")
    for e in args.exes:
        if not (os.path.isfile(e) and os.access(e, os.X_OK)):
            sys.exit(f"bench-builds: {e} is not an executable file: give a copy of target/release/deps/roundtrip-*")
    if args.passes < 1:
        sys.exit("bench-builds: --passes must be at least 1")
    exes = [os.path.abspath(e) for e in args.exes]
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    load_before = load_average()
    runs, error = measure(exes, args.passes, args.only)
    rows = compare(exes, runs, args.alpha)
    print(f"\n{started}, section {args.only}, load average {load_before} before, {load_average()} after")
    show(exes, rows, len(runs[exes[0]]), args.passes, error)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"started": started, "section": args.only, "passes": args.passes,
                       "passes_counted": len(runs[exes[0]]), "incomplete": error, "executables": exes,
                       "alpha": args.alpha, "figures": rows}, f, indent=1)
    if error:
        sys.exit(f"bench-builds: {error}")


if __name__ == "__main__":
    main()
