//! `connld`: the SVR4 connld(7) module, unique connections through a named STREAMS pipe.
//!
//! A server makes a STREAMS pipe, pushes `connld` on one end and fattaches that end to a path.
//! Every open(2) of the path then gets a *new* pipe instead of the attached end: the opener's
//! file is one end of it, and the other end travels to the server as a passed file (M_PASSFP,
//! as I_SENDFD sends it) from the connld end, so it arrives at the server's end of its own pipe
//! for I_RECVFD. Each client thus has a private, full-duplex channel to the server.
//!
//! In SVR4 this happens in connld's open routine, which the Stream head calls on every open of
//! the Stream. rstreams calls module open routines only at I_PUSH (an open of an attached path
//! adds a file to the same head, like an open of a FIFO), so the platform's open of an
//! attached path asks the head ([`sth_connld`]) and does the work itself: it creates
//! the pipe, builds the M_PASSFP message and hands it to [`connld_pass`]. The module's
//! own procedures only pass messages through; its open refuses a Stream that is not a STREAMS
//! pipe end (EINVAL), as connld is meaningless anywhere else.

use streams_core::box_dyn;
use streams_core::errno::Errno;
use streams_core::msg::{Msg, M_PASSFP};
use streams_core::queue::INFPSZ;
use streams_core::sth::pipe::PIPE_NAME;
use streams_core::sth::{Block, Stop, Stream};
use streams_core::stream::{ModuleInfo, OpenArgs, QCtx, Role, StreamModule, StreamTab};
use streams_core::sys::Box;

/// The module's name (`I_PUSH "connld"`).
pub const CONNLD_NAME: &str = "connld";

struct Connld;

impl StreamModule for Connld {
    fn rput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(mp)
    }

    fn wput(&mut self, cx: &mut QCtx<'_>, mp: Msg) {
        cx.putnext(mp)
    }
}

fn connld_open(cx: &mut QCtx<'_>, _: &OpenArgs) -> Result<Box<dyn StreamModule>, Errno> {
    if cx.driver_name() != Some(PIPE_NAME) {
        return Err(Errno::EINVAL);
    }
    Ok(box_dyn!(Connld => dyn StreamModule)?)
}

/// connld's streamtab (registered in `fmodsw` by the platform).
pub static CONNLD: StreamTab = StreamTab {
    info: ModuleInfo {
        mi_idnum: 1003,
        mi_idname: CONNLD_NAME,
        mi_minpsz: 0,
        mi_maxpsz: INFPSZ,
        mi_hiwat: 5120,
        mi_lowat: 1024,
    },
    open: connld_open,
};

/// Whether `connld` is pushed on this Stream head (anywhere between the head and the
/// driver, or the twist of a pipe): opens of a path attached to it then make new pipes.
pub fn sth_connld(s: &Stream) -> bool {
    s.names_down()
        .any(|(r, n)| r == Role::Module && n == CONNLD_NAME)
}

/// An open of a path attached to this head: send `mp` (the M_PASSFP carrying the server's
/// end of the new pipe, built by the platform) to the other end of this pipe, like
/// I_SENDFD. Takes `mp` only when it is sent (`Ok(true)`).
///
/// `Ok(false)`, `mp` untouched: connld is not (or no longer) on this head; the open is an
/// ordinary one. Errors: EINVAL if `mp` is not M_PASSFP or this is not a pipe; ENXIO when
/// the other end is gone (hung up: nobody to accept; never EPIPE or SIGPIPE, this is an
/// open); the write error; when the other end's read queue is full (too many connections
/// not yet received), EAGAIN if `nonblock`, else `Block::Writable(0)` with `mp` kept, to
/// be called again when the server has taken some.
pub fn connld_pass(s: &mut Stream, mp: &mut Option<Msg>, nonblock: bool) -> Result<bool, Stop> {
    if !sth_connld(s) {
        return Ok(false);
    }
    if !s.is_pipe() || mp.as_ref().is_none_or(|m| m.db_type() != M_PASSFP) {
        return Err(Errno::EINVAL.into());
    }
    if s.sth().is_closed() {
        return Err(Errno::EBADF.into());
    }
    if let Some(e) = s.sth().werr() {
        return Err(e.into());
    }
    if s.sth().hangup() {
        return Err(Errno::ENXIO.into());
    }
    if !s.sth_canput(0) {
        return Err(if nonblock {
            Errno::EAGAIN.into()
        } else {
            Stop::Block(Block::Writable(0))
        });
    }
    match mp.take() {
        Some(m) => {
            s.sth_flush_hold();
            s.write(m);
            Ok(true)
        }
        None => Err(Errno::EINVAL.into()),
    }
}
