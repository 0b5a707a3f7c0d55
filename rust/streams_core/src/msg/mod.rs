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
//! `b_next` links the messages of a list: a queue's (see `queue/mlist.rs`), the inbound list of
//! a perimeter (`perim/gate.rs`), a take (`sth/take.rs`).
//!
//! This file holds the types, allocation (allocb, esballoc) and the per-block accessors; the
//! DDI utilities over whole messages (dupmsg, copymsg, pullupmsg, adjmsg, …) are in `ops`.
//! freeb/freemsg are `drop`: dropping a `Msg` frees its whole chain, iteratively, into the
//! per-CPU message block cache (`cache.rs`), from which allocb takes blocks again.
//!
//! ## Bytes of an earlier message
//!
//! A block from the cache is not zeroed: its fast buffer still holds an earlier message's
//! bytes, possibly another user's. Each block's `init` mark says how far its data block is
//! this message's own (written by it, or zeroed): `0..init`. Nothing at or above `init` is
//! ever shown, and `b_rptr <= b_wptr <= init` always:
//! - readers see `b_rptr..b_wptr` only ([`Msg::rd`], [`Msg::rd_mut`]); headroom taken back
//!   with [`Msg::unadj_rptr`] lies below `b_wptr`;
//! - [`Msg::append`] and `Msg::fill_spare` write at `b_wptr` and move `init` up to the new
//!   `b_wptr`: no zeroing on the write paths;
//! - [`Msg::spare_mut`] hands out `b_wptr..db_lim` readable, so it zeroes `init..db_lim`
//!   first (once per block); [`Msg::adj_wptr`] past `init` (write-offset headroom) zeroes the
//!   bytes it publishes;
//! - a new data block (heap, esballoc, copy-on-write, pullup) is fully initialised: `init` is
//!   its size; dupb shares the data read-only and copies the mark. [`Msg::copied_in_wait`]
//!   makes a large one without zeroing it first: the copy from user space writes it, and
//!   what a short copy did not reach is zeroed before the block exists.

use crate::stream::QRef;
use crate::sys::{self, NoMem, Recycled};
use cache::Pool;

pub mod cache;
mod magazine;
mod ops;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;

pub use ops::{Blocks, MsgError};

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
    /// The bits of both.
    pub const fn union(self, f: MsgFlags) -> MsgFlags {
        MsgFlags(self.0 | f.0)
    }
    /// `self` without the bits of `f`.
    pub const fn without(self, f: MsgFlags) -> MsgFlags {
        MsgFlags(self.0 & !f.0)
    }
}

