//! The C functions of `<xti.h>`, exported unmangled (libxnet, libstreams). Each one checks
//! its pointers, turns netbufs into slices and calls [`super::clts`]; failures set the
//! calling thread's t_errno (and errno for TSYSERR) and return -1, as XNS 5 says. A null
//! pointer where a structure is required is TSYSERR with EFAULT, never a crash.

use super::alloc;
use super::clts::{self, Recv};
use super::consts::*;
use super::error::{self, set_t_errno, XtiError, XtiResult};
use super::state;
use super::types::*;
use libc::{c_char, c_int, c_uint, c_void};
use std::io::Write;

const EFAULT: XtiError = XtiError::sys(libc::EFAULT);

/// -1 with t_errno set, or the value.
fn ret(r: XtiResult<c_int>) -> c_int {
    match r {
        Ok(v) => v,
        Err(e) => e.set(),
    }
}

/// The `len` bytes a netbuf sends.
///
/// # Safety
/// `nb.buf` is null or valid for `nb.len` bytes for `'a`.
unsafe fn in_slice<'a>(nb: &netbuf) -> XtiResult<&'a [u8]> {
    if nb.len == 0 {
        return Ok(&[]);
    }
    if nb.buf.is_null() {
        return Err(EFAULT);
    }
    // SAFETY: non-null, valid for `len` bytes by the caller's contract.
    Ok(unsafe { core::slice::from_raw_parts(nb.buf.cast::<u8>(), nb.len as usize) })
}

/// The `maxlen` bytes a netbuf receives into (None when `maxlen` is 0: not wanted).
///
/// # Safety
/// `nb.buf` is null or valid for writes of `nb.maxlen` bytes for `'a`, not aliased.
unsafe fn out_slice<'a>(nb: &netbuf) -> XtiResult<Option<&'a mut [u8]>> {
    if nb.maxlen == 0 {
        return Ok(None);
    }
    if nb.buf.is_null() {
        return Err(EFAULT);
    }
    // SAFETY: non-null, valid for `maxlen` bytes and unaliased by the caller's contract.
    Ok(Some(unsafe {
        core::slice::from_raw_parts_mut(nb.buf.cast::<u8>(), nb.maxlen as usize)
    }))
}

/// Copy `src` out through a netbuf: TBUFOVFLW when `maxlen` is greater than 0 but too small;
/// `maxlen` 0 means "not wanted" (XNS 5), `len` is then 0.
///
/// # Safety
/// As [`out_slice`].
unsafe fn put_out(nb: &mut netbuf, src: &[u8]) -> XtiResult<()> {
    // SAFETY: the caller's contract.
    match unsafe { out_slice(nb)? } {
        None => nb.len = 0,
        Some(d) if d.len() < src.len() => return Err(XtiError::t(TBUFOVFLW)),
        Some(d) => {
            d[..src.len()].copy_from_slice(src);
            nb.len = src.len() as c_uint;
        }
    }
    Ok(())
}

/// `_t_errno()`: the calling thread's t_errno (`#define t_errno (*(_t_errno()))`).
#[no_mangle]
pub extern "C" fn _t_errno() -> *mut c_int {
    error::t_errno_ptr()
}

/// t_open(3): open transport provider `name` with `oflag`; fills `*info` if not null.
///
/// # Safety
/// `name` is null (TBADNAME) or NUL-terminated; `info` is null or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn t_open(name: *const c_char, oflag: c_int, info: *mut t_info) -> c_int {
    if name.is_null() {
        return XtiError::t(TBADNAME).set();
    }
    // SAFETY: NUL-terminated by the contract.
    let path = unsafe { core::ffi::CStr::from_ptr(name) };
    ret(clts::open(path, oflag).map(|(fd, i)| {
        // SAFETY: null or valid for writes (contract).
        if let Some(out) = unsafe { info.as_mut() } {
            *out = i;
        }
        fd
    }))
}

/// t_close(3).
#[no_mangle]
pub extern "C" fn t_close(fd: c_int) -> c_int {
    ret(clts::close(fd).map(|()| 0))
}

