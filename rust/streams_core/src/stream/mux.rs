//! Multiplexing across perimeters: a multiplexing driver's link table ([`MuxTable`]) and the
//! moves a multiplexing driver's procedures make over its links.
//!
//! Every open of a multiplexing driver is its own Stream (an *upper* Stream), and a Stream
//! linked under it (I_LINK, I_PLINK: the *lower* Stream) stays where it is, under its own
//! lock. As in SVR4's `mlink`, the lower Stream's head pair stops being a Stream head and
//! runs the driver's lower half instead ([`Role::Lower`](super::Role::Lower), the instance
//! the driver's [`Multiplexor::open_lower`] makes); the Stream head state stays with the
//! pair, waiting (`sth/plex.rs`). Messages cross between the Streams through their
//! perimeters' gates:
//!
//! ```text
//!   upper U: head ▶ [modules] ▶ mux upper ══send_down══▶ lower half ▶ [modules] ▶ driver :L
//!            head ◀ [modules] ◀ mux upper ◀══send_up════ lower half ◀ [modules] ◀ driver
//!                                  │                         │
//!                                  └──────── MuxTable ───────┘  (routes, links, uppers)
//! ```
//!
//! The [`MuxTable`] is the one piece of state all Streams of a multiplexing driver share, as
//! SVR4's link list and a driver's own minor table are: which upper Streams there are, which
//! links (muxid, persistent or not, the upper that made an I_LINK link, the lower Stream,
//! state of the link ioctls), and the driver's routes: the link each upper sends down
//! ([`MuxTable::route`]), the upper each link sends up. The platform makes one table per
//! multiplexing driver (a registered major) and gives it to every upper Stream it opens on
//! that driver; I_PUNLINK from any of them, persistent links that outlive the Stream that
//! made them, and routing to another Stream's link all need it. Its lock ([`sys::BhLock`]) is
//! a leaf taken under a Stream lock; it is never held while another lock is taken (what a
//! lookup finds is cloned, the lock dropped, then acted on), and nothing is dropped under it
//! that could free a Stream.
//!
//! The table holds each lower Stream (a [`QRef`] to its head pair, a counted reference) for
//! as long as it is linked, so the lower's file may be closed meanwhile, as in SVR4. What the
//! table and the lower Stream's head share about one link is a [`Link`] (`link.rs`); every
//! change to the lower Stream happens under its own lock and never inside a procedure.
//!
//! Flow control crosses like a pipe's, except that several Streams feed one queue: the lower
//! half's write queue (what the uppers put into) and an upper's driver read queue (what the
//! lower halves put into) publish their flow control without a link back (`Side::publish`),
//! and a refused writer's back-enable runs that queue's service procedure, which wakes the
//! writers routed there ([`MuxTable::wake_uppers`], [`MuxTable::wake_lowers`]), as SVR4's
//! lower write service procedure enables the upper write queues.
//!
//! # Lock order
//! Stream lock → table lock; Stream lock → link lock; Stream lock → a gate's inbound lock.
//! The table, link and inbound locks are never nested in one another.

use super::link::Link;
use super::{Later, QCtx, QRef, QueueId, StreamModule};
use crate::errno::Errno;
use crate::msg::Msg;
use crate::sys::{self, Arc, Box, Vec};

/// The pair index of the Stream head (the lower half's pair on a linked Stream).
const HEAD: usize = 0;

/// An upper Stream of a multiplexing driver, as its [`MuxTable`] knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpperId(u64);

/// What a multiplexing driver's upper half provides (`StreamModule::mux`).
pub trait Multiplexor {
    /// This upper Stream joined the driver's link table as `me` (the platform opened it and
    /// gave it the driver's table: `Stream::sth_mux_attach`). Keep both: the driver routes
    /// and sends through them.
    fn attach(&mut self, table: Arc<MuxTable>, me: UpperId);
    /// The lower half of new link `muxid` (I_LINK, I_PLINK): its procedures run on the
    /// linked Stream's head pair, under that Stream's lock. Errors fail the link (ENOSR).
    fn open_lower(&mut self, muxid: i32) -> Result<Box<dyn StreamModule>, Errno>;
}

