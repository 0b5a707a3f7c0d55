//! The XTI calls on a connectionless (T_CLTS) provider, on descriptors: what t_open, t_bind,
//! t_sndudata, t_rcvudata… do, with buffers as slices. Both the C functions
//! ([`super::ffi`]) and the Rust [`super::Endpoint`] are thin layers over these.
//!
//! Requests go down with putmsg; their acknowledgements (all M_PCPROTO) come back with
//! getmsg(RS_HIPRI), which takes only a high-priority message, so datagrams queued at the
//! Stream head stay where they are. An O_NONBLOCK endpoint waits for the ack in poll(POLLPRI).

use super::consts::*;
use super::error::{XtiError, XtiResult};
use super::state::{self, Call, Endpoint, View};
use super::tpi::{self, InfoAck, Received};
use super::types::t_info;
use crate::consts::{I_PEEK, MOREDATA, RS_HIPRI};
use crate::ffi;
use crate::types::{strbuf, strpeek};
use libc::{c_char, c_int};
use std::cell::RefCell;

/// Room for an acknowledgement whose size the provider's limits do not bound.
const ACK_MAX: usize = 64 * 1024;
/// Control part room beyond the provider's address and option sizes.
const CTL_SLACK: usize = 256;

fn in_buf(b: &[u8]) -> strbuf {
    strbuf {
        maxlen: b.len() as c_int,
        len: b.len() as c_int,
        // putmsg only reads through this pointer.
        buf: b.as_ptr() as *mut c_char,
    }
}

fn out_buf(b: &mut [u8]) -> strbuf {
    strbuf {
        maxlen: c_int::try_from(b.len()).unwrap_or(c_int::MAX),
        len: 0,
        buf: b.as_mut_ptr().cast(),
    }
}

/// The XTI error of a failed system call on an endpoint.
fn sys_error(e: c_int) -> XtiError {
    match e {
        libc::EBADF | libc::ENOSTR => XtiError::t(TBADF),
        e => XtiError::sys(e),
    }
}

/// putmsg of a request (and data); EAGAIN is TFLOW.
fn put(fd: c_int, ctl: &[u8], data: Option<&[u8]>, hipri: bool) -> XtiResult<()> {
    let c = in_buf(ctl);
    let d = data.map(in_buf).unwrap_or(strbuf::NONE);
    let flags = if hipri { RS_HIPRI } else { 0 };
    // SAFETY: `c` and `d` describe live slices of exactly `len` bytes.
    if unsafe { ffi::putmsg(fd, &c, &d, flags) } < 0 {
        return Err(match ffi::errno() {
            libc::EAGAIN => XtiError::t(TFLOW),
            libc::ERANGE => XtiError::t(TBADDATA),
            e => sys_error(e),
        });
    }
    Ok(())
}

/// Wait for input of priority `events` (POLLPRI or POLLIN).
fn wait(fd: c_int, events: i16) -> XtiResult<()> {
    let mut p = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    loop {
        // SAFETY: `p` is one live pollfd.
        let r = unsafe { libc::poll(&mut p, 1, -1) };
        if r >= 0 {
            return Ok(());
        }
        if ffi::errno() != libc::EINTR {
            return Err(XtiError::last_os());
        }
    }
}

/// getmsg(RS_HIPRI) of the acknowledgement into `buf`; returns its control part length.
fn get_ack(fd: c_int, buf: &mut [u8]) -> XtiResult<usize> {
    loop {
        let mut c = out_buf(buf);
        let mut flags = RS_HIPRI;
        // SAFETY: `c` describes `buf`, live and exclusively ours; no data part is asked for.
        let r = unsafe { ffi::getmsg(fd, &mut c, core::ptr::null_mut(), &mut flags) };
        if r < 0 {
            match ffi::errno() {
                libc::EINTR => continue,
                libc::EAGAIN => {
                    wait(fd, libc::POLLPRI)?;
                    continue;
                }
                e => return Err(sys_error(e)),
            }
        }
        if r != 0 {
            // An acknowledgement larger than its bound, or with data: not TPI as we know it.
            return Err(XtiError::t(TPROTO));
        }
        return usize::try_from(c.len).map_err(|_| XtiError::t(TPROTO));
    }
}