/// t_bind(3). `req` null: the provider chooses the address; `ret` null: not returned.
///
/// # Safety
/// `req`/`ret` are null or valid, with netbufs valid for their `len`/`maxlen`.
#[no_mangle]
pub unsafe extern "C" fn t_bind(fd: c_int, req: *const t_bind, ret_: *mut t_bind) -> c_int {
    let r = (|| {
        // SAFETY: null or valid (contract).
        let (addr, qlen) = match unsafe { req.as_ref() } {
            None => (None, 0),
            // SAFETY: the netbuf is valid for `len` bytes (contract).
            Some(b) => (Some(unsafe { in_slice(&b.addr)? }), b.qlen),
        };
        let (bound, conind) = clts::bind(fd, addr, qlen)?;
        // SAFETY: null or valid (contract).
        if let Some(out) = unsafe { ret_.as_mut() } {
            out.qlen = conind;
            // SAFETY: the netbuf is valid for `maxlen` bytes (contract).
            unsafe { put_out(&mut out.addr, &bound)? };
        }
        Ok(0)
    })();
    ret(r)
}

/// t_unbind(3).
#[no_mangle]
pub extern "C" fn t_unbind(fd: c_int) -> c_int {
    ret(clts::unbind(fd).map(|()| 0))
}

/// t_getinfo(3).
///
/// # Safety
/// `info` is null (EFAULT) or valid for writes.
#[no_mangle]
pub unsafe extern "C" fn t_getinfo(fd: c_int, info: *mut t_info) -> c_int {
    // SAFETY: null or valid (contract).
    let Some(out) = (unsafe { info.as_mut() }) else {
        return ret(state::view(fd).and(Err(EFAULT)));
    };
    ret(clts::getinfo(fd).map(|i| {
        *out = i;
        0
    }))
}

/// t_getstate(3).
#[no_mangle]
pub extern "C" fn t_getstate(fd: c_int) -> c_int {
    ret(clts::getstate(fd))
}

/// t_sync(3): (re)learn `fd` from its provider; returns the state.
#[no_mangle]
pub extern "C" fn t_sync(fd: c_int) -> c_int {
    ret(clts::sync(fd))
}

/// t_getprotaddr(3).
///
/// # Safety
/// `bound`/`peer` are null or valid, netbufs valid for `maxlen`.
#[no_mangle]
pub unsafe extern "C" fn t_getprotaddr(fd: c_int, bound: *mut t_bind, peer: *mut t_bind) -> c_int {
    let r = (|| {
        let (l, p) = clts::getprotaddr(fd)?;
        // SAFETY: null or valid (contract), netbufs valid for `maxlen`.
        unsafe {
            if let Some(b) = bound.as_mut() {
                put_out(&mut b.addr, &l)?;
            }
            if let Some(b) = peer.as_mut() {
                put_out(&mut b.addr, &p)?;
            }
        }
        Ok(0)
    })();
    ret(r)
}

/// t_optmgmt(3).
///
/// # Safety
/// `req`/`ret` are null (EFAULT) or valid, netbufs valid for `len`/`maxlen`.
#[no_mangle]
pub unsafe extern "C" fn t_optmgmt(
    fd: c_int,
    req: *const t_optmgmt,
    ret_: *mut t_optmgmt,
) -> c_int {
    let r = (|| {
        state::view(fd)?;
        // SAFETY: null or valid (contract).
        let (Some(req), Some(out)) = (unsafe { (req.as_ref(), ret_.as_mut()) }) else {
            return Err(EFAULT);
        };
        // SAFETY: valid for `len` bytes (contract).
        let opt = unsafe { in_slice(&req.opt)? };
        let (o, flags) = clts::optmgmt(fd, opt, req.flags)?;
        out.flags = flags;
        // SAFETY: valid for `maxlen` bytes (contract).
        unsafe { put_out(&mut out.opt, &o)? };
        Ok(0)
    })();
    ret(r)
}

/// t_look(3).
#[no_mangle]
pub extern "C" fn t_look(fd: c_int) -> c_int {
    ret(clts::look(fd))
}

