//! The messaging cases over the embedded driver: the ping / pong round trip, `offer_poll` on
//! one thread, and the throughput flows (the bench thread publishes, a pinned thread
//! subscribes); plus [`publish`], the retrying publish every one of them (and `split`) uses.

use std::hint::spin_loop;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aeron_latency::messaging::{
    Client, Concurrent, Exclusive, MessageHeader, OfferError, PinnedThread, Publication, PublicationKind, Subscriber,
};

use crate::common::{
    big_term_channel, connect, lag, message, seq_of, spawn_pinned, spin_until, wait_for, Control, Counter, Flowing, Op,
    Pausable, Retries, Retry, SubReport, CHANNEL, PROBE_MSG_LEN, RT_FRAGMENT_LIMIT,
};

const PING_STREAM: i32 = 1002;
const PONG_STREAM: i32 = 1003;
const OFFER_POLL_STREAM: i32 = 1004;
/// Throughput variants use this stream id plus their index (a fresh log each).
const THROUGHPUT_STREAM: i32 = 1010;

/// Either of messaging's publications, so one case measures both: the concurrent one (an
/// atomic add per message) and the exclusive one.
pub(crate) trait Pub: PublicationKind {
    /// Adds one on `channel` and `stream`.
    fn add(client: &Client, channel: &str, stream: i32) -> Publication<Self>;
}

impl Pub for Concurrent {
    fn add(client: &Client, channel: &str, stream: i32) -> Publication<Self> {
        client.publication(channel, stream).expect("publication")
    }
}

impl Pub for Exclusive {
    fn add(client: &Client, channel: &str, stream: i32) -> Publication<Self> {
        client
            .exclusive_publication(channel, stream)
            .expect("exclusive publication")
    }
}

/// Publishes one message, retrying retryable failures; returns the retries it took.
#[inline]
pub(crate) fn publish<P: Pub>(publ: &mut Publication<P>, msg: &[u8], use_offer: bool) -> Retries {
    let mut retries = Retries::default();
    let stream = publ.stream_id();
    let mut outcome = |r: Result<(), OfferError>| {
        let kind = match r {
            Ok(()) => return true,
            Err(OfferError::BackPressured) => Retry::BackPressured,
            Err(OfferError::AdminAction) => Retry::AdminAction,
            Err(OfferError::NotConnected) => Retry::NotConnected,
            Err(e) => panic!("publishing on stream {stream}: {e}"),
        };
        retries.count(kind);
        false
    };
    if use_offer {
        spin_until("offer", || outcome(publ.offer(msg).map(drop)));
    } else {
        spin_until("try_claim", || {
            outcome(publ.try_claim(msg.len()).map(|mut c| {
                c.buffer_mut().copy_from_slice(msg);
                c.commit();
            }))
        });
    }
    retries
}

// ---------------------------------------------------------------------------------------------
// messaging: ping / pong over the embedded driver.

/// What the pong thread did.
#[derive(Debug, Default, Clone, Copy)]
struct PongReport {
    echoed: u64,
    claim_retries: Retries,
}

pub(crate) struct Ping<P: Pub = Concurrent> {
    publ: Publication<P>,
    /// The message: `seq` in its first 8 bytes, `len` bytes sent.
    msg: [u8; PROBE_MSG_LEN],
    len: usize,
    sub: Subscriber,
    seq: u64,
    claim_retries: Retries,
    ctl: Arc<Control>,
    pong: Option<PinnedThread<PongReport>>,
    report: Option<PongReport>,
    _client: Client,
}