/// The error a T_ERROR_ACK reports.
fn error_of(tli_error: i32, unix_error: i32) -> XtiError {
    if tli_error == TSYSERR {
        XtiError::sys(unix_error)
    } else {
        XtiError::t(tli_error)
    }
}

/// Send `req` and return the acknowledgement's bytes (a T_ERROR_ACK is turned into its error).
fn request(fd: c_int, req: &[u8], hipri: bool, room: usize) -> XtiResult<Vec<u8>> {
    put(fd, req, None, hipri)?;
    let mut buf = vec![0u8; room];
    let n = get_ack(fd, &mut buf)?;
    buf.truncate(n);
    if let Ok(Received::ErrorAck {
        tli_error,
        unix_error,
        ..
    }) = tpi::decode(&buf)
    {
        return Err(error_of(tli_error, unix_error));
    }
    Ok(buf)
}

/// T_INFO_REQ → T_INFO_ACK.
pub fn info(fd: c_int) -> XtiResult<InfoAck> {
    let ack = request(fd, &tpi::info_req(), true, tpi::size::INFO_ACK + CTL_SLACK)?;
    match tpi::decode(&ack) {
        Ok(Received::InfoAck(a)) => Ok(a),
        _ => Err(XtiError::t(TPROTO)),
    }
}

/// Room for a control part carrying an address and options of the provider's sizes.
fn ctl_room(info: &t_info, fixed: usize) -> usize {
    let a = usize::try_from(info.addr).unwrap_or(ACK_MAX);
    let o = usize::try_from(info.options).unwrap_or(ACK_MAX);
    (fixed + tpi::align(a) + o + CTL_SLACK).min(ACK_MAX + fixed)
}

/// t_open: open `path` with `oflag` (O_RDWR, optionally O_NONBLOCK and O_CLOEXEC), ask the
/// provider for its limits, record the endpoint.
pub fn open(path: &core::ffi::CStr, oflag: c_int) -> XtiResult<(c_int, t_info)> {
    let allowed = libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC;
    if oflag & libc::O_ACCMODE != libc::O_RDWR || oflag & !allowed != 0 {
        return Err(XtiError::t(TBADFLAG));
    }
    // SAFETY: `path` is NUL-terminated.
    let fd = unsafe { libc::open(path.as_ptr(), oflag) };
    if fd < 0 {
        return Err(match ffi::errno() {
            libc::ENOENT | libc::ENXIO | libc::ENODEV | libc::ENOTDIR => XtiError::t(TBADNAME),
            e => XtiError::sys(e),
        });
    }
    let close = |e: XtiError| {
        // SAFETY: `fd` was opened above and is ours alone.
        unsafe { libc::close(fd) };
        e
    };
    if ffi::isastream(fd) != 1 {
        return Err(close(XtiError::t(TBADNAME)));
    }
    let ack = info(fd).map_err(close)?;
    let ep = Endpoint::from_info(&ack).map_err(close)?;
    let info = ep.info;
    state::insert(fd, ep);
    Ok((fd, info))
}

/// t_close.
pub fn close(fd: c_int) -> XtiResult<()> {
    if !state::remove(fd) {
        return Err(XtiError::t(TBADF));
    }
    // SAFETY: closing a descriptor has no memory-safety preconditions.
    if unsafe { libc::close(fd) } < 0 {
        return Err(XtiError::last_os());
    }
    Ok(())
}

/// t_sync: (re)build the record of `fd` from the provider; returns the XTI state.
pub fn sync(fd: c_int) -> XtiResult<c_int> {
    let ack = info(fd)?;
    let fresh = Endpoint::from_info(&ack)?;
    let st = fresh.state;
    if state::with(fd, |e| {
        e.info = fresh.info;
        e.state = st;
    })
    .is_err()
    {
        state::insert(fd, fresh);
    }
    Ok(st)
}

