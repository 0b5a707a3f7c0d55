//! Shared (host + KUnit) tests of the Stream head: the data path (write, read modes, putmsg,
//! getmsg, bands, flow control, faults) here; ioctls, head events and poll in `ctl.rs`. The
//! drivers are in `drivers.rs`; `sthloop` loops everything back to the head.

pub mod ctl;
pub mod drivers;
pub mod edge;
pub mod faults;
pub mod fdinsert;
pub mod fifo;
pub mod layout;
pub mod limits;
pub mod perim;
mod perimcall;
pub mod take;
pub mod transp;
pub mod waits;
pub mod wat;

use core::cell::RefCell;

use super::call::{HeadCall, HeadShared};
use super::consts::*;
use super::*;
use crate::errno::Errno;
use crate::ktest::{Failure, TestResult};
use crate::msg::{M_DATA, M_PCPROTO, M_PROTO};
use crate::queue::tests::FaultGuard;
use crate::sth::Stream;
use crate::stream::testmods::HOLD;
use crate::stream::{QueueId, Registry, StreamTab};
use crate::{check, check_eq, check_ok, check_some, ktest_suite};
use drivers::*;
pub use perimcall::PerimCall;

pub const BUF: usize = 256;

/// The shared tests' platform for the system calls of `call.rs`: a Stream the test owns, no
/// lock, no sleep. A blocking call that would sleep runs its cancel and fails with EINTR (as if
/// a signal ended the wait at once); a non-blocking one gets EAGAIN. [`Direct::with`] acts on
/// the Stream between two steps of a call, as another thread would while the caller copies
/// without the lock.
///
/// The Stream is in a `RefCell`, borrowed only through `try_borrow_mut`: a re-entered hold (a
/// harness bug) fails the case instead of panicking. `borrow_mut` would call
/// `core::cell::panic_already_borrowed`, a `-> !` function that objtool (6.12) does not know
/// as noreturn; where such a call ends a function (KCSAN's inlining) objtool warns the
/// function "falls through to next function" (docs/stress.md, KCSAN).
pub struct Direct<'a> {
    s: RefCell<&'a mut Stream>,
    shared: HeadShared,
    /// Operations run (lock holds of the kernel platform).
    pub runs: core::cell::Cell<usize>,
}

impl<'a> Direct<'a> {
    /// The platform over `s`, with a fresh reader token.
    pub fn new(s: &'a mut Stream) -> Direct<'a> {
        Direct {
            s: RefCell::new(s),
            shared: HeadShared::new(),
            runs: core::cell::Cell::new(0),
        }
    }

    /// Run `f` on the Stream now (outside any call's lock hold); `None` inside one (the
    /// Stream is borrowed by the running operation).
    pub fn with<R>(&self, f: impl FnOnce(&mut Stream) -> R) -> Option<R> {
        let mut g = self.s.try_borrow_mut().ok()?;
        Some(f(&mut g))
    }
}

/// One step of a system call on a test platform that never sleeps (`HeadCall::run` of
/// [`Direct`] and of the host harnesses over a `TestPerim`): what `op` says, except that a
/// step that would sleep fails with EAGAIN when non-blocking, else runs `cancel` and fails
/// with EINTR (as if a signal ended the wait at once).
#[inline(always)] // the host cost harnesses count the calls: no step of their own
pub fn never_sleeps<R>(
    s: &mut Stream,
    nonblock: bool,
    op: impl FnOnce(&mut Stream) -> Result<R, Stop>,
    cancel: impl FnOnce(&mut Stream),
) -> Result<R, Errno> {
    match op(s) {
        Ok(v) => Ok(v),
        Err(Stop::Err(e)) => Err(e),
        Err(Stop::Block(_)) if nonblock => Err(Errno::EAGAIN),
        Err(Stop::Block(_)) => {
            cancel(s);
            Err(Errno::EINTR)
        }
    }
}

impl HeadCall for Direct<'_> {
    fn run<R>(
        &self,
        nonblock: bool,
        _limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.runs.set(self.runs.get() + 1);
        // A run inside a run (the kernel platform would deadlock on the Stream's lock).
        let Ok(mut g) = self.s.try_borrow_mut() else {
            return Err(Errno::EBUSY);
        };
        never_sleeps(&mut g, nonblock, op, cancel)
    }

    fn shared(&self) -> &HeadShared {
        &self.shared
    }
}

