//! Shared tests of the direct take on a STREAMS pipe (`stream/direct.rs` in the core): a
//! read(2) at one end takes the data the other end's writes left on its inbound list straight
//! from there. Each case runs the same steps on two pipes, one whose reads take directly and
//! one whose data was put up to the head first by an ordinary enter (the path before the
//! direct take), and checks that what is read, the head's read queue (counts, flags), the
//! module statistics, the events and the writer's back-enable come out the same.

use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::queue::QFlags;
use streams_core::sth::call;
use streams_core::sth::consts::*;
use streams_core::sth::{
    HeadEvents, IocArg, Part, SigOwner, SliceIo, Stream, WAKE_POLL, WAKE_READ, WAKE_WRITE,
};
use streams_core::stream::{ModuleStat, Registry};
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// Largest write or read of these cases.
pub(super) const BUF: usize = 512;

/// What a read brought back: the bytes and their count, or the error.
pub(super) type Got = Result<([u8; BUF], usize), Errno>;

pub(super) fn read(s: &TestPipe, end: usize, len: usize) -> Got {
    let mut b = [0u8; BUF];
    let n = call::read(&s.call(end), &mut SliceIo(&mut b), len.min(BUF), true)?;
    Ok((b, n))
}

pub(super) fn write(s: &TestPipe, end: usize, data: &[u8]) -> Result<usize, Errno> {
    let mut b = [0u8; BUF];
    let n = streams_core::sys::copy_bytes(&mut b, data);
    let io = &mut SliceIo(b.get_mut(..n).unwrap_or_default());
    call::write(&s.call(end), io, n, true)
}

/// The state of an end's read side that the direct take (and the batch put-up, `batch.rs`)
/// must leave as the ordinary path does.
#[derive(PartialEq, Eq)]
pub(super) struct ReadSide {
    count: usize,
    msgs: usize,
    blocks: usize,
    flags: QFlags,
    head: Option<ModuleStat>,
    twist: Option<ModuleStat>,
}

pub(super) fn read_side(s: &mut Stream) -> ReadSide {
    let h = s.head_rq();
    let q = s.queue(h);
    ReadSide {
        count: q.map_or(0, |q| q.count()),
        msgs: q.map_or(0, |q| q.qsize()),
        blocks: q.map_or(0, |q| q.mblkcnt()),
        flags: q.map_or(QFlags::default(), |q| q.flags()),
        head: s.mstat(h),
        twist: s.driver_rq().and_then(|d| s.mstat(d)),
    }
}

/// Two pipes whose end 1 reads in mode `rdopt`: the first one's reads take directly, the
/// second one's find the data at the head (see the module docs).
fn pair(rdopt: u32) -> Result<[TestPipe; 2], Failure> {
    let a = check_ok!(TestPipe::new());
    let b = check_ok!(TestPipe::new());
    for p in [&a, &b] {
        let r = p.end(1, |s| {
            s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(rdopt)))
        });
        check_eq!(r, Ok(0));
    }
    Ok([a, b])
}

/// A write at end 0 leaves its message on end 1's inbound list (the head is lazy), and the
/// next read at end 1 takes it from there: while it runs, neither the head's read queue nor
/// the inbound list holds the message. What such a lock hold does not read goes up to the
/// head when it ends.
fn a_read_takes_straight_from_the_inbound_list() -> TestResult {
    reads_straight_from_the_inbound_list(false)
}

/// The same with read notification on at end 1 (I_SWROPT SNDMREAD at end 0, perftest's
/// `-M`): a read sends M_READ only when it finds nothing, so it still takes directly.
fn a_read_with_read_notification_takes_directly() -> TestResult {
    reads_straight_from_the_inbound_list(true)
}

