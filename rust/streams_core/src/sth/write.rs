//! write(2) at the Stream head (`strwrite`): checks, packet-size limits, splitting into
//! pieces of `min(maxpsz, STRMSGSZ)` bytes, flow control, write offset, and LfS write hold
//! (coalescing small writes).
//!
//! The head never reaches user memory: the platform copies the caller's bytes into kernel
//! memory before it takes the Stream lock, at most [`STRMSGSZ`] bytes at a time, and calls
//! [`Stream::strwrite`] with where those bytes are in the whole write. A write never sleeps. If
//! the first piece cannot be sent because the next queue is full it returns [`Stop::Block`]
//! (or EAGAIN when non-blocking); if some pieces were sent it returns their byte count, and
//! the platform calls again for the rest (SVR4 sleeps between pieces instead; the bytes seen
//! downstream are the same).

use super::consts::*;
use super::{Block, Stop};
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

/// Pieces for a top module's `maxpsz`: at most [`STRMSGSZ`].
fn piece(maxpsz: usize) -> usize {
    let strmsgsz = crate::limits::strmsgsz();
    match maxpsz {
        0 | INFPSZ => strmsgsz,
        m => m.min(strmsgsz),
    }
}

/// Capacity of the write-hold (SNDHOLD) buffer: small writes (up to [`STRHOLDPSZ`] each) are
/// coalesced into one message of up to this many bytes, which goes down with the next write
/// that finds no room in it (a full message waits for that write), at its hold timer, at the
/// next read, putmsg, ioctl or close of this head, or at an M_READ from the reader at the
/// other end of a pipe. Writes that only join it do so without the Stream lock (`hold.rs`).
///
/// A page: what a reader with read fill and PIPE_BUF-sized reads (LfS perftest's `-F -w`)
/// takes at once, so each message sent is one read and, for a reader asleep on an empty
/// head, one wakeup; the buffer class of the message block cache (`msg/cache.rs`), so the
/// buffer is a cached block, not an allocation. A full message that a write finds without
/// room joins the held run ([`STRHOLDRUN`]) instead of going down at once.
pub const STRHOLDSZ: usize = crate::msg::cache::PAGEBUF;

/// Messages write hold keeps per Stream, the held run: a write that finds the held message
/// full moves it to the run (under the Stream lock, in order) and starts the next one; the
/// whole run goes down together when the write that finds the last message full would need
/// a fifth, at its hold timer (armed by the run's first write), and at every flush (read,
/// putmsg, ioctl, close, M_READ, the write after a new SO_DELIM; a hangup or M_SETOPTS only
/// seals the cell, and the run stays with the held message). Sent together, the
/// run reaches a reader's gate as one claim and one put-up (the first put claims it, the
/// others join its inbound list), so a read-fill reader gets one wakeup per run, not per
/// message. Held bytes are bounded by `STRHOLDRUN * STRHOLDSZ` (16 KiB) per Stream: held
/// writes, and the writes that move a full message to the run, ask no flow control; the
/// write that sends the run asks it (`sth_hold_fits`), so the next Stream queues at most its
/// high-water mark plus one run. (LfS holds one message; this holds up to four.)
pub const STRHOLDRUN: usize = 4;

/// Largest write piece write hold coalesces: a quarter of the buffer, so a held message
/// carries at least four writes (each larger write goes down on its own, as without hold).
pub const STRHOLDPSZ: usize = STRHOLDSZ / 4;

impl Stream {
    /// The size of the pieces write(2) splits into: the top module's `maxpsz`, at most
    /// [`STRMSGSZ`].
    pub fn sth_piece(&self) -> usize {
        piece(self.sth_psz().1)
    }

