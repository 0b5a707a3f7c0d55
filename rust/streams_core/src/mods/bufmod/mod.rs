//! `bufmod`: the Solaris bufmod(7M) STREAMS buffering module, pushable on any Stream.
//!
//! Why: a reader of many small messages (a packet tap, a log) pays one system call per
//! message. bufmod collects the read side's M_DATA messages into *chunks* of up to `chunksize`
//! bytes (SBIOCSCHUNK, default [`SB_DFLT_CHUNK`]) and sends a chunk upstream as one message;
//! each message becomes a *record*: optionally truncated to `snaplen` bytes (SBIOCSSNAP, 0 = no
//! truncation) and, unless SB_NO_HEADER, prefixed with a [`SbHdr`] and padded to
//! [`SB_ALIGN`] bytes, so the reader can walk the records of a chunk. The write side passes
//! through; the SBIOC* ioctls arrive as I_STR (M_IOCTL) and are answered with M_IOCACK or
//! M_IOCNAK (`ioctl.rs`).
//!
//! When a chunk goes up:
//! - when the next record would not fit (Solaris), and as soon as the chunk is exactly full;
//! - a record larger than `chunksize` goes up alone, after the chunk before it;
//! - with `chunksize` 0 or a zero timeout (SBIOCSTIME 0, which also sets `chunksize` to 0,
//!   as in Solaris) every record goes up at once; SB_DEFER_CHUNK sends the first record of a
//!   timeout window at once;
//! - the timeout (SBIOCSTIME): a record arriving after the chunk is older than the timeout
//!   first sends the old chunk up, and a qtimeout (`stream/timeout.rs`) at the chunk's
//!   deadline enables the read service procedure, which sends it up when no record came;
//! - these also send it: M_FLUSH without FLUSHR on either side (so
//!   `ioctl(fd, I_FLUSH, FLUSHW)` pushes pending records to the reader), M_READ from the
//!   head, any write-side message under SB_SEND_ON_WRITE, a non-data message from below
//!   (order is kept), a changed setting, and close (I_POP).
//! - M_FLUSH with FLUSHR (either direction) discards the partial chunk.
//!
//! Flow control: a chunk the next queue cannot take is dropped and counted in `sbh_drops`
//! (Solaris' default), or with SB_NO_DROPS queued on the read queue for the service procedure.
//! Like Solaris, bufmod raises the Stream head's read watermarks (M_SETOPTS) at open and when
//! the chunk or snapshot size changes, so that a few chunks fit.
//!
//! Timestamps (`sbh_timestamp`): the module's [`Clock`]: in the kernel the monotonic clock
//! (`ktime_get`, time since boot, not the wall clock Solaris uses); on the host it reads 0
//! (the core is `no_std`), and tests install their own clock ([`open_with_clock`]).

mod ioctl;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_FLUSH, M_IOCTL, M_PROTO, M_READ};
use crate::queue::{FLUSHDATA, INFPSZ};
use crate::sth::consts::{FLUSHBAND, FLUSHR, SO_HIWAT, SO_LOWAT};
use crate::sth::StrOptions;
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

/// The bufmod ioctl group (`'B' << 8`).
pub const SBIOC: i32 = (b'B' as i32) << 8;
/// Set the read timeout (`struct timeval`).
pub const SBIOCSTIME: i32 = SBIOC | 1;
/// Get the read timeout (ERANGE when cleared).
pub const SBIOCGTIME: i32 = SBIOC | 2;
/// Clear the read timeout (infinite).
pub const SBIOCCTIME: i32 = SBIOC | 3;
/// Set the chunk size (`uint`).
pub const SBIOCSCHUNK: i32 = SBIOC | 4;
/// Get the chunk size.
pub const SBIOCGCHUNK: i32 = SBIOC | 5;
/// Set the snapshot length (0 = no truncation).
pub const SBIOCSSNAP: i32 = SBIOC | 6;
/// Get the snapshot length.
pub const SBIOCGSNAP: i32 = SBIOC | 7;
/// Set the `SB_*` flags.
pub const SBIOCSFLAGS: i32 = SBIOC | 8;
/// Get the `SB_*` flags.
pub const SBIOCGFLAGS: i32 = SBIOC | 9;

