//! Multiplexing at the Stream head: I_LINK, I_PLINK, I_UNLINK and I_PUNLINK.
//!
//! A multiplexing driver lives in a Stream complex (`stream/complex.rs`): every open of it
//! is an upper Stream of the complex. `I_LINK`/`I_PLINK` on an upper Stream take another
//! (plain) Stream, move its pairs into the complex (`stream/transfer.rs`) and turn its
//! former Stream head pair into the driver's lower half: the pair gets the role
//! [`Role::Lower`] and the instance the driver's [`StreamModule::mux_lower`] creates. Then the
//! head sends the driver `M_IOCTL` (`ioc_cmd` I_LINK or I_PLINK) carrying a [`LinkBlk`]
//! (`l_qtop`: the upper driver's write queue, none for I_PLINK; `l_qbot`: the lower write
//! queue; `l_index`: the new multiplexor id), as in SVR4. The ioctl completes with the
//! driver's M_IOCACK (the caller gets the muxid) or fails with its M_IOCNAK (the lower Stream
//! is taken out again and handed back through [`LinkReq::lower`]).
//!
//! Unlinking (`I_UNLINK` for links made by this Stream, `I_PUNLINK` for persistent links,
//! `MUXID_ALL` for all of them) sends M_IOCTL I_UNLINK/I_PUNLINK, and after the driver's
//! acknowledgement closes the lower half, gives the pair back its Stream head role and
//! moves the pairs out again. The Stream comes back intact (its modules, driver and queued
//! messages) and waits in the link table until the platform collects it with
//! [`Stream::take_unlinked`] and gives it back to its file (or closes it if the file is gone).
//! Closing an upper Stream unlinks what it linked with I_LINK (the driver is told with
//! M_IOCTL I_UNLINK; its answer is not awaited); persistent links stay until I_PUNLINK or
//! the complex goes away.
//!
//! A driver finds its links through its context: [`QCtx::mux_lower`] (muxid → the lower
//! write queue to `putnext` from), [`QCtx::mux_route`]/[`QCtx::mux_set_route`] (a per-link
//! upper read queue the lower half sends to; cleared by the head when that Stream closes, so
//! a route never names a reused queue).

use super::ioctl::IocBlk;
use super::{Block, IocSlot, Stop, WAKE_IOCTL};
use crate::errno::Errno;
use crate::msg::{Msg, M_DATA, M_IOCACK, M_IOCTL};
use crate::stream::{Moved, QCtx, QueueId, Role, HEAD_INFO};
use crate::sth::Stream;
use crate::sys::{self, Vec};

use super::consts::{I_LINK, I_PLINK, I_PUNLINK, I_UNLINK, MUXID_ALL};

/// Size of an encoded [`LinkBlk`] (the C `struct linkblk` on LP64).
pub const LINKBLK_SIZE: usize = 24;

/// `struct linkblk`: the data of the M_IOCTL a multiplexing driver gets for a link change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkBlk {
    /// `l_qtop`: the upper driver write queue of the Stream that linked (none for I_PLINK).
    pub qtop: Option<QueueId>,
    /// `l_qbot`: the lower write queue (the former Stream head of the linked Stream).
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

/// Where a link stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// The link M_IOCTL (this id) is unanswered.
    Linking(u32),
    /// Linked.
    Linked,
    /// The unlink M_IOCTL (this id) is unanswered.
    Unlinking(u32),
}

/// One link of the complex.
pub(crate) struct LinkRec {
    muxid: i32,
    persistent: bool,
    /// Head pair of the Stream that made an I_LINK link (none for I_PLINK).
    upper: Option<usize>,
    /// The lower pair (the linked Stream's former head pair).
    lower: usize,
    route: Option<QueueId>,
    state: State,
    /// The linked Stream's pairs while linked; its husk.
    moved: Option<Moved>,
    /// The unlinked Stream, waiting for the platform (`take_unlinked`).
    out: Option<Stream>,
}

/// The link table of a Stream complex.
pub(crate) struct Complex {
    links: Vec<Option<LinkRec>>,
    last_muxid: i32,
}

