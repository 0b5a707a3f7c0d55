//! Shared tests of the batch put-up on a STREAMS pipe (`stream/batch.rs` in the core): the
//! reading end's enters find runs of messages the other end wrote on its inbound list, and
//! put each run up to the head in one step. Each case runs the same steps on two pipes: on
//! the first the runs go up together; on the second a module whose put procedure passes data
//! on (`nosrv`, pushed at the reading end) keeps the path from being pass-only, so each
//! message goes up by the ordinary path, one put at a time. The head's read queue (counts,
//! flags), the head's and the twist's statistics, what is read, the events at both ends and
//! the writer's flow control (refused at the high-water mark, back-enabled at the low one)
//! must come out the same.

use super::direct::{
    getmsg, read, read_both_until_back_enabled, read_side, write, write_both_until_refused, BUF,
};
use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::queue::QFlags;
use streams_core::sth::consts::*;
use streams_core::sth::IocArg;
use streams_core::stream::testmods::NOSRV;
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// Two pipes whose end 1 reads in mode `rdopt`: the first one's runs go up together, the
/// second one's one message at a time (see the module docs).
fn pair(rdopt: u32) -> Result<[TestPipe; 2], Failure> {
    let a = check_ok!(TestPipe::new());
    let b = check_ok!(TestPipe::new());
    let mut r = Registry::new();
    check_ok!(r.register_module(&NOSRV));
    let pushed = b.end(1, |s| s.strioctl(&r, I_PUSH, IocArg::Name("nosrv")));
    check_eq!(pushed, Ok(0));
    for p in [&a, &b] {
        let set = p.end(1, |s| {
            s.strioctl(&r, I_SRDOPT, IocArg::Int(i64::from(rdopt)))
        });
        check_eq!(set, Ok(0));
        let _ = p.end(0, |s| s.sth_take_events());
        let _ = p.end(1, |s| s.sth_take_events());
    }
    Ok([a, b])
}

/// Messages of a burst: sizes that split across reads, a zero-length one.
const WRITES: [&[u8]; 6] = [b"ab", b"cdef", b"g", b"", b"hij", b"klmno"];

/// Bursts read back in mode `rdopt` (or with getmsg), compared after every read: a burst
/// whose first read takes one message directly and leaves the rest to go up in one run when
/// the lock hold ends, then a second burst that arrives while the head's queue holds the
/// first one's rest (an enter puts it up behind it), then reads until nothing is left; in
/// the second and third rounds an enter that is not a read puts a burst up, and the events
/// it noted are compared before a read takes them.
fn bursts_match(rdopt: u32, msg: bool) -> TestResult {
    let [a, b] = pair(rdopt)?;
    let take = |p: &TestPipe, len: usize| {
        if msg {
            getmsg(p, 1, len)
        } else {
            read(p, 1, len).map(|(d, n)| (d, i32::try_from(n).unwrap_or(-1), 0))
        }
    };
    // An enter that is not a read puts the inbound list up (on `a` in one run): the events
    // its put-up noted at the head, which a read's platform half would take and act on.
    let events = |p: &TestPipe| p.end(1, |s| s.sth_take_events());
    for round in 0..3 {
        if round == 1 {
            let _ = (events(&a), events(&b)); // what the reads before noted
        }
        for w in WRITES {
            check_eq!(write(&a, 0, w), write(&b, 0, w));
        }
        if round == 1 {
            // Onto the empty queue: the readers' wakeup.
            let ev = events(&a);
            check!(ev.wake != 0);
            check_eq!(ev, events(&b));
        }
        for len in [1, 3] {
            check_eq!(take(&a, len), take(&b, len));
            check!(a.end(1, read_side) == b.end(1, read_side));
        }
        if round == 2 {
            let _ = (events(&a), events(&b));
        }
        for w in WRITES {
            check_eq!(write(&a, 0, w), write(&b, 0, w));
        }
        if round == 2 {
            // Behind the data still queued: S_INPUT, no wakeup.
            let ev = events(&a);
            check_eq!(ev.wake, 0);
            check_eq!(ev.sigpoll, S_INPUT | S_RDNORM);
            check_eq!(ev, events(&b));
        }
        for _ in 0..2 * WRITES.len() + 2 {
            let (x, y) = (take(&a, 64), take(&b, 64));
            check_eq!(x, y);
            check!(a.end(1, read_side) == b.end(1, read_side));
            if x.is_err() {
                break;
            }
        }
    }
    check_eq!(take(&a, 64).err(), Some(Errno::EAGAIN));
    for end in [0, 1] {
        check_eq!(
            a.end(end, |s| s.sth_take_events()),
            b.end(end, |s| s.sth_take_events())
        );
    }
    Ok(())
}

fn byte_stream_bursts_match() -> TestResult {
    bursts_match(RNORM, false)
}

fn message_discard_bursts_match() -> TestResult {
    bursts_match(RMSGD, false)
}

fn message_nondiscard_bursts_match() -> TestResult {
    bursts_match(RMSGN, false)
}

fn getmsg_bursts_match() -> TestResult {
    bursts_match(RNORM, true)
}

/// End 0 writes until it is refused, end 1 entering (without reading) after every few
/// writes, so that the runs go up and the head's read queue fills past its high-water mark
/// (QFULL). End 1 then reads one message at a time: the refused writer is back-enabled (its
/// head hears WAKE_WRITE) by the read that drains the queue to its low-water mark, on both
/// pipes, and can write again.
fn writer_refused_at_hiwat_is_back_enabled_at_lowat() -> TestResult {
    let [a, b] = pair(RNORM)?;
    let chunk = [7u8; BUF];
    write_both_until_refused(&a, &b, &chunk, Some(4))?;
    a.end(1, |_| ());
    b.end(1, |_| ());
    check!(a.end(1, read_side) == b.end(1, read_side));
    let full = a.end(1, |s| {
        s.queue(s.head_rq())
            .is_some_and(|q| q.flags().contains(QFlags::QFULL))
    });
    check!(full);
    for p in [&a, &b] {
        let _ = p.end(0, |s| s.sth_take_events());
    }
    read_both_until_back_enabled(&a, &b, BUF)?;
    check_eq!(write(&a, 0, &chunk), write(&b, 0, &chunk));
    check_eq!(write(&a, 0, &chunk), Ok(BUF));
    Ok(())
}

ktest_suite!(PIPE_BATCH_SUITE, "streams_pipe_batch":
    byte_stream_bursts_match,
    message_discard_bursts_match,
    message_nondiscard_bursts_match,
    getmsg_bursts_match,
    writer_refused_at_hiwat_is_back_enabled_at_lowat,
);
