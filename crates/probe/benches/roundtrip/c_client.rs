//! The Aeron C client cases (rusteron-client): the same round trip and throughput flows as
//! `messaging`, through the same driver.

use std::hint::spin_loop;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use aeron_latency::messaging::PinnedThread;

use crate::common::{
    big_term_channel, lag, message, seq_of, spawn_pinned, spin_until, wait_for, Control, Counter, Flowing, Op,
    Pausable, Retries, Retry, SubReport, CHANNEL, PROBE_MSG_LEN, RT_FRAGMENT_LIMIT, STUCK, TP_FRAGMENT_LIMIT,
};

// ---------------------------------------------------------------------------------------------
// The Aeron C client (rusteron-client 0.2.16, Aeron 1.54.0, statically linked beside the
// embedded driver), the same round trip and throughput through the same driver: what the
// protocol costs without aeron-rs and without our layer.

/// Ping -> pong and pong -> ping streams of the C-client round trip.
const C_PING_STREAM: i32 = 2002;
const C_PONG_STREAM: i32 = 2003;
/// C-client throughput streams: this plus the variant's index.
pub(crate) const C_THROUGHPUT_STREAM: i32 = 2010;

/// A C client: its context must outlive it (fields drop in order).
pub(crate) struct CClient {
    aeron: rusteron_client::Aeron,
    _context: rusteron_client::AeronContext,
}

impl CClient {
    pub(crate) fn connect(dir: &Path) -> Self {
        let dir = std::ffi::CString::new(dir.to_string_lossy().into_owned()).expect("a path without NUL");
        let context = rusteron_client::AeronContext::new().expect("C client context");
        context.set_dir(&dir).expect("C client dir");
        context.set_pre_touch_mapped_memory(true).expect("C client pre-touch");
        let aeron = rusteron_client::Aeron::new(&context).expect("C client");
        aeron.start().expect("starting the C client");
        CClient {
            aeron,
            _context: context,
        }
    }

    pub(crate) fn publication(&self, channel: &str, stream: i32) -> rusteron_client::AeronPublication {
        let c = std::ffi::CString::new(channel).expect("a channel without NUL");
        self.aeron
            .async_add_publication(&c, stream)
            .and_then(|a| a.poll_blocking(STUCK))
            .unwrap_or_else(|e| panic!("C publication {channel} {stream}: {e:?}"))
    }

    pub(crate) fn exclusive_publication(
        &self,
        channel: &str,
        stream: i32,
    ) -> rusteron_client::AeronExclusivePublication {
        let c = std::ffi::CString::new(channel).expect("a channel without NUL");
        self.aeron
            .async_add_exclusive_publication(&c, stream)
            .and_then(|a| a.poll_blocking(STUCK))
            .unwrap_or_else(|e| panic!("C exclusive publication {channel} {stream}: {e:?}"))
    }

    pub(crate) fn subscription(&self, channel: &str, stream: i32) -> rusteron_client::AeronSubscription {
        let c = std::ffi::CString::new(channel).expect("a channel without NUL");
        self.aeron
            .async_add_subscription(
                &c,
                stream,
                rusteron_client::Handlers::NONE,
                rusteron_client::Handlers::NONE,
            )
            .and_then(|a| a.poll_blocking(STUCK))
            .unwrap_or_else(|e| panic!("C subscription {channel} {stream}: {e:?}"))
    }
}

/// A C publication of either kind, publishing like [`publish`](crate::messaging::publish).
pub(crate) trait CPublish {
    fn is_up(&self) -> bool;
    /// One message, retried while retryable; returns the retries.
    fn send(&self, msg: &[u8], use_offer: bool) -> Retries;
}

