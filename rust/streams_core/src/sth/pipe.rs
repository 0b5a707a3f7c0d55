//! The Stream head's side of STREAMS pipes: what a head does differently when it is one end
//! of a pipe.
//!
//! A STREAMS pipe is two Streams, one per end, each with its own head and its own lock; the
//! driver of each is the pipe's *twist* (`rust/pipe`), whose write queue puts across to the
//! other end's twist read queue, so that a write at one end is read at the other and flow
//! control and back-enables run across (`stream/cross.rs`):
//!
//! ```text
//!   end A: head ─wq─▶ [modules A] ─▶ twist A ═══▶ twist B ─▶ [modules B] ─rq─▶ head :end B
//!          head ◀─rq─ [modules A] ◀─ twist A ◀═══ twist B ◀─ [modules B] ◀─wq─ head
//! ```
//!
//! Pipe heads have SNDPIPE (EPIPE and SIGPIPE after hangup); closing one end hangs up the
//! other (the twist sends M_HANGUP across), whose reader then gets end of file once the data
//! already there is read.

use super::{Stream, WAKE_POLL, WAKE_READ, WAKE_WRITE};
use crate::stream::Role;

/// The name (`mi_idname`) of the pipe's twist driver.
pub const PIPE_NAME: &str = "pipe";

impl Stream {
    /// Whether this Stream is one end of a STREAMS pipe (its driver is the twist).
    pub fn is_pipe(&self) -> bool {
        self.driver_wq()
            .and_then(|q| self.name(q))
            .is_some_and(|n| n == PIPE_NAME)
    }

    /// Roles and names from the head down, as the user sees them (I_LIST, I_FIND): the twist
    /// of a pipe is not a driver of the user's (SVR4 pipes have none).
    pub fn sth_names(&self) -> impl Iterator<Item = (Role, &'static str)> + '_ {
        self.names_down()
            .filter(|(r, n)| !(*r == Role::Driver && *n == PIPE_NAME))
    }

    /// Hang this head up now, as M_HANGUP does (an unconnected pipe end).
    pub fn sth_hangup_now(&mut self) {
        self.sth_set_hangup();
    }

    /// Lift a hangup, as M_UNHANGUP does (a pipe end that was connected).
    pub fn sth_unhangup(&mut self) {
        self.sth.hangup = false;
        self.sth.note(WAKE_READ | WAKE_WRITE | WAKE_POLL, 0);
    }
}
