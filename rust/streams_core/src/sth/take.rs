//! Two-phase reads: read(2) and getmsg(2) take messages off the Stream head under the Stream
//! lock ([`Taken`]); the platform copies them to the user after it has dropped the lock, and
//! if a copy faults it puts back at the front, in order, what was not delivered
//! ([`Stream::sth_untake`]), so an EFAULT loses nothing; so does an error the platform's
//! read step returns after the take (`call.rs` `keep_taken`: the take goes back whole and the
//! token is given back). While a take is being copied out, the
//! head's [`ReaderToken`] keeps the head's other readers waiting, so that no reader overtakes
//! bytes that may yet come back.
//!
//! ```text
//!  under the Stream lock                     no lock                    under the Stream lock
//!  --------------------------------------    ------------------------   ----------------------
//!  token free? (else wait: Block::Readable)
//!  getq what the read delivers; split the  ─▶ copy to the user ──ok──▶  (none: the token is
//!  last message (dupb): its rest stays        free what was taken        given back without
//!  queued at the front; hold the token        give the token back        the lock)
//!                                                    │ fault
//!                                                    └──────────────▶  untake: rejoin the rest,
//!                                                                      putbq from the fault on,
//!                                                                      give the token back
//! ```
//!
//! # Splitting and rejoining
//! A read smaller than the message (or a getmsg with a part larger than its `maxlen`) takes
//! the *front* of the message: whole blocks, and a `dupb` of the block the limit falls in,
//! trimmed to it. The original block, with `b_rptr` moved past the limit, starts the *rest*,
//! which goes back to the front of its queue class at once (putbq), as SVR4 leaves the rest of
//! a partly read message. If the copy then faults, the rest is found again (the first message
//! of its class: only the token holder puts back, and a read-side flush is noticed by its
//! generation count, after which the take is simply freed, as the flush would have) and the
//! two halves are joined control part first, then data part, each in its order, so read
//! modes and getmsg see the message as it was.
//!
//! # The reader token
//! The token is taken under the Stream lock and given back *without* it on the fast path (one
//! lock hold per read(2)). It is one atomic word with two bits, `HELD` and `WANTED`:
//! - *hold* (under the lock, once *free* said the token is free): a plain store of `HELD`.
//!   The head's other readers look only under the lock, so the lock orders it for them; the
//!   holder's own give-back is a read-modify-write of the same word, after it. It may
//!   overwrite a stale `WANTED` (left by a reader that found the token free in its second
//!   look, so waits for nothing: only a give-back clears `HELD`, and it clears the word).
//! - *free* (under the lock): free if `HELD` is clear; else `fetch_or(WANTED)`, and free if
//!   *that* found `HELD` clear (the token was given back meanwhile). If not, the reader sleeps
//!   on the head's wait queue, queued before it drops the lock (`strwait.rs`).
//! - *give back* (with or without the lock): `swap(0)`; if the old word had `WANTED`, the
//!   holder wakes the head's readers under the lock ([`Stream::sth_wake_readers`]).
//!
//! The waiter's `fetch_or` and the holder's `swap` are read-modify-writes of one word, so one
//! comes first: either the `fetch_or` (then the swap returns `WANTED` and the holder wakes the
//! readers; the waiter queued itself before it dropped the lock, so the wakeup finds it) or
//! the swap (then the `fetch_or` finds `HELD` clear and the reader takes the token instead of
//! sleeping). One locked instruction per read, the give-back's swap; no fence. The loom model
//! `tests/loom_token.rs` checks it. Readers of other Streams, and the other end of a pipe,
//! never look at it.

#[cfg(not(loom))]
use core::sync::atomic::{AtomicU8, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};
#[cfg(loom)]
use loom::sync::atomic::{AtomicU8, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed};

use super::read::delivered;
use super::{UserIo, WAKE_POLL, WAKE_READ};
use crate::errno::Errno;
use crate::msg::{Msg, MsgType, M_DATA};
use crate::sth::Stream;

/// A take of this head is being copied out ([`ReaderToken`]).
const HELD: u8 = 1;
/// A reader found the token held and waits for a wakeup ([`ReaderToken`]).
const WANTED: u8 = 2;

