//! A worker process's open Streams, shared by its threads: slots of `Arc<Entry>`. An operation
//! clones an entry's `Arc` under the table lock and works on it unlocked, so several threads
//! use one Stream at once, and a descriptor is closed only when the last user drops it (never
//! while another thread uses its number: no operation can reach a reused descriptor).
//!
//! Each entry also remembers where it came from and what happened to it (fattach, I_PUSH,
//! I_LINK… and their failures), so that an unexpected EBADF can be explained: [`Table::diagnose`]
//! finds the entries whose descriptor or Stream head answers EBADF and prints their story.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use streams::Stream;

use crate::devices::DevKind;

/// One open Stream.
#[derive(Debug)]
pub(crate) struct Entry {
    pub(crate) s: Stream,
    /// How it was opened (`None`: a pipe end from s_pipe, a received or attached descriptor).
    pub(crate) kind: Option<DevKind>,
    /// Mux ids of I_LINKs made on it (for I_UNLINK and MUX_ROUTE).
    pub(crate) muxids: Mutex<Vec<i32>>,
    /// O_RDONLY, O_WRONLY or O_RDWR (a FIFO end may be open one way only: the other way
    /// gives EBADF).
    pub(crate) acc: i32,
    /// A number for reports (unique in the worker).
    pub(crate) id: u64,
    /// How it was made: the device or path opened, s_pipe, a dup of entry #N, I_RECVFD…
    pub(crate) origin: String,
    born: Instant,
    /// The last notable things done to it (see [`Entry::note`]).
    history: Mutex<Vec<String>>,
}

/// How many notes an entry keeps.
const HISTORY: usize = 12;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

impl Entry {
    pub(crate) fn new(s: Stream, kind: Option<DevKind>, origin: String) -> Arc<Entry> {
        // SAFETY: fcntl(F_GETFL) on a descriptor `s` owns.
        let fl = unsafe { libc::fcntl(s.raw(), libc::F_GETFL) };
        Arc::new(Entry {
            s,
            kind,
            muxids: Mutex::new(Vec::new()),
            acc: if fl < 0 {
                libc::O_RDWR
            } else {
                fl & libc::O_ACCMODE
            },
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            origin,
            born: Instant::now(),
            history: Mutex::new(Vec::new()),
        })
    }

    /// Remember `what` happened to this Stream (the last [`HISTORY`] notes are kept), with
    /// the time since the entry was made.
    pub(crate) fn note(&self, what: impl std::fmt::Display) {
        let ms = self.born.elapsed().as_millis();
        let mut h = lock(&self.history);
        if h.len() >= HISTORY {
            h.remove(0);
        }
        h.push(format!("+{ms}ms {what}"));
    }

    /// One line about this entry for a report: number, descriptor, origin, age, history.
    pub(crate) fn describe(&self) -> String {
        format!(
            "#{} fd {} ({}; kind {:?}; access {}; {} ms old; history: [{}])",
            self.id,
            self.fd(),
            self.origin,
            self.kind,
            match self.acc {
                libc::O_RDONLY => "r",
                libc::O_WRONLY => "w",
                _ => "rw",
            },
            self.born.elapsed().as_millis(),
            lock(&self.history).join("; ")
        )
    }

    /// The errno set `base` plus EBADF if the descriptor is not open for reading (`write`
    /// false) or writing (`write` true).
    pub(crate) fn one_way(&self, base: &[i32], write: bool) -> Vec<i32> {
        let wrong = if write {
            libc::O_RDONLY
        } else {
            libc::O_WRONLY
        };
        let mut v = base.to_vec();
        if self.acc == wrong {
            v.push(libc::EBADF);
        }
        v
    }
    pub(crate) fn fd(&self) -> i32 {
        self.s.raw()
    }
}

/// The slots.
pub(crate) struct Table {
    slots: Mutex<Vec<Option<Arc<Entry>>>>,
}

/// A lock that survives a panicking holder (a worker thread that panicked has already
/// reported it; the others go on).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Table {
    pub(crate) fn new(n: usize) -> Table {
        Table {
            slots: Mutex::new(vec![None; n]),
        }
    }

    /// A random open entry, if any.
    pub(crate) fn pick(&self, rng: &mut fastrand::Rng) -> Option<Arc<Entry>> {
        let t = lock(&self.slots);
        let n = t.len();
        let start = rng.usize(..n);
        (0..n).find_map(|i| t[(start + i) % n].clone())
    }

    /// A random entry whose kind is `k`, if any.
    pub(crate) fn pick_kind(&self, rng: &mut fastrand::Rng, k: DevKind) -> Option<Arc<Entry>> {
        let t = lock(&self.slots);
        let n = t.len();
        let start = rng.usize(..n);
        (0..n).find_map(|i| {
            t[(start + i) % n]
                .as_ref()
                .filter(|e| e.kind == Some(k))
                .cloned()
        })
    }

    /// Put `e` in a random slot; the entry it replaces is dropped (closed unless in use).
    pub(crate) fn insert(&self, rng: &mut fastrand::Rng, e: Arc<Entry>) {
        let old = {
            let mut t = lock(&self.slots);
            let i = rng.usize(..t.len());
            t[i].replace(e)
        };
        // Closed here, outside the table lock (close may sleep).
        drop(old);
    }

    /// Take a random entry out (its descriptor closes when the last user drops it).
    pub(crate) fn remove(&self, rng: &mut fastrand::Rng) -> Option<Arc<Entry>> {
        let mut t = lock(&self.slots);
        let i = rng.usize(..t.len());
        t[i].take()
    }

    /// The descriptor numbers open now (for a forked child).
    pub(crate) fn fds(&self) -> Vec<i32> {
        lock(&self.slots).iter().flatten().map(|e| e.fd()).collect()
    }

    /// The entries that answer EBADF now, each described with what answered it: the
    /// descriptor itself (fcntl F_GETFD: the number is not open in this process, a test or
    /// descriptor-table bug) or the Stream head (I_CANPUT on an open descriptor: the head was
    /// closed under an open file, a kernel bug). Probed outside the table lock.
    pub(crate) fn diagnose(&self) -> Vec<String> {
        let all: Vec<Arc<Entry>> = lock(&self.slots).iter().flatten().cloned().collect();
        let mut out = Vec::new();
        for e in all {
            // SAFETY: fcntl(F_GETFD) on a descriptor number this entry owns.
            let fdflags = unsafe { libc::fcntl(e.fd(), libc::F_GETFD) };
            let what = if fdflags < 0 {
                format!("descriptor not open ({})", std::io::Error::last_os_error())
            } else {
                match crate::sys::ioctl_int(e.fd(), streams::I_CANPUT, 0) {
                    Err(err) if err.raw_os_error() == Some(libc::EBADF) => format!(
                        "descriptor open ({}), Stream head answers EBADF",
                        path_of(e.fd())
                    ),
                    _ => continue,
                }
            };
            out.push(format!("{what}: {}", e.describe()));
        }
        out
    }

    /// Close everything.
    pub(crate) fn clear(&self) {
        let all: Vec<_> = lock(&self.slots).iter_mut().map(Option::take).collect();
        drop(all);
    }
}

/// What `/proc/self/fd/N` names (the path it was opened by, or the pseudo file's name).
fn path_of(fd: i32) -> String {
    std::fs::read_link(format!("/proc/self/fd/{fd}"))
        .map(|p| p.display().to_string())
        .unwrap_or_else(|e| format!("readlink: {e}"))
}