/// t_sndudata(3).
///
/// # Safety
/// `ud` is null (EFAULT) or valid, netbufs valid for `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn t_sndudata(fd: c_int, ud: *const t_unitdata) -> c_int {
    let r = (|| {
        let ep = state::view(fd)?;
        // SAFETY: null or valid (contract).
        let ud = unsafe { ud.as_ref() }.ok_or(EFAULT)?;
        // SAFETY: valid for `len` bytes (contract).
        let (a, o, d) = unsafe {
            (
                in_slice(&ud.addr)?,
                in_slice(&ud.opt)?,
                in_slice(&ud.udata)?,
            )
        };
        clts::sndudata_viewed(fd, ep, a, o, d).map(|()| 0)
    })();
    ret(r)
}

/// t_rcvudata(3): T_MORE in `*flags` when the datagram continues.
///
/// # Safety
/// `ud` and `flags` are null (EFAULT) or valid, netbufs valid for `maxlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn t_rcvudata(fd: c_int, ud: *mut t_unitdata, flags: *mut c_int) -> c_int {
    let r = (|| {
        let ep = state::view(fd)?;
        // SAFETY: null or valid (contract).
        let (Some(ud), Some(flags)) = (unsafe { (ud.as_mut(), flags.as_mut()) }) else {
            return Err(EFAULT);
        };
        // SAFETY: each netbuf is valid for `maxlen` bytes; the three do not overlap.
        let (a, o, d) = unsafe {
            (
                out_slice(&ud.addr)?,
                out_slice(&ud.opt)?,
                out_slice(&ud.udata)?,
            )
        };
        let mut empty = [0u8; 0];
        let got: Recv = clts::rcvudata_viewed(fd, ep, a, o, d.unwrap_or(&mut empty))?;
        ud.addr.len = got.addr_len as c_uint;
        ud.opt.len = got.opt_len as c_uint;
        ud.udata.len = got.data_len as c_uint;
        *flags = if got.more { T_MORE } else { 0 };
        Ok(0)
    })();
    ret(r)
}

/// t_rcvuderr(3): `uderr` null clears the error without returning it.
///
/// # Safety
/// `uderr` is null or valid, netbufs valid for `maxlen` bytes.
#[no_mangle]
pub unsafe extern "C" fn t_rcvuderr(fd: c_int, uderr: *mut t_uderr) -> c_int {
    let r = (|| {
        // SAFETY: null or valid (contract).
        match unsafe { uderr.as_mut() } {
            None => clts::rcvuderr(fd, None, None).map(|_| 0),
            Some(u) => {
                // SAFETY: valid for `maxlen` bytes, not overlapping.
                let (a, o) = unsafe { (out_slice(&u.addr)?, out_slice(&u.opt)?) };
                let got = clts::rcvuderr(fd, a, o)?;
                u.addr.len = got.addr_len as c_uint;
                u.opt.len = got.opt_len as c_uint;
                u.error = got.error;
                Ok(0)
            }
        }
    })();
    ret(r)
}

/// Gather `iov` into one buffer (t_sndvudata).
///
/// # Safety
/// `iov` is valid for `n` entries, each valid for `iov_len` bytes.
unsafe fn gather(iov: *const t_iovec, n: c_uint) -> XtiResult<Vec<u8>> {
    if n == 0 || n > T_IOV_MAX as c_uint {
        return Err(XtiError::t(TBADDATA));
    }
    if iov.is_null() {
        return Err(EFAULT);
    }
    // SAFETY: valid for `n` entries (contract).
    let v = unsafe { core::slice::from_raw_parts(iov, n as usize) };
    let mut out = Vec::new();
    for e in v {
        if e.iov_len == 0 {
            continue;
        }
        if e.iov_base.is_null() {
            return Err(EFAULT);
        }
        // SAFETY: valid for `iov_len` bytes (contract).
        out.extend_from_slice(unsafe {
            core::slice::from_raw_parts(e.iov_base.cast::<u8>(), e.iov_len)
        });
    }
    Ok(out)
}

