//! A Stream: the queue pairs from the Stream head down to the driver, and the modules between.
//!
//! The pairs live in an arena (`Vec<Option<Pair>>`) and are named by [`QueueId`]s instead of
//! pointers: pair `i` has read queue `2i` and write queue `2i + 1`, so SVR4's `RD`, `WR` and
//! `OTHERQ` are bit operations ([`QueueId::rd`], [`QueueId::wr`], [`QueueId::otherq`]). `q_next`
//! is an `Option<QueueId>` per queue. Each pair owns its module instance.
//!
//! Pair 0 is the Stream head. Its state is the Stream's `H` ([`HeadProcs`], `head.rs`): the
//! engine calls the head's procedures when a message reaches the head's read queue or a
//! back-enable its write queue; the real Stream head is `crate::sth`, and [`RawHead`] just
//! queues what arrives ([`Stream::read`]).
//!
//! Procedures run with a [`QCtx`] (see `ctx.rs`): `putnext` calls the next put procedure
//! directly, as in SVR4. While a procedure runs its instance is taken out of the arena; a put
//! that reaches an instance already running (a loopback driver's `qreply` coming back up into a
//! module that is still in its `wput`, say) does not re-enter it: the message is `putq`'d on the
//! target queue and either the queue's service procedure is enabled or, for a queue without
//! one, the put procedure is fed the message as soon as the running procedure returns (in a
//! loop, not recursively). Every instance is thus on the call stack at most once, which bounds
//! the recursion depth by the number of pairs. A put procedure that only passes a class of
//! messages on ([`Pass`], a pipe's twist) is stepped over for them while its pair is idle and
//! its queue empty: the put is counted and the message goes to `q_next`, the pair marked
//! running meanwhile as if the procedure ran.
//!
//! A Stream is one perimeter: everything here runs under its lock (`docs/concurrency.md`). A
//! queue whose `q_next` is in another Stream (the twist of a STREAMS pipe, a multiplexor's
//! link) has a [`QRef`] instead (`cross.rs`): `putnext` hands the message to that Stream's
//! inbound list, `canputnext` reads its published flow-control state, and the perimeters such
//! a put claims are run after this Stream's lock is dropped ([`Later`]).
//!
//! `qenable` puts a queue on this Stream's run list once (QENAB); [`Stream::runqueues`] runs
//! the service procedures.

mod across;
mod batch;
pub mod cross;
mod ctx;
mod direct;
mod express_tx;
pub mod head;
pub mod link;
pub mod module;
pub mod mux;
pub mod registry;
pub mod stats;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod stats_tests;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod testmods;
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
#[doc(hidden)]
pub mod tests;
mod timeout;

pub use cross::{Later, Perimeter, QRef};
pub use ctx::QCtx;
pub use head::{HeadProcs, RawHead};
pub use link::Link;
pub use module::{ModuleInfo, OpenArgs, OpenFn, Pass, Sflag, StreamModule, StreamTab};
pub use mux::{Multiplexor, MuxCred, MuxTable, UpperId};
pub use registry::Registry;
pub use stats::{mstat_total, reserve_totals, ModuleStat};

use crate::errno::Errno;
use crate::queue::ring::Ring;
use crate::queue::{Queue, FLUSHALL, INFPSZ};
use crate::sys::{self, Box, Vec};

/// Stream head read-queue high water mark (LfS `STRHIGH`).
pub const STRHIGH: usize = 5120;
/// Stream head read-queue low water mark (LfS `STRLOW`).
pub const STRLOW: usize = 1024;

/// `module_info` of the Stream head pair.
pub const HEAD_INFO: ModuleInfo = ModuleInfo {
    mi_idnum: 0,
    mi_idname: "strhead",
    mi_minpsz: 0,
    mi_maxpsz: INFPSZ,
    mi_hiwat: STRHIGH,
    mi_lowat: STRLOW,
};

/// The pair index of the Stream head.
const HEAD: usize = 0;

/// A queue of a Stream: pair index and side (read = even, write = odd).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct QueueId(usize);

