//! Options (T_OPTMGMT_REQ, the options of T_UNITDATA_REQ, and those a T_UNITDATA_IND
//! carries): the XTI `t_opthdr` list, the options this provider knows, and negotiation.
//!
//! An options part is a list of `struct t_opthdr { u32 len; u32 level; u32 name; u32 status; }`
//! (LfS `<sys/tpi.h>`), each followed by its value; `len` counts the header and the value, and
//! the next header starts at the next multiple of `sizeof(t_uscalar_t)` (4). A header that is
//! short, runs past the part, or leaves trailing bytes that are no header is TBADOPT.
//!
//! | level | name | value | default |
//! |---|---|---|---|
//! | XTI_GENERIC | XTI_DEBUG | 0..4 × u32 | 0 |
//! | XTI_GENERIC | XTI_SNDBUF | u32 (clamped: T_PARTSUCCESS) | 65536 |
//! | XTI_GENERIC | XTI_RCVBUF | u32 (clamped; the read queue's hiwat) | 65536 |
//! | INET_IP | IP_TOS | u8 | 0 |
//! | INET_IP | IP_TTL | u8, not 0 | 64 |
//! | INET_IP | IP_REUSEADDR | u32 T_YES/T_NO (used at the next bind) | T_NO |
//! | INET_IP | IP_BROADCAST | u32 T_YES/T_NO | T_NO |
//! | INET_UDP | UDP_CHECKSUM | u32 T_YES/T_NO | T_YES |
//!
//! Anything else (XTI_LINGER, the low-water marks, IP_OPTIONS, IP_DONTROUTE, other levels) is
//! T_NOTSUPPORT. A value of the wrong size is TBADOPT. A value out of range is T_FAILURE (the
//! option keeps its value). The overall result is the worst status of all.

use super::net::{RxIp, TxOpts};
use super::prim::TBADOPT;
use streams_core::sys;

// XTI_GENERIC, T_ALLOPT, the MGMT_flags and the option status: shared with the XTI library.
pub use super::tihdr::{
    T_ALLOPT, T_CHECK, T_CURRENT, T_DEFAULT, T_FAILURE, T_NEGOTIATE, T_NOTSUPPORT, T_PARTSUCCESS,
    T_READONLY, T_SUCCESS, XTI_DEBUG, XTI_GENERIC, XTI_LINGER, XTI_RCVBUF, XTI_RCVLOWAT,
    XTI_SNDBUF, XTI_SNDLOWAT,
};

// --- IP and UDP levels and names (LfS `<sys/xti_ip.h>`, `<sys/xti_udp.h>`). ---
/// IP level (LfS `T_INET_IP`).
pub const INET_IP: u32 = 0;
/// IP options (not supported).
pub const IP_OPTIONS: u32 = 1;
/// Type of service.
pub const IP_TOS: u32 = 2;
/// Time to live.
pub const IP_TTL: u32 = 3;
/// Allow local address reuse.
pub const IP_REUSEADDR: u32 = 4;
/// Bypass routing (not supported).
pub const IP_DONTROUTE: u32 = 5;
/// Permit sending broadcast datagrams.
pub const IP_BROADCAST: u32 = 6;
/// Destination address of received datagrams (not supported).
pub const IP_ADDR: u32 = 7;
/// UDP level (LfS `T_INET_UDP`).
pub const INET_UDP: u32 = 17;
/// Compute UDP checksums.
pub const UDP_CHECKSUM: u32 = 1;

// --- Option values. ---
/// Yes.
pub const T_YES: u32 = 1;
/// No.
pub const T_NO: u32 = 0;

/// `sizeof(struct t_opthdr)`.
pub const OPTHDR: usize = 16;
/// Alignment of headers and values: `sizeof(t_uscalar_t)`.
const ALIGN: usize = 4;
/// Largest value this provider writes (XTI_DEBUG: 4 words).
const MAXVAL: usize = 16;
/// Largest option this provider writes.
const MAXOPT: usize = OPTHDR + MAXVAL;

/// Smallest and largest XTI_SNDBUF/XTI_RCVBUF.
pub const BUF_MIN: u32 = 2048;
/// See [`BUF_MIN`].
pub const BUF_MAX: u32 = 4 << 20;
/// Default XTI_SNDBUF and XTI_RCVBUF.
pub const BUF_DEFAULT: u32 = 65536;