impl<P: Pub> Ping<P> {
    /// Ping and pong on streams `PING_STREAM + offset` and `PONG_STREAM + offset`, messages of
    /// `len` bytes (at most [`PROBE_MSG_LEN`]).
    pub(crate) fn start(dir: &Path, core: Option<usize>, offset: i32, len: usize) -> Self {
        assert!(
            (8..=PROBE_MSG_LEN).contains(&len),
            "ping messages are 8 to {PROBE_MSG_LEN} bytes"
        );
        // Two clients, as ping and pong would be two processes.
        let client = connect(dir);
        let pong_client = connect(dir);
        let (ping_stream, pong_stream) = (PING_STREAM + offset, PONG_STREAM + offset);
        let publ = P::add(&client, CHANNEL, ping_stream);
        let sub = client.subscription(CHANNEL, pong_stream).expect("pong subscription");
        let mut pong_sub = pong_client
            .subscription(CHANNEL, ping_stream)
            .expect("ping subscription");
        let mut pong_publ = P::add(&pong_client, CHANNEL, pong_stream);
        wait_for("messaging streams", || {
            publ.is_connected() && sub.is_connected() && pong_sub.is_connected() && pong_publ.is_connected()
        });
        let ctl = Arc::new(Control::default());
        let ctl2 = ctl.clone();
        let pong = spawn_pinned("messaging-pong", core, move || {
            let mut r = PongReport::default();
            while ctl2.running() {
                let n = pong_sub
                    .poll(
                        &mut |msg: &[u8], _: &MessageHeader<'_>| {
                            assert_eq!(msg.len(), len, "a {len}-byte ping");
                            r.claim_retries.add(publish(&mut pong_publ, msg, false));
                            r.echoed += 1;
                        },
                        RT_FRAGMENT_LIMIT,
                    )
                    .unwrap_or(0);
                if n == 0 {
                    spin_loop();
                }
            }
            drop((pong_sub, pong_publ, pong_client));
            r
        });
        Ping {
            publ,
            msg: [0; PROBE_MSG_LEN],
            len,
            sub,
            seq: 0,
            claim_retries: Retries::default(),
            ctl,
            pong: Some(pong),
            report: None,
            _client: client,
        }
    }

    /// Stops and joins pong; returns what both sides saw.
    pub(crate) fn finish(&mut self) -> String {
        self.ctl.stop();
        if let Some(t) = self.pong.take() {
            self.report = Some(t.join().expect("the pong thread panicked"));
        }
        let r = self.report.unwrap_or_default();
        format!(
            "echoed {}; retried claims: ping {}, pong {}",
            r.echoed, self.claim_retries, r.claim_retries
        )
    }
}

impl<P: Pub> Pausable for Ping<P> {
    fn pause(&mut self) {
        self.ctl.pause();
    }
    fn resume(&mut self) {
        self.ctl.resume();
    }
}

impl<P: Pub> Op for Ping<P> {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.msg[..8].copy_from_slice(&seq.to_le_bytes());
        self.claim_retries
            .add(publish(&mut self.publ, &self.msg[..self.len], false));
        let mut got = false;
        let sub = &mut self.sub;
        spin_until("messaging: waiting for the echo", || {
            sub.poll(
                &mut |msg: &[u8], _: &MessageHeader<'_>| {
                    if seq_of(msg) == seq {
                        got = true;
                    }
                },
                RT_FRAGMENT_LIMIT,
            )
            .unwrap_or(0);
            got
        });
    }
}

impl<P: Pub> Drop for Ping<P> {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

// ---------------------------------------------------------------------------------------------
// offer_poll: one thread offers and polls its own stream.

pub(crate) struct OfferPoll {
    publ: Publication<Concurrent>,
    sub: Subscriber,
    seq: u64,
    retries: Retries,
    _client: Client,
}

impl OfferPoll {
    pub(crate) fn start(dir: &Path) -> Self {
        let client = connect(dir);
        let channel = big_term_channel();
        let sub = client
            .subscription(&channel, OFFER_POLL_STREAM)
            .expect("offer_poll subscription");
        let publ = client
            .publication(&channel, OFFER_POLL_STREAM)
            .expect("offer_poll publication");
        wait_for("offer_poll stream", || publ.is_connected() && sub.is_connected());
        OfferPoll {
            publ,
            sub,
            seq: 0,
            retries: Retries::default(),
            _client: client,
        }
    }

