//! A link between a multiplexing driver and the Stream linked under it ([`Link`]), and the
//! lower half on that Stream's head pair.
//!
//! A linked Stream stays under its own lock (`mux.rs`), so whatever the upper Stream does to
//! it goes through state the two share and a kick. The [`Link`] is that state, SVR4's
//! `linkblk`/`linkinfo` between the driver's table and the lower Stream's head: the upper's
//! I_LINK leaves the lower half (the instance the driver's `Multiplexor::open_lower` makes)
//! in it, and unlinking marks it gone; each time it kicks the lower Stream (`let_go`: a
//! back-enable of the head's write queue, run after the upper's lock is dropped). The lower
//! Stream's head takes it up the next time its perimeter is entered or left
//! (`HeadProcs::sync`, `sth/plex.rs`), with no procedure running:
//!
//! ```text
//!   Waiting ──upper: offer──▶ Install ──lower: action──▶ Installed
//!      │                         │                           │
//!      └────────── cut ──────────┴─────────── cut ───────────┴──▶ Gone ──lower: action──▶ Done
//! ```
//!
//! Installing is SVR4's `setq` of the head queue pair with the driver's `st_muxrinit` and
//! `st_muxwinit` (`Stream::mux_install`): the pair becomes [`Role::Lower`] and runs the
//! lower half; taking it out gives the pair back to the Stream head with what its queues hold.
//!
//! # Locking
//! The link's lock is a leaf, taken under either Stream's lock and never with another leaf.

#[cfg(not(loom))]
use core::sync::atomic::{AtomicBool, Ordering::SeqCst};
#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, Ordering::SeqCst};

use super::{HeadProcs, Later, ModuleInfo, QRef, QueueId, Role, Stream, StreamModule};
use crate::errno::Errno;
use crate::sys::{self, Arc, Box};

/// The pair index of the Stream head (the lower half's pair on a linked Stream).
const HEAD: usize = 0;

/// Where a link stands, as its lower Stream sees it.
enum LinkState {
    /// The lower Stream agreed to be linked (it is plexed); nothing to install yet.
    Waiting,
    /// The upper made the link: install this lower half on the head pair.
    Install(Box<dyn StreamModule>, ModuleInfo),
    /// The lower half runs on the lower Stream's head pair.
    Installed,
    /// The link is gone (unlinked, failed or given up): the lower Stream is a Stream again.
    Gone,
    /// The lower Stream took up [`LinkState::Gone`].
    Done,
}

/// What the lower Stream's head is to do about its link (`sth/plex.rs`).
pub(crate) enum LinkAction {
    /// Nothing changed.
    Stay,
    /// Install this lower half (and its driver's `module_info`) on the head pair.
    Install(Box<dyn StreamModule>, ModuleInfo),
    /// The link is gone: take the lower half out, be a Stream head again.
    Restore,
}

/// One link, as the lower Stream's head and the driver's table share it (SVR4's
/// `linkblk`/`linkinfo`): the lower half on its way to the lower Stream, and whether the
/// link still stands.
pub struct Link {
    state: sys::BhLock<LinkState>,
    /// The lower half is installed (read by senders without the link's lock).
    installed: AtomicBool,
}

impl Link {
    /// A link nobody has made yet. ENOSR when memory runs out.
    pub(crate) fn new() -> Result<Arc<Link>, Errno> {
        let l = Link {
            state: crate::bh_lock!(LinkState::Waiting, "rstreams_link_state")
                .map_err(|_| Errno::ENOSR)?,
            installed: AtomicBool::new(false),
        };
        sys::new_arc(l).map_err(|_| Errno::ENOSR)
    }

    /// The upper made the link: leave the lower half for the lower Stream. The instance comes
    /// back if the link is gone already.
    pub(crate) fn offer(
        &self,
        inst: Box<dyn StreamModule>,
        info: ModuleInfo,
    ) -> Result<(), Box<dyn StreamModule>> {
        let mut st = self.state.lock();
        match *st {
            LinkState::Waiting => {
                *st = LinkState::Install(inst, info);
                Ok(())
            }
            _ => Err(inst),
        }
    }