impl QueueId {
    /// The read queue of this queue's pair (`RD(q)`).
    pub const fn rd(self) -> QueueId {
        QueueId(self.0 & !1)
    }
    /// The write queue of this queue's pair (`WR(q)`).
    pub const fn wr(self) -> QueueId {
        QueueId(self.0 | 1)
    }
    /// The other queue of the pair (`OTHERQ(q)`).
    pub const fn otherq(self) -> QueueId {
        QueueId(self.0 ^ 1)
    }
    /// Whether this is a read queue (`QREADR`).
    pub const fn is_read(self) -> bool {
        self.0 & 1 == 0
    }
    pub(crate) const fn pair(self) -> usize {
        self.0 >> 1
    }
    const fn side(self) -> usize {
        self.0 & 1
    }
    pub(crate) const fn of(pair: usize, write: bool) -> QueueId {
        QueueId(pair << 1 | write as usize)
    }
    /// The number naming this queue (in a `linkblk`, an I_FDINSERT token).
    pub const fn raw(self) -> u64 {
        self.0 as u64
    }
    /// The queue a number names (`None` if out of range; a stale or forged number names at
    /// worst another queue of the same Stream, never memory).
    pub fn from_raw(v: u64) -> Option<QueueId> {
        usize::try_from(v).ok().map(QueueId)
    }
}

/// What a pair is in the Stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The Stream head (top).
    Head,
    /// A pushed module.
    Module,
    /// The driver (bottom).
    Driver,
    /// The Stream head pair of a Stream linked under a multiplexing driver, running the
    /// driver's lower half (SVR4 `setq` with `st_muxrinit`/`st_muxwinit`; `mux.rs`).
    Lower,
}

/// One queue of a pair with its link.
pub(crate) struct Side {
    pub(crate) q: Queue,
    pub(crate) next: Option<QueueId>,
    /// A link to a queue of another Stream (`cross.rs`). On a queue without `next` it is the
    /// `q_next` across the perimeter (putnext and canputnext go there); on a queue whose
    /// `backq` is in the other Stream (the entry of a pipe's twist) it is that `backq`, where
    /// this Stream's back-enables go.
    pub(crate) remote: Option<QRef>,
    /// Other Streams put into this queue without a link back (a multiplexor's queues, which
    /// many Streams feed): its flow control is published as an entry's, and a refused writer's
    /// back-enable enables this queue's own service procedure, which wakes the writers it
    /// knows (`cross.rs`, `mux.rs`).
    pub(crate) publish: bool,
    pub(crate) srv: bool,
    /// What the put procedure only passes on ([`StreamModule::pass`], read at open).
    pub(crate) pass: Pass,
    /// Messages putq'd because the put procedure was busy (re-entry) and there is no service
    /// procedure to pick them up: to be fed to the put procedure when it returns.
    pub(crate) deferred: usize,
    /// `module_stat` of this queue (`stats.rs`).
    pub(crate) stats: ModuleStat,
    /// qtimeout: enable this queue when the platform clock reaches this (`timeout.rs`).
    pub(crate) timeout: Option<u64>,
}

/// A queue pair and its module instance.
pub(crate) struct Pair {
    pub(crate) sides: [Side; 2],
    pub(crate) inst: Option<Box<dyn StreamModule>>,
    /// A procedure, open or close of this pair is on the stack (the instance is out).
    pub(crate) running: bool,
    pub(crate) info: ModuleInfo,
    pub(crate) role: Role,
    /// Module-wide counters of the pair's streamtab (`stats.rs`), set at open.
    pub(crate) totals: Option<stats::Totals>,
}

impl Pair {
    /// Whether a message of type `ty` put into side `side` may be passed on with `putnext`
    /// without calling the put procedure (`put_once`'s step over, [`StreamModule::pass`]): the
    /// pair is idle and opened, its put procedure only passes such messages on, and nothing
    /// is queued on that side ahead of it.
    /// ([`Pass::Flow`] is not: see [`Pair::steps_over_flow`].)
    #[inline]
    pub(crate) fn steps_over(&self, side: usize, ty: crate::msg::MsgType) -> bool {
        self.may_step(side, ty, false)
    }

    /// As [`Pair::steps_over`] for a [`Pass::Flow`] side: it may be stepped over if the next
    /// queue can take the message's band, which the caller checks (`bcanputnext_from`).
    #[inline]
    pub(crate) fn steps_over_flow(&self, side: usize, ty: crate::msg::MsgType) -> bool {
        self.may_step(side, ty, true)
    }

    #[inline]
    fn may_step(&self, side: usize, ty: crate::msg::MsgType, flow: bool) -> bool {
        !self.running
            && self.inst.is_some()
            && self.sides.get(side).is_some_and(|s| {
                (s.pass == Pass::Flow) == flow && s.pass.covers(ty) && s.q.mblkcnt() == 0
            })
    }