macro_rules! c_publish {
    ($t:ty) => {
        impl CPublish for $t {
            fn is_up(&self) -> bool {
                self.is_connected()
            }

            #[inline]
            fn send(&self, msg: &[u8], use_offer: bool) -> Retries {
                use rusteron_client::AeronOfferError as E;
                let mut retries = Retries::default();
                let mut outcome = |r: Result<(), E>| {
                    let kind = match r {
                        Ok(()) => return true,
                        Err(E::BackPressured) => Retry::BackPressured,
                        Err(E::AdminAction) => Retry::AdminAction,
                        Err(E::NotConnected) => Retry::NotConnected,
                        Err(e) => panic!("C publish: {e:?}"),
                    };
                    retries.count(kind);
                    false
                };
                if use_offer {
                    spin_until("C offer", || outcome(self.offer(msg).map(drop)));
                } else {
                    spin_until("C try_claim", || {
                        outcome(self.try_claim_owned(msg.len()).map(|mut c| {
                            c.data().copy_from_slice(msg);
                            c.commit().expect("C commit");
                        }))
                    });
                }
                retries
            }
        }
    };
}
c_publish!(rusteron_client::AeronPublication);
c_publish!(rusteron_client::AeronExclusivePublication);

/// Starts a thread that builds its own C client (the C types are not `Send`) while it may run
/// anywhere, so the client's conductor thread is not pinned with it, then pins itself to
/// `core` and runs `body`. Returns once the thread's streams are added.
fn spawn_c_thread<T: Send + 'static, S: 'static>(
    name: &str,
    dir: &Path,
    core: Option<usize>,
    setup: impl FnOnce(&CClient) -> S + Send + 'static,
    body: impl FnOnce(S) -> T + Send + 'static,
) -> PinnedThread<T> {
    let dir = dir.to_owned();
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let t = spawn_pinned(name, None, move || {
        let client = CClient::connect(&dir);
        let state = setup(&client);
        if let Some(id) = core {
            assert!(
                core_affinity::set_for_current(core_affinity::CoreId { id }),
                "pinning to core {id}"
            );
        }
        let _ = ready_tx.send(());
        let r = body(state);
        drop(client);
        r
    });
    ready_rx.recv_timeout(STUCK).expect("the C thread did not get ready");
    t
}

pub(crate) struct CPing {
    publ: rusteron_client::AeronPublication,
    /// The message: `seq` in its first 8 bytes, `len` bytes sent.
    msg: [u8; PROBE_MSG_LEN],
    len: usize,
    sub: rusteron_client::AeronSubscription,
    seq: u64,
    retries: Retries,
    ctl: Arc<Control>,
    pong: Option<PinnedThread<(u64, Retries)>>,
    _client: CClient,
}

impl CPing {
    /// Ping and pong on streams `C_PING_STREAM + offset` and `C_PONG_STREAM + offset`, messages
    /// of `len` bytes (at most [`PROBE_MSG_LEN`]).
    pub(crate) fn start(dir: &Path, core: Option<usize>, offset: i32, len: usize) -> Self {
        assert!(
            (8..=PROBE_MSG_LEN).contains(&len),
            "ping messages are 8 to {PROBE_MSG_LEN} bytes"
        );
        let (ping_stream, pong_stream) = (C_PING_STREAM + offset, C_PONG_STREAM + offset);
        let client = CClient::connect(dir);
        let ctl = Arc::new(Control::default());
        let ctl2 = ctl.clone();
        let pong = spawn_c_thread(
            "c-pong",
            dir,
            core,
            move |c| {
                (
                    c.subscription(CHANNEL, ping_stream),
                    c.publication(CHANNEL, pong_stream),
                )
            },
            move |(sub, publ)| {
                let (mut echoed, mut retries) = (0u64, Retries::default());
                while ctl2.running() {
                    let n = sub
                        .poll_fn(
                            |msg: &[u8], _| {
                                assert_eq!(msg.len(), len, "a {len}-byte ping");
                                retries.add(publ.send(msg, false));
                                echoed += 1;
                            },
                            RT_FRAGMENT_LIMIT,
                        )
                        .expect("C pong poll");
                    if n == 0 {
                        spin_loop();
                    }
                }
                (echoed, retries)
            },
        );
        let publ = client.publication(CHANNEL, ping_stream);
        let sub = client.subscription(CHANNEL, pong_stream);
        wait_for("C round-trip streams", || publ.is_connected() && sub.is_connected());
        CPing {
            publ,
            msg: [0; PROBE_MSG_LEN],
            len,
            sub,
            seq: 0,
            retries: Retries::default(),
            ctl,
            pong: Some(pong),
            _client: client,
        }
    }

