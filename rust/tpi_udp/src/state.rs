//! The TPI state machine of a connectionless (T_CLTS) endpoint.
//!
//! ```text
//!            T_BIND_REQ                 T_BIND_ACK
//!  TS_UNBND ───────────▶ TS_WACK_BREQ ───────────▶ TS_IDLE ◀──┐ T_UNITDATA_REQ/IND,
//!     ▲ ▲                    │ T_ERROR_ACK            │   └───┘ T_UDERROR_IND
//!     │ └────────────────────┘                        │ T_UNBIND_REQ
//!     └──────────── T_OK_ACK ◀── TS_WACK_UREQ ◀───────┘
//!  T_OPTMGMT_REQ: TS_UNBND or TS_IDLE ─▶ TS_WACK_OPTREQ ─▶ back (answered at once)
//! ```
//!
//! T_INFO_REQ and T_ADDR_REQ are valid in every state. A primitive in the wrong state gets
//! T_ERROR_ACK TOUTSTATE, except T_UNITDATA_REQ, which has no acknowledgement: a datagram
//! sent out of state is a protocol error, answered with M_ERROR EPROTO (TPI).

use super::prim::*;

/// `TS_*`: the provider's state (LfS `<sys/tihdr.h>` numbers, what T_INFO_ACK reports).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TpiState {
    /// TS_UNBND: unbound.
    Unbnd = 0,
    /// TS_WACK_BREQ: a bind is in progress (outside the Stream lock).
    WackBreq = 1,
    /// TS_WACK_UREQ: an unbind is in progress.
    WackUreq = 2,
    /// TS_IDLE: bound, datagrams flow.
    Idle = 3,
    /// TS_WACK_OPTREQ: options are being managed.
    WackOptreq = 4,
}

impl TpiState {
    /// The `TS_*` number.
    pub fn ts(self) -> i32 {
        self as i32
    }
}

/// What a request may do in a state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Go ahead.
    Ok,
    /// T_ERROR_ACK TOUTSTATE.
    OutState,
    /// M_ERROR EPROTO (a T_UNITDATA_REQ out of state).
    Fatal,
    /// T_ERROR_ACK TNOTSUPPORT (not a T_CLTS primitive).
    NotSupported,
}

/// Whether primitive `prim` is valid in state `s` (the table of the module docs).
pub fn check(prim: i32, s: TpiState) -> Verdict {
    use TpiState::*;
    match prim {
        T_INFO_REQ | T_ADDR_REQ => Verdict::Ok,
        T_BIND_REQ if s == Unbnd => Verdict::Ok,
        T_UNBIND_REQ | T_UNITDATA_REQ if s == Idle => Verdict::Ok,
        T_OPTMGMT_REQ if s == Unbnd || s == Idle => Verdict::Ok,
        T_BIND_REQ | T_UNBIND_REQ | T_OPTMGMT_REQ => Verdict::OutState,
        T_UNITDATA_REQ => Verdict::Fatal,
        _ => Verdict::NotSupported,
    }
}
