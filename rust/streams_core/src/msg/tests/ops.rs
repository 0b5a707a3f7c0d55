//! Cases for the chain utilities: copyb/copymsg, linkb/unlinkb/rmvb, pullupmsg/msgpullup,
//! adjmsg, the size functions and the block iterator.

use super::{build, bytes_are, fail_after, lens_are, types_are};
use crate::ktest::TestResult;
use crate::msg::{allocb, Bpri, Msg, MsgError, MsgFlags, M_CTL, M_DATA, M_PROTO};
use crate::{check, check_eq, check_ok, check_some};

pub(super) fn copyb_is_deep_and_keeps_offsets() -> TestResult {
    let mut m = check_ok!(allocb(400, Bpri::Med));
    m.append(b"##payload");
    m.adj_rptr(2);
    m.set_type(M_CTL);
    m.set_band(7);
    m.set_flag(MsgFlags::MSGMARK);
    let mut c = check_ok!(m.copyb());
    check_eq!(c.rd(), b"payload");
    check_eq!(c.headroom(), 2);
    check_eq!(c.capacity(), 400);
    check_eq!(c.db_type(), M_CTL);
    check_eq!(c.band(), 7);
    check_eq!(c.flag(), MsgFlags::MSGMARK);
    check!(!c.is_shared() && !m.is_shared());
    check!(!core::ptr::eq(c.rd().as_ptr(), m.rd().as_ptr()));
    if let Some(b) = check_some!(c.rd_mut()).first_mut() {
        *b = b'P';
    }
    check_eq!(m.rd(), b"payload");
    check_eq!(c.rd(), b"Payload");
    Ok(())
}

pub(super) fn copyb_of_shared_is_unique() -> TestResult {
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"abc"));
    let d = check_ok!(m.dupb());
    let mut c = check_ok!(d.copyb());
    check!(!c.is_shared());
    check_eq!(c.rd(), b"abc");
    check!(c.rd_mut().is_some());
    let g = fail_after(0);
    check!(d.copyb().is_err());
    drop(g);
    Ok(())
}

pub(super) fn copymsg_keeps_types_and_bytes() -> TestResult {
    let mut m = check_ok!(build(&[
        (M_PROTO, b"hdr"),
        (M_DATA, b""),
        (M_DATA, b"data")
    ]));
    m.set_band(4);
    let c = check_ok!(m.copymsg());
    check!(bytes_are(&c, b"hdrdata"));
    check!(lens_are(&c, &[3, 0, 4]));
    check!(types_are(&c, &[M_PROTO, M_DATA, M_DATA]));
    check_eq!(c.band(), 4);
    check!(c.blocks().all(|b| !b.is_shared()));
    // The original is untouched and still writable.
    check!(m.blocks().all(|b| !b.is_shared()));
    check!(bytes_are(&m, b"hdrdata"));
    Ok(())
}

pub(super) fn copymsg_failure_is_all_or_nothing() -> TestResult {
    let m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"cd"), (M_DATA, b"ef")]));
    for k in 0..3 {
        let g = fail_after(k);
        check!(m.copymsg().is_err());
        drop(g);
    }
    let g = fail_after(3);
    let c = check_ok!(m.copymsg());
    drop(g);
    check!(bytes_are(&c, b"abcdef"));
    check!(bytes_are(&m, b"abcdef"));
    Ok(())
}

pub(super) fn long_chain_dup_and_copy() -> TestResult {
    const N: usize = 10_000;
    let mut head = check_ok!(Msg::from_bytes(M_DATA, b"y"));
    for _ in 1..N {
        let mut b = check_ok!(Msg::from_bytes(M_DATA, b"y"));
        b.linkb(head);
        head = b;
    }
    let c = check_ok!(head.copymsg());
    let d = check_ok!(head.dupmsg());
    check_eq!(c.msgsize(), N);
    check_eq!(d.msgsize(), N);
    check_eq!(d.blocks().count(), N);
    check_ok!(head.pullupmsg(None));
    check_eq!(head.blen(), N);
    check!(head.cont().is_none());
    check_eq!(d.msgsize(), N); // the dups keep the old blocks' data alive
    Ok(())
}

