//! The SVR4 Stream head as a pure state machine: what read(2), write(2), putmsg(2),
//! getmsg(2), ioctl(2) and poll(2) do to a Stream, without ever sleeping.
//!
//! The head state ([`StrHead`], SVR4 `stdata`) is the head of its Stream
//! (`crate::stream::Stream<StrHead>`, called [`Stream`] here), under the same lock as the
//! queues. Its procedures ([`HeadProcs`]: the read put procedure `strrput` and the write-side
//! back-enable) are what the engine calls when a message or a back-enable reaches the head
//! pair, so messages arriving at the head are acted on at once (`events.rs`).
//!
//! Platform independence: an operation never waits and never reaches user memory. Where SVR4
//! would sleep it returns [`Stop::Block`] naming what to wait for; the platform sleeps on that
//! and calls the same operation again. A non-blocking caller gets a plain EAGAIN instead.
//! What a system call sends arrives in kernel memory, staged by the platform before it took
//! the Stream lock; what it receives leaves as messages or kernel buffers the platform copies
//! out after dropping the lock, and what a read consumes is put back if that copy faults
//! (`take.rs`). `call.rs` is that platform half, written once over [`call::HeadCall`] for the
//! kernel and the tests alike. Everything the head wants done outside the lock (wake
//! readers/writers/pollers, send signals, arm the hold timer) accumulates as data in
//! [`HeadEvents`], collected by [`Stream::sth_take_events`].
//!
//! Files: `write.rs` write(2); `fast.rs` write(2) of a message built before the lock;
//! `read.rs` read(2); `take.rs` what read and getmsg take off the head to copy out, and the
//! reader token; `msg.rs` putmsg/getmsg and their band variants, I_PEEK; `ioctl.rs` the I_*
//! dispatcher; `events.rs` the head's read put procedure (M_SETOPTS, M_FLUSH, M_ERROR,
//! M_HANGUP, M_SIG, ioctl answers); `transp.rs` transparent ioctls
//! (M_COPYIN/M_COPYOUT/M_IOCDATA); `poll.rs` the poll mask; `call.rs` the platform's half of
//! each system call (stage in, run under the lock, copy out); `close.rs` the close-time
//! drain (I_SETCLTIME); `fdpass.rs` I_SENDFD/I_RECVFD; `fdinsert.rs` I_FDINSERT; `mux.rs`
//! the upper Stream of a multiplexor (I_LINK, I_PLINK, I_UNLINK, I_PUNLINK); `plex.rs` the
//! head of a Stream linked under one; `pipe.rs` the head of a STREAMS pipe end; `fifo.rs`
//! FIFOs (one head feeding itself); `consts.rs` the user-visible numbers; `layout.rs` the
//! ioctl structures that embed a pointer, in both data models; `userio.rs` user-copy
//! helpers.

pub mod call;
mod close;
pub mod consts;
pub mod events;
pub mod fast;
pub mod fdinsert;
mod fdpass;
pub mod fifo;
pub mod hold;
pub mod ioctl;
pub mod layout;
pub mod msg;
pub mod mux;
pub mod pipe;
mod plex;
mod poll;
mod read;
pub mod take;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;
pub mod transp;
pub mod userio;
mod write;

pub use close::Drain;
pub use events::{StrOptions, NOERROR, STROPTIONS_SIZE};
pub use fdinsert::{FdInsert, FdInsertArgs, FdInsertShape, FDINSERT_TOKEN, NO_QUEUE};
pub use ioctl::{istr_timeout_ms, IocArg, IocBlk, PeekArgs, StrIoctl, IOCBLK_SIZE, TRANSPARENT};
pub use msg::{GetMsg, Part};
pub use mux::{LinkBlk, LinkReq, UnlinkReq, LINKBLK_SIZE};
pub use take::{Fault, ReaderToken, Taken};
pub use transp::{CopyDone, CopyReq, CopyResp, Transp, TranspIoctl, TranspStep, COPYREQ_SIZE};
pub use userio::{FailIo, SliceIo, UserIo};
pub use write::{STRHOLDPSZ, STRHOLDRUN, STRHOLDSZ};

