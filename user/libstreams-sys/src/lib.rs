//! libstreams: the user side of rstreams' STREAMS, for C (`libstreams.so`, `libstreams.a`,
//! `include/stropts.h`) and for Rust (this crate, `streams`).
//!
//! The kernel Stream head answers read/write/ioctl/poll on `/dev/streams/...` character
//! devices; Linux has no putmsg/getmsg system calls, so, as in Linux Fast-STREAMS, the library
//! turns putmsg/putpmsg and getmsg/getpmsg into the `I_PUTPMSG`/`I_GETPMSG` ioctls with a
//! [`strpmsg`] argument, and a STREAMS pipe is two opens of `/dev/streams/clone/pipe` welded
//! with `I_PIPE` (see `docs/abi.md`). [`ffi`] holds the C functions; [`Stream`] is the safe
//! Rust API on top of them.

pub mod bufmod;
pub mod consts;
pub mod ffi;
mod stream;
pub mod types;

pub use consts::*;
pub use stream::{fdetach, GetMsg, Stream};
pub use types::*;

/// The clone device whose every open is one end of a new (unconnected) STREAMS pipe.
pub const PIPE_DEVICE: &str = "/dev/streams/clone/pipe";
pub mod xti;
