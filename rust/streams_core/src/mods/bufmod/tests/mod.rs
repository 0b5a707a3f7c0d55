//! Shared (host + KUnit) tests of bufmod: chunking, truncation, headers and alignment,
//! flushes, every ioctl (get, set, NAK on bad values), pass-through of the write side and of
//! non-data messages, flow control (drops and SB_NO_DROPS), the lazy timeout with a test
//! clock; the ioctls and bufmod on a STREAMS pipe end are in `ioctl.rs`.
//!
//! Most cases push bufmod over the `hold` test driver: what goes down is kept on the driver's
//! write queue (so pass-through is visible) and read-side traffic is injected with `putnext`
//! from the driver's read queue, as a driver's interrupt routine would.

use super::*;
use crate::ktest::{Failure, TestResult};
use crate::msg::{MsgType, M_CTL, M_IOCACK, M_IOCNAK, M_PCPROTO, M_SETOPTS};
use crate::queue::tests::FaultGuard;
use crate::sth::consts::FLUSHW;
use crate::sth::IocBlk;
use crate::stream::testmods::HOLD;
/// The Streams of these tests: a head that queues whatever arrives.
type Stream = crate::stream::Stream<crate::stream::RawHead>;
use crate::{check, check_eq, check_ok, check_some, ktest_suite};
use core::sync::atomic::{AtomicU64, Ordering};

pub mod ioctl;

/// Per-case test clocks (cases run in parallel on the host: one clock each).
static CLOCKS: [AtomicU64; 3] = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];

fn clk<const K: usize>() -> u64 {
    CLOCKS.get(K).map_or(0, |c| c.load(Ordering::Relaxed))
}

fn set_clk<const K: usize>(ns: u64) {
    if let Some(c) = CLOCKS.get(K) {
        c.store(ns, Ordering::Relaxed);
    }
}

fn open_clk<const K: usize>(
    cx: &mut QCtx<'_>,
    _: &OpenArgs,
) -> Result<Box<dyn StreamModule>, Errno> {
    open_with_clock(cx, clk::<K>)
}

static BUFMOD_CLK0: StreamTab = StreamTab {
    info: BUFMOD_INFO,
    open: open_clk::<0>,
};
static BUFMOD_CLK1: StreamTab = StreamTab {
    info: BUFMOD_INFO,
    open: open_clk::<1>,
};
static BUFMOD_CLK2: StreamTab = StreamTab {
    info: BUFMOD_INFO,
    open: open_clk::<2>,
};

/// `hold` driver with `tab` pushed; the M_SETOPTS bufmod sends at open is consumed.
fn open_tab(tab: &'static StreamTab) -> Result<Stream, Failure> {
    let mut s = check_ok!(Stream::new(&HOLD));
    check_ok!(s.push_tab(tab, &OpenArgs::module()));
    let m = check_some!(s.read());
    check_eq!(m.db_type(), M_SETOPTS);
    Ok(s)
}

pub(super) fn open() -> Result<Stream, Failure> {
    open_tab(&BUFMOD)
}

/// A message of type `ty` coming up from the driver.
pub(super) fn up(s: &mut Stream, ty: MsgType, data: &[u8]) -> TestResult {
    let m = check_ok!(Msg::from_bytes(ty, data));
    let rq = check_some!(s.driver_rq());
    s.qctx(rq).putnext(m);
    Ok(())
}

pub(super) fn data(s: &mut Stream, d: &[u8]) -> TestResult {
    up(s, M_DATA, d)
}

/// The bytes of a whole message (all blocks), up to 512.
pub(super) struct Bytes {
    pub(super) buf: [u8; 512],
    pub(super) n: usize,
}
impl Bytes {
    fn of(m: &Msg) -> Bytes {
        let mut b = Bytes {
            buf: [0; 512],
            n: 0,
        };
        for blk in m.blocks() {
            let d = b.buf.get_mut(b.n..).unwrap_or_default();
            b.n += crate::sys::copy_bytes(d, blk.rd());
        }
        b
    }
    pub(super) fn get(&self) -> &[u8] {
        self.buf.get(..self.n).unwrap_or_default()
    }
}

