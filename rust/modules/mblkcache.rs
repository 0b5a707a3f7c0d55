// SPDX-License-Identifier: GPL-2.0
//! [`MblkCache`]: the kernel side of the message block cache (`streams_core::msg::cache`),
//! which the core keeps per CPU with a bound per CPU but cannot give back on its own: a
//! shrinker returns cached blocks to the allocator when the kernel reclaims memory, and
//! dropping the `MblkCache` (module unload, after every Stream, the runner and the KUnit
//! suites are gone, so nothing frees a message any more) unregisters it and frees what is
//! left, so that nothing is leaked (kmemleak). [`MblkCacheProc`] shows the cache's counters
//! in `/proc/streams/mblkcache`.
//!
//! 6.12's kernel crate has no shrinker abstraction; the `struct shrinker` lives in the C shim
//! (`rstreams_shrinker_*` in `strshim_core.c`) and this type owns it.

use core::ffi::c_void;
use core::fmt::{self, Write};

use kernel::c_str;
use kernel::ffi::{c_char, c_ulong};
use kernel::prelude::*;

use crate::msg::cache;
use crate::procfs::{ProcShow, SeqFile};

extern "C" {
    fn rstreams_shrinker_new(
        name: *const c_char,
        count: extern "C" fn() -> c_ulong,
        scan: extern "C" fn(c_ulong) -> c_ulong,
    ) -> *mut c_void;
    fn rstreams_shrinker_free(h: *mut c_void);
}

/// The shrinker's count: blocks the caches hold now (any context the shrinker runs in: the
/// cache never waits, `cache::cached`).
pub(crate) extern "C" fn count() -> c_ulong {
    c_ulong::try_from(cache::cached()).unwrap_or(c_ulong::MAX)
}

/// The shrinker's scan: free up to `nr` cached blocks; how many were freed.
pub(crate) extern "C" fn scan(nr: c_ulong) -> c_ulong {
    let freed = cache::trim(usize::try_from(nr).unwrap_or(usize::MAX));
    c_ulong::try_from(freed).unwrap_or(c_ulong::MAX)
}

/// The registered shrinker of the message block cache.
///
/// # Invariants
/// `handle` is a registered shrinker from `rstreams_shrinker_new`, freed only by `drop`.
pub(crate) struct MblkCache {
    handle: *mut c_void,
}

// SAFETY: the handle is only passed to `rstreams_shrinker_free`, once, from `drop`; the
// shrinker API may be called from any thread.
unsafe impl Send for MblkCache {}
// SAFETY: `&MblkCache` gives no access to the handle.
unsafe impl Sync for MblkCache {}

impl MblkCache {
    /// Register the shrinker (process context, at module load).
    pub(crate) fn register() -> Result<Self> {
        // SAFETY: the name is a static C string; `count` and `scan` are plain functions that
        // stay valid while the module is loaded, and the shrinker is freed (waiting for
        // callbacks in progress) before it unloads, in `drop`.
        let handle =
            unsafe { rstreams_shrinker_new(c_str!("rstreams-mblk").as_char_ptr(), count, scan) };
        if handle.is_null() {
            return Err(ENOMEM);
        }
        Ok(MblkCache { handle })
    }
}

impl Drop for MblkCache {
    fn drop(&mut self) {
        // SAFETY: `handle` is registered (type invariant) and freed once, here; the call
        // waits for a count or scan in progress, so none runs after it.
        unsafe { rstreams_shrinker_free(self.handle) };
        let freed = cache::drain();
        // Cheap unload-time check that the drain left nothing: a busy slot (skipped by the
        // drain) or a block cached after it (a late free) would be leaked (kmemleak).
        let (busy, left) = (cache::busy_slots(), cache::cached());
        if busy != 0 || left != 0 {
            pr_warn!(
                "rstreams: message block cache: {} blocks freed, {} busy slot(s), {} blocks left\n",
                freed,
                busy,
                left
            );
        } else {
            pr_info!("rstreams: message block cache: {} blocks freed\n", freed);
        }
    }
}

/// The content of `/proc/streams/mblkcache`: one `name value` line per counter of
/// `cache::stats` since load, then `cached` (blocks held now). Each CPU's slot is read with
/// `try_lock` (a slot busy at that moment is left out and counted in `skipped`), so a read
/// never waits and the lines are not one instant's snapshot.
pub(crate) struct MblkCacheProc;

impl ProcShow for MblkCacheProc {
    fn show(&self, out: &mut SeqFile<'_>) -> fmt::Result {
        for (name, v) in cache::stats().fields() {
            writeln!(out, "{name:<12} {v}")?;
        }
        writeln!(out, "{:<12} {}", "cached", cache::cached())
    }
}
