//! Reading a guest console log: KTAP results of KUnit suites, kernel error reports, and the
//! guest script's markers, turned into one verdict.
//!
//! A run passes only if every expected suite reported a plan and exactly that many `ok` cases,
//! the guest script reached `RSTREAMS-END rc=0`, and the log has no oops, BUG, WARNING, KASAN,
//! KCSAN, lockdep, kmemleak, UBSAN, hung-task, soft-lockup, RCU-stall or OOM report.
//! Everything else is a failure with a reason.

use std::collections::BTreeMap;

/// One KUnit case result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CaseResult {
    pub(crate) name: String,
    pub(crate) ok: bool,
    /// Diagnostic lines (`# …`) KUnit printed for the case before its result.
    pub(crate) diag: Vec<String>,
}

/// One KUnit suite as read from KTAP.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SuiteResult {
    pub(crate) name: String,
    pub(crate) plan: Option<usize>,
    pub(crate) cases: Vec<CaseResult>,
    /// The suite's own `ok`/`not ok` line, if seen.
    pub(crate) ok: Option<bool>,
}

/// Strip the `[   12.345678] ` printk timestamp, if any.
pub(crate) fn strip_ts(line: &str) -> &str {
    let l = line.trim_end_matches('\r');
    if let Some(rest) = l.strip_prefix('[') {
        if let Some((ts, after)) = rest.split_once("] ") {
            if ts.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
                return after;
            }
        }
    }
    l
}

/// `ok 3 name # SKIP x` -> `(true, "name")`.
fn result_line(l: &str) -> Option<(bool, String)> {
    let (ok, rest) = if let Some(r) = l.strip_prefix("not ok ") {
        (false, r)
    } else if let Some(r) = l.strip_prefix("ok ") {
        (true, r)
    } else {
        return None;
    };
    let (num, name) = rest.split_once(' ').unwrap_or((rest, ""));
    num.parse::<usize>().ok()?;
    let name = name.split(" # ").next().unwrap_or("").trim();
    Some((ok, name.to_string()))
}

/// Parse every KUnit suite in the console lines (KTAP, any indentation, other lines ignored).
pub(crate) fn parse(lines: &[String]) -> Vec<SuiteResult> {
    let mut done = Vec::new();
    let mut cur: Option<SuiteResult> = None;
    let mut diag = Vec::new();
    for raw in lines {
        let l = strip_ts(raw).trim();
        if let Some(name) = l.strip_prefix("# Subtest: ") {
            if let Some(s) = cur.take() {
                done.push(s);
            }
            cur = Some(SuiteResult {
                name: name.trim().to_string(),
                ..Default::default()
            });
            diag.clear();
            continue;
        }
        let Some(s) = cur.as_mut() else { continue };
        if let Some(n) = l.strip_prefix("1..") {
            if s.plan.is_none() {
                s.plan = n.trim().parse().ok();
            }
        } else if let Some((ok, name)) = result_line(l) {
            if name == s.name {
                s.ok = Some(ok);
                if let Some(s) = cur.take() {
                    done.push(s);
                }
            } else {
                s.cases.push(CaseResult {
                    name,
                    ok,
                    diag: std::mem::take(&mut diag),
                });
            }
        } else if (l.starts_with("# ") && !l.starts_with("# module:") && !l.contains(": pass:"))
            || l.starts_with("Expected ")
        {
            // KUnit's failure message: `# case: EXPECTATION FAILED at f:l` then `Expected …`.
            diag.push(l.to_string());
        }
    }
    done.extend(cur);
    done
}

/// Kernel reports that fail a run wherever they appear.
pub(crate) const BAD: &[&str] = &[
    // `BUG: KCSAN: data-race in f / g`: before "BUG:", so the reason names KCSAN
    "BUG: KCSAN:",
    "BUG:",
    "WARNING:",
    "Oops",
    "kernel BUG at",
    "Kernel panic",
    "general protection fault",
    "KASAN:",
    "UBSAN:",
    // hung task: `INFO: task strstress:123 blocked for more than 120 seconds.`
    "blocked for more than",
    // `watchdog: BUG: soft lockup - CPU#0 stuck for 22s!` (also "BUG:")
    "soft lockup",
    // RCU: `rcu: INFO: rcu_sched detected stalls on CPUs/tasks` / `self-detected stall`
    "detected stall",
    "invoked oom-killer",
    "unreferenced object 0x",
    "suspected memory leak",
    "possible circular locking dependency",
    "possible recursive locking",
    "inconsistent lock state",
    "suspicious RCU usage",
    "DEBUG_LOCKS_WARN_ON",
    "Call Trace:",
    "RSTREAMS-KMEMLEAK",
    "rust_panic",
];

