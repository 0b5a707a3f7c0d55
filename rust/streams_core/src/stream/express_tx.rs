//! The transmit path a driver publishes for the express send (`perim/express_send.rs`), and
//! when the perimeter may arm with it.
//!
//! The driver publishes and withdraws its path under the lock
//! ([`QCtx::set_express_tx`](super::QCtx::set_express_tx)); a hold whose putmsg sent an
//! M_PROTO down ([`Stream::note_sent_proto`]) asks at its leave whether the next one may go
//! without the lock ([`Stream::express_tx_target`]).

use super::stats::Totals;
use super::{HeadProcs, HoldMarks, QueueId, Stream};
use crate::perim::express_send::ExpressTx;
use crate::queue::QFlags;
use crate::sys::Arc;

impl<H: HeadProcs> Stream<H> {
    /// Publish `tx` as the transmit path of the driver whose write queue is `q`, or withdraw
    /// that driver's path (`None`). A path replaced or withdrawn is dropped here, under the
    /// lock (`ExpressTx`'s drop never sleeps).
    pub(crate) fn set_express_tx(&mut self, q: QueueId, tx: Option<Arc<dyn ExpressTx>>) {
        match tx {
            Some(tx) => self.express_tx = Some((q, tx)),
            None => {
                if !self.express_tx.as_ref().is_some_and(|(at, _)| *at == q) {
                    return;
                }
                self.express_tx = None;
            }
        }
        self.marks.set(HoldMarks::TX_CHANGED);
    }

    /// Whether the published path changed in this hold, clearing it (the perimeter then lets
    /// go of the copy it armed with: it may hold what the driver has let go of).
    #[inline]
    pub(crate) fn take_express_tx_changed(&mut self) -> bool {
        self.marks.take(HoldMarks::TX_CHANGED)
    }

    /// The write queue of the driver whose path is published (where express sends are
    /// counted).
    pub(crate) fn express_tx_queue(&self) -> Option<QueueId> {
        self.express_tx.as_ref().map(|(q, _)| *q)
    }

    /// A putmsg sent a band-0 M_PROTO down in this hold: the leave may arm the express send.
    pub(crate) fn note_sent_proto(&mut self) {
        self.marks.set(HoldMarks::SENT_PROTO);
    }

    /// Whether the hold before this one sent an M_PROTO down (`Perim::leave`'s arming rule).
    #[inline]
    pub(crate) fn proto_streak(&self) -> bool {
        self.marks.has(HoldMarks::STREAK)
    }

    /// Note whether this hold sent an M_PROTO down; returns whether the one before did.
    pub(crate) fn set_proto_streak(&mut self, sent: bool) -> bool {
        self.marks.replace(HoldMarks::STREAK, sent)
    }

    /// Whether a putmsg sent an M_PROTO down in this hold, clearing it.
    #[inline]
    pub(crate) fn take_sent_proto(&mut self) -> bool {
        self.marks.take(HoldMarks::SENT_PROTO)
    }

    /// What an express send goes through: the published path, when its driver's write queue
    /// is the head's write queue's `q_next` (nothing pushed), its pair is idle and opened,
    /// and its queue holds nothing (nothing waits for a send buffer or a service procedure,
    /// so the queue is not full); with that queue's module-wide totals.
    pub(crate) fn express_tx_target(&self) -> Option<(&Arc<dyn ExpressTx>, Option<Totals>)> {
        let (q, tx) = self.express_tx.as_ref()?;
        if self.closed || self.next(self.head_wq()) != Some(*q) {
            return None;
        }
        let pair = self.pair(q.pair())?;
        if pair.running || pair.inst.is_none() {
            return None;
        }
        let side = pair.sides.get(q.side())?;
        if side.deferred > 0 || side.q.mblkcnt() != 0 || side.q.flags().contains(QFlags::QFULL) {
            return None;
        }
        Some((tx, pair.totals))
    }
}
