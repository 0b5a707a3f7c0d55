//! Cases for allocation (allocb, esballoc), the per-block accessors, freeing, and dupb with
//! its copy-on-write rules.

use super::{build, bytes_are, fail_after, lens_are};
use crate::ktest::TestResult;
use crate::msg::{
    allocb, esballoc, freeb, freemsg, Bpri, Data, ExtBuf, Msg, MsgFlags, FASTBUF, M_CTL, M_DATA,
    M_DELAY, M_FLUSH, M_IOCACK, M_PCPROTO, M_PROTO,
};
use crate::sys;
use crate::{check, check_eq, check_ok, check_some};
use core::sync::atomic::{AtomicUsize, Ordering};

/// Times each esballoc case's free routine ran, indexed by the case's `arg`.
static FREED: [AtomicUsize; SLOTS] = [ZERO; SLOTS];
/// Length of the buffer last handed to the free routine, per `arg`.
static FREED_LEN: [AtomicUsize; SLOTS] = [ZERO; SLOTS];
const SLOTS: usize = 8;
#[allow(clippy::declare_interior_mutable_const)] // only used to initialise the arrays above
const ZERO: AtomicUsize = AtomicUsize::new(0);

fn count_free(buf: &'static mut [u8], arg: usize) {
    if let (Some(c), Some(l)) = (FREED.get(arg), FREED_LEN.get(arg)) {
        l.store(buf.len(), Ordering::SeqCst);
        c.fetch_add(1, Ordering::SeqCst);
    }
}

fn freed(arg: usize) -> usize {
    FREED
        .get(arg)
        .map_or(usize::MAX, |c| c.load(Ordering::SeqCst))
}

/// An external buffer for case `arg` (each case its own `arg`: host cases run in parallel).
/// An empty buffer needs no allocation; a non-empty one comes from `sys::leak_zeroed` (kept for
/// the whole run, visible to kmemleak), since the free routine cannot give it back without
/// `unsafe`.
fn ext(arg: usize, len: usize) -> Result<ExtBuf, sys::NoMem> {
    if let Some(c) = FREED.get(arg) {
        c.store(0, Ordering::SeqCst);
    }
    let buf: &'static mut [u8] = if len == 0 {
        &mut []
    } else {
        let b = sys::leak_zeroed(16)?;
        b.get_mut(..len).unwrap_or_default()
    };
    Ok(ExtBuf {
        buf,
        free: count_free,
        arg,
    })
}

fn is_fast(m: &Msg) -> bool {
    matches!(m.0.data, Data::Fast(_))
}

fn is_heap(m: &Msg) -> bool {
    matches!(m.0.data, Data::Heap(_))
}

pub(super) fn allocb_new_block_is_empty_mdata() -> TestResult {
    let m = check_ok!(allocb(200, Bpri::Med));
    check_eq!(m.db_type(), M_DATA);
    check_eq!(m.band(), 0);
    check_eq!(m.flag(), MsgFlags(0));
    check_eq!(m.rd().len(), 0);
    check_eq!(m.blen(), 0);
    check_eq!(m.headroom(), 0);
    check_eq!(m.capacity(), 200);
    check_eq!(m.wr_room(), 200);
    check!(m.cont().is_none());
    check!(!m.is_shared());
    check_eq!(m.msgsize(), 0);
    Ok(())
}

pub(super) fn allocb_127_uses_fast_buffer() -> TestResult {
    let m = check_ok!(allocb(FASTBUF - 1, Bpri::Lo));
    check!(is_fast(&m));
    // The whole fast buffer is usable, as in LfS (db_lim = db_base + FASTBUF).
    check_eq!(m.capacity(), FASTBUF);
    check_eq!(m.wr_room(), FASTBUF);
    Ok(())
}

pub(super) fn allocb_128_uses_fast_buffer() -> TestResult {
    let m = check_ok!(allocb(FASTBUF, Bpri::Lo));
    check!(is_fast(&m));
    check_eq!(m.capacity(), 128);
    Ok(())
}

pub(super) fn allocb_129_uses_heap_block() -> TestResult {
    let m = check_ok!(allocb(FASTBUF + 1, Bpri::Hi));
    check!(is_heap(&m));
    check_eq!(m.capacity(), 129);
    check_eq!(m.wr_room(), 129);
    Ok(())
}

pub(super) fn allocb_zero_size() -> TestResult {
    let mut m = check_ok!(allocb(0, Bpri::Med));
    check!(is_fast(&m));
    check_eq!(m.msgsize(), 0);
    check_eq!(m.capacity(), FASTBUF);
    check_eq!(m.append(b"x"), 1);
    check_eq!(m.rd(), b"x");
    Ok(())
}

