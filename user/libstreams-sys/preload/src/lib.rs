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
//!
//! **Both ends are read-write.** A STREAMS pipe is full duplex (SVR4), and the interposer keeps
//! it so: `fd[0]` and `fd[1]` are both open O_RDWR, data written on either is read on the
//! other. A program that relies on `write(fd[0])` failing with EBADF (or on `fcntl(F_GETFL)`
//! saying O_RDONLY/O_WRONLY) sees the difference; none of the programs we run does.
//!
//! **Pipe sizes.** `fcntl(fd, F_GETPIPE_SZ)` and `fcntl(fd, F_SETPIPE_SZ, n)` on a STREAMS
//! pipe end (glibc's `fcntl` would fail with EBADF: the kernel's answer is for Linux pipes
//! only) become the high water mark of that end's Stream head read queue: `I_GET_HIWAT`, and
//! `I_SET_HIWAT n` (with the low mark lowered first if `n` is below it), returning `n`.
//! Each direction of a STREAMS pipe has its own queue: the mark of the end that *reads* is what
//! bounds how much the other end can write ahead, so size `fd[0]` to size what `fd[1]` may
//! write. Every other `fcntl` (and `fcntl64`) goes to glibc unchanged.

use libc::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};

static REAL_PIPE: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_PIPE2: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_FCNTL: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());
static REAL_FCNTL64: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

// SAFETY (contract of the two types): glibc's pipe/pipe2, called with a pointer to 2 ints.
type PipeFn = unsafe extern "C" fn(*mut c_int) -> c_int;
type Pipe2Fn = unsafe extern "C" fn(*mut c_int, c_int) -> c_int;
// SAFETY (contract): glibc's fcntl/fcntl64, called with the caller's three arguments.
type FcntlFn = unsafe extern "C" fn(c_int, c_int, ...) -> c_int;

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

fn set_errno(e: c_int) -> c_int {
    // SAFETY: errno slot of this thread.
    unsafe { *libc::__errno_location() = e };
    -1
}

/// F_GETPIPE_SZ / F_SETPIPE_SZ on a STREAMS pipe end (see the crate docs); `None` for any
/// other descriptor or command.
fn pipe_size(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> Option<c_int> {
    if cmd != libc::F_GETPIPE_SZ && cmd != libc::F_SETPIPE_SZ {
        return None;
    }
    if streams::ffi::isastream(fd) != 1 {
        return None;
    }
    let ioctl = |req: c_int, arg: usize| {
        // SAFETY: a STREAMS ioctl whose argument is an int by value or a pointer to an int
        // owned by the caller below.
        unsafe { libc::ioctl(fd, req as libc::c_ulong, arg) }
    };
    if cmd == libc::F_GETPIPE_SZ {
        let mut v: c_int = 0;
        let r = ioctl(streams::I_GET_HIWAT, &mut v as *mut c_int as usize);
        return Some(if r < 0 { -1 } else { v });
    }
    // The argument is an int: only the low 32 bits of its register are the caller's (as
    // glibc's va_arg(ap, int) reads it).
    let n = arg as u32 as c_int;
    if n < 0 {
        return Some(set_errno(libc::EINVAL));
    }
    if ioctl(streams::I_SET_HIWAT, n as usize) == 0 {
        return Some(n);
    }
    // Below the low mark: lower it to half the new high mark, then try again.
    // SAFETY: errno slot of this thread.
    if unsafe { *libc::__errno_location() } != libc::EINVAL {
        return Some(-1);
    }
    if ioctl(streams::I_SET_LOWAT, (n / 2) as usize) < 0
        || ioctl(streams::I_SET_HIWAT, n as usize) < 0
    {
        return Some(-1);
    }
    Some(n)
}

/// Forward to glibc's `name` (found once, cached in `slot`).
fn real_fcntl(
    slot: &AtomicPtr<c_void>,
    name: &core::ffi::CStr,
    fd: c_int,
    cmd: c_int,
    arg: libc::c_ulong,
) -> c_int {
    let f = next_symbol(slot, name);
    if f.is_null() {
        return set_errno(libc::ENOSYS);
    }
    // SAFETY: `f` is glibc's fcntl/fcntl64, a variadic function taking (int, int, ...); every
    // fcntl argument is an int, a long or a pointer, all passed as one integer register, so
    // forwarding the third as an unsigned long passes what the caller passed.
    unsafe { std::mem::transmute::<*mut c_void, FcntlFn>(f)(fd, cmd, arg) }
}

/// fcntl(2), interposed for F_GETPIPE_SZ/F_SETPIPE_SZ on STREAMS pipes.
///
/// Declared with a fixed third argument: on the C ABIs this library is built for (x86-64,
/// AArch64 Linux) a variadic caller passes `fcntl`'s integer or pointer argument in the same
/// register as a fixed one, and an absent argument is a register we never look at unless
/// the command has one.
///
/// # Safety
/// As fcntl(2): `arg` is what `cmd` expects.
#[no_mangle]
pub unsafe extern "C" fn fcntl(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    match pipe_size(fd, cmd, arg) {
        Some(r) => r,
        None => real_fcntl(&REAL_FCNTL, c"fcntl", fd, cmd, arg),
    }
}

/// fcntl64 (what glibc's headers call with `_FILE_OFFSET_BITS=64`), as [`fcntl`].
///
/// # Safety
/// As fcntl(2).
#[no_mangle]
pub unsafe extern "C" fn fcntl64(fd: c_int, cmd: c_int, arg: libc::c_ulong) -> c_int {
    match pipe_size(fd, cmd, arg) {
        Some(r) => r,
        None => real_fcntl(&REAL_FCNTL64, c"fcntl64", fd, cmd, arg),
    }
}