    fn new(info: ModuleInfo, role: Role) -> Pair {
        let side = |readr| Side {
            q: Queue::new(
                info.mi_minpsz,
                info.mi_maxpsz,
                info.mi_hiwat,
                info.mi_lowat,
                readr,
            ),
            next: None,
            remote: None,
            publish: false,
            srv: false,
            pass: Pass::None,
            deferred: 0,
            stats: ModuleStat::default(),
            timeout: None,
        };
        Pair {
            sides: [side(true), side(false)],
            inst: None,
            running: false,
            info,
            role,
            totals: None,
        }
    }
}

/// A Stream: head (`H`, pair 0), modules, driver, and its run list of enabled queues.
///
/// # Locking
/// A `Stream` is one perimeter: the platform keeps it under one lock (the Stream lock) and
/// every method runs with that lock held (`&mut self` is the proof). Nothing here sleeps or
/// allocates other than atomically; puts into other Streams go through [`QRef`]s, and what
/// must wait for the lock to be dropped is collected in [`Stream::take_later`].
///
/// # Invariants
/// - Pair 0 exists and is the head ([`Role::Head`]) until the Stream is dropped.
/// - The run list holds each enabled queue once (QENAB) and has room for every queue, so
///   `qenable` never allocates.
pub struct Stream<H: HeadProcs> {
    pairs: Vec<Option<Pair>>,
    runlist: Ring<QueueId>,
    dropped: usize,
    pub(crate) closed: bool,
    /// Some queue may have a qtimeout pending (`timeout.rs`; cleared by a scan that finds
    /// none, so Streams that never use one never scan).
    pub(crate) timeouts: bool,
    /// The Stream head's state (SVR4 `stdata`); its procedures are [`HeadProcs`].
    pub(crate) sth: H,
    /// Perimeters to run and references to release once the lock is dropped (`cross.rs`).
    later: Later,
    /// The entry queues ([`Stream::entries`]), recomputed when `entries_stale`.
    entries: [Option<QueueId>; cross::NENTRY],
    /// The flow queue of each entry ([`Stream::flow_queue`]), computed with `entries`.
    flowqs: [Option<QueueId>; cross::NENTRY],
    /// A link changed since `entries` was computed (`links_changed`).
    entries_stale: bool,
    /// What this lock hold did that its leave acts on (flow control gone stale, a write
    /// across, the express send's state), one bit each, so that a hold that did none of it
    /// is seen as quiet with one test (`Perim::leave_quiet`).
    marks: HoldMarks,
    /// This Stream's own perimeter, given by the platform ([`Stream::set_perimeter`]) so that
    /// drivers can hand other Streams a [`QRef`] to their queues; let go of at close.
    me: Option<sys::Arc<dyn Perimeter>>,
    /// Data a read took straight from the inbound list, not yet read (`direct.rs`).
    direct: direct::Direct,
    /// The transmit path the driver published for the express send, and its write queue
    /// (`express_tx.rs`, `perim/express_send.rs`).
    express_tx: Option<(QueueId, sys::Arc<dyn crate::perim::express_send::ExpressTx>)>,
}

/// What a lock hold did that its leave must act on ([`Stream`]'s `marks`), one bit each.
/// Every bit is set and read only through the Stream's own methods under its lock; a leave
/// that finds none set, no queue enabled, no [`Later`] work and nothing taken directly left
/// has only the gate's lazy and hand-off flags to set (`Perim::leave_quiet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct HoldMarks(u8);

impl HoldMarks {
    /// Something the entries' published flow control is computed from (a queue, a link) may
    /// have changed since the last publish ([`Stream::take_flow_changed`]).
    pub(crate) const FLOW: HoldMarks = HoldMarks(0x01);
    /// A write went across in this lock hold (`across.rs`): the leave may arm the express
    /// write (`perim/express.rs`).
    pub(crate) const ACROSS: HoldMarks = HoldMarks(0x02);
    /// A putmsg sent an M_PROTO down in this lock hold: the leave may arm the express send.
    pub(crate) const SENT_PROTO: HoldMarks = HoldMarks(0x04);
    /// `express_tx` changed in this lock hold: the leave lets go of the perimeter's copy.
    pub(crate) const TX_CHANGED: HoldMarks = HoldMarks(0x08);
    /// The last lock hold that ended sent an M_PROTO down (`Perim::leave` arms the express
    /// send after a run of putmsgs; the next hold's leave clears it unless it sent one too).
    pub(crate) const STREAK: HoldMarks = HoldMarks(0x10);