pub(super) fn allocb_fast_is_one_allocation() -> TestResult {
    let g = fail_after(1);
    let m = check_ok!(allocb(FASTBUF, Bpri::Med));
    check!(allocb(1, Bpri::Med).is_err());
    drop(g);
    check!(is_fast(&m));
    let g = fail_after(0);
    check!(allocb(0, Bpri::Med).is_err());
    drop(g);
    Ok(())
}

pub(super) fn allocb_heap_fails_on_either_allocation() -> TestResult {
    // Data block first, then the mblk: both failures must report NoMem.
    let g = fail_after(0);
    check_eq!(allocb(FASTBUF + 1, Bpri::Med).err(), Some(sys::NoMem));
    drop(g);
    let g = fail_after(1);
    check_eq!(allocb(FASTBUF + 1, Bpri::Med).err(), Some(sys::NoMem));
    drop(g);
    let g = fail_after(2);
    let m = check_ok!(allocb(FASTBUF + 1, Bpri::Med));
    drop(g);
    check_eq!(m.capacity(), FASTBUF + 1);
    Ok(())
}

pub(super) fn with_type_sets_type() -> TestResult {
    let m = check_ok!(Msg::with_type(M_PROTO, 1000));
    check_eq!(m.db_type(), M_PROTO);
    check_eq!(m.capacity(), 1000);
    check_eq!(m.blen(), 0);
    let h = check_ok!(Msg::with_type(M_FLUSH, 1));
    check!(h.is_hipri());
    check!(!m.is_hipri());
    Ok(())
}

pub(super) fn from_bytes_copies_exactly() -> TestResult {
    let m = check_ok!(Msg::from_bytes(M_CTL, b"hello"));
    check_eq!(m.db_type(), M_CTL);
    check_eq!(m.rd(), b"hello");
    check!(is_fast(&m));
    check_eq!(m.wr_room(), FASTBUF - 5);
    check!(m.cont().is_none());
    Ok(())
}

pub(super) fn from_bytes_large_is_heap() -> TestResult {
    let src = [7u8; 300];
    let m = check_ok!(Msg::from_bytes(M_DATA, &src));
    check!(is_heap(&m));
    check_eq!(m.rd(), &src[..]);
    check_eq!(m.msgsize(), 300);
    check_eq!(m.wr_room(), 0);
    Ok(())
}

pub(super) fn append_stops_at_db_lim() -> TestResult {
    let mut m = check_ok!(allocb(FASTBUF + 2, Bpri::Med));
    let filler = [b'-'; FASTBUF - 4];
    check_eq!(m.append(&filler), FASTBUF - 4);
    check_eq!(m.append(b"abcdef"), 6);
    check_eq!(m.wr_room(), 0);
    check!(m.rd().ends_with(b"abcdef"));
    let mut m = check_ok!(allocb(10, Bpri::Med));
    check_eq!(m.append(&filler), FASTBUF - 4);
    check_eq!(m.append(b"abcdefgh"), 4);
    check!(m.rd().ends_with(b"abcd"));
    check_eq!(m.append(b"z"), 0);
    check_eq!(m.wr_room(), 0);
    Ok(())
}

pub(super) fn rd_mut_writes_in_place() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    let r = check_some!(m.rd_mut());
    check_eq!(r.len(), 3);
    if let Some(x) = r.get_mut(1) {
        *x = b'X';
    }
    check_eq!(m.rd(), b"aXc");
    Ok(())
}

pub(super) fn adj_rptr_clamps_to_wptr() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abcdef"));
    check_eq!(m.adj_rptr(2), 2);
    check_eq!(m.rd(), b"cdef");
    check_eq!(m.headroom(), 2);
    check_eq!(m.adj_rptr(100), 4);
    check_eq!(m.rd(), b"");
    check_eq!(m.adj_rptr(1), 0);
    Ok(())
}

pub(super) fn unadj_rptr_clamps_to_base() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abcdef"));
    m.adj_rptr(4);
    check_eq!(m.unadj_rptr(1), 1);
    check_eq!(m.rd(), b"def");
    check_eq!(m.unadj_rptr(100), 3);
    check_eq!(m.rd(), b"abcdef");
    check_eq!(m.headroom(), 0);
    Ok(())
}