fn reads_straight_from_the_inbound_list(mread: bool) -> TestResult {
    let s = check_ok!(TestPipe::new());
    if mread {
        let on = IocArg::Int(i64::from(SNDPIPE | SNDMREAD));
        check_eq!(
            s.end(0, |s| s.strioctl(&Registry::new(), I_SWROPT, on)),
            Ok(0)
        );
        s.settle();
        check!(s.end(1, |s| s.sth().mread()));
    }
    check_eq!(write(&s, 0, b"abc"), Ok(3));
    check!(s.perim(1).perim.gate().has_pending());
    let gate = s.perim(1).perim.gate();
    let taken = s.end_read(
        1,
        |_| false,
        |s| {
            let h = s.head_rq();
            s.queue(h).is_some_and(|q| q.is_empty()) && !gate.has_pending()
        },
    );
    check!(taken);
    // Nothing was read: the lock hold put the message up as it ended.
    let at_head = s.end(1, |s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check_eq!(at_head, 3);
    let r = check_ok!(read(&s, 1, 64));
    check_eq!(r.0.get(..r.1), Some(&b"abc"[..]));
    Ok(())
}

/// The same writes and reads on both pipes of [`pair`], in read mode `rdopt`: reads smaller
/// than a message (its rest stays readable, in order), larger ones running on over several
/// messages (byte stream) or stopping at one (message modes), a zero-length message.
fn same_as_through_the_head(rdopt: u32) -> TestResult {
    const WRITES: [&[u8]; 5] = [b"ab", b"cdef", b"g", b"", b"hij"];
    const READS: [usize; 7] = [1, 3, 2, 64, 64, 64, 64];
    let [a, b] = pair(rdopt)?;
    for _round in 0..2 {
        for w in WRITES {
            check_eq!(write(&a, 0, w), write(&b, 0, w));
        }
        b.end(1, |_| ()); // an ordinary enter puts b's data up to its head
        for len in READS {
            check_eq!(read(&a, 1, len), read(&b, 1, len));
            check!(a.end(1, read_side) == b.end(1, read_side));
        }
    }
    check_eq!(
        a.end(1, |s| s.sth_take_events()),
        b.end(1, |s| s.sth_take_events())
    );
    check_eq!(
        a.end(0, |s| s.sth_take_events()),
        b.end(0, |s| s.sth_take_events())
    );
    Ok(())
}

fn byte_stream_reads_match() -> TestResult {
    same_as_through_the_head(RNORM)
}

fn message_discard_reads_match() -> TestResult {
    same_as_through_the_head(RMSGD)
}

fn message_nondiscard_reads_match() -> TestResult {
    same_as_through_the_head(RMSGN)
}

/// What a getmsg brought back: the data bytes, its data length and return value.
pub(super) type GotMsg = Result<([u8; BUF], i32, i32), Errno>;

pub(super) fn getmsg(s: &TestPipe, end: usize, maxlen: usize) -> GotMsg {
    let mut b = [0u8; BUF];
    let max = maxlen.min(BUF);
    let data = Part {
        io: &mut SliceIo(b.get_mut(..max).unwrap_or_default()),
        len: i32::try_from(max).unwrap_or(0),
    };
    let g = call::getmsg(&s.call(end), None, Some(data), 0, 0, true, |_| Ok(()))?;
    Ok((b, g.data_len, g.more))
}

/// getmsg takes directly as read does: the same writes read back with getmsg of several sizes
/// (a message larger than `maxlen` leaves its rest readable, MOREDATA), on a direct-reading
/// pipe and on one whose data went up to the head first; then a getmsg of a higher band
/// finds nothing and leaves the data readable.
fn getmsg_matches() -> TestResult {
    const WRITES: [&[u8]; 4] = [b"ab", b"cdef", b"", b"ghi"];
    const MAXLENS: [usize; 6] = [64, 2, 64, 64, 64, 64];
    let [a, b] = pair(RNORM)?;
    for _round in 0..2 {
        for w in WRITES {
            check_eq!(write(&a, 0, w), write(&b, 0, w));
        }
        b.end(1, |_| ());
        for len in MAXLENS {
            check_eq!(getmsg(&a, 1, len), getmsg(&b, 1, len));
            check!(a.end(1, read_side) == b.end(1, read_side));
        }
    }
    check_eq!(write(&a, 0, b"zz"), Ok(2));
    let mut buf = [0u8; 8];
    let data = Part {
        io: &mut SliceIo(&mut buf),
        len: 8,
    };
    let r = call::getmsg(&a.call(1), None, Some(data), 1, MSG_BAND, true, |_| Ok(()));
    check_eq!(r.err(), Some(Errno::EAGAIN));
    let r = check_ok!(read(&a, 1, 64));
    check_eq!(r.0.get(..r.1), Some(&b"zz"[..]));
    check_eq!(
        a.end(1, |s| s.sth_take_events()),
        b.end(1, |s| s.sth_take_events())
    );
    Ok(())
}

/// End 0 of both pipes writes `chunk` until refused (EAGAIN), at most 64 times, the two
/// results compared each time; with `enter_every`, end 1 enters (without reading) after every
/// that many writes. Fails unless the writer was refused.
pub(super) fn write_both_until_refused(
    a: &TestPipe,
    b: &TestPipe,
    chunk: &[u8],
    enter_every: Option<usize>,
) -> TestResult {
    let mut refused = false;
    for i in 1..=64 {
        let (x, y) = (write(a, 0, chunk), write(b, 0, chunk));
        check_eq!(x, y);
        if x == Err(Errno::EAGAIN) {
            refused = true;
            break;
        }
        if enter_every.is_some_and(|k| i % k == 0) {
            a.end(1, |_| ());
            b.end(1, |_| ());
        }
    }
    check!(refused);
    Ok(())
}

/// End 1 of both pipes reads `len` bytes at a time (the results and the reading ends compared
/// after each read) until the refused writer at end 0 is back-enabled (its head hears
/// WAKE_WRITE, the same events on both pipes): by the read that drains end 1's head queue to
/// its low-water mark, not before. Fails unless it was.
pub(super) fn read_both_until_back_enabled(a: &TestPipe, b: &TestPipe, len: usize) -> TestResult {
    for _ in 0..64 {
        let (x, y) = (read(a, 1, len), read(b, 1, len));
        check_eq!(x, y);
        if x.is_err() {
            break;
        }
        check!(a.end(1, read_side) == b.end(1, read_side));
        let ev = a.end(0, |s| s.sth_take_events());
        check_eq!(ev, b.end(0, |s| s.sth_take_events()));
        if ev.wake & WAKE_WRITE != 0 {
            let low = a.end(1, |s| {
                s.queue(s.head_rq()).is_some_and(|q| q.count() <= q.lowat())
            });
            check!(low);
            return Ok(());
        }
    }
    check!(false); // never back-enabled
    Ok(())
}

/// End 0 writes until the bytes pending on end 1's inbound list refuse it (EAGAIN); end 1
/// then reads everything, the first read straight from the inbound list. The refused writer
/// is back-enabled (its head hears WAKE_WRITE), as when the data went up to the head first.
fn writer_refused_for_pending_bytes_is_back_enabled() -> TestResult {
    let [a, b] = pair(RNORM)?;
    let chunk = [7u8; BUF];
    write_both_until_refused(&a, &b, &chunk, None)?;
    check!(a.perim(1).perim.gate().has_pending());
    b.end(1, |_| ());
    for p in [&a, &b] {
        let _ = p.end(0, |s| s.sth_take_events());
    }
    for _ in 0..64 {
        let (x, y) = (read(&a, 1, BUF), read(&b, 1, BUF));
        check_eq!(x, y);
        if x.is_err() {
            break;
        }
        check!(a.end(1, read_side) == b.end(1, read_side));
    }
    let ev = a.end(0, |s| s.sth_take_events());
    check!(ev.wake & WAKE_WRITE != 0);
    check_eq!(ev, b.end(0, |s| s.sth_take_events()));
    check_eq!(write(&a, 0, &chunk), Ok(BUF));
    Ok(())
}

/// What is not band-0 data takes the ordinary path, and with it the data before it: a
/// hangup after the data is seen after the data is read.
fn hangup_after_data_is_read_in_order() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check_eq!(write(&s, 0, b"last"), Ok(4));
    s.close(0);
    let r = check_ok!(read(&s, 1, 64));
    check_eq!(r.0.get(..r.1), Some(&b"last"[..]));
    check_eq!(read(&s, 1, 64).map(|r| r.1), Ok(0)); // end of file
    Ok(())
}