/// The options of one endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opts {
    /// XTI_DEBUG (first word).
    pub debug: u32,
    /// XTI_SNDBUF.
    pub sndbuf: u32,
    /// XTI_RCVBUF.
    pub rcvbuf: u32,
    /// IP_TOS.
    pub tos: u8,
    /// IP_TTL.
    pub ttl: u8,
    /// IP_REUSEADDR.
    pub reuseaddr: bool,
    /// IP_BROADCAST.
    pub broadcast: bool,
    /// UDP_CHECKSUM.
    pub checksum: bool,
}

impl Opts {
    /// The defaults.
    pub const DEFAULT: Opts = Opts {
        debug: 0,
        sndbuf: BUF_DEFAULT,
        rcvbuf: BUF_DEFAULT,
        tos: 0,
        ttl: 64,
        reuseaddr: false,
        broadcast: false,
        checksum: true,
    };

    /// The transmit options of a datagram that names none.
    pub fn tx(&self) -> TxOpts {
        TxOpts {
            tos: self.tos,
            ttl: self.ttl,
            checksum: self.checksum,
            broadcast: self.broadcast,
        }
    }
}

/// One option of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Opt<'a> {
    /// Level.
    pub level: u32,
    /// Name.
    pub name: u32,
    /// Status (in answers).
    pub status: u32,
    /// Value.
    pub value: &'a [u8],
}

fn word(b: &[u8], at: usize) -> Option<u32> {
    let w = b.get(at..at + 4)?;
    let mut a = [0u8; 4];
    a.copy_from_slice(w);
    Some(u32::from_ne_bytes(a))
}

fn align(n: usize) -> Option<usize> {
    n.checked_add(ALIGN - 1).map(|x| x & !(ALIGN - 1))
}

