//! iceoryx2 (0.10, cargo feature `iceoryx2`): the same round trip and throughput over
//! iceoryx2's publish-subscribe on shared memory, a transport with no driver and no log. Each
//! message is a fixed-size `[u8; N]` loaned from the publisher's pool, written in place and
//! sent (iceoryx2's zero-copy path: the receiver reads it where the sender wrote it); the pong
//! loans a sample of its own and copies the ping into it, as messaging's pong claims and
//! copies. Both sides busy-poll `receive` on the same pinned cores as the other cases.
//!
//! Services use iceoryx2's inter-process flavour (`ipc::Service`, what two processes would
//! use), one node per side as two processes would have, `history_size(0)`, and, for the round
//! trip, a subscriber buffer of one sample with safe overflow (iceoryx2's own ping-pong
//! benchmark's settings); for throughput a buffer of [`TP_FRAGMENT_LIMIT`] samples and no
//! overflow, so the publisher retries (iceoryx2's `RetryUntilDelivered`) instead of losing
//! messages, and the subscriber checks every sequence number.

use std::hint::spin_loop;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use aeron_latency::messaging::PinnedThread;
use iceoryx2::port::publisher::Publisher;
use iceoryx2::port::subscriber::Subscriber;
use iceoryx2::prelude::*;
use iceoryx2::service::port_factory::publish_subscribe::PortFactory;

use crate::common::{
    seq_of, spawn_pinned, spin_until, wait_for, Control, Counter, Flowing, Op, SubReport, TP_FRAGMENT_LIMIT,
};

type Service = ipc::Service;
type Msg<const N: usize> = [u8; N];

/// Quiets iceoryx2's logger (it warns that it found no config file and uses its defaults).
fn quiet() {
    set_log_level(LogLevel::Error);
}

/// A service name of this process, so that concurrent benches do not meet.
fn name(what: &str) -> ServiceName {
    format!("aeron-latency-bench/{}/{what}", std::process::id())
        .as_str()
        .try_into()
        .expect("a valid iceoryx2 service name")
}

/// Opens (or, first, creates) the publish-subscribe service `what` with `N`-byte messages.
fn service<const N: usize>(node: &Node<Service>, what: &str, flow: bool) -> PortFactory<Service, Msg<N>, ()> {
    let (buffer, overflow) = if flow { (TP_FRAGMENT_LIMIT, false) } else { (1, true) };
    node.service_builder(&name(what))
        .publish_subscribe::<Msg<N>>()
        .history_size(0)
        .subscriber_max_buffer_size(buffer)
        .enable_safe_overflow(overflow)
        .max_publishers(1)
        .max_subscribers(1)
        .open_or_create()
        .unwrap_or_else(|e| panic!("iceoryx2 service {what}: {e:?}"))
}

fn new_node() -> Node<Service> {
    quiet();
    NodeBuilder::new()
        .create::<Service>()
        .unwrap_or_else(|e| panic!("iceoryx2 node: {e:?}"))
}

/// Sends `msg`, retrying a loan the pool cannot give yet; returns the retries.
#[inline]
fn send<const N: usize>(publ: &Publisher<Service, Msg<N>, ()>, msg: Msg<N>) -> u64 {
    let mut retries = 0;
    loop {
        match publ.loan_uninit() {
            Ok(sample) => {
                sample
                    .write_payload(msg)
                    .send()
                    .unwrap_or_else(|e| panic!("iceoryx2 send: {e:?}"));
                return retries;
            }
            Err(_) => {
                retries += 1;
                spin_loop();
            }
        }
    }
}

/// The message carrying `seq` in its first 8 bytes.
#[inline]
fn message<const N: usize>(seq: u64) -> Msg<N> {
    let mut m = [0u8; N];
    m[..8].copy_from_slice(&seq.to_le_bytes());
    m
}

/// Ping: the bench thread sends `N` bytes on `a2b`, a pinned pong thread echoes them on `b2a`.
pub(crate) struct IcePing<const N: usize> {
    publ: Publisher<Service, Msg<N>, ()>,
    sub: Subscriber<Service, Msg<N>, ()>,
    seq: u64,
    loan_retries: u64,
    ctl: Arc<Control>,
    pong: Option<PinnedThread<(u64, u64)>>,
    report: Option<(u64, u64)>,
    _services: (PortFactory<Service, Msg<N>, ()>, PortFactory<Service, Msg<N>, ()>),
    _node: Node<Service>,
}

