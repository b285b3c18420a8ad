//! What `latency-probe doctor` reads from the host: the kernel command line, isolated CPUs,
//! which tasks and IRQs may run on the hot cores, governors, transparent huge pages, swap, the
//! clock source (and what a clock read costs, measured), hypervisor steal, `/dev/shm` space,
//! `vm.max_map_count`, `perf_event_paranoid`, the socket buffer caps and DAMON's kdamonds. Every path is read
//! under a root (`/` on a real host, a directory of fake files in tests); what cannot be read
//! is `None`. The judgement is `analysis::doctor`.

use crate::model::{parse_cpu_list, HostReadings, Kdamond};
use crate::sys::clock::now_ns;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How many task names a reading keeps per core.
const NAMES_KEPT: usize = 3;

/// The host, seen under `root`.
#[derive(Debug, Clone)]
pub struct Host {
    root: PathBuf,
}

impl Host {
    /// The real host.
    #[must_use]
    pub fn real() -> Host {
        Host {
            root: PathBuf::from("/"),
        }
    }

    /// A fake host: `root/proc/...`, `root/sys/...` (tests).
    #[must_use]
    pub fn at(root: &Path) -> Host {
        Host {
            root: root.to_path_buf(),
        }
    }

    fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    fn read(&self, p: &str) -> Option<String> {
        fs::read_to_string(self.path(p)).ok()
    }

    fn number<T: std::str::FromStr>(&self, p: &str) -> Option<T> {
        self.read(p)?.trim().parse().ok()
    }

    /// Reads everything `doctor` judges. `steal_sample` is how long hypervisor steal is
    /// sampled (0: not sampled).
    #[must_use]
    pub fn readings(
        &self,
        usable_cores: Vec<usize>,
        hot: &[usize],
        shm_dir: &Path,
        steal_sample: Duration,
    ) -> HostReadings {
        let own = std::process::id();
        HostReadings {
            usable_cores,
            cmdline: self.read("/proc/cmdline").map(|s| s.trim().to_owned()),
            isolated: self
                .read("/sys/devices/system/cpu/isolated")
                .map(|s| parse_cpu_list(&s)),
            tasks_on_hot_cores: self.tasks_on(hot, own),
            irqs_on_hot_cores: self.irqs_on(hot),
            governors: hot
                .iter()
                .map(|&c| {
                    let g = self.read(&format!("/sys/devices/system/cpu/cpu{c}/cpufreq/scaling_governor"));
                    (c, g.map(|s| s.trim().to_owned()))
                })
                .collect(),
            thp: self
                .read("/sys/kernel/mm/transparent_hugepage/enabled")
                .and_then(|s| selected(&s)),
            swap_kib: self.read("/proc/swaps").map(|s| swap_kib(&s)),
            clocksource: self
                .read("/sys/devices/system/clocksource/clocksource0/current_clocksource")
                .map(|s| s.trim().to_owned()),
            clock_read_ns: Some(clock_read_cost()),
            steal_pct: self.steal(steal_sample),
            shm_free: free_bytes(shm_dir),
            max_map_count: self.number("/proc/sys/vm/max_map_count"),
            perf_event_paranoid: self.number("/proc/sys/kernel/perf_event_paranoid"),
            root: is_root(),
            rmem_max: self.number("/proc/sys/net/core/rmem_max"),
            wmem_max: self.number("/proc/sys/net/core/wmem_max"),
            kdamonds: self.kdamonds(),
        }
    }

