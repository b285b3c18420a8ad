//! The causes the jitter analysis names: a closed set, each with its name in reports, its
//! words in a headline and a band, whose it is and its usual fix.

use serde::{Deserialize, Serialize};

/// A cause of latency the analysis can name. Serialised as its name (`futex`,
/// `preempted-own`, …), so reports written before this type existed read unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// A hot thread blocked in futex calls (a lock, a channel, a condvar).
    Futex,
    /// A hot thread blocked other than in futex calls: its sleeping idle strategy or a syscall.
    Blocked,
    /// A hot thread preempted by one of our own threads.
    PreemptedOwn,
    /// A hot thread preempted by another process.
    PreemptedForeign,
    /// A hot thread preempted, by whom unknown (`/proc` counts without episodes).
    Preempted,
    /// The media driver, which every message on a network channel passes through, waited on a
    /// run queue for a large share of the run: each message waited for it.
    DriverWait,
    /// A thread took page faults.
    PageFaults,
    /// A hot thread moved between CPUs.
    Migrations,
    /// A hot loop stalled on its CPU without a context switch the counters can name.
    Stall,
    /// A stall in a group where the hypervisor took CPU time from this VM.
    Steal,
    /// An attached service's thread on its CPU without a context switch while a message
    /// waited (from the tap's slowest messages): its own work (a long handler), an interrupt,
    /// an SMI; the stamps cannot tell which.
    Busy,
    /// A stall the hiccup meter saw too: the hypervisor, SMI, interrupts.
    Platform,
    /// The probe's own counter reads at group boundaries.
    ProbeReads,
    /// aeron-rs's publication/subscription lock held by its conductor. Not produced since
    /// `messaging` stopped taking aeron-rs's locks on the hot path; reports from before read.
    #[deprecated(note = "no longer produced: messaging's hot path takes no aeron-rs lock")]
    AeronLock,
    /// A cause this version does not know (a report written by a later version).
    #[serde(other)]
    Unknown,
}

/// Whose a cause is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Owner {
    /// The process, its threads and where they run.
    Ours,
    /// Other processes, the hypervisor, interrupts.
    Platform,
}

impl Owner {
    /// `ours` or `platform`, as reports write it.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Owner::Ours => "ours",
            Owner::Platform => "platform",
        }
    }
}

#[allow(deprecated)] // AeronLock: named and worded for old reports, never produced.
impl Cause {
    /// Every cause the analysis produces, in the order reports' tables list them.
    pub const PRODUCED: [Cause; 13] = [
        Cause::Futex,
        Cause::DriverWait,
        Cause::Blocked,
        Cause::PreemptedOwn,
        Cause::PreemptedForeign,
        Cause::Preempted,
        Cause::PageFaults,
        Cause::Migrations,
        Cause::Stall,
        Cause::Steal,
        Cause::Busy,
        Cause::Platform,
        Cause::ProbeReads,
    ];

