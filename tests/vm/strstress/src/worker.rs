//! A worker process: its table of open Streams, its threads of random operations and of
//! sequence-checked traffic, and a watchdog thread that interrupts (SIGUSR1) any thread that
//! has been in one system call for more than a few milliseconds, so that blocking reads,
//! writes, FIFO opens, I_STR and closes are both exercised and bounded.

use std::io;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::devices::Device;
use crate::shared::{Shared, Slot};
use crate::sys;
use crate::table::Table;

/// How long a thread may sleep in one call before the watchdog signals it.
const INTERRUPT_AFTER: Duration = Duration::from_millis(25);
/// `--faults`: EFAULT is expected from every call (set before the workers are forked).
pub(crate) static FAULTS: AtomicBool = AtomicBool::new(false);

/// Unexpected errnos printed per worker process (all are counted).
const MAX_REPORTS: u32 = 20;
/// EBADF diagnoses (`Ctx::diagnose_ebadf`) printed per worker process.
const MAX_DIAGNOSES: u32 = 3;

/// What a thread publishes for the watchdog.
#[derive(Default)]
pub(crate) struct ThreadState {
    tid: AtomicI32,
    /// Milliseconds since the worker started at which the current call began; 0: not in one.
    busy_since: AtomicU64,
}

/// The worker's configuration and shared state.
pub(crate) struct Ctx {
    pub(crate) sh: &'static Shared,
    pub(crate) slot: &'static Slot,
    pub(crate) worker: usize,
    pub(crate) table: Table,
    pub(crate) devices: Vec<Device>,
    pub(crate) modules: Vec<String>,
    pub(crate) attach: Vec<String>,
    pub(crate) max_size: usize,
    pub(crate) privileged: bool,
    /// Persistent links (I_PLINK) this worker made, for I_PUNLINK.
    pub(crate) plinks: Mutex<Vec<i32>>,
    pub(crate) threads: Vec<ThreadState>,
    /// The operations this run makes (indices into `ops::OPS`: all but `--skip`).
    pub(crate) ops: Vec<usize>,
    reports: AtomicU32,
    diagnoses: AtomicU32,
    start: Instant,
}

/// One thread's state: its random generator, buffers and uncommitted op count.
pub(crate) struct Th {
    pub(crate) rng: fastrand::Rng,
    pub(crate) idx: usize,
    pub(crate) buf: Vec<u8>,
    pub(crate) ctl: Vec<u8>,
    ops: u64,
}

impl Ctx {
    fn now_ms(&self) -> u64 {
        self.start.elapsed().as_millis() as u64 + 1
    }

    pub(crate) fn stopping(&self) -> bool {
        self.sh.stop.load(Ordering::Relaxed)
    }

    /// Make one system call `f` (operation `op`): counted, watched by the watchdog, and its
    /// errno checked against `allowed` (an errno outside it is reported and counted as a
    /// failure).
    pub(crate) fn call<T>(
        &self,
        th: &mut Th,
        op: &str,
        allowed: &[i32],
        f: impl FnOnce() -> io::Result<T>,
    ) -> io::Result<T> {
        let me = &self.threads[th.idx];
        me.busy_since.store(self.now_ms(), Ordering::Relaxed);
        let r = f();
        me.busy_since.store(0, Ordering::Relaxed);
        th.ops += 1;
        if th.ops >= 64 {
            self.flush(th);
        }
        if let Err(e) = &r {
            let n = sys::errno(e);
            if allowed.contains(&n) || (n == libc::EFAULT && FAULTS.load(Ordering::Relaxed)) {
                self.slot.expected_errors.fetch_add(1, Ordering::Relaxed);
            } else {
                self.unexpected(&format!("{op}: {} ({e})", sys::errno_name(n)));
                if n == libc::EBADF {
                    self.diagnose_ebadf(op);
                }
            }
        }
        r
    }

    /// Report a failure found in user space (unexpected errno, bad data).
    pub(crate) fn unexpected(&self, what: &str) {
        self.slot.unexpected.fetch_add(1, Ordering::Relaxed);
        if self.reports.fetch_add(1, Ordering::Relaxed) < MAX_REPORTS {
            eprintln!("strstress: worker {}: unexpected: {what}", self.worker);
        }
    }

    /// An unexpected EBADF (issue 14): say which entries answer EBADF and why (the
    /// descriptor, or the Stream head under an open descriptor), with each one's origin and
    /// history, for the first few per worker process.
    fn diagnose_ebadf(&self, op: &str) {
        if self.diagnoses.fetch_add(1, Ordering::Relaxed) >= MAX_DIAGNOSES {
            return;
        }
        let bad = self.table.diagnose();
        if bad.is_empty() {
            eprintln!(
                "strstress: worker {}: EBADF from {op}: no entry of the table answers EBADF now \
                 (the descriptor was not one of the table's, or the state passed)",
                self.worker
            );
        }
        for b in bad.iter().take(4) {
            eprintln!("strstress: worker {}: EBADF from {op}: {b}", self.worker);
        }
    }

    /// Add the thread's uncommitted ops to the shared counter.
    pub(crate) fn flush(&self, th: &mut Th) {
        self.slot.ops.fetch_add(th.ops, Ordering::Relaxed);
        th.ops = 0;
    }

