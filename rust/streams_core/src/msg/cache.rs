//! The message block cache: free message blocks kept per CPU for the next allocb (LfS keeps
//! per-CPU `mdbblock` caches; issue 12).
//!
//! Without it every write on a pipe allocates a block and the reader's CPU frees it. Here
//! freemsg/freeb (the drop of a [`Msg`], through [`Recycle`]) puts the block in its CPU's
//! magazine, and allocb/[`Msg::with_type`]/[`Msg::from_bytes`] take one from there before
//! asking the allocator (Bonwick's magazines and depot, with intrusive lists for magazines):
//!
//! ```text
//!  CACHE: a slot per CPU ─ busy bit ─┬ fast, atomic:   loaded, prev  (each ≤ 64 blocks)
//!                                    ├ fast, charged:  loaded, prev
//!                                    ├ 256 B, atomic:  loaded, prev  (each ≤ 16 KiB / 256)
//!                                    ├ …  (two magazines per buffer class and pool)
//!                                    └ 4 KiB, charged: loaded, prev  (each ≤ 16 KiB / 4096)
//!  DEPOT: one busy bit ─ per kind and pool, a stack of full magazines:
//!         ≤ DEPOT_MAGS (24) of fast blocks, ≤ DEPOT_BUF_MAGS (8) per buffer class
//!  magazine = (head, count): blk ─b_next─▶ blk ─▶ …, moved whole in O(1)
//! ```
//!
//! - **What is cached**: the block with its inline fast buffer (header and up to `FASTBUF`
//!   bytes, one allocation), and the block together with its heap data buffer when that has
//!   the capacity of a buffer class: a power of two from 256 bytes to [`PAGEBUF`]. A message
//!   of `FASTBUF + 1` to `PAGEBUF` bytes gets a buffer of the next class up, made exactly its
//!   size in place (the allocator would have rounded the size up to the same power of two).
//!   A freed block whose data is anything else (a larger heap block, esballoc, shared, a
//!   queue reference) lets go of it first (outside the slot: an esballoc free routine or the
//!   last reference to a Stream may run) and is cached with a fast buffer.
//! - **Across CPUs: magazines and the depot.** A pipe's reader frees on its CPU what the
//!   writer allocates on another. An allocation pops `loaded`, exchanging it for `prev` when
//!   it is empty; when both are empty it loads a full magazine from the depot. A free pushes
//!   `loaded`, exchanging it for an empty `prev` when it is full; when both are full `prev`
//!   goes to the depot whole and `loaded` starts empty. Each exchange moves a `(head, count)`
//!   pair, so the depot's busy bit is held for a few stores, and the depot holds a pipe's
//!   whole flow-control swing (`STRMBLKMAX` blocks) besides both ends' magazines. A magazine
//!   the depot has no room for (full, or busy right then) is freed after the slot is
//!   released, never under it.
//! - **No zeroing**: a block from the cache keeps the bytes of its previous message; its
//!   `init` mark is 0, and no byte at or above `init` is ever shown to anyone (`mod.rs` says
//!   how each accessor keeps to that). A write that copies the user's bytes in
//!   (`Msg::fill_spare`) therefore zeroes nothing.
//! - **Per CPU, never waited for**: each slot is owned through a busy bit
//!   ([`sys::CpuSlot::try_lock`]). Any context may allocate or free (process context before
//!   or under a Stream lock, softirq, timers): if the slot is busy (an interrupted user on the
//!   same CPU, a migrated task, the shrinker) the allocation goes to the allocator and the
//!   free frees. Nothing sleeps or spins, and no lock order involves the cache.
//! - **Bounded**: per slot, at most [`MBLK_CACHE_MAX`] fast blocks and [`BUF_CACHE_BYTES`]
//!   of buffers (and at most `MBLK_CACHE_MAX` blocks) per buffer class, per pool, in its two
//!   magazines; in the depot, at most `DEPOT_MAGS` × 64 = 1536 fast blocks and 4 ×
//!   `BUF_CACHE_BYTES` per buffer class, per pool; a free beyond that frees. [`trim`] gives blocks
//!   back under memory pressure (the module's shrinker) and [`drain`] gives all of them back
//!   at module unload.
//! - **Memory accounting**: blocks allocated for a system call's caller before the Stream
//!   lock (`GFP_KERNEL_ACCOUNT`, [`Msg::with_type_wait`]) are kept apart from atomic ones
//!   (`charged` vs `atomic`) so that an uncharged block never stands in for a charged one.
//!   A charged block stays charged to the memory cgroup that first allocated it while it
//!   moves through the cache, as with any object pool, within the bounds above
//!   (`docs/security.md`).
//! - **Fault injection** (test builds): a cache hit asks `sys::fault::should_fail` as the
//!   allocations it replaces would (twice for a block with a buffer), so the KUnit cases that
//!   fail every allocation in turn keep their meaning.
//! - **Off switch** ([`set_enabled`], `streams.ko`'s `strmblkcache` parameter): while it is
//!   off, allocations do not look in the cache and every free frees, so each block is a
//!   kmalloc and a kfree, and KASAN sees a use after free of any of them (a cached block is a
//!   live kmalloc object, and 6.12 does not export `kasan_mempool_poison_object` to modules).
//!   The test guest's fault-injection pass runs its strstress that way (`docs/stress.md`).

