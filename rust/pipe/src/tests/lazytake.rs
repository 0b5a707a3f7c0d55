//! Shared tests of the lazy take on a STREAMS pipe (`Perim::enter_read` in the core, `perim`
//! step 7): a read whose head's read queue alone satisfies it leaves the ordinary data that
//! the writer's later writes left on the inbound list there, to go up with later arrivals.
//! Each case runs the same steps on two pipes whose reading end holds a backlog at its head
//! and whose writer goes on writing between reads: on the first as band-0 writes (ordinary
//! data, which waits on the lazy inbound list and which the lazy take leaves there), on the
//! second as band-1 messages (putmsg with MSG_BAND), which claim the perimeter and go up to
//! the head at once, so no read there ever finds data left on the inbound list. Band does
//! not matter to read(2): what each read returns, and what is readable afterwards, must come
//! out the same; and the first pipe must have left data on its inbound list (else the case
//! tested nothing).

use super::direct::{read, write};
use super::readrun::{self, bytes, putmsg_band1};
use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::sth::call::{self, HeadCall};
use streams_core::sth::consts::*;
use streams_core::sth::{IocArg, Part, SliceIo, Stream, WAKE_WRITE};
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// What end 1 holds after an enter (which takes the inbound list): messages and bytes at its
/// head, whatever the band.
fn readable(p: &TestPipe) -> (usize, usize) {
    p.end(1, |s: &mut Stream| {
        let q = s.queue(s.head_rq());
        (
            q.map_or(0, |q| q.qsize()),
            q.map_or(0, |q| q.count() + q.band_count(1)),
        )
    })
}

/// Whether data waits on end 1's inbound list.
fn left_on_inbound(p: &TestPipe) -> bool {
    p.perim(1).perim.gate().has_pending()
}

/// Two pipes whose end 1 reads in mode `rdopt` (`readrun::pair`), with the same backlog of `BACKLOG` at end 1's
/// head (band 0 on the first, band 1 on the second).
fn pair(rdopt: u32) -> Result<[TestPipe; 2], Failure> {
    const BACKLOG: [&[u8]; 4] = [b"ab", b"cdef", b"g", b"hij"];
    let [a, b] = readrun::pair(rdopt, false)?;
    for w in BACKLOG {
        check_eq!(write(&a, 0, w), Ok(w.len()));
        check_eq!(putmsg_band1(&b, w), Ok(()));
    }
    for p in [&a, &b] {
        p.end(1, |_| ()); // the backlog goes up to the head
    }
    Ok([a, b])
}

/// Writes and reads interleaved behind a backlog, in read mode `rdopt`: reads smaller than
/// the head's queue (the lazy take leaves the new writes on the inbound list), reads larger
/// than it (the enter takes the list, the read runs on into what was left there), reads that
/// drain it. Each read returns the same bytes on both pipes, and what is readable after each
/// round is the same.
fn backlog_reads_match(rdopt: u32) -> TestResult {
    const STEPS: [(&[u8], usize); 10] = [
        (b"kl", 1),
        (b"mnop", 2),
        (b"q", 1),
        (b"rst", 64),
        (b"uv", 1),
        (b"w", 3),
        (b"xyz", 1),
        (b"01", 2),
        (b"2345", 64),
        (b"6", 64),
    ];
    let [a, b] = pair(rdopt)?;
    let mut lazy = 0usize;
    for _round in 0..3 {
        for (w, len) in STEPS {
            check_eq!(write(&a, 0, w), Ok(w.len()));
            check_eq!(putmsg_band1(&b, w), Ok(()));
            let (x, y) = (read(&a, 1, len), read(&b, 1, len));
            check_eq!(bytes(&x), bytes(&y));
            check!(!left_on_inbound(&b));
            lazy += usize::from(left_on_inbound(&a));
        }
        check_eq!(readable(&a), readable(&b));
    }
    // Drain both: the same reads to the end.
    for len in [1, 2].into_iter().chain([64; 64]) {
        let (x, y) = (read(&a, 1, len), read(&b, 1, len));
        check_eq!(bytes(&x), bytes(&y));
        if x.is_err() {
            break;
        }
    }
    check_eq!(read(&a, 1, 64).map(|r| r.1), Err(Errno::EAGAIN));
    check!(lazy > 0); // the first pipe's reads did leave data on the inbound list
    Ok(())
}