impl<const N: usize> IcePing<N> {
    pub(crate) fn start(core: Option<usize>) -> Self {
        assert!(N >= 8, "a ping carries its 8-byte sequence number");
        let node = new_node();
        let (a2b, b2a) = (format!("rt{N}-a2b"), format!("rt{N}-b2a"));
        let ping_service = service::<N>(&node, &a2b, false);
        let pong_service = service::<N>(&node, &b2a, false);
        let publ = ping_service
            .publisher_builder()
            .create()
            .expect("iceoryx2 ping publisher");
        let sub = pong_service
            .subscriber_builder()
            .create()
            .expect("iceoryx2 ping subscriber");
        let ctl = Arc::new(Control::default());
        let ready = Arc::new(AtomicBool::new(false));
        let (ctl2, ready2) = (ctl.clone(), ready.clone());
        let pong = spawn_pinned("iceoryx2-pong", core, move || {
            let node = new_node();
            let (from, to) = (service::<N>(&node, &a2b, false), service::<N>(&node, &b2a, false));
            let sub = from.subscriber_builder().create().expect("iceoryx2 pong subscriber");
            let publ = to.publisher_builder().create().expect("iceoryx2 pong publisher");
            ready2.store(true, Ordering::Release);
            let (mut echoed, mut retries) = (0u64, 0u64);
            while ctl2.running() {
                match sub.receive() {
                    Ok(Some(ping)) => {
                        let msg = *ping.payload();
                        drop(ping);
                        retries += send(&publ, msg);
                        echoed += 1;
                    }
                    Ok(None) => spin_loop(),
                    Err(e) => panic!("iceoryx2 pong receive: {e:?}"),
                }
            }
            (echoed, retries)
        });
        wait_for("iceoryx2 pong", || ready.load(Ordering::Acquire));
        IcePing {
            publ,
            sub,
            seq: 0,
            loan_retries: 0,
            ctl,
            pong: Some(pong),
            report: None,
            _services: (ping_service, pong_service),
            _node: node,
        }
    }

    /// Stops and joins pong; what both sides saw.
    pub(crate) fn finish(&mut self) -> String {
        self.ctl.stop();
        if let Some(t) = self.pong.take() {
            self.report = Some(t.join().expect("the iceoryx2 pong thread panicked"));
        }
        let (echoed, pong_retries) = self.report.unwrap_or_default();
        format!(
            "echoed {echoed}; retried loans: ping {}, pong {pong_retries}",
            self.loan_retries
        )
    }
}

impl<const N: usize> Op for IcePing<N> {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.loan_retries += send(&self.publ, message::<N>(seq));
        let sub = &self.sub;
        spin_until("iceoryx2: waiting for the echo", || match sub.receive() {
            Ok(Some(echo)) => seq_of(echo.payload()) == seq,
            Ok(None) => false,
            Err(e) => panic!("iceoryx2 ping receive: {e:?}"),
        });
    }
}

impl<const N: usize> Drop for IcePing<N> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Throughput: the bench thread publishes `N`-byte messages, a pinned thread receives them.
pub(crate) struct IceFlow<const N: usize> {
    publ: Publisher<Service, Msg<N>, ()>,
    sent: u64,
    loan_retries: u64,
    received: Arc<Counter>,
    ctl: Arc<Control>,
    subscriber: Option<PinnedThread<SubReport>>,
    _service: PortFactory<Service, Msg<N>, ()>,
    _node: Node<Service>,
}

impl<const N: usize> IceFlow<N> {
    pub(crate) fn start(core: Option<usize>) -> Self {
        let node = new_node();
        let what = format!("tp{N}");
        let flow_service = service::<N>(&node, &what, true);
        let received = Arc::new(Counter(AtomicU64::new(0)));
        let ctl = Arc::new(Control::default());
        let ready = Arc::new(AtomicBool::new(false));
        let (received2, ctl2, ready2) = (received.clone(), ctl.clone(), ready.clone());
        let subscriber = spawn_pinned("iceoryx2-tp-sub", core, move || {
            let node = new_node();
            let sub = service::<N>(&node, &what, true)
                .subscriber_builder()
                .create()
                .expect("iceoryx2 throughput subscriber");
            ready2.store(true, Ordering::Release);
            receive_all(&sub, &received2, &ctl2)
        });
        wait_for("iceoryx2 throughput subscriber", || ready.load(Ordering::Acquire));
        let publ = flow_service
            .publisher_builder()
            .create()
            .expect("iceoryx2 throughput publisher");
        IceFlow {
            publ,
            sent: 0,
            loan_retries: 0,
            received,
            ctl,
            subscriber: Some(subscriber),
            _service: flow_service,
            _node: node,
        }
    }
}