use core::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};

use super::magazine::{FreeList, Mags, Shelf};
use super::{Data, Mblk, Msg, MsgFlags, MsgType};
use crate::sys::{self, Box, CpuSlot, NoMem, PerCpu, Recycle, Recycled};

/// Most fast blocks one slot keeps per pool, in its two magazines (each is one
/// `kmalloc-192` object in the kernel: 24 KiB per pool per CPU at most).
pub const MBLK_CACHE_MAX: usize = 128;

/// Most buffer bytes one slot keeps per buffer class and pool, in its two magazines
/// (256-byte buffers: 128, …, 4 KiB buffers: 8; 160 KiB per pool per CPU for the five
/// classes at most).
pub const BUF_CACHE_BYTES: usize = 32 * 1024;

/// The largest buffer class (a page).
pub const PAGEBUF: usize = 4096;

/// The smallest buffer class.
const MINBUF: usize = 256;

/// Buffer classes: 256, 512, 1024, 2048, 4096 bytes.
const NCLASS: usize = 5;

/// The class of a buffer of capacity `cap`, if it is one.
fn class_of(cap: usize) -> Option<usize> {
    if cap.is_power_of_two() && (MINBUF..=PAGEBUF).contains(&cap) {
        Some(cap.trailing_zeros().saturating_sub(MINBUF.trailing_zeros()) as usize)
    } else {
        None
    }
}

/// The buffer capacity for a message of `size` bytes (`FASTBUF < size <= PAGEBUF`).
pub(crate) fn buf_capacity(size: usize) -> usize {
    // No power of two above `size` (never for a message size): no class, and the
    // allocation of that many bytes fails.
    size.checked_next_power_of_two()
        .unwrap_or(usize::MAX)
        .max(MINBUF)
}

/// Slots: CPUs beyond this share slots (correct through the busy bit, just more misses).
const SLOTS: usize = 64;

/// How a block was allocated, which decides the list it goes back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pool {
    /// Atomic, not charged to a memory cgroup (put and service procedures, under a lock).
    Atomic,
    /// For a system call before its Stream lock, charged to the caller's memory cgroup.
    Charged,
}

/// What a cached block carries besides its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Its inline fast buffer.
    Fast,
    /// A heap data buffer of buffer class `c` (capacity `MINBUF << c`).
    Buf(usize),
}

