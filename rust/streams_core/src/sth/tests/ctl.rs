//! Shared (host + KUnit) tests of the Stream head's control side: the I_* ioctls (push/pop
//! through a registry, I_STR round trips, options, SIGPOLL registration, band queries), the
//! messages the head acts on (M_ERROR, M_HANGUP, M_FLUSH, M_SETOPTS, M_SIG) and poll masks.

use super::drivers::*;
use super::*;
use crate::msg::{Msg, MsgFlags, M_ERROR, M_FLUSH, M_HANGUP, M_PCSIG, M_READ, M_SIG};

fn ioc(s: &mut Stream, cmd: u32, arg: IocArg<'_>) -> Result<i32, Stop> {
    s.strioctl(&Registry::new(), cmd, arg)
}

fn out_i32(s: &mut Stream, cmd: u32) -> Result<(Result<i32, Stop>, i32), Failure> {
    let mut b = [0u8; 4];
    let r = ioc(s, cmd, IocArg::Out(&mut b));
    Ok((r, i32::from_ne_bytes(b)))
}

/// Send `mp` up from the driver, as its interrupt side would.
fn up(s: &mut Stream, mp: Msg) -> TestResult {
    let rq = check_some!(s.driver_rq());
    s.put(rq, mp);
    Ok(())
}

fn up_bytes(s: &mut Stream, ty: crate::msg::MsgType, b: &[u8]) -> TestResult {
    up(s, check_ok!(Msg::from_bytes(ty, b)))
}

fn look(s: &mut Stream) -> Result<Result<[u8; FMNAMESZ + 1], Stop>, Failure> {
    let mut b = [0xffu8; FMNAMESZ + 1];
    let r = ioc(s, I_LOOK, IocArg::Out(&mut b));
    Ok(r.map(|_| b))
}

fn i_push_pop_look_find() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let r = reg()?;
    check_eq!(look(&mut s)?, Err(Stop::Err(Errno::EINVAL)));
    check_eq!(s.strioctl(&r, I_PUSH, IocArg::Name("pass")), Ok(0));
    check_eq!(look(&mut s)?, Ok(*b"pass\0\0\0\0\0"));
    check_eq!(s.strioctl(&r, I_FIND, IocArg::Name("pass")), Ok(1));
    check_eq!(s.strioctl(&r, I_FIND, IocArg::Name("nosrv")), Ok(0));
    let inval = Err(Stop::Err(Errno::EINVAL));
    check_eq!(s.strioctl(&r, I_FIND, IocArg::Name("bogus")), inval);
    check_eq!(s.strioctl(&r, I_PUSH, IocArg::Name("bogus")), inval);
    // Data still flows through the pushed module.
    check_ok!(wr(&mut s, b"via"));
    // The loopback answered while `pass` was still in its wput: the reply waits on pass's
    // read queue for its service procedure.
    check_eq!(s.runqueues(), 1);
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"via");
    check_eq!(s.strioctl(&r, I_POP, IocArg::None), Ok(0));
    check_eq!(s.strioctl(&r, I_POP, IocArg::None), inval);
    check_eq!(s.nmodules(), 0);
    Ok(())
}

fn i_list_counts_and_names() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let r = reg()?;
    check_ok!(s.strioctl(&r, I_PUSH, IocArg::Name("nosrv")));
    check_eq!(s.strioctl(&r, I_LIST, IocArg::None), Ok(2));
    let mut b = [0u8; 4 * (FMNAMESZ + 1)];
    let out = &mut b[..];
    check_eq!(s.strioctl(&r, I_LIST, IocArg::List { n: 4, out }), Ok(2));
    check_eq!(b.get(..9), Some(&b"nosrv\0\0\0\0"[..]));
    check_eq!(b.get(9..18), Some(&b"sthloop\0\0"[..]));
    let out = &mut b[..];
    check_eq!(
        s.strioctl(&r, I_LIST, IocArg::List { n: 0, out }),
        Err(Stop::Err(Errno::EINVAL))
    );
    Ok(())
}

