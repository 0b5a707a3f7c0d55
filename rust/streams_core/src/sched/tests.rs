//! Shared (host + KUnit) cases for the scheduler: the scheduled-flag protocol and the run list.
//!
//! A `MockStream` stands in for a Stream: a QENAB-once run list of up to eight queues whose
//! service procedures may enable another queue of the same Stream (as a module's srv does when
//! it `putnext`s into a queue with a service procedure).

use super::{RunList, SchedFlag, Schedulable};
use crate::sys::{fault, NoMem};
use crate::{check, check_eq, check_ok, check_some, ktest::TestResult, ktest_suite};

const NQ: usize = 8;

/// A Stream stand-in: queue `q` is enabled at most once until its service procedure runs.
struct MockStream {
    /// Per queue: enabled (QENAB).
    qenab: [bool; NQ],
    /// The Stream's run list, in qenable order.
    order: [u8; NQ],
    nenabled: usize,
    /// Per queue: which queue its service procedure enables, if any.
    chain: [Option<u8>; NQ],
    /// Service procedures run, in order.
    ran: [u8; 16],
    nran: usize,
}

impl MockStream {
    fn new() -> Self {
        MockStream {
            qenab: [false; NQ],
            order: [0; NQ],
            nenabled: 0,
            chain: [None; NQ],
            ran: [0; 16],
            nran: 0,
        }
    }

    /// `qenable(q)`: false if `q` was already enabled (QENAB) or out of range.
    fn qenable(&mut self, q: u8) -> bool {
        let Some(flag) = self.qenab.get_mut(usize::from(q)) else {
            return false;
        };
        if *flag {
            return false;
        }
        let Some(slot) = self.order.get_mut(self.nenabled) else {
            return false;
        };
        *flag = true;
        *slot = q;
        self.nenabled += 1;
        true
    }

    fn ran(&self) -> &[u8] {
        self.ran.get(..self.nran).unwrap_or(&[])
    }
}

impl Schedulable for MockStream {
    fn runqueues(&mut self) -> usize {
        let mut n = 0;
        while self.nenabled > 0 {
            let q = self.order.first().copied().unwrap_or(0);
            self.order.copy_within(1.., 0);
            self.nenabled -= 1;
            if let Some(flag) = self.qenab.get_mut(usize::from(q)) {
                *flag = false;
            }
            if let Some(slot) = self.ran.get_mut(self.nran) {
                *slot = q;
                self.nran += 1;
            }
            n += 1;
            if let Some(&Some(next)) = self.chain.get(usize::from(q)) {
                self.qenable(next);
            }
        }
        n
    }

    fn has_enabled(&self) -> bool {
        self.nenabled > 0
    }
}

fn flag_starts_clear() -> TestResult {
    let f = SchedFlag::new();
    check!(!f.is_scheduled());
    check!(!SchedFlag::default().is_scheduled());
    Ok(())
}

fn try_schedule_succeeds_once() -> TestResult {
    let f = SchedFlag::new();
    check!(f.try_schedule());
    check!(f.is_scheduled());
    check!(!f.try_schedule());
    check!(!f.try_schedule());
    check!(f.is_scheduled());
    Ok(())
}

fn begin_run_clears_and_reports() -> TestResult {
    let f = SchedFlag::new();
    check!(!f.begin_run());
    check!(f.try_schedule());
    check!(f.begin_run());
    check!(!f.is_scheduled());
    check!(!f.begin_run());
    Ok(())
}

fn reschedule_after_begin_run() -> TestResult {
    let f = SchedFlag::new();
    check!(f.try_schedule());
    f.begin_run();
    check!(f.try_schedule());
    check!(!f.try_schedule());
    Ok(())
}