impl Kind {
    /// Most blocks one slot keeps of this kind and a pool (its two magazines together).
    const fn max(self) -> usize {
        match self {
            Kind::Fast => MBLK_CACHE_MAX,
            Kind::Buf(c) => match MINBUF.checked_shl(c as u32) {
                Some(cap) if cap > 0 && BUF_CACHE_BYTES / cap < MBLK_CACHE_MAX => {
                    BUF_CACHE_BYTES / cap
                }
                Some(_) => MBLK_CACHE_MAX,
                None => 0,
            },
        }
    }
    /// Most blocks one magazine holds: half a slot's bound (64 fast blocks; 4 to 64
    /// buffers).
    const fn mag(self) -> usize {
        self.max() / 2
    }
    /// Most magazines the depot keeps of this kind and a pool.
    const fn depot_mags(self) -> usize {
        match self {
            Kind::Fast => DEPOT_MAGS,
            Kind::Buf(_) => DEPOT_BUF_MAGS,
        }
    }
}

/// Full magazines of fast blocks the depot keeps per pool: 24 × 64 = 1536 blocks, one pipe's
/// flow-control swing (a head holds up to `STRMBLKMAX` = 1024 blocks) and the two magazines
/// of each end's slot besides.
const DEPOT_MAGS: usize = 24;

/// Full magazines of a buffer class the depot keeps per pool: 4 × [`BUF_CACHE_BYTES`].
const DEPOT_BUF_MAGS: usize = 8;

const _: () =
    assert!(DEPOT_MAGS * Kind::Fast.mag() >= crate::limits::STRMBLKMAX + 2 * Kind::Fast.mag());

/// A `T` per [`Kind`] and [`Pool`] (index 0 atomic, 1 charged).
struct PerKind<T> {
    fast: [T; 2],
    bufs: [[T; 2]; NCLASS],
}

impl<T> PerKind<T> {
    /// The `T` of `kind` and `pool`; `None` for a class that does not exist.
    fn get_mut(&mut self, kind: Kind, pool: Pool) -> Option<&mut T> {
        let p = match pool {
            Pool::Atomic => 0,
            Pool::Charged => 1,
        };
        match kind {
            Kind::Fast => self.fast.get_mut(p),
            Kind::Buf(c) => self.bufs.get_mut(c)?.get_mut(p),
        }
    }
    fn iter(&self) -> impl Iterator<Item = &T> {
        self.fast.iter().chain(self.bufs.iter().flatten())
    }
    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.fast.iter_mut().chain(self.bufs.iter_mut().flatten())
    }
}

/// One slot: two magazines per [`Kind`] and [`Pool`], and what the slot's owners counted.
struct CpuCache {
    mags: PerKind<Mags>,
    stats: Stats,
}

impl CpuCache {
    const fn new() -> Self {
        CpuCache {
            mags: PerKind {
                fast: [const { Mags::new() }; 2],
                bufs: [const { [const { Mags::new() }; 2] }; NCLASS],
            },
            stats: Stats::new(),
        }
    }
    fn len(&self) -> usize {
        self.mags.iter().map(Mags::len).sum()
    }
    /// Unlink up to `n` blocks of any magazine.
    fn take(&mut self, n: usize) -> [FreeList; 4 * (NCLASS + 1)] {
        let mut left = n;
        let mut out = [const { FreeList::new() }; 4 * (NCLASS + 1)];
        let lists = self
            .mags
            .iter_mut()
            .flat_map(|m| [&mut m.prev, &mut m.loaded]);
        for (l, o) in lists.zip(out.iter_mut()) {
            *o = l.take(left);
            left = left.saturating_sub(o.len());
        }
        out
    }
}