    /// write(2): send `data`, bytes `off..off + data.len()` of a write of `total` bytes
    /// (copied into kernel memory by the platform), downstream as M_DATA messages of at most
    /// [`Stream::sth_piece`] bytes. Returns the bytes of `data` accepted: fewer when flow
    /// control stopped after some pieces, or when `data` ends inside a piece the next bytes of
    /// the write belong to (that piece is sent with them, so pieces keep their size however
    /// the platform stages the write).
    ///
    /// Errors: EBADF after close; the M_ERROR write error; EPIPE (and SIGPIPE) after hangup
    /// with SNDPIPE, ENXIO otherwise; ERANGE when the top module has a non-zero `minpsz` and
    /// `total` is outside `[minpsz, maxpsz]` (checked when `off` is 0); ENOSR; EAGAIN/Block
    /// when flow controlled. A zero-length write sends a zero-length message only with SNDZERO.
    pub fn strwrite(
        &mut self,
        data: &[u8],
        off: usize,
        total: usize,
        nonblock: bool,
    ) -> Result<usize, Stop> {
        self.sth_write_ok()?;
        let (minpsz, maxpsz) = self.sth_psz();
        if off == 0 && minpsz > 0 && (total < minpsz || (maxpsz != INFPSZ && total > maxpsz)) {
            return Err(Errno::ERANGE.into());
        }
        if total == 0 {
            if self.sth.wropt & SNDZERO == 0 {
                return Ok(0);
            }
            if !self.sth_canput(0) {
                return Err(wait(nonblock, Block::Writable(0)));
            }
            self.sth_flush_hold();
            let m = self.sth_mkdata(&[])?;
            self.write(m);
            return Ok(0);
        }
        let piece = piece(maxpsz);
        let mut done = 0;
        while done < data.len() {
            let n = piece.min(data.len() - done);
            if n < piece && off + done + n < total {
                // The rest of this piece comes with the next bytes (or never: a fault ended the
                // bytes the platform could stage, and a piece is sent whole or not at all).
                return Ok(done);
            }
            // A piece that joins the held message sends nothing: no flow control to ask (LfS:
            // writes go on filling the held buffer while the Stream is flow controlled).
            if !self.sth_hold_fits(n) && !self.sth_canput(0) {
                if done > 0 {
                    return Ok(done);
                }
                return Err(wait(nonblock, Block::Writable(0)));
            }
            let bytes = data.get(done..done + n).unwrap_or_default();
            let sent = if self.sth_hold_write(bytes)? {
                Ok(())
            } else {
                self.sth_flush_hold();
                self.sth_mkdata(bytes).map(|m| self.write(m))
            };
            if let Err(e) = sent {
                return if done > 0 { Ok(done) } else { Err(e) };
            }
            done += n;
        }
        Ok(done)
    }

    /// An M_DATA message with `wroff` bytes of headroom holding `data`.
    pub(crate) fn sth_mkdata(&mut self, data: &[u8]) -> Result<Msg, Stop> {
        let wroff = self.sth.wroff;
        let mut m = Msg::with_type(M_DATA, wroff.saturating_add(data.len()))?;
        m.adj_wptr(wroff);
        m.adj_rptr(wroff);
        if m.append(data) != data.len() {
            return Err(Errno::ENOSR.into());
        }
        if self.sth.delim {
            m.set_flag(m.flag() | MsgFlags::MSGDELIM);
        }
        Ok(m)
    }

    /// [`Stream::sth_mkdata`] of the bytes of every block of `d` (a data part built before
    /// the lock, which needs the write offset's headroom).
    pub(crate) fn sth_mkdata_msg(&mut self, d: &Msg) -> Result<Msg, Stop> {
        let wroff = self.sth.wroff;
        let n = d.msgsize();
        let mut m = Msg::with_type(M_DATA, wroff.saturating_add(n))?;
        m.adj_wptr(wroff);
        m.adj_rptr(wroff);
        for b in d.blocks() {
            if m.append(b.rd()) != b.blen() {
                return Err(Errno::ENOSR.into());
            }
        }
        if self.sth.delim {
            m.set_flag(m.flag() | MsgFlags::MSGDELIM);
        }
        Ok(m)
    }

