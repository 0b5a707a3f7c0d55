//! Messages: `Msg`, the owned chain of message blocks (SVR4 `mblk_t` + `dblk_t`).
//!
//! A `Msg` is owned: moving it is the STREAMS "I gave it away" rule, so a message cannot be used
//! after `putnext`/`putq` or freed twice. A block's data lives in one of
//! - a *fast buffer*: `FASTBUF` bytes inline in the block (one allocation for a small message,
//!   as LfS's mdbblock),
//! - a heap data block of any size (allocb),
//! - an external buffer with a free routine (esballoc),
//! - a *shared* data block after `dupb`/`dupmsg`: reference counted and read-only. Writing to a
//!   shared block goes through a checked copy-on-write; there is no way to alias it mutably.
//!
//! `b_rptr`/`b_wptr` are offsets into the data block. `b_cont` chains the blocks of one message;
//! `b_next`/`b_prev` do not exist here: queues keep their own lists (see `queue`).

use crate::sys::{self, Box, NoMem};

/// Size of the inline fast buffer (LfS uses 128 bytes on 64-bit).
pub const FASTBUF: usize = 128;

/// Message type (`db_type`). Values are the SVR4/LfS ones; `>= QPCTL` is high priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MsgType(pub u8);

/// Messages at or above this type are high priority (not flow controlled, queued first).
pub const QPCTL: u8 = 0x80;

/// Ordinary data.
pub const M_DATA: MsgType = MsgType(0x00);
/// Protocol control.
pub const M_PROTO: MsgType = MsgType(0x01);
/// Line break.
pub const M_BREAK: MsgType = MsgType(0x08);
/// Pass a file pointer.
pub const M_PASSFP: MsgType = MsgType(0x09);
/// Post an event.
pub const M_EVENT: MsgType = MsgType(0x0a);
/// Generate a process signal.
pub const M_SIG: MsgType = MsgType(0x0b);
/// Real-time transmission delay.
pub const M_DELAY: MsgType = MsgType(0x0c);
/// Module-to-module control.
pub const M_CTL: MsgType = MsgType(0x0d);
/// I/O control request.
pub const M_IOCTL: MsgType = MsgType(0x0e);
/// Set Stream head options.
pub const M_SETOPTS: MsgType = MsgType(0x10);
/// Reserved for RSE.
pub const M_RSE: MsgType = MsgType(0x11);
/// Positive ioctl acknowledgement.
pub const M_IOCACK: MsgType = MsgType(0x81);
/// Negative ioctl acknowledgement.
pub const M_IOCNAK: MsgType = MsgType(0x82);
/// High-priority protocol control.
pub const M_PCPROTO: MsgType = MsgType(0x83);
/// High-priority signal.
pub const M_PCSIG: MsgType = MsgType(0x84);
/// Read notification.
pub const M_READ: MsgType = MsgType(0x85);
/// Flush queues.
pub const M_FLUSH: MsgType = MsgType(0x86);
/// Stop output.
pub const M_STOP: MsgType = MsgType(0x87);
/// Restart output.
pub const M_START: MsgType = MsgType(0x88);
/// Line disconnect.
pub const M_HANGUP: MsgType = MsgType(0x89);
/// Fatal error for the Stream.
pub const M_ERROR: MsgType = MsgType(0x8a);
/// Ask the Stream head to copy in user data.
pub const M_COPYIN: MsgType = MsgType(0x8b);
/// Ask the Stream head to copy out data.
pub const M_COPYOUT: MsgType = MsgType(0x8c);
/// Result of M_COPYIN/M_COPYOUT.
pub const M_IOCDATA: MsgType = MsgType(0x8d);
/// Reserved for RSE (high priority).
pub const M_PCRSE: MsgType = MsgType(0x8e);
/// Stop input.
pub const M_STOPI: MsgType = MsgType(0x8f);
/// Restart input.
pub const M_STARTI: MsgType = MsgType(0x90);
/// High-priority event.
pub const M_PCEVENT: MsgType = MsgType(0x91);
/// Undo a hangup.
pub const M_UNHANGUP: MsgType = MsgType(0x92);

impl MsgType {
    /// High priority (`db_type >= QPCTL`): bypasses flow control and band ordering.
    pub const fn is_hipri(self) -> bool {
        self.0 >= QPCTL
    }
    /// `datamsg()`: M_DATA, M_PROTO, M_PCPROTO or M_DELAY.
    pub const fn is_data(self) -> bool {
        matches!(self.0, 0x00 | 0x01 | 0x83 | 0x0c)
    }
}

/// `b_flag` bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgFlags(pub u16);

impl MsgFlags {
    /// Last byte of the message is marked (I_ATMARK).
    pub const MSGMARK: MsgFlags = MsgFlags(0x01);
    /// Do not loop back (multiplexors).
    pub const MSGNOLOOP: MsgFlags = MsgFlags(0x02);
    /// Message is delimited (record boundary).
    pub const MSGDELIM: MsgFlags = MsgFlags(0x04);
    /// Whether all bits of `f` are set.
    pub const fn contains(self, f: MsgFlags) -> bool {
        self.0 & f.0 == f.0
    }
}

