// SPDX-License-Identifier: GPL-2.0
//! STREAMS FIFOs (`/dev/streams/fifo/N`): every open of a node attaches to the same Stream
//! (core `Stream::fifo`: one Stream head whose write side feeds its own read side), with the
//! POSIX FIFO open and close rules kept here.
//!
//! A [`FifoSlot`] is one node: under its lock the current Stream (none while nobody has the
//! node open), the number of openers that may read and that may write (from the open mode:
//! O_RDONLY, O_WRONLY, O_RDWR counts as both), and how many read and write opens there have
//! been. The head is told whether both sides are there (`Stream::fifo_openers`: hung up
//! without a reader or without a writer, so reads give end of file once the data is read and
//! writes EPIPE with SIGPIPE; a new writer makes the FIFO readable again).
//!
//! Open: O_RDONLY waits until a writer opens unless one is there (or O_NONBLOCK is set);
//! O_WRONLY waits until a reader opens unless one is there, and fails with ENXIO instead when
//! O_NONBLOCK is set; O_RDWR never waits. As in Linux, a waiter waits for the other side's
//! open count to change (a partner came, even if it has left again), interruptibly: a signal
//! undoes the open (ERESTARTSYS). Close: the opener stops counting; the last close of the node
//! closes the Stream (modules popped, data freed), and the next open starts a new one.
//!
//! Locking: slot lock, then Stream lock (never the other way: system calls on an open FIFO
//! take only the stream lock). The open waiters sleep on the slot's wait queue, released from
//! the slot lock only once queued (`WaitQueue::sleep`), so a partner's open is never missed.

use kernel::bindings;
use kernel::prelude::*;
use kernel::sync::{Arc, Mutex};

use crate::chardev::O_NONBLOCK;
use crate::errno::Errno;
use crate::sth::Stream;
use crate::stream::Registry;
use crate::strfile::StrFile;
use crate::strperim::{Caller, StrPerim};
use crate::waitq::WaitQueue;

/// The access mode bits of the open flags.
const O_ACCMODE: u32 = bindings::O_ACCMODE;
const O_WRONLY: u32 = bindings::O_WRONLY;
const O_RDWR: u32 = bindings::O_RDWR;

/// How many FIFO nodes `streams.ko` registers (`/dev/streams/fifo/0` … `3`).
pub(crate) const NFIFO: usize = 4;

/// A FIFO node's state (under [`FifoSlot::state`]).
struct FifoState {
    /// The Stream while the node is open; `None` when nobody has it open.
    shared: Option<Arc<StrPerim>>,
    readers: usize,
    writers: usize,
    /// Read and write opens so far: a waiting opener waits for the other one to change.
    ropens: u64,
    wopens: u64,
}

/// One FIFO node: its state and the wait queue of openers waiting for the other side.
#[pin_data]
pub(crate) struct FifoSlot {
    #[pin]
    state: Mutex<FifoState>,
    #[pin]
    wq: WaitQueue,
}

/// How a file has the FIFO open.
#[derive(Clone, Copy)]
pub(crate) struct FifoMode {
    read: bool,
    write: bool,
}

impl FifoMode {
    fn of(f_flags: u32) -> FifoMode {
        match f_flags & O_ACCMODE {
            O_WRONLY => FifoMode {
                read: false,
                write: true,
            },
            O_RDWR => FifoMode {
                read: true,
                write: true,
            },
            _ => FifoMode {
                read: true,
                write: false,
            },
        }
    }
}

/// What an open FIFO file keeps for its close: the node and how it was opened.
pub(crate) struct FifoOpen {
    slot: Arc<FifoSlot>,
    mode: FifoMode,
}

impl FifoState {
    fn count(&mut self, m: FifoMode) {
        if m.read {
            self.readers = self.readers.saturating_add(1);
            self.ropens = self.ropens.wrapping_add(1);
        }
        if m.write {
            self.writers = self.writers.saturating_add(1);
            self.wopens = self.wopens.wrapping_add(1);
        }
    }