/// The answer to an ioctl: type, iocblk, data.
pub(super) struct Answer {
    pub(super) ty: MsgType,
    pub(super) ioc: IocBlk,
    pub(super) data: Bytes,
    /// The M_SETOPTS sent up before the answer, if any.
    pub(super) setopts: Option<StrOptions>,
}

/// Send M_IOCTL `cmd` with `count` in the iocblk and `arg` as data; take the answer.
pub(super) fn ioctl_n(s: &mut Stream, cmd: i32, count: u32, arg: &[u8]) -> Result<Answer, Failure> {
    let ioc = IocBlk {
        cmd,
        id: 77,
        count,
        ..IocBlk::default()
    };
    let mut m = check_ok!(Msg::from_bytes(M_IOCTL, &ioc.encode()));
    if !arg.is_empty() {
        m.linkb(check_ok!(Msg::from_bytes(M_DATA, arg)));
    }
    s.write(m);
    // The answer is high priority: it overtakes an M_SETOPTS sent up before it.
    let a = check_some!(s.read());
    let h = s.head_rq();
    let mut setopts = None;
    if s.queue(h).and_then(|q| q.first()).map(Msg::db_type) == Some(M_SETOPTS) {
        setopts = s.read().and_then(|m| StrOptions::decode(m.rd()));
    }
    let ioc = check_some!(IocBlk::decode(a.rd()));
    check_eq!(ioc.id, 77);
    let data = match a.cont() {
        Some(c) => Bytes::of(c),
        None => Bytes {
            buf: [0; 512],
            n: 0,
        },
    };
    Ok(Answer {
        ty: a.db_type(),
        ioc,
        data,
        setopts,
    })
}

pub(super) fn ioctl(s: &mut Stream, cmd: i32, arg: &[u8]) -> Result<Answer, Failure> {
    ioctl_n(s, cmd, arg.len() as u32, arg)
}

/// A set command that must be acknowledged.
pub(super) fn set(s: &mut Stream, cmd: i32, v: u32) -> TestResult {
    let a = ioctl(s, cmd, &v.to_ne_bytes())?;
    check_eq!(a.ty, M_IOCACK);
    check_eq!(a.ioc.count, 0);
    Ok(())
}

/// A get command (4-byte width) that must be acknowledged; its value.
pub(super) fn get(s: &mut Stream, cmd: i32) -> Result<u32, Failure> {
    let a = ioctl(s, cmd, &[0; 4])?;
    check_eq!(a.ty, M_IOCACK);
    check_eq!(a.ioc.count, 4);
    Ok(u32::from_ne_bytes(check_ok!(a.data.get().try_into())))
}

pub(super) fn nak(s: &mut Stream, cmd: i32, count: u32, arg: &[u8]) -> Result<i32, Failure> {
    let a = ioctl_n(s, cmd, count, arg)?;
    check_eq!(a.ty, M_IOCNAK);
    check_eq!(a.ioc.count, 0);
    Ok(a.ioc.error)
}

pub(super) fn timeval(sec: i64, usec: i64) -> [u8; 16] {
    let mut b = [0u8; 16];
    crate::sys::copy_bytes(&mut b, &sec.to_ne_bytes());
    crate::sys::copy_bytes(b.get_mut(8..).unwrap_or_default(), &usec.to_ne_bytes());
    b
}

/// The next message at the head must be M_DATA; its bytes.
pub(super) fn chunk(s: &mut Stream) -> Result<Bytes, Failure> {
    let m = check_some!(s.read());
    check_eq!(m.db_type(), M_DATA);
    Ok(Bytes::of(&m))
}

pub(super) fn hdr_at(b: &Bytes, at: usize) -> Result<SbHdr, Failure> {
    Ok(check_some!(SbHdr::decode(
        b.get().get(at..).unwrap_or_default()
    )))
}

// ---------------------------------------------------------------------------------------------

fn open_raises_head_watermarks() -> TestResult {
    let mut s = check_ok!(Stream::new(&HOLD));
    check_ok!(s.push_tab(&BUFMOD, &OpenArgs::module()));
    let m = check_some!(s.read());
    check_eq!(m.db_type(), M_SETOPTS);
    let o = check_some!(StrOptions::decode(m.rd()));
    check_eq!(o.so_flags, SO_HIWAT | SO_LOWAT);
    check_eq!((o.so_hiwat, o.so_lowat), (4 * 8192 + 512, 2 * 8192 + 256));
    check_eq!(s.name(check_some!(s.top_wq())), Some("bufmod"));
    Ok(())
}

