//! Loom models of the perimeter protocol (`perim/`): puts and back-enables across perimeters
//! racing with the target's close and with its runner, and flow control across a perimeter.
//! Run: `RUSTFLAGS="--cfg loom" cargo test -p streams_core --release --test loom_perim`.
//!
//! These run the real `Perim`, `Gate`, `Flow` and `SchedFlag` code (their locks and atomics are
//! loom's under `cfg(loom)`), around small Streams (`RawHead` over the `null` test driver):
//! - (d) put vs close: a message put into a Stream that is closing is applied, handed back to
//!   the sender, or freed by the close — exactly once, never lost, never leaked.
//! - (e) enable vs run: a put claims the perimeter or finds it claimed; the runner clears the
//!   claim before it takes the inbound list. Work is never stranded (inbound work with no
//!   claim), also for a put that is not ordinary data (no fence of its own: its relaxed
//!   store of *pending* reaches the run through the claim). The runner that clears the claim
//!   after taking the list is caught.
//! - (g) the hand-off of a busy perimeter: a claimer that finds the Stream lock held leaves
//!   the run to the holder, who looks at the inbound list once more after letting go. A put
//!   is never left behind; a holder that does not look again is caught, and so is one that
//!   looks again without the fence (*busy* is relaxed: the two fences carry the argument).
//! - (h) the lazy reader (one wake-up per batch): ordinary data put into a Stream whose
//!   reader is not asleep only joins the inbound list, also once the reader has drained the
//!   head; the reader's next enter finds all of it, in order.
//!   The direct take (`perim` step 7, `stream/direct.rs`): a read that enters with
//!   `Perim::enter_read` takes the data waiting on the inbound list straight from there
//!   while another put comes in lazily and a writer is refused for the pending bytes; all
//!   of it is read once and in order, and the refused writer is back-enabled. A take by hand
//!   outside the Stream lock, whose rest goes back through the gate, is caught.
//!   The batch put-up (`stream/batch.rs`): an ordinary enter puts the run waiting on the
//!   inbound list up to the head in one step while another put comes in lazily and a
//!   writer is refused for the pending bytes; all of it is read once and in order, each put
//!   is counted, and the refused writer is back-enabled. A run taken from the gate and put up
//!   in a later lock hold (behind what came in meanwhile) is caught.
//! - (i) the sleeper hand-off: a claimer outside a system call that finds a reader asleep in
//!   the head (counted once it is on the wait queue) wakes it instead of scheduling the
//!   runner, and a lazy put that finds no sleeper is seen by the reader's look after it
//!   counted itself. Nothing is stranded, no claim is left standing with nobody to serve it;
//!   a reader that counts itself before it is on the wait queue, or that sleeps without that
//!   last look, is caught (a wakeup lost). The claimer looks at the sleeper count after the
//!   one fence of its look at *busy* (`Gate::is_busy`, as `StrPerim::schedule` does): a
//!   claimer without it is caught too (a mutation of that fence fails this model).
//! - (l) the give-back (`Gate::give_back`): a claimer that finds nobody asleep or waiting,
//!   a quiet head and only ordinary data pending clears its claim instead of scheduling the
//!   runner (the gate was left not lazy by a poller that has gone). A blocking reader and a
//!   poller racing with it get the datum (woken, or by their own look: the sleeper's last
//!   look after it counted itself, the poller's enter after it queued itself), and nothing
//!   is left claimed with nobody to serve it. (What the give-back must never take, a
//!   back-enable or a put other than ordinary data, is the shared case
//!   `perim::tests::give_back_only_ordinary_data`.)
//! - (j) write hold without the Stream lock (`sth/hold.rs`): writes that join the held
//!   message race with the head taking it (a flush: read, timer, close) and sealing it; every
//!   byte a join accepted is in what the head took, once, and none joins after the take or the
//!   seal; also for joins straight from user space (`HoldCell::join_user`), where a copy that
//!   faults appends nothing; and at the exact fill, where a join may fill the message but
//!   never go past it.
//! - (k) the idle publish (`Perim::publish_is_idle`): a lock hold that filled and drained
//!   its entry's flow queue without its published state changing skips the publish unless a
//!   refused writer waits. A writer refused for the bytes on the inbound list (not for a full
//!   queue) while the reader takes that list and drains is still back-enabled; a skip that
//!   does not look at the writers' marks is caught.
//! - (m) the express write (`perim/express.rs`): writes made without the writing Stream's
//!   lock race with a hold of it; none lands in the hold after its enter disarmed, none is
//!   lost or doubled, and each is counted once on the path. A writer that checks and counts
//!   the armed word without the target's inbound lock, then puts, is caught (a put lands in
//!   the hold after its enter).
//! - (n) the read's run (`Stream::sth_read_run`, `Queue::getq_upto`): the Stream head's
//!   read takes its messages in one queue operation and marks the flow control stale only
//!   when the head queue's flow state changes (`Queue::flow_state`). A writer refused while
//!   the head is full is back-enabled by the read that leaves it low, after a read that only
//!   cleared QFULL; on the raw words, a rule that publishes on QFULL's change alone (not on
//!   reaching the low-water mark) is caught.
//! - (o) the lazy take (`perim` step 7, `Perim::enter_read`'s `ready`): a read whose head's
//!   queue satisfies it leaves ordinary data on the inbound list, racing with a second reader
//!   of the head (the reader token) and a hangup from below. A read that must wait never
//!   leaves data behind (it would sleep on it), the hangup takes the whole list with it
//!   by the time its put returned, and everything is read once, in order. A `ready` that
//!   forgets the reader token is caught (a read waiting for the token left data behind).
//! - (p) the express send (`perim/express_send.rs`): a putmsg sent by the driver's published
//!   transmit path without the Stream lock races with a hold that withdraws the path (as an
//!   unbind does); the hold's enter waits for the send in flight, so no hold overlaps one,
//!   the send's answer (put into the sender's own gate) is at the head when the hold's
//!   operation runs, a send after the enter is refused, and each send is counted once on the
//!   driver's write queue. A sender that looks at the armed word and sends without a claim
//!   (nothing for the enter to wait for) is caught.
//! - (q) a watcher arrives (`perim` steps 5, 6): a hold that sees a poller or an O_ASYNC
//!   owner clears *lazy* (and *handoff*) with relaxed stores, racing with an ordinary put
//!   that claims as `StrPerim::schedule` does (hand-off, give-back, runner). The put claims
//!   and is served, or the holder's fenced look sees it; a holder whose look has no fence is
//!   caught (the put waits unheard), for either watcher.
//! - (r) the hold timer (`docs/concurrency.md`, "the timer rule"; `strperim.rs`
//!   `act_events` / `hold_expired`, modelled: the kernel glue does not build on the host):
//!   an expiry armed for run 1, already running and waiting for the Stream lock, races with
//!   a write that sends run 1, starts run 2 (a new generation) and then records that
//!   generation and re-arms under the timer's lock. The stale expiry never sends run 2, and
//!   run 2's own expiry does. An expiry that checks the generation but not whether the
//!   timer is pending again is caught (it sends run 2 early), and so is one that checks
//!   neither.
//! - (f) back-enable across the perimeter: a writer refused by the published flow control is
//!   always back-enabled once the reader drains, and a back-enable racing with the writer's
//!   close is ignored, not applied to a closed Stream. Publishing that reads the writers'
//!   marks before clearing "full" is caught. A lock hold that changed nothing, and so did
//!   not publish, between the refusal and the drain loses nothing either. On the real `Flow`
//!   words, a take of the inbound list that clears the pending counts (relaxed stores) and
//!   fences before it reads the marks answers a writer refused for those bytes; one without
//!   the fence is caught.
#![cfg(loom)]

use std::sync::atomic::{AtomicUsize as StdUsize, Ordering::SeqCst as StdSeqCst};

use loom::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use loom::sync::Arc as LArc;
use loom::thread;

use streams_core::msg::{esballoc, Bpri, ExtBuf, Msg};
use streams_core::perim::express::key_of;
use streams_core::perim::express_send::{ExpressTx, Sent};
use streams_core::perim::flow::{BandState, BlockState, Flow};
use streams_core::perim::test::TestPerim;
use streams_core::queue::QField;
use streams_core::stream::testmods::{NULL, NULLPASS};
use streams_core::stream::{HeadProcs, Perimeter, QueueId, RawHead, Stream};
use streams_core::sys::Arc;

fn model<F: Fn() + Sync + Send + 'static>(f: F) {
    let mut b = loom::model::Builder::new();
    if b.preemption_bound.is_none() {
        b.preemption_bound = Some(3);
    }
    b.check(f);
}

type Perim = TestPerim<RawHead>;

fn stream() -> Arc<Perim> {
    let s = Stream::new(&NULL).expect("open");
    TestPerim::new(s).expect("perimeter")
}

// (d) ------------------------------------------------------------------------------------------

static FREED_D: StdUsize = StdUsize::new(0);

fn free_d(_: &'static mut [u8], n: usize) {
    FREED_D.fetch_add(n, StdSeqCst);
}