    /// The link is gone. Hands back a lower half that was never installed (the caller drops
    /// it after the lock is released).
    pub(crate) fn cut(&self) -> Option<Box<dyn StreamModule>> {
        let old = {
            let mut st = self.state.lock();
            match *st {
                LinkState::Done | LinkState::Gone => return None,
                _ => core::mem::replace(&mut *st, LinkState::Gone),
            }
        };
        self.installed.store(false, SeqCst);
        match old {
            LinkState::Install(inst, _) => Some(inst),
            _ => None,
        }
    }

    /// The lower Stream asks what to do (under its lock).
    pub(crate) fn action(&self) -> LinkAction {
        let mut st = self.state.lock();
        match core::mem::replace(&mut *st, LinkState::Done) {
            LinkState::Install(inst, info) => {
                *st = LinkState::Installed;
                self.installed.store(true, SeqCst);
                LinkAction::Install(inst, info)
            }
            LinkState::Gone | LinkState::Done => LinkAction::Restore,
            other => {
                *st = other;
                LinkAction::Stay
            }
        }
    }

    /// Whether the lower half runs on the lower Stream (messages may be sent down the link).
    pub fn is_installed(&self) -> bool {
        self.installed.load(SeqCst)
    }
}

/// Let the lower Stream of a link that is gone know (its head takes the lower half out when
/// it next runs): the link is cut, and the lower Stream is kicked (a back-enable of its head
/// write queue) and run after this Stream's lock is dropped; the table's reference to it goes
/// with that run.
pub(crate) fn let_go(later: &mut Later, link: &Link, lower: QRef) {
    drop(link.cut());
    let p = lower.into_perim();
    if p.backenable_in(QueueId::of(HEAD, true), 0) {
        later.run(p);
    } else {
        later.release(p);
    }
}

/// The lower Stream's head write queue, where a link's kicks and the uppers' messages go.
pub(crate) const fn lower_wq() -> QueueId {
    QueueId::of(HEAD, true)
}

impl<H: HeadProcs> Stream<H> {
    /// Install a multiplexor's lower half on the head pair (SVR4 `setq` with the driver's
    /// `st_muxrinit`/`st_muxwinit`): the pair becomes [`Role::Lower`], its queues keep what
    /// they hold, its write queue publishes flow control for the uppers, and both service
    /// procedures are enabled (what waited at the head goes up; the uppers routed here are
    /// woken).
    pub(crate) fn mux_install(&mut self, inst: Box<dyn StreamModule>, info: ModuleInfo) {
        let Some(pair) = self.pair_mut(HEAD) else {
            return;
        };
        pair.role = Role::Lower;
        pair.info = info;
        let [r, w] = &mut pair.sides;
        r.srv = inst.has_rsrv();
        w.srv = inst.has_wsrv();
        r.pass = inst.pass(true);
        w.pass = inst.pass(false);
        w.publish = true;
        pair.inst = Some(inst);
        self.links_changed();
        self.qenable(QueueId::of(HEAD, false));
        self.qenable(QueueId::of(HEAD, true));
    }

    /// Take a multiplexor's lower half off the head pair, if it runs there: its close routine
    /// runs, the pair is the Stream head's again, and what the lower half still holds on its
    /// write queue goes on down the Stream (it was sent there while linked); what it holds on
    /// its read queue stays for the head to read.
    pub(crate) fn mux_uninstall(&mut self) {
        if self.pair(HEAD).map(|p| p.role) != Some(Role::Lower) {
            return;
        }
        self.run_close(HEAD);
        if let Some(pair) = self.pair_mut(HEAD) {
            pair.role = Role::Head;
            pair.info = super::HEAD_INFO;
            pair.inst = None;
            for s in pair.sides.iter_mut() {
                s.srv = false;
                s.pass = super::Pass::None;
                s.publish = false;
                s.deferred = 0;
            }
        }
        self.links_changed();
        let w = QueueId::of(HEAD, true);
        while let Some(mp) = self.qctx(w).getq() {
            self.putnext_from(w, mp);
        }
    }

    /// Whether the head pair runs a multiplexor's lower half (the Stream is linked).
    pub fn is_mux_lower(&self) -> bool {
        self.pair(HEAD).is_some_and(|p| p.role == Role::Lower)
    }
}