    /// Whether none is set.
    #[inline]
    pub(crate) fn is_empty(self) -> bool {
        self.0 == 0
    }
    /// Whether `m` is set.
    #[inline]
    pub(crate) fn has(self, m: HoldMarks) -> bool {
        self.0 & m.0 != 0
    }
    /// Set `m`.
    #[inline]
    pub(crate) fn set(&mut self, m: HoldMarks) {
        self.0 |= m.0;
    }
    /// Whether `m` was set, clearing it (stored only when it was: most holds set none).
    #[inline]
    pub(crate) fn take(&mut self, m: HoldMarks) -> bool {
        let was = self.has(m);
        if was {
            self.0 &= !m.0;
        }
        was
    }
    /// Set `m` if `on`, else clear it; whether it was set.
    #[inline]
    pub(crate) fn replace(&mut self, m: HoldMarks, on: bool) -> bool {
        let was = self.has(m);
        if on {
            self.0 |= m.0;
        } else {
            self.0 &= !m.0;
        }
        was
    }
}

impl Stream<RawHead> {
    /// Open a Stream on driver `drv` with a [`RawHead`]: a head pair on top of a driver pair,
    /// then the driver's open routine. Errors: the driver's, or ENOSR when memory runs out.
    pub fn open(drv: &'static StreamTab, args: &OpenArgs) -> Result<Self, Errno> {
        Stream::open_with(RawHead, drv, args)
    }

    /// [`Stream::open`] with default arguments (device 0, DRVOPEN).
    pub fn new(drv: &'static StreamTab) -> Result<Self, Errno> {
        Stream::open(drv, &OpenArgs::driver(0))
    }

    /// Open by major number through the registry's `cdevsw` (ENXIO if no such driver).
    pub fn open_major(reg: &Registry, major: u32, args: &OpenArgs) -> Result<Self, Errno> {
        let drv = reg.find_driver(major).ok_or(Errno::ENXIO)?;
        Stream::open(drv, args)
    }
}

impl<H: HeadProcs> Stream<H> {
    /// Open a Stream on driver `drv` under the head `sth`: a head pair over a driver pair,
    /// then the driver's open routine (which may already send messages up to the head).
    pub fn open_with(sth: H, drv: &'static StreamTab, args: &OpenArgs) -> Result<Self, Errno> {
        let mut s = Stream::head_only(sth)?;
        let d = s.alloc_pair(drv.info, Role::Driver)?;
        s.set_next(QueueId::of(HEAD, true), Some(QueueId::of(d, true)));
        s.set_next(QueueId::of(d, false), Some(QueueId::of(HEAD, false)));
        if let Err(e) = s.run_open(d, drv, args) {
            s.closed = true; // nothing opened: no close routine to call
            return Err(e);
        }
        Ok(s)
    }

    /// A Stream with only its head pair (a FIFO links the head's write side to its own read
    /// side; a pipe end is given a driver later). ENOSR when memory runs out.
    pub fn head_only(sth: H) -> Result<Self, Errno> {
        let mut s = Stream {
            pairs: sys::vec_with_capacity(4)?,
            runlist: Ring::new(),
            dropped: 0,
            closed: false,
            timeouts: false,
            sth,
            later: Later::new(),
            entries: [None; cross::NENTRY],
            flowqs: [None; cross::NENTRY],
            entries_stale: true,
            marks: HoldMarks::FLOW,
            me: None,
            direct: direct::Direct::default(),
            express_tx: None,
        };
        let h = s.alloc_pair(HEAD_INFO, Role::Head)?;
        debug_assert_eq!(h, HEAD);
        Ok(s)
    }

    pub(crate) fn alloc_pair(&mut self, info: ModuleInfo, role: Role) -> Result<usize, Errno> {
        self.entries_stale = true;
        self.marks.set(HoldMarks::FLOW);
        // Room on the run list for both new queues, so qenable never allocates.
        let nq = self.pairs.len().saturating_add(1).saturating_mul(2);
        self.runlist.reserve(nq)?;
        let pair = Pair::new(info, role);
        let free = self.pairs.as_slice().iter().position(Option::is_none);
        if let Some(i) = free {
            if let Some(slot) = self.pairs.as_mut_slice().get_mut(i) {
                *slot = Some(pair);
                return Ok(i);
            }
        }
        let i = self.pairs.len();
        sys::vec_push(&mut self.pairs, Some(pair)).map_err(|_| Errno::ENOSR)?;
        Ok(i)
    }

