//! Shared (host + KUnit) tests of the perimeter: flow control of an entry whose producer puts
//! while the Stream's lock is held (a softirq producer interrupting the lock holder, as the
//! kernel's `xput` test driver found), and the back-enable that reaches the producer through
//! the entry's back link.

// Plain atomics even under loom: these cases are not loom models (they count, nothing more).
use core::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use super::test::{settle, TestPerim};
use super::LEAVE_ROUNDS;
use crate::errno::Errno;
use crate::ktest::TestResult;
use crate::msg::{Msg, M_DATA};
use crate::queue::INFPSZ;
use crate::stream::{
    ModuleInfo, OpenArgs, Perimeter, QCtx, QRef, QueueId, RawHead, Stream, StreamModule, StreamTab,
    STRHIGH,
};
use crate::sys::{self, Arc, Box};
use crate::{box_dyn, check, check_eq, check_ok, check_some, ktest_suite};

/// Bytes per message of these tests.
const SIZE: usize = 64;
/// Watermarks of the feeder driver's queues.
const FEED_HIWAT: usize = 1024;
const FEED_LOWAT: usize = 256;
/// Most messages the feeder puts, whatever flow control says (so a regression fails the test
/// instead of hanging it).
const FEED_LIMIT: usize = 4096;

/// Messages the feeder put through its own gate.
static FED: AtomicUsize = AtomicUsize::new(0);

/// A driver whose read side is fed from outside its Stream *while the Stream's lock is held*:
/// every message its read put procedure gets (applied from the gate) is followed by one more
/// put into its own read queue through the gate, if `canput` allows — an interrupt arriving
/// for each message. Its read service procedure passes messages up with `canputnext`.
struct Feeder;

impl StreamModule for Feeder {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let queued = cx.queue().is_some_and(|q| !q.is_empty());
        if !queued && cx.canputnext() {
            cx.putnext(mp);
        } else if let Err(mp) = cx.putq(mp) {
            drop(mp);
        }
        if FED.load(SeqCst) >= FEED_LIMIT {
            return;
        }
        let Some(me) = cx.qref_here() else {
            return;
        };
        if me.canput() {
            if let Some(m) = message() {
                if me.put(m).is_ok() {
                    FED.fetch_add(1, SeqCst);
                }
            }
        }
    }

    fn rsrv(&mut self, cx: &mut QCtx<'_>) {
        while let Some(mp) = cx.getq() {
            if cx.canputnext() {
                cx.putnext(mp);
            } else {
                if let Err(mp) = cx.putbq(mp) {
                    drop(mp);
                }
                break;
            }
        }
    }

    fn has_rsrv(&self) -> bool {
        true
    }
}

fn open_feeder(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(Feeder => dyn StreamModule)?)
}

static FEEDER: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 40,
        mi_idname: "feeder",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: FEED_HIWAT,
        mi_lowat: FEED_LOWAT,
    },
    open: open_feeder,
};

fn message() -> Option<Msg> {
    let mut m = Msg::with_type(M_DATA, SIZE).ok()?;
    m.adj_wptr(SIZE);
    Some(m)
}

/// The producer's side of the entry's back link: counts the back-enables it gets.
struct Producer {
    backs: AtomicUsize,
}

impl Perimeter for Producer {
    fn put_in(&self, _q: QueueId, mp: Msg) -> Result<bool, Msg> {
        Err(mp)
    }
    fn backenable_in(&self, _q: QueueId, _band: u8) -> bool {
        self.backs.fetch_add(1, SeqCst);
        false
    }
    fn bcanput_in(&self, _q: QueueId, _band: u8) -> bool {
        true
    }
    fn run(&self, _depth: u32) {}
    fn schedule(self: Arc<Self>) {}
}

