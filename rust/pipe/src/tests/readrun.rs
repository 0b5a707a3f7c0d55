//! Shared tests of the read's run on a STREAMS pipe (`Stream::sth_read_run` in the core's
//! `sth/read.rs`): a read takes the whole band-0 M_DATA messages at the front of its head's
//! read queue in one queue operation (`Queue::getq_upto`) instead of one getq and its checks
//! per message. Each case runs the same steps on two pipes whose reading end holds the same
//! data at its head: on the first as band-0 messages (written with write(2), so the run takes
//! them), on the second as band-1 messages (putmsg with MSG_BAND), which the run leaves alone
//! (band 0 is not the first class of that queue) and the read's loop takes one at a time, as
//! it took every message before the run. Band does not matter to read(2): what is read, and
//! what stays queued (messages, bytes, blocks), must come out the same. The flow control a
//! run leaves (it marks the published state stale only when the queue's flow state changed)
//! is checked against the writer's back-enable, and the back-enable a run reports (QWANTW)
//! against a module below the head that waits for it.

use super::direct::{read, write, Got, BUF};
use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::queue::QFlags;
use streams_core::sth::consts::*;
use streams_core::sth::{call, IocArg, Part, SliceIo, StrOptions, Stream, WAKE_WRITE};
use streams_core::stream::testmods::PASS;
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// putmsg of a data part alone on end 0 of `p` in band 1 (MSG_BAND), non-blocking.
pub(super) fn putmsg_band1(p: &TestPipe, data: &[u8]) -> Result<(), Errno> {
    let mut b = [0u8; BUF];
    let n = streams_core::sys::copy_bytes(&mut b, data);
    let d = Part {
        io: &mut SliceIo(b.get_mut(..n).unwrap_or_default()),
        len: i32::try_from(n).unwrap_or(0),
    };
    call::putmsg(&p.call(0), None, Some(d), 1, MSG_BAND, true)
}

/// What stays queued at a reading head, whatever the band: messages, bytes, blocks.
#[derive(PartialEq, Eq, Debug)]
struct Left {
    msgs: usize,
    bytes: usize,
    blocks: usize,
}

fn left(s: &mut Stream) -> Left {
    let q = s.queue(s.head_rq());
    Left {
        msgs: q.map_or(0, |q| q.qsize()),
        bytes: q.map_or(0, |q| q.count() + q.band_count(1)),
        blocks: q.map_or(0, |q| q.mblkcnt()),
    }
}

/// Two pipes whose end 1 reads in mode `rdopt` and whose end 0 sends zero-length writes
/// (SNDZERO); with `delim`, end 0 marks what it writes
/// as delimited (M_SETOPTS SO_DELIM from below, as a module would send it).
pub(super) fn pair(rdopt: u32, delim: bool) -> Result<[TestPipe; 2], Failure> {
    let a = check_ok!(TestPipe::new());
    let b = check_ok!(TestPipe::new());
    let r = Registry::new();
    for p in [&a, &b] {
        let rd = p.end(1, |s| {
            s.strioctl(&r, I_SRDOPT, IocArg::Int(i64::from(rdopt)))
        });
        check_eq!(rd, Ok(0));
        // A write of no bytes sends a zero-length message, as a putmsg of an empty part does.
        let wr = p.end(0, |s| {
            s.strioctl(&r, I_SWROPT, IocArg::Int(i64::from(SNDZERO)))
        });
        check_eq!(wr, Ok(0));
        if delim {
            let o = StrOptions {
                so_flags: SO_DELIM,
                ..StrOptions::default()
            };
            let m = check_ok!(o.to_msg());
            let put = p.end(0, |s| s.driver_rq().map(|rq| s.put(rq, m)));
            check!(put.is_some());
            let _ = p.end(0, |s| s.sth_take_events());
        }
    }
    Ok([a, b])
}

/// The bytes of a read, for comparing two reads (the buffer past them is not compared).
pub(super) fn bytes(g: &Got) -> Result<&[u8], Errno> {
    match g {
        Ok((b, n)) => Ok(b.get(..*n).unwrap_or_default()),
        Err(e) => Err(*e),
    }
}

