// SPDX-License-Identifier: GPL-2.0
//! `pipemod`: the SVR4/LfS STREAMS pipe flush module (`I_PUSH "pipemod"` on one end of a
//! STREAMS pipe).
//!
//! Why it exists: a Stream head sends `I_FLUSH FLUSHW` downstream as M_FLUSH(FLUSHW) to flush
//! the write queues below it. In a pipe there is no driver to turn it around: the message
//! crosses the twist and reaches the *other* head on its read side, still saying FLUSHW, so
//! that head does not flush its read queue (where the unread data written at this end sits)
//! and sends the flush back instead. At the midpoint of the pipe the meaning of "read" and
//! "write" swaps, so pipemod swaps the FLUSHR and FLUSHW bits of every M_FLUSH it sees, in
//! both directions: FLUSHW at one end then flushes what the other end has not read. Pushed on
//! either end (once: twice would swap back), it covers both directions. FLUSHRW and flushes
//! with neither bit pass unchanged, as does the FLUSHBAND bit and its band byte; every other
//! message passes through untouched. No service procedures, no state.

use crate::box_dyn;
use crate::errno::Errno;
use crate::msg::{Msg, M_FLUSH};
use crate::queue::INFPSZ;
use crate::sth::consts::{FLUSHR, FLUSHW};
use crate::stream::{ModuleInfo, OpenArgs, QCtx, StreamModule, StreamTab};
use crate::sys::Box;

struct PipeMod;

/// M_FLUSH with exactly one of FLUSHR/FLUSHW gets the other one.
fn swap_flush(mut mp: Msg) -> Msg {
    if mp.db_type() != M_FLUSH {
        return mp;
    }
    let f = mp.rd().first().copied().unwrap_or(0);
    let rw = f & (FLUSHR | FLUSHW);
    if rw == 0 || rw == FLUSHR | FLUSHW {
        return mp;
    }
    // A shared data block (dupmsg'd flush) must not change under its other holder. Without
    // memory for a private copy the flush goes on unswapped: the other head then turns it
    // around once (no loop) and only this flush is lost, as when any allocation fails.
    if mp.make_writable().is_err() {
        return mp;
    }
    if let Some(b) = mp.rd_mut().and_then(|b| b.first_mut()) {
        *b = (*b & !(FLUSHR | FLUSHW)) | (rw ^ (FLUSHR | FLUSHW));
    }
    mp
}

impl StreamModule for PipeMod {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(swap_flush(mp))
    }

    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(swap_flush(mp))
    }
}

fn pipemod_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    Ok(box_dyn!(PipeMod => dyn StreamModule)?)
}

/// The pipemod module's streamtab (I_PUSH "pipemod").
pub(crate) static PIPEMOD: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 0x5104,
        mi_idname: "pipemod",
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: 5120,
        mi_lowat: 1024,
    },
    open: pipemod_open,
};