/// A user buffer that faults from byte `at` on (the first `at` bytes are `SliceIo`).
pub struct FaultAt<'a> {
    pub buf: &'a mut [u8],
    pub at: usize,
}

impl UserIo for FaultAt<'_> {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        let end = off.checked_add(dst.len()).ok_or(Errno::EFAULT)?;
        if end > self.at {
            return Err(Errno::EFAULT);
        }
        SliceIo(self.buf).copy_from_user(dst, off)
    }
    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno> {
        let end = off.checked_add(src.len()).ok_or(Errno::EFAULT)?;
        if end > self.at {
            return Err(Errno::EFAULT);
        }
        SliceIo(self.buf).copy_to_user(off, src)
    }
    fn copy_from_user_partial(&mut self, dst: &mut [u8], off: usize) -> usize {
        let lim = self.buf.len().min(self.at);
        let src = self.buf.get(off..lim).unwrap_or_default();
        crate::sys::copy_bytes(dst, src)
    }
    fn copy_from_user_uninit(&mut self, dst: &mut crate::sys::UninitBuf<'_>, off: usize) {
        let lim = self.buf.len().min(self.at);
        dst.append(self.buf.get(off..lim).unwrap_or_default());
    }
}

fn stop(e: Errno) -> Stop {
    Stop::Err(e)
}

/// A module registry with the test modules `pass` and `nosrv` (for I_PUSH, I_FIND).
pub fn reg() -> Result<Registry, Failure> {
    let mut r = Registry::new();
    check_ok!(r.register_module(&crate::stream::testmods::PASS));
    check_ok!(r.register_module(&crate::stream::testmods::NOSRV));
    Ok(r)
}

pub fn open(drv: &'static StreamTab) -> Result<Stream, Failure> {
    Ok(check_ok!(Stream::sth_new(drv)))
}

/// write(2) of `data`, non-blocking, through the platform's half (`call.rs`).
pub fn wr(s: &mut Stream, data: &[u8]) -> Result<usize, Stop> {
    let mut b = [0u8; BUF];
    let n = data.len().min(BUF);
    if let (Some(d), Some(src)) = (b.get_mut(..n), data.get(..n)) {
        d.copy_from_slice(src);
    }
    let io = &mut SliceIo(b.get_mut(..n).unwrap_or_default());
    call::write(&Direct::new(s), io, n, true).map_err(stop)
}

/// Bytes a read or getmsg brought back.
pub struct Got {
    pub buf: [u8; BUF],
    pub n: usize,
}
impl Got {
    pub fn bytes(&self) -> &[u8] {
        self.buf.get(..self.n).unwrap_or_default()
    }
}

/// read(2) of up to `len` bytes, non-blocking, through the platform's half (`call.rs`).
pub fn rd(s: &mut Stream, len: usize) -> Result<Got, Stop> {
    let mut g = Got {
        buf: [0; BUF],
        n: 0,
    };
    let l = len.min(BUF);
    let io = &mut SliceIo(g.buf.get_mut(..l).unwrap_or_default());
    g.n = call::read(&Direct::new(s), io, l, true).map_err(stop)?;
    Ok(g)
}

/// putpmsg with optional control and data parts, non-blocking.
pub fn put(
    s: &mut Stream,
    ctl: Option<&[u8]>,
    data: Option<&[u8]>,
    band: i32,
    flags: i32,
) -> Result<(), Stop> {
    let (mut cb, mut db) = ([0u8; BUF], [0u8; BUF]);
    let part = |src: Option<&[u8]>, b: &mut [u8; BUF]| -> (usize, i32) {
        let Some(src) = src else { return (0, -1) };
        let n = src.len().min(BUF);
        if let (Some(d), Some(x)) = (b.get_mut(..n), src.get(..n)) {
            d.copy_from_slice(x);
        }
        (n, n as i32)
    };
    let (cn, cl) = part(ctl, &mut cb);
    let (dn, dl) = part(data, &mut db);
    let mut cio = SliceIo(cb.get_mut(..cn).unwrap_or_default());
    let mut dio = SliceIo(db.get_mut(..dn).unwrap_or_default());
    let c = ctl.map(|_| Part {
        io: &mut cio,
        len: cl,
    });
    let d = data.map(|_| Part {
        io: &mut dio,
        len: dl,
    });
    call::putmsg(&Direct::new(s), c, d, band, flags, true).map_err(stop)
}

