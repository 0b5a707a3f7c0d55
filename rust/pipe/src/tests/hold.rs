//! Shared tests of write hold (SNDHOLD, `sth/write.rs` and `sth/hold.rs` in the core) across
//! a STREAMS pipe, through the system calls' platform half (`sth::call`): writes of up to
//! [`STRHOLDPSZ`] bytes fill held messages of [`STRHOLDSZ`] bytes, up to a held run of
//! [`STRHOLDRUN`] of them, which crosses to the reader when the next write would need one
//! more, with the bytes in order across message boundaries; a held write asks flow control
//! only when it would send the run, so what the reader's head queues stays within its
//! high-water mark plus one run; the hold timer's flush and the other flushes send a partial
//! run.

/// Bytes a held run holds at most.
const RUN: usize = STRHOLDRUN * STRHOLDSZ;

/// What write hold holds after each write, as the tests expect it: the newest held message,
/// the held run before it, and what went across.
#[derive(Default)]
struct Model {
    /// Bytes of the newest held message.
    held: usize,
    /// Bytes and messages of the held run.
    run: usize,
    nrun: usize,
    /// Bytes and messages sent, runs sent.
    sent: usize,
    msgs: usize,
    runs: usize,
    /// Messages that left the cell full (exactly filled), and with room no write fit in.
    full: usize,
    no_room: usize,
}

impl Model {
    /// A held write of `n` bytes; whether it took the Stream lock (it started a message).
    fn write(&mut self, n: usize) -> bool {
        if self.held == 0 {
            self.held = n;
            return true;
        }
        if self.held + n <= STRHOLDSZ {
            self.held += n;
            return false;
        }
        if self.held == STRHOLDSZ {
            self.full += 1;
        } else {
            self.no_room += 1;
        }
        if self.nrun + 1 < STRHOLDRUN {
            (self.run, self.nrun) = (self.run + self.held, self.nrun + 1);
        } else {
            self.sent += self.run + self.held;
            (self.msgs, self.runs) = (self.msgs + self.nrun + 1, self.runs + 1);
            (self.run, self.nrun) = (0, 0);
        }
        self.held = n;
        true
    }

    /// Bytes held: the run and the newest message.
    fn holds(&self) -> usize {
        self.run + self.held
    }
}

use super::{EndCall, TestPipe};
use core::cell::Cell;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::msg::{Msg, M_FLUSH};
use streams_core::sth::call::{self, HeadCall, HeadShared, STAGE_STACK};
use streams_core::sth::consts::*;
use streams_core::sth::Stop;
use streams_core::sth::{IocArg, Part, SliceIo, Stream, UserIo, STRHOLDPSZ, STRHOLDRUN, STRHOLDSZ};
use streams_core::stream::{Registry, STRHIGH};
use streams_core::sys;
use streams_core::{check, check_eq, check_ok, check_some, ktest_suite};

/// The byte at offset `i` of everything written.
fn pattern(i: usize) -> u8 {
    (i % 251) as u8
}

/// Turn write hold on at end `end` of `s` (I_SWROPT SNDHOLD).
pub(super) fn hold_writes(s: &TestPipe, end: usize) -> TestResult {
    let r = Registry::new();
    let opt = IocArg::Int(i64::from(SNDHOLD));
    check_ok!(s.end(end, |s| s.strioctl(&r, I_SWROPT, opt)));
    Ok(())
}

/// A pipe whose end 0 holds its writes (SNDHOLD) and whose end 1 reads with read fill.
fn held_pipe() -> Result<TestPipe, Failure> {
    let s = check_ok!(TestPipe::new());
    hold_writes(&s, 0)?;
    let r = Registry::new();
    let opt = IocArg::Int(i64::from(RFILL));
    check_ok!(s.end(1, |s| s.strioctl(&r, I_SRDOPT, opt)));
    Ok(s)
}

