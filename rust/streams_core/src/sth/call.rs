//! The platform's half of each Stream head system call, written once for the kernel
//! (`rust/modules`) and the shared tests: what is copied in from user memory before the Stream
//! lock is taken, which head operation runs under the lock ([`HeadCall::run`], which sleeps
//! while it blocks), and what is copied out after the lock is dropped. So no user copy and no
//! sleeping allocation ever happens with a Stream lock held, and a user buffer whose page
//! fault blocks (FUSE, userfaultfd) stalls only its own system call.
//!
//! | call | before the lock | under the lock | after the lock |
//! | --- | --- | --- | --- |
//! | read | — | [`Stream::strread`] ([`HeadCall::run_read`]: perhaps straight from the inbound list, or leaving it there when the head's queue satisfies the read): take what is read, hold the reader token | copy out; on a fault put back from there ([`Stream::sth_untake`]); give the token back |
//! | write | the bytes, at most [`STRMSGSZ`] at a time: into the message itself (fast path), on the stack (up to [`STAGE_STACK`]) or a buffer | [`Stream::strwrite_prebuilt`] / [`Stream::strwrite`]; none for a write that joins the held message ([`HoldCell::join`]) or goes across without the lock ([`HeadCall::write_express`]) | — |
//! | putmsg | both parts (at most [`STRCTLSZ`] / [`STRMSGSZ`], else ERANGE), as messages | [`Stream::strputpmsg`]: check and send | — |
//! | I_FDINSERT | check the request; the control part with the token written in, the reference block to `fildes`'s queue, the data part, as messages | `Stream::sth_fdinsert`: check and send, as putmsg | — |
//! | getmsg | — | [`Stream::strgetpmsg`]: take, hold the token | copy both parts and the caller's lengths; on a fault put back |
//! | I_PEEK | — | `dupmsg` of the first message | copy the parts from the copy, free it |
//! | I_STR | the request (at most [`STRMSGSZ`] bytes, else EINVAL), as a message | M_IOCTL round trip | copy the M_IOCACK's data out |
//! | transparent | — | the M_IOCTL round trip, one step per M_COPYIN/M_COPYOUT | each copy between two steps |
//! | I_NREAD, I_LOOK, I_LIST, … | — | result into a kernel buffer | copy the buffer out |
//!
//! Allocations made here, before the lock, may sleep (`Msg::with_type_wait`,
//! `Msg::copied_in_wait`, `sys::vec_filled_wait`); the head's own allocations under the lock
//! never do. A buffer the user's bytes are copied into is not zeroed first when it is new
//! (`sys::vec_filled_wait`): only what the copy wrote is ever seen.

use core::cell::Cell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use super::consts::*;
use super::fdinsert::{fdinsert_token, FdInsert, FdInsertArgs, FdInsertShape, FDINSERT_TOKEN};
use super::hold::HoldCell;
use super::ioctl::{istr_timeout_ms, IocArg, PeekArgs, StrIoctl};
use super::msg::{peek_copy_out, GetMsg, Part};
use super::take::{ReaderToken, Taken};
use super::transp::{CopyDone, Transp, TranspIoctl, TranspStep};
use super::{Stop, Stream, UserIo, STRHOLDPSZ};
use crate::errno::Errno;
use crate::limits::limits;
use crate::msg::{Msg, FASTBUF, M_DATA};
use crate::stream::Registry;
use crate::sys;

/// Largest staging buffer kept on the stack (a write-hold write); larger ones are allocated
/// for the call. Writes of up to a fast buffer use a buffer of that size (each staging
/// buffer is zeroed only in its own branch, so a small write zeroes only its small one).
pub const STAGE_STACK: usize = 512;

