//! One STREAMS queue (`queue_t` with its `qband`s), as a self-contained data structure.
//!
//! The queue holds messages in three kinds of class, in the order getq returns them:
//! high-priority messages (`db_type >= QPCTL`, FIFO among themselves), then priority bands
//! 255..1, then band 0. Each class is a [`mlist::MsgList`], each band has its own count and
//! watermarks (`qband`), created on demand when a message or `strqset` first names it.
//!
//! SVR4 queue functions reach into neighbouring queues (putq enables, getq back-enables). Here a
//! queue knows no other queue: operations return a [`QEvent`] and the Stream acts on it. This
//! keeps the queue testable on its own and keeps all cross-queue logic in `stream`.
//!
//! Accounting follows SVR4: `q_count` counts the bytes (`msgsize`) of band-0 messages,
//! high-priority ones included (SVR4 forces their `b_band` to 0); band `n` messages are counted
//! in that band's `qb_count`. Next to the bytes the queue counts the message blocks it holds
//! over all its classes (`q_mblkcnt`, as illumos does), against a block limit (`q_mblkmax`,
//! `limits().strmblkmax` when the queue was made): a zero-length or one-byte message costs a
//! whole block of kernel memory, so bytes alone do not bound what a queue holds.
//!
//! A class is *full* (`QFULL`, `QB_FULL`) exactly when it holds data and its count is
//! `>= hiwat`, or when the queue holds `>= q_mblkmax` blocks (then every band is full, and a
//! band not yet allocated is refused too). A class is *low* when its count is `<= lowat` and
//! the queue holds at most a quarter of its block limit. The writer-wanted flags
//! (`QWANTW`/`QB_WANTW`, set by a refused canput/bcanput) produce a back-enable once the class
//! is low.
//!
//! Queueing never allocates for band 0 and high-priority messages (a class is linked through
//! the messages' `b_next`, `mlist.rs`); the first message of a new band allocates that band's
//! `qband`. If that fails the message is not handed back (a put procedure has accepted it and
//! nobody upstream can take it back) but waits in the *overflow* list, a class of its own
//! that needs no allocation either: getq takes it after the allocated bands and before band
//! 0, and while it holds anything every message of a band goes there too, so that messages
//! of one band still come off in the order they went on. Its bytes count in `q_count` (band
//! 0's flow control, and the block limit, hold it back). Only the priority between bands
//! suffers, and only until the overflow list drains.

mod flags;
mod mlist;
pub(crate) mod ring;
mod strq;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;

pub use flags::{BandSet, Flushed, QEvent, QFlags, QbFlags};
pub use strq::QField;

use crate::msg::Msg;
use crate::sys::{self, NoMem, Vec};
use mlist::MsgList;

/// Infinite packet size (`INFPSZ`; SVR4 uses -1).
pub const INFPSZ: usize = usize::MAX;
/// flushq/flushband: free only data messages (M_DATA, M_PROTO, M_PCPROTO, M_DELAY).
pub const FLUSHDATA: i32 = 0;
/// flushq/flushband: free every message.
pub const FLUSHALL: i32 = 1;

/// One priority band of a queue (`qband`).
pub(crate) struct QBand {
    msgs: MsgList,
    count: usize,
    hiwat: usize,
    lowat: usize,
    flags: QbFlags,
}

/// Which list of the queue a message belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Hi,
    Band(u8),
    /// The overflow list (module docs): after the bands, before band 0.
    Over,
    Norm,
}

fn class_of(mp: &Msg) -> Class {
    if mp.is_hipri() {
        Class::Hi
    } else if mp.band() > 0 {
        Class::Band(mp.band())
    } else {
        Class::Norm
    }
}

