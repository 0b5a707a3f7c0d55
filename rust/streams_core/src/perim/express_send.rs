//! The express send (issue 13): a putmsg whose message the driver right below the Stream head
//! transmits without this Stream's lock — the transport analogue of the pipe's express write
//! (`express.rs`).
//!
//! A driver whose write put procedure would only transmit a request (TPI UDP's
//! T_UNITDATA_REQ in TS_IDLE) publishes its transmit path under the lock
//! ([`QCtx::set_express_tx`](crate::stream::QCtx::set_express_tx): an [`ExpressTx`], a copy of
//! what the transmit reads of the driver's state), and withdraws it under the lock when that
//! state changes (unbind, close, options, a full send buffer). When a hold that sent a putmsg
//! down ends — after another that did, or when the last arming was used (a request and its
//! reply taking turns would only arm and disarm) — and nothing would stop the next one — the
//! head adds nothing
//! (`HeadProcs::express_ok`), nothing is pushed above the driver, the driver's write queue is
//! empty and nothing waits on it, and a path is published — the perimeter *arms*. Until the
//! next hold of the lock, a putmsg ([`Perim::send_express`](super::Perim::send_express))
//! hands its message to the path without the lock.
//!
//! Unlike an express write, the bypassed work is long (the route, the packet, the transmit,
//! on loopback the delivery) and may answer into this same Stream. So the armed word also
//! counts the sends *in flight*, and every hold of the lock, after disarming, waits for that
//! count to drain before it goes on (illumos' `sq_count` in the same place):
//!
//! ```text
//!   lock holder (any enter)                  express sender (no lock of this Stream)
//!   -----------------------                  ---------------------------------------
//!   under the Stream lock:                   word += CLAIM            (claim)
//!     word &= !ARMED        (disarm)         ARMED was clear? word -= CLAIM, locked putmsg
//!     wait until word == 0  (drain)          path := the armed path (leaf lock `cell`)
//!     count the owed puts                    path.send(m): Declined(m)? release, locked putmsg
//!                                            an answer (T_UDERROR_IND)? put it into this
//!     apply the inbound list                   Stream's own gate, at the head's read queue
//!     ... the operation ...                  word -= CLAIM            (release)
//!   leave: the published path changed?
//!     let go of the kept one; arm: keep the
//!     path (if not kept), word |= ARMED
//! ```
//!
//! Why it is the locked putmsg: every change to the Stream, the driver or its published path
//! happens in a hold of the lock, and every hold begins by disarming and draining. A claim
//! made before the disarm (the claim and the disarm are read-modify-writes of one word, so
//! one comes first) has its send finished, answer included, before the hold goes on; a claim
//! made after it sees the word disarmed and makes the locked putmsg, which waits for the lock.
//! So no locked operation (unbind, close, option change, push, flush, an M_ERROR) runs while
//! a send is in flight, and what a hold sees of the driver no express send changes after its
//! start. The path refuses (declines, nothing sent) whatever the locked put procedure would
//! answer otherwise than by sending (a bad address or option, an oversize datagram, no send
//! buffer): the locked putmsg then makes that answer, in order. An answer to a send that was
//! made (a transmit error's T_UDERROR_IND) goes into this Stream's own gate before the claim
//! is released, so the next hold applies it before anything of its own, as the locked put
//! procedure's `qreply` would have put it at the head before the next operation; the sender
//! runs its own perimeter afterwards if that put claimed it. One thread's datagrams go out in
//! the order it sent them (each send finishes before its putmsg returns).
//!
//! Statistics: the put of each express send is counted on the driver's write queue when the
//! next hold disarms (`owed`, read after the drain), the module-wide totals by the sender.
//!
//! # Locking
//! `cell` is a leaf lock (BH-safe spinlock), taken under the Stream lock by a leave that
//! stores or lets go of the kept path, and by senders (only to copy the path's reference)
//! holding no lock; nothing is taken under it. The kept path changes only under the Stream
//! lock with the word disarmed and drained (`stored` with it). The word's ARMED bit is set
//! only under the Stream lock, and cleared only under it.
//!
//! A drainer holds the Stream lock while it waits, so a send must never wait for this
//! Stream's lock, sleep, or be preempted: the claim is held only with bottom halves off
//! (`sys::with_bh_off`: in the kernel the sender is neither preempted nor interrupted by a
//! softirq, so the drainer's spin is short, and what the send hands to the network's receive
//! path runs after the claim is released), and a put into this Stream's gate from the send
//! (its answer, a loopback datagram) only claims the perimeter, which a busy gate leaves to
//! the drainer (`perim` step 4).

