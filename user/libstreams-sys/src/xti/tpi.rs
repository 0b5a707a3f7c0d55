//! TPI primitives (`<sys/tihdr.h>`), encoded and decoded as the control part of M_PROTO /
//! M_PCPROTO messages: a sequence of native-endian 32-bit words, then the variable parts
//! (addresses, options) at the byte offsets the header gives, each starting on a 4-byte
//! boundary. Decoding checks every length and offset against the bytes received, so a
//! malformed primitive is an error value, never an out-of-bounds read.

#![allow(missing_docs)]

// Primitive numbers and provider states: shared with the driver.
pub use super::tihdr::{
    TS_DATA_XFER, TS_IDLE, TS_NOSTATES, TS_UNBND, TS_WACK_BREQ, TS_WACK_CREQ, TS_WACK_CRES,
    TS_WACK_DREQ10, TS_WACK_DREQ11, TS_WACK_DREQ6, TS_WACK_DREQ7, TS_WACK_DREQ9, TS_WACK_OPTREQ,
    TS_WACK_UREQ, TS_WCON_CREQ, TS_WIND_ORDREL, TS_WREQ_ORDREL, TS_WRES_CIND, T_ADDR_ACK,
    T_ADDR_REQ, T_BIND_ACK, T_BIND_REQ, T_CAPABILITY_ACK, T_CAPABILITY_REQ, T_CONN_CON, T_CONN_IND,
    T_CONN_REQ, T_CONN_RES, T_DATA_IND, T_DATA_REQ, T_DISCON_IND, T_DISCON_REQ, T_ERROR_ACK,
    T_EXDATA_IND, T_EXDATA_REQ, T_INFO_ACK, T_INFO_REQ, T_OK_ACK, T_OPTDATA_IND, T_OPTDATA_REQ,
    T_OPTMGMT_ACK, T_OPTMGMT_REQ, T_ORDREL_IND, T_ORDREL_REQ, T_UDERROR_IND, T_UNBIND_REQ,
    T_UNITDATA_IND, T_UNITDATA_REQ,
};

/// Fixed header sizes in bytes (`sizeof(struct T_...)`), checked against the C header.
pub mod size {
    pub const INFO_REQ: usize = 4;
    pub const BIND_REQ: usize = 16;
    pub const UNBIND_REQ: usize = 4;
    pub const OPTMGMT_REQ: usize = 16;
    pub const ADDR_REQ: usize = 4;
    pub const INFO_ACK: usize = 44;
    pub const BIND_ACK: usize = 16;
    pub const OPTMGMT_ACK: usize = 16;
    pub const ERROR_ACK: usize = 16;
    pub const OK_ACK: usize = 8;
    pub const ADDR_ACK: usize = 20;
    pub const UNITDATA_REQ: usize = 20;
    pub const UNITDATA_IND: usize = 20;
    pub const UDERROR_IND: usize = 24;
    pub const CONN_REQ: usize = 20;
    pub const CONN_RES: usize = 20;
    pub const DISCON_REQ: usize = 8;
    pub const DATA_REQ: usize = 8;
    pub const CONN_IND: usize = 24;
    pub const CONN_CON: usize = 20;
    pub const DISCON_IND: usize = 12;
    pub const OPTDATA_REQ: usize = 16;
    pub const CAPABILITY_REQ: usize = 8;
    pub const CAPABILITY_ACK: usize = 56;
}

/// Why a received control part is not a well-formed primitive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Shorter than its primitive's fixed part (or than the 4-byte type).
    Short,
    /// A length/offset pair points outside the message, or is negative.
    BadRange,
}

/// The body of T_INFO_ACK.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct InfoAck {
    pub tsdu_size: i32,
    pub etsdu_size: i32,
    pub cdata_size: i32,
    pub ddata_size: i32,
    pub addr_size: i32,
    pub opt_size: i32,
    pub tidu_size: i32,
    pub serv_type: i32,
    pub current_state: i32,
    pub provider_flag: i32,
}

