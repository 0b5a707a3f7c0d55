//! The user-visible numbers of the Stream head: `I_*` ioctl commands, read/write options,
//! getmsg/putmsg flags, SIGPOLL events, poll bits and `M_SETOPTS` flags.
//!
//! Values are the SVR4/LfS ones as found in `<stropts.h>` (checked against glibc's
//! `bits/stropts.h`, which follows SVR4), so a C header for user space can mirror this file
//! line by line. SNDHOLD (1<<2) and SO_STRHOLD (1<<17) are the LfS/UnixWare values. RFILL is
//! an OSF extension that LfS leaves out of `<stropts.h>`; its value here (1<<5, free next to
//! LfS's RPROTCOMPRESS at 1<<6) is ours.

/// `('S' << 8)`: the STREAMS ioctl group.
pub const SID: u32 = (b'S' as u32) << 8;
/// Count messages and bytes of the first message at the head.
pub const I_NREAD: u32 = SID | 1;
/// Push a module.
pub const I_PUSH: u32 = SID | 2;
/// Pop the top module.
pub const I_POP: u32 = SID | 3;
/// Name of the top module.
pub const I_LOOK: u32 = SID | 4;
/// Flush the Stream.
pub const I_FLUSH: u32 = SID | 5;
/// Set the read options.
pub const I_SRDOPT: u32 = SID | 6;
/// Get the read options.
pub const I_GRDOPT: u32 = SID | 7;
/// Send an ioctl downstream (M_IOCTL) and wait for the answer.
pub const I_STR: u32 = SID | 8;
/// Register for SIGPOLL.
pub const I_SETSIG: u32 = SID | 9;
/// Get the SIGPOLL registration.
pub const I_GETSIG: u32 = SID | 10;
/// Is a module on the Stream?
pub const I_FIND: u32 = SID | 11;
/// Link a Stream under a multiplexor (not implemented yet).
pub const I_LINK: u32 = SID | 12;
/// Unlink (not implemented yet).
pub const I_UNLINK: u32 = SID | 13;
/// Receive a file descriptor (not implemented yet).
pub const I_RECVFD: u32 = SID | 14;
/// Look at the first message without taking it.
pub const I_PEEK: u32 = SID | 15;
/// Send a message carrying a queue pointer (not implemented yet).
pub const I_FDINSERT: u32 = SID | 16;
/// Send a file descriptor (not implemented yet).
pub const I_SENDFD: u32 = SID | 17;
/// Set the write options.
pub const I_SWROPT: u32 = SID | 19;
/// Get the write options.
pub const I_GWROPT: u32 = SID | 20;
/// List the modules and driver.
pub const I_LIST: u32 = SID | 21;
/// Persistent link (not implemented yet).
pub const I_PLINK: u32 = SID | 22;
/// Persistent unlink (not implemented yet).
pub const I_PUNLINK: u32 = SID | 23;
/// I_UNLINK/I_PUNLINK argument: every link.
pub const MUXID_ALL: i32 = -1;
/// Flush one band.
pub const I_FLUSHBAND: u32 = SID | 28;
/// Is there a message of a band at the head?
pub const I_CKBAND: u32 = SID | 29;
/// Band of the first message at the head.
pub const I_GETBAND: u32 = SID | 30;
/// Is the first message marked?
pub const I_ATMARK: u32 = SID | 31;
/// Set the close delay.
pub const I_SETCLTIME: u32 = SID | 32;
/// Get the close delay.
pub const I_GETCLTIME: u32 = SID | 33;
/// Can a band be written?
pub const I_CANPUT: u32 = SID | 34;
/// getmsg/getpmsg system-call emulation (LfS): argument `struct strpmsg *`.
pub const I_GETPMSG: u32 = SID | 42;
/// putmsg/putpmsg system-call emulation (LfS): argument `struct strpmsg *`.
pub const I_PUTPMSG: u32 = SID | 43;
/// Weld this pipe end and the end whose fd is the (by-value) argument into one pipe (LfS).
pub const I_PIPE: u32 = SID | 44;
/// FIONREAD (Linux `<asm-generic/ioctls.h>`): data bytes waiting to be read at the head.
pub const FIONREAD: u32 = 0x541B;
/// rstreams extension, on a `/dev/streams/clone/pipe` descriptor: create a STREAMS pipe whose
/// ends are FIFO-typed files (`struct { int fds[2]; int flags; }`, flags O_CLOEXEC|O_NONBLOCK).
/// Its own ioctl group (`'R'`), so that it can never collide with an LfS number.
pub const I_FIFO_PIPE: u32 = (b'R' as u32) << 8 | 1;
/// fattach emulation (LfS number; not implemented yet).
pub const I_FATTACH: u32 = SID | 52;
/// fdetach emulation (LfS number; not implemented yet).
pub const I_FDETACH: u32 = SID | 53;
/// Set the high water mark of the Stream head's read queue (HP-UX number, listed by LfS):
/// argument an int by value.
pub const I_SET_HIWAT: u32 = SID | 91;
/// Set the low water mark of the Stream head's read queue (HP-UX number, listed by LfS).
pub const I_SET_LOWAT: u32 = SID | 92;
/// Get the high water mark of the Stream head's read queue (an rstreams extension, next to
/// HP-UX's two; what `fcntl(F_GETPIPE_SZ)` answers under `libstreams_pipe.so`): argument an
/// `int *`.
pub const I_GET_HIWAT: u32 = SID | 93;