use crate::errno::Errno;
use crate::msg::Msg;
use crate::stream::{HeadProcs, OpenArgs, StreamTab};

/// A Stream with a Stream head: what every system call acts on.
pub type Stream = crate::stream::Stream<StrHead>;
use consts::*;

/// What a blocked operation waits for before it is called again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Block {
    /// Something to read arrives at the head (or an error/hangup).
    Readable,
    /// The downstream queue of this band accepts data again (back-enable).
    Writable(u8),
    /// The answer to the ioctl in progress arrives (or the ioctl slot becomes free).
    IoctlAck,
}

/// Why an operation did not complete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Failed with this errno (EAGAIN here is the O_NONBLOCK answer: do not wait).
    Err(Errno),
    /// Would block: wait for the event, then call again.
    Block(Block),
}

impl From<Errno> for Stop {
    fn from(e: Errno) -> Stop {
        Stop::Err(e)
    }
}

impl From<crate::sys::NoMem> for Stop {
    fn from(_: crate::sys::NoMem) -> Stop {
        Stop::Err(Errno::ENOSR)
    }
}

/// Wake the readers sleeping on [`Block::Readable`].
pub const WAKE_READ: u32 = 0x1;
/// Wake the writers sleeping on [`Block::Writable`].
pub const WAKE_WRITE: u32 = 0x2;
/// Wake the ioctl waiters ([`Block::IoctlAck`]).
pub const WAKE_IOCTL: u32 = 0x4;
/// Wake the pollers (re-evaluate [`Stream::strpoll`]).
pub const WAKE_POLL: u32 = 0x8;

/// What the platform must do after an operation or a put, outside the Stream lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HeadEvents {
    /// `WAKE_*` bits.
    pub wake: u32,
    /// `S_*` events that happened: send SIGPOLL (or SIGURG) to the registrations that asked.
    pub sigpoll: u32,
    /// Signal numbers (bit `n` = signal `n`, 1..=63) from M_SIG/M_PCSIG for the process group.
    pub signals: u64,
    /// Send SIGPIPE to the writer (write on a hung-up pipe with SNDPIPE).
    pub sigpipe: bool,
    /// A write started a held run (SNDHOLD): call [`Stream::sth_hold_expired`] with
    /// `hold_gen` after a short delay.
    pub hold_timer: bool,
    /// The generation of the run `hold_timer` was armed for (0 without `hold_timer`).
    pub hold_gen: u32,
}

/// Most SIGPOLL registrations one Stream keeps (I_SETSIG).
pub const NSIGREG: usize = 8;

/// The process an I_SETSIG registration signals, as the platform holds it. In the kernel it
/// is a counted reference to the registrant's thread group (`struct pid`) and its credentials
/// (`rust/modules/sigowner.rs`), so a registration can never name another process after the
/// registrant exits and its number is reused.
pub trait SigOwner: Send + Sync {
    /// The owner's identity: two owners naming one live process have the same key, and no
    /// two live processes share one (in the kernel: the address of the held `struct pid`).
    fn key(&self) -> usize;
    /// Send signal `sig` to the process, if it still exists and may still be signalled by
    /// the registrant (the platform's rule); nothing otherwise. Called with no lock held.
    fn signal(&self, sig: i32);
}

/// One I_SETSIG registration: who gets SIGPOLL for which `S_*` events.
#[derive(Clone)]
pub struct SigReg {
    /// Registered process.
    pub owner: crate::sys::Arc<dyn SigOwner>,
    /// `S_*` events.
    pub events: u32,
}

impl core::fmt::Debug for SigReg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("SigReg")
            .field("owner", &self.owner.key())
            .field("events", &self.events)
            .finish()
    }
}

