//! read(2) at the Stream head (`strread`): byte-stream (RNORM), message-discard (RMSGD) and
//! message-non-discard (RMSGN) modes, the RPROT* treatment of M_PROTO/M_PCPROTO, zero-length
//! messages, marks and delimiters, M_READ, LfS read-fill (RFILL), hangup and read errors.
//!
//! The read is the first phase of a two-phase read (`take.rs`): under the Stream lock it takes
//! off the head what the read delivers (getq, so the Stream back-enables; the common read's
//! whole band-0 M_DATA messages, the first straight-line, `Stream::sth_read_run`; then what the
//! read's enter took straight from the inbound list, `stream/direct.rs`; when the head's
//! queue alone satisfies the read, `Stream::sth_read_ready`, the enter leaves the inbound
//! list untaken, `perim` step 7's lazy take), splitting a message larger than what is left
//! of the read (its rest stays queued, except under RMSGD where it
//! goes with the message). The platform copies the taken bytes to the user after the lock and
//! puts back what a faulting copy did not deliver. A read that finds nothing returns
//! [`Block::Readable`] (EAGAIN when non-blocking) without having taken anything; so does a read
//! while another reader of the head is copying a take out (the reader token).

use super::consts::*;
use super::take::{split, Cut, ReaderToken, Taken};
use super::write::wait;
use super::{Block, Stop};
use crate::errno::Errno;
use crate::msg::{Msg, MsgFlags, M_DATA, M_PASSFP, M_READ};
use crate::queue::QFlags;
use crate::sth::Stream;
use crate::stream::QueueId;

/// Whether block `b` of a message is delivered by read() under protocol option `prot`.
pub(crate) fn delivered(b: &Msg, is_proto: bool, prot: u32) -> bool {
    !(is_proto && prot == RPROTDIS && b.db_type() != M_DATA)
}

/// Bytes read() would deliver from `m`.
fn deliverable(m: &Msg, prot: u32) -> usize {
    let is_proto = m.db_type() != M_DATA;
    m.blocks()
        .filter(|b| delivered(b, is_proto, prot))
        .fold(0, |n, b| n.saturating_add(b.blen()))
}

/// Split `m` after its first `n` deliverable bytes: the front (with the blocks read() does not
/// deliver) and the rest, whose control blocks become data (what is left of an M_PROTO read
/// as data is data, as in SVR4), and how many leading blocks of the rest were retyped so. On
/// allocation failure the message comes back (`None` only if it had no block at all).
fn split_read(m: Msg, prot: u32, n: usize) -> Result<(Msg, Option<Msg>, usize), Option<Msg>> {
    let is_proto = m.db_type() != M_DATA;
    let cut = |b: &Msg| {
        if delivered(b, is_proto, prot) {
            Cut::Part(0)
        } else {
            Cut::Front
        }
    };
    let (front, mut rest) = split(m, [n, 0], cut).map_err(Some)?;
    let Some(front) = front else {
        return Err(rest);
    };
    let mut retyped = 0;
    let mut leading = true;
    let mut b = rest.as_mut();
    while let Some(x) = b {
        if x.db_type() != M_DATA {
            x.set_type(M_DATA);
            if leading {
                retyped += 1;
            }
        } else {
            leading = false;
        }
        b = x.cont_mut();
    }
    Ok((front, rest, retyped))
}

impl Stream {
    /// read(2), first phase: take off the head what a read of up to `len` bytes delivers, into
    /// `out` (empty on entry), and hold the reader token `tok` if anything was taken. Returns
    /// the bytes the platform is to copy out with [`Taken::copy_out`] (then give `tok` back;
    /// on a fault [`Stream::sth_untake`]); 0 for a zero-length message, which is consumed here,
    /// or at end of file (hangup with nothing queued).
    ///
    /// Errors: EBADF after close; the M_ERROR read error; EBADMSG for M_PROTO/M_PCPROTO under
    /// RPROTNORM (and for a passed file); ENOSR when a message that must be split cannot be
    /// (no memory); EAGAIN/Block when nothing can be read, or another reader of this head is
    /// copying its take out.
    pub fn strread(
        &mut self,
        len: usize,
        nonblock: bool,
        tok: &ReaderToken,
        out: &mut Taken,
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
        if !tok.free() {
            return Err(wait(nonblock, Block::Readable));
        }
        let prot = match self.sth.rdopt & RPROTMASK {
            0 => RPROTNORM,
            p => p,
        };
        if self.sth.rdopt & (RMODEMASK | RFILL) == RNORM | RFILL && !self.sth.hangup {
            let (avail, complete) = self.sth_fill_avail(len);
            if !complete && (!nonblock || avail == 0) {
                return Err(self.sth_read_wait(len, nonblock));
            }
        }
        out.begin_read(prot);
        let r = self.sth_read_take(len, prot, nonblock, out);
        if !out.is_empty() {
            out.seal(self.sth.rgen);
            tok.hold();
        }
        r
    }