/// Puts that keep arriving while the lock holder leaves are flow controlled by what that
/// holder publishes (not only at the end of the hold, which they could postpone for ever),
/// and the holder applies a bounded number of rounds of them; once the reader drains, the
/// back-enable reaches the producer through the entry's back link.
fn puts_during_leave_are_flow_controlled() -> TestResult {
    FED.store(0, SeqCst);
    let t = check_ok!(TestPerim::new(check_ok!(Stream::<RawHead>::new(&FEEDER))));
    let prod = check_ok!(sys::new_arc(Producer {
        backs: AtomicUsize::new(0),
    }));
    let me: Arc<dyn Perimeter> = t.clone();
    let link: Arc<dyn Perimeter> = prod.clone();
    // The driver's read queue becomes an entry whose back link is the producer; this hold's
    // publish claims its flow slot.
    let rq = check_some!(t.op(|s| {
        s.set_perimeter(me);
        let rq = s.driver_rq()?;
        s.set_remote(rq, Some(QRef::new(link, rq)));
        Some(rq)
    }));
    // One message from outside starts the chain; each one applied brings one more.
    check!(t.qref(rq).put(check_some!(message())).is_ok());
    let runs = settle(&[&*t]);
    let fed = FED.load(SeqCst);
    check!(fed < FEED_LIMIT);
    // In flight: the head's high-water mark and the driver's, each overshot by one round of
    // puts at most, and what the last round left on the inbound list.
    check!(fed * SIZE <= STRHIGH + FEED_HIWAT + 4 * (LEAVE_ROUNDS + 1) * SIZE);
    check!(runs > 1); // the rounds are bounded: later puts waited for a run of their own
    check!(!t.is_scheduled());
    check_eq!(prod.backs.load(SeqCst), 0);
    // The reader drains everything: the driver's queue empties below its low-water mark and
    // the refused producer is back-enabled.
    let mut read = 0;
    for _ in 0..64 {
        read += t.op(|s| core::iter::from_fn(|| s.read()).count());
        settle(&[&*t]);
        if prod.backs.load(SeqCst) > 0 {
            break;
        }
    }
    // Nothing was lost: everything fed (and the first message) reached the reader, and the
    // feeder stopped at its refusal.
    read += t.op(|s| core::iter::from_fn(|| s.read()).count());
    check_eq!(read, fed + 1);
    check!(prod.backs.load(SeqCst) > 0);
    t.op(|s| s.close());
    t.close_gate();
    Ok(())
}

/// A claim is given back (`Gate::give_back`, `perim` step 6) only while what waits on the
/// inbound list is ordinary band-0 data of a quiet head with nobody asleep or waiting: never
/// with another put (high priority, a band) or a back-enable pending, a counted sleeper, a
/// waiter, a head that must hear of arrivals (`handoff_ok` false) or a closed gate. A given
/// back put stays on the list for the next take, and a later claim is possible again.
fn give_back_only_ordinary_data() -> TestResult {
    let gate = check_ok!(super::Gate::new());
    let q = check_some!(QueueId::from_raw(0)).rd();
    let data = |band: u8| -> Result<Msg, crate::ktest::Failure> {
        let mut m = check_ok!(Msg::from_bytes(M_DATA, b"d"));
        m.set_band(band);
        Ok(m)
    };
    let claimed = |gate: &super::Gate, m: Msg| gate.put_in(q, m).unwrap_or(false);
    // Not lazy (the default: as after a leave that saw a poller); the head quiet.
    gate.set_handoff(true);
    check!(claimed(&gate, data(0)?));
    check!(!gate.give_back(|| false)); // a waiter: it is woken instead
    check!(gate.give_back(|| true));
    check!(!gate.sched_flag().is_scheduled());
    check!(gate.has_pending());
    // The next ordinary put claims again (the flag is down) and is given back too.
    check!(claimed(&gate, data(0)?));
    check!(gate.give_back(|| true));
    let mut t = gate.take();
    let mut n = 0;
    while let Some(mut m) = t.puts.take() {
        t.puts = m.0.next.take();
        n += 1;
    }
    check_eq!(n, 2);
    // Data of another band must be served: no give-back until an enter has taken it (an
    // enter clears the claim, then takes the list).
    check!(claimed(&gate, data(1)?));
    check!(!claimed(&gate, data(0)?)); // already claimed
    check!(!gate.give_back(|| true));
    check!(gate.sched_flag().is_scheduled());
    gate.sched_flag().begin_run();
    drop(gate.take());
    // A back-enable must be served.
    check!(gate.backenable_in(q.otherq(), 0));
    check!(!claimed(&gate, data(0)?));
    check!(!gate.give_back(|| true));
    gate.sched_flag().begin_run();
    drop(gate.take());
    // A counted sleeper is woken instead.
    gate.sleeper_queued();
    check!(claimed(&gate, data(0)?));
    check!(!gate.give_back(|| true));
    gate.sleeper_woken();
    check!(gate.give_back(|| true));
    // A head that must hear of each arrival (signals, read fill...): the runner serves it.
    gate.set_handoff(false);
    check!(claimed(&gate, data(0)?));
    check!(!gate.give_back(|| true));
    gate.set_handoff(true);
    // Closed: nothing to give back.
    drop(gate.close());
    check!(!gate.give_back(|| true));
    Ok(())
}

ktest_suite!(PERIM_SUITE, "streams_perim":
    puts_during_leave_are_flow_controlled,
    give_back_only_ordinary_data,
);