fn i_nread_and_i_peek() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(nread(&mut s)?, (0, 0));
    check_ok!(put(&mut s, Some(b"ctl"), Some(b"peekme"), 0, 0));
    check_ok!(wr(&mut s, b"12345"));
    check_eq!(nread(&mut s)?, (2, 6));
    let (mut cb, mut db) = ([0u8; 8], [0u8; 8]);
    let mut p = PeekArgs {
        ctl: Some(8),
        data: Some(4),
        ..PeekArgs::default()
    };
    check_eq!(ioc(&mut s, I_PEEK, IocArg::Peek(&mut p)), Ok(1));
    let g = check_some!(p.got);
    check_eq!((g.ctl_len, g.data_len, g.more), (3, 4, MOREDATA));
    let m = check_some!(p.msg.take());
    let (mut cio, mut dio) = (SliceIo(&mut cb), SliceIo(&mut db));
    check_ok!(msg::peek_copy_out(&m, &g, Some(&mut cio), Some(&mut dio)));
    p.flags = RS_HIPRI;
    check_eq!(ioc(&mut s, I_PEEK, IocArg::Peek(&mut p)), Ok(0));
    check!(p.msg.is_none());
    p.flags = 5;
    check_eq!(
        ioc(&mut s, I_PEEK, IocArg::Peek(&mut p)),
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(
        (cb.get(..3), db.get(..4)),
        (Some(&b"ctl"[..]), Some(&b"peek"[..]))
    );
    // Peeking consumed nothing.
    check_eq!(nread(&mut s)?, (2, 6));
    Ok(())
}

fn i_srdopt_grdopt_validation() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(
        out_i32(&mut s, I_GRDOPT)?,
        (Ok(0), (RNORM | RPROTNORM) as i32)
    );
    let inval = Err(Stop::Err(Errno::EINVAL));
    check_eq!(ioc(&mut s, I_SRDOPT, IocArg::Int(3)), inval);
    let both = i64::from(RPROTDAT | RPROTDIS);
    check_eq!(ioc(&mut s, I_SRDOPT, IocArg::Int(both)), inval);
    check_ok!(ioc(
        &mut s,
        I_SRDOPT,
        IocArg::Int(i64::from(RMSGN | RPROTDAT))
    ));
    // A mode without protocol bits keeps the protocol treatment.
    check_ok!(ioc(&mut s, I_SRDOPT, IocArg::Int(i64::from(RMSGD))));
    check_eq!(out_i32(&mut s, I_GRDOPT)?.1, (RMSGD | RPROTDAT) as i32);
    Ok(())
}

fn i_swropt_gwropt_validation() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(out_i32(&mut s, I_GWROPT)?, (Ok(0), 0));
    check_ok!(ioc(
        &mut s,
        I_SWROPT,
        IocArg::Int(i64::from(SNDZERO | SNDPIPE))
    ));
    check_eq!(out_i32(&mut s, I_GWROPT)?.1, (SNDZERO | SNDPIPE) as i32);
    // SNDELIM (LfS 1 << 3) is not supported; neither is any bit above SNDMREAD.
    for bad in [8, 0x20, -1] {
        check_eq!(
            ioc(&mut s, I_SWROPT, IocArg::Int(bad)),
            Err(Stop::Err(Errno::EINVAL))
        );
    }
    check_eq!(out_i32(&mut s, I_GWROPT)?.1, (SNDZERO | SNDPIPE) as i32);
    Ok(())
}

/// A process as the shared tests name it.
struct Proc(usize);

impl crate::sth::SigOwner for Proc {
    fn key(&self) -> usize {
        self.0
    }
    fn signal(&self, _sig: i32) {}
}