/// The events of end 1 since they were last taken (an ordinary enter: data on its inbound
/// list goes up first).
fn events(s: &TestPipe) -> HeadEvents {
    s.end(1, |s| s.sth_take_events())
}

/// What an arrival at end 1's empty head notes (`sth_enqueue`): the readers' and pollers'
/// wakeup, S_INPUT | S_RDNORM.
fn arrival_noted(ev: &HeadEvents) -> bool {
    ev.wake & (WAKE_READ | WAKE_POLL) == WAKE_READ | WAKE_POLL
        && ev.sigpoll & (S_INPUT | S_RDNORM) == S_INPUT | S_RDNORM
}

/// A read that takes a message straight from the inbound list and reads all of it notes no
/// arrival: nothing else can see the data (`direct_ok`: no I_SETSIG registration, no read
/// fill; a poller that comes later polls the empty queue the read leaves). One that leaves
/// the rest of it at the head notes the arrival there, for the pollers and readers that may
/// see it, and a poll then finds it.
fn a_direct_read_notes_only_what_it_leaves() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let _ = events(&s);
    check_eq!(write(&s, 0, b"abc"), Ok(3));
    check!(s.perim(1).perim.gate().has_pending());
    check_eq!(read(&s, 1, 64).map(|r| r.1), Ok(3));
    let ev = events(&s);
    check_eq!(ev.wake & (WAKE_READ | WAKE_POLL), 0);
    check_eq!(ev.sigpoll, 0);
    check_eq!(s.end(1, |s| s.strpoll(POLLIN)), 0);
    check_eq!(write(&s, 0, b"abc"), Ok(3));
    check!(s.perim(1).perim.gate().has_pending());
    check_eq!(read(&s, 1, 1).map(|r| r.1), Ok(1));
    check!(arrival_noted(&events(&s)));
    check_eq!(s.end(1, |s| s.strpoll(POLLIN)), POLLIN);
    let r = check_ok!(read(&s, 1, 64));
    check_eq!(r.0.get(..r.1), Some(&b"bc"[..]));
    Ok(())
}