/// The ioctl slot: one ioctl at a time per Stream, as in SVR4 (`STWIOC`).
pub(crate) enum IocSlot {
    /// No ioctl in progress.
    Free,
    /// M_IOCTL `id` sent down; waiting for the answer.
    Waiting(u32),
    /// The answer (M_IOCACK/M_IOCNAK/M_COPYIN/M_COPYOUT) to `id` arrived.
    Answered(u32, Msg),
    /// The platform is making the copy `req` of transparent ioctl `id` asks for, without the
    /// lock (`transp.rs`).
    Copying {
        /// The ioctl.
        id: u32,
        /// The M_COPYIN/M_COPYOUT request being served.
        req: CopyReq,
        /// M_COPYIN (else M_COPYOUT).
        copyin: bool,
    },
}

/// The Stream head's state (`stdata` in SVR4): options, errors, hangup, hold buffer,
/// SIGPOLL registrations, the ioctl slot and pending events.
pub struct StrHead {
    pub(crate) rdopt: u32,
    pub(crate) wropt: u32,
    pub(crate) wroff: usize,
    pub(crate) rerr: Option<Errno>,
    pub(crate) werr: Option<Errno>,
    pub(crate) hangup: bool,
    pub(crate) mread: bool,
    pub(crate) delim: bool,
    pub(crate) ispipe: bool,
    pub(crate) closed: bool,
    pub(crate) cltime: u32,
    /// The last close waits for a write queue to drain (`close.rs`).
    pub(crate) draining: bool,
    /// SNDHOLD: small writes coalesced here until full, flushed, or a read/putmsg/ioctl
    /// (`hold.rs`: shared with the write fast path).
    pub(crate) hold: hold::HeadHold,
    /// I_SETSIG registrations. INVARIANT: changed only through [`StrHead::set_sig`].
    sigs: [Option<SigReg>; NSIGREG],
    /// Some slot of `sigs` is taken (tested at every lock hold's end, `lazy_ok`, where a scan
    /// of the slots cost more than the rest of the test).
    sig_any: bool,
    pub(crate) ioc: IocSlot,
    pub(crate) ioc_seq: u32,
    /// Read-side flush generation: counts flushes of the head's read queue, so that a take
    /// being copied out knows whether what it would put back was flushed meanwhile.
    pub(crate) rgen: u32,
    /// The last take of a read or getmsg came from the direct take (`sth_take_front`), whose
    /// arrival is noted only if the rest of the message is put back at the head
    /// (`Stream::sth_putbq_taken`): data that arrives and is read in the same lock hold needs
    /// no wakeup or S_INPUT (`direct_ok` excludes I_SETSIG registrations and read fill).
    pub(crate) taken_direct: bool,
    pub(crate) ev: HeadEvents,
    /// This Stream is an upper Stream of a multiplexing driver: its place in the driver's
    /// link table (`mux.rs`).
    pub(crate) mux: Option<mux::MuxUpper>,
    /// This Stream is linked (or being linked) under a multiplexor (SVR4 STPLEX): the link
    /// it shares with the driver's table. While it is set every operation of the Stream's
    /// own files fails with EINVAL and its close is put off until the link goes (`plex.rs`).
    pub(crate) plex: Option<crate::sys::Arc<crate::stream::Link>>,
}

impl StrHead {
    /// A head with SVR4 defaults (RNORM|RPROTNORM, no write options, no errors).
    pub const fn new() -> StrHead {
        StrHead {
            rdopt: RNORM | RPROTNORM,
            wropt: 0,
            wroff: 0,
            rerr: None,
            werr: None,
            hangup: false,
            mread: false,
            delim: false,
            ispipe: false,
            closed: false,
            cltime: STRCLTIME_DEFAULT,
            draining: false,
            hold: hold::HeadHold::new(),
            sigs: [const { None }; NSIGREG],
            sig_any: false,
            ioc: IocSlot::Free,
            ioc_seq: 0,
            rgen: 0,
            taken_direct: false,
            ev: HeadEvents {
                wake: 0,
                sigpoll: 0,
                signals: 0,
                sigpipe: false,
                hold_timer: false,
                hold_gen: 0,
            },
            mux: None,
            plex: None,
        }
    }

