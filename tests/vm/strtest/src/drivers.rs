//! strtest cases for the LfS test drivers `echo` (`/dev/streams/clone/echo`: loops everything
//! back) and `nuls` (`/dev/streams/clone/nuls`: a sink), the Stream head watermark ioctls
//! I_SET_HIWAT / I_SET_LOWAT, and the module statistics in `/proc/streams/modules`.

use super::*;

const ECHO: &str = "/dev/streams/clone/echo";
const NULS: &str = "/dev/streams/clone/nuls";
const PROC_MODULES: &str = "/proc/streams/modules";

fn open_dev(path: &str) -> Result<Stream, String> {
    e(Stream::open(path), path)
}

/// I_STR with command `cmd` and `data`: the ioctl's result.
fn istr(s: &Stream, cmd: i32, data: &mut [u8]) -> io::Result<i32> {
    let mut ic = strioctl {
        ic_cmd: cmd,
        ic_timout: -1,
        ic_len: data.len() as i32,
        ic_dp: data.as_mut_ptr().cast(),
    };
    ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())
}

/// Write `chunk` non-blocking until EAGAIN; the bytes accepted.
fn fill(s: &Stream, chunk: &[u8]) -> Result<usize, String> {
    set_nonblock(s, true)?;
    let total = write_until_eagain(s, chunk, 4 << 20)?;
    set_nonblock(s, false)?;
    Ok(total)
}

pub(crate) fn t_echo_roundtrip() -> R {
    let s = open_dev(ECHO)?;
    ensure!(isastream(s.raw()) == 1, "isastream(echo) != 1");
    for (i, &n) in [1usize, 100, 4096, 30000].iter().enumerate() {
        let data = pattern(n, 40 + i as u8);
        ensure!(e(s.write(&data), "write")? == n, "short write of {n}");
        ensure!(read_n(&s, n)? == data, "{n} bytes came back different");
    }
    e(s.putmsg(Some(b"ctl"), Some(b"dat"), 0), "putmsg")?;
    e(s.putpmsg(Some(b"H"), None, 0, MSG_HIPRI), "putpmsg hipri")?;
    let (mut c, mut d) = ([0u8; 16], [0u8; 16]);
    let g = e(s.getpmsg(Some(&mut c), Some(&mut d), 0, MSG_ANY), "getpmsg")?;
    ensure!(
        g.flags == MSG_HIPRI && &c[..1] == b"H",
        "hipri first: {g:?}"
    );
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.ctl_len == Some(3) && &c[..3] == b"ctl" && g.data_len == Some(3) && &d[..3] == b"dat",
        "M_PROTO round trip: {g:?}"
    );
    Ok(())
}

pub(crate) fn t_echo_flow_control_and_flush() -> R {
    let s = open_dev(ECHO)?;
    let chunk = pattern(1000, 3);
    let total = fill(&s, &chunk)?;
    ensure!(total > 0, "echo refused the first write");
    let got = read_n(&s, total)?;
    ensure!(
        got.chunks(1000).all(|c| c == chunk.as_slice()),
        "data corrupted"
    );
    // FLUSHW is turned around as FLUSHR: what was looped back is gone too.
    e(s.write(b"flushed"), "write")?;
    ensure!(nread(&s)?.0 == 1, "nothing queued before I_FLUSH");
    e(s.ioctl_int(I_FLUSH, FLUSHW), "I_FLUSH FLUSHW")?;
    ensure!(nread(&s)?.0 == 0, "echo did not turn FLUSHW around");
    e(s.write(b"again"), "write after flush")?;
    ensure!(read_n(&s, 5)? == b"again", "echo after flush");
    Ok(())
}

pub(crate) fn t_echo_ioctl_nak() -> R {
    let s = open_dev(ECHO)?;
    // sloop's private command means nothing to echo: every M_IOCTL is NAKed.
    let mut buf = *b"data";
    let err = errno_of(istr(&s, SLOOP_IOC_ECHO, &mut buf), "I_STR on echo")?;
    ensure!(err == libc::EINVAL, "I_STR on echo: errno {err}");
    let err = errno_of(ioctl_ptr(&s, 0x7401, std::ptr::null_mut()), "transparent")?;
    ensure!(
        err == libc::EINVAL,
        "transparent ioctl on echo: errno {err}"
    );
    // The ioctl slot is free again and the Stream still works.
    e(s.write(b"ok"), "write")?;
    ensure!(read_n(&s, 2)? == b"ok", "echo after NAK");
    Ok(())
}

