//! The Stream head of a Stream linked under a multiplexor (SVR4 STPLEX).
//!
//! A Stream linked with I_LINK or I_PLINK keeps its lock, its file and its Stream head state;
//! what changes is its head pair, which runs the multiplexing driver's lower half while the
//! link stands (`stream/mux.rs`). The head knows through `StrHead::plex`, the [`Link`] it
//! shares with the driver's link table:
//!
//! ```text
//!   open ──sth_link_lower──▶ plexed ──(kick) install──▶ linked ──(kick) link gone──▶ open
//!     (file ops: EINVAL from here on)        lower half on pair 0        (or closed, if its
//!                                                                          file went meanwhile)
//! ```
//!
//! - The lower Stream's step of I_LINK ([`Stream::sth_link_lower`], run by the platform under
//!   this Stream's lock before the ioctl on the upper Stream) checks that the Stream can be
//!   linked and sets `plex`: from then on read, write, putmsg, getmsg and every ioctl fail
//!   with EINVAL, poll reports POLLERR, and whoever waits wakes up to find out.
//! - The upper Stream leaves the lower half in the link and kicks this Stream; the head
//!   installs it the next time its perimeter is entered or left ([`HeadProcs::sync`]), with no
//!   procedure running. What waited at the head goes up through it.
//! - When the link goes (unlinked, failed, the upper closed, the driver retired), the head
//!   takes the lower half out (its close routine runs; what it held on its write queue goes
//!   on down, what it held on its read queue is there to read), clears `plex` and wakes
//!   everybody. The Stream is back as it was: modules, driver, options.
//! - close(2) of the Stream's file while it is linked does not close it (the link holds it, as
//!   SVR4's link holds the file): `sth_close` only marks the head closed, and the Stream closes
//!   when the link goes.
//!
//! [`Link`]: crate::stream::Link
//! [`HeadProcs::sync`]: crate::stream::HeadProcs::sync

use super::{IocSlot, LinkReq, WAKE_IOCTL, WAKE_POLL, WAKE_READ, WAKE_WRITE};
use crate::errno::Errno;
use crate::sth::consts::S_ERROR;
use crate::sth::Stream;
use crate::stream::link::LinkAction;

impl Stream {
    /// Whether this Stream may be linked under a multiplexor (I_LINK's lower Stream): open,
    /// over a driver, not linked already, not itself an upper Stream of a multiplexor (no
    /// cycles), not a pipe end or FIFO.
    pub fn is_linkable(&self) -> bool {
        !self.sth.closed
            && !self.is_closed()
            && self.sth.plex.is_none()
            && self.sth.mux.is_none()
            && self.driver_wq().is_some()
            && !self.is_pipe()
            && !self.is_fifo()
    }

    /// I_LINK/I_PLINK, the lower Stream's step: the platform runs it under this Stream's lock
    /// before the ioctl on the upper Stream (see `mux.rs`). From now on this Stream's own
    /// operations fail with EINVAL; an ioctl of its own that was in progress is forgotten
    /// (its caller wakes and gets EINVAL), and held writes are sent first. EINVAL if the
    /// Stream cannot be linked ([`Stream::is_linkable`]).
    pub fn sth_link_lower(&mut self, req: &mut LinkReq) -> Result<(), Errno> {
        if req.plexed || !self.is_linkable() {
            return Err(Errno::EINVAL);
        }
        self.sth_flush_hold();
        self.sth.ioc = IocSlot::Free;
        self.sth.draining = false;
        self.sth.plex = Some(req.link().clone());
        req.plexed = true;
        self.sth
            .note(WAKE_READ | WAKE_WRITE | WAKE_POLL | WAKE_IOCTL, S_ERROR);
        Ok(())
    }

    /// The head's part of [`HeadProcs::sync`](crate::stream::HeadProcs::sync): take up what
    /// the link's other side did (install the lower half, or let the link go).
    pub(crate) fn sth_plex_sync(&mut self) {
        let Some(link) = self.sth.plex.as_ref() else {
            return;
        };
        match link.action() {
            LinkAction::Stay => {}
            LinkAction::Install(inst, info) => self.mux_install(inst, info),
            LinkAction::Restore => {
                self.mux_uninstall();
                self.sth.plex = None;
                self.sth
                    .note(WAKE_READ | WAKE_WRITE | WAKE_POLL | WAKE_IOCTL, 0);
                if self.sth.closed {
                    // Its file was closed while it was linked: now it closes.
                    self.sth_close_now();
                }
            }
        }
    }
}