fn byte_stream_backlog_reads_match() -> TestResult {
    backlog_reads_match(RNORM)
}

fn message_discard_backlog_reads_match() -> TestResult {
    backlog_reads_match(RMSGD)
}

fn message_nondiscard_backlog_reads_match() -> TestResult {
    backlog_reads_match(RMSGN)
}

/// getmsg behind a backlog: each takes the head's first message and leaves the writes made
/// since on the inbound list; the messages come back in the order written.
fn getmsg_behind_a_backlog_keeps_the_order() -> TestResult {
    const ORDER: [&[u8]; 8] = [b"ab", b"cdef", b"g", b"hij", b"k", b"lm", b"nop", b"q"];
    let [a, _] = pair(RNORM)?;
    let mut lazy = 0usize;
    let mut next = 0usize;
    let mut check_next = |a: &TestPipe| -> TestResult {
        let g = check_ok!(super::direct::getmsg(a, 1, 64));
        let n = usize::try_from(g.1).unwrap_or(0);
        check_eq!(g.0.get(..n), ORDER.get(next).copied());
        next += 1;
        Ok(())
    };
    for w in ORDER.get(4..).unwrap_or_default() {
        check_eq!(write(&a, 0, w), Ok(w.len()));
        check_next(&a)?;
        lazy += usize::from(left_on_inbound(&a));
    }
    for _ in 0..4 {
        check_next(&a)?;
    }
    check_eq!(
        super::direct::getmsg(&a, 1, 64).map(|g| g.1),
        Err(Errno::EAGAIN)
    );
    check!(lazy > 0);
    Ok(())
}

/// Data left on the inbound list by a read is seen by the calls that enter otherwise: poll
/// reports it (POLLIN) and I_NREAD counts it, as on the pipe where it went up at once.
fn poll_and_nread_see_what_a_read_left() -> TestResult {
    let [a, b] = pair(RNORM)?;
    for p in [&a, &b] {
        // Read the backlog down to its last message ("hij"), then write behind it.
        check_eq!(bytes(&read(p, 1, 7)), Ok(&b"abcdefg"[..]));
    }
    check_eq!(write(&a, 0, b"xyz"), Ok(3));
    check_eq!(putmsg_band1(&b, b"xyz"), Ok(()));
    // One byte of the last backlog message: the head satisfies it, the write stays behind.
    check_eq!(bytes(&read(&a, 1, 1)), bytes(&read(&b, 1, 1)));
    check!(left_on_inbound(&a));
    // poll enters (and takes): POLLIN as on the other pipe, POLLRDNORM for band 0.
    let pa = a.end(1, |s| s.strpoll(POLLIN | POLLRDNORM));
    let pb = b.end(1, |s| s.strpoll(POLLIN | POLLRDNORM));
    check_eq!(pa & POLLIN, POLLIN);
    check_eq!(pa & POLLIN, pb & POLLIN);
    check_eq!(pa & POLLRDNORM, POLLRDNORM);
    check!(!left_on_inbound(&a));
    // Again behind "ij": I_NREAD counts the messages left on the inbound list.
    check_eq!(write(&a, 0, b"uv"), Ok(2));
    check_eq!(putmsg_band1(&b, b"uv"), Ok(()));
    check_eq!(bytes(&read(&a, 1, 1)), bytes(&read(&b, 1, 1)));
    check!(left_on_inbound(&a));
    let r = Registry::new();
    let nread = |p: &TestPipe| {
        let mut n = [0u8; 4];
        let msgs = p.end(1, |s| s.strioctl(&r, I_NREAD, IocArg::Out(&mut n)));
        (msgs, n)
    };
    check_eq!(nread(&a), nread(&b));
    check!(!left_on_inbound(&a));
    Ok(())
}

