//! Shared (host + KUnit) tests of the two-phase reads (`take.rs`): what read(2) and getmsg(2)
//! take off the head under the lock, how a message larger than the read is split (its rest
//! stays queued), how a faulting copy puts everything back as it was (rejoined, retyped, in
//! order, behind a high-priority message that arrived meanwhile, not after a flush), and the
//! reader token that keeps other readers of the head out meanwhile.

use super::drivers::*;
use super::*;
use crate::msg::{Msg, MsgFlags};

/// The bytes read(2) would deliver from take `t` (copied out as the platform does).
fn out(t: &Taken) -> Result<([u8; BUF], usize), Failure> {
    let mut b = [0u8; BUF];
    let n = check_ok!(t.copy_out(&mut SliceIo(&mut b)));
    Ok((b, n))
}

fn bytes(r: &([u8; BUF], usize)) -> &[u8] {
    r.0.get(..r.1).unwrap_or_default()
}

fn ctl_data(s: &mut Stream) -> Result<(GetMsg, Got, Got), Failure> {
    Ok(check_ok!(get(s, BUF as i32, BUF as i32, 0, MSG_ANY)))
}

fn take_whole_messages_then_copy_out() -> TestResult {
    let mut s = open(&STHLOOP)?;
    for m in [&b"ab"[..], b"cd", b"ef"] {
        check_ok!(wr(&mut s, m));
    }
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(5, true, &tok, &mut t), Ok(5));
    // "ab" and "cd" whole, "e" split off "ef": its rest stays queued.
    check_eq!(t.len(), 3);
    check!(tok.is_held());
    check_eq!(nread(&mut s)?, (1, 1));
    check_eq!(bytes(&out(&t)?), b"abcde");
    check!(!tok.release());
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"f");
    Ok(())
}

fn token_keeps_other_readers_out() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"one"));
    check_ok!(wr(&mut s, b"two"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(3, true, &tok, &mut t), Ok(3));
    let mut t2 = Taken::new();
    check_eq!(
        s.strread(3, true, &tok, &mut t2),
        Err(Stop::Err(Errno::EAGAIN))
    );
    check_eq!(
        s.strread(3, false, &tok, &mut t2),
        Err(Stop::Block(Block::Readable))
    );
    check_eq!(
        s.strgetpmsg(Some(8), Some(8), 0, 0, false, &tok, &mut t2)
            .err(),
        Some(Stop::Block(Block::Readable))
    );
    check_eq!(
        s.strrecvfd(true, &tok).err(),
        Some(Stop::Err(Errno::EAGAIN))
    );
    check!(t2.is_empty());
    // Writers, pollers and ioctls are not held up.
    check_ok!(wr(&mut s, b"three"));
    check_eq!(s.strpoll(POLLIN), POLLIN);
    check_eq!(nread(&mut s)?, (2, 3));
    // Giving it back says a reader waits; then the next reader goes on.
    check!(tok.release());
    check!(!tok.release());
    check_eq!(s.strread(16, true, &tok, &mut t2), Ok(8));
    check_eq!(bytes(&out(&t2)?), b"twothree");
    Ok(())
}

fn rmsgn_fault_rejoins_the_split_message() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(RMSGN))));
    check_ok!(wr(&mut s, b"0123456789"));
    check_ok!(wr(&mut s, b"next"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(4, true, &tok, &mut t), Ok(4));
    check_eq!(nread(&mut s)?, (2, 6));
    // The copy faulted: put back from message 0.
    s.sth_untake(&mut t, 0, &tok);
    check!(t.is_empty() && !tok.is_held());
    check!(s.sth_take_events().wake & WAKE_READ != 0);
    check_eq!(nread(&mut s)?, (2, 10));
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"0123456789");
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"next");
    Ok(())
}

