//! Shared tests of the two-phase system calls on a STREAMS pipe (`sth/call.rs`, `sth/take.rs`):
//! each end's steps are lock holds of its own perimeter, and what happens while a caller
//! copies (a [`Hook`] buffer runs it inside the copy, with no lock held) is what another
//! thread could do then: the other end reads, writes and polls, other readers of the same end
//! wait for the reader token, a flush or a fault takes back what the copy would deliver.

use super::TestPipe;
use core::cell::Cell;
use streams_core::errno::Errno;
use streams_core::ktest::TestResult;
use streams_core::msg::{Msg, FASTBUF, M_DATA, M_SETOPTS};
use streams_core::sth::call::{self, HeadCall};
use streams_core::sth::consts::*;
use streams_core::sth::tests::{nread, wr};
use streams_core::sth::*;
use streams_core::stream::Registry;
use streams_core::{check, check_eq, check_ok, check_some, ktest_suite};

/// A user buffer whose first copy out runs `hook` first (the caller copies without the lock,
/// so the hook plays another thread), and which faults from byte `fault` on.
struct Hook<'a, F: FnMut()> {
    buf: &'a mut [u8],
    fault: usize,
    hook: Option<F>,
}

impl<'a, F: FnMut()> Hook<'a, F> {
    fn new(buf: &'a mut [u8], fault: usize, hook: F) -> Self {
        Hook {
            buf,
            fault,
            hook: Some(hook),
        }
    }
}

impl<F: FnMut()> UserIo for Hook<'_, F> {
    fn copy_from_user(&mut self, dst: &mut [u8], off: usize) -> Result<(), Errno> {
        SliceIo(self.buf).copy_from_user(dst, off)
    }
    fn copy_to_user(&mut self, off: usize, src: &[u8]) -> Result<(), Errno> {
        if let Some(mut h) = self.hook.take() {
            h();
        }
        if off.saturating_add(src.len()) > self.fault {
            return Err(Errno::EFAULT);
        }
        SliceIo(self.buf).copy_to_user(off, src)
    }
}

/// read(2) of up to `len` bytes on end `end`, non-blocking; the bytes.
fn read(s: &TestPipe, end: usize, len: usize) -> Result<([u8; 64], usize), Errno> {
    let mut b = [0u8; 64];
    let n = call::read(&s.call(end), &mut SliceIo(&mut b), len.min(64), true)?;
    Ok((b, n))
}

fn bytes(r: &([u8; 64], usize)) -> &[u8] {
    r.0.get(..r.1).unwrap_or_default()
}

fn write(s: &TestPipe, end: usize, data: &[u8]) -> Result<usize, Errno> {
    let mut b = [0u8; 64];
    let n = data.len().min(64);
    b.get_mut(..n)
        .unwrap_or_default()
        .copy_from_slice(data.get(..n).unwrap_or_default());
    let io = &mut SliceIo(b.get_mut(..n).unwrap_or_default());
    call::write(&s.call(end), io, n, true)
}

fn prebuilt_write_then_read_across() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check!(s.end(0, |s| s.sth_prebuilt_ok(3)));
    check_eq!(write(&s, 0, b"abc"), Ok(3));
    check_eq!(write(&s, 0, b"defg"), Ok(4));
    check_eq!(s.end(1, |s| nread(s).map(|n| n.0)), Ok(2));
    // One read takes both messages (byte stream) and copies them after the lock.
    let r = check_ok!(read(&s, 1, 64));
    check_eq!(bytes(&r), b"abcdefg");
    check_eq!(read(&s, 1, 64).err(), Some(Errno::EAGAIN));
    check!(!s.call(1).shared().reader.is_held());
    Ok(())
}

fn read_smaller_than_the_message_splits_it() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check_eq!(write(&s, 0, b"123456789abc"), Ok(12));
    check_eq!(bytes(&check_ok!(read(&s, 1, 5))), b"12345");
    // The rest stayed at the head, one message.
    check_eq!(s.end(1, nread), Ok((1, 7)));
    check_eq!(bytes(&check_ok!(read(&s, 1, 64))), b"6789abc");
    Ok(())
}