/// getpmsg with control and data `maxlen`s (negative: part not processed), non-blocking.
pub fn get(
    s: &mut Stream,
    cmax: i32,
    dmax: i32,
    band: i32,
    flags: i32,
) -> Result<(GetMsg, Got, Got), Stop> {
    let mut c = Got {
        buf: [0; BUF],
        n: 0,
    };
    let mut d = Got {
        buf: [0; BUF],
        n: 0,
    };
    let r = {
        let mut cio = SliceIo(&mut c.buf);
        let mut dio = SliceIo(&mut d.buf);
        let cp = Part {
            io: &mut cio,
            len: cmax,
        };
        let dp = Part {
            io: &mut dio,
            len: dmax,
        };
        let h = Direct::new(s);
        call::getmsg(&h, Some(cp), Some(dp), band, flags, true, |_| Ok(())).map_err(stop)?
    };
    c.n = usize::try_from(r.ctl_len).unwrap_or(0);
    d.n = usize::try_from(r.data_len).unwrap_or(0);
    Ok((r, c, d))
}

pub fn nread(s: &mut Stream) -> Result<(i32, i32), Failure> {
    let mut b = [0u8; 4];
    let r = check_ok!(s.strioctl(&Registry::new(), I_NREAD, IocArg::Out(&mut b)));
    Ok((r, i32::from_ne_bytes(b)))
}

pub fn dwq(s: &Stream) -> Result<QueueId, Failure> {
    Ok(check_some!(s.driver_wq()))
}

fn srdopt(s: &mut Stream, v: u32) -> TestResult {
    check_ok!(s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(v))));
    Ok(())
}

fn write_then_read_roundtrip() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(wr(&mut s, b"hello"), Ok(5));
    let g = check_ok!(rd(&mut s, 16));
    check_eq!(g.bytes(), b"hello");
    check_eq!(rd(&mut s, 16).err(), Some(Stop::Err(Errno::EAGAIN)));
    Ok(())
}

fn rnorm_reads_across_messages() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(wr(&mut s, b"abc"), Ok(3));
    check_eq!(wr(&mut s, b"def"), Ok(3));
    check_eq!(check_ok!(rd(&mut s, 4)).bytes(), b"abcd");
    check_eq!(nread(&mut s)?, (1, 2));
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"ef");
    Ok(())
}

fn rmsgd_discards_rest_of_message() -> TestResult {
    let mut s = open(&STHLOOP)?;
    srdopt(&mut s, RMSGD)?;
    check_ok!(wr(&mut s, b"abcdef"));
    check_ok!(wr(&mut s, b"gh"));
    check_eq!(check_ok!(rd(&mut s, 2)).bytes(), b"ab");
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"gh");
    Ok(())
}

fn rmsgn_keeps_rest_of_message() -> TestResult {
    let mut s = open(&STHLOOP)?;
    srdopt(&mut s, RMSGN)?;
    check_ok!(wr(&mut s, b"abcdef"));
    check_ok!(wr(&mut s, b"gh"));
    check_eq!(check_ok!(rd(&mut s, 2)).bytes(), b"ab");
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"cdef");
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"gh");
    Ok(())
}

fn zero_length_message_ends_read() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(&Registry::new(), I_SWROPT, IocArg::Int(i64::from(SNDZERO))));
    check_ok!(wr(&mut s, b"ab"));
    check_eq!(wr(&mut s, b""), Ok(0));
    check_ok!(wr(&mut s, b"cd"));
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"ab");
    check_eq!(check_ok!(rd(&mut s, 10)).n, 0);
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"cd");
    Ok(())
}

fn zero_length_write_without_sndzero_sends_nothing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(wr(&mut s, b""), Ok(0));
    check_eq!(nread(&mut s)?, (0, 0));
    Ok(())
}

fn empty_read_blocks_or_eagain() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(
        s.strread(4, false, &tok, &mut t),
        Err(Stop::Block(Block::Readable))
    );
    check_eq!(
        s.strread(4, true, &tok, &mut t),
        Err(Stop::Err(Errno::EAGAIN))
    );
    check!(t.is_empty() && !tok.is_held());
    Ok(())
}