impl InfoAck {
    /// The limits the `udp` driver reports (T_CLTS, 16-byte `sockaddr_in`, 512 bytes of
    /// options, T_SNDZERO), in TPI state `current_state`: for tests and harnesses that play
    /// the provider.
    pub fn udp(current_state: i32) -> InfoAck {
        InfoAck {
            tsdu_size: 65507,
            etsdu_size: super::consts::T_INVALID,
            cdata_size: super::consts::T_INVALID,
            ddata_size: super::consts::T_INVALID,
            addr_size: 16,
            opt_size: 512,
            tidu_size: 65507,
            serv_type: super::consts::T_CLTS,
            current_state,
            provider_flag: super::consts::T_SNDZERO,
        }
    }
}

/// A primitive the library receives, borrowing its variable parts from the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received<'a> {
    InfoAck(InfoAck),
    BindAck {
        addr: &'a [u8],
        conind: u32,
    },
    OkAck {
        correct_prim: i32,
    },
    ErrorAck {
        error_prim: i32,
        tli_error: i32,
        unix_error: i32,
    },
    OptmgmtAck {
        opt: &'a [u8],
        flags: i32,
    },
    AddrAck {
        local: &'a [u8],
        remote: &'a [u8],
    },
    UnitdataInd {
        src: &'a [u8],
        opt: &'a [u8],
    },
    UderrorInd {
        dest: &'a [u8],
        opt: &'a [u8],
        error: i32,
    },
    /// Any other primitive (connection-oriented ones on a CLTS endpoint, unknown types).
    Other {
        prim: i32,
    },
}

/// Word `i` (0-based) of `b`.
fn word(b: &[u8], i: usize) -> Result<i32, DecodeError> {
    let s = b.get(i * 4..i * 4 + 4).ok_or(DecodeError::Short)?;
    Ok(i32::from_ne_bytes([s[0], s[1], s[2], s[3]]))
}

/// The `len` bytes at `off` in `b`; a zero length is the empty slice whatever the offset.
fn part(b: &[u8], len: i32, off: i32) -> Result<&[u8], DecodeError> {
    if len == 0 {
        return Ok(&[]);
    }
    let (len, off) = (
        usize::try_from(len).map_err(|_| DecodeError::BadRange)?,
        usize::try_from(off).map_err(|_| DecodeError::BadRange)?,
    );
    let end = off.checked_add(len).ok_or(DecodeError::BadRange)?;
    b.get(off..end).ok_or(DecodeError::BadRange)
}

fn need(b: &[u8], n: usize) -> Result<(), DecodeError> {
    if b.len() < n {
        Err(DecodeError::Short)
    } else {
        Ok(())
    }
}

/// Decode a control part received from the provider.
pub fn decode(b: &[u8]) -> Result<Received<'_>, DecodeError> {
    let prim = word(b, 0)?;
    let w = |i| word(b, i);
    Ok(match prim {
        T_INFO_ACK => {
            need(b, size::INFO_ACK)?;
            Received::InfoAck(InfoAck {
                tsdu_size: w(1)?,
                etsdu_size: w(2)?,
                cdata_size: w(3)?,
                ddata_size: w(4)?,
                addr_size: w(5)?,
                opt_size: w(6)?,
                tidu_size: w(7)?,
                serv_type: w(8)?,
                current_state: w(9)?,
                provider_flag: w(10)?,
            })
        }
        T_BIND_ACK => {
            need(b, size::BIND_ACK)?;
            Received::BindAck {
                addr: part(b, w(1)?, w(2)?)?,
                conind: w(3)? as u32,
            }
        }
        T_OK_ACK => {
            need(b, size::OK_ACK)?;
            Received::OkAck {
                correct_prim: w(1)?,
            }
        }
        T_ERROR_ACK => {
            need(b, size::ERROR_ACK)?;
            Received::ErrorAck {
                error_prim: w(1)?,
                tli_error: w(2)?,
                unix_error: w(3)?,
            }
        }
        T_OPTMGMT_ACK => {
            need(b, size::OPTMGMT_ACK)?;
            Received::OptmgmtAck {
                opt: part(b, w(1)?, w(2)?)?,
                flags: w(3)?,
            }
        }
        T_ADDR_ACK => {
            need(b, size::ADDR_ACK)?;
            Received::AddrAck {
                local: part(b, w(1)?, w(2)?)?,
                remote: part(b, w(3)?, w(4)?)?,
            }
        }
        T_UNITDATA_IND => {
            need(b, size::UNITDATA_IND)?;
            Received::UnitdataInd {
                src: part(b, w(1)?, w(2)?)?,
                opt: part(b, w(3)?, w(4)?)?,
            }
        }
        T_UDERROR_IND => {
            need(b, size::UDERROR_IND)?;
            Received::UderrorInd {
                dest: part(b, w(1)?, w(2)?)?,
                opt: part(b, w(3)?, w(4)?)?,
                error: w(5)?,
            }
        }
        prim => Received::Other { prim },
    })
}

