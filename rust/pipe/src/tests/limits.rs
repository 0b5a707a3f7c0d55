//! Shared tests of the block limit across a pipe (`crate::limits`, `perim/flow.rs`): the
//! messages a writer hands the other end's inbound list count as blocks, so a loop of
//! zero-length putmsg calls, which adds no bytes, is flow controlled like any other writer
//! (EAGAIN when non-blocking), and nothing it was told was sent is lost.

use super::TestPipe;
use streams_core::errno::Errno;
use streams_core::ktest::{Failure, TestResult};
use streams_core::limits::limits;
use streams_core::sth::call;
use streams_core::sth::*;
use streams_core::{check, check_eq, check_ok, ktest_suite};

/// putmsg of a zero-length data part on end `end`, non-blocking.
fn put_empty(p: &TestPipe, end: usize) -> Result<(), Errno> {
    let mut none = [0u8; 0];
    let data = Part {
        io: &mut SliceIo(&mut none),
        len: 0,
    };
    call::putmsg(&p.call(end), None, Some(data), 0, 0, true)
}

/// getmsg on end `end`, non-blocking: the data length.
fn get(p: &TestPipe, end: usize) -> Result<i32, Errno> {
    let mut b = [0u8; 8];
    let data = Part {
        io: &mut SliceIo(&mut b),
        len: 8,
    };
    call::getmsg(&p.call(end), None, Some(data), 0, 0, true, |_| Ok(())).map(|g| g.data_len)
}

/// Zero-length putmsg in a loop: EAGAIN once the other end holds its block limit (queued or
/// still on its inbound list), never more than twice that; every message accepted is read
/// back; once read, the writer may go on.
fn zero_length_putmsg_loop_is_flow_controlled() -> TestResult {
    let p = check_ok!(TestPipe::new());
    let max = limits().strmblkmax;
    let mut sent = 0usize;
    loop {
        match put_empty(&p, 0) {
            Ok(()) => sent += 1,
            Err(Errno::EAGAIN) => break,
            Err(_) => {
                return Err(Failure {
                    file: file!(),
                    line: line!(),
                    what: "putmsg failed with other than EAGAIN",
                })
            }
        }
        check!(sent <= 2 * max + 1);
    }
    check!(sent >= max);
    let mut got = 0usize;
    while let Ok(n) = get(&p, 1) {
        check_eq!(n, 0);
        got += 1;
        check!(got <= sent);
    }
    check_eq!(got, sent);
    check_eq!(get(&p, 1), Err(Errno::EAGAIN));
    check_eq!(put_empty(&p, 0), Ok(()));
    check_eq!(get(&p, 1), Ok(0));
    Ok(())
}

ktest_suite!(PIPE_LIMITS_SUITE, "streams_pipe_limits":
    zero_length_putmsg_loop_is_flow_controlled,
);