#[cfg(not(loom))]
use core::sync::atomic::{AtomicBool, AtomicUsize};
use core::sync::atomic::{Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicUsize};

use crate::msg::Msg;
use crate::stream::stats::{Stat, Totals};
use crate::sys::{self, Arc, NoMem};

/// What [`ExpressTx::send`] did with a message.
pub enum Sent {
    /// Sent; nothing to answer.
    Done,
    /// Sent and failed: this answer (T_UDERROR_IND) goes up to the head, as the locked put
    /// procedure's `qreply` would send it.
    Answer(Msg),
    /// Refused, nothing sent: the message, unchanged, for the locked putmsg.
    Declined(Msg),
}

/// A driver's transmit path, published for the express send (see the module docs).
///
/// Called holding no Stream lock, concurrently with other sends (never with a hold of the
/// Stream lock): it reads only what it was published with. Dropped under the Stream lock
/// (withdrawn, replaced, or taken out at a disarm): its drop must not sleep (its references
/// to sleeping resources are never the last ones).
pub trait ExpressTx: Send + Sync {
    /// Send `m` (a putmsg's M_PROTO block, its data part linked behind) as the driver's write
    /// put procedure would, or decline it if that procedure would do anything else. Never
    /// sleeps.
    fn send(&self, m: Msg) -> Sent;
}

/// Set while armed; the rest of the word counts claims ([`CLAIM`] each).
const ARMED: usize = 1;
/// One claim in the word.
const CLAIM: usize = 2;

/// The path kept for arming: the transmit path and the module-wide totals of the driver's
/// write queue.
struct Path {
    tx: Arc<dyn ExpressTx>,
    totals: Option<Totals>,
}

/// A Stream's express send state (see the module docs). One per perimeter.
pub struct ExpressSend {
    /// [`ARMED`] and the claims in flight.
    word: AtomicUsize,
    /// Sends made since the last disarm, not yet counted on the driver's write queue.
    owed: AtomicUsize,
    /// Whether `cell` holds a path (changed only under the Stream lock, disarmed).
    stored: AtomicBool,
    /// The last disarm found express sends made (written and read under the Stream lock).
    used: AtomicBool,
    /// The path the perimeter arms with, kept while disarmed until the driver's published
    /// path changes (`Stream::take_express_tx_changed`), so that arming again is one store.
    cell: sys::BhLock<Option<Path>>,
}

/// What a claimed sender sends through, taken by [`ExpressSend::claim`]. Its drop lets go of
/// the path's reference, then releases the claim: while the claim is held the kept path
/// holds a reference too (it is let go of only after a drain), so the sender's is never the
/// last one (whose drop might sleep: a driver's port).
pub(crate) struct Claim<'a> {
    of: &'a ExpressSend,
    tx: Option<Arc<dyn ExpressTx>>,
    totals: Option<Totals>,
}

impl Claim<'_> {
    /// Send `m` through the path ([`ExpressTx::send`]).
    pub(crate) fn send(&self, m: Msg) -> Sent {
        match &self.tx {
            Some(tx) => tx.send(m),
            None => Sent::Declined(m),
        }
    }

    /// Count one express send (its put on the driver's write queue is counted at the next
    /// disarm; the module-wide totals now).
    pub(crate) fn count(&self) {
        self.of.owed.fetch_add(1, Relaxed);
        if let Some(t) = self.totals {
            t.bump(1, Stat::Put, 1);
        }
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        drop(self.tx.take()); // first: see the type's docs
                              // Release: the send's effects (its answer in the gate, the counts) are seen by the
                              // drainer that reads the word at zero.
        self.of.word.fetch_sub(CLAIM, AcqRel);
    }
}

