//! TPI primitives: the layouts of their M_PROTO/M_PCPROTO blocks, decoding (every length and
//! offset checked: a short or lying primitive is an `Err`, never a panic) and encoding of what
//! the provider sends up. Their numbers are in `tihdr.rs`.
//!
//! Layouts are LfS's `<sys/tihdr.h>`: every field a `t_scalar_t` (`i32`) or `t_uscalar_t`
//! (`u32`), native endian, packed (4-byte fields, no padding); an address or options part is
//! named by a length and an offset from the start of the block (`b_rptr`). The addresses of
//! this provider are `sockaddr_in` (`addr.rs`).

use streams_core::msg::{Msg, MsgType, M_PCPROTO, M_PROTO};

use super::addr::{AF_INET, SOCKADDR_IN};
use super::net::{Inet4, RxIp};
use super::opt::{INET_IP, IP_TOS, IP_TTL, OPTHDR, RX_OPT_SIZE};

// The numbers (primitives, TPI errors, service types): shared with the XTI library.
pub use super::tihdr::*;

/// Size of one scalar field.
const W: usize = 4;

/// Why a primitive could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bad {
    /// The block is shorter than the primitive's fixed part.
    Short,
    /// A length/offset pair points outside the block (or is negative).
    Range,
}

/// The `i`-th scalar of block `b`, if it has one.
fn field(b: &[u8], i: usize) -> Result<i32, Bad> {
    let at = i.checked_mul(W).ok_or(Bad::Short)?;
    let w = b.get(at..at + W).ok_or(Bad::Short)?;
    let mut a = [0u8; W];
    a.copy_from_slice(w);
    Ok(i32::from_ne_bytes(a))
}

/// The bytes named by a length/offset pair: empty for length 0 (whatever the offset),
/// `Bad::Range` when they are not all inside `b`.
pub fn part(b: &[u8], len: i32, off: i32) -> Result<&[u8], Bad> {
    if len == 0 {
        return Ok(&[]);
    }
    let len = usize::try_from(len).map_err(|_| Bad::Range)?;
    let off = usize::try_from(off).map_err(|_| Bad::Range)?;
    let end = off.checked_add(len).ok_or(Bad::Range)?;
    b.get(off..end).ok_or(Bad::Range)
}

/// The primitive type of an M_PROTO/M_PCPROTO block (its first scalar).
pub fn prim_type(b: &[u8]) -> Option<i32> {
    field(b, 0).ok()
}

/// A request from the transport user, decoded (addresses and options still raw bytes,
/// borrowed from the block).
#[derive(Debug, PartialEq, Eq)]
pub enum Req<'a> {
    /// T_INFO_REQ.
    Info,
    /// T_BIND_REQ: address (may be empty) and `CONIND_number`.
    Bind {
        /// The address asked for.
        addr: &'a [u8],
        /// Connection indications (must be 0 for T_CLTS; ignored).
        conind: u32,
    },
    /// T_UNBIND_REQ.
    Unbind,
    /// T_UNITDATA_REQ: destination and options.
    Unitdata {
        /// Destination address.
        dest: &'a [u8],
        /// Options for this datagram.
        opt: &'a [u8],
    },
    /// T_OPTMGMT_REQ: options and `MGMT_flags`.
    Optmgmt {
        /// The options (a `t_opthdr` list).
        opt: &'a [u8],
        /// T_NEGOTIATE, T_CHECK, T_DEFAULT or T_CURRENT.
        flags: i32,
    },
    /// T_ADDR_REQ.
    Addr,
    /// Any other primitive (its type).
    Other(i32),
}

