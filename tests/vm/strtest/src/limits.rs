//! The limits on what a user can make the kernel hold (issue 14, items 1 and 2), tried as an
//! unprivileged user: each case forks a child that drops to uid/gid 65534 (nobody) and works
//! on a STREAMS pipe from there. The limits in force are read from
//! `/sys/module/streams/parameters/` (`strmsgsz`, `strctlsz`, `strhiwatmax`, `strmblkmax`), so
//! the cases hold for any values the module was loaded with.
//!
//! - an 8 MiB write(2) goes through whole, split into `strmsgsz` messages (no allocation the
//!   page allocator would WARN about: the test kernel's harness fails on any WARN);
//! - putmsg with a 32 MiB data part, or a control part one byte over `strctlsz`: ERANGE;
//! - a loop of zero-length putmsg calls on a non-blocking end stops with EAGAIN within twice
//!   the block limit, and the reader gets every message;
//! - I_SET_HIWAT INT_MAX: EPERM for nobody, accepted for root (CAP_SYS_RESOURCE);
//! - what nobody can pin on one pipe end with zero-length and one-byte messages leaves
//!   MemAvailable within a bound made of the block limit.

use streams::*;

use crate::{as_nobody, R};

const MIB: usize = 1 << 20;

/// A limit of the loaded `streams.ko`.
fn param(name: &str) -> Result<usize, String> {
    let p = format!("/sys/module/streams/parameters/{name}");
    let s = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
    s.trim().parse().map_err(|e| format!("{p}: {e}"))
}

/// MemAvailable from /proc/meminfo, in bytes.
fn mem_available() -> Result<usize, String> {
    let m = std::fs::read_to_string("/proc/meminfo").map_err(|e| format!("meminfo: {e}"))?;
    let line = m
        .lines()
        .find(|l| l.starts_with("MemAvailable:"))
        .ok_or("no MemAvailable")?;
    let kb: usize = line
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or("bad MemAvailable")?;
    Ok(kb * 1024)
}

fn errno_of<T>(r: std::io::Result<T>) -> Option<i32> {
    r.err().and_then(|e| e.raw_os_error())
}

/// One write(2) of 8 MiB on a STREAMS pipe as nobody: all of it is written, in messages of
/// at most `strmsgsz`, and read back intact by a reader thread.
pub(crate) fn t_limits_big_write_splits() -> R {
    let msgsz = param("strmsgsz")?;
    as_nobody(move || {
        let (a, b) = crate::e(Stream::pipe(), "s_pipe")?;
        let n = 8 * MIB;
        let data: Vec<u8> = (0..n).map(|i| (i % 251) as u8).collect();
        let reader = std::thread::spawn(move || -> Result<(Vec<u8>, usize), String> {
            let mut got = Vec::with_capacity(n);
            let mut biggest = 0;
            let mut buf = vec![0u8; 4 * msgsz.max(1)];
            // RMSGN: each read returns at most one message, so its size shows.
            crate::e(b.set_read_opt(RMSGN), "I_SRDOPT")?;
            while got.len() < n {
                let k = crate::e(b.read(&mut buf), "read")?;
                if k == 0 {
                    return Err(format!("end of file after {}", got.len()));
                }
                biggest = biggest.max(k);
                got.extend_from_slice(&buf[..k]);
            }
            Ok((got, biggest))
        });
        let w = crate::e(a.write(&data), "write 8 MiB")?;
        // Closed before the join: after a short write (an allocation failure under the fault
        // pass) the reader sees the end of file instead of waiting for bytes never sent.
        drop(a);
        let (got, biggest) = reader.join().map_err(|_| "reader panicked")??;
        ensure!(w == n, "write wrote {w} of {n}");
        ensure!(got == data, "the bytes read differ from those written");
        ensure!(
            biggest <= msgsz,
            "a message of {biggest} bytes, strmsgsz {msgsz}"
        );
        Ok(())
    })
}

/// putmsg as nobody: a 32 MiB data part, or a control part one byte over strctlsz, is
/// ERANGE (nothing sent); at the limits it goes through.
pub(crate) fn t_limits_putmsg_erange() -> R {
    let (msgsz, ctlsz) = (param("strmsgsz")?, param("strctlsz")?);
    as_nobody(move || {
        let (a, b) = crate::e(Stream::pipe(), "s_pipe")?;
        let big = vec![7u8; 32 * MIB];
        let r = a.putmsg(None, Some(&big), 0);
        ensure!(
            errno_of(r) == Some(libc::ERANGE),
            "putmsg 32 MiB data: not ERANGE"
        );
        let ctl = vec![1u8; ctlsz + 1];
        let r = a.putmsg(Some(&ctl), Some(b"d"), 0);
        ensure!(
            errno_of(r) == Some(libc::ERANGE),
            "putmsg control of strctlsz + 1: not ERANGE"
        );
        crate::e(
            a.putmsg(Some(&ctl[..ctlsz]), Some(&big[..msgsz.min(big.len())]), 0),
            "putmsg at the limits",
        )?;
        let (mut c, mut d) = (vec![0u8; ctlsz], vec![0u8; msgsz]);
        let g = crate::e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
        let (cl, dl) = (g.ctl_len, g.data_len);
        ensure!(
            (cl, dl) == (Some(ctlsz), Some(msgsz)),
            "getmsg got ({cl:?}, {dl:?}), sent ({ctlsz}, {msgsz})"
        );
        Ok(())
    })
}

