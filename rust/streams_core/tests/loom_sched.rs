//! Loom models of the scheduling protocol (run: `RUSTFLAGS="--cfg loom" cargo test -p
//! streams_core --release --test loom_sched`).
//!
//! Loom runs each model under every thread interleaving (bounded by the preemption bound below)
//! with loom's own Mutex/Condvar/atomics — including the ones inside `SchedFlag` and the host
//! runners, which switch to loom's types under `cfg(loom)`. Models:
//! - (a) the scheduled flag: a producer enabling work races with a runner taking the Stream off
//!   the run list. No enable is lost, and a Stream is never on the run list twice (the run
//!   list has room for one entry and must never be full). The variant that clears the flag
//!   AFTER `runqueues` must be caught (`#[should_panic]`).
//! - (b) back-enable: a reader draining a full queue below its low-water mark vs. a writer that
//!   found it full and registered interest (QWANTW). The writer's message always gets through.
//!   The variant that tests QFULL and sets QWANTW in two lock holds must be caught, both for a
//!   writer that is a service procedure (re-run by qenable) and for a writer that sleeps.
//! - (c) the real `ThreadedRunner` with one worker and two producers.
#![cfg(loom)]

use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

use streams_core::sched::host::ThreadedRunner;
use streams_core::sched::{RunList, SchedFlag, Schedulable};

/// Run `f` under loom, bounding preemptions to 4 unless `LOOM_MAX_PREEMPTIONS` says otherwise:
/// the whole file then takes about ten seconds in release mode. (With
/// `LOOM_MAX_PREEMPTIONS=8`, exhaustive for these models, it passes in about 15 minutes.)
fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(4);
    }
    b.check(f);
}

// ---------------------------------------------------------------------------------------------
// (a) The scheduled-flag protocol.

/// One queue with a service procedure: `put` queues a message and enables it (QENAB once).
#[derive(Default)]
struct OneQueue {
    qenab: bool,
    pending: u32,
    serviced: u32,
}

impl OneQueue {
    fn put(&mut self) {
        self.pending += 1;
        self.qenab = true;
    }
}

impl Schedulable for OneQueue {
    fn runqueues(&mut self) -> usize {
        if !self.qenab {
            return 0;
        }
        self.qenab = false;
        self.serviced += core::mem::take(&mut self.pending);
        1
    }
    fn has_enabled(&self) -> bool {
        self.qenab
    }
}

/// A Stream (stream lock + scheduled flag) and a global run list with room for it once.
struct World {
    flag: SchedFlag,
    stream: Mutex<OneQueue>,
    runlist: Mutex<RunList<()>>,
}

impl World {
    /// A Stream with one message enabled and already on the run list.
    fn scheduled_with_one_message() -> Arc<World> {
        let mut q = OneQueue::default();
        q.put();
        let w = World {
            flag: SchedFlag::new(),
            stream: Mutex::new(q),
            runlist: Mutex::new(RunList::with_capacity(1).unwrap()),
        };
        assert!(w.flag.schedule_if_enabled(&*w.stream.lock().unwrap()));
        w.runlist.lock().unwrap().push(()).unwrap();
        Arc::new(w)
    }

    /// The platform after an operation: schedule if enabled; only the flag's winner enqueues.
    fn put_and_schedule(&self) {
        let enqueue = {
            let mut s = self.stream.lock().unwrap();
            s.put();
            self.flag.schedule_if_enabled(&*s)
        };
        if enqueue {
            // Capacity 1: a second entry for the same Stream would not fit.
            assert!(
                self.runlist.lock().unwrap().push(()).is_ok(),
                "Stream queued twice"
            );
        }
    }

    fn take(&self) -> bool {
        self.runlist.lock().unwrap().pop().is_some()
    }

    /// The runner, correct: flag cleared before the stream lock is taken.
    fn run_correct(&self) {
        self.flag.run(|| self.stream.lock().unwrap());
    }

    /// The runner, wrong: flag cleared after `runqueues` and the stream lock are done.
    fn run_clear_after(&self) {
        self.stream.lock().unwrap().runqueues();
        self.flag.begin_run();
    }

    /// After all threads: a later runner drains the run list. Nothing may be left enabled.
    fn final_drain_and_check(&self, puts: u32) {
        while self.take() {
            self.run_correct();
        }
        let s = self.stream.lock().unwrap();
        assert!(
            !s.has_enabled(),
            "lost wakeup: enabled work that no run will service"
        );
        assert_eq!(s.serviced, puts);
        assert!(!self.flag.is_scheduled());
    }
}