/// A STREAMS queue (`queue_t`): messages, counts, watermarks and flags, without links.
pub struct Queue {
    hi: MsgList,
    norm: MsgList,
    /// `bands[n - 1]` is band `n`; `bands.len()` is `q_nband`.
    bands: Vec<QBand>,
    /// Band messages queued while a `qband` could not be allocated (module docs), FIFO.
    over: MsgList,
    count: usize,
    hiwat: usize,
    lowat: usize,
    minpsz: usize,
    maxpsz: usize,
    flags: QFlags,
    /// `q_mblkcnt`: message blocks queued, over all classes.
    mblkcnt: usize,
    /// The block limit (at least 1).
    mblkmax: usize,
}

impl Queue {
    /// A queue with the given packet sizes and watermarks (from `module_info`).
    /// `readr` marks the read side of a pair (`QREADR`).
    pub fn new(minpsz: usize, maxpsz: usize, hiwat: usize, lowat: usize, readr: bool) -> Queue {
        let mut flags = QFlags::default();
        flags.assign(QFlags::QREADR, readr);
        Queue {
            hi: MsgList::new(),
            norm: MsgList::new(),
            bands: Vec::new(),
            over: MsgList::new(),
            count: 0,
            hiwat,
            lowat,
            minpsz,
            maxpsz,
            flags,
            mblkcnt: 0,
            mblkmax: crate::limits::limits().strmblkmax.max(1),
        }
    }

    /// `q_mblkcnt`: message blocks queued, over all classes.
    pub fn mblkcnt(&self) -> usize {
        self.mblkcnt
    }
    /// The block limit: with this many blocks queued the queue is full.
    pub fn mblkmax(&self) -> usize {
        self.mblkmax
    }
    /// Whether the queue holds as many blocks as it may (every class is then full).
    #[inline]
    pub fn blocks_full(&self) -> bool {
        self.mblkcnt >= self.mblkmax
    }
    /// Whether the queue holds few enough blocks for a waiting writer to go on (at most a
    /// quarter of its block limit).
    #[inline]
    pub fn blocks_low(&self) -> bool {
        self.mblkcnt <= self.mblkmax / 4
    }
    /// Whether band `b` (0: the queue) is low: its count at or below its low-water mark and
    /// the queue's blocks at or below a quarter of its block limit. A refused writer of that
    /// band is back-enabled once it is.
    #[inline]
    pub fn band_is_low(&self, b: u8) -> bool {
        self.blocks_low() && self.band_count(b) <= self.band_lowat(b)
    }

    /// `q_flag`.
    pub fn flags(&self) -> QFlags {
        self.flags
    }
    /// `q_count`: bytes of band-0 (and high-priority) messages.
    pub fn count(&self) -> usize {
        self.count
    }
    /// `q_hiwat`.
    pub fn hiwat(&self) -> usize {
        self.hiwat
    }
    /// `q_lowat`.
    pub fn lowat(&self) -> usize {
        self.lowat
    }
    /// `q_minpsz`.
    pub fn minpsz(&self) -> usize {
        self.minpsz
    }
    /// `q_maxpsz`.
    pub fn maxpsz(&self) -> usize {
        self.maxpsz
    }
    /// `q_nband`: number of bands allocated.
    pub fn nband(&self) -> usize {
        self.bands.len()
    }
    /// qsize: number of messages on the queue.
    pub fn qsize(&self) -> usize {
        self.bands
            .iter()
            .fold(self.hi.len() + self.over.len() + self.norm.len(), |n, b| {
                n + b.msgs.len()
            })
    }
    /// No message queued (`q_first == NULL`).
    pub fn is_empty(&self) -> bool {
        self.qsize() == 0
    }
    /// `qb_count` of band `b` (`q_count` for band 0).
    pub fn band_count(&self, b: u8) -> usize {
        match b {
            0 => self.count,
            _ => self.band(b).map_or(0, |qb| qb.count),
        }
    }
    /// `qb_lowat` of band `b` (`q_lowat` for band 0).
    pub fn band_lowat(&self, b: u8) -> usize {
        match b {
            0 => self.lowat,
            _ => self.band(b).map_or(self.lowat, |qb| qb.lowat),
        }
    }
    /// `qb_flag` of band `b` (empty for band 0 or an unallocated band).
    pub fn band_flags(&self, b: u8) -> QbFlags {
        self.band(b).map_or(QbFlags::default(), |qb| qb.flags)
    }
    /// Number of messages in band `b` (band 0: ordinary band-0 messages, not high priority).
    pub fn band_len(&self, b: u8) -> usize {
        match b {
            0 => self.norm.len(),
            _ => self.band(b).map_or(0, |qb| qb.msgs.len()),
        }
    }
    /// Number of high-priority messages queued.
    pub fn hipri_len(&self) -> usize {
        self.hi.len()
    }

