//! The TPI numbers both sides of the interface use: LfS `<sys/tihdr.h>` and `<sys/tpi.h>`
//! (primitives, `TS_*` states, TPI errors, service types, option management flags and status)
//! and the XTI_GENERIC options of `<sys/xti_xti.h>`. Written once here: the driver
//! (`rust/tpi_udp`, kernel and host) mounts this file as a module, and the user-space XTI
//! library (`user/libstreams-sys/src/xti/`) mounts the same file with `#[path]`, so the two
//! cannot drift; libxnet's C test compares the user side with the C headers value by value.
//!
//! Plain constants only: no imports, no code (it must compile in both crates, `no_std` and
//! `std`). `t_scalar_t` is `i32`, `t_uscalar_t` `u32`, as in LfS.

// --- Primitive numbers (`PRIM_type`). ---
/// T_CONN_REQ (connection oriented).
pub const T_CONN_REQ: i32 = 0;
/// T_CONN_RES.
pub const T_CONN_RES: i32 = 1;
/// T_DISCON_REQ.
pub const T_DISCON_REQ: i32 = 2;
/// T_DATA_REQ.
pub const T_DATA_REQ: i32 = 3;
/// T_EXDATA_REQ.
pub const T_EXDATA_REQ: i32 = 4;
/// T_INFO_REQ: ask for the provider's limits and state.
pub const T_INFO_REQ: i32 = 5;
/// T_BIND_REQ: bind a transport address.
pub const T_BIND_REQ: i32 = 6;
/// T_UNBIND_REQ: unbind it.
pub const T_UNBIND_REQ: i32 = 7;
/// T_UNITDATA_REQ: send a datagram.
pub const T_UNITDATA_REQ: i32 = 8;
/// T_OPTMGMT_REQ: manage options.
pub const T_OPTMGMT_REQ: i32 = 9;
/// T_ORDREL_REQ.
pub const T_ORDREL_REQ: i32 = 10;
/// T_CONN_IND.
pub const T_CONN_IND: i32 = 11;
/// T_CONN_CON.
pub const T_CONN_CON: i32 = 12;
/// T_DISCON_IND.
pub const T_DISCON_IND: i32 = 13;
/// T_DATA_IND.
pub const T_DATA_IND: i32 = 14;
/// T_EXDATA_IND.
pub const T_EXDATA_IND: i32 = 15;
/// T_INFO_ACK.
pub const T_INFO_ACK: i32 = 16;
/// T_BIND_ACK.
pub const T_BIND_ACK: i32 = 17;
/// T_ERROR_ACK.
pub const T_ERROR_ACK: i32 = 18;
/// T_OK_ACK.
pub const T_OK_ACK: i32 = 19;
/// T_UNITDATA_IND: a datagram arrived.
pub const T_UNITDATA_IND: i32 = 20;
/// T_UDERROR_IND: a datagram sent could not be delivered.
pub const T_UDERROR_IND: i32 = 21;
/// T_OPTMGMT_ACK.
pub const T_OPTMGMT_ACK: i32 = 22;
/// T_ORDREL_IND.
pub const T_ORDREL_IND: i32 = 23;
/// T_OPTDATA_REQ.
pub const T_OPTDATA_REQ: i32 = 24;
/// T_ADDR_REQ: ask for the bound (and peer) address.
pub const T_ADDR_REQ: i32 = 25;
/// T_OPTDATA_IND.
pub const T_OPTDATA_IND: i32 = 26;
/// T_ADDR_ACK.
pub const T_ADDR_ACK: i32 = 27;
/// T_CAPABILITY_REQ.
pub const T_CAPABILITY_REQ: i32 = 28;
/// T_CAPABILITY_ACK.
pub const T_CAPABILITY_ACK: i32 = 29;

// --- Provider states (`CURRENT_state` of T_INFO_ACK). ---
/// Unbound.
pub const TS_UNBND: i32 = 0;
/// Waiting for the acknowledgement of a T_BIND_REQ.
pub const TS_WACK_BREQ: i32 = 1;
/// Waiting for the acknowledgement of a T_UNBIND_REQ.
pub const TS_WACK_UREQ: i32 = 2;
/// Idle: bound (datagrams flow on a T_CLTS provider).
pub const TS_IDLE: i32 = 3;
/// Waiting for the acknowledgement of a T_OPTMGMT_REQ.
pub const TS_WACK_OPTREQ: i32 = 4;
/// Waiting for the acknowledgement of a T_CONN_REQ.
pub const TS_WACK_CREQ: i32 = 5;
/// Waiting for T_CONN_CON.
pub const TS_WCON_CREQ: i32 = 6;
/// Waiting for T_CONN_RES after T_CONN_IND.
pub const TS_WRES_CIND: i32 = 7;
/// Waiting for the acknowledgement of a T_CONN_RES.
pub const TS_WACK_CRES: i32 = 8;
/// Data transfer.
pub const TS_DATA_XFER: i32 = 9;
/// Waiting for T_ORDREL_IND.
pub const TS_WIND_ORDREL: i32 = 10;
/// Waiting to send T_ORDREL_REQ.
pub const TS_WREQ_ORDREL: i32 = 11;
/// Waiting for the acknowledgement of a T_DISCON_REQ (from TS_WCON_CREQ).
pub const TS_WACK_DREQ6: i32 = 12;
/// … from TS_WRES_CIND.
pub const TS_WACK_DREQ7: i32 = 13;
/// … from TS_DATA_XFER.
pub const TS_WACK_DREQ9: i32 = 14;
/// … from TS_WIND_ORDREL.
pub const TS_WACK_DREQ10: i32 = 15;
/// … from TS_WREQ_ORDREL.
pub const TS_WACK_DREQ11: i32 = 16;
/// Number of states.
pub const TS_NOSTATES: i32 = 17;

