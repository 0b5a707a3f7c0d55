//! strtest cases for multiplexing: the `mux` test driver (`/dev/streams/clone/mux`, every
//! open an upper Stream of one Stream complex) with `echo` Streams linked under it by
//! I_LINK/I_PLINK, unlinked by I_UNLINK/I_PUNLINK or by closing, routed with MUX_ROUTE; the
//! linked Stream's own descriptor meanwhile (EINVAL), and the error cases.

use super::*;

const MUX: &str = "/dev/streams/clone/mux";
const ECHO: &str = "/dev/streams/clone/echo";
/// mux's I_STR command: route this upper Stream to link `muxid` (an int).
const MUX_ROUTE: i32 = (b'X' as i32) << 8 | 1;

fn open_dev(path: &str) -> Result<Stream, String> {
    e(Stream::open(path), path)
}

/// Write `data` on `s` and read the same bytes back from `s`.
fn roundtrip(s: &Stream, data: &[u8]) -> R {
    ensure!(e(s.write(data), "write")? == data.len(), "short write");
    ensure!(read_n(s, data.len())? == data, "came back different");
    Ok(())
}

/// Nothing to read on `s` (non-blocking read gives EAGAIN).
fn nothing(s: &Stream) -> R {
    set_nonblock(s, true)?;
    let mut b = [0u8; 16];
    let r = s.read(&mut b);
    set_nonblock(s, false)?;
    ensure!(errno_of(r, "read")? == libc::EAGAIN, "expected EAGAIN");
    Ok(())
}

fn route(s: &Stream, muxid: i32) -> io::Result<i32> {
    let mut arg = muxid.to_ne_bytes();
    let mut ic = strioctl {
        ic_cmd: MUX_ROUTE,
        ic_timout: -1,
        ic_len: 4,
        ic_dp: arg.as_mut_ptr().cast(),
    };
    ioctl_ptr(s, I_STR, (&mut ic as *mut strioctl).cast())
}

/// The linked Stream's own descriptor fails with EINVAL (SVR4's STPLEX).
fn is_plex(l: &Stream) -> R {
    let mut b = [0u8; 4];
    ensure!(
        errno_of(l.read(&mut b), "read")? == libc::EINVAL,
        "read: not EINVAL"
    );
    ensure!(
        errno_of(l.write(b"x"), "write")? == libc::EINVAL,
        "write: not EINVAL"
    );
    ensure!(
        errno_of(l.push("nullmod"), "I_PUSH")? == libc::EINVAL,
        "I_PUSH: not EINVAL"
    );
    Ok(())
}

pub(crate) fn t_mux_link_unlink() -> R {
    let u = open_dev(MUX)?;
    let l = open_dev(ECHO)?;
    let m = e(u.ioctl_int(I_LINK, l.raw()), "I_LINK")?;
    ensure!(m > 0, "muxid {m}");
    roundtrip(&u, b"down the link and back")?;
    roundtrip(&u, &pattern(20000, 3))?;
    e(u.putmsg(Some(b"ctl"), Some(b"dat"), 0), "putmsg")?;
    let (mut c, mut d) = ([0u8; 8], [0u8; 8]);
    let g = e(u.getmsg(Some(&mut c), Some(&mut d), 0), "getmsg")?;
    ensure!(
        g.ctl_len == Some(3) && &c[..3] == b"ctl",
        "M_PROTO through the mux: {g:?}"
    );
    is_plex(&l)?;
    ensure!(
        errno_of(u.ioctl_int(I_LINK, l.raw()), "I_LINK again")? == libc::EINVAL,
        "a linked Stream linked twice"
    );
    ensure!(
        errno_of(u.ioctl_int(I_UNLINK, m + 50), "I_UNLINK unknown")? == libc::EINVAL,
        "unknown muxid"
    );
    ensure!(
        e(u.ioctl_int(I_UNLINK, m), "I_UNLINK")? == 0,
        "I_UNLINK != 0"
    );
    roundtrip(&l, b"mine again")?;
    ensure!(
        e(u.write(b"nowhere"), "write unrouted")? == 7,
        "write unrouted"
    );
    nothing(&u)?;
    Ok(())
}

pub(crate) fn t_mux_close_unlinks() -> R {
    let l = open_dev(ECHO)?;
    {
        let u = open_dev(MUX)?;
        e(u.ioctl_int(I_LINK, l.raw()), "I_LINK")?;
        is_plex(&l)?;
    }
    // Closing the upper Stream undid its I_LINK: the echo Stream is back with its file.
    roundtrip(&l, b"back after close")?;
    Ok(())
}

