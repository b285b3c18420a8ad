//! The baselines: the raw cache-line ping-pong (the floor) and a crossbeam channel pair.

use std::hint::spin_loop;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use aeron_latency::messaging::PinnedThread;
use crossbeam_channel::{Receiver, Sender, TryRecvError, TrySendError};
use latency_probe::measure::floor;

use crate::common::{spawn_pinned, spin_until, Op, Pausable};

// ---------------------------------------------------------------------------------------------
// raw: the cache-line ping-pong of `latency_probe::measure::floor`, as an `Op`.

pub(crate) struct Raw {
    line: Arc<floor::Line>,
    next: u64,
    core: Option<usize>,
    responder: Option<PinnedThread<()>>,
}

impl Raw {
    pub(crate) fn start(core: Option<usize>) -> Self {
        let mut raw = Raw {
            line: Arc::new(floor::Line::default()),
            next: 1,
            core,
            responder: None,
        };
        raw.resume();
        raw
    }

    /// Stops and joins the responder.
    fn stop(&mut self) {
        self.line.0.store(floor::STOP, Ordering::Release);
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}

/// Standing still is stopping the responder; running again, a new one on a new line.
impl Pausable for Raw {
    fn pause(&mut self) {
        self.stop();
    }

    fn resume(&mut self) {
        if self.responder.is_some() {
            return;
        }
        self.line = Arc::new(floor::Line::default());
        self.next = 1;
        let l2 = self.line.clone();
        self.responder = Some(spawn_pinned("raw-pong", self.core, move || floor::respond(&l2)));
    }
}

impl Op for Raw {
    #[inline]
    fn op(&mut self) {
        let next = self.next;
        self.line.0.store(next, Ordering::Release);
        spin_until("raw", || self.line.0.load(Ordering::Acquire) == next + 1);
        self.next += 2;
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        self.stop();
    }
}

// ---------------------------------------------------------------------------------------------
// crossbeam: bounded(1) channel pair.

pub(crate) struct Crossbeam {
    tx: Option<Sender<u64>>,
    rx: Receiver<u64>,
    seq: u64,
    responder: Option<PinnedThread<()>>,
}

impl Crossbeam {
    pub(crate) fn start(core: Option<usize>) -> Self {
        let (tx, rx_there) = crossbeam_channel::bounded::<u64>(1);
        let (tx_back, rx) = crossbeam_channel::bounded::<u64>(1);
        let responder = spawn_pinned("crossbeam-pong", core, move || loop {
            match rx_there.try_recv() {
                Ok(mut v) => loop {
                    match tx_back.try_send(v) {
                        Ok(()) => break,
                        Err(TrySendError::Full(x)) => {
                            v = x;
                            spin_loop();
                        }
                        Err(TrySendError::Disconnected(_)) => return,
                    }
                },
                Err(TryRecvError::Empty) => spin_loop(),
                Err(TryRecvError::Disconnected) => return,
            }
        });
        Crossbeam {
            tx: Some(tx),
            rx,
            seq: 0,
            responder: Some(responder),
        }
    }
}

impl Op for Crossbeam {
    #[inline]
    fn op(&mut self) {
        self.seq += 1;
        let Some(tx) = &self.tx else { return };
        let mut v = self.seq;
        spin_until("crossbeam send", || match tx.try_send(v) {
            Ok(()) => true,
            Err(TrySendError::Full(x)) => {
                v = x;
                false
            }
            Err(TrySendError::Disconnected(_)) => panic!("crossbeam: the responder is gone"),
        });
        let want = self.seq;
        spin_until("crossbeam echo", || match self.rx.try_recv() {
            Ok(got) => {
                assert_eq!(got, want, "crossbeam: echo out of order");
                true
            }
            Err(TryRecvError::Empty) => false,
            Err(TryRecvError::Disconnected) => panic!("crossbeam: the responder is gone"),
        });
    }
}

impl Drop for Crossbeam {
    fn drop(&mut self) {
        // Disconnecting the forward channel ends the responder.
        self.tx = None;
        if let Some(t) = self.responder.take() {
            let _ = t.join();
        }
    }
}
