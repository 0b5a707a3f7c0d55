//! The Stream head's read put procedure (`strrput`): what the head does with each message
//! that arrives from below, at once and under the Stream lock.
//!
//! Data (M_DATA, M_PROTO, M_PCPROTO) is queued for read/getmsg (only one M_PCPROTO at a time,
//! as in SVR4: a second one is freed). M_SETOPTS changes head options, M_FLUSH flushes the
//! head and turns the write half around downstream (FLUSHR cleared), M_ERROR and M_HANGUP
//! set the error/hangup state, M_SIG/M_PCSIG become pending signals, and ioctl answers go to
//! the ioctl slot. M_READ at a pipe end or FIFO (the reader there is about to block) sends
//! what write hold holds at once. Anything else is freed. Wakeups and SIGPOLL events are
//! recorded in `HeadEvents` for the platform. Back-enables reaching the head wake writers
//! (`sth_backenable`, called by the Stream engine).

use super::consts::*;
use super::{IocBlk, IocSlot, WAKE_IOCTL, WAKE_POLL, WAKE_READ, WAKE_WRITE};
use crate::errno::Errno;
use crate::msg::*;
use crate::queue::{QField, FLUSHALL, INFPSZ};
use crate::sth::Stream;

/// M_ERROR byte meaning "leave this side's error as it is" (two-byte form).
pub const NOERROR: u8 = 0xff;

/// `struct stroptions`, the body of M_SETOPTS, in the LP64 layout the C header will use:
/// `so_flags` u64 @0, `so_readopt` i16 @8, `so_wroff` u16 @10, `so_minpsz` i64 @16,
/// `so_maxpsz` i64 @24 (-1 = INFPSZ), `so_hiwat` u64 @32, `so_lowat` u64 @40, `so_band` u8
/// @48; 56 bytes, native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StrOptions {
    /// `SO_*` bits saying which fields are valid.
    pub so_flags: u64,
    /// Read options (SO_READOPT).
    pub so_readopt: i16,
    /// Write offset (SO_WROFF).
    pub so_wroff: u16,
    /// Minimum packet size (SO_MINPSZ).
    pub so_minpsz: i64,
    /// Maximum packet size, -1 for infinite (SO_MAXPSZ).
    pub so_maxpsz: i64,
    /// High water mark (SO_HIWAT).
    pub so_hiwat: u64,
    /// Low water mark (SO_LOWAT).
    pub so_lowat: u64,
    /// Band the watermarks are for (SO_BAND).
    pub so_band: u8,
}

/// Size of an encoded [`StrOptions`].
pub const STROPTIONS_SIZE: usize = 56;

fn field<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    if let Some(s) = b.get(at..at + N) {
        out.copy_from_slice(s);
    }
    out
}

impl StrOptions {
    /// The bytes of an M_SETOPTS body.
    pub fn encode(&self) -> [u8; STROPTIONS_SIZE] {
        let mut b = [0u8; STROPTIONS_SIZE];
        let parts: [(usize, &[u8]); 7] = [
            (0, &self.so_flags.to_ne_bytes()),
            (8, &self.so_readopt.to_ne_bytes()),
            (10, &self.so_wroff.to_ne_bytes()),
            (16, &self.so_minpsz.to_ne_bytes()),
            (24, &self.so_maxpsz.to_ne_bytes()),
            (32, &self.so_hiwat.to_ne_bytes()),
            (40, &self.so_lowat.to_ne_bytes()),
        ];
        for (at, src) in parts {
            if let Some(d) = b.get_mut(at..at + src.len()) {
                d.copy_from_slice(src);
            }
        }
        if let Some(d) = b.get_mut(48) {
            *d = self.so_band;
        }
        b
    }
    /// Parse an M_SETOPTS body (`None` if it is too short).
    pub fn decode(b: &[u8]) -> Option<StrOptions> {
        if b.len() < 49 {
            return None;
        }
        Some(StrOptions {
            so_flags: u64::from_ne_bytes(field(b, 0)),
            so_readopt: i16::from_ne_bytes(field(b, 8)),
            so_wroff: u16::from_ne_bytes(field(b, 10)),
            so_minpsz: i64::from_ne_bytes(field(b, 16)),
            so_maxpsz: i64::from_ne_bytes(field(b, 24)),
            so_hiwat: u64::from_ne_bytes(field(b, 32)),
            so_lowat: u64::from_ne_bytes(field(b, 40)),
            so_band: *b.get(48)?,
        })
    }
    /// An M_SETOPTS message carrying these options.
    pub fn to_msg(&self) -> Result<Msg, crate::sys::NoMem> {
        Msg::from_bytes(M_SETOPTS, &self.encode())
    }
}

