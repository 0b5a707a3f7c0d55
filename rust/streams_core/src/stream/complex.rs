//! Stream complexes: several Streams in one arena, under one lock.
//!
//! A multiplexing driver routes messages between its Streams (every open of it is one upper
//! Stream, every Stream linked under it one lower Stream), and a loop driver between two of
//! its Streams. Routing is `putnext` from a queue of one Stream to the next queue of another,
//! so these Streams share one arena: a *Stream complex* ([`Stream::complex`]). Each open adds
//! a Stream head and a driver pair ([`Stream::open_in`]) whose head is parked like the other
//! end of a pipe and swapped in by `with_end` for each operation; I_LINK moves the lower
//! Stream's pairs in (`transfer.rs`, `sth/mux.rs`). The complex's own head slot holds an
//! inactive anchor that names no pair, so the complex is never "a" Stream itself.
//!
//! The price is one lock for all Streams of such a driver; the test drivers that use it
//! (`mux`, `loop`) accept that. A driver whose Streams must scale across CPUs keeps one
//! Stream per open and talks across Streams through the platform instead.

use super::{OpenArgs, QueueId, Role, Stream, StreamTab, HEAD_INFO};
use crate::errno::Errno;
use crate::sth::pipe::Parked;
use crate::sth::StrHead;
use crate::sys;

/// The pair index of a complex's anchor head (names no pair; `QueueId::of` cannot overflow).
pub(crate) const ANCHOR: usize = usize::MAX >> 2;
/// The pair index of a parked slot whose Stream has closed (reused by the next open).
pub(crate) const VACANT: usize = ANCHOR - 1;

impl Stream {
    /// An empty Stream complex (see the module docs). ENOSR when memory runs out.
    pub fn complex() -> Result<Stream, Errno> {
        let mut s = Stream::empty(false)?;
        s.head = ANCHOR;
        s.multi = Some(sys::new_box(crate::sth::mux::Complex::new())?);
        Ok(s)
    }

    /// Whether this arena is a Stream complex.
    pub fn is_complex(&self) -> bool {
        self.multi.is_some()
    }

    /// Open a new Stream over `drv` in this complex: a real Stream head over a driver pair,
    /// then the driver's open routine (with the new head swapped in). Returns the head's
    /// pair index, which `with_end` takes. EINVAL on a Stream that is not a complex; the
    /// driver's error or ENOSR otherwise, with nothing left behind.
    pub fn open_in(&mut self, drv: &'static StreamTab, args: &OpenArgs) -> Result<usize, Errno> {
        if self.multi.is_none() {
            return Err(Errno::EINVAL);
        }
        let sth = sys::new_box(StrHead::new(true))?;
        let slot = match self.parked.iter().position(|p| p.head == VACANT) {
            Some(i) => i,
            None => {
                sys::vec_reserve(&mut self.parked, 1)?;
                self.parked.len()
            }
        };
        let h = self.alloc_pair(HEAD_INFO, Role::Head)?;
        let d = match self.alloc_pair(drv.info, Role::Driver) {
            Ok(d) => d,
            Err(e) => {
                self.free_pair(h);
                return Err(e);
            }
        };
        self.set_next(QueueId::of(h, true), Some(QueueId::of(d, true)));
        self.set_next(QueueId::of(d, false), Some(QueueId::of(h, false)));
        let parked = Parked { head: h, sth };
        match self.parked.as_mut_slice().get_mut(slot) {
            Some(p) => *p = parked,
            None => {
                let _ = sys::vec_push(&mut self.parked, parked); // reserved above
            }
        }
        if let Err(e) = self.with_head(h, |s| s.run_open(d, drv, args)) {
            self.free_pair(d);
            self.free_pair(h);
            if let Some(p) = self.parked.as_mut_slice().get_mut(slot) {
                p.head = VACANT;
            }
            return Err(e);
        }
        Ok(h)
    }

    /// Close the Stream swapped in, inside a complex: its modules pop, its driver closes, and
    /// its head and driver pairs are freed (the parked slot turns vacant when it is swapped
    /// out again, see `with_head`).
    pub(crate) fn close_in(&mut self) {
        while self.pop().is_ok() {}
        if let Some(d) = self.driver_wq() {
            self.run_close(d.pair());
            self.free_pair(d.pair());
        }
        let h = self.head;
        self.free_pair(h);
    }

    /// Free pair `p`: its queued messages and its run-list entries go.
    pub(crate) fn free_pair(&mut self, p: usize) {
        self.runlist.extract_if(|q| q.pair() == p, |_| {});
        if let Some(slot) = self.pairs.as_mut_slice().get_mut(p) {
            *slot = None;
        }
    }

    /// Close every Stream of the complex (the complex is going away).
    pub(crate) fn close_complex(&mut self) {
        let mut i = 0;
        while let Some(h) = self.parked.get(i).map(|p| p.head) {
            if h != VACANT {
                self.with_head(h, Stream::sth_close);
            }
            i += 1;
        }
        self.mux_close_all();
    }

    /// Enable the write queue of every driver pair named `name` in this arena (the upper
    /// Streams of a multiplexing driver whose lower side can take data again).
    pub(crate) fn enable_drivers_named(&mut self, name: &str) {
        for p in 0..self.pairs.len() {
            let hit = self
                .pair(p)
                .is_some_and(|x| x.role == Role::Driver && x.info.mi_idname == name);
            if hit {
                self.qenable(QueueId::of(p, true));
            }
        }
    }
}