fn rprotdat_fault_restores_the_control_part() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(
        &Registry::new(),
        I_SRDOPT,
        IocArg::Int(i64::from(RMSGN | RPROTDAT))
    ));
    check_ok!(put(&mut s, Some(b"CCCC"), Some(b"DD"), 0, 0));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    // Split inside the control part: the rest is data to read(), for now.
    check_eq!(s.strread(2, true, &tok, &mut t), Ok(2));
    check_eq!(bytes(&out(&t)?), b"CC");
    s.sth_untake(&mut t, 0, &tok);
    let (g, c, d) = ctl_data(&mut s)?;
    check_eq!((g.ctl_len, g.data_len, g.more), (4, 2, 0));
    check_eq!((c.bytes(), d.bytes()), (&b"CCCC"[..], &b"DD"[..]));
    Ok(())
}

fn rprotdis_fault_keeps_the_control_part() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(
        &Registry::new(),
        I_SRDOPT,
        IocArg::Int(i64::from(RMSGN | RPROTDIS))
    ));
    check_ok!(put(&mut s, Some(b"CC"), Some(b"DDDD"), 0, 0));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(3, true, &tok, &mut t), Ok(3));
    check_eq!(bytes(&out(&t)?), b"DDD");
    s.sth_untake(&mut t, 0, &tok);
    let (g, c, d) = ctl_data(&mut s)?;
    check_eq!((g.ctl_len, g.data_len), (2, 4));
    check_eq!((c.bytes(), d.bytes()), (&b"CC"[..], &b"DDDD"[..]));
    Ok(())
}

fn rmsgd_fault_puts_the_whole_message_back() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(&Registry::new(), I_SRDOPT, IocArg::Int(i64::from(RMSGD))));
    check_ok!(wr(&mut s, b"discarded"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(3, true, &tok, &mut t), Ok(3));
    // The whole message was taken: its rest is discarded once the copy succeeded.
    check_eq!(nread(&mut s)?, (0, 0));
    check_eq!(bytes(&out(&t)?), b"dis");
    s.sth_untake(&mut t, 0, &tok);
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"discarded");
    Ok(())
}

fn rejoin_behind_a_high_priority_arrival() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"abcdef"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(2, true, &tok, &mut t), Ok(2));
    // While the take is copied out, an M_PCPROTO arrives in front of the rest.
    check_ok!(put(&mut s, Some(b"hi"), None, 0, MSG_HIPRI));
    s.sth_untake(&mut t, 0, &tok);
    check_eq!(nread(&mut s)?, (2, 0));
    let (g, c, _) = ctl_data(&mut s)?;
    check_eq!((g.flags, c.bytes()), (MSG_HIPRI, &b"hi"[..]));
    check_eq!(nread(&mut s)?, (1, 6));
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"abcdef");
    Ok(())
}

fn fault_in_the_middle_keeps_what_was_delivered() -> TestResult {
    let mut s = open(&STHLOOP)?;
    for m in [&b"ab"[..], b"cd", b"ef"] {
        check_ok!(wr(&mut s, m));
    }
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(64, true, &tok, &mut t), Ok(6));
    let mut b = [0u8; 8];
    let f = t.copy_out(&mut FaultAt { buf: &mut b, at: 3 });
    check_eq!(f, Err(Fault { done: 2, at: 1 }));
    s.sth_untake(&mut t, 1, &tok);
    // "ab" stays with the caller (freed after the lock), "cd" and "ef" are back.
    check_eq!(t.len(), 1);
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"cdef");
    Ok(())
}

fn flush_between_take_and_fault_frees_the_take() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"0123456789"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    check_eq!(s.strread(4, true, &tok, &mut t), Ok(4));
    check_ok!(s.strioctl(&Registry::new(), I_FLUSH, IocArg::Int(i64::from(FLUSHR))));
    check_ok!(wr(&mut s, b"new"));
    s.sth_untake(&mut t, 0, &tok);
    check!(t.is_empty() && !tok.is_held());
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"new");
    Ok(())
}

