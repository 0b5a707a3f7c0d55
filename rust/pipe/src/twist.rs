//! The twist: the driver at the bottom of each end of a pipe (`mi_idname` "pipe").
//!
//! It has no service procedures and holds nothing: its write put procedure passes every
//! message on to its `q_next`, which is the other end's twist read queue across the perimeter
//! (the core's `putnext` hands it to that Stream's inbound list), and its read put procedure
//! passes what arrives up to this end's head. `canputnext` at this end's head reaches the twist
//! write queue, which has no `q_next` in this Stream, so it asks the other end's published
//! flow control; the other end back-enables this one when its head drains. Both put
//! procedures say so ([`Pass`]: all of the write side, the read side's data), so the engine
//! steps over them for those messages instead of calling them.
//!
//! Close: the twist tells the other end with M_HANGUP (allocated at open, so a close never
//! fails to deliver it for want of memory) and lets go of its links. When the other end's
//! M_HANGUP arrives, the twist passes it up (the head hangs up) and lets go of its links too.

use streams_core::box_dyn;
use streams_core::errno::Errno;
use streams_core::msg::{Msg, M_HANGUP};
use streams_core::queue::INFPSZ;
use streams_core::sth::pipe::PIPE_NAME;
use streams_core::stream::{
    ModuleInfo, OpenArgs, Pass, QCtx, StreamModule, StreamTab, STRHIGH, STRLOW,
};
use streams_core::sys::Box;

/// The twist of one pipe end.
struct Twist {
    /// The M_HANGUP this end sends the other at close.
    hangup: Option<Msg>,
}

impl StreamModule for Twist {
    /// The write side passes everything on; the read side all but M_HANGUP, after which it
    /// unlinks (`rput`).
    fn pass(&self, read: bool) -> Pass {
        if read {
            Pass::Data
        } else {
            Pass::All
        }
    }

    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(mp)
    }

    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        let hangup = mp.db_type() == M_HANGUP;
        cx.putnext(mp);
        if hangup {
            // The other end closed: nothing goes there any more.
            cx.set_remote(None);
            cx.otherq().set_remote(None);
        }
    }

    fn close(&mut self, cx: &mut QCtx<'_>) {
        if let Some(h) = self.hangup.take() {
            cx.otherq().putnext(h);
        }
        cx.set_remote(None);
        cx.otherq().set_remote(None);
    }
}

fn twist_open(_: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    let hangup = Msg::with_type(M_HANGUP, 0).map_err(|_| Errno::ENOSR)?;
    Ok(box_dyn!(Twist { hangup: Some(hangup) } => dyn StreamModule)?)
}

/// The pipe's twist driver (see the module docs). Its queues never hold messages; its
/// watermarks are the Stream head's, for anything that asks.
pub static PIPE: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 5100,
        mi_idname: PIPE_NAME,
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: STRHIGH,
        mi_lowat: STRLOW,
    },
    open: twist_open,
};
