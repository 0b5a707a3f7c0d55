//! The `<stropts.h>` numbers for Rust users: the same values as `include/sys/stropts.h` and as
//! the kernel Stream head (`streams_core::sth::consts`); the tests compare all three.
//! Types are the C ones (`int`), since these go straight into ioctl(2) and the C structs.

use libc::c_int;

/// `('S' << 8)`: the STREAMS ioctl group.
pub const SID: c_int = (b'S' as c_int) << 8;
/// Count messages and bytes of the first message.
pub const I_NREAD: c_int = SID | 1;
/// Push a module.
pub const I_PUSH: c_int = SID | 2;
/// Pop the top module.
pub const I_POP: c_int = SID | 3;
/// Name of the top module.
pub const I_LOOK: c_int = SID | 4;
/// Flush the Stream.
pub const I_FLUSH: c_int = SID | 5;
/// Set the read options.
pub const I_SRDOPT: c_int = SID | 6;
/// Get the read options.
pub const I_GRDOPT: c_int = SID | 7;
/// Send an ioctl downstream (`struct strioctl`).
pub const I_STR: c_int = SID | 8;
/// Register for SIGPOLL.
pub const I_SETSIG: c_int = SID | 9;
/// Get the SIGPOLL registration.
pub const I_GETSIG: c_int = SID | 10;
/// Is a module on the Stream?
pub const I_FIND: c_int = SID | 11;
/// Link under a multiplexor.
pub const I_LINK: c_int = SID | 12;
/// Unlink from a multiplexor.
pub const I_UNLINK: c_int = SID | 13;
/// Receive a file descriptor.
pub const I_RECVFD: c_int = SID | 14;
/// Look at the first message without taking it (`struct strpeek`).
pub const I_PEEK: c_int = SID | 15;
/// Send a message carrying a queue pointer (`struct strfdinsert`).
pub const I_FDINSERT: c_int = SID | 16;
/// Send a file descriptor.
pub const I_SENDFD: c_int = SID | 17;
/// Set the write options.
pub const I_SWROPT: c_int = SID | 19;
/// Get the write options.
pub const I_GWROPT: c_int = SID | 20;
/// List the modules (`struct str_list`).
pub const I_LIST: c_int = SID | 21;
/// Persistent link.
pub const I_PLINK: c_int = SID | 22;
/// Persistent unlink.
pub const I_PUNLINK: c_int = SID | 23;
/// Flush one band (`struct bandinfo`).
pub const I_FLUSHBAND: c_int = SID | 28;
/// Is there a message of a band?
pub const I_CKBAND: c_int = SID | 29;
/// Band of the first message.
pub const I_GETBAND: c_int = SID | 30;
/// Is the first message marked?
pub const I_ATMARK: c_int = SID | 31;
/// Set the close delay.
pub const I_SETCLTIME: c_int = SID | 32;
/// Get the close delay.
pub const I_GETCLTIME: c_int = SID | 33;
/// Can a band be written?
pub const I_CANPUT: c_int = SID | 34;
/// getmsg/getpmsg emulation (LfS number; argument `struct strpmsg *`).
pub const I_GETPMSG: c_int = SID | 42;
/// putmsg/putpmsg emulation (LfS number; argument `struct strpmsg *`).
pub const I_PUTPMSG: c_int = SID | 43;
/// Weld this Stream and the Stream whose fd is the argument into a pipe (LfS number).
pub const I_PIPE: c_int = SID | 44;
/// rstreams: on a `/dev/streams/clone/pipe` descriptor, make a STREAMS pipe whose two ends
/// are FIFO-typed files (`struct { int fds[2]; int flags; }`).
pub const I_FIFO_PIPE: c_int = (b'R' as c_int) << 8 | 1;
/// fattach emulation (LfS number; unused: rstreams' fattach mounts `streamsattach`).
pub const I_FATTACH: c_int = SID | 52;
/// fdetach emulation (LfS number; unused: rstreams' fdetach unmounts).
pub const I_FDETACH: c_int = SID | 53;
/// Set the Stream head read queue's high water mark (int by value; HP-UX number, in LfS).
pub const I_SET_HIWAT: c_int = SID | 91;
/// Set the Stream head read queue's low water mark (int by value; HP-UX number, in LfS).
pub const I_SET_LOWAT: c_int = SID | 92;
/// Get the high water mark of the Stream head's read queue (rstreams extension): `int *`.
pub const I_GET_HIWAT: c_int = SID | 93;