impl<'a> Req<'a> {
    /// Decode the primitive in block `b` (an M_PROTO or M_PCPROTO's `b_rptr..b_wptr`).
    /// `Ok(None)`: fewer than 4 bytes, not a primitive at all.
    pub fn decode(b: &'a [u8]) -> Result<Option<Req<'a>>, (i32, Bad)> {
        let Some(ty) = prim_type(b) else {
            return Ok(None);
        };
        let f = |i| field(b, i).map_err(|e| (ty, e));
        let p = |l, o| part(b, l, o).map_err(|e| (ty, e));
        Ok(Some(match ty {
            T_INFO_REQ => Req::Info,
            T_BIND_REQ => {
                let (len, off, conind) = (f(1)?, f(2)?, f(3)?);
                Req::Bind {
                    addr: p(len, off)?,
                    conind: conind as u32,
                }
            }
            T_UNBIND_REQ => Req::Unbind,
            T_UNITDATA_REQ => {
                let (dl, doff, ol, oo) = (f(1)?, f(2)?, f(3)?, f(4)?);
                Req::Unitdata {
                    dest: p(dl, doff)?,
                    opt: p(ol, oo)?,
                }
            }
            T_OPTMGMT_REQ => {
                let (ol, oo, flags) = (f(1)?, f(2)?, f(3)?);
                Req::Optmgmt {
                    opt: p(ol, oo)?,
                    flags,
                }
            }
            T_ADDR_REQ => Req::Addr,
            other => Req::Other(other),
        }))
    }
}

/// Builds one primitive block: the fixed scalars, then variable parts appended 4-byte aligned
/// (each part's length and offset patched into the scalars that name them).
pub struct Build {
    mp: Msg,
}

impl Build {
    /// A block of type `ty` for `nfields` scalars and up to `extra` bytes of parts (alignment
    /// included). ENOSR-style failure: `None`.
    pub fn new(ty: MsgType, prim: i32, nfields: usize, extra: usize) -> Option<Build> {
        let size = nfields.checked_mul(W)?.checked_add(extra)?;
        let mut mp = Msg::with_type(ty, size).ok()?;
        let room = mp.spare_mut()?.get_mut(..nfields * W)?;
        room.fill(0);
        if let Some(w) = room.get_mut(..W) {
            w.copy_from_slice(&prim.to_ne_bytes());
        }
        mp.adj_wptr(nfields * W);
        Some(Build { mp })
    }

    /// Set scalar `i`.
    pub fn set(&mut self, i: usize, v: i32) -> &mut Build {
        if let Some(w) = self.mp.rd_mut().and_then(|b| b.get_mut(i * W..(i + 1) * W)) {
            w.copy_from_slice(&v.to_ne_bytes());
        }
        self
    }

    /// Append `bytes` at the next aligned offset and name them with scalars `len_i`/`off_i`
    /// (nothing appended and both 0 for an empty part). False if the block has no room.
    pub fn part(&mut self, len_i: usize, off_i: usize, bytes: &[u8]) -> bool {
        if bytes.is_empty() {
            self.set(len_i, 0).set(off_i, 0);
            return true;
        }
        let pad = (W - self.mp.blen() % W) % W;
        if self.mp.wr_room() < pad + bytes.len() {
            return false;
        }
        self.mp.append(&[0u8; W][..pad]);
        let off = self.mp.blen();
        self.mp.append(bytes);
        self.set(len_i, bytes.len() as i32).set(off_i, off as i32);
        true
    }

