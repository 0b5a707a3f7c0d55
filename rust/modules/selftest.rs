// SPDX-License-Identifier: GPL-2.0
//! Tests of the KUnit glue itself: prove that shared `ktest` tables run as KUnit cases, that the
//! core's seam allocates from the kernel and that its fault injection works there.

use crate::ktest::TestResult;
use crate::sys;
use crate::{check, check_eq, check_ok, ktest_suite};

/// The seam's vector grows through the kernel allocator and keeps what was pushed.
fn glue_vec_through_seam() -> TestResult {
    let mut v = check_ok!(sys::vec_with_capacity::<u32>(4));
    for i in 0..100u32 {
        check!(sys::vec_push(&mut v, i).is_ok());
    }
    check_eq!(v.len(), 100);
    check_eq!(v.as_slice().iter().sum::<u32>(), 4950);
    Ok(())
}

/// Fault injection in the seam makes kernel allocations fail without losing the value.
fn glue_fault_injection() -> TestResult {
    sys::fault::fail_after(0);
    let failed = sys::new_box(7u64).is_err();
    sys::fault::fail_clear();
    check!(failed);
    let b = check_ok!(sys::new_box(7u64));
    check_eq!(sys::unbox(b), 7);
    Ok(())
}

ktest_suite!(GLUE_SUITE, "streams_glue": glue_vec_through_seam, glue_fault_injection);
