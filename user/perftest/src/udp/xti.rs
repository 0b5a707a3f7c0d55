//! `--udp tpi` and `--udp xtiso`: one XTI connectionless endpoint (t_open, t_bind, t_optmgmt
//! with XTI_SNDBUF/XTI_RCVBUF, t_sndudata, t_rcvudata), the same calls on either device,
//! through the XTI library of libstreams-sys (`streams::xti::Endpoint`: the functions libxnet
//! exports to C programs, with slices instead of netbufs).

use super::{loopback, Endpoint, Fault};
use crate::run::strip_os;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use streams::xti::{self, OptBuilder, XtiError};

/// How the error of an open on a missing device begins.
pub const NO_DEVICE: &str = "no XTI UDP device";

const SIN_LEN: usize = std::mem::size_of::<libc::sockaddr_in>();

/// Open `dev`, bind it to 127.0.0.1 on a free port and ask for `bufsize`-byte buffers.
pub fn open(
    dev: &str,
    bufsize: u32,
    warn: &mut dyn FnMut(String),
) -> Result<Box<dyn Endpoint>, String> {
    Ok(Box::new(XtiEndpoint::open(dev, bufsize, warn)?))
}

/// `call: <t_strerror or the system error>`.
fn text(call: &str, e: XtiError) -> String {
    if e.t == xti::TSYSERR {
        format!(
            "{call}: {}",
            strip_os(&io::Error::from_raw_os_error(e.errno))
        )
    } else {
        format!("{call}: {}", xti::error::message(e.t).to_string_lossy())
    }
}

/// The bytes of a `sockaddr_in`.
fn sin_bytes(a: &libc::sockaddr_in) -> [u8; SIN_LEN] {
    let mut b = [0u8; SIN_LEN];
    b[..2].copy_from_slice(&a.sin_family.to_ne_bytes());
    b[2..4].copy_from_slice(&a.sin_port.to_ne_bytes());
    b[4..8].copy_from_slice(&a.sin_addr.s_addr.to_ne_bytes());
    b
}

/// A `sockaddr_in` from its bytes (at least [`SIN_LEN`]).
fn sin_from(b: &[u8]) -> Option<libc::sockaddr_in> {
    let w = |i: usize, n: usize| b.get(i..i + n);
    Some(libc::sockaddr_in {
        sin_family: u16::from_ne_bytes(w(0, 2)?.try_into().ok()?),
        sin_port: u16::from_ne_bytes(w(2, 2)?.try_into().ok()?),
        sin_addr: libc::in_addr {
            s_addr: u32::from_ne_bytes(w(4, 4)?.try_into().ok()?),
        },
        sin_zero: [0; 8],
    })
}

/// An open, bound XTI endpoint.
pub struct XtiEndpoint {
    ep: xti::Endpoint,
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
        let ep = xti::Endpoint::open(dev).map_err(|e| {
            let missing = e.t == xti::TBADNAME
                || (e.t == xti::TSYSERR
                    && matches!(e.errno, libc::ENOENT | libc::ENXIO | libc::ENODEV));
            let t = text(&format!("t_open({dev})"), e);
            if missing {
                format!("{NO_DEVICE}: {dev}: {t}")
            } else {
                t
            }
        })?;
        if ep.info().servtype != xti::T_CLTS {
            return Err(format!(
                "{dev}: service type {} is not T_CLTS (connectionless)",
                ep.info().servtype
            ));
        }
        let got = ep
            .bind(Some(&sin_bytes(&loopback(0))))
            .map_err(|e| text(&format!("t_bind({dev}, 127.0.0.1:0)"), e))?;
        let addr = sin_from(&got).ok_or_else(|| {
            format!(
                "t_bind({dev}): bound address of {} bytes is no sockaddr_in",
                got.len()
            )
        })?;
        let me = XtiEndpoint { ep, addr };
        me.buffers(bufsize, warn);
        Ok(me)
    }

    /// XTI_SNDBUF and XTI_RCVBUF by T_NEGOTIATE; a refusal is a warning (the run then
    /// measures the provider's default buffers, and says so).
    fn buffers(&self, bufsize: u32, warn: &mut dyn FnMut(String)) {
        let v = i32::try_from(bufsize).unwrap_or(i32::MAX);
        let req = OptBuilder::new()
            .scalar(xti::XTI_GENERIC, xti::XTI_SNDBUF, v)
            .scalar(xti::XTI_GENERIC, xti::XTI_RCVBUF, v)
            .build();
        let (got, _) = match self.ep.optmgmt(&req, xti::T_NEGOTIATE) {
            Ok(r) => r,
            Err(e) => {
                let t = text("t_optmgmt(T_NEGOTIATE XTI_SNDBUF, XTI_RCVBUF)", e);
                warn(format!("{t}; default buffers"));
                return;
            }
        };
        // Each option's status and value as negotiated.
        for o in xti::options(&got) {
            let value = o
                .value
                .get(..4)
                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
            if o.status != xti::T_SUCCESS || value != Some(bufsize) {
                let what = if o.name == xti::XTI_SNDBUF {
                    "XTI_SNDBUF"
                } else {
                    "XTI_RCVBUF"
                };
                warn(format!(
                    "t_optmgmt {what} {bufsize}: status {:#x}, value {}",
                    o.status,
                    value.map_or("?".to_string(), |v| v.to_string())
                ));
            }
        }
    }

    /// The fault of a failed t_sndudata/t_rcvudata; a pending T_UDERR is taken.
    fn fault(&mut self, call: &str, e: XtiError) -> Fault {
        let t = text(call, e);
        match e.t {
            xti::TFLOW | xti::TNODATA => Fault::WouldBlock,
            xti::TSYSERR if e.errno == libc::EINTR => Fault::Interrupted,
            xti::TSYSERR if e.errno == libc::EAGAIN => Fault::WouldBlock,
            xti::TSYSERR if e.errno == libc::ENOBUFS => Fault::Transient(t),
            xti::TLOOK if self.ep.look() == Ok(xti::T_UDERR) => match self.ep.recv_uderr() {
                Ok((_, error)) => Fault::Transient(format!("{call}: T_UDERR {error}")),
                Err(e) => Fault::Fatal(text("t_rcvuderr()", e)),
            },
            xti::TBADF => Fault::Fatal(format!("{t} (the endpoint is gone)")),
            _ => Fault::Fatal(t),
        }
    }
}

impl Endpoint for XtiEndpoint {
    fn fd(&self) -> RawFd {
        self.ep.as_raw_fd()
    }

    fn addr(&self) -> libc::sockaddr_in {
        self.addr
    }

    fn send(&mut self, to: &libc::sockaddr_in, data: &[u8]) -> Result<(), Fault> {
        self.ep
            .send_unitdata(&sin_bytes(to), data)
            .map_err(|e| self.fault("t_sndudata()", e))
    }

    fn recv(&mut self, buf: &mut [u8]) -> Result<usize, Fault> {
        // The source address is asked for, as netperf's XTI test did.
        let mut from = [0u8; 64];
        let r = match self.ep.recv_unitdata_parts(Some(&mut from), None, buf) {
            Ok(r) => r,
            Err(e) => return Err(self.fault("t_rcvudata()", e)),
        };
        if r.more {
            return Err(Fault::Fatal(format!(
                "t_rcvudata(): T_MORE with a {}-byte buffer",
                buf.len()
            )));
        }
        Ok(r.data_len)
    }
}