/// The outcome of one guest run.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub(crate) suites: Vec<SuiteResult>,
    pub(crate) passed: usize,
    pub(crate) failed: usize,
    /// Reasons the run failed (empty = pass).
    pub(crate) problems: Vec<String>,
    /// `suite.case` of every failed case.
    pub(crate) failed_cases: Vec<String>,
}

impl Verdict {
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// One line per suite and the final `N passed, N failed` line.
    pub(crate) fn summary(&self) -> String {
        let mut s = String::new();
        for r in &self.suites {
            let pass = r.cases.iter().filter(|c| c.ok).count();
            let failed: Vec<&str> = r
                .cases
                .iter()
                .filter(|c| !c.ok)
                .map(|c| c.name.as_str())
                .collect();
            let state = if failed.is_empty() && r.ok == Some(true) {
                "ok"
            } else {
                "FAILED"
            };
            s.push_str(&format!(
                "suite {:<28} {state:<6} {pass}/{} passed",
                r.name,
                r.plan.unwrap_or(r.cases.len())
            ));
            if !failed.is_empty() {
                s.push_str(&format!("  (failed: {})", failed.join(", ")));
            }
            s.push('\n');
        }
        for p in &self.problems {
            s.push_str(&format!("problem: {p}\n"));
        }
        s.push_str(&format!("{} passed, {} failed", self.passed, self.failed));
        s
    }
}

