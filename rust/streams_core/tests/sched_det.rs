//! The deterministic host runner: FIFO order across Streams, each Stream queued once, enables
//! during and after a run picked up, reproducibility.

use streams_core::sched::host::DetRunner;
use streams_core::sched::Schedulable;

/// A Stream stand-in: queues with a QENAB flag and a pending-message count; service procedure
/// `q` consumes its queue's messages and may forward one to another queue (`chain`).
#[derive(Default)]
struct Mock {
    name: u8,
    qenab: [bool; 4],
    runlist: Vec<usize>,
    pending: [u32; 4],
    chain: [Option<usize>; 4],
    /// (stream name, queue) for each service procedure run, shared across Streams via the log.
    log: Vec<(u8, usize)>,
    serviced_msgs: u32,
}

impl Mock {
    fn named(name: u8) -> Self {
        Mock {
            name,
            ..Default::default()
        }
    }

    /// putq + qenable (QENAB once).
    fn put(&mut self, q: usize) {
        self.pending[q] += 1;
        if !self.qenab[q] {
            self.qenab[q] = true;
            self.runlist.push(q);
        }
    }
}

impl Schedulable for Mock {
    fn runqueues(&mut self) -> usize {
        let mut n = 0;
        while !self.runlist.is_empty() {
            let q = self.runlist.remove(0);
            self.qenab[q] = false;
            let msgs = std::mem::take(&mut self.pending[q]);
            self.serviced_msgs += msgs;
            self.log.push((self.name, q));
            n += 1;
            if let (Some(next), true) = (self.chain[q], msgs > 0) {
                self.put(next);
            }
        }
        n
    }

    fn has_enabled(&self) -> bool {
        !self.runlist.is_empty()
    }
}

#[test]
fn register_idle_stream_is_not_scheduled() {
    let mut r = DetRunner::new();
    let h = r.register(Mock::named(1)).unwrap();
    assert_eq!(h.id(), 0);
    assert!(!h.is_scheduled());
    assert_eq!(r.pending(), 0);
    assert_eq!(r.run_until_idle(), 0);
    assert_eq!(r.runs(), 0);
}

#[test]
fn register_with_enabled_work_schedules_it() {
    let mut r = DetRunner::new();
    let mut m = Mock::named(1);
    m.put(2);
    let h = r.register(m).unwrap();
    assert!(h.is_scheduled());
    assert_eq!(r.pending(), 1);
    assert_eq!(r.run_until_idle(), 1);
    assert_eq!(h.lock().serviced_msgs, 1);
}

#[test]
fn streams_run_in_fifo_order_of_scheduling() {
    let mut r = DetRunner::new();
    let hs: Vec<_> = (0..4)
        .map(|i| r.register(Mock::named(i)).unwrap())
        .collect();
    // Schedule in the order 2, 0, 3, 1.
    for &i in &[2usize, 0, 3, 1] {
        r.with(&hs[i], |s| s.put(0));
    }
    assert_eq!(r.pending(), 4);
    let mut order = Vec::new();
    while let Some(id) = r.next_id() {
        order.push(id);
        assert_eq!(r.run_one(), Some(1));
    }
    assert_eq!(order, vec![2, 0, 3, 1]);
    assert_eq!(r.run_one(), None);
}

#[test]
fn stream_is_queued_once_however_often_enabled() {
    let mut r = DetRunner::new();
    let a = r.register(Mock::named(0)).unwrap();
    let b = r.register(Mock::named(1)).unwrap();
    for _ in 0..10 {
        r.with(&a, |s| {
            s.put(0);
            s.put(1);
        });
        r.with(&b, |s| s.put(3));
    }
    assert_eq!(r.pending(), 2);
    assert!(!r.schedule(&a), "already on the run list");
    // One run per Stream, each running every enabled queue once, servicing every message.
    assert_eq!(r.run_until_idle(), 3);
    assert_eq!(r.runs(), 2);
    assert_eq!(a.lock().serviced_msgs, 20);
    assert_eq!(b.lock().serviced_msgs, 10);
    assert_eq!(a.lock().log, vec![(0, 0), (0, 1)]);
}

