//! Multiplexing at the upper Stream head: joining the driver's link table, I_LINK, I_PLINK,
//! I_UNLINK and I_PUNLINK, and what closing an upper Stream does to its links.
//!
//! Every open of a multiplexing driver is its own Stream. The platform gives it the driver's
//! [`MuxTable`] ([`Stream::sth_mux_attach`]); the lower Stream of a link stays under its own
//! lock and runs the driver's lower half on its head pair (`stream/mux.rs`, `plex.rs`).
//!
//! I_LINK and I_PLINK take two Streams and two locks, never held together. The platform
//! resolves the file descriptor into the lower Stream's perimeter and makes a [`LinkReq`];
//! under the lower Stream's lock it asks that Stream to be linked
//! ([`Stream::sth_link_lower`]: the Stream is checked and from then on its own file
//! operations fail with EINVAL); then, under the upper Stream's lock, it runs the ioctl like
//! I_STR ([`IocArg::Link`](super::IocArg::Link)): the head records the link in the table (a
//! new muxid), has the driver make the lower half
//! ([`Multiplexor::open_lower`](crate::stream::Multiplexor::open_lower)), leaves it in the
//! link and kicks the lower Stream, which installs it the next time it runs (right after
//! this lock hold), and sends the driver `M_IOCTL` (`ioc_cmd` I_LINK or I_PLINK) carrying a
//! [`LinkBlk`], as in SVR4. The ioctl completes with the driver's M_IOCACK (the caller gets
//! the muxid) or fails with its M_IOCNAK; a link that fails or is given up
//! ([`Stream::sth_link_cancel`], or the request dropped) is taken out of the table and the
//! lower Stream kicked again: it takes the lower half out and is a Stream again.
//!
//! Unlinking (`I_UNLINK` for links made by this Stream, `I_PUNLINK` for persistent links,
//! `MUXID_ALL` for all of them) sends M_IOCTL I_UNLINK/I_PUNLINK; after the driver's
//! acknowledgement the link leaves the table and its lower Stream is kicked: it comes back
//! intact (its modules, driver and the messages its lower half held), under its own file, or
//! closes if that file was closed while it was linked. Closing an upper Stream unlinks what it
//! linked with I_LINK (the driver is told with M_IOCTL I_UNLINK; its answer is not awaited)
//! and takes the Stream out of the table (links routed to it lose their route); persistent
//! links stay until I_PUNLINK, or until the platform retires the driver's table
//! ([`MuxTable::unlink_all`]).
//!
//! What changed from the single-arena design (one lock for the driver's every Stream, linked
//! Streams moved into it): a link no longer moves the lower Stream, so the linked file keeps
//! its Stream (its operations fail with EINVAL instead of running on a placeholder) and
//! nothing has to be handed back to the platform after an unlink; `l_qtop`/`l_qbot` of the
//! [`LinkBlk`] name queues of two different Streams (informative only: drivers route through
//! the table by muxid); and the lower half is installed when the lower Stream next runs, not
//! in the ioctl's lock hold, so the uppers do not send down a link before it is
//! ([`MuxTable::send_down`] holds the message meanwhile).

use super::consts::{I_LINK, I_PLINK, I_PUNLINK, I_UNLINK, MUXID_ALL};
use super::ioctl::IocBlk;
use super::{Block, IocSlot, Stop, WAKE_IOCTL};
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_IOCACK, M_IOCTL};
use crate::sth::Stream;
use crate::stream::link::{let_go, lower_wq};
use crate::stream::{Link, MuxTable, Perimeter, QRef, QueueId, UpperId};
use crate::sys::Arc;

/// Size of an encoded [`LinkBlk`] (the C `struct linkblk` on LP64).
pub const LINKBLK_SIZE: usize = 24;

/// `struct linkblk`: the data of the M_IOCTL a multiplexing driver gets for a link change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkBlk {
    /// `l_qtop`: the upper driver write queue of the Stream that linked (none for I_PLINK).
    pub qtop: Option<QueueId>,
    /// `l_qbot`: the lower write queue (the head pair of the linked Stream, in that Stream).
    pub qbot: QueueId,
    /// `l_index`: the multiplexor id.
    pub index: i32,
}

