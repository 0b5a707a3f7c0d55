//! The guest profile of `cargo xtask bench`: where the CPU time of a few perftest runs goes.
//!
//! After the sweep, in the same boot (so that no measured run shares the guest with perf), the
//! guest runs `perf record -e cpu-clock -a -g` over one perftest run per [`CASES`] entry that
//! the bench's `--impls` include, with the sweep's own options and a short `-t`/`-i`
//! ([`INTERVAL`], [`ITERATIONS`]), and prints three `perf report`s of each recording as console
//! markers: the top symbols of the perftest processes by self time and with their children,
//! and the share of each command (`swapper` is an idle vCPU). The guest has no perf of its own:
//! the host's (Debian `linux-perf`), the libraries it links and the dynamic loader go into the
//! initramfs under `/opt/perf` ([`perf_files`]), only when the profile is on.
//!
//! The markers (`tests/vm/init.sh`, `bench_profile`; CASE is `LABEL SIZE`; keep them in step):
//!
//! ```text
//! RSTREAMS-BENCH-PROF CASE start            the case starts
//! RSTREAMS-BENCH-PROF CASE note <line>      perftest's and perf record's stderr
//! RSTREAMS-BENCH-PROF CASE fail <why>       no profile for this case
//! RSTREAMS-BENCH-PROF CASE row <csv>        perftest's result under perf (not a bench figure)
//! RSTREAMS-BENCH-PROF CASE samples <text>   perf report's sample count
//! RSTREAMS-BENCH-PROF CASE comm <line>      perf report --sort comm: every process
//! RSTREAMS-BENCH-PROF CASE self <line>      perf report --no-children --comm perftest --sort sym
//! RSTREAMS-BENCH-PROF CASE children <line>  the same with --children
//! RSTREAMS-BENCH-PROF CASE end              the case's reports are complete
//! ```
//!
//! The report lines are perf's own with `-t '|'` (perf replaces the separator inside names).
//! Percentages are perf's default, of all samples of the recording (both vCPUs), also for the
//! reports filtered to the perftest processes. The host turns the markers into `profile.md`
//! and a short section of `report.md`; a case without a profile is reported with the reason,
//! never filled in, and never fails the bench.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::bench::{self, Impl, Sweep};
use crate::util::{self, Result};

/// The profiled cases: (implementation label, size) — the 1-byte and 4 KiB pipe runs, putmsg
/// at 16 bytes, UDP at 64 bytes (each at its sweep's nearest size: [`cases`]).
pub(crate) const CASES: &[(&str, usize)] = &[
    ("linux", 1),
    ("streams", 1),
    ("streams+H+w+F+M", 1),
    ("linux", 4096),
    ("streams", 4096),
    ("streams+H+w+F+M", 4096),
    ("streams-putmsg", 16),
    ("udp-socket", 64),
    ("udp-tpi", 64),
];

/// perftest `-t` of a profiled run.
pub(crate) const INTERVAL: f64 = 1.0;
/// perftest `-i` of a profiled run.
pub(crate) const ITERATIONS: u32 = 2;

/// Guest seconds budgeted per case for the guest time limit: the recording (`INTERVAL` x
/// `ITERATIONS`), perftest's start-up and three `perf report`s took 5–7 s per case under TCG
/// in the two quick benches with `--profile` of 2026-12-07 (host busy with a kernel build);
/// about five times that.
pub(crate) const CASE_BUDGET_SECS: f64 = 30.0;

/// The host's perf: the Debian package `linux-perf` (the bench's dependency step installs it).
pub(crate) const HOST_PERF: &str = "/usr/bin/perf";

/// Where perf goes in the guest; `tests/vm/init.sh` runs `GUEST_DIR/ld.so --library-path
/// GUEST_DIR/lib GUEST_DIR/perf`.
const GUEST_DIR: &str = "opt/perf";

/// Rows of the self and children tables in `profile.md` (the guest prints this many).
const TOP: usize = 40;
/// Rows of the self table per case in `report.md`.
const TOP_REPORT: usize = 10;

/// One profiled case.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Case {
    pub(crate) label: &'static str,
    pub(crate) size: usize,
    /// perftest's arguments (without `--csv --label`, which the guest adds).
    pub(crate) args: String,
}

impl Case {
    /// `linux, 1 byte`, `udp-tpi, 64 bytes`.
    fn title(&self) -> String {
        let unit = if self.size == 1 { "byte" } else { "bytes" };
        format!("{}, {} {unit}", self.label, self.size)
    }
}