fn zero_length_and_marked_messages() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(s.strioctl(&Registry::new(), I_SWROPT, IocArg::Int(i64::from(SNDZERO))));
    check_eq!(wr(&mut s, b""), Ok(0));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    // A zero-length message is consumed under the lock: nothing to copy, no token.
    check_eq!(s.strread(8, true, &tok, &mut t), Ok(0));
    check!(t.is_empty() && !tok.is_held());
    let mut m = check_ok!(Msg::from_bytes(M_DATA, b"mark"));
    m.set_flag(MsgFlags::MSGMARK);
    let rq = check_some!(s.driver_rq());
    s.put(rq, m);
    check_ok!(wr(&mut s, b"after"));
    check_eq!(s.strread(64, true, &tok, &mut t), Ok(4));
    check_eq!(t.len(), 1);
    // The mark is still on it when a fault puts it back.
    s.sth_untake(&mut t, 0, &tok);
    check_eq!(
        s.strioctl(&Registry::new(), I_ATMARK, IocArg::Int(i64::from(ANYMARK))),
        Ok(1)
    );
    Ok(())
}

fn getmsg_takes_both_parts_and_puts_them_back() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"cccccc"), Some(b"dddddd"), 3, MSG_BAND));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    let g = check_ok!(s.strgetpmsg(Some(2), Some(3), 0, MSG_ANY, true, &tok, &mut t));
    check_eq!((g.ctl_len, g.data_len, g.band), (2, 3, 3));
    check_eq!(g.more, MORECTL | MOREDATA);
    let (mut cb, mut db) = ([0u8; 8], [0u8; 8]);
    check_ok!(t.copy_parts(Some(&mut SliceIo(&mut cb)), Some(&mut SliceIo(&mut db))));
    check_eq!(
        (cb.get(..2), db.get(..3)),
        (Some(&b"cc"[..]), Some(&b"ddd"[..]))
    );
    // The rest waits at the front in band 3 …
    check_eq!(nread(&mut s)?, (1, 3));
    // … and a fault joins it back into the message as it was.
    s.sth_untake(&mut t, 0, &tok);
    let (g, c, d) = ctl_data(&mut s)?;
    check_eq!((g.band, g.more), (3, 0));
    check_eq!((c.bytes(), d.bytes()), (&b"cccccc"[..], &b"dddddd"[..]));
    Ok(())
}

/// The parts of a message of several blocks each (an empty one among them) are copied in one
/// walk, each part's blocks one after the other from offset 0 of its own buffer.
fn getmsg_copies_each_part_at_its_own_offset() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut m = check_ok!(Msg::from_bytes(M_PROTO, b"ab"));
    for (ty, b) in [
        (M_PROTO, &b"cd"[..]),
        (M_DATA, b"ef"),
        (M_DATA, b""),
        (M_DATA, b"gh"),
    ] {
        m.linkb(check_ok!(Msg::from_bytes(ty, b)));
    }
    let rq = check_some!(s.driver_rq());
    s.put(rq, m);
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    let g = check_ok!(s.strgetpmsg(Some(8), Some(8), 0, 0, true, &tok, &mut t));
    check_eq!((g.ctl_len, g.data_len, g.more), (4, 4, 0));
    let (mut cb, mut db) = ([0u8; 8], [0u8; 8]);
    check_ok!(t.copy_parts(Some(&mut SliceIo(&mut cb)), Some(&mut SliceIo(&mut db))));
    check_eq!((&cb, &db), (b"abcd\0\0\0\0", b"efgh\0\0\0\0"));
    // Without a control buffer only the data part is copied.
    let mut d2 = [0u8; 8];
    check_ok!(t.copy_parts(None, Some(&mut SliceIo(&mut d2))));
    check_eq!(&d2, b"efgh\0\0\0\0");
    check!(t.len() == 1);
    Ok(())
}

fn getmsg_that_retrieves_nothing_takes_nothing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(put(&mut s, Some(b"ab"), Some(b"cd"), 0, 0));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    let g = check_ok!(s.strgetpmsg(None, None, 0, 0, true, &tok, &mut t));
    check_eq!(
        (g.ctl_len, g.data_len, g.more),
        (-1, -1, MORECTL | MOREDATA)
    );
    check!(t.is_empty() && !tok.is_held());
    let g = check_ok!(s.strgetpmsg(Some(0), None, 0, 0, true, &tok, &mut t));
    check_eq!((g.ctl_len, g.more), (0, MORECTL | MOREDATA));
    check!(t.is_empty());
    check_eq!(nread(&mut s)?, (1, 2));
    Ok(())
}