/// Judge a console log. `expected` maps suite name to its number of cases; `timed_out` says the
/// guest had to be killed.
pub(crate) fn judge(
    lines: &[String],
    expected: &BTreeMap<String, usize>,
    timed_out: bool,
) -> Verdict {
    let mut v = Verdict {
        suites: parse(lines),
        ..Default::default()
    };
    for s in &v.suites {
        for c in &s.cases {
            if c.ok {
                v.passed += 1;
            } else {
                v.failed += 1;
                v.failed_cases.push(format!("{}.{}", s.name, c.name));
                let detail: Vec<&str> = c.diag.iter().map(String::as_str).collect();
                v.problems.push(format!(
                    "KUnit case {}.{} failed {}",
                    s.name,
                    c.name,
                    detail.join(" | ")
                ));
            }
        }
        match s.plan {
            Some(n) if n != s.cases.len() => v.problems.push(format!(
                "suite {} planned {n} cases but reported {}",
                s.name,
                s.cases.len()
            )),
            None => v
                .problems
                .push(format!("suite {} has no plan line", s.name)),
            _ => {}
        }
        match s.ok {
            None => v
                .problems
                .push(format!("suite {} did not finish (no result line)", s.name)),
            Some(false) if s.cases.iter().all(|c| c.ok) => {
                v.problems.push(format!("suite {} reported not ok", s.name))
            }
            _ => {}
        }
    }
    for (name, n) in expected {
        match v.suites.iter().find(|s| &s.name == name) {
            None => {
                v.failed += n;
                v.problems.push(format!(
                    "missing result: suite {name} ({n} cases) never ran"
                ));
            }
            Some(s) if s.cases.len() != *n => v.problems.push(format!(
                "suite {name}: expected {n} cases (from its ktest_suite! table), guest ran {}",
                s.cases.len()
            )),
            _ => {}
        }
    }
    for raw in lines {
        let l = strip_ts(raw);
        if let Some(b) = BAD.iter().find(|b| l.contains(*b)) {
            v.problems
                .push(format!("kernel report ({b}): {}", l.trim()));
        }
        if let Some(rest) = l.trim().strip_prefix("RSTREAMS-STEP ") {
            if !rest.ends_with("rc=0") {
                v.problems.push(format!("guest step failed: {rest}"));
            }
        }
    }
    let end = lines.iter().rev().find_map(|l| {
        strip_ts(l)
            .trim()
            .strip_prefix("RSTREAMS-END rc=")
            .map(str::to_string)
    });
    match end {
        None if timed_out => v.problems.push("timeout: guest did not finish".into()),
        None => v
            .problems
            .push("missing result: guest script did not reach its end marker".into()),
        Some(rc) if rc != "0" => v.problems.push(format!("guest script ended with rc={rc}")),
        Some(_) => {}
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(str::to_string).collect()
    }

    fn expect_glue() -> BTreeMap<String, usize> {
        BTreeMap::from([("streams_glue".to_string(), 2)])
    }

    #[test]
    fn good_log_passes() {
        let v = judge(
            &lines(include_str!("../testdata/good.log")),
            &expect_glue(),
            false,
        );
        assert!(v.ok(), "{}", v.summary());
        assert_eq!((v.passed, v.failed), (144, 0));
        assert_eq!(v.suites.len(), 5);
        assert!(v.summary().ends_with("144 passed, 0 failed"));
    }

    #[test]
    fn failing_case_is_named() {
        let mut exp = expect_glue();
        exp.insert("streams_negative_control".into(), 2);
        let v = judge(&lines(include_str!("../testdata/bad.log")), &exp, false);
        assert!(!v.ok());
        assert_eq!(
            v.failed_cases,
            vec!["streams_negative_control.negative_control_fails".to_string()]
        );
        assert_eq!((v.passed, v.failed), (145, 1));
        assert!(v.summary().contains("two + 2 == 5"), "{}", v.summary());
    }

    #[test]
    fn oops_fails_even_if_cases_pass() {
        let v = judge(
            &lines(include_str!("../testdata/oops.log")),
            &expect_glue(),
            false,
        );
        assert!(!v.ok());
        assert!(
            v.problems.iter().any(|p| p.contains("kernel report")),
            "{}",
            v.summary()
        );
    }

    #[test]
    fn missing_suite_and_end_marker_fail() {
        let mut exp = expect_glue();
        exp.insert("streams_msg".into(), 62);
        let v = judge(&lines(include_str!("../testdata/missing.log")), &exp, true);
        assert!(!v.ok());
        let has = |want: &str| v.problems.iter().any(|p| p.starts_with(want));
        assert!(has("suite streams_glue did not finish"), "{}", v.summary());
        assert!(has("missing result: suite streams_msg"), "{}", v.summary());
        assert!(has("timeout"), "{}", v.summary());
    }

    #[test]
    fn stress_reports_fail() {
        for (line, want) in [
            (
                "[  301.123456] BUG: KCSAN: data-race in sth_read / sth_write",
                "kernel report (BUG: KCSAN:)",
            ),
            (
                "[  999.000001] INFO: task strstress:123 blocked for more than 120 seconds.",
                "kernel report (blocked for more than)",
            ),
            (
                "[   50.1] watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [strstress:77]",
                "kernel report (BUG:)",
            ),
            (
                "[   60.2] rcu: INFO: rcu_sched self-detected stall on CPU",
                "kernel report (detected stall)",
            ),
        ] {
            let log = format!("{line}\nRSTREAMS-END rc=0\n");
            let v = judge(&lines(&log), &BTreeMap::new(), false);
            assert!(
                v.problems.iter().any(|p| p.starts_with(want)),
                "{line}: {}",
                v.summary()
            );
        }
        let v = judge(&lines("RSTREAMS-END rc=0\n"), &BTreeMap::new(), false);
        assert!(v.ok(), "{}", v.summary());
    }

    #[test]
    fn timestamps_and_skips() {
        assert_eq!(strip_ts("[    1.234567]     ok 1 a"), "    ok 1 a");
        assert_eq!(result_line("ok 2 b # SKIP no hw"), Some((true, "b".into())));
        assert_eq!(result_line("not ok 3 c"), Some((false, "c".into())));
        assert_eq!(result_line("ok x"), None);
    }
}
