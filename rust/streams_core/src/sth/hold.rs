//! Write hold's buffer (SNDHOLD), shared between the Stream head, under the Stream lock, and
//! the write(2) fast path, which joins small writes to it without that lock.
//!
//! ```text
//!   write(2) ≤ STRHOLDPSZ ──staged / built──▶ HoldCell::join ──(open, room)──▶ appended
//!        │ not open, no room, no held message                                (no Stream lock)
//!        ▼
//!   Stream lock ──▶ strwrite: create / fill / flush the held message, open the cell
//!   read, putmsg, ioctl, close, the hold timer, M_FLUSH ──▶ take (send or free) ── closes it
//!   M_HANGUP, M_SETOPTS ──▶ seal: the held message stays, joins go under the lock again
//! ```
//!
//! A held write changes nothing in the Stream but the held message's bytes: no queue, no flow
//! control, no event (the hold timer is armed when a run's first message is created, under the
//! lock, with the run's generation: an expiry sends only the run it was armed for).
//! So a write that only joins it need not enter the perimeter, and with the lock it skips its
//! whole protocol (enter, the inbound list, leave, the `Later` list). The cell is a leaf lock
//! of its own ([`sys::LeafLock`]: process context only, so bottom halves stay on), taken
//! under the Stream lock or alone, with nothing taken under it. A join copies the user's
//! bytes straight into the held message under it ([`HoldCell::join_user`]) with a copy that
//! cannot block (page faults disabled); a copy that would fault appends nothing, and the
//! write stages its bytes with no lock held and joins from there ([`HoldCell::join`]).
//!
//! # Invariants
//! While the cell is *open*, a write of up to [`STRHOLDPSZ`](super::STRHOLDPSZ) bytes that
//! fits in the held message's room would join that message under the Stream lock too:
//! SNDHOLD is on and SO_DELIM off, the head has no write error and no hangup, is not closed nor linked under a
//! multiplexor, the top module has no `minpsz` and a piece is at least that. Only [`Stream::sth_hold_write`]
//! (`write.rs`) opens it, having checked all that; everything that changes one of them under
//! the Stream lock takes the held message (an ioctl, I_SWROPT, I_LINK, close, a write error's
//! flush) or seals the cell (hangup, M_SETOPTS). A join may fill the held message exactly; a
//! full message waits here until the next write, which finds no room, takes the Stream lock
//! and moves it to the head's held run ([`STRHOLDRUN`] messages, outside the cell, under the
//! Stream lock only) before it starts the next one, or, with the run full, asks flow control
//! and sends the run and it (`write.rs` `sth_hold_fits`); a flush (read, putmsg, ioctl,
//! close, M_READ) or the run's hold timer sends the run and the held message, in order. So a
//! join never sends anything and never needs flow control.
//!
//! Accepted data is never lost: a join appends under the cell's lock to the message the head
//! later takes under the same lock; a join after the take finds no message and goes the slow
//! way (`tests/loom_perim.rs` (j)).

use super::write::STRHOLDRUN;
use super::UserIo;
use crate::msg::Msg;
use crate::sys;

/// The held message and whether writes may join it without the Stream lock.
#[derive(Default)]
struct Held {
    msg: Option<Msg>,
    open: bool,
}

/// Write hold's buffer (see the module docs), one per Stream head, shared through an `Arc`
/// between the head and the platform's [`HeadShared`](super::call::HeadShared).
pub struct HoldCell {
    /// A [`sys::LeafLock`]: only write(2) and the Stream head (under the Stream lock, a
    /// mutex; the hold timer is a work item) take it, never a softirq.
    held: sys::LeafLock<Held>,
}

impl HoldCell {
    /// An empty, closed cell (a sleeping allocation: in process context, holding no lock).
    pub fn new() -> Result<HoldCell, sys::NoMem> {
        Ok(HoldCell {
            held: sys::LeafLock::new(Held::default())?,
        })
    }

    /// The write fast path: append `data` to the held message if the cell is open and the
    /// message has room for all of it (it may fill the message exactly). False if the write
    /// must go under the Stream lock.
    pub fn join(&self, data: &[u8]) -> bool {
        let mut h = self.held.lock();
        if !h.open {
            return false;
        }
        match h.msg.as_mut() {
            Some(m) if m.wr_room() >= data.len() => m.append(data) == data.len(),
            _ => false,
        }
    }

    /// The write fast path straight from user space: copy the `n` bytes of a whole write from
    /// offset 0 of `io` into the held message's room, under the cell's lock, if the cell is
    /// open and the message has room for them (it may fill it exactly). The copy cannot block
    /// ([`UserIo::copy_from_user_nofault`]): if it would fault, nothing is appended and the
    /// caller stages the write the ordinary way, where the fault is taken with no lock held.
    /// Generic, so that the platform's copy is a direct call. False if the write must go
    /// another way.
    #[inline]
    pub fn join_user<I: UserIo + ?Sized>(&self, io: &mut I, n: usize) -> bool {
        let mut h = self.held.lock();
        if !h.open {
            return false;
        }
        // `fill_spare` refuses (`None`) a shared block or one with less than `n` bytes of
        // room, before any copy.
        let copy = |dst: &mut [u8]| match io.copy_from_user_nofault(dst, 0) {
            true => dst.len(),
            false => 0,
        };
        h.msg.as_mut().and_then(|m| m.fill_spare(n, copy)) == Some(n)
    }

    /// Take the held message (to send it or free it); the cell closes. The Stream head's
    /// side, under the Stream lock.
    pub fn take(&self) -> Option<Msg> {
        let mut h = self.held.lock();
        h.open = false;
        h.msg.take()
    }

