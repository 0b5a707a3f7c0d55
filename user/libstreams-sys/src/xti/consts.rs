//! The numbers of `<xti.h>`, `<xti_inet.h>` and `<sys/tpi.h>` for Rust: the LfS values, the
//! same as the C headers (the C test compares them one by one).

#![allow(missing_docs)]

use libc::c_int;

// The numbers XTI shares with TPI (t_errno = TLI_error, service types, option management,
// XTI_GENERIC): one file with the driver, `rust/tpi_udp/src/tihdr.rs`.
pub use super::tihdr::{
    TACCES, TADDRBUSY, TBADADDR, TBADDATA, TBADF, TBADFLAG, TBADNAME, TBADOPT, TBADQLEN, TBADSEQ,
    TBUFOVFLW, TFLOW, TINDOUT, TLOOK, TNOADDR, TNODATA, TNODIS, TNOREL, TNOSTRUCTYPE, TNOTSUPPORT,
    TNOUDERR, TOUTSTATE, TPROTO, TPROVMISMATCH, TQFULL, TRESADDR, TRESQLEN, TSTATECHNG, TSYSERR,
    T_ALLOPT, T_CHECK, T_CLTS, T_COTS, T_COTS_ORD, T_CURRENT, T_DEFAULT, T_FAILURE, T_INFINITE,
    T_INVALID, T_NEGOTIATE, T_NOTSUPPORT, T_PARTSUCCESS, T_READONLY, T_SNDZERO, T_SUCCESS,
    T_XPG4_1, XTI_DEBUG, XTI_GENERIC, XTI_LINGER, XTI_RCVBUF, XTI_RCVLOWAT, XTI_SNDBUF,
    XTI_SNDLOWAT,
};

/// The largest t_errno value.
pub const T_ERRNO_MAX: c_int = TPROTO;

// Provider flags (XTI's names).
pub const T_SENDZERO: i32 = 0x001;
pub const T_ORDRELDATA: i32 = 0x002;
pub const XPG4_1: i32 = 0x100;

// Data flags.
pub const T_MORE: c_int = 0x001;
pub const T_EXPEDITED: c_int = 0x002;
pub const T_PUSH: c_int = 0x004;

// General values.
pub const T_UNSPEC: i32 = !0 - 2;
pub const T_NO: i32 = 0;
pub const T_YES: i32 = 1;
pub const T_GARBAGE: i32 = 2;
pub const T_UNUSED: i32 = -1;
pub const T_NULL: i32 = 0;
pub const T_ABSREQ: i32 = 0x8000;

// t_look events.
pub const T_LISTEN: c_int = 0x0001;
pub const T_CONNECT: c_int = 0x0002;
pub const T_DATA: c_int = 0x0004;
pub const T_EXDATA: c_int = 0x0008;
pub const T_DISCONNECT: c_int = 0x0010;
pub const T_UDERR: c_int = 0x0040;
pub const T_ORDREL: c_int = 0x0080;
pub const T_GODATA: c_int = 0x0100;
pub const T_GOEXDATA: c_int = 0x0200;
pub const T_LEAFCHANGE: c_int = 0x0400;
pub const T_EVENTS: c_int = 0x0800;
pub const T_ERROR: c_int = !0;

// t_alloc structure types.
pub const T_BIND: c_int = 1;
pub const T_OPTMGMT: c_int = 2;
pub const T_CALL: c_int = 3;
pub const T_DIS: c_int = 4;
pub const T_UNITDATA: c_int = 5;
pub const T_UDERROR: c_int = 6;
pub const T_INFO: c_int = 7;

// t_alloc fields.
pub const T_ADDR: c_int = 0x0001;
pub const T_OPT: c_int = 0x0002;
pub const T_UDATA: c_int = 0x0004;
pub const T_ALL: c_int = 0xffff;

// XTI states (t_getstate).
pub const T_UNINIT: c_int = 0;
pub const T_UNBND: c_int = 1;
pub const T_IDLE: c_int = 2;
pub const T_OUTCON: c_int = 3;
pub const T_INCON: c_int = 4;
pub const T_DATAXFER: c_int = 5;
pub const T_OUTREL: c_int = 6;
pub const T_INREL: c_int = 7;

pub const T_LEAF_NOCHANGE: c_int = 0;
pub const T_LEAF_CONNECTED: c_int = 1;
pub const T_LEAF_DISCONNECTED: c_int = 2;

pub const T_IOV_MAX: c_int = 16;

// XTI_GENERIC options.
pub const XTI_REUSEADDR: u32 = 0x2001;
pub const XTI_DONTROUTE: u32 = 0x2002;
pub const XTI_BROADCAST: u32 = 0x2003;
pub const XTI_KEEPALIVE: u32 = 0x2004;
pub const XTI_PRIORITY: u32 = 0x2005;

// Internet levels and options (<xti_inet.h>).
pub const T_INET_IP: u32 = 0;
pub const T_INET_TCP: u32 = 6;
pub const T_INET_UDP: u32 = 17;
pub const T_IP_OPTIONS: u32 = 1;
pub const T_IP_TOS: u32 = 2;
pub const T_IP_TTL: u32 = 3;
pub const T_IP_REUSEADDR: u32 = 4;
pub const T_IP_DONTROUTE: u32 = 5;
pub const T_IP_BROADCAST: u32 = 6;
pub const T_IP_ADDR: u32 = 7;
pub const T_UDP_CHECKSUM: u32 = 1;
pub const T_TCP_NODELAY: u32 = 1;
pub const T_TCP_MAXSEG: u32 = 2;
pub const T_TCP_KEEPALIVE: u32 = 3;
pub const T_ROUTINE: i32 = 0;
pub const T_PRIORITY: i32 = 1;
pub const T_IMMEDIATE: i32 = 2;
pub const T_FLASH: i32 = 3;
pub const T_OVERRIDEFLASH: i32 = 4;
pub const T_CRITIC_ECP: i32 = 5;
pub const T_INETCONTROL: i32 = 6;
pub const T_NETCONTROL: i32 = 7;
pub const T_NOTOS: i32 = 0;
pub const T_LDELAY: i32 = 1 << 4;
pub const T_HITHRPT: i32 = 1 << 3;
pub const T_HIREL: i32 = 1 << 2;
pub const T_LOCOST: i32 = 1 << 1;
