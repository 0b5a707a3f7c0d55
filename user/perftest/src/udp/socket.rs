//! `--udp socket`: the Linux sockets side of the paper, sendto/recvfrom on an AF_INET
//! SOCK_DGRAM socket with SO_SNDBUF/SO_RCVBUF set as netperf's `-s`/`-S` did.

use super::{loopback, Endpoint, Fault};
use crate::run::{os_err, strip_os};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

const SIN_LEN: libc::socklen_t = std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t;

/// A bound UDP socket.
pub struct SocketEndpoint {
    fd: OwnedFd,
    addr: libc::sockaddr_in,
}

impl SocketEndpoint {
    /// A socket bound to 127.0.0.1 on a free port, with both buffers asked to be `bufsize`
    /// (Linux doubles the value and caps it at net.core.[rw]mem_max: the cap is reported).
    pub fn open(bufsize: u32, warn: &mut dyn FnMut(String)) -> Result<SocketEndpoint, String> {
        // SAFETY: plain socket(2).
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(os_err("socket(AF_INET, SOCK_DGRAM)"));
        }
        // SAFETY: just created, owned here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let want = libc::c_int::try_from(bufsize).unwrap_or(libc::c_int::MAX);
        for (opt, name) in [
            (libc::SO_SNDBUF, "SO_SNDBUF"),
            (libc::SO_RCVBUF, "SO_RCVBUF"),
        ] {
            // SAFETY: an int option of our socket.
            let r = unsafe {
                libc::setsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&want as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if r != 0 {
                warn(format!(
                    "setsockopt({name}, {bufsize}): {}; default buffer",
                    strip_os(&io::Error::last_os_error())
                ));
                continue;
            }
            let mut got: libc::c_int = 0;
            let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
            // SAFETY: an int option of our socket, `got` and `len` are ours.
            let r = unsafe {
                libc::getsockopt(
                    fd.as_raw_fd(),
                    libc::SOL_SOCKET,
                    opt,
                    (&mut got as *mut libc::c_int).cast(),
                    &mut len,
                )
            };
            // Linux reports twice what it was asked for; less means the sysctl cap.
            if r == 0 && i64::from(got) < 2 * i64::from(want) {
                warn(format!(
                    "{name} {bufsize} capped by the kernel: {got} bytes (net.core.{}mem_max)",
                    if opt == libc::SO_SNDBUF { "w" } else { "r" }
                ));
            }
        }
        let mut addr = loopback(0);
        // SAFETY: `addr` is a sockaddr_in of SIN_LEN bytes.
        if unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&addr as *const libc::sockaddr_in).cast(),
                SIN_LEN,
            )
        } != 0
        {
            return Err(os_err("bind(127.0.0.1:0)"));
        }
        let mut len = SIN_LEN;
        // SAFETY: `addr` has room for SIN_LEN bytes.
        if unsafe {
            libc::getsockname(
                fd.as_raw_fd(),
                (&mut addr as *mut libc::sockaddr_in).cast(),
                &mut len,
            )
        } != 0
        {
            return Err(os_err("getsockname()"));
        }
        Ok(SocketEndpoint { fd, addr })
    }
}

/// The fault of a failed sendto/recvfrom.
fn fault(what: &str) -> Fault {
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::EAGAIN) => Fault::WouldBlock,
        Some(libc::EINTR) => Fault::Interrupted,
        Some(libc::ENOBUFS | libc::ECONNREFUSED | libc::EHOSTUNREACH | libc::ENETUNREACH) => {
            Fault::Transient(format!("{what}: {}", strip_os(&e)))
        }
        _ => Fault::Fatal(format!("{what}: {}", strip_os(&e))),
    }
}

impl Endpoint for SocketEndpoint {
    fn fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    fn addr(&self) -> libc::sockaddr_in {
        self.addr
    }

    fn send(&mut self, to: &libc::sockaddr_in, data: &[u8]) -> Result<(), Fault> {
        // SAFETY: `data` is a live slice, `to` a sockaddr_in of SIN_LEN bytes.
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                data.as_ptr().cast(),
                data.len(),
                0,
                (to as *const libc::sockaddr_in).cast(),
                SIN_LEN,
            )
        };
        if r < 0 {
            return Err(fault("sendto()"));
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        // The source address is asked for, as t_rcvudata returns it.
        let mut from = loopback(0);
        let mut len = SIN_LEN;
        // SAFETY: `buf` is a live, exclusively borrowed slice; `from` has room for SIN_LEN.
        let r = unsafe {
            libc::recvfrom(
                self.fd.as_raw_fd(),
                buf.as_mut_ptr().cast(),
                buf.len(),
                0,
                (&mut from as *mut libc::sockaddr_in).cast(),
                &mut len,
            )
        };
        if r < 0 {
            return Err(fault("recvfrom()"));
        }
        Ok(r as usize)
    }
}