fn records_have_headers_and_padding() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSCHUNK, 96)?;
    data(&mut s, b"0123456789")?; // 24 + 10 + 6 padding = 40
    data(&mut s, b"abc")?; // 24 + 3 + 5 = 32
    check!(s.read().is_none()); // 72 of 96 bytes: still collecting
    data(&mut s, &[7u8; 30])?; // 56 more would overflow: the chunk of two goes up
    let c = chunk(&mut s)?;
    check_eq!(c.n, 72);
    let h = hdr_at(&c, 0)?;
    check_eq!((h.origlen, h.msglen, h.totlen, h.drops), (10, 10, 40, 0));
    check_eq!(c.get().get(24..34), Some(&b"0123456789"[..]));
    check_eq!(c.get().get(34..40), Some(&[0u8; 6][..]));
    let h = hdr_at(&c, 40)?;
    check_eq!((h.origlen, h.msglen, h.totlen), (3, 3, 32));
    check_eq!(c.get().get(64..67), Some(&b"abc"[..]));
    check_eq!(c.get().get(67..72), Some(&[0u8; 5][..]));
    check!(s.read().is_none());
    Ok(())
}

fn full_chunk_goes_up_at_once() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER)?;
    set(&mut s, SBIOCSCHUNK, 8)?;
    data(&mut s, b"abcd")?;
    check!(s.read().is_none());
    data(&mut s, b"efgh")?;
    check_eq!(chunk(&mut s)?.get(), b"abcdefgh"); // no padding without headers
    data(&mut s, b"ij")?;
    check!(s.read().is_none());
    Ok(())
}

fn oversize_record_goes_alone() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSCHUNK, 64)?;
    data(&mut s, b"12345678")?; // 32-byte record
    data(&mut s, &[9u8; 100])?; // 128-byte record: bigger than a chunk
    let c = chunk(&mut s)?;
    check_eq!((c.n, hdr_at(&c, 0)?.msglen), (32, 8));
    let c = chunk(&mut s)?;
    let h = hdr_at(&c, 0)?;
    check_eq!((c.n, h.msglen, h.totlen), (128, 100, 128));
    check!(s.read().is_none());
    Ok(())
}

fn snaplen_truncates_records() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSSNAP, 4)?;
    let a = ioctl(&mut s, SBIOCSTIME, &timeval(0, 0))?; // every record at once
    check_eq!(a.ty, M_IOCACK);
    check_eq!(get(&mut s, SBIOCGSNAP)?, 4);
    data(&mut s, b"0123456789")?;
    let c = chunk(&mut s)?;
    let h = hdr_at(&c, 0)?;
    check_eq!((h.origlen, h.msglen, h.totlen, c.n), (10, 4, 32, 32));
    check_eq!(c.get().get(24..32), Some(&b"0123\0\0\0\0"[..]));
    Ok(())
}

fn zero_timeout_sends_each_record() -> TestResult {
    let mut s = open()?;
    let a = ioctl(&mut s, SBIOCSTIME, &timeval(0, 0))?;
    check_eq!(a.ty, M_IOCACK);
    check_eq!(get(&mut s, SBIOCGCHUNK)?, 0); // Solaris: a zero timeout zeroes the chunk
    let a = ioctl(&mut s, SBIOCGTIME, &[0xff; 16])?;
    check_eq!((a.ty, a.data.get()), (M_IOCACK, &[0u8; 16][..]));
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER)?;
    data(&mut s, b"one")?;
    check_eq!(chunk(&mut s)?.get(), b"one");
    data(&mut s, b"two")?;
    check_eq!(chunk(&mut s)?.get(), b"two");
    Ok(())
}