/// `n` bytes of the pattern from offset `at`, on the heap (KUnit's stack is small).
fn patterned(at: usize, n: usize) -> Result<sys::Vec<u8>, Errno> {
    let mut b = sys::vec_zeroed(n).map_err(|_| Errno::ENOSR)?;
    for (i, x) in b.as_mut_slice().iter_mut().enumerate() {
        *x = pattern(at + i);
    }
    Ok(b)
}

/// A non-blocking write at end 0 of `len` bytes of the pattern from offset `at`.
fn write_at(s: &TestPipe, at: usize, len: usize) -> Result<usize, Errno> {
    let mut b = patterned(at, len)?;
    call::write(&s.call(0), &mut SliceIo(b.as_mut_slice()), len, true)
}

/// End 0 as the platform of a system call that counts its lock holds.
struct Counted<'a> {
    end: EndCall<'a>,
    holds: Cell<usize>,
}

impl HeadCall for Counted<'_> {
    fn run<R>(
        &self,
        nonblock: bool,
        limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.holds.set(self.holds.get() + 1);
        self.end.run(nonblock, limit_ms, op, cancel)
    }
    fn shared(&self) -> &HeadShared {
        self.end.shared()
    }
    fn write_express(&self, m: Msg) -> Result<usize, Msg> {
        self.end.write_express(m)
    }
}

/// Puts across into end 1 so far (`module_stat` of its twist read queue).
fn puts_in(s: &TestPipe) -> usize {
    s.end(1, |s: &mut Stream| {
        super::super::twist_rq(s)
            .and_then(|q| s.mstat(q))
            .map_or(0, |m| m.ms_pcnt)
    })
}

/// Bytes queued at end 1's head.
fn queued(s: &TestPipe) -> usize {
    s.end(1, |s| s.queue(s.head_rq()).map_or(0, |q| q.count()))
}

/// Read everything end 1 has, checking it continues the pattern from offset `at`; the
/// offset after it.
fn read_all(s: &TestPipe, mut at: usize) -> Result<usize, Failure> {
    let mut b = [0u8; 64];
    loop {
        match call::read(&s.call(1), &mut SliceIo(&mut b), 64, true) {
            Ok(0) => return Ok(at),
            Ok(n) => {
                for &x in b.get(..n).unwrap_or_default() {
                    check_eq!(x, pattern(at));
                    at += 1;
                }
            }
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                return Ok(at);
            }
        }
    }
}

/// Writes of several sizes up to STRHOLDPSZ (staged on the stack and built before the lock
/// alike) fill held messages; a message filled exactly stays held, and the next write, which
/// does not fit, moves it to the held run, or, with the run full, sends the run (its
/// messages in order); the reader gets every byte in order across message boundaries.
fn held_writes_go_across_a_run_at_a_time() -> TestResult {
    let s = held_pipe()?;
    // The first round fills a message exactly; the later ones leave room a write does not
    // fit in.
    let exact = [64, 200, STRHOLDPSZ, 1000, 129, 7, 1000, 672];
    let short = [64, 200, STRHOLDPSZ, 1000, 129, 7, 1000, 600];
    let (mut at, mut got, mut m) = (0, 0, Model::default());
    for round in 0..12 {
        let sizes = if round == 0 { &exact } else { &short };
        for &n in sizes {
            check_eq!(write_at(&s, at, n), Ok(n));
            at += n;
            m.write(n);
            check_eq!(s.end(0, |s| s.sth().held()), m.holds());
            check_eq!(queued(&s), m.sent - got);
        }
        got = read_all(&s, got)?;
        check_eq!(got, m.sent);
    }
    check!(m.full >= 1 && m.no_room >= 2 && m.runs >= 2);
    // Only whole runs went across, a put per message of them.
    check_eq!(m.msgs, m.runs * STRHOLDRUN);
    check_eq!(puts_in(&s), m.msgs);
    // The hold timer's flush sends the partial run after what was sent.
    check!(m.nrun > 0);
    check_eq!(s.end(0, Stream::sth_flush_hold), m.holds());
    check_eq!(puts_in(&s), m.msgs + m.nrun + 1);
    check_eq!(read_all(&s, got)?, at);
    Ok(())
}

