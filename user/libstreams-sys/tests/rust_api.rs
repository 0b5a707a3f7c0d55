//! The safe Rust API on ordinary Linux descriptors (no STREAMS modules on the host): the
//! errors must be the SVR4 ones, and nothing may reach the descriptor.

use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use streams::{Stream, RS_HIPRI};

fn linux_pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0; 2];
    // SAFETY: `fds` has room for two ints.
    assert_eq!(
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) },
        0
    );
    use std::os::fd::FromRawFd;
    // SAFETY: both descriptors were just created and are owned here only.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

#[test]
fn linux_pipe_is_not_a_stream() {
    let (r, w) = linux_pipe();
    assert!(!Stream::is_stream(r.as_fd()).unwrap());
    assert!(!Stream::is_stream(w.as_fd()).unwrap());
    let f = std::fs::File::open(env!("CARGO_MANIFEST_DIR")).unwrap();
    assert!(!Stream::is_stream(f.as_fd()).unwrap());
}

#[test]
fn putmsg_getmsg_on_linux_pipe_fail_with_enostr() {
    let (r, w) = linux_pipe();
    let (r, w) = (Stream::from_fd(r), Stream::from_fd(w));
    let e = w.putmsg(Some(b"ctl"), Some(b"data"), 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSTR));
    let e = w
        .putpmsg(None, Some(b"data"), 3, streams::MSG_BAND)
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSTR));
    let mut buf = [0u8; 8];
    let e = r.getmsg(None, Some(&mut buf), 0).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSTR));
    let e = r
        .getpmsg(None, Some(&mut buf), 0, streams::MSG_ANY)
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOSTR));
    // Invalid flags are refused by the library before any ioctl.
    let e = w.putmsg(None, Some(b"x"), RS_HIPRI + 1).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EINVAL));
    // Nothing reached the pipe; plain write/read still work.
    let mut rf = std::fs::File::from(r.into_fd());
    let e = rf.read(&mut buf).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock);
    assert_eq!(w.write(b"abc").unwrap(), 3);
    assert_eq!(rf.read(&mut buf).unwrap(), 3);
    assert_eq!(&buf[..3], b"abc");
}

#[test]
fn ioctls_on_linux_pipe_fail_with_enotty() {
    let (_r, w) = linux_pipe();
    let w = Stream::from_fd(w);
    assert_eq!(w.canput(0).unwrap_err().raw_os_error(), Some(libc::ENOTTY));
    assert_eq!(
        w.push("pipemod").unwrap_err().raw_os_error(),
        Some(libc::ENOTTY)
    );
    assert_eq!(
        w.ioctl_get_int(streams::I_GRDOPT)
            .unwrap_err()
            .raw_os_error(),
        Some(libc::ENOTTY)
    );
}

#[test]
fn streams_pipe_without_device_is_enoent() {
    if std::path::Path::new(streams::PIPE_DEVICE).exists() {
        let (a, b) = Stream::pipe().expect("STREAMS pipe");
        assert!(Stream::is_stream(a.as_fd()).unwrap() && Stream::is_stream(b.as_fd()).unwrap());
        return;
    }
    let e = Stream::pipe().unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ENOENT));
    let e = Stream::open(streams::PIPE_DEVICE).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
}
