//! The system call floor: getppid(2), a call that does nothing but enter and leave the kernel,
//! in a loop for `-t` × `-i` seconds in one process. `writes` in its row are calls, so
//! `writes_per_sec` is calls/s and `delay_sec` the cost of one call; the report compares
//! 1-byte writes with it.

use super::Workload;
use crate::csv::Row;
use crate::opts::Opts;
use std::time::Instant;

/// Calls between two looks at the clock.
const BATCH: u64 = 1024;

/// Run it.
pub fn run(o: &Opts) -> Row {
    let secs = o.time * f64::from(o.iterations);
    let mut calls = 0u64;
    let start = Instant::now();
    let elapsed = loop {
        for _ in 0..BATCH {
            // SAFETY: getppid has no preconditions. Through syscall(2), not glibc's wrapper,
            // so that no library could ever answer it from a cache.
            std::hint::black_box(unsafe { libc::syscall(libc::SYS_getppid) });
        }
        calls += BATCH;
        let e = start.elapsed().as_secs_f64();
        if e >= secs {
            break e;
        }
    };
    super::row(Workload::Syscall, o, calls, 0.0, elapsed, 0, 0)
}
