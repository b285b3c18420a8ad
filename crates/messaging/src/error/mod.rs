//! Error types: one per operation, each message says what went wrong and how to fix it.
//!
//! aeron-rs reports everything through one mixed `AeronError`; it never crosses this crate's
//! public API. The mapping happens here, once.
//!
//! One file per operation: connecting, adding, offering, polling, the client's own reports
//! (liveness and asynchronous errors), launching the embedded driver, prefaulting, and this
//! process's threads; the tap (feature `tap`).

mod add;
mod aeron_text;
mod connect;
mod launch;
mod liveness;
mod offer;
mod poll;
mod prefault;
#[cfg(feature = "tap")]
mod tap;
mod thread;

pub use add::AddError;
pub(crate) use aeron_text::one_line as aeron_error_line;
pub use connect::ConnectError;
pub use launch::DriverLaunchError;
pub use liveness::{AsyncError, LivenessError};
pub use offer::OfferError;
pub use poll::PollError;
pub use prefault::PrefaultError;
#[cfg(feature = "tap")]
pub use tap::TapError;
pub use thread::{ParseIdleError, SpawnError};

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;

    #[test]
    fn connect_and_launch_messages_speak_to_a_service_not_to_the_probe() {
        let dir = PathBuf::from("/dev/shm/aeron-x");
        let messages = [
            ConnectError::NoDriver { dir: dir.clone() }.to_string(),
            ConnectError::NotADirectory { dir: dir.clone() }.to_string(),
            ConnectError::BadCnc {
                dir: dir.clone(),
                detail: "is garbage".into(),
            }
            .to_string(),
            ConnectError::DriverDead {
                dir: dir.clone(),
                heartbeat_age: Duration::from_secs(30),
            }
            .to_string(),
            ConnectError::Client {
                dir: dir.clone(),
                detail: "x".into(),
            }
            .to_string(),
            DriverLaunchError::NoSpace {
                dir: dir.clone(),
                needed: 100 << 20,
                available: 10 << 20,
                term_length: 16 << 20,
            }
            .to_string(),
            DriverLaunchError::ActiveDriver {
                dir: dir.clone(),
                pid: Some(7),
                heartbeat_age: Duration::from_millis(3),
                process: crate::DriverProcessState::Running,
            }
            .to_string(),
            LivenessError::DriverClosed { dir: dir.clone() }.to_string(),
            LivenessError::DriverTimedOut {
                dir: dir.clone(),
                timeout: Duration::from_secs(10),
            }
            .to_string(),
            LivenessError::ClientTimedOut { dir: dir.clone() }.to_string(),
            LivenessError::ConductorStopped { dir }.to_string(),
        ];
        for m in messages {
            assert!(m.contains("/dev/shm/aeron-x"), "names the directory: {m}");
            for probe_words in ["--dir", "--driver-dir", "--term-length", "latency-", "the run"] {
                assert!(!m.contains(probe_words), "{probe_words:?} in: {m}");
            }
        }
    }
}