    /// Hold `m` again, and let writes join it without the lock if `open` (the invariant of
    /// the module docs holds). The Stream head's side, under the Stream lock.
    pub fn put(&self, m: Msg, open: bool) {
        let mut h = self.held.lock();
        // Only after a take: nothing is freed under the cell's lock.
        debug_assert!(h.msg.is_none());
        h.msg = Some(m);
        h.open = open;
    }

    /// Writes may no longer join the held message without the Stream lock. The Stream head's
    /// side, under the Stream lock.
    pub fn seal(&self) {
        self.held.lock().open = false;
    }

    /// Bytes held, and the room left (`None` without a held message).
    pub fn state(&self) -> Option<(usize, usize)> {
        let h = self.held.lock();
        h.msg.as_ref().map(|m| (m.msgsize(), m.wr_room()))
    }
}

/// The Stream head's side of write hold: the cell it shares with the platform's write fast
/// path once the platform gave it one ([`HeadHold::share`], on the first write under the
/// lock), or the held message itself until then (a head the platform never gave a cell, or
/// one whose cell could not be allocated: writes then always join under the lock).
#[derive(Default)]
pub(crate) struct HeadHold {
    /// INVARIANT: `None` while `cell` is set.
    own: Option<Msg>,
    cell: Option<sys::Arc<HoldCell>>,
    /// A message is held, in `own` or in the cell. INVARIANT: kept by [`HeadHold::put`] and
    /// [`HeadHold::take`] only: a message enters the cell and leaves it only through them,
    /// under the Stream lock (a join appends to the held message, never makes one). So a
    /// read, putmsg or write with nothing held does not take the cell's lock to learn it.
    held: bool,
    /// The held run: full messages held before the one in `own` or the cell, oldest first
    /// (`nrun` of them, in `run[..nrun]`). Only the Stream head touches them, under the Stream
    /// lock: a join never sees them (it appends to the message in the cell, the newest).
    run: [Option<Msg>; STRHOLDRUN - 1],
    nrun: usize,
    /// The held run's generation: bumped when a message starts an empty run (and arms the
    /// hold timer for it, `HeadEvents::hold_gen`). The timer's flush sends only the run it
    /// was armed for (`Stream::sth_hold_expired`, `mod.rs`),
    /// so an expiry of run k that waited for the Stream lock while a write sent run k and
    /// started run k + 1 does not send run k + 1 before its hold time.
    gen: u32,
}

impl HeadHold {
    /// No held message, no cell.
    pub(crate) const fn new() -> HeadHold {
        HeadHold {
            own: None,
            cell: None,
            held: false,
            run: [const { None }; STRHOLDRUN - 1],
            nrun: 0,
            gen: 0,
        }
    }

    /// A new run starts: its generation, for the hold timer armed for it.
    pub(crate) fn start_run(&mut self) -> u32 {
        self.gen = self.gen.wrapping_add(1);
        self.gen
    }

    /// The generation of the run held (or of the last one, if nothing is held).
    pub(crate) fn gen(&self) -> u32 {
        self.gen
    }

    /// Whether the held message, full, may move to the run instead of going down.
    pub(crate) fn run_room(&self) -> bool {
        self.nrun < self.run.len()
    }

    /// Whether nothing is in the run (a new held message then starts it, and arms the hold
    /// timer).
    pub(crate) fn run_empty(&self) -> bool {
        self.nrun == 0
    }

    /// Move the held message to the end of the run, if the run has room (false, and nothing
    /// moves, if not); the cell closes until the next message is put.
    pub(crate) fn retire(&mut self) -> bool {
        if !self.run_room() {
            return false;
        }
        let m = self.take();
        if let Some(slot) = self.run.get_mut(self.nrun) {
            if m.is_some() {
                *slot = m;
                self.nrun += 1;
            }
        }
        true
    }

    /// Take the run, oldest first (the held message, newer, stays).
    pub(crate) fn take_run(&mut self) -> [Option<Msg>; STRHOLDRUN - 1] {
        self.nrun = 0;
        core::mem::take(&mut self.run)
    }

    /// Share `cell` with the platform from now on (what is held moves into it, closed).
    pub(crate) fn share(&mut self, cell: &sys::Arc<HoldCell>) {
        if self.cell.is_some() {
            return;
        }
        if let Some(m) = self.own.take() {
            cell.put(m, false);
        }
        self.cell = Some(cell.clone());
    }

    /// A message is held, in the run or in the cell (with no lock but the Stream's).
    #[inline]
    pub(crate) fn is_held(&self) -> bool {
        self.held || self.nrun != 0
    }

    /// Take the held message; a shared cell closes (it is closed already when nothing is
    /// held: it opens only with a message, `put`).
    pub(crate) fn take(&mut self) -> Option<Msg> {
        if !core::mem::take(&mut self.held) {
            return None;
        }
        match &self.cell {
            Some(c) => c.take(),
            None => self.own.take(),
        }
    }

    /// Hold `m`; a shared cell opens if `open`.
    pub(crate) fn put(&mut self, m: Msg, open: bool) {
        self.held = true;
        match &self.cell {
            Some(c) => c.put(m, open),
            None => self.own = Some(m),
        }
    }

    /// Writes may no longer join without the Stream lock (a hangup, new options).
    pub(crate) fn seal(&mut self) {
        if let Some(c) = &self.cell {
            c.seal();
        }
    }

    /// Bytes in the run.
    pub(crate) fn run_bytes(&self) -> usize {
        self.run.iter().flatten().map(Msg::msgsize).sum()
    }

    /// Bytes held in the newest message, and the room left (`None` without one).
    pub(crate) fn state(&self) -> Option<(usize, usize)> {
        if !self.held {
            return None;
        }
        match &self.cell {
            Some(c) => c.state(),
            None => self.own.as_ref().map(|m| (m.msgsize(), m.wr_room())),
        }
    }
}