fn counted(free: fn(&'static mut [u8], usize)) -> Msg {
    let ext = ExtBuf {
        buf: &mut [],
        free,
        arg: 1,
    };
    esballoc(ext, Bpri::Med).map_err(|_| ()).expect("esballoc")
}

#[test]
fn d_put_vs_close_frees_exactly_once() {
    model(|| {
        FREED_D.store(0, StdSeqCst);
        let t = stream();
        let rq = t.op(|s| s.head_rq());
        let m = counted(free_d);
        let sender = {
            let t = t.clone();
            thread::spawn(move || match t.put_in(rq, m) {
                Ok(true) => t.run(0),
                Ok(false) => {}
                Err(m) => drop(m),
            })
        };
        t.op(|s| s.close());
        t.close_gate();
        sender.join().expect("sender");
        assert!(!t.perim.gate().has_pending(), "work left on a closed gate");
        drop(t);
        assert_eq!(FREED_D.load(StdSeqCst), 1, "message lost or freed twice");
    });
}

// (e) ------------------------------------------------------------------------------------------

/// What the runner does with a claimed perimeter: the real run (clear the claim, then take
/// and apply). Returns how many puts it consumed outside the Stream (none: they are applied).
fn runner_correct(t: &Perim) -> usize {
    t.run_scheduled();
    0
}

/// The wrong order, by hand on the gate (the real `Perim` always clears first): take the
/// inbound list, then clear the claim. The puts it took are counted and freed.
fn runner_clear_after(t: &Perim) -> usize {
    let n = take_and_count(t);
    t.perim.gate().sched_flag().begin_run();
    n
}

/// Take the inbound list by hand on the gate; how many puts it held (they are freed).
fn take_and_count(t: &Perim) -> usize {
    let mut taken = t.perim.gate().take();
    core::iter::from_fn(|| taken.next_put()).count()
}

/// A holder outside a run (an enter: `Perim::take_inbound` clears the claim first, only when
/// its load shows it set), then nothing else: what it took is applied to the head.
fn holder_enter(t: &Perim) -> usize {
    t.op(|_| ());
    0
}

/// The wrong order for that holder, by hand on the gate: take the inbound list, then load the
/// claim and clear it when set. The puts it took are counted and freed.
fn holder_clear_if_set_after(t: &Perim) -> usize {
    let n = take_and_count(t);
    let claim = t.perim.gate().sched_flag();
    if claim.is_scheduled() {
        claim.begin_run();
    }
    n
}

fn enable_model(runner: fn(&Perim) -> usize, ty: streams_core::msg::MsgType) {
    model(move || {
        let t = stream();
        let rq = t.op(|s| s.head_rq());
        // Already claimed once, as if an earlier put had scheduled it.
        let m0 = Msg::from_bytes(streams_core::msg::M_DATA, b"0").expect("msg");
        if t.put_in(rq, m0).expect("open") {
            let p: Arc<dyn Perimeter> = t.clone();
            p.schedule();
        }
        let producer = {
            let t = t.clone();
            thread::spawn(move || {
                let m = Msg::from_bytes(ty, b"1").expect("msg");
                if t.put_in(rq, m).expect("open") {
                    let p: Arc<dyn Perimeter> = t.clone();
                    p.schedule();
                }
            })
        };
        let consumed = runner(&t);
        producer.join().expect("producer");
        // Whatever is on the inbound list must have a claim that will run it.
        let gate = t.perim.gate();
        if gate.has_pending() {
            assert!(
                gate.sched_flag().is_scheduled(),
                "lost wakeup: inbound work without a claim"
            );
        }
        t.run_scheduled();
        let n = t.op(|s| core::iter::from_fn(|| s.read()).count());
        assert_eq!(n + consumed, 2, "a put was not applied");
    });
}

#[test]
fn e_claim_cleared_before_taking_loses_nothing() {
    enable_model(runner_correct, streams_core::msg::M_DATA);
}

/// A put that is not ordinary data has no fence of its own: its store of *pending* (relaxed)
/// reaches the run by the claim, or, when the claim fails, by the clear of the claim that
/// every take that sees it set makes first (`Gate::put_in_if`).
#[test]
fn e_urgent_put_without_a_fence_loses_nothing() {
    enable_model(runner_correct, streams_core::msg::M_PCPROTO);
}

#[test]
#[should_panic(expected = "lost wakeup")]
fn e_claim_cleared_after_taking_is_caught() {
    enable_model(runner_clear_after, streams_core::msg::M_DATA);
}

#[test]
fn e_holder_clearing_a_seen_claim_before_taking_loses_nothing() {
    enable_model(holder_enter, streams_core::msg::M_DATA);
}

#[test]
fn e_holder_clearing_a_seen_claim_loses_no_urgent_put() {
    enable_model(holder_enter, streams_core::msg::M_PCPROTO);
}

#[test]
#[should_panic(expected = "lost wakeup")]
fn e_holder_clearing_a_seen_claim_after_taking_is_caught() {
    enable_model(holder_clear_if_set_after, streams_core::msg::M_DATA);
}

// (f) ------------------------------------------------------------------------------------------

/// A reader Stream whose driver read queue is the entry of a link from a writer Stream: the
/// head holds one 1-byte message, with high-water mark 1 (full).
fn linked_full() -> (Arc<Perim>, Arc<Perim>, QueueId) {
    let r = stream();
    let w = stream();
    let wq = w.op(|s| s.head_wq());
    let back = w.qref(wq);
    let entry = r.op(|s| {
        let h = s.head_rq();
        let _ = s.qctx(h).strqset(QField::Hiwat, 0, 1);
        let _ = s.qctx(h).strqset(QField::Lowat, 0, 0);
        let d = s.driver_rq().expect("driver");
        s.set_remote(d, Some(back));
        d
    });
    let m = Msg::from_bytes(streams_core::msg::M_DATA, b"x").expect("msg");
    if r.put_in(entry, m).expect("open") {
        r.run(0);
    }
    assert!(!r.bcanput_in(entry, 0), "the reader's head must be full");
    // The refusal above left a mark; the model starts from a clean one.
    r.op(|s| {
        let _ = s.read();
    });
    let m = Msg::from_bytes(streams_core::msg::M_DATA, b"y").expect("msg");
    if r.put_in(entry, m).expect("open") {
        r.run(0);
    }
    w.run_scheduled();
    (r, w, entry)
}

#[test]
fn f_refused_writer_is_back_enabled() {
    refused_writer_model(false);
}

/// A lock hold that changes no queue skips the publish (`Stream::take_flow_changed`): one
/// that runs between the refusal and the drain must not cost the writer its back-enable.
#[test]
fn f_refused_writer_is_back_enabled_after_a_quiet_hold() {
    refused_writer_model(true);
}

/// A writer thread that asks `bcanput_in` of `entry` of `r` once, and the flag it sets if it
/// was refused.
fn ask_once<H: HeadProcs>(
    r: &Arc<TestPerim<H>>,
    entry: QueueId,
) -> (thread::JoinHandle<()>, LArc<AtomicBool>) {
    let refused = LArc::new(AtomicBool::new(false));
    let writer = {
        let (r, refused) = (r.clone(), refused.clone());
        thread::spawn(move || {
            if !r.bcanput_in(entry, 0) {
                refused.store(true, SeqCst);
            }
        })
    };
    (writer, refused)
}

/// The end of a model with a writer `w` and a reader `r`: if the writer was `refused`, it
/// was back-enabled since its run count was `before` (it ran, is scheduled, or has the
/// back-enable waiting on its gate); then both Streams close. `what` prefixes the failure
/// (the negative variants' `should_panic` matches it).
fn back_enabled_then_close<R: HeadProcs, W: HeadProcs>(
    what: &str,
    r: &TestPerim<R>,
    w: &TestPerim<W>,
    before: usize,
    refused: bool,
) {
    let backenabled = w.runs() > before || w.is_scheduled() || w.perim.gate().has_pending();
    if refused {
        assert!(backenabled, "{what}lost back-enable across the perimeter");
    }
    r.op(|s| s.close());
    r.close_gate();
    w.op(|s| s.close());
    w.close_gate();
}

fn refused_writer_model(quiet_first: bool) {
    model(move || {
        let (r, w, entry) = linked_full();
        let before = w.runs();
        let (writer, refused) = ask_once(&r, entry);
        if quiet_first {
            r.op(|s| {
                let _ = s.head_rq();
            });
        }
        r.op(|s| while s.read().is_some() {});
        writer.join().expect("writer");
        back_enabled_then_close("", &r, &w, before, refused.load(SeqCst));
    });
}

#[test]
fn f_backenable_vs_close_is_ignored_after_close() {
    model(|| {
        let t = stream();
        let wq = t.op(|s| s.head_wq());
        let other = {
            let t = t.clone();
            thread::spawn(move || {
                if t.backenable_in(wq, 0) {
                    t.run(0);
                }
            })
        };
        t.op(|s| s.close());
        t.close_gate();
        other.join().expect("other");
        assert!(
            !t.perim.gate().has_pending(),
            "back-enable kept for a closed Stream"
        );
    });
}

/// The publishing side with the two steps in the wrong order: read the writers' marks, then
/// clear "full" (modelled on the real `Flow` words with loom atomics).
#[test]
#[should_panic(expected = "lost back-enable")]
fn f_publish_reading_marks_first_is_caught() {
    model(|| {
        let full = LArc::new(AtomicU64::new(1));
        let want = LArc::new(AtomicU64::new(0));
        let writer = raw_writer(&full, &want, |f| f & 1 == 0);
        // Wrong: the marks are read before "full" is cleared.
        let wanted = want.load(SeqCst) & 1 != 0;
        loom::sync::atomic::fence(SeqCst);
        full.fetch_and(!1, SeqCst);
        let backenabled = wanted && want.fetch_and(!1, SeqCst) & 1 != 0;
        let went = writer.join().expect("writer");
        if !went {
            assert!(backenabled, "lost back-enable");
        }
        let _ = Flow::new();
    });
}

/// The take of the inbound list against a writer refused for the bytes on it, on the real
/// `Flow` of one entry: the take clears the pending counts (`Flow::clear_pending`: relaxed
/// stores), then fences (`Gate::take_into`'s fence, here by hand when `fenced`), then reads the
/// writers' marks (`Perim::take_inbound`); the writer marks, fences and tests again
/// (`Flow::bcanput`). Either the writer's second test sees the counts cleared, or the take
/// sees its mark.
fn pending_clear_model(fenced: bool) {
    model(move || {
        let f = LArc::new(Flow::new());
        let blocks = BlockState {
            mblkmax: 8,
            full: false,
        };
        let band0 = BandState {
            band: 0,
            full: false,
            low: true,
        };
        f.publish(1, blocks, core::iter::once(band0), |_| {});
        f.add_pending(1, 1); // one byte on the inbound list: at the high-water mark
        let writer = {
            let f = f.clone();
            thread::spawn(move || f.bcanput(0))
        };
        assert!(f.clear_pending(), "the take found nothing pending");
        if fenced {
            loom::sync::atomic::fence(SeqCst);
        }
        let seen = f.wanted();
        let went = writer.join().expect("writer");
        assert!(
            went || seen,
            "lost back-enable: refused for pending bytes, mark unseen"
        );
    });
}

#[test]
fn f_take_clearing_the_pending_counts_sees_the_refused_writer() {
    pending_clear_model(true);
}

#[test]
#[should_panic(expected = "lost back-enable")]
fn f_take_without_the_fence_after_the_clear_is_caught() {
    pending_clear_model(false);
}

// (g) ------------------------------------------------------------------------------------------

/// How the holder of the busy hand-off looks again once it let go (model (g)).
#[derive(Clone, Copy, PartialEq)]
enum Holder {
    /// `Perim::needs_run`: fenced, then the claim and the inbound list.
    Looks,
    /// The same loads without the fence (*busy* is a relaxed word: only the two fences order
    /// the holder's clear against the claimer's claim).
    LooksUnfenced,
    /// Not at all.
    NoLook,
}

fn handoff_model(holder: Holder) {
    model(move || {
        let t = stream();
        let rq = t.op(|s| s.head_rq());
        let producer = {
            let t = t.clone();
            thread::spawn(move || {
                // Two puts: a claim made after the holder took the first one must not stay
                // standing and strand the second.
                for b in [b"p", b"q"] {
                    let m = Msg::from_bytes(streams_core::msg::M_DATA, b).expect("msg");
                    if t.put_in(rq, m).expect("open") {
                        t.run(0); // skips if the holder is busy
                    }
                }
            })
        };
        // The holder: an operation on the Stream (a reader finding nothing, say).
        {
            let mut g = t.perim.enter();
            let later = t.perim.leave(&mut g);
            drop(g);
            later.finish(0);
            let gate = t.perim.gate();
            let look = match holder {
                Holder::Looks => t.perim.needs_run(),
                Holder::LooksUnfenced => {
                    gate.sched_flag().is_scheduled() || (gate.has_pending() && !gate.is_lazy())
                }
                Holder::NoLook => false,
            };
            if look {
                t.run(0);
            }
        }
        producer.join().expect("producer");
        let gate = t.perim.gate();
        assert!(
            !gate.has_pending(),
            "put left behind by a busy hand-off (claimed: {}, busy: {})",
            gate.sched_flag().is_scheduled(),
            gate.is_busy()
        );
        let n = t.op(|s| core::iter::from_fn(|| s.read()).count());
        assert_eq!(n, 2);
    });
}

#[test]
fn g_busy_handoff_leaves_nothing_behind() {
    handoff_model(Holder::Looks);
}

#[test]
#[should_panic(expected = "put left behind")]
fn g_holder_that_does_not_look_again_is_caught() {
    handoff_model(Holder::NoLook);
}

#[test]
#[should_panic(expected = "put left behind")]
fn g_holder_that_looks_again_without_the_fence_is_caught() {
    handoff_model(Holder::LooksUnfenced);
}

// (h) ------------------------------------------------------------------------------------------

/// A Stream with a real Stream head (whose `lazy_ok` can say yes) over the `null` driver.
fn sth_stream() -> Arc<TestPerim<streams_core::sth::StrHead>> {
    let s = streams_core::sth::Stream::sth_new(&NULL).expect("open");
    TestPerim::new(s).expect("perimeter")
}

fn lazy_model(reader_looks_again: bool) {
    model(move || {
        let t = sth_stream();
        let rq = t.op(|s| s.head_rq());
        // One message at the head, unread: the Stream says it will look by itself.
        let m0 = Msg::from_bytes(streams_core::msg::M_DATA, b"0").expect("msg");
        if t.put_in(rq, m0).expect("open") {
            t.run(0);
        }
        assert!(t.perim.gate().is_lazy(), "a head with unread data is lazy");
        let writer = {
            let t = t.clone();
            thread::spawn(move || {
                for b in [b"1", b"2"] {
                    let m = Msg::from_bytes(streams_core::msg::M_DATA, b).expect("msg");
                    if t.put_in(rq, m).expect("open") {
                        t.run(0);
                    }
                }
            })
        };
        // The reader drains the head (the flag goes down as it leaves), then looks again.
        let mut n = {
            let mut g = t.perim.enter();
            let n = core::iter::from_fn(|| g.read()).count();
            let later = t.perim.leave(&mut g);
            drop(g);
            later.finish(0);
            n
        };
        if reader_looks_again && t.perim.needs_run() {
            t.run(0);
        }
        writer.join().expect("writer");
        let gate = t.perim.gate();
        assert!(
            !gate.has_pending() || gate.is_lazy() || gate.sched_flag().is_scheduled(),
            "put stranded: pending, not lazy, not claimed"
        );
        n += t.op(|s| core::iter::from_fn(|| s.read()).count());
        assert_eq!(n, 3);
    });
}

#[test]
fn h_lazy_reader_leaves_nothing_behind() {
    lazy_model(true);
}

#[test]
fn h_lazy_reader_without_second_look_finds_all_at_next_enter() {
    lazy_model(false);
}

/// How the reader of [`direct_model`] takes the data waiting on its inbound list.
#[derive(Clone, Copy, PartialEq)]
enum Take {
    /// read(2)'s enter (`Perim::enter_read`): under the Stream lock, what the read leaves
    /// put up before anything newer.
    Enter,
    /// By hand on the gate, without the Stream lock, the rest handed back through the gate.
    Outside,
}

/// A reader Stream with a real Stream head over `nullpass` (a driver whose put procedures
/// are stepped over, as a pipe's twist is), whose driver read queue is the entry of a link
/// from a writer Stream, the head's water marks `hiwat` and `lowat`; the writer, and the
/// entry.
fn sth_linked(
    hiwat: usize,
    lowat: usize,
) -> (
    Arc<TestPerim<streams_core::sth::StrHead>>,
    Arc<Perim>,
    QueueId,
) {
    let s = streams_core::sth::Stream::sth_new(&NULLPASS).expect("open");
    let r = TestPerim::new(s).expect("perimeter");
    let w = stream();
    let wq = w.op(|s| s.head_wq());
    let back = w.qref(wq);
    let entry = r.op(|s| {
        let h = s.head_rq();
        let _ = s.qctx(h).strqset(QField::Hiwat, 0, hiwat);
        let _ = s.qctx(h).strqset(QField::Lowat, 0, lowat);
        let d = s.driver_rq().expect("driver");
        s.set_remote(d, Some(back));
        d
    });
    (r, w, entry)
}

/// [`sth_linked`] with the head's water marks 3 and 2 published, and two 1-byte messages
/// waiting on the inbound list, their puts lazy (no claim).
fn direct_pending() -> (
    Arc<TestPerim<streams_core::sth::StrHead>>,
    Arc<Perim>,
    QueueId,
) {
    let (r, w, entry) = sth_linked(3, 2);
    assert!(r.perim.gate().is_lazy(), "a quiet Stream head is lazy");
    for b in [b"a", b"b"] {
        let m = Msg::from_bytes(streams_core::msg::M_DATA, b).expect("msg");
        assert!(!r.put_in(entry, m).expect("open"), "a lazy put claimed");
    }
    (r, w, entry)
}

/// The bytes of a read's take.
fn taken_bytes(t: &streams_core::sth::Taken) -> Vec<u8> {
    t.msgs()
        .flat_map(|m| m.blocks().flat_map(|b| b.rd().to_vec()))
        .collect()
}

/// read(2) of up to `len` bytes through `Perim::enter_read`; whether the head's read queue
/// was empty when the read began (what it read then came straight from the inbound list).
fn read_direct(r: &TestPerim<streams_core::sth::StrHead>, len: usize) -> (Vec<u8>, bool) {
    let tok = streams_core::sth::take::ReaderToken::new();
    let mut t = streams_core::sth::Taken::new();
    let empty = r.op_read(
        |_| false,
        |s| {
            let empty = s.queue(s.head_rq()).is_some_and(|q| q.is_empty());
            let _ = s.strread(len, true, &tok, &mut t);
            empty
        },
    );
    tok.release();
    (taken_bytes(&t), empty)
}

/// The concurrent writer of [`direct_model`] and [`batch_model`]: a thread that puts "c"
/// into `entry` of `r` (running `r` if the put claimed it), then asks `bcanput_in` and
/// records in the flag it returns whether it was refused.
fn put_c_then_ask(
    r: &Arc<TestPerim<streams_core::sth::StrHead>>,
    entry: QueueId,
) -> (thread::JoinHandle<()>, LArc<AtomicBool>) {
    let refused = LArc::new(AtomicBool::new(false));
    let writer = {
        let (r, refused) = (r.clone(), refused.clone());
        thread::spawn(move || {
            let m = Msg::from_bytes(streams_core::msg::M_DATA, b"c").expect("msg");
            if r.put_in(entry, m).expect("open") {
                r.run(0);
            }
            if !r.bcanput_in(entry, 0) {
                refused.store(true, SeqCst);
            }
        })
    };
    (writer, refused)
}

/// The direct take against a concurrent lazy put and a writer refused for the bytes pending
/// on the inbound list: a 1-byte read takes the first message straight from the list, the
/// rest goes up in order ahead of the concurrent put, and the refused writer is back-enabled.
fn direct_model(take: Take) {
    model(move || {
        let (r, w, entry) = direct_pending();
        let before = w.runs();
        let (writer, refused) = put_c_then_ask(&r, entry);
        let mut got = match take {
            Take::Enter => {
                let (b, empty) = read_direct(&r, 1);
                assert!(empty, "the first read did not take directly");
                b
            }
            Take::Outside => {
                let mut t = r.perim.gate().take();
                let (_, first) = t.next_put().expect("a put");
                while let Some((q, m)) = t.next_put() {
                    if r.put_in(q, m).expect("open") {
                        r.run(0);
                    }
                }
                first.rd().to_vec()
            }
        };
        writer.join().expect("writer");
        got.extend(read_direct(&r, 8).0);
        assert_eq!(got, b"abc", "direct take: out of order or lost");
        assert!(!r.perim.gate().has_pending(), "direct take: put stranded");
        back_enabled_then_close("direct take: ", &r, &w, before, refused.load(SeqCst));
    });
}

#[test]
fn h_direct_take_vs_lazy_put() {
    direct_model(Take::Enter);
}

#[test]
#[should_panic(expected = "direct take:")]
fn h_direct_take_outside_the_perimeter_is_caught() {
    direct_model(Take::Outside);
}

/// How the reader of [`batch_model`] puts up the run waiting on its inbound list.
#[derive(Clone, Copy, PartialEq)]
enum PutUp {
    /// An ordinary enter (`Perim::enter`): the list taken and the run put up to the head in
    /// one step (`stream/batch.rs`), within one hold of the Stream lock.
    Enter,
    /// Taken by hand from the gate, then put up one message at a time in a later lock hold
    /// (whose own enter applies what came in meanwhile first).
    Later,
}

/// The batch put-up against a concurrent lazy put and a writer refused for the bytes
/// pending on the inbound list: the reader's enter puts the run up to the head's read queue
/// together (the direct take is not asked for), the reads find all of it once and in order,
/// each put counted on the pass-only driver and on the head, and the refused writer is
/// back-enabled when the reads drain the head's queue.
fn batch_model(how: PutUp) {
    model(move || {
        let (r, w, entry) = direct_pending();
        let before = w.runs();
        let (writer, refused) = put_c_then_ask(&r, entry);
        match how {
            PutUp::Enter => r.op(|_| ()),
            PutUp::Later => {
                let mut t = r.perim.gate().take();
                r.op(|s| {
                    while let Some((q, m)) = t.next_put() {
                        s.put(q, m);
                    }
                });
            }
        }
        writer.join().expect("writer");
        let mut got = Vec::new();
        for _ in 0..3 {
            got.extend(read_direct(&r, 8).0);
        }
        assert_eq!(got, b"abc", "batch put-up: out of order or lost");
        let puts = r.op(|s| {
            let d = s.driver_rq().expect("driver");
            (
                s.mstat(d).map(|m| m.ms_pcnt),
                s.mstat(s.head_rq()).map(|m| m.ms_pcnt),
            )
        });
        assert_eq!(puts, (Some(3), Some(3)), "batch put-up: statistics");
        assert!(!r.perim.gate().has_pending(), "batch put-up: put stranded");
        back_enabled_then_close("batch put-up: ", &r, &w, before, refused.load(SeqCst));
    });
}

#[test]
fn h_batch_put_up_vs_lazy_put() {
    batch_model(PutUp::Enter);
}

#[test]
#[should_panic(expected = "batch put-up:")]
fn h_batch_put_up_in_a_later_hold_is_caught() {
    batch_model(PutUp::Later);
}

// (i) ------------------------------------------------------------------------------------------

/// A reader that finds nothing sleeps; a producer in softirq context puts once and, having
/// claimed the perimeter, hands the claim to a counted sleeper or schedules the runner. The
/// wait queue is modelled by `queued` (the reader's entry) and `woken` (a wake that found it).
#[derive(Clone, Copy, PartialEq)]
enum Sleeper {
    /// Queue, count, look at the inbound list once more, sleep.
    Correct,
    /// Count before queueing (a wake may find nobody queued).
    CountFirst,
    /// No last look after counting (a lazy put before the count is slept on).
    NoLastLook,
}

fn sleeper_model(how: Sleeper) {
    model(move || {
        let t = sth_stream();
        let rq = t.op(|s| s.head_rq());
        let queued = LArc::new(AtomicBool::new(false));
        let woken = LArc::new(AtomicBool::new(false));
        let handed = LArc::new(AtomicBool::new(false));
        let runner = LArc::new(AtomicBool::new(false));
        let done = LArc::new(AtomicBool::new(false));
        let producer = {
            let (t, queued, woken) = (t.clone(), queued.clone(), woken.clone());
            let (handed, runner, done) = (handed.clone(), runner.clone(), done.clone());
            thread::spawn(move || {
                let m = Msg::from_bytes(streams_core::msg::M_DATA, b"d").expect("msg");
                if t.put_in(rq, m).expect("open") {
                    // `StrPerim::schedule`: the holder's if busy (its fence orders the claim
                    // before the loads that follow), else wake a counted sleeper, else the
                    // runner.
                    let gate = t.perim.gate();
                    if gate.is_busy() {
                        // left to the holder (step 4)
                    } else if gate.has_sleeper() {
                        handed.store(true, SeqCst);
                        if queued.load(SeqCst) {
                            woken.store(true, SeqCst);
                        }
                    } else {
                        runner.store(true, SeqCst);
                    }
                }
                done.store(true, SeqCst);
            })
        };
        // The reader: `strwait::wait_on` with a blocking read.
        let gate = t.perim.gate();
        let mut n = 0;
        loop {
            let mut g = t.perim.enter();
            n += core::iter::from_fn(|| g.read()).count();
            let later = t.perim.leave(&mut g);
            if n == 1 {
                drop(g);
                later.finish(0);
                if t.perim.needs_run() {
                    t.run(0);
                }
                break;
            }
            g.unbusy();
            if t.perim.needs_run() {
                drop(g);
                later.finish(0);
                t.run(0);
                continue;
            }
            // `WaitQueue::sleep_counted`: on the queue, counted, unlock, sleep.
            if how == Sleeper::CountFirst {
                gate.sleeper_queued();
                queued.store(true, SeqCst);
            } else {
                queued.store(true, SeqCst);
                gate.sleeper_queued();
            }
            if how != Sleeper::NoLastLook && gate.has_pending() {
                queued.store(false, SeqCst);
                gate.sleeper_woken();
                drop(g);
                later.finish(0);
                continue;
            }
            drop(g);
            later.finish(0);
            // Asleep until woken, or (a time-out) until the producer is done.
            while !woken.load(SeqCst) && !done.load(SeqCst) {
                thread::yield_now();
            }
            let by_wake = woken.swap(false, SeqCst);
            // Woken by nobody: in the kernel this sleep lasts until the next event. Only a
            // run scheduled on the runner would end it (it wakes the head's sleepers).
            let runs = runner.load(SeqCst);
            assert!(
                by_wake || runs || !gate.has_pending(),
                "wakeup lost: a put left for a sleeper that nobody wakes"
            );
            assert!(
                by_wake || !handed.load(SeqCst),
                "wakeup lost: a claim handed to a sleeper nobody woke"
            );
            queued.store(false, SeqCst);
            gate.sleeper_woken();
        }
        producer.join().expect("producer");
        if runner.load(SeqCst) {
            t.run(0);
        }
        assert!(!gate.has_pending(), "put stranded");
        assert!(
            !gate.sched_flag().is_scheduled(),
            "claim left standing with nobody to serve it"
        );
        assert_eq!(n, 1);
    });
}

#[test]
fn i_sleeper_handoff_leaves_nothing_behind() {
    sleeper_model(Sleeper::Correct);
}

#[test]
#[should_panic(expected = "wakeup lost")]
fn i_sleeper_counted_before_queueing_is_caught() {
    sleeper_model(Sleeper::CountFirst);
}

#[test]
#[should_panic(expected = "wakeup lost")]
fn i_sleeper_without_last_look_is_caught() {
    sleeper_model(Sleeper::NoLastLook);
}

// (l) ------------------------------------------------------------------------------------------

/// How the reader of [`give_back_model`] waits.
#[derive(Clone, Copy, PartialEq)]
enum Waiter {
    /// A blocking read: queue, count, last look, sleep (as in (i)).
    Sleeper,
    /// poll(2): queue on the wait queue, then enter (the re-poll), sleep if nothing came.
    Poller,
}

/// The give-back (`Gate::give_back`, `perim` step 6): the gate was left not lazy by a leave
/// that saw a poller (`leave_watched`), the head quiet. A producer in softirq context puts
/// once and, having claimed, wakes a counted sleeper or a waiter, else gives the claim back
/// (ordinary data alone), else schedules the runner. The reader waits as `how` says. Nothing
/// is lost: the reader gets the datum by a wake, by its own look, or the runner's run; no
/// claim stays standing with nobody to serve it.
fn give_back_model(how: Waiter) {
    model(move || {
        let t = sth_stream();
        let rq = t.op(|s| s.head_rq());
        // A leave that saw a watcher: not lazy; the head quiet, so hand-offs and give-backs.
        {
            let mut g = t.perim.enter();
            let later = t.perim.leave_watched(&mut g, true, false);
            drop(g);
            later.finish(0);
        }
        assert!(!t.perim.gate().is_lazy() && t.perim.gate().handoff_ok());
        let queued = LArc::new(AtomicBool::new(false));
        let woken = LArc::new(AtomicBool::new(false));
        let runner = LArc::new(AtomicBool::new(false));
        let done = LArc::new(AtomicBool::new(false));
        let producer = {
            let (t, queued, woken) = (t.clone(), queued.clone(), woken.clone());
            let (runner, done) = (runner.clone(), done.clone());
            thread::spawn(move || {
                let m = Msg::from_bytes(streams_core::msg::M_DATA, b"d").expect("msg");
                if t.put_in(rq, m).expect("open") {
                    // `StrPerim::schedule`.
                    let gate = t.perim.gate();
                    let waits = || queued.load(SeqCst);
                    if gate.is_busy() {
                        // left to the holder (step 4)
                    } else if gate.has_sleeper() || (gate.handoff_ok() && waits()) {
                        if waits() {
                            woken.store(true, SeqCst);
                        }
                    } else if !(gate.handoff_ok() && gate.give_back(|| !waits())) {
                        runner.store(true, SeqCst);
                    }
                }
                done.store(true, SeqCst);
            })
        };
        let gate = t.perim.gate();
        let mut n = 0;
        loop {
            if how != Waiter::Sleeper {
                queued.store(true, SeqCst); // poll_wait, before the poll enters
            }
            let mut g = t.perim.enter();
            n += core::iter::from_fn(|| g.read()).count();
            let watched = how != Waiter::Sleeper;
            let later = t.perim.leave_watched(&mut g, watched, false);
            if n == 1 {
                drop(g);
                later.finish(0);
                queued.store(false, SeqCst);
                if t.perim.needs_run() {
                    t.run(0);
                }
                break;
            }
            if how == Waiter::Sleeper {
                g.unbusy();
                if t.perim.needs_run() {
                    drop(g);
                    later.finish(0);
                    t.run(0);
                    continue;
                }
                queued.store(true, SeqCst);
                gate.sleeper_queued();
                if gate.has_pending() {
                    queued.store(false, SeqCst);
                    gate.sleeper_woken();
                    drop(g);
                    later.finish(0);
                    continue;
                }
            }
            drop(g);
            later.finish(0);
            if how != Waiter::Sleeper && t.perim.needs_run() {
                t.run(0);
                continue;
            }
            while !woken.load(SeqCst) && !done.load(SeqCst) {
                thread::yield_now();
            }
            let by_wake = woken.swap(false, SeqCst);
            assert!(
                by_wake || runner.load(SeqCst) || !gate.has_pending(),
                "wakeup lost: a put given back while someone waited for it"
            );
            if how == Waiter::Sleeper {
                gate.sleeper_woken();
            }
            queued.store(false, SeqCst);
            if !by_wake && !runner.load(SeqCst) {
                break; // nothing came for this sleep: the datum was read already
            }
        }
        producer.join().expect("producer");
        if runner.load(SeqCst) {
            t.run(0);
        }
        // What was given back waits for the next enter: it finds it.
        n += t.op(|s| core::iter::from_fn(|| s.read()).count());
        assert_eq!(n, 1);
        assert!(!gate.has_pending(), "put stranded");
        assert!(
            !gate.sched_flag().is_scheduled(),
            "claim left standing with nobody to serve it"
        );
    });
}

#[test]
fn l_give_back_to_a_sleeper_loses_nothing() {
    give_back_model(Waiter::Sleeper);
}

#[test]
fn l_give_back_to_a_poller_loses_nothing() {
    give_back_model(Waiter::Poller);
}

// (j) ------------------------------------------------------------------------------------------

/// An open hold cell holding a message of an 8-byte buffer (its room rounded up as the block
/// cache gives it) with `held(room)` bytes of `a` in it.
fn open_cell(held: impl FnOnce(usize) -> usize) -> Arc<streams_core::sth::hold::HoldCell> {
    let cell = Arc::new(streams_core::sth::hold::HoldCell::new().expect("cell"));
    let mut m = Msg::with_type(streams_core::msg::M_DATA, 8).expect("msg");
    let n = held(m.wr_room());
    m.append(&vec![b'a'; n]);
    cell.put(m, true);
    cell
}

/// Two threads joining the 1-byte writes `b` and `c` to `cell` without the Stream lock.
fn bc_joiners(cell: &Arc<streams_core::sth::hold::HoldCell>) -> Vec<thread::JoinHandle<bool>> {
    [b"b", b"c"]
        .into_iter()
        .map(|b| {
            let cell = cell.clone();
            thread::spawn(move || cell.join(b))
        })
        .collect()
}

/// How many of `joiners` joined.
fn joined(joiners: Vec<thread::JoinHandle<bool>>) -> usize {
    joiners
        .into_iter()
        .map(|j| usize::from(j.join().expect("joiner")))
        .sum()
}

#[test]
fn j_held_writes_vs_flush_lose_nothing() {
    model(|| {
        let cell = open_cell(|_| 1);
        let joiners = bc_joiners(&cell);
        // The head, under its lock: seal (a hangup), then take (a flush).
        cell.seal();
        let sealed = cell.state().map_or(0, |(n, _)| n);
        let taken = cell.take().map_or(0, |m| m.msgsize());
        let joined = joined(joiners);
        assert_eq!(taken, 1 + joined, "a joined byte lost or duplicated");
        assert_eq!(sealed, taken, "a byte joined after the seal");
        assert!(!cell.join(b"d"), "joined after the take");
        assert!(cell.take().is_none());
    });
}

/// (j) with the join straight from user space (`HoldCell::join_user`, the copy made under
/// the cell's lock): a copy that works appends its byte like a join, one that faults appends
/// nothing and reports so (its write stages the bytes and joins again), and neither joins
/// after the seal or the take.
#[test]
fn j_held_writes_from_user_space_vs_flush_lose_nothing() {
    use streams_core::sth::{FailIo, SliceIo};
    model(|| {
        let cell = open_cell(|_| 1);
        let copies = {
            let cell = cell.clone();
            thread::spawn(move || cell.join_user(&mut SliceIo(&mut [b'b']), 1))
        };
        let faults = {
            let cell = cell.clone();
            thread::spawn(move || cell.join_user(&mut FailIo, 1))
        };
        // The head, under its lock: seal (a hangup), then take (a flush).
        cell.seal();
        let sealed = cell.state().map_or(0, |(n, _)| n);
        let taken = cell.take();
        let joined = usize::from(copies.join().expect("joiner"));
        assert!(!faults.join().expect("joiner"), "a faulting copy joined");
        let bytes = taken.as_ref().map_or(&[][..], |m| m.rd());
        assert_eq!(bytes.len(), 1 + joined, "a joined byte lost or duplicated");
        assert!(
            bytes.iter().all(|&b| b == b'a' || b == b'b'),
            "a failed copy's bytes kept"
        );
        assert_eq!(sealed, bytes.len(), "a byte joined after the seal");
        assert!(
            !cell.join_user(&mut SliceIo(&mut [b'd']), 1),
            "joined after the take"
        );
        assert!(cell.take().is_none());
    });
}

/// (j) at the exact fill: two 1-byte joiners race for the held message's last byte of room
/// while the head takes it (a flush). A join may fill the message exactly, never past it: at
/// most one joins before the take, the message taken is at most full, and every byte a join
/// accepted is in it once; the one that found no room (or no message) goes under the lock.
#[test]
fn j_held_writes_fill_exactly_and_never_past_full() {
    model(|| {
        let mut room = 0;
        let cell = open_cell(|r| {
            room = r;
            r - 1
        });
        let joiners = bc_joiners(&cell);
        let taken = cell.take().expect("held");
        let joined = joined(joiners);
        assert!(joined <= 1, "a join went past the full message");
        assert_eq!(
            taken.msgsize(),
            room - 1 + joined,
            "a joined byte lost or duplicated"
        );
        assert_eq!(taken.wr_room(), 1 - joined);
    });
}

// (k) ------------------------------------------------------------------------------------------

/// A reader Stream whose driver read queue is the entry of a link from a writer Stream, its
/// head's high-water mark 1, with one 1-byte message on the inbound list, not yet taken: the
/// published state says "not full", and the pending bytes refuse the next writer.
fn linked_pending() -> (Arc<Perim>, Arc<Perim>, QueueId) {
    let r = stream();
    let w = stream();
    let wq = w.op(|s| s.head_wq());
    let back = w.qref(wq);
    let entry = r.op(|s| {
        let h = s.head_rq();
        let _ = s.qctx(h).strqset(QField::Hiwat, 0, 1);
        let _ = s.qctx(h).strqset(QField::Lowat, 0, 0);
        let d = s.driver_rq().expect("driver");
        s.set_remote(d, Some(back));
        d
    });
    let m = Msg::from_bytes(streams_core::msg::M_DATA, b"x").expect("msg");
    let _claimed = r.put_in(entry, m).expect("open"); // the reader's op below serves it
    (r, w, entry)
}

#[test]
fn k_idle_publish_still_back_enables_a_writer_refused_for_pending_bytes() {
    model(|| {
        let (r, w, entry) = linked_pending();
        let before = w.runs();
        let (writer, refused) = ask_once(&r, entry);
        // One lock hold takes the inbound list (the head fills, QFULL) and drains the head
        // (QFULL clear again): what it would publish is what was published, but for the marks.
        r.op(|s| while s.read().is_some() {});
        writer.join().expect("writer");
        back_enabled_then_close("", &r, &w, before, refused.load(SeqCst));
    });
}

/// A writer on the words of one slot with loom atomics (`Flow::bcanput`'s steps): it goes if
/// `open` says so of `word`; else it marks `want`, fences, and tests again. Returns whether
/// it went.
fn raw_writer(
    word: &LArc<AtomicU64>,
    want: &LArc<AtomicU64>,
    open: fn(u64) -> bool,
) -> thread::JoinHandle<bool> {
    let (word, want) = (word.clone(), want.clone());
    thread::spawn(move || {
        if open(word.load(SeqCst)) {
            return true;
        }
        want.fetch_or(1, SeqCst);
        loom::sync::atomic::fence(SeqCst);
        open(word.load(SeqCst))
    })
}

/// The words of one slot with loom atomics: a writer refused for pending bytes, and a reader
/// that takes the inbound list (clears the count, fences) and then decides whether to
/// publish. `looks_at_marks`: the skip also asks for no waiting writer, as
/// `Flow::band0_unchanged` does.
fn idle_skip_model(looks_at_marks: bool) {
    model(move || {
        let pending = LArc::new(AtomicU64::new(1));
        let want = LArc::new(AtomicU64::new(0));
        let writer = raw_writer(&pending, &want, |p| p < 1); // hiwat 1
                                                             // The take: the count goes to zero, then the fence of `Gate::take_into`.
        pending.store(0, SeqCst);
        loom::sync::atomic::fence(SeqCst);
        // The published full bit and water marks did not change: skip unless a writer waits.
        let skip = !looks_at_marks || want.load(SeqCst) & 1 == 0;
        let backenabled = !skip && want.fetch_and(!1, SeqCst) & 1 != 0;
        let went = writer.join().expect("writer");
        if !went {
            assert!(backenabled, "lost back-enable");
        }
    });
}

#[test]
fn k_idle_skip_that_looks_at_the_marks_loses_nothing() {
    idle_skip_model(true);
}

#[test]
#[should_panic(expected = "lost back-enable")]
fn k_idle_skip_ignoring_the_marks_is_caught() {
    idle_skip_model(false);
}

// (m) ------------------------------------------------------------------------------------------

/// How the concurrent writer of [`express_model`] writes without the writing Stream's lock.
#[derive(Clone, Copy, PartialEq)]
enum Express {
    /// `Perim::write_express`: the armed word checked and the put counted under the target's
    /// inbound lock.
    Word,
    /// By hand: the armed word checked and counted (`ExpressWord::admit`) without the
    /// target's inbound lock, then an ordinary put into the target.
    Unlocked,
}

/// A writing Stream (a real Stream head over `nullpass`, whose write put procedure is stepped
/// over as a pipe's twist is) linked to a reader Stream's driver read queue, after one
/// locked write that went across (so the express write is armed); and that entry.
fn express_armed() -> (
    Arc<TestPerim<streams_core::sth::StrHead>>,
    Arc<Perim>,
    QueueId,
) {
    let r = stream();
    let entry = r.op(|s| s.driver_rq().expect("driver"));
    let s = streams_core::sth::Stream::sth_new(&NULLPASS).expect("open");
    let w = TestPerim::new(s).expect("perimeter");
    let to = r.qref(entry);
    w.op(|s| {
        let d = s.driver_wq().expect("driver");
        s.set_remote(d, Some(to));
    });
    let sent = w.op(|s| {
        let mut slot = Some(Msg::from_bytes(streams_core::msg::M_DATA, b"a").expect("msg"));
        s.strwrite_prebuilt(&mut slot, true)
    });
    assert_eq!(sent, Ok(1), "the first write");
    assert!(
        w.perim.express_armed(),
        "a write across arms the express write"
    );
    (w, r, entry)
}

/// The messages that reached `r`: an enter applies its inbound list, and its head (a
/// `RawHead`) queues them.
fn received(r: &Perim) -> usize {
    r.op(|s| s.queue(s.head_rq()).map_or(0, |q| q.qsize()))
}

/// Express writes against a hold of the writing Stream's lock (whatever it would change, a
/// push, a hangup, a close): a writer thread makes two writes without the lock, each falling
/// back to a locked write when refused, while the main thread holds the writing Stream's lock
/// and looks at what reached the reader twice (each look a hold of the reader's lock: two
/// Stream locks held together, which only this model does). No express put lands within that hold after
/// its enter disarmed; every message arrives once; and the writing Stream's statistics count
/// each put exactly once (the express puts when the next hold disarms).
fn express_model(how: Express) {
    model(move || {
        let (w, r, entry) = express_armed();
        let writer = {
            let (w, r) = (w.clone(), r.clone());
            thread::spawn(move || {
                for _ in 0..2 {
                    let m = Msg::from_bytes(streams_core::msg::M_DATA, b"x").expect("msg");
                    let back = match how {
                        Express::Word => w.perim.write_express(m).err(),
                        Express::Unlocked if w.perim.express_word().admit(key_of(&*r)) => {
                            if r.put_in(entry, m).expect("open") {
                                r.run(0);
                            }
                            None
                        }
                        Express::Unlocked => Some(m),
                    };
                    if let Some(m) = back {
                        let sent = w.op(|s| s.strwrite_prebuilt(&mut Some(m), true));
                        assert_eq!(sent, Ok(1), "express: the locked write");
                    }
                }
            })
        };
        w.op(|_| {
            let before = received(&r);
            assert_eq!(
                received(&r),
                before,
                "express: a put landed in a hold after its enter"
            );
        });
        writer.join().expect("writer");
        assert_eq!(received(&r), 3, "express: lost or doubled");
        let puts = w.op(|s| s.driver_wq().and_then(|d| s.mstat(d)).map(|m| m.ms_pcnt));
        assert_eq!(puts, Some(3), "express: statistics");
        w.op(|s| s.sth_close());
        w.close_gate();
        r.op(|s| s.close());
        r.close_gate();
    });
}

#[test]
fn m_express_write_vs_lock_hold() {
    express_model(Express::Word);
}

#[test]
#[should_panic(expected = "express:")]
fn m_express_write_checked_outside_the_target_lock_is_caught() {
    express_model(Express::Unlocked);
}

// (n) ------------------------------------------------------------------------------------------

/// [`sth_linked`] with the head's water marks 2 and 0, two 1-byte messages queued at the
/// head (full, and published so).
fn run_full() -> (
    Arc<TestPerim<streams_core::sth::StrHead>>,
    Arc<Perim>,
    QueueId,
) {
    let (r, w, entry) = sth_linked(2, 0);
    for b in [b"a", b"b"] {
        let m = Msg::from_bytes(streams_core::msg::M_DATA, b).expect("msg");
        if r.put_in(entry, m).expect("open") {
            r.run(0);
        }
    }
    r.op(|_| ()); // up to the head
    assert!(!r.bcanput_in(entry, 0), "the reader's head must be full");
    // The refusal above left a mark; the model starts from a clean one.
    let _ = read_direct(&r, 1);
    let m = Msg::from_bytes(streams_core::msg::M_DATA, b"c").expect("msg");
    if r.put_in(entry, m).expect("open") {
        r.run(0);
    }
    r.op(|_| ());
    w.run_scheduled();
    (r, w, entry)
}

/// The read's run (`Stream::sth_read_run`) marks the flow control stale only when the head
/// queue's flow state changes (`Queue::flow_state`): a writer refused while the head is full
/// is back-enabled by the read that leaves the queue low, though the read before it, which
/// only cleared QFULL, found it not low yet and kept its mark.
#[test]
fn n_read_run_back_enables_a_writer_refused_at_full() {
    model(|| {
        let (r, w, entry) = run_full();
        let before = w.runs();
        let (writer, refused) = ask_once(&r, entry);
        let (first, _) = read_direct(&r, 1);
        let (second, _) = read_direct(&r, 1);
        assert_eq!((first, second), (b"b".to_vec(), b"c".to_vec()));
        writer.join().expect("writer");
        back_enabled_then_close("", &r, &w, before, refused.load(SeqCst));
    });
}

/// The rule of (n) on the words of one slot with loom atomics: a queue of two bytes at its
/// high-water mark 2 (published full), low-water mark 0, a writer refused meanwhile; the
/// reader takes one byte per lock hold, each hold publishing only if the flow state it
/// watches changed. `watch_low`: that state includes "at or below the low-water mark", as
/// `Queue::flow_state` does; without it only QFULL's change publishes.
fn run_publish_model(watch_low: bool) {
    model(move || {
        let full = LArc::new(AtomicU64::new(1));
        let want = LArc::new(AtomicU64::new(0));
        let writer = {
            let (full, want) = (full.clone(), want.clone());
            thread::spawn(move || {
                if full.load(SeqCst) & 1 == 0 {
                    return true;
                }
                want.fetch_or(1, SeqCst);
                loom::sync::atomic::fence(SeqCst);
                full.load(SeqCst) & 1 == 0
            })
        };
        let (hiwat, lowat) = (2, 0);
        let mut count = 2;
        let mut backenabled = false;
        for _ in 0..2 {
            let state = |c: i32| (c >= hiwat, watch_low && c <= lowat);
            let was = state(count);
            count -= 1;
            let (is_full, low) = (count >= hiwat, count <= lowat);
            if state(count) == was {
                continue; // nothing the published state is computed from changed: no publish
            }
            // `Flow::publish` of band 0.
            if !is_full && full.load(SeqCst) & 1 != 0 {
                full.fetch_and(!1, SeqCst);
                loom::sync::atomic::fence(SeqCst);
            }
            if low && want.load(SeqCst) & 1 != 0 && want.fetch_and(!1, SeqCst) & 1 != 0 {
                backenabled = true;
            }
        }
        let went = writer.join().expect("writer");
        if !went {
            assert!(backenabled, "lost back-enable");
        }
    });
}

#[test]
fn n_run_publishing_on_low_loses_nothing() {
    run_publish_model(true);
}

#[test]
#[should_panic(expected = "lost back-enable")]
fn n_run_publishing_on_full_alone_is_caught() {
    run_publish_model(false);
}

// (o) ------------------------------------------------------------------------------------------

/// The reader's `ready` of [`lazy_take_model`]: what `sth::call::read` asks (the head's queue
/// satisfies a read of `len`, the reader token idle), or, wrongly, the head's queue alone.
#[derive(Clone, Copy, PartialEq)]
enum Ready {
    /// `tok.is_idle() && sth_read_ready(len)`.
    WithToken,
    /// `sth_read_ready(len)`: a read that waits for the token may leave data behind.
    HeadOnly,
}

/// read(2) of one byte (non-blocking) through `Perim::enter_read` with `ready`: the byte, or
/// none if the read would block; a read that would block must have found nothing left on
/// the inbound list (the platform would put it to sleep: `perim` step 7's lazy take takes
/// the list whenever the read cannot complete from the head).
fn read_lazy(
    r: &TestPerim<streams_core::sth::StrHead>,
    tok: &streams_core::sth::take::ReaderToken,
    ready: Ready,
) -> Option<u8> {
    let mut t = streams_core::sth::Taken::new();
    let blocked = r.op_read(
        |s| (ready == Ready::HeadOnly || tok.is_idle()) && s.sth_read_ready(1),
        |s| {
            let blocked = s.strread(1, true, tok, &mut t).is_err();
            assert!(
                !(blocked && s.left_inbound()),
                "lazy take: a read that blocks left data on the inbound list"
            );
            blocked
        },
    );
    if blocked {
        return None;
    }
    tok.release();
    taken_bytes(&t).first().copied()
}

/// The lazy take against a second reader of the same head (holding the reader token while it
/// copies its take out) and against a hangup arriving from below: the head holds "a" and
/// "b", "c" waits on the inbound list (a lazy put). Each read of one byte either reads from
/// the head and leaves "c" there, or takes the list; a read that must wait (for the token)
/// never leaves data behind; the hangup (no ordinary data: it claims) is applied, all of the
/// list with it, by the time its put returned and the reader let go; all bytes are read once,
/// in order, then end of file. A `ready` that forgets the token is caught.
fn lazy_take_model(ready: Ready) {
    model(move || {
        let (r, w, entry) = sth_linked(8, 0);
        for b in [b"a", b"b"] {
            let m = Msg::from_bytes(streams_core::msg::M_DATA, b).expect("msg");
            if r.put_in(entry, m).expect("open") {
                r.run(0);
            }
        }
        r.op(|_| ()); // "a" and "b" up to the head
        let m = Msg::from_bytes(streams_core::msg::M_DATA, b"c").expect("msg");
        assert!(!r.put_in(entry, m).expect("open"), "a lazy put claimed");
        let tok = LArc::new(streams_core::sth::take::ReaderToken::new());
        let other = {
            let (r, tok) = (r.clone(), tok.clone());
            thread::spawn(move || read_lazy(&r, &tok, ready))
        };
        let hangup = {
            let r = r.clone();
            thread::spawn(move || {
                let m = Msg::from_bytes(streams_core::msg::M_HANGUP, b"").expect("msg");
                if r.put_in(entry, m).expect("open") {
                    r.run(0);
                }
            })
        };
        let mine = read_lazy(&r, &tok, ready);
        let theirs = other.join().expect("reader");
        hangup.join().expect("hangup");
        assert!(
            !r.perim.gate().has_pending(),
            "lazy take: the hangup left on the inbound list"
        );
        let mut got: Vec<u8> = mine.into_iter().chain(theirs).collect();
        got.sort_unstable(); // two readers: either may have read first
        while let Some(b) = read_lazy(&r, &tok, ready) {
            got.push(b);
        }
        assert_eq!(got, b"abc", "lazy take: lost, doubled or out of order");
        back_enabled_then_close("lazy take: ", &r, &w, w.runs(), false);
    });
}

#[test]
fn o_lazy_take_vs_reader_and_hangup() {
    lazy_take_model(Ready::WithToken);
}

#[test]
#[should_panic(expected = "lazy take: a read that blocks")]
fn o_lazy_take_without_the_token_is_caught() {
    lazy_take_model(Ready::HeadOnly);
}

// (p) ------------------------------------------------------------------------------------------

/// The transmit path of model (p): a send is marked in flight while it transmits, then
/// answers (as a transmit error's T_UDERROR_IND).
struct ModelTx {
    in_send: AtomicBool,
    sent: loom::sync::atomic::AtomicUsize,
}

impl ExpressTx for ModelTx {
    fn send(&self, m: Msg) -> Sent {
        self.in_send.store(true, SeqCst);
        self.sent.fetch_add(1, SeqCst);
        drop(m);
        self.in_send.store(false, SeqCst);
        match Msg::from_bytes(streams_core::msg::M_PROTO, b"answer") {
            Ok(a) => Sent::Answer(a),
            Err(_) => Sent::Done,
        }
    }
}

/// How the sender of [`express_send_model`] sends.
#[derive(Clone, Copy)]
enum Sender {
    /// `Perim::send_express` (through `TestPerim::send_express`): claim, send, answer,
    /// release.
    Claimed,
    /// By hand, wrongly: look at the armed word, then send and put the answer, with no claim
    /// that the hold's enter would wait for.
    Unclaimed,
}

/// The express send (`perim` step 9) against a lock hold that withdraws the path (as an
/// unbind does): the hold never overlaps a send in flight, the answer of a send claimed
/// before its enter is at the head when its operation runs, a send after it is refused,
/// and each send is counted once on the driver's write queue.
fn express_send_model(how: Sender) {
    model(move || {
        let t = sth_stream();
        let tx = Arc::new(ModelTx {
            in_send: AtomicBool::new(false),
            sent: loom::sync::atomic::AtomicUsize::new(0),
        });
        let (q, rq) = t.op(|s| (s.driver_wq().expect("driver"), s.head_rq()));
        let path: Arc<dyn ExpressTx> = tx.clone();
        // Publish the path, then two locked putmsgs of an M_PROTO (a run): the second's
        // leave arms.
        let putmsg = |s: &mut streams_core::sth::Stream| {
            let band = streams_core::sth::consts::MSG_BAND;
            streams_core::sth::tests::put(s, Some(b"req"), None, 0, band)
        };
        t.op(|s| s.qctx(q).set_express_tx(Some(path)));
        let r = t.op(putmsg).and_then(|()| t.op(putmsg));
        assert!(
            r.is_ok() && t.perim.express_send_armed(),
            "express send: armed"
        );
        let sender = {
            let (t, tx) = (t.clone(), tx.clone());
            thread::spawn(move || {
                let m = Msg::from_bytes(streams_core::msg::M_PROTO, b"req").expect("msg");
                match how {
                    Sender::Claimed => t.send_express(&mut Some(m), &mut None),
                    Sender::Unclaimed => {
                        if !t.perim.express_send_armed() {
                            return false;
                        }
                        if let Sent::Answer(a) = tx.send(m) {
                            if t.put_in(rq, a).unwrap_or(false) {
                                t.run(0);
                            }
                        }
                        true
                    }
                }
            })
        };
        let (sent, answers) = t.op(|s| {
            assert!(
                !tx.in_send.load(SeqCst),
                "express send: a hold overlapped a send in flight"
            );
            let answers = s.queue(rq).map_or(0, |h| h.count()) / 6;
            s.qctx(q).set_express_tx(None);
            (tx.sent.load(SeqCst), answers)
        });
        assert_eq!(
            answers, sent,
            "express send: a hold overlapped a send (its answer came after the enter)"
        );
        let went = sender.join().expect("sender");
        assert_eq!(
            usize::from(went),
            tx.sent.load(SeqCst),
            "express send: refused"
        );
        assert!(!t.perim.express_send_armed(), "express send: withdrawn");
        if matches!(how, Sender::Claimed) {
            // (The sender by hand counts nothing.)
            let puts = t.op(|s| s.mstat(q).map(|m| m.ms_pcnt as usize));
            assert_eq!(
                puts,
                Some(2 + usize::from(went)),
                "express send: statistics"
            );
        }
        t.op(|s| s.sth_close());
        t.close_gate();
    });
}

#[test]
fn p_express_send_vs_lock_hold() {
    express_send_model(Sender::Claimed);
}

#[test]
#[should_panic(expected = "express send: a hold overlapped")]
fn p_express_send_without_a_claim_is_caught() {
    express_send_model(Sender::Unclaimed);
}

// (q) ------------------------------------------------------------------------------------------

/// Who starts watching the head in [`watcher_model`].
#[derive(Clone, Copy, PartialEq)]
enum Watcher {
    /// poll(2): on the wait queue before it enters; its leave clears *lazy*.
    Poller,
    /// An O_ASYNC owner: told by a signal, which only a hold that applies the put sends, not
    /// through the wait queue; its leave clears *lazy* and *handoff*.
    Owner,
}

/// A watcher arrives (`perim` steps 5 and 6): the gate is lazy and hands claims off (a quiet
/// leave, nobody watching), then a hold that sees the watcher clears *lazy* (and, for an
/// O_ASYNC owner, *handoff*) with relaxed stores, racing with a producer's ordinary put that
/// claims as `StrPerim::schedule` does. Either the producer sees the clears (it claims, and
/// wakes the poller or schedules the runner instead of giving the claim back), or the
/// holder's look after it let go (`Perim::needs_run`, when `fenced`; else the same loads
/// without the fence) sees the put and runs the perimeter. A put left on the inbound list
/// with nobody woken and no run is an arrival the watcher never hears of.
fn watcher_model(who: Watcher, fenced: bool) {
    model(move || {
        let t = sth_stream();
        let rq = t.op(|s| s.head_rq());
        let gate = t.perim.gate();
        assert!(
            gate.is_lazy() && gate.handoff_ok(),
            "a quiet head, nobody watching"
        );
        // The poller queues itself before its poll enters (`poll_wait`).
        let queued = LArc::new(AtomicBool::new(who == Watcher::Poller));
        let woken = LArc::new(AtomicBool::new(false));
        let runner = LArc::new(AtomicBool::new(false));
        let producer = {
            let (t, queued, woken, runner) =
                (t.clone(), queued.clone(), woken.clone(), runner.clone());
            thread::spawn(move || {
                let m = Msg::from_bytes(streams_core::msg::M_DATA, b"d").expect("msg");
                if t.put_in(rq, m).expect("open") {
                    // `StrPerim::schedule`.
                    let gate = t.perim.gate();
                    if gate.is_busy() {
                        return; // left to the holder (step 4)
                    }
                    let waits = || queued.load(SeqCst);
                    if gate.has_sleeper() || (gate.handoff_ok() && waits()) {
                        woken.store(true, SeqCst);
                    } else if !(gate.handoff_ok() && gate.give_back(|| !waits())) {
                        runner.store(true, SeqCst);
                    }
                }
            })
        };
        // The watcher's hold: the poll's enter, or the hold after an O_ASYNC owner was added.
        {
            let mut g = t.perim.enter();
            let later = t.perim.leave_watched(&mut g, true, who == Watcher::Owner);
            drop(g);
            later.finish(0);
        }
        let look = if fenced {
            t.perim.needs_run()
        } else {
            gate.sched_flag().is_scheduled() || (gate.has_pending() && !gate.is_lazy())
        };
        if look {
            t.run(0);
        }
        producer.join().expect("producer");
        let told = match who {
            Watcher::Poller => woken.load(SeqCst),
            Watcher::Owner => false,
        };
        assert!(
            !gate.has_pending() || told || runner.load(SeqCst),
            "arrival unheard: a put left pending for a watcher nobody tells"
        );
        if runner.load(SeqCst) {
            t.run(0);
        }
        let n = t.op(|s| core::iter::from_fn(|| s.read()).count());
        assert_eq!(n, 1);
    });
}

#[test]
fn q_watcher_arriving_hears_of_every_put() {
    watcher_model(Watcher::Poller, true);
    watcher_model(Watcher::Owner, true);
}

#[test]
#[should_panic(expected = "arrival unheard")]
fn q_poller_whose_look_has_no_fence_is_caught() {
    watcher_model(Watcher::Poller, false);
}

#[test]
#[should_panic(expected = "arrival unheard")]
fn q_owner_whose_look_has_no_fence_is_caught() {
    watcher_model(Watcher::Owner, false);
}

/// What the stale hold expiry of model (r) checks before it sends.
#[derive(Clone, Copy, PartialEq)]
enum ExpiryCheck {
    /// The generation recorded, and that the timer is not pending again (`hold_expired`).
    GenAndPending,
    /// The generation only.
    Gen,
    /// Nothing: it sends whatever is held.
    Nothing,
}

/// The Stream head's side of model (r): the run's generation and which run is held.
struct HeldRun {
    gen: u32,
    held: Option<u32>,
}

/// The timer's lock of model (r): the generation recorded and the work item's pending bit.
struct HoldTimer {
    armed: u32,
    pending: bool,
}

/// The expiry (`hold_expired`) under the Stream lock: returns the run it sent, if any.
fn hold_expiry(
    s: &mut HeldRun,
    timer: &loom::sync::Mutex<HoldTimer>,
    check: ExpiryCheck,
) -> Option<u32> {
    let send = {
        let t = timer.lock().unwrap();
        match check {
            ExpiryCheck::GenAndPending => !t.pending && t.armed == s.gen,
            ExpiryCheck::Gen => t.armed == s.gen,
            ExpiryCheck::Nothing => true,
        }
    };
    if send {
        s.held.take()
    } else {
        None
    }
}

fn hold_timer_model(check: ExpiryCheck) {
    loom::model(move || {
        // Run 1 is held and its expiry is running (dequeued: not pending).
        let head = LArc::new(loom::sync::Mutex::new(HeldRun {
            gen: 1,
            held: Some(1),
        }));
        let timer = LArc::new(loom::sync::Mutex::new(HoldTimer {
            armed: 1,
            pending: false,
        }));
        let (h, t) = (head.clone(), timer.clone());
        let writer = thread::spawn(move || {
            let gen = {
                let mut s = h.lock().unwrap();
                // The write that finds the run full sends it (unless run 1's expiry came
                // first) and starts run 2.
                let _ = s.held.take();
                s.gen += 1;
                s.held = Some(s.gen);
                s.gen
            };
            // `act_events`, after the Stream lock: record and re-arm under the timer's lock.
            let mut t = t.lock().unwrap();
            t.armed = gen;
            t.pending = true;
        });
        let stale = hold_expiry(&mut head.lock().unwrap(), &timer, check);
        writer.join().unwrap();
        assert_ne!(
            stale,
            Some(2),
            "run 2 sent early: by the expiry armed for run 1"
        );
        // Run 2's own expiry: the work item re-armed for it is dequeued, then runs.
        let pending = core::mem::replace(&mut timer.lock().unwrap().pending, false);
        assert!(pending, "run 2 has no expiry of its own");
        let own = hold_expiry(&mut head.lock().unwrap(), &timer, check);
        assert_eq!(own, Some(2), "run 2 not sent by its own expiry");
    });
}

#[test]
fn r_stale_hold_expiry_sends_nothing() {
    hold_timer_model(ExpiryCheck::GenAndPending);
}

#[test]
#[should_panic(expected = "sent early")]
fn r_expiry_without_the_pending_check_is_caught() {
    hold_timer_model(ExpiryCheck::Gen);
}

#[test]
#[should_panic(expected = "sent early")]
fn r_expiry_without_any_check_is_caught() {
    hold_timer_model(ExpiryCheck::Nothing);
}
