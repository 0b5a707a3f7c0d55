//! Shared tests (host `cargo test` and KUnit) of STREAMS pipes: each end its own Stream and
//! perimeter ([`TestPipe`]), the Stream head across the twist, the two-phase read and write on
//! pipes, connld, and modules pushed on pipe ends.

pub mod connld;
pub mod ends;
pub mod fast;
pub mod pipe;

use streams_core::errno::Errno;
use streams_core::perim::test::{settle, TestPerim};
use streams_core::sth::{StrHead, Stream};
use streams_core::stream::Perimeter;
use streams_core::sys::Arc;

/// A STREAMS pipe for tests: two ends, each a Stream in a [`TestPerim`], connected. An
/// operation on one end ([`TestPipe::end`]) runs as a system call does, so what it sends is
/// at the other end when it returns.
pub struct TestPipe {
    ends: [Arc<TestPerim<StrHead>>; 2],
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
        Ok(TestPipe { ends: [a, b] })
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