fn proc(key: usize) -> Result<crate::sys::Arc<dyn crate::sth::SigOwner>, crate::sys::NoMem> {
    let p: crate::sys::Arc<dyn crate::sth::SigOwner> = crate::sys::new_arc(Proc(key))?;
    Ok(p)
}

fn i_setsig_getsig_registrations() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let inval = Err(Stop::Err(Errno::EINVAL));
    let get = |s: &mut Stream, key| {
        let mut b = [0u8; 4];
        let r = ioc(s, I_GETSIG, IocArg::GetSig { key, out: &mut b });
        r.map(|_| i32::from_ne_bytes(b))
    };
    let set = |s: &mut Stream, key, events| match proc(key) {
        Ok(owner) => ioc(s, I_SETSIG, IocArg::Sig { owner, events }),
        Err(_) => Err(Stop::Err(Errno::ENOSR)),
    };
    check_eq!(get(&mut s, 10), inval);
    let ev = (S_INPUT | S_HANGUP) as i32;
    check_eq!(set(&mut s, 10, ev), Ok(0));
    check_eq!(get(&mut s, 10), Ok(ev));
    check_eq!(set(&mut s, 10, 0x800), inval);
    check_eq!(set(&mut s, 10, 0), Ok(0));
    check_eq!(get(&mut s, 10), inval);
    check_eq!(set(&mut s, 10, 0), inval);
    for key in 0..NSIGREG {
        check_eq!(set(&mut s, key, 1), Ok(0));
    }
    check_eq!(set(&mut s, 99, 1), Err(Stop::Err(Errno::EAGAIN)));
    check_eq!(s.sth().sig_list().count(), NSIGREG);
    // A close by process 3 takes its registration (and only its) out: the slot is free again.
    check!(s.sth_sigclean(3).is_some_and(|r| r.owner.key() == 3));
    check!(s.sth_sigclean(3).is_none());
    check_eq!(get(&mut s, 3), inval);
    check_eq!(get(&mut s, 4), Ok(1));
    check_eq!(s.sth().sig_list().count(), NSIGREG - 1);
    check_eq!(set(&mut s, 99, 1), Ok(0));
    Ok(())
}

fn i_ckband_getband_atmark() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(
        out_i32(&mut s, I_GETBAND)?.0,
        Err(Stop::Err(Errno::ENODATA))
    );
    check_ok!(put(&mut s, None, Some(b"b3"), 3, MSG_BAND));
    check_ok!(put(&mut s, None, Some(b"b1"), 1, MSG_BAND));
    check_eq!(ioc(&mut s, I_CKBAND, IocArg::Int(1)), Ok(1));
    check_eq!(ioc(&mut s, I_CKBAND, IocArg::Int(2)), Ok(0));
    check_eq!(
        ioc(&mut s, I_CKBAND, IocArg::Int(256)),
        Err(Stop::Err(Errno::EINVAL))
    );
    check_eq!(out_i32(&mut s, I_GETBAND)?, (Ok(0), 3));
    check_eq!(
        ioc(&mut s, I_ATMARK, IocArg::Int(i64::from(ANYMARK))),
        Ok(0)
    );
    let mut m = check_ok!(Msg::from_bytes(crate::msg::M_DATA, b"mark"));
    m.set_band(5);
    m.set_flag(MsgFlags::MSGMARK);
    up(&mut s, m)?;
    check_eq!(
        ioc(&mut s, I_ATMARK, IocArg::Int(i64::from(ANYMARK))),
        Ok(1)
    );
    check_eq!(
        ioc(&mut s, I_ATMARK, IocArg::Int(i64::from(LASTMARK))),
        Ok(1)
    );
    check_eq!(
        ioc(&mut s, I_ATMARK, IocArg::Int(3)),
        Err(Stop::Err(Errno::EINVAL))
    );
    Ok(())
}