fn rprotnorm_read_fails_ebadmsg() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"C"), Some(b"D"), 0, 0));
    check_eq!(rd(&mut s, 8).err(), Some(Stop::Err(Errno::EBADMSG)));
    let (g, c, d) = check_ok!(get(&mut s, 8, 8, 0, MSG_ANY));
    check_eq!((c.bytes(), d.bytes(), g.more), (&b"C"[..], &b"D"[..], 0));
    Ok(())
}

fn rprotdat_delivers_control_as_data() -> TestResult {
    let mut s = open(&STHLOOP)?;
    srdopt(&mut s, RNORM | RPROTDAT)?;
    check_ok!(put(&mut s, Some(b"CC"), Some(b"DD"), 0, 0));
    check_eq!(check_ok!(rd(&mut s, 3)).bytes(), b"CCD");
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"D");
    Ok(())
}

fn rprotdis_discards_control() -> TestResult {
    let mut s = open(&STHLOOP)?;
    srdopt(&mut s, RPROTDIS)?;
    check_ok!(put(&mut s, Some(b"CC"), Some(b"DD"), 0, 0));
    check_ok!(put(&mut s, Some(b"only"), None, 0, 0));
    check_ok!(wr(&mut s, b"x"));
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"DD");
    // The control-only message is discarded, not taken for a zero-length message.
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"x");
    Ok(())
}

fn putmsg_getmsg_roundtrip() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"ctl!"), Some(b"data"), 0, 0));
    let (g, c, d) = check_ok!(get(&mut s, 16, 16, 0, 0));
    check_eq!(
        (g.ctl_len, g.data_len, g.more, g.flags),
        (4, 4, 0, MSG_BAND)
    );
    check_eq!(c.bytes(), b"ctl!");
    check_eq!(d.bytes(), b"data");
    check_eq!(nread(&mut s)?, (0, 0));
    Ok(())
}

fn getmsg_partial_morectl_moredata() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"cccccc"), Some(b"dddddd"), 0, 0));
    let (g, c, d) = check_ok!(get(&mut s, 2, 3, 0, 0));
    check_eq!(g.more, MORECTL | MOREDATA);
    check_eq!((c.bytes(), d.bytes()), (&b"cc"[..], &b"ddd"[..]));
    let (g, c, d) = check_ok!(get(&mut s, 16, 16, 0, 0));
    check_eq!((g.more, g.ctl_len, g.data_len), (0, 4, 3));
    check_eq!((c.bytes(), d.bytes()), (&b"cccc"[..], &b"ddd"[..]));
    Ok(())
}

fn getmsg_unprocessed_control_stays() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"ctl"), Some(b"dat"), 0, 0));
    let (g, _, d) = check_ok!(get(&mut s, -1, 16, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (-1, 3, MORECTL));
    check_eq!(d.bytes(), b"dat");
    let (g, c, _) = check_ok!(get(&mut s, 16, 16, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (3, -1, 0));
    check_eq!(c.bytes(), b"ctl");
    Ok(())
}

fn getmsg_data_only_has_no_control() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"xy"));
    let (g, _, d) = check_ok!(get(&mut s, 16, 16, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (-1, 2, 0));
    check_eq!(d.bytes(), b"xy");
    Ok(())
}

fn putmsg_flag_and_band_validation() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let inval = Some(Stop::Err(Errno::EINVAL));
    check_eq!(put(&mut s, None, Some(b"d"), 0, MSG_HIPRI).err(), inval);
    check_eq!(put(&mut s, Some(b"c"), None, 1, MSG_HIPRI).err(), inval);
    check_eq!(put(&mut s, Some(b"c"), None, 256, MSG_BAND).err(), inval);
    check_eq!(put(&mut s, Some(b"c"), None, 0, 8).err(), inval);
    check_eq!(put(&mut s, None, None, 0, 0), Ok(()));
    check_eq!(nread(&mut s)?, (0, 0));
    check_eq!(get(&mut s, 1, 1, 0, 9).err(), inval);
    check_eq!(get(&mut s, 1, 1, 3, MSG_HIPRI).err(), inval);
    Ok(())
}