/// The throughput subscriber's loop: every message counted and its sequence checked.
fn receive_all<const N: usize>(sub: &Subscriber<Service, Msg<N>, ()>, received: &Counter, ctl: &Control) -> SubReport {
    let mut r = SubReport::default();
    let mut expected = 1u64;
    loop {
        let mut n = 0;
        while let Some(sample) = sub.receive().unwrap_or_else(|e| panic!("iceoryx2 receive: {e:?}")) {
            let seq = seq_of(sample.payload());
            if seq != expected {
                r.gaps += 1;
            }
            expected = seq.wrapping_add(1);
            n += 1;
            if n == TP_FRAGMENT_LIMIT {
                break;
            }
        }
        r.polls += 1;
        if n > 0 {
            r.received += n as u64;
            received.0.store(r.received, Ordering::Release);
        } else {
            r.empty_polls += 1;
            if !ctl.running() {
                return r;
            }
            spin_loop();
        }
    }
}

impl<const N: usize> Flowing for IceFlow<N> {
    fn control(&self) -> &Control {
        &self.ctl
    }

    #[inline]
    fn send(&mut self, n: u64) {
        for _ in 0..n {
            self.sent += 1;
            self.loan_retries += send(&self.publ, message::<N>(self.sent));
        }
        self.received
            .wait_for(self.sent, "iceoryx2 throughput: waiting for the subscriber");
    }

    fn finish(&mut self) -> String {
        SubReport::of_stopped(&self.ctl, &mut self.subscriber, "iceoryx2 throughput")
            .summary(self.sent, &format!("loans {}", self.loan_retries))
    }
}

impl<const N: usize> Drop for IceFlow<N> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Each side alone, on one thread (`split.rs`): loan + write + send `k` messages, then receive
/// them all, with a subscriber buffer that holds `k`: iceoryx2's own cost per message, without
/// the cross-core transfers its round trip pays.
pub(crate) fn split_row(at: &crate::common::Placement, plan: &crate::common::Plan) -> crate::split::SplitRow {
    const K: usize = 4096;
    let node = new_node();
    let factory = node
        .service_builder(&name("split"))
        .publish_subscribe::<Msg<32>>()
        .history_size(0)
        .subscriber_max_buffer_size(K)
        .enable_safe_overflow(false)
        .max_publishers(1)
        .max_subscribers(1)
        .create()
        .unwrap_or_else(|e| panic!("iceoryx2 split service: {e:?}"));
    let (publ, sub) = at.unpinned(|| {
        (
            factory.publisher_builder().create().expect("iceoryx2 split publisher"),
            factory
                .subscriber_builder()
                .create()
                .expect("iceoryx2 split subscriber"),
        )
    });
    let mut loan_retries = 0;
    let mut expected = 0u64;
    let mut gaps = 0u64;
    let (publish_ns, poll_ns) = crate::split::split_costs(
        K as u64,
        plan.split_rounds,
        |seq| loan_retries += send(&publ, message::<32>(seq)),
        || {
            let mut n = 0;
            while let Some(s) = sub.receive().unwrap_or_else(|e| panic!("iceoryx2 receive: {e:?}")) {
                let seq = seq_of(s.payload());
                gaps += u64::from(seq != expected + 1);
                expected = seq;
                n += 1;
                if n == TP_FRAGMENT_LIMIT as u64 {
                    break;
                }
            }
            n
        },
    );
    assert_eq!(gaps, 0, "iceoryx2 split: messages lost or reordered");
    assert_eq!(loan_retries, 0, "iceoryx2 split: the pool ran out");
    crate::split::SplitRow {
        name: "iceoryx2 loan + send (32 B)",
        k: K as u64,
        publish_ns,
        poll_ns,
        retries: crate::common::Retries::default(),
    }
}
