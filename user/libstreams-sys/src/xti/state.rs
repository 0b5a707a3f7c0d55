//! The library's record of each transport endpoint, and the XTI state machine of the calls
//! it implements.
//!
//! XTI keeps per-descriptor state in the library (the provider knows only TPI states): the
//! provider's limits from T_INFO_ACK, the XTI state, a T_UDERROR_IND taken off the Stream
//! while looking for data (t_rcvudata must then fail with TLOOK and t_rcvuderr hand it over),
//! and whether the rest of a datagram is still queued (T_MORE). The table is a map from
//! descriptor to [`Endpoint`] behind one mutex; it is held only to read or update a record,
//! never across a system call, so one thread blocked in t_rcvudata does not stop another
//! sending on the same endpoint.

use super::consts::*;
use super::error::{XtiError, XtiResult};
use super::tpi::{self, InfoAck};
use super::types::t_info;
use libc::c_int;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// What the library knows about one endpoint.
#[derive(Debug, Clone, Default)]
pub struct Endpoint {
    /// The provider's limits (t_info view of the last T_INFO_ACK).
    pub info: t_info,
    /// The XTI state (T_UNBND, T_IDLE…).
    pub state: c_int,
    /// A T_UDERROR_IND control part taken off the Stream head, not yet given to t_rcvuderr.
    pub uderr: Option<Vec<u8>>,
    /// The datagram being received continues in the next message (T_MORE was returned).
    pub more: bool,
}

impl Endpoint {
    /// A record from the provider's T_INFO_ACK.
    pub fn from_info(ack: &InfoAck) -> XtiResult<Endpoint> {
        Ok(Endpoint {
            info: info_of(ack),
            state: xti_state(ack.current_state).ok_or(XtiError::t(TSTATECHNG))?,
            uderr: None,
            more: false,
        })
    }
}

/// The t_info a T_INFO_ACK describes.
pub fn info_of(a: &InfoAck) -> t_info {
    t_info {
        addr: a.addr_size,
        options: a.opt_size,
        tsdu: a.tsdu_size,
        etsdu: a.etsdu_size,
        connect: a.cdata_size,
        discon: a.ddata_size,
        servtype: a.serv_type,
        flags: a.provider_flag & (T_SENDZERO | T_ORDRELDATA),
        tidu: a.tidu_size,
    }
}

/// The XTI state of a TPI state; None for the transient "waiting for an ack" states.
pub fn xti_state(ts: i32) -> Option<c_int> {
    Some(match ts {
        tpi::TS_UNBND => T_UNBND,
        tpi::TS_IDLE => T_IDLE,
        tpi::TS_WCON_CREQ => T_OUTCON,
        tpi::TS_WRES_CIND => T_INCON,
        tpi::TS_DATA_XFER => T_DATAXFER,
        tpi::TS_WIND_ORDREL => T_OUTREL,
        tpi::TS_WREQ_ORDREL => T_INREL,
        _ => return None,
    })
}

/// The calls whose state rules the library enforces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// t_bind.
    Bind,
    /// t_unbind.
    Unbind,
    /// t_sndudata, t_sndvudata.
    SndUdata,
    /// t_rcvudata, t_rcvvudata.
    RcvUdata,
    /// t_rcvuderr.
    RcvUderr,
    /// t_optmgmt, t_getprotaddr, t_getinfo, t_look, t_sync, t_close, t_alloc: any state.
    Any,
}

/// The state after `call` succeeds in `state`, or TOUTSTATE if `call` is not allowed there.
pub fn transition(call: Call, state: c_int) -> XtiResult<c_int> {
    let next = match (call, state) {
        (Call::Bind, T_UNBND) => T_IDLE,
        (Call::Unbind, T_IDLE) => T_UNBND,
        (Call::SndUdata | Call::RcvUdata | Call::RcvUderr, T_IDLE) => T_IDLE,
        (Call::Any, s) if s != T_UNINIT => s,
        _ => return Err(XtiError::t(TOUTSTATE)),
    };
    Ok(next)
}

fn table() -> MutexGuard<'static, HashMap<c_int, Endpoint>> {
    static TABLE: OnceLock<Mutex<HashMap<c_int, Endpoint>>> = OnceLock::new();
    let m = TABLE.get_or_init(|| Mutex::new(HashMap::new()));
    // A panic while holding the lock leaves only plain data behind: keep using it.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run `f` on the record of `fd`; TBADF if `fd` is not a known endpoint.
pub fn with<R>(fd: c_int, f: impl FnOnce(&mut Endpoint) -> R) -> XtiResult<R> {
    let mut t = table();
    let ep = t.get_mut(&fd).ok_or(XtiError::t(TBADF))?;
    Ok(f(ep))
}

/// A copy of the record of `fd` (TBADF if unknown).
pub fn get(fd: c_int) -> XtiResult<Endpoint> {
    with(fd, |e| e.clone())
}

/// Record `fd` (replacing any stale record of a reused descriptor).
pub fn insert(fd: c_int, ep: Endpoint) {
    table().insert(fd, ep);
}

/// Forget `fd`; false if it was not known.
pub fn remove(fd: c_int) -> bool {
    table().remove(&fd).is_some()
}