/// Length of a module name, without its NUL.
pub const FMNAMESZ: usize = 8;
/// Most modules that can be pushed on one Stream (LfS `NSTRPUSH`).
pub const NSTRPUSH: usize = 64;
/// Default `strctlsz` and `strmsgsz` (`crate::limits`): the values in force are
/// `limits().strctlsz` / `limits().strmsgsz`, tunable by the platform.
pub use crate::limits::{STRCTLSZ, STRMSGSZ};
/// Default close delay in milliseconds (I_GETCLTIME).
pub const STRCLTIME_DEFAULT: u32 = 15_000;
/// Default I_STR timeout in seconds, used when `ic_timout` is 0 (SVR4/LfS `STRTIMOUT`).
pub const STRTIMOUT: u32 = 15;
/// `ic_timout` value for "wait for the answer without a time limit" (`INFTIM`).
pub const INFTIM: i32 = -1;

/// Flush the read side.
pub const FLUSHR: u8 = 0x01;
/// Flush the write side.
pub const FLUSHW: u8 = 0x02;
/// Flush both sides.
pub const FLUSHRW: u8 = 0x03;
/// Flush only the band in the second byte of the M_FLUSH.
pub const FLUSHBAND: u8 = 0x04;

/// SIGPOLL: a non-high-priority message arrived.
pub const S_INPUT: u32 = 0x0001;
/// SIGPOLL: a high-priority message arrived.
pub const S_HIPRI: u32 = 0x0002;
/// SIGPOLL: band 0 became writable.
pub const S_OUTPUT: u32 = 0x0004;
/// SIGPOLL: an M_SIG/M_PCSIG carrying SIGPOLL arrived.
pub const S_MSG: u32 = 0x0008;
/// SIGPOLL: M_ERROR arrived.
pub const S_ERROR: u32 = 0x0010;
/// SIGPOLL: M_HANGUP arrived.
pub const S_HANGUP: u32 = 0x0020;
/// SIGPOLL: a band-0 message arrived.
pub const S_RDNORM: u32 = 0x0040;
/// SIGPOLL: band 0 became writable (same as S_OUTPUT).
pub const S_WRNORM: u32 = S_OUTPUT;
/// SIGPOLL: a message of band > 0 arrived.
pub const S_RDBAND: u32 = 0x0080;
/// SIGPOLL: a band > 0 became writable.
pub const S_WRBAND: u32 = 0x0100;
/// With S_RDBAND: send SIGURG instead of SIGPOLL.
pub const S_BANDURG: u32 = 0x0200;
/// All valid I_SETSIG bits.
pub const S_ALL: u32 = 0x03ff;

/// getmsg: only high-priority messages (`RS_HIPRI`).
pub const RS_HIPRI: i32 = 0x01;
/// Byte-stream read mode.
pub const RNORM: u32 = 0x0000;
/// Message-discard read mode.
pub const RMSGD: u32 = 0x0001;
/// Message-non-discard read mode.
pub const RMSGN: u32 = 0x0002;
/// Mask of the read mode bits.
pub const RMODEMASK: u32 = 0x0003;
/// read() delivers the control part of M_PROTO/M_PCPROTO as data.
pub const RPROTDAT: u32 = 0x0004;
/// read() discards the control part and delivers the data part.
pub const RPROTDIS: u32 = 0x0008;
/// read() fails with EBADMSG on M_PROTO/M_PCPROTO (the default).
pub const RPROTNORM: u32 = 0x0010;
/// Mask of the protocol treatment bits.
pub const RPROTMASK: u32 = 0x001c;
/// Read-fill mode (OSF): a byte-stream read waits until it can fill the buffer (value ours).
pub const RFILL: u32 = 0x0020;

