//! Idle strategies with Aeron's names and contract.
//!
//! Guarantees: `idle(work_count)` does nothing when `work_count > 0` except reset the
//! strategy's back-off state, exactly as Aeron's `IdleStrategy.idle(int)`; `idle()` always
//! idles one step (for `hasWork` loops, call `reset()` when work was done). No strategy
//! allocates. `spin` and `noop` never enter the kernel; `yield` makes one `sched_yield`
//! per idle step, `sleep-ns` one `nanosleep`, `backoff` spins, then yields, then parks.
//!
//! | name (`--idle`) | Aeron / Agrona class | when idle |
//! |---|---|---|
//! | `spin` | `BusySpinIdleStrategy` | `spin_loop` hint, keeps the core |
//! | `noop` | `NoOpIdleStrategy` | nothing at all |
//! | `yield` | `YieldingIdleStrategy` | `sched_yield` |
//! | `sleep-ns[:N]` | `SleepingIdleStrategy` | sleeps N ns (default 1,000) |
//! | `backoff` | `BackoffIdleStrategy` | 10 spins, 20 yields, then parks 1 µs doubling to 1 ms |
//!
//! Parks and sleeps last at least the thread's `timerslack_ns` (50 µs by default on Linux;
//! see `prctl(PR_SET_TIMERSLACK)`), so a 1 µs park is really ~50 µs unless the slack is lowered.
//!
//! ```
//! use messaging::IdleStrategy;
//! let mut idle: IdleStrategy = "backoff".parse()?;
//! let mut polls = 0;
//! while polls < 3 {
//!     let work = 0; // e.g. subscriber.poll(...)
//!     idle.idle(work);
//!     polls += 1;
//! }
//! # Ok::<(), messaging::ParseIdleError>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::ParseIdleError;

/// `AERON_IDLE_STRATEGY_BACKOFF_MAX_SPINS` (Aeron C `aeron_agent.h`; Java `Configuration.IDLE_MAX_SPINS`).
pub const BACKOFF_MAX_SPINS: u32 = 10;
/// `AERON_IDLE_STRATEGY_BACKOFF_MAX_YIELDS` (Aeron C `aeron_agent.h`; Java `Configuration.IDLE_MAX_YIELDS`).
pub const BACKOFF_MAX_YIELDS: u32 = 20;
/// `AERON_IDLE_STRATEGY_BACKOFF_MIN_PARK_PERIOD_NS`: the first park, 1 µs (timer slack makes it longer).
pub const BACKOFF_MIN_PARK_NS: u64 = 1_000;
/// `AERON_IDLE_STRATEGY_BACKOFF_MAX_PARK_PERIOD_NS`: the longest park, 1 ms.
pub const BACKOFF_MAX_PARK_NS: u64 = 1_000_000;
/// Agrona `SleepingIdleStrategy.DEFAULT_SLEEP_PERIOD_NS`: what `sleep-ns` sleeps without an argument.
pub const DEFAULT_SLEEP_NS: u64 = 1_000;

/// An idle strategy, chosen by Aeron's alias (`spin`, `noop`, `yield`, `sleep-ns`, `backoff`).
#[derive(Clone, PartialEq, Eq)]
pub enum IdleStrategy {
    /// Busy spin with the CPU's spin-loop hint: lowest latency, burns the core.
    Spin,
    /// Do nothing: a tight loop without even the spin hint.
    NoOp,
    /// `sched_yield` each idle step.
    Yield,
    /// Sleep for a fixed period each idle step.
    Sleep(Duration),
    /// Spin, then yield, then park with exponential back-off.
    Backoff(Backoff),
}

/// State of the `backoff` strategy (Aeron's `BackoffIdleStrategy`).
#[derive(Clone, PartialEq, Eq)]
pub struct Backoff {
    max_spins: u32,
    max_yields: u32,
    min_park_ns: u64,
    max_park_ns: u64,
    spins: u32,
    yields: u32,
    park_ns: u64,
}

impl Backoff {
    /// Aeron's defaults: 10 spins, 20 yields, parks from 1 µs doubling to 1 ms.
    #[must_use]
    pub const fn new() -> Self {
        Self::with(
            BACKOFF_MAX_SPINS,
            BACKOFF_MAX_YIELDS,
            BACKOFF_MIN_PARK_NS,
            BACKOFF_MAX_PARK_NS,
        )
    }

    /// Custom limits (as Aeron's `backoff` init args `spins-yields-minpark-maxpark`).
    #[must_use]
    pub const fn with(max_spins: u32, max_yields: u32, min_park_ns: u64, max_park_ns: u64) -> Self {
        Self {
            max_spins,
            max_yields,
            min_park_ns,
            max_park_ns,
            spins: 0,
            yields: 0,
            park_ns: min_park_ns,
        }
    }

    fn idle(&mut self) {
        if self.spins < self.max_spins {
            self.spins += 1;
            std::hint::spin_loop();
        } else if self.yields < self.max_yields {
            self.yields += 1;
            std::thread::yield_now();
        } else {
            std::thread::sleep(Duration::from_nanos(self.park_ns));
            self.park_ns = (self.park_ns * 2).min(self.max_park_ns);
        }
    }

    fn reset(&mut self) {
        self.spins = 0;
        self.yields = 0;
        self.park_ns = self.min_park_ns;
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for Backoff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Backoff")
            .field("spins", &format_args!("{}/{}", self.spins, self.max_spins))
            .field("yields", &format_args!("{}/{}", self.yields, self.max_yields))
            .field("park_ns", &self.park_ns)
            .finish()
    }
}

impl IdleStrategy {
    /// Aeron's `idle(workCount)`: idle one step if no work was done, else reset.
    #[inline]
    pub fn idle(&mut self, work_count: usize) {
        if work_count > 0 {
            self.reset();
        } else {
            self.idle_once();
        }
    }