    /// Thread `idx` has ended: the watchdog no longer signals it.
    pub(crate) fn leave(&self, idx: usize) {
        self.threads[idx].tid.store(0, Ordering::Relaxed);
    }

    /// Signal a random other thread of this process (the `signal` operation).
    pub(crate) fn signal_sibling(&self, th: &mut Th, sig: i32) {
        let i = th.rng.usize(..self.threads.len());
        let tid = self.threads[i].tid.load(Ordering::Relaxed);
        if tid != 0 {
            // SAFETY: getpid cannot fail.
            let pid = unsafe { libc::getpid() };
            let _ = self.call(th, "tgkill", &[libc::ESRCH], || sys::tgkill(pid, tid, sig));
        }
    }
}

/// The watchdog: interrupt calls that have slept too long, until the run stops.
fn watchdog(ctx: &Ctx) {
    // SAFETY: getpid cannot fail.
    let pid = unsafe { libc::getpid() };
    let limit = INTERRUPT_AFTER.as_millis() as u64;
    while !ctx.stopping() {
        std::thread::sleep(Duration::from_millis(5));
        let now = ctx.now_ms();
        for t in &ctx.threads {
            let since = t.busy_since.load(Ordering::Relaxed);
            let tid = t.tid.load(Ordering::Relaxed);
            if since != 0 && tid != 0 && now.saturating_sub(since) > limit {
                let _ = sys::tgkill(pid, tid, libc::SIGUSR1);
            }
        }
    }
    // At the stop, keep interrupting so that every thread notices it promptly.
    for _ in 0..2000 {
        let mut busy = false;
        for t in &ctx.threads {
            let tid = t.tid.load(Ordering::Relaxed);
            if tid != 0 {
                busy = true;
                let _ = sys::tgkill(pid, tid, libc::SIGUSR1);
            }
        }
        if !busy {
            return;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Worker settings from the command line.
pub(crate) struct Params {
    pub(crate) worker: usize,
    pub(crate) seed: u64,
    pub(crate) threads: usize,
    pub(crate) slots: usize,
    pub(crate) max_size: usize,
    pub(crate) unprivileged: bool,
    pub(crate) seq: bool,
    pub(crate) ops: Vec<usize>,
}

/// The body of a worker process; returns its exit status.
pub(crate) fn run(
    sh: &'static Shared,
    p: &Params,
    devices: Vec<Device>,
    modules: Vec<String>,
    attach: Vec<String>,
) -> i32 {
    if let Err(e) = sys::worker_signals() {
        eprintln!("strstress: worker {}: signals: {e}", p.worker);
        return 2;
    }
    if p.unprivileged {
        if let Err(e) = sys::drop_privileges() {
            eprintln!("strstress: worker {}: setuid 65534: {e}", p.worker);
            return 2;
        }
    }
    // Random threads, then the two threads of the sequence-checked channel.
    let nthreads = p.threads + if p.seq { 2 } else { 0 };
    let ctx = Arc::new(Ctx {
        sh,
        slot: &sh.slots[p.worker],
        worker: p.worker,
        table: Table::new(p.slots),
        devices,
        modules,
        attach,
        max_size: p.max_size,
        privileged: !p.unprivileged,
        plinks: Mutex::new(Vec::new()),
        threads: (0..nthreads).map(|_| ThreadState::default()).collect(),
        ops: p.ops.clone(),
        reports: AtomicU32::new(0),
        diagnoses: AtomicU32::new(0),
        start: Instant::now(),
    });
    let mut master = fastrand::Rng::with_seed(p.seed);
    let mut handles = Vec::new();
    for idx in 0..p.threads {
        let ctx = ctx.clone();
        let seed = master.u64(..);
        handles.push(std::thread::spawn(move || {
            let mut th = new_thread(&ctx, idx, seed);
            while !ctx.stopping() {
                crate::ops::one(&ctx, &mut th);
            }
            ctx.flush(&mut th);
            ctx.leave(idx);
        }));
    }
    if p.seq {
        let ctx = ctx.clone();
        let seed = master.u64(..);
        let idx = p.threads;
        handles.push(std::thread::spawn(move || {
            let mut th = new_thread(&ctx, idx, seed);
            crate::seq::run(&ctx, &mut th);
            ctx.flush(&mut th);
            ctx.leave(idx);
        }));
    }
    {
        let ctx = ctx.clone();
        handles.push(std::thread::spawn(move || watchdog(&ctx)));
    }
    for h in handles {
        if h.join().is_err() {
            ctx.unexpected("a thread panicked");
        }
    }
    ctx.table.clear();
    ctx.slot
        .sigpolls
        .fetch_add(sys::SIGPOLLS.load(Ordering::Relaxed), Ordering::Relaxed);
    0
}

/// Register the calling thread as thread `idx` of the worker.
pub(crate) fn new_thread(ctx: &Ctx, idx: usize, seed: u64) -> Th {
    ctx.threads[idx].tid.store(sys::gettid(), Ordering::Relaxed);
    Th {
        rng: fastrand::Rng::with_seed(seed),
        idx,
        buf: vec![0; ctx.max_size.max(65536)],
        ctl: vec![0; 8192],
        ops: 0,
    }
}