fn i_canput_follows_flow_control() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(ioc(&mut s, I_CANPUT, IocArg::Int(0)), Ok(1));
    check_ok!(wr(&mut s, b"0123456789"));
    check_eq!(ioc(&mut s, I_CANPUT, IocArg::Int(0)), Ok(0));
    check_eq!(ioc(&mut s, I_CANPUT, IocArg::Int(2)), Ok(1));
    check_eq!(
        ioc(&mut s, I_CANPUT, IocArg::Int(300)),
        Err(Stop::Err(Errno::EINVAL))
    );
    Ok(())
}

/// An I_STR request carrying `b` (None when empty).
fn req(b: &[u8]) -> Result<Option<Msg>, Failure> {
    if b.is_empty() {
        return Ok(None);
    }
    Ok(Some(check_ok!(Msg::from_bytes(crate::msg::M_DATA, b))))
}

fn i_str_ack_roundtrip() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut st = StrIoctl::new(1, 0, 3, req(b"abc")?);
    check_eq!(ioc(&mut s, I_STR, IocArg::Str(&mut st)), Ok(7));
    check_eq!((st.len, st.id), (3, None));
    let mut b = [0u8; 6];
    check_ok!(st.copy_answer(&mut SliceIo(&mut b)));
    check_eq!(&b, b"ABC\0\0\0");
    Ok(())
}

fn i_str_nak_returns_error() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut st = StrIoctl::new(2, 0, 0, None);
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut st)),
        Err(Stop::Err(Errno::EPERM))
    );
    // The slot is free again.
    st.cmd = 9;
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut st)),
        Err(Stop::Err(Errno::EINVAL))
    );
    // The request must be what ic_len says, and at most STRMSGSZ.
    let mut bad = StrIoctl::new(1, 0, 4, req(b"abc")?);
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut bad)),
        Err(Stop::Err(Errno::EINVAL))
    );
    let mut big = StrIoctl::new(1, 0, STRMSGSZ as i32 + 1, None);
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut big)),
        Err(Stop::Err(Errno::EINVAL))
    );
    Ok(())
}

fn i_str_waits_for_late_ack() -> TestResult {
    let mut s = open(&HOLD)?;
    let mut st = StrIoctl::new(5, 0, 2, req(b"xy")?);
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut st)),
        Err(Stop::Block(Block::IoctlAck))
    );
    let id = check_some!(st.id);
    // A second ioctl waits for the slot.
    let mut other = StrIoctl::new(6, 0, 0, None);
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut other)),
        Err(Stop::Block(Block::IoctlAck))
    );
    // Still waiting on retry.
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut st)),
        Err(Stop::Block(Block::IoctlAck))
    );
    // The driver answers later: take the M_IOCTL off its queue and ack it.
    let d = dwq(&s)?;
    let mut m = check_some!(s.qctx(d).getq());
    let mut blk = check_some!(IocBlk::decode(m.rd()));
    check_eq!((blk.cmd, blk.id, blk.count), (5, id, 2));
    blk.rval = 42;
    blk.count = 1;
    for (d, v) in check_some!(m.rd_mut()).iter_mut().zip(blk.encode()) {
        *d = v;
    }
    m.set_type(crate::msg::M_IOCACK);
    let _ = s.sth_take_events();
    up(&mut s, m)?;
    check!(s.sth_take_events().wake & WAKE_IOCTL != 0);
    check_eq!(ioc(&mut s, I_STR, IocArg::Str(&mut st)), Ok(42));
    check_eq!(st.len, 1);
    Ok(())
}

fn i_str_cancel_gives_etime() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let mut st = StrIoctl::new(3, 1, 0, None); // never answered
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut st)),
        Err(Stop::Block(Block::IoctlAck))
    );
    s.sth_ioctl_cancel(check_some!(st.id));
    check_eq!(
        ioc(&mut s, I_STR, IocArg::Str(&mut st)),
        Err(Stop::Err(Errno::ETIME))
    );
    Ok(())
}