impl LinkBlk {
    /// The bytes: `l_qtop` u64 @0 (all ones for none), `l_qbot` u64 @8, `l_index` i32 @16.
    pub fn encode(&self) -> [u8; LINKBLK_SIZE] {
        let mut b = [0u8; LINKBLK_SIZE];
        let top = self.qtop.map_or(u64::MAX, QueueId::raw);
        for (d, s) in b.iter_mut().zip(top.to_ne_bytes()) {
            *d = s;
        }
        for (d, s) in b.iter_mut().skip(8).zip(self.qbot.raw().to_ne_bytes()) {
            *d = s;
        }
        for (d, s) in b.iter_mut().skip(16).zip(self.index.to_ne_bytes()) {
            *d = s;
        }
        b
    }
    /// Parse the linkblk in the data part of a link M_IOCTL (`None` if absent or short).
    pub fn from_ioctl(mp: &Msg) -> Option<LinkBlk> {
        let b = mp.blocks().nth(1)?.rd();
        let u = |i: usize| -> Option<u64> {
            Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
        };
        let top = u(0)?;
        Some(LinkBlk {
            qtop: if top == u64::MAX {
                None
            } else {
                QueueId::from_raw(top)
            },
            qbot: QueueId::from_raw(u(8)?)?,
            index: i32::from_ne_bytes(b.get(16..20)?.try_into().ok()?),
        })
    }
}

/// An upper Stream's place in its driver's link table (the head's part).
pub(crate) struct MuxUpper {
    pub(crate) table: Arc<MuxTable>,
    pub(crate) me: UpperId,
}

/// I_LINK/I_PLINK of one lower Stream, across its steps and the ioctl's retries (see the
/// module docs). Dropping a request whose link did not complete undoes it.
pub struct LinkReq {
    /// The lower Stream's head write queue, until the table takes it.
    lower: Option<QRef>,
    link: Arc<Link>,
    persistent: bool,
    /// The lower Stream agreed ([`Stream::sth_link_lower`]).
    pub(crate) plexed: bool,
    /// The table the link is recorded in, once it is.
    table: Option<Arc<MuxTable>>,
    muxid: Option<i32>,
    id: Option<u32>,
    done: bool,
}

impl LinkReq {
    /// I_LINK (`persistent == false`) or I_PLINK of the Stream behind `lower` (the platform
    /// resolved the file descriptor into its perimeter). ENOSR when memory runs out.
    pub fn new(lower: Arc<dyn Perimeter>, persistent: bool) -> Result<LinkReq, Errno> {
        Ok(LinkReq {
            lower: Some(QRef::new(lower, lower_wq())),
            link: Link::new()?,
            persistent,
            plexed: false,
            table: None,
            muxid: None,
            id: None,
            done: false,
        })
    }

    /// Whether this is I_PLINK.
    pub fn persistent(&self) -> bool {
        self.persistent
    }

    /// The muxid of the link in progress (recorded, its M_IOCTL unanswered), if any.
    pub fn pending_muxid(&self) -> Option<i32> {
        self.muxid.filter(|_| !self.done)
    }

    /// The link this request makes (for the lower Stream's head).
    pub(crate) fn link(&self) -> &Arc<Link> {
        &self.link
    }
}

impl Drop for LinkReq {
    /// A link that did not complete goes: out of the table if it got there, and the lower
    /// Stream (plexed or not) is kicked on the platform's runner to be a Stream again.
    fn drop(&mut self) {
        if self.done {
            return;
        }
        let lower = match (self.table.take(), self.muxid.take()) {
            (Some(t), Some(m)) => t.remove_link(m).map(|(_, q)| q),
            _ => None,
        };
        drop(self.link.cut());
        if let Some(q) = lower.or_else(|| self.lower.take()) {
            q.backenable(0);
        }
    }
}

/// I_UNLINK/I_PUNLINK and its state across retries.
pub struct UnlinkReq {
    persistent: bool,
    muxid: i32,
    id: Option<u32>,
    cur: Option<i32>,
}

