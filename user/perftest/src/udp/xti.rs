//! `--udp tpi` and `--udp xtiso`: one XTI connectionless endpoint (t_open, t_bind, t_optmgmt
//! with XTI_SNDBUF/XTI_RCVBUF, t_sndudata, t_rcvudata), the same calls on either device.
//!
//! Built with the cargo feature `xti` only (see [`super::xnet`] for where the functions come
//! from); without it every open fails with [`NOT_BUILT`], so the runs and sweeps record the
//! XTI implementations as unavailable instead of failing to build.

use super::Endpoint;

/// How the error of an open on a missing device begins.
pub const NO_DEVICE: &str = "no XTI UDP device";
/// How the error of an open begins when perftest has no XTI library.
pub const NOT_BUILT: &str = "perftest was built without XTI";

/// Open `dev`, bind it to 127.0.0.1 on a free port and ask for `bufsize`-byte buffers.
#[cfg(not(feature = "xti"))]
pub fn open(
    dev: &str,
    _bufsize: u32,
    _warn: &mut dyn FnMut(String),
) -> Result<Box<dyn Endpoint>, String> {
    Err(format!(
        "{NOT_BUILT} (cargo feature `xti`, which needs the XTI library of libstreams-sys): \
         cannot open {dev}"
    ))
}

/// Open `dev`, bind it to 127.0.0.1 on a free port and ask for `bufsize`-byte buffers.
#[cfg(feature = "xti")]
pub fn open(
    dev: &str,
    bufsize: u32,
    warn: &mut dyn FnMut(String),
) -> Result<Box<dyn Endpoint>, String> {
    Ok(Box::new(imp::XtiEndpoint::open(dev, bufsize, warn)?))
}

#[cfg(feature = "xti")]
mod imp {
    use super::super::xnet::*;
    use super::super::{loopback, Endpoint, Fault};
    use super::NO_DEVICE;
    use crate::run::strip_os;
    use libc::c_int;
    use std::io;
    use std::os::fd::RawFd;

    const SIN_LEN: usize = std::mem::size_of::<libc::sockaddr_in>();

    /// t_errno and errno of the last failed XTI call, as text.
    fn xti_error(call: &str) -> (c_int, c_int, String) {
        let os = io::Error::last_os_error();
        // SAFETY: _t_errno returns the calling thread's t_errno location.
        let te = unsafe { *_t_errno() };
        let text = if te == TSYSERR {
            strip_os(&os)
        } else {
            // SAFETY: t_strerror returns a static NUL-terminated string (or null).
            let p = unsafe { t_strerror(te) };
            if p.is_null() {
                format!("t_errno {te}")
            } else {
                // SAFETY: non-null, NUL-terminated, static.
                unsafe { std::ffi::CStr::from_ptr(p) }
                    .to_string_lossy()
                    .into_owned()
            }
        };
        (
            te,
            os.raw_os_error().unwrap_or(0),
            format!("{call}: {text}"),
        )
    }

    /// An open, bound XTI endpoint.
    ///
    /// # Invariants
    /// `fd` is an XTI endpoint of this process (t_open succeeded), closed only by `Drop`.
    pub struct XtiEndpoint {
        fd: c_int,
        addr: libc::sockaddr_in,
    }