fn unknown_and_unimplemented_ioctls() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_eq!(
        ioc(&mut s, 0x5401, IocArg::None),
        Err(Stop::Err(Errno::ENOTTY))
    );
    for cmd in [I_LINK, I_UNLINK, I_SENDFD, I_RECVFD, I_FDINSERT] {
        check_eq!(
            ioc(&mut s, cmd, IocArg::Int(3)),
            Err(Stop::Err(Errno::EINVAL))
        );
    }
    check_eq!(out_i32(&mut s, I_GETCLTIME)?.1, STRCLTIME_DEFAULT as i32);
    check_ok!(ioc(&mut s, I_SETCLTIME, IocArg::Int(500)));
    check_eq!(out_i32(&mut s, I_GETCLTIME)?.1, 500);
    Ok(())
}

fn merror_sets_read_and_write_errors() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"lost"));
    let _ = s.sth_take_events();
    up_bytes(&mut s, M_ERROR, &[Errno::EIO.0 as u8])?;
    let eio = Some(Stop::Err(Errno::EIO));
    check_eq!(rd(&mut s, 8).err(), eio);
    check_eq!(wr(&mut s, b"x").err(), eio);
    check_eq!(nread(&mut s)?, (0, 0)); // flushed
    let ev = s.sth_take_events();
    check!(ev.sigpoll & S_ERROR != 0);
    check!(s.strpoll(POLLIN) & POLLERR != 0);
    Ok(())
}

fn merror_two_bytes_and_clearing() -> TestResult {
    let mut s = open(&STHLOOP)?;
    up_bytes(&mut s, M_ERROR, &[NOERROR, Errno::EPIPE.0 as u8])?;
    check_eq!((s.sth().rerr(), s.sth().werr()), (None, Some(Errno::EPIPE)));
    check_eq!(rd(&mut s, 8).err(), Some(Stop::Err(Errno::EAGAIN)));
    check_eq!(wr(&mut s, b"x").err(), Some(Stop::Err(Errno::EPIPE)));
    up_bytes(&mut s, M_ERROR, &[NOERROR, 0])?;
    check_eq!(s.sth().werr(), None);
    check_eq!(wr(&mut s, b"x"), Ok(1));
    Ok(())
}

fn mhangup_reads_eof_after_data() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"last"));
    up_bytes(&mut s, M_HANGUP, b"")?;
    check!(s.sth().hangup());
    check!(s.sth_take_events().sigpoll & S_HANGUP != 0);
    check_eq!(wr(&mut s, b"x").err(), Some(Stop::Err(Errno::ENXIO)));
    let p = s.strpoll(POLLIN | POLLOUT);
    check_eq!(p, POLLIN | POLLHUP);
    check_eq!(check_ok!(rd(&mut s, 8)).bytes(), b"last");
    check_eq!(check_ok!(rd(&mut s, 8)).n, 0);
    let (g, _, _) = check_ok!(get(&mut s, 8, 8, 0, 0));
    check_eq!((g.ctl_len, g.data_len), (0, 0));
    Ok(())
}

fn pipe_hangup_gives_epipe_and_sigpipe() -> TestResult {
    let mut s = open(&STHLOOP)?;
    s.sth_set_pipe();
    up_bytes(&mut s, M_HANGUP, b"")?;
    let _ = s.sth_take_events();
    check_eq!(wr(&mut s, b"x").err(), Some(Stop::Err(Errno::EPIPE)));
    check!(s.sth_take_events().sigpipe);
    Ok(())
}

fn mflush_from_below_flushes_read_side() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"one"));
    check_ok!(put(&mut s, None, Some(b"b"), 2, MSG_BAND));
    up_bytes(&mut s, M_FLUSH, &[FLUSHR | FLUSHBAND, 2])?;
    check_eq!(nread(&mut s)?, (1, 3));
    up_bytes(&mut s, M_FLUSH, &[FLUSHR])?;
    check_eq!(nread(&mut s)?, (0, 0));
    Ok(())
}