/// What the platform provides to run Stream head operations (the kernel's `StrFile`, the
/// tests' `sth::tests::Direct`).
pub trait HeadCall {
    /// Run `op` on the Stream under its lock until it completes: while it returns
    /// [`Stop::Block`], sleep (interruptibly) and call it again, or fail with EAGAIN when
    /// `nonblock`. `limit_ms` bounds the whole wait (then ETIME); when a signal or the limit
    /// ends a wait, `cancel` runs under the lock first.
    fn run<R>(
        &self,
        nonblock: bool,
        limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno>;

    /// [`HeadCall::run`] for read(2) and getmsg: the platform enters the Stream for each try
    /// with `Perim::enter_read(ready)` instead of `Perim::enter`, so that ordinary data
    /// waiting on the inbound list may be read straight from there (`stream/direct.rs`), or
    /// left there when `ready` says the head's read queue alone satisfies `op` (the lazy
    /// take, `perim` step 7). `op` must be the head's read or getmsg. Default:
    /// [`HeadCall::run`].
    fn run_read<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Stream) -> bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        let _ = ready;
        self.run(nonblock, None, op, |_| {})
    }

    /// The head's state that system calls use without the lock.
    fn shared(&self) -> &HeadShared;

    /// Send `m`, a whole write's band-0 M_DATA message built before the lock, without the
    /// Stream lock if the platform can (the express write, `perim/express.rs`:
    /// `Perim::write_express`): `Ok(bytes)`, or `Err(m)` for the locked write. Default:
    /// always the locked write.
    fn write_express(&self, m: Msg) -> Result<usize, Msg> {
        Err(m)
    }

    /// Send a putmsg's band-0, not high-priority parts `ctl` and `data`, built before the
    /// lock, through the transmit path of the driver right below the head without the Stream
    /// lock if the platform can (the express send, `perim/express_send.rs`:
    /// `Perim::send_express`). Whether it was sent; if not, the parts are back in their
    /// slots for the locked putmsg. Default: never.
    fn send_express(&self, _ctl: &mut Option<Msg>, _data: &mut Option<Msg>) -> bool {
        false
    }
}

/// The part of a Stream head that its system calls use without the Stream lock: the reader
/// token (`take.rs`), the hint from which size writes may build their message before the
/// lock, and write hold's buffer (`hold.rs`). One per head, kept by the platform next to the
/// lock.
pub struct HeadShared {
    /// The head's reader token.
    pub reader: ReaderToken,
    /// The smallest write that may build its message before taking the lock
    /// ([`Stream::sth_prebuilt_min`], last seen under the lock; the head checks again there).
    prebuilt_min: AtomicUsize,
    /// Write hold's buffer, given to the head on the first write under the lock
    /// ([`Stream::sth_share_hold`]); `None` if it could not be allocated (writes then join
    /// the held message under the lock).
    hold: Option<sys::Arc<HoldCell>>,
}

impl Default for HeadShared {
    fn default() -> Self {
        HeadShared::new()
    }
}

impl HeadShared {
    /// A head with no take in progress; writes start on the fast path. Allocates the hold
    /// cell (a sleeping allocation: in process context, holding no lock).
    pub fn new() -> HeadShared {
        HeadShared {
            reader: ReaderToken::new(),
            prebuilt_min: AtomicUsize::new(1),
            hold: HoldCell::new().ok().and_then(|c| sys::new_arc(c).ok()),
        }
    }

    /// Join `data`, a whole write, to the held message without the Stream lock
    /// ([`HoldCell::join`]).
    #[inline]
    fn join_hold(&self, data: &[u8]) -> bool {
        data.len() <= STRHOLDPSZ && self.hold.as_ref().is_some_and(|c| c.join(data))
    }

    /// Join the `len` bytes of a whole write to the held message straight from `io`, without
    /// the Stream lock ([`HoldCell::join_user`]), when the hint says write hold may be on
    /// (other writes take no cell lock).
    #[inline]
    fn join_user<I: UserIo + ?Sized>(&self, io: &mut I, len: usize) -> bool {
        len <= STRHOLDPSZ
            && self.holds()
            && self.hold.as_ref().is_some_and(|c| c.join_user(io, len))
    }

    /// Give the head the hold cell (under its lock; once).
    fn share_hold(&self, s: &mut Stream) {
        if let Some(c) = &self.hold {
            s.sth_share_hold(c);
        }
    }

    fn prebuilt(&self, len: usize) -> bool {
        len >= self.prebuilt_min.load(Relaxed)
    }

    /// Whether write hold may be on (the hint: only then are small writes not built before
    /// the lock, [`Stream::sth_prebuilt_min`]).
    fn holds(&self) -> bool {
        self.prebuilt_min.load(Relaxed) > 1
    }