impl Complex {
    pub(crate) fn new() -> Complex {
        Complex {
            links: Vec::new(),
            last_muxid: 0,
        }
    }
    fn find(&self, f: impl Fn(&LinkRec) -> bool) -> Option<usize> {
        self.links.iter().position(|l| l.as_ref().is_some_and(&f))
    }
    fn rec(&mut self, i: usize) -> Option<&mut LinkRec> {
        self.links.as_mut_slice().get_mut(i)?.as_mut()
    }
    fn by_muxid(&self, muxid: i32) -> Option<usize> {
        self.find(|l| l.muxid == muxid && l.out.is_none())
    }
}

/// The argument of I_LINK/I_PLINK: the Stream to link (taken by the first call; handed back
/// here when the link fails) and the state of the ioctl across retries.
pub struct LinkReq {
    /// The Stream to link; `Some` again after a failure.
    pub lower: Option<Stream>,
    persistent: bool,
    muxid: Option<i32>,
    id: Option<u32>,
}

impl LinkReq {
    /// I_LINK (`persistent == false`) or I_PLINK of `lower`.
    pub fn new(lower: Stream, persistent: bool) -> LinkReq {
        LinkReq {
            lower: Some(lower),
            persistent,
            muxid: None,
            id: None,
        }
    }
}

impl LinkReq {
    /// The muxid of the link in progress (its M_IOCTL unanswered), if any.
    pub fn pending_muxid(&self) -> Option<i32> {
        self.muxid
    }
}

/// The argument of I_UNLINK/I_PUNLINK and its state across retries.
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
}

impl Stream {
    /// Whether this Stream may be linked under a multiplexor (I_LINK's lower Stream): a
    /// plain Stream over a driver, open, not a pipe, FIFO or Stream complex.
    pub fn is_linkable(&self) -> bool {
        self.multi.is_none()
            && self.parked.is_empty()
            && self.sth.active
            && !self.sth.closed
            && !self.closed
            && self.driver_wq().is_some()
    }

    /// What the file of a Stream linked under a multiplexor has meanwhile (SVR4's STPLEX):
    /// a lone head on which every read, write and ioctl fails with EINVAL.
    pub fn plex() -> Result<Stream, Errno> {
        let mut s = Stream::empty(true)?;
        s.alloc_pair(HEAD_INFO, Role::Head)?;
        s.sth.rerr = Some(Errno::EINVAL);
        s.sth.werr = Some(Errno::EINVAL);
        s.sth.plex = true;
        s.closed = true; // no driver: no close routine to call
        Ok(s)
    }

    /// Whether this is a [`Stream::plex`] placeholder, and whether its file is still open.
    pub fn plex_state(&self) -> Option<bool> {
        self.sth.plex.then_some(!self.sth.closed)
    }
}

