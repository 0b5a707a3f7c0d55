//! The `<xti.h>` structures, `#[repr(C)]` with the LfS layouts (the C test checks every size
//! and offset against the header).

#![allow(non_camel_case_types)]

use libc::{c_char, c_int, c_uint, c_void};

/// A buffer: `maxlen` bytes at `buf`, of which `len` are used.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct netbuf {
    /// Size of `buf`.
    pub maxlen: c_uint,
    /// Bytes used.
    pub len: c_uint,
    /// The bytes (may be null when `maxlen` is 0).
    pub buf: *mut c_char,
}

impl netbuf {
    /// No buffer.
    pub const EMPTY: netbuf = netbuf {
        maxlen: 0,
        len: 0,
        buf: core::ptr::null_mut(),
    };
}

/// The provider's limits (t_open, t_getinfo).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct t_info {
    /// Largest address.
    pub addr: i32,
    /// Largest option buffer.
    pub options: i32,
    /// Largest TSDU.
    pub tsdu: i32,
    /// Largest expedited TSDU.
    pub etsdu: i32,
    /// Data with connection establishment.
    pub connect: i32,
    /// Data with disconnection.
    pub discon: i32,
    /// T_COTS, T_COTS_ORD, T_CLTS.
    pub servtype: i32,
    /// T_SENDZERO, T_ORDRELDATA.
    pub flags: i32,
    /// Largest interface data unit.
    pub tidu: i32,
}

/// t_bind's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_bind {
    /// The address.
    pub addr: netbuf,
    /// Connection indications (ignored on T_CLTS).
    pub qlen: c_uint,
}

/// t_optmgmt's argument.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_optmgmt {
    /// The option buffer (`t_opthdr`s).
    pub opt: netbuf,
    /// T_NEGOTIATE, T_CHECK, T_DEFAULT, T_CURRENT; on return the overall result.
    pub flags: i32,
}

/// t_rcvdis/t_snddis data.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_discon {
    /// User data.
    pub udata: netbuf,
    /// Reason.
    pub reason: c_int,
    /// Sequence number.
    pub sequence: c_int,
}

/// t_connect/t_listen/t_accept data.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_call {
    /// Address.
    pub addr: netbuf,
    /// Options.
    pub opt: netbuf,
    /// User data.
    pub udata: netbuf,
    /// Sequence number.
    pub sequence: c_int,
}

/// A datagram (t_sndudata/t_rcvudata).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_unitdata {
    /// Peer address.
    pub addr: netbuf,
    /// Options.
    pub opt: netbuf,
    /// The data.
    pub udata: netbuf,
}

/// A datagram error (t_rcvuderr).
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_uderr {
    /// Destination of the failed datagram.
    pub addr: netbuf,
    /// Its options.
    pub opt: netbuf,
    /// The provider's error code.
    pub error: i32,
}

/// t_rcvleafchange's result.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_leaf_status {
    /// The leaf.
    pub leafid: c_int,
    /// T_CONNECT or T_DISCONNECT.
    pub status: c_int,
    /// Disconnect reason.
    pub reason: c_int,
}

/// One option header in an option buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct t_opthdr {
    /// Header plus value, in bytes.
    pub len: u32,
    /// Level.
    pub level: u32,
    /// Name.
    pub name: u32,
    /// Negotiation result.
    pub status: u32,
}

/// A piece of a vectored t_sndv/t_rcvv buffer.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_iovec {
    /// Start.
    pub iov_base: *mut c_void,
    /// Length.
    pub iov_len: usize,
}

/// XTI_LINGER's value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_linger {
    /// T_YES/T_NO.
    pub l_onoff: i32,
    /// Seconds.
    pub l_linger: i32,
}

/// T_TCP_KEEPALIVE's value.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct t_kpalive {
    /// T_YES/T_NO.
    pub kp_onoff: i32,
    /// Minutes.
    pub kp_timeout: i32,
}