impl UnlinkReq {
    /// I_UNLINK (`persistent == false`) or I_PUNLINK of `muxid` (or `MUXID_ALL`).
    pub fn new(muxid: i32, persistent: bool) -> UnlinkReq {
        UnlinkReq {
            persistent,
            muxid,
            id: None,
            cur: None,
        }
    }

    /// Whether this is I_PUNLINK.
    pub fn persistent(&self) -> bool {
        self.persistent
    }
}

impl Stream {
    /// The platform opened this Stream on a multiplexing driver whose link table is `table`:
    /// the Stream joins it (so its driver can route to links and other Streams can link under
    /// it). Call once, after [`Stream::set_perimeter`](crate::stream::Stream::set_perimeter).
    /// EINVAL if the driver is no multiplexor, the Stream was not given its perimeter or has
    /// joined already; ENOSR.
    /// `cred`: who opened this Stream (the link table's permission model: `MuxCred`).
    pub fn sth_mux_attach(
        &mut self,
        table: Arc<MuxTable>,
        cred: crate::stream::MuxCred,
    ) -> Result<(), Errno> {
        if self.sth.mux.is_some() || self.sth.closed || self.sth.plex.is_some() {
            return Err(Errno::EINVAL);
        }
        let d = self.driver_wq().ok_or(Errno::EINVAL)?;
        if self.mux_of(d).is_none() {
            return Err(Errno::EINVAL);
        }
        let (wq, rq) = match (self.qref_here(d), self.qref_here(d.rd())) {
            (Some(w), Some(r)) => (w, r),
            _ => return Err(Errno::EINVAL),
        };
        let me = match table.join(wq, rq, cred) {
            Ok(me) => me,
            Err((e, wq, rq)) => {
                self.later_mut().release(wq.into_perim());
                self.later_mut().release(rq.into_perim());
                return Err(e);
            }
        };
        if let Some(m) = self.mux_of(d) {
            m.attach(table.clone(), me);
        }
        // The lower halves routed here put into the driver's read queue.
        if let Some(s) = self.side_mut(d.rd()) {
            s.publish = true;
        }
        self.links_changed();
        self.sth.mux = Some(MuxUpper { table, me });
        Ok(())
    }

    /// The driver instance of write queue `d` as a multiplexor, if it is one (and not busy).
    fn mux_of(&mut self, d: QueueId) -> Option<&mut dyn crate::stream::Multiplexor> {
        self.pair_mut(d.pair())?.inst.as_deref_mut()?.mux()
    }

    /// Whether this Stream is an upper Stream of a multiplexing driver (it joined the
    /// driver's link table).
    pub fn is_mux_upper(&self) -> bool {
        self.sth.mux.is_some()
    }

    /// The M_IOCTL of a link change.
    fn link_ioctl(cmd: u32, id: u32, lb: &LinkBlk) -> Result<Msg, Errno> {
        let ioc = IocBlk {
            cmd: cmd as i32,
            id,
            count: LINKBLK_SIZE as u32,
            ..IocBlk::default()
        };
        let mut m = Msg::from_bytes(M_IOCTL, &ioc.encode())?;
        m.linkb(Msg::from_bytes(M_DATA, &lb.encode())?);
        Ok(m)
    }

    /// Take the answer out of the ioctl slot: `Ok(())` for an M_IOCACK without error.
    fn sth_ioc_verdict(&mut self) -> Result<(), Errno> {
        let slot = core::mem::replace(&mut self.sth.ioc, IocSlot::Free);
        self.sth.note(WAKE_IOCTL, 0);
        let IocSlot::Answered(_, mp) = slot else {
            return Err(Errno::EINVAL);
        };
        let ioc = IocBlk::decode(mp.rd()).unwrap_or_default();
        match (mp.db_type() == M_IOCACK, ioc.error) {
            (true, 0) => Ok(()),
            (_, 0) => Err(Errno::EINVAL),
            (_, e) => Err(Errno(e)),
        }
    }

