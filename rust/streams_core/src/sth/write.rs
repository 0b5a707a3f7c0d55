//! write(2) at the Stream head (`strwrite`): checks, packet-size limits, splitting into
//! `maxpsz` pieces, flow control, write offset, and LfS write hold (coalescing small writes).
//!
//! A write never sleeps. If the first piece cannot be sent because the next queue is full it
//! returns [`Stop::Block`] (or EAGAIN when non-blocking); if some pieces were sent it returns
//! their byte count, and a blocking platform calls again for the rest (SVR4 sleeps between
//! pieces instead; the bytes seen downstream are the same).

use super::consts::*;
use super::{Block, Stop, UserIo};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags, FASTBUF, M_DATA};
use crate::queue::INFPSZ;
use crate::sth::Stream;

/// `Block(b)`, or EAGAIN for a non-blocking caller.
pub(crate) fn wait(nonblock: bool, b: Block) -> Stop {
    if nonblock {
        Stop::Err(Errno::EAGAIN)
    } else {
        Stop::Block(b)
    }
}

/// Capacity of the write-hold (SNDHOLD) buffer: small writes (up to a fast buffer each) are
/// coalesced into one message of up to this many bytes, which goes down when it is full, at
/// the hold timer, or at the next read, putmsg, ioctl or close of this head.
pub const STRHOLDSZ: usize = 1024;

impl Stream {
    /// write(2): send `len` bytes from `io` downstream as M_DATA messages. Returns the bytes
    /// accepted (fewer than `len` only if flow control stopped a multi-piece write).
    ///
    /// Errors: EBADF after close; the M_ERROR write error; EPIPE (and SIGPIPE) after hangup
    /// with SNDPIPE, ENXIO otherwise; ERANGE when the top module has a non-zero `minpsz` and
    /// `len` is outside `[minpsz, maxpsz]`; EFAULT; ENOSR; EAGAIN/Block when flow controlled.
    /// A zero-length write sends a zero-length message only with SNDZERO.
    pub fn strwrite(
        &mut self,
        io: &mut dyn UserIo,
        len: usize,
        nonblock: bool,
    ) -> Result<usize, Stop> {
        self.sth_write_ok()?;
        let (minpsz, maxpsz) = self.sth_psz();
        if minpsz > 0 && (len < minpsz || (maxpsz != INFPSZ && len > maxpsz)) {
            return Err(Errno::ERANGE.into());
        }
        if len == 0 {
            if self.sth.wropt & SNDZERO == 0 {
                return Ok(0);
            }
            if !self.sth_canput(0) {
                return Err(wait(nonblock, Block::Writable(0)));
            }
            self.sth_flush_hold();
            let m = self.sth_mkdata(io, 0, 0)?;
            self.write(m);
            return Ok(0);
        }
        let piece = if maxpsz == INFPSZ || maxpsz == 0 {
            len
        } else {
            maxpsz
        };
        let mut off = 0;
        while off < len {
            if !self.sth_canput(0) {
                if off > 0 {
                    return Ok(off);
                }
                return Err(wait(nonblock, Block::Writable(0)));
            }
            let n = piece.min(len - off);
            let sent = match self.sth_hold_write(io, off, n) {
                Ok(true) => Ok(()),
                Ok(false) => {
                    self.sth_flush_hold();
                    self.sth_mkdata(io, off, n).map(|m| self.write(m))
                }
                Err(e) => Err(e),
            };
            if let Err(e) = sent {
                return if off > 0 { Ok(off) } else { Err(e) };
            }
            off += n;
        }
        Ok(len)
    }

    /// An M_DATA message with `wroff` bytes of headroom holding user bytes `off..off + n`.
    pub(crate) fn sth_mkdata(
        &mut self,
        io: &mut dyn UserIo,
        off: usize,
        n: usize,
    ) -> Result<Msg, Stop> {
        let wroff = self.sth.wroff;
        let mut m = Msg::with_type(M_DATA, wroff.saturating_add(n))?;
        m.adj_wptr(wroff);
        m.adj_rptr(wroff);
        let dst = m
            .spare_mut()
            .and_then(|s| s.get_mut(..n))
            .ok_or(Errno::ENOSR)?;
        io.copy_from_user(dst, off)?;
        m.adj_wptr(n);
        if self.sth.delim {
            m.set_flag(m.flag() | MsgFlags::MSGDELIM);
        }
        Ok(m)
    }

    /// Write hold: coalesce a small piece into the held fast buffer. `Ok(false)` if hold is
    /// off or the piece is too big to hold; the held message is sent when it fills up.
    fn sth_hold_write(&mut self, io: &mut dyn UserIo, off: usize, n: usize) -> Result<bool, Stop> {
        let wroff = self.sth.wroff;
        if self.sth.wropt & SNDHOLD == 0 || n > FASTBUF || n.saturating_add(wroff) > STRHOLDSZ {
            return Ok(false);
        }
        if self.sth.hold.as_ref().is_some_and(|h| h.wr_room() < n) {
            self.sth_flush_hold();
        }
        let mut h = match self.sth.hold.take() {
            Some(h) => h,
            None => {
                let mut m = Msg::with_type(M_DATA, STRHOLDSZ)?;
                m.adj_wptr(wroff);
                m.adj_rptr(wroff);
                self.sth.ev.hold_timer = true;
                m
            }
        };
        let copied = match h.spare_mut().and_then(|s| s.get_mut(..n)) {
            Some(dst) => io.copy_from_user(dst, off),
            None => Err(Errno::ENOSR),
        };
        if copied.is_ok() {
            h.adj_wptr(n);
        }
        let full = h.wr_room() == 0;
        if h.blen() > 0 {
            self.sth.hold = Some(h);
        }
        if full {
            self.sth_flush_hold();
        }
        copied.map(|_| true).map_err(Stop::Err)
    }
}