impl Stream {
    fn complex_mut(&mut self) -> Result<&mut Complex, Errno> {
        self.multi.as_deref_mut().ok_or(Errno::EINVAL)
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

    /// I_LINK/I_PLINK on the Stream swapped in (see the module docs). Returns the muxid.
    pub fn sth_link(&mut self, req: &mut LinkReq) -> Result<i32, Stop> {
        if let Some(muxid) = req.muxid {
            return match self.sth_ioc_slot(&mut req.id) {
                Ok(true) => match self.sth_ioc_verdict() {
                    Ok(()) => {
                        req.muxid = None;
                        let c = self.complex_mut()?;
                        if let Some(r) = c.by_muxid(muxid).and_then(|i| c.rec(i)) {
                            r.state = State::Linked;
                        }
                        Ok(muxid)
                    }
                    Err(e) => {
                        self.link_undo(req);
                        Err(e.into())
                    }
                },
                Err(Stop::Block(b)) => Err(Stop::Block(b)),
                Ok(false) => {
                    self.link_undo(req);
                    Err(Errno::EINVAL.into())
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
        let d = self.driver_wq().ok_or(Errno::EINVAL)?;
        let lower_open = self
            .pair(d.pair())
            .and_then(|p| p.inst.as_ref())
            .and_then(|i| i.mux_lower())
            .ok_or(Errno::EINVAL)?;
        let info = self.pair(d.pair()).map(|p| p.info).ok_or(Errno::EINVAL)?;
        if !req.lower.as_ref().is_some_and(Stream::is_linkable) {
            return Err(Errno::EINVAL.into());
        }
        // Every allocation before the lower Stream moves.
        let inst = lower_open()?;
        let c = self.complex_mut()?;
        sys::vec_reserve(&mut c.links, 1)?;
        let muxid = loop {
            c.last_muxid = if c.last_muxid >= i32::MAX - 1 {
                1
            } else {
                c.last_muxid + 1
            };
            let m = c.last_muxid;
            if c.by_muxid(m).is_none() {
                break m;
            }
        };
        let id = self.sth_ioc_id();
        if let Some(l) = req.lower.as_mut() {
            l.sth_flush_hold();
        }
        let moved = self.absorb(&mut req.lower)?;
        let Some(lp) = moved.head() else {
            req.lower = Some(self.release(moved));
            return Err(Errno::EINVAL.into());
        };
        let lb = LinkBlk {
            qtop: (!req.persistent).then_some(d),
            qbot: QueueId::of(lp, true),
            index: muxid,
        };
        let m = match Stream::link_ioctl(if req.persistent { I_PLINK } else { I_LINK }, id, &lb) {
            Ok(m) => m,
            Err(e) => {
                req.lower = Some(self.release(moved));
                return Err(e.into());
            }
        };
        if let Some(p) = self.pair_mut(lp) {
            p.role = Role::Lower;
            p.info = info;
            p.sides[0].srv = inst.has_rsrv();
            p.sides[1].srv = inst.has_wsrv();
            p.inst = Some(inst);
        }
        let head = self.head;
        let rec = LinkRec {
            muxid,
            persistent: req.persistent,
            upper: (!req.persistent).then_some(head),
            lower: lp,
            route: None,
            state: State::Linking(id),
            moved: Some(moved),
            out: None,
        };
        let c = self.complex_mut()?;
        match c.links.iter().position(Option::is_none) {
            Some(i) => {
                if let Some(slot) = c.links.as_mut_slice().get_mut(i) {
                    *slot = Some(rec);
                }
            }
            None => {
                let _ = sys::vec_push(&mut c.links, Some(rec)); // reserved above
            }
        }
        // What waited at the old head goes up through the lower half now.
        self.qenable(QueueId::of(lp, false));
        req.muxid = Some(muxid);
        req.id = Some(id);
        self.sth_flush_hold();
        if self.sth_ioc_send(id, m) {
            return self.sth_link(req);
        }
        Err(Stop::Block(Block::IoctlAck))
    }

    /// The platform gives up waiting for an I_LINK/I_PLINK (signal, timeout): the link is
    /// undone and the Stream handed back in `req.lower`.
    pub fn sth_link_cancel(&mut self, req: &mut LinkReq) {
        if let Some(id) = req.id {
            self.sth_ioctl_cancel(id);
        }
        self.link_undo(req);
    }

    fn link_undo(&mut self, req: &mut LinkReq) {
        req.id = None;
        let Some(muxid) = req.muxid.take() else {
            return;
        };
        let Some(i) = self.multi.as_ref().and_then(|c| c.by_muxid(muxid)) else {
            return;
        };
        self.link_dismantle(i);
        if let Some(c) = self.multi.as_deref_mut() {
            let out = c.links.as_mut_slice().get_mut(i).and_then(Option::take);
            req.lower = out.and_then(|r| r.out);
        }
    }

    /// Close the lower half of link `i`, give its pair back the Stream head role and move
    /// the Stream out into the record's `out`.
    fn link_dismantle(&mut self, i: usize) {
        let Some(r) = self.multi.as_deref_mut().and_then(|c| c.rec(i)) else {
            return;
        };
        let lp = r.lower;
        let moved = r.moved.take();
        self.run_close(lp);
        if let Some(p) = self.pair_mut(lp) {
            p.role = Role::Head;
            p.info = HEAD_INFO;
            p.inst = None;
            for s in p.sides.iter_mut() {
                s.srv = false;
            }
        }
        let out = moved.map(|m| self.release(m));
        if let Some(r) = self.multi.as_deref_mut().and_then(|c| c.rec(i)) {
            r.out = out;
            r.route = None;
        }
    }

    /// I_UNLINK/I_PUNLINK on the Stream swapped in (see the module docs).
    pub fn sth_unlink(&mut self, req: &mut UnlinkReq) -> Result<i32, Stop> {
        let me = self.head;
        loop {
            if let Some(cur) = req.cur {
                let slot = self.sth_ioc_slot(&mut req.id);
                let c = self.complex_mut()?;
                let i = c.by_muxid(cur);
                let relink = |s: &mut Stream, req: &mut UnlinkReq| {
                    req.cur = None;
                    if let Some(r) = i.and_then(|i| s.multi.as_deref_mut()?.rec(i)) {
                        r.state = State::Linked;
                    }
                };
                match slot {
                    Ok(true) => {
                        if let Err(e) = self.sth_ioc_verdict() {
                            relink(self, req);
                            return Err(e.into());
                        }
                        req.cur = None;
                        if let Some(i) = i {
                            self.link_dismantle(i);
                        }
                        if req.muxid != MUXID_ALL {
                            return Ok(0);
                        }
                    }
                    Err(Stop::Block(b)) => return Err(Stop::Block(b)),
                    Ok(false) => {
                        relink(self, req);
                        return Err(Errno::EINVAL.into());
                    }
                    Err(e) => {
                        relink(self, req);
                        return Err(e);
                    }
                }
            }
            let (persistent, muxid) = (req.persistent, req.muxid);
            let c = self.complex_mut()?;
            let next = c.find(|l| {
                l.state == State::Linked
                    && l.out.is_none()
                    && l.persistent == persistent
                    && (muxid == MUXID_ALL || l.muxid == muxid)
                    && (persistent || l.upper == Some(me))
            });
            let Some(i) = next else {
                return if muxid == MUXID_ALL {
                    Ok(0)
                } else {
                    Err(Errno::EINVAL.into())
                };
            };
            if self.sth_ioc_slot(&mut req.id)? {
                return Err(Errno::EINVAL.into());
            }
            self.sth_ioc_ok()?;
            let id = self.sth_ioc_id();
            let d = self.driver_wq();
            let Some(r) = self.multi.as_deref_mut().and_then(|c| c.rec(i)) else {
                return Err(Errno::EINVAL.into());
            };
            let lb = LinkBlk {
                qtop: if persistent { None } else { d },
                qbot: QueueId::of(r.lower, true),
                index: r.muxid,
            };
            let cmd = if persistent { I_PUNLINK } else { I_UNLINK };
            let m = Stream::link_ioctl(cmd, id, &lb)?;
            r.state = State::Unlinking(id);
            req.cur = Some(r.muxid);
            req.id = Some(id);
            self.sth_flush_hold();
            if !self.sth_ioc_send(id, m) {
                return Err(Stop::Block(Block::IoctlAck));
            }
        }
    }

    /// The platform gives up waiting for an I_UNLINK/I_PUNLINK: the link stays.
    pub fn sth_unlink_cancel(&mut self, req: &mut UnlinkReq) {
        if let Some(id) = req.id.take() {
            self.sth_ioctl_cancel(id);
        }
        if let Some(cur) = req.cur.take() {
            if let Some(c) = self.multi.as_deref_mut() {
                if let Some(r) = c.by_muxid(cur).and_then(|i| c.rec(i)) {
                    r.state = State::Linked;
                }
            }
        }
    }

    /// A Stream unlinked from this complex, with its muxid, for the platform to give back to
    /// its file (or to close). Call after every operation until it returns `None`.
    pub fn take_unlinked(&mut self) -> Option<(i32, Stream)> {
        let c = self.multi.as_deref_mut()?;
        let i = c.find(|l| l.out.is_some())?;
        let r = c.links.as_mut_slice().get_mut(i)?.take()?;
        Some((r.muxid, r.out?))
    }

    /// Close of the Stream swapped in, in a complex: unlink what it linked with I_LINK (the
    /// driver is told; its answer is not awaited), drop routes to it, then close it.
    pub(crate) fn sth_close_in_complex(&mut self) {
        let me = self.head;
        let d = self.driver_wq();
        let n = self.multi.as_ref().map_or(0, |c| c.links.len());
        for i in 0..n {
            let Some(r) = self.multi.as_deref_mut().and_then(|c| c.rec(i)) else {
                continue;
            };
            if r.out.is_some() || r.persistent || r.upper != Some(me) {
                continue;
            }
            let lb = LinkBlk {
                qtop: d,
                qbot: QueueId::of(r.lower, true),
                index: r.muxid,
            };
            let id = self.sth_ioc_id();
            if let Ok(m) = Stream::link_ioctl(I_UNLINK, id, &lb) {
                self.write(m);
            }
            self.link_dismantle(i);
        }
        self.close_in();
        // Routes to the queues just freed go, before an open reuses the slots.
        for i in 0..n {
            let route = self
                .multi
                .as_deref_mut()
                .and_then(|c| c.rec(i))
                .and_then(|r| r.route);
            if route.is_some_and(|q| self.pair(q.pair()).is_none()) {
                if let Some(r) = self.multi.as_deref_mut().and_then(|c| c.rec(i)) {
                    r.route = None;
                }
            }
        }
    }

    /// The complex is going away: every link left (persistent ones) is dismantled and its
    /// Stream closed.
    pub(crate) fn mux_close_all(&mut self) {
        let n = self.multi.as_ref().map_or(0, |c| c.links.len());
        for i in 0..n {
            if self
                .multi
                .as_deref_mut()
                .and_then(|c| c.rec(i))
                .is_some_and(|r| r.out.is_none())
            {
                self.link_dismantle(i);
            }
        }
        while let Some((_, s)) = self.take_unlinked() {
            drop(s); // closes its modules and driver
        }
    }
}

impl QCtx<'_> {
    /// A multiplexing driver: the lower write queue of link `muxid` (send down the linked
    /// Stream with `cx.at(q).putnext(mp)`). None if there is no such link (any more).
    pub fn mux_lower(&self, muxid: i32) -> Option<QueueId> {
        let c = self.stream().multi.as_deref()?;
        let r = c.links.get(c.by_muxid(muxid)?)?.as_ref()?;
        r.moved.is_some().then_some(QueueId::of(r.lower, true))
    }

    /// In the lower half of a link: the upper read queue the driver routed this link to
    /// (send up with `cx.at(q).putnext(mp)`), if any.
    pub fn mux_route(&self) -> Option<QueueId> {
        let p = self.qid().pair();
        let c = self.stream().multi.as_deref()?;
        let r = c
            .links
            .get(c.find(|l| l.lower == p && l.moved.is_some())?)?
            .as_ref()?;
        r.route
    }

    /// Route link `muxid`'s upstream traffic to upper read queue `up` (or nowhere). ENXIO if
    /// there is no such link.
    pub fn mux_set_route(&mut self, muxid: i32, up: Option<QueueId>) -> Result<(), Errno> {
        let c = self
            .stream_mut()
            .multi
            .as_deref_mut()
            .ok_or(Errno::EINVAL)?;
        let i = c.by_muxid(muxid).ok_or(Errno::ENXIO)?;
        c.rec(i).ok_or(Errno::ENXIO)?.route = up;
        Ok(())
    }

    /// In an upper half's read queue: enable the lower read queues routed to it (the upper
    /// Stream head drained, so what they hold may go up now).
    pub fn mux_enable_routed(&mut self) {
        let me = self.qid();
        let n = self.stream().multi.as_ref().map_or(0, |c| c.links.len());
        for i in 0..n {
            let c = self.stream().multi.as_deref();
            let hit = c
                .and_then(|c| c.links.get(i)?.as_ref())
                .filter(|r| r.route == Some(me));
            if let Some(lp) = hit.map(|r| r.lower) {
                self.at(QueueId::of(lp, false)).qenable();
            }
        }
    }

    /// In the lower half: the lower side can take data again, so enable the write queues of
    /// every upper Stream of this driver (their service procedures retry what they hold).
    pub fn mux_enable_uppers(&mut self) {
        if let Some(name) = self.stream().name(self.qid()) {
            self.stream_mut().enable_drivers_named(name);
        }
    }
}