/// The reader token of one Stream head (see the module docs). The platform keeps it outside
/// the Stream lock, next to the lock, and passes it to every reading operation of that head.
///
/// # Locking
/// Taken ([`ReaderToken::free`], [`ReaderToken::hold`]) and looked at
/// ([`ReaderToken::is_idle`]) under the Stream lock; given back ([`ReaderToken::release`])
/// with or without it. One word, `HELD | WANTED`: the protocol is in the module docs.
pub struct ReaderToken {
    state: AtomicU8,
}

impl Default for ReaderToken {
    fn default() -> Self {
        ReaderToken::new()
    }
}

impl ReaderToken {
    /// A free token.
    #[cfg(not(loom))]
    pub const fn new() -> ReaderToken {
        ReaderToken {
            state: AtomicU8::new(0),
        }
    }

    /// A free token.
    #[cfg(loom)]
    pub fn new() -> ReaderToken {
        ReaderToken {
            state: AtomicU8::new(0),
        }
    }

    /// Whether no take of this head is being copied out (a look that records no wait: the
    /// read's enter asks it before deciding to leave the inbound list, `Perim::enter_read`).
    /// Under the lock a hold is always seen; a give-back may be seen late (the enter then
    /// takes the list, as for a held token).
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.state.load(Acquire) & HELD == 0
    }

    /// Under the Stream lock: whether a reader may take from the head now. If a take is being
    /// copied out, the reader's wait is recorded (the holder wakes the head's readers when it
    /// gives the token back) and the answer is no.
    #[inline]
    pub fn free(&self) -> bool {
        if self.is_idle() {
            return true;
        }
        // The second look is the mark itself: the give-back's swap comes before it (the
        // token is free now) or after it (and sees the mark).
        self.state.fetch_or(WANTED, AcqRel) & HELD == 0
    }

    /// Under the Stream lock, after [`ReaderToken::free`]: what was just taken is to be copied
    /// out; other readers wait until [`ReaderToken::release`]. A plain store: the lock orders
    /// it for the other readers (see the module docs).
    #[inline]
    pub fn hold(&self) {
        self.state.store(HELD, Relaxed);
    }

    /// Whether a take is being copied out.
    pub fn is_held(&self) -> bool {
        !self.is_idle()
    }

    /// The holder gives the token back, with or without the Stream lock. Returns whether a
    /// reader waits for it: the caller then wakes the head's readers under the lock
    /// ([`Stream::sth_wake_readers`]).
    #[inline]
    pub fn release(&self) -> bool {
        self.state.swap(0, AcqRel) & WANTED != 0
    }
}

/// How the messages of a take are delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// read(2) with protocol option `prot`; `last`: deliver only this many bytes of the last
    /// message (RMSGD: the rest of the message is discarded with it).
    Read { prot: u32, last: Option<usize> },
    /// getmsg(2): the control part and the data part of the one message taken.
    GetMsg,
}

/// The rest of a split message, which stayed queued (see the module docs).
#[derive(Debug, Clone, Copy)]
struct Rest {
    /// Its queue class: high priority, or its band.
    hipri: bool,
    band: u8,
    /// The band of the whole message.
    msg_band: u8,
    /// How many of its leading blocks read(2) retyped from `ty` to M_DATA (RPROTDAT).
    retyped: usize,
    ty: MsgType,
}

/// What a copy-out did before it faulted: the bytes delivered before the message whose copy
/// failed, and that message's index (what [`Stream::sth_untake`] puts back from).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fault {
    /// Bytes delivered by the messages before `at`.
    pub done: usize,
    /// The message whose copy failed.
    pub at: usize,
}

/// Messages a read or getmsg took off the head, in queue order, to be copied out without the
/// Stream lock. Dropping it frees them: do that after the lock is dropped.
pub struct Taken {
    /// Linked through `b_next`: in reverse order while the take is made, in queue order once
    /// it is sealed.
    list: Option<Msg>,
    n: usize,
    how: How,
    rest: Option<Rest>,
    /// The head's read-side flush generation when the take was made.
    gen: u32,
}

impl Default for Taken {
    fn default() -> Self {
        Taken::new()
    }
}