fn getpmsg_order_hipri_bands_normal() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, None, Some(b"n"), 0, MSG_BAND));
    check_ok!(put(&mut s, None, Some(b"b"), 5, MSG_BAND));
    check_ok!(put(&mut s, Some(b"h"), None, 0, MSG_HIPRI));
    let (g, c, _) = check_ok!(get(&mut s, 8, 8, 0, MSG_ANY));
    check_eq!((g.flags, c.bytes()), (MSG_HIPRI, &b"h"[..]));
    let (g, _, d) = check_ok!(get(&mut s, 8, 8, 0, MSG_ANY));
    check_eq!((g.flags, g.band, d.bytes()), (MSG_BAND, 5, &b"b"[..]));
    let (g, _, d) = check_ok!(get(&mut s, 8, 8, 0, MSG_ANY));
    check_eq!((g.band, d.bytes()), (0, &b"n"[..]));
    Ok(())
}

fn getpmsg_band_and_hipri_filters() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, None, Some(b"x"), 1, MSG_BAND));
    check_eq!(
        get(&mut s, 8, 8, 2, MSG_BAND).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    check_eq!(
        get(&mut s, 8, 8, 0, MSG_HIPRI).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    let (g, _, d) = check_ok!(get(&mut s, 8, 8, 1, MSG_BAND));
    check_eq!((g.band, d.bytes()), (1, &b"x"[..]));
    Ok(())
}

fn only_one_pcproto_waits_at_head() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"h1"), None, 0, MSG_HIPRI));
    check_ok!(put(&mut s, Some(b"h2"), None, 0, MSG_HIPRI));
    check_eq!(nread(&mut s)?.0, 1);
    let (_, c, _) = check_ok!(get(&mut s, 8, 8, 0, MSG_HIPRI));
    check_eq!(c.bytes(), b"h1");
    Ok(())
}

fn flow_control_blocks_writer_until_backenable() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(wr(&mut s, b"0123456789"), Ok(10));
    check_eq!(
        s.strwrite(b"more", 0, 4, false),
        Err(Stop::Block(Block::Writable(0)))
    );
    check_eq!(wr(&mut s, b"more").err(), Some(Stop::Err(Errno::EAGAIN)));
    let _ = s.sth_take_events();
    let d = dwq(&s)?;
    check!(s.qctx(d).getq().is_some());
    let ev = s.sth_take_events();
    check!(ev.wake & WAKE_WRITE != 0);
    check!(ev.sigpoll & S_OUTPUT != 0);
    check_eq!(wr(&mut s, b"more"), Ok(4));
    Ok(())
}

fn band_flow_control_blocks_putpmsg() -> TestResult {
    let mut s = open(&HOLD)?;
    check_ok!(put(&mut s, None, Some(b"0123456789"), 1, MSG_BAND));
    check_eq!(
        put(&mut s, None, Some(b"x"), 1, MSG_BAND).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    // Band 0 and high priority are not held up by band 1.
    check_ok!(put(&mut s, None, Some(b"y"), 0, 0));
    check_ok!(put(&mut s, Some(b"h"), None, 0, MSG_HIPRI));
    let q = check_some!(s.queue(dwq(&s)?));
    check_eq!((q.band_len(1), q.band_len(0), q.hipri_len()), (1, 1, 1));
    Ok(())
}

/// putmsg's parts arrive as messages built before the lock; while flow controlled they stay
/// with the caller for the retry, then go down as one message.
fn putmsg_parts_kept_while_flow_controlled() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(wr(&mut s, b"0123456789"), Ok(10));
    let mut c = Some(check_ok!(crate::msg::Msg::from_bytes(M_DATA, b"ctl")));
    let mut d = Some(check_ok!(crate::msg::Msg::from_bytes(M_DATA, b"data")));
    check_eq!(
        s.strputpmsg(&mut c, &mut d, 0, 0, false),
        Err(Stop::Block(Block::Writable(0)))
    );
    check!(c.is_some() && d.is_some());
    let dq = dwq(&s)?;
    check!(s.qctx(dq).getq().is_some());
    check_eq!(s.strputpmsg(&mut c, &mut d, 0, 0, false), Ok(()));
    check!(c.is_none() && d.is_none());
    let m = check_some!(check_some!(s.queue(dq)).first());
    check_eq!((m.db_type(), m.rd()), (M_PROTO, &b"ctl"[..]));
    check_eq!(check_some!(m.cont()).rd(), b"data");
    Ok(())
}

fn efault_write_sends_nothing() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(
        call::write(&Direct::new(&mut s), &mut FailIo, 5, true),
        Err(Errno::EFAULT)
    );
    let c = Some(Part {
        io: &mut FailIo,
        len: 2,
    });
    check_eq!(
        call::putmsg(&Direct::new(&mut s), c, None, 0, 0, true),
        Err(Errno::EFAULT)
    );
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    Ok(())
}