/// The cases of [`CASES`] among `impls`, each at the size of its sweep (`sizes` for the pipe
/// kinds, `udp_sizes` for UDP) nearest to its own (by ratio; the smaller on a tie), so a
/// `--sizes` sweep is profiled at sizes it measured; with the sweep's base options at
/// [`INTERVAL`] x [`ITERATIONS`]. A case that lands on a (label, size) already listed, or
/// whose sweep has no sizes, is left out.
pub(crate) fn cases(impls: &[&'static Impl], sizes: &[usize], udp_sizes: &[usize]) -> Vec<Case> {
    let mut out: Vec<Case> = Vec::new();
    for &(label, want) in CASES {
        let Some(i) = impls.iter().find(|i| i.label == label) else {
            continue;
        };
        let (sweep, base): (&[usize], BaseArgs) = match i.sweep {
            Sweep::Udp => (udp_sizes, bench::udp_base_args),
            _ => (sizes, bench::pipe_base_args),
        };
        let Some(size) = nearest(want, sweep) else {
            continue;
        };
        if out.iter().any(|c| c.label == i.label && c.size == size) {
            continue;
        }
        out.push(Case {
            label: i.label,
            size,
            args: format!("{} {}", base(INTERVAL, ITERATIONS, size), i.args),
        });
    }
    out
}

/// perftest's base options of a sweep (`bench::pipe_base_args`, `bench::udp_base_args`).
type BaseArgs = fn(f64, u32, usize) -> String;

/// The size of `sweep` nearest to `want` by ratio (the smaller on a tie); `None` for an
/// empty sweep.
fn nearest(want: usize, sweep: &[usize]) -> Option<usize> {
    let ratio = |s: usize| {
        let (a, b) = (want.max(1) as f64, s.max(1) as f64);
        if a > b {
            a / b
        } else {
            b / a
        }
    };
    sweep
        .iter()
        .copied()
        .min_by(|&x, &y| ratio(x).total_cmp(&ratio(y)).then(x.cmp(&y)))
}

/// The guest's case list (`/etc/rstreams/profile.plan`): `LABEL SIZE PERFTEST-ARGS...` per
/// line.
pub(crate) fn plan_text(cases: &[Case]) -> String {
    let mut s = String::new();
    for c in cases {
        let _ = writeln!(s, "{} {} {}", c.label, c.size, c.args);
    }
    s
}

/// What the guest needs for the profile.
pub(crate) struct Shipment {
    /// The case list, [`plan_text`].
    pub(crate) plan: String,
    /// [`perf_files`].
    pub(crate) perf: Vec<(String, PathBuf)>,
}

/// The guest's perf: (path in the guest, file on the host) for perf, every library it links
/// (by the name it asks for) and the dynamic loader, from `ldd`.
pub(crate) fn perf_files() -> Result<Vec<(String, PathBuf)>> {
    let perf = Path::new(HOST_PERF);
    if !perf.is_file() {
        return Err(format!(
            "no {HOST_PERF} on the host (Debian package linux-perf)"
        ));
    }
    bundle(perf, &util::output(Command::new("ldd").arg(perf))?)
}

/// [`perf_files`] from `ldd`'s output: `libc.so.6 => /lib/.../libc.so.6 (0x…)` lines are
/// libraries, the line that is a bare path (`/lib64/ld-linux-x86-64.so.2 (0x…)`) is the
/// loader; the vDSO has no file.
fn bundle(perf: &Path, ldd: &str) -> Result<Vec<(String, PathBuf)>> {
    let mut files = vec![(format!("{GUEST_DIR}/perf"), perf.to_path_buf())];
    let mut loader = None;
    for l in ldd.lines().map(str::trim) {
        let first = |s: &str| s.split_whitespace().next().map(str::to_string);
        match l.split_once("=>") {
            Some((name, rest)) => {
                let (name, path) = (name.trim(), first(rest).unwrap_or_default());
                if !path.starts_with('/') {
                    return Err(format!("ldd {}: {l}", perf.display()));
                }
                files.push((format!("{GUEST_DIR}/lib/{name}"), PathBuf::from(path)));
            }
            None if l.starts_with('/') => loader = first(l),
            None => {}
        }
    }
    let loader = loader.ok_or_else(|| format!("ldd {}: no dynamic loader", perf.display()))?;
    files.push((format!("{GUEST_DIR}/ld.so"), PathBuf::from(loader)));
    Ok(files)
}

/// One line of a `perf report -t '|'`: `12.34%|[k] sym` (self, comm: `pct`), `45.00%|0.50%|[k]
/// sym` (children: `pct` with children, `self_pct`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Entry {
    pub(crate) pct: f64,
    pub(crate) self_pct: Option<f64>,
    /// The symbol (`[k]` kernel, `[.]` user space) or the command.
    pub(crate) name: String,
}

