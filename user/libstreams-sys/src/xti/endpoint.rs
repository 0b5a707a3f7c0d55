//! The safe Rust API: an [`Endpoint`] owns a transport endpoint (its descriptor and the
//! library's record of it) and offers the T_CLTS calls with slices and `XtiResult`s.

use super::clts::{self, Recv, Uderr};
use super::consts::TBADNAME;
use super::error::{XtiError, XtiResult};
use super::types::t_info;
use libc::c_int;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// One transport endpoint (t_open … t_close); closed on drop.
#[derive(Debug)]
pub struct Endpoint {
    /// INVARIANT: a descriptor opened by `clts::open` and recorded in the endpoint table,
    /// owned by this value alone until drop.
    fd: c_int,
    info: t_info,
}

impl Endpoint {
    /// t_open(path, O_RDWR): e.g. `Endpoint::open("/dev/streams/clone/udp")`.
    pub fn open(path: impl AsRef<Path>) -> XtiResult<Endpoint> {
        Endpoint::open_flags(path, 0)
    }

    /// t_open with extra flags (O_NONBLOCK, O_CLOEXEC).
    pub fn open_flags(path: impl AsRef<Path>, flags: c_int) -> XtiResult<Endpoint> {
        let p = std::ffi::CString::new(path.as_ref().as_os_str().as_bytes())
            .map_err(|_| XtiError::t(TBADNAME))?;
        let (fd, info) = clts::open(&p, libc::O_RDWR | flags)?;
        Ok(Endpoint { fd, info })
    }

    /// The provider's limits as t_open saw them.
    pub fn info(&self) -> &t_info {
        &self.info
    }

    /// t_getinfo: the limits now.
    pub fn getinfo(&self) -> XtiResult<t_info> {
        clts::getinfo(self.fd)
    }

    /// t_getstate.
    pub fn state(&self) -> XtiResult<c_int> {
        clts::getstate(self.fd)
    }

    /// t_bind: `addr` None lets the provider choose; returns the bound address.
    pub fn bind(&self, addr: Option<&[u8]>) -> XtiResult<Vec<u8>> {
        clts::bind(self.fd, addr, 0).map(|(a, _)| a)
    }

    /// t_unbind.
    pub fn unbind(&self) -> XtiResult<()> {
        clts::unbind(self.fd)
    }

    /// t_getprotaddr: (bound address, peer address).
    pub fn protaddr(&self) -> XtiResult<(Vec<u8>, Vec<u8>)> {
        clts::getprotaddr(self.fd)
    }

    /// t_optmgmt: `opt` built with [`super::OptBuilder`]; returns (options, result flags).
    pub fn optmgmt(&self, opt: &[u8], flags: i32) -> XtiResult<(Vec<u8>, i32)> {
        clts::optmgmt(self.fd, opt, flags)
    }

    /// t_sndudata of `data` to `addr`.
    pub fn send_unitdata(&self, addr: &[u8], data: &[u8]) -> XtiResult<()> {
        clts::sndudata(self.fd, addr, &[], data)
    }

    /// t_sndudata with options.
    pub fn send_unitdata_opt(&self, addr: &[u8], opt: &[u8], data: &[u8]) -> XtiResult<()> {
        clts::sndudata(self.fd, addr, opt, data)
    }

    /// t_rcvudata into `buf`: (source address, data bytes, T_MORE).
    pub fn recv_unitdata(&self, buf: &mut [u8]) -> XtiResult<(Vec<u8>, usize, bool)> {
        let mut addr = vec![0u8; self.addr_room()];
        let r: Recv = clts::rcvudata(self.fd, Some(&mut addr), None, buf)?;
        addr.truncate(r.addr_len);
        Ok((addr, r.data_len, r.more))
    }

    /// t_rcvudata with every part: the caller's address, option and data buffers.
    pub fn recv_unitdata_parts(
        &self,
        addr: Option<&mut [u8]>,
        opt: Option<&mut [u8]>,
        data: &mut [u8],
    ) -> XtiResult<Recv> {
        clts::rcvudata(self.fd, addr, opt, data)
    }

    /// t_rcvuderr: (destination address of the failed datagram, its error code).
    pub fn recv_uderr(&self) -> XtiResult<(Vec<u8>, i32)> {
        let mut addr = vec![0u8; self.addr_room()];
        let u: Uderr = clts::rcvuderr(self.fd, Some(&mut addr), None)?;
        addr.truncate(u.addr_len);
        Ok((addr, u.error))
    }

    /// t_look: the pending event (T_DATA, T_UDERR…) or 0.
    pub fn look(&self) -> XtiResult<c_int> {
        clts::look(self.fd)
    }

    /// t_sync.
    pub fn sync(&self) -> XtiResult<c_int> {
        clts::sync(self.fd)
    }

    fn addr_room(&self) -> usize {
        usize::try_from(self.info.addr).unwrap_or(256).max(1)
    }
}

impl AsRawFd for Endpoint {
    fn as_raw_fd(&self) -> RawFd {
        self.fd
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        // t_close; an error here (already closed) has nobody to report to.
        let _ = clts::close(self.fd);
    }
}
