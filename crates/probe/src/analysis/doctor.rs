//! `doctor`'s judgement: each reading of the host (`sys::doctor`) against what the run asked
//! for needs, as a [`Check`] with the value found, what it should be, PASS/WARN/FAIL and the
//! one-line fix. Seed 002 lists the environment checks; seed 003 says a bigger receive buffer
//! is not a better one.

use crate::analysis::tuning::{buffer_plan, frame_bytes};
use crate::model::{aeron_default, BufferInputs, Check, CheckStatus, DoctorRequest, HostReadings, NakSettings};
use crate::units::format_ns;

/// Threads that spin while a probe measures.
pub const HOT_THREADS: usize = 2;
/// A `clock_gettime` dearer than this is no longer the vDSO's TSC read.
pub const SLOW_CLOCK_NS: f64 = 100.0;
/// Steal above this many percent is other tenants taking the CPU.
pub const STEAL_PCT: f64 = 1.0;
/// Memory maps a run may need: the driver's and both clients' logs, counters and libraries.
pub const MAPS_NEEDED: u64 = 4_096;
/// The round trip assumed for the socket-buffer checks when none is given (a LAN).
pub const ASSUMED_RTT_NS: u64 = 100_000;

fn check(
    name: &str,
    measured: String,
    expected: impl Into<String>,
    status: CheckStatus,
    fix: impl Into<String>,
) -> Check {
    Check {
        check: name.into(),
        measured,
        expected: expected.into(),
        status,
        fix: fix.into(),
    }
}