/// Default chunk size.
pub const SB_DFLT_CHUNK: u32 = 8192;
/// Largest chunk size SBIOCSCHUNK accepts (a chunk is one contiguous buffer).
pub const SB_MAX_CHUNK: u32 = 256 * 1024;
/// Send the read side's chunk up when any message arrives on the write side.
pub const SB_SEND_ON_WRITE: u32 = 1;
/// No [`SbHdr`] and no padding: records are concatenated.
pub const SB_NO_HEADER: u32 = 2;
/// Do not treat M_PROTO messages as data (they pass up as other messages do).
pub const SB_NO_PROTO_CVT: u32 = 4;
/// The first record of a timeout window goes up at once; buffering starts with the second.
pub const SB_DEFER_CHUNK: u32 = 8;
/// Queue chunks under upstream flow control instead of dropping them.
pub const SB_NO_DROPS: u32 = 16;
/// Every flag SBIOCSFLAGS accepts.
pub const SB_FLAGS_ALL: u32 =
    SB_SEND_ON_WRITE | SB_NO_HEADER | SB_NO_PROTO_CVT | SB_DEFER_CHUNK | SB_NO_DROPS;

/// Size of an encoded [`SbHdr`].
pub const SB_HDR_SIZE: usize = 24;
/// Records (header + data + padding) are padded to a multiple of this.
pub const SB_ALIGN: usize = 8;

/// `struct sb_hdr` (Solaris/LfS LP64 layout: four `uint`s, then `struct timeval32`):
/// `sbh_origlen` @0, `sbh_msglen` @4, `sbh_totlen` @8, `sbh_drops` @12, `tv_sec` i32 @16,
/// `tv_usec` i32 @20; 24 bytes, native byte order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SbHdr {
    /// Length of the message before truncation.
    pub origlen: u32,
    /// Length of the data in this record (after truncation).
    pub msglen: u32,
    /// Length of the record: header, data and padding (offset of the next record).
    pub totlen: u32,
    /// Messages this bufmod instance dropped so far (flow control, no memory).
    pub drops: u32,
    /// Arrival time, seconds.
    pub tv_sec: i32,
    /// Arrival time, microseconds.
    pub tv_usec: i32,
}

impl SbHdr {
    /// The bytes of a header.
    pub fn encode(&self) -> [u8; SB_HDR_SIZE] {
        let mut b = [0u8; SB_HDR_SIZE];
        let words = [
            self.origlen.to_ne_bytes(),
            self.msglen.to_ne_bytes(),
            self.totlen.to_ne_bytes(),
            self.drops.to_ne_bytes(),
            self.tv_sec.to_ne_bytes(),
            self.tv_usec.to_ne_bytes(),
        ];
        for (d, w) in b.chunks_exact_mut(4).zip(words.iter()) {
            d.copy_from_slice(w);
        }
        b
    }
    /// Parse a header (`None` if `b` is too short).
    pub fn decode(b: &[u8]) -> Option<SbHdr> {
        let w = |i: usize| -> Option<[u8; 4]> { b.get(i * 4..i * 4 + 4)?.try_into().ok() };
        Some(SbHdr {
            origlen: u32::from_ne_bytes(w(0)?),
            msglen: u32::from_ne_bytes(w(1)?),
            totlen: u32::from_ne_bytes(w(2)?),
            drops: u32::from_ne_bytes(w(3)?),
            tv_sec: i32::from_ne_bytes(w(4)?),
            tv_usec: i32::from_ne_bytes(w(5)?),
        })
    }
}

/// A monotonic clock in nanoseconds (record timestamps and the lazy timeout).
pub type Clock = fn() -> u64;

/// The platform's monotonic clock: `ktime_get` in the kernel.
#[cfg(rstreams_kernel)]
fn monotonic_ns() -> u64 {
    u64::try_from(kernel::time::Ktime::ktime_get().to_ns()).unwrap_or(0)
}

/// The platform's monotonic clock: none in the `no_std` host build (timestamps read 0).
#[cfg(not(rstreams_kernel))]
fn monotonic_ns() -> u64 {
    0
}

const NSEC_PER_SEC: u64 = 1_000_000_000;