/// Two full messages in the held run and a partial one: `held` bytes written from offset 0.
fn partial_run(s: &TestPipe) -> Result<usize, Failure> {
    let held = 2 * STRHOLDSZ + 100;
    let mut at = 0;
    while at < held {
        let n = STRHOLDPSZ.min(held - at);
        check_eq!(write_at(s, at, n), Ok(n));
        at += n;
    }
    check_eq!(s.end(0, |s| s.sth().held()), held);
    check_eq!(queued(s), 0);
    Ok(held)
}

/// Each flush sends a partial held run, its messages and then the newest one, in order: a
/// read (SVR4: a read at the holding end sends what it holds), a putmsg (whose message goes
/// after them), close, and the hold timer's flush; an M_FLUSH of the write side frees it.
fn each_flush_sends_a_partial_run_in_order() -> TestResult {
    // read
    let s = held_pipe()?;
    let held = partial_run(&s)?;
    let mut b = [0u8; 8];
    let r = call::read(&s.call(0), &mut SliceIo(&mut b), 8, true);
    check_eq!(r, Err(Errno::EAGAIN));
    check_eq!((queued(&s), puts_in(&s)), (held, 3));
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!(read_all(&s, 0)?, held);
    // putmsg
    let s = held_pipe()?;
    let held = partial_run(&s)?;
    let mut d = [0u8; 16];
    for (i, x) in d.iter_mut().enumerate() {
        *x = pattern(held + i);
    }
    let data = Part {
        io: &mut SliceIo(&mut d),
        len: 16,
    };
    check_ok!(call::putmsg(&s.call(0), None, Some(data), 0, 0, true));
    check_eq!((queued(&s), puts_in(&s)), (held + 16, 4));
    check_eq!(read_all(&s, 0)?, held + 16);
    // close
    let s = held_pipe()?;
    let held = partial_run(&s)?;
    s.close(0);
    check_eq!(read_all(&s, 0)?, held); // then the hangup
                                       // the hold timer
    let s = held_pipe()?;
    let held = partial_run(&s)?;
    check_eq!(s.end(0, Stream::sth_flush_hold), held);
    check_eq!(s.end(0, Stream::sth_flush_hold), 0);
    check_eq!(puts_in(&s), 3);
    check_eq!(read_all(&s, 0)?, held);
    // M_FLUSH FLUSHW: the run and the newest message are freed, nothing goes
    let s = held_pipe()?;
    partial_run(&s)?;
    s.end(0, |s| {
        let m = Msg::from_bytes(M_FLUSH, &[FLUSHW]);
        if let Ok(m) = m {
            let h = s.head_rq();
            s.qctx(h).put(m);
        }
    });
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!(s.end(0, Stream::sth_flush_hold), 0);
    check_eq!(queued(&s), 0); // (the M_FLUSH itself goes across the pipe)
    Ok(())
}

/// A write too large to hold goes after the held run and the newest held message, in order.
fn larger_writes_go_after_a_held_run() -> TestResult {
    let s = held_pipe()?;
    let held = partial_run(&s)?;
    check_eq!(write_at(&s, held, STRHOLDPSZ + 1), Ok(STRHOLDPSZ + 1));
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!((queued(&s), puts_in(&s)), (held + STRHOLDPSZ + 1, 4));
    check_eq!(read_all(&s, 0)?, held + STRHOLDPSZ + 1);
    Ok(())
}

/// A write larger than STRHOLDPSZ is not held: what was held goes first, then it, as two
/// messages.
fn larger_writes_go_after_what_is_held() -> TestResult {
    let s = held_pipe()?;
    check_eq!(write_at(&s, 0, 100), Ok(100));
    check_eq!(queued(&s), 0);
    check_eq!(write_at(&s, 100, STRHOLDPSZ + 1), Ok(STRHOLDPSZ + 1));
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!(queued(&s), 100 + STRHOLDPSZ + 1);
    check_eq!(puts_in(&s), 2);
    check_eq!(read_all(&s, 0)?, 100 + STRHOLDPSZ + 1);
    Ok(())
}