/// What the cache did since load, summed over the slots ([`stats`]). Each slot counts in
/// plain words while its busy bit is owned (no atomics on the fast path); only what happens
/// when a slot is busy is counted in shared atomics (rare: an interrupted or migrated user).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Allocations served from a slot.
    pub hits: usize,
    /// Allocations that went to the allocator: the slot's magazines and the depot had
    /// nothing.
    pub miss_empty: usize,
    /// Allocations that went to the allocator: the slot was busy.
    pub miss_busy: usize,
    /// Full magazines a slot took from the depot.
    pub depot_gets: usize,
    /// Full magazines a slot put in the depot.
    pub depot_puts: usize,
    /// Times the depot was busy when a slot tried it (to get or to put).
    pub depot_busy: usize,
    /// Times a slot with both magazines empty found nothing in the depot.
    pub depot_empty: usize,
    /// Times a slot with both magazines full found no room in the depot.
    pub depot_full: usize,
    /// Blocks freed by a spill (a magazine the depot had no room for, or the depot busy).
    pub spill_freed: usize,
    /// Frees that went to the allocator: the slot was busy.
    pub free_busy: usize,
    /// Slots busy while [`stats`] read them (their counts are missing from this snapshot).
    pub skipped: usize,
}

impl Stats {
    const fn new() -> Self {
        Stats {
            hits: 0,
            miss_empty: 0,
            miss_busy: 0,
            depot_gets: 0,
            depot_puts: 0,
            depot_busy: 0,
            depot_empty: 0,
            depot_full: 0,
            spill_freed: 0,
            free_busy: 0,
            skipped: 0,
        }
    }

    /// Every counter with its name, in a fixed order (what `/proc/streams/mblkcache` and the
    /// host harness print).
    pub fn fields(&self) -> [(&'static str, usize); 11] {
        [
            ("hits", self.hits),
            ("miss_empty", self.miss_empty),
            ("miss_busy", self.miss_busy),
            ("depot_gets", self.depot_gets),
            ("depot_puts", self.depot_puts),
            ("depot_busy", self.depot_busy),
            ("depot_empty", self.depot_empty),
            ("depot_full", self.depot_full),
            ("spill_freed", self.spill_freed),
            ("free_busy", self.free_busy),
            ("skipped", self.skipped),
        ]
    }

    fn add(&mut self, o: &Stats) {
        let w = |a: &mut usize, b: usize| *a = a.wrapping_add(b);
        w(&mut self.hits, o.hits);
        w(&mut self.miss_empty, o.miss_empty);
        w(&mut self.miss_busy, o.miss_busy);
        w(&mut self.depot_gets, o.depot_gets);
        w(&mut self.depot_puts, o.depot_puts);
        w(&mut self.depot_busy, o.depot_busy);
        w(&mut self.depot_empty, o.depot_empty);
        w(&mut self.depot_full, o.depot_full);
        w(&mut self.spill_freed, o.spill_freed);
        w(&mut self.free_busy, o.free_busy);
        w(&mut self.skipped, o.skipped);
    }
}

/// Count one more (wrapping: a counter, not a bound).
#[inline]
fn bump(c: &mut usize, n: usize) {
    *c = c.wrapping_add(n);
}

/// Allocations and frees that found their slot busy (no slot owned to count them in).
static MISS_BUSY: AtomicUsize = AtomicUsize::new(0);
static FREE_BUSY: AtomicUsize = AtomicUsize::new(0);

/// The counters summed over every slot that is free now (a busy one is skipped and counted
/// in `skipped`), plus the busy-slot counts.
pub fn stats() -> Stats {
    let mut t = Stats::new();
    for slot in CACHE.slots() {
        match slot.try_lock() {
            Some(g) => t.add(&g.stats),
            None => bump(&mut t.skipped, 1),
        }
    }
    // Relaxed: counters, nothing is read through them.
    t.miss_busy = MISS_BUSY.load(Relaxed);
    t.free_busy = FREE_BUSY.load(Relaxed);
    t
}

static CACHE: PerCpu<CpuCache, SLOTS> =
    PerCpu::new([const { CpuSlot::new(CpuCache::new()) }; SLOTS]);

/// The depot: full magazines on their way from the CPU that frees them to the CPU that
/// allocates (a pipe's reader frees on its CPU what its writer allocates on another), owned
/// through its busy bit like a slot. Nothing is done under it but moving `(head, count)`
/// pairs.
static DEPOT: CpuSlot<PerKind<Shelf<DEPOT_MAGS>>> = CpuSlot::new(PerKind {
    fast: [const { Shelf::new() }; 2],
    bufs: [const { [const { Shelf::new() }; 2] }; NCLASS],
});

/// Whether the cache keeps blocks: [`set_enabled`].
static ENABLED: AtomicBool = AtomicBool::new(true);

/// Whether the cache keeps freed blocks (on unless [`set_enabled`] turned it off).
#[inline]
pub fn enabled() -> bool {
    // Relaxed: a mode, not a publication; nothing is read through it.
    ENABLED.load(Relaxed)
}

/// Turn the cache on or off. Off, allocations do not look in the cache and freeb frees, and
/// what is cached now is given back here, so each block then goes to the allocator and back
/// (KASAN sees every one). A free under way on another CPU as the switch turns off may still
/// keep its block: nothing takes it while the switch is off, and the shrinker, the next
/// switch off or [`drain`] at unload frees it.
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Relaxed);
    if !on {
        drain();
    }
}