    /// Record wakeups and SIGPOLL events for the platform.
    pub(crate) fn note(&mut self, wake: u32, sigpoll: u32) {
        self.ev.wake |= wake;
        self.ev.sigpoll |= sigpoll;
    }

    /// Read options (I_GRDOPT).
    pub fn rdopt(&self) -> u32 {
        self.rdopt
    }
    /// Write options (I_GWROPT).
    pub fn wropt(&self) -> u32 {
        self.wropt
    }
    /// Write offset (headroom reserved in written messages, from M_SETOPTS SO_WROFF).
    pub fn wroff(&self) -> usize {
        self.wroff
    }
    /// Read error: M_ERROR's, or EINVAL while the Stream is linked under a multiplexor.
    pub fn rerr(&self) -> Option<Errno> {
        if self.plex.is_some() {
            return Some(Errno::EINVAL);
        }
        self.rerr
    }
    /// Write error: M_ERROR's, or EINVAL while the Stream is linked under a multiplexor.
    pub fn werr(&self) -> Option<Errno> {
        if self.plex.is_some() {
            return Some(Errno::EINVAL);
        }
        self.werr
    }
    /// Whether the Stream is linked (or being linked) under a multiplexor: its own file
    /// operations fail with EINVAL, and its close waits for the link to go.
    pub fn is_linked(&self) -> bool {
        self.plex.is_some()
    }
    /// The Stream's name in its multiplexing driver's link table, if it is an upper Stream.
    pub fn mux_id(&self) -> Option<crate::stream::UpperId> {
        self.mux.as_ref().map(|m| m.me)
    }
    /// The Stream is hung up (M_HANGUP).
    pub fn hangup(&self) -> bool {
        self.hangup
    }
    /// M_READ is sent downstream before a read blocks (SO_MREADON).
    pub fn mread(&self) -> bool {
        self.mread
    }
    /// The head was closed (every operation fails).
    pub fn is_closed(&self) -> bool {
        self.closed
    }
    /// Bytes held by write hold (the run and the newest message), not yet sent.
    pub fn held(&self) -> usize {
        self.hold.run_bytes() + self.hold.state().map_or(0, |(n, _)| n)
    }
    /// The SIGPOLL registrations.
    pub fn sig_list(&self) -> impl Iterator<Item = &SigReg> + '_ {
        self.sigs.iter().flatten()
    }
    /// The slot of `sigs` registered by the process with [`SigOwner::key`] `key`, else (with
    /// `or_free`) a free one.
    pub(crate) fn sig_slot(&self, key: usize, or_free: bool) -> Option<usize> {
        let mine = self
            .sigs
            .iter()
            .position(|r| r.as_ref().is_some_and(|r| r.owner.key() == key));
        mine.or_else(|| {
            or_free
                .then(|| self.sigs.iter().position(Option::is_none))
                .flatten()
        })
    }
    /// Set slot `i` of the registrations; returns what was there.
    pub(crate) fn set_sig(&mut self, i: usize, r: Option<SigReg>) -> Option<SigReg> {
        let old = match self.sigs.get_mut(i) {
            Some(s) => core::mem::replace(s, r),
            None => r,
        };
        self.sig_any = self.sigs.iter().any(Option::is_some);
        old
    }
}

impl Default for StrHead {
    fn default() -> Self {
        StrHead::new()
    }
}