fn efault_read_and_getmsg_lose_nothing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"abc"));
    check_eq!(
        call::read(&Direct::new(&mut s), &mut FailIo, 3, true),
        Err(Errno::EFAULT)
    );
    let d = Some(Part {
        io: &mut FailIo,
        len: 3,
    });
    check_eq!(
        call::getmsg(&Direct::new(&mut s), None, d, 0, 0, true, |_| Ok(())).err(),
        Some(Errno::EFAULT)
    );
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"abc");
    Ok(())
}

fn write_splits_at_maxpsz() -> TestResult {
    let mut s = open(&PSZ4)?;
    check_eq!(wr(&mut s, b"0123456789"), Ok(10));
    check_eq!(nread(&mut s)?, (3, 4));
    srdopt(&mut s, RMSGD)?;
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"0123");
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"4567");
    check_eq!(check_ok!(rd(&mut s, 10)).bytes(), b"89");
    Ok(())
}

fn erange_outside_packet_sizes() -> TestResult {
    let mut s = open(&PSZMIN)?;
    let erange = Some(Stop::Err(Errno::ERANGE));
    check_eq!(wr(&mut s, b"a").err(), erange);
    check_eq!(wr(&mut s, b"012345678").err(), erange);
    check_eq!(wr(&mut s, b"01234"), Ok(5));
    check_eq!(put(&mut s, None, Some(b"a"), 0, 0).err(), erange);
    let mut p = open(&PSZ4)?;
    check_eq!(put(&mut p, None, Some(b"01234"), 0, 0).err(), erange);
    check_ok!(put(&mut p, None, Some(b"0123"), 0, 0));
    Ok(())
}

fn enosr_on_allocation_failure_sends_nothing() -> TestResult {
    let mut s = open(&HOLD)?;
    {
        let _g = FaultGuard::fail_after(0);
        check_eq!(wr(&mut s, b"abc").err(), Some(Stop::Err(Errno::ENOSR)));
        check_eq!(
            put(&mut s, Some(b"c"), Some(b"d"), 0, 0).err(),
            Some(Stop::Err(Errno::ENOSR))
        );
    }
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    check_eq!(wr(&mut s, b"abc"), Ok(3));
    Ok(())
}

fn write_hold_coalesces_small_writes() -> TestResult {
    let mut s = open(&HOLD)?;
    check_ok!(s.strioctl(&Registry::new(), I_SWROPT, IocArg::Int(i64::from(SNDHOLD))));
    let _ = s.sth_take_events();
    check_eq!(wr(&mut s, b"ab"), Ok(2));
    check_eq!(wr(&mut s, b"cd"), Ok(2));
    check!(s.sth_take_events().hold_timer);
    check_eq!(s.sth().held(), 4);
    check_eq!(s.queue(dwq(&s)?).map(|q| q.qsize()), Some(0));
    check_eq!(s.sth_flush_hold(), 4);
    let q = check_some!(s.queue(dwq(&s)?));
    check_eq!(q.qsize(), 1);
    check_eq!(check_some!(q.first()).rd(), b"abcd");
    Ok(())
}