/// Who opened an upper Stream, as the platform names users: the permission model of a link
/// table (`docs/security.md`). A link belongs to the user of the upper Stream that made it;
/// an upper Stream may route itself to a link (MUX_ROUTE, reading and injecting its traffic)
/// or I_PUNLINK a persistent link only if the link is its user's, or if it was opened with
/// privilege. I_UNLINK stays limited to the upper that made the link, as in SVR4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MuxCred {
    /// The opener's user (in the kernel: its effective kernel uid, the same in every user
    /// namespace).
    pub user: u32,
    /// The opener was privileged (in the kernel: `CAP_SYS_ADMIN`).
    pub privileged: bool,
}

impl MuxCred {
    /// Whether an upper opened with these credentials may act on a link of `user`.
    fn may(&self, user: u32) -> bool {
        self.privileged || self.user == user
    }
}

/// An upper Stream in the table.
struct UpperRec {
    id: UpperId,
    /// Its opener.
    cred: MuxCred,
    /// The upper driver's write queue (woken when a link it sends to drains).
    wq: QRef,
    /// The upper driver's read queue (where the lower halves routed here put).
    rq: QRef,
    /// The link this upper sends down (the driver's routing).
    route: Option<i32>,
}

/// A link in the table.
struct LinkRec {
    muxid: i32,
    persistent: bool,
    /// The upper Stream that made an I_LINK link (none for I_PLINK).
    owner: Option<UpperId>,
    /// The user of the upper Stream that made the link (I_LINK or I_PLINK).
    user: u32,
    link: Arc<Link>,
    /// The lower Stream's head write queue: the lower half's write queue while linked. Holds
    /// the lower Stream for as long as the link stands.
    lower: QRef,
    /// The upper Stream this link's upstream traffic goes to (the driver's routing).
    up: Option<UpperId>,
    /// The driver acknowledged the link ioctl.
    linked: bool,
    /// An unlink ioctl by this upper is waiting for the driver's answer.
    unlinking: Option<UpperId>,
}

/// The table's state (under its lock). Records live in slots that are reused (`None`:
/// free), so nothing moves and removing never allocates.
struct Table {
    uppers: Vec<Option<UpperRec>>,
    links: Vec<Option<LinkRec>>,
    last_muxid: i32,
    next_upper: u64,
}

/// Put `x` in a free slot of `v`, or a new one; `x` comes back when memory runs out.
fn put_slot<T>(v: &mut Vec<Option<T>>, x: T) -> Result<(), T> {
    if let Some(slot) = v.as_mut_slice().iter_mut().find(|s| s.is_none()) {
        *slot = Some(x);
        return Ok(());
    }
    match sys::vec_push(v, Some(x)) {
        Ok(()) => Ok(()),
        Err(Some(x)) => Err(x),
        Err(None) => Ok(()), // `vec_push` hands back what it was given: not reached
    }
}

/// Take the first record of `v` that `f` picks out of its slot.
fn take_slot<T>(v: &mut Vec<Option<T>>, f: impl Fn(&T) -> bool) -> Option<T> {
    v.as_mut_slice()
        .iter_mut()
        .find(|s| s.as_ref().is_some_and(&f))
        .and_then(Option::take)
}

impl Table {
    fn uppers(&self) -> impl Iterator<Item = &UpperRec> {
        self.uppers.iter().flatten()
    }
    fn links(&self) -> impl Iterator<Item = &LinkRec> {
        self.links.iter().flatten()
    }
    fn upper(&self, id: UpperId) -> Option<&UpperRec> {
        self.uppers().find(|u| u.id == id)
    }
    fn upper_mut(&mut self, id: UpperId) -> Option<&mut UpperRec> {
        self.uppers
            .as_mut_slice()
            .iter_mut()
            .flatten()
            .find(|u| u.id == id)
    }
    fn link(&self, muxid: i32) -> Option<&LinkRec> {
        self.links().find(|l| l.muxid == muxid)
    }
    fn link_mut(&mut self, muxid: i32) -> Option<&mut LinkRec> {
        self.links
            .as_mut_slice()
            .iter_mut()
            .flatten()
            .find(|l| l.muxid == muxid)
    }
}

/// The link table of one multiplexing driver (see the module docs).
pub struct MuxTable {
    inner: sys::BhLock<Table>,
}

/// What a lookup found, to act on after the table's lock is dropped.
type Found = Option<QRef>;

/// Let go of a reference to another Stream after this Stream's lock is dropped.
fn release(cx: &mut QCtx<'_>, q: QRef) {
    cx.release_later(q.into_perim());
}

