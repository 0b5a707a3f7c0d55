//! Shared (host + KUnit) tests of module statistics (`stats.rs`): per-Stream `module_stat`
//! counts of put, service, open and close calls per queue side, and the module-wide totals
//! per streamtab. Totals are global, so the cases that check them use streamtabs of their own
//! (`STATDRV`, `STATMOD`, used by no other test) and compare before/after differences.

use super::testmods::{open_loop, open_pass, LOOP, SRC};
use super::*;

/// The Streams of these tests: a head that queues whatever arrives.
type Stream = super::Stream<RawHead>;
use crate::ktest::{Failure, TestResult};
use crate::msg::{Msg, M_DATA, M_PCPROTO};
use crate::queue::tests::mk;
use crate::{check, check_eq, check_ok, check_some, ktest_suite};

fn open(drv: &'static StreamTab) -> Result<Stream, Failure> {
    Ok(check_ok!(Stream::new(drv)))
}

fn msg(len: usize) -> Result<Msg, Failure> {
    Ok(check_some!(mk(
        M_DATA,
        0,
        [7u8; 16].get(..len).unwrap_or(&[])
    )))
}

fn st(s: &Stream, q: Option<QueueId>) -> Result<ModuleStat, Failure> {
    Ok(check_some!(q.and_then(|q| s.mstat(q))))
}

const fn info(id: u16, name: &'static str) -> ModuleInfo {
    ModuleInfo {
        mi_idnum: id,
        mi_idname: name,
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: 1000,
        mi_lowat: 100,
    }
}

/// `statmod`: `pass` under a streamtab only the totals tests use.
static STATMOD: StreamTab = StreamTab {
    info: info(40, "statmod"),
    open: open_pass,
};
/// `statdrv`: `loop` under a streamtab only the totals tests use.
static STATDRV: StreamTab = StreamTab {
    info: info(41, "statdrv"),
    open: open_loop,
};

fn open_counted_on_read_side() -> TestResult {
    let s = open(&LOOP)?;
    let r = st(&s, s.driver_rq())?;
    let w = st(&s, s.driver_wq())?;
    check_eq!((r.ms_ocnt, r.ms_ccnt, r.ms_pcnt, r.ms_scnt), (1, 0, 0, 0));
    check_eq!(w, ModuleStat::default());
    // The head is not opened through a streamtab.
    check_eq!(st(&s, Some(s.head_rq()))?.ms_ocnt, 0);
    Ok(())
}

fn put_counts_each_procedure_call() -> TestResult {
    let mut s = open(&LOOP)?;
    for n in 1..=3 {
        s.write(msg(n)?);
    }
    // Down: three calls of the driver's write put procedure; up: three of the head's read one.
    check_eq!(st(&s, s.driver_wq())?.ms_pcnt, 3);
    check_eq!(st(&s, s.driver_rq())?.ms_pcnt, 0);
    check_eq!(st(&s, Some(s.head_rq()))?.ms_pcnt, 3);
    check_eq!(st(&s, Some(s.head_wq()))?.ms_pcnt, 0);
    check_eq!(s.queue(s.head_rq()).map(|q| q.qsize()), Some(3));
    Ok(())
}

fn srv_counts_service_runs() -> TestResult {
    let mut s = open(&SRC)?;
    let rq = check_some!(s.driver_rq());
    s.put(rq, msg(4)?);
    s.put(rq, msg(5)?);
    // Both puts queued; the service procedure was enabled once and has not run yet.
    check_eq!(st(&s, Some(rq))?.ms_pcnt, 2);
    check_eq!(st(&s, Some(rq))?.ms_scnt, 0);
    check_eq!(s.runqueues(), 1);
    check_eq!(st(&s, Some(rq))?.ms_scnt, 1);
    s.put(rq, msg(6)?);
    check_eq!(s.runqueues(), 1);
    let r = st(&s, Some(rq))?;
    check_eq!((r.ms_pcnt, r.ms_scnt), (3, 2));
    check_eq!(st(&s, s.driver_wq())?.ms_scnt, 0);
    Ok(())
}

fn high_priority_counted_like_any_put() -> TestResult {
    let mut s = open(&LOOP)?;
    s.write(check_some!(mk(M_PCPROTO, 0, b"hi")));
    s.write(msg(2)?);
    check_eq!(st(&s, s.driver_wq())?.ms_pcnt, 2);
    check_eq!(check_some!(s.read()).db_type(), M_PCPROTO);
    Ok(())
}

fn totals_sum_over_streams_and_close() -> TestResult {
    let before = mstat_total(&STATDRV);
    for _ in 0..2 {
        let mut s = open(&STATDRV)?;
        s.write(msg(3)?);
        s.write(msg(3)?);
        check!(s.read().is_some());
        drop(s); // closes the driver
    }
    let after = mstat_total(&STATDRV);
    let (r0, r1, w0, w1) = (before[0], after[0], before[1], after[1]);
    check_eq!(r1.ms_ocnt - r0.ms_ocnt, 2);
    check_eq!(r1.ms_ccnt - r0.ms_ccnt, 2);
    check_eq!(w1.ms_pcnt - w0.ms_pcnt, 4);
    check_eq!(r1.ms_pcnt - r0.ms_pcnt, 0);
    check_eq!(w1.ms_ocnt, w0.ms_ocnt); // open/close live on the read side
    Ok(())
}