/// t_sndvudata(3): t_sndudata with the data gathered from `iov` (at most T_IOV_MAX).
///
/// # Safety
/// `ud` null (EFAULT) or valid; `iov` valid for `iovcount` entries.
#[no_mangle]
pub unsafe extern "C" fn t_sndvudata(
    fd: c_int,
    ud: *mut t_unitdata,
    iov: *mut t_iovec,
    iovcount: c_uint,
) -> c_int {
    let r = (|| {
        let ep = state::view(fd)?;
        // SAFETY: null or valid (contract).
        let ud = unsafe { ud.as_ref() }.ok_or(EFAULT)?;
        // SAFETY: the contract.
        let data = unsafe { gather(iov, iovcount)? };
        // SAFETY: valid for `len` bytes (contract).
        let (a, o) = unsafe { (in_slice(&ud.addr)?, in_slice(&ud.opt)?) };
        clts::sndudata_viewed(fd, ep, a, o, &data).map(|()| 0)
    })();
    ret(r)
}

/// t_rcvvudata(3): t_rcvudata scattering the data over `iov`; returns the data bytes.
///
/// # Safety
/// `ud`, `flags` null (EFAULT) or valid; `iov` valid for `iovcount` writable entries.
#[no_mangle]
pub unsafe extern "C" fn t_rcvvudata(
    fd: c_int,
    ud: *mut t_unitdata,
    iov: *mut t_iovec,
    iovcount: c_uint,
    flags: *mut c_int,
) -> c_int {
    let r = (|| {
        let ep = state::view(fd)?;
        if iovcount == 0 || iovcount > T_IOV_MAX as c_uint {
            return Err(XtiError::t(TBADDATA));
        }
        // SAFETY: null or valid (contract).
        let (Some(ud), Some(flags)) = (unsafe { (ud.as_mut(), flags.as_mut()) }) else {
            return Err(EFAULT);
        };
        if iov.is_null() {
            return Err(EFAULT);
        }
        // SAFETY: valid for `iovcount` entries (contract).
        let v = unsafe { core::slice::from_raw_parts(iov, iovcount as usize) };
        let total: usize = v.iter().map(|e| e.iov_len).sum();
        let mut buf = vec![0u8; total];
        // SAFETY: valid for `maxlen` bytes, not overlapping.
        let (a, o) = unsafe { (out_slice(&ud.addr)?, out_slice(&ud.opt)?) };
        let got = clts::rcvudata_viewed(fd, ep, a, o, &mut buf)?;
        let mut left = &buf[..got.data_len];
        for e in v {
            if left.is_empty() {
                break;
            }
            let n = e.iov_len.min(left.len());
            if e.iov_base.is_null() {
                return Err(EFAULT);
            }
            // SAFETY: `iov_base` is valid for `iov_len` >= n bytes (contract).
            unsafe { core::ptr::copy_nonoverlapping(left.as_ptr(), e.iov_base.cast::<u8>(), n) };
            left = &left[n..];
        }
        ud.addr.len = got.addr_len as c_uint;
        ud.opt.len = got.opt_len as c_uint;
        ud.udata.len = 0;
        *flags = if got.more { T_MORE } else { 0 };
        Ok(got.data_len as c_int)
    })();
    ret(r)
}

/// t_alloc(3).
#[no_mangle]
pub extern "C" fn t_alloc(fd: c_int, struct_type: c_int, fields: c_int) -> *mut c_char {
    match state::view(fd).and_then(|ep| alloc::alloc(&ep.info, struct_type, fields)) {
        Ok(p) => p.cast(),
        Err(e) => {
            e.set();
            core::ptr::null_mut()
        }
    }
}

/// t_free(3).
///
/// # Safety
/// `ptr` is null or a structure of `struct_type` from t_alloc (buffers from malloc or null).
#[no_mangle]
pub unsafe extern "C" fn t_free(ptr: *mut c_void, struct_type: c_int) -> c_int {
    ret(alloc::free(ptr, struct_type).map(|()| 0))
}

/// t_strerror(3): a static message for any value.
#[no_mangle]
pub extern "C" fn t_strerror(errnum: c_int) -> *const c_char {
    error::message(errnum).as_ptr()
}