// --- TPI errors (`TLI_error`; XTI's t_errno has the same numbers). ---
/// Bad address format.
pub const TBADADDR: i32 = 1;
/// Bad options format.
pub const TBADOPT: i32 = 2;
/// Bad permissions.
pub const TACCES: i32 = 3;
/// Bad file descriptor (XTI).
pub const TBADF: i32 = 4;
/// Could not allocate an address.
pub const TNOADDR: i32 = 5;
/// Would place the interface out of state.
pub const TOUTSTATE: i32 = 6;
/// Bad sequence number.
pub const TBADSEQ: i32 = 7;
/// System error (`UNIX_error` says which).
pub const TSYSERR: i32 = 8;
/// An event requires attention (XTI).
pub const TLOOK: i32 = 9;
/// Bad amount of data.
pub const TBADDATA: i32 = 10;
/// Buffer too small (XTI).
pub const TBUFOVFLW: i32 = 11;
/// Flow control (XTI).
pub const TFLOW: i32 = 12;
/// No data (XTI).
pub const TNODATA: i32 = 13;
/// No disconnect indication (XTI).
pub const TNODIS: i32 = 14;
/// No unitdata error indication (XTI).
pub const TNOUDERR: i32 = 15;
/// Bad flags.
pub const TBADFLAG: i32 = 16;
/// No orderly release indication (XTI).
pub const TNOREL: i32 = 17;
/// Primitive not supported.
pub const TNOTSUPPORT: i32 = 18;
/// State is changing (XTI).
pub const TSTATECHNG: i32 = 19;
/// Unsupported structure type (XTI).
pub const TNOSTRUCTYPE: i32 = 20;
/// Bad transport provider name (XTI).
pub const TBADNAME: i32 = 21;
/// Listener queue length is zero.
pub const TBADQLEN: i32 = 22;
/// Address already in use.
pub const TADDRBUSY: i32 = 23;
/// Outstanding connection indications.
pub const TINDOUT: i32 = 24;
/// Not the same transport provider.
pub const TPROVMISMATCH: i32 = 25;
/// Connection accepted on a listening endpoint.
pub const TRESQLEN: i32 = 26;
/// Connection accepted on a different address.
pub const TRESADDR: i32 = 27;
/// Incoming connection queue full.
pub const TQFULL: i32 = 28;
/// Protocol error.
pub const TPROTO: i32 = 29;

// --- Service types, provider flags, sizes. ---
/// Connection-oriented service.
pub const T_COTS: i32 = 1;
/// Connection-oriented service with orderly release.
pub const T_COTS_ORD: i32 = 2;
/// Connectionless transport service.
pub const T_CLTS: i32 = 3;
/// The provider accepts zero-length TSDUs.
pub const T_SNDZERO: i32 = 0x001;
/// XPG4.1: T_ADDR_REQ/T_ADDR_ACK supported.
pub const T_XPG4_1: i32 = 0x100;
/// Unbounded size.
pub const T_INFINITE: i32 = -1;
/// Not applicable to this service.
pub const T_INVALID: i32 = -2;

// --- Option management (`MGMT_flags`) and option status. ---
/// Negotiate and set.
pub const T_NEGOTIATE: i32 = 0x0004;
/// Check.
pub const T_CHECK: i32 = 0x0008;
/// Default values.
pub const T_DEFAULT: i32 = 0x0010;
/// Success.
pub const T_SUCCESS: u32 = 0x0020;
/// Failure.
pub const T_FAILURE: u32 = 0x0040;
/// Current values.
pub const T_CURRENT: i32 = 0x0080;
/// Partial success (a value was adjusted).
pub const T_PARTSUCCESS: u32 = 0x0100;
/// Read-only option.
pub const T_READONLY: u32 = 0x0200;
/// Unsupported option.
pub const T_NOTSUPPORT: u32 = 0x0400;
/// All options of a level (`name`).
pub const T_ALLOPT: u32 = 0;

// --- XTI_GENERIC level and its options. ---
/// XTI generic level.
pub const XTI_GENERIC: u32 = 0xffff;
/// Debugging (an array of up to 4 u32).
pub const XTI_DEBUG: u32 = 0x0001;
/// Linger on close.
pub const XTI_LINGER: u32 = 0x0080;
/// Send buffer size.
pub const XTI_SNDBUF: u32 = 0x1001;
/// Receive buffer size.
pub const XTI_RCVBUF: u32 = 0x1002;
/// Send low-water mark.
pub const XTI_SNDLOWAT: u32 = 0x1003;
/// Receive low-water mark.
pub const XTI_RCVLOWAT: u32 = 0x1004;