fn list(cores: &[usize]) -> String {
    cores.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// Every check, in a fixed order.
#[must_use]
pub fn examine(r: &HostReadings, q: &DoctorRequest) -> Vec<Check> {
    let mut out = vec![cores(r, q), isolation(r, q), tasks(r, q), irqs(r, q), governor(r)];
    out.push(thp(r));
    out.push(swap(r));
    out.push(clock(r));
    out.push(steal(r));
    out.push(shm(r, q));
    out.push(maps(r));
    out.push(perf(r));
    out.push(damon(r));
    out.extend(sockets(r, q));
    out.extend(driver(r, q));
    out
}

fn cores(r: &HostReadings, q: &DoctorRequest) -> Check {
    let n = r.usable_cores.len();
    let measured = format!(
        "{n} usable ({}), hot threads on {}",
        list(&r.usable_cores),
        list(&q.hot_cores)
    );
    let expected = format!(
        "at least {} (the hot threads, plus one for the driver and conductors)",
        HOT_THREADS + 1
    );
    let shared = q.hot_cores.len() == HOT_THREADS && q.hot_cores[0] == q.hot_cores[1];
    match n {
        _ if shared => check("cores", measured, "a core of its own for each hot thread", CheckStatus::Fail, "both hot threads on one core take turns on it, and the run measures the scheduler's time slices (latency-probe refuses it with --idle spin): give them two cores"),
        n if n < HOT_THREADS => check("cores", measured, expected, CheckStatus::Fail, "the two hot threads need a core each: run on a machine (or cpuset) with at least 2 cores"),
        n if n == HOT_THREADS && q.udp => check("cores", measured, expected, CheckStatus::Warn, "over UDP every message passes through the media driver, and with both hot threads spinning on the 2 cores it runs only when the scheduler preempts one: round trips take milliseconds (the verdict names driver-wait); use a machine with a third core for the driver, or aeron:ipc"),
        n if n == HOT_THREADS => check("cores", measured, expected, CheckStatus::Warn, "the media driver and the aeron-rs conductors share the hot cores: every wake-up of theirs preempts a hot thread and lands in the tail; use a machine with a third core"),
        _ => check("cores", measured, expected, CheckStatus::Pass, ""),
    }
}

/// `key=` values on the kernel command line, expanded.
fn cmdline_list(cmdline: &str, key: &str) -> Vec<usize> {
    cmdline
        .split_whitespace()
        .filter_map(|w| w.strip_prefix(key)?.strip_prefix('='))
        // isolcpus may carry flags first: isolcpus=nohz,domain,2-3
        .map(|v| {
            v.split(',')
                .filter(|p| p.chars().next().is_some_and(|c| c.is_ascii_digit()))
                .collect::<Vec<_>>()
                .join(",")
        })
        .flat_map(|v| crate::model::parse_cpu_list(&v))
        .collect()
}

fn isolation(r: &HostReadings, q: &DoctorRequest) -> Check {
    let cmd = r.cmdline.clone().unwrap_or_default();
    let isolated = r.isolated.clone().unwrap_or_default();
    let mut missing = Vec::new();
    for (what, cores) in [
        ("isolcpus", {
            let mut v = cmdline_list(&cmd, "isolcpus");
            v.extend(&isolated);
            v
        }),
        ("nohz_full", cmdline_list(&cmd, "nohz_full")),
        ("rcu_nocbs", cmdline_list(&cmd, "rcu_nocbs")),
    ] {
        if !q.hot_cores.iter().all(|c| cores.contains(c)) {
            missing.push(what);
        }
    }
    let hot = list(&q.hot_cores);
    let measured = if missing.is_empty() {
        format!("cores {hot} isolated, tickless, RCU callbacks offloaded")
    } else {
        format!("cores {hot} not in {}", missing.join(", "))
    };
    if missing.is_empty() {
        check(
            "isolation",
            measured,
            "isolcpus, nohz_full and rcu_nocbs on the hot cores",
            CheckStatus::Pass,
            "",
        )
    } else {
        check(
            "isolation",
            measured,
            "isolcpus, nohz_full and rcu_nocbs on the hot cores",
            CheckStatus::Warn,
            format!(
                "the scheduler, the timer tick and RCU callbacks may run there: boot with isolcpus={hot} nohz_full={hot} \
                 rcu_nocbs={hot} (and leave a core for everything else)"
            ),
        )
    }
}

/// The usable cores no hot thread uses.
fn spare_cores(r: &HostReadings, q: &DoctorRequest) -> Vec<usize> {
    r.usable_cores
        .iter()
        .copied()
        .filter(|c| !q.hot_cores.contains(c))
        .collect()
}

fn tasks(r: &HostReadings, q: &DoctorRequest) -> Check {
    let expected = "no other task allowed on a hot core";
    let Some(t) = &r.tasks_on_hot_cores else {
        return check(
            "other tasks",
            "unknown (/proc not readable)".into(),
            expected,
            CheckStatus::Warn,
            "run doctor where /proc is readable",
        );
    };
    let total: usize = t.iter().map(|(_, n, _)| n).sum();
    let measured = t
        .iter()
        .map(|(c, n, names)| format!("core {c}: {n} tasks ({})", names.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    if total == 0 {
        return check("other tasks", measured, expected, CheckStatus::Pass, "");
    }
    let others = spare_cores(r, q);
    let fix = if others.is_empty() {
        "every core is a hot core here: any other task that wakes preempts a hot thread; use a machine with a spare core".to_owned()
    } else {
        format!(
            "any of them that wakes preempts a hot thread: move them off (systemd: CPUAffinity={} in system.conf; \
             taskset -pc {} <pid>) or isolate the hot cores",
            list(&others),
            list(&others)
        )
    };
    check("other tasks", measured, expected, CheckStatus::Warn, fix)
}

fn irqs(r: &HostReadings, q: &DoctorRequest) -> Check {
    let expected = "no IRQ routed to a hot core";
    let Some(t) = &r.irqs_on_hot_cores else {
        return check(
            "IRQs",
            "unknown (/proc/irq not readable)".into(),
            expected,
            CheckStatus::Warn,
            "run doctor as root",
        );
    };
    let total: usize = t.iter().map(|(_, n)| n).sum();
    let measured = t
        .iter()
        .map(|(c, n)| format!("core {c}: {n}"))
        .collect::<Vec<_>>()
        .join("; ");
    if total == 0 {
        return check("IRQs", measured, expected, CheckStatus::Pass, "");
    }
    let others = spare_cores(r, q);
    let target = if others.is_empty() {
        "another core".to_owned()
    } else {
        list(&others)
    };
    check(
        "IRQs",
        measured,
        expected,
        CheckStatus::Warn,
        format!(
            "an interrupt on a hot core preempts the hot thread: echo {target} > /proc/irq/<n>/smp_affinity_list for each \
             (and IRQBALANCE_BANNED_CPULIST={} for irqbalance)",
            list(&q.hot_cores)
        ),
    )
}

fn governor(r: &HostReadings) -> Check {
    let expected = "performance (or none: the hypervisor decides)";
    let bad: Vec<String> = r
        .governors
        .iter()
        .filter_map(|(c, g)| {
            g.as_ref()
                .filter(|g| *g != "performance")
                .map(|g| format!("core {c}: {g}"))
        })
        .collect();
    let measured = r
        .governors
        .iter()
        .map(|(c, g)| format!("core {c}: {}", g.as_deref().unwrap_or("no cpufreq")))
        .collect::<Vec<_>>()
        .join("; ");
    if bad.is_empty() {
        check("CPU governor", measured, expected, CheckStatus::Pass, "")
    } else {
        check(
            "CPU governor",
            measured,
            expected,
            CheckStatus::Warn,
            "a scaling governor lowers the clock when a core looks idle and takes time to raise it: cpupower frequency-set -g performance",
        )
    }
}

fn thp(r: &HostReadings) -> Check {
    let expected = "madvise or never";
    match r.thp.as_deref() {
        Some("always") => check(
            "transparent huge pages",
            "always".into(),
            expected,
            CheckStatus::Warn,
            "khugepaged compacts and collapses pages behind the hot threads' backs (stalls of ms): echo madvise > /sys/kernel/mm/transparent_hugepage/enabled",
        ),
        Some(v) => check("transparent huge pages", v.into(), expected, CheckStatus::Pass, ""),
        None => check("transparent huge pages", "not present".into(), expected, CheckStatus::Pass, ""),
    }
}

fn swap(r: &HostReadings) -> Check {
    let expected = "off";
    match r.swap_kib {
        Some(0) => check("swap", "off".into(), expected, CheckStatus::Pass, ""),
        Some(k) => check(
            "swap",
            format!("{k} KiB active"),
            expected,
            CheckStatus::Warn,
            "a hot page swapped out costs milliseconds to fault back: swapoff -a (or vm.swappiness=0 and enough memory)",
        ),
        None => check("swap", "unknown (/proc/swaps not readable)".into(), expected, CheckStatus::Warn, "check swapon --show"),
    }
}

fn clock(r: &HostReadings) -> Check {
    let source = r.clocksource.as_deref().unwrap_or("unknown");
    let cost = r.clock_read_ns.unwrap_or(f64::NAN);
    let measured = format!("{source}, clock_gettime {cost:.1} ns (measured)");
    let expected = format!("tsc, under {SLOW_CLOCK_NS:.0} ns a read");
    if source == "tsc" && cost < SLOW_CLOCK_NS {
        check("clock source", measured, expected, CheckStatus::Pass, "")
    } else {
        check(
            "clock source",
            measured,
            expected,
            CheckStatus::Warn,
            "without the TSC every timestamp may be a syscall (hpet, acpi_pm: ~1 µs): echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource (if the kernel lists it as available)",
        )
    }
}

fn steal(r: &HostReadings) -> Check {
    let expected = format!("under {STEAL_PCT}% of CPU time");
    match r.steal_pct {
        Some(p) if p < STEAL_PCT => check("hypervisor steal", format!("{p:.2}%"), expected, CheckStatus::Pass, ""),
        Some(p) => check(
            "hypervisor steal",
            format!("{p:.2}%"),
            expected,
            CheckStatus::Warn,
            "other tenants take this VM's CPUs: that tail is the platform's, not ours; ask for dedicated (pinned, not overcommitted) vCPUs",
        ),
        None => check("hypervisor steal", "not sampled".into(), expected, CheckStatus::Pass, ""),
    }
}

/// A byte count for people: "23.5 GiB", "400 MiB", "64 KiB", "900 B" (binary units; one
/// decimal unless the count is whole in its unit).
fn bytes(n: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let (mut value, mut unit) = (n as f64, "B");
    for u in UNITS {
        // 1023.96 KiB would print as "1024.0 KiB": it is the next unit's 1.0.
        if value < 1023.95 {
            break;
        }
        value /= 1024.0;
        unit = u;
    }
    if unit == "B" || value.fract() == 0.0 {
        format!("{value:.0} {unit}")
    } else {
        format!("{value:.1} {unit}")
    }
}

fn shm(r: &HostReadings, q: &DoctorRequest) -> Check {
    let expected = format!(">= {} for the run's logs", bytes(q.shm_needed));
    match r.shm_free {
        Some(f) if f >= q.shm_needed => check(
            "log space",
            format!("{} free in {}", bytes(f), q.shm_dir),
            expected,
            CheckStatus::Pass,
            "",
        ),
        Some(f) => check(
            "log space",
            format!("{} free in {}", bytes(f), q.shm_dir),
            expected,
            CheckStatus::Fail,
            "the driver cannot create the logs: mount -o remount,size=<more> /dev/shm, or a smaller --term-length",
        ),
        None => check(
            "log space",
            format!("unknown ({} not readable)", q.shm_dir),
            expected,
            CheckStatus::Warn,
            "check df /dev/shm",
        ),
    }
}

fn maps(r: &HostReadings) -> Check {
    let expected = format!(">= {MAPS_NEEDED} (the driver maps every log; each client maps its own)");
    match r.max_map_count {
        Some(m) if m >= MAPS_NEEDED => check("vm.max_map_count", m.to_string(), expected, CheckStatus::Pass, ""),
        Some(m) => check(
            "vm.max_map_count",
            m.to_string(),
            expected,
            CheckStatus::Fail,
            format!(
                "adding a publication fails with ENOMEM once the maps run out: sysctl -w vm.max_map_count={}",
                MAPS_NEEDED * 16
            ),
        ),
        None => check(
            "vm.max_map_count",
            "unknown".into(),
            expected,
            CheckStatus::Warn,
            "cat /proc/sys/vm/max_map_count",
        ),
    }
}

fn perf(r: &HostReadings) -> Check {
    let expected = "root, or kernel.perf_event_paranoid <= 1 (the jitter diagnostics use perf)";
    let level = r.perf_event_paranoid.map_or("unknown".to_owned(), |p| p.to_string());
    if r.root {
        return check(
            "perf_event_paranoid",
            format!("{level} (running as root)"),
            expected,
            CheckStatus::Pass,
            "",
        );
    }
    match r.perf_event_paranoid {
        Some(p) if p <= 1 => check("perf_event_paranoid", level, expected, CheckStatus::Pass, ""),
        _ => check(
            "perf_event_paranoid",
            level,
            expected,
            CheckStatus::Warn,
            "the diagnostics fall back to /proc and cannot name who preempted a hot thread: sysctl -w kernel.perf_event_paranoid=1",
        ),
    }
}

fn damon(r: &HostReadings) -> Check {
    let expected = "no kdamond on";
    let Some(on) = &r.kdamonds else {
        return check(
            "DAMON",
            "unknown (/sys/kernel/mm/damon not readable)".into(),
            expected,
            CheckStatus::Warn,
            "run doctor as root",
        );
    };
    if on.is_empty() {
        return check("DAMON", "no kdamond on".into(), expected, CheckStatus::Pass, "");
    }
    let measured = on
        .iter()
        .map(|k| {
            let pid = k.pid.map_or_else(String::new, |p| format!(" (pid {p})"));
            let what = if k.actions.is_empty() {
                "no scheme".to_owned()
            } else {
                k.actions.join(", ")
            };
            format!("kdamond.{}{pid} on: {what}", k.index)
        })
        .collect::<Vec<_>>()
        .join("; ");
    let off = on
        .iter()
        .map(|k| format!("echo off > /sys/kernel/mm/damon/admin/kdamonds/{}/state", k.index))
        .collect::<Vec<_>>()
        .join("; ");
    check(
        "DAMON",
        measured,
        expected,
        CheckStatus::Warn,
        format!(
            "a kdamond samples memory access every few ms on any core it is allowed, and its schemes page memory out: \
             when it runs on a hot core it preempts the hot thread: {off} \
             (and remove it from what starts DAMON at boot)"
        ),
    )
}

fn driver_value<'a>(q: &'a DoctorRequest, property: &str) -> Option<&'a str> {
    q.driver
        .as_ref()?
        .iter()
        .find(|(k, _)| k == property)
        .map(|(_, v)| v.as_str())
}

fn sockets(r: &HostReadings, q: &DoctorRequest) -> Vec<Check> {
    if !q.udp {
        return vec![check(
            "socket buffers",
            "not used: the channel is IPC".into(),
            "-",
            CheckStatus::Pass,
            "",
        )];
    }
    let so_rcvbuf = driver_value(q, "aeron.socket.so_rcvbuf")
        .and_then(|v| v.parse().ok())
        .unwrap_or(aeron_default::SOCKET_SO_RCVBUF);
    let window = driver_value(q, "aeron.rcv.initial.window.length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(aeron_default::RCV_INITIAL_WINDOW_LENGTH);
    let plan = buffer_plan(&BufferInputs {
        rate: q.rate,
        msg_size: q.msg_size,
        rtt_ns: ASSUMED_RTT_NS,
        receivers: 1,
        pause_ns: 1_000_000,
        recovery_ns: NakSettings::aeron_defaults().nak_multicast_max_backoff_ns * 2,
        recovery_from: "Aeron's default timers".into(),
        lag_ns: 0,
        rmem_max: r.rmem_max,
        wmem_max: r.wmem_max,
        so_rcvbuf,
        rcv_window: window,
    });
    let mut checks = plan.checks;
    for c in &mut checks {
        c.expected = format!(
            "{} ({} msg/s of {} B frames, RTT {} assumed: latency-probe buffers --rtt for yours)",
            c.expected,
            q.rate,
            frame_bytes(q.msg_size),
            format_ns(ASSUMED_RTT_NS)
        );
    }
    checks
}

fn driver(r: &HostReadings, q: &DoctorRequest) -> Vec<Check> {
    let Some(props) = &q.driver else {
        return vec![check(
            "driver settings",
            "unknown: an external driver does not publish its settings in cnc.dat".into(),
            "read where it starts",
            CheckStatus::Warn,
            "start it with AERON_PRINT_CONFIGURATION=true (aeronmd) or -Daeron.print.configuration=true (Java) and check \
             its idle strategies, threading mode and NAK timers",
        )];
    };
    let get = |k: &str| driver_value(q, k).unwrap_or("?");
    let mode = get("aeron.threading.mode");
    let idles: Vec<&str> = props
        .iter()
        .filter(|(k, _)| k.ends_with(".idle.strategy"))
        .map(|(_, v)| v.as_str())
        .collect();
    let spinning = idles.iter().any(|v| {
        let v = v.to_ascii_lowercase();
        v.contains("spin") || v.contains("noop") || v.contains("busy")
    });
    let spare = !spare_cores(r, q).is_empty();
    let measured = format!("threading {mode}, idle {}", idles.join(" / "));
    let mut out = vec![if spinning && !spare {
        check(
            "driver threads",
            measured,
            "backoff or sleeping idle strategies when it shares the hot cores",
            CheckStatus::Fail,
            "a spinning driver on a hot core takes half its time: AERON_SHARED_IDLE_STRATEGY=backoff (and the conductor, sender and receiver strategies)",
        )
    } else {
        check(
            "driver threads",
            measured,
            "no spinning agent on a hot core",
            CheckStatus::Pass,
            "",
        )
    }];
    if q.udp {
        let backoff = get("aeron.nak.multicast.max.backoff");
        let linger = get("aeron.retransmit.unicast.linger");
        let default = backoff == "10ms" && linger == "10ms";
        out.push(check(
            "NAK timers",
            format!("max backoff {backoff}, linger {linger}, group size {}", get("aeron.nak.multicast.group.size")),
            "derived from RTT, budget and receivers",
            if default { CheckStatus::Warn } else { CheckStatus::Pass },
            if default {
                "at Aeron's defaults a lost packet on a multicast/MDC stream costs 10-20 ms: latency-probe nak --rtt <rtt> --budget <per-loss budget> --receivers <n>"
            } else {
                ""
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_read_in_binary_units() {
        assert_eq!(bytes(900), "900 B");
        assert_eq!(bytes(64 << 10), "64 KiB");
        assert_eq!(bytes(400 << 20), "400 MiB");
        assert_eq!(bytes(25_227_210_752), "23.5 GiB");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes((1 << 20) - 1), "1.0 MiB");
    }

    fn request(udp: bool) -> DoctorRequest {
        DoctorRequest {
            hot_cores: vec![0, 1],
            shm_dir: "/dev/shm".into(),
            shm_needed: 1 << 20,
            udp,
            rate: 10_000,
            msg_size: 128,
            driver: Some(vec![
                ("aeron.threading.mode".into(), "SHARED".into()),
                ("aeron.shared.idle.strategy".into(), "backoff".into()),
                ("aeron.nak.multicast.max.backoff".into(), "10ms".into()),
                ("aeron.retransmit.unicast.linger".into(), "10ms".into()),
                ("aeron.nak.multicast.group.size".into(), "10".into()),
            ]),
        }
    }

    fn tuned() -> HostReadings {
        HostReadings {
            usable_cores: vec![0, 1, 2, 3],
            cmdline: Some("isolcpus=nohz,domain,0-1 nohz_full=0-1 rcu_nocbs=0,1".into()),
            isolated: Some(vec![0, 1]),
            tasks_on_hot_cores: Some(vec![(0, 0, vec![]), (1, 0, vec![])]),
            irqs_on_hot_cores: Some(vec![(0, 0), (1, 0)]),
            governors: vec![(0, Some("performance".into())), (1, None)],
            thp: Some("madvise".into()),
            swap_kib: Some(0),
            clocksource: Some("tsc".into()),
            clock_read_ns: Some(20.0),
            steal_pct: Some(0.0),
            shm_free: Some(1 << 30),
            max_map_count: Some(65_530),
            perf_event_paranoid: Some(2),
            root: true,
            rmem_max: Some(212_992),
            wmem_max: Some(212_992),
            kdamonds: Some(vec![]),
        }
    }

    fn status(checks: &[Check], name: &str) -> CheckStatus {
        checks
            .iter()
            .find(|c| c.check == name)
            .unwrap_or_else(|| panic!("{name}: {checks:#?}"))
            .status
    }

    #[test]
    fn both_hot_threads_on_one_core_fail_even_with_cores_to_spare() {
        let mut q = request(false);
        q.hot_cores = vec![2, 2];
        let checks = examine(&tuned(), &q);
        let c = checks.iter().find(|c| c.check == "cores").unwrap();
        assert_eq!(c.status, CheckStatus::Fail, "{c:?}");
        assert!(c.fix.contains("give them two cores"), "{c:?}");
    }

    #[test]
    fn a_tuned_host_passes_everything() {
        let checks = examine(&tuned(), &request(false));
        assert!(checks.iter().all(|c| c.status == CheckStatus::Pass), "{checks:#?}");
    }

    #[test]
    fn each_untuned_setting_is_named_with_its_fix() {
        let mut r = tuned();
        r.usable_cores = vec![0, 1];
        r.cmdline = Some("quiet".into());
        r.isolated = Some(vec![]);
        r.tasks_on_hot_cores = Some(vec![(0, 12, vec!["sshd".into()]), (1, 12, vec![])]);
        r.irqs_on_hot_cores = Some(vec![(0, 3), (1, 0)]);
        r.governors = vec![(0, Some("powersave".into()))];
        r.thp = Some("always".into());
        r.swap_kib = Some(1024);
        r.clocksource = Some("hpet".into());
        r.steal_pct = Some(4.0);
        r.shm_free = Some(1000);
        r.max_map_count = Some(1000);
        r.root = false;
        r.kdamonds = Some(vec![crate::model::Kdamond {
            index: 0,
            pid: Some(77),
            actions: vec!["pageout".into()],
        }]);
        let checks = examine(&r, &request(false));
        for (name, want, fix) in [
            ("cores", CheckStatus::Warn, "share the hot cores"),
            (
                "isolation",
                CheckStatus::Warn,
                "isolcpus=0,1 nohz_full=0,1 rcu_nocbs=0,1",
            ),
            ("other tasks", CheckStatus::Warn, "spare core"),
            ("IRQs", CheckStatus::Warn, "smp_affinity_list"),
            ("CPU governor", CheckStatus::Warn, "frequency-set -g performance"),
            ("transparent huge pages", CheckStatus::Warn, "echo madvise"),
            ("swap", CheckStatus::Warn, "swapoff -a"),
            ("clock source", CheckStatus::Warn, "echo tsc"),
            ("hypervisor steal", CheckStatus::Warn, "the platform's"),
            ("log space", CheckStatus::Fail, "remount"),
            ("vm.max_map_count", CheckStatus::Fail, "sysctl -w vm.max_map_count"),
            ("perf_event_paranoid", CheckStatus::Warn, "perf_event_paranoid=1"),
            (
                "DAMON",
                CheckStatus::Warn,
                "echo off > /sys/kernel/mm/damon/admin/kdamonds/0/state",
            ),
        ] {
            let c = checks.iter().find(|c| c.check == name).unwrap();
            assert_eq!(c.status, want, "{c:#?}");
            assert!(c.fix.contains(fix), "{name}: {}", c.fix);
        }
        let damon = checks.iter().find(|c| c.check == "DAMON").unwrap();
        assert_eq!(damon.measured, "kdamond.0 (pid 77) on: pageout");
    }

    #[test]
    fn udp_checks_sockets_and_default_nak_timers() {
        let mut r = tuned();
        r.rmem_max = Some(65_536);
        let checks = examine(&r, &request(true));
        assert_eq!(status(&checks, "net.core.rmem_max"), CheckStatus::Fail);
        assert_eq!(status(&checks, "NAK timers"), CheckStatus::Warn);
        let ipc = examine(&tuned(), &request(false));
        assert_eq!(status(&ipc, "socket buffers"), CheckStatus::Pass);
        assert!(ipc.iter().all(|c| c.check != "NAK timers"));
        // On two cores the driver has none over UDP, where every message passes through it.
        let mut two = tuned();
        two.usable_cores = vec![0, 1];
        let fix = |checks: &[Check]| checks.iter().find(|c| c.check == "cores").unwrap().fix.clone();
        assert!(fix(&examine(&two, &request(true))).contains("over UDP every message passes through the media driver"));
        assert!(!fix(&examine(&two, &request(false))).contains("UDP"));
    }

    #[test]
    fn a_spinning_driver_on_the_hot_cores_fails_and_an_external_one_is_unknown() {
        let mut r = tuned();
        r.usable_cores = vec![0, 1];
        let mut q = request(false);
        q.driver = Some(vec![("aeron.shared.idle.strategy".into(), "spin".into())]);
        assert_eq!(status(&examine(&r, &q), "driver threads"), CheckStatus::Fail);
        q.driver = None;
        let c = examine(&r, &q);
        assert_eq!(status(&c, "driver settings"), CheckStatus::Warn);
    }
}