/// Parse an options part into at most `N` options; `Err(TBADOPT)` if malformed or longer.
pub fn parse<const N: usize>(b: &[u8]) -> Result<([Option<Opt<'_>>; N], usize), i32> {
    let mut out = [None; N];
    let mut n = 0usize;
    let mut off = 0usize;
    while off < b.len() {
        let rest = b.get(off..).ok_or(TBADOPT)?;
        let len = word(rest, 0).ok_or(TBADOPT)? as usize;
        if len < OPTHDR || len > rest.len() {
            return Err(TBADOPT);
        }
        let o = Opt {
            level: word(rest, 4).ok_or(TBADOPT)?,
            name: word(rest, 8).ok_or(TBADOPT)?,
            status: word(rest, 12).ok_or(TBADOPT)?,
            value: rest.get(OPTHDR..len).ok_or(TBADOPT)?,
        };
        *out.get_mut(n).ok_or(TBADOPT)? = Some(o);
        n += 1;
        off = align(off.checked_add(len).ok_or(TBADOPT)?).ok_or(TBADOPT)?;
    }
    Ok((out, n))
}

/// Append one option (header and value, padded to the alignment) to `out`; false if there is
/// no room.
pub fn put(out: &mut OptBuf, level: u32, name: u32, status: u32, value: &[u8]) -> bool {
    let len = OPTHDR + value.len();
    let Some(total) = align(len) else {
        return false;
    };
    if out.buf.len() + total > ANSWER_MAX {
        return false;
    }
    let mut hdr = [0u8; OPTHDR];
    for (d, w) in hdr
        .chunks_exact_mut(4)
        .zip([len as u32, level, name, status])
    {
        d.copy_from_slice(&w.to_ne_bytes());
    }
    let pad = [0u8; ALIGN];
    let ok = sys::vec_extend_from_slice(&mut out.buf, &hdr).is_ok()
        && sys::vec_extend_from_slice(&mut out.buf, value).is_ok()
        && sys::vec_extend_from_slice(&mut out.buf, pad.get(..total - len).unwrap_or_default())
            .is_ok();
    ok
}

/// Bytes of the options of a T_UNITDATA_IND ([`rx_opts`]): IP_TTL and IP_TOS, one byte of
/// value each, padded to the alignment.
pub const RX_OPT_SIZE: usize = 2 * (OPTHDR + ALIGN);

/// The options of a received datagram's T_UNITDATA_IND: IP_TTL then IP_TOS of its IPv4
/// header at level INET_IP, status T_SUCCESS (received information, not negotiated), the
/// values `u8` as in T_OPTMGMT. LfS's udp reports these too (and IP_OPTIONS, IP_ADDR,
/// UDP_CHECKSUM, which this provider does not). Fixed size, built on the stack: this runs in
/// the receive path (softirq), where the answer buffer of [`OptBuf`] would be an allocation.
pub fn rx_opts(ip: &RxIp) -> [u8; RX_OPT_SIZE] {
    let mut out = [0u8; RX_OPT_SIZE];
    for (o, (name, v)) in out
        .chunks_exact_mut(OPTHDR + ALIGN)
        .zip([(IP_TTL, ip.ttl), (IP_TOS, ip.tos)])
    {
        let words = [(OPTHDR + 1) as u32, INET_IP, name, T_SUCCESS];
        for (d, w) in o.chunks_exact_mut(4).zip(words) {
            d.copy_from_slice(&w.to_ne_bytes());
        }
        if let Some(b) = o.get_mut(OPTHDR) {
            *b = v;
        }
    }
    out
}

/// Most options one request may name (more is TBADOPT).
pub const MAXREQ: usize = 16;
/// Options of the levels, for T_ALLOPT.
const ALL: &[(u32, u32)] = &[
    (XTI_GENERIC, XTI_DEBUG),
    (XTI_GENERIC, XTI_SNDBUF),
    (XTI_GENERIC, XTI_RCVBUF),
    (INET_IP, IP_TOS),
    (INET_IP, IP_TTL),
    (INET_IP, IP_REUSEADDR),
    (INET_IP, IP_BROADCAST),
    (INET_UDP, UDP_CHECKSUM),
];
/// Bytes of the answer to T_CURRENT with every option (T_INFO_ACK's OPT_size).
pub const OPT_SIZE: usize = ALL.len() * (OPTHDR + 4);
/// Room for the largest answer: each named option, or a whole level for T_ALLOPT.
pub const ANSWER_MAX: usize = MAXREQ * ALL.len() * MAXOPT;

/// An answer being built (allocated once, at most [`ANSWER_MAX`] bytes: nothing large on
/// the stack of a put procedure).
pub struct OptBuf {
    buf: sys::Vec<u8>,
}

impl OptBuf {
    /// Empty, with room for the largest answer. `None` when memory runs out.
    pub fn new() -> Option<OptBuf> {
        Some(OptBuf {
            buf: sys::vec_with_capacity(ANSWER_MAX).ok()?,
        })
    }
    /// What was written.
    pub fn bytes(&self) -> &[u8] {
        &self.buf
    }
}

/// A value as this provider encodes it.
enum Val {
    U8(u8),
    U32(u32),
}

/// The value of a known option in `o`; `None`: not supported.
fn value(o: &Opts, level: u32, name: u32) -> Option<Val> {
    Some(match (level, name) {
        (XTI_GENERIC, XTI_DEBUG) => Val::U32(o.debug),
        (XTI_GENERIC, XTI_SNDBUF) => Val::U32(o.sndbuf),
        (XTI_GENERIC, XTI_RCVBUF) => Val::U32(o.rcvbuf),
        (INET_IP, IP_TOS) => Val::U8(o.tos),
        (INET_IP, IP_TTL) => Val::U8(o.ttl),
        (INET_IP, IP_REUSEADDR) => Val::U32(yes(o.reuseaddr)),
        (INET_IP, IP_BROADCAST) => Val::U32(yes(o.broadcast)),
        (INET_UDP, UDP_CHECKSUM) => Val::U32(yes(o.checksum)),
        _ => return None,
    })
}

fn yes(b: bool) -> u32 {
    if b {
        T_YES
    } else {
        T_NO
    }
}

fn put_val(out: &mut OptBuf, level: u32, name: u32, status: u32, v: &Val) -> bool {
    match v {
        Val::U8(x) => put(out, level, name, status, &[*x]),
        Val::U32(x) => put(out, level, name, status, &x.to_ne_bytes()),
    }
}

fn u32_of(v: &[u8]) -> Result<u32, i32> {
    if v.len() != 4 {
        return Err(TBADOPT);
    }
    word(v, 0).ok_or(TBADOPT)
}

fn u8_of(v: &[u8]) -> Result<u8, i32> {
    match v {
        [x] => Ok(*x),
        _ => Err(TBADOPT),
    }
}

fn bool_of(v: &[u8]) -> Result<Option<bool>, i32> {
    Ok(match u32_of(v)? {
        T_YES => Some(true),
        T_NO => Some(false),
        _ => None,
    })
}

/// Set option (level, name) of `o` to `v`: the status (T_SUCCESS, T_PARTSUCCESS when
/// adjusted, T_FAILURE when refused, T_NOTSUPPORT), or TBADOPT for a value of the wrong size.
fn set(o: &mut Opts, level: u32, name: u32, v: &[u8]) -> Result<u32, i32> {
    let flag = |o: &mut bool, v: &[u8]| -> Result<u32, i32> {
        Ok(match bool_of(v)? {
            Some(b) => {
                *o = b;
                T_SUCCESS
            }
            None => T_FAILURE,
        })
    };
    let buf = |o: &mut u32, v: &[u8]| -> Result<u32, i32> {
        let x = u32_of(v)?;
        let c = x.clamp(BUF_MIN, BUF_MAX);
        *o = c;
        Ok(if c == x { T_SUCCESS } else { T_PARTSUCCESS })
    };
    match (level, name) {
        (XTI_GENERIC, XTI_DEBUG) => {
            if v.len() & (ALIGN - 1) != 0 || v.len() > MAXVAL {
                return Err(TBADOPT);
            }
            o.debug = word(v, 0).unwrap_or(0);
            Ok(T_SUCCESS)
        }
        (XTI_GENERIC, XTI_SNDBUF) => buf(&mut o.sndbuf, v),
        (XTI_GENERIC, XTI_RCVBUF) => buf(&mut o.rcvbuf, v),
        (INET_IP, IP_TOS) => {
            o.tos = u8_of(v)?;
            Ok(T_SUCCESS)
        }
        (INET_IP, IP_TTL) => match u8_of(v)? {
            0 => Ok(T_FAILURE),
            t => {
                o.ttl = t;
                Ok(T_SUCCESS)
            }
        },
        (INET_IP, IP_REUSEADDR) => flag(&mut o.reuseaddr, v),
        (INET_IP, IP_BROADCAST) => flag(&mut o.broadcast, v),
        (INET_UDP, UDP_CHECKSUM) => flag(&mut o.checksum, v),
        _ => Ok(T_NOTSUPPORT),
    }
}

/// Severity of a status, for the overall result (T_NOTSUPPORT worst).
fn rank(s: u32) -> u8 {
    match s {
        T_NOTSUPPORT => 4,
        T_READONLY => 3,
        T_FAILURE => 2,
        T_PARTSUCCESS => 1,
        _ => 0,
    }
}

/// The result of a T_OPTMGMT_REQ: the options part of the T_OPTMGMT_ACK, its flags, and the
/// endpoint's options afterwards (changed only by T_NEGOTIATE).
pub struct Answer {
    /// The options part.
    pub out: OptBuf,
    /// The ack's `MGMT_flags`: the worst status (or the request's flag for an empty list).
    pub flags: i32,
    /// The endpoint's options after the request.
    pub opts: Opts,
}

/// T_OPTMGMT_REQ with `flags` on options part `req`, for an endpoint with options `cur`.
/// `Err(tli)`: T_ERROR_ACK (TBADFLAG for a bad flag, TBADOPT for a bad list, TSYSERR when
/// memory runs out).
pub fn manage(cur: &Opts, req: &[u8], flags: i32) -> Result<Answer, i32> {
    if ![T_NEGOTIATE, T_CHECK, T_DEFAULT, T_CURRENT].contains(&flags) {
        return Err(super::prim::TBADFLAG);
    }
    let (list, n) = parse::<MAXREQ>(req)?;
    let mut a = Answer {
        out: OptBuf::new().ok_or(super::prim::TSYSERR)?,
        flags,
        opts: *cur,
    };
    if n == 0 {
        // T_DEFAULT/T_CURRENT of nothing: every option of the provider.
        if flags == T_DEFAULT || flags == T_CURRENT {
            let src = if flags == T_DEFAULT {
                Opts::DEFAULT
            } else {
                *cur
            };
            for (l, nm) in ALL {
                if let Some(v) = value(&src, *l, *nm) {
                    put_val(&mut a.out, *l, *nm, T_SUCCESS, &v);
                }
            }
            a.flags = T_SUCCESS as i32;
        }
        return Ok(a);
    }
    let mut worst = T_SUCCESS;
    let mut note = |s: u32| {
        if rank(s) > rank(worst) {
            worst = s;
        }
    };
    // Check every value's size first, so that a TBADOPT changes nothing.
    let mut trial = *cur;
    for o in list.iter().flatten() {
        if o.name == T_ALLOPT {
            if flags == T_CHECK {
                return Err(TBADOPT);
            }
            continue;
        }
        if flags == T_NEGOTIATE || flags == T_CHECK {
            set(&mut trial, o.level, o.name, o.value)?;
        }
    }
    for o in list.iter().flatten() {
        let names: &[(u32, u32)] = if o.name == T_ALLOPT { ALL } else { &[] };
        let level_known = ALL.iter().any(|(l, _)| *l == o.level);
        if o.name == T_ALLOPT && !level_known {
            put(&mut a.out, o.level, o.name, T_NOTSUPPORT, &[]);
            note(T_NOTSUPPORT);
            continue;
        }
        let one = [(o.level, o.name)];
        let targets = if o.name == T_ALLOPT { names } else { &one[..] };
        for (l, nm) in targets.iter().filter(|(l, _)| *l == o.level) {
            let status = match flags {
                T_NEGOTIATE if o.name == T_ALLOPT => {
                    let d = value(&Opts::DEFAULT, *l, *nm);
                    match d {
                        Some(Val::U8(x)) => set(&mut a.opts, *l, *nm, &[x])?,
                        Some(Val::U32(x)) => set(&mut a.opts, *l, *nm, &x.to_ne_bytes())?,
                        None => T_NOTSUPPORT,
                    }
                }
                T_NEGOTIATE => set(&mut a.opts, *l, *nm, o.value)?,
                T_CHECK => {
                    let mut scratch = *cur;
                    set(&mut scratch, *l, *nm, o.value)?
                }
                _ => {
                    if value(cur, *l, *nm).is_some() {
                        T_SUCCESS
                    } else {
                        T_NOTSUPPORT
                    }
                }
            };
            note(status);
            // What the answer shows: nothing for an unsupported option, the value checked
            // for T_CHECK, else the default or the value now in effect.
            let shown = match flags {
                T_DEFAULT => value(&Opts::DEFAULT, *l, *nm),
                _ => value(&a.opts, *l, *nm),
            };
            let room = match (status, flags, shown) {
                (T_NOTSUPPORT, _, _) | (_, _, None) => put(&mut a.out, *l, *nm, status, &[]),
                (_, T_CHECK, _) => put(&mut a.out, *l, *nm, status, o.value),
                (_, _, Some(v)) => put_val(&mut a.out, *l, *nm, status, &v),
            };
            if !room {
                return Err(super::prim::TSYSERR);
            }
        }
    }
    a.flags = worst as i32;
    Ok(a)
}

/// The transmit options of one T_UNITDATA_REQ: the endpoint's, overridden by the datagram's
/// IP_TOS, IP_TTL, IP_BROADCAST and UDP_CHECKSUM. `Err(TBADOPT)` for anything else or a bad
/// value.
#[inline]
pub fn unitdata(cur: &Opts, req: &[u8]) -> Result<TxOpts, i32> {
    if req.is_empty() {
        // The common datagram: what `parse` would find (nothing) without its table, inlined
        // into the send path.
        return Ok(cur.tx());
    }
    unitdata_listed(cur, req)
}

/// `unitdata` for a request that lists options (out of line: the rare case).
fn unitdata_listed(cur: &Opts, req: &[u8]) -> Result<TxOpts, i32> {
    let mut tx = cur.tx();
    let (list, _) = parse::<MAXREQ>(req)?;
    for o in list.iter().flatten() {
        match (o.level, o.name) {
            (INET_IP, IP_TOS) => tx.tos = u8_of(o.value)?,
            (INET_IP, IP_TTL) => match u8_of(o.value)? {
                0 => return Err(TBADOPT),
                t => tx.ttl = t,
            },
            (INET_IP, IP_BROADCAST) => tx.broadcast = bool_of(o.value)?.ok_or(TBADOPT)?,
            (INET_UDP, UDP_CHECKSUM) => tx.checksum = bool_of(o.value)?.ok_or(TBADOPT)?,
            _ => return Err(TBADOPT),
        }
    }
    Ok(tx)
}