    /// Put driver `drv` under a head-only Stream (a pipe end: its twist) and call its open
    /// routine. EINVAL if the Stream already has something below its head.
    pub fn attach_driver(&mut self, drv: &'static StreamTab, args: &OpenArgs) -> Result<(), Errno> {
        if self.next(self.head_wq()).is_some() {
            return Err(Errno::EINVAL);
        }
        let d = self.alloc_pair(drv.info, Role::Driver)?;
        self.set_next(QueueId::of(HEAD, true), Some(QueueId::of(d, true)));
        self.set_next(QueueId::of(d, false), Some(QueueId::of(HEAD, false)));
        if let Err(e) = self.run_open(d, drv, args) {
            self.set_next(QueueId::of(HEAD, true), None);
            self.free_pair(d);
            return Err(e);
        }
        Ok(())
    }

    /// Call `tab.open` for pair `p` (already linked); on success store the instance.
    pub(crate) fn run_open(
        &mut self,
        p: usize,
        tab: &'static StreamTab,
        args: &OpenArgs,
    ) -> Result<(), Errno> {
        if let Some(pair) = self.pair_mut(p) {
            pair.running = true;
            pair.totals = stats::totals_of(tab, true);
        }
        let rq = QueueId::of(p, false);
        self.count_stat(rq, stats::Stat::Open);
        let r = (tab.open)(&mut QCtx::new(self, rq), args);
        match r {
            Ok(inst) => {
                if let Some(pair) = self.pair_mut(p) {
                    pair.sides[0].srv = inst.has_rsrv();
                    pair.sides[1].srv = inst.has_wsrv();
                    pair.sides[0].pass = inst.pass(true);
                    pair.sides[1].pass = inst.pass(false);
                    pair.inst = Some(inst);
                    pair.running = false;
                }
                // Service procedures decide the entries' flow queues.
                self.entries_stale = true;
                self.drain_deferred(p);
                Ok(())
            }
            Err(e) => {
                if let Some(pair) = self.pair_mut(p) {
                    pair.running = false;
                }
                Err(e)
            }
        }
    }

    /// Number of pair slots (some may be free).
    pub(crate) fn npairs(&self) -> usize {
        self.pairs.len()
    }
    pub(crate) fn pair(&self, p: usize) -> Option<&Pair> {
        self.pairs.as_slice().get(p)?.as_ref()
    }
    /// Pair `p`, to change it: every change of a queue (counts, flags, water marks, links)
    /// comes through here, so this is where the flow control goes stale (but for the two
    /// queue operations that mark it stale only when they change the queue's flow state,
    /// `Stream::getq_upto_at` and `Stream::putq_run_at`).
    pub(crate) fn pair_mut(&mut self, p: usize) -> Option<&mut Pair> {
        self.marks.set(HoldMarks::FLOW);
        self.pairs.as_mut_slice().get_mut(p)?.as_mut()
    }
    /// Pair `p`, for what flow control is not computed from: its instance, `running`, its
    /// `deferred` count and statistics. A put that only passes through a pair (a pipe's twist
    /// sending on to the other end) then leaves the published flow control as it was, and the
    /// lock hold ends without a publish. Anything that changes a queue or a link goes through
    /// [`Stream::pair_mut`].
    pub(crate) fn pair_mut_quiet(&mut self, p: usize) -> Option<&mut Pair> {
        self.pairs.as_mut_slice().get_mut(p)?.as_mut()
    }

    /// Whether the flow control published at the end of the last lock hold may be out of
    /// date, and start counting again: nothing in the Stream's queues or links changed since
    /// then otherwise (`Perim::leave` skips the publish; what a refused writer waits for is
    /// always such a change: a change of a queue's flow state, or the inbound list taken
    /// while its mark is there).
    pub fn take_flow_changed(&mut self) -> bool {
        self.marks.take(HoldMarks::FLOW)
    }