impl core::ops::BitOr for MsgFlags {
    type Output = MsgFlags;
    fn bitor(self, f: MsgFlags) -> MsgFlags {
        self.union(f)
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

impl core::fmt::Debug for ExtBuf {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("ExtBuf")
            .field("len", &self.buf.len())
            .field("arg", &self.arg)
            .finish()
    }
}

/// An external buffer owned by a data block: gives it back through its free routine.
///
/// Separate from `ExtBuf` so that a caller holding an `ExtBuf` that esballoc handed back on
/// failure still owns the buffer and is not surprised by a call to its own free routine.
pub(crate) struct ExtData(ExtBuf);

impl Drop for ExtData {
    fn drop(&mut self) {
        // Runs once: the data block (unique, or inside the shared `Arc`) is dropped once.
        let buf = core::mem::take(&mut self.0.buf);
        (self.0.free)(buf, self.0.arg);
    }
}

/// Storage of one data block (`dblk_t`). Its length is `db_lim - db_base`.
pub(crate) enum Data {
    /// Inline fast buffer: the block and its data are one allocation. All `FASTBUF` bytes are
    /// usable whatever size was asked for (LfS's allocb_fast sets `db_lim = db_base + FASTBUF`).
    Fast([u8; FASTBUF]),
    /// A unique heap data block of exactly the requested size.
    Heap(sys::Vec<u8>),
    /// A unique external buffer (esballoc).
    Ext(ExtData),
    /// A data block shared by `dupb`: read-only, reference counted. Never nested: dupb of a
    /// shared block clones the `Arc`.
    Shared(sys::Arc<Data>),
    /// No bytes: a reference to a queue of another Stream and the name (`mi_idname`) of the
    /// module or driver that owns it ([`Msg::with_qref`]). What SVR4 carries as a `queue_t *`
    /// in a message (I_FDINSERT's control part, a loop driver's connect request) travels
    /// here, where neither user data nor a forged number can become one.
    Ref(QRef, &'static str),
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
    /// `b_next`: the next message of a list: a queue's class (`queue/mlist.rs`), a Stream's
    /// inbound list (`perim/gate.rs`), a take (`sth/take.rs`). Always `None` for a message in
    /// anybody's hands.
    pub(crate) next: Option<Msg>,
    /// `b_queue`: the queue a message on an inbound list is for (a `QueueId::raw`).
    pub(crate) dest: u64,
    /// Bytes `0..init` of the data block are this message's (written or zeroed); bytes above
    /// may be an earlier message's and are never shown (module comment). `wptr <= init`.
    pub(crate) init: usize,
    /// The cache list this block goes back to when freed (how it was allocated).
    pub(crate) pool: Pool,
}

/// An owned message: the first block of a `b_cont` chain. Dropping it hands the block to the
/// message block cache (`cache.rs`).
pub struct Msg(pub(crate) Recycled<Mblk>);

impl Drop for Mblk {
    /// Free the rest of the chain one block at a time: the default drop would recurse once per
    /// block and overflow a kernel stack on a long message. (A `Msg` is recycled instead,
    /// `cache.rs`; this runs when a block's box itself is freed, with its chains usually
    /// taken already.)
    fn drop(&mut self) {
        // `b_next` lists are freed the same way, message by message.
        let mut list = self.next.take();
        while let Some(mut m) = list {
            list = m.0.next.take();
            // `m` is dropped here with no `b_next`; its `b_cont` chain goes below.
        }
        let mut next = self.cont.take();
        while let Some(mut m) = next {
            next = m.0.cont.take();
            // `m` is dropped here with no `b_cont`, so its own drop does not recurse.
        }
    }
}

impl Data {
    /// A placeholder that owns nothing outside the block.
    pub(crate) const fn empty() -> Data {
        Data::Fast([0; FASTBUF])
    }
    /// A fresh, zeroed, unique data block of at least `size` bytes: the inline fast buffer up
    /// to `FASTBUF`, otherwise a heap block of exactly `size` bytes.
    pub(crate) fn alloc(size: usize) -> Result<Data, NoMem> {
        if size <= FASTBUF {
            Ok(Data::Fast([0; FASTBUF]))
        } else {
            Ok(Data::Heap(sys::vec_zeroed(size)?))
        }
    }
    /// Writable bytes, or `None` for a shared (read-only) data block.
    #[inline]
    pub(crate) fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            Data::Fast(b) => Some(b),
            Data::Heap(v) => Some(v.as_mut_slice()),
            Data::Ext(e) => Some(e.0.buf),
            Data::Ref(..) => Some(&mut []),
            Data::Shared(_) => None,
        }
    }
    /// All bytes of the data block (`db_base..db_lim`).
    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Data::Fast(b) => b,
            Data::Heap(v) => v.as_slice(),
            Data::Ext(e) => e.0.buf,
            Data::Ref(..) => &[],
            Data::Shared(a) => a.bytes(),
        }
    }
    /// The queue reference of a reference block (through a `dupb` share too).
    pub(crate) fn qref(&self) -> Option<(&QRef, &'static str)> {
        match self {
            Data::Ref(q, name) => Some((q, name)),
            Data::Shared(a) => a.qref(),
            _ => None,
        }
    }
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Data::Shared(_))
    }
}