#[test]
fn enable_after_run_reschedules() {
    let mut r = DetRunner::new();
    let a = r.register(Mock::named(0)).unwrap();
    r.with(&a, |s| s.put(1));
    assert_eq!(r.run_until_idle(), 1);
    assert!(!a.is_scheduled());
    r.with(&a, |s| s.put(1));
    assert!(a.is_scheduled());
    assert_eq!(r.run_until_idle(), 1);
    assert_eq!(a.lock().serviced_msgs, 2);
    assert_eq!(r.serviced(), 2);
}

#[test]
fn service_chain_runs_within_one_run() {
    let mut r = DetRunner::new();
    let mut m = Mock::named(0);
    m.chain = [Some(1), Some(2), Some(3), None];
    let a = r.register(m).unwrap();
    r.with(&a, |s| s.put(0));
    assert_eq!(r.run_until_idle(), 4);
    assert_eq!(r.runs(), 1);
    let s = a.lock();
    assert_eq!(s.log, vec![(0, 0), (0, 1), (0, 2), (0, 3)]);
    assert_eq!(s.serviced_msgs, 4);
}

#[test]
fn schedule_without_work_does_nothing() {
    let mut r = DetRunner::new();
    let a = r.register(Mock::named(0)).unwrap();
    // Enable work behind the runner's back (plain lock), then tell it.
    a.lock().put(2);
    assert!(!a.is_scheduled());
    assert!(r.schedule(&a));
    assert!(!r.schedule(&a));
    assert_eq!(r.run_until_idle(), 1);
    assert!(!r.schedule(&a));
    assert_eq!(r.pending(), 0);
}

#[test]
fn runs_are_reproducible() {
    /// (Stream run, service procedures it ran), in the order the runner ran them.
    fn scenario() -> Vec<(u8, usize)> {
        let mut trace = Vec::new();
        let mut r = DetRunner::new();
        let hs: Vec<_> = (0..5)
            .map(|i| r.register(Mock::named(i)).unwrap())
            .collect();
        let mut x: u32 = 12345;
        for _ in 0..200 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            let s = (x >> 8) as usize % hs.len();
            let q = (x >> 16) as usize % 4;
            r.with(&hs[s], |m| m.put(q));
            if (x >> 4) & 7 == 0 {
                trace.push((r.next_id().unwrap_or(99) as u8, r.run_one().unwrap_or(0)));
            }
        }
        while let Some(id) = r.next_id() {
            trace.push((id as u8, r.run_one().unwrap_or(0)));
        }
        for h in &hs {
            assert!(!h.lock().has_enabled());
        }
        trace
    }
    let a = scenario();
    assert!(!a.is_empty());
    assert_eq!(a, scenario());
}

/// A Stream whose `runqueues` runs at most one service procedure per call (a budget): the
/// runner must re-queue it behind the others rather than strand the rest of its work.
struct Budgeted {
    left: usize,
}

impl Schedulable for Budgeted {
    fn runqueues(&mut self) -> usize {
        if self.left > 0 {
            self.left -= 1;
            1
        } else {
            0
        }
    }
    fn has_enabled(&self) -> bool {
        self.left > 0
    }
}

#[test]
fn stream_left_enabled_by_its_run_is_requeued_at_tail() {
    let mut r = DetRunner::new();
    let a = r.register(Budgeted { left: 3 }).unwrap();
    let b = r.register(Budgeted { left: 1 }).unwrap();
    assert_eq!(r.pending(), 2);
    assert_eq!(r.next_id(), Some(a.id()));
    assert_eq!(r.run_one(), Some(1));
    // a still has work: it went behind b.
    assert_eq!(r.next_id(), Some(b.id()));
    assert_eq!(r.run_until_idle(), 3);
    assert_eq!(r.serviced(), 4);
    assert_eq!(r.runs(), 4);
    assert!(!a.is_scheduled() && !b.is_scheduled());
}
