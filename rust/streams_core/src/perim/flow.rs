//! Flow control across a perimeter: what a Stream publishes about one of its entry queues so
//! that writers in other Streams can `bcanputnext` without its lock, and how it answers the
//! writers it refused.
//!
//! The *entry* is the first queue of this Stream that another Stream puts into (the read side
//! of a pipe's twist); its *flow queue* is the queue flow control is decided on: the first
//! queue from the entry upward that has a service procedure, or the Stream head's read queue
//! (SVR4 `canputnext` semantics, evaluated inside this Stream).
//!
//! ```text
//!   writer (any Stream, no lock of ours)          this Stream, under its lock (publish)
//!   ------------------------------------          -----------------------------------------
//!   full(b) == 0 and pending < hiwat: yes          full(b) := QFULL/QB_FULL of the flow queue
//!   want(b) := 1                 (SeqCst)          if not full(b):
//!   full(b) == 0 and pending < hiwat: yes   (SeqCst)  if count(b) <= lowat(b) and want(b):
//!   otherwise: no (a back-enable will come)              want(b) := 0, back-enable band b
//! ```
//!
//! Why a refused writer is always back-enabled: the writer stores `want` and then loads
//! `full`; the Stream stores `full` and then loads `want`, each with a sequentially
//! consistent fence between its store and its load. If the
//! writer's second test still saw the queue full, the Stream's store that clears it comes
//! later in the single order, so its load of `want` after that store sees the writer's mark,
//! and the back-enable is sent as soon as the queue is at its low-water mark (every lock hold
//! that changed the queue's flow state, `Queue::flow_state`, ends with a publish, and the
//! queue reaches its low-water mark only by such a change; so does every hold that took the
//! inbound list while a writer's mark was there, which `Perim::take_inbound` reads after the
//! fence that follows the clear of the pending counts). The loom model (f) in
//! `tests/loom_perim.rs` checks this with the clear-then-test order reversed as the negative
//! case. The argument needs the two fences, not the orderings of the accesses around them: the
//! clear of the pending counts is a relaxed store (under the inbound lock), ordered by the
//! fence that follows it (`Gate::take_into`; loom models (h) and (k) race a writer refused for
//! the pending bytes with that clear).
//!
//! `pending` counts the bytes handed to the inbound list for this entry and not yet taken
//! under the lock, so a burst of puts between two lock holds is flow controlled too;
//! `pending_blocks` counts their message blocks against the flow queue's block limit, as the
//! queue itself does (`queue` module docs), so zero-length messages are flow controlled too.
//! While the flow queue holds its block limit every band is full, bands it has not allocated
//! (and so does not publish) included: `blkfull` says so, and a writer it refuses leaves its
//! mark on band 0 as well, whose back-enable comes once the queue is low again.

#[cfg(not(loom))]
use core::sync::atomic::{
    fence, AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst,
};
#[cfg(loom)]
use loom::sync::atomic::{
    fence, AtomicBool, AtomicU64, AtomicUsize, Ordering::Relaxed, Ordering::SeqCst,
};

/// What the Stream reports for one band of its flow queue when it publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BandState {
    /// The band (0 = ordinary data).
    pub band: u8,
    /// QFULL (band 0) or QB_FULL.
    pub full: bool,
    /// The band is low: its count at or below its low-water mark, and the queue's blocks
    /// at or below a quarter of its block limit (`Queue::band_is_low`).
    pub low: bool,
}

/// What the Stream reports about its flow queue's message blocks when it publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockState {
    /// The queue's block limit.
    pub mblkmax: usize,
    /// The queue holds that many blocks (every band is full).
    pub full: bool,
}

/// "No entry" in [`Flow::entry`].
const NONE: u64 = 0;

/// The published flow-control state of one entry queue (see the module docs).
pub struct Flow {
    /// `QueueId::raw() + 1` of the entry, or [`NONE`].
    entry: AtomicU64,
    /// Bit `b` of word `b / 64`: band `b` of the flow queue is full.
    full: [AtomicU64; 4],
    /// Bit `b` of word `b / 64`: a writer was refused band `b` and waits for a back-enable.
    want: [AtomicU64; 4],
    /// Bytes on the inbound list for this entry.
    pending: AtomicUsize,
    /// The flow queue's high-water mark (band 0), the limit for `pending`.
    hiwat: AtomicUsize,
    /// Message blocks on the inbound list for this entry.
    pending_blocks: AtomicUsize,
    /// The flow queue's block limit, the limit for `pending_blocks`.
    mblkmax: AtomicUsize,
    /// The flow queue holds its block limit: every band is full.
    blkfull: AtomicBool,
}

