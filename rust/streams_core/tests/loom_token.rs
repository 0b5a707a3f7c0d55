//! Loom model of the Stream head's reader token (`sth/take.rs`): a reader that finds the token
//! held and goes to sleep (queued on the head's wait queue before it drops the Stream lock) is
//! always woken when the holder gives the token back *without* the lock.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p streams_core --release --test loom_token`.
//!
//! The real `ReaderToken` runs against a holder that releases it; a token whose waiter marks
//! itself but does not test `held` again afterwards is caught losing the wakeup.
#![cfg(loom)]

use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};
use loom::sync::{Arc, Mutex};
use loom::thread;

use streams_core::sth::ReaderToken;

/// What the model needs of a token.
trait Token: Send + Sync + 'static {
    fn held() -> Self;
    fn free(&self) -> bool;
    fn release(&self) -> bool;
}

impl Token for ReaderToken {
    fn held() -> Self {
        let t = ReaderToken::new();
        t.hold();
        t
    }
    fn free(&self) -> bool {
        ReaderToken::free(self)
    }
    fn release(&self) -> bool {
        ReaderToken::release(self)
    }
}

/// The negative case: the waiter marks `wanted` but trusts its first look at `held`.
struct NoRecheck {
    held: AtomicBool,
    wanted: AtomicBool,
}

impl Token for NoRecheck {
    fn held() -> Self {
        NoRecheck {
            held: AtomicBool::new(true),
            wanted: AtomicBool::new(false),
        }
    }
    fn free(&self) -> bool {
        if !self.held.load(SeqCst) {
            return true;
        }
        self.wanted.store(true, SeqCst);
        false
    }
    fn release(&self) -> bool {
        self.held.store(false, SeqCst);
        self.wanted.swap(false, SeqCst)
    }
}

/// The head's wait queue, under the Stream lock: a reader queued, and whether a wakeup found it.
#[derive(Default)]
struct WaitQueue {
    queued: bool,
    woken: bool,
}

fn token_model<T: Token>() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        let tok = Arc::new(T::held());
        let lock = Arc::new(Mutex::new(WaitQueue::default()));
        let (t2, l2) = (tok.clone(), lock.clone());
        // The holder copies out without the lock, then gives the token back; if a reader waits,
        // it takes the lock and wakes the head's readers.
        let holder = thread::spawn(move || {
            if t2.release() {
                let mut q = l2.lock().unwrap();
                if q.queued {
                    q.woken = true;
                }
            }
        });
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

#[test]
fn g_token_waiter_is_always_woken() {
    token_model::<ReaderToken>();
}

#[test]
#[should_panic(expected = "lost wakeup")]
fn g_waiter_without_recheck_is_caught() {
    token_model::<NoRecheck>();
}