fn schedule_if_enabled_needs_work() -> TestResult {
    let f = SchedFlag::new();
    let mut s = MockStream::new();
    check!(!f.schedule_if_enabled(&s));
    check!(!f.is_scheduled());
    check!(s.qenable(3));
    check!(f.schedule_if_enabled(&s));
    check!(f.is_scheduled());
    // More work on an already scheduled Stream does not schedule it twice.
    check!(s.qenable(4));
    check!(!f.schedule_if_enabled(&s));
    Ok(())
}

fn run_drains_in_qenable_order() -> TestResult {
    let f = SchedFlag::new();
    let mut s = MockStream::new();
    check!(s.qenable(5));
    check!(s.qenable(1));
    check!(!s.qenable(5)); // QENAB: already on the Stream's run list
    check!(s.qenable(2));
    check!(f.schedule_if_enabled(&s));
    let n = f.run(|| &mut s);
    check_eq!(n, 3);
    check_eq!(s.ran(), &[5u8, 1, 2][..]);
    check!(!s.has_enabled());
    check!(!f.is_scheduled());
    Ok(())
}

fn run_follows_enables_made_by_service() -> TestResult {
    let f = SchedFlag::new();
    let mut s = MockStream::new();
    // srv(0) enables 1, srv(1) enables 2: one run services the whole chain.
    s.chain[0] = Some(1);
    s.chain[1] = Some(2);
    check!(s.qenable(0));
    check!(s.qenable(7));
    check!(f.try_schedule());
    check_eq!(f.run(|| &mut s), 4);
    check_eq!(s.ran(), &[0u8, 7, 1, 2][..]);
    check!(!s.has_enabled());
    Ok(())
}

fn run_clears_flag_before_locking() -> TestResult {
    let f = SchedFlag::new();
    let mut s = MockStream::new();
    check!(s.qenable(0));
    check!(f.schedule_if_enabled(&s));
    let mut seen_scheduled = true;
    let n = f.run(|| {
        // "Taking the stream lock": the flag must already be clear, so that an enable racing
        // with this run schedules the Stream again instead of being lost.
        seen_scheduled = f.is_scheduled();
        &mut s
    });
    check_eq!(n, 1);
    check!(!seen_scheduled);
    Ok(())
}

fn enable_during_run_reschedules() -> TestResult {
    let f = SchedFlag::new();
    let mut s = MockStream::new();
    check!(s.qenable(0));
    check!(f.schedule_if_enabled(&s));
    let mut rescheduled = false;
    let n = f.run(|| {
        // Another CPU enabled work just as the runner took the Stream: it may schedule again.
        rescheduled = f.try_schedule();
        &mut s
    });
    check_eq!(n, 1);
    check!(rescheduled);
    check!(f.is_scheduled());
    Ok(())
}

fn runlist_is_fifo() -> TestResult {
    let mut l = check_ok!(RunList::with_capacity(4));
    check!(l.is_empty());
    check_eq!(l.capacity(), 4);
    check_eq!(l.push(10u32), Ok(()));
    check_eq!(l.push(20), Ok(()));
    check_eq!(l.push(30), Ok(()));
    check_eq!(l.len(), 3);
    check_eq!(l.peek(), Some(&10));
    check_eq!(l.pop(), Some(10));
    check_eq!(l.pop(), Some(20));
    check_eq!(l.pop(), Some(30));
    check_eq!(l.pop(), None);
    check!(l.is_empty());
    Ok(())
}

fn runlist_full_hands_back() -> TestResult {
    let mut l = check_ok!(RunList::with_capacity(2));
    check_eq!(l.push(1u8), Ok(()));
    check_eq!(l.push(2), Ok(()));
    check_eq!(l.push(3), Err(3));
    check_eq!(l.len(), 2);
    let mut z: RunList<u8> = check_ok!(RunList::with_capacity(0));
    check_eq!(z.push(9), Err(9));
    check_eq!(z.pop(), None);
    check_eq!(z.peek(), None);
    Ok(())
}