pub(super) fn adj_wptr_publishes_spare_bytes() -> TestResult {
    let mut m = check_ok!(allocb(FASTBUF + 4, Bpri::Med));
    let filler = [0u8; FASTBUF];
    m.append(&filler);
    m.adj_rptr(FASTBUF);
    let s = check_some!(m.spare_mut());
    check_eq!(s.len(), 4);
    s.copy_from_slice(b"wxyz");
    check_eq!(m.blen(), 0);
    check_eq!(m.adj_wptr(3), 3);
    check_eq!(m.rd(), b"wxy");
    check_eq!(m.adj_wptr(9), 1);
    check_eq!(m.rd(), b"wxyz");
    check_eq!(m.adj_wptr(1), 0);
    Ok(())
}

pub(super) fn trim_wptr_clamps_to_rptr() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abcdef"));
    m.adj_rptr(1);
    check_eq!(m.trim_wptr(2), 2);
    check_eq!(m.rd(), b"bcd");
    check_eq!(m.trim_wptr(50), 3);
    check_eq!(m.blen(), 0);
    check_eq!(m.headroom(), 1);
    Ok(())
}

pub(super) fn reset_empties_block() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    m.adj_rptr(1);
    m.reset();
    check_eq!(m.blen(), 0);
    check_eq!(m.headroom(), 0);
    check_eq!(m.wr_room(), FASTBUF);
    check_eq!(m.append(b"xyz"), 3);
    check_eq!(m.rd(), b"xyz");
    Ok(())
}

pub(super) fn flags_set_and_combine() -> TestResult {
    let mut m = check_ok!(allocb(1, Bpri::Med));
    let f = MsgFlags::MSGMARK | MsgFlags::MSGDELIM;
    m.set_flag(f);
    check!(m.flag().contains(MsgFlags::MSGMARK));
    check!(m.flag().contains(MsgFlags::MSGDELIM));
    check!(!m.flag().contains(MsgFlags::MSGNOLOOP));
    m.set_flag(m.flag().without(MsgFlags::MSGMARK));
    check_eq!(m.flag(), MsgFlags::MSGDELIM);
    check_eq!(MsgFlags::MSGMARK.union(MsgFlags::MSGNOLOOP), MsgFlags(0x03));
    Ok(())
}

pub(super) fn datamsg_and_pcmsg_classify() -> TestResult {
    let mut m = check_ok!(allocb(1, Bpri::Med));
    check!(m.datamsg() && !m.pcmsg());
    m.set_type(M_PCPROTO);
    check!(m.datamsg() && m.pcmsg());
    m.set_type(M_DELAY);
    check!(m.datamsg() && !m.pcmsg());
    m.set_type(M_IOCACK);
    check!(!m.datamsg() && m.pcmsg());
    m.set_type(M_CTL);
    check!(!m.datamsg() && !m.pcmsg());
    Ok(())
}

pub(super) fn esballoc_wraps_caller_buffer() -> TestResult {
    let mut m = check_ok!(esballoc(check_ok!(ext(0, 12)), Bpri::Med));
    check_eq!(m.db_type(), M_DATA);
    check_eq!(m.capacity(), 12);
    check_eq!(m.blen(), 0);
    check_eq!(m.append(b"external buffer"), 12);
    check_eq!(m.rd(), b"external buf");
    check_eq!(freed(0), 0);
    drop(m);
    check_eq!(freed(0), 1);
    check_eq!(FREED_LEN[0].load(Ordering::SeqCst), 12);
    Ok(())
}

pub(super) fn esballoc_failure_hands_buffer_back() -> TestResult {
    let e = check_ok!(ext(1, 0));
    let g = fail_after(0);
    let back = esballoc(e, Bpri::Med);
    drop(g);
    let e = check_some!(back.err());
    check_eq!(e.arg, 1);
    check_eq!(e.buf.len(), 0);
    // The caller still owned the buffer: its free routine was never called.
    check_eq!(freed(1), 0);
    Ok(())
}

pub(super) fn esballoc_free_once_after_all_dups() -> TestResult {
    let mut m = check_ok!(esballoc(check_ok!(ext(2, 0)), Bpri::Med));
    let d1 = check_ok!(m.dupb());
    let mut d2 = check_ok!(m.dupb());
    let d3 = check_ok!(d2.dupb());
    check!(m.is_shared() && d1.is_shared() && d3.is_shared());
    drop(m);
    drop(d2);
    check_eq!(freed(2), 0);
    drop(d1);
    check_eq!(freed(2), 0);
    drop(d3);
    check_eq!(freed(2), 1);
    Ok(())
}

pub(super) fn esballoc_copy_does_not_hold_buffer() -> TestResult {
    let mut m = check_ok!(esballoc(check_ok!(ext(3, 8)), Bpri::Med));
    m.append(b"payload!");
    let c = check_ok!(m.copyb());
    drop(m);
    check_eq!(freed(3), 1);
    check_eq!(c.rd(), b"payload!");
    check!(!c.is_shared());
    Ok(())
}