    fn band(&self, b: u8) -> Option<&QBand> {
        self.bands.as_slice().get(usize::from(b).checked_sub(1)?)
    }
    fn band_mut(&mut self, b: u8) -> Option<&mut QBand> {
        self.bands
            .as_mut_slice()
            .get_mut(usize::from(b).checked_sub(1)?)
    }

    /// Allocate bands up to `b` (SVR4 allocates every qband up to the highest one used).
    pub(crate) fn ensure_band(&mut self, b: u8) -> Result<(), NoMem> {
        while self.bands.len() < usize::from(b) {
            let qb = QBand {
                msgs: MsgList::new(),
                count: 0,
                hiwat: self.hiwat,
                lowat: self.lowat,
                flags: QbFlags::default(),
            };
            sys::vec_push(&mut self.bands, qb).map_err(|_| NoMem)?;
        }
        Ok(())
    }

    fn ring_mut(&mut self, c: Class) -> Option<&mut MsgList> {
        match c {
            Class::Hi => Some(&mut self.hi),
            Class::Norm => Some(&mut self.norm),
            Class::Over => Some(&mut self.over),
            Class::Band(b) => self.band_mut(b).map(|qb| &mut qb.msgs),
        }
    }

    /// Classes in getq order: high priority, bands nband..1, the overflow list, band 0.
    fn classes(&self) -> impl Iterator<Item = Class> {
        let nb = u8::try_from(self.bands.len()).unwrap_or(u8::MAX);
        core::iter::once(Class::Hi)
            .chain((1..=nb).rev().map(Class::Band))
            .chain([Class::Over, Class::Norm])
    }

    fn class_len(&self, c: Class) -> usize {
        match c {
            Class::Hi => self.hi.len(),
            Class::Norm => self.norm.len(),
            Class::Over => self.over.len(),
            Class::Band(b) => self.band(b).map_or(0, |qb| qb.msgs.len()),
        }
    }

    /// Logical position of the first message of class `c` (bands not yet allocated included).
    fn class_start(&self, c: Class) -> usize {
        let mut n = 0;
        for k in self.classes() {
            let before = match (k, c) {
                (Class::Hi, Class::Hi) => false,
                (Class::Hi, _) => true,
                (Class::Band(a), Class::Band(b)) => a > b,
                (Class::Band(_), Class::Over | Class::Norm) => true,
                (Class::Over, Class::Norm) => true,
                _ => false,
            };
            if before {
                n += self.class_len(k);
            }
        }
        n
    }

    /// Class and in-class index of logical position `pos`.
    fn locate(&self, mut pos: usize) -> Option<(Class, usize)> {
        for c in self.classes() {
            let l = self.class_len(c);
            if pos < l {
                return Some((c, pos));
            }
            pos -= l;
        }
        None
    }

    /// The message at logical position `pos` (0 is `q_first`).
    pub fn peek(&self, pos: usize) -> Option<&Msg> {
        let (c, i) = self.locate(pos)?;
        match c {
            Class::Hi => self.hi.get(i),
            Class::Norm => self.norm.get(i),
            Class::Over => self.over.get(i),
            Class::Band(b) => self.band(b)?.msgs.get(i),
        }
    }