pub(super) fn linkb_appends_at_end() -> TestResult {
    let mut m = check_ok!(build(&[(M_PROTO, b"a"), (M_DATA, b"b")]));
    let tail = check_ok!(build(&[(M_DATA, b"c"), (M_CTL, b"d")]));
    m.linkb(tail);
    check!(bytes_are(&m, b"abcd"));
    check!(types_are(&m, &[M_PROTO, M_DATA, M_DATA, M_CTL]));
    m.linkb(check_ok!(Msg::from_bytes(M_DATA, b"e")));
    check!(bytes_are(&m, b"abcde"));
    Ok(())
}

pub(super) fn unlinkb_detaches_rest() -> TestResult {
    let mut m = check_ok!(build(&[(M_PROTO, b"a"), (M_DATA, b"b"), (M_DATA, b"c")]));
    let rest = check_some!(m.unlinkb());
    check!(m.cont().is_none());
    check!(bytes_are(&m, b"a"));
    check!(bytes_are(&rest, b"bc"));
    check!(m.unlinkb().is_none());
    Ok(())
}

pub(super) fn rmvb_first_block() -> TestResult {
    let m = check_ok!(build(&[(M_PROTO, b"a"), (M_DATA, b"bc")]));
    let (rest, removed) = check_ok!(m.rmvb(0));
    let rest = check_some!(rest);
    check!(bytes_are(&removed, b"a"));
    check!(removed.cont().is_none());
    check!(bytes_are(&rest, b"bc"));
    // Removing the only block leaves no message (SVR4's NULL).
    let (none, only) = check_ok!(rest.rmvb(0));
    check!(none.is_none());
    check_eq!(only.rd(), b"bc");
    Ok(())
}

pub(super) fn rmvb_middle_and_last_block() -> TestResult {
    let m = check_ok!(build(&[(M_DATA, b"a"), (M_DATA, b"b"), (M_DATA, b"c")]));
    let (rest, mid) = check_ok!(m.rmvb(1));
    let rest = check_some!(rest);
    check_eq!(mid.rd(), b"b");
    check!(mid.cont().is_none());
    check!(lens_are(&rest, &[1, 1]));
    check!(bytes_are(&rest, b"ac"));
    let (rest, last) = check_ok!(rest.rmvb(1));
    check_eq!(last.rd(), b"c");
    check!(bytes_are(&check_some!(rest), b"a"));
    Ok(())
}

pub(super) fn rmvb_out_of_range_gives_message_back() -> TestResult {
    let m = check_ok!(build(&[(M_DATA, b"a"), (M_DATA, b"b")]));
    let m = check_some!(m.rmvb(2).err());
    check!(bytes_are(&m, b"ab"));
    check!(lens_are(&m, &[1, 1]));
    Ok(())
}

pub(super) fn pullupmsg_all_stops_at_type_change() -> TestResult {
    let mut m = check_ok!(build(&[
        (M_PROTO, b"ab"),
        (M_PROTO, b""),
        (M_PROTO, b"cde"),
        (M_DATA, b"xyz"),
    ]));
    m.set_band(5);
    m.set_flag(MsgFlags::MSGDELIM);
    check_ok!(m.pullupmsg(None));
    check!(lens_are(&m, &[5, 3]));
    check!(types_are(&m, &[M_PROTO, M_DATA]));
    check_eq!(m.rd(), b"abcde");
    check_eq!(m.band(), 5);
    check_eq!(m.flag(), MsgFlags::MSGDELIM);
    check!(bytes_are(&m, b"abcdexyz"));
    Ok(())
}

pub(super) fn pullupmsg_len_splits_a_block() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"cdef"), (M_DATA, b"g")]));
    check_ok!(m.pullupmsg(Some(4)));
    check_eq!(m.rd(), b"abcd");
    check!(lens_are(&m, &[4, 2, 1]));
    let second = check_some!(m.cont());
    check_eq!(second.headroom(), 2); // partly consumed: b_rptr advanced
    check!(bytes_are(&m, b"abcdefg"));
    // Pulling up exactly to a block boundary frees the consumed block.
    check_ok!(m.pullupmsg(Some(6)));
    check!(lens_are(&m, &[6, 1]));
    Ok(())
}