pub(crate) fn t_mux_plink_persists() -> R {
    let l = open_dev(ECHO)?;
    let m = {
        let u = open_dev(MUX)?;
        let m = e(u.ioctl_int(I_PLINK, l.raw()), "I_PLINK")?;
        ensure!(
            errno_of(u.ioctl_int(I_UNLINK, m), "I_UNLINK of a persistent link")? == libc::EINVAL,
            "I_UNLINK undid an I_PLINK"
        );
        m
    };
    is_plex(&l)?;
    let u2 = open_dev(MUX)?;
    ensure!(
        errno_of(route(&u2, m + 77), "MUX_ROUTE unknown")? == libc::ENXIO,
        "MUX_ROUTE of an unknown muxid"
    );
    e(route(&u2, m), "MUX_ROUTE")?;
    roundtrip(&u2, b"persistent link, other Stream")?;
    ensure!(
        e(u2.ioctl_int(I_PUNLINK, MUXID_ALL), "I_PUNLINK")? == 0,
        "I_PUNLINK"
    );
    roundtrip(&l, b"unlinked")?;
    // With the lower file closed while linked, the link still works and I_PUNLINK closes it.
    let l2 = open_dev(ECHO)?;
    let m2 = e(u2.ioctl_int(I_PLINK, l2.raw()), "I_PLINK 2")?;
    drop(l2);
    roundtrip(&u2, b"file closed, link alive")?;
    ensure!(
        e(u2.ioctl_int(I_PUNLINK, m2), "I_PUNLINK 2")? == 0,
        "I_PUNLINK 2"
    );
    nothing(&u2)?;
    Ok(())
}

pub(crate) fn t_mux_link_errors() -> R {
    let u = open_dev(MUX)?;
    let echo = open_dev(ECHO)?;
    let other = open_dev(ECHO)?;
    let inval = |r: io::Result<i32>, what: &str| -> R {
        ensure!(errno_of(r, what)? == libc::EINVAL, "{what}: not EINVAL");
        Ok(())
    };
    inval(
        echo.ioctl_int(I_LINK, other.raw()),
        "I_LINK under a non-multiplexor",
    )?;
    inval(u.ioctl_int(I_LINK, u.raw()), "I_LINK of itself")?;
    let u2 = open_dev(MUX)?;
    inval(u.ioctl_int(I_LINK, u2.raw()), "I_LINK of a mux Stream")?;
    let (p0, _p1) = e(Stream::pipe(), "s_pipe")?;
    inval(u.ioctl_int(I_LINK, p0.raw()), "I_LINK of a pipe end")?;
    let null = e(std::fs::File::open("/dev/null"), "/dev/null")?;
    inval(u.ioctl_int(I_LINK, null.as_raw_fd()), "I_LINK of /dev/null")?;
    ensure!(
        errno_of(u.ioctl_int(I_LINK, 9999), "I_LINK of a closed fd")? == libc::EBADF,
        "bad fd: not EBADF"
    );
    inval(u.ioctl_int(I_PUNLINK, 12345), "I_PUNLINK unknown")?;
    ensure!(
        e(u.ioctl_int(I_UNLINK, MUXID_ALL), "I_UNLINK all, none")? == 0,
        "MUXID_ALL"
    );
    // A failed link leaves the Stream with its file.
    roundtrip(&other, b"still mine")?;
    Ok(())
}

/// streams.ko refuses to unload while any Stream is open (here: a mux Stream with an echo
/// Stream linked under it, and a plain echo Stream), and nothing breaks afterwards.
pub(crate) fn t_rmmod_refused_while_open() -> R {
    let u = open_dev(MUX)?;
    let l = open_dev(ECHO)?;
    let m = e(u.ioctl_int(I_LINK, l.raw()), "I_LINK")?;
    let r = errno_of(
        crate::fattach::delete_module(c"streams"),
        "rmmod streams with Streams open",
    )?;
    ensure!(
        r == libc::EWOULDBLOCK || r == libc::EBUSY,
        "rmmod with open Streams: errno {r}"
    );
    roundtrip(&u, b"still loaded")?;
    ensure!(e(u.ioctl_int(I_UNLINK, m), "I_UNLINK")? == 0, "I_UNLINK");
    drop(u);
    let e2 = open_dev(ECHO)?;
    drop(l);
    let r = errno_of(
        crate::fattach::delete_module(c"streams"),
        "rmmod streams with one echo Stream open",
    )?;
    ensure!(
        r == libc::EWOULDBLOCK || r == libc::EBUSY,
        "rmmod with an open Stream: errno {r}"
    );
    roundtrip(&e2, b"echo still works")?;
    Ok(())
}