/// Reads that must wait never leave data on the inbound list (the platform would put them
/// to sleep on it): a read while another reader of the head copies its take out (the reader
/// token held), and a getmsg for high-priority data behind a band-0 backlog. Each enter takes
/// the list, though the head's queue would have satisfied an ordinary read.
fn a_read_or_getmsg_that_must_wait_takes_the_list() -> TestResult {
    let [a, _] = pair(RNORM)?;
    check_eq!(write(&a, 0, b"kl"), Ok(2));
    let call = a.call(1);
    let tok = &call.shared().reader;
    check!(tok.free());
    tok.hold(); // another reader's take is being copied out
    check_eq!(read(&a, 1, 1).map(|r| r.1), Err(Errno::EAGAIN));
    check!(!left_on_inbound(&a));
    tok.release();
    check_eq!(write(&a, 0, b"m"), Ok(1));
    let mut b = [0u8; 8];
    let data = Part {
        io: &mut SliceIo(&mut b),
        len: 8,
    };
    let hipri = call::getmsg(&call, None, Some(data), 0, MSG_HIPRI, true, |_| Ok(()));
    check_eq!(hipri.map(|g| g.data_len), Err(Errno::EAGAIN));
    check!(!left_on_inbound(&a));
    // Everything is still read, in order.
    check_eq!(bytes(&read(&a, 1, 64)), Ok(&b"abcdefghijklm"[..]));
    Ok(())
}

/// The writer closes while the reader's reads leave its last writes on the inbound list: the
/// hangup that follows them is no ordinary data, so the next enter takes it all; the reader
/// reads everything in order, then end of file.
fn a_hangup_behind_left_data_ends_the_reads() -> TestResult {
    let [a, _] = pair(RNORM)?;
    check_eq!(write(&a, 0, b"kl"), Ok(2));
    check_eq!(bytes(&read(&a, 1, 1)), Ok(&b"a"[..]));
    check!(left_on_inbound(&a));
    a.close(0);
    let mut got = [0u8; 16];
    let mut at = 0usize;
    for _ in 0..16 {
        match read(&a, 1, 3) {
            Ok((_, 0)) => {
                check_eq!(got.get(..at), Some(&b"bcdefghijkl"[..]));
                return Ok(());
            }
            Ok((b, n)) => {
                for (d, x) in got.iter_mut().skip(at).zip(b.iter().take(n)) {
                    *d = *x;
                }
                at += n;
            }
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                check!(false); // a read blocked on data that was there
            }
        }
    }
    check!(false); // no end of file
    Ok(())
}

/// End 1's head gets water marks 64 and 0 (M_SETOPTS from below). With a backlog at the head,
/// end 0 writes until the bytes at the head and on the inbound list refuse it, while end 1
/// reads one byte at a time (each read satisfied by the head: the writes stay on the inbound
/// list). Reading on, the reader drains the head, takes the list and the refused writer is
/// back-enabled: everything written is read, and the writer may write again.
fn a_writer_refused_for_left_bytes_is_back_enabled() -> TestResult {
    let [a, _] = pair(RNORM)?;
    readrun::marks_64_0(&a)?;
    let mut written = 10usize; // the backlog
    let chunk = [7u8; 8];
    let mut refused = false;
    for _ in 0..64 {
        match write(&a, 0, &chunk) {
            Ok(n) => written += n,
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                refused = true;
                break;
            }
        }
    }
    check!(refused);
    check!(left_on_inbound(&a));
    let _ = a.end(0, |s| s.sth_take_events());
    let mut read_back = 0usize;
    let mut woken = false;
    for _ in 0..4096 {
        match read(&a, 1, 1) {
            Ok((_, n)) => read_back += n,
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                break;
            }
        }
        woken |= a.end(0, |s| s.sth_take_events()).wake & WAKE_WRITE != 0;
    }
    check_eq!(read_back, written);
    check!(woken);
    check_eq!(write(&a, 0, &chunk), Ok(chunk.len()));
    Ok(())
}

ktest_suite!(PIPE_LAZYTAKE_SUITE, "streams_pipe_lazytake":
    byte_stream_backlog_reads_match,
    message_discard_backlog_reads_match,
    message_nondiscard_backlog_reads_match,
    getmsg_behind_a_backlog_keeps_the_order,
    poll_and_nread_see_what_a_read_left,
    a_read_or_getmsg_that_must_wait_takes_the_list,
    a_hangup_behind_left_data_ends_the_reads,
    a_writer_refused_for_left_bytes_is_back_enabled,
);