impl MuxTable {
    /// An empty table for one multiplexing driver (the platform: one per driver, for as long
    /// as the driver is registered). ENOSR when memory runs out.
    pub fn new() -> Result<Arc<MuxTable>, Errno> {
        let t = Table {
            uppers: Vec::new(),
            links: Vec::new(),
            last_muxid: 0,
            next_upper: 1,
        };
        let m = MuxTable {
            inner: crate::bh_lock!(t, "rstreams_mux_table").map_err(|_| Errno::ENOSR)?,
        };
        sys::new_arc(m).map_err(|_| Errno::ENOSR)
    }

    // ---- the Stream head's side (`sth/mux.rs`) ----

    /// An upper Stream joins: its driver's write and read queue. ENOSR (the references come
    /// back).
    pub(crate) fn join(
        &self,
        wq: QRef,
        rq: QRef,
        cred: MuxCred,
    ) -> Result<UpperId, (Errno, QRef, QRef)> {
        let mut t = self.inner.lock();
        let id = UpperId(t.next_upper);
        let rec = UpperRec {
            id,
            cred,
            wq,
            rq,
            route: None,
        };
        match put_slot(&mut t.uppers, rec) {
            Ok(()) => {
                t.next_upper = t.next_upper.wrapping_add(1);
                Ok(id)
            }
            Err(r) => Err((Errno::ENOSR, r.wq, r.rq)),
        }
    }

    /// Upper `id` closes: it leaves the table (its queue references go to `later`) and the
    /// links routed to it lose their route.
    pub(crate) fn part(&self, id: UpperId, later: &mut Later) {
        let gone = {
            let mut t = self.inner.lock();
            for l in t.links.as_mut_slice().iter_mut().flatten() {
                if l.up == Some(id) {
                    l.up = None;
                }
            }
            take_slot(&mut t.uppers, |u| u.id == id)
        };
        if let Some(u) = gone {
            later.release(u.wq.into_perim());
            later.release(u.rq.into_perim());
        }
    }

    /// Record a new link of `lower` (the lower Stream's head write queue) made by `owner`;
    /// returns its muxid. ENOSR (the reference comes back with it).
    pub(crate) fn add_link(
        &self,
        link: &Arc<Link>,
        lower: QRef,
        persistent: bool,
        owner: UpperId,
    ) -> Result<i32, (Errno, QRef)> {
        let mut t = self.inner.lock();
        let Some(user) = t.upper(owner).map(|u| u.cred.user) else {
            return Err((Errno::EINVAL, lower));
        };
        let muxid = loop {
            t.last_muxid = if t.last_muxid >= i32::MAX - 1 {
                1
            } else {
                t.last_muxid + 1
            };
            let m = t.last_muxid;
            if t.link(m).is_none() {
                break m;
            }
        };
        let rec = LinkRec {
            muxid,
            persistent,
            owner: (!persistent).then_some(owner),
            user,
            link: link.clone(),
            lower,
            up: None,
            linked: false,
            unlinking: None,
        };
        match put_slot(&mut t.links, rec) {
            Ok(()) => Ok(muxid),
            Err(r) => Err((Errno::ENOSR, r.lower)),
        }
    }

    /// The driver acknowledged link `muxid`.
    pub(crate) fn set_linked(&self, muxid: i32) {
        if let Some(l) = self.inner.lock().link_mut(muxid) {
            l.linked = true;
        }
    }

    /// Take link `muxid` out of the table (unlinked, or failed): routes to it go. The caller
    /// lets the lower Stream go ([`let_go`]).
    pub(crate) fn remove_link(&self, muxid: i32) -> Option<(Arc<Link>, QRef)> {
        let mut t = self.inner.lock();
        let rec = take_slot(&mut t.links, |l| l.muxid == muxid)?;
        for u in t.uppers.as_mut_slice().iter_mut().flatten() {
            if u.route == Some(muxid) {
                u.route = None;
            }
        }
        Some((rec.link, rec.lower))
    }

