//! The safe Rust API: [`Stream`] owns a descriptor of a Stream and offers putmsg/getmsg and
//! the common I_* ioctls, returning `io::Result` instead of -1/errno.

use crate::consts::*;
use crate::ffi;
use crate::types::strbuf;
use libc::c_int;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// What getmsg/getpmsg returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GetMsg {
    /// Control bytes stored (None: the message had no control part, or it was not asked for).
    pub ctl_len: Option<usize>,
    /// Data bytes stored (None: no data part, or not asked for).
    pub data_len: Option<usize>,
    /// getmsg: RS_HIPRI or 0; getpmsg: MSG_HIPRI or MSG_BAND.
    pub flags: i32,
    /// getpmsg: the message's band (getmsg: 0).
    pub band: i32,
    /// 0, or MORECTL|MOREDATA when part of the message stayed queued.
    pub more: i32,
}

/// An open Stream (a STREAMS device or one end of a STREAMS pipe).
#[derive(Debug)]
pub struct Stream {
    fd: OwnedFd,
}

fn cvt(r: c_int) -> io::Result<c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

fn in_buf(b: Option<&[u8]>) -> io::Result<strbuf> {
    match b {
        None => Ok(strbuf::NONE),
        Some(b) => {
            let len =
                c_int::try_from(b.len()).map_err(|_| io::Error::from_raw_os_error(libc::ERANGE))?;
            Ok(strbuf {
                maxlen: len,
                len,
                // putmsg only reads through this pointer.
                buf: b.as_ptr() as *mut libc::c_char,
            })
        }
    }
}

fn out_buf(b: &mut Option<&mut [u8]>) -> strbuf {
    match b {
        None => strbuf::NONE,
        Some(b) => strbuf {
            maxlen: c_int::try_from(b.len()).unwrap_or(c_int::MAX),
            len: 0,
            buf: b.as_mut_ptr() as *mut libc::c_char,
        },
    }
}

fn out_len(b: &strbuf) -> Option<usize> {
    usize::try_from(b.len).ok()
}

