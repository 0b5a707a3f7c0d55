//! read(2) at the Stream head (`strread`): byte-stream (RNORM), message-discard (RMSGD) and
//! message-non-discard (RMSGN) modes, the RPROT* treatment of M_PROTO/M_PCPROTO, zero-length
//! messages, M_READ, LfS read-fill (RFILL), hangup and read errors.
//!
//! Bytes are copied to the user from the message while it is still queued; only when the copy
//! succeeded is the message taken (getq, so the Stream back-enables) and its remainder put
//! back (putbq), so an EFAULT loses nothing. A read that finds nothing returns
//! [`Block::Readable`] (EAGAIN when non-blocking) without having consumed anything.

use super::consts::*;
use super::write::wait;
use super::{Block, Stop, UserIo};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags, M_DATA, M_PASSFP, M_READ};
use crate::sth::Stream;

/// Whether block `b` of a message is delivered by read() under protocol option `prot`.
fn delivered(b: &Msg, is_proto: bool, prot: u32) -> bool {
    !(is_proto && prot == RPROTDIS && b.db_type() != M_DATA)
}

/// Bytes read() would deliver from `m`.
fn deliverable(m: &Msg, prot: u32) -> usize {
    let is_proto = m.db_type() != M_DATA;
    m.blocks()
        .filter(|b| delivered(b, is_proto, prot))
        .fold(0, |n, b| n.saturating_add(b.blen()))
}

/// Copy the first `want` deliverable bytes of `m` to user offset `at`.
fn copy_out(m: &Msg, prot: u32, want: usize, io: &mut dyn UserIo, at: usize) -> Result<(), Errno> {
    let is_proto = m.db_type() != M_DATA;
    let mut done = 0;
    for b in m.blocks().filter(|b| delivered(b, is_proto, prot)) {
        if done >= want {
            break;
        }
        let n = b.blen().min(want - done);
        io.copy_to_user(at.saturating_add(done), b.rd().get(..n).unwrap_or_default())?;
        done += n;
    }
    Ok(())
}

/// What is left of `m` after read() took `n` deliverable bytes: an M_DATA message (control
/// blocks discarded under RPROTDIS, retyped under RPROTDAT) of the same band.
fn remainder(m: Msg, prot: u32, mut n: usize) -> Option<Msg> {
    let band = m.band();
    let is_proto = m.db_type() != M_DATA;
    // Rebuild the chain without the blocks read() does not deliver, front to back.
    let mut rest = Some(m);
    let mut head: Option<Msg> = None;
    let mut tail = &mut head;
    while let Some(mut b) = rest {
        rest = b.unlinkb();
        if !delivered(&b, is_proto, prot) {
            continue;
        }
        if n > 0 {
            n -= b.adj_rptr(n);
            if b.blen() == 0 {
                continue;
            }
        }
        b.set_type(M_DATA);
        tail = &mut tail.insert(b).0.cont;
    }
    let mut m = head?;
    m.set_band(band);
    Some(m)
}

impl Stream {
    /// read(2): up to `len` bytes into `io`. Returns the bytes read; 0 for a zero-length
    /// message or at end of file (hangup with nothing queued).
    ///
    /// Errors: EBADF after close; the M_ERROR read error; EBADMSG for M_PROTO/M_PCPROTO under
    /// RPROTNORM; EFAULT (nothing consumed); EAGAIN/Block when nothing can be read.
    pub fn strread(
        &mut self,
        io: &mut dyn UserIo,
        len: usize,
        nonblock: bool,
    ) -> Result<usize, Stop> {
        if self.sth.closed {
            return Err(Errno::EBADF.into());
        }
        self.sth_flush_hold();
        if let Some(e) = self.sth.rerr() {
            return Err(e.into());
        }
        if len == 0 {
            return Ok(0);
        }
        let mode = self.sth.rdopt & RMODEMASK;
        let prot = match self.sth.rdopt & RPROTMASK {
            0 => RPROTNORM,
            p => p,
        };
        if mode == RNORM && self.sth.rdopt & RFILL != 0 && !self.sth.hangup && len > 0 {
            let (avail, complete) = self.sth_fill_avail(len);
            if !complete && (!nonblock || avail == 0) {
                return Err(self.sth_read_wait(len, nonblock));
            }
        }
        let h = self.head_rq();
        let mut copied = 0usize;
        loop {
            let Some(first) = self.queue(h).and_then(|q| q.first()) else {
                if copied > 0 || self.sth.hangup {
                    return Ok(copied);
                }
                return Err(self.sth_read_wait(len, nonblock));
            };
            if first.db_type() == M_PASSFP {
                // A passed file is taken with I_RECVFD only.
                return if copied > 0 {
                    Ok(copied)
                } else {
                    Err(Errno::EBADMSG.into())
                };
            }
            let is_proto = first.db_type() != M_DATA;
            if is_proto && (prot == RPROTNORM || copied > 0) {
                return if copied > 0 {
                    Ok(copied)
                } else {
                    Err(Errno::EBADMSG.into())
                };
            }
            let total = deliverable(first, prot);
            let marked = first.flag().contains(MsgFlags::MSGMARK)
                || first.flag().contains(MsgFlags::MSGDELIM);
            if total == 0 {
                if is_proto && first.msgsize() > 0 {
                    // RPROTDIS and only a control part: discarded, not a zero-length message.
                    drop(self.qctx(h).getq());
                    continue;
                }
                if copied > 0 {
                    return Ok(copied); // the zero-length message ends this read, stays
                }
                drop(self.qctx(h).getq());
                return Ok(0);
            }
            let want = total.min(len - copied);
            if let Err(e) = copy_out(first, prot, want, io, copied) {
                return if copied > 0 {
                    Ok(copied)
                } else {
                    Err(e.into())
                };
            }
            let Some(mp) = self.qctx(h).getq() else {
                return Ok(copied);
            };
            copied += want;
            if want < total {
                if mode != RMSGD {
                    if let Some(rest) = remainder(mp, prot, want) {
                        if let Err(m) = self.qctx(h).putbq(rest) {
                            drop(m);
                            self.count_drop();
                        }
                    }
                }
                return Ok(copied);
            }
            drop(mp);
            // A protocol message read as data (RPROTDAT/RPROTDIS) is a record of its own: the
            // read does not run on into the next message, nor into one from the front.
            if mode != RNORM || marked || is_proto || copied >= len {
                return Ok(copied);
            }
        }
    }

    /// RFILL: bytes available in the leading M_DATA messages, and whether a read of `len`
    /// could complete now (enough bytes, or a message boundary that ends the read).
    fn sth_fill_avail(&self, len: usize) -> (usize, bool) {
        let Some(q) = self.queue(self.head_rq()) else {
            return (0, false);
        };
        let mut avail = 0usize;
        for pos in 0.. {
            let Some(m) = q.peek(pos) else {
                return (avail, false);
            };
            if m.db_type() != M_DATA || m.msgsize() == 0 {
                return (avail, true);
            }
            avail = avail.saturating_add(m.msgsize());
            if avail >= len {
                return (avail, true);
            }
        }
        (avail, false)
    }

    /// Nothing to read: send M_READ downstream first if asked to (SO_MREADON), then block.
    fn sth_read_wait(&mut self, len: usize, nonblock: bool) -> Stop {
        if !nonblock && self.sth.mread {
            if let Ok(m) = Msg::from_bytes(M_READ, &len.to_ne_bytes()) {
                self.write(m);
            }
        }
        wait(nonblock, Block::Readable)
    }
}