    /// The next link upper `me` may unlink with I_UNLINK (`persistent == false`: the links it
    /// made with I_LINK) or I_PUNLINK (persistent links of `me`'s user, or any if `me` is
    /// privileged: [`MuxCred`]): `muxid`, or any for `MUXID_ALL`. The link is marked as being
    /// unlinked by `me`. `Ok(None)`: none (left); EPERM: persistent link `muxid` is another
    /// user's.
    pub(crate) fn start_unlink(
        &self,
        me: UpperId,
        persistent: bool,
        muxid: i32,
    ) -> Result<Option<i32>, Errno> {
        let mut t = self.inner.lock();
        let Some(cred) = t.upper(me).map(|u| u.cred) else {
            return Ok(None);
        };
        let all = muxid == crate::sth::consts::MUXID_ALL;
        let l = t.links.as_mut_slice().iter_mut().flatten().find(|l| {
            l.linked
                && l.unlinking.is_none()
                && l.persistent == persistent
                && (all || l.muxid == muxid)
                && if persistent {
                    !all || cred.may(l.user)
                } else {
                    l.owner == Some(me)
                }
        });
        let Some(l) = l else {
            return Ok(None);
        };
        if !cred.may(l.user) {
            return Err(Errno::EPERM);
        }
        l.unlinking = Some(me);
        Ok(Some(l.muxid))
    }

    /// The unlink of `muxid` failed or was given up: the link stands.
    pub(crate) fn stop_unlink(&self, muxid: i32) {
        if let Some(l) = self.inner.lock().link_mut(muxid) {
            l.unlinking = None;
        }
    }

    /// The next link upper `me` made with I_LINK (to unlink it when `me` closes).
    pub(crate) fn owned_by(&self, me: UpperId) -> Option<i32> {
        let t = self.inner.lock();
        let m = t.links().find(|l| l.owner == Some(me)).map(|l| l.muxid);
        m
    }

    /// The lower Stream of link `muxid` (to kick it).
    pub(crate) fn lower_perim(&self, muxid: i32) -> Option<Arc<dyn super::Perimeter>> {
        self.inner
            .lock()
            .link(muxid)
            .map(|l| l.lower.perim().clone())
    }

    /// The lower Stream's head write queue of link `muxid` (for the link ioctl's `l_qbot`).
    pub(crate) fn lower_qid(&self, muxid: i32) -> Option<QueueId> {
        self.inner.lock().link(muxid).map(|l| l.lower.qid())
    }

    /// The driver is going away (no upper Stream is open): unlink every link that is left
    /// (persistent ones). Each lower Stream is a Stream again the next time it runs (it is
    /// scheduled on the platform's runner) and, if its file was closed meanwhile, closes.
    /// Call with no Stream lock held. Returns how many links there were.
    ///
    /// The platform must call this when it retires the table (module unload): a link left in
    /// the table holds its lower Stream ([`QRef`]), whose lower half holds the table (an
    /// `Arc<MuxTable>`, `mods::mux`), a cycle that dropping the platform's own reference to
    /// the table does not break. Without this call the table, every lower Stream left linked
    /// (and what they hold) are never freed.
    pub fn unlink_all(&self) -> usize {
        let mut n = 0usize;
        loop {
            let rec = take_slot(&mut self.inner.lock().links, |_| true);
            let Some(rec) = rec else {
                return n;
            };
            n = n.saturating_add(1);
            drop(rec.link.cut());
            rec.lower.backenable(0);
        }
    }

    /// How many links the table holds (in any state).
    pub fn nlinks(&self) -> usize {
        self.inner.lock().links().count()
    }

    /// How many upper Streams are in the table (joined and not yet closed).
    pub fn nuppers(&self) -> usize {
        self.inner.lock().uppers().count()
    }

    // ---- the driver's side ----

    /// Route upper `me` to link `muxid`: what `me` sends goes down that link, and what comes
    /// up that link goes to `me` (until another upper routes itself there). ENXIO if there is
    /// no such link; EPERM if it is another user's and `me` is not privileged ([`MuxCred`]).
    pub fn route(&self, me: UpperId, muxid: i32) -> Result<(), Errno> {
        let mut t = self.inner.lock();
        let user = t.link(muxid).ok_or(Errno::ENXIO)?.user;
        if !t.upper(me).ok_or(Errno::ENXIO)?.cred.may(user) {
            return Err(Errno::EPERM);
        }
        let u = t.upper_mut(me).ok_or(Errno::ENXIO)?;
        u.route = Some(muxid);
        if let Some(l) = t.link_mut(muxid) {
            l.up = Some(me);
        }
        Ok(())
    }

