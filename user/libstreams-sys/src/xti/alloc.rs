//! t_alloc/t_free: XTI structures and their buffers from the C heap (calloc/free), sized by
//! the endpoint's t_info, so C programs may also free them themselves.
//!
//! Field sizes: T_ADDR from `addr`, T_OPT from `options`, T_UDATA from `tsdu` (T_UNITDATA),
//! `discon` (T_DIS) or the larger of `connect` and `discon` (T_CALL). A size of T_INVALID
//! (-2, the provider has no such thing) gets no buffer (maxlen 0); T_INFINITE (-1) cannot be
//! sized, which is TSYSERR/EINVAL as in XNS 5.

use super::consts::*;
use super::error::{XtiError, XtiResult};
use super::types::*;
use core::mem::size_of;
use libc::{c_int, c_void};

/// The byte size of structure type `ty` (TNOSTRUCTYPE if unknown).
pub fn struct_size(ty: c_int) -> XtiResult<usize> {
    Ok(match ty {
        T_BIND => size_of::<t_bind>(),
        T_OPTMGMT => size_of::<t_optmgmt>(),
        T_CALL => size_of::<t_call>(),
        T_DIS => size_of::<t_discon>(),
        T_UNITDATA => size_of::<t_unitdata>(),
        T_UDERROR => size_of::<t_uderr>(),
        T_INFO => size_of::<t_info>(),
        _ => return Err(XtiError::t(TNOSTRUCTYPE)),
    })
}

/// Which netbufs of type `ty` are (address, options, user data), as byte offsets.
fn netbufs(ty: c_int) -> [Option<usize>; 3] {
    use core::mem::offset_of;
    match ty {
        T_BIND => [Some(offset_of!(t_bind, addr)), None, None],
        T_OPTMGMT => [None, Some(offset_of!(t_optmgmt, opt)), None],
        T_CALL => [
            Some(offset_of!(t_call, addr)),
            Some(offset_of!(t_call, opt)),
            Some(offset_of!(t_call, udata)),
        ],
        T_DIS => [None, None, Some(offset_of!(t_discon, udata))],
        T_UNITDATA => [
            Some(offset_of!(t_unitdata, addr)),
            Some(offset_of!(t_unitdata, opt)),
            Some(offset_of!(t_unitdata, udata)),
        ],
        T_UDERROR => [
            Some(offset_of!(t_uderr, addr)),
            Some(offset_of!(t_uderr, opt)),
            None,
        ],
        _ => [None, None, None],
    }
}

/// The buffer sizes t_alloc gives (address, options, user data) for `ty` and `fields` on a
/// provider with `info`; None: field not allocated.
pub fn buffer_sizes(info: &t_info, ty: c_int, fields: c_int) -> XtiResult<[Option<usize>; 3]> {
    struct_size(ty)?;
    let udata = match ty {
        T_UNITDATA => info.tsdu,
        T_DIS => info.discon,
        T_CALL => info.connect.max(info.discon),
        _ => T_INVALID,
    };
    let sizes = [info.addr, info.options, udata];
    let bits = [T_ADDR, T_OPT, T_UDATA];
    let present = netbufs(ty);
    let mut out = [None; 3];
    for i in 0..3 {
        if present[i].is_none() || fields & bits[i] == 0 {
            continue;
        }
        out[i] = match sizes[i] {
            T_INFINITE => return Err(XtiError::sys(libc::EINVAL)),
            n if n < 0 => None,
            n => Some(n as usize),
        };
    }
    Ok(out)
}

/// t_alloc for a provider with `info`: a zeroed structure with the requested buffers.
pub fn alloc(info: &t_info, ty: c_int, fields: c_int) -> XtiResult<*mut c_void> {
    let size = struct_size(ty)?;
    let sizes = buffer_sizes(info, ty, fields)?;
    // SAFETY: calloc has no preconditions; the result is checked for null.
    let p = unsafe { libc::calloc(1, size) };
    if p.is_null() {
        return Err(XtiError::sys(libc::ENOMEM));
    }
    for (off, n) in netbufs(ty).into_iter().zip(sizes) {
        let (Some(off), Some(n)) = (off, n) else {
            continue;
        };
        if n == 0 {
            continue;
        }
        let Ok(maxlen) = u32::try_from(n) else {
            free_raw(p, ty);
            return Err(XtiError::sys(libc::EINVAL));
        };
        // SAFETY: calloc has no preconditions; the result is checked for null.
        let b = unsafe { libc::calloc(1, n) };
        if b.is_null() {
            free_raw(p, ty);
            return Err(XtiError::sys(libc::ENOMEM));
        }
        // SAFETY: `p` is a zeroed allocation of `size` bytes holding structure `ty`, whose
        // netbuf at `off` is in bounds (offset_of! of that structure) and suitably aligned
        // (calloc aligns for any type).
        unsafe {
            let nb = p.cast::<u8>().add(off).cast::<netbuf>();
            (*nb).maxlen = maxlen;
            (*nb).buf = b.cast();
        }
    }
    Ok(p)
}

/// Free structure `p` of type `ty` and every non-null buffer it names.
fn free_raw(p: *mut c_void, ty: c_int) {
    for off in netbufs(ty).into_iter().flatten() {
        // SAFETY: callers pass a structure of type `ty` from t_alloc (or one laid out the
        // same by the application), so the netbuf at `off` is in bounds; its buffer is null
        // or from malloc.
        unsafe {
            let nb = p.cast::<u8>().add(off).cast::<netbuf>();
            libc::free((*nb).buf.cast());
        }
    }
    // SAFETY: `p` came from calloc/malloc (t_free's contract).
    unsafe { libc::free(p) };
}

/// t_free: TNOSTRUCTYPE for an unknown type; a null pointer is accepted and ignored.
pub fn free(p: *mut c_void, ty: c_int) -> XtiResult<()> {
    struct_size(ty)?;
    if !p.is_null() {
        free_raw(p, ty);
    }
    Ok(())
}