fn psz(v: i64) -> usize {
    usize::try_from(v).unwrap_or(INFPSZ)
}

impl Stream {
    /// The head's read put procedure (see the module docs).
    pub(crate) fn sth_rput(&mut self, mp: Msg) {
        let ty = mp.db_type();
        if ty == M_DATA || ty == M_PROTO || ty == M_PCPROTO || ty == M_PASSFP {
            self.sth_enqueue(mp);
        } else if ty == M_SETOPTS {
            if let Some(o) = StrOptions::decode(mp.rd()) {
                self.sth_setopts(&o);
            }
        } else if ty == M_FLUSH {
            self.sth_mflush(mp);
        } else if ty == M_ERROR {
            self.sth_merror(mp.rd());
        } else if ty == M_HANGUP {
            self.sth_set_hangup();
        } else if ty == M_UNHANGUP {
            self.sth.hangup = false;
            self.sth.note(WAKE_POLL, 0);
        } else if ty == M_SIG || ty == M_PCSIG {
            let sig = mp.rd().first().copied().unwrap_or(0);
            if sig == SIGPOLL {
                self.sth.note(WAKE_POLL, S_MSG);
            } else if (1..64).contains(&sig) {
                self.sth.ev.signals |= 1u64 << sig;
            }
        } else if ty == M_IOCACK || ty == M_IOCNAK || ty == M_COPYIN || ty == M_COPYOUT {
            self.sth_ioc_answer(mp);
        } else if ty == M_IOCTL {
            self.sth_nak_ioctl(mp);
        } else if ty == M_READ && self.sth.ispipe {
            // The reader at the other end (or of this FIFO) is about to block for data
            // (SO_MREADON there): what write hold holds here goes to it now, not at the hold
            // timer (LfS; the requested count is not waited for).
            self.sth_flush_hold();
        }
        // Anything else has no meaning at the head and is freed here.
    }

    fn sth_enqueue(&mut self, mp: Msg) {
        let h = self.head_rq();
        let hipri = mp.is_hipri();
        if hipri && self.queue(h).is_some_and(|q| q.hipri_len() > 0) {
            return; // SVR4: only one high-priority message waits at the head
        }
        let band = mp.band();
        let Some(s) = self.side_mut(h) else {
            return;
        };
        let was_empty = s.q.first().is_none();
        let r = s.q.putq(mp);
        match r {
            Ok(ev) => self.apply(h, ev),
            Err(m) => {
                // Not reached: putq keeps a band message whose `qband` cannot be allocated
                // on its overflow list (`queue` module docs).
                drop(m);
                self.count_drop();
                return;
            }
        }
        self.sth_note_arrival(was_empty, hipri, band);
    }

    /// Note the arrival of a message at the head's read queue (high-priority if `hipri`, else
    /// of `band`) that was empty before it if `was_empty`. Readers sleep only on an empty
    /// queue, or for read-fill (more bytes), or for a band or high-priority message that is
    /// not there yet: other arrivals need no wakeup (as a Linux pipe wakes its reader only when
    /// it was empty). SIGPOLL events are per message.
    fn sth_note_arrival(&mut self, was_empty: bool, hipri: bool, band: u8) {
        let rfill = self.sth.rdopt & RFILL != 0;
        let wake = was_empty || hipri || band > 0 || rfill;
        let sig = if hipri {
            S_HIPRI
        } else if band > 0 {
            S_INPUT | S_RDBAND
        } else {
            S_INPUT | S_RDNORM
        };
        self.sth
            .note(if wake { WAKE_READ | WAKE_POLL } else { 0 }, sig);
    }

    /// [`Stream::sth_enqueue`] of a run of band-0 M_DATA messages (`HeadProcs::rput_run`,
    /// `stream/batch.rs`), with one `putq_run` and one note. The head ends as the enqueue of
    /// each would leave it: the messages are neither high-priority nor banded, so each one's
    /// wakeup is wanted only on the empty queue (the first one's) or with read fill, and the
    /// notes of a lock hold are a set of events (`HeadEvents`, taken at its end), so the
    /// union of the per-message notes is this one. (There is no merging of M_DATA at the
    /// head's read queue to keep.)
    pub(crate) fn sth_enqueue_run(&mut self, run: Msg) {
        let h = self.head_rq();
        let Some(was_empty) = self.putq_run_at(h, run) else {
            return;
        };
        self.sth_note_arrival(was_empty, false, 0);
    }

