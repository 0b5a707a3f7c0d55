// SPDX-License-Identifier: GPL-2.0
//! I_LINK, I_PLINK, I_UNLINK, I_PUNLINK and I_FDINSERT in the kernel: turning the file
//! descriptor an ioctl names into the perimeter of that file's Stream, for the core
//! (`sth/mux.rs`, `sth/plex.rs`, `sth/fdinsert.rs`, `stream/mux.rs`).
//!
//! ```text
//!   I_LINK fd:  fd ─▶ lower StrFile ─▶ LinkReq::new(lower perimeter)           (no lock)
//!               lock lower ─ sth_link_lower (the head stops being one) ─ unlock
//!               lock upper ─ strioctl(I_LINK): muxid, linkblk M_IOCTL, wait for the ack ─ unlock
//!               drop the request (no lock): a link that did not complete is undone
//!   I_FDINSERT: fd ─▶ its StrFile ─▶ lock it ─ sth_fdinsert_queue ─ unlock
//!               copy the parts in, token and QRef block made (sth::call::fdinsert, no lock)
//!               lock caller ─ strioctl(I_FDINSERT): check and send ─ unlock
//! ```
//!
//! No two Stream locks are ever held together: the lower (or `fildes`'s) Stream is locked and
//! unlocked before the caller's. The lower Stream is not moved: it stays in its own perimeter,
//! its file fails every call with EINVAL while it is linked, and closing that file leaves the
//! link in place (SVR4): the Stream closes itself when the link goes (`strperim.rs`
//! `close_now`).

use core::cell::Cell;

use kernel::sync::Arc;

use crate::chardev::CallFile;
use crate::errno::Errno;
use crate::sth::consts::{I_LINK, I_PLINK, I_PUNLINK, I_UNLINK};
use crate::sth::layout::Model;
use crate::sth::call;
use crate::sth::{FdInsertArgs, IocArg, LinkReq, Part, UnlinkReq};
use crate::stream::{Perimeter, QRef};
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
use crate::uio::UserBuf;

/// The perimeter of `lower`'s Stream as the core wants it.
fn perimeter_of(p: &Arc<StrPerim>) -> Arc<dyn Perimeter> {
    p.clone()
}

/// I_LINK (`persistent == false`) or I_PLINK of `lower`'s Stream under `f`'s.
pub(crate) fn link(
    f: &StrFile,
    lower: &StrFile,
    persistent: bool,
    nonblock: bool,
) -> Result<i32, Errno> {
    if Arc::ptr_eq(f.perim(), lower.perim()) {
        return Err(Errno::EINVAL);
    }
    let mut req = LinkReq::new(perimeter_of(lower.perim()), persistent)?;
    lower
        .perim()
        .op(Caller::Nobody, |s| s.sth_link_lower(&mut req))?;
    // The request goes to the operation and, on a signal, to the cancel routine: a `Cell`
    // lends it to whichever runs (never both at once).
    let req = Cell::new(Some(req));
    let cmd = if persistent { I_PLINK } else { I_LINK };
    let reg = &*f.registry;
    let r = f.run(
        nonblock,
        |s| {
            let Some(mut q) = req.take() else {
                return Err(Errno::EINVAL.into());
            };
            let r = s.strioctl(reg, cmd, IocArg::Link(&mut q));
            req.set(Some(q));
            r
        },
        |s| {
            if let Some(mut q) = req.take() {
                s.sth_link_cancel(&mut q);
                req.set(Some(q));
            }
        },
    );
    // Dropped here, with no lock held: a link that did not complete is undone, and the lower
    // Stream is told (it puts its head back when its perimeter is next entered).
    drop(req);
    r
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

fn i32_at(b: &[u8], off: usize) -> i32 {
    b.get(off..off + 4)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i32::from_ne_bytes)
}

/// I_FDINSERT: `struct strfdinsert { strbuf ctlbuf; strbuf databuf; long flags; int fildes;
/// int offset; }` (48 bytes). `fildes` must be an open Stream (EBADF if it is not open,
/// EINVAL for another kind of file or a Stream linked under a multiplexor); the driver of the
/// caller's Stream gets a reference to `fildes`'s driver read queue with the message
/// (`sth/fdinsert.rs`). The token is 8 bytes: 32-bit callers (`compat_ioctl`) get EINVAL.
/// The parts are copied in by `sth::call::fdinsert` before the caller's Stream lock.
pub(crate) fn fdinsert(
    f: &StrFile,
    file: &CallFile<'_, StrFile>,
    arg: usize,
    nonblock: bool,
    model: Model,
) -> Result<i32, Errno> {
    if model != Model::Lp64 {
        return Err(Errno::EINVAL);
    }
    let b = UserBuf::new(arg, 48).read_array::<48>(0)?;
    let c = model.strbuf(&b, 0);
    let d = model.strbuf(&b, 16);
    let flags = b
        .get(32..40)
        .and_then(|s| s.try_into().ok())
        .map_or(0, i64::from_ne_bytes);
    let (fildes, offset) = (i32_at(&b, 40), i32_at(&b, 44));
    let them = file.any_device(fildes)?;
    // `fildes`'s Stream lock, taken and dropped before ours: never both at once.
    let found = them
        .perim()
        .op(Caller::Nobody, |s| s.sth_fdinsert_queue())?;
    let target = found.map(|(q, name)| (QRef::new(perimeter_of(them.perim()), q), name));
    let mut cio = UserBuf::new(c.buf, usize::try_from(c.len).unwrap_or(0));
    let mut dio = UserBuf::new(d.buf, usize::try_from(d.len).unwrap_or(0));
    let a = FdInsertArgs {
        ctl: Part {
            io: &mut cio,
            len: c.len,
        },
        data: (d.len >= 0).then_some(Part {
            io: &mut dio,
            len: d.len,
        }),
        flags,
        offset,
        target,
    };
    call::fdinsert(f, &f.registry, a, nonblock)
}