/// Reverse a `b_next` list.
fn reverse(mut list: Option<Msg>) -> Option<Msg> {
    let mut out = None;
    while let Some(mut m) = list {
        list = m.0.next.take();
        m.0.next = out;
        out = Some(m);
    }
    out
}

/// Iterator over a `b_next` list.
struct Next<'a>(Option<&'a Msg>);

impl<'a> Iterator for Next<'a> {
    type Item = &'a Msg;
    fn next(&mut self) -> Option<&'a Msg> {
        let m = self.0?;
        self.0 = m.0.next.as_ref();
        Some(m)
    }
}

/// Whether block `b` belongs to a message's control part (getmsg's view).
pub(crate) fn is_ctl(b: &Msg) -> bool {
    b.db_type() != M_DATA
}

/// Copy up to `max` bytes of the blocks of `m` selected by `sel` to `io` from offset `at`;
/// returns the bytes copied.
pub(crate) fn copy_blocks(
    m: &Msg,
    sel: impl Fn(&Msg) -> bool,
    max: usize,
    io: &mut dyn UserIo,
    at: usize,
) -> Result<usize, Errno> {
    let mut done = 0usize;
    for b in m.blocks().filter(|b| sel(b)) {
        if done >= max {
            break;
        }
        let n = b.blen().min(max - done);
        if n > 0 {
            io.copy_to_user(at.saturating_add(done), b.rd().get(..n).unwrap_or_default())?;
        }
        done += n;
    }
    Ok(done)
}

impl Taken {
    /// Nothing taken.
    pub const fn new() -> Taken {
        Taken {
            list: None,
            n: 0,
            how: How::GetMsg,
            rest: None,
            gen: 0,
        }
    }

    /// Number of messages taken (and not put back).
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether nothing was taken.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    /// The messages taken, in queue order (as they will be delivered).
    pub fn msgs(&self) -> impl Iterator<Item = &Msg> {
        Next(self.list.as_ref())
    }

    /// Start a take for read(2) under protocol option `prot`.
    pub(crate) fn begin_read(&mut self, prot: u32) {
        self.how = How::Read { prot, last: None };
    }

    /// Start a take for getmsg(2).
    pub(crate) fn begin_getmsg(&mut self) {
        self.how = How::GetMsg;
    }

    /// Add `m` after what was taken so far (while the take is made). Inline in every take
    /// (a call fewer per read and getmsg); the count saturates (it cannot panic in the kernel
    /// build, and no take holds `usize::MAX` messages).
    #[inline(always)]
    pub(crate) fn push(&mut self, mut m: Msg) {
        m.0.next = self.list.take();
        self.list = Some(m);
        self.n = self.n.saturating_add(1);
    }

    /// read(2) delivers only the first `n` bytes of the message taken last (RMSGD).
    pub(crate) fn set_last(&mut self, n: usize) {
        if let How::Read { last, .. } = &mut self.how {
            *last = Some(n);
        }
    }

    /// The message taken last was split and `rest` of it stayed queued.
    pub(crate) fn set_rest(&mut self, rest: &Msg, retyped: usize, ty: MsgType, msg_band: u8) {
        self.rest = Some(Rest {
            hipri: rest.is_hipri(),
            band: if rest.is_hipri() { 0 } else { rest.band() },
            msg_band,
            retyped,
            ty,
        });
    }

    /// The take is complete: put the list in queue order and note the flush generation.
    pub(crate) fn seal(&mut self, gen: u32) {
        self.list = reverse(self.list.take());
        self.gen = gen;
    }

    /// read(2), after the lock: copy what was taken to `io` from offset 0, message after
    /// message. On a fault, what the earlier messages delivered and where it stopped.
    pub fn copy_out(&self, io: &mut dyn UserIo) -> Result<usize, Fault> {
        let How::Read { prot, last } = self.how else {
            return Err(Fault { done: 0, at: 0 });
        };
        // The common take: one M_DATA message of one block, delivered whole.
        if let (Some(m), None) = (self.list.as_ref(), last) {
            if m.0.next.is_none() && m.cont().is_none() && m.db_type() == M_DATA {
                let b = m.rd();
                if !b.is_empty() {
                    io.copy_to_user(0, b)
                        .map_err(|_| Fault { done: 0, at: 0 })?;
                }
                return Ok(b.len());
            }
        }
        let mut done = 0usize;
        for (i, m) in self.msgs().enumerate() {
            let is_proto = m.db_type() != M_DATA;
            let max = match last {
                Some(l) if i + 1 == self.n => l,
                _ => usize::MAX,
            };
            match copy_blocks(m, |b| delivered(b, is_proto, prot), max, io, done) {
                Ok(n) => done = done.saturating_add(n),
                Err(_) => return Err(Fault { done, at: i }),
            }
        }
        Ok(done)
    }

