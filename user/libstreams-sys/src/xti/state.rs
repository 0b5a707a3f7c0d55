//! The library's record of each transport endpoint, and the XTI state machine of the calls
//! it implements.
//!
//! XTI keeps per-descriptor state in the library (the provider knows only TPI states): the
//! provider's limits from T_INFO_ACK, the XTI state, a T_UDERROR_IND taken off the Stream
//! while looking for data (t_rcvudata must then fail with TLOOK and t_rcvuderr hand it over),
//! and whether the rest of a datagram is still queued (T_MORE).
//!
//! The table is indexed by descriptor, as LfS's `_t_fds[OPEN_MAX]`: chunks of [`CHUNK`]
//! records, each chunk allocated by the first t_open of a descriptor in its range and kept
//! for the life of the process, so a data-path call finds its record with two array indexes
//! (no hash, no allocation). Descriptors from [`NEAR_FDS`] up (beyond the usual
//! RLIMIT_NOFILE) have their records in a map instead, looked up under its mutex.
//!
//! # Locking
//! Each record has its own lock, held only to read or update the record (a [`View`] is a
//! copy taken under it), never across a system call: one thread blocked in t_rcvudata does
//! not stop another sending on the same endpoint, and calls on different endpoints share
//! nothing but the chunk (read-only once allocated).

use super::consts::*;
use super::error::{XtiError, XtiResult};
use super::tpi::{self, InfoAck};
use super::types::t_info;
use libc::c_int;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, OnceLock};

/// What the library knows about one endpoint.
#[derive(Debug, Default)]
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

    /// The fields the calls check, copied.
    pub fn view(&self) -> View {
        View {
            info: self.info,
            state: self.state,
            uderr: self.uderr.is_some(),
            more: self.more,
        }
    }
}

/// A copy of what a call checks in a record (no allocation: the T_UDERROR_IND is only
/// said to be there).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct View {
    /// [`Endpoint::info`].
    pub info: t_info,
    /// [`Endpoint::state`].
    pub state: c_int,
    /// A T_UDERROR_IND is held for t_rcvuderr ([`Endpoint::uderr`] is Some).
    pub uderr: bool,
    /// [`Endpoint::more`].
    pub more: bool,
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

/// Records per chunk of the descriptor-indexed table.
pub const CHUNK: usize = 256;
/// Descriptors below this have their record in the indexed table.
pub const NEAR_FDS: usize = 1 << 20;

/// One descriptor's record (None: not an endpoint).
type Slot = Mutex<Option<Endpoint>>;
type Chunk = [Slot; CHUNK];

static NEAR: [OnceLock<Box<Chunk>>; NEAR_FDS / CHUNK] =
    [const { OnceLock::new() }; NEAR_FDS / CHUNK];
static FAR: OnceLock<Mutex<HashMap<c_int, &'static Slot>>> = OnceLock::new();

/// The record slot of `fd`, made if `make` (else None for a descriptor never recorded).
fn slot(fd: c_int, make: bool) -> Option<&'static Slot> {
    let i = usize::try_from(fd).ok()?;
    if let Some(chunk) = NEAR.get(i / CHUNK) {
        let c = if make {
            chunk.get_or_init(|| Box::new(std::array::from_fn(|_| Mutex::new(None))))
        } else {
            chunk.get()?
        };
        return Some(&c[i % CHUNK]);
    }
    let far = FAR.get_or_init(Default::default);
    let mut far = far.lock().unwrap_or_else(|p| p.into_inner());
    if make {
        // Kept for the life of the process, as the chunks are.
        Some(*far.entry(fd).or_insert_with(|| Box::leak(Box::default())))
    } else {
        far.get(&fd).copied()
    }
}

fn lock(s: &Slot) -> MutexGuard<'_, Option<Endpoint>> {
    // A panic while holding the lock leaves only plain data behind: keep using it.
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// Run `f` on the record of `fd` under its lock; TBADF if `fd` is not a known endpoint.
pub fn with<R>(fd: c_int, f: impl FnOnce(&mut Endpoint) -> R) -> XtiResult<R> {
    let s = slot(fd, false).ok_or(XtiError::t(TBADF))?;
    let mut g = lock(s);
    let ep = g.as_mut().ok_or(XtiError::t(TBADF))?;
    Ok(f(ep))
}

/// What a call checks in the record of `fd` (TBADF if unknown).
pub fn view(fd: c_int) -> XtiResult<View> {
    with(fd, |e| e.view())
}

/// Record `fd` (replacing any stale record of a reused descriptor); a negative `fd` is
/// never an endpoint and is not recorded.
pub fn insert(fd: c_int, ep: Endpoint) {
    if let Some(s) = slot(fd, true) {
        *lock(s) = Some(ep);
    }
}

/// Forget `fd`; false if it was not known.
pub fn remove(fd: c_int) -> bool {
    slot(fd, false).is_some_and(|s| lock(s).take().is_some())
}
