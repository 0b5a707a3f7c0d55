//! Error numbers reported by the executive (Linux values, as LfS returns them to user space).

/// A Linux errno value, as returned by the STREAMS executive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// Operation not permitted.
    pub const EPERM: Errno = Errno(1);
    /// No such device or address (Stream hung up, no such driver).
    pub const ENXIO: Errno = Errno(6);
    /// Interrupted system call.
    pub const EINTR: Errno = Errno(4);
    /// I/O error.
    pub const EIO: Errno = Errno(5);
    /// Bad file descriptor.
    pub const EBADF: Errno = Errno(9);
    /// Try again (would block).
    pub const EAGAIN: Errno = Errno(11);
    /// Out of memory.
    pub const ENOMEM: Errno = Errno(12);
    /// Bad address.
    pub const EFAULT: Errno = Errno(14);
    /// Device or resource busy.
    pub const EBUSY: Errno = Errno(16);
    /// Invalid argument.
    pub const EINVAL: Errno = Errno(22);
    /// Inappropriate ioctl for device (not a STREAMS device).
    pub const ENOTTY: Errno = Errno(25);
    /// Broken pipe.
    pub const EPIPE: Errno = Errno(32);
    /// Math result not representable (message too large).
    pub const ERANGE: Errno = Errno(34);
    /// Not a STREAMS device.
    pub const ENOSTR: Errno = Errno(60);
    /// No message available.
    pub const ENODATA: Errno = Errno(61);
    /// Timer expired.
    pub const ETIME: Errno = Errno(62);
    /// Out of STREAMS resources.
    pub const ENOSR: Errno = Errno(63);
    /// Not a data message.
    pub const EBADMSG: Errno = Errno(74);
    /// Protocol error.
    pub const EPROTO: Errno = Errno(71);
}

impl From<crate::sys::NoMem> for Errno {
    fn from(_: crate::sys::NoMem) -> Self {
        Errno::ENOSR
    }
}