    /// DAMON's kdamonds that are on, with their pid and their schemes' actions: empty without
    /// DAMON's sysfs interface, `None` when it is there but cannot be listed (not "none on").
    fn kdamonds(&self) -> Option<Vec<Kdamond>> {
        let dir = "/sys/kernel/mm/damon/admin/kdamonds";
        let entries = match fs::read_dir(self.path(dir)) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Some(Vec::new()),
            Err(_) => return None,
        };
        let mut on = Vec::new();
        for e in entries.flatten() {
            let Some(i) = e.file_name().to_str().and_then(|s| s.parse::<usize>().ok()) else {
                continue;
            };
            let k = format!("{dir}/{i}");
            if self.read(&format!("{k}/state")).as_deref().map(str::trim) != Some("on") {
                continue;
            }
            let mut actions = Vec::new();
            for c in fs::read_dir(self.path(&format!("{k}/contexts")))
                .into_iter()
                .flatten()
                .flatten()
            {
                for s in fs::read_dir(c.path().join("schemes")).into_iter().flatten().flatten() {
                    if let Ok(a) = fs::read_to_string(s.path().join("action")) {
                        actions.push(a.trim().to_owned());
                    }
                }
            }
            on.push(Kdamond {
                index: i,
                pid: self.number(&format!("{k}/pid")),
                actions,
            });
        }
        on.sort();
        Some(on)
    }

    /// Tasks allowed on each hot core, other than this process's and the kernel's threads.
    fn tasks_on(&self, hot: &[usize], own: u32) -> Option<Vec<(usize, usize, Vec<String>)>> {
        let mut out: Vec<(usize, usize, Vec<String>)> = hot.iter().map(|&c| (c, 0, Vec::new())).collect();
        for pid in fs::read_dir(self.path("/proc")).ok()?.flatten() {
            let name = pid.file_name();
            let Some(pid) = name.to_str().and_then(|s| s.parse::<u32>().ok()) else {
                continue;
            };
            if pid == own {
                continue;
            }
            // Kernel threads have an empty command line.
            if self.read(&format!("/proc/{pid}/cmdline")).is_none_or(|c| c.is_empty()) {
                continue;
            }
            let Ok(tasks) = fs::read_dir(self.path(&format!("/proc/{pid}/task"))) else {
                continue;
            };
            for t in tasks.flatten() {
                let Some(status) = fs::read_to_string(t.path().join("status")).ok() else {
                    continue;
                };
                let Some(cpus) = field(&status, "Cpus_allowed_list").map(parse_cpu_list) else {
                    continue;
                };
                let comm = field(&status, "Name").unwrap_or("?").to_owned();
                for (core, n, names) in &mut out {
                    if cpus.contains(core) {
                        *n += 1;
                        if names.len() < NAMES_KEPT && !names.contains(&comm) {
                            names.push(comm.clone());
                        }
                    }
                }
            }
        }
        Some(out)
    }

    /// IRQs whose affinity list includes a hot core.
    fn irqs_on(&self, hot: &[usize]) -> Option<Vec<(usize, usize)>> {
        let mut out: Vec<(usize, usize)> = hot.iter().map(|&c| (c, 0)).collect();
        for irq in fs::read_dir(self.path("/proc/irq")).ok()?.flatten() {
            let Some(list) = fs::read_to_string(irq.path().join("smp_affinity_list")).ok() else {
                continue;
            };
            let cpus = parse_cpu_list(&list);
            for (core, n) in &mut out {
                if cpus.contains(core) {
                    *n += 1;
                }
            }
        }
        Some(out)
    }

    fn steal(&self, sample: Duration) -> Option<f64> {
        if sample.is_zero() {
            return None;
        }
        let a = self.read("/proc/stat")?;
        std::thread::sleep(sample);
        let b = self.read("/proc/stat")?;
        steal_pct(&a, &b)
    }
}

/// Free bytes where the logs go (statvfs, through the embedded driver's own check).
#[cfg(feature = "embedded-driver")]
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    aeron_latency::messaging::free_bytes(dir)
}

/// Without the embedded driver the check has nothing to read it with.
#[cfg(not(feature = "embedded-driver"))]
pub(crate) fn free_bytes(_: &Path) -> Option<u64> {
    None
}

/// Whether this process's effective uid is 0 (`/proc/self/status`, `Uid:` real, effective, …).
fn is_root() -> bool {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| field(&s, "Uid").and_then(|v| v.split_whitespace().nth(1)?.parse::<u32>().ok()))
        == Some(0)
}

/// The value of `key:` in a `/proc/<pid>/status` text.
fn field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':').map(str::trim))
}

/// `always [madvise] never` -> `madvise`.
fn selected(s: &str) -> Option<String> {
    let start = s.find('[')?;
    let end = s[start..].find(']')? + start;
    Some(s[start + 1..end].to_owned())
}

/// Total size of the active swap areas in `/proc/swaps`, KiB.
fn swap_kib(s: &str) -> u64 {
    s.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum()
}

/// Steal between two `/proc/stat` texts, percent of all CPU time in between.
#[must_use]
pub fn steal_pct(before: &str, after: &str) -> Option<f64> {
    let cpu = |s: &str| -> Option<Vec<u64>> {
        let line = s.lines().find(|l| l.starts_with("cpu "))?;
        line.split_whitespace().skip(1).map(|v| v.parse().ok()).collect()
    };
    let (a, b) = (cpu(before)?, cpu(after)?);
    let total: u64 = b.iter().zip(&a).map(|(b, a)| b.saturating_sub(*a)).sum();
    let steal = b.get(7)?.saturating_sub(*a.get(7)?);
    (total > 0).then(|| 100.0 * steal as f64 / total as f64)
}