/// Held writes join the held message without the Stream lock while it has room for them
/// (filling it exactly included), staged on the stack (up to `STAGE_STACK`) or from the
/// message built before the lock (larger ones, up to STRHOLDPSZ); only the write that starts
/// a message takes the lock, moving the one it found without room to the held run or sending
/// the full run: one locked write per message.
fn held_writes_join_without_the_lock() -> TestResult {
    joins_without_the_lock(300)?; // staged on the stack
    joins_without_the_lock(STAGE_STACK + 88)?; // built before the lock
    joins_without_the_lock(STRHOLDPSZ) // built, fills a message exactly
}

/// [`held_writes_join_without_the_lock`] with writes of `n` bytes.
fn joins_without_the_lock(n: usize) -> TestResult {
    let s = held_pipe()?;
    let c = Counted {
        end: s.call(0),
        holds: Cell::new(0),
    };
    let (mut at, mut got, mut m) = (0, 0, Model::default());
    for _ in 0..3 * RUN / n {
        let holds = counted_write(&c, at, n)?;
        at += n;
        check_eq!(holds, usize::from(m.write(n)));
        check_eq!(queued(&s), m.sent - got);
        check_eq!(s.end(0, |s| s.sth().held()), m.holds());
        got = read_all(&s, got)?; // a run is more than the reader's queue takes twice
        if m.runs == 2 {
            check_eq!(got, m.sent);
            check_eq!(s.end(0, Stream::sth_flush_hold), m.holds());
            check_eq!(read_all(&s, m.sent)?, at);
            return Ok(());
        }
    }
    check!(false); // not reached: two runs were sent
    Ok(())
}

/// User memory whose copies without a fault all fail (a page not present yet): the ordinary
/// copies work. Counts the attempts without a fault.
struct Absent<'a> {
    io: SliceIo<'a>,
    nofault: &'a Cell<usize>,
}

impl UserIo for Absent<'_> {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        self.io.copy_from_user(dst, off)
    }
    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno> {
        self.io.copy_to_user(off, src)
    }
    fn copy_from_user_nofault(&mut self, dst: &mut [u8], _off: usize) -> bool {
        self.nofault.set(self.nofault.get() + 1);
        dst.fill(0xee); // what a copy cut short may leave: never published
        false
    }
}

/// A held write whose copy without a fault fails (under the cell's lock) appends nothing
/// there, stages its bytes with the ordinary copy and joins from them, still without the
/// Stream lock; the bytes arrive in order, none of the failed copy's.
fn a_held_write_that_faults_goes_the_staged_way() -> TestResult {
    let s = held_pipe()?;
    let c = Counted {
        end: s.call(0),
        holds: Cell::new(0),
    };
    check_eq!(counted_write(&c, 0, 100)?, 1); // starts the held message under the lock
    let nofault = Cell::new(0);
    for (k, at) in [100usize, 150, 200].into_iter().enumerate() {
        let mut b = check_ok!(patterned(at, 50));
        let mut io = Absent {
            io: SliceIo(b.as_mut_slice()),
            nofault: &nofault,
        };
        c.holds.set(0);
        check_eq!(call::write(&c, &mut io, 50, true), Ok(50));
        check_eq!(c.holds.get(), 0); // joined without the Stream lock
        check_eq!(nofault.get(), k + 1); // after the copy without a fault was tried
        check_eq!(s.end(0, |s| s.sth().held()), at + 50);
    }
    check_eq!(s.end(0, Stream::sth_flush_hold), 250);
    check_eq!(read_all(&s, 0)?, 250);
    Ok(())
}

