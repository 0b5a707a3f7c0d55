//! The express write (issue 12): a write(2) whose message goes across to the other Stream
//! without taking its own Stream's lock.
//!
//! A write whose path from the head's write queue leaves the Stream in one pass-only queue
//! (a pipe end with nothing pushed: its twist) goes across in one step under the lock
//! (`stream/across.rs`). When the hold of such a write ends and the head says nothing would
//! stop the next one (`HeadProcs::express_ok`), the perimeter *arms* its [`Express`]: it keeps
//! the link the write went through. Until the next hold of this Stream's lock, whoever holds
//! nothing may write the same way ([`Perim::write_express`](super::Perim::write_express)): ask
//! the link's published flow control, and put the message into the other Stream's gate, all
//! without this Stream's lock.
//!
//! ```text
//!   lock holder (any enter)                 express writer (no lock of this Stream)
//!   -----------------------                 ---------------------------------------
//!   under the Stream lock:                  under `cell`: target := the armed link
//!     take the link out of `cell`              bcanput on it (else: the locked write)
//!     under the target's inbound lock:         under the target's inbound lock:
//!       word := disarmed                         word armed for this target? put, owed += 1
//!       n := owed, owed := 0                     else: the locked write
//!     count n puts on the path
//! ```
//!
//! Why it is the locked write: every change to this Stream happens in a hold of its lock, and
//! every hold begins by disarming (`Perim::enter`), under the target's inbound lock, where an
//! express put is admitted. So an express put lands before the hold begins or is refused and
//! made as a locked write (which waits for the lock): nothing changes the path, the head or
//! the link under a write in flight, and what a hold sees of the other Stream no express put
//! changes after its start. One thread's writes reach the target in the order it made them
//! (each is one put into the target's gate, finished before the write returns, locked or
//! not), and concurrent writers' messages are whole (one put each). A write also falls back
//! to the lock while something waits on this Stream's own inbound list (a hangup, an error,
//! options from below: the locked write applies them first), and when the flow control
//! refuses it (the locked write asks again and sleeps or fails with EAGAIN; the refusal's mark
//! brings the back-enable as it does for the locked write).
//!
//! Statistics: the put of each express write is counted on the path's queue when the next
//! hold disarms (`owed`, counted under the target's inbound lock, so no put is counted twice
//! or missed), before anything in that hold can read it; the module-wide totals, read without
//! any Stream lock, are counted by the writer at once.
//!
//! # Locking
//! `cell` (BH-safe spinlock) is taken under the Stream lock by enter and leave, where nothing is
//! taken under it, and without it by express writers, which take the target's inbound lock (a
//! leaf) under it: holding `cell` keeps the link from being disarmed and let go of, so the put
//! needs no counted reference (only a put that claims the target takes one, to run it once
//! `cell` is released). The inbound lock never has `cell` taken under it (a disarm takes it
//! after `cell` is released), so the order is `cell`, then an inbound lock; `cell` has a
//! lockdep class of its own (`rstreams_express`, [`crate::bh_lock`]). Two pipe ends writing
//! to each other each hold their own `cell` and the other's inbound lock: no cycle. `word`
//! changes only under the target's inbound lock (admit, disarm) or under this Stream's lock
//! with no target holding it yet (arm).
//! So `owed` changes only under the inbound lock of the target the word is armed for: a
//! load and a store, no read-modify-write. An admit into another target reads another key
//! and changes nothing; one that reads this target's key either holds that inbound lock
//! after the disarm that ended an earlier arming for it (the lock orders them), or read the
//! key of a later arming (the arm's release store, the admit's acquire load), which comes
//! after the disarm of every earlier target (both under this Stream's lock, the disarm
//! first). The stores of `state` need no more: the disarm's is ordered for the admits by
//! the inbound lock, and every other load of it is a hint (`Express::is_armed`) or made
//! under this Stream's lock (`Express::armed_locked`).

#[cfg(not(loom))]
use core::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};
#[cfg(loom)]
use loom::sync::atomic::{
    AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};

use crate::msg::Msg;
use crate::stream::stats::{Stat, Totals};
use crate::stream::{Perimeter, QRef, QueueId};
use crate::sys::{self, NoMem};

/// The word a target's gate checks when it admits an express put: armed for which target,
/// and how many puts it admitted since (see the module docs).
pub struct ExpressWord {
    /// [`key_of`] the target the writer's Stream armed for, or 0: disarmed.
    state: AtomicUsize,
    /// Express puts admitted since the word was armed, not yet counted on the path.
    owed: AtomicUsize,
}

