#!/usr/bin/env python3
"""`latency-probe attach` on the order gateway example against planted causes, and its cost.

Planted (each case --runs times, default 3): the example runs with its tap (10,000 ticks/s,
each interval's 1,024 slowest kept) and `latency-probe attach --pid` watches it for --watch
seconds, with perf (the bands need every off-CPU episode):
- hog: a periodic CPU hog (`hogz`: 300 µs busy every 3 ms) pinned to the gateway thread's core;
  attach must name it for feed-to-gateway's p99 (the verdict's headline names hogz);
- handoff: the example's --handoff (each tick through a crossbeam channel to gateway-send);
  attach must name futex-driven wake-ups for inside-gateway (futex-driven, a futex finding first);
- stall: the example's --stall-us 200 --stall-every 50 (a busy stall in the gateway's handler:
  the ticks behind it wait); attach must name the gateway busy on its CPU without a context
  switch for feed-to-gateway's p99;
- clean: nothing planted; attach must name no hog and no futex for feed-to-gateway.
- container: the hog again, with the example in a container (its own PID and mount namespaces,
  made with `unshare`; its tap and Aeron directory on tmpfs mounts the host does not see):
  attach is given its pid on the host and must find the tap and its threads and name the hog.

Cost (--cost-rounds, default 6): one run of the example; in each round attach watches for 5 s,
then nothing for 5 s (the order flips every round, ABBA); feed-to-gateway's p50 over each
window is read from the tap's log with `latency-probe tap --period`, and the ratio on/off of
each round is printed with their median. Timing model: the tap's (CLOCK_MONOTONIC, the
gateway's poll minus the feed's send stamp).

Exit 1 when a planted case is not named in every run (--need N: in N of them). A run that did not
name its plant while a thread nobody planted was the largest cause of a band (on these two cores
the example's own tap writer, kdamond, a kworker) still counts as named when the band the
headline explains names the plant first besides the unplanted preemptions above it, with a fifth
of the excess they leave ("named besides"). Otherwise such a run, and one during which the
example ran out of ticks (starved, its feed caught up in a burst), is set aside, said so, and run
again, at most --runs times per case. --self-test checks those rules on made-up reports.
Needs root (perf), a C compiler (cc) and
the release builds (`make attach-check` builds them first), or with --debug the debug ones
(`make test` runs the planted cases so, without the cost).

    scripts/attach-check.py [--runs 3] [--need N] [--watch 8] [--cost-rounds 6] [--cases hog,handoff,stall,clean,container] [--debug] [--save DIR]
    scripts/attach-check.py --self-test
"""
import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")
PROBE = GATEWAY = None  # set by main: target/release or, with --debug, target/debug
HOGZ_C = os.path.join(ROOT, "crates", "probe", "tests", "jitter.rs")


def build_hogz(tmp):
    """hogz from the C source the jitter tests hold (one source for both)."""
    text = open(HOGZ_C).read()
    src = text.split('const HOGZ_C: &str = r#"', 1)[1].split('"#;', 1)[0]
    with open(os.path.join(tmp, "hogz.c"), "w") as f:
        f.write(src)
    exe = os.path.join(tmp, "hogz")
    subprocess.run([os.environ.get("CC", "cc"), "-O2", "-o", exe, os.path.join(tmp, "hogz.c")], check=True)
    return exe