    /// getmsg(2), after the lock: copy the control part of the message taken to `ctl` and its
    /// data part to `data` (each from offset 0; a part not asked for is not copied). One walk
    /// of the blocks, each copied to its part's buffer at that part's running offset (the
    /// take already cut the message to the `maxlen`s: every block goes whole).
    pub fn copy_parts(
        &self,
        mut ctl: Option<&mut dyn UserIo>,
        mut data: Option<&mut dyn UserIo>,
    ) -> Result<(), Errno> {
        let Some(m) = self.msgs().next() else {
            return Ok(());
        };
        let mut at = [0usize; 2];
        for b in m.blocks() {
            let (io, at): (Option<&mut dyn UserIo>, _) = match is_ctl(b) {
                true => (ctl.as_deref_mut().map(|i| i as _), &mut at[0]),
                false => (data.as_deref_mut().map(|i| i as _), &mut at[1]),
            };
            let (Some(io), n) = (io, b.blen()) else {
                continue;
            };
            if n > 0 {
                io.copy_to_user(*at, b.rd())?;
                *at = at.saturating_add(n);
            }
        }
        Ok(())
    }
}

/// Which budget a block is taken from when a message is split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Goes with the front whole (consumed: a block read(2) does not deliver, RPROTDIS).
    Front,
    /// Taken from the front of part 0 or 1 while that part's budget lasts.
    Part(usize),
    /// Stays with the rest (a part getmsg does not process).
    Rest,
}

fn budget(left: &mut [usize; 2], k: usize) -> &mut usize {
    let [a, b] = left;
    if k == 0 {
        a
    } else {
        b
    }
}

/// Split `m` into the front a take delivers and the rest that stays queued: blocks cut
/// [`Cut::Front`] go to the front; those of part `k` go to the front while `budgets[k]` bytes
/// last (a block the limit falls inside is split with `dupb`: the front gets the copy, trimmed,
/// the rest the original, with `b_rptr` past the limit); the others to the rest. Either side
/// may come out empty. On allocation failure `m` comes back as it was.
pub(crate) fn split(
    mut m: Msg,
    budgets: [usize; 2],
    cut: impl Fn(&Msg) -> Cut,
) -> Result<(Option<Msg>, Option<Msg>), Msg> {
    // First the blocks the limits fall inside, and their dupb copies (the only allocations,
    // made before anything changes).
    let mut left = budgets;
    let mut straddle = [usize::MAX; 2];
    for (i, b) in m.blocks().enumerate() {
        if let Cut::Part(k) = cut(b) {
            let l = budget(&mut left, k);
            if *l > 0 && *l < b.blen() {
                *budget(&mut straddle, k) = i;
                *l = 0;
            } else {
                *l -= (*l).min(b.blen());
            }
        }
    }
    let mut dups: [Option<Msg>; 2] = [None, None];
    for (k, &i) in straddle.iter().enumerate() {
        if i == usize::MAX {
            continue;
        }
        let d = match m.nth_block_mut(i).map(Msg::dupb) {
            Some(Ok(d)) => d,
            _ => return Err(m),
        };
        if let Some(slot) = dups.get_mut(k) {
            *slot = Some(d);
        }
    }
    let band = m.band();
    let mut front: Option<Msg> = None;
    let mut ft = &mut front;
    let mut rest: Option<Msg> = None;
    let mut rt = &mut rest;
    let mut left = budgets;
    let mut cur = Some(m);
    while let Some(mut b) = cur {
        cur = b.unlinkb();
        match cut(&b) {
            Cut::Front => ft = &mut ft.insert(b).0.cont,
            Cut::Rest => rt = &mut rt.insert(b).0.cont,
            Cut::Part(k) => {
                let l = budget(&mut left, k);
                let n = b.blen();
                if n <= *l {
                    *l -= n;
                    ft = &mut ft.insert(b).0.cont;
                } else if *l == 0 {
                    rt = &mut rt.insert(b).0.cont;
                } else {
                    let take = *l;
                    *l = 0;
                    if let Some(mut d) = dups.get_mut(k).and_then(Option::take) {
                        d.trim_wptr(n - take);
                        ft = &mut ft.insert(d).0.cont;
                        b.adj_rptr(take);
                    }
                    rt = &mut rt.insert(b).0.cont;
                }
            }
        }
    }
    if let Some(r) = rest.as_mut() {
        r.set_band(band);
    }
    Ok((front, rest))
}