/// Infinite I_STR timeout.
pub const INFTIM: c_int = -1;
/// Length of a module name, without its NUL.
pub const FMNAMESZ: usize = 8;
/// I_PUNLINK: all links.
pub const MUXID_ALL: c_int = -1;

/// Flush the read side.
pub const FLUSHR: c_int = 0x01;
/// Flush the write side.
pub const FLUSHW: c_int = 0x02;
/// Flush both sides.
pub const FLUSHRW: c_int = 0x03;
/// Flush one band.
pub const FLUSHBAND: c_int = 0x04;

/// SIGPOLL on a normal message.
pub const S_INPUT: c_int = 0x0001;
/// SIGPOLL on a high-priority message.
pub const S_HIPRI: c_int = 0x0002;
/// SIGPOLL when band 0 becomes writable.
pub const S_OUTPUT: c_int = 0x0004;
/// SIGPOLL on M_SIG.
pub const S_MSG: c_int = 0x0008;
/// SIGPOLL on M_ERROR.
pub const S_ERROR: c_int = 0x0010;
/// SIGPOLL on M_HANGUP.
pub const S_HANGUP: c_int = 0x0020;
/// SIGPOLL on a band-0 message.
pub const S_RDNORM: c_int = 0x0040;
/// Same as S_OUTPUT.
pub const S_WRNORM: c_int = S_OUTPUT;
/// SIGPOLL on a banded message.
pub const S_RDBAND: c_int = 0x0080;
/// SIGPOLL when a band > 0 becomes writable.
pub const S_WRBAND: c_int = 0x0100;
/// SIGURG instead of SIGPOLL for S_RDBAND.
pub const S_BANDURG: c_int = 0x0200;
/// All I_SETSIG bits.
pub const S_ALL: c_int = 0x03ff;

/// getmsg: high priority only.
pub const RS_HIPRI: c_int = 0x01;
/// Byte-stream read mode.
pub const RNORM: c_int = 0x0000;
/// Message-discard read mode.
pub const RMSGD: c_int = 0x0001;
/// Message-non-discard read mode.
pub const RMSGN: c_int = 0x0002;
/// Read mode mask.
pub const RMODEMASK: c_int = 0x0003;
/// Control part delivered as data.
pub const RPROTDAT: c_int = 0x0004;
/// Control part discarded.
pub const RPROTDIS: c_int = 0x0008;
/// read() fails with EBADMSG on a control part.
pub const RPROTNORM: c_int = 0x0010;
/// Protocol option mask.
pub const RPROTMASK: c_int = 0x001c;
/// Read-fill mode.
pub const RFILL: c_int = 0x0020;

/// Zero-length writes send a message.
pub const SNDZERO: c_int = 0x001;
/// SIGPIPE on write to a hung-up Stream.
pub const SNDPIPE: c_int = 0x002;
/// Coalesce small writes at the Stream head.
pub const SNDHOLD: c_int = 0x004;
/// Read notification (LfS): the head reading this end's data sends M_READ before it blocks.
pub const SNDMREAD: c_int = 0x010;

/// I_ATMARK: any mark.
pub const ANYMARK: c_int = 0x01;
/// I_ATMARK: last mark.
pub const LASTMARK: c_int = 0x02;
/// I_CANPUT: any band.
pub const ANYBAND: c_int = -1;

/// getpmsg/putpmsg: high priority.
pub const MSG_HIPRI: c_int = 0x01;
/// getpmsg: any band.
pub const MSG_ANY: c_int = 0x02;
/// getpmsg/putpmsg: a band.
pub const MSG_BAND: c_int = 0x04;
/// getmsg: control bytes left.
pub const MORECTL: c_int = 1;
/// getmsg: data bytes left.
pub const MOREDATA: c_int = 2;