fn word_bit(band: u8) -> (usize, u64) {
    (usize::from(band / 64), 1u64 << (band % 64))
}

impl Flow {
    /// An unused slot.
    #[cfg(not(loom))]
    pub const fn new() -> Flow {
        Flow {
            entry: AtomicU64::new(NONE),
            full: [const { AtomicU64::new(0) }; 4],
            want: [const { AtomicU64::new(0) }; 4],
            pending: AtomicUsize::new(0),
            hiwat: AtomicUsize::new(usize::MAX),
            pending_blocks: AtomicUsize::new(0),
            mblkmax: AtomicUsize::new(usize::MAX),
            blkfull: AtomicBool::new(false),
        }
    }

    /// An unused slot.
    #[cfg(loom)]
    pub fn new() -> Flow {
        Flow {
            entry: AtomicU64::new(NONE),
            full: core::array::from_fn(|_| AtomicU64::new(0)),
            want: core::array::from_fn(|_| AtomicU64::new(0)),
            pending: AtomicUsize::new(0),
            hiwat: AtomicUsize::new(usize::MAX),
            pending_blocks: AtomicUsize::new(0),
            mblkmax: AtomicUsize::new(usize::MAX),
            blkfull: AtomicBool::new(false),
        }
    }

    /// Whether this slot publishes for the entry queue numbered `raw`.
    pub fn is_for(&self, raw: u64) -> bool {
        self.entry.load(SeqCst) == raw.wrapping_add(1)
    }

    /// Whether the slot is unused.
    pub fn is_free(&self) -> bool {
        self.entry.load(SeqCst) == NONE
    }

    /// Make this slot publish for entry `raw` (under the Stream lock), starting clear.
    pub fn claim(&self, raw: u64) {
        for w in self.full.iter().chain(self.want.iter()) {
            w.store(0, SeqCst);
        }
        self.blkfull.store(false, SeqCst);
        self.entry.store(raw.wrapping_add(1), SeqCst);
    }

    /// The entry went (under the Stream lock): writers are no longer refused here.
    pub fn release(&self) {
        self.entry.store(NONE, SeqCst);
    }

    /// The writer's side: can band `band` be put? A refusal leaves a `want` mark that
    /// [`Flow::publish`] answers with a back-enable.
    pub fn bcanput(&self, band: u8) -> bool {
        let (w, bit) = word_bit(band);
        let (Some(full), Some(want)) = (self.full.get(w), self.want.get(w)) else {
            return true;
        };
        let open = || {
            full.load(SeqCst) & bit == 0
                && !self.blkfull.load(SeqCst)
                && self.pending.load(SeqCst) < self.hiwat.load(SeqCst)
                && self.pending_blocks.load(SeqCst) < self.mblkmax.load(SeqCst)
        };
        if open() {
            return true;
        }
        want.fetch_or(bit, SeqCst);
        if band != 0 {
            // Refused for the block limit, a band the queue has not allocated is answered
            // with band 0's back-enable (see the module docs).
            if let Some(w0) = self.want.first() {
                w0.fetch_or(1, SeqCst);
            }
        }
        fence(SeqCst);
        open()
    }

    /// `n` bytes in `blocks` message blocks were handed to the inbound list for this entry
    /// (under the inbound lock, which every change of the counts holds: no read-modify-write
    /// needed).
    pub fn add_pending(&self, n: usize, blocks: usize) {
        // Relaxed: a larger count only refuses more (a writer that misses it is let through,
        // as one that asked just before the put is); what a refused writer must not miss is
        // the clear (`clear_pending`, fenced by the take).
        let p = self.pending.load(Relaxed);
        self.pending.store(p.saturating_add(n), Relaxed);
        let k = self.pending_blocks.load(Relaxed);
        self.pending_blocks.store(k.saturating_add(blocks), Relaxed);
    }