    fn uncount(&mut self, m: FifoMode) {
        if m.read {
            self.readers = self.readers.saturating_sub(1);
        }
        if m.write {
            self.writers = self.writers.saturating_sub(1);
        }
    }

    /// Tell the head about the openers now counted; at the last close, close the Stream and
    /// take it out of the slot (the caller drops it after unlocking). `hold`: send what the
    /// closing opener's writes left held (SNDHOLD) before it goes.
    fn update(&mut self, hold: bool) -> Option<Arc<StrPerim>> {
        let sh = self.shared.clone()?;
        let last = self.readers == 0 && self.writers == 0;
        if last {
            sh.close_now(Caller::Nobody);
            return self.shared.take();
        }
        sh.op(Caller::Nobody, |s| {
            if hold {
                s.sth_flush_hold();
            }
            s.fifo_openers(self.readers, self.writers);
        });
        None
    }
}

impl FifoSlot {
    /// A FIFO node nobody has open.
    pub(crate) fn new() -> Result<Arc<FifoSlot>> {
        Arc::pin_init(
            pin_init!(FifoSlot {
                state <- kernel::new_mutex!(
                    FifoState {
                        shared: None,
                        readers: 0,
                        writers: 0,
                        ropens: 0,
                        wopens: 0,
                    },
                    "rstreams_fifo"
                ),
                wq <- WaitQueue::new(),
            }),
            GFP_KERNEL,
        )
    }
}

/// open(2) of FIFO node `slot` with `f_flags` (see the module docs).
pub(crate) fn open(
    slot: &Arc<FifoSlot>,
    f_flags: u32,
    registry: &Arc<Registry>,
) -> Result<Arc<StrFile>, Errno> {
    let mode = FifoMode::of(f_flags);
    let nonblock = f_flags & O_NONBLOCK != 0;
    let mut st = slot.state.lock();
    if mode.write && !mode.read && nonblock && st.readers == 0 {
        return Err(Errno::ENXIO);
    }
    let shared = match &st.shared {
        Some(sh) => sh.clone(),
        None => {
            let sh = StrPerim::new(Stream::fifo()?)?;
            st.shared = Some(sh.clone());
            sh
        }
    };
    let fifo = FifoOpen {
        slot: slot.clone(),
        mode,
    };
    let file = match StrFile::new(shared, false, registry.clone(), Some(fifo)) {
        Ok(f) => f,
        Err(e) => {
            // Nobody counted yet: a Stream created for this open goes again.
            let gone = if st.readers == 0 && st.writers == 0 {
                st.shared.take()
            } else {
                None
            };
            drop(st);
            if let Some(sh) = gone {
                sh.close_now(Caller::Nobody);
            }
            return Err(e);
        }
    };
    // Who we wait for: a reader alone waits for a writer, a writer alone for a reader.
    let (wait_writer, wait_reader) = (
        mode.read && !mode.write && st.writers == 0 && !nonblock,
        mode.write && !mode.read && st.readers == 0,
    );
    st.count(mode);
    let (ropens, wopens) = (st.ropens, st.wopens);
    let _ = st.update(false);
    slot.wq.wake_sleepers();
    loop {
        let partner_came = (!wait_writer || st.wopens != wopens) && (!wait_reader || st.ropens != ropens);
        if partner_came {
            return Ok(file);
        }
        if let Err(e) = slot.wq.sleep(st) {
            let mut st = slot.state.lock();
            st.uncount(mode);
            let gone = st.update(false);
            drop(st);
            drop(gone);
            return Err(e);
        }
        st = slot.state.lock();
    }
}

/// The last close of a FIFO file `file` opened as `f` (see the module docs).
pub(crate) fn release(file: &StrFile, f: &FifoOpen) {
    let mut st = f.slot.state.lock();
    st.uncount(f.mode);
    // The file's Stream is the slot's: the slot keeps it while anybody has it open.
    let mine = st
        .shared
        .as_ref()
        .is_some_and(|sh| Arc::ptr_eq(sh, file.perim()));
    let gone = if mine { st.update(f.mode.write) } else { None };
    drop(st);
    drop(gone);
}