impl Entry {
    /// A report line with `pcts` percentage fields before the name; `None` if it is not one
    /// (a console line garbled by kernel output).
    fn parse(line: &str, pcts: usize) -> Option<Entry> {
        let f: Vec<&str> = line.split('|').map(str::trim).collect();
        if f.len() != pcts + 1 || f[pcts].is_empty() {
            return None;
        }
        let pct = |s: &str| s.strip_suffix('%')?.parse::<f64>().ok();
        Some(Entry {
            pct: pct(f[0])?,
            self_pct: if pcts == 2 { Some(pct(f[1])?) } else { None },
            name: f[pcts].to_string(),
        })
    }
}

/// What the guest printed for one case.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct CaseLog {
    pub(crate) started: bool,
    pub(crate) ended: bool,
    pub(crate) fail: Option<String>,
    pub(crate) notes: Vec<String>,
    pub(crate) row: Option<String>,
    pub(crate) samples: Option<String>,
    pub(crate) comm: Vec<Entry>,
    pub(crate) self_time: Vec<Entry>,
    pub(crate) children: Vec<Entry>,
}

/// The `RSTREAMS-BENCH-PROF` markers of the console, by (label, size).
pub(crate) fn parse_console(lines: &[String]) -> BTreeMap<(String, usize), CaseLog> {
    const TAG: &str = "RSTREAMS-BENCH-PROF ";
    let mut cases: BTreeMap<(String, usize), CaseLog> = BTreeMap::new();
    for line in lines {
        let Some(i) = line.find(TAG) else { continue };
        let mut w = line[i + TAG.len()..].splitn(4, ' ');
        let (Some(label), Some(size), Some(kind)) = (w.next(), w.next(), w.next()) else {
            continue;
        };
        let Ok(size) = size.parse::<usize>() else {
            continue;
        };
        let body = w.next().unwrap_or("").trim_end();
        let c = cases.entry((label.to_string(), size)).or_default();
        let add = |into: &mut Vec<Entry>, pcts| {
            if let Some(e) = Entry::parse(body, pcts) {
                into.push(e);
            }
        };
        match kind {
            "start" => c.started = true,
            "end" => c.ended = true,
            "fail" => c.fail = Some(body.to_string()),
            "note" => c.notes.push(body.to_string()),
            "row" => c.row = Some(body.trim().to_string()),
            "samples" => c.samples = Some(body.to_string()),
            "comm" => add(&mut c.comm, 1),
            "self" => add(&mut c.self_time, 1),
            "children" => add(&mut c.children, 2),
            _ => {}
        }
    }
    cases
}

/// One case's outcome.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CaseResult {
    pub(crate) case: Case,
    pub(crate) log: CaseLog,
    /// perftest's figure of merit under perf, and its unit.
    pub(crate) rate: Option<(f64, &'static str)>,
    /// Why there is no profile, if there is none.
    pub(crate) missing: Option<String>,
}

/// How the profile went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Profile {
    /// Not asked for; the reason (`--no-profile`, `--quick` without `--profile`).
    Off(&'static str),
    /// None of the profiled implementations was among `--impls`.
    NoCases,
    /// perf could not be put into the guest.
    Unavailable(String),
    /// The cases, from the console, with the host's perf version.
    Ran {
        perf: String,
        cases: Vec<CaseResult>,
    },
}