fn runlist_wraps_around() -> TestResult {
    let mut l = check_ok!(RunList::with_capacity(3));
    let mut next = 0u32;
    let mut expect = 0u32;
    // Keep two entries queued while the head walks around the ring several times.
    for _ in 0..10 {
        while l.len() < 2 {
            check_eq!(l.push(next), Ok(()));
            next += 1;
        }
        check_eq!(check_some!(l.pop()), expect);
        expect += 1;
    }
    check_eq!(l.len(), 1);
    check_eq!(l.pop(), Some(expect));
    check_eq!(next, expect + 1);
    Ok(())
}

fn runlist_reserve_keeps_order() -> TestResult {
    let mut l = check_ok!(RunList::with_capacity(3));
    check_eq!(l.push(1u8), Ok(()));
    check_eq!(l.push(2), Ok(()));
    check_eq!(l.pop(), Some(1));
    check_eq!(l.push(3), Ok(()));
    check_eq!(l.push(4), Ok(())); // wrapped: slots hold [4, _, 2, 3] order 2,3,4
    check_ok!(l.reserve(6));
    check_eq!(l.capacity(), 6);
    check_eq!(l.push(5), Ok(()));
    check_eq!(l.len(), 4);
    check_eq!(l.pop(), Some(2));
    check_eq!(l.pop(), Some(3));
    check_eq!(l.pop(), Some(4));
    check_eq!(l.pop(), Some(5));
    // Reserving less than the capacity is a no-op.
    check_ok!(l.reserve(2));
    check_eq!(l.capacity(), 6);
    Ok(())
}

fn runlist_nomem_loses_nothing() -> TestResult {
    fault::fail_after(0);
    let r: Result<RunList<u8>, NoMem> = RunList::with_capacity(4);
    fault::fail_clear();
    check!(r.is_err());

    let mut l = check_ok!(RunList::with_capacity(2));
    check_eq!(l.push(7u8), Ok(()));
    check_eq!(l.push(8), Ok(()));
    fault::fail_after(0);
    let r = l.reserve(8);
    fault::fail_clear();
    check_eq!(r, Err(NoMem));
    check_eq!(l.capacity(), 2);
    check_eq!(l.pop(), Some(7));
    check_eq!(l.pop(), Some(8));
    Ok(())
}

fn flag_and_runlist_keep_stream_queued_once() -> TestResult {
    // Three Streams share one run list with room for exactly three: repeated enables never
    // overflow it, because each Stream's flag admits it once until it is run.
    let flags = [SchedFlag::new(), SchedFlag::new(), SchedFlag::new()];
    let mut l = check_ok!(RunList::with_capacity(3));
    for _ in 0..5 {
        for (i, f) in flags.iter().enumerate() {
            if f.try_schedule() {
                check_eq!(l.push(i), Ok(()));
            }
        }
    }
    check_eq!(l.len(), 3);
    let first = check_some!(l.pop());
    check_eq!(first, 0);
    check!(flags[0].begin_run());
    // Stream 0 ran; enabling it again puts it at the tail, behind 1 and 2.
    check!(flags[0].try_schedule());
    check_eq!(l.push(0), Ok(()));
    check_eq!(l.pop(), Some(1));
    check_eq!(l.pop(), Some(2));
    check_eq!(l.pop(), Some(0));
    Ok(())
}

ktest_suite!(SCHED_SUITE, "streams_sched":
    flag_starts_clear,
    try_schedule_succeeds_once,
    begin_run_clears_and_reports,
    reschedule_after_begin_run,
    schedule_if_enabled_needs_work,
    run_drains_in_qenable_order,
    run_follows_enables_made_by_service,
    run_clears_flag_before_locking,
    enable_during_run_reschedules,
    runlist_is_fifo,
    runlist_full_hands_back,
    runlist_wraps_around,
    runlist_reserve_keeps_order,
    runlist_nomem_loses_nothing,
    flag_and_runlist_keep_stream_queued_once,
);