/// A free block from this CPU's magazines, if the cache is on, there is one and its slot is
/// free: `loaded`, else `prev` exchanged for it, else a full magazine from the depot.
#[inline]
fn pop(kind: Kind, pool: Pool) -> Option<Msg> {
    if !enabled() {
        return None;
    }
    let Some(mut g) = CACHE.this_cpu()?.try_lock() else {
        // Relaxed: a counter, nothing is read through it.
        MISS_BUSY.fetch_add(1, Relaxed);
        return None;
    };
    let CpuCache { mags, stats } = &mut *g;
    let m = mags.get_mut(kind, pool)?;
    if m.loaded.len() == 0 {
        if m.prev.len() != 0 {
            m.exchange();
        } else {
            refill(m, kind, pool, stats);
        }
    }
    let b = m.loaded.pop();
    bump(
        if b.is_some() {
            &mut stats.hits
        } else {
            &mut stats.miss_empty
        },
        1,
    );
    b
}

/// Both magazines of `m` are empty: load a full one from the depot, in O(1) (nested busy
/// bits cannot deadlock: nobody waits for one).
#[cold]
fn refill(m: &mut Mags, kind: Kind, pool: Pool, stats: &mut Stats) {
    let Some(mut d) = DEPOT.try_lock() else {
        bump(&mut stats.depot_busy, 1);
        return;
    };
    let full = d.get_mut(kind, pool).and_then(Shelf::get);
    drop(d);
    match full {
        Some(full) => {
            m.loaded = full; // the empty one it replaces frees nothing
            bump(&mut stats.depot_gets, 1);
        }
        None => bump(&mut stats.depot_empty, 1),
    }
}

/// What a free could not keep: the block itself (no room after all) and a magazine the
/// depot had no room for, both to be freed after the slot is released.
type Unkept = (Option<Box<Mblk>>, Option<FreeList>);

/// Keep `b` in `m` (this slot's magazines of its kind and pool).
#[inline]
fn put(m: &mut Mags, b: Box<Mblk>, kind: Kind, pool: Pool, stats: &mut Stats) -> Unkept {
    match m.loaded.push(b, kind.mag()) {
        Ok(()) => (None, None),
        Err(b) => put_full(m, b, kind, pool, stats),
    }
}

/// `put` when `loaded` is full: exchange it for an empty `prev`, else spill `prev` to the
/// depot; then keep `b` in the empty `loaded`.
#[cold]
fn put_full(m: &mut Mags, b: Box<Mblk>, kind: Kind, pool: Pool, stats: &mut Stats) -> Unkept {
    let mut left = None;
    if m.prev.len() == 0 {
        m.exchange();
    } else {
        left = Some(spill(m, kind, pool, stats));
    }
    (m.loaded.push(b, kind.mag()).err(), left)
}