    impl XtiEndpoint {
        pub fn open(
            dev: &str,
            bufsize: u32,
            warn: &mut dyn FnMut(String),
        ) -> Result<XtiEndpoint, String> {
            // A missing device is "not available", whatever t_errno the library maps ENOENT to
            // (rstreams' libxnet: TBADNAME, as XNS 5 says).
            if let Err(e) = std::fs::metadata(dev) {
                return Err(format!("{NO_DEVICE}: {dev}: {}", strip_os(&e)));
            }
            let path = std::ffi::CString::new(dev).map_err(|_| format!("bad device {dev:?}"))?;
            let mut info = t_info::default();
            // SAFETY: `path` is NUL-terminated, `info` a t_info.
            let fd = unsafe { t_open(path.as_ptr(), libc::O_RDWR, &mut info) };
            if fd < 0 {
                let (te, errno, text) = xti_error(&format!("t_open({dev})"));
                if te == TBADNAME
                    || (te == TSYSERR && matches!(errno, libc::ENOENT | libc::ENXIO | libc::ENODEV))
                {
                    let why = if te == TBADNAME {
                        text
                    } else {
                        strip_os(&io::Error::from_raw_os_error(errno))
                    };
                    return Err(format!("{NO_DEVICE}: {dev}: {why}"));
                }
                return Err(text);
            }
            let mut ep = XtiEndpoint {
                fd,
                addr: loopback(0),
            };
            if info.servtype != T_CLTS {
                return Err(format!(
                    "{dev}: service type {} is not T_CLTS (connectionless)",
                    info.servtype
                ));
            }
            ep.bind(dev)?;
            ep.buffers(bufsize, warn);
            Ok(ep)
        }

        fn bind(&mut self, dev: &str) -> Result<(), String> {
            let mut want = loopback(0);
            // SAFETY: a sockaddr_in is plain bytes.
            let want_b = unsafe {
                std::slice::from_raw_parts_mut(
                    (&mut want as *mut libc::sockaddr_in).cast::<u8>(),
                    SIN_LEN,
                )
            };
            let req = t_bind {
                addr: netbuf::of(want_b, SIN_LEN),
                qlen: 0,
            };
            let mut got = [0u8; 128];
            let mut ret = t_bind {
                addr: netbuf::of(&mut got, 0),
                qlen: 0,
            };
            // SAFETY: `req` and `ret` point at live buffers of their maxlen.
            if unsafe { t_bind(self.fd, &req, &mut ret) } < 0 {
                return Err(xti_error(&format!("t_bind({dev}, 127.0.0.1:0)")).2);
            }
            let n = ret.addr.len as usize;
            if n < SIN_LEN {
                return Err(format!(
                    "t_bind({dev}): bound address of {n} bytes is no sockaddr_in"
                ));
            }
            // SAFETY: `got` holds at least SIN_LEN bytes of a sockaddr_in (read unaligned).
            self.addr = unsafe { std::ptr::read_unaligned(got.as_ptr().cast()) };
            Ok(())
        }

        /// XTI_SNDBUF and XTI_RCVBUF by T_NEGOTIATE; a refusal is a warning (the run then
        /// measures the provider's default buffers, and says so).
        fn buffers(&mut self, bufsize: u32, warn: &mut dyn FnMut(String)) {
            let hdr = std::mem::size_of::<t_opthdr>();
            let one = hdr + 4;
            let mut req_b = Vec::with_capacity(2 * one);
            for name in [XTI_SNDBUF, XTI_RCVBUF] {
                for v in [one as u32, XTI_GENERIC, name, 0, bufsize] {
                    req_b.extend_from_slice(&v.to_ne_bytes());
                }
            }
            let len = req_b.len();
            let req = t_optmgmt {
                opt: netbuf::of(&mut req_b, len),
                flags: T_NEGOTIATE,
            };
            let mut ret_b = [0u8; 256];
            let mut ret = t_optmgmt {
                opt: netbuf::of(&mut ret_b, 0),
                flags: 0,
            };
            // SAFETY: `req` and `ret` point at live buffers of their maxlen.
            if unsafe { t_optmgmt(self.fd, &req, &mut ret) } < 0 {
                let text = xti_error("t_optmgmt(T_NEGOTIATE XTI_SNDBUF, XTI_RCVBUF)").2;
                warn(format!("{text}; default buffers"));
                return;
            }
            // Each option's status and value as negotiated.
            let got = &ret_b[..(ret.opt.len as usize).min(ret_b.len())];
            let word = |i: usize| -> Option<u32> {
                got.get(i..i + 4)
                    .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            };
            let mut at = 0;
            while let (Some(l), Some(name), Some(status)) = (word(at), word(at + 8), word(at + 12))
            {
                if (l as usize) < hdr {
                    break;
                }
                let value = word(at + hdr);
                if status != T_SUCCESS || value != Some(bufsize) {
                    let what = if name == XTI_SNDBUF {
                        "XTI_SNDBUF"
                    } else {
                        "XTI_RCVBUF"
                    };
                    warn(format!(
                        "t_optmgmt {what} {bufsize}: status {status:#x}, value {}",
                        value.map_or("?".to_string(), |v| v.to_string())
                    ));
                }
                at += (l as usize + 3) & !3;
            }
        }

