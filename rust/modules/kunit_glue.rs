// SPDX-License-Identifier: GPL-2.0
//! Runs the core's shared test tables (`ktest::Suite`) as KUnit suites.
//!
//! Linux 6.12 has no `#[kunit_tests]` for Rust, and the `.kunit_test_suites` section only takes
//! suites whose case arrays exist at link time, while our cases come from tables in the core. So
//! at module init this file builds, in `KVec` memory owned by [`KunitSuites`]:
//! one `kunit_case` array per table (all cases share the [`run_case`] trampoline), one
//! `kunit_suite` per table, and registers them with `__kunit_test_suites_init`, which runs them
//! at once and creates `/sys/kernel/debug/kunit/<suite>/`. Dropping [`KunitSuites`] calls
//! `__kunit_test_suites_exit` first and frees the arrays after, so KUnit never sees freed memory
//! (the section-based registration would tear down after our exit, i.e. too late).
//!
//! The trampoline finds its case by the identity of the name pointer KUnit copies from
//! `kunit_case::name` into `kunit::name`: every case name is its own allocation, so the lookup
//! is exact even when two suites have a case of the same name.
//!
//! This is the only file of the module that handles raw KUnit pointers.

use kernel::ffi::c_char;
use core::ptr;
use core::sync::atomic::{AtomicPtr, Ordering};

use kernel::bindings;
use kernel::prelude::*;

use crate::ktest::{Failure, Suite, TestResult};

/// Length of `kunit_suite::name` (`KUNIT_NAME_MAX_LEN`).
const SUITE_NAME_LEN: usize = 256;

/// A case as the trampoline sees it.
struct Entry {
    /// The C name handed to KUnit (points into `Tables::names`).
    cname: *const c_char,
    run: fn() -> TestResult,
    suite: &'static str,
    case: &'static str,
}

/// Everything KUnit points into. Built before registration, read-only afterwards.
struct Tables {
    /// NUL-terminated case names; each its own allocation, so pointers stay put.
    names: KVec<KVec<u8>>,
    /// One zero-terminated `kunit_case` array per suite.
    cases: KVec<KVec<bindings::kunit_case>>,
    /// The suites; never grown after pointers into it were taken.
    suites: KVec<bindings::kunit_suite>,
    /// `suites` as the pointer array `__kunit_test_suites_init` wants.
    ptrs: KVec<*mut bindings::kunit_suite>,
    entries: KVec<Entry>,
}

/// The tables of the registered suites, for the trampoline. Non-null exactly while registered.
static ACTIVE: AtomicPtr<Tables> = AtomicPtr::new(ptr::null_mut());

/// Shared test tables registered as KUnit suites; unregistered on drop.
pub(crate) struct KunitSuites {
    tables: KBox<Tables>,
    cases: usize,
}

// SAFETY: the raw pointers in `Tables` point into memory owned by the same `Tables`. After
// `register` returns nothing writes to it (KUnit only reads it and updates its own per-case
// status fields under its run lock), so sharing or moving the owner between threads is fine.
unsafe impl Send for KunitSuites {}
// SAFETY: see `Send`: `&KunitSuites` only reads counts.
unsafe impl Sync for KunitSuites {}

/// A NUL-terminated copy of `s` (KUnit wants C strings; the tables hold `&str`).
fn c_string(s: &str) -> Result<KVec<u8>> {
    let mut v = KVec::with_capacity(s.len() + 1, GFP_KERNEL)?;
    v.extend_from_slice(s.as_bytes(), GFP_KERNEL)?;
    v.push(0, GFP_KERNEL)?;
    Ok(v)
}

/// A `kunit_suite` named `name` (truncated to fit, always NUL-terminated).
fn new_suite(name: &str, cases: *mut bindings::kunit_case) -> bindings::kunit_suite {
    // SAFETY: `kunit_suite` is a plain C struct for which all-zero is the "no callbacks, no
    // attributes" value, exactly like a C designated initializer leaves the other fields.
    let mut s: bindings::kunit_suite = unsafe { core::mem::zeroed() };
    for (d, b) in s.name.iter_mut().take(SUITE_NAME_LEN - 1).zip(name.bytes()) {
        *d = b as c_char;
    }
    s.test_cases = cases;
    s
}

