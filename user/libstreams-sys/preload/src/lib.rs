//! `libstreams_pipe.so`: an LD_PRELOAD interposer for `pipe(2)` and `pipe2(2)` (the "future
//! work" of the LfS pipe papers): `LD_PRELOAD=libstreams_pipe.so prog` gives `prog` STREAMS
//! pipes without recompiling it.
//!
//! A pipe becomes a STREAMS pipe (libstreams' `s_pipe2`) when `/dev/streams/clone/pipe`
//! exists; when the device is absent (ENOENT, or ENODEV/ENXIO with the modules unloaded),
//! when `pipe2` gets flags other than O_CLOEXEC/O_NONBLOCK (O_DIRECT packet mode), or when
//! `STREAMS_PIPE=0` is in the environment, the call goes to the next `pipe`/`pipe2` (glibc's)
//! found with `dlsym(RTLD_NEXT)`. Other STREAMS failures are returned as they are (no silent
//! fallback that would make a measurement lie).

use libc::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

static REAL_PIPE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_PIPE2: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

// SAFETY (contract of the two types): glibc's pipe/pipe2, called with a pointer to 2 ints.
type PipeFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type Pipe2Fn = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;

/// The next definition of `name` after this library (glibc's), cached in `slot`.
fn next_symbol(slot: &AtomicPtr<c_void>, name: &core::ffi::CStr) -> *mut c_void {
    let p = slot.load(Ordering::Acquire);
    if !p.is_null() {
        return p;
    }
    // SAFETY: `name` is NUL-terminated; RTLD_NEXT lookups have no other preconditions.
    let p = unsafe { libc::dlsym(libc::RTLD_NEXT, name.as_ptr()) };
    slot.store(p, Ordering::Release);
    p
}

fn disabled() -> bool {
    // SAFETY: the name is NUL-terminated; getenv's result is only compared, not kept.
    let v = unsafe { libc::getenv(c"STREAMS_PIPE".as_ptr()) };
    if v.is_null() {
        return false;
    }
    // SAFETY: a non-null getenv result is a NUL-terminated string.
    let first = unsafe { *v };
    first == b'0' as c_char
}

/// Try a STREAMS pipe; `None` means "use the real pipe" (device absent or not wanted).
///
/// # Safety
/// `fds` points to two writable ints.
unsafe fn try_streams(fds: *mut c_int, flags: c_int) -> Option<c_int> {
    if disabled() || flags & !(libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
        return None;
    }
    // SAFETY: `fds` points to two writable ints (our caller's contract).
    if unsafe { streams::ffi::s_pipe2(fds, flags) } == 0 {
        return Some(0);
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENXIO) => None,
        _ => Some(-1),
    }
}

/// pipe(2), interposed.
///
/// # Safety
/// `fds` points to two writable ints (pipe(2)'s contract).
#[no_mangle]
pub unsafe extern "C" fn pipe(fds: *mut c_int) -> c_int {
    if fds.is_null() {
        // SAFETY: errno slot of this thread.
        unsafe { *libc::__errno_location() = libc::EFAULT };
        return -1;
    }
    // SAFETY: contract above.
    if let Some(r) = unsafe { try_streams(fds, 0) } {
        return r;
    }
    let f = next_symbol(&REAL_PIPE, c"pipe");
    if f.is_null() {
        // SAFETY: errno slot of this thread.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }
    // SAFETY: `f` is glibc's pipe, whose type is PipeFn; `fds` is valid.
    unsafe { std::mem::transmute::<*mut c_void, PipeFn>(f)(fds) }
}

/// pipe2(2), interposed.
///
/// # Safety
/// `fds` points to two writable ints (pipe2(2)'s contract).
#[no_mangle]
pub unsafe extern "C" fn pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    if fds.is_null() {
        // SAFETY: errno slot of this thread.
        unsafe { *libc::__errno_location() = libc::EFAULT };
        return -1;
    }
    // SAFETY: contract above.
    if let Some(r) = unsafe { try_streams(fds, flags) } {
        return r;
    }
    let f = next_symbol(&REAL_PIPE2, c"pipe2");
    if f.is_null() {
        // SAFETY: errno slot of this thread.
        unsafe { *libc::__errno_location() = libc::ENOSYS };
        return -1;
    }
    // SAFETY: `f` is glibc's pipe2, whose type is Pipe2Fn; `fds` is valid.
    unsafe { std::mem::transmute::<*mut c_void, Pipe2Fn>(f)(fds, flags) }
}