impl HeadProcs for StrHead {
    fn rput(s: &mut Stream, mp: Msg) {
        s.sth_rput(mp)
    }
    fn rput_run(s: &mut Stream, run: Msg) {
        s.sth_enqueue_run(run)
    }
    fn backenable(s: &mut Stream, band: u8) {
        if s.sth.plex.is_none() {
            s.sth_backenable(band)
        }
    }
    /// Nothing in the head that must hear of an arrival at once: no read fill (a reader
    /// waits for more), no I_SETSIG registration (S_INPUT is per message), no error, hangup
    /// or close, not linked under a multiplexor. A reader asleep in the head is woken by the
    /// put itself (`perim` step 5, through the sleeper count of step 6).
    fn lazy_ok(s: &Stream) -> bool {
        let h = &s.sth;
        h.rdopt & RFILL == 0
            && !h.sig_any
            && !h.hangup
            && !h.closed
            && h.rerr.is_none()
            && h.plex.is_none()
    }
    /// The lazy conditions, and no write hold: the read that follows is then the only one
    /// to act on what it takes straight from the inbound list (read fill, signals, hangup
    /// and errors are already out by `lazy_ok`; the arrival's wakeups are noted by the read
    /// only for the rest of a message it puts back: `msg.rs` `sth_putbq_taken`). Write hold
    /// is out because a read first sends what this head holds, which on a FIFO comes back
    /// to this head ahead of what the read took. M_READ (SO_MREADON) is not: a read sends
    /// it only when it finds nothing, the taken messages included (`read.rs`
    /// `sth_read_wait`), so nothing it took is waiting then.
    fn direct_ok(s: &Stream) -> bool {
        Self::lazy_ok(s) && s.sth.wropt & SNDHOLD == 0
    }
    /// Open, no write error or hangup, not linked under a multiplexor; no write offset,
    /// delimiters, held message, and no packet-size limits on the top queue (`maxpsz`
    /// infinite: a putmsg's data part is checked against a `maxpsz` of 0, a write's is not):
    /// a prebuilt write, or a putmsg of a band-0 data part alone, would only ask flow control
    /// and send its message (`strwrite_prebuilt`, `sth_putpmsg`), which the express write
    /// does. With write hold (SNDHOLD) on, the platform makes express writes only of sizes
    /// write hold does not hold (`sth::call`: `HeadShared::refresh_hold`); nothing is held
    /// while it is armed, so none overtakes held bytes.
    fn express_ok(s: &Stream) -> bool {
        let h = &s.sth;
        let (minpsz, maxpsz) = s.sth_psz();
        !h.closed
            && h.werr().is_none()
            && !h.hangup
            && h.plex.is_none()
            && h.wroff == 0
            && !h.delim
            && !h.hold.is_held()
            && minpsz == 0
            && maxpsz == crate::queue::INFPSZ
    }
    #[inline]
    fn sync(s: &mut Stream) {
        if s.sth.plex.is_some() {
            s.sth_plex_sync()
        }
    }
}

impl Stream {
    /// Open a Stream with a Stream head on driver `drv` (the head acts on what arrives from
    /// the driver's open routine on). Errors: the driver's, or ENOSR.
    pub fn sth_open(drv: &'static StreamTab, args: &OpenArgs) -> Result<Stream, Errno> {
        Stream::open_with(StrHead::new(), drv, args)
    }

    /// [`Stream::sth_open`] with default arguments.
    pub fn sth_new(drv: &'static StreamTab) -> Result<Stream, Errno> {
        Stream::sth_open(drv, &OpenArgs::driver(0))
    }

    /// The Stream head state (read-only).
    pub fn sth(&self) -> &StrHead {
        &self.sth
    }

    /// Mark this Stream as one end of a pipe (SNDPIPE on, EPIPE/SIGPIPE after hangup).
    pub fn sth_set_pipe(&mut self) {
        self.sth.ispipe = true;
        self.sth.wropt |= SNDPIPE;
    }

    /// Whether the platform has nothing to collect at the end of this lock hold:
    /// [`Stream::sth_take_events`] would report nothing (no event noted, no close-time drain
    /// waited for) and no qtimeout is pending ([`Stream::next_timeout`] would not scan).
    #[inline]
    pub fn sth_nothing_to_report(&self) -> bool {
        !self.sth.draining && self.sth.ev == HeadEvents::default() && !self.timeouts
    }

    /// Collect (and clear) what the platform must do: wakeups, signals, the hold timer.
    pub fn sth_take_events(&mut self) -> HeadEvents {
        self.sth_drain_note();
        core::mem::take(&mut self.sth.ev)
    }

    /// Share write hold's buffer with the platform's write fast path (`hold.rs`); the
    /// platform calls this under the lock before a write, once is enough.
    pub fn sth_share_hold(&mut self, cell: &crate::sys::Arc<hold::HoldCell>) {
        self.sth.hold.share(cell);
    }