        /// The fault of a failed t_sndudata/t_rcvudata; a pending T_UDERR is taken.
        fn fault(&mut self, call: &str) -> Fault {
            let (te, errno, text) = xti_error(call);
            match te {
                TFLOW | TNODATA => Fault::WouldBlock,
                TSYSERR if errno == libc::EINTR => Fault::Interrupted,
                TSYSERR if errno == libc::EAGAIN => Fault::WouldBlock,
                TSYSERR if errno == libc::ENOBUFS => Fault::Transient(text),
                // SAFETY: t_look on our endpoint.
                TLOOK if unsafe { t_look(self.fd) } == T_UDERR => {
                    let mut e = t_uderr {
                        addr: netbuf::none(),
                        opt: netbuf::none(),
                        error: 0,
                    };
                    // SAFETY: `e` asks for no address or options.
                    unsafe { t_rcvuderr(self.fd, &mut e) };
                    Fault::Transient(format!("{call}: T_UDERR {}", e.error))
                }
                TBADF => Fault::Fatal(format!("{text} (the endpoint is gone)")),
                _ => Fault::Fatal(text),
            }
        }
    }

    impl Drop for XtiEndpoint {
        fn drop(&mut self) {
            // SAFETY: our endpoint, closed once.
            unsafe { t_close(self.fd) };
        }
    }

    impl Endpoint for XtiEndpoint {
        fn fd(&self) -> RawFd {
            self.fd
        }

        fn addr(&self) -> libc::sockaddr_in {
            self.addr
        }

        fn send(&mut self, to: &libc::sockaddr_in, data: &[u8]) -> Result<(), Fault> {
            let ud = t_unitdata {
                addr: netbuf {
                    maxlen: SIN_LEN as u32,
                    len: SIN_LEN as u32,
                    // t_sndudata only reads through these pointers.
                    buf: (to as *const libc::sockaddr_in).cast_mut().cast(),
                },
                opt: netbuf::none(),
                udata: netbuf {
                    maxlen: data.len() as u32,
                    len: data.len() as u32,
                    buf: data.as_ptr().cast_mut().cast(),
                },
            };
            // SAFETY: `ud` describes live buffers of `len` bytes, read only.
            if unsafe { t_sndudata(self.fd, &ud) } < 0 {
                return Err(self.fault("t_sndudata()"));
            }
            Ok(())
        }

        fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
            // The source address is asked for, as netperf's XTI test did.
            let mut from = [0u8; 64];
            let mut ud = t_unitdata {
                addr: netbuf::of(&mut from, 0),
                opt: netbuf::none(),
                udata: netbuf::of(buf, 0),
            };
            let mut flags: c_int = 0;
            // SAFETY: `ud` describes live, exclusively borrowed buffers of `maxlen` bytes.
            if unsafe { t_rcvudata(self.fd, &mut ud, &mut flags) } < 0 {
                return Err(self.fault("t_rcvudata()"));
            }
            if flags & T_MORE != 0 {
                return Err(Fault::Fatal(format!(
                    "t_rcvudata(): T_MORE with a {}-byte buffer",
                    buf.len()
                )));
            }
            Ok(ud.udata.len as usize)
        }
    }
}