impl ExpressSend {
    /// Disarmed, no path. `NoMem` when memory runs out.
    pub(crate) fn new() -> Result<ExpressSend, NoMem> {
        Ok(ExpressSend {
            word: AtomicUsize::new(0),
            owed: AtomicUsize::new(0),
            stored: AtomicBool::new(false),
            used: AtomicBool::new(false),
            cell: crate::bh_lock!(None, "rstreams_express_send")?,
        })
    }

    /// Whether the express send is armed (exact under the Stream lock; a hint without it).
    pub fn is_armed(&self) -> bool {
        self.word.load(Relaxed) & ARMED != 0
    }

    /// Under the Stream lock, disarmed (every hold begins so): arm with the path `tx` the
    /// driver published (whose write queue's totals are `totals`), kept from the last arming
    /// if the published path has not changed since ([`ExpressSend::forget`] otherwise).
    pub(crate) fn arm(&self, tx: &Arc<dyn ExpressTx>, totals: Option<Totals>) {
        if !self.stored.load(Relaxed) {
            *self.cell.lock() = Some(Path {
                tx: tx.clone(),
                totals,
            });
            self.stored.store(true, Relaxed);
        }
        // A claim is counted before it looks at ARMED: the claims of senders that found the
        // word disarmed may still be counted here; they take nothing and go.
        self.word.fetch_or(ARMED, AcqRel);
    }

    /// Under the Stream lock, first thing in a hold: disarm and wait until no send is in
    /// flight. Returns the sends made since the last disarm, to be counted on the driver's
    /// write queue.
    pub(crate) fn disarm(&self) -> usize {
        self.word.fetch_and(!ARMED, AcqRel);
        self.drain();
        let n = match self.owed.load(Relaxed) {
            0 => 0,
            _ => self.owed.swap(0, Relaxed),
        };
        self.used.store(n != 0, Relaxed);
        n
    }

    /// Under the Stream lock: whether the last arming was used (the disarm that ended it
    /// found express sends made).
    pub(crate) fn was_used(&self) -> bool {
        self.used.load(Relaxed)
    }

    /// Under the Stream lock, disarmed: let go of the kept path (the driver's published one
    /// changed). Returns it, to be dropped by the caller.
    pub(crate) fn forget(&self) -> Option<Arc<dyn ExpressTx>> {
        if !self.stored.load(Relaxed) {
            return None;
        }
        self.stored.store(false, Relaxed);
        self.cell.lock().take().map(|p| p.tx)
    }

    /// Wait until no claim is in flight (the word, disarmed, reads 0). Acquire: what the
    /// sends did is seen after this.
    fn drain(&self) {
        while self.word.load(Acquire) != 0 {
            sys::relax();
        }
    }

    /// Without the Stream lock: claim a send, if armed. `None`: not armed (the caller makes
    /// the locked putmsg). The claim is released when the returned value is dropped.
    pub(crate) fn claim(&self) -> Option<Claim<'_>> {
        if self.word.fetch_add(CLAIM, AcqRel) & ARMED == 0 {
            self.word.fetch_sub(CLAIM, AcqRel);
            return None;
        }
        // Armed and claimed: the path was stored before ARMED was set, and is let go of only
        // in a hold, which begins by waiting for this claim.
        let path = self.cell.lock().as_ref().map(|p| (p.tx.clone(), p.totals));
        match path {
            Some((tx, totals)) => Some(Claim {
                of: self,
                tx: Some(tx),
                totals,
            }),
            None => {
                self.word.fetch_sub(CLAIM, AcqRel);
                None
            }
        }
    }
}