class Gateway:
    """The example running with its tap in /dev/shm (tmpfs: a disk's writeback never stalls
    the tap's writer), killed and its tap and Aeron directory removed on exit. In a container (`container`): its
    own PID and mount namespaces (`unshare`), its tap and Aeron directory on tmpfs mounts only
    it sees; `pid` is its pid on this host, `tap` its tap as this host reaches it
    (`/proc/PID/root/...`)."""

    def __init__(self, tmp, name, seconds, extra=(), container=False):
        self.inside = None
        tap = f"/dev/shm/attach-check-{os.getpid()}-{name}"
        shutil.rmtree(tap, ignore_errors=True)
        ticks = str(int(seconds * 10_000))
        self.log = os.path.join(tmp, f"{name}.log")
        cmd = [GATEWAY, "--tap", tap, "--rate", "10000", "--ticks", ticks, "--tap-slowest", "1024", *extra]
        if container:
            self.inside = tempfile.mkdtemp(prefix=f"attach-check-{name}-")
            tap = os.path.join(self.inside, "tap")
            cmd[2] = tap
            cmd = ["unshare", "--pid", "--fork", "--kill-child", "--mount", "--propagation", "private",
                   "--mount-proc", "sh", "-c",
                   'mount -t tmpfs none "$0" && mount -t tmpfs none /dev/shm && exec "$@"', self.inside, *cmd]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        self.pid, self.tap = self.proc.pid, tap
        deadline = time.time() + 10
        while not self.recording():
            if time.time() > deadline or self.proc.poll() is not None:
                sys.exit(f"{name}: the order gateway's tap lists no recording thread{self.said()}")
            time.sleep(0.05)

    def find_in_container(self):
        """unshare's child (pid 1 in its namespace) and its tap as this host reaches it."""
        try:
            with open(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children") as f:
                self.pid = int(f.read().split()[0])
        except (OSError, IndexError, ValueError):
            return False
        self.tap = f"/proc/{self.pid}/root{os.path.join(self.inside, 'tap')}"
        return True

    def said(self):
        """Its exit status and last lines, when it ended."""
        if self.proc.poll() is None:
            return ""
        with open(self.log) as f:
            tail = f.read().strip().splitlines()[-3:]
        return f" (it exited {self.proc.returncode}: {' / '.join(tail)})"

    def recording(self):
        """Whether the tap's status file lists a thread for every figure."""
        if self.inside and not self.find_in_container():
            return False
        try:
            with open(os.path.join(self.tap, "tap.json")) as f:
                figures = json.load(f)["figures"]
        except (OSError, ValueError):
            return False
        return len(figures) == 4 and all(f["recording_tids"] for f in figures)

    def tid(self, name):
        task = f"/proc/{self.pid}/task"
        for t in os.listdir(task):
            with open(f"{task}/{t}/comm") as f:
                if f.read().strip() == name:
                    return int(t)
        sys.exit(f"no thread {name} in the order gateway")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()
        if self.inside:
            os.rmdir(self.inside)  # empty here: its tmpfs went with the container
        else:
            shutil.rmtree(self.tap, ignore_errors=True)
            # Its embedded driver's directory (killed, it cannot remove it; its log buffers hold memory).
            shutil.rmtree(f"/dev/shm/order-gateway-{self.pid}", ignore_errors=True)


def attach(pid, hop, seconds, json_path, save=None, gateway=None):
    """Runs attach; with `save`, keeps its text report there (beside the JSON). None when the
    gateway ended during the watch having moved all its ticks (exit 0): its feed fell behind its
    schedule and caught up in a burst (on 2026-11-27 a CI run's example was starved for about a
    minute: the kernel logged a 45 s workqueue lockup on the exchange's core), so the run shows
    nothing planted."""
    cmd = [PROBE, "attach", "--pid", str(pid), "--hop", hop, "--duration", str(seconds),
           "--diagnostics", "perf", "--json", json_path]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        said = gateway.said() if gateway else ""
        if gateway and gateway.proc.poll() == 0:
            print(f"attach: {done.stderr.strip()[:300]}{said}")
            return None
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}{said}")
    if save:
        with open(save, "w") as f:
            f.write(f"$ latency-probe {' '.join(cmd[1:-2])}\n{done.stdout}")
    with open(json_path) as f:
        return json.load(f)


def named(case, r):
    """Whether the report names what `case` planted, and its headline."""
    v = r["jitter"]["verdict"]
    headline = v["headline"]
    futex = v["futex"] == "futex-driven" and bool(v["findings"]) and v["findings"][0]["cause"] == "futex"
    if case in ("hog", "container"):
        return "hogz" in headline.split("Fix:")[0], headline
    if case == "handoff":
        return futex, headline
    if case == "stall":
        return "while the message waited" in headline.split("Fix:")[0], headline
    return "hogz" not in headline and not futex, headline


# What the check plants that preempts the gateway; any other thread on top of a band (the
# example's own tap writer on these two cores, kdamond, a kworker) was rightly named, but then
# the run cannot show the plant: such a run is set aside and run again, at most --runs times per
# case (twice was the limit until a CI run on 2 cores needed both for the stall case).
PLANTED = ("hogz",)