    /// The message at logical position `pos`, mutable, for the Stream head's dupmsg of a
    /// queued message (I_PEEK): the caller must not change its size, type or band, which the
    /// queue's counts and classes depend on.
    pub(crate) fn peek_mut(&mut self, pos: usize) -> Option<&mut Msg> {
        let (c, i) = self.locate(pos)?;
        self.ring_mut(c)?.get_mut(i)
    }

    /// The first band-0 messages in getq order, oldest first, when nothing of another class
    /// is queued (else `None`): a prefix of the queue, cheap to walk (the Stream head's look
    /// at what a read would take, `sth_read_ready`).
    pub(crate) fn band0_front(&self) -> Option<impl Iterator<Item = &Msg>> {
        self.only_band0().then(|| self.norm.front_iter())
    }

    /// Whether nothing of another class than band 0 is queued: no high-priority message,
    /// nothing in a band or on the overflow list.
    #[inline]
    fn only_band0(&self) -> bool {
        self.hi.is_empty() && self.over.is_empty() && self.bands.iter().all(|qb| qb.msgs.is_empty())
    }

    /// `q_first`: the first message of the first class in getq order that has one.
    pub fn first(&self) -> Option<&Msg> {
        if let Some(m) = self.hi.first() {
            return Some(m);
        }
        for qb in self.bands.as_slice().iter().rev() {
            if let Some(m) = qb.msgs.first() {
                return Some(m);
            }
        }
        self.over.first().or_else(|| self.norm.first())
    }

    /// Recompute QFULL / QB_FULL from the counts (hysteresis comes from QWANTW + lowat).
    fn update_full(&mut self) {
        let blocks = self.blocks_full();
        let full = blocks || (self.count > 0 && self.count >= self.hiwat);
        self.flags.assign(QFlags::QFULL, full);
        if self.bands.is_empty() {
            return; // band 0 alone, the common case
        }
        for qb in self.bands.as_mut_slice() {
            let full = blocks || (qb.count > 0 && qb.count >= qb.hiwat);
            qb.flags.assign(QbFlags::QB_FULL, full);
        }
    }

    /// Report back-enables for writers waiting on classes that drained to their low mark.
    fn check_back(&mut self, ev: &mut QEvent) {
        if !self.blocks_low() {
            return;
        }
        if self.flags.contains(QFlags::QWANTW) && self.count <= self.lowat {
            self.flags.clear(QFlags::QWANTW);
            ev.add_back(0);
        }
        if self.bands.is_empty() {
            return;
        }
        for (i, qb) in self.bands.as_mut_slice().iter_mut().enumerate() {
            if qb.flags.contains(QbFlags::QB_WANTW) && qb.count <= qb.lowat {
                qb.flags.clear(QbFlags::QB_WANTW);
                ev.add_back(u8::try_from(i + 1).unwrap_or(u8::MAX));
            }
        }
    }

    fn account(&mut self, c: Class, (size, blocks): (usize, usize), add: bool) {
        self.mblkcnt = if add {
            self.mblkcnt.saturating_add(blocks)
        } else {
            self.mblkcnt.saturating_sub(blocks)
        };
        if !matches!(c, Class::Band(_)) {
            // Band 0 and high priority: `q_count`, no band to look up.
            self.count = if add {
                self.count.saturating_add(size)
            } else {
                self.count.saturating_sub(size)
            };
            self.update_full();
            return;
        }
        let cnt = match c {
            Class::Hi | Class::Over | Class::Norm => Some(&mut self.count),
            Class::Band(b) => self.band_mut(b).map(|qb| &mut qb.count),
        };
        if let Some(cnt) = cnt {
            *cnt = if add {
                cnt.saturating_add(size)
            } else {
                cnt.saturating_sub(size)
            };
        }
        self.update_full();
    }

    fn can_enable(&self) -> bool {
        !self.flags.contains(QFlags::QNOENB)
    }

    /// Make sure the class of `mp` exists, normalising a high-priority message's band to 0.
    fn prepare(&mut self, mp: &mut Msg) -> Result<Class, NoMem> {
        if mp.is_hipri() {
            mp.set_band(0);
        }
        let c = class_of(mp);
        if let Class::Band(b) = c {
            self.ensure_band(b)?;
        }
        Ok(c)
    }