fn flag_model(run: fn(&World)) {
    model(move || {
        let w = World::scheduled_with_one_message();
        let producer = {
            let w = w.clone();
            thread::spawn(move || {
                w.put_and_schedule();
                w.put_and_schedule();
            })
        };
        // The runner: take whatever is on the run list, twice.
        for _ in 0..2 {
            if w.take() {
                run(&w);
            }
        }
        producer.join().unwrap();
        w.final_drain_and_check(3);
    });
}

#[test]
fn a_flag_cleared_before_run_loses_no_wakeup() {
    flag_model(World::run_correct);
}

#[test]
#[should_panic(expected = "lost wakeup")]
fn a_flag_cleared_after_run_loses_wakeups() {
    flag_model(World::run_clear_after);
}

#[test]
fn a_two_producers_two_runners() {
    model(|| {
        let w = World::scheduled_with_one_message();
        let mut ts = Vec::new();
        for _ in 0..2 {
            let w = w.clone();
            ts.push(thread::spawn(move || w.put_and_schedule()));
        }
        let w2 = w.clone();
        ts.push(thread::spawn(move || {
            if w2.take() {
                w2.run_correct();
            }
        }));
        if w.take() {
            w.run_correct();
        }
        for t in ts {
            t.join().unwrap();
        }
        w.final_drain_and_check(3);
    });
}

// ---------------------------------------------------------------------------------------------
// (b) Back-enable.

const HIWAT: u32 = 2;
const LOWAT: u32 = 1;

/// The reader's queue (count, QFULL, QWANTW) and the writer's queue (one held message, QENAB),
/// under one lock.
struct Pipe {
    count: u32,
    qfull: bool,
    qwantw: bool,
    /// Messages the writer still has to pass on (held on its own queue by putbq).
    held: u32,
    /// The writer's queue is enabled (back-enabled).
    wq_enab: bool,
    /// The writer is a sleeping Stream-head writer, not a service procedure: back-enable
    /// wakes it instead of enabling its queue.
    writer_sleeps: bool,
    /// Mock wait queue: the writer is asleep / was woken (used by the `waitq_*` writers).
    asleep: bool,
    woken: bool,
}

impl Pipe {
    /// The reader's queue is full (QFULL) and the writer holds one message for it.
    fn full(writer_sleeps: bool) -> Pipe {
        Pipe {
            count: HIWAT,
            qfull: true,
            qwantw: false,
            held: 1,
            wq_enab: false,
            writer_sleeps,
            asleep: false,
            woken: false,
        }
    }

    /// putq on the reader's queue: sets QFULL at the high-water mark.
    fn putq(&mut self) {
        self.held -= 1;
        self.count += 1;
        if self.count >= HIWAT {
            self.qfull = true;
        }
    }

    /// getq on the reader's queue: clears QFULL below the high-water mark and, at or below the
    /// low-water mark, clears QWANTW and back-enables the writer. Returns whether it did.
    fn getq(&mut self) -> bool {
        if self.count > 0 {
            self.count -= 1;
        }
        if self.count < HIWAT {
            self.qfull = false;
        }
        if self.count <= LOWAT && self.qwantw {
            self.qwantw = false;
            if !self.writer_sleeps {
                self.wq_enab = true;
            } else if self.asleep {
                // wake_up(): wakes only a writer that is already on the wait queue.
                self.asleep = false;
                self.woken = true;
            }
            return true;
        }
        false
    }

    /// The writer's service procedure in one lock hold: canput sets QWANTW when it fails.
    fn writer_srv(&mut self) {
        if self.held > 0 {
            if self.qfull {
                self.qwantw = true; // and putbq: keep the message
            } else {
                self.putq();
            }
        }
    }
}

impl Schedulable for Pipe {
    fn runqueues(&mut self) -> usize {
        if !self.wq_enab {
            return 0;
        }
        self.wq_enab = false;
        self.writer_srv();
        1
    }
    fn has_enabled(&self) -> bool {
        self.wq_enab
    }
}

struct PipeWorld {
    flag: SchedFlag,
    pipe: Mutex<Pipe>,
    runlist: Mutex<RunList<()>>,
    /// Sleeping writers (the Stream head's write side) wait here for the back-enable.
    wake: Condvar,
}

impl PipeWorld {
    fn new(writer_sleeps: bool) -> Arc<PipeWorld> {
        Arc::new(PipeWorld {
            flag: SchedFlag::new(),
            pipe: Mutex::new(Pipe::full(writer_sleeps)),
            runlist: Mutex::new(RunList::with_capacity(1).unwrap()),
            wake: Condvar::new(),
        })
    }

    /// The reader's service procedure: drain the queue, back-enabling as it goes, with the
    /// platform's schedule-if-enabled after each lock hold.
    fn reader(&self) {
        for _ in 0..HIWAT {
            let (back_enabled, enqueue) = {
                let mut p = self.pipe.lock().unwrap();
                let b = p.getq();
                (b, self.flag.schedule_if_enabled(&*p))
            };
            if enqueue {
                assert!(
                    self.runlist.lock().unwrap().push(()).is_ok(),
                    "Stream queued twice"
                );
            }
            if back_enabled {
                // A writer asleep on the Stream head is woken instead of (or besides) qenable.
                self.wake.notify_all();
            }
        }
    }

