// SPDX-License-Identifier: GPL-2.0
//! Making STREAMS pipes out of files: I_PIPE (connect two unconnected ends opened on the pipe
//! device, the LfS way) and a new connected pair for `I_FIFO_PIPE` and connld.
//!
//! Each end is its own Stream ([`StrPerim`]); connecting takes one end's lock, then the
//! other's, never both (`crate::pipe::connect` under each in turn). An I_PIPE claims both files by
//! compare-and-swap on their `pipe_state` (UNCONNECTED → WELDING), so two welds naming the
//! same file cannot both proceed, and the files keep their Streams: nothing moves.

use core::ptr;
use core::sync::atomic::Ordering;

use kernel::sync::Arc;

use crate::errno::Errno;
use crate::stream::{Perimeter, Registry};
use crate::strfile::{StrFile, Unfiled, CONNECTED, UNCONNECTED, WELDING};
use crate::strperim::{Caller, StrPerim};

/// Connect the pipe ends of `a` and `b` to each other (each under its own lock in turn).
/// EINVAL if either is not an unconnected end (or is closed).
pub(crate) fn connect(a: &Arc<StrPerim>, b: &Arc<StrPerim>) -> Result<(), Errno> {
    let pass = crate::fdpass::PipePass::new()?;
    let arq = a.op(Caller::Nobody, |s| crate::pipe::twist_rq(s)).ok_or(Errno::EINVAL)?;
    let brq = b.op(Caller::Nobody, |s| crate::pipe::twist_rq(s)).ok_or(Errno::EINVAL)?;
    let pa: Arc<dyn Perimeter> = a.clone();
    let pb: Arc<dyn Perimeter> = b.clone();
    a.op(Caller::Nobody, |s| crate::pipe::connect(s, pb, brq))?;
    if let Err(e) = b.op(Caller::Nobody, |s| crate::pipe::connect(s, pa, arq)) {
        // `b` went away meanwhile: `a` is connected to a closed end, i.e. hung up.
        a.op(Caller::Nobody, |s| s.sth_hangup_now());
        return Err(e);
    }
    // Both ends count the files in flight between them in one place (`fdpass.rs`). Set
    // after the connect: until then neither end is a pipe I_SENDFD can send into.
    a.set_pipe(pass.clone());
    b.set_pipe(pass);
    Ok(())
}

/// The two ends of a new, connected STREAMS pipe.
pub(crate) fn new_pipe() -> Result<(Arc<StrPerim>, Arc<StrPerim>), Errno> {
    let a = StrPerim::new(crate::pipe::end()?)?;
    let b = match crate::pipe::end().and_then(StrPerim::new) {
        Ok(b) => b,
        Err(e) => {
            a.close_now(Caller::Nobody);
            return Err(e);
        }
    };
    if let Err(e) = connect(&a, &b) {
        a.close_now(Caller::Nobody);
        b.close_now(Caller::Nobody);
        return Err(e);
    }
    Ok((a, b))
}

/// The two ends of a new, connected STREAMS pipe as files-to-be: whatever fails, both ends are
/// closed (dropping an [`Unfiled`] closes its Stream).
pub(crate) fn new_pipe_files(registry: &Arc<Registry>) -> Result<(Unfiled, Unfiled), Errno> {
    let (a, b) = new_pipe()?;
    let a = match Unfiled::new(a, registry.clone()) {
        Ok(a) => a,
        Err(e) => {
            // `a` was closed by the failed `StrFile::new`; `b` is not a file yet.
            b.close_now(Caller::Nobody);
            return Err(e);
        }
    };
    let b = Unfiled::new(b, registry.clone())?;
    Ok((a, b))
}

/// I_PIPE: connect/// I_PIPE: connect this unconnected pipe end and `other` into a STREAMS pipe. EINVAL unless
/// both are distinct unconnected ends of the pipe device.
pub(crate) fn weld(me: &StrFile, other: &StrFile) -> Result<(), Errno> {
    if ptr::eq(me, other) {
        return Err(Errno::EINVAL);
    }
    let claim = |f: &StrFile| {
        f.pipe_state
            .compare_exchange(UNCONNECTED, WELDING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    };
    if !claim(me) {
        return Err(Errno::EINVAL);
    }
    if !claim(other) {
        me.pipe_state.store(UNCONNECTED, Ordering::Release);
        return Err(Errno::EINVAL);
    }
    let r = connect(me.perim(), other.perim());
    // A connect fails only if an end is not what its state says; neither is then usable by
    // another I_PIPE (`crate::pipe::connect` refuses an end that is linked already).
    let state = if r.is_ok() { CONNECTED } else { UNCONNECTED };
    me.pipe_state.store(state, Ordering::Release);
    other.pipe_state.store(state, Ordering::Release);
    r
}
