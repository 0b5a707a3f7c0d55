//! The kernel decodes the ioctl structures that embed a pointer with
//! `streams_core::sth::layout` (both data models, for `compat_ioctl`). Its 64-bit layout must be
//! the native one of libstreams' `#[repr(C)]` types, which `c_abi.rs` checks against the C
//! header: so the kernel reads what a C program wrote.

use std::mem::{offset_of, size_of};
use streams as s;
use streams_core::sth::layout::{Layout, Model};

#[test]
fn kernel_lp64_layout_is_the_native_one() {
    let m = Model::Lp64;
    assert_eq!(m.strbuf_size(), size_of::<s::strbuf>());
    assert_eq!(m.size(Layout::StrIoctl), size_of::<s::strioctl>());
    assert_eq!(m.ic_dp(), offset_of!(s::strioctl, ic_dp));
    assert_eq!(m.size(Layout::StrPmsg), size_of::<s::strpmsg>());
    assert_eq!(m.databuf(), offset_of!(s::strpmsg, databuf));
    assert_eq!(m.pmsg_band(), offset_of!(s::strpmsg, band));
    assert_eq!(m.pmsg_flags(), offset_of!(s::strpmsg, flags));
    assert_eq!(m.size(Layout::StrPeek), size_of::<s::strpeek>());
    assert_eq!(m.databuf(), offset_of!(s::strpeek, databuf));
    assert_eq!(m.peek_flags(), offset_of!(s::strpeek, flags));
    assert_eq!(m.size(Layout::StrList), size_of::<s::str_list>());
    assert_eq!(m.ptr(), offset_of!(s::str_list, sl_modlist));
}

#[test]
fn kernel_decodes_what_the_library_writes() {
    let (mut c, mut d) = ([0u8; 4], [0u8; 8]);
    let p = s::strpmsg {
        ctlbuf: s::strbuf {
            maxlen: 4,
            len: 2,
            buf: c.as_mut_ptr().cast(),
        },
        databuf: s::strbuf {
            maxlen: 8,
            len: -1,
            buf: d.as_mut_ptr().cast(),
        },
        band: 3,
        flags: s::MSG_BAND,
    };
    // SAFETY: `p` is a plain #[repr(C)] value; its bytes (padding included) are readable.
    let bytes = unsafe {
        std::slice::from_raw_parts(
            (&p as *const s::strpmsg).cast::<u8>(),
            size_of::<s::strpmsg>(),
        )
    };
    let (kc, kd, band, flags) = Model::Lp64.strpmsg(bytes);
    assert_eq!((kc.maxlen, kc.len, kc.buf), (4, 2, c.as_ptr() as usize));
    assert_eq!((kd.maxlen, kd.len, kd.buf), (8, -1, d.as_ptr() as usize));
    assert_eq!((band, flags), (3, s::MSG_BAND));
}