/// One bufmod instance (what Solaris keeps in `struct sb`).
pub(crate) struct Bufmod {
    chunk: u32,
    /// Read timeout in ns; `None` = cleared (infinite), the default.
    timeout: Option<u64>,
    snap: u32,
    flags: u32,
    drops: u32,
    /// The accumulating chunk: one block, `chunk` bytes of room (or a chain, see `append`).
    cur: Option<Msg>,
    cur_len: usize,
    cur_recs: u32,
    cur_start: u64,
    /// SB_DEFER_CHUNK: a record went up at once in the window that began at `window`.
    frcvd: bool,
    window: u64,
    clock: Clock,
}

/// Bytes of padding after `n` bytes to reach the next [`SB_ALIGN`] boundary.
const fn pad(n: usize) -> usize {
    (SB_ALIGN - n % SB_ALIGN) % SB_ALIGN
}

/// Read-side watermarks for `chunk`/`snap` (Solaris' rule: room for about four chunks, more
/// when small snapshots make records small).
fn head_watermarks(chunk: u32, snap: u32) -> (u64, u64) {
    let eff = u64::from(chunk.clamp(4096, 65536));
    let fudge = match snap {
        0 => 1,
        1..=100 => 4,
        101..=400 => 2,
        _ => 1,
    };
    (
        eff.saturating_mul(4 * fudge).saturating_add(512),
        eff.saturating_mul(2 * fudge).saturating_add(256),
    )
}

impl Bufmod {
    fn new(clock: Clock) -> Bufmod {
        Bufmod {
            chunk: SB_DFLT_CHUNK,
            timeout: None,
            snap: 0,
            flags: 0,
            drops: 0,
            cur: None,
            cur_len: 0,
            cur_recs: 0,
            cur_start: 0,
            frcvd: false,
            window: 0,
            clock,
        }
    }

    fn has(&self, f: u32) -> bool {
        self.flags & f != 0
    }

    fn count_drops(&mut self, n: u32) {
        self.drops = self.drops.saturating_add(n);
    }

    /// Tell the Stream head above (read queue context `rq`) to make room for a few chunks.
    fn set_head_watermarks(&self, rq: &mut QCtx<'_>) {
        let (hiwat, lowat) = head_watermarks(self.chunk, self.snap);
        let so = StrOptions {
            so_flags: SO_HIWAT | SO_LOWAT,
            so_hiwat: hiwat,
            so_lowat: lowat,
            ..StrOptions::default()
        };
        if let Ok(m) = so.to_msg() {
            rq.putnext(m);
        }
    }

    /// Send `m` (holding `recs` records) up from the read queue, or queue it (SB_NO_DROPS),
    /// or drop it and count its records.
    fn deliver(&mut self, rq: &mut QCtx<'_>, m: Msg, recs: u32) {
        let queued = rq.queue().is_some_and(|q| !q.is_empty());
        if !queued && rq.canputnext() {
            rq.putnext(m);
        } else if self.has(SB_NO_DROPS) {
            if let Err(m) = rq.putq(m) {
                drop(m);
                self.count_drops(recs);
            }
        } else {
            drop(m);
            self.count_drops(recs);
        }
    }

    /// Close off the current chunk and send it up.
    fn close_chunk(&mut self, rq: &mut QCtx<'_>) {
        let recs = core::mem::take(&mut self.cur_recs);
        self.cur_len = 0;
        if let Some(m) = self.cur.take() {
            self.deliver(rq, m, recs);
        }
    }

    /// Forget the current chunk (M_FLUSH FLUSHR).
    fn discard_chunk(&mut self) {
        self.cur = None;
        self.cur_len = 0;
        self.cur_recs = 0;
    }

    /// Write the record for `mp` (header, `msglen` data bytes, padding) into `dst`, which
    /// is exactly the record's length.
    fn fill_record(&self, dst: &mut [u8], mp: &Msg, hdr: Option<SbHdr>, msglen: usize) {
        let mut at = 0usize;
        if let Some(h) = hdr {
            at = crate::sys::copy_bytes(dst, &h.encode());
        }
        let mut left = msglen;
        for b in mp.blocks() {
            if left == 0 {
                break;
            }
            let src = b.rd();
            let n = src.len().min(left);
            let d = dst.get_mut(at..).unwrap_or_default();
            let k = crate::sys::copy_bytes(d, src.get(..n).unwrap_or_default());
            at = at.saturating_add(k);
            left -= n;
        }
        // Padding (and anything not written) is zero.
        for b in dst.get_mut(at..).unwrap_or_default() {
            *b = 0;
        }
    }