pub(super) fn freemsg_runs_every_free_routine() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"cd")]));
    check_ok!(ext(4, 0)); // resets the counter of slot 4
    for _ in 0..3 {
        let e = check_some!(esballoc(check_ok!(ext_nocount(4)), Bpri::Med).ok());
        m.linkb(e);
    }
    check_eq!(m.blocks().count(), 5);
    check_eq!(freed(4), 0);
    freemsg(m);
    check_eq!(freed(4), 3);
    Ok(())
}

/// Like `ext` but without resetting the counter (several buffers for one case).
fn ext_nocount(arg: usize) -> Result<ExtBuf, sys::NoMem> {
    Ok(ExtBuf {
        buf: &mut [],
        free: count_free,
        arg,
    })
}

pub(super) fn freeb_returns_b_cont() -> TestResult {
    let m = check_ok!(build(&[
        (M_PROTO, b"hdr"),
        (M_DATA, b"body"),
        (M_DATA, b"!")
    ]));
    let rest = check_some!(freeb(m));
    check_eq!(rest.db_type(), M_DATA);
    check!(bytes_are(&rest, b"body!"));
    let rest = check_some!(freeb(rest));
    check!(freeb(rest).is_none());
    Ok(())
}

pub(super) fn long_chain_drop_is_iterative() -> TestResult {
    // 20,000 frames of a recursive drop would need far more than a kernel stack (16 KiB); more
    // blocks only make the case slow (15 s for 10^5 under KASAN in TCG, past the soft-lockup
    // detector's 20 s when the host is busy).
    const N: usize = 20_000;
    let mut head = check_ok!(allocb(1, Bpri::Med));
    head.append(b"x");
    for _ in 1..N {
        let mut b = check_ok!(allocb(1, Bpri::Med));
        b.append(b"x");
        b.linkb(head); // b has one block: O(1)
        head = b;
    }
    check_eq!(head.msgsize(), N);
    check_eq!(head.blocks().count(), N);
    drop(head); // would overflow the stack if Drop recursed down b_cont
    Ok(())
}

pub(super) fn dupb_shares_bytes_and_fields() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_PROTO, b"shared bytes"));
    m.set_band(3);
    m.set_flag(MsgFlags::MSGDELIM);
    m.adj_rptr(2);
    let d = check_ok!(m.dupb());
    check_eq!(d.rd(), b"ared bytes");
    check_eq!(d.rd(), m.rd());
    check_eq!(d.db_type(), M_PROTO);
    check_eq!(d.band(), 3);
    check_eq!(d.flag(), MsgFlags::MSGDELIM);
    check_eq!(d.headroom(), 2);
    check_eq!(d.capacity(), m.capacity());
    check!(d.cont().is_none());
    // One data block: the same bytes in memory, not a copy.
    check!(core::ptr::eq(d.rd().as_ptr(), m.rd().as_ptr()));
    Ok(())
}

pub(super) fn dupb_makes_both_read_only() -> TestResult {
    let mut m = check_ok!(allocb(16, Bpri::Med));
    m.append(b"abc");
    let mut d = check_ok!(m.dupb());
    check!(m.is_shared() && d.is_shared());
    check_eq!(m.append(b"def"), 0);
    check_eq!(d.append(b"def"), 0);
    check!(m.rd_mut().is_none());
    check!(m.spare_mut().is_none());
    check_eq!(m.wr_room(), 0);
    check_eq!(m.adj_wptr(1), 0);
    check_eq!(m.rd(), b"abc");
    check_eq!(d.rd(), b"abc");
    Ok(())
}

pub(super) fn make_writable_copies_on_write() -> TestResult {
    let mut m = check_ok!(allocb(200, Bpri::Med));
    m.append(b"..original");
    m.adj_rptr(2);
    let d = check_ok!(m.dupb());
    check_ok!(m.make_writable());
    check!(!m.is_shared());
    check!(d.is_shared()); // the other holder keeps the old data block
    check_eq!(m.headroom(), 2);
    check_eq!(m.capacity(), 200);
    check_eq!(m.wr_room(), 190);
    if let Some(b) = check_some!(m.rd_mut()).first_mut() {
        *b = b'O';
    }
    check_eq!(m.append(b"+"), 1);
    check_eq!(m.rd(), b"Original+");
    check_eq!(d.rd(), b"original");
    Ok(())
}

pub(super) fn make_writable_is_noop_when_unique() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    let p = m.rd().as_ptr();
    let g = fail_after(0);
    check_ok!(m.make_writable()); // no allocation needed
    drop(g);
    check!(core::ptr::eq(p, m.rd().as_ptr()));
    Ok(())
}

