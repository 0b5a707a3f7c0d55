//! The message block cache gives back every block at module unload (`cache::drain`): every
//! slot, the depot, every buffer class and both pools, with frees racing the shrinker
//! (`cache::trim`) before. Host only; a binary of its own, so that no other test uses the
//! cache (a global) meanwhile. (A counting `#[global_allocator]` showed the process's live
//! allocations back at their baseline after the drain; it is not kept here, as it needs
//! `unsafe`, which `streams_core` allows only in `sys.rs`. Valgrind runs this binary too.)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use streams_core::msg::cache;
use streams_core::msg::{Msg, M_DATA};

/// Sizes that reach every list: fast blocks and each buffer class (256 … 4096).
const SIZES: [usize; 7] = [0, 64, 200, 500, 1000, 2000, 4000];

/// Allocate a burst of blocks of every size and pool, then free them all: the lists fill,
/// spill half to the depot, and the rest is freed.
fn churn(rounds: usize) {
    for r in 0..rounds {
        let mut held = Vec::with_capacity(3 * 300 * SIZES.len());
        for &n in &SIZES {
            for i in 0..300 {
                let m = if (i + r) % 2 == 0 {
                    Msg::with_type(M_DATA, n)
                } else {
                    Msg::with_type_wait(M_DATA, n)
                };
                held.push(m.expect("host allocation"));
            }
        }
        // Free in an order that mixes sizes, so lists spill while others fill.
        while let Some(m) = held.pop() {
            drop(m);
        }
    }
}

#[test]
fn drain_gives_every_block_back() {
    let _ = cache::drain();

    // Frees from many threads (a slot each, as CPUs) race the shrinker.
    let stop = Arc::new(AtomicBool::new(false));
    let shrinker = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut n = 0usize;
            while !stop.load(Ordering::SeqCst) {
                n += cache::trim(17);
                let _ = cache::cached();
            }
            n
        })
    };
    let workers: Vec<_> = (0..6).map(|_| std::thread::spawn(|| churn(20))).collect();
    for w in workers {
        w.join().expect("worker");
    }
    // Caching again after the shrinker stopped: full lists and a full depot.
    stop.store(true, Ordering::SeqCst);
    let _ = shrinker.join().expect("shrinker");
    let fillers: Vec<_> = (0..3).map(|_| std::thread::spawn(|| churn(2))).collect();
    for f in fillers {
        f.join().expect("filler");
    }
    let cached = cache::cached();
    assert!(cached > 0, "the cache kept nothing: the test tests nothing");
    // The unload: nothing busy, everything freed, nothing left.
    assert_eq!(cache::busy_slots(), 0);
    assert_eq!(cache::drain(), cached);
    assert_eq!(cache::cached(), 0);
    assert_eq!(cache::drain(), 0);
}