/// Match the console against the cases. `guest_end` says how the guest ended when it stopped
/// before the profile was through ("timed out after 900 s").
pub(crate) fn results(cases: &[Case], lines: &[String], guest_end: &str) -> Vec<CaseResult> {
    let logs = parse_console(lines);
    cases
        .iter()
        .map(|case| {
            let log = logs
                .get(&(case.label.to_string(), case.size))
                .cloned()
                .unwrap_or_default();
            let test = perftest::report::Test::of(case.label);
            let rate = log
                .row
                .as_deref()
                .and_then(|r| bench::valid_row(r, case.label, case.size))
                .map(|r| (test.metric(&r), unit(test)));
            let last_note = log.notes.iter().rev().find(|n| !n.trim().is_empty());
            let missing = match (&log.fail, last_note) {
                (Some(f), Some(n)) => Some(format!("{f}: {}", n.trim())),
                (Some(f), None) => Some(f.clone()),
                _ if !log.started => Some(format!(
                    "not run: the guest stopped before it ({guest_end})"
                )),
                _ if !log.ended => Some(format!(
                    "the guest ended during this case ({guest_end}); see console.log"
                )),
                _ if log.self_time.is_empty() => {
                    Some("perf report listed no samples of the perftest processes".into())
                }
                _ => None,
            };
            CaseResult {
                case: case.clone(),
                log,
                rate,
                missing,
            }
        })
        .collect()
}

/// The unit of a test's figure of merit ([`perftest::report::Test::metric`]).
fn unit(t: perftest::report::Test) -> &'static str {
    use perftest::report::Test;
    match t {
        Test::Pipe => "writes/s",
        Test::Udp => "messages received/s",
        Test::Syscall => "calls/s",
        Test::Bw | Test::Grep | Test::Flex => "bytes/s",
    }
}

/// The host's perf version (`perf version 6.1.x`).
pub(crate) fn host_perf_version() -> String {
    util::try_output(Command::new(HOST_PERF).arg("--version"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "perf (version unknown)".into())
}

/// The sentence that says how every case was recorded and how to read the percentages.
fn method(perf: &str) -> String {
    format!(
        "After the sweep, in the same guest boot, `perf record -e cpu-clock -a -g` (the host's \
         {perf}, Debian `linux-perf`, run in the guest) over one perftest run per case, with the \
         sweep's options and `-t {INTERVAL} -i {ITERATIONS}`. Percentages are of all samples of \
         the recording (both vCPUs); the symbol tables list the perftest processes' samples \
         (\"self\": in the function itself; \"children\": in it and what it calls); `swapper` \
         is an idle vCPU. **Rates under perf are not bench figures** (perf's sampling slows the \
         guest); the bench's figures are the tables of `report.md`."
    )
}

fn rate_cell(r: &CaseResult) -> String {
    match r.rate {
        Some((v, unit)) => format!("{} {unit}", thousands(v)),
        None => "no result".into(),
    }
}

/// A rate rounded to an integer, with thousands separators (`1,234,567`).
fn thousands(v: f64) -> String {
    let digits = format!("{:.0}", v.abs());
    let mut out = String::new();
    for (i, d) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(d);
    }
    if v < 0.0 {
        out.insert(0, '-');
    }
    out
}

fn idle_cell(r: &CaseResult) -> String {
    r.log
        .comm
        .iter()
        .find(|e| e.name == "swapper")
        .map_or("-".into(), |e| format!("{:.1} %", e.pct))
}

/// A symbol or command as a Markdown code span (perf's names hold no backquote in practice;
/// one is replaced rather than breaking the table), Rust names demangled ([`readable`]).
fn code(name: &str) -> String {
    format!("`{}`", readable(name).replace('`', "'"))
}

/// A symbol as people read it: perf's `[k] ` (kernel) or `[.] ` (user space) kept, a
/// Rust-mangled name demangled without its crate hashes (perf 6.1 leaves the kernel's v0
/// names, `_RNv…`, mangled); anything else as it is.
fn readable(name: &str) -> String {
    let (prefix, sym) = match name.split_once("] ") {
        Some((p, s)) if p.starts_with('[') => (&name[..p.len() + 2], s),
        _ => ("", name),
    };
    match rustc_demangle::try_demangle(sym) {
        Ok(d) => format!("{prefix}{d:#}"),
        Err(_) => name.to_string(),
    }
}