/// While end 1's reader copies its take out, end 0 reads, writes and polls; another reader of
/// end 1 waits (EAGAIN when non-blocking, a sleep otherwise), and is woken when the first gives
/// the token back.
fn reader_token_holds_only_readers_of_that_end() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check_eq!(write(&s, 0, b"first"), Ok(5));
    check_eq!(write(&s, 1, b"back"), Ok(4));
    let seen: Cell<[Option<Errno>; 4]> = Cell::new([None; 4]);
    let other = Cell::new(false);
    let mut b = [0u8; 16];
    let hook = || {
        let other_end = read(&s, 0, 64).map(|r| bytes(&r) == b"back");
        other.set(
            other_end == Ok(true)
                && write(&s, 0, b"more") == Ok(4)
                && s.end(0, |s| s.strpoll(POLLOUT)) == POLLOUT
                && s.end(1, |s| s.strpoll(POLLIN)) == POLLIN,
        );
        let mut x = [0u8; 8];
        let h = s.call(1);
        let a = call::read(&h, &mut SliceIo(&mut x), 8, true).err();
        let b = call::read(&h, &mut SliceIo(&mut x), 8, false).err();
        let c = call::getmsg(&h, None, None, 0, 0, true, |_| Ok(())).err();
        let d = s
            .end(1, |st| st.strrecvfd(true, &h.shared().reader))
            .err()
            .map(|e| match e {
                Stop::Err(e) => e,
                Stop::Block(_) => Errno::EINTR,
            });
        seen.set([a, b, c, d]);
        let _ = s.end(1, Stream::sth_take_events);
    };
    let n = call::read(&s.call(1), &mut Hook::new(&mut b, 16, hook), 16, true);
    check_eq!(n, Ok(5));
    check_eq!(b.get(..5), Some(&b"first"[..]));
    check!(other.get());
    let e = Some(Errno::EAGAIN);
    check_eq!(seen.get(), [e, Some(Errno::EINTR), e, e]);
    // The waiting reader asked to be woken: giving the token back woke end 1's readers.
    check!(s.end(1, Stream::sth_take_events).wake & WAKE_READ != 0);
    check_eq!(bytes(&check_ok!(read(&s, 1, 64))), b"more");
    Ok(())
}

/// A fault puts what was not delivered back in front of what arrived during the copy.
fn fault_puts_back_in_front_of_later_data() -> TestResult {
    let s = check_ok!(TestPipe::new());
    for m in [&b"ab"[..], b"cd", b"ef"] {
        check_eq!(write(&s, 0, m), Ok(2));
    }
    let mut b = [0u8; 16];
    // "ab" is delivered, "cd" faults: "cd" and "ef" go back, in front of "gh".
    let hook = || {
        let _ = write(&s, 0, b"gh");
    };
    let n = call::read(&s.call(1), &mut Hook::new(&mut b, 3, hook), 16, true);
    check_eq!(n, Ok(2));
    check_eq!(b.get(..2), Some(&b"ab"[..]));
    check_eq!(bytes(&check_ok!(read(&s, 1, 64))), b"cdefgh");
    Ok(())
}

/// A read-side flush while the take is being copied out: what faults is not put back (the
/// flush would have freed it), the split message's rest went with the flush.
fn flush_during_the_copy_wins() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check_eq!(write(&s, 0, b"0123456789"), Ok(10));
    let reg = Registry::new();
    let hook = || {
        let _ = s.end(1, |s| {
            s.strioctl(&reg, I_FLUSH, IocArg::Int(i64::from(FLUSHR)))
        });
        let _ = write(&s, 0, b"new");
    };
    let mut b = [0u8; 16];
    let n = call::read(&s.call(1), &mut Hook::new(&mut b, 0, hook), 4, true);
    check_eq!(n, Err(Errno::EFAULT));
    check_eq!(bytes(&check_ok!(read(&s, 1, 64))), b"new");
    check!(!s.call(1).shared().reader.is_held());
    Ok(())
}