fn flushr_discards_partial_chunk() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER)?;
    data(&mut s, b"stale")?;
    up(&mut s, M_FLUSH, &[FLUSHR])?;
    let m = check_some!(s.read()); // the flush goes on up
    check_eq!(m.db_type(), M_FLUSH);
    // A push now has nothing to send; new data is collected afresh.
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHW])));
    check!(s.read().is_none());
    data(&mut s, b"new")?;
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHW])));
    check_eq!(chunk(&mut s)?.get(), b"new");
    // FLUSHR coming down discards too (and goes on down).
    data(&mut s, b"gone")?;
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHR])));
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHW])));
    check!(s.read().is_none());
    let dq = check_some!(s.driver_wq());
    check_eq!(check_some!(s.queue(dq)).qsize(), 4); // every M_FLUSH went down
    Ok(())
}

fn flushw_pushes_partial_chunk() -> TestResult {
    let mut s = open()?;
    data(&mut s, b"abc")?;
    data(&mut s, b"de")?;
    check!(s.read().is_none());
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHW])));
    let c = chunk(&mut s)?;
    check_eq!(c.n, 64);
    check_eq!((hdr_at(&c, 0)?.msglen, hdr_at(&c, 32)?.msglen), (3, 2));
    check_eq!(c.get().get(56..58), Some(&b"de"[..]));
    Ok(())
}

fn write_side_passes_through() -> TestResult {
    let mut s = open()?;
    data(&mut s, b"held")?; // a partial chunk is not disturbed by writes
    s.write(check_ok!(Msg::from_bytes(M_DATA, b"down")));
    s.write(check_ok!(Msg::from_bytes(M_PROTO, b"proto")));
    s.write(check_ok!(Msg::from_bytes(M_CTL, b"ctl")));
    check!(s.read().is_none());
    let dq = check_some!(s.driver_wq());
    let q = check_some!(s.queue(dq));
    check_eq!(q.qsize(), 3);
    let m = check_some!(q.peek(0));
    check_eq!((m.db_type(), m.rd()), (M_DATA, &b"down"[..]));
    let m = check_some!(q.peek(1));
    check_eq!((m.db_type(), m.rd()), (M_PROTO, &b"proto"[..]));
    check_eq!(check_some!(q.peek(2)).db_type(), M_CTL);
    Ok(())
}

fn nondata_keeps_order_hipri_overtakes() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER)?;
    data(&mut s, b"ab")?;
    up(&mut s, M_PCPROTO, b"P")?; // high priority: straight up, the chunk stays
    let m = check_some!(s.read());
    check_eq!((m.db_type(), m.rd()), (M_PCPROTO, &b"P"[..]));
    check!(s.read().is_none());
    up(&mut s, M_CTL, b"c")?; // ordinary: the chunk goes first
    check_eq!(chunk(&mut s)?.get(), b"ab");
    let m = check_some!(s.read());
    check_eq!((m.db_type(), m.rd()), (M_CTL, &b"c"[..]));
    // Banded data keeps its band and passes as it is.
    let mut b = check_ok!(Msg::from_bytes(M_DATA, b"band"));
    b.set_band(3);
    let rq = check_some!(s.driver_rq());
    s.qctx(rq).putnext(b);
    let m = check_some!(s.read());
    check_eq!((m.band(), m.rd()), (3, &b"band"[..]));
    Ok(())
}

fn proto_converted_unless_no_proto_cvt() -> TestResult {
    let mut s = open()?;
    check_eq!(ioctl(&mut s, SBIOCSTIME, &timeval(0, 0))?.ty, M_IOCACK);
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER)?;
    up(&mut s, M_PROTO, b"pq")?;
    check_eq!(chunk(&mut s)?.get(), b"pq");
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER | SB_NO_PROTO_CVT)?;
    up(&mut s, M_PROTO, b"pq")?;
    let m = check_some!(s.read());
    check_eq!((m.db_type(), m.rd()), (M_PROTO, &b"pq"[..]));
    Ok(())
}

fn send_on_write_sends_chunk() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER | SB_SEND_ON_WRITE)?;
    data(&mut s, b"xyz")?;
    check!(s.read().is_none());
    s.write(check_ok!(Msg::from_bytes(M_DATA, b"w")));
    check_eq!(chunk(&mut s)?.get(), b"xyz");
    let dq = check_some!(s.driver_wq());
    check_eq!(check_some!(s.queue(dq)).qsize(), 1);
    Ok(())
}