    fn insert_in(&mut self, c: Class, i: usize, mp: Msg) -> Result<(), Msg> {
        match self.ring_mut(c) {
            Some(r) => r.insert(i, mp),
            None => Err(mp),
        }
    }

    /// putq: queue `mp` behind messages of its class. It does not fail: a band message whose
    /// `qband` cannot be allocated, and every band message while some are, goes on the
    /// overflow list (module docs). The event asks for qenable when `mp` is high priority, or
    /// when enabling is allowed (no QNOENB) and a reader is waiting (QWANTR) or `mp` is in a
    /// band.
    pub fn putq(&mut self, mut mp: Msg) -> Result<QEvent, Msg> {
        let c = match self.prepare(&mut mp) {
            Ok(Class::Band(_)) if !self.over.is_empty() => Class::Over,
            Ok(c) => c,
            Err(NoMem) => Class::Over,
        };
        let size = mp.msgsize_blocks();
        match self.ring_mut(c) {
            Some(r) => r.push_back(mp),
            None => return Err(mp),
        }
        self.account(c, size, true);
        Ok(self.put_event(c))
    }

    /// What a put onto class `c` reports: enable a high-priority or band message always (when
    /// enabling is allowed, for a band), an ordinary one only if a reader waits (QWANTR).
    fn put_event(&self, c: Class) -> QEvent {
        let enable = c == Class::Hi
            || (self.can_enable()
                && (self.flags.contains(QFlags::QWANTR) || matches!(c, Class::Band(_))));
        if enable {
            QEvent::enable()
        } else {
            QEvent::NONE
        }
    }

    /// putq of a run of ordinary band-0 messages, oldest first through `b_next` (the batch
    /// put-up, `stream/batch.rs`): the queue ends as the putq of each in turn leaves it. They
    /// all go on band 0's list, and the counts are added once: QFULL is a function of the
    /// counts alone, and the enable each putq reports depends on QWANTR and QNOENB, which no
    /// putq changes, so the run's one event is each putq's.
    pub(crate) fn putq_run(&mut self, mut run: Option<Msg>) -> QEvent {
        let (mut size, mut blocks) = (0usize, 0usize);
        while let Some(mut m) = run {
            run = m.0.next.take();
            debug_assert!(!m.is_hipri() && m.band() == 0);
            let (s, b) = m.msgsize_blocks();
            size = size.saturating_add(s);
            blocks = blocks.saturating_add(b);
            self.norm.push_back(m);
        }
        self.account(Class::Norm, (size, blocks), true);
        self.put_event(Class::Norm)
    }

    /// putbq: return `mp` to the front of its class (a service procedure that cannot pass it
    /// on). Enables only if a reader is waiting and enabling is allowed, so a service procedure
    /// that puts back is not rescheduled in a loop. A band message whose `qband` cannot be
    /// allocated goes to the front of the overflow list: it came from there (its band has no
    /// `qband`), and getq took it only because every band was empty, so it is the oldest of
    /// its band either way.
    pub fn putbq(&mut self, mut mp: Msg) -> Result<QEvent, Msg> {
        let c = self.prepare(&mut mp).unwrap_or(Class::Over);
        let size = mp.msgsize_blocks();
        self.insert_in(c, 0, mp)?;
        self.account(c, size, true);
        let enable = self.can_enable() && self.flags.contains(QFlags::QWANTR);
        Ok(if enable {
            QEvent::enable()
        } else {
            QEvent::NONE
        })
    }