/// Zero-length write() sends a zero-length message.
pub const SNDZERO: u32 = 0x001;
/// Write on a hung-up Stream raises SIGPIPE and fails with EPIPE.
pub const SNDPIPE: u32 = 0x002;
/// Write hold (LfS/UnixWare strhold): small writes are coalesced at the head.
pub const SNDHOLD: u32 = 0x004;
/// Read notification (LfS, `1 << 4`): the head that reads what this end writes sends M_READ
/// before a read blocks there (the other end of a pipe, a FIFO's own head, else this head).
pub const SNDMREAD: u32 = 0x010;

/// I_ATMARK: is the first message marked?
pub const ANYMARK: i32 = 0x01;
/// I_ATMARK: is the first message the last marked one?
pub const LASTMARK: i32 = 0x02;
/// I_CANPUT: any band.
pub const ANYBAND: i32 = -1;

/// getpmsg/putpmsg: high priority.
pub const MSG_HIPRI: i32 = 0x01;
/// getpmsg: any message.
pub const MSG_ANY: i32 = 0x02;
/// getpmsg/putpmsg: a priority band.
pub const MSG_BAND: i32 = 0x04;
/// getmsg return: more control bytes remain.
pub const MORECTL: i32 = 1;
/// getmsg return: more data bytes remain.
pub const MOREDATA: i32 = 2;

/// poll: data other than high priority can be read.
pub const POLLIN: u32 = 0x0001;
/// poll: high-priority data can be read.
pub const POLLPRI: u32 = 0x0002;
/// poll: band 0 can be written.
pub const POLLOUT: u32 = 0x0004;
/// poll: error (M_ERROR).
pub const POLLERR: u32 = 0x0008;
/// poll: hung up.
pub const POLLHUP: u32 = 0x0010;
/// poll: not a valid (open) Stream.
pub const POLLNVAL: u32 = 0x0020;
/// poll: band-0 data can be read.
pub const POLLRDNORM: u32 = 0x0040;
/// poll: data of a band > 0 can be read.
pub const POLLRDBAND: u32 = 0x0080;
/// poll: band 0 can be written.
pub const POLLWRNORM: u32 = 0x0100;
/// poll: a band > 0 can be written.
pub const POLLWRBAND: u32 = 0x0200;
/// poll: a SIGPOLL message is pending.
pub const POLLMSG: u32 = 0x0400;

/// Linux SIGPIPE.
pub const SIGPIPE: u8 = 13;
/// Linux SIGPOLL (SIGIO).
pub const SIGPOLL: u8 = 29;

/// M_SETOPTS `so_flags`: `so_readopt` is valid.
pub const SO_READOPT: u64 = 0x0001;
/// `so_wroff` is valid.
pub const SO_WROFF: u64 = 0x0002;
/// `so_minpsz` is valid.
pub const SO_MINPSZ: u64 = 0x0004;
/// `so_maxpsz` is valid.
pub const SO_MAXPSZ: u64 = 0x0008;
/// `so_hiwat` is valid.
pub const SO_HIWAT: u64 = 0x0010;
/// `so_lowat` is valid.
pub const SO_LOWAT: u64 = 0x0020;
/// Send M_READ downstream when a read would block.
pub const SO_MREADON: u64 = 0x0040;
/// Stop sending M_READ.
pub const SO_MREADOFF: u64 = 0x0080;
/// The watermarks are for band `so_band`.
pub const SO_BAND: u64 = 0x4000;
/// Mark written messages as delimited (MSGDELIM).
pub const SO_DELIM: u64 = 0x8000;
/// Stop delimiting.
pub const SO_NODELIM: u64 = 0x0001_0000;
/// Turn write hold (SNDHOLD) on (UnixWare/LfS).
pub const SO_STRHOLD: u64 = 0x0002_0000;