static KILO: [u8; 1000] = [0x5a; 1000];

/// Five 1024-byte records fill the placeholder head (hiwat 5120); two more are refused.
fn fill_head(s: &mut Stream, flags: u32) -> TestResult {
    check_eq!(ioctl(s, SBIOCSTIME, &timeval(0, 0))?.ty, M_IOCACK);
    set(s, SBIOCSFLAGS, flags)?;
    for _ in 0..7 {
        data(s, &KILO)?;
    }
    Ok(())
}

fn drops_counted_under_flow_control() -> TestResult {
    let mut s = open()?;
    fill_head(&mut s, 0)?;
    for _ in 0..5 {
        let c = chunk(&mut s)?;
        check_eq!(hdr_at(&c, 0)?.drops, 0);
    }
    check!(s.read().is_none());
    data(&mut s, b"after")?;
    let c = chunk(&mut s)?;
    check_eq!((hdr_at(&c, 0)?.drops, hdr_at(&c, 0)?.msglen), (2, 5));
    Ok(())
}

fn no_drops_queues_and_backenables() -> TestResult {
    let mut s = open()?;
    fill_head(&mut s, SB_NO_DROPS)?;
    let mut got = 0;
    for _ in 0..10 {
        while let Some(m) = s.read() {
            check_eq!(m.db_type(), M_DATA);
            check_eq!(check_some!(SbHdr::decode(m.rd())).drops, 0);
            got += 1;
        }
        s.runqueues();
    }
    check_eq!(got, 7);
    Ok(())
}

fn timeout_checked_lazily_with_timestamps() -> TestResult {
    set_clk::<0>(5 * NSEC_PER_SEC + 7_000);
    let mut s = open_tab(&BUFMOD_CLK0)?;
    check_eq!(ioctl(&mut s, SBIOCSTIME, &timeval(1, 0))?.ty, M_IOCACK);
    data(&mut s, b"a")?;
    set_clk::<0>(5 * NSEC_PER_SEC + 500_000_000);
    data(&mut s, b"b")?;
    check!(s.read().is_none()); // half a second old: still collecting
    set_clk::<0>(6 * NSEC_PER_SEC + 200_000_000);
    data(&mut s, b"c")?; // the chunk is older than the timeout: it goes first
    let c = chunk(&mut s)?;
    check_eq!(c.n, 64);
    let (h0, h1) = (hdr_at(&c, 0)?, hdr_at(&c, 32)?);
    check_eq!((h0.tv_sec, h0.tv_usec), (5, 7));
    check_eq!((h1.tv_sec, h1.tv_usec), (5, 500_000));
    check!(s.read().is_none());
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHW])));
    let c = chunk(&mut s)?;
    let h = hdr_at(&c, 0)?;
    check_eq!((c.n, h.tv_sec, h.tv_usec), (32, 6, 200_000));
    Ok(())
}

fn timeout_sends_chunk_with_no_more_records() -> TestResult {
    set_clk::<2>(10 * NSEC_PER_SEC);
    let mut s = open_tab(&BUFMOD_CLK2)?;
    check_eq!(s.next_timeout(), None);
    check_eq!(ioctl(&mut s, SBIOCSTIME, &timeval(1, 0))?.ty, M_IOCACK);
    data(&mut s, b"a")?;
    data(&mut s, b"b")?;
    check!(s.read().is_none());
    // The platform arms its timer for the chunk's deadline…
    check_eq!(s.next_timeout(), Some(11 * NSEC_PER_SEC));
    check_eq!(s.run_timeouts(10 * NSEC_PER_SEC + 500_000_000), 0);
    s.runqueues();
    check!(s.read().is_none());
    // …and when it fires, the read service procedure sends the chunk up by itself.
    set_clk::<2>(11 * NSEC_PER_SEC);
    check_eq!(s.run_timeouts(11 * NSEC_PER_SEC), 1);
    s.runqueues();
    check_eq!(chunk(&mut s)?.n, 64);
    check!(s.read().is_none());
    check_eq!(s.next_timeout(), None);
    // A timer that fires early (the service procedure runs before the deadline) re-arms.
    data(&mut s, b"c")?;
    check_eq!(s.next_timeout(), Some(12 * NSEC_PER_SEC));
    s.qctx(check_some!(s.top_wq()).otherq()).qenable();
    s.runqueues();
    check!(s.read().is_none());
    check_eq!(s.next_timeout(), Some(12 * NSEC_PER_SEC));
    Ok(())
}

