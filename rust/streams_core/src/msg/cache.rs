//! The message block cache: free message blocks kept per CPU for the next allocb (LfS keeps
//! per-CPU `mdbblock` caches; issue 12).
//!
//! Without it every write on a pipe allocates a block and the reader's CPU frees it. Here
//! freemsg/freeb (the drop of a [`Msg`], through [`Recycle`]) puts the block on its CPU's free
//! list, and allocb/[`Msg::with_type`]/[`Msg::from_bytes`] take one from there before asking
//! the allocator:
//!
//! ```text
//!   CACHE: PerCpu ── slot (CPU % SLOTS) ── busy bit ─┬ fast, atomic:  blk ─b_next─▶ blk ─▶ …  (≤ MBLK_CACHE_MAX)
//!                                                    ├ fast, charged: blk ─b_next─▶ …        (≤ MBLK_CACHE_MAX)
//!                                                    ├ page, atomic:  blk+page ─b_next─▶ …   (≤ PAGE_CACHE_MAX)
//!                                                    └ page, charged: blk+page ─b_next─▶ …   (≤ PAGE_CACHE_MAX)
//! ```
//!
//! - **What is cached**: the block with its inline fast buffer (header and up to `FASTBUF`
//!   bytes, one allocation), and the block together with its heap data buffer when that is a
//!   page ([`PAGEBUF`] bytes of capacity: the buffers of messages of `PAGEBUF / 2 + 1` to
//!   `PAGEBUF` bytes, which the allocator would give a page-sized object anyway). A freed
//!   block whose data is anything else (another heap size, esballoc, shared, a queue
//!   reference) lets go of it first (outside the slot: an esballoc free routine or the last
//!   reference to a Stream may run) and is cached with a fast buffer. Messages of
//!   `FASTBUF + 1` to `PAGEBUF / 2` bytes get a new, zeroed heap buffer as before (a page for
//!   each would waste memory; not zeroing a new one needs the user copy to write into
//!   uninitialised memory, which safe code cannot express).
//! - **No zeroing**: a block from the cache keeps the bytes of its previous message; its
//!   `init` mark is 0, and no byte at or above `init` is ever shown to anyone (`mod.rs` says
//!   how each accessor keeps to that). A write that copies the user's bytes in
//!   ([`Msg::fill_spare`]) therefore zeroes nothing.
//! - **Per CPU, never waited for**: each slot is owned through a busy bit
//!   ([`sys::CpuSlot::try_lock`]). Any context may allocate or free (process context before
//!   or under a Stream lock, softirq, timers): if the slot is busy (an interrupted user on the
//!   same CPU, a migrated task, the shrinker) the allocation goes to the allocator and the
//!   free frees. Nothing sleeps or spins, and no lock order involves the cache.
//! - **Bounded**: at most [`MBLK_CACHE_MAX`] blocks per fast list and [`PAGE_CACHE_MAX`] per
//!   page list per slot; a free beyond that frees. [`trim`] gives blocks back under memory pressure (the module's shrinker) and
//!   [`drain`] gives all of them back at module unload.
//! - **Memory accounting**: blocks allocated for a system call's caller before the Stream
//!   lock (`GFP_KERNEL_ACCOUNT`, [`Msg::with_type_wait`]) are kept apart from atomic ones
//!   (`charged` vs `atomic`) so that an uncharged block never stands in for a charged one.
//!   A charged block stays charged to the memory cgroup that first allocated it while it
//!   moves through the cache, as with any object pool: at most `MBLK_CACHE_MAX` blocks per
//!   CPU (`docs/performance.md`).
//! - **Fault injection** (test builds): a cache hit asks `sys::fault::should_fail` as the
//!   allocation it replaces would, so the KUnit cases that fail every allocation in turn keep
//!   their meaning.

use super::{Data, Mblk, Msg, MsgFlags, MsgType};
use crate::sys::{self, Box, CpuSlot, NoMem, PerCpu, Recycle, Recycled};

/// Most blocks one fast list of one slot keeps (each is one `kmalloc-192` object in the
/// kernel: 24 KiB per list per CPU at most).
pub const MBLK_CACHE_MAX: usize = 128;

/// Most blocks one page list of one slot keeps (each a block and a page: 64 KiB per list per
/// CPU at most).
pub const PAGE_CACHE_MAX: usize = 16;

/// Capacity of a cached heap data buffer (a page).
pub const PAGEBUF: usize = 4096;

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

/// Free blocks linked through `b_next`, newest first.
///
/// # Invariants
/// `count` is the number of blocks on `head`; none has a `b_cont`; each has a fast buffer
/// (fast lists) or a heap buffer of capacity `PAGEBUF` (page lists).
pub(crate) struct FreeList {
    head: Option<Msg>,
    count: usize,
}

impl FreeList {
    pub(crate) const fn new() -> Self {
        FreeList {
            head: None,
            count: 0,
        }
    }

    /// Keep `b` (which has no `b_cont`/`b_next` and the data of this list), or hand it back if
    /// the list holds `max` blocks already.
    pub(crate) fn push(&mut self, mut b: Box<Mblk>, max: usize) -> Result<(), Box<Mblk>> {
        if self.count >= max {
            return Err(b);
        }
        b.next = self.head.take();
        self.head = Some(Msg(Recycled::new(b)));
        self.count = self.count.saturating_add(1);
        Ok(())
    }