    /// Under the lock of a hold that may send a message across (a write built before the
    /// lock, a putmsg: the only ones after which the express write is armed): with write hold
    /// on, or the hint saying it may be, make the hint exact. So while the express write is
    /// armed the hint says whether write hold is on (every change of that is a later lock
    /// hold, which disarms it first), and a write that write hold would hold never goes
    /// across without the lock; nor does a stale hint keep writes off the express write
    /// after write hold was turned off.
    fn refresh_hold(&self, s: &Stream) {
        if s.sth().wropt() & SNDHOLD != 0 || self.holds() {
            self.set_prebuilt_min(s.sth_prebuilt_min());
        }
    }

    fn set_prebuilt_min(&self, n: usize) {
        self.prebuilt_min.store(n, Relaxed);
    }
}

/// A take was copied out: give the reader token back, waking readers that wait for it. The
/// give-back itself (one swap) is inline in each read and getmsg; only the wake is a call.
#[inline]
fn give_back<H: HeadCall>(h: &H) {
    if h.shared().reader.release() {
        wake_token_waiters(h);
    }
}

/// [`give_back`] found another reader waiting for the token: wake it under the Stream lock
/// (`sth/take.rs` has why the lock).
#[cold]
#[inline(never)]
fn wake_token_waiters<H: HeadCall>(h: &H) {
    let _ = h.run(
        true,
        None,
        |s| {
            s.sth_wake_readers();
            Ok(())
        },
        |_| {},
    );
}

/// A copy of take `t` faulted at message `from`: put it back from there.
fn untake<H: HeadCall>(h: &H, t: &mut Taken, from: usize) {
    let tok = &h.shared().reader;
    let _ = h.run(
        true,
        None,
        |s| {
            s.sth_untake(t, from, tok);
            Ok(())
        },
        |_| {},
    );
}

/// The result of a read's or getmsg's [`HeadCall::run_read`], with what its op took in `t`.
/// An error after a take (no op returns one today, nor does a platform after the op
/// succeeded, but nothing in their types forbids it) puts the take back and gives the reader
/// token back before it is returned: accepted data is never lost, and the token never stays
/// held.
fn keep_taken<H: HeadCall, R>(h: &H, t: &mut Taken, r: Result<R, Errno>) -> Result<R, Errno> {
    if r.is_err() && !t.is_empty() {
        untake(h, t, 0);
    }
    r
}

/// read(2) of up to `len` bytes into `io`.
pub fn read<H: HeadCall>(
    h: &H,
    io: &mut dyn UserIo,
    len: usize,
    nonblock: bool,
) -> Result<usize, Errno> {
    let tok = &h.shared().reader;
    let mut t = Taken::new();
    let n = h.run_read(
        nonblock,
        |s| tok.is_idle() && s.sth_read_ready(len),
        |s| s.strread(len, nonblock, tok, &mut t),
    );
    let n = keep_taken(h, &mut t, n)?;
    if t.is_empty() {
        return Ok(n);
    }
    match t.copy_out(io) {
        Ok(n) => {
            give_back(h);
            Ok(n) // `t` is freed here, without the lock
        }
        Err(f) => {
            untake(h, &mut t, f.at);
            if f.done > 0 {
                Ok(f.done)
            } else {
                Err(Errno::EFAULT)
            }
        }
    }
}

/// write(2) of `len` bytes from `io`: staged at most [`STRMSGSZ`] bytes at a time. Returns the
/// bytes written; after some were, an error (a fault, a signal, EAGAIN) ends the write with
/// that count instead. Generic over the platform's `io` only for the held write, whose copy
/// is a direct call; the rest takes it as `dyn`.
///
/// Inline, so that the held write is a short straight path in the platform's entry: a whole
/// small write joins the held message straight from user space (`hold.rs`), and everything
/// else (one whose copy would fault included) is one call to [`write_staged`].
#[inline]
pub fn write<H: HeadCall, I: UserIo>(
    h: &H,
    io: &mut I,
    len: usize,
    nonblock: bool,
) -> Result<usize, Errno> {
    if len != 0 && len <= crate::limits::strmsgsz() && h.shared().join_user(io, len) {
        return Ok(len);
    }
    write_staged(h, io, len, nonblock)
}