def unplanted(cause):
    """Whether a band cause is a preemption by a thread nobody planted."""
    by = cause.get("by") or ""
    return cause.get("cause") in ("preempted-foreign", "preempted-own") and not any(p in by for p in PLANTED)


def interfered(r):
    """The first band whose largest cause is a preemption by a thread nobody planted, as
    `band: words`; None when there is none."""
    for band in r["jitter"].get("bands") or []:
        causes = band.get("causes") or []
        if causes and unplanted(causes[0]):
            return f"{band.get('band', '?')}: {causes[0].get('words', '?')}"
    return None


# The band a headline's percentile explains ("p99 = ..." explains p90-p99).
EXPLAINED = {"p90": "p50-p90", "p99": "p90-p99", "p99.9": "p99-p99.9", "max": "p99.9-max"}

# The share of a band's excess a cause needs to be named (the probe's BAND_CAUSE_MIN_SHARE).
NAMED_SHARE = 0.2

# Each planted case's band cause: its name, and what `by` must hold (preemptions).
PLANTED_CAUSE = {"hog": ("preempted-foreign", "hogz"), "container": ("preempted-foreign", "hogz"),
                 "handoff": ("futex", ""), "stall": ("busy", "")}


def named_besides(case, r):
    """Whether the band the headline explains has the plant first after the unplanted preemptions
    above it, with at least NAMED_SHARE of the excess they leave: named, had they not been there."""
    headline = r["jitter"]["verdict"]["headline"]
    which = EXPLAINED.get(headline.split(" = ")[0])
    band = next((b for b in r["jitter"].get("bands") or [] if b.get("band") == which), None)
    if case not in PLANTED_CAUSE or band is None:
        return False
    causes = band.get("causes") or []
    k = next((i for i, c in enumerate(causes) if not unplanted(c)), len(causes))
    above, rest = causes[:k], causes[k:]
    if not above or not rest:
        return False
    left = max(1.0 - sum(c.get("share", 0.0) for c in above), 1e-9)
    cause, by = PLANTED_CAUSE[case]
    first = rest[0]
    return first.get("cause") == cause and by in (first.get("by") or "") and first.get("share", 0.0) / left >= NAMED_SHARE


def own(r):
    """What attach used itself, from its report."""
    c = r.get("own_cost")
    if not c:
        return "not reported"
    return (f"{c['cpu_s'] * 1e3:.0f} ms of CPU ({c['system_s'] * 1e3:.0f} ms in the kernel) in {c['wall_s']:.1f} s, "
            f"{100 * c['cpu_s'] / c['wall_s']:.2f}% of one core; peak memory {c['max_rss_kib'] / 1024:.1f} MiB")


def planted(args, tmp, hogz):
    """The planted runs; the cases named in fewer than --need of their runs."""
    failed = 0
    for case in args.cases.split(","):
        if case == "container" and (os.geteuid() != 0 or not shutil.which("unshare")):
            print("container: skipped: making namespaces needs root and unshare (util-linux)")
            continue
        named_in, set_aside, run = 0, 0, -1
        hop = "inside-gateway" if case == "handoff" else "feed-to-gateway"
        while run + 1 - set_aside < args.runs:
            run += 1
            extra = {"handoff": ["--handoff"], "stall": ["--stall-us", "200", "--stall-every", "50"]}.get(case, [])
            # Ticks for well past the watch (it is killed after): its start-up may take seconds.
            with Gateway(tmp, f"{case}{run}", args.watch + 60, extra, container=case == "container") as g:
                hog = None
                if case in ("hog", "container"):
                    core = os.sched_getaffinity(g.tid("gateway"))
                    hog = subprocess.Popen([hogz, str(min(core)), "300", "3000", str(int(args.watch) + 4)])
                    time.sleep(0.5)
                out = args.save or tmp
                save = os.path.join(args.save, f"{case}{run + 1}.txt") if args.save else None
                r = attach(g.pid, hop, args.watch, os.path.join(out, f"{case}{run + 1}.json"), save, g)
                if hog:
                    hog.kill()
                    hog.wait()
            if r is None:
                if set_aside < args.runs:
                    set_aside += 1
                    print(f"{case} run {run + 1}: set aside ({set_aside} of at most {args.runs}): the example "
                          "ran out of ticks during the watch (starved, its feed caught up in a burst)")
                    continue
                print(f"{case} run {run + 1}: NOT MEASURED: the example ran out of ticks during the watch")
                continue
            ok, headline = named(case, r)
            by = None if ok or case == "clean" else interfered(r)
            if by and named_besides(case, r):
                named_in += 1
                print(f"{case} run {run + 1}: named besides the thread nobody planted on top of {by[:240]}: {hop}")
                print(f"  attach itself: {own(r)}")
                continue
            if by and set_aside < args.runs:
                set_aside += 1
                print(f"{case} run {run + 1}: set aside ({set_aside} of at most {args.runs}): "
                      f"not named while a thread nobody planted was on top of {by[:240]}")
                continue
            named_in += ok
            says = ("no planted cause named" if ok else "A PLANTED CAUSE NAMED") if case == "clean" else \
                ("named" if ok else "NOT NAMED")
            print(f"{case} run {run + 1}: {says}: {hop}: {headline[:300]}")
            print(f"  attach itself: {own(r)}")
        if named_in < min(args.need or args.runs, args.runs):
            failed += 1
    return failed