/// Zero-length putmsg on a non-blocking end as nobody: EAGAIN within twice the block limit
/// (before the fix: over a million were accepted); every message is read back.
pub(crate) fn t_limits_zero_length_putmsg_eagain() -> R {
    let max = param("strmblkmax")?;
    as_nobody(move || {
        let (a, b) = crate::e(Stream::pipe(), "s_pipe")?;
        crate::set_nonblock(&a, true)?;
        crate::set_nonblock(&b, true)?;
        let mut sent = 0usize;
        loop {
            match a.putmsg(None, Some(&[]), 0) {
                Ok(()) => sent += 1,
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => break,
                Err(e) => return Err(format!("putmsg {sent}: {e}")),
            }
            ensure!(sent <= 2 * max + 1, "{sent} zero-length messages accepted");
        }
        ensure!(sent >= max, "EAGAIN after {sent}, block limit {max}");
        let mut got = 0usize;
        loop {
            let mut d = [0u8; 8];
            match b.getmsg(None, Some(&mut d), 0) {
                Ok(g) if g.data_len == Some(0) => got += 1,
                Ok(g) => return Err(format!("getmsg {got}: data_len {:?}", g.data_len)),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => break,
                Err(e) => return Err(format!("getmsg {got}: {e}")),
            }
        }
        ensure!(got == sent, "read {got} of {sent}");
        println!("# zero-length putmsg: EAGAIN after {sent} (strmblkmax {max})");
        crate::e(a.putmsg(None, Some(&[]), 0), "putmsg after the drain")?;
        Ok(())
    })
}

/// I_SET_HIWAT INT_MAX: EPERM as nobody (the mark stays), accepted as root; strhiwatmax
/// itself is fine for anybody.
pub(crate) fn t_limits_set_hiwat_cap() -> R {
    let cap = param("strhiwatmax")?;
    as_nobody(move || {
        let (a, _b) = crate::e(Stream::pipe(), "s_pipe")?;
        let r = a.ioctl_int(I_SET_HIWAT, i32::MAX);
        ensure!(
            errno_of(r) == Some(libc::EPERM),
            "I_SET_HIWAT INT_MAX as nobody: not EPERM"
        );
        if let Ok(c) = i32::try_from(cap) {
            crate::e(a.ioctl_int(I_SET_HIWAT, c), "I_SET_HIWAT strhiwatmax")?;
        }
        Ok(())
    })?;
    let (a, _b) = crate::e(Stream::pipe(), "s_pipe")?;
    crate::e(
        a.ioctl_int(I_SET_HIWAT, i32::MAX),
        "I_SET_HIWAT INT_MAX as root",
    )?;
    Ok(())
}

/// What nobody pins on one pipe end, writing until EAGAIN (zero-length putmsg, then one-byte
/// writes after a refused I_SET_HIWAT INT_MAX) and not reading: MemAvailable drops by less
/// than a page per block the limit allows (twice, queued and in flight) plus 16 MiB for
/// the rest of the guest. Before the fix this took hundreds of MiB.
pub(crate) fn t_limits_memory_bounded() -> R {
    let max = param("strmblkmax")?;
    let bound = 2 * max * 4096 + 16 * MIB;
    as_nobody(move || {
        let before = mem_available()?;
        let (a, b) = crate::e(Stream::pipe(), "s_pipe")?;
        crate::set_nonblock(&a, true)?;
        let _ = a.ioctl_int(I_SET_HIWAT, i32::MAX);
        let mut n = 0usize;
        while a.putmsg(None, Some(&[]), 0).is_ok() {
            n += 1;
            ensure!(n <= 2 * max + 1, "{n} zero-length messages accepted");
        }
        // The other direction too: end b's writes to a, one byte each.
        crate::set_nonblock(&b, true)?;
        let mut k = 0usize;
        while b.write(b"x").is_ok() {
            k += 1;
            ensure!(k <= 2 * max + 1, "{k} one-byte writes accepted");
        }
        let after = mem_available()?;
        let used = before.saturating_sub(after);
        println!(
            "# MemAvailable fell by {} KiB for {n} zero-length + {k} one-byte messages (bound {} KiB)",
            used / 1024,
            bound / 1024
        );
        ensure!(
            used <= bound,
            "MemAvailable fell by {used} bytes ({n} + {k} messages), bound {bound}"
        );
        drop((a, b));
        Ok(())
    })
}

/// The limits can be read by anybody and are what the module documents as defaults unless
/// it was loaded with others: each is within its range.
pub(crate) fn t_limits_params_readable() -> R {
    as_nobody(|| {
        for (name, lo) in [
            ("strmsgsz", 1),
            ("strctlsz", 1),
            ("strhiwatmax", 0),
            ("strmblkmax", 1),
        ] {
            let v = param(name)?;
            ensure!(v >= lo, "{name} = {v}");
        }
        // Read-only: nobody (and root) cannot change them at run time.
        let p = "/sys/module/streams/parameters/strmblkmax";
        let w = std::fs::OpenOptions::new().write(true).open(p);
        ensure!(w.is_err(), "{p} opened for writing");
        Ok(())
    })
}