    /// insq: insert `mp` before the message at logical position `pos` (`pos == qsize()`
    /// appends). Fails, handing `mp` back, if that position would break the queue's priority
    /// order (SVR4 insq returns 0) or on allocation failure.
    pub fn insq(&mut self, pos: usize, mut mp: Msg) -> Result<QEvent, Msg> {
        if mp.is_hipri() {
            mp.set_band(0);
        }
        let c = class_of(&mp);
        let start = self.class_start(c);
        let len = self.class_len(c);
        if pos < start || pos - start > len {
            return Err(mp);
        }
        let Ok(c) = self.prepare(&mut mp) else {
            return Err(mp);
        };
        let size = mp.msgsize_blocks();
        self.insert_in(c, pos - start, mp)?;
        self.account(c, size, true);
        let enable = c == Class::Hi || (self.can_enable() && self.flags.contains(QFlags::QWANTR));
        Ok(if enable {
            QEvent::enable()
        } else {
            QEvent::NONE
        })
    }

    /// getq: take the first message. An empty queue sets QWANTR; a message clears it. The event
    /// reports a back-enable when a class with a waiting writer drained to its low mark.
    pub fn getq(&mut self) -> (Option<Msg>, QEvent) {
        let mut ev = QEvent::NONE;
        let first = if self.bands.is_empty() {
            // Band 0 alone (the common case): no classes' iterator.
            if !self.hi.is_empty() {
                Some(Class::Hi)
            } else if !self.over.is_empty() {
                Some(Class::Over)
            } else if !self.norm.is_empty() {
                Some(Class::Norm)
            } else {
                None
            }
        } else {
            self.classes().find(|c| self.class_len(*c) > 0)
        };
        let Some(c) = first else {
            self.flags.set(QFlags::QWANTR);
            self.check_back(&mut ev);
            return (None, ev);
        };
        let mp = self.ring_mut(c).and_then(MsgList::pop_front);
        if let Some(m) = &mp {
            self.flags.clear(QFlags::QWANTR);
            self.account(c, m.msgsize_blocks(), false);
        }
        self.check_back(&mut ev);
        (mp, ev)
    }

    /// getq of a run of whole ordinary band-0 messages, up to `bytes` bytes and `msgs`
    /// messages (the Stream head's read, `sth/read.rs`): while band 0 is the queue's first
    /// class (nothing of high priority, in a band or on the overflow list), take messages
    /// from its front, oldest first, as long as each is not empty, fits in what is left of
    /// `bytes` and `accept` takes it. Returns them linked through `b_next`, oldest first,
    /// and their bytes. The queue ends as the getq of each in turn leaves it: the counts are
    /// subtracted once (QFULL follows the counts alone), QWANTR is cleared, and the
    /// back-enables are reported once, at the end (a writer waiting on a class is
    /// back-enabled once the class is low, whichever getq got it there; the counts only
    /// fall). Taking nothing changes nothing.
    #[inline]
    pub(crate) fn getq_upto(
        &mut self,
        bytes: usize,
        msgs: usize,
        accept: impl Fn(&Msg) -> bool,
    ) -> (Option<Msg>, usize, QEvent) {
        if self.norm.first().is_none() || !self.only_band0() {
            return (None, 0, QEvent::NONE);
        }
        let (mut size, mut blocks, mut n) = (0usize, 0usize, 0usize);
        let mut run: Option<Msg> = None;
        let mut tail = &mut run;
        while size < bytes && n < msgs {
            let Some(m) = self.norm.first() else {
                break;
            };
            let (s, b) = m.msgsize_blocks();
            if s == 0 || s > bytes - size || !accept(m) {
                break;
            }
            let Some(m) = self.norm.pop_front() else {
                break;
            };
            size += s;
            blocks = blocks.saturating_add(b);
            n += 1;
            tail = &mut tail.insert(m).0.next;
        }
        let mut ev = QEvent::NONE;
        if n > 0 {
            self.flags.clear(QFlags::QWANTR);
            self.account(Class::Norm, (size, blocks), false);
            self.check_back(&mut ev);
        }
        (run, size, ev)
    }

