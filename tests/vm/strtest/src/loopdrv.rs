//! strtest cases for I_FDINSERT and the `loop`/`spx` loop-around driver: APUE's SVR4
//! `s_pipe` (open `spx` twice, I_FDINSERT on the first naming the second) gives a full-duplex
//! pipe with message boundaries, flow control and hangup at close; the message I_FDINSERT
//! builds (seen through `sloop`, which loops it back); and the error cases.

use super::*;

const SPX: &str = "/dev/streams/clone/spx";
const LOOP: &str = "/dev/streams/clone/loop";
/// The token of a Stream without a driver, a FIFO (`NO_QUEUE` in the core).
const NO_QUEUE: u64 = u64::MAX;

fn open_dev(path: &str) -> Result<Stream, String> {
    e(Stream::open(path), path)
}

/// I_FDINSERT on `s`: control part `ctl` (`clen` bytes claimed), token at `offset`.
fn fdinsert_raw(
    s: &Stream,
    ctl: *mut u8,
    clen: i32,
    data: Option<&mut [u8]>,
    flags: i64,
    fildes: i32,
    offset: i32,
) -> io::Result<i32> {
    let databuf = match data {
        Some(d) => strbuf {
            maxlen: 0,
            len: d.len() as i32,
            buf: d.as_mut_ptr().cast(),
        },
        None => strbuf::NONE,
    };
    let mut a = strfdinsert {
        ctlbuf: strbuf {
            maxlen: 0,
            len: clen,
            buf: ctl.cast(),
        },
        databuf,
        flags,
        fildes,
        offset,
    };
    ioctl_ptr(s, I_FDINSERT, (&mut a as *mut strfdinsert).cast())
}

/// I_FDINSERT with an 8-byte control part, the token at offset 0: the `s_pipe` request.
fn connect(s: &Stream, fildes: i32) -> io::Result<i32> {
    let mut ctl = [0u8; 8];
    fdinsert_raw(s, ctl.as_mut_ptr(), 8, None, 0, fildes, 0)
}

/// APUE's `s_pipe` over `dev`: two Streams of the loop driver joined with I_FDINSERT.
fn s_pipe(dev: &str) -> Result<(Stream, Stream), String> {
    let a = open_dev(dev)?;
    let b = open_dev(dev)?;
    ensure!(
        e(connect(&a, b.raw()), "I_FDINSERT")? == 0,
        "I_FDINSERT != 0"
    );
    Ok((a, b))
}

