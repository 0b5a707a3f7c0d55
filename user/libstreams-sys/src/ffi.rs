//! The C functions of libstreams (`putmsg`, `getmsg`, `putpmsg`, `getpmsg`, `isastream`,
//! `fattach`, `fdetach`, `s_pipe`, `s_pipe2`), exported unmangled from `libstreams.so` and
//! `libstreams.a`.
//!
//! Linux has no putmsg/getmsg system calls, so they go to the Stream head as the LfS ioctls
//! I_PUTPMSG/I_GETPMSG with a [`strpmsg`]. A descriptor that is not a Stream answers those
//! ioctls with ENOTTY; SVR4 says ENOSTR, so that one errno is translated. All functions
//! return -1 with errno set on failure, like the system calls they stand for.

use crate::consts::*;
use crate::types::{strbuf, strpmsg};
use libc::{c_char, c_int, c_ulong, c_void};

/// The clone device of STREAMS pipes, NUL-terminated for open(2).
const PIPE_DEVICE_C: &core::ffi::CStr = c"/dev/streams/clone/pipe";

pub(crate) fn errno() -> c_int {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

pub(crate) fn set_errno(e: c_int) {
    // SAFETY: __errno_location returns the calling thread's errno slot, always valid.
    unsafe { *libc::__errno_location() = e }
}

fn fail(e: c_int) -> c_int {
    set_errno(e);
    -1
}

/// ioctl(2) whose argument is a pointer to a `T` the command reads and writes; ENOTTY (not a
/// Stream) becomes ENOSTR.
///
/// # Safety
/// `arg` must point to a live `T` that the command may read and write, and any buffers it
/// names must be valid for the command.
unsafe fn str_ioctl_ptr<T>(fd: c_int, cmd: c_int, arg: *mut T) -> c_int {
    // SAFETY: the caller guarantees `arg` (and what it names) is valid for `cmd`.
    let r = unsafe { libc::ioctl(fd, cmd as c_ulong, arg as *mut c_void) };
    if r < 0 && errno() == libc::ENOTTY {
        set_errno(libc::ENOSTR);
    }
    r
}

/// ioctl(2) whose argument is an integer passed by value (I_CANPUT, I_PIPE, I_SRDOPT…).
pub(crate) fn ioctl_int(fd: c_int, cmd: c_int, arg: c_int) -> c_int {
    // SAFETY: by-value commands take no memory from us; the kernel reads only the integer.
    unsafe { libc::ioctl(fd, cmd as c_ulong, arg as c_ulong) }
}

/// putpmsg(2): send a message with control part `ctlptr` and data part `dataptr` (either may be
/// null or have `len` -1 for "no part") in band `band`; `flags` is MSG_BAND (or 0) or
/// MSG_HIPRI (band 0, control part required).
///
/// # Safety
/// `ctlptr`/`dataptr` are null or point to valid `strbuf`s whose `buf` holds `len` bytes.
#[no_mangle]
pub unsafe extern "C" fn putpmsg(
    fd: c_int,
    ctlptr: *const strbuf,
    dataptr: *const strbuf,
    band: c_int,
    flags: c_int,
) -> c_int {
    // SAFETY: the caller passes null or valid pointers (putpmsg's contract).
    let (ctl, data) = unsafe { (ctlptr.as_ref().copied(), dataptr.as_ref().copied()) };
    let mut sp = strpmsg {
        ctlbuf: ctl.unwrap_or(strbuf::NONE),
        databuf: data.unwrap_or(strbuf::NONE),
        band,
        flags,
    };
    // SAFETY: `sp` lives across the call; the buffers it names are the caller's, valid for
    // `len` bytes by the contract above.
    if unsafe { str_ioctl_ptr(fd, I_PUTPMSG, &mut sp) } < 0 {
        return -1;
    }
    0
}

/// putmsg(2): putpmsg in band 0; `flags` is 0 or RS_HIPRI.
///
/// # Safety
/// As [`putpmsg`].
#[no_mangle]
pub unsafe extern "C" fn putmsg(
    fd: c_int,
    ctlptr: *const strbuf,
    dataptr: *const strbuf,
    flags: c_int,
) -> c_int {
    let pflags = match flags {
        0 => 0,
        RS_HIPRI => MSG_HIPRI,
        _ => return fail(libc::EINVAL),
    };
    // SAFETY: same contract as ours.
    unsafe { putpmsg(fd, ctlptr, dataptr, 0, pflags) }
}

/// getpmsg(2): receive a message; `*flagsp` is MSG_ANY, MSG_BAND (with `*bandp` the lowest
/// band wanted) or MSG_HIPRI; on return `*flagsp`/`*bandp` describe the message and the parts'
/// `len` say how many bytes were stored (-1: no such part). Returns 0, or MORECTL|MOREDATA.
///
/// # Safety
/// `ctlptr`/`dataptr` are null or valid `strbuf`s whose `buf` has room for `maxlen` bytes;
/// `bandp` and `flagsp` are null (EINVAL) or valid.
#[no_mangle]
pub unsafe extern "C" fn getpmsg(
    fd: c_int,
    ctlptr: *mut strbuf,
    dataptr: *mut strbuf,
    bandp: *mut c_int,
    flagsp: *mut c_int,
) -> c_int {
    // SAFETY: the caller passes null or valid pointers (getpmsg's contract).
    let (ctl, data, band, flags) = unsafe {
        (
            ctlptr.as_mut(),
            dataptr.as_mut(),
            bandp.as_mut(),
            flagsp.as_mut(),
        )
    };
    let (Some(band), Some(flags)) = (band, flags) else {
        return fail(libc::EINVAL);
    };
    let mut sp = strpmsg {
        ctlbuf: ctl.as_deref().copied().unwrap_or(strbuf::NONE),
        databuf: data.as_deref().copied().unwrap_or(strbuf::NONE),
        band: *band,
        flags: *flags,
    };
    // SAFETY: `sp` lives across the call; its buffers have room for `maxlen` bytes.
    let r = unsafe { str_ioctl_ptr(fd, I_GETPMSG, &mut sp) };
    if r < 0 {
        return -1;
    }
    if let Some(c) = ctl {
        c.len = sp.ctlbuf.len;
    }
    if let Some(d) = data {
        d.len = sp.databuf.len;
    }
    *band = sp.band;
    *flags = sp.flags;
    r
}

/// getmsg(2): getpmsg of any band (`*flagsp` 0) or of high priority only (`*flagsp`
/// RS_HIPRI); on return `*flagsp` is RS_HIPRI for a high-priority message, else 0.
///
/// # Safety
/// As [`getpmsg`].
#[no_mangle]
pub unsafe extern "C" fn getmsg(
    fd: c_int,
    ctlptr: *mut strbuf,
    dataptr: *mut strbuf,
    flagsp: *mut c_int,
) -> c_int {
    // SAFETY: null or valid (getmsg's contract).
    let Some(flags) = (unsafe { flagsp.as_mut() }) else {
        return fail(libc::EINVAL);
    };
    let mut pflags = match *flags {
        0 => MSG_ANY,
        RS_HIPRI => MSG_HIPRI,
        _ => return fail(libc::EINVAL),
    };
    let mut band = 0;
    // SAFETY: same contract as ours; `band`/`pflags` are locals.
    let r = unsafe { getpmsg(fd, ctlptr, dataptr, &mut band, &mut pflags) };
    if r >= 0 {
        *flags = if pflags == MSG_HIPRI { RS_HIPRI } else { 0 };
    }
    r
}

/// isastream(3): 1 if `fd` is a Stream, 0 if not, -1 (EBADF) if `fd` is not open.
///
/// The probe is `ioctl(fd, I_CANPUT, 0)`: every Stream head answers it (0 or 1) without side
/// effects; anything else fails, normally with ENOTTY (EINVAL from some drivers). errno is
/// left unchanged when the answer is 0.
#[no_mangle]
pub extern "C" fn isastream(fd: c_int) -> c_int {
    if fd < 0 {
        return fail(libc::EBADF);
    }
    let saved = errno();
    if ioctl_int(fd, I_CANPUT, 0) >= 0 {
        return 1;
    }
    if errno() == libc::EBADF {
        return -1;
    }
    set_errno(saved);
    0
}

/// The filesystem type of `strattach.ko` that fattach mounts over a path (`docs/abi.md`).
const ATTACH_FSTYPE_C: &core::ffi::CStr = c"streamsattach";
/// The mount's source (shown in /proc/mounts).
const ATTACH_SOURCE_C: &core::ffi::CStr = c"streams";
/// statfs(2) `f_type` of a path with a Stream attached.
pub const STREAMS_ATTACH_MAGIC: i64 = 0x5354_4154;

/// fattach(3): attach the Stream open as `fd` to `path`, an existing file (not a directory):
/// until [`fdetach`], opening `path` gives a new descriptor of the same Stream head (a FIFO
/// for a STREAMS pipe end, a character device for a Stream over a driver), with `path`'s
/// permission bits, owner and group. The attachment holds the Stream head open.
///
/// It mounts the `streamsattach` filesystem over `path` with `fd=N` (so the caller needs
/// CAP_SYS_ADMIN: EPERM otherwise). Errors: EBADF (`fd` not open), EINVAL (`fd` not a Stream,
/// a STREAMS FIFO, an unconnected pipe end, or `path` null), EBUSY (`path` is a mount point,
/// e.g. already attached), ENOTDIR (`path` is a directory), and those of statx(2)/mount(2)
/// (ENOENT, EACCES, ENAMETOOLONG, ELOOP, EPERM).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fattach(fd: c_int, path: *const c_char) -> c_int {
    match isastream(fd) {
        -1 => return -1,
        0 => return fail(libc::EINVAL),
        _ if path.is_null() => return fail(libc::EINVAL),
        _ => {}
    }
    // SAFETY: `libc::statx` is plain old data: all-zero is a valid value.
    let mut st: libc::statx = unsafe { core::mem::zeroed() };
    let mask = libc::STATX_TYPE | libc::STATX_MODE | libc::STATX_UID | libc::STATX_GID;
    // SAFETY: `path` is NUL-terminated (contract), `st` is a live statx buffer.
    if unsafe { libc::statx(libc::AT_FDCWD, path, 0, mask, &mut st) } < 0 {
        return -1;
    }
    // A directory first: many are mount roots too (/tmp), and that is not why they fail.
    if u32::from(st.stx_mode) & libc::S_IFMT == libc::S_IFDIR {
        return fail(libc::ENOTDIR);
    }
    let root = libc::STATX_ATTR_MOUNT_ROOT as u64;
    if st.stx_attributes_mask & root != 0 && st.stx_attributes & root != 0 {
        return fail(libc::EBUSY);
    }
    let opts = format!(
        "fd={fd},mode={:o},uid={},gid={}\0",
        st.stx_mode & 0o777,
        st.stx_uid,
        st.stx_gid
    );
    // SAFETY: every string is NUL-terminated and outlives the call.
    let r = unsafe {
        libc::mount(
            ATTACH_SOURCE_C.as_ptr(),
            path,
            ATTACH_FSTYPE_C.as_ptr(),
            0,
            opts.as_ptr().cast(),
        )
    };
    if r < 0 {
        return -1;
    }
    0
}