/// The same data on both pipes of [`pair`] (band 0 on the first, band 1 on the second),
/// put up to their heads by an ordinary enter, then the same reads: smaller than a message
/// (the rest stays, in order), covering several whole messages (the run), larger than what
/// is queued, a zero-length message in the way.
fn same_as_one_at_a_time(rdopt: u32, delim: bool) -> TestResult {
    const WRITES: [&[u8]; 7] = [b"ab", b"cdef", b"g", b"", b"hij", b"klmnop", b"q"];
    const READS: [usize; 9] = [1, 5, 2, 64, 64, 3, 4, 64, 64];
    let [a, b] = pair(rdopt, delim)?;
    for _round in 0..2 {
        for w in WRITES {
            check_eq!(write(&a, 0, w), Ok(w.len()));
            check_eq!(putmsg_band1(&b, w), Ok(()));
        }
        for p in [&a, &b] {
            p.end(1, |_| ()); // the data goes up to the head: the reads find it queued
        }
        check_eq!(a.end(1, left), b.end(1, left));
        for len in READS {
            let (x, y) = (read(&a, 1, len), read(&b, 1, len));
            check_eq!(bytes(&x), bytes(&y));
            check_eq!(a.end(1, left), b.end(1, left));
        }
    }
    Ok(())
}

fn byte_stream_reads_match() -> TestResult {
    same_as_one_at_a_time(RNORM, false)
}

fn message_discard_reads_match() -> TestResult {
    same_as_one_at_a_time(RMSGD, false)
}

fn message_nondiscard_reads_match() -> TestResult {
    same_as_one_at_a_time(RMSGN, false)
}

/// Each write a delimited message (SO_DELIM): a byte-stream read stops after one, which the
/// run leaves to the loop.
fn delimited_reads_match() -> TestResult {
    same_as_one_at_a_time(RNORM, true)
}

/// End 0 of `s` writes `chunk` until refused (EAGAIN; fails unless it was), with `put_up` each
/// write put up to end 1's head at once (else it waits on the inbound list). Returns the
/// bytes written.
fn write_until_refused(s: &TestPipe, chunk: &[u8], put_up: bool) -> Result<usize, Failure> {
    let mut written = 0usize;
    for _ in 0..8192 {
        match write(s, 0, chunk) {
            Ok(n) => written += n,
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                return Ok(written);
            }
        }
        if put_up {
            s.end(1, |_| ());
        }
    }
    check!(false); // never refused
    Ok(written)
}

/// A read that takes many small messages in one run and so drains the head's queue from
/// above its high-water mark to below its low-water mark: the refused writer is
/// back-enabled (its head hears WAKE_WRITE) by that read, and may write again.
fn a_run_across_the_marks_back_enables_the_writer() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let chunk = [5u8; 16];
    write_until_refused(&s, &chunk, false)?;
    s.end(1, |_| ()); // everything up to the head
    let _ = s.end(0, |s| s.sth_take_events());
    let queued = s.end(1, |s| s.queue(s.head_rq()).map_or(0, |q| q.count()));
    check!(queued > BUF);
    // Reads of BUF bytes: 32 messages each, one run. No back-enable before the queue is low.
    for _ in 0..4096 {
        let r = check_ok!(read(&s, 1, BUF));
        check_eq!(r.1 % chunk.len(), 0); // whole messages: the run
        let low = s.end(1, |s| {
            s.queue(s.head_rq()).is_some_and(|q| q.count() <= q.lowat())
        });
        let woken = s.end(0, |s| s.sth_take_events()).wake & WAKE_WRITE != 0;
        check_eq!(woken, low);
        if woken {
            check_eq!(write(&s, 0, &chunk), Ok(chunk.len()));
            return Ok(());
        }
    }
    check!(false); // never back-enabled
    Ok(())
}

/// The writer fills the head's queue to its high-water mark (each write put up to the head
/// at once) and is refused. A read of one message takes the queue below the mark, but not
/// to its low-water mark: QFULL is cleared, so the flow control published at the end of that
/// read lets a new write in (though the refused writer's back-enable is not due yet).
fn a_run_below_the_high_water_mark_lets_a_writer_in() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let chunk = [9u8; BUF];
    write_until_refused(&s, &chunk, true)?; // the queue itself fills, not the inbound list
    let full = s.end(1, |s| {
        s.queue(s.head_rq())
            .is_some_and(|q| q.flags().contains(QFlags::QFULL) && !q.blocks_full())
    });
    check!(full);
    let _ = s.end(0, |s| s.sth_take_events());
    check_eq!(read(&s, 1, BUF).map(|r| r.1), Ok(BUF));
    let (full, low) = s.end(1, |s| {
        s.queue(s.head_rq()).map_or((true, true), |q| {
            (q.flags().contains(QFlags::QFULL), q.count() <= q.lowat())
        })
    });
    check!(!full && !low);
    check_eq!(s.end(0, |s| s.sth_take_events()).wake & WAKE_WRITE, 0);
    check_eq!(write(&s, 0, &chunk), Ok(BUF));
    Ok(())
}

