// SPDX-License-Identifier: GPL-2.0
//! The STREAMS devices of `streams.ko` and what an open of each gives ([`StrKind`]): a new
//! Stream over a driver (clone devices), a new unconnected pipe end (the pipe device), or the
//! Stream of a FIFO node (`fifo.rs`), or a new upper Stream of a multiplexing driver.

use kernel::sync::Arc;

use crate::errno::Errno;
use crate::sth::Stream;
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
use crate::stream::mux::MuxTable;
use crate::stream::{OpenArgs, Registry, Sflag, StreamTab};

/// What the opens of a STREAMS device give.
pub(crate) enum StrKind {
    /// A new Stream over this driver (a clone device).
    Driver(&'static StreamTab),
    /// A new, unconnected pipe end (the pipe device; `I_PIPE` connects two).
    PipeEnd,
    /// The FIFO of this node (`fifo.rs`): every open attaches to the same Stream.
    Fifo(Arc<crate::fifo::FifoSlot>),
    /// A new upper Stream of this multiplexing driver, attached to its link table.
    Mux(&'static StreamTab, Arc<MuxTable>),
}

/// What a STREAMS device needs to open a Stream: what its opens give and the module registry.
pub(crate) struct StrDev {
    /// What an open gives.
    pub(crate) kind: StrKind,
    /// `fmodsw` for I_PUSH/I_FIND (read-only after module init).
    pub(crate) registry: Arc<Registry>,
}

impl Drop for StrDev {
    /// The device is gone (`MiscDevice` deregisters it before its data drops: no open is in
    /// progress and none can start) and, since open files pin the module, no file of it is
    /// open: module unload. A multiplexing driver's table is retired here. A link left in it
    /// (I_PLINK never undone, e.g. by a killed process) holds its lower Stream, whose lower
    /// half holds the table: a cycle that dropping our `Arc` does not break, so the table (its
    /// lock box and `Arc`, allocated at module init), the lower Streams and what they hold
    /// would outlive the module (kmemleak after `rmmod`). `unlink_all` breaks it; each lower
    /// Stream, its file closed, then closes on the runner, which `streams.ko` drops (draining
    /// it) after every device.
    fn drop(&mut self) {
        if let StrKind::Mux(drv, table) = &self.kind {
            let links = table.unlink_all();
            let uppers = table.nuppers();
            if links != 0 || uppers != 0 {
                kernel::pr_warn!(
                    "rstreams: {}: {} link(s) left at unload (unlinked now), {} upper Stream(s) still in the table\n",
                    drv.info.mi_idname,
                    links,
                    uppers
                );
            }
        }
    }
}

/// open(2) of a STREAMS device.
pub(crate) fn open(dev: &StrDev, f_flags: u32) -> Result<Arc<StrFile>, Errno> {
    let args = OpenArgs {
        dev: 0,
        oflag: i32::try_from(f_flags).unwrap_or(0),
        sflag: Sflag::CloneOpen,
    };
    let (s, unconnected, table) = match &dev.kind {
        StrKind::Driver(drv) => (Stream::sth_open(drv, &args)?, false, None),
        StrKind::PipeEnd => (crate::pipe::end()?, true, None),
        StrKind::Fifo(slot) => return crate::fifo::open(slot, f_flags, &dev.registry),
        StrKind::Mux(drv, table) => (Stream::sth_open(drv, &args)?, false, Some(table)),
    };
    let perim = StrPerim::new(s)?;
    // The driver's open may have sent M_SETOPTS or data; nobody waits on a new Stream yet.
    let attached = perim.op(Caller::Nobody, |s| match table {
        Some(t) => s.sth_mux_attach(t.clone(), opener()),
        None => Ok(()),
    });
    if let Err(e) = attached {
        perim.close_now(Caller::Nobody);
        return Err(e);
    }
    StrFile::new(perim, unconnected, dev.registry.clone(), None)
}

extern "C" {
    fn rstreams_current_kids(kuid: *mut core::ffi::c_uint, kgid: *mut core::ffi::c_uint);
    fn rstreams_current_sysadmin() -> bool;
}

/// Who is opening a multiplexing driver, for its link table's permission model
/// (`docs/security.md`): the effective kernel uid and whether it has CAP_SYS_ADMIN.
fn opener() -> crate::stream::MuxCred {
    let (mut kuid, mut kgid) = (0, 0);
    // SAFETY: two valid out-pointers; reads the caller's credentials (process context).
    unsafe { rstreams_current_kids(&mut kuid, &mut kgid) };
    // SAFETY: plain capability check of the caller, in process context.
    let privileged = unsafe { rstreams_current_sysadmin() };
    crate::stream::MuxCred {
        user: kuid,
        privileged,
    }
}
