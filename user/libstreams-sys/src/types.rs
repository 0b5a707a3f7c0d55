//! The `<stropts.h>` structures, `#[repr(C)]` with the SVR4/LfS layouts (x86_64: `long` is 8
//! bytes, pointers 8). The C test checks sizes and offsets against the header.

#![allow(non_camel_case_types)]

use libc::{c_char, c_int, c_long, gid_t, uid_t};

/// One part of a message for putmsg/getmsg.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct strbuf {
    /// Size of `buf` (getmsg); -1: do not process this part.
    pub maxlen: c_int,
    /// Bytes in `buf` (putmsg: -1 = no part; getmsg: -1 = the message had no such part).
    pub len: c_int,
    /// The bytes.
    pub buf: *mut c_char,
}

impl strbuf {
    /// "No part" (putmsg) / "do not process" (getmsg).
    pub const NONE: strbuf = strbuf {
        maxlen: -1,
        len: -1,
        buf: core::ptr::null_mut(),
    };
}

/// I_PEEK's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct strpeek {
    /// Control part.
    pub ctlbuf: strbuf,
    /// Data part.
    pub databuf: strbuf,
    /// RS_HIPRI or 0.
    pub flags: c_long,
}

/// I_FDINSERT's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct strfdinsert {
    /// Control part.
    pub ctlbuf: strbuf,
    /// Data part.
    pub databuf: strbuf,
    /// RS_HIPRI or 0.
    pub flags: c_long,
    /// The Stream whose read queue pointer is inserted.
    pub fildes: c_int,
    /// Where in the control part.
    pub offset: c_int,
}

/// I_STR's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct strioctl {
    /// Command for the module or driver.
    pub ic_cmd: c_int,
    /// Timeout in seconds (-1 infinite, 0 default).
    pub ic_timout: c_int,
    /// Bytes at `ic_dp` (in and out).
    pub ic_len: c_int,
    /// The data.
    pub ic_dp: *mut c_char,
}

/// I_RECVFD's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct strrecvfd {
    /// The received descriptor.
    pub fd: c_int,
    /// Sender's user id.
    pub uid: uid_t,
    /// Sender's group id.
    pub gid: gid_t,
    /// Padding (SVR4 compatibility).
    pub fill: [c_char; 8],
}

/// One module name of I_LIST.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct str_mlist {
    /// NUL-terminated name.
    pub l_name: [c_char; 9],
}

/// I_LIST's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct str_list {
    /// Entries at `sl_modlist`.
    pub sl_nmods: c_int,
    /// The names.
    pub sl_modlist: *mut str_mlist,
}

/// I_FLUSHBAND's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct bandinfo {
    /// The band.
    pub bi_pri: u8,
    /// FLUSHR/FLUSHW/FLUSHRW.
    pub bi_flag: c_int,
}

/// I_GETPMSG/I_PUTPMSG's argument (LfS, Mac OT).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct strpmsg {
    /// Control part.
    pub ctlbuf: strbuf,
    /// Data part.
    pub databuf: strbuf,
    /// putpmsg: the band; getpmsg: in the lowest band wanted, out the message's band.
    pub band: c_int,
    /// putpmsg: 0, MSG_BAND or MSG_HIPRI; getpmsg: in MSG_ANY/MSG_BAND/MSG_HIPRI, out
    /// MSG_HIPRI or MSG_BAND.
    pub flags: c_int,
}