/// t_getinfo: the provider's current limits.
pub fn getinfo(fd: c_int) -> XtiResult<t_info> {
    state::view(fd)?;
    let i = state::info_of(&info(fd)?);
    state::with(fd, |e| e.info = i)?;
    Ok(i)
}

/// t_getstate.
pub fn getstate(fd: c_int) -> XtiResult<c_int> {
    state::with(fd, |e| e.state)
}

/// The state check of `call` on `fd`: what the record says, and the state after success.
fn check(fd: c_int, call: Call) -> XtiResult<(View, c_int)> {
    let ep = state::view(fd)?;
    let next = state::transition(call, ep.state)?;
    Ok((ep, next))
}

/// t_bind: bind `addr` (None or empty: the provider chooses); returns the bound address and
/// the accepted queue length (0 on T_CLTS, where `qlen` is ignored).
pub fn bind(fd: c_int, addr: Option<&[u8]>, qlen: u32) -> XtiResult<(Vec<u8>, u32)> {
    let (ep, next) = check(fd, Call::Bind)?;
    let conind = if ep.info.servtype == T_CLTS { 0 } else { qlen };
    let req = tpi::bind_req(addr.unwrap_or(&[]), conind).map_err(|_| XtiError::t(TBADADDR))?;
    let ack = request(fd, &req, false, ctl_room(&ep.info, tpi::size::BIND_ACK))?;
    match tpi::decode(&ack) {
        Ok(Received::BindAck { addr, conind }) => {
            state::with(fd, |e| e.state = next)?;
            Ok((addr.to_vec(), conind))
        }
        _ => Err(XtiError::t(TPROTO)),
    }
}

/// t_unbind.
pub fn unbind(fd: c_int) -> XtiResult<()> {
    let (_, next) = check(fd, Call::Unbind)?;
    let ack = request(fd, &tpi::unbind_req(), false, tpi::size::OK_ACK + CTL_SLACK)?;
    match tpi::decode(&ack) {
        Ok(Received::OkAck { .. }) => state::with(fd, |e| {
            e.state = next;
            e.uderr = None;
            e.more = false;
        }),
        _ => Err(XtiError::t(TPROTO)),
    }
}

/// t_getprotaddr: (bound address, peer address); both empty when unbound.
pub fn getprotaddr(fd: c_int) -> XtiResult<(Vec<u8>, Vec<u8>)> {
    let (ep, _) = check(fd, Call::Any)?;
    if ep.state == T_UNBND {
        return Ok((Vec::new(), Vec::new()));
    }
    let room = ctl_room(&ep.info, tpi::size::ADDR_ACK) + ctl_room(&ep.info, 0);
    let ack = request(fd, &tpi::addr_req(), false, room)?;
    match tpi::decode(&ack) {
        Ok(Received::AddrAck { local, remote }) => Ok((local.to_vec(), remote.to_vec())),
        _ => Err(XtiError::t(TPROTO)),
    }
}

/// t_optmgmt: send `opt` with `flags` (T_NEGOTIATE, T_CHECK, T_DEFAULT, T_CURRENT); returns
/// the options and overall result flags of the T_OPTMGMT_ACK.
pub fn optmgmt(fd: c_int, opt: &[u8], flags: i32) -> XtiResult<(Vec<u8>, i32)> {
    check(fd, Call::Any)?;
    if ![T_NEGOTIATE, T_CHECK, T_DEFAULT, T_CURRENT].contains(&flags) {
        return Err(XtiError::t(TBADFLAG));
    }
    let req = tpi::optmgmt_req(opt, flags).map_err(|_| XtiError::t(TBADOPT))?;
    let ack = request(fd, &req, false, ACK_MAX)?;
    match tpi::decode(&ack) {
        Ok(Received::OptmgmtAck { opt, flags }) => Ok((opt.to_vec(), flags)),
        _ => Err(XtiError::t(TPROTO)),
    }
}