    /// I_LINK/I_PLINK on an upper Stream (see the module docs). Returns the muxid.
    pub(crate) fn sth_link(&mut self, req: &mut LinkReq) -> Result<i32, Stop> {
        if req.done {
            return Err(Errno::EINVAL.into());
        }
        if let Some(muxid) = req.muxid {
            let r = match self.sth_ioc_slot(&mut req.id) {
                Ok(true) => self.sth_ioc_verdict().map_err(Stop::from),
                Err(Stop::Block(b)) => return Err(Stop::Block(b)),
                Ok(false) => Err(Errno::EINVAL.into()),
                Err(e) => Err(e),
            };
            return match r {
                Ok(()) => {
                    if let Some(t) = &req.table {
                        t.set_linked(muxid);
                    }
                    req.done = true;
                    Ok(muxid)
                }
                Err(e) => {
                    self.link_undo(req);
                    Err(e)
                }
            };
        }
        if self.sth_ioc_slot(&mut req.id)? {
            return Err(Errno::EINVAL.into()); // an answer for an ioctl this request never sent
        }
        self.sth_ioc_ok()?;
        let Some(MuxUpper { table, me }) = self.sth.mux.as_ref() else {
            return Err(Errno::EINVAL.into());
        };
        let (table, me) = (table.clone(), *me);
        let d = self.driver_wq().ok_or(Errno::EINVAL)?;
        let info = self.pair(d.pair()).map(|p| p.info).ok_or(Errno::EINVAL)?;
        if !req.plexed || self.mux_of(d).is_none() {
            return Err(Errno::EINVAL.into());
        }
        let lower = req.lower.take().ok_or(Errno::EINVAL)?;
        let muxid = match table.add_link(&req.link, lower, req.persistent, me) {
            Ok(m) => m,
            Err((e, lower)) => {
                req.lower = Some(lower);
                return Err(e.into());
            }
        };
        req.table = Some(table.clone());
        req.muxid = Some(muxid);
        let inst = match self.mux_of(d).map(|m| m.open_lower(muxid)) {
            Some(Ok(i)) => i,
            Some(Err(e)) => {
                self.link_undo(req);
                return Err(e.into());
            }
            None => {
                self.link_undo(req);
                return Err(Errno::EINVAL.into());
            }
        };
        let id = self.sth_ioc_id();
        let lb = LinkBlk {
            qtop: (!req.persistent).then_some(d),
            qbot: lower_wq(),
            index: muxid,
        };
        let cmd = if req.persistent { I_PLINK } else { I_LINK };
        let m = match Stream::link_ioctl(cmd, id, &lb) {
            Ok(m) => m,
            Err(e) => {
                drop(inst);
                self.link_undo(req);
                return Err(e.into());
            }
        };
        if let Err(inst) = req.link.offer(inst, info) {
            drop(inst);
            drop(m);
            self.link_undo(req);
            return Err(Errno::EINVAL.into());
        }
        // The lower Stream installs the lower half when it runs, right after this lock hold.
        self.link_kick(&table, muxid);
        req.id = Some(id);
        self.sth_flush_hold();
        if self.sth_ioc_send(id, m) {
            return self.sth_link(req);
        }
        Err(Stop::Block(Block::IoctlAck))
    }

    /// Kick the lower Stream of link `muxid` (run it after this lock hold).
    fn link_kick(&mut self, table: &MuxTable, muxid: i32) {
        if let Some(p) = table.lower_perim(muxid) {
            if p.backenable_in(lower_wq(), 0) {
                self.later_mut().run(p);
            } else {
                self.later_mut().release(p);
            }
        }
    }

    /// The platform gives up waiting for an I_LINK/I_PLINK (signal, timeout): the link is
    /// undone and the lower Stream is a Stream again when it next runs.
    pub fn sth_link_cancel(&mut self, req: &mut LinkReq) {
        if let Some(id) = req.id.take() {
            self.sth_ioctl_cancel(id);
        }
        if !req.done {
            self.link_undo(req);
        }
    }

    /// Take a link that did not complete out of the table and let its lower Stream go.
    fn link_undo(&mut self, req: &mut LinkReq) {
        req.id = None;
        req.done = true; // nothing left for the request's drop to undo
        let removed = match (req.table.take(), req.muxid.take()) {
            (Some(t), Some(m)) => t.remove_link(m).map(|(_, q)| q),
            _ => None,
        };
        let lower = removed.or_else(|| req.lower.take());
        match lower {
            Some(q) => let_go(self.later_mut(), &req.link, q),
            None => drop(req.link.cut()),
        }
    }

