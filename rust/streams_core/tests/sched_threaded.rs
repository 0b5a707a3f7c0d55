//! The threaded host runner under load: many producers enabling work on a few Streams at once.
//! Every enable is serviced, no two operations on one Stream overlap, messages are conserved.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;

use streams_core::sched::host::ThreadedRunner;
use streams_core::sched::Schedulable;

const NQ: usize = 4;

/// A Stream stand-in that records overlap: `active` counts code inside the Stream (puts and
/// service runs); the stream lock must keep it at one.
struct Mock {
    qenab: [bool; NQ],
    runlist: Vec<usize>,
    pending: [u64; NQ],
    serviced: u64,
    enables: u64,
    srv_runs: u64,
    active: Arc<AtomicUsize>,
    overlaps: Arc<AtomicUsize>,
}

impl Mock {
    fn new(overlaps: Arc<AtomicUsize>) -> Self {
        Mock {
            qenab: [false; NQ],
            runlist: Vec::new(),
            pending: [0; NQ],
            serviced: 0,
            enables: 0,
            srv_runs: 0,
            active: Arc::new(AtomicUsize::new(0)),
            overlaps,
        }
    }

    fn enter(&self) {
        if self.active.fetch_add(1, Ordering::SeqCst) != 0 {
            self.overlaps.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn leave(&self) {
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    fn put(&mut self, q: usize) {
        self.enter();
        self.pending[q] += 1;
        if !self.qenab[q] {
            self.qenab[q] = true;
            self.runlist.push(q);
            self.enables += 1;
        }
        thread::yield_now();
        self.leave();
    }
}

impl Schedulable for Mock {
    fn runqueues(&mut self) -> usize {
        self.enter();
        let mut n = 0;
        while !self.runlist.is_empty() {
            let q = self.runlist.remove(0);
            self.qenab[q] = false;
            self.serviced += std::mem::take(&mut self.pending[q]);
            self.srv_runs += 1;
            n += 1;
            thread::yield_now();
        }
        self.leave();
        n
    }

    fn has_enabled(&self) -> bool {
        !self.runlist.is_empty()
    }
}

fn load(workers: usize, streams: usize, producers: usize, puts: usize) {
    let overlaps = Arc::new(AtomicUsize::new(0));
    let r = Arc::new(ThreadedRunner::new(workers).unwrap());
    let hs: Vec<_> = (0..streams)
        .map(|_| r.register(Mock::new(overlaps.clone())).unwrap())
        .collect();
    let hs = Arc::new(hs);
    let ts: Vec<_> = (0..producers)
        .map(|p| {
            let (r, hs) = (r.clone(), hs.clone());
            thread::spawn(move || {
                for i in 0..puts {
                    let h = &hs[(p + i) % hs.len()];
                    r.with(h, |s| s.put((p * 7 + i) % NQ));
                }
            })
        })
        .collect();
    for t in ts {
        t.join().unwrap();
    }
    let serviced = r.quiesce();
    let mut total_msgs = 0;
    let mut total_enables = 0;
    for h in hs.iter() {
        let s = h.lock();
        assert!(!s.has_enabled(), "enabled work left unserviced");
        assert!(!h.is_scheduled());
        assert_eq!(s.pending, [0; NQ], "messages left on queues");
        // Every qenable led to exactly one service procedure run.
        assert_eq!(s.enables, s.srv_runs);
        total_msgs += s.serviced;
        total_enables += s.enables;
    }
    assert_eq!(total_msgs, (producers * puts) as u64, "messages conserved");
    assert_eq!(serviced as u64, total_enables);
    assert_eq!(
        overlaps.load(Ordering::SeqCst),
        0,
        "put and service overlapped on a Stream"
    );
    drop(hs);
    let r = Arc::try_unwrap(r).ok().unwrap();
    assert_eq!(r.shutdown() as u64, total_enables);
}

#[test]
fn many_producers_one_stream_one_worker() {
    load(1, 1, 4, 2000);
}

#[test]
fn many_producers_one_stream_many_workers() {
    load(4, 1, 4, 2000);
}

#[test]
fn many_producers_many_streams_many_workers() {
    load(3, 8, 6, 2000);
}

#[test]
fn more_workers_than_streams() {
    load(8, 2, 3, 1000);
}

#[test]
fn quiesce_on_idle_runner_returns_at_once() {
    let r: ThreadedRunner<Mock> = ThreadedRunner::new(2).unwrap();
    assert_eq!(r.quiesce(), 0);
    assert_eq!(r.runs(), 0);
    assert_eq!(r.shutdown(), 0);
}

#[test]
fn shutdown_finishes_scheduled_work() {
    let overlaps = Arc::new(AtomicUsize::new(0));
    let r = ThreadedRunner::new(2).unwrap();
    let hs: Vec<_> = (0..3)
        .map(|_| r.register(Mock::new(overlaps.clone())).unwrap())
        .collect();
    for (i, h) in hs.iter().enumerate() {
        for q in 0..=i {
            r.with(h, |s| s.put(q));
        }
    }
    assert_eq!(r.shutdown(), 1 + 2 + 3);
    for h in &hs {
        assert!(!h.lock().has_enabled());
    }
}

#[test]
fn dropping_runner_joins_workers() {
    let overlaps = Arc::new(AtomicUsize::new(0));
    let h = {
        let r = ThreadedRunner::new(3).unwrap();
        let h = r.register(Mock::new(overlaps)).unwrap();
        r.with(&h, |s| s.put(1));
        r.quiesce();
        h
    };
    // The runner is gone; the Stream outlives it and its work was done.
    assert_eq!(h.lock().serviced, 1);
    assert!(!h.is_scheduled());
}