/// Control part room t_sndudata keeps on its stack (a T_UNITDATA_REQ with a larger address
/// and options is built on the heap).
const UNITDATA_REQ_STACK: usize = 256;

/// t_sndudata: one datagram of `data` to `dest` with `opt`.
pub fn sndudata(fd: c_int, dest: &[u8], opt: &[u8], data: &[u8]) -> XtiResult<()> {
    sndudata_viewed(fd, state::view(fd)?, dest, opt, data)
}

/// [`sndudata`] given the record's [`View`] (the caller looked `fd` up already).
pub fn sndudata_viewed(fd: c_int, ep: View, dest: &[u8], opt: &[u8], data: &[u8]) -> XtiResult<()> {
    state::transition(Call::SndUdata, ep.state)?;
    if ep.info.servtype != T_CLTS {
        return Err(XtiError::t(TNOTSUPPORT));
    }
    let tsdu = ep.info.tsdu;
    if tsdu == T_INVALID {
        return Err(XtiError::t(TNOTSUPPORT));
    }
    if (tsdu >= 0 && data.len() > tsdu as usize)
        || (data.is_empty() && ep.info.flags & T_SENDZERO == 0)
    {
        return Err(XtiError::t(TBADDATA));
    }
    let bad = |_| XtiError::t(TBADADDR);
    let mut stack = [0u8; UNITDATA_REQ_STACK];
    match tpi::unitdata_req_into(&mut stack, dest, opt).map_err(bad)? {
        Some(n) => put(fd, &stack[..n], Some(data), false),
        None => put(
            fd,
            &tpi::unitdata_req(dest, opt).map_err(bad)?,
            Some(data),
            false,
        ),
    }
}

/// What t_rcvudata received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recv {
    /// Bytes of source address stored (0 for the continuation of a datagram).
    pub addr_len: usize,
    /// Bytes of options stored.
    pub opt_len: usize,
    /// Bytes of data stored.
    pub data_len: usize,
    /// More of this datagram follows (T_MORE).
    pub more: bool,
}