    /// Send what write hold (SNDHOLD) has coalesced (the platform's hold timer calls this;
    /// reads, putmsg and ioctls do too). Returns the bytes sent.
    #[inline]
    pub fn sth_flush_hold(&mut self) -> usize {
        if !self.sth.hold.is_held() {
            return 0;
        }
        self.sth_send_hold()
    }

    /// The hold timer armed for the run of generation `gen` (`HeadEvents::hold_gen`)
    /// expired: send the held run if it is still that run. Nothing if a write sent it (or a
    /// flush did) and started another, whose own timer then sends it: an expiry that waited
    /// for the Stream lock while that happened must not send the new run before its hold
    /// time. Returns the bytes sent.
    pub fn sth_hold_expired(&mut self, gen: u32) -> usize {
        if self.sth.hold.gen() != gen {
            return 0;
        }
        self.sth_flush_hold()
    }

    /// [`Stream::sth_flush_hold`] with a message held.
    #[inline(never)]
    fn sth_send_hold(&mut self) -> usize {
        // The run first, oldest first, then the newest message: one thread's writes stay in
        // order. A reader's gate claimed by the first put takes the rest with it (one put-up).
        let mut sent = 0;
        for m in self.sth.hold.take_run().into_iter().flatten() {
            sent += m.msgsize();
            self.write(m);
        }
        if let Some(m) = self.sth.hold.take() {
            sent += m.msgsize();
            self.write(m);
        }
        sent
    }

    /// close(2) at the head: flush held writes, then close modules and driver (an upper
    /// Stream of a multiplexor unlinks what it linked with I_LINK first: `mux.rs`). Afterwards
    /// every operation fails (poll reports POLLNVAL).
    ///
    /// A Stream linked under a multiplexor stays open (SVR4: the link holds the file): its
    /// modules and driver are closed when the link goes (`plex.rs`). The platform closes the
    /// Stream's gate only if [`Stream::is_closed`](crate::stream::Stream::is_closed) says the
    /// Stream closed.
    pub fn sth_close(&mut self) {
        self.sth_flush_hold();
        self.sth.closed = true;
        self.sth.ioc = IocSlot::Free;
        if self.sth.plex.is_some() {
            return;
        }
        self.sth_mux_close();
        self.sth_close_now();
    }

    /// Close modules and driver, and free what waits at the head: nobody reads it any more.
    pub(crate) fn sth_close_now(&mut self) {
        self.close();
        let h = self.head_rq();
        if let Some(s) = self.side_mut(h) {
            let f = s.q.flushq(crate::queue::FLUSHALL);
            let _ = f.event; // closed: nobody upstream waits on it
        }
    }

    /// Checks shared by the write-side operations (write, putmsg): closed, write error,
    /// hangup (EPIPE and SIGPIPE with SNDPIPE, else ENXIO).
    pub(crate) fn sth_write_ok(&mut self) -> Result<(), Stop> {
        if self.sth.closed {
            return Err(Errno::EBADF.into());
        }
        if let Some(e) = self.sth.werr() {
            return Err(e.into());
        }
        if self.sth.hangup {
            if self.sth.wropt & SNDPIPE != 0 {
                self.sth.ev.sigpipe = true;
                return Err(Errno::EPIPE.into());
            }
            return Err(Errno::ENXIO.into());
        }
        Ok(())
    }

    /// Packet sizes of the topmost module's write queue (the limits writes obey).
    pub(crate) fn sth_psz(&self) -> (usize, usize) {
        self.top_wq()
            .and_then(|q| self.queue(q))
            .map_or((0, crate::queue::INFPSZ), |q| (q.minpsz(), q.maxpsz()))
    }

    /// Can band `band` be written downstream of the head (bcanputnext on the head write
    /// queue; a refusal arms the back-enable that wakes the writer).
    pub fn sth_canput(&mut self, band: u8) -> bool {
        let h = self.head_wq();
        self.qctx(h).bcanputnext(band)
    }
}