    /// The finished block.
    pub fn msg(self) -> Msg {
        self.mp
    }
}

/// Bytes of room a part of `n` bytes needs after a block of any length (alignment).
pub const fn room(n: usize) -> usize {
    n + W
}

/// T_ERROR_ACK for primitive `prim`: TPI error `tli`, and `unix` when `tli` is TSYSERR.
pub fn error_ack(prim: i32, tli: i32, unix: i32) -> Option<Msg> {
    let mut b = Build::new(M_PCPROTO, T_ERROR_ACK, 4, 0)?;
    b.set(1, prim).set(2, tli).set(3, unix);
    Some(b.msg())
}

/// T_OK_ACK for primitive `prim`.
pub fn ok_ack(prim: i32) -> Option<Msg> {
    let mut b = Build::new(M_PCPROTO, T_OK_ACK, 2, 0)?;
    b.set(1, prim);
    Some(b.msg())
}

/// What T_INFO_ACK reports (in the order of its fields after `PRIM_type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Info {
    /// TSDU_size.
    pub tsdu: i32,
    /// ETSDU_size.
    pub etsdu: i32,
    /// CDATA_size.
    pub cdata: i32,
    /// DDATA_size.
    pub ddata: i32,
    /// ADDR_size.
    pub addr: i32,
    /// OPT_size.
    pub opt: i32,
    /// TIDU_size.
    pub tidu: i32,
    /// SERV_type.
    pub serv: i32,
    /// CURRENT_state.
    pub state: i32,
    /// PROVIDER_flag.
    pub flags: i32,
}

impl Info {
    /// Decode a T_INFO_ACK block.
    pub fn decode(b: &[u8]) -> Option<Info> {
        if field(b, 0).ok()? != T_INFO_ACK {
            return None;
        }
        let f = |i| field(b, i).ok();
        Some(Info {
            tsdu: f(1)?,
            etsdu: f(2)?,
            cdata: f(3)?,
            ddata: f(4)?,
            addr: f(5)?,
            opt: f(6)?,
            tidu: f(7)?,
            serv: f(8)?,
            state: f(9)?,
            flags: f(10)?,
        })
    }

    /// The T_INFO_ACK block.
    pub fn encode(&self) -> Option<Msg> {
        let mut b = Build::new(M_PCPROTO, T_INFO_ACK, 11, 0)?;
        let v = [
            self.tsdu, self.etsdu, self.cdata, self.ddata, self.addr, self.opt, self.tidu,
            self.serv, self.state, self.flags,
        ];
        for (i, x) in v.iter().enumerate() {
            b.set(i + 1, *x);
        }
        Some(b.msg())
    }
}

/// T_BIND_ACK with the bound address.
pub fn bind_ack(addr: &[u8]) -> Option<Msg> {
    let mut b = Build::new(M_PCPROTO, T_BIND_ACK, 4, room(addr.len()))?;
    b.part(1, 2, addr).then_some(())?;
    Some(b.msg())
}

/// T_ADDR_ACK with the local address (empty when unbound) and no remote address.
pub fn addr_ack(local: &[u8]) -> Option<Msg> {
    let mut b = Build::new(M_PCPROTO, T_ADDR_ACK, 5, room(local.len()))?;
    b.part(1, 2, local).then_some(())?;
    Some(b.msg())
}

/// T_OPTMGMT_ACK: the header only, with room for `opt_room` bytes of options that the caller
/// appends ([`Build::part`] on fields 1 and 2) before setting the flags (field 3).
pub fn optmgmt_ack(opt_room: usize) -> Option<Build> {
    Build::new(M_PCPROTO, T_OPTMGMT_ACK, 4, room(opt_room))
}

/// T_UNITDATA_IND from `src` with options `opt` (empty: none): the M_PROTO block; the data
/// is linked after it.
pub fn unitdata_ind(src: &[u8], opt: &[u8]) -> Option<Msg> {
    let extra = room(src.len()).checked_add(room(opt.len()))?;
    let mut b = Build::new(M_PROTO, T_UNITDATA_IND, 5, extra)?;
    b.part(1, 2, src).then_some(())?;
    b.part(3, 4, opt).then_some(())?;
    Some(b.msg())
}