/// Both magazines of `m` are full: `prev` goes to the depot whole, `loaded` becomes `prev`,
/// and `loaded` starts empty. Returns `prev` if the depot was full or busy, to be freed
/// after the slot is released.
#[cold]
fn spill(m: &mut Mags, kind: Kind, pool: Pool, stats: &mut Stats) -> FreeList {
    let loaded = core::mem::replace(&mut m.loaded, FreeList::new());
    let full = core::mem::replace(&mut m.prev, loaded);
    let left = match DEPOT.try_lock() {
        Some(mut d) => match d.get_mut(kind, pool) {
            Some(shelf) => match shelf.put(full, kind.depot_mags()) {
                Ok(()) => {
                    bump(&mut stats.depot_puts, 1);
                    FreeList::new()
                }
                Err(full) => {
                    bump(&mut stats.depot_full, 1);
                    full
                }
            },
            None => full,
        },
        None => {
            bump(&mut stats.depot_busy, 1);
            full
        }
    };
    bump(&mut stats.spill_freed, left.len());
    left
}

/// A one-block message of type `ty` with a fast buffer: from the cache (its bytes those of an
/// earlier message, `init == 0`), else newly allocated (zeroed).
pub(crate) fn alloc_fast(ty: MsgType, pool: Pool) -> Result<Msg, NoMem> {
    match pop(Kind::Fast, pool) {
        Some(m) => reuse(m, ty),
        None => new_block(ty, Data::empty(), pool),
    }
}

/// A one-block message of type `ty` over `data` (fully initialised: a zeroed heap block, an
/// external buffer, a queue reference). On failure `data` is dropped.
pub(crate) fn alloc_with(ty: MsgType, data: Data, pool: Pool) -> Result<Msg, NoMem> {
    match pop(Kind::Fast, pool) {
        Some(m) => {
            let mut m = reuse(m, ty)?;
            m.0.set_data(data);
            Ok(m)
        }
        None => new_block(ty, data, pool),
    }
}

/// A one-block message of type `ty` with a heap data block of exactly `size` bytes
/// (`FASTBUF < size <= PAGEBUF`) in a buffer of the class above: from the cache (the bytes
/// an earlier message's, `init == 0`), else newly allocated (zeroed).
pub(crate) fn alloc_buf(ty: MsgType, size: usize, pool: Pool) -> Result<Msg, NoMem> {
    let cap = buf_capacity(size);
    let Some(m) = class_of(cap).and_then(|c| pop(Kind::Buf(c), pool)) else {
        let mut v = match pool {
            Pool::Atomic => sys::vec_zeroed(cap)?,
            Pool::Charged => sys::vec_zeroed_wait(cap)?,
        };
        sys::vec_resize_in_place(&mut v, size)?;
        return new_block(ty, Data::Heap(v), pool);
    };
    // A hit stands for two allocations, the data buffer and the block, as a miss makes.
    if sys::fault::should_fail() {
        return Err(NoMem);
    }
    let mut m = reuse(m, ty)?;
    match &mut m.0.data {
        Data::Heap(v) => sys::vec_resize_in_place(v, size)?,
        _ => return Err(NoMem), // not on a buffer list (invariant of `FreeList`)
    }
    Ok(m)
}

/// A cached block made new: the allocation it stands for may be failed by fault injection
/// (then it goes back to the cache).
fn reuse(mut m: Msg, ty: MsgType) -> Result<Msg, NoMem> {
    if sys::fault::should_fail() {
        return Err(NoMem);
    }
    let b = &mut *m.0;
    b.ty = ty;
    b.band = 0;
    b.flag = MsgFlags(0);
    b.rptr = 0;
    b.wptr = 0;
    b.init = 0;
    b.dest = 0;
    Ok(m)
}

fn new_block(ty: MsgType, data: Data, pool: Pool) -> Result<Msg, NoMem> {
    let mut b = Mblk::new(ty, data);
    b.pool = pool;
    let b = match pool {
        Pool::Atomic => sys::new_box(b)?,
        Pool::Charged => sys::new_box_wait(b)?,
    };
    Ok(Msg(Recycled::new(b)))
}