impl KunitSuites {
    /// Build KUnit suites from `tables` and register them, which runs every case once now.
    pub(crate) fn register(tables: &[&'static Suite]) -> Result<Self> {
        let n = tables.len();
        let mut t = KBox::new(
            Tables {
                names: KVec::new(),
                cases: KVec::with_capacity(n, GFP_KERNEL)?,
                suites: KVec::with_capacity(n, GFP_KERNEL)?,
                ptrs: KVec::with_capacity(n, GFP_KERNEL)?,
                entries: KVec::new(),
            },
            GFP_KERNEL,
        )?;
        let mut total = 0usize;
        for suite in tables {
            let mut arr = KVec::with_capacity(suite.cases.len() + 1, GFP_KERNEL)?;
            for case in suite.cases {
                let name = c_string(case.name)?;
                let cname = name.as_ptr().cast::<c_char>();
                t.names.push(name, GFP_KERNEL)?;
                t.entries.push(
                    Entry {
                        cname,
                        run: case.run,
                        suite: suite.name,
                        case: case.name,
                    },
                    GFP_KERNEL,
                )?;
                // SAFETY: all-zero is a valid `kunit_case` (no params, no attributes).
                let mut kc: bindings::kunit_case = unsafe { core::mem::zeroed() };
                kc.run_case = Some(run_case);
                kc.name = cname;
                kc.module_name = c"streams".as_ptr().cast_mut().cast();
                arr.push(kc, GFP_KERNEL)?;
            }
            // SAFETY: the all-zero case is the array terminator KUnit looks for.
            arr.push(unsafe { core::mem::zeroed() }, GFP_KERNEL)?;
            total += suite.cases.len();
            t.cases.push(arr, GFP_KERNEL)?;
        }
        for (i, suite) in tables.iter().enumerate() {
            let cases = match t.cases.get_mut(i) {
                Some(a) => a.as_mut_ptr(),
                None => return Err(EINVAL),
            };
            t.suites.push(new_suite(suite.name, cases), GFP_KERNEL)?;
        }
        // Pointers into `suites` are taken only now that it is complete (capacity was exact,
        // so it never reallocates).
        for i in 0..t.suites.len() {
            let p = match t.suites.get_mut(i) {
                Some(s) => ptr::from_mut(s),
                None => return Err(EINVAL),
            };
            t.ptrs.push(p, GFP_KERNEL)?;
        }
        let raw: *mut Tables = &mut *t;
        if ACTIVE
            .compare_exchange(ptr::null_mut(), raw, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return Err(EBUSY);
        }
        let count = i32::try_from(t.ptrs.len()).map_err(|_| EINVAL)?;
        // SAFETY: `ptrs` holds `count` pointers to fully initialised suites whose case arrays
        // are zero-terminated; all of it lives in `t`, which outlives the registration (it is
        // unregistered in `drop` before `t` is freed). The suites run synchronously here.
        let r = unsafe { bindings::__kunit_test_suites_init(t.ptrs.as_ptr(), count) };
        if r != 0 {
            ACTIVE.store(ptr::null_mut(), Ordering::Release);
            return Err(Error::from_errno(r));
        }
        Ok(KunitSuites {
            tables: t,
            cases: total,
        })
    }

    /// How many suites are registered.
    pub(crate) fn suite_count(&self) -> usize {
        self.tables.suites.len()
    }

    /// How many cases they hold in all.
    pub(crate) fn case_count(&self) -> usize {
        self.cases
    }
}

impl Drop for KunitSuites {
    fn drop(&mut self) {
        let count = i32::try_from(self.tables.ptrs.len()).unwrap_or(0);
        // SAFETY: the same suites were registered in `register`; after this call KUnit holds no
        // pointer into the tables (their debugfs files, the only way to re-run a case, are gone).
        unsafe { bindings::__kunit_test_suites_exit(self.tables.ptrs.as_mut_ptr(), count) };
        ACTIVE.store(ptr::null_mut(), Ordering::Release);
    }
}

/// The `run_case` of every registered case: finds the table entry and runs it.
// SAFETY (contract): only KUnit calls this, with the live `struct kunit` of a case registered
// by `KunitSuites::register`.
unsafe extern "C" fn run_case(test: *mut bindings::kunit) {
    // SAFETY: KUnit calls `run_case` with its live test, whose `name` it set from our case.
    let name = unsafe { (*test).name };
    let tables = ACTIVE.load(Ordering::Acquire);
    if tables.is_null() {
        return fail(
            test,
            "?",
            "?",
            &glue_failure("case run while its suite is not registered"),
        );
    }
    // SAFETY: `ACTIVE` is cleared only after `__kunit_test_suites_exit`, after which KUnit runs
    // none of our cases, so the tables are alive and (after registration) never written.
    let t = unsafe { &*tables };
    match t.entries.iter().find(|e| e.cname == name) {
        Some(e) => {
            if let Err(f) = (e.run)() {
                fail(test, e.suite, e.case, &f);
            }
        }
        None => fail(test, "?", "?", &glue_failure("unknown case name")),
    }
}

fn glue_failure(what: &'static str) -> Failure {
    Failure {
        file: file!(),
        line: line!(),
        what,
    }
}

/// Report `f` as a KUnit expectation failure of the running case (and in the kernel log).
fn fail(test: *mut bindings::kunit, suite: &str, case: &str, f: &Failure) {
    pr_err!(
        "KUnit case {}.{} failed at {}:{}: check failed: {}\n",
        suite,
        case,
        f.file,
        f.line,
        f.what
    );
    let file = c_string(f.file);
    let what = c_string(f.what);
    let file_p = file.as_ref().map_or(c"?".as_ptr().cast(), |v| v.as_ptr().cast());
    let what_p = what
        .as_ref()
        .map_or(c"(out of memory)".as_ptr().cast(), |v| v.as_ptr().cast());
    let loc = bindings::kunit_loc {
        file: file_p,
        line: i32::try_from(f.line).unwrap_or(0),
    };
    let assert = bindings::kunit_unary_assert {
        assert: bindings::kunit_assert {},
        condition: what_p,
        expected_true: true,
    };
    // SAFETY: `test` is the running test KUnit passed to `run_case`; `loc`, `assert` and the
    // strings they point to live until the call returns, and KUnit formats the message during
    // the call (it keeps no pointer to them). A null format string means "no extra message".
    unsafe {
        bindings::__kunit_do_failed_assertion(
            test,
            &loc,
            bindings::kunit_assert_type_KUNIT_EXPECTATION,
            &assert.assert,
            Some(bindings::kunit_unary_assert_format),
            ptr::null(),
        );
    }
}