pub(crate) fn t_nuls_sink() -> R {
    let s = open_dev(NULS)?;
    set_nonblock(&s, true)?;
    let chunk = pattern(65536, 9);
    // 4 MiB never flow-controls: everything is freed at the driver.
    for i in 0..64 {
        let n = e(s.write(&chunk), "write to nuls")?;
        ensure!(n == chunk.len(), "write {i}: {n}");
    }
    e(s.putmsg(Some(b"proto"), Some(b"data"), 0), "putmsg")?;
    e(s.putpmsg(Some(b"pc"), None, 0, MSG_HIPRI), "putpmsg hipri")?;
    e(s.putpmsg(None, Some(b"b"), 2, MSG_BAND), "putpmsg band")?;
    ensure!(nread(&s)? == (0, 0), "something came back from nuls");
    let mut b = [0u8; 8];
    let err = errno_of(s.read(&mut b), "read from nuls")?;
    ensure!(err == libc::EAGAIN, "read from nuls: errno {err}");
    let r = poll1(&s, libc::POLLIN | libc::POLLOUT | libc::POLLPRI, 0)?;
    ensure!(
        r == libc::POLLOUT,
        "poll on nuls: {r:#x}, expected POLLOUT only"
    );
    ensure!(e(s.canput(0), "I_CANPUT")?, "nuls not writable");
    Ok(())
}

pub(crate) fn t_nuls_flush() -> R {
    let s = open_dev(NULS)?;
    // Each completes (FLUSHR comes back up as FLUSHR alone: no ping-pong with the head).
    for f in [FLUSHR, FLUSHW, FLUSHRW] {
        let t0 = Instant::now();
        e(s.ioctl_int(I_FLUSH, f), "I_FLUSH")?;
        ensure!(t0.elapsed() < Duration::from_secs(1), "I_FLUSH {f} slow");
    }
    let mut bi = [0u8; 8];
    bi[0] = 1;
    bi[4..8].copy_from_slice(&FLUSHRW.to_ne_bytes());
    e(
        ioctl_ptr(&s, I_FLUSHBAND, bi.as_mut_ptr().cast()),
        "I_FLUSHBAND",
    )?;
    ensure!(nread(&s)? == (0, 0), "flush left something at the head");
    ensure!(
        e(s.write(b"still"), "write after flush")? == 5,
        "nuls after flush"
    );
    Ok(())
}

pub(crate) fn t_nuls_ioctl_nak() -> R {
    let s = open_dev(NULS)?;
    for cmd in [SLOOP_IOC_ECHO, 1, 0x7fff_0000] {
        let mut buf = [0u8; 4];
        let err = errno_of(istr(&s, cmd, &mut buf), "I_STR on nuls")?;
        ensure!(err == libc::EINVAL, "I_STR {cmd:#x} on nuls: errno {err}");
    }
    let err = errno_of(ioctl_ptr(&s, 0x7401, std::ptr::null_mut()), "transparent")?;
    ensure!(
        err == libc::EINVAL,
        "transparent ioctl on nuls: errno {err}"
    );
    Ok(())
}

pub(crate) fn t_set_hiwat_lowat() -> R {
    // The head's read queue limits how much the loopback can hold up for the reader.
    let chunk = pattern(1024, 5);
    let base = {
        let s = open()?;
        let t = fill(&s, &chunk)?;
        ensure!(read_n(&s, t)?.len() == t, "drain");
        t
    };
    let s = open()?;
    e(s.ioctl_int(I_SET_HIWAT, 128 * 1024), "I_SET_HIWAT 128K")?;
    let big = fill(&s, &chunk)?;
    ensure!(
        big >= base + 100 * 1024,
        "I_SET_HIWAT 128K: {big} bytes before EAGAIN, default {base}"
    );
    let got = read_n(&s, big)?;
    ensure!(
        got.chunks(1024).all(|c| c == chunk.as_slice()),
        "data corrupted"
    );
    // Low water mark above the high one, negative values, high below low: EINVAL.
    let inval = [
        (I_SET_LOWAT, 256 * 1024),
        (I_SET_HIWAT, -1),
        (I_SET_LOWAT, -1),
    ];
    for (cmd, v) in inval {
        let err = errno_of(s.ioctl_int(cmd, v), "bad watermark")?;
        ensure!(err == libc::EINVAL, "ioctl {cmd:#x} {v}: errno {err}");
    }
    e(s.ioctl_int(I_SET_LOWAT, 100), "I_SET_LOWAT 100")?;
    let err = errno_of(s.ioctl_int(I_SET_HIWAT, 99), "hiwat below lowat")?;
    ensure!(err == libc::EINVAL, "I_SET_HIWAT below lowat: errno {err}");
    // A small high mark: the loopback holds back sooner than by default.
    e(s.ioctl_int(I_SET_HIWAT, 100), "I_SET_HIWAT 100")?;
    let small = fill(&s, &chunk)?;
    ensure!(
        small < base,
        "I_SET_HIWAT 100: {small} bytes, default {base}"
    );
    read_n(&s, small)?;
    Ok(())
}

