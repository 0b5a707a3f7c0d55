//! STREAMS FIFOs (named pipes): one Stream head whose write queue feeds its own read queue.
//!
//! ```text
//!   head ─wq─▶ [modules pushed: write side] ─┐
//!   head ◀─rq─ [modules pushed: read side]  ◀┘   (each module turns its own write side around)
//! ```
//!
//! As in SVR4 and LfS, every open of a FIFO attaches to the same Stream, so a write by one
//! opener is a `putnext` that lands at the same head and is read by whoever reads; flow
//! control is the ordinary one (the writer is refused by `bcanputnext` when the head's read
//! queue is full, and the reader draining it back-enables the head's write queue, waking the
//! writer).
//!
//! POSIX open/close semantics are the platform's (it counts readers and writers from the open
//! modes and waits at open for the other side). The head only needs to know whether both
//! sides are there: [`Stream::fifo_openers`] hangs the head up when there is no reader or no
//! writer (readers then get end of file once the data is read, writers EPIPE and SIGPIPE:
//! FIFO heads have SNDPIPE) and lifts the hangup, as M_UNHANGUP does, when both are back. The
//! data stays queued across those changes; it goes with the Stream at the last close.

use super::consts::SNDPIPE;
use super::{WAKE_POLL, WAKE_READ, WAKE_WRITE};
use crate::errno::Errno;
use crate::sth::Stream;

/// Most `q_next` steps [`Stream::is_fifo`] follows.
const MAXWALK: usize = 1024;

impl Stream {
    /// A STREAMS FIFO: one Stream head whose write side turns around into its own read side.
    /// It starts hung up (nobody has it open); see [`Stream::fifo_openers`]. ENOSR when memory
    /// runs out.
    pub fn fifo() -> Result<Stream, Errno> {
        let mut s = Stream::head_only(super::StrHead::new())?;
        let (hw, hr) = (s.head_wq(), s.head_rq());
        s.set_next(hw, Some(hr));
        s.sth.ispipe = true;
        s.sth.wropt |= SNDPIPE;
        s.sth.hangup = true; // no write has been held yet: nothing to seal
        Ok(s)
    }

    /// Whether this Stream is a FIFO: its write side, through whatever modules are pushed,
    /// comes back to its own head.
    pub fn is_fifo(&self) -> bool {
        let hr = self.head_rq();
        let mut q = self.head_wq();
        // A bound instead of trusting the links to end (a Stream has far fewer queues).
        for _ in 0..MAXWALK {
            match self.next(q) {
                Some(n) if n == hr => return true,
                Some(n) => q = n,
                None => return false,
            }
        }
        false
    }

    /// The FIFO now has `readers` openers that may read and `writers` that may write (an
    /// O_RDWR open counts as both). Without a reader or without a writer the head is hung up
    /// (end of file after the queued data; EPIPE and SIGPIPE for writes); with both it is not
    /// (a new writer makes an exhausted FIFO readable again). Everybody waiting wakes when
    /// the state changes. Nothing queued is discarded.
    pub fn fifo_openers(&mut self, readers: usize, writers: usize) {
        let hangup = readers == 0 || writers == 0;
        if hangup == self.sth.hangup {
            return;
        }
        if hangup {
            self.sth_set_hangup();
        } else {
            self.sth.hangup = false;
            self.sth.note(WAKE_READ | WAKE_WRITE | WAKE_POLL, 0);
        }
    }
}
