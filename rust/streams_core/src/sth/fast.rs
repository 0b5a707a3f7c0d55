//! Two-phase read(2) and write(2): the user copy happens outside the stream lock.
//!
//! `strwrite`/`strread` copy user memory while the platform holds the stream lock, so a reader
//! and a writer on the two ends of a pipe wait for each other's copies (and allocations, and
//! frees). For the common cases the platform can do better, and these functions let it:
//!
//! - write: the platform allocates the M_DATA message and copies the user's bytes into it
//!   *before* taking the lock; under the lock [`Stream::strwrite_prebuilt`] only checks and
//!   sends it. [`Stream::sth_prebuilt_ok`] says when that is the same as `strwrite` (one piece,
//!   no write offset, no write hold); otherwise the platform calls `strwrite`.
//! - read: under the lock [`Stream::strread_take`] takes whole M_DATA messages that fit in
//!   the read (RNORM byte-stream semantics: they run together); the platform copies them out
//!   and frees them after dropping the lock. If a copy faults, [`Stream::strread_untake`] puts
//!   what was not delivered back at the front, so an EFAULT still loses nothing.
//!   [`Stream::sth_take_ok`] says when this is the same as `strread`.

use super::consts::*;
use super::write::wait;
use super::{Block, Stop};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags, M_DATA};
use crate::queue::INFPSZ;
use crate::sth::Stream;

/// Most messages one read takes in one go.
pub const NTAKE: usize = 16;

/// Messages a read took off the head, in order, to be copied out without the lock.
pub struct Taken {
    msgs: [Option<Msg>; NTAKE],
    n: usize,
}

impl Default for Taken {
    fn default() -> Self {
        Taken::new()
    }
}

impl Taken {
    /// Nothing taken.
    pub const fn new() -> Taken {
        Taken {
            msgs: [const { None }; NTAKE],
            n: 0,
        }
    }
    /// Number of messages taken.
    pub fn len(&self) -> usize {
        self.n
    }
    /// Whether nothing was taken.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
    /// The `i`th message taken (None once given back). Dropping `Taken` frees the rest.
    pub fn get(&self, i: usize) -> Option<&Msg> {
        self.msgs.get(i)?.as_ref()
    }
}

impl Stream {
    /// Whether a write of `len` bytes may be sent as one message built before the lock was
    /// taken ([`Stream::strwrite_prebuilt`]): no write offset, no write hold, no packet-size
    /// limits that would split or refuse it.
    pub fn sth_prebuilt_ok(&self, len: usize) -> bool {
        let (minpsz, maxpsz) = self.sth_psz();
        len > 0
            && self.sth.wroff == 0
            && self.sth.wropt & SNDHOLD == 0
            && self.sth.hold.is_none()
            && minpsz == 0
            && (maxpsz == INFPSZ || maxpsz == 0 || len <= maxpsz)
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
        if !self.sth_canput(0) {
            return Err(wait(nonblock, Block::Writable(0)));
        }
        let mut m = slot.take().ok_or(Errno::EINVAL)?;
        let n = m.msgsize();
        if self.sth.delim {
            m.set_flag(m.flag() | MsgFlags::MSGDELIM);
        }
        self.write(m);
        Ok(n)
    }

    /// Whether a read of `len` bytes may take whole messages ([`Stream::strread_take`]):
    /// byte-stream mode without read-fill or M_READ, nothing held for writing, and the first
    /// message (if any) is non-empty M_DATA that fits.
    pub fn sth_take_ok(&self, len: usize) -> bool {
        if self.sth.rdopt & (RMODEMASK | RFILL) != RNORM || self.sth.mread || len == 0 {
            return false;
        }
        if self.sth.hold.is_some() || self.sth.closed || self.sth.rerr().is_some() {
            return false;
        }
        match self.queue(self.head_rq()).and_then(|q| q.first()) {
            None => true,
            Some(m) => m.db_type() == M_DATA && m.msgsize() > 0 && m.msgsize() <= len,
        }
    }

    /// read(2), first phase ([`Stream::sth_take_ok`] held): take M_DATA messages from the
    /// front while they fit in `len` bytes (stopping after a marked or delimited one, and
    /// before anything else), into `out`. Returns the bytes taken; 0 at end of file (hangup
    /// with nothing queued). EAGAIN/Block when nothing is queued.
    pub fn strread_take(
        &mut self,
        len: usize,
        nonblock: bool,
        out: &mut Taken,
    ) -> Result<usize, Stop> {
        let h = self.head_rq();
        let mut got = 0usize;
        while out.n < NTAKE {
            let Some(first) = self.queue(h).and_then(|q| q.first()) else {
                break;
            };
            let size = first.msgsize();
            if first.db_type() != M_DATA || size == 0 || size > len - got {
                break;
            }
            let marked = first.flag().contains(MsgFlags::MSGMARK)
                || first.flag().contains(MsgFlags::MSGDELIM);
            let Some(m) = self.qctx(h).getq() else {
                break;
            };
            if let Some(slot) = out.msgs.get_mut(out.n) {
                *slot = Some(m);
                out.n += 1;
            }
            got += size;
            if marked || got >= len {
                break;
            }
        }
        if out.n > 0 {
            return Ok(got);
        }
        if self.sth.hangup {
            return Ok(0);
        }
        Err(wait(nonblock, Block::Readable))
    }

    /// read(2) failed to copy taken message `from` (and did not deliver the rest): put
    /// messages `from..` back at the front of the head, in their order.
    pub fn strread_untake(&mut self, out: &mut Taken, from: usize) {
        let h = self.head_rq();
        let n = out.n;
        for i in (from..n).rev() {
            if let Some(m) = out.msgs.get_mut(i).and_then(Option::take) {
                if let Err(m) = self.qctx(h).putbq(m) {
                    drop(m);
                    self.count_drop();
                }
            }
        }
    }
}