/// The rest of [`write`]: stage and send.
#[inline(never)]
fn write_staged<H: HeadCall>(
    h: &H,
    io: &mut dyn UserIo,
    len: usize,
    nonblock: bool,
) -> Result<usize, Errno> {
    if len == 0 {
        return h.run(nonblock, None, |s| s.strwrite(&[], 0, 0, nonblock), |_| {});
    }
    let mut done = 0usize;
    while done < len {
        let n = (len - done).min(crate::limits::strmsgsz());
        match write_chunk(h, io, done, n, len, nonblock) {
            Ok((k, more)) => {
                done += k;
                if !more || k == 0 {
                    break;
                }
            }
            Err(e) if done == 0 => return Err(e),
            Err(_) => break,
        }
    }
    if done == 0 {
        return Err(Errno::EFAULT);
    }
    Ok(done)
}

/// Copy the `n` bytes at `off` from `io` into the front of the staging buffer `buf`, not
/// zeroed first (as the heap buffer): what was copied (less on a fault).
#[inline]
fn stage<'b>(
    buf: &'b mut [MaybeUninit<u8>],
    io: &mut dyn UserIo,
    off: usize,
    n: usize,
) -> &'b [u8] {
    let room = buf.get_mut(..n).unwrap_or_default();
    sys::filled_in(room, |dst| io.copy_from_user_uninit(dst, off))
}

/// Stage and send bytes `off..off + n` of a write of `total`: the bytes sent, and whether the
/// write may go on (false after a fault).
fn write_chunk<H: HeadCall>(
    h: &H,
    io: &mut dyn UserIo,
    off: usize,
    n: usize,
    total: usize,
    nonblock: bool,
) -> Result<(usize, bool), Errno> {
    let sh = h.shared();
    if sh.prebuilt(n) {
        // Build the message before the lock (`fast.rs`).
        // Into the block's bytes as they are, or a new block not zeroed first: only what the
        // copy wrote is published.
        let m = Msg::copied_in_wait(M_DATA, n, io, off).map_err(|_| Errno::ENOSR)?;
        let got = m.blen();
        if got == 0 {
            return Err(Errno::EFAULT);
        }
        let whole = got == n;
        // A write too large for the stack but small enough to hold (`write.rs` STRHOLDPSZ),
        // when the hint says write hold may be on (other writes take no cell lock): a whole
        // one joins the held message from its message, which goes back to the cache.
        let holdable = n <= STRHOLDPSZ && sh.holds();
        if holdable && whole && off == 0 && n == total && sh.join_hold(m.rd()) {
            return Ok((n, true));
        }
        // Without the lock when the last write went across and nothing changed since; never
        // one write hold would hold (the express write may be armed with write hold on: the
        // hint is then exact, `HeadShared::refresh_hold`).
        let m = match whole && !holdable {
            true => match h.write_express(m) {
                Ok(sent) => return Ok((sent, true)),
                Err(m) => m,
            },
            false => m,
        };
        let mut slot = Some(m);
        let sent = h.run(
            nonblock,
            None,
            |s| {
                if whole && s.sth_prebuilt_ok(n) {
                    sh.refresh_hold(s);
                    return s.strwrite_prebuilt(&mut slot, nonblock);
                }
                sh.set_prebuilt_min(s.sth_prebuilt_min());
                sh.share_hold(s);
                let bytes = slot.as_ref().map_or(&[][..], Msg::rd);
                s.strwrite(bytes, off, total, nonblock)
            },
            |_| {},
        )?;
        return Ok((sent, whole));
    }
    // Stage the bytes: on the stack for a small (write-hold) write, else in a buffer.
    let mut small;
    let mut mid;
    let heap;
    let bytes: &[u8] = if n <= FASTBUF {
        small = [MaybeUninit::<u8>::uninit(); FASTBUF];
        stage(&mut small, io, off, n)
    } else if n <= STAGE_STACK {
        mid = [MaybeUninit::<u8>::uninit(); STAGE_STACK];
        stage(&mut mid, io, off, n)
    } else {
        // Not zeroed first: the buffer is as long as what the copy wrote.
        heap = sys::vec_filled_wait(n, |dst| io.copy_from_user_uninit(dst, off))
            .map_err(|_| Errno::ENOSR)?;
        heap.as_slice()
    };
    let got = bytes.len();
    if got == 0 {
        return Err(Errno::EFAULT);
    }
    // A whole small write joins the held message without the lock when it may (`hold.rs`).
    if off == 0 && got == total && sh.join_hold(bytes) {
        return Ok((got, true));
    }
    let sent = h.run(
        nonblock,
        None,
        |s| {
            sh.set_prebuilt_min(s.sth_prebuilt_min());
            sh.share_hold(s);
            s.strwrite(bytes, off, total, nonblock)
        },
        |_| {},
    )?;
    Ok((sent, got == n))
}