/// What names a target perimeter in an [`ExpressWord`]: its address. A writer holds a counted
/// reference to the target while it puts, so no other perimeter can have that address then.
pub fn key_of(p: &dyn Perimeter) -> usize {
    p as *const dyn Perimeter as *const () as usize
}

impl ExpressWord {
    fn new() -> ExpressWord {
        ExpressWord {
            state: AtomicUsize::new(0),
            owed: AtomicUsize::new(0),
        }
    }

    /// Under the target's inbound lock: whether a put into the target `key` is admitted
    /// (counted if so). The count is a load and a store, not a read-modify-write: it changes
    /// only under the inbound lock of the target the word is armed for (see `# Locking` in the
    /// module docs).
    pub fn admit(&self, key: usize) -> bool {
        if key == 0 || self.state.load(Acquire) != key {
            return false;
        }
        let n = self.owed.load(Relaxed);
        self.owed.store(n.wrapping_add(1), Relaxed);
        true
    }

    /// Under the target's inbound lock (or where no put can be admitted): disarm, and take the
    /// count of the puts admitted.
    pub fn disarm(&self) -> usize {
        self.state.store(0, Relaxed);
        let n = self.owed.load(Relaxed);
        self.owed.store(0, Relaxed);
        n
    }
}

/// The armed link: the target, the queue whose put the express writes are (the path's one
/// queue), and that queue's module-wide totals.
pub(crate) struct Target {
    pub(crate) to: QRef,
    q: QueueId,
    totals: Option<Totals>,
}

impl Target {
    /// Count one express put in the module-wide totals of the path's queue.
    pub(crate) fn count_total(&self) {
        if let Some(t) = self.totals {
            t.bump(1, Stat::Put, 1);
        }
    }
}

/// A Stream's express write state (see the module docs). One per perimeter.
pub struct Express {
    word: ExpressWord,
    /// The armed link; `None` when disarmed.
    cell: sys::BhLock<Option<Target>>,
}

impl Express {
    /// Disarmed. `NoMem` when memory runs out.
    pub(crate) fn new() -> Result<Express, NoMem> {
        Ok(Express {
            word: ExpressWord::new(),
            cell: crate::bh_lock!(None, "rstreams_express")?,
        })
    }

    /// The word the target checks.
    pub fn word(&self) -> &ExpressWord {
        &self.word
    }

    /// Whether the express write is armed (exact under the Stream lock, where alone it is
    /// armed and disarmed; a hint without it).
    pub fn is_armed(&self) -> bool {
        self.word.state.load(SeqCst) != 0
    }

    /// [`Express::is_armed`] under the Stream lock: the word is armed and disarmed only
    /// there, so the lock orders those stores before this load.
    #[inline]
    pub(crate) fn armed_locked(&self) -> bool {
        self.word.state.load(Relaxed) != 0
    }

    /// Under the Stream lock: arm for `to`, the link of queue `q` (the path's one queue),
    /// whose totals are `totals`. The word must be disarmed (every hold begins so); a link
    /// still kept is handed back, to be let go of after the lock is dropped.
    pub(crate) fn arm(&self, to: QRef, q: QueueId, totals: Option<Totals>) -> Option<QRef> {
        let key = key_of(&**to.perim());
        let old = self.cell.lock().replace(Target { to, q, totals });
        // Release: an admit that reads this key (acquire) comes after this hold's disarm of
        // any earlier target, so the count it bumps is no longer that target's to change.
        self.word.state.store(key, Release);
        old.map(|t| t.to)
    }

    /// Under the Stream lock, at the start of a hold: disarm. Returns the link (to be let go
    /// of after the lock is dropped), the path's queue and the express puts to count on it.
    pub(crate) fn disarm(&self) -> Option<(QRef, QueueId, usize)> {
        let t = self.cell.lock().take()?;
        let n = t.to.perim().disarm_express(&self.word);
        Some((t.to, t.q, n))
    }

    /// Without the Stream lock: `put(link, m)` on the armed link with `cell` held, so that no
    /// hold disarms the link meanwhile and the put needs no counted reference of its own (no
    /// write to the target's reference count per express write); `Err(m)` when disarmed.
    /// `put` must not sleep: it takes the target's inbound lock, nothing else.
    pub(crate) fn put_armed<R>(
        &self,
        m: Msg,
        put: impl FnOnce(&Target, Msg) -> Result<R, Msg>,
    ) -> Result<R, Msg> {
        let cell = self.cell.lock();
        match cell.as_ref() {
            Some(t) => put(t, m),
            None => Err(m),
        }
    }
}
