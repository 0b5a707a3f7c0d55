//! STREAMS-only pipe cases (SVR4 behaviour a Linux pipe does not have): full duplex, message
//! boundaries with putmsg/getmsg, priority bands, modules pushed on either end while data
//! flows, M_FLUSH across the pipe with and without `pipemod`, I_LIST/I_LOOK, I_PIPE errors.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::thread;

use streams::*;

use crate::ensure;
use crate::util::*;

fn spipe() -> Result<(Stream, Stream), String> {
    e(Stream::pipe(), "s_pipe (/dev/streams/clone/pipe + I_PIPE)")
}

fn nread(s: &Stream) -> Result<(i32, i32), String> {
    e(s.ioctl_get_int(I_NREAD), "I_NREAD")
}

fn ioctl_ptr(s: &Stream, cmd: i32, arg: *mut libc::c_void) -> io::Result<i32> {
    // SAFETY: the caller passes a pointer valid for `cmd`.
    let r = unsafe { libc::ioctl(s.raw(), cmd as libc::c_ulong, arg) };
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn look(s: &Stream) -> io::Result<String> {
    let mut name = [0u8; FMNAMESZ + 1];
    ioctl_ptr(s, I_LOOK, name.as_mut_ptr().cast())?;
    let n = name.iter().position(|&c| c == 0).unwrap_or(name.len());
    Ok(String::from_utf8_lossy(&name[..n]).into_owned())
}

/// I_LIST: the module names, top first (the count from I_LIST NULL must agree).
fn list(s: &Stream) -> Result<Vec<String>, String> {
    let count = e(ioctl_ptr(s, I_LIST, std::ptr::null_mut()), "I_LIST NULL")?;
    let mut mods = vec![
        str_mlist {
            l_name: [0; FMNAMESZ + 1]
        };
        8
    ];
    let mut sl = str_list {
        sl_nmods: mods.len() as i32,
        sl_modlist: mods.as_mut_ptr(),
    };
    let n = e(
        ioctl_ptr(s, I_LIST, (&mut sl as *mut str_list).cast()),
        "I_LIST",
    )?;
    ensure!(n == count, "I_LIST returned {n}, I_LIST NULL {count}");
    Ok(mods[..n as usize]
        .iter()
        .map(|m| {
            let b: Vec<u8> = m
                .l_name
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&b).into_owned()
        })
        .collect())
}

/// Write on one end, read it on the other, both ways.
fn crosses(a: &Stream, b: &Stream, what: &[u8]) -> R {
    for (from, to) in [(a, b), (b, a)] {
        write_all(from, what)?;
        ensure!(
            read_n(to, what.len())? == what,
            "{:?} did not cross the pipe",
            String::from_utf8_lossy(what)
        );
    }
    Ok(())
}

/// Both ends read and write, at the same time: 1 MiB each way concurrently.
pub(crate) fn full_duplex() -> R {
    let (a, b) = spipe()?;
    crosses(&a, &b, b"ping")?;
    let (a, b) = (Arc::new(a), Arc::new(b));
    const N: usize = 1 << 20;
    let mut hs = Vec::new();
    for (k, (from, to)) in [(a.clone(), b.clone()), (b.clone(), a.clone())]
        .into_iter()
        .enumerate()
    {
        let data = noise(N, 77 + k as u64);
        let sum = fnv(FNV_START, &data);
        hs.push(thread::spawn(move || write_all(&*from, &data)));
        hs.push(thread::spawn(move || -> R {
            let got = read_n(&*to, N)?;
            ensure!(
                fnv(FNV_START, &got) == sum,
                "direction {k}: checksum differs"
            );
            Ok(())
        }));
    }
    for h in hs {
        h.join().map_err(|_| "thread panicked".to_string())??;
    }
    Ok(())
}