/// putmsg/putpmsg: copy both parts into messages before the lock (a sleeping allocation each),
/// then send them. ERANGE at once for a control part over [`STRCTLSZ`] or a data part over
/// [`STRMSGSZ`] (nothing is copied); the copy's error if a part faults (nothing is sent).
pub fn putmsg<H: HeadCall>(
    h: &H,
    ctl: Option<Part<'_>>,
    data: Option<Part<'_>>,
    band: i32,
    flags: i32,
    nonblock: bool,
) -> Result<(), Errno> {
    let cl = Part::size(&ctl);
    let dl = Part::size(&data);
    let lim = limits();
    if cl.is_some_and(|n| n > lim.strctlsz) || dl.is_some_and(|n| n > lim.strmsgsz) {
        return Err(Errno::ERANGE);
    }
    let mut c = match (ctl, cl) {
        (Some(p), Some(n)) => Some(copy_in_msg(p.io, n)?),
        _ => None,
    };
    let mut d = match (data, dl) {
        (Some(p), Some(n)) => Some(copy_in_msg(p.io, n)?),
        _ => None,
    };
    // A data part alone, band 0, no flags: the M_DATA message a write sends, without the lock
    // when the express write is armed (`perim/express.rs`; it is armed only when the head adds
    // nothing to it and would refuse no size: `HeadProcs::express_ok`).
    if c.is_none() && band == 0 && flags == 0 {
        if let Some(m) = d.take() {
            match h.write_express(m) {
                Ok(_) => return Ok(()),
                Err(m) => d = Some(m),
            }
        }
    }
    // A control part in band 0, not high priority: an M_PROTO request, which the driver right
    // below the head may send without the lock when the express send is armed
    // (`perim/express_send.rs`; armed only when the head would add nothing to it and refuse
    // no size: `HeadProcs::express_ok`). Declined, its parts are back for the locked putmsg.
    if c.is_some()
        && band == 0
        && (flags == 0 || flags == MSG_BAND)
        && h.send_express(&mut c, &mut d)
    {
        return Ok(());
    }
    let sh = h.shared();
    h.run(
        nonblock,
        None,
        |s| {
            sh.refresh_hold(s);
            s.strputpmsg(&mut c, &mut d, band, flags, nonblock)
        },
        |_| {},
    )
}

/// I_FDINSERT (`fdinsert.rs`) of `a` (`fildes` already resolved into `a.target`): check the
/// request, copy the control part into a message and write the token naming the target into
/// it, build the reference block and copy the data part, all before the lock; then send them
/// like putmsg. EINVAL/ERANGE for a bad request (nothing copied); ERANGE for a data part over
/// [`STRMSGSZ`]; the copy's error if a part faults and ENOSR without memory (nothing sent).
pub fn fdinsert<H: HeadCall>(
    h: &H,
    reg: &Registry,
    a: FdInsertArgs<'_>,
    nonblock: bool,
) -> Result<i32, Errno> {
    let shape = FdInsertShape::new(a.flags, a.ctl.len, a.offset)?;
    let dl = Part::size(&a.data);
    if dl.is_some_and(|n| n > limits().strmsgsz) {
        return Err(Errno::ERANGE);
    }
    let (n, off) = (shape.ctl_len, shape.offset);
    let mut ctl = Msg::with_type_wait(M_DATA, n).map_err(|_| Errno::ENOSR)?;
    let dst = ctl
        .spare_mut()
        .and_then(|s| s.get_mut(..n))
        .ok_or(Errno::ENOSR)?;
    a.ctl.io.copy_from_user(dst, 0)?;
    let word = dst
        .get_mut(off..off + FDINSERT_TOKEN)
        .ok_or(Errno::EINVAL)?;
    sys::copy_bytes(word, &fdinsert_token(a.target.as_ref()).to_ne_bytes());
    ctl.adj_wptr(n);
    let qref = match a.target {
        Some((q, name)) => {
            Some(Msg::with_qref_wait(shape.msg_type(), q, name).map_err(|_| Errno::ENOSR)?)
        }
        None => None,
    };
    let data = match (a.data, dl) {
        (Some(p), Some(n)) => Some(copy_in_msg(p.io, n)?),
        _ => None,
    };
    let mut req = FdInsert {
        ctl: Some(ctl),
        data,
        qref,
        hipri: shape.hipri,
        nonblock,
    };
    h.run(
        nonblock,
        None,
        |s| s.strioctl(reg, I_FDINSERT, IocArg::FdInsert(&mut req)),
        |_| {},
    ) // what was not sent (an error) is freed here, without the lock
}

