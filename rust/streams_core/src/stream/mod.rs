//! A Stream: the queue pairs from the Stream head down to the driver, and the modules between.
//!
//! The pairs live in an arena (`Vec<Option<Pair>>`) and are named by [`QueueId`]s instead of
//! pointers: pair `i` has read queue `2i` and write queue `2i + 1`, so SVR4's `RD`, `WR` and
//! `OTHERQ` are bit operations ([`QueueId::rd`], [`QueueId::wr`], [`QueueId::otherq`]). `q_next`
//! is an `Option<QueueId>` per queue. Each pair owns its module instance.
//!
//! Procedures run with a [`QCtx`] (see `ctx.rs`): `putnext` calls the next put procedure
//! directly, as in SVR4. While a procedure runs its instance is taken out of the arena; a put
//! that reaches an instance already running (a loopback driver's `qreply` coming back up into a
//! module that is still in its `wput`, say) does not re-enter it: the message is `putq`'d on the
//! target queue and either the queue's service procedure is enabled or, for a queue without
//! one, the put procedure is fed the message as soon as the running procedure returns (in a
//! loop, not recursively). Every instance is thus on the call stack at most once, which bounds
//! the recursion depth by the number of pairs.
//!
//! The top pair is the Stream head. Opened with [`Stream::open`] it is a placeholder: its read
//! queue collects whatever arrives ([`Stream::read`]), and [`Stream::write`] sends down from
//! its write queue. Opened with `Stream::sth_open` the head's read put procedure is the real
//! one (`crate::sth`): it acts on M_SETOPTS, M_FLUSH, M_ERROR, … and queues only data.
//! `qenable` puts a queue on this Stream's run list once (QENAB);
//! [`Stream::runqueues`] runs the service procedures.

mod complex;
mod ctx;
mod timeout;
mod transfer;
pub(crate) use complex::VACANT;
pub(crate) use transfer::Moved;
pub mod module;
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

pub use ctx::QCtx;
pub use module::{LowerOpenFn, ModuleInfo, OpenArgs, OpenFn, Sflag, StreamModule, StreamTab};
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

/// `module_info` of the placeholder Stream head.
pub const HEAD_INFO: ModuleInfo = ModuleInfo {
    mi_idnum: 0,
    mi_idname: "strhead",
    mi_minpsz: 0,
    mi_maxpsz: INFPSZ,
    mi_hiwat: STRHIGH,
    mi_lowat: STRLOW,
};

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
    /// The number naming this queue in a `linkblk` (`l_qtop`, `l_qbot`).
    pub const fn raw(self) -> u64 {
        self.0 as u64
    }
    /// The queue a `linkblk` number names (`None` if out of range; a stale or forged number
    /// names at worst another queue of the same arena, never memory).
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
    /// The lower half of a multiplexing driver: the former Stream head of a Stream linked
    /// under it with I_LINK/I_PLINK (`sth/mux.rs`).
    Lower,
}

/// One queue of a pair with its link.
pub(crate) struct Side {
    pub(crate) q: Queue,
    pub(crate) next: Option<QueueId>,
    pub(crate) srv: bool,
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
    pub(crate) totals: Option<&'static stats::Totals>,
}

impl Pair {
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
            srv: false,
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

/// A Stream: head, modules, driver, and its run list of enabled queues.
pub struct Stream {
    pairs: Vec<Option<Pair>>,
    runlist: Ring<QueueId>,
    dropped: usize,
    pub(crate) closed: bool,
    /// Some queue may have a qtimeout pending (`timeout.rs`; cleared by a scan that finds
    /// none, so Streams that never use one never scan).
    pub(crate) timeouts: bool,
    /// The Stream head's state (see `sth`); inactive for the placeholder head of
    /// [`Stream::open`], which queues whatever arrives.
    /// Boxed, so that swapping the ends of a pipe (`with_end`) swaps two pointers.
    pub(crate) sth: Box<crate::sth::StrHead>,
    /// Pair index of the head `sth` belongs to: the head that `head_rq`/`head_wq`, push/pop
    /// and the Stream head operations act on.
    pub(crate) head: usize,
    /// The Stream heads not swapped in: the other end of a pipe (`sth/pipe.rs`), or the
    /// heads of a Stream complex (`sth/mux.rs`); `with_end` swaps one in.
    pub(crate) parked: Vec<crate::sth::pipe::Parked>,
    /// A Stream complex: the Streams of a multiplexing (or loop) driver and the Streams
    /// linked under it share this arena and lock (`sth/mux.rs`).
    pub(crate) multi: Option<Box<crate::sth::mux::Complex>>,
}

impl Stream {
    /// Open a Stream on driver `drv`: a head pair on top of a driver pair, then the driver's
    /// open routine. Errors: the driver's, or ENOSR when memory runs out.
    pub fn open(drv: &'static StreamTab, args: &OpenArgs) -> Result<Stream, Errno> {
        Stream::open_head(drv, args, false)
    }