    /// [`Queue::getq_upto`] of one message, straight-line (the Stream head's common read of
    /// one message, `sth/read.rs`): the first message, if band 0 is the queue's first class
    /// and the message is not empty, fits in `bytes` and `accept` takes it. Returns it, its
    /// bytes, the back-enables to report and whether the queue's flow state changed
    /// ([`Queue::flow_state`]); the queue ends as `getq_upto` leaves it.
    #[inline]
    pub(crate) fn getq_first(
        &mut self,
        bytes: usize,
        accept: impl Fn(&Msg) -> bool,
    ) -> Option<(Msg, usize, QEvent, bool)> {
        let m = self.norm.first()?;
        let (s, b) = m.msgsize_blocks();
        if s == 0 || s > bytes || !accept(m) || !self.only_band0() {
            return None;
        }
        let before = self.flow_state();
        let m = self.norm.pop_front()?;
        self.flags.clear(QFlags::QWANTR);
        let mut ev = QEvent::NONE;
        if self.bands.is_empty() {
            // `account` and `check_back` of band 0 alone, inline.
            self.mblkcnt = self.mblkcnt.saturating_sub(b);
            self.count = self.count.saturating_sub(s);
            let full = self.blocks_full() || (self.count > 0 && self.count >= self.hiwat);
            self.flags.assign(QFlags::QFULL, full);
            if self.blocks_low() && self.flags.contains(QFlags::QWANTW) && self.count <= self.lowat
            {
                self.flags.clear(QFlags::QWANTW);
                ev.add_back(0);
            }
        } else {
            self.account(Class::Norm, (s, b), false);
            self.check_back(&mut ev);
        }
        Some((m, s, ev, self.flow_state() != before))
    }

    /// What the flow control published for this queue is computed from (`perim/flow.rs`),
    /// as far as a getq or putq can change it, one bit each: QFULL, the block-full state,
    /// whether the blocks are low, and whether band 0's count is at or below its low-water
    /// mark. A band's full and low states change with these alone when only band 0's
    /// messages come and go.
    #[inline]
    pub(crate) fn flow_state(&self) -> u8 {
        u8::from(self.flags.contains(QFlags::QFULL))
            | u8::from(self.blocks_full()) << 1
            | u8::from(self.blocks_low()) << 2
            | u8::from(self.count <= self.lowat) << 3
    }

    /// A message went by this empty queue where a putq and the getq that takes it again
    /// within one lock hold would have been (the direct take, `stream/direct.rs`): the queue is
    /// left as that getq leaves it, QWANTR cleared. (Its counts come back to where they were,
    /// QFULL follows them, and no QWANTW is set on a queue the take goes by.)
    pub(crate) fn bypassed(&mut self) {
        self.flags.clear(QFlags::QWANTR);
    }

    /// rmvq: remove the message at logical position `pos` (None if there is none).
    pub fn rmvq(&mut self, pos: usize) -> (Option<Msg>, QEvent) {
        let mut ev = QEvent::NONE;
        let Some((c, i)) = self.locate(pos) else {
            return (None, ev);
        };
        let mp = self.ring_mut(c).and_then(|r| r.remove(i));
        if let Some(m) = &mp {
            self.account(c, m.msgsize_blocks(), false);
        }
        self.check_back(&mut ev);
        (mp, ev)
    }

    /// Free the messages of class `c` selected by `flag` (and, if `band` is given, of that
    /// band only: the overflow list mixes bands); returns (messages, bytes).
    fn flush_class(&mut self, c: Class, flag: i32, band: Option<u8>) -> (usize, usize) {
        let (mut n, mut bytes, mut blocks) = (0usize, 0usize, 0usize);
        if let Some(r) = self.ring_mut(c) {
            r.extract_if(
                |m| {
                    (flag == FLUSHALL || m.db_type().is_data())
                        && band.is_none_or(|b| m.band() == b)
                },
                |m| {
                    n += 1;
                    let (b, k) = m.msgsize_blocks();
                    bytes = bytes.saturating_add(b);
                    blocks += k;
                    drop(m);
                },
            );
        }
        self.account(c, (bytes, blocks), false);
        (n, bytes)
    }