fn read_fill_waits_for_full_buffer() -> TestResult {
    let mut s = open(&STHLOOP)?;
    srdopt(&mut s, RNORM | RFILL)?;
    check_ok!(wr(&mut s, b"ab"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(
        s.strread(4, false, &tok, &mut t),
        Err(Stop::Block(Block::Readable))
    );
    check_eq!(nread(&mut s)?, (1, 2));
    check_ok!(wr(&mut s, b"cd"));
    check_eq!(s.strread(4, false, &tok, &mut t), Ok(4));
    let mut b = [0u8; 4];
    check_eq!(t.copy_out(&mut SliceIo(&mut b)), Ok(4));
    let _ = tok.release();
    check_eq!(&b, b"abcd");
    Ok(())
}

/// A blocking read-fill read longer than flow control lets queue: once the head's read queue
/// is full its writers wait for this read, so the read takes what is there instead of
/// waiting for bytes that cannot come (both would wait for ever).
fn read_fill_takes_a_full_queue() -> TestResult {
    let mut s = open(&STHLOOP)?;
    srdopt(&mut s, RNORM | RFILL)?;
    let h = s.head_rq();
    let full = |s: &Stream| {
        s.queue(h)
            .is_some_and(|q| q.flags().contains(crate::queue::QFlags::QFULL))
    };
    let mut sent = 0;
    while !full(&s) && sent < 1 << 20 {
        match wr(&mut s, &[7u8; 64]) {
            Ok(n) => sent += n,
            Err(_) => break,
        }
    }
    check!(full(&s));
    let (msgs, bytes) = nread(&mut s)?;
    check!(msgs > 0 && bytes > 0 && bytes as usize <= sent);
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    let n = check_ok!(s.strread(sent + 4096, false, &tok, &mut t));
    check!(n > 0 && n <= sent);
    let _ = tok.release();
    check!(!full(&s));
    Ok(())
}

fn wroff_reserves_headroom() -> TestResult {
    let mut s = open(&HOLD)?;
    let o = StrOptions {
        so_flags: SO_WROFF,
        so_wroff: 16,
        ..StrOptions::default()
    };
    let rq = check_some!(s.driver_rq());
    s.put(rq, check_ok!(o.to_msg()));
    check_eq!(s.sth().wroff(), 16);
    check_ok!(wr(&mut s, b"xyz"));
    check_ok!(put(&mut s, Some(b"c"), Some(b"d"), 0, 0));
    let q = check_some!(s.queue(dwq(&s)?));
    let m = check_some!(q.first());
    check_eq!((m.headroom(), m.rd()), (16, &b"xyz"[..]));
    let p = check_some!(q.peek(1));
    check_eq!((p.db_type(), p.rd()), (M_PROTO, &b"c"[..]));
    check_eq!(check_some!(p.cont()).db_type(), M_DATA);
    Ok(())
}

fn sigpoll_events_on_arrival() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let _ = s.sth_take_events();
    check_ok!(wr(&mut s, b"a"));
    let ev = s.sth_take_events();
    check_eq!(ev.sigpoll & (S_INPUT | S_RDNORM), S_INPUT | S_RDNORM);
    check!(ev.wake & WAKE_READ != 0);
    check_ok!(put(&mut s, None, Some(b"b"), 3, MSG_BAND));
    check!(s.sth_take_events().sigpoll & S_RDBAND != 0);
    check_ok!(put(&mut s, Some(b"h"), None, 0, MSG_HIPRI));
    check!(s.sth_take_events().sigpoll & S_HIPRI != 0);
    check_eq!(s.sth_take_events(), HeadEvents::default());
    Ok(())
}

fn placeholder_head_still_queues_everything() -> TestResult {
    let mut s = check_ok!(crate::stream::Stream::new(&STHLOOP));
    s.write(check_ok!(crate::msg::Msg::from_bytes(M_PCPROTO, b"a")));
    s.write(check_ok!(crate::msg::Msg::from_bytes(M_PCPROTO, b"b")));
    check_eq!(s.queue(s.head_rq()).map(|q| q.qsize()), Some(2));
    Ok(())
}

ktest_suite!(STH_SUITE, "streams_sth":
    write_then_read_roundtrip,
    rnorm_reads_across_messages,
    rmsgd_discards_rest_of_message,
    rmsgn_keeps_rest_of_message,
    zero_length_message_ends_read,
    zero_length_write_without_sndzero_sends_nothing,
    empty_read_blocks_or_eagain,
    rprotnorm_read_fails_ebadmsg,
    rprotdat_delivers_control_as_data,
    rprotdis_discards_control,
    putmsg_getmsg_roundtrip,
    getmsg_partial_morectl_moredata,
    getmsg_unprocessed_control_stays,
    getmsg_data_only_has_no_control,
    putmsg_flag_and_band_validation,
    getpmsg_order_hipri_bands_normal,
    getpmsg_band_and_hipri_filters,
    only_one_pcproto_waits_at_head,
    flow_control_blocks_writer_until_backenable,
    band_flow_control_blocks_putpmsg,
    putmsg_parts_kept_while_flow_controlled,
    efault_write_sends_nothing,
    efault_read_and_getmsg_lose_nothing,
    write_splits_at_maxpsz,
    erange_outside_packet_sizes,
    enosr_on_allocation_failure_sends_nothing,
    write_hold_coalesces_small_writes,
    read_fill_waits_for_full_buffer,
    read_fill_takes_a_full_queue,
    wroff_reserves_headroom,
    sigpoll_events_on_arrival,
    placeholder_head_still_queues_everything,
);