/// A message that fits the buffers is taken whole, without a split (`plan`'s `whole`);
/// one byte too many, a part not processed, or an empty data part not processed goes through
/// the split, and what is left stays queued.
fn getmsg_whole_message_and_the_split_fallback() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let tok = ReaderToken::new();
    // Data only, exactly the buffer: taken whole, nothing left.
    check_ok!(put(&mut s, None, Some(b"0123"), 0, 0));
    let (g, _, d) = check_ok!(get(&mut s, -1, 4, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (-1, 4, 0));
    check_eq!(d.bytes(), b"0123");
    check_eq!(nread(&mut s)?, (0, 0));
    // One byte over: MOREDATA, the rest stays.
    check_ok!(put(&mut s, None, Some(b"01234"), 0, 0));
    let (g, _, d) = check_ok!(get(&mut s, -1, 4, 0, 0));
    check_eq!((g.data_len, g.more), (4, MOREDATA));
    check_eq!(d.bytes(), b"0123");
    check_eq!(nread(&mut s)?, (1, 1));
    let (g, _, d) = check_ok!(get(&mut s, -1, 4, 0, 0));
    check_eq!((g.data_len, g.more, d.bytes()), (1, 0, &b"4"[..]));
    // Both parts of a band message, whole: its band comes with it; a fault puts it back.
    check_ok!(put(&mut s, Some(b"cc"), Some(b"dd"), 7, MSG_BAND));
    let mut t = Taken::new();
    let g = check_ok!(s.strgetpmsg(Some(2), Some(2), 0, MSG_ANY, true, &tok, &mut t));
    check_eq!((g.ctl_len, g.data_len, g.band, g.more), (2, 2, 7, 0));
    check_eq!((t.len(), nread(&mut s)?), (1, (0, 0)));
    s.sth_untake(&mut t, 0, &tok);
    let (g, c, d) = ctl_data(&mut s)?;
    check_eq!((g.band, g.more, g.flags), (7, 0, MSG_BAND));
    check_eq!((c.bytes(), d.bytes()), (&b"cc"[..], &b"dd"[..]));
    // A high-priority control part, whole.
    check_ok!(put(&mut s, Some(b"hp"), None, 0, MSG_HIPRI));
    let (g, c, _) = check_ok!(get(&mut s, 8, 8, 0, MSG_HIPRI));
    check_eq!(
        (g.ctl_len, g.data_len, g.more, g.flags),
        (2, -1, 0, MSG_HIPRI)
    );
    check_eq!(c.bytes(), b"hp");
    // Control and an empty data part, data not processed: the empty data block stays
    // queued as a zero-length message (the split's answer, kept as it was).
    check_ok!(put(&mut s, Some(b"ab"), Some(b""), 0, 0));
    let (g, c, _) = check_ok!(get(&mut s, 8, -1, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (2, -1, 0));
    check_eq!(c.bytes(), b"ab");
    check_eq!(nread(&mut s)?, (1, 0));
    let (g, _, _) = check_ok!(get(&mut s, 8, 8, 0, 0));
    check_eq!((g.ctl_len, g.data_len, g.more), (-1, 0, 0));
    check_eq!(nread(&mut s)?, (0, 0));
    Ok(())
}

fn split_without_memory_fails_and_keeps_the_message() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"0123456789"));
    let tok = ReaderToken::new();
    let mut t = Taken::new();
    {
        let _g = FaultGuard::fail_after(0);
        check_eq!(
            s.strread(4, true, &tok, &mut t),
            Err(Stop::Err(Errno::ENOSR))
        );
    }
    check!(t.is_empty() && !tok.is_held());
    check_eq!(check_ok!(rd(&mut s, 64)).bytes(), b"0123456789");
    Ok(())
}