impl Stream {
    /// Open a STREAMS device read-write (`O_RDWR | O_CLOEXEC`).
    pub fn open(path: impl AsRef<Path>) -> io::Result<Stream> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)?;
        Ok(Stream { fd: f.into() })
    }

    /// Take ownership of a descriptor (not checked to be a Stream: see [`Stream::is_stream`]).
    pub fn from_fd(fd: OwnedFd) -> Stream {
        Stream { fd }
    }

    /// A STREAMS pipe: two connected, full-duplex ends (close-on-exec).
    pub fn pipe() -> io::Result<(Stream, Stream)> {
        let (a, b) = ffi::open_pipe_pair(libc::O_CLOEXEC).map_err(io::Error::from_raw_os_error)?;
        // SAFETY: both descriptors were just opened by us and are owned by nobody else.
        let (a, b) = unsafe { (OwnedFd::from_raw_fd(a), OwnedFd::from_raw_fd(b)) };
        Ok((Stream { fd: a }, Stream { fd: b }))
    }

    /// isastream(3) on any descriptor.
    pub fn is_stream(fd: BorrowedFd<'_>) -> io::Result<bool> {
        Ok(cvt(ffi::isastream(fd.as_raw_fd()))? == 1)
    }

    /// putmsg(2): `flags` 0 or RS_HIPRI.
    pub fn putmsg(&self, ctl: Option<&[u8]>, data: Option<&[u8]>, flags: i32) -> io::Result<()> {
        let (c, d) = (in_buf(ctl)?, in_buf(data)?);
        // SAFETY: `c`/`d` describe live slices of exactly `len` bytes.
        cvt(unsafe { ffi::putmsg(self.raw(), &c, &d, flags) }).map(drop)
    }

    /// putpmsg(2): `flags` MSG_BAND (band `band`) or MSG_HIPRI.
    pub fn putpmsg(
        &self,
        ctl: Option<&[u8]>,
        data: Option<&[u8]>,
        band: i32,
        flags: i32,
    ) -> io::Result<()> {
        let (c, d) = (in_buf(ctl)?, in_buf(data)?);
        // SAFETY: `c`/`d` describe live slices of exactly `len` bytes.
        cvt(unsafe { ffi::putpmsg(self.raw(), &c, &d, band, flags) }).map(drop)
    }

    /// getmsg(2): `flags` 0 (any) or RS_HIPRI. A `None` part is not retrieved.
    pub fn getmsg(
        &self,
        mut ctl: Option<&mut [u8]>,
        mut data: Option<&mut [u8]>,
        flags: i32,
    ) -> io::Result<GetMsg> {
        let (mut c, mut d) = (out_buf(&mut ctl), out_buf(&mut data));
        let mut fl = flags;
        // SAFETY: `c`/`d` describe live, exclusively borrowed slices of `maxlen` bytes.
        let more = cvt(unsafe { ffi::getmsg(self.raw(), &mut c, &mut d, &mut fl) })?;
        Ok(GetMsg {
            ctl_len: out_len(&c),
            data_len: out_len(&d),
            flags: fl,
            band: 0,
            more,
        })
    }

    /// getpmsg(2): `flags` MSG_ANY, MSG_BAND (lowest band `band`) or MSG_HIPRI.
    pub fn getpmsg(
        &self,
        mut ctl: Option<&mut [u8]>,
        mut data: Option<&mut [u8]>,
        band: i32,
        flags: i32,
    ) -> io::Result<GetMsg> {
        let (mut c, mut d) = (out_buf(&mut ctl), out_buf(&mut data));
        let (mut b, mut fl) = (band, flags);
        // SAFETY: `c`/`d` describe live, exclusively borrowed slices of `maxlen` bytes.
        let more = cvt(unsafe { ffi::getpmsg(self.raw(), &mut c, &mut d, &mut b, &mut fl) })?;
        Ok(GetMsg {
            ctl_len: out_len(&c),
            data_len: out_len(&d),
            flags: fl,
            band: b,
            more,
        })
    }

    /// An ioctl taking an int by value (I_SRDOPT, I_SWROPT, I_FLUSH, I_CANPUT, I_SETSIG…).
    pub fn ioctl_int(&self, cmd: i32, arg: i32) -> io::Result<i32> {
        cvt(ffi::ioctl_int(self.raw(), cmd, arg))
    }

    /// An ioctl writing an int at its argument (I_GRDOPT, I_GWROPT, I_NREAD, I_GETSIG…):
    /// returns (ioctl's return value, the int).
    pub fn ioctl_get_int(&self, cmd: i32) -> io::Result<(i32, i32)> {
        let mut v: c_int = 0;
        // SAFETY: `v` is a live int the command may write.
        let r = unsafe { libc::ioctl(self.raw(), cmd as libc::c_ulong, &mut v as *mut c_int) };
        Ok((cvt(r)?, v))
    }

    /// I_PUSH a module.
    pub fn push(&self, module: &str) -> io::Result<()> {
        let name = CString::new(module).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: `name` is a NUL-terminated string that outlives the call.
        cvt(unsafe { libc::ioctl(self.raw(), I_PUSH as libc::c_ulong, name.as_ptr()) }).map(drop)
    }

    /// I_POP the top module.
    pub fn pop(&self) -> io::Result<()> {
        self.ioctl_int(I_POP, 0).map(drop)
    }

    /// I_SRDOPT.
    pub fn set_read_opt(&self, opt: i32) -> io::Result<()> {
        self.ioctl_int(I_SRDOPT, opt).map(drop)
    }

    /// I_SWROPT.
    pub fn set_write_opt(&self, opt: i32) -> io::Result<()> {
        self.ioctl_int(I_SWROPT, opt).map(drop)
    }

    /// I_CANPUT: can band `band` (or ANYBAND) be written?
    pub fn canput(&self, band: i32) -> io::Result<bool> {
        Ok(self.ioctl_int(I_CANPUT, band)? == 1)
    }

    /// write(2).
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: `buf` is a live slice of `buf.len()` bytes.
        let r = unsafe { libc::write(self.raw(), buf.as_ptr().cast(), buf.len()) };
        usize::try_from(r).map_err(|_| io::Error::last_os_error())
    }

    /// read(2).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: `buf` is a live, exclusively borrowed slice of `buf.len()` bytes.
        let r = unsafe { libc::read(self.raw(), buf.as_mut_ptr().cast(), buf.len()) };
        usize::try_from(r).map_err(|_| io::Error::last_os_error())
    }

    /// fattach(3): attach this Stream to `path` (an existing file): opens of `path` reach this
    /// Stream head until [`fdetach`]. Needs CAP_SYS_ADMIN (it is a mount).
    pub fn fattach(&self, path: impl AsRef<Path>) -> io::Result<()> {
        let p = c_path(path.as_ref())?;
        // SAFETY: `p` is a NUL-terminated string that outlives the call.
        cvt(unsafe { ffi::fattach(self.raw(), p.as_ptr()) }).map(drop)
    }

    /// The descriptor, still owned by the Stream.
    pub fn raw(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Give up ownership of the descriptor.
    pub fn into_fd(self) -> OwnedFd {
        self.fd
    }
}

impl AsFd for Stream {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

fn c_path(p: &Path) -> io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(p.as_os_str().as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// fdetach(3): detach the Stream attached to `path` (EINVAL if none is).
pub fn fdetach(path: impl AsRef<Path>) -> io::Result<()> {
    let p = c_path(path.as_ref())?;
    // SAFETY: `p` is a NUL-terminated string that outlives the call.
    cvt(unsafe { ffi::fdetach(p.as_ptr()) }).map(drop)
}