/// t_error(3): "`msg`: message" on stderr, with errno's text for TSYSERR.
///
/// # Safety
/// `msg` is null or NUL-terminated.
#[no_mangle]
pub unsafe extern "C" fn t_error(msg: *const c_char) -> c_int {
    let saved = crate::ffi::errno();
    let te = error::t_errno();
    let mut line = Vec::new();
    // SAFETY: null or NUL-terminated (contract).
    let m = unsafe { (!msg.is_null()).then(|| core::ffi::CStr::from_ptr(msg)) };
    if let Some(m) = m {
        if !m.is_empty() {
            line.extend_from_slice(m.to_bytes());
            line.extend_from_slice(b": ");
        }
    }
    line.extend_from_slice(error::message(te).to_bytes());
    if te == TSYSERR {
        line.extend_from_slice(b": ");
        line.extend_from_slice(
            std::io::Error::from_raw_os_error(saved)
                .to_string()
                .as_bytes(),
        );
    }
    line.push(b'\n');
    let _ = std::io::stderr().write_all(&line);
    crate::ffi::set_errno(saved);
    0
}

/// t_sysconf(3): _SC_T_IOV_MAX is T_IOV_MAX; any other name is TBADFLAG.
#[no_mangle]
pub extern "C" fn t_sysconf(name: c_int) -> c_int {
    if name == libc::_SC_T_IOV_MAX {
        return T_IOV_MAX;
    }
    set_t_errno(TBADFLAG);
    -1
}

macro_rules! not_supported {
    ($($(#[$m:meta])* fn $name:ident($fd:ident: c_int $(, $a:ident: $t:ty)*);)*) => {$(
        $(#[$m])*
        /// Connection-oriented (or multipoint): TNOTSUPPORT on T_CLTS endpoints, TBADF on
        /// a descriptor that is not one.
        #[no_mangle]
        pub extern "C" fn $name($fd: c_int $(, $a: $t)*) -> c_int {
            $(let _ = $a;)*
            clts::not_supported($fd).set()
        }
    )*};
}

not_supported! {
    /// t_accept(3).
    fn t_accept(fd: c_int, resfd: c_int, call: *const t_call);
    /// t_connect(3).
    fn t_connect(fd: c_int, sndcall: *const t_call, rcvcall: *mut t_call);
    /// t_listen(3).
    fn t_listen(fd: c_int, call: *mut t_call);
    /// t_rcvconnect(3).
    fn t_rcvconnect(fd: c_int, call: *mut t_call);
    /// t_snd(3).
    fn t_snd(fd: c_int, buf: *mut c_char, nbytes: c_uint, flags: c_int);
    /// t_rcv(3).
    fn t_rcv(fd: c_int, buf: *mut c_char, nbytes: c_uint, flags: *mut c_int);
    /// t_sndv(3).
    fn t_sndv(fd: c_int, iov: *const t_iovec, iovcount: c_uint, flags: c_int);
    /// t_rcvv(3).
    fn t_rcvv(fd: c_int, iov: *mut t_iovec, iovcount: c_uint, flags: *mut c_int);
    /// t_snddis(3).
    fn t_snddis(fd: c_int, call: *const t_call);
    /// t_rcvdis(3).
    fn t_rcvdis(fd: c_int, discon: *mut t_discon);
    /// t_sndrel(3).
    fn t_sndrel(fd: c_int);
    /// t_rcvrel(3).
    fn t_rcvrel(fd: c_int);
    /// t_sndreldata(3).
    fn t_sndreldata(fd: c_int, discon: *mut t_discon);
    /// t_rcvreldata(3).
    fn t_rcvreldata(fd: c_int, discon: *mut t_discon);
    /// t_addleaf(3).
    fn t_addleaf(fd: c_int, leafid: c_int, addr: *mut netbuf);
    /// t_removeleaf(3).
    fn t_removeleaf(fd: c_int, leafid: c_int, reason: c_int);
    /// t_rcvleafchange(3).
    fn t_rcvleafchange(fd: c_int, change: *mut t_leaf_status);
}