/// One row of /proc/streams/modules: column name → value.
fn proc_row(name: &str) -> Result<std::collections::HashMap<String, String>, String> {
    let text = e(std::fs::read_to_string(PROC_MODULES), PROC_MODULES)?;
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let row = lines
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|c| c.first() == Some(&name))
        .ok_or_else(|| format!("{name} not in {PROC_MODULES}:\n{text}"))?;
    ensure!(row.len() == head.len(), "ragged row for {name}: {row:?}");
    Ok(head
        .iter()
        .zip(row)
        .map(|(h, v)| (h.to_string(), v.to_string()))
        .collect())
}

fn num(row: &std::collections::HashMap<String, String>, col: &str) -> Result<i64, String> {
    row.get(col)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| format!("column {col} missing or not a number: {row:?}"))
}

pub(crate) fn t_proc_modules() -> R {
    use std::os::unix::fs::PermissionsExt;
    let meta = e(std::fs::metadata(PROC_MODULES), PROC_MODULES)?;
    ensure!(
        meta.permissions().mode() & 0o777 == 0o444,
        "mode {:o}",
        meta.permissions().mode()
    );
    // module_info as the drivers declare it.
    let expect = [
        ("sloop", "drv", 0x5100, 8192, 2048),
        ("echo", "drv", 0x5102, 8192, 2048),
        ("nuls", "drv", 0x5103, 8192, 2048),
        ("nullmod", "mod", 0x5101, 5120, 1024),
    ];
    for (name, kind, id, hi, lo) in expect {
        let r = proc_row(name)?;
        ensure!(
            r.get("kind").map(String::as_str) == Some(kind),
            "{name} kind: {r:?}"
        );
        ensure!(num(&r, "idnum")? == id, "{name} idnum: {r:?}");
        ensure!(
            num(&r, "maxpsz")? == -1 && num(&r, "minpsz")? == 0,
            "{name} psz: {r:?}"
        );
        ensure!(
            num(&r, "hiwat")? == hi && num(&r, "lowat")? == lo,
            "{name} marks: {r:?}"
        );
    }
    // The counters move with traffic: one open, five writes, one close of echo.
    let before = proc_row("echo")?;
    let nm0 = proc_row("nullmod")?;
    {
        let s = open_dev(ECHO)?;
        e(s.push("nullmod"), "I_PUSH nullmod")?;
        for i in 0..5u8 {
            e(s.write(&[i; 100]), "write")?;
        }
        ensure!(read_n(&s, 500)?.len() == 500, "echo data");
    }
    let after = proc_row("echo")?;
    let nm1 = proc_row("nullmod")?;
    let d = |col: &str, a: &std::collections::HashMap<String, String>, b| -> Result<i64, String> {
        Ok(num(a, col)? - num(b, col)?)
    };
    ensure!(
        d("ocnt", &after, &before)? == 1,
        "echo ocnt: {before:?} -> {after:?}"
    );
    ensure!(
        d("ccnt", &after, &before)? == 1,
        "echo ccnt: {before:?} -> {after:?}"
    );
    ensure!(
        d("w_pcnt", &after, &before)? >= 5,
        "echo w_pcnt: {before:?} -> {after:?}"
    );
    ensure!(
        d("ocnt", &nm1, &nm0)? == 1 && d("ccnt", &nm1, &nm0)? == 1,
        "nullmod open/close"
    );
    // nullmod passed the five writes down and their echoes up through its put procedures.
    ensure!(
        d("w_pcnt", &nm1, &nm0)? >= 5,
        "nullmod w_pcnt: {nm0:?} -> {nm1:?}"
    );
    ensure!(
        d("r_pcnt", &nm1, &nm0)? >= 5,
        "nullmod r_pcnt: {nm0:?} -> {nm1:?}"
    );
    Ok(())
}