    /// I_UNLINK/I_PUNLINK on an upper Stream (see the module docs).
    pub(crate) fn sth_unlink(&mut self, req: &mut UnlinkReq) -> Result<i32, Stop> {
        let Some(MuxUpper { table, me }) = self.sth.mux.as_ref() else {
            return Err(Errno::EINVAL.into());
        };
        let (table, me) = (table.clone(), *me);
        loop {
            if let Some(cur) = req.cur {
                let r = match self.sth_ioc_slot(&mut req.id) {
                    Ok(true) => self.sth_ioc_verdict().map_err(Stop::from),
                    Err(Stop::Block(b)) => return Err(Stop::Block(b)),
                    Ok(false) => Err(Errno::EINVAL.into()),
                    Err(e) => Err(e),
                };
                req.cur = None;
                req.id = None;
                if let Err(e) = r {
                    table.stop_unlink(cur);
                    return Err(e);
                }
                if let Some((link, lower)) = table.remove_link(cur) {
                    let_go(self.later_mut(), &link, lower);
                }
                if req.muxid != MUXID_ALL {
                    return Ok(0);
                }
            }
            let Some(muxid) = table.start_unlink(me, req.persistent, req.muxid)? else {
                return if req.muxid == MUXID_ALL {
                    Ok(0)
                } else {
                    Err(Errno::EINVAL.into())
                };
            };
            let sent = self.sth_unlink_send(&table, muxid, req);
            match sent {
                Ok(true) => continue,
                Ok(false) => return Err(Stop::Block(Block::IoctlAck)),
                Err(e) => {
                    table.stop_unlink(muxid);
                    return Err(e);
                }
            }
        }
    }

    /// Send the driver the M_IOCTL unlinking `muxid`; true if the answer came back at once.
    fn sth_unlink_send(
        &mut self,
        table: &MuxTable,
        muxid: i32,
        req: &mut UnlinkReq,
    ) -> Result<bool, Stop> {
        if self.sth_ioc_slot(&mut req.id)? {
            return Err(Errno::EINVAL.into());
        }
        self.sth_ioc_ok()?;
        let id = self.sth_ioc_id();
        let lb = LinkBlk {
            qtop: if req.persistent {
                None
            } else {
                self.driver_wq()
            },
            qbot: table.lower_qid(muxid).unwrap_or(lower_wq()),
            index: muxid,
        };
        let cmd = if req.persistent { I_PUNLINK } else { I_UNLINK };
        let m = Stream::link_ioctl(cmd, id, &lb)?;
        req.cur = Some(muxid);
        req.id = Some(id);
        self.sth_flush_hold();
        Ok(self.sth_ioc_send(id, m))
    }

    /// The platform gives up waiting for an I_UNLINK/I_PUNLINK: the link stays.
    pub fn sth_unlink_cancel(&mut self, req: &mut UnlinkReq) {
        if let Some(id) = req.id.take() {
            self.sth_ioctl_cancel(id);
        }
        if let (Some(cur), Some(m)) = (req.cur.take(), self.sth.mux.as_ref()) {
            m.table.stop_unlink(cur);
        }
    }

    /// Close of an upper Stream (before its modules and driver close): unlink what it linked
    /// with I_LINK (the driver is told with M_IOCTL I_UNLINK; its answer is not awaited) and
    /// leave the table.
    pub(crate) fn sth_mux_close(&mut self) {
        let Some(MuxUpper { table, me }) = self.sth.mux.take() else {
            return;
        };
        let d = self.driver_wq();
        while let Some(muxid) = table.owned_by(me) {
            let lb = LinkBlk {
                qtop: d,
                qbot: table.lower_qid(muxid).unwrap_or(lower_wq()),
                index: muxid,
            };
            let id = self.sth_ioc_id();
            if let Ok(m) = Stream::link_ioctl(I_UNLINK, id, &lb) {
                self.write(m);
            }
            if let Some((link, lower)) = table.remove_link(muxid) {
                let_go(self.later_mut(), &link, lower);
            }
        }
        table.part(me, self.later_mut());
    }
}