pub(crate) fn t_spx_s_pipe() -> R {
    let (a, b) = s_pipe(SPX)?;
    e(a.write(b"a to b"), "write a")?;
    e(b.write(b"b to a!"), "write b")?;
    ensure!(read_n(&b, 6)? == b"a to b", "b read");
    ensure!(read_n(&a, 7)? == b"b to a!", "a read");
    // Message boundaries and types cross intact.
    e(a.putmsg(Some(b"ctl"), Some(b"data"), 0), "putmsg a")?;
    e(a.putmsg(Some(b"hi"), None, RS_HIPRI), "putmsg hipri")?;
    let (mut c, mut d) = ([0u8; 8], [0u8; 8]);
    let g = e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg b")?;
    ensure!(
        g.flags == RS_HIPRI && g.ctl_len == Some(2) && &c[..2] == b"hi",
        "high priority first: {g:?}"
    );
    let g = e(b.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg b")?;
    ensure!(
        g.ctl_len == Some(3) && g.data_len == Some(4) && &c[..3] == b"ctl" && &d[..4] == b"data",
        "M_PROTO across: {g:?}"
    );
    // 64 KiB each way through the flow-controlled driver, a thread reading.
    let big = pattern(65536, 7);
    let reader = thread::spawn(move || read_n(&b, 65536).map(|v| (v, b)));
    ensure!(
        e(a.write(&big), "write 64 KiB")? == big.len(),
        "short write"
    );
    let (got, b) = reader.join().map_err(|_| "reader panicked".to_string())??;
    ensure!(got == big, "64 KiB came across different");
    // Close one end: the other reads what is left, then end of file; writes fail (ENXIO,
    // the Stream head after M_HANGUP).
    e(a.write(b"last"), "write a")?;
    drop(a);
    ensure!(read_n(&b, 4)? == b"last", "data written before close");
    let mut buf = [0u8; 8];
    ensure!(e(b.read(&mut buf), "read at EOF")? == 0, "no end of file");
    let r = errno_of(b.write(b"x"), "write after hangup")?;
    ensure!(r == libc::ENXIO, "write after hangup: errno {r}");
    let r = poll1(&b, libc::POLLIN, 0)?;
    ensure!(r & libc::POLLHUP != 0, "no POLLHUP: {r:#x}");
    // The same driver under its other name; the /proc row of each.
    let (x, y) = s_pipe(LOOP)?;
    e(y.write(b"loop"), "write")?;
    ensure!(read_n(&x, 4)? == b"loop", "loop device");
    let rows = e(std::fs::read_to_string("/proc/streams/modules"), "proc")?;
    for name in ["loop", "spx"] {
        ensure!(
            rows.lines()
                .any(|l| l.split_whitespace().next() == Some(name)),
            "no {name} row in /proc/streams/modules"
        );
    }
    Ok(())
}

pub(crate) fn t_spx_flow_control() -> R {
    let (a, b) = s_pipe(SPX)?;
    set_nonblock(&a, true)?;
    let chunk = pattern(1000, 1);
    let total = write_until_eagain(&a, &chunk, 4 << 20)?;
    ensure!(total > 8192, "flow controlled after only {total} bytes");
    ensure!(
        poll1(&a, libc::POLLOUT, 0)? & libc::POLLOUT == 0,
        "POLLOUT while full"
    );
    let got = read_n(&b, total)?;
    ensure!(
        got.chunks(1000).all(|c| c == chunk.as_slice()),
        "data corrupted"
    );
    ensure!(
        poll1(&a, libc::POLLOUT, 1000)? & libc::POLLOUT != 0,
        "not writable after the drain"
    );
    ensure!(
        e(a.write(b"again"), "write after drain")? == 5,
        "short write"
    );
    ensure!(read_n(&b, 5)? == b"again", "after drain");
    Ok(())
}

pub(crate) fn t_fdinsert_message() -> R {
    // sloop loops the message back: the control part with the token, the data part.
    let s = open()?;
    let other = open()?;
    let mut ctl = [0x5au8; 24];
    let mut data = *b"payload";
    let r = fdinsert_raw(&s, ctl.as_mut_ptr(), 24, Some(&mut data), 0, other.raw(), 8);
    ensure!(e(r, "I_FDINSERT")? == 0, "I_FDINSERT != 0");
    let (mut c, mut d) = ([0u8; 32], [0u8; 16]);
    let g = e(s.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.ctl_len == Some(24) && g.data_len == Some(7) && &d[..7] == b"payload",
        "the message: {g:?}"
    );
    ensure!(
        c[..8] == [0x5a; 8] && c[16..24] == [0x5a; 8],
        "control part changed"
    );
    let tok = u64::from_ne_bytes(c[8..16].try_into().unwrap_or_default());
    // Every Stream with a driver can be named: the token is its driver read queue's number
    // (the driver of the caller gets a reference to that queue with the message).
    ensure!(tok != NO_QUEUE, "another Stream's token: {tok:#x}");
    // RS_HIPRI: M_PCPROTO; the caller's own Stream: a token that names a queue.
    let r = fdinsert_raw(
        &s,
        ctl.as_mut_ptr(),
        8,
        None,
        i64::from(RS_HIPRI),
        s.raw(),
        0,
    );
    e(r, "I_FDINSERT RS_HIPRI")?;
    let g = e(s.getmsg(Some(&mut c), None, 0), "getmsg hipri")?;
    let tok = u64::from_ne_bytes(c[..8].try_into().unwrap_or_default());
    ensure!(
        g.flags == RS_HIPRI && g.ctl_len == Some(8) && tok != NO_QUEUE,
        "own token {tok:#x}: {g:?}"
    );
    Ok(())
}

pub(crate) fn t_fdinsert_errors() -> R {
    let a = open_dev(SPX)?;
    let b = open_dev(SPX)?;
    let mut ctl = [0u8; 16];
    let p = ctl.as_mut_ptr();
    let inval = |r: io::Result<i32>, what: &str| -> R {
        let err = errno_of(r, what)?;
        ensure!(err == libc::EINVAL, "{what}: errno {err}, expected EINVAL");
        Ok(())
    };
    inval(fdinsert_raw(&a, p, 16, None, 0, b.raw(), 4), "offset 4")?;
    inval(
        fdinsert_raw(&a, p, 16, None, 0, b.raw(), 16),
        "offset past ctl",
    )?;
    inval(
        fdinsert_raw(&a, p, 16, None, 0, b.raw(), -8),
        "negative offset",
    )?;
    inval(fdinsert_raw(&a, p, 0, None, 0, b.raw(), 0), "ctl len 0")?;
    inval(fdinsert_raw(&a, p, 16, None, 2, b.raw(), 0), "flags 2")?;
    let null = e(std::fs::File::open("/dev/null"), "/dev/null")?;
    inval(
        fdinsert_raw(&a, p, 8, None, 0, null.as_raw_fd(), 0),
        "fildes /dev/null",
    )?;
    // A Stream linked under a multiplexor is no Stream for I_FDINSERT.
    let mux = open_dev("/dev/streams/clone/mux")?;
    let echo = open_dev("/dev/streams/clone/echo")?;
    e(mux.ioctl_int(I_LINK, echo.raw()), "I_LINK")?;
    inval(
        fdinsert_raw(&a, p, 8, None, 0, echo.raw(), 0),
        "fildes linked",
    )?;
    let err = errno_of(fdinsert_raw(&a, p, 8, None, 0, 9999, 0), "closed fd")?;
    ensure!(err == libc::EBADF, "closed fildes: errno {err}");
    let err = errno_of(
        fdinsert_raw(&a, 8 as *mut u8, 8, None, 0, b.raw(), 0),
        "bad ctl pointer",
    )?;
    ensure!(err == libc::EFAULT, "bad ctl pointer: errno {err}");
    let err = errno_of(ioctl_ptr(&a, I_FDINSERT, 8 as *mut libc::c_void), "bad arg")?;
    ensure!(err == libc::EFAULT, "bad strfdinsert pointer: errno {err}");
    // Nothing above reached the driver: the pair still connects.
    e(connect(&a, b.raw()), "I_FDINSERT after the errors")?;
    e(b.write(b"ok"), "write")?;
    ensure!(read_n(&a, 2)? == b"ok", "connected after the errors");
    // The driver: data before a connection gets M_ERROR ENXIO; a token from another arena
    // (here a sloop Stream) or of a Stream already connected, M_ERROR EINVAL / EBUSY.
    let lone = open_dev(SPX)?;
    e(lone.write(b"early"), "write unconnected")?;
    let err = errno_of(lone.write(b"x"), "write after M_ERROR")?;
    ensure!(err == libc::ENXIO, "unconnected: errno {err}");
    let c = open_dev(SPX)?;
    let s = open()?;
    e(connect(&c, s.raw()), "I_FDINSERT of a sloop Stream")?;
    let mut buf = [0u8; 4];
    let err = errno_of(c.read(&mut buf), "read after a foreign token")?;
    ensure!(err == libc::EINVAL, "foreign token: errno {err}");
    let d = open_dev(SPX)?;
    e(connect(&d, b.raw()), "I_FDINSERT of a connected Stream")?;
    let err = errno_of(d.read(&mut buf), "read after a busy peer")?;
    ensure!(err == libc::EBUSY, "busy peer: errno {err}");
    e(a.write(b"still"), "write")?;
    ensure!(
        read_n(&b, 5)? == b"still",
        "the pair after a refused request"
    );
    Ok(())
}
