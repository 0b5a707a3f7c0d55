//! `<sys/bufmod.h>` for Rust users: the bufmod(7M) ioctls, flags and `struct sb_hdr`, the same
//! values as `include/sys/bufmod.h` and the kernel module (`streams_core::mods::bufmod`);
//! `tests/c_bufmod.rs` compares all three.

#![allow(non_camel_case_types)]

use libc::c_int;

/// `('B' << 8)`: the bufmod ioctl group.
pub const SBIOC: c_int = (b'B' as c_int) << 8;
/// Set the read timeout (`struct timeval`).
pub const SBIOCSTIME: c_int = SBIOC | 1;
/// Get the read timeout (ERANGE when cleared).
pub const SBIOCGTIME: c_int = SBIOC | 2;
/// Clear the read timeout.
pub const SBIOCCTIME: c_int = SBIOC | 3;
/// Set the chunk size.
pub const SBIOCSCHUNK: c_int = SBIOC | 4;
/// Get the chunk size.
pub const SBIOCGCHUNK: c_int = SBIOC | 5;
/// Set the snapshot length (0: no truncation).
pub const SBIOCSSNAP: c_int = SBIOC | 6;
/// Get the snapshot length.
pub const SBIOCGSNAP: c_int = SBIOC | 7;
/// Set the `SB_*` flags.
pub const SBIOCSFLAGS: c_int = SBIOC | 8;
/// Get the `SB_*` flags.
pub const SBIOCGFLAGS: c_int = SBIOC | 9;
/// Default chunk size.
pub const SB_DFLT_CHUNK: c_int = 8192;
/// Send the chunk up on any write-side message.
pub const SB_SEND_ON_WRITE: c_int = 0x01;
/// No `sb_hdr`, no padding.
pub const SB_NO_HEADER: c_int = 0x02;
/// Do not treat M_PROTO as data.
pub const SB_NO_PROTO_CVT: c_int = 0x04;
/// The first message of a timeout window goes up at once.
pub const SB_DEFER_CHUNK: c_int = 0x08;
/// Queue instead of dropping under flow control.
pub const SB_NO_DROPS: c_int = 0x10;

/// `struct timeval32`: the timestamp of an `sb_hdr`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct timeval32 {
    /// Seconds.
    pub tv_sec: i32,
    /// Microseconds.
    pub tv_usec: i32,
}

/// `struct sb_hdr`: the header of each record in a chunk.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct sb_hdr {
    /// Length before truncation.
    pub sbh_origlen: u32,
    /// Data bytes in this record.
    pub sbh_msglen: u32,
    /// Header + data + padding: the offset of the next record.
    pub sbh_totlen: u32,
    /// Messages this bufmod instance dropped so far.
    pub sbh_drops: u32,
    /// Arrival time (the kernel's monotonic clock).
    pub sbh_timestamp: timeval32,
}

impl sb_hdr {
    /// The header at the start of `b`, if there are enough bytes.
    pub fn read_from(b: &[u8]) -> Option<sb_hdr> {
        let w = |i: usize| -> Option<[u8; 4]> { b.get(i * 4..i * 4 + 4)?.try_into().ok() };
        Some(sb_hdr {
            sbh_origlen: u32::from_ne_bytes(w(0)?),
            sbh_msglen: u32::from_ne_bytes(w(1)?),
            sbh_totlen: u32::from_ne_bytes(w(2)?),
            sbh_drops: u32::from_ne_bytes(w(3)?),
            sbh_timestamp: timeval32 {
                tv_sec: i32::from_ne_bytes(w(4)?),
                tv_usec: i32::from_ne_bytes(w(5)?),
            },
        })
    }
}
