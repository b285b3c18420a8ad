//! What the embedded driver runs with: the settings read back from its context
//! ([`DriverSettings`]), Aeron's rule for term lengths, and the `AERON_*` environment as the
//! builder reads it.

use rusteron_media_driver::bindings::aeron_threading_mode_enum;
use rusteron_media_driver::AeronDriverContext;

/// What an embedded driver runs with, in Aeron's units, as its context holds them after the
/// environment and the builder applied: what `doctor` checks and a report records.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverSettings {
    /// `aeron.threading.mode`: `SHARED`, `SHARED_NETWORK`, `DEDICATED` or `INVOKER`.
    pub threading_mode: String,
    /// `aeron.shared.idle.strategy` (the one agent of SHARED mode).
    pub shared_idle_strategy: String,
    /// `aeron.conductor.idle.strategy`.
    pub conductor_idle_strategy: String,
    /// `aeron.sender.idle.strategy`.
    pub sender_idle_strategy: String,
    /// `aeron.receiver.idle.strategy`.
    pub receiver_idle_strategy: String,
    /// `aeron.term.buffer.length` (network publications), bytes.
    pub term_buffer_length: usize,
    /// `aeron.ipc.term.buffer.length`, bytes.
    pub ipc_term_buffer_length: usize,
    /// `aeron.mtu.length`, bytes.
    pub mtu_length: usize,
    /// `aeron.socket.so_rcvbuf`, bytes.
    pub socket_so_rcvbuf: usize,
    /// `aeron.socket.so_sndbuf`, bytes (0: the OS default).
    pub socket_so_sndbuf: usize,
    /// `aeron.rcv.initial.window.length`, bytes.
    pub rcv_initial_window_length: usize,
    /// `aeron.nak.multicast.max.backoff`, ns.
    pub nak_multicast_max_backoff_ns: u64,
    /// `aeron.nak.multicast.group.size`.
    pub nak_multicast_group_size: usize,
    /// `aeron.nak.unicast.delay`, ns.
    pub nak_unicast_delay_ns: u64,
    /// `aeron.nak.unicast.retry.delay.ratio`.
    pub nak_unicast_retry_delay_ratio: u64,
    /// `aeron.retransmit.unicast.linger`, ns.
    pub retransmit_unicast_linger_ns: u64,
    /// `aeron.publication.linger.timeout`, ns.
    pub publication_linger_timeout_ns: u64,
    /// `aeron.term.buffer.sparse.file`.
    pub term_buffer_sparse_file: bool,
    /// `aeron.file.page.size`, bytes: log files are rounded up to it.
    pub file_page_size: usize,
}

impl DriverSettings {
    pub(super) fn read(ctx: &AeronDriverContext) -> DriverSettings {
        use aeron_threading_mode_enum as M;
        let threading_mode = match ctx.get_threading_mode() {
            M::AERON_THREADING_MODE_DEDICATED => "DEDICATED",
            M::AERON_THREADING_MODE_SHARED_NETWORK => "SHARED_NETWORK",
            M::AERON_THREADING_MODE_SHARED => "SHARED",
            M::AERON_THREADING_MODE_INVOKER => "INVOKER",
        };
        DriverSettings {
            threading_mode: threading_mode.to_owned(),
            shared_idle_strategy: ctx.get_shared_idle_strategy().to_owned(),
            conductor_idle_strategy: ctx.get_conductor_idle_strategy().to_owned(),
            sender_idle_strategy: ctx.get_sender_idle_strategy().to_owned(),
            receiver_idle_strategy: ctx.get_receiver_idle_strategy().to_owned(),
            term_buffer_length: ctx.get_term_buffer_length(),
            ipc_term_buffer_length: ctx.get_ipc_term_buffer_length(),
            mtu_length: ctx.get_mtu_length(),
            socket_so_rcvbuf: ctx.get_socket_so_rcvbuf(),
            socket_so_sndbuf: ctx.get_socket_so_sndbuf(),
            rcv_initial_window_length: ctx.get_rcv_initial_window_length(),
            nak_multicast_max_backoff_ns: ctx.get_nak_multicast_max_backoff_ns(),
            nak_multicast_group_size: ctx.get_nak_multicast_group_size(),
            nak_unicast_delay_ns: ctx.get_nak_unicast_delay_ns(),
            nak_unicast_retry_delay_ratio: ctx.get_nak_unicast_retry_delay_ratio(),
            retransmit_unicast_linger_ns: ctx.get_retransmit_unicast_linger_ns(),
            publication_linger_timeout_ns: ctx.get_publication_linger_timeout_ns(),
            term_buffer_sparse_file: ctx.get_term_buffer_sparse_file(),
            file_page_size: ctx.get_file_page_size(),
        }
    }

    /// Every setting as (Aeron property name, value), values in Aeron's syntax (`10ms`,
    /// `131072`): for a report and `doctor`.
    #[must_use]
    pub fn properties(&self) -> Vec<(&'static str, String)> {
        let ns = |v: u64| {
            if v != 0 && v.is_multiple_of(1_000_000) {
                format!("{}ms", v / 1_000_000)
            } else if v != 0 && v.is_multiple_of(1_000) {
                format!("{}us", v / 1_000)
            } else {
                format!("{v}ns")
            }
        };
        vec![
            ("aeron.threading.mode", self.threading_mode.clone()),
            ("aeron.shared.idle.strategy", self.shared_idle_strategy.clone()),
            ("aeron.conductor.idle.strategy", self.conductor_idle_strategy.clone()),
            ("aeron.sender.idle.strategy", self.sender_idle_strategy.clone()),
            ("aeron.receiver.idle.strategy", self.receiver_idle_strategy.clone()),
            ("aeron.term.buffer.length", self.term_buffer_length.to_string()),
            ("aeron.ipc.term.buffer.length", self.ipc_term_buffer_length.to_string()),
            ("aeron.mtu.length", self.mtu_length.to_string()),
            ("aeron.socket.so_rcvbuf", self.socket_so_rcvbuf.to_string()),
            ("aeron.socket.so_sndbuf", self.socket_so_sndbuf.to_string()),
            (
                "aeron.rcv.initial.window.length",
                self.rcv_initial_window_length.to_string(),
            ),
            ("aeron.nak.multicast.max.backoff", ns(self.nak_multicast_max_backoff_ns)),
            (
                "aeron.nak.multicast.group.size",
                self.nak_multicast_group_size.to_string(),
            ),
            ("aeron.nak.unicast.delay", ns(self.nak_unicast_delay_ns)),
            (
                "aeron.nak.unicast.retry.delay.ratio",
                self.nak_unicast_retry_delay_ratio.to_string(),
            ),
            ("aeron.retransmit.unicast.linger", ns(self.retransmit_unicast_linger_ns)),
            (
                "aeron.publication.linger.timeout",
                ns(self.publication_linger_timeout_ns),
            ),
            (
                "aeron.term.buffer.sparse.file",
                self.term_buffer_sparse_file.to_string(),
            ),
            ("aeron.file.page.size", self.file_page_size.to_string()),
        ]
    }
}

/// Whether the environment sets `name` (to anything but the empty string).
pub(super) fn env_set(name: &str) -> bool {
    std::env::var_os(name).is_some_and(|v| !v.is_empty())
}

/// A byte count from the environment in Aeron's syntax (`65536`, `64k`, `16m`, `1g`).
pub(super) fn env_bytes(name: &str) -> Option<usize> {
    crate::channel::parse_bytes(&std::env::var(name).ok()?)
}
