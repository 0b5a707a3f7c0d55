//! Test cases that run twice: as `cargo test` tests on the host and as KUnit cases in the kernel.
//!
//! The executive's unit tests are written once, as plain `fn() -> TestResult` functions that use
//! only the core's own API (no `std`, no `alloc::format!`), and are listed in a suite with
//! [`ktest_suite!`]. On the host the macro expands to one `#[test]` per case; in the kernel
//! `streams.ko` walks the same [`Case`] tables and registers each as a KUnit case, so the kernel
//! runs exactly the tests the host runs.
//!
//! ```ignore
//! fn putq_counts_bytes() -> TestResult {
//!     let mut q = Queue::new(...);
//!     check_eq!(q.count(), 0);
//!     Ok(())
//! }
//! ktest_suite!(QUEUE_CASES: putq_counts_bytes);
//! ```

/// Where and why a case failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// Source file of the failed check.
    pub file: &'static str,
    /// Line of the failed check.
    pub line: u32,
    /// The check that failed, as written.
    pub what: &'static str,
}

/// The outcome of one case.
pub type TestResult = Result<(), Failure>;

/// One named test case.
#[derive(Clone, Copy)]
pub struct Case {
    /// Case name (the function name).
    pub name: &'static str,
    /// The case itself.
    pub run: fn() -> TestResult,
}

/// A named list of cases (one KUnit suite in the kernel).
#[derive(Clone, Copy)]
pub struct Suite {
    /// Suite name, e.g. `streams_msg`.
    pub name: &'static str,
    /// Its cases.
    pub cases: &'static [Case],
}

/// Fail the current case unless `cond` holds.
#[macro_export]
macro_rules! check {
    ($cond:expr) => {
        if !$cond {
            return Err($crate::ktest::Failure {
                file: file!(),
                line: line!(),
                what: stringify!($cond),
            });
        }
    };
}

/// Fail the current case unless `a == b`.
#[macro_export]
macro_rules! check_eq {
    ($a:expr, $b:expr) => {
        if !($a == $b) {
            return Err($crate::ktest::Failure {
                file: file!(),
                line: line!(),
                what: concat!(stringify!($a), " == ", stringify!($b)),
            });
        }
    };
}

/// Fail the current case unless `r` is `Ok`, otherwise evaluate to the `Ok` value.
#[macro_export]
macro_rules! check_ok {
    ($r:expr) => {
        match $r {
            Ok(v) => v,
            Err(_) => {
                return Err($crate::ktest::Failure {
                    file: file!(),
                    line: line!(),
                    what: concat!(stringify!($r), " is Ok"),
                })
            }
        }
    };
}

/// Fail the current case unless `o` is `Some`, otherwise evaluate to the value.
#[macro_export]
macro_rules! check_some {
    ($o:expr) => {
        match $o {
            Some(v) => v,
            None => {
                return Err($crate::ktest::Failure {
                    file: file!(),
                    line: line!(),
                    what: concat!(stringify!($o), " is Some"),
                })
            }
        }
    };
}

/// Declare a suite: `ktest_suite!(NAME, "kunit_suite_name": case_fn, case_fn, ...);`
///
/// Defines `pub static NAME: Suite` and, under `cfg(test)`, one host `#[test]` per case.
/// Use it once per module (it defines a `host_cases` submodule).
#[macro_export]
macro_rules! ktest_suite {
    ($suite:ident, $kname:literal : $($case:ident),+ $(,)?) => {
        /// The shared (host + KUnit) test cases of this module.
        pub static $suite: $crate::ktest::Suite = $crate::ktest::Suite {
            name: $kname,
            cases: &[$($crate::ktest::Case { name: stringify!($case), run: $case }),+],
        };

        #[cfg(test)]
        mod host_cases {
            $(
                #[test]
                fn $case() {
                    if let Err(f) = super::$case() {
                        panic!("{}:{}: check failed: {}", f.file, f.line, f.what);
                    }
                }
            )+
        }
    };
}