    /// Idle one step regardless of work (Aeron's `idle()`).
    #[inline]
    pub fn idle_once(&mut self) {
        match self {
            Self::Spin => std::hint::spin_loop(),
            Self::NoOp => {}
            Self::Yield => std::thread::yield_now(),
            Self::Sleep(d) => std::thread::sleep(*d),
            Self::Backoff(b) => b.idle(),
        }
    }

    /// Reset back-off state after work was done (Aeron's `reset()`).
    #[inline]
    pub fn reset(&mut self) {
        if let Self::Backoff(b) = self {
            b.reset();
        }
    }

    /// Aeron's alias for this strategy (`spin`, `noop`, `yield`, `sleep-ns`, `backoff`).
    #[must_use]
    pub fn alias(&self) -> &'static str {
        match self {
            Self::Spin => "spin",
            Self::NoOp => "noop",
            Self::Yield => "yield",
            Self::Sleep(_) => "sleep-ns",
            Self::Backoff(_) => "backoff",
        }
    }

    /// True for strategies that keep their core busy (`spin`, `noop`): at most one such
    /// thread per core.
    #[must_use]
    pub fn spins(&self) -> bool {
        matches!(self, Self::Spin | Self::NoOp)
    }

    /// Whether an idle step may put the thread to sleep: `sleep-ns`, and `backoff` once it
    /// parks. A loop that measures its own stalls must not count such a step as one.
    #[must_use]
    pub fn sleeps(&self) -> bool {
        matches!(self, Self::Sleep(_) | Self::Backoff(_))
    }
}

impl fmt::Debug for IdleStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sleep(d) => write!(f, "sleep-ns:{}", d.as_nanos()),
            Self::Backoff(b) => b.fmt(f),
            other => f.write_str(other.alias()),
        }
    }
}

impl fmt::Display for IdleStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Sleep(d) => write!(f, "sleep-ns:{}", d.as_nanos()),
            other => f.write_str(other.alias()),
        }
    }
}

/// The longest sleep `sleep-ns:N` takes: 1 s. An idle thread sleeps this long before it sees
/// work or a request to stop (a `Handoff`'s thread is joined when it is dropped).
pub const MAX_SLEEP_NS: u64 = 1_000_000_000;

impl FromStr for IdleStrategy {
    type Err = ParseIdleError;

    /// Accepts Aeron's aliases: `spin` (also `busy-spin`), `noop`, `yield`, `backoff`,
    /// `sleep-ns` and `sleep-ns:<nanoseconds>` (1 to [`MAX_SLEEP_NS`]).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || ParseIdleError { given: s.to_owned() };
        let lower = s.trim().to_ascii_lowercase();
        Ok(match lower.as_str() {
            "spin" | "busy-spin" | "busyspin" => Self::Spin,
            "noop" => Self::NoOp,
            "yield" => Self::Yield,
            "backoff" => Self::Backoff(Backoff::new()),
            "sleep-ns" | "sleep" => Self::Sleep(Duration::from_nanos(DEFAULT_SLEEP_NS)),
            other => {
                let ns = other.strip_prefix("sleep-ns:").ok_or_else(err)?;
                let ns: u64 = ns.trim().parse().map_err(|_| err())?;
                if ns == 0 || ns > MAX_SLEEP_NS {
                    return Err(err());
                }
                Self::Sleep(Duration::from_nanos(ns))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_aeron_alias_parses_and_prints_back() {
        for alias in ["spin", "noop", "yield", "sleep-ns", "backoff"] {
            let s: IdleStrategy = alias.parse().unwrap();
            assert_eq!(s.alias(), alias);
        }
        let s: IdleStrategy = "sleep-ns:5000".parse().unwrap();
        assert_eq!(s, IdleStrategy::Sleep(Duration::from_nanos(5000)));
        assert_eq!(s.to_string(), "sleep-ns:5000");
    }

    #[test]
    fn only_sleep_ns_and_backoff_sleep_and_only_spin_and_noop_spin() {
        for (alias, spins, sleeps) in [
            ("spin", true, false),
            ("noop", true, false),
            ("yield", false, false),
            ("sleep-ns", false, true),
            ("backoff", false, true),
        ] {
            let s: IdleStrategy = alias.parse().unwrap();
            assert_eq!((s.spins(), s.sleeps()), (spins, sleeps), "{alias}");
        }
    }

    #[test]
    fn unknown_names_are_rejected_with_the_valid_ones_listed() {
        for bad in [
            "",
            "busy",
            "sleep-ns:",
            "sleep-ns:0",
            "sleep-ns:abc",
            "sleep-ns:1000000001",
        ] {
            let e = bad.parse::<IdleStrategy>().unwrap_err().to_string();
            assert!(
                e.contains("spin, noop, yield, sleep-ns[:N]") && e.contains("to 1000000000") && e.contains("backoff"),
                "{e}"
            );
        }
    }

    #[test]
    fn backoff_spins_then_yields_then_parks_doubling_to_the_cap_and_resets_on_work() {
        let mut b = Backoff::with(2, 1, 1, 4);
        for _ in 0..2 {
            b.idle();
        }
        assert_eq!((b.spins, b.yields), (2, 0));
        b.idle();
        assert_eq!(b.yields, 1);
        b.idle(); // park 1 ns -> next 2
        assert_eq!(b.park_ns, 2);
        b.idle();
        b.idle();
        assert_eq!(b.park_ns, 4, "capped at max park");
        let mut s = IdleStrategy::Backoff(b);
        s.idle(1);
        let IdleStrategy::Backoff(b) = s else { unreachable!() };
        assert_eq!((b.spins, b.yields, b.park_ns), (0, 0, 1));
    }
}