/// A one-block message holding the `n` bytes at the start of `io`, built before the lock.
/// EFAULT if any of them cannot be copied (nothing is sent).
fn copy_in_msg(io: &mut dyn UserIo, n: usize) -> Result<Msg, Errno> {
    let m = Msg::copied_in_wait(M_DATA, n, io, 0).map_err(|_| Errno::ENOSR)?;
    if m.blen() < n {
        return Err(Errno::EFAULT); // the message is freed here
    }
    Ok(m)
}

/// The user buffer of a part that is processed (`len` or `maxlen` not negative).
fn part_io<'a, 'b: 'a>(p: &'a mut Option<Part<'b>>) -> Option<&'a mut dyn UserIo> {
    match p {
        Some(p) if p.len >= 0 => Some(&mut *p.io),
        _ => None,
    }
}

/// getmsg/getpmsg: take the message, copy its parts to `ctl`/`data`, then let `finish` write
/// the caller's lengths and flags; if any of those copies fails, the message goes back as it
/// was and the call fails.
pub fn getmsg<H: HeadCall>(
    h: &H,
    mut ctl: Option<Part<'_>>,
    mut data: Option<Part<'_>>,
    band: i32,
    flags: i32,
    nonblock: bool,
    finish: impl FnOnce(&GetMsg) -> Result<(), Errno>,
) -> Result<GetMsg, Errno> {
    let tok = &h.shared().reader;
    let (cmax, dmax) = (Part::size(&ctl), Part::size(&data));
    let mut t = Taken::new();
    let g = h.run_read(
        nonblock,
        |s| tok.is_idle() && s.sth_getmsg_ready(band, flags),
        |s| s.strgetpmsg(cmax, dmax, band, flags, nonblock, tok, &mut t),
    );
    let g = keep_taken(h, &mut t, g)?;
    let copied = match t.is_empty() {
        true => Ok(()),
        false => t.copy_parts(part_io(&mut ctl), part_io(&mut data)),
    };
    match copied.and_then(|()| finish(&g)) {
        Ok(()) => {
            if !t.is_empty() {
                give_back(h);
            }
            Ok(g)
        }
        Err(e) => {
            if !t.is_empty() {
                untake(h, &mut t, 0);
            }
            Err(e)
        }
    }
}

/// I_PEEK with the caller's `struct strpeek` parts and `flags`: copy what is seen to
/// `ctl`/`data`, then let `finish` write the lengths and flags back. Returns 1 if a message
/// was seen, else 0.
pub fn peek<H: HeadCall>(
    h: &H,
    reg: &Registry,
    mut ctl: Option<Part<'_>>,
    mut data: Option<Part<'_>>,
    flags: i32,
    finish: impl FnOnce(&GetMsg) -> Result<(), Errno>,
) -> Result<i32, Errno> {
    let mut pa = PeekArgs {
        ctl: Part::size(&ctl),
        data: Part::size(&data),
        flags,
        ..PeekArgs::default()
    };
    let r = h.run(
        false,
        None,
        |s| s.strioctl(reg, I_PEEK, IocArg::Peek(&mut pa)),
        |_| {},
    )?;
    if let (Some(g), Some(m)) = (&pa.got, &pa.msg) {
        peek_copy_out(m, g, part_io(&mut ctl), part_io(&mut data))?;
        finish(g)?;
    }
    Ok(r) // the dupmsg is freed here, without the lock
}