    /// Its name in reports (`futex`, `preempted-own`, …).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Futex => "futex",
            Cause::Blocked => "blocked",
            Cause::PreemptedOwn => "preempted-own",
            Cause::PreemptedForeign => "preempted-foreign",
            Cause::Preempted => "preempted",
            Cause::DriverWait => "driver-wait",
            Cause::PageFaults => "page-faults",
            Cause::Migrations => "migrations",
            Cause::Stall => "stall",
            Cause::Steal => "steal",
            Cause::Busy => "busy",
            Cause::Platform => "platform",
            Cause::ProbeReads => "probe-reads",
            Cause::AeronLock => "aeron-lock",
            Cause::Unknown => "unknown",
        }
    }

    /// What a headline says when this cause leads (`preempted by another process`).
    #[must_use]
    pub fn lead(self) -> &'static str {
        match self {
            Cause::Futex => "futex-driven jitter",
            Cause::Blocked => "blocking (no futex)",
            Cause::PreemptedOwn => "preempted by our own helpers",
            Cause::PreemptedForeign => "preempted by another process",
            Cause::Preempted => "preempted",
            Cause::DriverWait => "the media driver waited for a core",
            Cause::PageFaults => "page faults",
            Cause::Migrations => "migrations",
            Cause::Stall => "stalls without a context switch",
            Cause::Steal => "hypervisor steal",
            Cause::Busy => "busy on its CPU (its own work or interrupts)",
            Cause::Platform => "platform jitter",
            Cause::ProbeReads => "the probe's own counter reads",
            Cause::AeronLock => "aeron-rs lock held by its conductor",
            Cause::Unknown => "an unknown cause",
        }
    }

    /// The cause of part of a band, in words: `thread` is the hot thread it delayed, `by` who
    /// took the CPU (preemptions).
    #[must_use]
    pub fn band_words(self, thread: &str, by: &str) -> String {
        match self {
            Cause::Futex => format!("{thread} blocked on a futex (woken by another thread)"),
            Cause::Blocked => format!("{thread} blocked (its sleeping idle strategy or a syscall)"),
            Cause::PreemptedOwn | Cause::PreemptedForeign | Cause::Preempted => {
                format!("{thread} preempted by {by}")
            }
            Cause::DriverWait => format!("{thread}'s messages waiting for the media driver, which waited for a core"),
            Cause::PageFaults => format!("{thread} taking page faults"),
            Cause::Migrations => format!("{thread} moving between CPUs"),
            Cause::AeronLock => format!("{thread} waiting for aeron-rs's lock"),
            Cause::Stall => {
                format!("{thread} stalled on its CPU without a context switch (interrupts, SMI, untimed faults)")
            }
            Cause::Steal => format!("{thread} stalled while the hypervisor took CPU time from this VM (steal)"),
            Cause::Busy => format!(
                "{thread} on its CPU without a context switch while the message waited (its own work, an interrupt, \
                 an SMI)"
            ),
            Cause::Platform => "hiccups the meter saw too (hypervisor, SMI, interrupts)".to_owned(),
            Cause::ProbeReads => "the probe's own counter reads at group boundaries".to_owned(),
            Cause::Unknown => format!("{thread}: a cause this version does not know"),
        }
    }

    /// Whose it is: another process, the hypervisor and stalls nothing of ours explains are
    /// the platform's; the rest is ours.
    #[must_use]
    pub fn owner(self) -> Owner {
        match self {
            Cause::PreemptedForeign | Cause::Steal | Cause::Platform | Cause::Stall => Owner::Platform,
            _ => Owner::Ours,
        }
    }

    /// The usual fix, where it does not depend on the thread (a finding may say more).
    #[must_use]
    pub fn usual_fix(self) -> Option<&'static str> {
        Some(match self {
            Cause::Stall => {
                "look for interrupts on the hot cores (/proc/interrupts; irqbalance, IRQ affinity) and hypervisor \
                 steal (the st column of vmstat); on a VM, ask for dedicated (pinned) vCPUs"
            }
            Cause::Steal => {
                "the host runs other guests on these vCPUs: ask for dedicated (pinned) vCPUs, or use bare metal"
            }
            Cause::Busy => {
                "see what the thread runs meanwhile (perf record -t TID, or time its handler: a slow message holds \
                 back those behind it); if not its own work, interrupts on its core (/proc/interrupts, IRQ affinity)"
            }
            Cause::Platform => "isolate cores, move IRQs, or use a quieter host",
            Cause::ProbeReads => "a known cost of diagnostics (21 reads a run); compare with --diagnostics off",
            Cause::PreemptedForeign => {
                "another process runs on the hot core: isolate it (isolcpus=, cset shield, systemd CPUAffinity= for \
                 everything else) or move that process away"
            }
            Cause::PreemptedOwn => {
                "give our helper threads a core of their own, or isolate the hot cores and keep them off"
            }
            Cause::DriverWait => {
                "give the media driver a core the hot threads do not spin on (taskset), or let the hot threads \
                 idle (--idle backoff) where there is none to spare"
            }
            Cause::PageFaults => "pre-fault and mlock what the hot loop uses before measuring",
            Cause::Futex => "take the blocking call (lock, channel, condvar) off the hot path",
            Cause::Blocked => "--idle spin on a pinned, isolated core; find the blocking call with perf trace",
            Cause::Migrations => {
                "pin the hot threads (the probe: --pub-core/--sub-core, do not pass --no-pin; a service: \
                 taskset -pc CORE TID or sched_setaffinity)"
            }
            Cause::Preempted | Cause::AeronLock | Cause::Unknown => return None,
        })
    }
}

impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::fmt::Display for Cause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(deprecated)]
    fn causes_serialise_to_the_names_reports_always_had() {
        for c in Cause::PRODUCED.into_iter().chain([Cause::AeronLock]) {
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(json, format!("\"{}\"", c.as_str()));
            assert_eq!(serde_json::from_str::<Cause>(&json).unwrap(), c);
        }
        // An old report's `aeron-lock` still reads; a later version's new cause reads as unknown.
        assert_eq!(
            serde_json::from_str::<Cause>("\"aeron-lock\"").unwrap(),
            Cause::AeronLock
        );
        assert_eq!(serde_json::from_str::<Cause>("\"gremlins\"").unwrap(), Cause::Unknown);
    }

    #[test]
    fn the_jitter_docs_table_names_every_cause_produced() {
        let docs = include_str!("../../../../docs/jitter.md");
        for c in Cause::PRODUCED {
            assert!(
                docs.contains(&format!("| `{c}` |")),
                "docs/jitter.md's table misses `{c}`"
            );
        }
    }
}