    /// The newest free block, unlinked.
    pub(crate) fn pop(&mut self) -> Option<Msg> {
        let mut m = self.head.take()?;
        self.head = m.0.next.take();
        self.count = self.count.saturating_sub(1);
        Some(m)
    }

    /// Blocks on the list.
    pub(crate) fn len(&self) -> usize {
        self.count
    }

    /// Unlink up to `n` blocks, as a list to free outside the slot.
    pub(crate) fn take(&mut self, n: usize) -> FreeList {
        let mut out = FreeList::new();
        while out.count < n {
            let Some(mut m) = self.pop() else { break };
            m.0.next = out.head.take();
            out.head = Some(m);
            out.count = out.count.saturating_add(1);
        }
        out
    }
}

impl Drop for FreeList {
    /// Give every block back to the allocator (not to the cache), one at a time.
    fn drop(&mut self) {
        while let Some(m) = self.pop() {
            drop(m.0.into_box());
        }
    }
}

/// What a cached block carries besides its header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Its inline fast buffer.
    Fast,
    /// A heap data buffer of capacity [`PAGEBUF`].
    Page,
}

const KINDS: [(Kind, Pool); 4] = [
    (Kind::Fast, Pool::Atomic),
    (Kind::Fast, Pool::Charged),
    (Kind::Page, Pool::Atomic),
    (Kind::Page, Pool::Charged),
];

/// One slot: a list per [`Kind`] and [`Pool`].
struct CpuCache {
    fast_atomic: FreeList,
    fast_charged: FreeList,
    page_atomic: FreeList,
    page_charged: FreeList,
}

impl CpuCache {
    fn list(&mut self, kind: Kind, pool: Pool) -> &mut FreeList {
        match (kind, pool) {
            (Kind::Fast, Pool::Atomic) => &mut self.fast_atomic,
            (Kind::Fast, Pool::Charged) => &mut self.fast_charged,
            (Kind::Page, Pool::Atomic) => &mut self.page_atomic,
            (Kind::Page, Pool::Charged) => &mut self.page_charged,
        }
    }
    fn len(&self) -> usize {
        self.fast_atomic.len()
            + self.fast_charged.len()
            + self.page_atomic.len()
            + self.page_charged.len()
    }
}

static CACHE: PerCpu<CpuCache, SLOTS> = PerCpu::new(
    [const {
        CpuSlot::new(CpuCache {
            fast_atomic: FreeList::new(),
            fast_charged: FreeList::new(),
            page_atomic: FreeList::new(),
            page_charged: FreeList::new(),
        })
    }; SLOTS],
);

/// A free block from this CPU's list, if there is one and its slot is free.
fn pop(kind: Kind, pool: Pool) -> Option<Msg> {
    CACHE.this_cpu()?.try_lock()?.list(kind, pool).pop()
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
/// (`PAGEBUF / 2 < size <= PAGEBUF`) in a page-sized buffer: from the cache (the bytes an
/// earlier message's, `init == 0`), else newly allocated (zeroed).
pub(crate) fn alloc_page(ty: MsgType, size: usize, pool: Pool) -> Result<Msg, NoMem> {
    let Some(m) = pop(Kind::Page, pool) else {
        let mut v = match pool {
            Pool::Atomic => sys::vec_zeroed(PAGEBUF)?,
            Pool::Charged => sys::vec_zeroed_wait(PAGEBUF)?,
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
        _ => return Err(NoMem), // not on a page list (invariant of `FreeList`)
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
    /// freeb: keep the block on this CPU's list (or free it), then free its `b_cont` chain
    /// and the `b_next` list it headed, one block at a time: a block reached from here has
    /// neither any more, so its own recycling goes no deeper and a long message cannot
    /// overflow the stack.
    fn recycle(mut b: Box<Mblk>) {
        let mut list = b.next.take();
        let mut cont = b.cont.take();
        let kind = match &b.data {
            Data::Fast(_) => Kind::Fast,
            Data::Heap(v) if v.capacity() == PAGEBUF => Kind::Page,
            _ => {
                b.data = Data::empty(); // frees heap data, runs an esballoc free routine, …
                Kind::Fast
            }
        };
        let max = match kind {
            Kind::Fast => MBLK_CACHE_MAX,
            Kind::Page => PAGE_CACHE_MAX,
        };
        let pool = b.pool;
        let refused = match CACHE.this_cpu().and_then(CpuSlot::try_lock) {
            Some(mut g) => g.list(kind, pool).push(b, max).err(),
            None => Some(b),
        };
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
    CACHE
        .slots()
        .filter_map(CpuSlot::try_lock)
        .map(|g| g.len())
        .sum()
}

/// Give up to `n` cached blocks back to the allocator (memory pressure); returns how many.
/// Slots that are busy right now are skipped.
pub fn trim(n: usize) -> usize {
    let mut freed = 0;
    for slot in CACHE.slots() {
        for (kind, pool) in KINDS {
            if freed >= n {
                return freed;
            }
            // Unlinked under the slot, freed after it is released.
            let batch = match slot.try_lock() {
                Some(mut g) => g.list(kind, pool).take(n - freed),
                None => continue,
            };
            freed += batch.len();
        }
    }
    freed
}

/// Give every cached block back (module unload, after everything that frees messages has
/// stopped, so no slot is busy). Returns how many were freed.
pub fn drain() -> usize {
    trim(usize::MAX)
}
