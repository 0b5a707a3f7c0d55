//! Module statistics: SVR4's `module_stat` (`ms_pcnt`, `ms_scnt`, `ms_ocnt`, `ms_ccnt`),
//! counted by the engine rather than by each module, so every module and driver has them.
//!
//! Two views, both per queue side (read = index 0, write = index 1):
//! - per Stream: each queue of a pair counts the put and service procedure calls it saw
//!   ([`Stream::mstat`]); open and close are counted on the read side, as SVR4 counts them
//!   against the read `qinit` (which holds `qi_qopen`/`qi_qclose`);
//! - per registered `streamtab`, summed over all its instances since load ([`mstat_total`]):
//!   what `/proc/streams/modules` shows. These live in a fixed table of slots keyed by the
//!   address of the `static StreamTab`, claimed on the first open, so counting never allocates
//!   and needs no lock. When the table is full a streamtab simply has no module-wide totals.
//!   A slot's counters are per CPU (`sys::stat_add`: each CPU adds to its own copy, so the
//!   writer and the reader of a pipe, on two CPUs, do not pass a cache line back and forth
//!   on every message), and a read sums the CPUs' copies: a racy sum, which may miss or
//!   include the counts being added on other CPUs as it reads (exact once they are done).
//!
//! Per-Stream counters saturate; the module-wide ones are `usize` (64-bit on x86_64,
//! centuries of puts before they wrap).

use core::sync::atomic::{AtomicUsize, Ordering};

use crate::sys;

use super::module::StreamTab;
use super::{HeadProcs, QueueId, Stream};

/// `module_stat`: how often a queue's procedures ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ModuleStat {
    /// Put procedure calls.
    pub ms_pcnt: usize,
    /// Service procedure calls.
    pub ms_scnt: usize,
    /// Opens (read side only).
    pub ms_ocnt: usize,
    /// Closes (read side only).
    pub ms_ccnt: usize,
}

/// Which counter an event bumps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stat {
    Put = 0,
    Srv = 1,
    Open = 2,
    Close = 3,
}

impl ModuleStat {
    pub(crate) fn bump(&mut self, what: Stat, n: usize) {
        let c = match what {
            Stat::Put => &mut self.ms_pcnt,
            Stat::Srv => &mut self.ms_scnt,
            Stat::Open => &mut self.ms_ocnt,
            Stat::Close => &mut self.ms_ccnt,
        };
        *c = c.saturating_add(n);
    }
}

/// Most streamtabs with module-wide totals.
pub const MAX_TOTALS: usize = 64;

/// Counters per streamtab in the per-CPU table: 2 sides of 4 [`Stat`]s, one cache line of
/// each CPU's copy.
const PER_TAB: usize = 8;

const _: () = assert!(MAX_TOTALS * PER_TAB <= sys::NSTATS);

/// The streamtab of each totals slot, by address (0: free).
static KEYS: [AtomicUsize; MAX_TOTALS] = [const { AtomicUsize::new(0) }; MAX_TOTALS];

/// Module-wide counters of one streamtab: its slot's `PER_TAB` counters in the platform's
/// per-CPU table ([`sys::stat_add`]). Each CPU counts into its own copy, so a writer and a
/// reader on two CPUs counting the same module never share a cache line; a read sums the
/// copies ([`mstat_total`]: racy by the counts in flight, exact when nothing runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Totals {
    /// The slot's first counter.
    base: usize,
}

impl Totals {
    /// The counter of `what` on `side` (0 read, 1 write).
    #[inline]
    pub(crate) fn counter(self, side: usize, what: Stat) -> usize {
        self.base + side * 4 + what as usize
    }

    /// Count `n` events `what` on `side` (another side counts nothing).
    #[inline]
    pub(crate) fn bump(self, side: usize, what: Stat, n: usize) {
        if side < 2 {
            sys::stat_add(self.counter(side, what), n);
        }
    }

    fn read(self, side: usize) -> ModuleStat {
        let get = |what: Stat| sys::stat_sum(self.counter(side, what));
        ModuleStat {
            ms_pcnt: get(Stat::Put),
            ms_scnt: get(Stat::Srv),
            ms_ocnt: get(Stat::Open),
            ms_ccnt: get(Stat::Close),
        }
    }
}

fn key_of(tab: &'static StreamTab) -> usize {
    core::ptr::from_ref(tab).addr()
}

/// The totals slot of `tab`, claiming a free one if `claim` (None: not found, or table full).
pub(crate) fn totals_of(tab: &'static StreamTab, claim: bool) -> Option<Totals> {
    let key = key_of(tab);
    for (i, k) in KEYS.iter().enumerate() {
        let found = Some(Totals { base: i * PER_TAB });
        match k.load(Ordering::Acquire) {
            k if k == key => return found,
            0 if claim => match k.compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return found,
                Err(k) if k == key => return found,
                Err(_) => {}
            },
            0 => return None, // slots are claimed in order: no later slot holds `key`
            _ => {}
        }
    }
    None
}

/// Claim the totals slot of `tab` now. A platform does this when it registers its drivers and
/// modules, so that they have totals however many other streamtabs (tests) are opened first.
/// False if the table is full.
pub fn reserve_totals(tab: &'static StreamTab) -> bool {
    totals_of(tab, true).is_some()
}

/// Module-wide statistics of `tab`, `[read side, write side]`, summed over every instance
/// opened since load (zeros if it was never opened or has no slot; see the module docs).
pub fn mstat_total(tab: &'static StreamTab) -> [ModuleStat; 2] {
    totals_of(tab, false).map_or([ModuleStat::default(); 2], |t| [t.read(0), t.read(1)])
}

impl<H: HeadProcs> Stream<H> {
    /// `module_stat` of queue `q` in this Stream (None if `q` is not in the Stream).
    pub fn mstat(&self, q: QueueId) -> Option<ModuleStat> {
        self.side(q).map(|s| s.stats)
    }

    /// Count `what` for queue `q`, in the Stream and in its streamtab's totals.
    pub(crate) fn count_stat(&mut self, q: QueueId, what: Stat) {
        if let Some(p) = self.pair_mut_quiet(q.pair()) {
            p.count_stat(q.side(), what);
        }
    }
}

impl super::Pair {
    /// Count `what` for side `side` (0 read, 1 write) of this pair, in the Stream and in its
    /// streamtab's totals ([`Stream::count_stat`] for a caller that holds the pair already:
    /// the put path).
    pub(crate) fn count_stat(&mut self, side: usize, what: Stat) {
        self.count_stats(side, what, 1)
    }

    /// [`Pair::count_stat`] `n` times in one step (a run of messages put up together,
    /// `batch.rs`).
    #[inline]
    pub(crate) fn count_stats(&mut self, side: usize, what: Stat, n: usize) {
        if let Some(s) = self.sides.get_mut(side) {
            s.stats.bump(what, n);
        }
        if let Some(t) = self.totals {
            t.bump(side, what, n);
        }
    }
}