/// One-byte writes, each put up to the head at once, until the head's queue holds its block
/// limit and the writer is refused; then one-byte reads (a run of one message each). The
/// writer is back-enabled by the read that leaves the queue's blocks low (a quarter of the
/// limit), not before: the run marks the flow control stale when the blocks become low,
/// though the queue's bytes were low all along.
fn a_writer_refused_for_blocks_is_back_enabled() -> TestResult {
    let s = check_ok!(TestPipe::new());
    write_until_refused(&s, b"x", true)?;
    check!(s.end(1, |s| s.queue(s.head_rq()).is_some_and(|q| q.blocks_full())));
    let _ = s.end(0, |s| s.sth_take_events());
    for _ in 0..8192 {
        check_eq!(read(&s, 1, 1).map(|r| r.1), Ok(1));
        let low = s.end(1, |s| s.queue(s.head_rq()).is_some_and(|q| q.blocks_low()));
        let woken = s.end(0, |s| s.sth_take_events()).wake & WAKE_WRITE != 0;
        check_eq!(woken, low);
        if woken {
            check_eq!(write(&s, 0, b"y"), Ok(1));
            return Ok(());
        }
    }
    check!(false); // never back-enabled
    Ok(())
}

/// End 1's head of `s` gets water marks 64 and 0 (M_SETOPTS from below, as a module would
/// send it).
pub(super) fn marks_64_0(s: &TestPipe) -> TestResult {
    let o = StrOptions {
        so_flags: SO_HIWAT | SO_LOWAT,
        so_hiwat: 64,
        so_lowat: 0,
        ..StrOptions::default()
    };
    let m = check_ok!(o.to_msg());
    check!(s.end(1, |s| s.driver_rq().map(|rq| s.put(rq, m))).is_some());
    Ok(())
}

/// End 1's head gets water marks 64 and 0 (M_SETOPTS from below). End 0 writes 16-byte
/// chunks until the bytes waiting on end 1's inbound list refuse it; one read at end 1 then
/// takes them all straight from the inbound list (the direct take): no queue changes, so only
/// the take of the list, which sees the refused writer's mark, makes the lock hold publish.
/// The writer is back-enabled by that read.
fn a_writer_refused_for_pending_bytes_is_back_enabled_by_the_take() -> TestResult {
    let s = check_ok!(TestPipe::new());
    marks_64_0(&s)?;
    let _ = s.end(1, |s| s.sth_take_events());
    let chunk = [4u8; 16];
    let written = write_until_refused(&s, &chunk, false)?;
    check!(s.perim(1).perim.gate().has_pending());
    let _ = s.end(0, |s| s.sth_take_events());
    let r = check_ok!(read(&s, 1, BUF));
    check_eq!(r.1, written);
    check!(s.end(0, |s| s.sth_take_events()).wake & WAKE_WRITE != 0);
    check_eq!(write(&s, 0, &chunk), Ok(chunk.len()));
    Ok(())
}

/// With `pass` (a module whose read service procedure honours flow control) pushed at the
/// reading end, the writer fills the head's queue, then `pass`'s, which refuses it. Reads
/// of runs of messages drain the head's queue, whose back-enable (QWANTW, set by `pass`'s
/// refused `bcanputnext`) lets `pass` send up the rest: everything written is read.
fn a_run_back_enables_the_module_below() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let mut r = Registry::new();
    check_ok!(r.register_module(&PASS));
    check_eq!(
        s.end(1, |s| s.strioctl(&r, I_PUSH, IocArg::Name("pass"))),
        Ok(0)
    );
    let chunk = [3u8; 16];
    let written = write_until_refused(&s, &chunk, true)?; // each up through `pass` at once
    let waiting = s.end(1, |s| {
        s.queue(s.head_rq())
            .is_some_and(|q| q.flags().contains(QFlags::QWANTW))
    });
    check!(waiting); // `pass` was refused by the head
    let mut read_back = 0usize;
    for _ in 0..4096 {
        match read(&s, 1, BUF) {
            Ok((_, n)) => read_back += n,
            Err(e) => {
                check_eq!(e, Errno::EAGAIN);
                break;
            }
        }
    }
    check_eq!(read_back, written);
    check_eq!(write(&s, 0, &chunk), Ok(chunk.len()));
    Ok(())
}

ktest_suite!(PIPE_READRUN_SUITE, "streams_pipe_readrun":
    byte_stream_reads_match,
    message_discard_reads_match,
    message_nondiscard_reads_match,
    delimited_reads_match,
    a_run_across_the_marks_back_enables_the_writer,
    a_run_below_the_high_water_mark_lets_a_writer_in,
    a_writer_refused_for_blocks_is_back_enabled,
    a_writer_refused_for_pending_bytes_is_back_enabled_by_the_take,
    a_run_back_enables_the_module_below,
);