impl Profile {
    /// `profile.md`: per case the rate under perf, the share by command and the top [`TOP`]
    /// symbols by self time and with children; `None` when nothing was recorded. `head` is
    /// the report's first line (command, time, commit).
    pub(crate) fn markdown(&self, head: &str) -> Option<String> {
        let Profile::Ran { perf, cases } = self else {
            return None;
        };
        let mut m = format!("# Guest profile\n\n{head}\n\n{}\n\n", method(perf));
        m.push_str(&summary_table(cases));
        for r in cases {
            let _ = writeln!(m, "\n## {}\n\n`perftest {}`\n", r.case.title(), r.case.args);
            if let Some(why) = &r.missing {
                let _ = writeln!(m, "**No profile:** {why}\n");
            }
            let _ = writeln!(
                m,
                "Under perf (not a bench figure): {}; samples: {}.\n",
                rate_cell(r),
                r.log.samples.as_deref().unwrap_or("?")
            );
            // perftest's warnings and perf report's, once each.
            let mut notes: Vec<&str> = Vec::new();
            for n in r.log.notes.iter().map(|n| n.trim()) {
                if !n.is_empty() && !notes.contains(&n) {
                    notes.push(n);
                }
            }
            if !notes.is_empty() {
                m.push_str("Notes:\n\n");
                for n in notes {
                    let _ = writeln!(m, "- {n}");
                }
                m.push('\n');
            }
            if !r.log.comm.is_empty() {
                m.push_str("By command:\n\n| % | command |\n|---:|---|\n");
                for e in &r.log.comm {
                    let _ = writeln!(m, "| {:.2} | {} |", e.pct, code(&e.name));
                }
                m.push('\n');
            }
            if !r.log.self_time.is_empty() {
                let _ = writeln!(
                    m,
                    "Self, top {TOP} (perftest processes):\n\n| self % | symbol |\n|---:|---|"
                );
                for e in r.log.self_time.iter().take(TOP) {
                    let _ = writeln!(m, "| {:.2} | {} |", e.pct, code(&e.name));
                }
                m.push('\n');
            }
            if !r.log.children.is_empty() {
                let _ = writeln!(
                    m,
                    "Children, top {TOP} (perftest processes):\n\n| children % | self % | symbol |\n|---:|---:|---|"
                );
                for e in r.log.children.iter().take(TOP) {
                    let _ = writeln!(
                        m,
                        "| {:.2} | {:.2} | {} |",
                        e.pct,
                        e.self_pct.unwrap_or(0.0),
                        code(&e.name)
                    );
                }
                m.push('\n');
            }
        }
        Some(m)
    }

