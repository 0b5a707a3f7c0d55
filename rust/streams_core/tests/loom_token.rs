//! Loom model of the Stream head's reader token (`sth/take.rs`): a reader that finds the token
//! held and goes to sleep (queued on the head's wait queue before it drops the Stream lock) is
//! always woken when the holder gives the token back *without* the lock, and no two readers
//! copy out at once.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p streams_core --release --test loom_token`.
//!
//! The real `ReaderToken` runs against a holder that releases it: one held from the start, and
//! one taken under the lock (its plain store of `HELD`) racing with a second reader. Two broken
//! waiters on the same one-word layout are caught losing the wakeup: one that marks itself but
//! trusts its first look (does not test the mark's result), and one that marks itself with a
//! load and a store instead of one read-modify-write (the give-back's swap falls between them).
#![cfg(loom)]

use loom::sync::atomic::{
    AtomicU8, AtomicUsize, Ordering::AcqRel, Ordering::Acquire, Ordering::Relaxed,
};
use loom::sync::{Arc, Mutex};
use loom::thread;

use streams_core::sth::ReaderToken;

/// The token's bits, as `sth/take.rs` lays them out (for the broken variants).
const HELD: u8 = 1;
const WANTED: u8 = 2;

/// What the model needs of a token.
trait Token: Send + Sync + 'static {
    fn new() -> Self;
    fn free(&self) -> bool;
    fn hold(&self);
    fn release(&self) -> bool;
}

impl Token for ReaderToken {
    fn new() -> Self {
        ReaderToken::new()
    }
    fn free(&self) -> bool {
        ReaderToken::free(self)
    }
    fn hold(&self) {
        ReaderToken::hold(self)
    }
    fn release(&self) -> bool {
        ReaderToken::release(self)
    }
}

/// A broken waiter: how it marks itself, given the word and its first look.
trait Mark: Send + Sync + 'static {
    /// Mark the wait of a reader that found `HELD` set; whether the token is free after all.
    fn mark(state: &AtomicU8) -> bool;
}

/// The real token's layout and holder, with a broken waiter `M`.
struct Broken<M> {
    state: AtomicU8,
    _m: core::marker::PhantomData<M>,
}

impl<M: Mark> Token for Broken<M> {
    fn new() -> Self {
        Broken {
            state: AtomicU8::new(0),
            _m: core::marker::PhantomData,
        }
    }
    fn free(&self) -> bool {
        if self.state.load(Acquire) & HELD == 0 {
            return true;
        }
        M::mark(&self.state)
    }
    fn hold(&self) {
        self.state.store(HELD, Relaxed);
    }
    fn release(&self) -> bool {
        self.state.swap(0, AcqRel) & WANTED != 0
    }
}

/// The waiter marks itself but trusts its first look at `HELD`.
struct NoRecheck;

impl Mark for NoRecheck {
    fn mark(state: &AtomicU8) -> bool {
        state.fetch_or(WANTED, AcqRel);
        false
    }
}

/// The waiter marks itself with a load and a store: not one read-modify-write.
struct LoadThenStore;

impl Mark for LoadThenStore {
    fn mark(state: &AtomicU8) -> bool {
        let s = state.load(Acquire);
        state.store(s | WANTED, Relaxed);
        s & HELD == 0
    }
}

/// The head's wait queue, under the Stream lock: a reader queued, and whether a wakeup found it.
#[derive(Default)]
struct WaitQueue {
    queued: bool,
    woken: bool,
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

/// Give the token back (without the lock); if a reader waits, take the lock and wake it.
fn give_back<T: Token>(tok: &T, lock: &Mutex<WaitQueue>) {
    if tok.release() {
        let mut q = lock.lock().unwrap();
        if q.queued {
            q.woken = true;
        }
    }
}

/// A token held from the start, given back without the lock, against a reader that wants it.
fn token_model<T: Token>() {
    builder().check(|| {
        let tok = Arc::new(T::new());
        tok.hold();
        let lock = Arc::new(Mutex::new(WaitQueue::default()));
        let (t2, l2) = (tok.clone(), lock.clone());
        let holder = thread::spawn(move || give_back(&*t2, &l2));
        // Another reader, under the lock: take the token, or queue and sleep.
        {
            let mut q = lock.lock().unwrap();
            if !tok.free() {
                q.queued = true;
            }
        }
        holder.join().unwrap();
        let q = lock.lock().unwrap();
        assert!(!q.queued || q.woken, "lost wakeup");
    });
}

/// Two readers of a free token: each takes it under the lock (`free`, then the plain `hold`),
/// copies out without the lock and gives it back, or queues and sleeps. No two copy out at
/// once, and a reader that sleeps is woken.
fn two_readers_model<T: Token>() {
    builder().check(|| {
        let tok = Arc::new(T::new());
        let lock = Arc::new(Mutex::new(WaitQueue::default()));
        let copying = Arc::new(AtomicUsize::new(0));
        let reader = {
            let (tok, lock, copying) = (tok.clone(), lock.clone(), copying.clone());
            move || {
                {
                    let mut q = lock.lock().unwrap();
                    if !tok.free() {
                        q.queued = true;
                        return;
                    }
                    tok.hold();
                }
                // The copy-out, without the lock.
                assert_eq!(copying.fetch_add(1, Relaxed), 0, "two readers copy out");
                copying.fetch_sub(1, Relaxed);
                give_back(&*tok, &lock);
            }
        };
        let other = thread::spawn(reader.clone());
        reader();
        other.join().unwrap();
        let q = lock.lock().unwrap();
        assert!(!q.queued || q.woken, "lost wakeup");
    });
}

#[test]
fn g_token_waiter_is_always_woken() {
    token_model::<ReaderToken>();
}

#[test]
fn g_token_taken_under_the_lock_is_exclusive_and_wakes() {
    two_readers_model::<ReaderToken>();
}

#[test]
#[should_panic(expected = "lost wakeup")]
fn g_waiter_without_recheck_is_caught() {
    token_model::<Broken<NoRecheck>>();
}

#[test]
#[should_panic(expected = "lost wakeup")]
fn g_waiter_marking_with_load_then_store_is_caught() {
    token_model::<Broken<LoadThenStore>>();
}
