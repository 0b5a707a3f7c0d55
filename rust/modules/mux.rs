// SPDX-License-Identifier: GPL-2.0
//! I_LINK, I_PLINK, I_UNLINK and I_PUNLINK in the kernel: moving a file's Stream under a
//! multiplexing driver's Stream complex and back (`sth/mux.rs` does the STREAMS part).
//!
//! ```text
//!   I_LINK fd:  lock lower ─ take its Stream, leave Stream::plex() ─ unlock
//!               lock complex ─ sth_link (absorb, M_IOCTL, ack) ─ note muxid → lower StrShared ─ unlock
//!   unlink/close: lock complex ─ sth_unlink / sth_close ─ unlock
//!               give_back: lock complex ─ take_unlinked ─ unlock; lock lower ─ put it back ─ unlock
//! ```
//!
//! Lock order: no two Stream locks are ever held together. The complex's table of lower
//! files (`StrShared::lowers`) is taken under the complex's Stream lock or alone. While a
//! Stream is linked its file keeps working on a placeholder that fails every call with
//! EINVAL; closing that file leaves the link in place (as in SVR4) and the Stream is closed
//! when it is unlinked.

use core::cell::Cell;

use kernel::prelude::*;
use kernel::sync::Arc;

use crate::errno::Errno;
use crate::sth::consts::{I_LINK, I_PLINK, I_PUNLINK, I_UNLINK};
use crate::sth::{IocArg, LinkReq, UnlinkReq};
use crate::strfile::{StrFile, StrShared};
use crate::stream::Stream;

/// Remember that link `muxid` of `complex` holds the Stream of `lower`'s file.
fn note(complex: &StrShared, muxid: i32, lower: &Arc<StrShared>) -> Result<(), Errno> {
    let mut t = complex.lowers.lock();
    if t.iter().any(|(m, l)| *m == muxid && l.is_some()) {
        return Ok(());
    }
    let entry = (muxid, Some(lower.clone()));
    if let Some(free) = t.iter_mut().find(|(_, l)| l.is_none()) {
        *free = entry;
        return Ok(());
    }
    t.push(entry, GFP_KERNEL).map_err(|_| Errno::ENOSR)
}

/// Forget link `muxid`, returning the StrShared of its file (its entry is reused later).
fn forget(complex: &StrShared, muxid: i32) -> Option<Arc<StrShared>> {
    let mut t = complex.lowers.lock();
    let e = t.iter_mut().find(|(m, l)| *m == muxid && l.is_some())?;
    e.0 = 0;
    e.1.take()
}

/// Give Stream `s` back to the file of `lower` (or close it if that file is closed).
fn restore(lower: &StrShared, s: Stream) {
    let mut g = lower.stream.lock();
    if g.plex_state() == Some(true) {
        let plex = core::mem::replace(&mut *g, s);
        drop(g);
        drop(plex);
        lower.wq(0).wake_all();
        lower.wq(1).wake_all();
    } else {
        drop(g);
        drop(s); // its file is gone: close it (modules pop, the driver closes)
    }
}

/// Give every Stream unlinked from `complex` back to its file. Called after an operation on
/// a complex, without its lock.
pub(crate) fn give_back(complex: &StrShared) {
    loop {
        let taken = complex.stream.lock().take_unlinked();
        let Some((muxid, s)) = taken else {
            return;
        };
        match forget(complex, muxid) {
            Some(lower) => restore(&lower, s),
            None => drop(s),
        }
    }
}

/// I_LINK (`persistent == false`) or I_PLINK of `lower`'s Stream under `f`'s.
pub(crate) fn link(
    f: &StrFile,
    lower: &StrFile,
    persistent: bool,
    nonblock: bool,
) -> Result<i32, Errno> {
    let up = f.link();
    let low = lower.link();
    if Arc::ptr_eq(&up.shared, &low.shared) || !up.shared.stream.lock().is_complex() {
        return Err(Errno::EINVAL);
    }
    let plex = Stream::plex()?;
    let mut g = low.shared.stream.lock();
    if !g.is_linkable() {
        return Err(Errno::EINVAL);
    }
    let taken = core::mem::replace(&mut *g, plex);
    drop(g);
    // The request goes to the operation and, on a signal, to the cancel routine: a `Cell`
    // lends it to whichever runs (never both at once).
    let req = Cell::new(Some(LinkReq::new(taken, persistent)));
    let cmd = if persistent { I_PLINK } else { I_LINK };
    let reg = &*f.registry;
    let mut noted = Ok(());
    let r = f.run(
        nonblock,
        |s| {
            let Some(mut q) = req.take() else {
                return Err(Errno::EINVAL.into());
            };
            let r = s.strioctl(reg, cmd, IocArg::Link(&mut q));
            let m = r.as_ref().ok().copied().or(q.pending_muxid());
            req.set(Some(q));
            if let Some(m) = m {
                noted = note(&up.shared, m, &low.shared);
            }
            r
        },
        |s| {
            if let Some(mut q) = req.take() {
                s.sth_link_cancel(&mut q);
                req.set(Some(q));
            }
        },
    );
    if let Some(s) = req.take().and_then(|mut q| q.lower.take()) {
        restore(&low.shared, s);
    }
    match (r, noted) {
        (Ok(m), Ok(())) => Ok(m),
        (Ok(m), Err(e)) => {
            // No room to remember the file: undo the link rather than lose the Stream.
            let _ = unlink(f, m, persistent, true);
            Err(e)
        }
        (Err(e), _) => Err(e),
    }
}

/// I_UNLINK (`persistent == false`) or I_PUNLINK of `muxid` (or MUXID_ALL) on `f`'s Stream.
pub(crate) fn unlink(f: &StrFile, muxid: i32, persistent: bool, nonblock: bool) -> Result<i32, Errno> {
    let req = Cell::new(Some(UnlinkReq::new(muxid, persistent)));
    let cmd = if persistent { I_PUNLINK } else { I_UNLINK };
    let reg = &*f.registry;
    f.run(
        nonblock,
        |s| {
            let Some(mut q) = req.take() else {
                return Err(Errno::EINVAL.into());
            };
            let r = s.strioctl(reg, cmd, IocArg::Unlink(&mut q));
            req.set(Some(q));
            r
        },
        |s| {
            if let Some(mut q) = req.take() {
                s.sth_unlink_cancel(&mut q);
                req.set(Some(q));
            }
        },
    )
}
