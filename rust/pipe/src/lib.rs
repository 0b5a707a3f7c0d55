//! STREAMS pipes: the `pipe` driver of rstreams, built on the core's perimeters.
//!
//! A STREAMS pipe is two Streams, one per end, each with its own Stream head and its own lock
//! (its perimeter). The driver of each end is the pipe's *twist* ([`PIPE`], `twist.rs`): its
//! write queue's `q_next` is the other end's twist read queue, across the perimeter, so a write
//! at one end goes up the other (through whatever modules are pushed on either end), and flow
//! control and back-enables run across as the core's `stream/cross.rs` describes:
//!
//! ```text
//!   end A: head ─wq─▶ [modules A] ─▶ twist A ═══▶ twist B ─▶ [modules B] ─rq─▶ head :end B
//!          head ◀─rq─ [modules A] ◀─ twist A ◀═══ twist B ◀─ [modules B] ◀─wq─ head
//! ```
//!
//! Making a pipe is the platform's business, because it owns the perimeters: [`end`] makes
//! one end (a pipe head over the twist, hung up: it reads end of file and writes fail with
//! EPIPE until it is connected), the platform wraps both in perimeters, then [`connect`]s each
//! to the other under its own lock (never both locks at once). I_PIPE does the same with two
//! ends opened separately. Closing one end hangs up the other.
//!
//! This crate is compiled by cargo against `streams_core` on the host, and mounted into
//! `streams.ko` next to the core, where `streams_core` names the module's own crate root.
//! Paths inside the crate are therefore relative (`super::`), never `crate::`.
#![cfg_attr(not(rstreams_kernel), no_std)]
#![cfg_attr(not(rstreams_kernel), deny(unsafe_code))]

pub mod connld;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;
mod twist;

pub use connld::CONNLD;
pub use twist::PIPE;

use streams_core::errno::Errno;
use streams_core::sth::{StrHead, Stream};
use streams_core::stream::{OpenArgs, Perimeter, QRef, QueueId};
use streams_core::sys::Arc;

/// One unconnected end of a pipe: a pipe Stream head over the twist. It is hung up until
/// [`connect`]ed. ENOSR when memory runs out.
pub fn end() -> Result<Stream, Errno> {
    let mut s = Stream::head_only(StrHead::new())?;
    s.sth_set_pipe();
    s.attach_driver(&PIPE, &OpenArgs::driver(0))?;
    s.sth_hangup_now();
    Ok(s)
}

/// The twist's read queue of an end made by [`end`]: where the other end puts (read it under
/// this end's lock, and give it to the other end's [`connect`]).
pub fn twist_rq(s: &Stream) -> Option<QueueId> {
    s.driver_rq()
        .filter(|q| s.name(*q) == Some(streams_core::sth::pipe::PIPE_NAME))
}

/// Connect end `s` (under its lock) to the other end: `peer` is the other end's perimeter and
/// `peer_rq` its twist read queue ([`twist_rq`]). The hangup of an unconnected end is lifted.
/// EINVAL if `s` is not an unconnected end.
pub fn connect(s: &mut Stream, peer: Arc<dyn Perimeter>, peer_rq: QueueId) -> Result<(), Errno> {
    let rq = twist_rq(s).ok_or(Errno::EINVAL)?;
    let wq = rq.otherq();
    if s.remote(wq).is_some() || s.sth().is_closed() {
        return Err(Errno::EINVAL);
    }
    // Puts from here go to the other end's twist read queue; back-enables for what the other
    // end sends here go to its twist write queue.
    s.set_remote(wq, Some(QRef::new(peer.clone(), peer_rq)));
    s.set_remote(rq, Some(QRef::new(peer, peer_rq.otherq())));
    s.sth_unhangup();
    Ok(())
}

/// Whether end `s` is connected to another end.
pub fn is_connected(s: &Stream) -> bool {
    twist_rq(s).is_some_and(|rq| s.remote(rq.otherq()).is_some())
}
