//! Shared tests (host `cargo test` and KUnit) of STREAMS pipes: each end its own Stream and
//! perimeter ([`TestPipe`]), the Stream head across the twist, the two-phase read and write on
//! pipes (no user copy under a Stream lock, the reader token), connld, and modules pushed on
//! pipe ends.

pub mod across;
pub mod batch;
pub mod connld;
pub mod direct;
pub mod ends;
pub mod hold;
pub mod lazytake;
pub mod limits;
pub mod pipe;
pub mod quiet;
pub mod readrun;
pub mod twophase;

use streams_core::errno::Errno;
use streams_core::msg::Msg;
use streams_core::perim::test::{settle, TestPerim};
use streams_core::sth::call::{HeadCall, HeadShared};
use streams_core::sth::{Stop, StrHead, Stream};
use streams_core::stream::Perimeter;
use streams_core::sys::Arc;

/// A STREAMS pipe for tests: two ends, each a Stream in a [`TestPerim`], connected. An
/// operation on one end ([`TestPipe::end`]) runs as a system call does, so what it sends is
/// at the other end when it returns.
pub struct TestPipe {
    ends: [Arc<TestPerim<StrHead>>; 2],
    /// Each end's reader token and write hint (`sth::call::HeadShared`).
    shared: [HeadShared; 2],
}

impl TestPipe {
    /// A new connected pipe. ENOSR when memory runs out.
    pub fn new() -> Result<TestPipe, Errno> {
        let a = TestPerim::new(super::end()?)?;
        let b = TestPerim::new(super::end()?)?;
        let arq = a.op(|s| super::twist_rq(s)).ok_or(Errno::EINVAL)?;
        let brq = b.op(|s| super::twist_rq(s)).ok_or(Errno::EINVAL)?;
        let pa: Arc<dyn Perimeter> = a.clone();
        let pb: Arc<dyn Perimeter> = b.clone();
        a.op(|s| super::connect(s, pb, brq))?;
        b.op(|s| super::connect(s, pa, arq))?;
        // Connecting woke both heads; tests start from quiet heads.
        for e in [&a, &b] {
            e.op(|s| {
                let _ = s.sth_take_events();
            });
        }
        Ok(TestPipe {
            ends: [a, b],
            shared: [HeadShared::new(), HeadShared::new()],
        })
    }

    /// The perimeter of end `end` (0 or 1; anything else is end 1).
    pub fn perim(&self, end: usize) -> &Arc<TestPerim<StrHead>> {
        let [a, b] = &self.ends;
        if end == 0 {
            a
        } else {
            b
        }
    }

    /// Run `f` on end `end` as a system call does (see the type docs).
    pub fn end<R>(&self, end: usize, f: impl FnOnce(&mut Stream) -> R) -> R {
        self.perim(end).op(f)
    }

    /// [`TestPipe::end`] for the Stream head's read (`TestPerim::op_read`): data waiting on
    /// the end's inbound list may be read straight from there.
    pub fn end_read<R>(
        &self,
        end: usize,
        ready: impl FnOnce(&Stream) -> bool,
        f: impl FnOnce(&mut Stream) -> R,
    ) -> R {
        self.perim(end).op_read(ready, f)
    }

    /// End `end` as the platform of a system call (`sth::call`): each step a lock hold of
    /// that end's perimeter, the end's own reader token.
    pub fn call(&self, end: usize) -> EndCall<'_> {
        let [a, b] = &self.shared;
        EndCall {
            pipe: self,
            end,
            shared: if end == 0 { a } else { b },
        }
    }

    /// close(2) of end `end`: the head closes, then its gate (what is in flight is freed).
    pub fn close(&self, end: usize) {
        let p = self.perim(end);
        p.op(Stream::sth_close);
        p.close_gate();
    }

    /// Run whatever was scheduled on either end until nothing is (puts from outside).
    pub fn settle(&self) -> usize {
        let [a, b] = &self.ends;
        settle(&[&**a, &**b])
    }
}

impl Drop for TestPipe {
    /// The ends hold references to each other until they close: close both, so that a test
    /// that fails half-way does not leak them.
    fn drop(&mut self) {
        for e in 0..2 {
            if !self.end(e, |s| s.sth().is_closed()) {
                self.close(e);
            }
        }
    }
}

/// One end of a [`TestPipe`] as the platform of a system call (`sth::call::HeadCall`): each
/// step of the call is a lock hold of that end's perimeter ([`TestPerim::op`]), so what
/// another caller does between two steps (a `UserIo` that acts while it copies) runs with no
/// lock held, as in the kernel. A call that would sleep runs its cancel and fails with EINTR;
/// a non-blocking one gets EAGAIN.
pub struct EndCall<'a> {
    pipe: &'a TestPipe,
    end: usize,
    shared: &'a HeadShared,
}

impl HeadCall for EndCall<'_> {
    fn run<R>(
        &self,
        nonblock: bool,
        _limit_ms: Option<u32>,
        mut op: impl FnMut(&mut Stream) -> Result<R, Stop>,
        cancel: impl FnOnce(&mut Stream),
    ) -> Result<R, Errno> {
        self.pipe.end(self.end, |s| match op(s) {
            Ok(v) => Ok(v),
            Err(Stop::Err(e)) => Err(e),
            Err(Stop::Block(_)) if nonblock => Err(Errno::EAGAIN),
            Err(Stop::Block(_)) => {
                cancel(s);
                Err(Errno::EINTR)
            }
        })
    }

    fn run_read<R>(
        &self,
        nonblock: bool,
        ready: impl Fn(&Stream) -> bool,
        mut op: impl FnMut(&mut Stream) -> Result<R, Stop>,
    ) -> Result<R, Errno> {
        self.pipe.end_read(self.end, ready, |s| match op(s) {
            Ok(v) => Ok(v),
            Err(Stop::Err(e)) => Err(e),
            Err(Stop::Block(_)) if nonblock => Err(Errno::EAGAIN),
            Err(Stop::Block(_)) => Err(Errno::EINTR),
        })
    }

    fn shared(&self) -> &HeadShared {
        self.shared
    }

    fn write_express(&self, m: Msg) -> Result<usize, Msg> {
        self.pipe.perim(self.end).perim.write_express(m)
    }
}