    /// The inbound list was taken (under the inbound lock): nothing is pending any more.
    /// Returns whether something was: the caller then fences before it next reads the
    /// writers' marks (a writer refused for the pending bytes is answered like one refused for
    /// a full queue: its mark, then fenced, the count; here the count, then fenced, the mark).
    /// The stores are relaxed: that fence (`Gate::take_into`) against the writer's carries
    /// the argument, and every change of the counts is made under the inbound lock.
    pub fn clear_pending(&self) -> bool {
        if self.pending_blocks.load(Relaxed) == 0 {
            return false; // every message is at least one block
        }
        self.pending.store(0, Relaxed);
        self.pending_blocks.store(0, Relaxed);
        true
    }

    /// The Stream's side, under its lock: publish the state of the flow queue's bands (band 0
    /// and every band that exists there; `hiwat` of band 0, its block limit and whether it
    /// holds that many blocks) and call `backenable(band)` for each band a refused writer
    /// waits on that is low now.
    pub fn publish(
        &self,
        hiwat: usize,
        blocks: BlockState,
        bands: impl Iterator<Item = BandState>,
        mut backenable: impl FnMut(u8),
    ) {
        if self.hiwat.load(SeqCst) != hiwat {
            self.hiwat.store(hiwat, SeqCst);
        }
        if self.mblkmax.load(Relaxed) != blocks.mblkmax {
            self.mblkmax.store(blocks.mblkmax, SeqCst);
        }
        // Cleared before band 0's full bit, which is set whenever this is (QFULL): the fence
        // after that clear orders this one before the writers' marks are read too.
        if self.blkfull.load(Relaxed) != blocks.full {
            self.blkfull.store(blocks.full, SeqCst);
        }
        for b in bands {
            let (w, bit) = word_bit(b.band);
            let (Some(full), Some(want)) = (self.full.get(w), self.want.get(w)) else {
                continue;
            };
            // Only this Stream, under its lock, changes `full`: a relaxed load reads back what
            // it published last.
            let was_full = full.load(Relaxed) & bit != 0;
            if b.full {
                if !was_full {
                    full.fetch_or(bit, SeqCst);
                }
                continue;
            }
            if was_full {
                // The clear, then (fenced) the writers' marks: the store-load pair of the
                // module docs. A writer refused before this clear left its mark before its own
                // fence, so from here on every later publish sees it too (a plain load).
                full.fetch_and(!bit, SeqCst);
                fence(SeqCst);
            }
            if b.low && want.load(Relaxed) & bit != 0 && want.fetch_and(!bit, SeqCst) & bit != 0 {
                backenable(b.band);
            }
        }
    }

    /// Whether [`Flow::publish`] of band 0 alone with these values would store nothing and
    /// back-enable nobody: the high-water mark, the block limit, the block-full state and
    /// band 0's full bit are what this slot last published, and no refused writer waits on
    /// band 0 unless the band is still full (then no back-enable is due anyway). Under the
    /// Stream lock, like `publish`.
    ///
    /// The load of the writers' mark comes after the fence that follows every clear a writer
    /// waits for: of the pending counts (`Gate::take_into`) and, as before, of a full bit
    /// (a full bit that changes fails this test, and `publish` does the clear and its fence).
    /// So a writer refused before such a clear is seen here, as `publish` would see it, or
    /// its own second test sees the clear (the argument of the module docs; loom model (k)).
    pub fn band0_unchanged(&self, hiwat: usize, blocks: BlockState, full: bool) -> bool {
        let (Some(f0), Some(w0)) = (self.full.first(), self.want.first()) else {
            return false;
        };
        let was_full = f0.load(Relaxed) & 1 != 0;
        self.hiwat.load(Relaxed) == hiwat
            && self.mblkmax.load(Relaxed) == blocks.mblkmax
            && self.blkfull.load(Relaxed) == blocks.full
            && was_full == full
            && (full || w0.load(SeqCst) & 1 == 0)
    }

    /// Whether a refused writer waits on some band (a publish has work to do).
    pub fn wanted(&self) -> bool {
        self.want.iter().any(|w| w.load(SeqCst) != 0)
    }
}

impl Default for Flow {
    fn default() -> Self {
        Flow::new()
    }
}