/// Round `n` up to the 4-byte alignment of TPI variable parts.
pub const fn align(n: usize) -> usize {
    (n + 3) & !3
}

/// Builds one primitive: the fixed words, then variable parts appended aligned, their
/// (length, offset) pairs patched into the given words.
struct Builder {
    buf: Vec<u8>,
}

impl Builder {
    fn new(words: &[i32]) -> Builder {
        let mut buf = Vec::with_capacity(words.len() * 4 + 64);
        for w in words {
            buf.extend_from_slice(&w.to_ne_bytes());
        }
        Builder { buf }
    }

    fn set(&mut self, i: usize, v: i32) {
        self.buf[i * 4..i * 4 + 4].copy_from_slice(&v.to_ne_bytes());
    }

    /// Append `data` (if any) and write its length and offset at words `len_at`, `len_at+1`.
    fn part(mut self, len_at: usize, data: &[u8]) -> Result<Builder, EncodeError> {
        let (len, off, end) = place(self.buf.len(), data)?;
        self.buf.resize(end - data.len(), 0);
        self.buf.extend_from_slice(data);
        self.set(len_at, len);
        self.set(len_at + 1, off);
        Ok(self)
    }
}

/// Where a variable part goes in a primitive of `end` bytes so far: its length and offset
/// words (both 0 for an empty part, which takes no room) and the primitive's new end.
fn place(end: usize, data: &[u8]) -> Result<(i32, i32, usize), EncodeError> {
    if data.is_empty() {
        return Ok((0, 0, end));
    }
    let len = i32::try_from(data.len()).map_err(|_| EncodeError)?;
    let off = align(end);
    let off32 = i32::try_from(off).map_err(|_| EncodeError)?;
    Ok((len, off32, off.checked_add(data.len()).ok_or(EncodeError)?))
}

/// A variable part longer than a t_scalar_t can say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodeError;

/// T_INFO_REQ (M_PCPROTO).
pub fn info_req() -> Vec<u8> {
    Builder::new(&[T_INFO_REQ]).buf
}

/// T_BIND_REQ (M_PROTO) for `addr` (empty: the provider chooses) and `conind` indications.
pub fn bind_req(addr: &[u8], conind: u32) -> Result<Vec<u8>, EncodeError> {
    Ok(Builder::new(&[T_BIND_REQ, 0, 0, conind as i32])
        .part(1, addr)?
        .buf)
}

/// T_UNBIND_REQ (M_PROTO).
pub fn unbind_req() -> Vec<u8> {
    Builder::new(&[T_UNBIND_REQ]).buf
}

/// T_ADDR_REQ (M_PROTO).
pub fn addr_req() -> Vec<u8> {
    Builder::new(&[T_ADDR_REQ]).buf
}

/// T_OPTMGMT_REQ (M_PROTO).
pub fn optmgmt_req(opt: &[u8], flags: i32) -> Result<Vec<u8>, EncodeError> {
    Ok(Builder::new(&[T_OPTMGMT_REQ, 0, 0, flags])
        .part(1, opt)?
        .buf)
}