impl Mblk {
    /// A block of type `ty` over `data` with `rptr == wptr == db_base`.
    pub(crate) fn new(ty: MsgType, data: Data) -> Mblk {
        let init = data.bytes().len();
        Mblk {
            ty,
            band: 0,
            flag: MsgFlags(0),
            rptr: 0,
            wptr: 0,
            data,
            cont: None,
            next: None,
            dest: 0,
            init,
            pool: Pool::Atomic,
        }
    }
    /// Give the block a new, fully initialised data block (the old one is dropped).
    pub(crate) fn set_data(&mut self, data: Data) {
        self.init = data.bytes().len();
        self.data = data;
    }
    /// [`Mblk::set_data`] with a data block allocated atomically (copy-on-write, pullup): a
    /// heap buffer makes the block go back to an atomic list, so that a charged buffer list
    /// never holds an uncharged buffer (`cache.rs`).
    pub(crate) fn set_data_atomic(&mut self, data: Data) {
        if matches!(data, Data::Heap(_)) {
            self.pool = Pool::Atomic;
        }
        self.set_data(data);
    }
    /// `b_wptr - b_rptr`.
    pub(crate) fn blen(&self) -> usize {
        self.wptr.saturating_sub(self.rptr)
    }
    #[inline]
    pub(crate) fn rd(&self) -> &[u8] {
        self.data
            .bytes()
            .get(self.rptr..self.wptr)
            .unwrap_or_default()
    }
    /// A fresh unique data block of the same size holding this block's readable bytes at the
    /// same offsets (copyb): headroom before `b_rptr` and room after `b_wptr` are kept.
    pub(crate) fn copy_data(&self) -> Result<Data, NoMem> {
        if let Some((q, name)) = self.data.qref() {
            return Ok(Data::Ref(q.clone(), name)); // a copy refers to the same queue
        }
        let mut d = Data::alloc(self.data.bytes().len())?;
        if let Some(dst) = d.bytes_mut().and_then(|b| b.get_mut(self.rptr..self.wptr)) {
            sys::copy_bytes(dst, self.rd());
        }
        Ok(d)
    }
}

/// allocb: a one-block message of type M_DATA with room for `size` bytes (`rptr == wptr`).
/// Sizes up to `FASTBUF` use the inline fast buffer (no second allocation, and all `FASTBUF`
/// bytes are usable, as in LfS); larger ones get a heap data block of exactly `size` bytes.
pub fn allocb(size: usize, _pri: Bpri) -> Result<Msg, NoMem> {
    Msg::with_type(M_DATA, size)
}

/// esballoc: a one-block M_DATA message over the caller's buffer, `rptr == wptr == db_base`,
/// `db_lim` = the end of the buffer. `ext.free(ext.buf, ext.arg)` runs exactly once, when the
/// last block referring to the data (the message and all its `dupb` copies) is freed.
///
/// On allocation failure the buffer is handed back untouched and its free routine is not
/// called: the caller still owns it, as with a NULL return in SVR4.
pub fn esballoc(ext: ExtBuf, _pri: Bpri) -> Result<Msg, ExtBuf> {
    // Allocate the block before wrapping the buffer, so failure cannot run the free routine.
    match cache::alloc_fast(M_DATA, Pool::Atomic) {
        Ok(mut m) => {
            m.0.set_data(Data::Ext(ExtData(ext)));
            Ok(m)
        }
        Err(NoMem) => Err(ext),
    }
}

/// freeb: free one block and hand back its `b_cont` (SVR4's freeb leaves `b_cont` alone, so
/// callers save it first; owning the chain, here it is returned instead).
pub fn freeb(mut m: Msg) -> Option<Msg> {
    m.0.cont.take()
}

/// freemsg: free every block of the message (same as dropping it).
pub fn freemsg(m: Msg) {
    drop(m)
}