thread_local! {
    /// The control part buffer of t_rcvudata: reused, so the data path allocates nothing.
    static CTL: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// getmsg of any message into `ctl` (None: no control part wanted) and `data`; returns
/// (control length or None, data length or None, more flags).
fn get_any(
    fd: c_int,
    ctl: Option<&mut [u8]>,
    data: &mut [u8],
) -> XtiResult<(Option<usize>, Option<usize>, c_int)> {
    let mut c = ctl.map(out_buf).unwrap_or(strbuf::NONE);
    let mut d = out_buf(data);
    let mut flags = 0;
    // SAFETY: `c` and `d` describe live, exclusively borrowed buffers of `maxlen` bytes.
    let r = unsafe { ffi::getmsg(fd, &mut c, &mut d, &mut flags) };
    if r < 0 {
        return Err(match ffi::errno() {
            libc::EAGAIN => XtiError::t(TNODATA),
            e => sys_error(e),
        });
    }
    Ok((usize::try_from(c.len).ok(), usize::try_from(d.len).ok(), r))
}

/// Throw away the rest of a datagram whose first part was read with MOREDATA.
fn drain(fd: c_int) {
    let mut scratch = [0u8; 2048];
    loop {
        match get_any(fd, None, &mut scratch) {
            Ok((_, _, r)) if r & MOREDATA != 0 => continue,
            _ => return,
        }
    }
}

/// Copy `src` into `dst` (None: not wanted, reports 0); Err if `dst` is too small.
fn give(src: &[u8], dst: Option<&mut [u8]>) -> Result<usize, ()> {
    match dst {
        None => Ok(0),
        Some([]) => Ok(0),
        Some(d) if d.len() < src.len() => Err(()),
        Some(d) => {
            d[..src.len()].copy_from_slice(src);
            Ok(src.len())
        }
    }
}

/// t_rcvudata: receive (part of) a datagram. `addr`/`opt` None or empty: not returned;
/// too small: TBUFOVFLW and the datagram is discarded. A pending T_UDERROR_IND: TLOOK.
pub fn rcvudata(
    fd: c_int,
    addr: Option<&mut [u8]>,
    opt: Option<&mut [u8]>,
    data: &mut [u8],
) -> XtiResult<Recv> {
    rcvudata_viewed(fd, state::view(fd)?, addr, opt, data)
}

/// Record whether the datagram being received continues (T_MORE). Written only when it
/// changes: the common whole datagram costs no second visit to the record.
fn set_more(fd: c_int, ep: &View, more: bool) -> XtiResult<()> {
    if ep.more != more {
        state::with(fd, |e| e.more = more)?;
    }
    Ok(())
}

/// [`rcvudata`] given the record's [`View`] (the caller looked `fd` up already).
pub fn rcvudata_viewed(
    fd: c_int,
    ep: View,
    addr: Option<&mut [u8]>,
    opt: Option<&mut [u8]>,
    data: &mut [u8],
) -> XtiResult<Recv> {
    state::transition(Call::RcvUdata, ep.state)?;
    if ep.info.servtype != T_CLTS {
        return Err(XtiError::t(TNOTSUPPORT));
    }
    if ep.uderr {
        return Err(XtiError::t(TLOOK));
    }
    if ep.more {
        // The rest of a datagram: data only, no address or options.
        let (_, dlen, r) = get_any(fd, None, data)?;
        let more = r & MOREDATA != 0;
        set_more(fd, &ep, more)?;
        return Ok(Recv {
            data_len: dlen.unwrap_or(0),
            more,
            ..Recv::default()
        });
    }
    let room = ctl_room(&ep.info, tpi::size::UDERROR_IND);
    CTL.with(|cell| {
        let mut ctl = cell.borrow_mut();
        if ctl.len() < room {
            ctl.resize(room, 0);
        }
        let (clen, dlen, r) = get_any(fd, Some(&mut ctl[..]), data)?;
        let more = r & MOREDATA != 0;
        let Some(clen) = clen else {
            // A bare M_DATA: data without an address.
            set_more(fd, &ep, more)?;
            return Ok(Recv {
                data_len: dlen.unwrap_or(0),
                more,
                ..Recv::default()
            });
        };
        let ctl = &ctl[..clen];
        match tpi::decode(ctl) {
            Ok(Received::UnitdataInd { src, opt: o }) if !ctl_truncated(r) => {
                let (Ok(alen), Ok(olen)) = (give(src, addr), give(o, opt)) else {
                    if more {
                        drain(fd);
                    }
                    return Err(XtiError::t(TBUFOVFLW));
                };
                set_more(fd, &ep, more)?;
                Ok(Recv {
                    addr_len: alen,
                    opt_len: olen,
                    data_len: dlen.unwrap_or(0),
                    more,
                })
            }
            Ok(Received::UderrorInd { .. }) if !ctl_truncated(r) => {
                if more {
                    drain(fd);
                }
                let stash = ctl.to_vec();
                state::with(fd, |e| e.uderr = Some(stash))?;
                Err(XtiError::t(TLOOK))
            }
            _ => {
                if more {
                    drain(fd);
                }
                Err(XtiError::t(TPROTO))
            }
        }
    })
}

fn ctl_truncated(r: c_int) -> bool {
    r & crate::consts::MORECTL != 0
}

/// I_PEEK at the first message: its TPI primitive type (None: no control part), or Err
/// when nothing is queued.
fn peek_prim(fd: c_int) -> XtiResult<Option<Option<i32>>> {
    let mut c = [0u8; 4];
    let mut d = [0u8; 1];
    let mut p = strpeek {
        ctlbuf: out_buf(&mut c),
        databuf: out_buf(&mut d),
        flags: 0,
    };
    // SAFETY: `p` and the buffers it names are live and exclusively ours.
    let r = unsafe { libc::ioctl(fd, I_PEEK as libc::c_ulong, &mut p as *mut strpeek) };
    if r < 0 {
        return Err(match ffi::errno() {
            libc::ENOTTY => XtiError::t(TBADF),
            e => sys_error(e),
        });
    }
    if r == 0 {
        return Ok(None);
    }
    if p.ctlbuf.len < 4 {
        return Ok(Some(None));
    }
    Ok(Some(Some(i32::from_ne_bytes(c))))
}

/// The t_look event of a queued primitive.
pub fn event_of(prim: Option<i32>) -> c_int {
    match prim {
        None => T_DATA,
        Some(tpi::T_CONN_IND) => T_LISTEN,
        Some(tpi::T_CONN_CON) => T_CONNECT,
        Some(tpi::T_DATA_IND | tpi::T_OPTDATA_IND | tpi::T_UNITDATA_IND) => T_DATA,
        Some(tpi::T_EXDATA_IND) => T_EXDATA,
        Some(tpi::T_DISCON_IND) => T_DISCONNECT,
        Some(tpi::T_ORDREL_IND) => T_ORDREL,
        Some(tpi::T_UDERROR_IND) => T_UDERR,
        Some(_) => 0,
    }
}

/// t_look: the next event on `fd` (0: none).
pub fn look(fd: c_int) -> XtiResult<c_int> {
    let (ep, _) = check(fd, Call::Any)?;
    if ep.uderr {
        return Ok(T_UDERR);
    }
    if ep.more {
        return Ok(T_DATA);
    }
    Ok(peek_prim(fd)?.map(event_of).unwrap_or(0))
}

/// What t_rcvuderr returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Uderr {
    /// Bytes of destination address stored.
    pub addr_len: usize,
    /// Bytes of options stored.
    pub opt_len: usize,
    /// The provider's error code (an errno such as ECONNREFUSED).
    pub error: i32,
}

