//! The numbers of `<xti.h>`, `<xti_inet.h>` and `<sys/tpi.h>` for Rust: the LfS values, the
//! same as the C headers (the C test compares them one by one).

#![allow(missing_docs)]

use libc::c_int;

// Transport errors (t_errno, T_error_ack.TLI_error).
pub const TBADADDR: c_int = 1;
pub const TBADOPT: c_int = 2;
pub const TACCES: c_int = 3;
pub const TBADF: c_int = 4;
pub const TNOADDR: c_int = 5;
pub const TOUTSTATE: c_int = 6;
pub const TBADSEQ: c_int = 7;
pub const TSYSERR: c_int = 8;
pub const TLOOK: c_int = 9;
pub const TBADDATA: c_int = 10;
pub const TBUFOVFLW: c_int = 11;
pub const TFLOW: c_int = 12;
pub const TNODATA: c_int = 13;
pub const TNODIS: c_int = 14;
pub const TNOUDERR: c_int = 15;
pub const TBADFLAG: c_int = 16;
pub const TNOREL: c_int = 17;
pub const TNOTSUPPORT: c_int = 18;
pub const TSTATECHNG: c_int = 19;
pub const TNOSTRUCTYPE: c_int = 20;
pub const TBADNAME: c_int = 21;
pub const TBADQLEN: c_int = 22;
pub const TADDRBUSY: c_int = 23;
pub const TINDOUT: c_int = 24;
pub const TPROVMISMATCH: c_int = 25;
pub const TRESQLEN: c_int = 26;
pub const TRESADDR: c_int = 27;
pub const TQFULL: c_int = 28;
pub const TPROTO: c_int = 29;
/// The largest t_errno value.
pub const T_ERRNO_MAX: c_int = TPROTO;

// Service types.
pub const T_COTS: i32 = 1;
pub const T_COTS_ORD: i32 = 2;
pub const T_CLTS: i32 = 3;

// Provider flags.
pub const T_SNDZERO: i32 = 0x001;
pub const T_SENDZERO: i32 = 0x001;
pub const T_ORDRELDATA: i32 = 0x002;
pub const XPG4_1: i32 = 0x100;
pub const T_XPG4_1: i32 = 0x100;

// Data and option management flags.
pub const T_MORE: c_int = 0x001;
pub const T_EXPEDITED: c_int = 0x002;
pub const T_PUSH: c_int = 0x004;
pub const T_NEGOTIATE: i32 = 0x004;
pub const T_CHECK: i32 = 0x008;
pub const T_DEFAULT: i32 = 0x010;
pub const T_SUCCESS: u32 = 0x020;
pub const T_FAILURE: u32 = 0x040;
pub const T_CURRENT: i32 = 0x080;
pub const T_PARTSUCCESS: u32 = 0x100;
pub const T_READONLY: u32 = 0x200;
pub const T_NOTSUPPORT: u32 = 0x400;
pub const T_ALLOPT: u32 = 0;

// General values.
pub const T_UNSPEC: i32 = !0 - 2;
pub const T_INVALID: i32 = -2;
pub const T_INFINITE: i32 = -1;
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
pub const XTI_GENERIC: u32 = 0xffff;
pub const XTI_DEBUG: u32 = 0x0001;
pub const XTI_LINGER: u32 = 0x0080;
pub const XTI_SNDBUF: u32 = 0x1001;
pub const XTI_RCVBUF: u32 = 0x1002;
pub const XTI_SNDLOWAT: u32 = 0x1003;
pub const XTI_RCVLOWAT: u32 = 0x1004;
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