/// getmsg on a pipe end: a fault in the caller's lengths (`finish`) puts the message back
/// whole, parts and boundaries as they were.
fn getmsg_fault_in_finish_puts_back() -> TestResult {
    let s = check_ok!(TestPipe::new());
    check_ok!(s.end(0, |s| streams_core::sth::tests::put(
        s,
        Some(b"ctl"),
        Some(b"datadata"),
        0,
        0
    )));
    let (mut c, mut d) = ([0u8; 8], [0u8; 8]);
    let h = s.call(1);
    let cp = Part {
        io: &mut SliceIo(&mut c),
        len: 2,
    };
    let dp = Part {
        io: &mut SliceIo(&mut d),
        len: 3,
    };
    let r = call::getmsg(&h, Some(cp), Some(dp), 0, 0, true, |_| Err(Errno::EFAULT));
    check_eq!(r.err(), Some(Errno::EFAULT));
    let (g, gc, gd) = check_ok!(s.end(1, |s| streams_core::sth::tests::get(s, 8, 8, 0, 0)));
    check_eq!((g.ctl_len, g.data_len, g.more), (3, 8, 0));
    check_eq!((gc.bytes(), gd.bytes()), (&b"ctl"[..], &b"datadata"[..]));
    Ok(())
}

fn options_turn_the_write_fast_path_off() -> TestResult {
    let s = check_ok!(TestPipe::new());
    super::hold::hold_writes(&s, 0)?;
    check!(!s.end(0, |s| s.sth_prebuilt_ok(8)));
    check!(!s.end(0, |s| s.sth_prebuilt_ok(0)));
    check!(!s.end(1, |s| s.sth_prebuilt_ok(STRMSGSZ + 1)));
    // Writes too big to hold keep the fast path; those up to STRHOLDPSZ are held.
    check!(!s.end(0, |s| s.sth_prebuilt_ok(FASTBUF + 1)));
    check!(!s.end(0, |s| s.sth_prebuilt_ok(STRHOLDPSZ)));
    check!(s.end(0, |s| s.sth_prebuilt_ok(STRHOLDPSZ + 1)));
    // Held writes still arrive, through the staged path.
    check_eq!(write(&s, 0, b"held"), Ok(4));
    check_eq!(write(&s, 0, b"!"), Ok(1));
    check_eq!(s.end(0, Stream::sth_flush_hold), 5);
    check_eq!(bytes(&check_ok!(read(&s, 1, 64))), b"held!");
    // A large write after held bytes: built before the lock, sent after what was held.
    check_eq!(write(&s, 0, b"ab"), Ok(2));
    let mut big = [b'x'; STRHOLDPSZ + 1];
    check_eq!(
        call::write(&s.call(0), &mut SliceIo(&mut big), STRHOLDPSZ + 1, true),
        Ok(STRHOLDPSZ + 1)
    );
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    let (r, n) = check_ok!(read(&s, 1, 64));
    check_eq!((n, r.get(..3)), (64, Some(&b"abx"[..])));
    Ok(())
}

fn prebuilt_flow_control_keeps_the_message() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let chunk = [1u8; 200];
    while s.end(0, |s| wr(s, &chunk)).is_ok() {}
    let mut slot = Some(check_ok!(Msg::from_bytes(M_DATA, b"kept")));
    check_eq!(
        s.end(0, |s| s.strwrite_prebuilt(&mut slot, true)),
        Err(Stop::Err(Errno::EAGAIN))
    );
    check!(slot.is_some());
    check_eq!(
        s.end(0, |s| s.strwrite_prebuilt(&mut slot, false)),
        Err(Stop::Block(Block::Writable(0)))
    );
    check_eq!(check_some!(slot.as_ref()).rd(), b"kept");
    Ok(())
}

/// Held writes join the held message without the Stream lock (`sth/hold.rs`) until it is
/// full (a full message waits: the next write moves it to the held run under the lock, and
/// the write after a full run sends the run) and never after a hangup.
fn held_writes_join_until_full_or_hangup() -> TestResult {
    let s = check_ok!(TestPipe::new());
    super::hold::hold_writes(&s, 0)?;
    let hold = STRHOLDRUN * STRHOLDSZ;
    for i in 0..hold {
        check_eq!(write(&s, 0, &[(i % 251) as u8]), Ok(1));
        let held = s.end(0, |s| s.sth().held());
        check_eq!(held, i + 1);
    }
    check_eq!(write(&s, 0, b"x"), Ok(1));
    check_eq!(s.end(0, |s| s.sth().held()), 1);
    let (b, n) = check_ok!(read(&s, 1, 64));
    check_eq!(n, 64);
    check!(b.iter().enumerate().all(|(i, &x)| x == (i % 251) as u8));
    check_eq!(write(&s, 0, b"y"), Ok(1));
    check_eq!(s.end(0, |s| s.sth().held()), 2);
    s.close(1);
    check!(write(&s, 0, b"z").is_err());
    check_eq!(s.end(0, |s| s.sth().held()), 2);
    Ok(())
}

