//! Shared tests of the ioctl argument layouts in both data models (`sth/layout.rs`): the
//! LP64 sizes and offsets of `docs/abi.md` (also checked against the C header by the library's
//! tests) and their ILP32 counterparts, used by `compat_ioctl`.

use super::super::layout::{Layout, Model, StrBufArg};
use crate::ktest::TestResult;
use crate::{check_eq, ktest_suite};

fn put(b: &mut [u8], off: usize, v: &[u8]) {
    for (d, s) in b.iter_mut().skip(off).zip(v) {
        *d = *s;
    }
}

fn sizes_and_offsets() -> TestResult {
    let (l, i) = (Model::Lp64, Model::Ilp32);
    check_eq!((l.strbuf_size(), i.strbuf_size()), (16, 12));
    check_eq!(
        (l.size(Layout::StrIoctl), i.size(Layout::StrIoctl)),
        (24, 16)
    );
    check_eq!((l.size(Layout::StrPmsg), i.size(Layout::StrPmsg)), (40, 32));
    check_eq!((l.size(Layout::StrPeek), i.size(Layout::StrPeek)), (40, 28));
    check_eq!((l.size(Layout::StrList), i.size(Layout::StrList)), (16, 8));
    check_eq!((l.ic_dp(), i.ic_dp()), (16, 12));
    check_eq!((l.databuf(), i.databuf()), (16, 12));
    check_eq!((l.pmsg_band(), l.pmsg_flags()), (32, 36));
    check_eq!((i.pmsg_band(), i.pmsg_flags()), (24, 28));
    check_eq!((l.peek_flags(), i.peek_flags()), (32, 24));
    Ok(())
}

fn ilp32_decoding() -> TestResult {
    let m = Model::Ilp32;
    // struct strpmsg32 { {8, 3, 0x1000}, {16, 5, 0x2000}, band 2, flags MSG_BAND }
    let mut b = [0u8; 32];
    for (off, v) in [(0, 8), (4, 3), (12, 16), (16, 5), (24, 2), (28, 4)] {
        put(&mut b, off, &i32::to_ne_bytes(v));
    }
    put(&mut b, 8, &0x1000u32.to_ne_bytes());
    put(&mut b, 20, &0x2000u32.to_ne_bytes());
    let (c, d, band, flags) = m.strpmsg(&b);
    check_eq!(
        c,
        StrBufArg {
            maxlen: 8,
            len: 3,
            buf: 0x1000
        }
    );
    check_eq!(
        d,
        StrBufArg {
            maxlen: 16,
            len: 5,
            buf: 0x2000
        }
    );
    check_eq!((band, flags), (2, 4));
    // I_GETPMSG stores its four results into the structure as copied in and writes them
    // back as one copy: the pointers and `databuf.maxlen` between them are left as they were.
    for m in [Model::Lp64, Model::Ilp32] {
        let mut b = [0u8; 48];
        put(&mut b, 0, &8i32.to_ne_bytes());
        put(&mut b, 8, &0x1000u32.to_ne_bytes());
        put(&mut b, m.databuf(), &16i32.to_ne_bytes());
        put(&mut b, m.databuf() + 8, &0x2000u32.to_ne_bytes());
        let before = b;
        let r = m.pmsg_results(&mut b, -1, 5, 7, -3);
        check_eq!(r, Some(4..m.size(Layout::StrPmsg)));
        let (c, d, band, flags) = m.strpmsg(&b);
        check_eq!((c.maxlen, c.len, c.buf), (8, -1, 0x1000));
        check_eq!((d.maxlen, d.len, d.buf), (16, 5, 0x2000));
        check_eq!((band, flags), (7, -3));
        // Nothing past the structure is touched.
        check_eq!(
            b.get(m.size(Layout::StrPmsg)..),
            before.get(m.size(Layout::StrPmsg)..)
        );
        // Exactly the structure's bytes (what the kernel's I_GETPMSG copies in) suffice.
        let n = m.size(Layout::StrPmsg);
        let mut exact = [0u8; 48];
        let exact = &mut exact[..n];
        exact.copy_from_slice(&before[..n]);
        check_eq!(m.pmsg_results(exact, -1, 5, 7, -3), Some(4..n));
        check_eq!(m.strpmsg(exact), m.strpmsg(&b));
        // A buffer shorter than the structure is refused, not written out of bounds.
        let mut short = [0u8; 48];
        check_eq!(
            m.pmsg_results(&mut short[..m.size(Layout::StrPmsg) - 1], 1, 1, 1, 1),
            None
        );
    }
    // struct strioctl32 { 7, -1, 4, 0xdead0000 }: a high address stays zero-extended.
    let mut b = [0u8; 16];
    for (off, v) in [(0, 7), (4, -1), (8, 4)] {
        put(&mut b, off, &i32::to_ne_bytes(v));
    }
    put(&mut b, 12, &0xdead_0000u32.to_ne_bytes());
    check_eq!(m.strioctl(&b), (7, -1, 4, 0xdead_0000));
    // struct str_list32 { 3, 0x3000 }
    let mut b = [0u8; 8];
    put(&mut b, 0, &3i32.to_ne_bytes());
    put(&mut b, 4, &0x3000u32.to_ne_bytes());
    check_eq!(m.str_list(&b), (3, 0x3000));
    // A short buffer decodes as zeros, never out of bounds.
    check_eq!(m.str_list(&b[..2]), (0, 0));
    Ok(())
}

fn lp64_decoding_and_long() -> TestResult {
    let m = Model::Lp64;
    let mut b = [0u8; 40];
    put(&mut b, 0, &(-1i32).to_ne_bytes());
    put(&mut b, 16, &64i32.to_ne_bytes());
    put(&mut b, 24, &0x7fff_0000_1000u64.to_ne_bytes());
    put(&mut b, 32, &1i64.to_ne_bytes());
    let (c, d, flags) = m.strpeek(&b);
    check_eq!(
        (c.maxlen, d.maxlen, d.buf, flags),
        (-1, 64, 0x7fff_0000_1000, 1)
    );
    let (l, n) = Model::Lp64.long_bytes(1);
    check_eq!((l, n), (1i64.to_ne_bytes(), 8));
    let (l, n) = Model::Ilp32.long_bytes(1);
    check_eq!((l.get(..4), n), (Some(&1i32.to_ne_bytes()[..]), 4));
    Ok(())
}

ktest_suite!(STH_LAYOUT_SUITE, "streams_sth_layout":
    sizes_and_offsets,
    ilp32_decoding,
    lp64_decoding_and_long,
);