/// fdetach(3): detach the Stream attached to `path` by [`fattach`]: opening `path` gives the
/// underlying file again. Descriptors opened through `path` keep working; the attachment's
/// hold on the Stream head goes when the last of them is closed (a lazy unmount).
/// Errors: EINVAL (`path` null or nothing attached to it), EPERM (no CAP_SYS_ADMIN), and
/// those of statfs(2) (ENOENT, EACCES, ENOTDIR, ENAMETOOLONG, ELOOP).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn fdetach(path: *const c_char) -> c_int {
    if path.is_null() {
        return fail(libc::EINVAL);
    }
    // SAFETY: `libc::statfs` is plain old data: all-zero is a valid value.
    let mut sf: libc::statfs = unsafe { core::mem::zeroed() };
    // SAFETY: `path` is NUL-terminated (contract), `sf` is a live statfs buffer.
    if unsafe { libc::statfs(path, &mut sf) } < 0 {
        return -1;
    }
    // Only our mounts: fdetach must never unmount anything else found at `path`.
    // `f_type` is i64 in glibc, unsigned long in musl.
    #[allow(clippy::unnecessary_cast)]
    let f_type = sf.f_type as i64;
    if f_type != STREAMS_ATTACH_MAGIC {
        return fail(libc::EINVAL);
    }
    // SAFETY: `path` is NUL-terminated (contract).
    if unsafe { libc::umount2(path, libc::MNT_DETACH) } < 0 {
        return -1;
    }
    0
}

