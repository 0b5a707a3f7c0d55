// SPDX-License-Identifier: GPL-2.0
//! Tests of the KUnit glue itself: prove that shared `ktest` tables run as KUnit cases, that the
//! core's seam allocates from the kernel and that its fault injection works there, and the
//! kernel side of the message block cache (the `KVec` resize in place, the shrinker's
//! callbacks).

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

/// A byte `KVec` is cut short (6.12 has no `truncate`: `set_len`) and grown back with zeros
/// within its capacity, without reallocating.
fn glue_vec_resize_in_place() -> TestResult {
    let mut v = check_ok!(sys::vec_zeroed(64));
    for (i, b) in v.as_mut_slice().iter_mut().enumerate() {
        *b = i as u8;
    }
    let p = v.as_slice().as_ptr();
    check!(sys::vec_resize_in_place(&mut v, 10).is_ok());
    check_eq!(v.as_slice(), &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    check!(sys::vec_resize_in_place(&mut v, 64).is_ok());
    check_eq!(v.len(), 64);
    check!(v
        .as_slice()
        .get(10..)
        .unwrap_or_default()
        .iter()
        .all(|&b| b == 0));
    check!(sys::vec_resize_in_place(&mut v, 65).is_err());
    check_eq!(v.as_slice().as_ptr(), p);
    Ok(())
}

/// The shrinker's callbacks see what the message block cache holds and free it.
fn glue_mblk_shrinker_callbacks() -> TestResult {
    let mut m = check_ok!(crate::msg::allocb(1, crate::msg::Bpri::Med));
    for _ in 0..8 {
        m.linkb(check_ok!(crate::msg::allocb(1, crate::msg::Bpri::Med)));
    }
    drop(m);
    check!(crate::mblkcache::count() >= 1);
    check_eq!(crate::mblkcache::scan(1), 1);
    let _ = crate::mblkcache::scan(kernel::ffi::c_ulong::MAX);
    check_ok!(crate::msg::allocb(1, crate::msg::Bpri::Med));
    Ok(())
}

ktest_suite!(GLUE_SUITE, "streams_glue":
    glue_vec_through_seam,
    glue_fault_injection,
    glue_vec_resize_in_place,
    glue_mblk_shrinker_callbacks,
);