/// A read at the holding end sends what it holds (SVR4), writes joined without the lock
/// included, once the cell is shared with the write fast path; a read with nothing held sends
/// nothing, and the next write holds its bytes under the lock again.
fn a_read_sends_the_shared_cells_message() -> TestResult {
    let s = held_pipe()?;
    let c = Counted {
        end: s.call(0),
        holds: Cell::new(0),
    };
    check_eq!(counted_write(&c, 0, 10)?, 1); // held under the lock: the cell is shared
    check_eq!(counted_write(&c, 10, 10)?, 0); // joined without it
    check_eq!(queued(&s), 0);
    let mut b = [0u8; 8];
    for _ in 0..2 {
        let r = call::read(&s.call(0), &mut SliceIo(&mut b), 8, true);
        check_eq!(r, Err(Errno::EAGAIN));
        check_eq!(queued(&s), 20);
        check_eq!(s.end(0, |s| s.sth().held()), 0);
    }
    check_eq!(counted_write(&c, 20, 10)?, 1);
    check_eq!(s.end(0, |s| s.sth().held()), 10);
    check_eq!(read_all(&s, 0)?, 20);
    Ok(())
}

/// Messages filled exactly stay held, in the held run, and the messages after the run's
/// first arm no timer (the run's timer bounds its oldest byte); the write that finds no room
/// with the run full sends the run and arms the timer for the message it starts (the kernel
/// re-arms relative to that message, so the expiry armed for the run does not send the new
/// one early); the timer's flush then sends only the new message.
fn a_message_started_after_a_full_run_arms_its_own_timer() -> TestResult {
    let s = held_pipe()?;
    let _ = s.end(0, |s| s.sth_take_events());
    for i in 0..RUN / STRHOLDPSZ {
        check_eq!(write_at(&s, i * STRHOLDPSZ, STRHOLDPSZ), Ok(STRHOLDPSZ));
        check_eq!(s.end(0, |s| s.sth_take_events().hold_timer), i == 0);
    }
    check_eq!(s.end(0, |s| s.sth().held()), RUN);
    check_eq!(queued(&s), 0);
    check_eq!(write_at(&s, RUN, 1), Ok(1));
    check!(s.end(0, |s| s.sth_take_events().hold_timer));
    check_eq!(queued(&s), RUN);
    check_eq!(puts_in(&s), STRHOLDRUN);
    check_eq!(s.end(0, |s| s.sth().held()), 1);
    check_eq!(s.end(0, Stream::sth_flush_hold), 1);
    check_eq!(read_all(&s, 0)?, RUN + 1);
    Ok(())
}

/// The hold timer race: the expiry armed for a run, run late (it waited for the Stream lock
/// while a write sent that run and started the next), sends nothing; the next run's own
/// expiry sends it. Each run's arm carries a new generation.
fn a_stale_hold_expiry_does_not_send_the_next_run() -> TestResult {
    let s = held_pipe()?;
    let _ = s.end(0, |s| s.sth_take_events());
    let mut first = None;
    for i in 0..RUN / STRHOLDPSZ {
        check_eq!(write_at(&s, i * STRHOLDPSZ, STRHOLDPSZ), Ok(STRHOLDPSZ));
        let ev = s.end(0, |s| s.sth_take_events());
        check_eq!(ev.hold_timer, i == 0);
        if ev.hold_timer {
            first = Some(ev.hold_gen);
        }
    }
    // The write that finds the run full sends it and starts the next run.
    check_eq!(write_at(&s, RUN, 1), Ok(1));
    let ev = s.end(0, |s| s.sth_take_events());
    check!(ev.hold_timer);
    let (first, second) = (check_some!(first), ev.hold_gen);
    check!(first != second);
    check_eq!(queued(&s), RUN);
    check_eq!(s.end(0, |s| s.sth_hold_expired(first)), 0);
    check_eq!(s.end(0, |s| s.sth().held()), 1);
    check_eq!(queued(&s), RUN);
    check_eq!(s.end(0, |s| s.sth_hold_expired(second)), 1);
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!(read_all(&s, 0)?, RUN + 1);
    // An expiry after a flush sent its run, with nothing held, sends nothing either.
    check_eq!(s.end(0, |s| s.sth_hold_expired(second)), 0);
    Ok(())
}