    fn final_drain_and_check(&self) {
        while self.runlist.lock().unwrap().pop().is_some() {
            self.flag.run(|| self.pipe.lock().unwrap());
        }
        let mut p = self.pipe.lock().unwrap();
        if p.woken {
            // The woken writer runs again and retries its write.
            p.woken = false;
            p.writer_srv();
        }
        assert_eq!(p.held, 0, "writer left waiting forever: lost back-enable");
        assert_eq!(p.count, 1);
        assert!(!p.has_enabled());
    }
}

fn back_enable_model(writer_sleeps: bool, writer: fn(&PipeWorld)) {
    model(move || {
        let w = PipeWorld::new(writer_sleeps);
        let reader = {
            let w = w.clone();
            thread::spawn(move || w.reader())
        };
        writer(&w);
        reader.join().unwrap();
        w.final_drain_and_check();
    });
}

/// Correct: QFULL tested and QWANTW set in the same lock hold.
fn srv_writer_one_hold(w: &PipeWorld) {
    w.pipe.lock().unwrap().writer_srv();
}

/// Wrong: QFULL tested in one hold, QWANTW set in another (a reader may drain in between and
/// see no QWANTW, so nobody ever back-enables the writer).
fn srv_writer_split(w: &PipeWorld) {
    let full = w.pipe.lock().unwrap().qfull;
    let mut p = w.pipe.lock().unwrap();
    if full {
        p.qwantw = true;
    } else {
        p.putq();
    }
}

/// Correct sleeping writer: the condition is re-tested, QWANTW set and the sleep begun, all
/// under the lock (`Condvar::wait` releases it atomically).
fn sleeping_writer(w: &PipeWorld) {
    let mut p = w.pipe.lock().unwrap();
    while p.qfull {
        p.qwantw = true;
        p = w.wake.wait(p).unwrap();
    }
    p.putq();
}

/// Correct sleeping writer on a mock wait queue: QWANTW set and the writer on the wait queue
/// (prepare_to_wait) in the same lock hold as the QFULL test.
fn waitq_writer(w: &PipeWorld) {
    let mut p = w.pipe.lock().unwrap();
    if p.qfull {
        p.qwantw = true;
        p.asleep = true;
    } else {
        p.putq();
    }
}

/// Wrong sleeping writer: QWANTW set in one hold, onto the wait queue in the next. A drain in
/// between wakes nobody, and the writer then sleeps forever. (A real `Condvar` version of this
/// bug makes loom report a deadlock, which aborts instead of unwinding, so it cannot be a
/// `should_panic` test; the mock wait queue shows the same lost wakeup as an assertion.)
fn waitq_writer_split(w: &PipeWorld) {
    {
        let mut p = w.pipe.lock().unwrap();
        if !p.qfull {
            p.putq();
            return;
        }
        p.qwantw = true;
    }
    w.pipe.lock().unwrap().asleep = true;
}

#[test]
fn b_back_enable_srv_writer_never_stranded() {
    back_enable_model(false, srv_writer_one_hold);
}

#[test]
#[should_panic(expected = "lost back-enable")]
fn b_back_enable_split_test_and_set_is_caught() {
    back_enable_model(false, srv_writer_split);
}

#[test]
fn b_back_enable_sleeping_writer_wakes() {
    back_enable_model(true, sleeping_writer);
}

#[test]
fn b_back_enable_waitq_writer_wakes() {
    back_enable_model(true, waitq_writer);
}

#[test]
#[should_panic(expected = "lost back-enable")]
fn b_back_enable_waitq_split_is_caught() {
    back_enable_model(true, waitq_writer_split);
}

// ---------------------------------------------------------------------------------------------
// (c) The real threaded runner.

#[test]
fn c_threaded_runner_services_concurrent_enables() {
    model(|| {
        let r = Arc::new(ThreadedRunner::new(1).unwrap());
        let h = r.register(OneQueue::default()).unwrap();
        let producer = {
            let (r, h) = (r.clone(), h.clone());
            thread::spawn(move || r.with(&h, |s| s.put()))
        };
        r.with(&h, |s| s.put());
        producer.join().unwrap();
        let serviced = r.quiesce();
        let s = h.lock();
        assert_eq!(s.serviced, 2, "a message was not serviced");
        assert!(!s.has_enabled());
        assert!((1..=2).contains(&serviced));
        assert!(!h.is_scheduled());
        drop(s);
        drop(r); // stops and joins the worker
    });
}