    /// The "Guest profile" section of `report.md`: the method, a row per case, the top
    /// [`TOP_REPORT`] self symbols per case, and a link to `profile.md`; or why there is none.
    pub(crate) fn report_section(&self) -> String {
        let mut m = String::from("\n## Guest profile\n\n");
        let (perf, cases) = match self {
            Profile::Off(why) => {
                let _ = writeln!(m, "Not recorded: {why}.");
                return m;
            }
            Profile::NoCases => {
                let _ = writeln!(
                    m,
                    "Not recorded: none of the profiled cases ({}) is among the implementations run.",
                    CASES
                        .iter()
                        .map(|(l, s)| format!("{l} {s}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                return m;
            }
            Profile::Unavailable(why) => {
                let _ = writeln!(m, "Not recorded: perf is unavailable: {why}.");
                return m;
            }
            Profile::Ran { perf, cases } => (perf, cases),
        };
        let _ = writeln!(
            m,
            "{} The top {TOP} symbols by self time and with children, and the share by command, \
             are in [profile.md](profile.md).\n",
            method(perf)
        );
        m.push_str(&summary_table(cases));
        for r in cases {
            let _ = write!(m, "\n### {}\n\n", r.case.title());
            if let Some(why) = &r.missing {
                let _ = writeln!(m, "No profile: {why}");
                continue;
            }
            let _ = writeln!(m, "| self % | symbol |\n|---:|---|");
            for e in r.log.self_time.iter().take(TOP_REPORT) {
                let _ = writeln!(m, "| {:.2} | {} |", e.pct, code(&e.name));
            }
        }
        m
    }

    /// One line for the end of the bench's output.
    pub(crate) fn summary(&self) -> String {
        match self {
            Profile::Off(why) => format!("guest profile: off ({why})"),
            Profile::NoCases => "guest profile: no profiled case among --impls".into(),
            Profile::Unavailable(why) => format!("guest profile: perf unavailable: {why}"),
            Profile::Ran { cases, .. } => {
                let done = cases.iter().filter(|r| r.missing.is_none()).count();
                format!(
                    "guest profile: {done} of {} case(s) profiled (profile.md)",
                    cases.len()
                )
            }
        }
    }
}

/// A row per case: the rate under perf, the idle share, or why there is no profile.
fn summary_table(cases: &[CaseResult]) -> String {
    let mut m = String::from(
        "| case | under perf (not a bench figure) | idle vCPU (`swapper`) | profile |\n\
         |---|---:|---:|---|\n",
    );
    for r in cases {
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} |",
            r.case.title(),
            rate_cell(r),
            idle_cell(r),
            r.missing
                .as_deref()
                .map_or("yes".into(), |w| format!("none: {w}"))
        );
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    fn impls(labels: &[&str]) -> Vec<&'static Impl> {
        bench::IMPLS
            .iter()
            .filter(|i| labels.contains(&i.label))
            .collect()
    }

    #[test]
    fn cases_follow_impls_and_the_sweep_options() {
        let (sizes, udp) = (bench::default_sizes(), bench::default_udp_sizes());
        let all = cases(&bench::IMPLS.iter().collect::<Vec<_>>(), &sizes, &udp);
        assert_eq!(all.len(), CASES.len());
        let c = cases(
            &impls(&["linux", "streams+H+w+F+M", "udp-tpi", "seqpacket"]),
            &sizes,
            &udp,
        );
        let got: Vec<(&str, usize)> = c.iter().map(|c| (c.label, c.size)).collect();
        assert_eq!(
            got,
            [
                ("linux", 1),
                ("streams+H+w+F+M", 1),
                ("linux", 4096),
                ("streams+H+w+F+M", 4096),
                ("udp-tpi", 64)
            ]
        );
        // The measured rows' options with -t 1 -i 2 (words 4 and 6, for the guest watchdog).
        assert_eq!(
            c[3].args,
            format!(
                "{} --pipe=streams -H -M -F -w",
                bench::pipe_base_args(1.0, 2, 4096)
            )
        );
        assert_eq!(
            plan_text(&c[4..]),
            "udp-tpi 64 -q -r -t 1 -i 2 -s 64 --bufsize=131071 --udp=tpi\n"
        );
        assert!(cases(&impls(&["bw-linux", "syscall"]), &sizes, &udp).is_empty());
    }

    #[test]
    fn cases_follow_the_sweep_sizes() {
        let all = bench::IMPLS.iter().collect::<Vec<_>>();
        let got = |sizes: &[usize], udp: &[usize]| -> Vec<(&str, usize)> {
            cases(&all, sizes, udp)
                .iter()
                .map(|c| (c.label, c.size))
                .collect()
        };
        // The quick sweep (1, 64, 1024, 4096): putmsg's 16 goes to 64 (4x off, against 16x).
        let quick = got(&[1, 64, 1024, 4096], &[1, 64, 1024]);
        assert!(quick.contains(&("streams-putmsg", 64)), "{quick:?}");
        assert!(quick.contains(&("streams", 1)) && quick.contains(&("streams", 4096)));
        // One size: the 1-byte and 4 KiB cases of an implementation become one.
        let one = got(&[256], &[64]);
        assert_eq!(
            one,
            [
                ("linux", 256),
                ("streams", 256),
                ("streams+H+w+F+M", 256),
                ("streams-putmsg", 256),
                ("udp-socket", 64),
                ("udp-tpi", 64)
            ]
        );
        // A tie goes to the smaller size; no UDP sizes, no UDP cases.
        assert_eq!(nearest(16, &[4, 64]), Some(4));
        assert!(got(&[1], &[]).iter().all(|(l, _)| !l.starts_with("udp")));
        assert_eq!(nearest(1, &[]), None);
    }

    #[test]
    fn perf_and_its_libraries_from_ldd() {
        let ldd = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                   \tlibm.so.6 => /lib/x86_64-linux-gnu/libm.so.6 (0x7f)\n\
                   \tlibpython3.11.so.1.0 => /lib/x86_64-linux-gnu/libpython3.11.so.1.0 (0x7f)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        let f = bundle(Path::new("/usr/bin/perf"), ldd).unwrap();
        let got: Vec<(&str, String)> = f
            .iter()
            .map(|(g, h)| (g.as_str(), h.display().to_string()))
            .collect();
        assert_eq!(
            got,
            [
                ("opt/perf/perf", "/usr/bin/perf".to_string()),
                (
                    "opt/perf/lib/libm.so.6",
                    "/lib/x86_64-linux-gnu/libm.so.6".to_string()
                ),
                (
                    "opt/perf/lib/libpython3.11.so.1.0",
                    "/lib/x86_64-linux-gnu/libpython3.11.so.1.0".to_string()
                ),
                ("opt/perf/ld.so", "/lib64/ld-linux-x86-64.so.2".to_string()),
            ]
        );
        // A library ldd cannot find, or no loader: no perf for the guest, with the reason.
        let missing = "\tlibfoo.so.1 => not found\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        assert!(bundle(Path::new("/usr/bin/perf"), missing).is_err());
        assert!(bundle(
            Path::new("/usr/bin/perf"),
            "\tlibm.so.6 => /lib/libm.so.6 (0x7f)\n"
        )
        .is_err_and(|e| e.contains("loader")));
    }

    const LINUX_ROW: &str = "linux,1,2.0,200000,100000.0,100000.0,0.00001,200000,200000,100000.0,,";

    #[test]
    fn markers_to_the_profile_section() {
        let c = cases(
            &impls(&["linux", "streams", "udp-tpi"]),
            &bench::default_sizes(),
            &bench::default_udp_sizes(),
        );
        let got: Vec<(&str, usize)> = c.iter().map(|c| (c.label, c.size)).collect();
        assert_eq!(
            got,
            [
                ("linux", 1),
                ("streams", 1),
                ("linux", 4096),
                ("streams", 4096),
                ("udp-tpi", 64)
            ]
        );
        // linux 1: profiled (kernel output in front of a marker too); streams 1: perftest
        // failed; linux 4096: recorded, but perf report had nothing for perftest; streams 4096:
        // the guest ended during it; udp-tpi 64: never started.
        let log = lines(&format!(
            "RSTREAMS-BENCH-DONE n=10\n\
             RSTREAMS-BENCH-PROF linux 1 start\n\
             RSTREAMS-BENCH-PROF linux 1 note perftest: STREAMS options (-H -w -M -p N --hiwat --lowat) ignored for linux\n\
             RSTREAMS-BENCH-PROF linux 1 row {LINUX_ROW}\n\
             RSTREAMS-BENCH-PROF linux 1 samples 16K of event 'cpu-clock'\n\
             RSTREAMS-BENCH-PROF linux 1 comm  60.17% |perftest       \n\
             RSTREAMS-BENCH-PROF linux 1 comm  39.83% |swapper        \n\
             RSTREAMS-BENCH-PROF linux 1 self  12.50%  |[k] mutex_spin_on_owner\n\
             [  99.1] random: crng init done RSTREAMS-BENCH-PROF linux 1 self  3.25%  |[.] __libc_write\n\
             RSTREAMS-BENCH-PROF linux 1 self  3.2[  99.2] garbled\n\
             RSTREAMS-BENCH-PROF linux 1 children  35.00% | 0.10%  |[k] ksys_write\n\
             RSTREAMS-BENCH-PROF linux 1 end\n\
             RSTREAMS-BENCH-PROF streams 1 start\n\
             RSTREAMS-BENCH-PROF streams 1 note perftest: no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory\n\
             RSTREAMS-BENCH-PROF streams 1 fail perf record exit status 1\n\
             RSTREAMS-BENCH-PROF linux 4096 start\n\
             RSTREAMS-BENCH-PROF linux 4096 row {}\n\
             RSTREAMS-BENCH-PROF linux 4096 comm  100.00% |swapper\n\
             RSTREAMS-BENCH-PROF linux 4096 end\n\
             RSTREAMS-BENCH-PROF streams 4096 start\n",
            LINUX_ROW.replacen(",1,", ",4096,", 1)
        ));
        let r = results(&c, &log, "guest timed out after 600 s and was killed");
        assert_eq!(r[0].missing, None);
        assert_eq!(r[0].rate, Some((100000.0, "writes/s")));
        assert_eq!(
            r[0].log.samples.as_deref(),
            Some("16K of event 'cpu-clock'")
        );
        assert_eq!(
            r[0].log.self_time,
            [
                Entry {
                    pct: 12.5,
                    self_pct: None,
                    name: "[k] mutex_spin_on_owner".into()
                },
                Entry {
                    pct: 3.25,
                    self_pct: None,
                    name: "[.] __libc_write".into()
                }
            ]
        );
        assert_eq!(r[0].log.children[0].self_pct, Some(0.1));
        assert_eq!(r[0].log.comm[1].name, "swapper");
        assert_eq!(
            r[1].missing.as_deref(),
            Some("perf record exit status 1: perftest: no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory")
        );
        assert_eq!(r[1].rate, None);
        assert_eq!(
            r[2].missing.as_deref(),
            Some("perf report listed no samples of the perftest processes")
        );
        assert!(r[3].missing.as_deref().is_some_and(
            |m| m.starts_with("the guest ended during this case (guest timed out after 600 s")
        ));
        assert!(r[4]
            .missing
            .as_deref()
            .is_some_and(|m| m.starts_with("not run:")));

        let p = Profile::Ran {
            perf: "perf version 6.1.0".into(),
            cases: r,
        };
        let sec = p.report_section();
        assert!(sec.starts_with("\n## Guest profile\n"));
        assert!(sec.contains("**Rates under perf are not bench figures**"));
        assert!(sec.contains("[profile.md](profile.md)"));
        assert!(
            sec.contains("| linux, 1 byte | 100,000 writes/s | 39.8 % | yes |"),
            "{sec}"
        );
        assert!(sec.contains("| streams, 1 byte | no result | - | none: perf record exit status 1"));
        assert!(sec.contains("### linux, 1 byte\n\n| self % | symbol |\n|---:|---|\n| 12.50 | `[k] mutex_spin_on_owner` |\n| 3.25 | `[.] __libc_write` |\n"));
        assert!(sec
            .contains("### udp-tpi, 64 bytes\n\nNo profile: not run: the guest stopped before it"));
        // No invented row for a case without a profile.
        assert!(!sec.contains("### streams, 1 byte\n\n| self %"));
        let md = p.markdown("Measured by `cargo xtask bench`.").unwrap();
        assert!(md.starts_with("# Guest profile\n\nMeasured by `cargo xtask bench`.\n"));
        assert!(md.contains("`perftest -q -r -t 1 -i 2 -m nullmod -p 0 -s 1 -a -S10 --hiwat=65536 --lowat=8192 --pipe=linux`"));
        assert!(md.contains("| children % | self % | symbol |\n|---:|---:|---|\n| 35.00 | 0.10 | `[k] ksys_write` |"));
        assert!(md.contains("| 39.83 | `swapper` |"));
        assert!(md.contains("**No profile:** perf report listed no samples"));
        assert!(md.contains("Notes:\n\n- perftest: STREAMS options (-H -w -M -p N --hiwat --lowat) ignored for linux\n"));
        assert_eq!(
            p.summary(),
            "guest profile: 1 of 5 case(s) profiled (profile.md)"
        );
    }

    /// `cargo xtask help bench` names every case and the profile's -t/-i.
    #[test]
    fn the_help_says_what_is_profiled() {
        let help = bench::LONG_ABOUT.replace('\n', " ");
        assert!(
            help.contains(&format!("-t {INTERVAL} -i {ITERATIONS}")),
            "{help}"
        );
        for (label, _) in CASES {
            assert!(help.contains(label), "{label}");
        }
        use clap::CommandFactory;
        let options = bench::Args::command().render_long_help().to_string();
        let options = options.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(
            options.contains(&format!("+ {CASE_BUDGET_SECS} s per profiled case")),
            "{options}"
        );
    }

    #[test]
    fn rust_symbols_demangled() {
        assert_eq!(
            readable("[k] _RNvMNtNtCsfkFf9C7TBbn_7streams3sth4readINtNtB6_6stream6StreamNtB4_7StrHeadE7strread"),
            "[k] <streams::stream::Stream<streams::sth::StrHead>>::strread"
        );
        assert_eq!(
            readable("[.] _ZN8perftest3run3run17h0123456789abcdefE"),
            "[.] perftest::run::run"
        );
        for as_is in [
            "[k] pipe_write",
            "[.] perftest::run::run::{{closure}}",
            "swapper",
        ] {
            assert_eq!(readable(as_is), as_is);
        }
    }

    #[test]
    fn rates_with_separators() {
        assert_eq!(thousands(0.4), "0");
        assert_eq!(thousands(999.5), "1,000");
        assert_eq!(thousands(242_349.2), "242,349");
        assert_eq!(thousands(1_234_567.0), "1,234,567");
    }

    #[test]
    fn off_or_unavailable_says_so() {
        for (p, says) in [
            (Profile::Off("--no-profile"), "Not recorded: --no-profile."),
            (
                Profile::Unavailable(
                    "no /usr/bin/perf on the host (Debian package linux-perf)".into(),
                ),
                "Not recorded: perf is unavailable: no /usr/bin/perf on the host",
            ),
            (
                Profile::NoCases,
                "Not recorded: none of the profiled cases (linux 1, ",
            ),
        ] {
            assert!(p.report_section().contains(says), "{}", p.report_section());
            assert_eq!(p.markdown("x"), None);
        }
    }
}