/// The first write of a held message arms the hold timer; writes joining it do not.
fn each_held_message_arms_the_timer_once() -> TestResult {
    let s = held_pipe()?;
    let _ = s.end(0, |s| s.sth_take_events());
    check_eq!(write_at(&s, 0, 300), Ok(300));
    check!(s.end(0, |s| s.sth_take_events().hold_timer));
    check_eq!(write_at(&s, 300, 300), Ok(300));
    check!(!s.end(0, |s| s.sth_take_events().hold_timer));
    check_eq!(s.end(0, Stream::sth_flush_hold), 600);
    check_eq!(write_at(&s, 600, 300), Ok(300));
    check!(s.end(0, |s| s.sth_take_events().hold_timer));
    Ok(())
}

/// Held writes go on while the reader's queue is full, but the one that would send the held
/// run is refused (EAGAIN): the head queues at most its high-water mark plus one held run,
/// and the writer holds at most one run. After the reader drains, the writes go on and
/// every byte arrives in order. Writes that fill a message exactly and writes that leave
/// room none fits in.
fn flow_control_refuses_the_write_that_would_send() -> TestResult {
    refused_at(STRHOLDPSZ)?;
    refused_at(STRHOLDPSZ - 24)
}

/// [`flow_control_refuses_the_write_that_would_send`] with writes of `n` bytes.
fn refused_at(n: usize) -> TestResult {
    let s = held_pipe()?;
    let mut at = 0;
    let mut refused = false;
    for _ in 0..(4 * STRHIGH + 2 * RUN) / n {
        match write_at(&s, at, n) {
            Ok(k) => {
                check_eq!(k, n);
                at += n;
            }
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                refused = true;
                break;
            }
        }
        check!(queued(&s) <= STRHIGH + RUN);
    }
    check!(refused);
    let held = s.end(0, |s| s.sth().held());
    check!(held > RUN - STRHOLDSZ && held + n > RUN);
    check_eq!(queued(&s) + held, at);
    // The hold timer sends what is held whatever the flow control; held writes still go on
    // (into a new run, asking no flow control) up to the one that would send it.
    check_eq!(s.end(0, Stream::sth_flush_hold), held);
    let mut more = 0;
    while write_at(&s, at, n).is_ok() {
        at += n;
        more += n;
        check!(more <= RUN);
    }
    check!(more + n > RUN);
    let held = s.end(0, |s| s.sth().held());
    check_eq!(held, more);
    let got = read_all(&s, 0)?;
    check_eq!(got + held, at);
    // Drained: the refused write goes, sending what was held before it.
    check_eq!(write_at(&s, at, n), Ok(n));
    let left = n;
    check_eq!(s.end(0, |s| s.sth().held()), left);
    at += n;
    check_eq!(read_all(&s, got)?, at - left);
    Ok(())
}

/// A write of `n` bytes of the pattern from `at` at end 0 through `c`; the lock holds it
/// took.
fn counted_write(c: &Counted<'_>, at: usize, n: usize) -> Result<usize, Failure> {
    let mut b = check_ok!(patterned(at, n));
    c.holds.set(0);
    check_eq!(
        call::write(c, &mut SliceIo(b.as_mut_slice()), n, true),
        Ok(n)
    );
    Ok(c.holds.get())
}