impl Msg {
    /// A one-block message of type `ty` with room for at least `size` bytes (allocb + set
    /// `db_type`).
    pub fn with_type(ty: MsgType, size: usize) -> Result<Msg, NoMem> {
        if size <= FASTBUF {
            cache::alloc_fast(ty, Pool::Atomic)
        } else if size <= cache::PAGEBUF {
            cache::alloc_buf(ty, size, Pool::Atomic)
        } else {
            cache::alloc_with(ty, Data::Heap(sys::vec_zeroed(size)?), Pool::Atomic)
        }
    }
    /// [`Msg::with_type`] for a system call that builds its message before it takes the
    /// Stream lock (Solaris `allocb_wait`): the allocations may sleep to find memory, so this
    /// is never called with a Stream lock held or from a put or service procedure.
    pub fn with_type_wait(ty: MsgType, size: usize) -> Result<Msg, NoMem> {
        if size <= FASTBUF {
            cache::alloc_fast(ty, Pool::Charged)
        } else if size <= cache::PAGEBUF {
            cache::alloc_buf(ty, size, Pool::Charged)
        } else {
            cache::alloc_with(ty, Data::Heap(sys::vec_zeroed_wait(size)?), Pool::Charged)
        }
    }
    /// A one-block message of type `ty` with room for `size` bytes (as
    /// [`Msg::with_type_wait`]: before the Stream lock; may sleep) holding what can be copied
    /// of `size` bytes from user offset `off` of `io` before the first bad address: its
    /// [`Msg::blen`] says how many. A short copy publishes only what precedes the fault.
    ///
    /// Above [`cache::PAGEBUF`] the data block is new and the copy writes into it
    /// uninitialised ([`sys::vec_filled_wait`]): no zeroing of bytes about to be overwritten.
    /// After a short copy the rest of it is zeroed, so the block is `size` bytes as allocb's.
    /// Up to `PAGEBUF` the copy goes into the block's bytes as they are (`Msg::fill_spare`).
    #[inline] // the small case stays as cheap as it was in the caller
    pub fn copied_in_wait(
        ty: MsgType,
        size: usize,
        io: &mut dyn crate::sth::UserIo,
        off: usize,
    ) -> Result<Msg, NoMem> {
        if size <= cache::PAGEBUF {
            let mut m = Msg::with_type_wait(ty, size)?;
            m.fill_spare(size, |dst| io.copy_from_user_partial(dst, off))
                .ok_or(NoMem)?;
            return Ok(m);
        }
        Msg::copied_in_new(ty, size, io, off)
    }
    /// [`Msg::copied_in_wait`] above `PAGEBUF`: a new data block filled uninitialised.
    fn copied_in_new(
        ty: MsgType,
        size: usize,
        io: &mut dyn crate::sth::UserIo,
        off: usize,
    ) -> Result<Msg, NoMem> {
        let mut v = sys::vec_filled_wait(size, |dst| io.copy_from_user_uninit(dst, off))?;
        let got = v.len();
        sys::vec_resize_in_place(&mut v, size)?;
        let mut m = cache::alloc_with(ty, Data::Heap(v), Pool::Charged)?;
        m.0.wptr = got;
        Ok(m)
    }
    /// A one-block message of type `ty` holding a copy of `src` (sized as allocb would).
    pub fn from_bytes(ty: MsgType, src: &[u8]) -> Result<Msg, NoMem> {
        let mut m = Msg::with_type(ty, src.len())?;
        m.append(src);
        Ok(m)
    }
    /// A one-block message of type `ty` with no bytes that carries a reference to queue `q`
    /// of another Stream, owned by the module or driver named `name` (see [`Msg::qref`]).
    /// Only kernel code makes these: the Stream head for I_FDINSERT, drivers that introduce
    /// themselves to another Stream.
    pub fn with_qref(ty: MsgType, q: QRef, name: &'static str) -> Result<Msg, NoMem> {
        cache::alloc_with(ty, Data::Ref(q, name), Pool::Atomic)
    }
    /// [`Msg::with_qref`] before a Stream lock is taken (the allocation may sleep, as with
    /// [`Msg::with_type_wait`]).
    pub fn with_qref_wait(ty: MsgType, q: QRef, name: &'static str) -> Result<Msg, NoMem> {
        cache::alloc_with(ty, Data::Ref(q, name), Pool::Charged)
    }
    /// The queue reference the first block carries, with the name of the module or driver
    /// owning that queue; `None` for an ordinary block. (Freeing the block lets go of the
    /// reference; `copyb`/`dupb` copies refer to the same queue; `pullupmsg` drops it.)
    pub fn qref(&self) -> Option<(&QRef, &'static str)> {
        self.0.data.qref()
    }
    /// `db_type` of the first block: the type of the message.
    pub fn db_type(&self) -> MsgType {
        self.0.ty
    }
    /// Set `db_type` of the first block.
    pub fn set_type(&mut self, ty: MsgType) {
        self.0.ty = ty;
    }
    /// Priority band (`b_band`) of the message.
    pub fn band(&self) -> u8 {
        self.0.band
    }
    /// Set the priority band.
    pub fn set_band(&mut self, band: u8) {
        self.0.band = band;
    }
    /// The `arg` of the first block's external buffer (esballoc), if the block owns one
    /// (not shared by dupb). How the platform finds what it attached to a message it built
    /// (the file of an M_PASSFP message).
    pub fn ext_arg(&self) -> Option<usize> {
        match &self.0.data {
            Data::Ext(e) => Some(e.0.arg),
            _ => None,
        }
    }
    /// `b_flag` of the first block.
    pub fn flag(&self) -> MsgFlags {
        self.0.flag
    }
    /// Replace `b_flag` of the first block.
    pub fn set_flag(&mut self, f: MsgFlags) {
        self.0.flag = f;
    }
    /// High priority message (type `>= QPCTL`).
    pub fn is_hipri(&self) -> bool {
        self.0.ty.is_hipri()
    }
    /// `pcmsg()`: the same as [`Msg::is_hipri`], under its DDI name.
    pub fn pcmsg(&self) -> bool {
        self.is_hipri()
    }
    /// `datamsg()`: M_DATA, M_PROTO, M_PCPROTO or M_DELAY.
    pub fn datamsg(&self) -> bool {
        self.0.ty.is_data()
    }
    /// The readable bytes of the first block (`b_rptr..b_wptr`).
    #[inline]
    pub fn rd(&self) -> &[u8] {
        self.0.rd()
    }
    /// The readable bytes of the first block, writable in place; `None` if the data block is
    /// shared (see [`Msg::make_writable`]).
    pub fn rd_mut(&mut self) -> Option<&mut [u8]> {
        let b = &mut *self.0;
        let (r, w) = (b.rptr, b.wptr);
        b.data.bytes_mut().and_then(|d| d.get_mut(r..w))
    }
    /// `MBLKL`: readable bytes in the first block (`b_wptr - b_rptr`).
    pub fn blen(&self) -> usize {
        self.0.blen()
    }
    /// Size of the first block's data buffer (`db_lim - db_base`).
    pub fn capacity(&self) -> usize {
        self.0.data.bytes().len()
    }
    /// Bytes before `b_rptr` in the first block (`b_rptr - db_base`).
    pub fn headroom(&self) -> usize {
        self.0.rptr
    }
    /// `MBLKTAIL`: bytes that can be written after `b_wptr` now (`db_lim - b_wptr`), 0 when
    /// the data block is shared.
    pub fn wr_room(&self) -> usize {
        if self.is_shared() {
            return 0;
        }
        self.capacity().saturating_sub(self.0.wptr)
    }
    /// The writable space after `b_wptr` (`b_wptr..db_lim`), to fill before
    /// [`Msg::adj_wptr`]; `None` if the data block is shared. Bytes an earlier message left
    /// there are zeroed first (module comment); [`Msg::append`] and `Msg::fill_spare`
    /// write without that.
    pub fn spare_mut(&mut self) -> Option<&mut [u8]> {
        let b = &mut *self.0;
        let (w, init) = (b.wptr, b.init);
        let d = b.data.bytes_mut()?;
        if let Some(stale) = d.get_mut(init..) {
            stale.fill(0);
            b.init = d.len();
        }
        d.get_mut(w..)
    }
    /// Write up to `n` bytes at `b_wptr` with `fill`, which returns how many it wrote (from
    /// the start of the slice it is given); `b_wptr` moves past them. `None` (nothing done)
    /// if the block is shared or has less than `n` bytes of room.
    ///
    /// The slice may hold an earlier message's bytes and is not zeroed: `fill` must only
    /// write into it (a copy from user space), which is why this is not public. Only the
    /// bytes `fill` reports are published.
    pub(crate) fn fill_spare(
        &mut self,
        n: usize,
        fill: impl FnOnce(&mut [u8]) -> usize,
    ) -> Option<usize> {
        let b = &mut *self.0;
        let w = b.wptr;
        let dst = b.data.bytes_mut()?.get_mut(w..w.checked_add(n)?)?;
        let got = fill(dst).min(n);
        // `w + n` was checked above and `got <= n`: this cannot overflow, but the kernel
        // build's overflow check would leave a panic branch for `+`.
        b.wptr = w.saturating_add(got);
        b.init = b.init.max(b.wptr);
        Some(got)
    }
    /// `b_rptr += n`, clamped to `b_wptr`: consume bytes from the head of the first block.
    /// Returns how far it moved.
    pub fn adj_rptr(&mut self, n: usize) -> usize {
        let k = n.min(self.blen());
        self.0.rptr += k;
        k
    }
    /// `b_rptr -= n`, clamped to `db_base`: take back headroom (e.g. to read a header again).
    /// Returns how far it moved.
    pub fn unadj_rptr(&mut self, n: usize) -> usize {
        let k = n.min(self.0.rptr);
        self.0.rptr -= k;
        k
    }
    /// `b_wptr += n`, clamped to `db_lim`: publish bytes written through
    /// [`Msg::spare_mut`]. Returns how far it moved (0 for a shared block).
    pub fn adj_wptr(&mut self, n: usize) -> usize {
        let k = n.min(self.wr_room());
        let b = &mut *self.0;
        let w = b.wptr + k;
        if w > b.init {
            // Published without being written (write-offset headroom): no earlier bytes.
            if let Some(stale) = b.data.bytes_mut().and_then(|d| d.get_mut(b.init..w)) {
                stale.fill(0);
            }
            b.init = w;
        }
        b.wptr = w;
        k
    }
    /// `b_wptr -= n`, clamped to `b_rptr`: drop bytes from the tail of the first block.
    /// Returns how far it moved.
    pub fn trim_wptr(&mut self, n: usize) -> usize {
        let k = n.min(self.blen());
        self.0.wptr -= k;
        k
    }
    /// `b_rptr = b_wptr = db_base`: empty the first block for reuse.
    pub fn reset(&mut self) {
        self.0.rptr = 0;
        self.0.wptr = 0;
    }
    /// Copy as much of `src` as fits into the first block's free space after `b_wptr` and
    /// advance `b_wptr`; returns the number of bytes copied (0 for a shared block).
    pub fn append(&mut self, src: &[u8]) -> usize {
        let b = &mut *self.0;
        let w = b.wptr;
        let Some(room) = b.data.bytes_mut().and_then(|d| d.get_mut(w..)) else {
            return 0;
        };
        let n = sys::copy_bytes(room, src);
        b.wptr = w + n;
        b.init = b.init.max(b.wptr);
        n
    }
    /// Whether the first block's data is shared with a `dupb` copy (and so read-only).
    pub fn is_shared(&self) -> bool {
        self.0.data.is_shared()
    }
    /// Copy-on-write: give the first block a fresh unique data block of the same size holding
    /// the same readable bytes at the same offsets, if it is shared. The other holders keep the
    /// old data. On failure nothing changes.
    pub fn make_writable(&mut self) -> Result<(), NoMem> {
        if self.is_shared() {
            let d = self.0.copy_data()?;
            self.0.set_data_atomic(d);
        }
        Ok(())
    }
    /// The next block (`b_cont`).
    pub fn cont(&self) -> Option<&Msg> {
        self.0.cont.as_ref()
    }
    /// The next block (`b_cont`), mutable.
    pub fn cont_mut(&mut self) -> Option<&mut Msg> {
        self.0.cont.as_mut()
    }
    /// msgsize: bytes in all blocks of the message, whatever their type (what q_count counts).
    pub fn msgsize(&self) -> usize {
        self.blocks().fold(0, |n, b| n.saturating_add(b.blen()))
    }
    /// msgsize and the number of blocks (`b_cont` chain length), in one walk: what a queue
    /// counts (`q_count`, `q_mblkcnt`). A zero-length message is one block.
    pub fn msgsize_blocks(&self) -> (usize, usize) {
        self.blocks()
            .fold((0, 0), |(n, k), b| (n.saturating_add(b.blen()), k + 1))
    }
}

impl core::fmt::Debug for Msg {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Msg")
            .field("type", &self.db_type())
            .field("band", &self.band())
            .field("blocks", &self.blocks().count())
            .field("msgsize", &self.msgsize())
            .finish()
    }
}

// Messages move between CPUs (putq on one, the service procedure on another), so `Msg` must
// stay `Send`; this fails to compile if a data-block variant ever breaks that.
const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Msg>()
};
