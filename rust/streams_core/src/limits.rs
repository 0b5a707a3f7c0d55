//! The tunable limits on what a user can make the kernel hold: the SVR4/LfS `strmsgsz` and
//! `strctlsz`, the highest high-water mark an unprivileged caller may set, and the number of
//! message blocks a queue holds before it counts as full (illumos keeps `q_mblkcnt` next to
//! `q_count` for the same reason: a zero-length or one-byte message costs a whole block).
//!
//! The platform sets them once, before any Stream exists (`streams.ko` from its module
//! parameters, `rust/modules/strlimits.rs`); the core reads them through [`limits`]. Values
//! are plain atomics, read with relaxed loads: they change only at load time. A Stream copies
//! what it needs when it is made (a queue's block limit), system calls read them per call.
//!
//! Host unit tests (`cfg(test)`) see a per-thread copy, so that a case may change them
//! without racing the cases cargo runs in parallel; the kernel's KUnit cases run one at a
//! time and put the values back with [`LimitsGuard`].

use crate::errno::Errno;

/// Default `strmsgsz`: the largest data part one system call puts in a message. 65536 is the
/// Solaris default (LfS ships 262144): one staging buffer or message data block is then one
/// order-4 allocation.
pub const STRMSGSZ: usize = 65536;
/// Default `strctlsz`: the largest control part putmsg accepts (the LfS default, `1 << 12`).
pub const STRCTLSZ: usize = 4096;
/// Default highest high-water mark an unprivileged caller may set with I_SET_HIWAT (the Linux
/// default of `/proc/sys/fs/pipe-max-size`, 1 MiB; above it F_SETPIPE_SZ is EPERM too).
pub const STRHIWATMAX: usize = 1 << 20;
/// Default block limit of a queue: with this many message blocks queued (over all bands) the
/// queue is full whatever its byte count. 1024 blocks of at most a few hundred bytes each keep
/// a queue of one-byte messages within a few hundred KiB.
pub const STRMBLKMAX: usize = 1024;

/// Largest `strmsgsz` the platform may set: above it one staging buffer would be an order-9
/// allocation or more.
pub const STRMSGSZ_MAX: usize = 1 << 20;
/// Largest `strctlsz` the platform may set.
pub const STRCTLSZ_MAX: usize = 1 << 16;
/// Largest block limit the platform may set.
pub const STRMBLKMAX_MAX: usize = 1 << 20;

/// The limits (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `strmsgsz`: largest data part of one message made by write(2), putmsg or I_STR;
    /// write(2) splits at it, putmsg fails with ERANGE above it, I_STR with EINVAL.
    pub strmsgsz: usize,
    /// `strctlsz`: largest control part of putmsg (ERANGE above it).
    pub strctlsz: usize,
    /// Highest high-water mark I_SET_HIWAT accepts from a caller without CAP_SYS_RESOURCE
    /// (EPERM above it).
    pub strhiwatmax: usize,
    /// Block limit of every queue made from now on: `q_mblkcnt >= strmblkmax` is QFULL.
    pub strmblkmax: usize,
}

impl Limits {
    /// The defaults.
    pub const DEFAULT: Limits = Limits {
        strmsgsz: STRMSGSZ,
        strctlsz: STRCTLSZ,
        strhiwatmax: STRHIWATMAX,
        strmblkmax: STRMBLKMAX,
    };

    /// EINVAL unless every value is within its range (`1..=STRMSGSZ_MAX`,
    /// `1..=STRCTLSZ_MAX`, any `strhiwatmax`, `1..=STRMBLKMAX_MAX`).
    pub fn check(&self) -> Result<(), Errno> {
        let ok = (1..=STRMSGSZ_MAX).contains(&self.strmsgsz)
            && (1..=STRCTLSZ_MAX).contains(&self.strctlsz)
            && (1..=STRMBLKMAX_MAX).contains(&self.strmblkmax);
        if ok {
            Ok(())
        } else {
            Err(Errno::EINVAL)
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

#[cfg(not(all(not(rstreams_kernel), test)))]
mod store {
    use super::Limits;
    use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    static VALUES: [AtomicUsize; 4] = [
        AtomicUsize::new(Limits::DEFAULT.strmsgsz),
        AtomicUsize::new(Limits::DEFAULT.strctlsz),
        AtomicUsize::new(Limits::DEFAULT.strhiwatmax),
        AtomicUsize::new(Limits::DEFAULT.strmblkmax),
    ];

    pub(super) fn get() -> Limits {
        let [a, b, c, d] = &VALUES;
        Limits {
            strmsgsz: a.load(Relaxed),
            strctlsz: b.load(Relaxed),
            strhiwatmax: c.load(Relaxed),
            strmblkmax: d.load(Relaxed),
        }
    }

    pub(super) fn strmsgsz() -> usize {
        let [a, ..] = &VALUES;
        a.load(Relaxed)
    }

    pub(super) fn set(l: Limits) {
        let [a, b, c, d] = &VALUES;
        a.store(l.strmsgsz, Relaxed);
        b.store(l.strctlsz, Relaxed);
        c.store(l.strhiwatmax, Relaxed);
        d.store(l.strmblkmax, Relaxed);
    }
}

#[cfg(all(not(rstreams_kernel), test))]
mod store {
    use super::Limits;
    extern crate std;
    std::thread_local! {
        static VALUES: core::cell::Cell<Limits> = const { core::cell::Cell::new(Limits::DEFAULT) };
    }

    pub(super) fn get() -> Limits {
        VALUES.with(|v| v.get())
    }

    pub(super) fn strmsgsz() -> usize {
        get().strmsgsz
    }

    pub(super) fn set(l: Limits) {
        VALUES.with(|v| v.set(l))
    }
}

/// The limits in force.
pub fn limits() -> Limits {
    store::get()
}

/// `strmsgsz` alone (the write path asks for it on every call).
#[inline]
pub fn strmsgsz() -> usize {
    store::strmsgsz()
}

/// Set the limits (the platform, before any Stream exists). EINVAL, changing nothing, if a
/// value is out of range ([`Limits::check`]).
pub fn set_limits(l: Limits) -> Result<(), Errno> {
    l.check()?;
    store::set(l);
    Ok(())
}

/// Tests: set limits for the life of the guard, then put back what was there.
#[cfg(any(rstreams_test, not(rstreams_kernel)))]
pub struct LimitsGuard(Limits);

#[cfg(any(rstreams_test, not(rstreams_kernel)))]
impl LimitsGuard {
    /// Set `l` (EINVAL if out of range) until the guard is dropped.
    pub fn set(l: Limits) -> Result<LimitsGuard, Errno> {
        let old = limits();
        set_limits(l)?;
        Ok(LimitsGuard(old))
    }
}

#[cfg(any(rstreams_test, not(rstreams_kernel)))]
impl Drop for LimitsGuard {
    fn drop(&mut self) {
        store::set(self.0);
    }
}