def percentiles(tap, start_s, a, b):
    """feed-to-gateway's messages, p50 and p99 (ns) over [a, b] (seconds since the epoch),
    from its log."""
    log = os.path.join(tap, "feed-to-gateway.hlog")
    cmd = [PROBE, "tap", log, "--period", f"{a - start_s:.3f}:{b - start_s:.3f}", "--by", "none"]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}: {done.stderr.strip()}")
    out = done.stdout
    row = next(l for l in out.splitlines() if l.startswith("feed-to-gateway"))
    messages = int(row.split()[1].replace(",", ""))
    scale = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}
    values = [float(v) * scale[u] for v, u in re.findall(r"([\d.]+) (ns|µs|ms|s)\b", row)]
    return messages, values[0], values[2]  # p50, p90, p99, p99.9, p99.99, max


def cost(args, tmp):
    window = 5.0
    # Ticks for far longer than the rounds take (it is killed after them): an attach can take
    # 30 s more to exit while the kernel closes its tracepoint events (an RCU tasks-trace grace
    # period), and a service that ran out of ticks mid-round failed the round.
    with Gateway(tmp, "cost", args.cost_rounds * (2 * window + 45) + 10) as g:
        with open(os.path.join(g.tap, "tap.json")) as f:
            start_s = json.load(f)["started_unix_s"]
        p50s, p99s = [], []
        for r in range(args.cost_rounds):
            windows = {}
            for on in ([True, False] if r % 2 == 0 else [False, True]):
                a = time.time()
                if on:
                    report = attach(g.pid, "feed-to-gateway", window, os.path.join(tmp, "cost.json"), gateway=g)
                    if report is None:
                        sys.exit(f"cost round {r + 1}: the example ended during the round (see above); run it again")
                    print(f"  attach itself: {own(report)}")
                else:
                    time.sleep(window)
                windows[on] = (a + 1.0, time.time() - 1.0)  # whole intervals inside the window
            time.sleep(1.5)  # the last interval written
            (n_on, p50_on, p99_on), (n_off, p50_off, p99_off) = (
                percentiles(g.tap, start_s, *windows[k]) for k in (True, False))
            p50s.append(p50_on / p50_off)
            p99s.append(p99_on / p99_off)
            print(f"cost round {r + 1} ({'on first' if r % 2 == 0 else 'off first'}): with attach p50 {p50_on:.0f} ns, "
                  f"p99 {p99_on:.0f} ns ({n_on} messages); without p50 {p50_off:.0f} ns, p99 {p99_off:.0f} ns "
                  f"({n_off}); ratios p50 {p50s[-1]:.3f}, p99 {p99s[-1]:.3f}")
        for name, rs in (("p50", p50s), ("p99", p99s)):
            print(f"cost: {name} with/without attach, median ratio {statistics.median(rs):.3f} "
                  f"(range {min(rs):.3f}-{max(rs):.3f}, {len(rs)} rounds)")
        print(f"load average {os.getloadavg()[0]:.2f}")