    /// Open with a placeholder head (`sth == false`) or a real Stream head (`sth::`).
    pub(crate) fn open_head(
        drv: &'static StreamTab,
        args: &OpenArgs,
        sth: bool,
    ) -> Result<Stream, Errno> {
        let mut s = Stream::empty(sth)?;
        let head = s.alloc_pair(HEAD_INFO, Role::Head)?;
        let d = s.alloc_pair(drv.info, Role::Driver)?;
        s.set_next(QueueId::of(head, true), Some(QueueId::of(d, true)));
        s.set_next(QueueId::of(d, false), Some(QueueId::of(head, false)));
        if let Err(e) = s.run_open(d, drv, args) {
            s.closed = true; // nothing opened: no close routine to call
            return Err(e);
        }
        Ok(s)
    }

    /// A Stream with no pairs yet; its head will be pair 0.
    pub(crate) fn empty(sth: bool) -> Result<Stream, Errno> {
        Ok(Stream {
            pairs: sys::vec_with_capacity(4)?,
            runlist: Ring::new(),
            dropped: 0,
            closed: false,
            timeouts: false,
            sth: sys::new_box(crate::sth::StrHead::new(sth))?,
            head: 0,
            parked: Vec::new(),
            multi: None,
        })
    }

    /// Open a Stream on driver `drv` with default arguments (device 0, DRVOPEN).
    pub fn new(drv: &'static StreamTab) -> Result<Stream, Errno> {
        Stream::open(drv, &OpenArgs::driver(0))
    }

    /// Open by major number through the registry's `cdevsw` (ENXIO if no such driver).
    pub fn open_major(reg: &Registry, major: u32, args: &OpenArgs) -> Result<Stream, Errno> {
        let drv = reg.find_driver(major).ok_or(Errno::ENXIO)?;
        Stream::open(drv, args)
    }

    pub(crate) fn alloc_pair(&mut self, info: ModuleInfo, role: Role) -> Result<usize, Errno> {
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
                    pair.inst = Some(inst);
                    pair.running = false;
                }
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

    pub(crate) fn pair(&self, p: usize) -> Option<&Pair> {
        self.pairs.as_slice().get(p)?.as_ref()
    }
    pub(crate) fn pair_mut(&mut self, p: usize) -> Option<&mut Pair> {
        self.pairs.as_mut_slice().get_mut(p)?.as_mut()
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
    }

    /// The queue `q` (read-only view of counts and flags).
    pub fn queue(&self, q: QueueId) -> Option<&Queue> {
        self.side(q).map(|s| &s.q)
    }
    /// `q_next` of `q`.
    pub fn next(&self, q: QueueId) -> Option<QueueId> {
        self.side(q)?.next
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
    pub fn head_rq(&self) -> QueueId {
        QueueId::of(self.head, false)
    }
    /// The Stream head's write queue.
    pub fn head_wq(&self) -> QueueId {
        QueueId::of(self.head, true)
    }
    /// The driver's write queue (the bottom of the write side). A pipe end has none: its
    /// write side turns into the other head's read side.
    pub fn driver_wq(&self) -> Option<QueueId> {
        let mut q = self.head_wq();
        while let Some(n) = self.next(q) {
            if n.is_read() {
                return None;
            }
            q = n;
        }
        (q != self.head_wq()).then_some(q)
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
    /// Roles and names of the pairs from the head down to the driver (on a pipe end: down to
    /// the twist, where the write side meets the other end's read side).
    pub fn names_down(&self) -> impl Iterator<Item = (Role, &'static str)> + '_ {
        let mut q = Some(self.head_wq());
        core::iter::from_fn(move || {
            let cur = q.filter(|c| !c.is_read())?;
            q = self.next(cur);
            let p = self.pair(cur.pair())?;
            Some((p.role, p.info.mi_idname))
        })
    }
    /// Messages freed because they had nowhere to go (putnext off the end, failed putq).
    pub fn dropped(&self) -> usize {
        self.dropped
    }
    pub(crate) fn count_drop(&mut self) {
        self.dropped = self.dropped.saturating_add(1);
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

    /// Take the next message that arrived at the Stream head (getq on its read queue,
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
        // The queue feeding the head's read side: `RD(below)` in a Stream over a driver, the
        // other end's write side on a pipe.
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
        // A read queue below the head is the twist of a pipe: the module there (if any) was
        // pushed on the other end.
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
        self.runlist.extract_if(|q| q.pair() == p, |_| {});
        if let Some(pair) = self.pair_mut(p) {
            for s in pair.sides.iter_mut() {
                let f = s.q.flushq(FLUSHALL);
                let _ = f.event; // the pair is going away: nobody upstream waits on it
            }
        }
        if let Some(slot) = self.pairs.as_mut_slice().get_mut(p) {
            *slot = None;
        }
    }

    /// Close the Stream: pop every module (their close routines run top-down), then close the
    /// driver. Idempotent; also done on drop.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        if self.multi.is_some() {
            self.close_complex();
            self.closed = true;
            return;
        }
        while self.pop().is_ok() {}
        if !self.parked.is_empty() {
            self.with_other_end(|s| while s.pop().is_ok() {});
        }
        if let Some(d) = self.driver_wq() {
            self.run_close(d.pair());
        }
        self.closed = true;
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
}

impl Drop for Stream {
    fn drop(&mut self) {
        self.close();
    }
}

/// The scheduler drives a Stream's service procedures through `Schedulable`.
impl crate::sched::Schedulable for Stream {
    fn runqueues(&mut self) -> usize {
        Stream::runqueues(self)
    }
    fn has_enabled(&self) -> bool {
        Stream::has_enabled(self)
    }
}
