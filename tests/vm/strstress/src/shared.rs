//! Counters shared by the orchestrator and every worker process (an anonymous shared mapping
//! made before the first fork): each worker adds to its slot, the orchestrator sums them.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Worker slots (the largest `-p`).
pub(crate) const MAX_WORKERS: usize = 64;

/// One worker's counters; a respawned worker keeps adding to the slot of the one it replaces.
#[derive(Default)]
pub(crate) struct Slot {
    /// System calls made (every operation counts its calls).
    pub(crate) ops: AtomicU64,
    /// Calls that returned an errno of their expected set.
    pub(crate) expected_errors: AtomicU64,
    /// Calls that returned an errno outside their set (a failure).
    pub(crate) unexpected: AtomicU64,
    /// Sequence-checked messages received in order, exactly once.
    pub(crate) seq_msgs: AtomicU64,
    /// Sequence-checked rounds completed (every message of the round verified).
    pub(crate) seq_rounds: AtomicU64,
    /// Sequence check failures (a message lost, duplicated, reordered or corrupted).
    pub(crate) seq_failures: AtomicU64,
    /// Processes forked by the `fork` operation.
    pub(crate) forks: AtomicU64,
    /// SIGPOLLs received (I_SETSIG).
    pub(crate) sigpolls: AtomicU64,
}

/// Everything shared.
pub(crate) struct Shared {
    /// Set by the orchestrator: workers finish their current operation and exit.
    pub(crate) stop: AtomicBool,
    pub(crate) slots: [Slot; MAX_WORKERS],
}

/// A sum over the slots.
pub(crate) fn total(sh: &Shared, f: impl Fn(&Slot) -> &AtomicU64) -> u64 {
    sh.slots.iter().map(|s| f(s).load(Ordering::Relaxed)).sum()
}