/// t_rcvuderr: the pending datagram error (TNOUDERR if none). `addr`/`opt` as rcvudata.
pub fn rcvuderr(fd: c_int, addr: Option<&mut [u8]>, opt: Option<&mut [u8]>) -> XtiResult<Uderr> {
    let (ep, _) = check(fd, Call::RcvUderr)?;
    if ep.info.servtype != T_CLTS {
        return Err(XtiError::t(TNOTSUPPORT));
    }
    let ctl = match state::with(fd, |e| e.uderr.take())? {
        Some(c) => c,
        None => {
            if peek_prim(fd)? != Some(Some(tpi::T_UDERROR_IND)) {
                return Err(XtiError::t(TNOUDERR));
            }
            let mut c = vec![0u8; ctl_room(&ep.info, tpi::size::UDERROR_IND)];
            let mut d = [0u8; 256];
            let (clen, _, r) = get_any(fd, Some(&mut c), &mut d)?;
            if r & MOREDATA != 0 {
                drain(fd);
            }
            c.truncate(clen.unwrap_or(0));
            c
        }
    };
    match tpi::decode(&ctl) {
        Ok(Received::UderrorInd {
            dest,
            opt: o,
            error,
        }) => {
            let (Ok(addr_len), Ok(opt_len)) = (give(dest, addr), give(o, opt)) else {
                return Err(XtiError::t(TBUFOVFLW));
            };
            Ok(Uderr {
                addr_len,
                opt_len,
                error,
            })
        }
        _ => Err(XtiError::t(TPROTO)),
    }
}

/// The connection-oriented calls: TNOTSUPPORT on the T_CLTS providers this library serves
/// (TBADF first for a descriptor that is not an endpoint).
pub fn not_supported(fd: c_int) -> XtiError {
    match state::view(fd) {
        Err(e) => e,
        Ok(_) => XtiError::t(TNOTSUPPORT),
    }
}