pub(super) fn pullupmsg_noop_when_first_block_suffices() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"abc"), (M_DATA, b"d")]));
    let p = m.rd().as_ptr();
    let g = fail_after(0); // proves no allocation happens
    check_ok!(m.pullupmsg(Some(3)));
    check_ok!(m.pullupmsg(Some(0)));
    drop(g);
    check!(core::ptr::eq(p, m.rd().as_ptr()));
    let mut one = check_ok!(Msg::from_bytes(M_DATA, b"solo"));
    let g = fail_after(0);
    check_ok!(one.pullupmsg(None));
    drop(g);
    check_eq!(one.rd(), b"solo");
    check!(lens_are(&m, &[3, 1]));
    Ok(())
}

pub(super) fn pullupmsg_too_short_changes_nothing() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"c"), (M_PROTO, b"zz")]));
    // 5 bytes exist, but only 3 of the leading type.
    check_eq!(m.pullupmsg(Some(4)), Err(MsgError::TooShort));
    check!(lens_are(&m, &[2, 1, 2]));
    check!(bytes_are(&m, b"abczz"));
    check_ok!(m.pullupmsg(Some(3)));
    check!(lens_are(&m, &[3, 2]));
    Ok(())
}

pub(super) fn pullupmsg_nomem_changes_nothing() -> TestResult {
    // Up to FASTBUF bytes the new data block is the inline fast buffer: nothing to allocate,
    // so a small pullup cannot fail.
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"cd")]));
    let g = fail_after(0);
    check_ok!(m.pullupmsg(None));
    drop(g);
    check!(lens_are(&m, &[4]));
    check!(bytes_are(&m, b"abcd"));
    let big = [1u8; 200];
    let mut h = check_ok!(build(&[(M_DATA, &big), (M_DATA, &big)]));
    let g = fail_after(0);
    check_eq!(h.pullupmsg(Some(300)), Err(MsgError::NoMem));
    drop(g);
    check!(lens_are(&h, &[200, 200]));
    Ok(())
}

pub(super) fn pullupmsg_unshares_data() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"cd")]));
    let d = check_ok!(m.dupmsg());
    check!(m.is_shared());
    check_ok!(m.pullupmsg(None));
    check!(!m.is_shared());
    check_eq!(m.append(b"e"), 1); // a fresh fast buffer: writable again
    if let Some(b) = check_some!(m.rd_mut()).first_mut() {
        *b = b'A';
    }
    check_eq!(m.rd(), b"Abcde");
    check!(bytes_are(&d, b"abcd"));
    Ok(())
}

pub(super) fn msgpullup_leaves_original_untouched() -> TestResult {
    let mut m = check_ok!(build(&[
        (M_PROTO, b"ab"),
        (M_PROTO, b"cd"),
        (M_DATA, b"ef")
    ]));
    m.set_band(1);
    let p = check_ok!(m.msgpullup(None));
    check!(lens_are(&p, &[4, 2]));
    check!(types_are(&p, &[M_PROTO, M_DATA]));
    check_eq!(p.band(), 1);
    check!(bytes_are(&p, b"abcdef"));
    check!(lens_are(&m, &[2, 2, 2]));
    check!(m.blocks().all(|b| !b.is_shared()));
    check!(p.blocks().all(|b| !b.is_shared()));
    Ok(())
}

pub(super) fn msgpullup_len_and_errors() -> TestResult {
    let m = check_ok!(build(&[(M_DATA, b"abc"), (M_DATA, b"de"), (M_CTL, b"f")]));
    let p = check_ok!(m.msgpullup(Some(4)));
    check!(lens_are(&p, &[4, 1, 1]));
    check!(types_are(&p, &[M_DATA, M_DATA, M_CTL]));
    check!(bytes_are(&p, b"abcdef"));
    check_eq!(m.msgpullup(Some(6)).err(), Some(MsgError::TooShort));
    for k in 0..3 {
        let g = fail_after(k);
        check_eq!(m.msgpullup(Some(4)).err(), Some(MsgError::NoMem));
        drop(g);
    }
    check!(lens_are(&m, &[3, 2, 1]));
    Ok(())
}

pub(super) fn adjmsg_head_across_blocks() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"cde"), (M_DATA, b"fg")]));
    check_ok!(m.adjmsg(4));
    // The emptied first block stays; "cde" lost two bytes and keeps "e".
    check!(lens_are(&m, &[0, 1, 2]));
    check!(bytes_are(&m, b"efg"));
    check_ok!(m.adjmsg(2));
    // The second block emptied and is freed; the first block always stays.
    check!(lens_are(&m, &[0, 1]));
    check!(bytes_are(&m, b"g"));
    check_ok!(m.adjmsg(0));
    check!(lens_are(&m, &[0, 1]));
    Ok(())
}