/// Buffer allocation priority (accepted for SVR4 compatibility; all allocations are atomic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bpri {
    /// BPRI_LO.
    Lo = 1,
    /// BPRI_MED.
    Med = 2,
    /// BPRI_HI.
    Hi = 3,
}

/// An external buffer and its free routine (esballoc's `frtn_t`).
///
/// The buffer is borrowed for `'static` (e.g. from `Box::leak` or a static pool); `free` is
/// called exactly once, with the buffer and `arg`, when the last reference goes away.
pub struct ExtBuf {
    /// The caller's buffer.
    pub buf: &'static mut [u8],
    /// The free routine.
    pub free: fn(&'static mut [u8], usize),
    /// Argument passed to `free`.
    pub arg: usize,
}

/// Storage of one data block.
pub(crate) enum Data {
    /// Inline fast buffer: the block and its data are one allocation.
    Fast([u8; FASTBUF]),
    /// A unique heap data block.
    Heap(sys::Vec<u8>),
    /// A unique external buffer (esballoc).
    Ext(ExtBuf),
    /// A data block shared by `dupb`: read-only, reference counted.
    Shared(sys::Arc<Data>),
}

/// One message block (mblk + the reference to its dblk).
pub struct Mblk {
    pub(crate) ty: MsgType,
    pub(crate) band: u8,
    pub(crate) flag: MsgFlags,
    /// `b_rptr` as an offset into the data block.
    pub(crate) rptr: usize,
    /// `b_wptr` as an offset into the data block (`rptr <= wptr <= capacity`).
    pub(crate) wptr: usize,
    pub(crate) data: Data,
    /// `b_cont`: the next block of this message.
    pub(crate) cont: Option<Msg>,
}

/// An owned message: the first block of a `b_cont` chain.
pub struct Msg(pub(crate) Box<Mblk>);

impl Data {
    /// Writable bytes, or `None` for a shared (read-only) data block.
    fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            Data::Fast(b) => Some(b),
            Data::Heap(v) => Some(v.as_mut_slice()),
            Data::Ext(e) => Some(e.buf),
            Data::Shared(_) => None,
        }
    }
    fn bytes(&self) -> &[u8] {
        match self {
            Data::Fast(b) => b,
            Data::Heap(v) => v,
            Data::Ext(e) => e.buf,
            Data::Shared(a) => a.bytes(),
        }
    }
}

/// allocb: a one-block message of type M_DATA with room for `size` bytes (`rptr == wptr`).
/// Sizes up to `FASTBUF` use the inline fast buffer (no second allocation).
pub fn allocb(size: usize, _pri: Bpri) -> Result<Msg, NoMem> {
    let data = if size <= FASTBUF {
        Data::Fast([0; FASTBUF])
    } else {
        Data::Heap(sys::vec_zeroed(size)?)
    };
    Ok(Msg(sys::new_box(Mblk {
        ty: M_DATA,
        band: 0,
        flag: MsgFlags(0),
        rptr: 0,
        wptr: 0,
        data,
        cont: None,
    })?))
}

impl Msg {
    /// `db_type` of the first block: the type of the message.
    pub fn db_type(&self) -> MsgType {
        self.0.ty
    }
    /// Priority band (`b_band`) of the message.
    pub fn band(&self) -> u8 {
        self.0.band
    }
    /// Set the priority band.
    pub fn set_band(&mut self, band: u8) {
        self.0.band = band;
    }
    /// `b_flag` of the first block.
    pub fn flag(&self) -> MsgFlags {
        self.0.flag
    }
    /// High priority message (type `>= QPCTL`).
    pub fn is_hipri(&self) -> bool {
        self.0.ty.is_hipri()
    }
    /// The readable bytes of the first block (`b_rptr..b_wptr`).
    pub fn rd(&self) -> &[u8] {
        &self.0.data.bytes()[self.0.rptr..self.0.wptr]
    }
    /// Set `db_type` of the first block.
    pub fn set_type(&mut self, ty: MsgType) {
        self.0.ty = ty;
    }
    /// Copy as much of `src` as fits into the first block's free space after `b_wptr` and
    /// advance `b_wptr`; returns the number of bytes copied (0 for a shared block).
    pub fn append(&mut self, src: &[u8]) -> usize {
        let b = &mut *self.0;
        let Some(buf) = b.data.bytes_mut() else {
            return 0;
        };
        let room = buf.len().saturating_sub(b.wptr);
        let n = room.min(src.len());
        if let (Some(dst), Some(s)) = (buf.get_mut(b.wptr..b.wptr + n), src.get(..n)) {
            dst.copy_from_slice(s);
            b.wptr += n;
            n
        } else {
            0
        }
    }
    /// The next block (`b_cont`).
    pub fn cont(&self) -> Option<&Msg> {
        self.0.cont.as_ref()
    }
    /// msgsize: bytes in all blocks of the message, whatever their type (what q_count counts).
    pub fn msgsize(&self) -> usize {
        let mut n = 0;
        let mut b = Some(self);
        while let Some(m) = b {
            n += m.0.wptr - m.0.rptr;
            b = m.cont();
        }
        n
    }
}