/// I_STR of command `cmd`, `ic_timout` `timeout` and `ic_len` `len`, `ic_dp` being `io` (the
/// request, then the answer). Returns the ioctl's value and the answer's length (the new
/// `ic_len`).
pub fn istr<H: HeadCall>(
    h: &H,
    reg: &Registry,
    cmd: i32,
    timeout: i32,
    len: i32,
    io: &mut dyn UserIo,
) -> Result<(i32, i32), Errno> {
    let limit = istr_timeout_ms(timeout)?;
    let n = usize::try_from(len)
        .ok()
        .filter(|n| *n <= limits().strmsgsz)
        .ok_or(Errno::EINVAL)?;
    let data = if n > 0 {
        Some(copy_in_msg(io, n)?)
    } else {
        None
    };
    let mut si = StrIoctl::new(cmd, timeout, len, data);
    let id: Cell<Option<u32>> = Cell::new(None);
    let r = h.run(
        false,
        limit,
        |s| {
            si.id = id.get();
            let r = s.strioctl(reg, I_STR, IocArg::Str(&mut si));
            id.set(si.id);
            r
        },
        |s| {
            if let Some(i) = id.get() {
                s.sth_ioctl_cancel(i)
            }
        },
    )?;
    si.copy_answer(io)?;
    Ok((r, si.len)) // the M_IOCACK is freed here, without the lock
}

/// A transparent ioctl `cmd` with raw argument `arg`; `mem` is the caller's address space
/// (offsets are user addresses) for the copies the module asks for.
pub fn transparent<H: HeadCall>(
    h: &H,
    cmd: u32,
    arg: u64,
    mem: &mut dyn UserIo,
) -> Result<i32, Errno> {
    let mut t = TranspIoctl::new(arg);
    let id: Cell<Option<u32>> = Cell::new(None);
    loop {
        let r = h.run(
            false,
            None,
            |s| {
                t.id = id.get();
                let r = s.strtransparent(cmd, &mut t);
                id.set(t.id);
                r
            },
            |s| {
                if let Some(i) = id.get() {
                    s.sth_ioctl_cancel(i)
                }
            },
        )?;
        match r {
            Transp::Done(v) => return Ok(v),
            Transp::Step(step) => t.done = Some(copy_step(&step, mem)),
        }
    }
}

/// Make the copy of a transparent ioctl's step, without the lock.
fn copy_step(step: &TranspStep, mem: &mut dyn UserIo) -> CopyDone {
    match step {
        TranspStep::CopyIn { addr, size } => {
            let Ok(addr) = usize::try_from(*addr) else {
                return CopyDone::Failed(Errno::EFAULT);
            };
            let Ok(mut m) = Msg::with_type_wait(M_DATA, *size) else {
                return CopyDone::Failed(Errno::ENOSR);
            };
            let copied = match m.spare_mut().and_then(|s| s.get_mut(..*size)) {
                Some(dst) => mem.copy_from_user(dst, addr),
                None => Err(Errno::ENOSR),
            };
            match copied {
                Ok(()) => {
                    m.adj_wptr(*size);
                    CopyDone::In(m)
                }
                Err(e) => CopyDone::Failed(e),
            }
        }
        TranspStep::CopyOut { .. } => match step.copy_out(mem) {
            Ok(()) => CopyDone::Out,
            Err(e) => CopyDone::Failed(e),
        },
    }
}

/// An I_* ioctl whose result the head writes into the kernel buffer `out` (I_NREAD, I_LOOK,
/// I_LIST, I_GETSIG, …): run `op` with it, then copy `n_out(value)` bytes of it to `io`.
pub fn ioctl_out<H: HeadCall>(
    h: &H,
    out: &mut [u8],
    io: &mut dyn UserIo,
    mut op: impl FnMut(&mut Stream, &mut [u8]) -> Result<i32, Stop>,
    n_out: impl FnOnce(i32) -> usize,
) -> Result<i32, Errno> {
    let r = h.run(false, None, |s| op(s, &mut *out), |_| {})?;
    let n = n_out(r).min(out.len());
    io.copy_to_user(0, out.get(..n).unwrap_or_default())?;
    Ok(r)
}