/// With write hold on, writes too large to hold go across without the lock (the express
/// write) once one went across, as without hold; a write hold would hold never does, also
/// right after write hold was turned on between (the platform's hint is refreshed by the lock
/// hold that arms the express write: a write built before the lock, or a putmsg).
fn writes_too_large_to_hold_go_express() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let c = Counted {
        end: s.call(0),
        holds: Cell::new(0),
    };
    let big = 2 * STRHOLDPSZ;
    let mut at = 0;
    // Without hold: the second large write goes express.
    check_eq!(counted_write(&c, at, big)?, 1);
    at += big;
    check_eq!(counted_write(&c, at, big)?, 0);
    at += big;
    let mut got = check_ok!(read_all(&s, 0));
    check_eq!(got, at);
    // Hold on; a large write arms the express write again, and the next one takes it.
    hold_writes(&s, 0)?;
    check_eq!(counted_write(&c, at, big)?, 1);
    at += big;
    check_eq!(counted_write(&c, at, big)?, 0);
    at += big;
    // A write hold holds is held, not sent express.
    check_eq!(counted_write(&c, at, STAGE_STACK + 88)?, 1);
    at += STAGE_STACK + 88;
    check_eq!(s.end(0, |s| s.sth().held()), STAGE_STACK + 88);
    check_eq!(queued(&s), 2 * big);
    check_eq!(s.end(0, Stream::sth_flush_hold), STAGE_STACK + 88);
    got = check_ok!(read_all(&s, got));
    check_eq!(got, at);
    // Hold off and on again with only a putmsg between (it arms the express write).
    let r = Registry::new();
    check_ok!(s.end(0, |s| s.strioctl(&r, I_SWROPT, IocArg::Int(0))));
    check_eq!(counted_write(&c, at, big)?, 1);
    at += big;
    check_eq!(counted_write(&c, at, STAGE_STACK + 88)?, 0); // no hold: express
    at += STAGE_STACK + 88;
    hold_writes(&s, 0)?;
    let mut d = [0u8; 16];
    for (i, x) in d.iter_mut().enumerate() {
        *x = pattern(at + i);
    }
    let data = Part {
        io: &mut SliceIo(&mut d),
        len: 16,
    };
    check_ok!(call::putmsg(&c, None, Some(data), 0, 0, true));
    at += 16;
    check_eq!(counted_write(&c, at, STAGE_STACK + 88)?, 1);
    at += STAGE_STACK + 88;
    check_eq!(s.end(0, |s| s.sth().held()), STAGE_STACK + 88);
    check_eq!(s.end(0, Stream::sth_flush_hold), STAGE_STACK + 88);
    check_eq!(read_all(&s, got)?, at);
    Ok(())
}

/// Held data stays at the writer when the reader goes away; the next write fails.
fn hangup_keeps_the_held_data_and_fails_writes() -> TestResult {
    let s = held_pipe()?;
    check_eq!(write_at(&s, 0, 500), Ok(500));
    s.close(1);
    check!(write_at(&s, 500, 500).is_err());
    check_eq!(s.end(0, |s| s.sth().held()), 500);
    Ok(())
}

/// With SO_DELIM each write is one record (MSGDELIM): write hold holds nothing, so two
/// small writes read back as two records, not one coalesced message without the mark.
fn delimited_writes_are_not_held() -> TestResult {
    let [s, _] = super::readrun::pair(RNORM, true)?;
    hold_writes(&s, 0)?;
    check_eq!(write_at(&s, 0, 3), Ok(3));
    check_eq!(write_at(&s, 3, 2), Ok(2));
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!(s.end(0, Stream::sth_flush_hold), 0);
    s.end(1, |_| ()); // the data goes up to the head
    let (first, second) = (
        super::direct::read(&s, 1, 64),
        super::direct::read(&s, 1, 64),
    );
    check_eq!(
        super::readrun::bytes(&first),
        Ok(&[pattern(0), pattern(1), pattern(2)][..])
    );
    check_eq!(
        super::readrun::bytes(&second),
        Ok(&[pattern(3), pattern(4)][..])
    );
    Ok(())
}

ktest_suite!(PIPE_HOLD_SUITE, "streams_pipe_hold":
    delimited_writes_are_not_held,
    held_writes_go_across_a_run_at_a_time,
    larger_writes_go_after_what_is_held,
    each_flush_sends_a_partial_run_in_order,
    larger_writes_go_after_a_held_run,
    held_writes_join_without_the_lock,
    a_held_write_that_faults_goes_the_staged_way,
    each_held_message_arms_the_timer_once,
    a_message_started_after_a_full_run_arms_its_own_timer,
    a_stale_hold_expiry_does_not_send_the_next_run,
    flow_control_refuses_the_write_that_would_send,
    hangup_keeps_the_held_data_and_fails_writes,
    writes_too_large_to_hold_go_express,
    a_read_sends_the_shared_cells_message,
);