pub(super) fn adjmsg_tail_across_blocks() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"abc"), (M_DATA, b"de"), (M_DATA, b"")]));
    check_ok!(m.adjmsg(-3));
    check!(lens_are(&m, &[2]));
    check!(bytes_are(&m, b"ab"));
    let mut n = check_ok!(build(&[(M_DATA, b"abc"), (M_DATA, b""), (M_DATA, b"de")]));
    check_ok!(n.adjmsg(-1));
    check!(lens_are(&n, &[3, 0, 1]));
    check_ok!(n.adjmsg(-1));
    // Trimming from the tail frees the emptied last block; the empty middle one was not
    // reached (as SVR4's trim-the-last-block loop).
    check!(lens_are(&n, &[3, 0]));
    check!(bytes_are(&n, b"abc"));
    Ok(())
}

pub(super) fn adjmsg_tail_only_trims_leading_run() -> TestResult {
    let mut m = check_ok!(build(&[
        (M_PROTO, b"ab"),
        (M_PROTO, b"cd"),
        (M_DATA, b"ef")
    ]));
    check_ok!(m.adjmsg(-3));
    check!(lens_are(&m, &[1, 2]));
    check!(types_are(&m, &[M_PROTO, M_DATA]));
    check!(bytes_are(&m, b"aef"));
    check_eq!(m.adjmsg(-2), Err(MsgError::TooShort));
    check_eq!(m.adjmsg(2), Err(MsgError::TooShort));
    check!(bytes_are(&m, b"aef"));
    Ok(())
}

pub(super) fn adjmsg_keeps_first_block() -> TestResult {
    let mut m = check_ok!(build(&[(M_PROTO, b"ab"), (M_PROTO, b"c")]));
    check_ok!(m.adjmsg(-3));
    check!(lens_are(&m, &[0]));
    check_eq!(m.db_type(), M_PROTO);
    let mut h = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"c")]));
    check_ok!(h.adjmsg(3));
    check!(lens_are(&h, &[0]));
    Ok(())
}

pub(super) fn adjmsg_too_short_changes_nothing() -> TestResult {
    let mut m = check_ok!(build(&[(M_DATA, b"ab"), (M_DATA, b"c")]));
    check_eq!(m.adjmsg(4), Err(MsgError::TooShort));
    check_eq!(m.adjmsg(-4), Err(MsgError::TooShort));
    check_eq!(m.adjmsg(isize::MIN), Err(MsgError::TooShort));
    check!(lens_are(&m, &[2, 1]));
    check!(bytes_are(&m, b"abc"));
    Ok(())
}

pub(super) fn sizes_count_the_right_blocks() -> TestResult {
    let m = check_ok!(build(&[
        (M_PROTO, b"pp"),
        (M_DATA, b"ddd"),
        (M_CTL, b"c"),
        (M_DATA, b"dd"),
    ]));
    check_eq!(m.msgsize(), 8);
    check_eq!(m.msgdsize(), 5);
    check_eq!(m.xmsgsize(), 2);
    let d = check_some!(m.cont());
    check_eq!(d.xmsgsize(), 3);
    check_eq!(d.msgsize(), 6);
    Ok(())
}

pub(super) fn blocks_iterate_and_index() -> TestResult {
    let mut m = check_ok!(build(&[(M_PROTO, b"a"), (M_DATA, b"bb"), (M_DATA, b"ccc")]));
    let mut lens = [0usize; 3];
    for (i, b) in m.blocks().enumerate() {
        if let Some(l) = lens.get_mut(i) {
            *l = b.blen();
        }
    }
    check_eq!(lens, [1, 2, 3]);
    check_eq!(check_some!(m.nth_block(2)).rd(), b"ccc");
    check!(m.nth_block(3).is_none());
    check_some!(m.nth_block_mut(1)).set_type(M_CTL);
    check_some!(m.cont_mut()).adj_rptr(1);
    check!(types_are(&m, &[M_PROTO, M_CTL, M_DATA]));
    check!(bytes_are(&m, b"abccc"));
    check!(m.nth_block_mut(9).is_none());
    Ok(())
}