    /// I_SWROPT's SNDMREAD (LfS): read notification on or off for the head that reads what
    /// this head writes. On a pipe end or a FIFO that is the head this end's writes reach
    /// (the other end, or the FIFO's own head), told with an M_SETOPTS of SO_MREADON or
    /// SO_MREADOFF sent down, as a module below it would tell it; on any other Stream it is
    /// this head, whose blocking reads then send M_READ to the driver. ENOSR, nothing
    /// changed, when the message cannot be allocated.
    pub(crate) fn sth_read_notify(&mut self, on: bool) -> Result<(), Errno> {
        if !self.sth.ispipe {
            self.sth.mread = on;
            return Ok(());
        }
        let so = StrOptions {
            so_flags: if on { SO_MREADON } else { SO_MREADOFF },
            ..StrOptions::default()
        };
        let m = so.to_msg().map_err(|_| Errno::ENOSR)?;
        self.write(m);
        Ok(())
    }

    /// Apply M_SETOPTS.
    pub(crate) fn sth_setopts(&mut self, o: &StrOptions) {
        let f = o.so_flags;
        // The write offset, delimiting: writes join the held message under the lock again.
        self.sth.hold.seal();
        if f & SO_READOPT != 0 {
            let _ = self.sth_set_rdopt(o.so_readopt as u32);
        }
        if f & SO_WROFF != 0 {
            self.sth.wroff = usize::from(o.so_wroff);
        }
        let h = self.head_rq();
        let band = if f & SO_BAND != 0 { o.so_band } else { 0 };
        let sets = [
            (SO_MINPSZ, QField::Minpsz, 0, psz(o.so_minpsz)),
            (SO_MAXPSZ, QField::Maxpsz, 0, psz(o.so_maxpsz)),
            (SO_HIWAT, QField::Hiwat, band, o.so_hiwat as usize),
            (SO_LOWAT, QField::Lowat, band, o.so_lowat as usize),
        ];
        for (bit, what, b, v) in sets {
            if f & bit != 0 {
                let _ = self.qctx(h).strqset(what, b, v);
            }
        }
        if f & SO_MREADON != 0 {
            self.sth.mread = true;
        }
        if f & SO_MREADOFF != 0 {
            self.sth.mread = false;
        }
        if f & SO_DELIM != 0 {
            self.sth.delim = true;
        }
        if f & SO_NODELIM != 0 {
            self.sth.delim = false;
        }
        if f & SO_STRHOLD != 0 {
            self.sth.wropt |= SNDHOLD;
        }
    }

    /// I_SRDOPT / SO_READOPT: set the read mode and, if given, the protocol treatment.
    pub(crate) fn sth_set_rdopt(&mut self, v: u32) -> Result<(), Errno> {
        let mode = v & RMODEMASK;
        let prot = v & RPROTMASK;
        if mode == RMODEMASK || v & !(RMODEMASK | RPROTMASK | RFILL) != 0 {
            return Err(Errno::EINVAL);
        }
        if prot != 0 && prot != RPROTNORM && prot != RPROTDAT && prot != RPROTDIS {
            return Err(Errno::EINVAL);
        }
        let prot = if prot == 0 {
            self.sth.rdopt & RPROTMASK
        } else {
            prot
        };
        self.sth.rdopt = mode | prot | (v & RFILL);
        Ok(())
    }

    /// Flush the head's own queues (and hold buffer) as `flags` (FLUSHR/FLUSHW) say.
    pub(crate) fn sth_flush_local(&mut self, flags: u8, band: Option<u8>) {
        if flags & FLUSHR != 0 {
            self.sth.rgen = self.sth.rgen.wrapping_add(1);
            let h = self.head_rq();
            let mut cx = self.qctx(h);
            let _ = match band {
                Some(b) => cx.flushband(b, FLUSHALL),
                None => cx.flushq(FLUSHALL),
            };
        }
        if flags & FLUSHW != 0 {
            if matches!(band, None | Some(0)) {
                drop(self.sth.hold.take_run());
                drop(self.sth.hold.take());
            }
            let h = self.head_wq();
            let mut cx = self.qctx(h);
            let _ = match band {
                Some(b) => cx.flushband(b, FLUSHALL),
                None => cx.flushq(FLUSHALL),
            };
            self.sth.note(WAKE_WRITE | WAKE_POLL, 0);
        }
    }