/// Bytes of the control block of a received datagram's T_UNITDATA_IND ([`unitdata_ind_rx`]):
/// the five scalars, the `sockaddr_in` source, the received options.
pub const UNITDATA_IND_RX: usize = 5 * W + SOCKADDR_IN + RX_OPT_SIZE;
/// Where [`unitdata_ind`] puts the source address of a 5-scalar block: right after the
/// scalars (already aligned).
const RX_SRC: usize = 5 * W;
/// Where it puts the options: right after the address (16 bytes: aligned).
const RX_OPT: usize = RX_SRC + SOCKADDR_IN;
/// The value byte of the first option (IP_TTL) and of the second (IP_TOS): each option is a
/// `t_opthdr` and one byte of value, padded to the alignment (`opt::rx_opts`).
const RX_TTL: usize = RX_OPT + OPTHDR;
/// See [`RX_TTL`].
const RX_TOS: usize = RX_OPT + OPTHDR + W + OPTHDR;

/// Store `v` native endian at byte `at` of `b` (compile time).
const fn put_word(mut b: [u8; UNITDATA_IND_RX], at: usize, v: u32) -> [u8; UNITDATA_IND_RX] {
    let w = v.to_ne_bytes();
    let mut i = 0;
    while i < W {
        b[at + i] = w[i];
        i += 1;
    }
    b
}

/// The block [`unitdata_ind`] builds from a `sockaddr_in` and [`super::opt::rx_opts`], with the
/// source address and port and the TTL and TOS bytes zero: all that never changes, encoded
/// once, at compile time (`codec::unitdata_ind_rx_is_the_generic_encoding` compares it with
/// the generic encoder's output).
const RX_TEMPLATE: [u8; UNITDATA_IND_RX] = {
    let mut b = [0u8; UNITDATA_IND_RX];
    b = put_word(b, 0, T_UNITDATA_IND as u32);
    b = put_word(b, W, SOCKADDR_IN as u32); // SRC_length
    b = put_word(b, 2 * W, RX_SRC as u32); // SRC_offset
    b = put_word(b, 3 * W, RX_OPT_SIZE as u32); // OPT_length
    b = put_word(b, 4 * W, RX_OPT as u32); // OPT_offset
    let fam = AF_INET.to_ne_bytes();
    b[RX_SRC] = fam[0];
    b[RX_SRC + 1] = fam[1];
    let mut o = 0;
    while o < 2 {
        let at = RX_OPT + o * (OPTHDR + W);
        b = put_word(b, at, (OPTHDR + 1) as u32); // len: header and one byte of value
        b = put_word(b, at + W, INET_IP);
        b = put_word(b, at + 2 * W, if o == 0 { IP_TTL } else { IP_TOS });
        b = put_word(b, at + 3 * W, T_SUCCESS);
        o += 1;
    }
    b
};

/// The T_UNITDATA_IND of a datagram received from `src` whose IPv4 header said `ip`: the
/// bytes [`unitdata_ind`] makes of `src.encode()` and [`super::opt::rx_opts`]`(ip)`, made as the
/// receive path (softirq, once per datagram) needs them: the fixed layout copied from
/// `RX_TEMPLATE`, the six bytes of address and port and the two option values stored
/// into it, one allocation and one copy into the block. `None` without memory.
pub fn unitdata_ind_rx(src: &Inet4, ip: &RxIp) -> Option<Msg> {
    let mut b = RX_TEMPLATE;
    let port = src.port.to_be_bytes();
    b[RX_SRC + 2] = port[0];
    b[RX_SRC + 3] = port[1];
    b[RX_SRC + 4] = src.addr[0];
    b[RX_SRC + 5] = src.addr[1];
    b[RX_SRC + 6] = src.addr[2];
    b[RX_SRC + 7] = src.addr[3];
    b[RX_TTL] = ip.ttl;
    b[RX_TOS] = ip.tos;
    Msg::from_bytes(M_PROTO, &b).ok()
}

/// T_UDERROR_IND for a datagram to `dest`: `ERROR_type` `error` (an errno or a TPI error).
pub fn uderror_ind(dest: &[u8], error: i32) -> Option<Msg> {
    let mut b = Build::new(M_PROTO, T_UDERROR_IND, 6, room(dest.len()))?;
    b.part(1, 2, dest).then_some(())?;
    b.set(5, error);
    Some(b.msg())
}