pub(super) fn make_writable_failure_changes_nothing() -> TestResult {
    let big = [9u8; 300];
    let mut m = check_ok!(Msg::from_bytes(M_DATA, &big));
    let _d = check_ok!(m.dupb());
    let g = fail_after(0);
    check!(m.make_writable().is_err());
    drop(g);
    check!(m.is_shared());
    check_eq!(m.rd(), &big[..]);
    check_ok!(m.make_writable());
    check!(!m.is_shared());
    // A shared fast buffer is copied back inline: no allocation, so it cannot fail.
    let mut f = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    let _e = check_ok!(f.dupb());
    let g = fail_after(0);
    check_ok!(f.make_writable());
    drop(g);
    check!(!f.is_shared());
    check_eq!(f.rd(), b"abc");
    Ok(())
}

pub(super) fn dupb_box_failure_changes_nothing() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    let g = fail_after(0);
    check!(m.dupb().is_err());
    drop(g);
    check!(!m.is_shared());
    check_eq!(m.append(b""), 0);
    check_eq!(m.rd(), b"abc");
    Ok(())
}

pub(super) fn dupb_share_failure_changes_nothing() -> TestResult {
    // Fast, heap and external data: the mblk allocation succeeds, making the data block
    // shared fails. The block must keep its (unique, writable) data.
    let mut fast = check_ok!(Msg::from_bytes(M_DATA, b"fast"));
    let big = [5u8; 200];
    let mut heap = check_ok!(Msg::from_bytes(M_DATA, &big));
    let mut e = check_ok!(esballoc(check_ok!(ext(5, 0)), Bpri::Med));
    for m in [&mut fast, &mut heap, &mut e] {
        let g = fail_after(1);
        check!(m.dupb().is_err());
        drop(g);
        check!(!m.is_shared());
    }
    check_eq!(fast.rd(), b"fast");
    check_eq!(heap.rd(), &big[..]);
    check_eq!(freed(5), 0);
    drop(e);
    check_eq!(freed(5), 1);
    check!(check_some!(heap.rd_mut()).len() == 200);
    Ok(())
}

pub(super) fn dupb_of_shared_needs_one_allocation() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    let _d = check_ok!(m.dupb());
    let g = fail_after(1); // only the new mblk: the data block is already shared
    let d2 = check_ok!(m.dupb());
    drop(g);
    check_eq!(d2.rd(), b"abc");
    Ok(())
}

pub(super) fn dup_pointers_are_independent() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"0123456789"));
    let mut d = check_ok!(m.dupb());
    d.adj_rptr(3);
    d.trim_wptr(2);
    check_eq!(d.rd(), b"34567");
    check_eq!(m.rd(), b"0123456789");
    m.adj_rptr(9);
    check_eq!(d.rd(), b"34567");
    d.set_type(M_PROTO);
    check_eq!(m.db_type(), M_DATA);
    Ok(())
}

pub(super) fn dupmsg_dups_every_block() -> TestResult {
    let mut m = check_ok!(build(&[
        (M_PROTO, b"hdr"),
        (M_DATA, b"body"),
        (M_DATA, b"")
    ]));
    m.set_band(2);
    let d = check_ok!(m.dupmsg());
    check!(bytes_are(&d, b"hdrbody"));
    check!(lens_are(&d, &[3, 4, 0]));
    check_eq!(d.db_type(), M_PROTO);
    check_eq!(d.band(), 2);
    check!(d.blocks().all(|b| b.is_shared()));
    check!(m.blocks().all(|b| b.is_shared()));
    let second = check_some!(d.cont());
    check_eq!(second.db_type(), M_DATA);
    Ok(())
}

pub(super) fn dupmsg_failure_is_all_or_nothing() -> TestResult {
    // Three fast blocks: each dupb takes two allocations (mblk, Arc) the first time.
    for k in 0..6 {
        let mut m = check_ok!(build(&[(M_PROTO, b"a"), (M_DATA, b"bc"), (M_DATA, b"def")]));
        let g = fail_after(k);
        check!(m.dupmsg().is_err());
        drop(g);
        check!(bytes_are(&m, b"abcdef"));
        check!(lens_are(&m, &[1, 2, 3]));
        let d = check_ok!(m.dupmsg());
        check!(bytes_are(&d, b"abcdef"));
    }
    let mut m = check_ok!(build(&[(M_DATA, b"a"), (M_DATA, b"b")]));
    let g = fail_after(4);
    check_ok!(m.dupmsg());
    drop(g);
    Ok(())
}