    /// Whether a piece of `n` bytes is held without sending anything (SNDHOLD on, a piece
    /// small enough to hold, and it fits in the held message's room, exactly filling it
    /// included, or in a new message, the full one moving to the held run if the run has
    /// room): such a piece asks no flow control (LfS: writes go on filling the held buffer
    /// while the Stream is flow controlled); the piece that finds no room with the run full,
    /// and so sends the run and the held message before it starts the next, does.
    pub(crate) fn sth_hold_fits(&self, n: usize) -> bool {
        if !self.sth_holds() || n > STRHOLDPSZ {
            return false;
        }
        let fits_new = self.sth.wroff.saturating_add(n) <= self.sth_hold_size();
        match self.sth.hold.state() {
            Some((_, room)) => room >= n || (fits_new && self.sth.hold.run_room()),
            None => fits_new,
        }
    }

    /// Whether write hold coalesces writes: SNDHOLD is on and SO_DELIM is off. A held
    /// message carries no MSGDELIM and would join several delimited writes into one record,
    /// so a head with SO_DELIM holds nothing (its M_SETOPTS seals the hold cell; the next
    /// write sends what was held before its own message).
    fn sth_holds(&self) -> bool {
        self.sth.wropt & SNDHOLD != 0 && !self.sth.delim
    }

    /// The size of a new held message, write offset included: [`STRHOLDSZ`], or one piece
    /// of the top module's `maxpsz` if that is smaller (the held message goes down whole); 0
    /// (nothing is held) when that is no more than a fast buffer, whose bytes are all usable
    /// whatever size is asked for (`msg` module docs).
    fn sth_hold_size(&self) -> usize {
        let size = STRHOLDSZ.min(self.sth.wroff.saturating_add(piece(self.sth_psz().1)));
        if size > FASTBUF {
            size
        } else {
            0
        }
    }

    /// Write hold: coalesce a small piece into the held message. `Ok(false)` if hold is off or
    /// the piece is too big to hold. A message the piece fills exactly stays held: the next
    /// write, which finds no room, sends it (after `sth_hold_fits` asked flow control), or a
    /// flush or the hold timer does. A piece that does not fit moves the held message to the
    /// held run ([`STRHOLDRUN`]), or, with the run full, sends the run and the held message
    /// first, and starts a new one. A new message that starts an empty run arms the hold
    /// timer with a new generation (the platform re-arms it relative to that message, and
    /// its expiry sends only the run of its generation, `sth_hold_expired`: a timer armed for
    /// the run sent must not send this one early); one that joins a run keeps the run's
    /// timer, which bounds the oldest held byte.
    /// Afterwards the hold cell is open (`hold.rs`) if later writes may join it without the
    /// lock: this write passed the head's checks and the top module's packet sizes allow it.
    fn sth_hold_write(&mut self, data: &[u8]) -> Result<bool, Stop> {
        let wroff = self.sth.wroff;
        let n = data.len();
        if !self.sth_holds() || n > STRHOLDPSZ {
            return Ok(false);
        }
        let size = self.sth_hold_size();
        if n.saturating_add(wroff) > size {
            return Ok(false);
        }
        // No room: the held message moves to the run, or the full run goes down.
        if self.sth.hold.state().is_some_and(|(_, room)| room < n) && !self.sth.hold.retire() {
            self.sth_flush_hold();
        }
        let mut h = match self.sth.hold.take() {
            Some(h) => h,
            None => {
                let mut m = Msg::with_type(M_DATA, size)?;
                m.adj_wptr(wroff);
                m.adj_rptr(wroff);
                // The timer runs from the run's first write: it bounds the oldest held byte.
                if self.sth.hold.run_empty() {
                    self.sth.ev.hold_timer = true;
                    self.sth.ev.hold_gen = self.sth.hold.start_run();
                }
                m
            }
        };
        h.append(data);
        let (minpsz, maxpsz) = self.sth_psz();
        let open = minpsz == 0 && piece(maxpsz) >= STRHOLDPSZ && self.sth.plex.is_none();
        self.sth.hold.put(h, open);
        Ok(true)
    }
}