fn mflush_flushw_is_turned_around() -> TestResult {
    let mut s = open(&HOLD)?;
    check_ok!(wr(&mut s, b"queued"));
    up_bytes(&mut s, M_FLUSH, &[FLUSHRW])?;
    // The driver (which queues everything) got the write half only, ahead of the data.
    let q = check_some!(s.queue(dwq(&s)?));
    check_eq!(q.qsize(), 2);
    let m = check_some!(q.peek(0));
    check_eq!((m.db_type(), m.rd()), (M_FLUSH, &[FLUSHW][..]));
    Ok(())
}

fn i_flush_flushes_both_ways() -> TestResult {
    let mut s = open(&STHLOOP)?;
    check_ok!(wr(&mut s, b"data"));
    check_eq!(ioc(&mut s, I_FLUSH, IocArg::Int(i64::from(FLUSHRW))), Ok(0));
    check_eq!(nread(&mut s)?, (0, 0));
    let inval = Err(Stop::Err(Errno::EINVAL));
    check_eq!(ioc(&mut s, I_FLUSH, IocArg::Int(0)), inval);
    check_eq!(ioc(&mut s, I_FLUSH, IocArg::Int(4)), inval);
    check_ok!(put(&mut s, None, Some(b"b"), 4, MSG_BAND));
    check_ok!(wr(&mut s, b"n"));
    let fb = IocArg::Band {
        pri: 4,
        flag: i32::from(FLUSHR),
    };
    check_eq!(ioc(&mut s, I_FLUSHBAND, fb), Ok(0));
    check_eq!(nread(&mut s)?, (1, 1));
    Ok(())
}

fn setopts_changes_read_mode_and_hiwat() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let o = StrOptions {
        so_flags: SO_READOPT | SO_HIWAT | SO_LOWAT | SO_MREADON,
        so_readopt: RMSGD as i16,
        so_hiwat: 7,
        so_lowat: 3,
        ..StrOptions::default()
    };
    check_eq!(StrOptions::decode(&o.encode()), Some(o));
    up(&mut s, check_ok!(o.to_msg()))?;
    check_eq!(s.sth().rdopt(), RMSGD | RPROTNORM);
    check!(s.sth().mread());
    let q = check_some!(s.queue(s.head_rq()));
    check_eq!((q.hiwat(), q.lowat()), (7, 3));
    Ok(())
}

fn mread_sent_before_read_blocks() -> TestResult {
    let mut s = open(&HOLD)?;
    let o = StrOptions {
        so_flags: SO_MREADON,
        ..StrOptions::default()
    };
    up(&mut s, check_ok!(o.to_msg()))?;
    blocked_read_sends_m_read(&mut s, 12)
}

/// A read of `len` bytes blocks at `s`'s empty head and sends M_READ with `len` down to the
/// driver, which queues it.
fn blocked_read_sends_m_read(s: &mut Stream, len: usize) -> TestResult {
    let mut t = Taken::new();
    check_eq!(
        s.strread(len, false, &ReaderToken::new(), &mut t),
        Err(Stop::Block(Block::Readable))
    );
    let q = check_some!(s.queue(dwq(s)?));
    let m = check_some!(q.first());
    check_eq!(m.db_type(), M_READ);
    check_eq!(m.rd(), &len.to_ne_bytes()[..]);
    Ok(())
}

/// I_SWROPT SNDMREAD on a Stream that is no pipe or FIFO turns read notification on at this
/// head (nothing is sent down for it): its blocking reads then send M_READ to the driver.
/// I_GWROPT reports the bit; clearing it turns the notification off.
fn swropt_sndmread_on_a_driver_stream_is_this_heads() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(
        ioc(&mut s, I_SWROPT, IocArg::Int(i64::from(SNDMREAD))),
        Ok(0)
    );
    check!(s.sth().mread());
    check_eq!(out_i32(&mut s, I_GWROPT)?.1, SNDMREAD as i32);
    check!(check_some!(s.queue(dwq(&s)?)).first().is_none());
    blocked_read_sends_m_read(&mut s, 5)?;
    check_eq!(ioc(&mut s, I_SWROPT, IocArg::Int(0)), Ok(0));
    check!(!s.sth().mread());
    Ok(())
}

