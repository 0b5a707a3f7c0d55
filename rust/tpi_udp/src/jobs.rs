//! The work the `udp` driver does outside its Stream lock, and the objects that carry it.
//!
//! A bind and the release of a port may sleep (the kernel side creates or releases a UDP
//! socket), so they never run under the Stream lock. Each is an object that the lock hold
//! leaves on its `Later` list (`QCtx::run_later`), which runs it right after the unlock, in
//! the caller's process context; a list that cannot take it hands it to [`Net::defer`]
//! (`Perimeter::schedule`). The objects implement `Perimeter` only for that: nothing is ever
//! put into them.
//!
//! - [`Binder`]: one per endpoint, made at open (process context, no lock: the locks it holds
//!   are allocated there). T_BIND_REQ leaves the request in it and runs it after the unlock;
//!   it calls [`Net::bind`], keeps the result, and tells the driver by putting the M_CTL it
//!   was given on the driver's read queue, whose put procedure turns the result into
//!   T_BIND_ACK or T_ERROR_ACK. Whether the result or the close comes first is decided under
//!   the binder's lock: either the driver takes the port (and releases it if it closed), or
//!   the binder sees the close and drops the port itself, in process context.
//! - [`Held`]: a bound port. Releasing it (T_UNBIND_REQ, close) is running it after the
//!   unlock: the list's reference is the last one, so the port drops there.

use streams_core::errno::Errno;
use streams_core::msg::Msg;
use streams_core::stream::{Perimeter, QRef, QueueId};
use streams_core::sys::{self, Arc, BhLock};

use super::net::{BindError, BindReq, Job, Net, Rx};

/// A bound port, released by dropping the last reference outside the Stream lock.
pub struct Held<N: Net> {
    /// The port.
    pub port: N::Port,
}

impl<N: Net> Perimeter for Held<N> {
    fn put_in(&self, _q: QueueId, mp: Msg) -> Result<bool, Msg> {
        Err(mp)
    }
    fn backenable_in(&self, _q: QueueId, _band: u8) -> bool {
        false
    }
    fn bcanput_in(&self, _q: QueueId, _band: u8) -> bool {
        true
    }
    /// Nothing to do: the caller drops its reference next, which drops the port.
    fn run(&self, _depth: u32) {}
    fn schedule(self: Arc<Self>) {
        N::defer(Job(self));
    }
}

/// A bind asked for and not yet run.
pub struct BindWork<N: Net> {
    /// The endpoint's opener.
    pub opener: Arc<N::Opener>,
    /// What to bind.
    pub req: BindReq,
    /// Where the port delivers.
    pub rx: Rx,
    /// The driver's read queue, and the M_CTL that tells it the result is there.
    pub done: QRef,
    /// The M_CTL (allocated with the request: telling the driver cannot fail).
    pub note: Msg,
}

/// What the binder holds under its lock.
pub struct BinderState<N: Net> {
    /// The request waiting to run.
    pub work: Option<BindWork<N>>,
    /// The result waiting for the driver.
    pub done: Option<Result<Arc<Held<N>>, BindError>>,
    /// The endpoint closed: a result is dropped by the binder.
    pub closed: bool,
}

/// The endpoint's binder (see the module docs).
pub struct Binder<N: Net> {
    /// Leaf lock: never held across a call out.
    pub state: BhLock<BinderState<N>>,
}

impl<N: Net> Binder<N> {
    /// A binder with nothing to do. Sleeping allocation: the driver's open routine.
    pub fn new() -> Result<Arc<Binder<N>>, Errno> {
        let state = BhLock::new(BinderState {
            work: None,
            done: None,
            closed: false,
        })
        .map_err(|_| Errno::ENOSR)?;
        sys::new_arc(Binder { state }).map_err(|_| Errno::ENOSR)
    }

    /// The endpoint closed (under its lock): no result will be taken after this one. Returns
    /// what was left (a port to release) and drops a request that never ran.
    pub fn close(&self) -> Option<Arc<Held<N>>> {
        let (work, done) = {
            let mut g = self.state.lock();
            g.closed = true;
            (g.work.take(), g.done.take())
        };
        drop(work);
        match done {
            Some(Ok(h)) => Some(h),
            _ => None,
        }
    }

    /// The result of the bind, if it is there.
    pub fn take(&self) -> Option<Result<Arc<Held<N>>, BindError>> {
        self.state.lock().done.take()
    }
}

impl<N: Net> Perimeter for Binder<N> {
    fn put_in(&self, _q: QueueId, mp: Msg) -> Result<bool, Msg> {
        Err(mp)
    }
    fn backenable_in(&self, _q: QueueId, _band: u8) -> bool {
        false
    }
    fn bcanput_in(&self, _q: QueueId, _band: u8) -> bool {
        true
    }
    /// Run the waiting bind: process context, no Stream lock held.
    fn run(&self, _depth: u32) {
        let Some(w) = self.state.lock().work.take() else {
            return;
        };
        let BindWork {
            opener,
            req,
            rx,
            done,
            note,
        } = w;
        let r = N::bind(&opener, &req, rx).and_then(|port| {
            sys::try_new_arc(Held::<N> { port }).map_err(|held| {
                drop(held); // the port unbinds here, outside every Stream lock
                BindError::Sys(Errno::ENOSR)
            })
        });
        let left = {
            let mut g = self.state.lock();
            if g.closed {
                Some(r)
            } else {
                g.done = Some(r);
                None
            }
        };
        match left {
            // Closed meanwhile: the port is ours to drop, here.
            Some(r) => drop(r),
            None => {
                if let Err(mp) = done.put(note) {
                    drop(mp); // closed after we stored: the close took the result
                }
            }
        }
    }
    fn schedule(self: Arc<Self>) {
        N::defer(Job(self));
    }
}

/// The read queue's back link: it makes the read queue an *entry* of the Stream, whose flow
/// control the Stream publishes for the port's [`Rx`] to read (`QRef::canput`). A datagram
/// provider has nothing to restart when the read side drains, so its back-enable does nothing.
pub struct RxLink;

impl Perimeter for RxLink {
    fn put_in(&self, _q: QueueId, mp: Msg) -> Result<bool, Msg> {
        Err(mp)
    }
    fn backenable_in(&self, _q: QueueId, _band: u8) -> bool {
        false
    }
    fn bcanput_in(&self, _q: QueueId, _band: u8) -> bool {
        true
    }
    fn run(&self, _depth: u32) {}
    fn schedule(self: Arc<Self>) {}
}