/// Append chain `b` to chain `a`.
fn chain(a: &mut Option<Msg>, b: Option<Msg>) {
    let Some(b) = b else { return };
    match a {
        Some(m) => m.linkb(b),
        None => *a = Some(b),
    }
}

/// The control blocks and the data blocks of `m`, each chain in order.
fn partition(m: Msg) -> (Option<Msg>, Option<Msg>) {
    let (mut c, mut d): (Option<Msg>, Option<Msg>) = (None, None);
    let mut ct = &mut c;
    let mut dt = &mut d;
    let mut cur = Some(m);
    while let Some(mut b) = cur {
        cur = b.unlinkb();
        if is_ctl(&b) {
            ct = &mut ct.insert(b).0.cont;
        } else {
            dt = &mut dt.insert(b).0.cont;
        }
    }
    (c, d)
}

/// The message `front` and `rest` were split from, as it was (see the module docs). `None`
/// only if both were empty, which a split never gives.
fn join(front: Msg, mut rest: Msg, r: &Rest) -> Option<Msg> {
    let mut b = Some(&mut rest);
    for _ in 0..r.retyped {
        let Some(x) = b else { break };
        x.set_type(r.ty);
        b = x.cont_mut();
    }
    let (fc, fd) = partition(front);
    let (rc, rd) = partition(rest);
    let mut m = fc;
    chain(&mut m, rc);
    chain(&mut m, fd);
    chain(&mut m, rd);
    let mut m = m?;
    m.set_band(r.msg_band);
    Some(m)
}

impl Stream {
    /// A copy-out of take `t` failed at message `from` (every message for getmsg: 0): put
    /// messages `from..` back at the front of the head, in their order, the last one rejoined
    /// with the rest of it that stayed queued; then give the reader token back and wake the
    /// head's readers. What was delivered stays in `t`, to be freed after the lock. If the
    /// head's read side was flushed since the take (or the head closed), nothing is put back:
    /// the take is freed as the flush would have freed it.
    pub fn sth_untake(&mut self, t: &mut Taken, from: usize, tok: &ReaderToken) {
        let back = t.n.saturating_sub(from);
        let flushed = t.gen != self.sth.rgen || self.sth.closed;
        let mut list = reverse(t.list.take());
        let mut rest = t.rest.take();
        for _ in 0..back {
            let Some(mut m) = list else { break };
            list = m.0.next.take();
            t.n -= 1;
            if flushed {
                drop(m);
                continue;
            }
            if let Some(r) = rest.take() {
                match self.sth_rejoin(m, &r) {
                    Some(j) => m = j,
                    None => continue,
                }
            }
            self.sth_putbq_head(m);
        }
        t.list = reverse(list);
        tok.release();
        self.sth_wake_readers();
    }

    /// Take the rest of a split message off the queue again and join `front` to it.
    fn sth_rejoin(&mut self, front: Msg, r: &Rest) -> Option<Msg> {
        let h = self.head_rq();
        let pos = self.queue(h).and_then(|q| {
            (0..q.qsize()).find(|&i| {
                q.peek(i)
                    .is_some_and(|m| m.is_hipri() == r.hipri && (r.hipri || m.band() == r.band))
            })
        });
        match pos.and_then(|p| self.qctx(h).rmvq(p)) {
            Some(rest) => join(front, rest, r),
            None => Some(front),
        }
    }

    /// Wake the head's readers and pollers (a reader gave the token back, or data came back).
    pub fn sth_wake_readers(&mut self) {
        self.sth.note(WAKE_READ | WAKE_POLL, 0);
    }
}