    /// A record (M_DATA) on the read side: truncate, add the header, chunk it.
    fn rput_data(&mut self, rq: &mut QCtx<'_>, mp: Msg) {
        let now = (self.clock)();
        if let (Some(t), true) = (self.timeout, self.cur.is_some()) {
            if now.saturating_sub(self.cur_start) >= t {
                self.close_chunk(rq);
            }
        }
        let origlen = mp.msgsize();
        let msglen = match self.snap {
            0 => origlen,
            s => origlen.min(usize::try_from(s).unwrap_or(usize::MAX)),
        };
        let headers = !self.has(SB_NO_HEADER);
        let reclen = if headers {
            let n = SB_HDR_SIZE.saturating_add(msglen);
            n.saturating_add(pad(n))
        } else {
            msglen
        };
        let hdr = headers.then(|| SbHdr {
            origlen: u32::try_from(origlen).unwrap_or(u32::MAX),
            msglen: u32::try_from(msglen).unwrap_or(u32::MAX),
            totlen: u32::try_from(reclen).unwrap_or(u32::MAX),
            drops: self.drops,
            tv_sec: i32::try_from(now / NSEC_PER_SEC).unwrap_or(i32::MAX),
            tv_usec: i32::try_from(now % NSEC_PER_SEC / 1000).unwrap_or(0),
        });
        let mut at_once = self.chunk == 0 || self.timeout == Some(0);
        if self.has(SB_DEFER_CHUNK) {
            let expired = self
                .timeout
                .is_some_and(|t| now.saturating_sub(self.window) >= t);
            if !self.frcvd || expired {
                self.frcvd = true;
                self.window = now;
                at_once = true;
            }
        }
        let chunk = usize::try_from(self.chunk).unwrap_or(usize::MAX);
        if at_once || self.cur_len.saturating_add(reclen) > chunk {
            self.close_chunk(rq);
        }
        if at_once || reclen > chunk {
            // A record of its own (too big for a chunk, or no buffering).
            match Msg::with_type(M_DATA, reclen) {
                Ok(mut m) => {
                    if let Some(d) = m.spare_mut().and_then(|d| d.get_mut(..reclen)) {
                        self.fill_record(d, &mp, hdr, msglen);
                    }
                    m.adj_wptr(reclen);
                    self.deliver(rq, m, 1);
                }
                Err(_) => self.count_drops(1),
            }
            return;
        }
        if self.append(&mp, hdr, msglen, reclen, now).is_err() {
            self.count_drops(1);
            return;
        }
        if self.cur_len >= chunk {
            self.close_chunk(rq);
        } else if let (Some(t), true) = (self.timeout, self.cur.is_some()) {
            // The chunk goes up when its time is up even if no record follows (`rsrv`).
            rq.qtimeout_at(self.cur_start.saturating_add(t));
        }
    }

    /// Add a record to the current chunk, starting one (one block of `chunk` bytes) if there
    /// is none. The caller made sure the record fits the chunk size.
    fn append(
        &mut self,
        mp: &Msg,
        hdr: Option<SbHdr>,
        msglen: usize,
        reclen: usize,
        now: u64,
    ) -> Result<(), crate::sys::NoMem> {
        if self.cur.is_none() {
            let size = usize::try_from(self.chunk).unwrap_or(usize::MAX);
            self.cur = Some(Msg::with_type(M_DATA, size)?);
            self.cur_start = now;
        }
        let Some(cur) = self.cur.take() else {
            return Err(crate::sys::NoMem);
        };
        let mut cur = cur;
        let ok = match cur.spare_mut().and_then(|d| d.get_mut(..reclen)) {
            Some(d) => {
                self.fill_record(d, mp, hdr, msglen);
                true
            }
            None => false,
        };
        if ok {
            cur.adj_wptr(reclen);
        }
        self.cur = Some(cur);
        if !ok {
            return Err(crate::sys::NoMem);
        }
        self.cur_len = self.cur_len.saturating_add(reclen);
        self.cur_recs = self.cur_recs.saturating_add(1);
        Ok(())
    }

