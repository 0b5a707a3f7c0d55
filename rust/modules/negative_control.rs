// SPDX-License-Identifier: GPL-2.0
//! A deliberately failing KUnit case, compiled only with `--cfg rstreams_negative_control`
//! (`cargo xtask test --negative-control`): proves the harness reports a failing case, naming
//! the case, file, line and condition.

use crate::ktest::TestResult;
use crate::{check_eq, ktest_suite};

/// Passes: the suite is not all-failing, so a per-case report is needed to find the culprit.
fn negative_control_passes() -> TestResult {
    check_eq!(1 + 1, 2);
    Ok(())
}

/// Fails on purpose.
fn negative_control_fails() -> TestResult {
    let two = core::hint::black_box(2);
    check_eq!(two + 2, 5);
    Ok(())
}

ktest_suite!(NEGATIVE_CONTROL_SUITE, "streams_negative_control":
    negative_control_passes, negative_control_fails);