fn defer_chunk_sends_first_of_window() -> TestResult {
    set_clk::<1>(0);
    let mut s = open_tab(&BUFMOD_CLK1)?;
    check_eq!(ioctl(&mut s, SBIOCSTIME, &timeval(1, 0))?.ty, M_IOCACK);
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER | SB_DEFER_CHUNK)?;
    data(&mut s, b"a")?;
    check_eq!(chunk(&mut s)?.get(), b"a"); // first of the window: at once
    data(&mut s, b"b")?;
    data(&mut s, b"c")?;
    check!(s.read().is_none());
    set_clk::<1>(2 * NSEC_PER_SEC);
    data(&mut s, b"d")?; // new window: the collected chunk, then "d" at once
    check_eq!(chunk(&mut s)?.get(), b"bc");
    check_eq!(chunk(&mut s)?.get(), b"d");
    check!(s.read().is_none());
    Ok(())
}

fn pop_and_mread_send_partial_chunk() -> TestResult {
    let mut s = open()?;
    set(&mut s, SBIOCSFLAGS, SB_NO_HEADER)?;
    data(&mut s, b"xy")?;
    s.write(check_ok!(Msg::from_bytes(M_READ, &64usize.to_ne_bytes())));
    check_eq!(chunk(&mut s)?.get(), b"xy");
    let dq = check_some!(s.driver_wq());
    check_eq!(
        check_some!(check_some!(s.queue(dq)).first()).db_type(),
        M_READ
    );
    data(&mut s, b"last")?;
    check_ok!(s.pop());
    check_eq!(chunk(&mut s)?.get(), b"last");
    check_eq!(s.nmodules(), 0);
    Ok(())
}

fn no_memory_drops_and_counts() -> TestResult {
    let mut s = open()?;
    check_eq!(ioctl(&mut s, SBIOCSTIME, &timeval(0, 0))?.ty, M_IOCACK);
    let m = check_ok!(Msg::from_bytes(M_DATA, b"lost"));
    let rq = check_some!(s.driver_rq());
    {
        let _g = FaultGuard::fail_after(0);
        s.qctx(rq).putnext(m);
    }
    check!(s.read().is_none());
    data(&mut s, b"z")?;
    let c = chunk(&mut s)?;
    check_eq!((hdr_at(&c, 0)?.drops, hdr_at(&c, 0)?.msglen), (1, 1));
    // A chunk buffer that cannot be allocated loses its first record only.
    set(&mut s, SBIOCSCHUNK, 128)?;
    let m = check_ok!(Msg::from_bytes(M_DATA, b"lost2"));
    {
        let _g = FaultGuard::fail_after(0);
        s.qctx(rq).putnext(m);
    }
    data(&mut s, b"kept")?;
    s.write(check_ok!(Msg::from_bytes(M_FLUSH, &[FLUSHW])));
    let c = chunk(&mut s)?;
    check_eq!((c.n, hdr_at(&c, 0)?.drops), (32, 2));
    Ok(())
}

ktest_suite!(BUFMOD_SUITE, "streams_bufmod":
    open_raises_head_watermarks,
    records_have_headers_and_padding,
    full_chunk_goes_up_at_once,
    oversize_record_goes_alone,
    snaplen_truncates_records,
    zero_timeout_sends_each_record,
    flushr_discards_partial_chunk,
    flushw_pushes_partial_chunk,
    write_side_passes_through,
    nondata_keeps_order_hipri_overtakes,
    proto_converted_unless_no_proto_cvt,
    send_on_write_sends_chunk,
    drops_counted_under_flow_control,
    no_drops_queues_and_backenables,
    timeout_checked_lazily_with_timestamps,
    timeout_sends_chunk_with_no_more_records,
    defer_chunk_sends_first_of_window,
    pop_and_mread_send_partial_chunk,
    no_memory_drops_and_counts,
);