impl Recycle for Mblk {
    /// freeb: keep the block in this CPU's magazines (or free it: they and the depot are
    /// full, its slot is busy or the cache off), then free its `b_cont` chain and the `b_next`
    /// list it headed, one block at a time: a block reached from here has neither any more,
    /// so its own recycling goes no deeper and a long message cannot overflow the stack.
    fn recycle(mut b: Box<Mblk>) {
        let mut list = b.next.take();
        let mut cont = b.cont.take();
        let class = match &b.data {
            Data::Fast(_) => None,
            Data::Heap(v) => class_of(v.capacity()),
            _ => None,
        };
        let kind = match class {
            Some(c) => Kind::Buf(c),
            None => {
                if !matches!(b.data, Data::Fast(_)) {
                    b.data = Data::empty(); // frees heap data, runs an esballoc free routine, …
                }
                Kind::Fast
            }
        };
        let pool = b.pool;
        let mut slot = None;
        if enabled() {
            slot = CACHE.this_cpu().and_then(CpuSlot::try_lock);
            if slot.is_none() {
                // Relaxed: a counter, nothing is read through it.
                FREE_BUSY.fetch_add(1, Relaxed);
            }
        }
        let (refused, left) = match slot.as_mut() {
            Some(g) => {
                let CpuCache { mags, stats } = &mut **g;
                match mags.get_mut(kind, pool) {
                    Some(m) => put(m, b, kind, pool, stats),
                    None => (Some(b), None),
                }
            }
            None => (Some(b), None),
        };
        drop(slot);
        drop(left); // what the depot had no room for, freed outside the slots
        drop(refused); // freed: its chains were taken above
        while let Some(mut m) = list {
            list = m.0.next.take();
            // `m` is recycled here with no `b_next`; its `b_cont` chain goes as above.
        }
        while let Some(mut m) = cont {
            cont = m.0.cont.take();
        }
    }
}

/// Blocks in all caches now (a snapshot: what the shrinker reports as freeable).
pub fn cached() -> usize {
    let slots: usize = CACHE
        .slots()
        .filter_map(CpuSlot::try_lock)
        .map(|g| g.len())
        .sum();
    let depot = DEPOT
        .try_lock()
        .map_or(0, |d| d.iter().map(Shelf::len).sum());
    slots.saturating_add(depot)
}

/// Give up to `n` cached blocks back to the allocator (memory pressure); returns how many.
/// The depot goes first, a magazine at a time (detached in O(1) under its busy bit, freed
/// after it); then the slots. Slots that are busy right now are skipped.
pub fn trim(n: usize) -> usize {
    let mut freed = 0;
    while freed < n {
        let mag = match DEPOT.try_lock() {
            Some(mut d) => {
                let want = n - freed;
                d.iter_mut()
                    .find(|s| !s.is_empty())
                    .map_or(FreeList::new(), |s| s.take(want))
            }
            None => break,
        };
        if mag.len() == 0 {
            break;
        }
        freed += mag.len();
    }
    for slot in CACHE.slots() {
        if freed >= n {
            break;
        }
        // Unlinked under the slot, freed after it is released.
        let batch = match slot.try_lock() {
            Some(mut g) => g.take(n - freed),
            None => continue,
        };
        freed += batch.iter().map(FreeList::len).sum::<usize>();
    }
    freed
}

/// Give every cached block back (module unload, after everything that frees messages has
/// stopped, so no slot is busy). Returns how many were freed.
pub fn drain() -> usize {
    trim(usize::MAX)
}

/// Slots (the depot included) that are busy right now: what [`drain`] skipped if it ran now.
/// At module unload this must be 0, else blocks were left behind (module exit reports it).
pub fn busy_slots() -> usize {
    let depot = usize::from(DEPOT.try_lock().is_none());
    CACHE
        .slots()
        .filter(|s| s.try_lock().is_none())
        .count()
        .saturating_add(depot)
}