/// Message boundaries: putmsg's control and data parts arrive as one message each; writes
/// stay separate messages (getmsg, RMSGD read mode).
pub(crate) fn message_boundaries() -> R {
    let (a, b) = spipe()?;
    e(a.putmsg(Some(b"C1"), Some(b"D1"), 0), "putmsg ctl+data")?;
    e(a.putmsg(None, Some(b"D22"), 0), "putmsg data")?;
    e(a.putmsg(Some(b"C333"), None, 0), "putmsg ctl")?;
    let (mut c, mut d) = ([0u8; 64], [0u8; 64]);
    let g = e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg 1")?;
    ensure!(
        g.ctl_len == Some(2) && &c[..2] == b"C1" && g.data_len == Some(2) && &d[..2] == b"D1",
        "message 1: {g:?}"
    );
    let g = e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg 2")?;
    ensure!(
        g.ctl_len.is_none() && g.data_len == Some(3) && &d[..3] == b"D22",
        "message 2: {g:?}"
    );
    let g = e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg 3")?;
    ensure!(
        g.ctl_len == Some(4) && &c[..4] == b"C333" && g.data_len.is_none(),
        "message 3: {g:?}"
    );
    // The other direction, from write(2): two writes, two messages.
    write_all(&b, b"first")?;
    write_all(&b, b"second")?;
    ensure!(
        nread(&a)? == (2, 5),
        "I_NREAD after two writes: {:?}",
        nread(&a)?
    );
    let g = e(a.getmsg(None, Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.data_len == Some(5) && &d[..5] == b"first",
        "write 1: {g:?}"
    );
    let g = e(a.getmsg(None, Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.data_len == Some(6) && &d[..6] == b"second",
        "write 2: {g:?}"
    );
    // RMSGD: a read takes one message at most and discards what does not fit.
    e(a.set_read_opt(RMSGD), "I_SRDOPT RMSGD")?;
    write_all(&b, b"abcdef")?;
    write_all(&b, b"gh")?;
    let mut small = [0u8; 4];
    ensure!(
        e(a.read(&mut small), "read")? == 4 && &small == b"abcd",
        "RMSGD read 1"
    );
    let mut big = [0u8; 64];
    let n = e(a.read(&mut big), "read")?;
    ensure!(
        n == 2 && &big[..2] == b"gh",
        "RMSGD read 2: {:?} (the rest of the first message was not discarded?)",
        String::from_utf8_lossy(&big[..n])
    );
    Ok(())
}

/// Bands: high priority first, then band 2 before band 0 whatever the order of sending;
/// FIFO within a band; getpmsg MSG_BAND takes only bands >= the one asked.
pub(crate) fn bands() -> R {
    let (a, b) = spipe()?;
    e(
        a.putpmsg(None, Some(b"zero-1"), 0, MSG_BAND),
        "putpmsg band 0",
    )?;
    e(
        a.putpmsg(None, Some(b"two-1"), 2, MSG_BAND),
        "putpmsg band 2",
    )?;
    e(
        a.putpmsg(None, Some(b"zero-2"), 0, MSG_BAND),
        "putpmsg band 0",
    )?;
    e(
        a.putpmsg(None, Some(b"two-2"), 2, MSG_BAND),
        "putpmsg band 2",
    )?;
    e(
        a.putpmsg(Some(b"HI"), Some(b"urgent"), 0, MSG_HIPRI),
        "putpmsg hipri",
    )?;
    ensure!(
        e(b.ioctl_int(I_CKBAND, 2), "I_CKBAND 2")? == 1,
        "I_CKBAND 2 = 0"
    );
    ensure!(
        e(b.ioctl_int(I_CKBAND, 1), "I_CKBAND 1")? == 0,
        "I_CKBAND 1 = 1"
    );
    let want: [(&[u8], i32, i32); 5] = [
        (b"urgent", 0, MSG_HIPRI),
        (b"two-1", 2, MSG_BAND),
        (b"two-2", 2, MSG_BAND),
        (b"zero-1", 0, MSG_BAND),
        (b"zero-2", 0, MSG_BAND),
    ];
    let (mut c, mut d) = ([0u8; 64], [0u8; 64]);
    for (i, (data, band, flags)) in want.iter().enumerate() {
        let g = e(
            b.getpmsg(Some(&mut c), Some(&mut d), 0, MSG_ANY),
            "getpmsg MSG_ANY",
        )?;
        let got = &d[..g.data_len.unwrap_or(0)];
        ensure!(
            got == *data && g.band == *band && g.flags == *flags,
            "message {i}: {:?} band {} flags {} (want {:?} band {band} flags {flags})",
            String::from_utf8_lossy(got),
            g.band,
            g.flags,
            String::from_utf8_lossy(data)
        );
    }
    // MSG_BAND: lowest band wanted.
    e(a.putpmsg(None, Some(b"low"), 0, MSG_BAND), "putpmsg band 0")?;
    e(
        a.putpmsg(None, Some(b"high"), 2, MSG_BAND),
        "putpmsg band 2",
    )?;
    let g = e(
        b.getpmsg(None, Some(&mut d), 1, MSG_BAND),
        "getpmsg MSG_BAND 1",
    )?;
    ensure!(g.band == 2 && &d[..4] == b"high", "MSG_BAND 1: {g:?}");
    set_nonblock(&b, true)?;
    let err = errno_of(
        b.getpmsg(None, Some(&mut d), 1, MSG_BAND),
        "getpmsg MSG_BAND 1",
    )?;
    ensure!(
        err == libc::EAGAIN,
        "MSG_BAND 1 with only band 0 queued: errno {err}"
    );
    let g = e(b.getpmsg(None, Some(&mut d), 0, MSG_ANY), "getpmsg MSG_ANY")?;
    ensure!(g.band == 0 && &d[..3] == b"low", "band 0 left: {g:?}");
    Ok(())
}

/// I_PUSH/I_POP of nullmod and pipemod on either end while a writer thread streams data
/// (2 MiB) through the pipe: no byte is lost, duplicated or reordered, and I_LOOK follows.
pub(crate) fn push_pop_while_flowing() -> R {
    let (a, b) = spipe()?;
    // Data already queued at b's head stays there across pushes on either end.
    write_all(&a, b"early")?;
    e(b.push("pipemod"), "I_PUSH pipemod on the reading end")?;
    e(a.push("nullmod"), "I_PUSH nullmod on the writing end")?;
    ensure!(read_n(&b, 5)? == b"early", "data queued before the push");
    crosses(&a, &b, b"through both")?;
    e(a.pop(), "I_POP")?;
    e(b.pop(), "I_POP")?;
    const N: usize = 2 << 20;
    let data = noise(N, 4242);
    let sum = fnv(FNV_START, &data);
    let a = Arc::new(a);
    let a2 = a.clone();
    let h = thread::spawn(move || write_all(&*a2, &data));
    // (end, push Some(module) or pop None), applied every 128 KiB read.
    let ops: [(usize, Option<&str>); 8] = [
        (0, Some("nullmod")),
        (1, Some("pipemod")),
        (1, Some("nullmod")),
        (0, None),
        (1, None),
        (0, Some("pipemod")),
        (1, None),
        (0, None),
    ];
    let ends = [&*a, &b];
    let mut got = Vec::with_capacity(N);
    let mut buf = vec![0u8; 65536];
    let mut next_op = 0;
    while got.len() < N {
        let n = e(b.read(&mut buf), "read")?;
        ensure!(n > 0, "EOF after {} bytes", got.len());
        got.extend_from_slice(&buf[..n]);
        if got.len() >= (next_op + 1) * (128 << 10) && next_op < ops.len() {
            let (end, op) = ops[next_op];
            match op {
                Some(m) => {
                    e(ends[end].push(m), &format!("I_PUSH {m} on end {end}"))?;
                    ensure!(
                        e(look(ends[end]), "I_LOOK")? == m,
                        "I_LOOK after pushing {m}"
                    );
                }
                None => e(ends[end].pop(), &format!("I_POP on end {end}"))?,
            }
            next_op += 1;
        }
    }
    h.join().map_err(|_| "writer panicked".to_string())??;
    ensure!(next_op == ops.len(), "only {next_op} push/pop steps ran");
    ensure!(
        got.len() == N && fnv(FNV_START, &got) == sum,
        "stream corrupted"
    );
    for (i, s) in ends.iter().enumerate() {
        let err = errno_of(look(s), "I_LOOK")?;
        ensure!(
            err == libc::EINVAL,
            "end {i} still has a module (errno {err})"
        );
    }
    Ok(())
}

/// I_LIST and I_LOOK on each end: only that end's modules, top first; a pipe end has no
/// driver to list.
pub(crate) fn list_look() -> R {
    let (a, b) = spipe()?;
    ensure!(list(&a)?.is_empty(), "fresh end a lists {:?}", list(&a)?);
    let err = errno_of(look(&a), "I_LOOK on a bare end")?;
    ensure!(err == libc::EINVAL, "I_LOOK bare: errno {err}");
    e(a.push("nullmod"), "I_PUSH nullmod")?;
    e(a.push("pipemod"), "I_PUSH pipemod")?;
    e(b.push("nullmod"), "I_PUSH nullmod")?;
    ensure!(
        list(&a)? == ["pipemod", "nullmod"],
        "end a: {:?}",
        list(&a)?
    );
    ensure!(list(&b)? == ["nullmod"], "end b: {:?}", list(&b)?);
    ensure!(e(look(&a), "I_LOOK")? == "pipemod", "I_LOOK a");
    ensure!(e(look(&b), "I_LOOK")? == "nullmod", "I_LOOK b");
    crosses(&a, &b, b"listed")?;
    e(a.pop(), "I_POP")?;
    ensure!(list(&a)? == ["nullmod"], "end a after pop: {:?}", list(&a)?);
    Ok(())
}

/// M_FLUSH across the pipe. Without pipemod, I_FLUSH FLUSHW does not reach the other end's
/// read queue (the head there sees FLUSHW); with pipemod pushed on either end, FLUSHW on
/// either end flushes what the other end has not read, and the pipe keeps working.
pub(crate) fn flush_pipemod() -> R {
    let (a, b) = spipe()?;
    write_all(&a, b"kept")?;
    e(a.ioctl_int(I_FLUSH, FLUSHW), "I_FLUSH FLUSHW")?;
    ensure!(
        nread(&b)?.0 == 1,
        "FLUSHW without pipemod flushed the peer: {:?}",
        nread(&b)?
    );
    ensure!(
        read_n(&b, 4)? == b"kept",
        "data after FLUSHW without pipemod"
    );
    // FLUSHR flushes the end's own read queue.
    write_all(&a, b"mine")?;
    e(b.ioctl_int(I_FLUSH, FLUSHR), "I_FLUSH FLUSHR")?;
    ensure!(nread(&b)?.0 == 0, "FLUSHR left {:?}", nread(&b)?);
    crosses(&a, &b, b"still works")?;
    for with in 0..2 {
        let (a, b) = spipe()?;
        let ends = [&a, &b];
        e(ends[with].push("pipemod"), "I_PUSH pipemod")?;
        for (from, to) in [(&a, &b), (&b, &a)] {
            write_all(from, b"unread 1")?;
            write_all(from, b"unread 2")?;
            ensure!(nread(to)?.0 == 2, "before flush: {:?}", nread(to)?);
            e(from.ioctl_int(I_FLUSH, FLUSHW), "I_FLUSH FLUSHW")?;
            ensure!(
                nread(to)?.0 == 0,
                "pipemod on end {with}: FLUSHW left {:?} at the other end",
                nread(to)?
            );
            ensure!(
                nread(from)?.0 == 0,
                "writer's read side not empty: {:?}",
                nread(from)?
            );
        }
        crosses(&a, &b, b"after flush")?;
    }
    Ok(())
}

fn open_end() -> Result<Stream, String> {
    e(Stream::open(PIPE_DEVICE), "open /dev/streams/clone/pipe")
}

/// I_PIPE by hand: two opens welded; an unwelded end cannot be written; welding an end to
/// itself or an already welded end fails with EINVAL; a non-pipe fd is refused.
pub(crate) fn i_pipe_weld() -> R {
    let a = open_end()?;
    let err = errno_of(a.write(b"x"), "write on an unwelded end")?;
    ensure!(
        err == libc::ENXIO || err == libc::EPIPE,
        "unwelded write: errno {err} (want ENXIO or EPIPE)"
    );
    let b = open_end()?;
    let err = errno_of(a.ioctl_int(I_PIPE, a.raw()), "I_PIPE a a")?;
    ensure!(err == libc::EINVAL, "I_PIPE with itself: errno {err}");
    e(a.ioctl_int(I_PIPE, b.raw()), "I_PIPE a b")?;
    crosses(&a, &b, b"welded")?;
    let c = open_end()?;
    let err = errno_of(a.ioctl_int(I_PIPE, c.raw()), "I_PIPE on a welded end")?;
    ensure!(err == libc::EINVAL, "I_PIPE welded: errno {err}");
    let err = errno_of(c.ioctl_int(I_PIPE, b.raw()), "I_PIPE to a welded end")?;
    ensure!(err == libc::EINVAL, "I_PIPE to welded: errno {err}");
    let mut fds = [0i32; 2];
    // SAFETY: room for two descriptors.
    ensure!(unsafe { libc::pipe(fds.as_mut_ptr()) } == 0, "pipe");
    // SAFETY: just created, owned here.
    let (r, w) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    let err = errno_of(c.ioctl_int(I_PIPE, r.as_raw_fd()), "I_PIPE to a Linux pipe")?;
    ensure!(err == libc::EINVAL, "I_PIPE to a Linux pipe: errno {err}");
    let err = errno_of(c.ioctl_int(I_PIPE, 9999), "I_PIPE to a closed fd")?;
    ensure!(err == libc::EBADF, "I_PIPE to a closed fd: errno {err}");
    drop((r, w));
    Ok(())
}
