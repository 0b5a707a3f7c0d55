//! The few XTI functions, structures and constants perftest uses, declared from X/Open XNS 5
//! `<xti.h>` with the Linux Fast-STREAMS ABI (t_scalar_t = int32_t, t_uscalar_t = uint32_t,
//! `struct netbuf { unsigned int maxlen; unsigned int len; char *buf; }`).
//!
//! Where they come from: libxnet, the C functions of rstreams' XTI library
//! (`user/libstreams-sys/src/xti/ffi.rs`, exported unmangled from the `streams` crate that
//! perftest already links; also `libstreams.a`/`.so` for C programs). Nothing here names a
//! library: the symbols resolve from the `streams` rlib at link time, so this file is compiled
//! only with the cargo feature `xti`, which needs a libstreams-sys that has the XTI functions
//! (see docs/perftest.md, "UDP test").

#![allow(non_camel_case_types)]

use libc::{c_char, c_int, c_uint};

/// `struct netbuf`.
#[repr(C)]
pub struct netbuf {
    pub maxlen: c_uint,
    pub len: c_uint,
    pub buf: *mut c_char,
}

impl netbuf {
    /// A buffer of `b` holding `len` bytes.
    pub fn of(b: &mut [u8], len: usize) -> netbuf {
        netbuf {
            maxlen: c_uint::try_from(b.len()).unwrap_or(c_uint::MAX),
            len: c_uint::try_from(len).unwrap_or(c_uint::MAX),
            buf: b.as_mut_ptr().cast(),
        }
    }

    /// No buffer (not wanted / not given).
    pub fn none() -> netbuf {
        netbuf {
            maxlen: 0,
            len: 0,
            buf: std::ptr::null_mut(),
        }
    }
}

/// `struct t_info`.
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
pub struct t_info {
    pub addr: i32,
    pub options: i32,
    pub tsdu: i32,
    pub etsdu: i32,
    pub connect: i32,
    pub discon: i32,
    pub servtype: i32,
    pub flags: i32,
    pub tidu: i32,
}

/// `struct t_bind`.
#[repr(C)]
pub struct t_bind {
    pub addr: netbuf,
    pub qlen: c_uint,
}

/// `struct t_optmgmt`.
#[repr(C)]
pub struct t_optmgmt {
    pub opt: netbuf,
    pub flags: i32,
}

/// `struct t_unitdata`.
#[repr(C)]
pub struct t_unitdata {
    pub addr: netbuf,
    pub opt: netbuf,
    pub udata: netbuf,
}

/// `struct t_uderr`.
#[repr(C)]
pub struct t_uderr {
    pub addr: netbuf,
    pub opt: netbuf,
    pub error: i32,
}

/// `struct t_opthdr`, followed by the value, each option aligned to a t_uscalar_t.
#[repr(C)]
pub struct t_opthdr {
    pub len: u32,
    pub level: u32,
    pub name: u32,
    pub status: u32,
}

pub const TBADF: c_int = 4;
pub const TSYSERR: c_int = 8;
pub const TLOOK: c_int = 9;
pub const TFLOW: c_int = 12;
pub const TNODATA: c_int = 13;
pub const TBADNAME: c_int = 21;
pub const T_CLTS: i32 = 3;
pub const T_MORE: c_int = 0x001;
pub const T_NEGOTIATE: i32 = 0x004;
pub const T_SUCCESS: u32 = 0x020;
pub const T_UDERR: c_int = 0x0040;
pub const XTI_GENERIC: u32 = 0xffff;
pub const XTI_SNDBUF: u32 = 0x1001;
pub const XTI_RCVBUF: u32 = 0x1002;

extern "C" {
    /// The calling thread's t_errno (`#define t_errno (*(_t_errno()))`).
    pub fn _t_errno() -> *mut c_int;
    pub fn t_open(name: *const c_char, oflag: c_int, info: *mut t_info) -> c_int;
    pub fn t_close(fd: c_int) -> c_int;
    pub fn t_bind(fd: c_int, req: *const t_bind, ret: *mut t_bind) -> c_int;
    pub fn t_optmgmt(fd: c_int, req: *const t_optmgmt, ret: *mut t_optmgmt) -> c_int;
    pub fn t_sndudata(fd: c_int, unitdata: *const t_unitdata) -> c_int;
    pub fn t_rcvudata(fd: c_int, unitdata: *mut t_unitdata, flags: *mut c_int) -> c_int;
    pub fn t_rcvuderr(fd: c_int, uderr: *mut t_uderr) -> c_int;
    pub fn t_look(fd: c_int) -> c_int;
    pub fn t_strerror(errnum: c_int) -> *const c_char;
}
