// SPDX-License-Identifier: GPL-2.0
//! The STREAMS devices of `streams.ko` and what an open of each gives ([`StrKind`]): a new
//! Stream over a driver (clone devices), a new unconnected pipe end (the pipe device), or the
//! Stream of a FIFO node (`fifo.rs`).

use kernel::sync::Arc;

use crate::errno::Errno;
use crate::sth::Stream;
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
use crate::stream::{OpenArgs, Registry, Sflag, StreamTab};

/// What the opens of a STREAMS device give.
pub(crate) enum StrKind {
    /// A new Stream over this driver (a clone device).
    Driver(&'static StreamTab),
    /// A new, unconnected pipe end (the pipe device; `I_PIPE` connects two).
    PipeEnd,
    /// The FIFO of this node (`fifo.rs`): every open attaches to the same Stream.
    Fifo(Arc<crate::fifo::FifoSlot>),
}

/// What a STREAMS device needs to open a Stream: what its opens give and the module registry.
pub(crate) struct StrDev {
    /// What an open gives.
    pub(crate) kind: StrKind,
    /// `fmodsw` for I_PUSH/I_FIND (read-only after module init).
    pub(crate) registry: Arc<Registry>,
}

/// open(2) of a STREAMS device.
pub(crate) fn open(dev: &StrDev, f_flags: u32) -> Result<Arc<StrFile>, Errno> {
    let args = OpenArgs {
        dev: 0,
        oflag: i32::try_from(f_flags).unwrap_or(0),
        sflag: Sflag::CloneOpen,
    };
    let (s, unconnected) = match &dev.kind {
        StrKind::Driver(drv) => (Stream::sth_open(drv, &args)?, false),
        StrKind::PipeEnd => (crate::pipe::end()?, true),
        StrKind::Fifo(slot) => return crate::fifo::open(slot, f_flags, &dev.registry),
    };
    let perim = StrPerim::new(s)?;
    // The driver's open may have sent M_SETOPTS or data; nobody waits on a new Stream yet.
    perim.op(Caller::Nobody, |_| ());
    StrFile::new(perim, unconnected, dev.registry.clone(), None)
}