    /// Say that the published flow control may be out of date (the inbound list was taken
    /// while a refused writer's mark was there, a queue's flow state changed).
    pub fn flow_changed(&mut self) {
        self.marks.set(HoldMarks::FLOW);
    }
    pub(crate) fn side(&self, q: QueueId) -> Option<&Side> {
        self.pair(q.pair())?.sides.get(q.side())
    }
    pub(crate) fn side_mut(&mut self, q: QueueId) -> Option<&mut Side> {
        self.pair_mut(q.pair())?.sides.get_mut(q.side())
    }
    pub(crate) fn set_next(&mut self, q: QueueId, next: Option<QueueId>) {
        if let Some(s) = self.side_mut(q) {
            s.next = next;
        }
        self.entries_stale = true;
    }

    /// Say that a queue's links or its `publish` mark changed (the entries are recomputed).
    pub(crate) fn links_changed(&mut self) {
        self.entries_stale = true;
        self.marks.set(HoldMarks::FLOW);
    }

    /// The Stream head's state.
    pub fn head(&self) -> &H {
        &self.sth
    }
    /// The Stream head's state, to change it.
    pub fn head_mut(&mut self) -> &mut H {
        &mut self.sth
    }

    /// The queue `q` (read-only view of counts and flags).
    pub fn queue(&self, q: QueueId) -> Option<&Queue> {
        self.side(q).map(|s| &s.q)
    }
    /// `q_next` of `q` inside this Stream.
    pub fn next(&self, q: QueueId) -> Option<QueueId> {
        self.side(q)?.next
    }
    /// The link of `q` into another Stream, if any (see [`Side`]).
    pub fn remote(&self, q: QueueId) -> Option<&QRef> {
        self.side(q)?.remote.as_ref()
    }
    /// Set (or clear) the link of `q` into another Stream. A link that is replaced is released
    /// after the lock is dropped ([`Stream::take_later`]).
    pub fn set_remote(&mut self, q: QueueId, to: Option<QRef>) {
        let Some(s) = self.side_mut(q) else {
            return;
        };
        let old = core::mem::replace(&mut s.remote, to);
        self.entries_stale = true;
        if let Some(old) = old {
            self.later.release(old.perim().clone());
        }
    }
    /// Whether `q` has a service procedure.
    pub fn has_srv(&self, q: QueueId) -> bool {
        self.side(q).is_some_and(|s| s.srv)
    }
    /// Name (`mi_idname`) of the module or driver owning `q`.
    pub fn name(&self, q: QueueId) -> Option<&'static str> {
        self.pair(q.pair()).map(|p| p.info.mi_idname)
    }
    /// Role of the pair owning `q`.
    pub fn role(&self, q: QueueId) -> Option<Role> {
        self.pair(q.pair()).map(|p| p.role)
    }
    /// The Stream head's read queue (where upstream messages collect).
    pub const fn head_rq(&self) -> QueueId {
        QueueId::of(HEAD, false)
    }
    /// The Stream head's write queue.
    pub const fn head_wq(&self) -> QueueId {
        QueueId::of(HEAD, true)
    }
    /// The driver's write queue (the bottom of the write side); none for a head-only Stream
    /// or a FIFO (whose write side turns around into its read side).
    pub fn driver_wq(&self) -> Option<QueueId> {
        let mut q = self.head_wq();
        while let Some(n) = self.next(q) {
            if n.is_read() {
                return None;
            }
            q = n;
        }
        (q != self.head_wq() && self.role(q) == Some(Role::Driver)).then_some(q)
    }
    /// The driver's read queue (where a driver's interrupt side starts).
    pub fn driver_rq(&self) -> Option<QueueId> {
        self.driver_wq().map(QueueId::rd)
    }
    /// Write queue of the topmost module (or driver) just below the head.
    pub fn top_wq(&self) -> Option<QueueId> {
        self.next(self.head_wq())
    }
    /// Number of pushed modules.
    pub fn nmodules(&self) -> usize {
        self.names_down()
            .filter(|(r, _)| *r == Role::Module)
            .count()
    }
    /// Roles and names of the pairs from the head down to the driver.
    pub fn names_down(&self) -> impl Iterator<Item = (Role, &'static str)> + '_ {
        let mut q = Some(self.head_wq());
        core::iter::from_fn(move || {
            let cur = q.filter(|c| !c.is_read())?;
            q = self.next(cur);
            let p = self.pair(cur.pair())?;
            Some((p.role, p.info.mi_idname))
        })
    }
    /// Messages freed because they had nowhere to go (putnext off the end, a closed Stream
    /// across a link, a failed putq).
    pub fn dropped(&self) -> usize {
        self.dropped
    }
    pub(crate) fn count_drop(&mut self) {
        self.dropped = self.dropped.saturating_add(1);
    }

    /// What this lock hold leaves for after the lock is dropped (see [`Later`]); the platform
    /// takes it before unlocking and finishes it after.
    pub fn take_later(&mut self) -> Later {
        self.later.take()
    }
    pub(crate) fn later_mut(&mut self) -> &mut Later {
        &mut self.later
    }

    /// A context for code acting on queue `q` from outside its procedures (a driver's
    /// interrupt handler, a timeout): putq, putnext, canputnext, qenable… on `q`.
    pub fn qctx(&mut self, q: QueueId) -> QCtx<'_> {
        QCtx::new(self, q)
    }

    /// Send `mp` down from the Stream head (`putnext` from the head's write queue).
    pub fn write(&mut self, mp: crate::msg::Msg) {
        let h = self.head_wq();
        QCtx::new(self, h).putnext(mp)
    }

    /// Take the next message queued at the Stream head (getq on its read queue,
    /// back-enabling the Stream when it drains).
    pub fn read(&mut self) -> Option<crate::msg::Msg> {
        let h = self.head_rq();
        QCtx::new(self, h).getq()
    }

    /// I_PUSH: push the module registered as `name` below the head (EINVAL if unknown).
    pub fn push(&mut self, reg: &Registry, name: &str) -> Result<(), Errno> {
        let tab = reg.find_module(name).ok_or(Errno::EINVAL)?;
        self.push_tab(tab, &OpenArgs::module())
    }

    /// Push the module `tab` below the head and call its open routine. On failure the pair is
    /// unlinked again and the error returned.
    pub fn push_tab(&mut self, tab: &'static StreamTab, args: &OpenArgs) -> Result<(), Errno> {
        let below = self.top_wq().ok_or(Errno::EINVAL)?;
        // The queue feeding the head's read side: `RD(below)` in a Stream over a driver.
        let feeder = self.backq(self.head_rq());
        let p = self.alloc_pair(tab.info, Role::Module)?;
        let (h, n) = (self.head_wq(), QueueId::of(p, true));
        // On a FIFO the head's own write queue feeds its read queue: the first module pushed
        // turns its write side around into its own read side (`sth/fifo.rs`).
        let below = if feeder == Some(h) { n.rd() } else { below };
        self.set_next(n, Some(below));
        self.set_next(h, Some(n));
        if let Some(f) = feeder.filter(|f| *f != h) {
            self.set_next(f, Some(n.rd()));
        }
        self.set_next(n.rd(), Some(self.head_rq()));
        if let Err(e) = self.run_open(p, tab, args) {
            self.unlink_top(p);
            return Err(e);
        }
        Ok(())
    }

    /// I_POP: close and remove the module just below the head (EINVAL if there is none).
    pub fn pop(&mut self) -> Result<(), Errno> {
        let top = self.top_wq().ok_or(Errno::EINVAL)?;
        if top.is_read() || self.role(top) != Some(Role::Module) {
            return Err(Errno::EINVAL);
        }
        self.run_close(top.pair());
        self.unlink_top(top.pair());
        Ok(())
    }

    pub(crate) fn run_close(&mut self, p: usize) {
        let Some(pair) = self.pair_mut(p) else {
            return;
        };
        let Some(mut inst) = pair.inst.take() else {
            return;
        };
        pair.running = true;
        self.count_stat(QueueId::of(p, false), stats::Stat::Close);
        inst.close(&mut QCtx::new(self, QueueId::of(p, false)));
        if let Some(pair) = self.pair_mut(p) {
            pair.running = false;
        }
        // The instance is dropped here: after close nothing may call it again.
    }

    /// Unlink pair `p` (the top module), drop its queued messages and its run-list entries.
    fn unlink_top(&mut self, p: usize) {
        let w = QueueId::of(p, true);
        let below = self.next(w);
        let feeder = self.backq(w.rd());
        let h = self.head_wq();
        if below == Some(w.rd()) {
            // The last module of a FIFO: the head's write side feeds its read side again.
            let hr = self.head_rq();
            self.set_next(h, Some(hr));
        } else {
            self.set_next(h, below);
        }
        if let Some(f) = feeder.filter(|f| *f != w) {
            let hr = self.head_rq();
            self.set_next(f, Some(hr));
        }
        if let Some(pair) = self.pair_mut(p) {
            for s in pair.sides.iter_mut() {
                let f = s.q.flushq(FLUSHALL);
                let _ = f.event; // the pair is going away: nobody upstream waits on it
            }
        }
        self.free_pair(p);
    }

    /// Free pair `p`: its queued messages, its links to other Streams (released after the
    /// lock is dropped) and its run-list entries go.
    pub(crate) fn free_pair(&mut self, p: usize) {
        self.entries_stale = true;
        self.marks.set(HoldMarks::FLOW);
        self.runlist.extract_if(|q| q.pair() == p, |_| {});
        for side in [false, true] {
            self.set_remote(QueueId::of(p, side), None);
        }
        if let Some(slot) = self.pairs.as_mut_slice().get_mut(p) {
            *slot = None;
        }
    }

    /// Close the Stream: pop every module (their close routines run top-down), then close the
    /// driver (and a multiplexor's lower half on the head pair, if the Stream is still linked),
    /// free what is still queued below the head, and let go of every link to other Streams
    /// and of its own perimeter. Idempotent; also done on drop.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        while self.pop().is_ok() {}
        if let Some(d) = self.driver_wq() {
            self.run_close(d.pair());
        }
        self.mux_uninstall();
        for p in 0..self.pairs.len() {
            for side in [false, true] {
                self.set_remote(QueueId::of(p, side), None);
                // What is still queued goes now, not when the last reference to the
                // Stream does (a closed Stream may be referenced for a while); what reached
                // the head is the head's to free.
                let q = QueueId::of(p, side);
                if q == self.head_rq() {
                    continue;
                }
                if let Some(s) = self.side_mut(q) {
                    let f = s.q.flushq(FLUSHALL);
                    let _ = f.event; // closed: nobody upstream waits on it
                    s.deferred = 0;
                }
            }
        }
        self.runlist.extract_if(|_| true, |_| {});
        if let Some(me) = self.me.take() {
            self.later.release(me);
        }
        self.closed = true;
    }

    /// Give the Stream a reference to its own perimeter (the platform, right after wrapping
    /// the Stream in it): drivers then make [`QRef`]s to their own queues for other Streams
    /// ([`QCtx::qref_here`]). The Stream keeps it until it closes, so a Stream that is given
    /// one is freed only after [`Stream::close`]. A replaced reference is released after the
    /// lock is dropped.
    pub fn set_perimeter(&mut self, me: sys::Arc<dyn Perimeter>) {
        if self.closed {
            return;
        }
        if let Some(old) = self.me.replace(me) {
            self.later.release(old);
        }
    }

    /// A reference to queue `q` of this Stream for another Stream, if the Stream was given
    /// its perimeter ([`Stream::set_perimeter`]) and is open.
    pub fn qref_here(&self, q: QueueId) -> Option<QRef> {
        self.me.as_ref().map(|p| QRef::new(p.clone(), q))
    }

    /// Whether the Stream was closed.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// Run each enabled service procedure, in qenable order, until the run list is empty;
    /// returns how many ran.
    pub fn runqueues(&mut self) -> usize {
        let mut n = 0;
        while let Some(q) = self.runlist.pop_front() {
            if let Some(s) = self.side_mut(q) {
                s.q.clear_enabled();
            }
            if self.run_srv(q) {
                n += 1;
            }
        }
        n
    }

    /// Whether any service procedure is enabled.
    pub fn has_enabled(&self) -> bool {
        !self.runlist.is_empty()
    }

    /// Whether this lock hold left its leave nothing to act on (`Perim::leave_quiet`): no
    /// mark ([`HoldMarks`]: flow control gone stale, a write across, the express send's
    /// state), no service procedure enabled, no [`Later`] work, nothing a direct take kept
    /// and the read did not take.
    #[inline]
    pub(crate) fn hold_is_quiet(&self) -> bool {
        self.marks.is_empty()
            && self.runlist.is_empty()
            && self.later.is_empty()
            && self.direct_first().is_none()
    }
}

impl<H: HeadProcs> Drop for Stream<H> {
    fn drop(&mut self) {
        self.close();
    }
}

/// The scheduler drives a Stream's service procedures through `Schedulable`.
impl<H: HeadProcs> crate::sched::Schedulable for Stream<H> {
    fn runqueues(&mut self) -> usize {
        Stream::runqueues(self)
    }
    fn has_enabled(&self) -> bool {
        Stream::has_enabled(self)
    }
}