    /// The loop of [`Stream::strread`]: take messages from the front while the read goes on.
    fn sth_read_take(
        &mut self,
        len: usize,
        prot: u32,
        nonblock: bool,
        out: &mut Taken,
    ) -> Result<usize, Stop> {
        let mode = self.sth.rdopt & RMODEMASK;
        let h = self.head_rq();
        let mut copied = self.sth_read_run(h, len, mode, out);
        if copied > 0 && (copied >= len || mode != RNORM) {
            return Ok(copied);
        }
        loop {
            let Some(first) = self.sth_front(h) else {
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
                    drop(self.sth_take_front(h));
                    continue;
                }
                if copied > 0 {
                    return Ok(copied); // the zero-length message ends this read, stays
                }
                drop(self.sth_take_front(h));
                return Ok(0);
            }
            let want = total.min(len - copied);
            let Some(mp) = self.sth_take_front(h) else {
                return Ok(copied);
            };
            if want == total {
                out.push(mp);
                copied += want;
                // A protocol message read as data (RPROTDAT/RPROTDIS) is a record of its own:
                // the read does not run on into the next message, nor into one from the front.
                if mode != RNORM || marked || is_proto || copied >= len {
                    return Ok(copied);
                }
                continue;
            }
            if mode == RMSGD {
                // The rest of the message is discarded with it once the copy succeeded.
                out.push(mp);
                out.set_last(want);
                return Ok(copied + want);
            }
            let band = mp.band();
            let ty = mp.db_type();
            return match split_read(mp, prot, want) {
                Ok((front, rest, retyped)) => {
                    if let Some(rest) = rest {
                        out.set_rest(&rest, retyped, ty, band);
                        self.sth_putbq_taken(rest);
                    }
                    out.push(front);
                    Ok(copied + want)
                }
                Err(mp) => {
                    if let Some(mp) = mp {
                        self.sth_putbq_taken(mp);
                    }
                    if copied > 0 {
                        Ok(copied)
                    } else {
                        Err(Errno::ENOSR.into())
                    }
                }
            };
        }
    }

    /// The common read, in at most two queue operations: the whole messages at the front of
    /// the head's read queue that the loop of [`Stream::sth_read_take`] would take whole and
    /// read on after, without its checks one message at a time: band-0 M_DATA (its every
    /// block delivered, whatever `prot`), not empty, neither marked nor a delimiter, that
    /// fit in `len`; in the message modes one at most. The first straight-line
    /// ([`Stream::getq_first_at`]: most reads end with it), the rest in one run
    /// ([`Stream::getq_upto_at`]). Returns the bytes taken into `out`; the loop goes on from
    /// there (a message to split, a mark, a protocol message, the direct take behind the
    /// queue), as it would have after taking them itself.
    fn sth_read_run(&mut self, h: QueueId, len: usize, mode: u32, out: &mut Taken) -> usize {
        let plain = |m: &Msg| {
            m.db_type() == M_DATA
                && !m.flag().contains(MsgFlags::MSGMARK)
                && !m.flag().contains(MsgFlags::MSGDELIM)
        };
        // The first message straight-line: most reads take one (a message each, or a byte
        // stream read as it was written).
        let Some((m, n)) = self.getq_first_at(h, len, plain) else {
            return 0;
        };
        out.push(m);
        if n >= len || mode != RNORM {
            return n;
        }
        let (mut run, more) = self.getq_upto_at(h, len - n, usize::MAX, plain);
        while let Some(mut m) = run {
            run = m.0.next.take();
            out.push(m);
        }
        n.saturating_add(more)
    }

    /// Whether a read of `len` bytes ends within what the head's read queue holds, so its
    /// enter may leave ordinary data on the inbound list (the lazy take, `perim` step 7;
    /// everything there arrived after the queue's messages). Asked under the lock by
    /// `Perim::enter_read` (`call.rs`, with the reader token idle: a read that waits for it
    /// must not sleep with data left there). True only when sure, walking the M_DATA
    /// messages of a queue that holds band-0 messages alone (`Queue::band0_front`):
    /// enough bytes, or a message that ends the read (a zero-length one, a mark or a
    /// delimiter; any one in the message modes). Anything else (another type, another class,
    /// RFILL, a queue of no bytes) says no, and the enter takes the list as before.
    #[inline]
    pub fn sth_read_ready(&self, len: usize) -> bool {
        // An empty queue first, inline (the reader that keeps up: the direct take follows).
        self.sth_rq_holding()
            .is_some_and(|q| self.sth_read_ready_walk(q, len))
    }

    /// The head's read queue if it holds bytes: the first, inline look of the lazy take's
    /// `ready`s ([`Stream::sth_read_ready`], `sth_getmsg_ready`), which say no otherwise.
    #[inline]
    pub(super) fn sth_rq_holding(&self) -> Option<&crate::queue::Queue> {
        self.queue(self.head_rq()).filter(|q| q.count() != 0)
    }

    /// [`Stream::sth_read_ready`] for a head's read queue `q` that holds bytes.
    fn sth_read_ready_walk(&self, q: &crate::queue::Queue, len: usize) -> bool {
        let rdopt = self.sth.rdopt;
        if len == 0 || rdopt & RFILL != 0 {
            return false;
        }
        let Some(msgs) = q.band0_front() else {
            return false;
        };
        let mut avail = 0usize;
        for m in msgs {
            if m.db_type() != M_DATA {
                return false;
            }
            let n = m.msgsize();
            if n == 0
                || rdopt & RMODEMASK != RNORM
                || m.flag().contains(MsgFlags::MSGMARK)
                || m.flag().contains(MsgFlags::MSGDELIM)
            {
                return true;
            }
            avail = avail.saturating_add(n);
            if avail >= len {
                return true;
            }
        }
        false
    }

    /// The message a read or getmsg takes next: the first of the head's read queue, else the
    /// next one the read took straight from the inbound list (`stream/direct.rs`), which comes after
    /// it.
    #[inline]
    pub(super) fn sth_front(&self, h: QueueId) -> Option<&Msg> {
        match self.queue(h).and_then(|q| q.first()) {
            Some(m) => Some(m),
            None => self.direct_first(),
        }
    }

    /// Take [`Stream::sth_front`]'s message: `getq`, or the direct take's next one. The
    /// direct one's arrival is not noted here: its reader is the only one to see it, unless
    /// the rest of it is put back ([`Stream::sth_putbq_taken`]). A band-0 message that is
    /// not empty is taken as a run of one ([`Stream::getq_upto_at`]: the flow control goes
    /// stale only if the queue's flow state changed).
    pub(super) fn sth_take_front(&mut self, h: QueueId) -> Option<Msg> {
        let direct =
            self.direct_first().is_some() && self.queue(h).is_some_and(|q| q.first().is_none());
        self.sth.taken_direct = direct;
        if direct {
            // The direct take's conditions (`direct_ok`) that make this reader the only one
            // to see the message.
            debug_assert!(!self.sth.sig_any && self.sth.rdopt & RFILL == 0);
            return self.direct_pop();
        }
        match self.getq_upto_at(h, usize::MAX, 1, |_| true) {
            (Some(m), _) => Some(m),
            (None, _) => self.getq_at(h),
        }
    }

    /// RFILL: bytes available in the leading M_DATA messages, and whether a read of `len`
    /// could complete now (enough bytes, a message boundary that ends the read, or a read
    /// queue that flow control has filled: the writers wait for this read then, so the read
    /// cannot wait for them and takes what is there).
    fn sth_fill_avail(&self, len: usize) -> (usize, bool) {
        let Some(q) = self.queue(self.head_rq()) else {
            return (0, false);
        };
        if q.first().is_none() {
            return (0, false); // the common case of a reader trying again
        }
        let full = q.flags().contains(QFlags::QFULL);
        let mut avail = 0usize;
        for pos in 0.. {
            let Some(m) = q.peek(pos) else {
                return (avail, full);
            };
            if m.db_type() != M_DATA || m.msgsize() == 0 {
                return (avail, true);
            }
            avail = avail.saturating_add(m.msgsize());
            if avail >= len {
                return (avail, true);
            }
        }
        (avail, full)
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