/// The fast paths stay one lock hold per call: a write built before the lock, a byte-stream
/// read of whole messages (the token goes back without the lock), a read that splits; only a
/// fault or a waiting reader adds one.
fn fast_paths_are_one_lock_hold() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut b = *b"0123456789";
    let h = Direct::new(&mut s);
    check_eq!(call::write(&h, &mut SliceIo(&mut b), 10, true), Ok(10));
    check_eq!(h.runs.get(), 1);
    check_eq!(call::write(&h, &mut SliceIo(&mut b), 10, true), Ok(10));
    let mut out = [0u8; 16];
    h.runs.set(0);
    check_eq!(call::read(&h, &mut SliceIo(&mut out), 12, true), Ok(12));
    check_eq!(h.runs.get(), 1);
    check_eq!(call::read(&h, &mut SliceIo(&mut out), 4, true), Ok(4));
    check_eq!(h.runs.get(), 2);
    check_eq!(
        call::read(
            &h,
            &mut FaultAt {
                buf: &mut out,
                at: 0
            },
            4,
            true
        ),
        Err(Errno::EFAULT)
    );
    check_eq!(h.runs.get(), 4);
    Ok(())
}

/// A platform whose read step fails (EIO) after its op succeeded, with what the op took:
/// `call::read` and `call::getmsg` must put the take back and free the reader token.
struct FailAfterTake<'a>(Direct<'a>);

impl HeadCall for FailAfterTake<'_> {
    fn run<R>(
        &self,
        nonblock: bool,
        limit_ms: Option<u32>,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.0.run(nonblock, limit_ms, op, cancel)
    }

    fn run_read<R>(
        &self,
        nonblock: bool,
        _ready: impl Fn(&Stream) -> bool,
        op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        self.0.run(nonblock, None, op, |_| {})?;
        Err(Errno::EIO)
    }

    fn shared(&self) -> &HeadShared {
        self.0.shared()
    }
}

fn an_error_after_a_take_puts_it_back() -> TestResult {
    let mut s = open(&STHLOOP)?;
    for m in [&b"ab"[..], b"cd", b"ef"] {
        check_ok!(wr(&mut s, m));
    }
    let h = FailAfterTake(Direct::new(&mut s));
    let mut b = [0u8; BUF];
    check_eq!(
        call::read(&h, &mut SliceIo(&mut b), 5, true),
        Err(Errno::EIO)
    );
    check!(h.shared().reader.is_idle());
    let d = Some(Part {
        io: &mut SliceIo(&mut b),
        len: 1,
    });
    check_eq!(
        call::getmsg(&h, None, d, 0, 0, true, |_| Ok(())).err(),
        Some(Errno::EIO)
    );
    check!(h.shared().reader.is_idle());
    drop(h);
    // Nothing lost, in order, the split "ef" rejoined.
    check_eq!(nread(&mut s)?, (3, 2));
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"abcdef");
    Ok(())
}

ktest_suite!(STH_TAKE_SUITE, "streams_sth_take":
    take_whole_messages_then_copy_out,
    token_keeps_other_readers_out,
    rmsgn_fault_rejoins_the_split_message,
    rprotdat_fault_restores_the_control_part,
    rprotdis_fault_keeps_the_control_part,
    rmsgd_fault_puts_the_whole_message_back,
    rejoin_behind_a_high_priority_arrival,
    fault_in_the_middle_keeps_what_was_delivered,
    flush_between_take_and_fault_frees_the_take,
    zero_length_and_marked_messages,
    getmsg_takes_both_parts_and_puts_them_back,
    getmsg_copies_each_part_at_its_own_offset,
    getmsg_that_retrieves_nothing_takes_nothing,
    getmsg_whole_message_and_the_split_fallback,
    split_without_memory_fails_and_keeps_the_message,
    fast_paths_are_one_lock_hold,
    an_error_after_a_take_puts_it_back,
);