/// Open the two ends of a STREAMS pipe: `I_FIFO_PIPE` on the clone device (FIFO-typed ends),
/// or else two opens of it welded with `ioctl(first, I_PIPE, second)` (LfS). `oflags` may add O_CLOEXEC and O_NONBLOCK to both.
pub(crate) fn open_pipe_pair(oflags: c_int) -> Result<(c_int, c_int), c_int> {
    if oflags & !(libc::O_CLOEXEC | libc::O_NONBLOCK) != 0 {
        return Err(libc::EINVAL);
    }
    let open = || {
        // SAFETY: the path is a static NUL-terminated string.
        let fd = unsafe { libc::open(PIPE_DEVICE_C.as_ptr(), libc::O_RDWR | oflags) };
        if fd < 0 {
            Err(errno())
        } else {
            Ok(fd)
        }
    };
    let close = |fd: c_int| {
        // SAFETY: `fd` was opened above and is owned by us.
        unsafe { libc::close(fd) };
    };
    // First the one-call way: both ends are FIFO files (fstat says S_ISFIFO, as for pipe(2)).
    // An older streams.ko without I_FIFO_PIPE: the LfS way below.
    let ctl = open()?;
    let mut req: [c_int; 3] = [-1, -1, oflags];
    // SAFETY: `req` is the `struct { int fds[2]; int flags; }` the command reads and fills.
    let r = unsafe { libc::ioctl(ctl, I_FIFO_PIPE as libc::c_ulong, req.as_mut_ptr()) };
    let e = errno();
    close(ctl);
    if r == 0 {
        return Ok((req[0], req[1]));
    }
    if matches!(e, libc::EMFILE | libc::ENFILE | libc::ENOMEM) {
        return Err(e);
    }
    let a = open()?;
    let b = match open() {
        Ok(b) => b,
        Err(e) => {
            close(a);
            return Err(e);
        }
    };
    if ioctl_int(a, I_PIPE, b) < 0 {
        let e = match errno() {
            libc::ENOTTY => libc::ENOSTR,
            e => e,
        };
        close(b);
        close(a);
        return Err(e);
    }
    Ok((a, b))
}

/// s_pipe2: a STREAMS pipe with O_CLOEXEC/O_NONBLOCK on both ends (other flags: EINVAL).
/// `fds[0]` and `fds[1]` are both readable and writable (a STREAMS pipe is full duplex).
/// ENOENT when `/dev/streams/clone/pipe` does not exist (modules not loaded).
///
/// # Safety
/// `fds` is null (EFAULT) or points to two writable ints.
#[no_mangle]
pub unsafe extern "C" fn s_pipe2(fds: *mut c_int, flags: c_int) -> c_int {
    if fds.is_null() {
        return fail(libc::EFAULT);
    }
    match open_pipe_pair(flags) {
        Ok((a, b)) => {
            // SAFETY: `fds` points to two writable ints (contract above).
            unsafe {
                *fds = a;
                *fds.add(1) = b;
            }
            0
        }
        Err(e) => fail(e),
    }
}

/// s_pipe: a STREAMS pipe (LfS `pipe()` of libstreams); see [`s_pipe2`].
///
/// # Safety
/// As [`s_pipe2`].
#[no_mangle]
pub unsafe extern "C" fn s_pipe(fds: *mut c_int) -> c_int {
    // SAFETY: same contract.
    unsafe { s_pipe2(fds, 0) }
}