/// A read that blocks at end 1 (read notification on there) sends M_READ across, and end 0's
/// held "held" goes at once (no hold timer in these tests): the next read at end 1 gets it.
fn blocked_read_sends_what_is_held(s: &TestPipe) -> TestResult {
    let end1 = s.call(1);
    let tok = &end1.shared().reader;
    let mut t = Taken::new();
    let blocked = s.end(1, |s| s.strread(64, false, tok, &mut t));
    check_eq!(blocked, Err(Stop::Block(Block::Readable)));
    s.settle();
    check_eq!(s.end(0, |s| s.sth().held()), 0);
    check_eq!(bytes(&check_ok!(read(s, 1, 64))), b"held");
    Ok(())
}

/// SO_MREADON at end 1: a read that blocks there sends M_READ across, and end 0's head sends
/// what write hold holds at once instead of at the hold timer.
fn mread_from_a_blocking_reader_sends_held_data() -> TestResult {
    let s = check_ok!(TestPipe::new());
    super::hold::hold_writes(&s, 0)?;
    let so = StrOptions {
        so_flags: SO_MREADON,
        ..StrOptions::default()
    };
    let m = check_ok!(Msg::from_bytes(M_SETOPTS, &so.encode()));
    s.end(1, |s| {
        let h = s.head_rq();
        s.qctx(h).put(m);
    });
    check!(s.end(1, |s| s.sth().mread()));
    check_eq!(write(&s, 0, b"held"), Ok(4));
    check_eq!(s.end(0, |s| s.sth().held()), 4);
    // A non-blocking read sends no M_READ.
    check_eq!(read(&s, 1, 64).err(), Some(Errno::EAGAIN));
    check_eq!(s.end(0, |s| s.sth().held()), 4);
    blocked_read_sends_what_is_held(&s)?;
    Ok(())
}

/// I_SWROPT SNDMREAD at end 0 (LfS perftest's `-M`) turns read notification on at end 1, the
/// head that reads end 0's data, and not at end 0: a read that blocks at end 1 sends M_READ
/// across and end 0's held data goes at once. I_GWROPT reports the bit; clearing it turns
/// end 1's notification off again.
fn swropt_sndmread_asks_the_reading_end_for_m_read() -> TestResult {
    let s = check_ok!(TestPipe::new());
    let r = Registry::new();
    let on = IocArg::Int(i64::from(SNDPIPE | SNDHOLD | SNDMREAD));
    check_ok!(s.end(0, |s| s.strioctl(&r, I_SWROPT, on)));
    s.settle();
    check!(s.end(1, |s| s.sth().mread()));
    check!(!s.end(0, |s| s.sth().mread()));
    check_eq!(s.end(0, |s| s.sth().wropt()), SNDPIPE | SNDHOLD | SNDMREAD);
    check_eq!(write(&s, 0, b"held"), Ok(4));
    check_eq!(s.end(0, |s| s.sth().held()), 4);
    blocked_read_sends_what_is_held(&s)?;
    let off = IocArg::Int(i64::from(SNDPIPE | SNDHOLD));
    check_ok!(s.end(0, |s| s.strioctl(&r, I_SWROPT, off)));
    s.settle();
    check!(!s.end(1, |s| s.sth().mread()));
    check_eq!(s.end(0, |s| s.sth().wropt()), SNDPIPE | SNDHOLD);
    Ok(())
}

ktest_suite!(PIPE_TWOPHASE_SUITE, "streams_pipe_twophase":
    prebuilt_write_then_read_across,
    read_smaller_than_the_message_splits_it,
    reader_token_holds_only_readers_of_that_end,
    fault_puts_back_in_front_of_later_data,
    flush_during_the_copy_wins,
    getmsg_fault_in_finish_puts_back,
    options_turn_the_write_fast_path_off,
    prebuilt_flow_control_keeps_the_message,
    held_writes_join_until_full_or_hangup,
    mread_from_a_blocking_reader_sends_held_data,
    swropt_sndmread_asks_the_reading_end_for_m_read,
);