    /// Upper `me` no longer sends down link `muxid` (if that was its route).
    pub fn unroute(&self, me: UpperId, muxid: i32) {
        let mut t = self.inner.lock();
        if let Some(u) = t.upper_mut(me).filter(|u| u.route == Some(muxid)) {
            u.route = None;
        }
    }

    /// Whether link `muxid` exists.
    pub fn is_link(&self, muxid: i32) -> bool {
        self.inner.lock().link(muxid).is_some()
    }

    /// The link upper `me` sends down, if any.
    pub fn route_of(&self, me: UpperId) -> Option<i32> {
        self.inner.lock().upper(me).and_then(|u| u.route)
    }

    /// In upper `me`'s write side: send `mp` down the link `me` is routed to. `Ok`: sent, or
    /// freed because `me` has no route (or its link's lower Stream is closed). `Err(mp)`:
    /// hold it and try again when woken (the lower half's write queue is full, or not yet
    /// installed); high-priority messages are never held for flow control.
    pub fn send_down(&self, cx: &mut QCtx<'_>, me: UpperId, mp: Msg) -> Result<(), Msg> {
        let found: Result<Found, ()> = {
            let t = self.inner.lock();
            match t.upper(me).and_then(|u| u.route).and_then(|m| t.link(m)) {
                None => Ok(None),
                Some(l) if !l.link.is_installed() => Err(()),
                Some(l) => Ok(Some(l.lower.clone())),
            }
        };
        let to = match found {
            Err(()) => return Err(mp),
            Ok(None) => return Ok(()), // no route: freed
            Ok(Some(q)) => q,
        };
        let r = send(cx, &to, mp);
        release(cx, to);
        r
    }

    /// In the lower half of link `muxid`: send `mp` up to the upper Stream the link is routed
    /// to. `Ok`: sent, or freed (no route, or that upper closed). `Err(mp)`: hold it (that
    /// upper's driver read queue is full); high-priority messages are never held.
    pub fn send_up(&self, cx: &mut QCtx<'_>, muxid: i32, mp: Msg) -> Result<(), Msg> {
        let to = {
            let t = self.inner.lock();
            t.link(muxid)
                .and_then(|l| l.up)
                .and_then(|u| t.upper(u))
                .map(|u| u.rq.clone())
        };
        let Some(to) = to else {
            return Ok(()); // no route: freed
        };
        let r = send(cx, &to, mp);
        release(cx, to);
        r
    }

    /// In the lower half of link `muxid` (its write service procedure): the lower Stream can
    /// take more, so back-enable every upper routed to this link (their write service
    /// procedures retry what they hold).
    pub fn wake_uppers(&self, cx: &mut QCtx<'_>, muxid: i32) {
        let mut last = 0u64;
        loop {
            let next = {
                let t = self.inner.lock();
                t.uppers()
                    .filter(|u| u.id.0 > last && u.route == Some(muxid))
                    .min_by_key(|u| u.id.0)
                    .map(|u| (u.id.0, u.wq.clone()))
            };
            let Some((id, wq)) = next else {
                return;
            };
            last = id;
            cx.backenable_to(&wq, 0);
            release(cx, wq);
        }
    }

    /// In upper `me`'s read service procedure: its Stream can take more, so back-enable the
    /// lower half of every link routed to `me` (their read service procedures retry what
    /// they hold).
    pub fn wake_lowers(&self, cx: &mut QCtx<'_>, me: UpperId) {
        let mut last = 0i32;
        loop {
            let next = {
                let t = self.inner.lock();
                t.links()
                    .filter(|l| l.muxid > last && l.up == Some(me) && l.link.is_installed())
                    .min_by_key(|l| l.muxid)
                    .map(|l| (l.muxid, l.lower.clone()))
            };
            let Some((m, lower)) = next else {
                return;
            };
            last = m;
            let rq = QRef::new(lower.into_perim(), QueueId::of(HEAD, false));
            cx.backenable_to(&rq, 0);
            release(cx, rq);
        }
    }
}

/// Put `mp` on `to` unless flow control says no there (high priority always goes); a closed
/// target frees it.
fn send(cx: &mut QCtx<'_>, to: &QRef, mp: Msg) -> Result<(), Msg> {
    if !mp.is_hipri() && !to.bcanput(mp.band()) {
        return Err(mp);
    }
    if let Err(mp) = cx.put_to(to, mp) {
        drop(mp); // that Stream closed: nobody to deliver to
    }
    Ok(())
}