    /// An M_IOCTL coming up to a head crossed a pipe from the other head (or a module sent
    /// it up): no driver will ever answer it, so the head NAKs it back down (SVR4 `strrput`),
    /// or the sender's ioctl (TCGETS from isatty(), FIONREAD, any I_STR) would wait forever.
    fn sth_nak_ioctl(&mut self, mut mp: Msg) {
        let Some(mut ioc) = IocBlk::decode(mp.rd()) else {
            return;
        };
        ioc.error = Errno::EINVAL.0;
        ioc.count = 0;
        ioc.rval = 0;
        if mp.make_writable().is_err() {
            return;
        }
        mp.set_type(M_IOCNAK);
        if let Some(b) = mp.rd_mut().and_then(|b| b.get_mut(..super::IOCBLK_SIZE)) {
            crate::sys::copy_bytes(b, &ioc.encode());
        }
        self.write(mp);
    }

    fn sth_mflush(&mut self, mut mp: Msg) {
        let flags = mp.rd().first().copied().unwrap_or(0);
        let band = if flags & FLUSHBAND != 0 {
            Some(mp.rd().get(1).copied().unwrap_or(0))
        } else {
            None
        };
        self.sth_flush_local(flags & FLUSHR, band);
        if flags & FLUSHW == 0 {
            return;
        }
        self.sth_flush_local(FLUSHW, band);
        // A reflected flush is marked MSGNOLOOP and not reflected twice (SVR4 `strrput`), on
        // every Stream: on a pipe (or FIFO) the write side leads to the other head, which would
        // turn it around again; below any head a module that swaps FLUSHR and FLUSHW
        // (`pipemod`) over a driver that reflects FLUSHR sends it back as FLUSHW. Marking
        // only pipes and FIFOs let `I_PUSH pipemod` + `I_FLUSH FLUSHW` on a driver Stream
        // ping-pong the flush for ever inside the ioctl (a soft lockup, found by strstress).
        if mp.flag().contains(MsgFlags::MSGNOLOOP) {
            return;
        }
        mp.set_flag(mp.flag() | MsgFlags::MSGNOLOOP);
        // Turn the write half around: downstream sees the flush, not the read half again.
        if mp.make_writable().is_ok() {
            if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
                *b &= !FLUSHR;
                self.write(mp);
            }
        }
    }

    fn sth_merror(&mut self, b: &[u8]) {
        let (Some(&r), w) = (b.first(), b.get(1).copied()) else {
            return;
        };
        let w = w.unwrap_or(r);
        let mut flush = 0u8;
        if r != NOERROR {
            self.sth.rerr = (r != 0).then_some(Errno(i32::from(r)));
            if r != 0 {
                flush |= FLUSHR;
            }
        }
        if w != NOERROR {
            self.sth.werr = (w != 0).then_some(Errno(i32::from(w)));
            if w != 0 {
                flush |= FLUSHW;
            }
        }
        if flush != 0 {
            self.sth_flush_local(flush, None);
            if let Ok(m) = Msg::from_bytes(M_FLUSH, &[flush]) {
                self.write(m);
            }
        }
        self.sth
            .note(WAKE_READ | WAKE_WRITE | WAKE_POLL | WAKE_IOCTL, S_ERROR);
    }

    fn sth_ioc_answer(&mut self, mp: Msg) {
        let Some(ioc) = IocBlk::decode(mp.rd()) else {
            return;
        };
        if let IocSlot::Waiting(id) = self.sth.ioc {
            if id == ioc.id {
                self.sth.ioc = IocSlot::Answered(id, mp);
                self.sth.note(WAKE_IOCTL, 0);
            }
        }
        // An answer nobody waits for (timed out, or not ours) is freed.
    }

    /// M_HANGUP (or the other end of a pipe closed): readers get end of file once the queue
    /// is drained, writers EPIPE/ENXIO; everybody waiting wakes.
    pub(crate) fn sth_set_hangup(&mut self) {
        self.sth.hangup = true;
        self.sth.hold.seal();
        self.sth
            .note(WAKE_READ | WAKE_WRITE | WAKE_POLL | WAKE_IOCTL, S_HANGUP);
    }

    /// A back-enable reached the head's write queue: writers of `band` may go on.
    pub(crate) fn sth_backenable(&mut self, band: u8) {
        let s = if band == 0 { S_OUTPUT } else { S_WRBAND };
        self.sth.note(WAKE_WRITE | WAKE_POLL, s);
    }
}