/// A decoded indication or acknowledgement (what the tests and user-side code read back).
#[derive(Debug, PartialEq, Eq)]
pub enum Ind<'a> {
    /// T_ERROR_ACK: primitive in error, TPI error, UNIX error.
    ErrorAck(i32, i32, i32),
    /// T_OK_ACK: the primitive acknowledged.
    OkAck(i32),
    /// T_BIND_ACK: the bound address.
    BindAck(&'a [u8]),
    /// T_ADDR_ACK: local and remote addresses.
    AddrAck(&'a [u8], &'a [u8]),
    /// T_OPTMGMT_ACK: options and flags.
    OptmgmtAck(&'a [u8], i32),
    /// T_UNITDATA_IND: source address and options.
    UnitdataInd(&'a [u8], &'a [u8]),
    /// T_UDERROR_IND: destination, options, error.
    UderrorInd(&'a [u8], &'a [u8], i32),
    /// T_INFO_ACK.
    InfoAck(Info),
}

impl<'a> Ind<'a> {
    /// Decode a block the provider sent up. `None` if it is short, lies, or is unknown.
    pub fn decode(b: &'a [u8]) -> Option<Ind<'a>> {
        let f = |i| field(b, i).ok();
        let p = |l, o| part(b, l, o).ok();
        Some(match f(0)? {
            T_ERROR_ACK => Ind::ErrorAck(f(1)?, f(2)?, f(3)?),
            T_OK_ACK => Ind::OkAck(f(1)?),
            T_BIND_ACK => Ind::BindAck(p(f(1)?, f(2)?)?),
            T_ADDR_ACK => Ind::AddrAck(p(f(1)?, f(2)?)?, p(f(3)?, f(4)?)?),
            T_OPTMGMT_ACK => Ind::OptmgmtAck(p(f(1)?, f(2)?)?, f(3)?),
            T_UNITDATA_IND => Ind::UnitdataInd(p(f(1)?, f(2)?)?, p(f(3)?, f(4)?)?),
            T_UDERROR_IND => Ind::UderrorInd(p(f(1)?, f(2)?)?, p(f(3)?, f(4)?)?, f(5)?),
            T_INFO_ACK => Ind::InfoAck(Info::decode(b)?),
            _ => return None,
        })
    }
}

/// Encode a request (the user's side: tests and tools). Parts are appended aligned.
pub fn encode_req(r: &Req<'_>) -> Option<Msg> {
    Some(match r {
        Req::Info => Build::new(M_PCPROTO, T_INFO_REQ, 1, 0)?.msg(),
        Req::Addr => Build::new(M_PCPROTO, T_ADDR_REQ, 1, 0)?.msg(),
        Req::Unbind => Build::new(M_PROTO, T_UNBIND_REQ, 1, 0)?.msg(),
        Req::Other(t) => Build::new(M_PROTO, *t, 1, 0)?.msg(),
        Req::Bind { addr, conind } => {
            let mut b = Build::new(M_PROTO, T_BIND_REQ, 4, room(addr.len()))?;
            b.part(1, 2, addr).then_some(())?;
            b.set(3, *conind as i32);
            b.msg()
        }
        Req::Unitdata { dest, opt } => {
            let mut b = Build::new(
                M_PROTO,
                T_UNITDATA_REQ,
                5,
                room(dest.len()) + room(opt.len()),
            )?;
            b.part(1, 2, dest).then_some(())?;
            b.part(3, 4, opt).then_some(())?;
            b.msg()
        }
        Req::Optmgmt { opt, flags } => {
            let mut b = Build::new(M_PROTO, T_OPTMGMT_REQ, 4, room(opt.len()))?;
            b.part(1, 2, opt).then_some(())?;
            b.set(3, *flags);
            b.msg()
        }
    })
}