    pub(crate) fn finish(&mut self) -> String {
        self.ctl.stop();
        let (echoed, retries) = self
            .pong
            .take()
            .map_or((0, Retries::default()), |t| t.join().expect("C pong panicked"));
        format!("echoed {echoed}; retried claims: ping {}, pong {retries}", self.retries)
    }
}

impl Pausable for CPing {
    fn pause(&mut self) {
        self.ctl.pause();
    }
    fn resume(&mut self) {
        self.ctl.resume();
    }
}

impl Op for CPing {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let seq = self.seq;
        self.msg[..8].copy_from_slice(&seq.to_le_bytes());
        self.retries.add(self.publ.send(&self.msg[..self.len], false));
        let mut got = false;
        let sub = &self.sub;
        spin_until("C ping: waiting for the echo", || {
            sub.poll_fn(
                |msg: &[u8], _| {
                    if seq_of(msg) == seq {
                        got = true;
                    }
                },
                RT_FRAGMENT_LIMIT,
            )
            .expect("C ping poll");
            got
        });
    }
}

impl Drop for CPing {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// C-client throughput: the bench thread publishes, a pinned C subscriber counts.
pub(crate) struct CFlow<P: CPublish> {
    publ: P,
    sent: u64,
    retries: Retries,
    received: Arc<Counter>,
    ctl: Arc<Control>,
    subscriber: Option<PinnedThread<SubReport>>,
    _client: CClient,
}

impl<P: CPublish> CFlow<P> {
    pub(crate) fn start(
        dir: &Path,
        core: Option<usize>,
        stream: i32,
        lagging: bool,
        add: impl FnOnce(&CClient, &str, i32) -> P,
    ) -> Self {
        let client = CClient::connect(dir);
        let channel = big_term_channel();
        let received = Arc::new(Counter(AtomicU64::new(0)));
        let ctl = Arc::new(Control::default());
        let (received2, ctl2) = (received.clone(), ctl.clone());
        let ch = channel.clone();
        let subscriber = spawn_c_thread(
            "c-tp-sub",
            dir,
            core,
            move |c| c.subscription(&ch, stream),
            move |sub| {
                let mut r = SubReport::default();
                let mut expected = 1u64;
                loop {
                    let n = sub
                        .poll_fn(
                            |msg: &[u8], _| {
                                let seq = seq_of(msg);
                                if seq != expected {
                                    r.gaps += 1;
                                }
                                expected = seq.wrapping_add(1);
                                r.received += 1;
                            },
                            TP_FRAGMENT_LIMIT,
                        )
                        .expect("C subscriber poll");
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
                        lag(n.max(0) as usize);
                    }
                }
                r
            },
        );
        let publ = add(&client, &channel, stream);
        wait_for("C throughput stream", || publ.is_up());
        CFlow {
            publ,
            sent: 0,
            retries: Retries::default(),
            received,
            ctl,
            subscriber: Some(subscriber),
            _client: client,
        }
    }
}

impl<P: CPublish> Flowing for CFlow<P> {
    fn control(&self) -> &Control {
        &self.ctl
    }

    #[inline]
    fn send(&mut self, n: u64) {
        for _ in 0..n {
            self.sent += 1;
            self.retries.add(self.publ.send(&message(self.sent), false));
        }
        self.received
            .wait_for(self.sent, "C throughput: waiting for the subscriber");
    }

    fn finish(&mut self) -> String {
        SubReport::of_stopped(&self.ctl, &mut self.subscriber, "C throughput").summary(self.sent, &self.retries)
    }
}

impl<P: CPublish> Drop for CFlow<P> {
    fn drop(&mut self) {
        let _ = Flowing::finish(self);
    }
}
