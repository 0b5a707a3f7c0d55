//! What the engine needs from a Stream head: its read put procedure and its write-side
//! back-enable, as the procedures of the head pair.
//!
//! Every Stream has exactly one head, queue pair 0. Its state (`stdata` in SVR4) is the `H` of
//! [`Stream<H>`](super::Stream): a field of the Stream, never moved in or out. The engine does
//! not know what a head does; it calls the head's procedures through [`HeadProcs`] when a
//! message reaches the head's read queue (SVR4 `strrput`) or a back-enable reaches its write
//! queue (SVR4 wakes the writers sleeping in `strwrite`). The real Stream head implements it
//! in `crate::sth`; [`RawHead`] is the placeholder of engine tests and of Streams whose head
//! only collects what arrives.
//!
//! A head procedure gets the whole Stream (`&mut Stream<Self>`), so it can act on its own state
//! and send messages down in one call, as `strrput` does when it answers an M_IOCTL or turns an
//! M_FLUSH around.

use super::{QCtx, Stream};
use crate::msg::Msg;

/// The procedures of a Stream head (see the module docs).
pub trait HeadProcs: Sized + Send + 'static {
    /// The head's read put procedure: `mp` reached the head's read queue.
    fn rput(s: &mut Stream<Self>, mp: Msg);
    /// A back-enable reached the head's write queue: band `band` can be written again
    /// (QBACK/QB_BACK is already set on the head's write queue).
    fn backenable(s: &mut Stream<Self>, band: u8);
    /// The perimeter calls this at the start and at the end of every hold of the Stream lock
    /// (after what other Streams handed in is applied, before service procedures run), when
    /// no procedure is running: the head takes up changes other Streams made to state it
    /// shares with them (a multiplexor linking this Stream under it, or letting it go:
    /// `sth/plex.rs`). Default: nothing.
    fn sync(_s: &mut Stream<Self>) {}
    /// The head's read put procedure for a run of band-0 M_DATA messages, oldest first
    /// through `b_next`, that came up a path of pass-only put procedures together (the batch
    /// put-up, `stream/batch.rs`; the engine has counted their puts). The head must end as
    /// [`HeadProcs::rput`] of each in turn would leave it. Default: that.
    fn rput_run(s: &mut Stream<Self>, mut run: Msg) {
        loop {
            let next = run.0.next.take();
            Self::rput(s, run);
            match next {
                Some(m) => run = m,
                None => return,
            }
        }
    }
    /// Whether ordinary data put into this Stream from outside may wait on its inbound list
    /// until the Stream next enters its perimeter by itself (`perim` step 5): true only when
    /// the head holds data its reader will come back for and nobody sleeps on the head for
    /// more data. Default: never.
    fn lazy_ok(_s: &Stream<Self>) -> bool {
        false
    }
    /// Whether a read may take ordinary data straight from the inbound list instead of having
    /// it put up to the head first (the direct take, `stream/direct.rs`): asked under the
    /// Stream lock by `Perim::enter_read` when the gate is lazy; the head then reads those
    /// messages after its read queue and notes their arrival itself. True only when nothing
    /// but the read itself would act on their arrival. Default: never.
    fn direct_ok(_s: &Stream<Self>) -> bool {
        false
    }
    /// Whether the head's next writes of band-0 M_DATA may go across without the Stream lock
    /// (the express write, `perim/express.rs`): asked under the lock at the end of a hold
    /// whose write went across (`stream/across.rs`). True only when such a write would do
    /// nothing at the head but send its message: open, no error or hangup, no write offset,
    /// packet-size limits, write hold or delimiters. Default: never.
    fn express_ok(_s: &Stream<Self>) -> bool {
        false
    }
}

/// A head that queues whatever arrives on its read queue and does nothing on back-enable:
/// [`Stream::read`] takes the messages (engine tests, and the placeholder head of SVR4's
/// `open` before a Stream head is set up).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RawHead;

impl HeadProcs for RawHead {
    fn rput(s: &mut Stream<Self>, mp: Msg) {
        let h = s.head_rq();
        if let Err(mp) = QCtx::new(s, h).putq(mp) {
            drop(mp);
            s.count_drop();
        }
    }

    fn backenable(_: &mut Stream<Self>, _: u8) {}
}