def self_test():
    """The rules above on made-up reports: what is named, what is set aside, what is named besides."""
    def report(band, causes, headline="p99 = 1 ms: ..."):
        return {"jitter": {"verdict": {"headline": headline, "futex": "", "findings": []},
                           "bands": [{"band": "p50-p90", "causes": []}, {"band": band, "causes": causes}]}}

    def cause(name, share, by=""):
        return {"cause": name, "share": share, "by": by, "words": f"gateway: {name} {by}".strip()}
    kdamond, driver = cause("preempted-foreign", 0.4, "kdamond.0 (pid 77, not ours)"), \
        cause("preempted-own", 0.3, "order_gateway/aeron-driver (other thread)")
    hogz = cause("preempted-foreign", 0.3, "hogz (pid 9, not ours)")
    checks = [
        ("a hog under kdamond, 50% of what it leaves", named_besides("hog", report("p90-p99", [kdamond, hogz])), True),
        ("a hog under kdamond and the driver, 100% of what they leave",
         named_besides("hog", report("p90-p99", [kdamond, driver, hogz])), True),
        ("a hog under kdamond, 10% of 60%", named_besides("hog", report("p90-p99", [kdamond, cause(
            "preempted-foreign", 0.06, "hogz (pid 9)"), cause("busy", 0.3)])), False),
        ("the stall under the driver", named_besides("stall", report("p90-p99", [driver, cause("busy", 0.5)])), True),
        ("the handoff under the driver", named_besides("handoff", report("p90-p99", [driver, cause("futex", 0.5)])),
         True),
        ("the stall in another band than the headline's",
         named_besides("stall", report("p99-p99.9", [driver, cause("busy", 0.5)])), False),
        ("nothing unplanted on top", named_besides("hog", report("p90-p99", [hogz])), False),
        ("the clean case is never named besides", named_besides("clean", report("p90-p99", [kdamond, hogz])), False),
        ("kdamond on top interferes", interfered(report("p90-p99", [kdamond, hogz])) is not None, True),
        ("hogz on top does not", interfered(report("p90-p99", [hogz, kdamond])) is None, True),
    ]
    bad = [what for what, got, want in checks if got != want]
    for what in bad:
        print(f"self-test: WRONG: {what}")
    if bad:
        sys.exit(f"self-test: {len(bad)} of {len(checks)} checks wrong")
    print(f"self-test: {len(checks)} checks right")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--self-test", action="store_true", help="check the naming rules on made-up reports, run nothing")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--need", type=int, help="runs of each case that must name it (default: every run)")
    p.add_argument("--watch", type=float, default=8)
    p.add_argument("--cost-rounds", type=int, default=6)
    p.add_argument("--cases", default="hog,handoff,stall,clean,container")
    p.add_argument("--debug", action="store_true", help="use the debug builds (make test's)")
    p.add_argument("--save", help="keep each planted run's report (text and JSON) in this directory")
    args = p.parse_args()
    if args.self_test:
        return self_test()
    global PROBE, GATEWAY
    profile = os.path.join(ROOT, "target", "debug" if args.debug else "release")
    PROBE = os.path.join(profile, "latency-probe")
    GATEWAY = os.path.join(profile, "examples", "order_gateway")
    for exe in (PROBE, GATEWAY):
        if not os.path.exists(exe):
            sys.exit(f"{exe} is missing: run `make attach-check` (it builds both) or, with --debug, "
                     "`cargo build -p latency-probe --example order_gateway`")
    if os.geteuid() != 0 and open("/proc/sys/kernel/perf_event_paranoid").read().strip() not in ("-1", "0"):
        if os.environ.get("LATENCY_PROBE_REQUIRE_PERF") == "1":
            sys.exit("LATENCY_PROBE_REQUIRE_PERF=1 but perf is not permitted: run as root")
        print("attach-check: skipped: perf is not permitted (run as root, or perf_event_paranoid 0)")
        return
    if args.save:
        os.makedirs(args.save, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        hogz = build_hogz(tmp)
        failed = planted(args, tmp, hogz) if args.runs > 0 else 0
        if args.cost_rounds > 0:
            cost(args, tmp)
    print(f"date {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, cores {os.cpu_count()}")
    if failed:
        sys.exit(f"{failed} planted case(s) not named in enough runs")


if __name__ == "__main__":
    main()