/// A process registered with I_SETSIG in the tests.
struct Proc(usize);

impl SigOwner for Proc {
    fn key(&self) -> usize {
        self.0
    }
    fn signal(&self, _sig: i32) {}
}

/// With an I_SETSIG registration for S_INPUT on end 1, each message that arrives is told
/// (SIGPOLL is per message) and a poller of the empty head is woken, on both pipes of
/// [`pair`] alike, even for data that the next read takes whole.
fn i_setsig_input_hears_of_every_message() -> TestResult {
    let [a, b] = pair(RNORM)?;
    for p in [&a, &b] {
        let owner: streams_core::sys::Arc<dyn SigOwner> =
            check_ok!(streams_core::sys::new_arc(Proc(1)));
        let events = S_INPUT as i32;
        let r = p.end(1, |s| {
            s.strioctl(&Registry::new(), I_SETSIG, IocArg::Sig { owner, events })
        });
        check_eq!(r, Ok(0));
        let _ = p.end(1, |s| s.sth_take_events());
    }
    for w in [&b"ab"[..], b"c", b"def"] {
        for p in [&a, &b] {
            check_eq!(p.end(1, |s| s.strpoll(POLLIN)), 0); // the poller waits
            check_eq!(write(p, 0, w), Ok(w.len()));
        }
        b.end(1, |_| ()); // an ordinary enter puts b's data up to its head
        check_eq!(read(&a, 1, 64), read(&b, 1, 64));
        let ev = events(&a);
        check!(arrival_noted(&ev));
        check_eq!(ev, events(&b));
    }
    Ok(())
}

ktest_suite!(PIPE_DIRECT_SUITE, "streams_pipe_direct":
    a_read_takes_straight_from_the_inbound_list,
    a_read_with_read_notification_takes_directly,
    byte_stream_reads_match,
    message_discard_reads_match,
    message_nondiscard_reads_match,
    getmsg_matches,
    writer_refused_for_pending_bytes_is_back_enabled,
    hangup_after_data_is_read_in_order,
    a_direct_read_notes_only_what_it_leaves,
    i_setsig_input_hears_of_every_message,
);
