//! poll(2) at the Stream head (`strpoll`): the event mask from the head state.
//!
//! Readable bits look at the first message at the head (SVR4 reports the class of `q_first`);
//! writable bits ask the next queue with bcanputnext, so a refusal arms the back-enable that
//! wakes the poller. Errors and hangup are always reported; POLLOUT is not after a hangup.

use super::consts::*;
use crate::sth::Stream;

impl Stream {
    /// The poll mask for the `events` asked (POLLERR, POLLHUP and POLLNVAL are always
    /// reported when true).
    pub fn strpoll(&mut self, events: u32) -> u32 {
        if self.sth.closed {
            return POLLNVAL;
        }
        if self.sth.plex.is_some() {
            return POLLERR; // linked under a multiplexor: every operation fails
        }
        let mut m = 0u32;
        if self.sth.rerr.is_some() || self.sth.werr.is_some() {
            m |= POLLERR;
        }
        if self.sth.hangup {
            m |= POLLHUP;
        }
        if let Some(first) = self.queue(self.head_rq()).and_then(|q| q.first()) {
            if first.is_hipri() {
                m |= POLLPRI;
            } else if first.band() > 0 {
                m |= POLLIN | POLLRDBAND;
            } else {
                m |= POLLIN | POLLRDNORM;
            }
        }
        if self.sth.ev.sigpoll & S_MSG != 0 {
            m |= POLLMSG;
        }
        if !self.sth.hangup && self.sth.werr.is_none() {
            if events & (POLLOUT | POLLWRNORM) != 0 && self.sth_canput(0) {
                m |= POLLOUT | POLLWRNORM;
            }
            if events & POLLWRBAND != 0 && self.sth_canput(1) {
                m |= POLLWRBAND;
            }
        }
        m & (events | POLLERR | POLLHUP | POLLNVAL)
    }
}