    /// M_FLUSH seen on either side: FLUSHR discards the partial chunk and the read queue;
    /// without FLUSHR the chunk goes up (the flush is a push for pending records).
    fn flush(&mut self, rq: &mut QCtx<'_>, mp: &Msg) {
        let f = mp.rd().first().copied().unwrap_or(0);
        if f & FLUSHR != 0 {
            self.discard_chunk();
            if f & FLUSHBAND != 0 {
                let band = mp.rd().get(1).copied().unwrap_or(0);
                rq.flushband(band, FLUSHDATA);
            } else {
                rq.flushq(FLUSHDATA);
            }
        } else {
            self.close_chunk(rq);
        }
    }
}

/// Whether `mp` is data bufmod chunks (converting M_PROTO unless SB_NO_PROTO_CVT).
fn is_record(mp: &Msg, flags: u32) -> bool {
    if mp.band() != 0 {
        return false; // banded data keeps its band: it passes up as it is
    }
    let ty = mp.db_type();
    ty == M_DATA || (ty == M_PROTO && flags & SB_NO_PROTO_CVT == 0)
}

/// Pass `mp` up in order behind what is queued (never dropped: only chunks are).
fn pass_up(rq: &mut QCtx<'_>, mp: Msg) {
    let queued = rq.queue().is_some_and(|q| !q.is_empty());
    if mp.is_hipri() || (!queued && rq.bcanputnext(mp.band())) {
        rq.putnext(mp);
    } else if let Err(mp) = rq.putq(mp) {
        drop(mp);
    }
}

impl StreamModule for Bufmod {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let ty = mp.db_type();
        if ty == M_FLUSH {
            self.flush(cx, &mp);
            cx.putnext(mp);
        } else if mp.is_hipri() {
            cx.putnext(mp);
        } else if is_record(&mp, self.flags) {
            self.rput_data(cx, mp);
        } else {
            self.close_chunk(cx);
            pass_up(cx, mp);
        }
    }

    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        // Enabled by the qtimeout of the chunk being filled: send it up if its time is up.
        if let (Some(t), true) = (self.timeout, self.cur.is_some()) {
            let now = (self.clock)();
            if now.saturating_sub(self.cur_start) >= t {
                self.close_chunk(cx);
            } else {
                cx.qtimeout_at(self.cur_start.saturating_add(t));
            }
        }
        while let Some(mp) = cx.getq() {
            if mp.is_hipri() || cx.bcanputnext(mp.band()) {
                cx.putnext(mp);
            } else {
                if let Err(mp) = cx.putbq(mp) {
                    drop(mp);
                }
                break;
            }
        }
    }

    fn has_rsrv(&self) -> bool {
        true
    }

    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let ty = mp.db_type();
        if self.has(SB_SEND_ON_WRITE) {
            self.close_chunk(&mut cx.otherq());
        }
        if ty == M_IOCTL && self.ioctl(cx, &mp) {
            return;
        }
        if ty == M_FLUSH {
            self.flush(&mut cx.otherq(), &mp);
        } else if ty == M_READ {
            self.close_chunk(&mut cx.otherq());
        }
        cx.putnext(mp);
    }

    /// I_POP (or close): what was collected still goes up.
    fn close(&mut self, cx: &mut QCtx<'_>) {
        self.close_chunk(cx);
    }
}

/// Open a bufmod instance with clock `clock` (tests pass their own).
pub fn open_with_clock(cx: &mut QCtx<'_>, clock: Clock) -> Result<Box<dyn StreamModule>, Errno> {
    let b = Bufmod::new(clock);
    b.set_head_watermarks(cx);
    Ok(box_dyn!(b => dyn StreamModule)?)
}

fn bufmod_open(cx: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    open_with_clock(cx, monotonic_ns)
}

/// bufmod's `module_info` (Solaris: id 2002).
pub const BUFMOD_INFO: ModuleInfo = ModuleInfo {
    mi_idnum: 2002,
    mi_idname: "bufmod",
    mi_minpsz: 0,
    mi_maxpsz: INFPSZ,
    mi_hiwat: 65536,
    mi_lowat: 1024,
};

/// The bufmod streamtab (`I_PUSH "bufmod"`).
pub static BUFMOD: StreamTab = StreamTab {
    info: BUFMOD_INFO,
    open: bufmod_open,
};
