//! The write fast path: a write(2) whose message the platform builds before it takes the
//! Stream lock.
//!
//! For the common write (one piece, no write offset, no packet-size limits, not small enough
//! for write hold to coalesce) the platform allocates the M_DATA message (a sleeping
//! allocation, `Msg::with_type_wait`) and copies the user's bytes into it *before* taking the
//! lock; under the lock [`Stream::strwrite_prebuilt`] only checks and sends it: no allocation,
//! no copy. [`Stream::sth_prebuilt_ok`] says when that is the same as [`Stream::strwrite`];
//! when it is not, the platform calls `strwrite` with the message's bytes as the staged data.
//! [`Stream::sth_prebuilt_min`] is the hint the platform keeps between calls.
//!
//! (The read side has no separate fast path any more: every read(2) takes its messages under
//! the lock and copies them out after it, `take.rs`; byte-stream reads of whole messages are
//! its cheapest case.)

use super::consts::*;
use super::write::wait;
use super::{Block, Stop};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags};
use crate::queue::INFPSZ;
use crate::sth::{Stream, STRHOLDPSZ};

impl Stream {
    /// The smallest write that may be built before the lock: 1; more than a fast buffer with
    /// write hold on (smaller writes are staged on the stack and coalesced at the head; up to
    /// [`STRHOLDPSZ`] the built message's bytes are coalesced too, larger ones go as they
    /// are); never (`usize::MAX`) with a write offset or a `minpsz`.
    pub fn sth_prebuilt_min(&self) -> usize {
        self.prebuilt_min_with(self.sth_psz().0)
    }

    /// [`Stream::sth_prebuilt_min`] with the top module's `minpsz` already looked up.
    fn prebuilt_min_with(&self, minpsz: usize) -> usize {
        if self.sth.wroff != 0 || minpsz != 0 {
            usize::MAX
        } else if self.sth.wropt & SNDHOLD != 0 || self.sth.hold.is_held() {
            super::call::STAGE_STACK + 1
        } else {
            1
        }
    }

    /// Whether a write of `len` bytes may be sent as one message built before the lock was
    /// taken ([`Stream::strwrite_prebuilt`]): at least [`Stream::sth_prebuilt_min`], at most
    /// `strmsgsz` (`crate::limits`), within the top module's `maxpsz` (one piece), and not one
    /// write hold coalesces (up to [`STRHOLDPSZ`]: its bytes join the held message instead).
    pub fn sth_prebuilt_ok(&self, len: usize) -> bool {
        let (minpsz, maxpsz) = self.sth_psz();
        len >= self.prebuilt_min_with(minpsz)
            && (self.sth.wropt & SNDHOLD == 0 || len > STRHOLDPSZ)
            && len <= crate::limits::strmsgsz()
            && (maxpsz == INFPSZ || maxpsz == 0 || len <= maxpsz)
    }

    /// Whether a write's message now goes out of the Stream in one step, its path from the
    /// head's write queue pass-only (`stream/across.rs`; for tests and diagnostics).
    pub fn sth_writes_across(&self) -> bool {
        self.passes_across(self.head_wq()).is_some()
    }

    /// write(2) of the M_DATA message in `slot` (built by the platform from the user's
    /// buffer; [`Stream::sth_prebuilt_ok`] held). The message is taken out of `slot` only
    /// when it is sent; on EAGAIN/Block it stays there for the retry. Errors as `strwrite`.
    pub fn strwrite_prebuilt(
        &mut self,
        slot: &mut Option<Msg>,
        nonblock: bool,
    ) -> Result<usize, Stop> {
        self.sth_write_ok()?;
        // A pass-only way out of the Stream (`stream/across.rs`): its link's flow control is
        // what `canputnext` would ask, and the message is put there in one step.
        let h = self.head_wq();
        let across = self.passes_across(h);
        let can = match across {
            Some(x) => self.remote(x).is_some_and(|r| r.bcanput(0)),
            None => self.sth_canput(0),
        };
        if !can {
            return Err(wait(nonblock, Block::Writable(0)));
        }
        let mut m = slot.take().ok_or(Errno::EINVAL)?;
        let n = m.msgsize();
        // What write hold coalesced goes first, as `strwrite` sends it before a large piece
        // (by the per-queue puts: on a pass-only path they leave it pass-only).
        self.sth_flush_hold();
        if self.sth.delim {
            m.set_flag(m.flag() | MsgFlags::MSGDELIM);
        }
        match across {
            Some(x) => self.put_across(h, x, m),
            None => self.write(m),
        }
        Ok(n)
    }
}