/// T_UNITDATA_REQ (M_PROTO; the data travels as the message's data part).
pub fn unitdata_req(dest: &[u8], opt: &[u8]) -> Result<Vec<u8>, EncodeError> {
    let mut b = vec![0; size::UNITDATA_REQ + align(dest.len()) + opt.len()];
    let n = unitdata_req_into(&mut b, dest, opt)?.ok_or(EncodeError)?;
    b.truncate(n);
    Ok(b)
}

/// T_UNITDATA_REQ encoded into `out`, for t_sndudata's stack buffer (no allocation): its
/// length, or None when `out` is too small.
pub fn unitdata_req_into(
    out: &mut [u8],
    dest: &[u8],
    opt: &[u8],
) -> Result<Option<usize>, EncodeError> {
    let (dlen, doff, end) = place(size::UNITDATA_REQ, dest)?;
    let (olen, ooff, end) = place(end, opt)?;
    let Some(b) = out.get_mut(..end) else {
        return Ok(None);
    };
    b.fill(0);
    for (i, w) in [T_UNITDATA_REQ, dlen, doff, olen, ooff].iter().enumerate() {
        b[i * 4..i * 4 + 4].copy_from_slice(&w.to_ne_bytes());
    }
    for (off, data) in [(doff, dest), (ooff, opt)] {
        let off = off as usize;
        b[off..off + data.len()].copy_from_slice(data);
    }
    Ok(Some(end))
}

/// Encoders of what a provider sends: for tests and for user-space providers (a TPI
/// driver written as a STREAMS pipe peer).
pub mod provider {
    use super::*;

    /// T_INFO_ACK.
    pub fn info_ack(a: &InfoAck) -> Vec<u8> {
        Builder::new(&[
            T_INFO_ACK,
            a.tsdu_size,
            a.etsdu_size,
            a.cdata_size,
            a.ddata_size,
            a.addr_size,
            a.opt_size,
            a.tidu_size,
            a.serv_type,
            a.current_state,
            a.provider_flag,
        ])
        .buf
    }

    /// T_BIND_ACK.
    pub fn bind_ack(addr: &[u8], conind: u32) -> Result<Vec<u8>, EncodeError> {
        Ok(Builder::new(&[T_BIND_ACK, 0, 0, conind as i32])
            .part(1, addr)?
            .buf)
    }

    /// T_OK_ACK.
    pub fn ok_ack(prim: i32) -> Vec<u8> {
        Builder::new(&[T_OK_ACK, prim]).buf
    }

    /// T_ERROR_ACK.
    pub fn error_ack(prim: i32, tli: i32, unix: i32) -> Vec<u8> {
        Builder::new(&[T_ERROR_ACK, prim, tli, unix]).buf
    }

    /// T_OPTMGMT_ACK.
    pub fn optmgmt_ack(opt: &[u8], flags: i32) -> Result<Vec<u8>, EncodeError> {
        Ok(Builder::new(&[T_OPTMGMT_ACK, 0, 0, flags])
            .part(1, opt)?
            .buf)
    }

    /// T_ADDR_ACK.
    pub fn addr_ack(local: &[u8], remote: &[u8]) -> Result<Vec<u8>, EncodeError> {
        Ok(Builder::new(&[T_ADDR_ACK, 0, 0, 0, 0])
            .part(1, local)?
            .part(3, remote)?
            .buf)
    }

    /// T_UNITDATA_IND.
    pub fn unitdata_ind(src: &[u8], opt: &[u8]) -> Result<Vec<u8>, EncodeError> {
        Ok(Builder::new(&[T_UNITDATA_IND, 0, 0, 0, 0])
            .part(1, src)?
            .part(3, opt)?
            .buf)
    }

    /// T_UDERROR_IND.
    pub fn uderror_ind(dest: &[u8], opt: &[u8], error: i32) -> Result<Vec<u8>, EncodeError> {
        Ok(Builder::new(&[T_UDERROR_IND, 0, 0, 0, 0, error])
            .part(1, dest)?
            .part(3, opt)?
            .buf)
    }
}