    pub(crate) fn notes(&self) -> String {
        format!("retried offers: {}", self.retries)
    }
}

impl Op for OfferPoll {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.retries.add(publish(&mut self.publ, &message(seq), true));
        let mut got = false;
        let sub = &mut self.sub;
        spin_until("offer_poll: polling back", || {
            sub.poll(
                &mut |msg: &[u8], _: &MessageHeader<'_>| {
                    if seq_of(msg) == seq {
                        got = true;
                    }
                },
                RT_FRAGMENT_LIMIT,
            )
            .unwrap_or(0);
            got
        });
    }
}

// ---------------------------------------------------------------------------------------------
// throughput: the bench thread publishes, a pinned thread subscribes and counts.

/// One throughput configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Variant {
    pub(crate) use_offer: bool,
    pub(crate) fragment_limit: usize,
    pub(crate) term: Option<usize>,
    /// The subscriber lets the publisher run ahead ([`lag`]).
    pub(crate) lagging: bool,
}

pub(crate) struct Flow<P: Pub = Concurrent> {
    publ: Publication<P>,
    use_offer: bool,
    sent: u64,
    retries: Retries,
    received: Arc<Counter>,
    ctl: Arc<Control>,
    subscriber: Option<PinnedThread<SubReport>>,
    report: Option<SubReport>,
    _client: Client,
}

impl<P: Pub> Flow<P> {
    pub(crate) fn start(dir: &Path, core: Option<usize>, index: usize, v: Variant) -> Self {
        let client = connect(dir);
        let sub_client = connect(dir);
        let channel = v
            .term
            .map_or_else(|| CHANNEL.to_owned(), |t| format!("{CHANNEL}?term-length={t}"));
        let stream = THROUGHPUT_STREAM + index as i32;
        let mut sub = sub_client
            .subscription(&channel, stream)
            .expect("throughput subscription");
        let publ = P::add(&client, &channel, stream);
        wait_for("throughput stream", || publ.is_connected() && sub.is_connected());
        let received = Arc::new(Counter(AtomicU64::new(0)));
        let ctl = Arc::new(Control::default());
        let (received2, ctl2) = (received.clone(), ctl.clone());
        let (limit, lagging) = (v.fragment_limit, v.lagging);
        let subscriber = spawn_pinned("tp-sub", core, move || {
            let mut r = SubReport::default();
            let mut expected = 1u64;
            loop {
                let n = sub
                    .poll(
                        &mut |msg: &[u8], _: &MessageHeader<'_>| {
                            let seq = seq_of(msg);
                            if seq != expected {
                                r.gaps += 1;
                            }
                            expected = seq.wrapping_add(1);
                            r.received += 1;
                        },
                        limit,
                    )
                    .unwrap_or(0);
                r.polls += 1;
                if n > 0 {
                    received2.0.store(r.received, Ordering::Release);
                } else {
                    r.empty_polls += 1;
                    if !ctl2.running() {
                        break;
                    }
                    spin_loop();
                }
                if lagging {
                    lag(n);
                }
            }
            drop((sub, sub_client));
            r
        });
        Flow {
            publ,
            use_offer: v.use_offer,
            sent: 0,
            retries: Retries::default(),
            received,
            ctl,
            subscriber: Some(subscriber),
            report: None,
            _client: client,
        }
    }
}

impl<P: Pub> Flowing for Flow<P> {
    fn control(&self) -> &Control {
        &self.ctl
    }

    #[inline]
    fn send(&mut self, n: u64) {
        for _ in 0..n {
            self.sent += 1;
            self.retries
                .add(publish(&mut self.publ, &message(self.sent), self.use_offer));
        }
        self.received
            .wait_for(self.sent, "throughput: waiting for the subscriber");
    }

    fn finish(&mut self) -> String {
        self.ctl.stop();
        if let Some(t) = self.subscriber.take() {
            self.report = Some(t.join().expect("the subscriber thread panicked"));
        }
        let r = self.report.unwrap_or_default();
        r.summary(self.sent, &self.retries)
    }
}

impl<P: Pub> Drop for Flow<P> {
    fn drop(&mut self) {
        let _ = Flowing::finish(self);
    }
}