    fn flush_classes(
        &mut self,
        which: impl Fn(Class) -> bool,
        flag: i32,
        band: Option<u8>,
    ) -> Flushed {
        let (mut msgs, mut bytes) = (0, 0);
        let nb = u8::try_from(self.bands.len()).unwrap_or(u8::MAX);
        let all = [Class::Hi, Class::Norm, Class::Over]
            .into_iter()
            .chain((1..=nb).map(Class::Band));
        for c in all.filter(|c| which(*c)) {
            let only = if c == Class::Over { band } else { None };
            let (n, b) = self.flush_class(c, flag, only);
            msgs += n;
            bytes += b;
        }
        let mut event = QEvent::NONE;
        self.check_back(&mut event);
        Flushed { msgs, bytes, event }
    }

    /// flushq: free all messages (FLUSHALL) or only data messages (FLUSHDATA).
    pub fn flushq(&mut self, flag: i32) -> Flushed {
        self.flush_classes(|_| true, flag, None)
    }

    /// flushband: free the messages of band `band`. As in SVR4, band 0 means every message
    /// with `b_band == 0`, which includes high-priority ones (subject to `flag`).
    pub fn flushband(&mut self, band: u8, flag: i32) -> Flushed {
        self.flush_classes(
            |c| match c {
                Class::Hi | Class::Norm => band == 0,
                Class::Over => band != 0,
                Class::Band(b) => b == band,
            },
            flag,
            Some(band),
        )
    }

    /// canput on this queue: false (and QWANTW set) when QFULL.
    pub fn canput(&mut self) -> bool {
        if self.flags.contains(QFlags::QFULL) {
            self.flags.set(QFlags::QWANTW);
            return false;
        }
        true
    }

    /// bcanput on this queue: band 0 is canput; a full band sets QB_WANTW and refuses; an
    /// unallocated band can be written unless the queue holds its block limit (then QWANTW
    /// is set: the writer is back-enabled with band 0's writers).
    pub fn bcanput(&mut self, band: u8) -> bool {
        if band == 0 {
            return self.canput();
        }
        let blocks = self.blocks_full();
        match self.band_mut(band) {
            Some(qb) if qb.flags.contains(QbFlags::QB_FULL) => {
                qb.flags.set(QbFlags::QB_WANTW);
                false
            }
            Some(_) => true,
            None if blocks => {
                self.flags.set(QFlags::QWANTW);
                false
            }
            None => true,
        }
    }

    /// noenable: putq stops enabling the queue for ordinary messages.
    pub fn noenable(&mut self) {
        self.flags.set(QFlags::QNOENB);
    }
    /// enableok: undo noenable.
    pub fn enableok(&mut self) {
        self.flags.clear(QFlags::QNOENB);
    }

    /// qenable bookkeeping: set QENAB; true if it was not set (the caller must schedule the
    /// queue now), false if the queue is already scheduled.
    pub fn qenable(&mut self) -> bool {
        if self.flags.contains(QFlags::QENAB) {
            return false;
        }
        self.flags.set(QFlags::QENAB);
        true
    }
    /// The service procedure is about to run: clear QENAB so it can be enabled again.
    pub fn clear_enabled(&mut self) {
        self.flags.clear(QFlags::QENAB);
    }
    /// Record a back-enable for `band` (QBACK for band 0, QB_BACK otherwise).
    pub fn set_back(&mut self, band: u8) {
        if band == 0 {
            self.flags.set(QFlags::QBACK);
        } else if let Some(qb) = self.band_mut(band) {
            qb.flags.set(QbFlags::QB_BACK);
        }
    }
    /// Clear QBACK and every QB_BACK (a service procedure has seen them).
    pub fn clear_back(&mut self) {
        self.flags.clear(QFlags::QBACK);
        for qb in self.bands.as_mut_slice() {
            qb.flags.clear(QbFlags::QB_BACK);
        }
    }
}
