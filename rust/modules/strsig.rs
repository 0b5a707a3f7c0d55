// SPDX-License-Identifier: GPL-2.0
//! Signals a Stream head sends: SIGPOLL (or SIGURG) to its I_SETSIG registrations, the
//! M_SIG/M_PCSIG signals of messages that reached it, SIGIO to its O_ASYNC files, and SIGPIPE
//! to a writer of a hung-up pipe. All are sent after the Stream lock is dropped, from what the
//! lock hold collected: the head's events (`sth::HeadEvents`) and, when they call for it, a
//! copy of the registrations ([`Signals`]). A registration names its process by a counted
//! reference and is checked like F_SETOWN when it is signalled (`sigowner.rs`).

use crate::chardev;
use crate::fasync::{FasyncList, POLL_ERR, POLL_HUP, POLL_IN, POLL_OUT, POLL_PRI};
use crate::sth::consts::*;
use crate::sth::{HeadEvents, SigReg, StrHead, NSIGREG};

/// SIGPIPE.
const SIGPIPE: i32 = 13;
/// SIGURG.
const SIGURG: i32 = 23;
/// SIGPOLL (SIGIO on Linux).
const SIGPOLL_NR: i32 = 29;

/// The I_SETSIG registrations to signal after a lock hold (empty unless its events need them).
pub(crate) struct Signals {
    regs: [Option<SigReg>; NSIGREG],
}

impl Signals {
    /// Whether `ev` has SIGPOLL events or M_SIG signals for registrations of `head`, and
    /// `head` has some: [`Signals::of`] would copy them.
    #[inline]
    pub(crate) fn due(head: &StrHead, ev: &HeadEvents) -> bool {
        (ev.sigpoll != 0 || ev.signals != 0) && head.sig_list().next().is_some()
    }

    /// The registrations of `head` if `ev` has SIGPOLL events or M_SIG signals for them;
    /// `None` (nothing copied, nothing to send) if it has neither or `head` has no
    /// registration: the common lock hold builds and drops no array.
    pub(crate) fn of(head: &StrHead, ev: &HeadEvents) -> Option<Signals> {
        if ev.sigpoll == 0 && ev.signals == 0 {
            return None;
        }
        let mut regs = [const { None }; NSIGREG];
        let mut any = false;
        for (slot, r) in regs.iter_mut().zip(head.sig_list()) {
            *slot = Some(r.clone());
            any = true;
        }
        any.then_some(Signals { regs })
    }

    /// Send them: SIGPOLL to each registration whose events happened (SIGURG instead for
    /// banded input with S_BANDURG); M_SIG/M_PCSIG signals to every registered process
    /// (rstreams has no controlling-terminal process group for a Stream).
    pub(crate) fn send(&self, ev: &HeadEvents) {
        for reg in self.regs.iter().flatten() {
            let hit = reg.events & ev.sigpoll;
            if hit & !S_BANDURG != 0 {
                let urg = reg.events & S_BANDURG != 0 && hit & S_RDBAND != 0;
                reg.owner.signal(if urg { SIGURG } else { SIGPOLL_NR });
            }
            for sig in 1..64 {
                if ev.signals & (1u64 << sig) != 0 {
                    reg.owner.signal(sig);
                }
            }
        }
    }
}

/// SIGIO for the O_ASYNC registrations of a head, for the `S_*` events that happened there:
/// input as for SIGPOLL's S_INPUT/S_RDNORM/S_RDBAND (POLL_IN), S_HIPRI (POLL_PRI),
/// S_OUTPUT/S_WRBAND (POLL_OUT), S_ERROR (POLL_ERR), S_HANGUP (POLL_HUP).
pub(crate) fn kill_fasync(list: &FasyncList, sigpoll: u32) {
    if sigpoll == 0 {
        return;
    }
    for (events, code) in [
        (S_INPUT | S_RDNORM | S_RDBAND, POLL_IN),
        (S_HIPRI, POLL_PRI),
        (S_OUTPUT | S_WRBAND, POLL_OUT),
        (S_ERROR, POLL_ERR),
        (S_HANGUP, POLL_HUP),
    ] {
        if sigpoll & events != 0 {
            list.kill(code);
        }
    }
}

/// SIGPIPE to the calling process (a write on a hung-up pipe with SNDPIPE).
pub(crate) fn sigpipe_current() {
    chardev::send_sig_current(SIGPIPE);
}