/// The median cost of one `now_ns()` (vDSO `clock_gettime`), over 5 batches of 20,000.
#[must_use]
pub fn clock_read_cost() -> f64 {
    const N: u32 = 20_000;
    let mut costs: Vec<f64> = (0..5)
        .map(|_| {
            let start = now_ns();
            let mut last = start;
            for _ in 0..N {
                last = std::hint::black_box(now_ns());
            }
            (last - start) as f64 / f64::from(N)
        })
        .collect();
    costs.sort_by(f64::total_cmp);
    costs[costs.len() / 2]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thp_swap_and_steal_parse_as_the_kernel_writes_them() {
        assert_eq!(selected("always [madvise] never\n").as_deref(), Some("madvise"));
        let swaps = "Filename\tType\tSize\tUsed\tPriority\n/dev/vda2 partition\t1048572\t0\t-2\n";
        assert_eq!(swap_kib(swaps), 1_048_572);
        assert_eq!(swap_kib("Filename\tType\tSize\tUsed\tPriority\n"), 0);
        let a = "cpu  100 0 100 700 0 0 0 100 0 0\n";
        let b = "cpu  110 0 110 770 0 0 0 110 0 0\n";
        // 10 of 100 jiffies stolen.
        assert_eq!(steal_pct(a, b), Some(10.0));
    }

    #[test]
    fn a_fake_host_reads_what_its_files_say() {
        let root = std::env::temp_dir().join(format!("doctor-fake-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        let put = |p: &str, s: &str| {
            let f = root.join(p);
            fs::create_dir_all(f.parent().unwrap()).unwrap();
            fs::write(f, s).unwrap();
        };
        put(
            "proc/cmdline",
            "BOOT_IMAGE=/vmlinuz isolcpus=1 nohz_full=1 rcu_nocbs=1\n",
        );
        put("sys/devices/system/cpu/isolated", "1\n");
        put("sys/devices/system/cpu/cpu1/cpufreq/scaling_governor", "powersave\n");
        put("sys/kernel/mm/transparent_hugepage/enabled", "[always] madvise never\n");
        put("proc/swaps", "Filename Type Size Used Priority\n/swap file 2048 0 -2\n");
        put("proc/sys/vm/max_map_count", "65530\n");
        put("proc/sys/net/core/rmem_max", "212992\n");
        put("proc/irq/5/smp_affinity_list", "0-1\n");
        put("proc/irq/6/smp_affinity_list", "0\n");
        put("proc/4242/cmdline", "editor\0");
        put("proc/4242/task/4242/status", "Name:\teditor\nCpus_allowed_list:\t0-1\n");
        put("proc/77/cmdline", "");
        put("proc/77/task/77/status", "Name:\tkworker/1:0\nCpus_allowed_list:\t1\n");
        let damon = "sys/kernel/mm/damon/admin/kdamonds";
        put(&format!("{damon}/nr_kdamonds"), "2\n");
        put(&format!("{damon}/0/state"), "on\n");
        put(&format!("{damon}/0/pid"), "88\n");
        put(&format!("{damon}/0/contexts/0/schemes/0/action"), "pageout\n");
        put(&format!("{damon}/1/state"), "off\n");
        let r = Host::at(&root).readings(vec![0, 1], &[1], &root, Duration::ZERO);
        assert_eq!(r.isolated, Some(vec![1]));
        assert_eq!(r.governors, vec![(1, Some("powersave".to_owned()))]);
        assert_eq!(r.thp.as_deref(), Some("always"));
        assert_eq!(r.swap_kib, Some(2048));
        assert_eq!(r.max_map_count, Some(65_530));
        assert_eq!(r.rmem_max, Some(212_992));
        assert_eq!(r.wmem_max, None);
        assert_eq!(r.irqs_on_hot_cores, Some(vec![(1, 1)]));
        // The kernel thread (empty cmdline) is not counted.
        assert_eq!(r.tasks_on_hot_cores, Some(vec![(1, 1, vec!["editor".to_owned()])]));
        assert!(r.clock_read_ns.is_some_and(|c| c > 0.0));
        // The kdamond that is on, with its scheme; not the one that is off.
        let on = Kdamond {
            index: 0,
            pid: Some(88),
            actions: vec!["pageout".to_owned()],
        };
        assert_eq!(r.kdamonds, Some(vec![on]));
        let _ = fs::remove_dir_all(&root);
        // Without DAMON's directory: none on. A directory in its place that is a file cannot
        // be listed: unknown, not "none on".
        fs::create_dir_all(&root).unwrap();
        assert_eq!(Host::at(&root).kdamonds(), Some(vec![]));
        put("sys/kernel/mm/damon/admin/kdamonds", "not a directory");
        assert_eq!(Host::at(&root).kdamonds(), None);
        let _ = fs::remove_dir_all(&root);
    }
}
