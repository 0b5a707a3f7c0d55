//! The message block cache across CPUs (host only; threads stand for CPUs, each thread its
//! own slot): a pipe's swing of blocks allocated on one slot and freed on another is served
//! from the depot's magazines without the allocator, and spills, refills and the shrinker
//! racing leave nothing behind. A binary of its own, so that no other test uses the cache (a
//! global) meanwhile; its two tests take [`ALONE`] in turn. Valgrind runs this binary too.
//!
//! Allocator calls are counted with the cache's own counters (`cache::stats`): an allocation
//! goes to the allocator exactly when it misses (`miss_empty`, `miss_busy`), and a free
//! exactly when its slot is busy (`free_busy`) or a spill found no room in the depot
//! (`spill_freed`). (A counting `#[global_allocator]` needs `unsafe`, which `streams_core`
//! allows only in `sys.rs`; `pipecost xcpu` under callgrind counts malloc and free instead.)

use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

use streams_core::msg::cache::{self, Stats};
use streams_core::msg::{Msg, M_DATA};

/// Taken by each test for its whole run.
static ALONE: Mutex<()> = Mutex::new(());

fn alone() -> std::sync::MutexGuard<'static, ()> {
    ALONE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Allocator calls the cache made (see the module docs).
fn allocator_calls(s: &Stats) -> usize {
    s.miss_empty + s.miss_busy + s.free_busy + s.spill_freed
}

/// Allocations the cache saw (hits and misses).
fn allocations(s: &Stats) -> usize {
    s.hits + s.miss_empty + s.miss_busy
}

/// `b - a`, counter by counter, for the counters used here.
fn delta(a: &Stats, b: &Stats) -> Stats {
    Stats {
        hits: b.hits - a.hits,
        miss_empty: b.miss_empty - a.miss_empty,
        miss_busy: b.miss_busy - a.miss_busy,
        depot_gets: b.depot_gets - a.depot_gets,
        depot_puts: b.depot_puts - a.depot_puts,
        free_busy: b.free_busy - a.free_busy,
        spill_freed: b.spill_freed - a.spill_freed,
        ..Stats::default()
    }
}

/// Blocks in flight per cycle: one pipe's flow-control swing (`STRMBLKMAX`).
const SWING: usize = 1024;

/// The writer allocates a swing of 1-byte blocks on its slot, the reader frees them on its
/// own, 100 times. The first cycle fills the cache: the writer misses all 1024. The second
/// misses what the reader's slot keeps in its own two magazines (at most 2 × 64 =
/// `MBLK_CACHE_MAX`), which only its own allocations take. From then on every block comes
/// back to the writer through the depot: no allocator call at all (the depot holds the
/// whole swing; with the old 512-block depot, half of each cycle was freed and allocated
/// again).
#[test]
fn cross_cpu_swing() {
    let _alone = alone();
    let _ = cache::drain();
    let (to_reader, full) = sync_channel::<Vec<Msg>>(0);
    let (to_writer, empty) = sync_channel::<Vec<Msg>>(0);
    let reader = std::thread::spawn(move || {
        while let Ok(mut v) = full.recv() {
            v.clear(); // freeb on the reader's slot
            if to_writer.send(v).is_err() {
                break;
            }
        }
    });
    let mut v = Vec::with_capacity(SWING);
    let start = cache::stats();
    let mut after = Vec::new();
    for _ in 0..100 {
        for _ in 0..SWING {
            v.push(Msg::with_type(M_DATA, 1).expect("host allocation"));
        }
        to_reader.send(v).expect("reader");
        v = empty.recv().expect("reader");
        after.push(cache::stats());
    }
    drop(to_reader);
    reader.join().expect("reader");
    let first = after.first().copied().unwrap_or_default();
    let second = after.get(1).copied().unwrap_or_default();
    let last = after.last().copied().unwrap_or_default();
    assert_eq!(allocations(&delta(&start, &first)), SWING);
    assert!(allocator_calls(&delta(&start, &first)) <= SWING);
    assert!(
        allocator_calls(&delta(&first, &second)) <= cache::MBLK_CACHE_MAX,
        "second cycle: {:?}",
        delta(&first, &second)
    );
    let steady = delta(&second, &last);
    assert_eq!(allocator_calls(&steady), 0, "after two cycles: {steady:?}");
    assert_eq!(allocations(&steady), 98 * SWING);
    assert_eq!(steady.hits, 98 * SWING);
    // Whole magazines of 64 went through the depot, both ways.
    assert_eq!(steady.depot_puts, 98 * SWING / 64);
    assert_eq!(steady.depot_gets, 98 * SWING / 64);
    let _ = cache::drain();
    assert_eq!(cache::cached(), 0);
}

/// Sizes that reach the fast lists and every buffer class (256 … 4096).
const SIZES: [usize; 6] = [1, 200, 500, 1000, 2000, 4000];

/// Spills (the reader's frees), refills (the writer's allocations) and the shrinker's trims
/// and counts all at once, on three slots, over every kind and both pools; then the drain
/// leaves nothing cached and no slot busy, and every allocation was counted once.
#[test]
fn spill_refill_and_trim_race() {
    let _alone = alone();
    let _ = cache::drain();
    let before = cache::stats();
    let rounds = if std::env::var_os("VALGRIND").is_some() {
        20
    } else {
        200
    };
    let (to_reader, full) = sync_channel::<Vec<Msg>>(1);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader = std::thread::spawn(move || {
        while let Ok(v) = full.recv() {
            drop(v);
        }
    });
    let shrinker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut freed = 0usize;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                freed += cache::trim(100);
                let _ = cache::cached();
                let _ = cache::stats();
                std::thread::yield_now();
            }
            freed
        })
    };
    let mut made = 0usize;
    for r in 0..rounds {
        let mut v = Vec::with_capacity(300);
        for i in 0..300 {
            let size = SIZES[(i + r) % SIZES.len()];
            let m = if i % 2 == 0 {
                Msg::with_type(M_DATA, size)
            } else {
                Msg::with_type_wait(M_DATA, size)
            };
            v.push(m.expect("host allocation"));
            made += 1;
        }
        to_reader.send(v).expect("reader");
    }
    drop(to_reader);
    reader.join().expect("reader");
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let trimmed = shrinker.join().expect("shrinker");
    let d = delta(&before, &cache::stats());
    assert_eq!(allocations(&d), made, "{d:?}");
    // Spills reached the depot, and refills or the shrinker took from it (under valgrind,
    // which runs one thread at a time, the shrinker may take everything first).
    assert!(
        d.depot_puts > 0 && d.depot_gets + trimmed > 0,
        "no race: {d:?}, {trimmed} trimmed"
    );
    let _ = cache::drain();
    assert_eq!(cache::cached(), 0);
    assert_eq!(cache::busy_slots(), 0);
}