fn msig_and_mpcsig_recorded() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let _ = s.sth_take_events();
    up_bytes(&mut s, M_SIG, &[2])?;
    up_bytes(&mut s, M_PCSIG, &[SIGPOLL])?;
    check!(s.strpoll(POLLMSG) & POLLMSG != 0);
    let ev = s.sth_take_events();
    check_eq!(ev.signals, 1u64 << 2);
    check!(ev.sigpoll & S_MSG != 0);
    Ok(())
}

fn poll_masks_follow_head_state() -> TestResult {
    let mut s = open(&STHLOOP)?;
    let all = POLLIN | POLLPRI | POLLOUT | POLLRDNORM | POLLRDBAND | POLLWRNORM | POLLWRBAND;
    check_eq!(s.strpoll(all), POLLOUT | POLLWRNORM | POLLWRBAND);
    check_ok!(wr(&mut s, b"n"));
    check_eq!(s.strpoll(POLLIN | POLLRDNORM), POLLIN | POLLRDNORM);
    check_ok!(rd(&mut s, 8));
    check_ok!(put(&mut s, None, Some(b"b"), 1, MSG_BAND));
    check_eq!(s.strpoll(POLLIN | POLLRDBAND), POLLIN | POLLRDBAND);
    check_ok!(put(&mut s, Some(b"h"), None, 0, MSG_HIPRI));
    check_eq!(s.strpoll(POLLPRI | POLLIN), POLLPRI);
    s.sth_close();
    check_eq!(s.strpoll(POLLIN), POLLNVAL);
    check_eq!(rd(&mut s, 1).err(), Some(Stop::Err(Errno::EBADF)));
    Ok(())
}

fn poll_out_clears_when_flow_controlled() -> TestResult {
    let mut s = open(&HOLD)?;
    check_eq!(s.strpoll(POLLOUT), POLLOUT);
    check_ok!(wr(&mut s, b"0123456789"));
    check_eq!(s.strpoll(POLLOUT), 0);
    let d = dwq(&s)?;
    check!(s.qctx(d).getq().is_some());
    check!(s.sth_take_events().wake & WAKE_POLL != 0);
    check_eq!(s.strpoll(POLLOUT), POLLOUT);
    Ok(())
}

ktest_suite!(STH_CTL_SUITE, "streams_sth_ctl":
    i_push_pop_look_find,
    i_list_counts_and_names,
    i_nread_and_i_peek,
    i_srdopt_grdopt_validation,
    i_swropt_gwropt_validation,
    i_setsig_getsig_registrations,
    i_ckband_getband_atmark,
    i_canput_follows_flow_control,
    i_str_ack_roundtrip,
    i_str_nak_returns_error,
    i_str_waits_for_late_ack,
    i_str_cancel_gives_etime,
    unknown_and_unimplemented_ioctls,
    merror_sets_read_and_write_errors,
    merror_two_bytes_and_clearing,
    mhangup_reads_eof_after_data,
    pipe_hangup_gives_epipe_and_sigpipe,
    mflush_from_below_flushes_read_side,
    mflush_flushw_is_turned_around,
    i_flush_flushes_both_ways,
    setopts_changes_read_mode_and_hiwat,
    mread_sent_before_read_blocks,
    swropt_sndmread_on_a_driver_stream_is_this_heads,
    msig_and_mpcsig_recorded,
    poll_masks_follow_head_state,
    poll_out_clears_when_flow_controlled,
);