fn totals_of_a_pushed_module() -> TestResult {
    let before = mstat_total(&STATMOD);
    let mut s = open(&LOOP)?;
    check_ok!(s.push_tab(&STATMOD, &OpenArgs::module()));
    let top = check_some!(s.top_wq());
    s.write(msg(8)?);
    // The loopback answered while statmod was still in its wput: the reply waits on
    // statmod's read queue for its service procedure.
    check_eq!(s.runqueues(), 1);
    check!(s.read().is_some());
    let w = st(&s, Some(top))?;
    let r = st(&s, Some(top.rd()))?;
    check_eq!((w.ms_pcnt, w.ms_scnt), (1, 0));
    // The reply reached statmod's read side while it was busy: queued, not a put call.
    check_eq!((r.ms_pcnt, r.ms_scnt, r.ms_ocnt), (0, 1, 1));
    check_ok!(s.pop());
    // The popped pair is gone from the Stream, its counts stay in the totals.
    check!(s.mstat(top).is_none());
    let after = mstat_total(&STATMOD);
    check_eq!(after[0].ms_ocnt - before[0].ms_ocnt, 1);
    check_eq!(after[0].ms_ccnt - before[0].ms_ccnt, 1);
    check_eq!(after[0].ms_scnt - before[0].ms_scnt, 1);
    check_eq!(after[1].ms_pcnt - before[1].ms_pcnt, 1);
    Ok(())
}

fn totals_of_unopened_and_reserved_tabs_are_zero() -> TestResult {
    static NEVER: StreamTab = StreamTab {
        info: info(42, "never"),
        open: open_loop,
    };
    check_eq!(mstat_total(&NEVER), [ModuleStat::default(); 2]);
    check!(stats::totals_of(&NEVER, false).is_none());
    // A reserved slot exists before the first open, still all zeros.
    static RESERVED: StreamTab = StreamTab {
        info: info(43, "reserved"),
        open: open_loop,
    };
    check!(reserve_totals(&RESERVED));
    check!(reserve_totals(&RESERVED)); // idempotent
    check!(stats::totals_of(&RESERVED, false).is_some());
    check_eq!(mstat_total(&RESERVED), [ModuleStat::default(); 2]);
    Ok(())
}

/// Module-wide totals are counted per CPU and summed when read: two threads on different
/// CPU rows (host: each thread has its own `cpu_id`) counting the same streamtab each find
/// only their own counts in their row, and the read sums both exactly (host only: threads).
#[cfg(all(not(rstreams_kernel), feature = "std"))]
#[test]
fn totals_per_cpu_sum_exactly() {
    extern crate std;
    use crate::stream::stats::Stat;
    use crate::sys;
    static PERCPU: StreamTab = StreamTab {
        info: info(44, "percpu"),
        open: open_loop,
    };
    const N: usize = 10_000;
    let t = stats::totals_of(&PERCPU, true).expect("a totals slot");
    let puts = t.counter(1, Stat::Put);
    let before = mstat_total(&PERCPU);
    // A thread that counts `n` write-side puts and 1 read-side service run, unless its row
    // is `avoid`; then its row, and that row's count of the puts.
    let count = move |n: usize, avoid: Option<usize>| {
        move || {
            let row = sys::stat_row();
            if avoid == Some(row) {
                return None;
            }
            for _ in 0..n {
                t.bump(1, Stat::Put, 1);
            }
            t.bump(0, Stat::Srv, 1);
            Some((row, sys::stat_here(puts)))
        }
    };
    let a = std::thread::spawn(count(N, None)).join().expect("a");
    let a = a.expect("a row");
    // The rows wrap around after `STAT_CPUS` threads: another thread, until one is on
    // another row than `a`.
    let b = loop {
        if let Some(b) = std::thread::spawn(count(2 * N, Some(a.0)))
            .join()
            .expect("b")
        {
            break b;
        }
    };
    // Only this test counts PERCPU: each row holds its own thread's puts, no more.
    assert_eq!(a.1, N);
    assert_eq!(b.1, 2 * N);
    let after = mstat_total(&PERCPU);
    assert_eq!(after[1].ms_pcnt - before[1].ms_pcnt, 3 * N);
    assert_eq!(after[0].ms_scnt - before[0].ms_scnt, 2);
    assert_eq!((after[0].ms_pcnt, after[1].ms_scnt), (0, 0));
}

ktest_suite!(STATS_SUITE, "streams_stats":
    open_counted_on_read_side,
    put_counts_each_procedure_call,
    srv_counts_service_runs,
    high_priority_counted_like_any_put,
    totals_sum_over_streams_and_close,
    totals_of_a_pushed_module,
    totals_of_unopened_and_reserved_tabs_are_zero,
);
