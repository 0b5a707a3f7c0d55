//! `perftest report`: from sweep CSVs to `report.md` (tables per write size: rate of each
//! implementation, delay, throughput, ratio to the baseline, normally `linux`) and the four
//! charts of the LfS papers, drawn by gnuplot from generated scripts: performance (writes/s
//! vs size, log x), delay (s/write vs size), throughput (bytes/s vs size, log-log) and
//! improvement (% over the baseline vs size).
//!
//! The UDP test's rows (labels `udp-…`, see [`crate::udp`]) get a section of their own with
//! the same tables and charts (`udp-*.png`) in the LfS UDP paper's terms: messages received
//! per second (the receiver's count over the test time), messages sent per second, the
//! baseline `udp-socket`, and the ratios tpi/socket and tpi/xtiso.
//!
//! Then [`goals`]: the project's goals against the measured ratios (with the system call
//! floor, the `syscall` row), and [`workload`]: the seed-001 workloads (`bw-…`, `grep-…`,
//! `flex-…` rows), a table and a chart each.

pub mod goals;
pub mod workload;

use crate::csv::{Row, State, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `perftest report` as given on the command line.
#[derive(Debug, Clone, clap::Args)]
pub struct ReportArgs {
    /// CSV files written by perftest sweep, perftest --csv or cargo xtask bench
    #[arg(value_name = "FILE.csv", required = true)]
    pub files: Vec<PathBuf>,
    /// Directory to write report.md, results.json, report.dat, the gnuplot scripts and PNGs to
    #[arg(short, long, value_name = "DIR")]
    pub out: PathBuf,
    /// Implementation the others are compared with
    #[arg(long, value_name = "IMPL", default_value = "linux")]
    pub baseline: String,
    /// Markdown inserted after the report's title (environment, command line...)
    #[arg(long, value_name = "FILE.md")]
    pub preamble: Option<PathBuf>,
    /// Print help
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

/// Which test a row or status line belongs to, by its label.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The pipe test: figure of merit the writer's rate.
    Pipe,
    /// The UDP test (`udp-…` labels): figure of merit the received rate.
    Udp,
    /// The floors: the system call floor (`syscall`) and the write floor (`devnull`): calls/s.
    Syscall,
    /// bw_pipe (`bw-…`): bytes/s.
    Bw,
    /// cat | grep (`grep-…`): bytes/s.
    Grep,
    /// pipeflex (`flex-…`): bytes/s.
    Flex,
}

impl Test {
    /// The test of an implementation label.
    pub fn of(imp: &str) -> Test {
        if imp.starts_with(crate::udp::LABEL_PREFIX) {
            Test::Udp
        } else if imp == "syscall" || imp.starts_with("syscall-") || imp == "devnull" {
            Test::Syscall
        } else if imp.starts_with("bw-") {
            Test::Bw
        } else if imp.starts_with("grep-") {
            Test::Grep
        } else if imp.starts_with("flex-") {
            Test::Flex
        } else {
            Test::Pipe
        }
    }

    /// The figure of merit of a row.
    pub fn metric(self, r: &Row) -> f64 {
        match self {
            Test::Pipe | Test::Syscall => r.writes_per_sec,
            Test::Udp => r.reads_per_sec,
            Test::Bw | Test::Grep | Test::Flex => r.bytes_per_sec,
        }
    }

    /// The baseline of the UDP test: Linux sockets, as in the paper.
    pub const UDP_BASELINE: &'static str = "udp-socket";
}

/// Column order: the baseline, then the STREAMS implementations, then the others (context),
/// each group by name.
fn column_key(name: &str, baseline: &str) -> (u8, String) {
    let group = if name == baseline {
        0
    } else if name.starts_with("streams") || name == "udp-tpi" {
        1
    } else {
        2
    };
    (group, name.to_string())
}

/// Mean and spread of the repetitions of one (implementation, size), in the test's figure of
/// merit (writes/s; for UDP messages received/s).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stat {
    /// Mean.
    pub mean: f64,
    /// Lowest.
    pub min: f64,
    /// Highest.
    pub max: f64,
    /// Repetitions.
    pub n: usize,
}

/// All rows of one test, summarised.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The test summarised.
    pub test: Test,
    /// Implementations: the baseline first, then by name.
    pub imps: Vec<String>,
    /// Write sizes, ascending.
    pub sizes: Vec<usize>,
    /// The baseline implementation, if present in the data.
    pub baseline: Option<String>,
    /// Implementations that have status lines but no measurement at all (e.g. `streams`
    /// before the pipe driver exists): shown in the tables, never in the charts.
    pub unmeasured: Vec<String>,
    /// Runs without a measurement, and why.
    pub status: Vec<Status>,
    stats: BTreeMap<(String, usize), Stat>,
    /// Mean writes/s (UDP: messages sent/s), for the UDP test's sent columns.
    sent: BTreeMap<(String, usize), f64>,
}

impl Summary {
    /// Group rows by (implementation, size).
    pub fn new(rows: &[Row], baseline: &str) -> Summary {
        Summary::with_status(rows, &[], baseline)
    }

    /// Group the pipe test's rows by (implementation, size), keeping the runs that produced no
    /// number.
    pub fn with_status(rows: &[Row], status: &[Status], baseline: &str) -> Summary {
        Summary::of(Test::Pipe, rows, status, baseline)
    }

    /// Group the rows and status lines of `test` by (implementation, size).
    pub fn of(test: Test, rows: &[Row], status: &[Status], baseline: &str) -> Summary {
        let rows: Vec<&Row> = rows.iter().filter(|r| Test::of(&r.imp) == test).collect();
        let status: Vec<Status> = status
            .iter()
            .filter(|st| Test::of(&st.imp) == test)
            .cloned()
            .collect();
        let status = &status[..];
        let mut groups: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
        let mut sent_groups: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
        for r in &rows {
            groups
                .entry((r.imp.clone(), r.size))
                .or_default()
                .push(test.metric(r));
            sent_groups
                .entry((r.imp.clone(), r.size))
                .or_default()
                .push(r.writes_per_sec);
        }
        let sent = sent_groups
            .into_iter()
            .map(|(k, v)| {
                let n = v.len() as f64;
                (k, v.into_iter().sum::<f64>() / n)
            })
            .collect();
        let stats: BTreeMap<_, _> = groups
            .into_iter()
            .map(|(k, v)| {
                let n = v.len();
                let mean = v.iter().sum::<f64>() / n as f64;
                let min = v.iter().copied().fold(f64::INFINITY, f64::min);
                let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                (k, Stat { mean, min, max, n })
            })
            .collect();
        let names: BTreeSet<String> = stats.keys().map(|(i, _)| i.clone()).collect();
        let mut sizes: BTreeSet<usize> = stats.keys().map(|&(_, s)| s).collect();
        sizes.extend(status.iter().map(|st| st.size));
        let mut unmeasured: Vec<String> = Vec::new();
        for st in status {
            if !names.contains(&st.imp) && !unmeasured.contains(&st.imp) {
                unmeasured.push(st.imp.clone());
            }
        }
        let has_base = names.contains(baseline);
        let mut imps: Vec<String> = names.into_iter().collect();
        imps.sort_by_key(|n| column_key(n, baseline));
        unmeasured.sort_by_key(|n| column_key(n, baseline));
        Summary {
            test,
            imps,
            sizes: sizes.into_iter().collect(),
            baseline: has_base.then(|| baseline.to_string()),
            unmeasured,
            status: status.to_vec(),
            stats,
            sent,
        }
    }

    /// Anything to report: a measurement or a status line.
    pub fn is_empty(&self) -> bool {
        self.imps.is_empty() && self.unmeasured.is_empty()
    }

    /// Mean writes/s (UDP: messages sent/s).
    pub fn sent_rate(&self, imp: &str, size: usize) -> Option<f64> {
        self.sent.get(&(imp.to_string(), size)).copied()
    }

    /// rate(a) / rate(b).
    pub fn ratio_of(&self, a: &str, b: &str, size: usize) -> Option<f64> {
        let (ra, rb) = (self.rate(a, size)?, self.rate(b, size)?);
        (rb > 0.0).then(|| ra / rb)
    }

    /// Why (imp, size) has no measurement, if a status line says so: the most serious state
    /// over the repetitions (unavailable, then failed, then not run).
    pub fn state(&self, imp: &str, size: usize) -> Option<State> {
        self.status
            .iter()
            .filter(|st| st.imp == imp && st.size == size)
            .map(|st| st.state)
            .min()
    }

    /// The "Not measured" section: one line per (implementation, state, reason) with its sizes.
    fn not_measured(&self) -> String {
        let mut groups: BTreeMap<(String, State, String), BTreeSet<usize>> = BTreeMap::new();
        for st in &self.status {
            groups
                .entry((st.imp.clone(), st.state, st.message.clone()))
                .or_default()
                .insert(st.size);
        }
        let mut m = format!(
            "{} Not measured{}\n\nThese runs produced no number (no value is invented for them):\n\n\
             | implementation | state | sizes | reason |\n|---|---|---|---|\n",
            self.h(),
            if self.test == Test::Udp { " (UDP)" } else { "" }
        );
        for ((imp, state, msg), sizes) in groups {
            let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
            let _ = writeln!(
                m,
                "| {imp} | {} | {} | {} |",
                state.name(),
                sizes.join(", "),
                msg.replace('|', "\\|")
            );
        }
        m.push('\n');
        m
    }

    /// Statistics of one (implementation, size).
    pub fn stat(&self, imp: &str, size: usize) -> Option<Stat> {
        self.stats.get(&(imp.to_string(), size)).copied()
    }

    /// Mean writes/s.
    pub fn rate(&self, imp: &str, size: usize) -> Option<f64> {
        self.stat(imp, size).map(|s| s.mean)
    }

    /// rate(imp) / rate(baseline).
    pub fn ratio(&self, imp: &str, size: usize) -> Option<f64> {
        let b = self.rate(self.baseline.as_deref()?, size)?;
        let r = self.rate(imp, size)?;
        (b > 0.0).then(|| r / b)
    }

    /// What an empty cell says: the status, or "–" (not part of this run).
    fn gap(&self, imp: &str, size: usize) -> String {
        self.state(imp, size)
            .map_or("–".to_string(), |st| st.name().to_string())
    }

    fn others(&self) -> impl Iterator<Item = &String> {
        self.imps
            .iter()
            .filter(move |i| Some(i.as_str()) != self.baseline.as_deref())
    }

    /// The Markdown report.
    pub fn markdown(&self) -> String {
        self.markdown_with("")
    }

    /// The Markdown report with `preamble` (Markdown: environment, command…) after the title.
    pub fn markdown_with(&self, preamble: &str) -> String {
        markdown(&[self], preamble)
    }

    /// Heading marks of this test's sections: the pipe test's are the report's sections, the
    /// UDP test's are under its own "UDP" section.
    fn h(&self) -> &'static str {
        match self.test {
            Test::Udp => "###",
            _ => "##",
        }
    }

    /// The ratio columns: (numerator, denominator). Pipe: each measured implementation over
    /// the baseline. UDP: each implementation over the baseline (udp-socket), and tpi over
    /// xtiso, whether measured or not (an unavailable one shows "–").
    fn ratio_pairs(&self, columns: &[&String]) -> Vec<(String, String)> {
        let Some(b) = &self.baseline else {
            return Vec::new();
        };
        match self.test {
            Test::Udp => {
                let mut p: Vec<(String, String)> = columns
                    .iter()
                    .filter(|i| **i != b)
                    .map(|i| ((*i).clone(), b.clone()))
                    .collect();
                let has = |n: &str| columns.iter().any(|c| c.as_str() == n);
                if has("udp-tpi") && has("udp-xtiso") {
                    p.push(("udp-tpi".into(), "udp-xtiso".into()));
                }
                p
            }
            _ => self.others().map(|i| (i.clone(), b.clone())).collect(),
        }
    }

    /// This test's sections of the report.
    fn body(&self) -> String {
        let h = self.h();
        let mut m = String::new();
        if self.test == Test::Udp {
            let _ = writeln!(
                m,
                "## UDP\n\nMessages received per second by a receiver from a sender on \
                 127.0.0.1 (LfS UDP paper, netperf UDP_STREAM method: the receiver's count \
                 over the test time; perftest's default buffers are the paper's 131071 \
                 bytes); mean of the repetitions, min–max in brackets. Ratios compare \
                 means. Implementations: {}.\n",
                self.imps.join(", ")
            );
        } else {
            let _ = writeln!(
                m,
                "Writer rate of a writer/reader pair over one channel (LfS perftest method); \
                 mean of the repetitions, min–max in brackets. Implementations: {}.\n",
                self.imps.join(", ")
            );
        }
        if !self.unmeasured.is_empty() {
            let _ = writeln!(
                m,
                "**Not measured at all: {}** (see \"Not measured\" below).\n",
                self.unmeasured.join(", ")
            );
        }
        if !self.status.is_empty() {
            m.push_str(&self.not_measured());
        }
        let cell = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map_or("–".to_string(), f);
        let (per, unit) = match self.test {
            Test::Udp => ("message received", "messages received/s"),
            _ => ("write", "writes/s"),
        };
        // Performance.
        let _ = write!(m, "{h} Performance ({unit})\n\n| size |");
        let base = self.baseline.as_deref().unwrap_or("");
        let mut columns: Vec<&String> = self.imps.iter().chain(&self.unmeasured).collect();
        columns.sort_by_key(|n| column_key(n, base));
        for i in &columns {
            let _ = write!(m, " {i} |");
        }
        let pairs = self.ratio_pairs(&columns);
        for (a, b) in &pairs {
            let _ = write!(m, " {a}/{b} |");
        }
        m.push_str("\n|---:|");
        m.push_str(&"---:|".repeat(columns.len() + pairs.len()));
        m.push('\n');
        for &s in &self.sizes {
            let _ = write!(m, "| {s} |");
            for i in &columns {
                let c = match self.stat(i, s) {
                    Some(st) if st.n > 1 => format!("{:.0} [{:.0}–{:.0}]", st.mean, st.min, st.max),
                    Some(st) => format!("{:.0}", st.mean),
                    None => self.gap(i, s),
                };
                let _ = write!(m, " {c} |");
            }
            for (a, b) in &pairs {
                let _ = write!(
                    m,
                    " {} |",
                    cell(self.ratio_of(a, b, s), &|r| format!("{r:.2}"))
                );
            }
            m.push('\n');
        }
        // Delay, throughput, improvement.
        let table = |m: &mut String,
                     title: &str,
                     imps: &[&String],
                     f: &dyn Fn(&str, usize) -> Option<f64>,
                     fmt: &dyn Fn(f64) -> String| {
            let _ = write!(m, "\n{h} {title}\n\n| size |");
            for i in imps {
                let _ = write!(m, " {i} |");
            }
            m.push_str("\n|---:|");
            m.push_str(&"---:|".repeat(imps.len()));
            m.push('\n');
            for &s in &self.sizes {
                let _ = write!(m, "| {s} |");
                for i in imps {
                    let _ = write!(m, " {} |", cell(f(i, s), fmt));
                }
                m.push('\n');
            }
        };
        let all: Vec<&String> = self.imps.iter().collect();
        if self.test == Test::Udp {
            table(
                &mut m,
                "Messages sent/s",
                &all,
                &|i, s| self.sent_rate(i, s),
                &|v| format!("{v:.0}"),
            );
        }
        table(
            &mut m,
            &format!("Delay (µs per {per})"),
            &all,
            &|i, s| self.rate(i, s).filter(|&r| r > 0.0).map(|r| 1e6 / r),
            &|v| format!("{v:.3}"),
        );
        table(
            &mut m,
            "Throughput (MB/s, 10^6 bytes)",
            &all,
            &|i, s| self.rate(i, s).map(|r| r * s as f64 / 1e6),
            &|v| format!("{v:.2}"),
        );
        if let Some(b) = &self.baseline {
            let others: Vec<&String> = self.others().collect();
            if !others.is_empty() {
                table(
                    &mut m,
                    &format!("Improvement over {b} (%)"),
                    &others,
                    &|i, s| self.ratio(i, s).map(|r| (r - 1.0) * 100.0),
                    &|v| format!("{v:+.1}"),
                );
            }
        } else {
            m.push_str(
                "\nNo baseline implementation in the data: ratios and improvement omitted.\n",
            );
        }
        let p = self.chart_prefix();
        let _ = write!(
            m,
            "\n{h} Charts\n\n![performance]({p}performance.png)\n![delay]({p}delay.png)\n\
             ![throughput]({p}throughput.png)\n![improvement]({p}improvement.png)\n"
        );
        m
    }

    /// File name prefix of this test's data, scripts and charts.
    pub fn chart_prefix(&self) -> &'static str {
        match self.test {
            Test::Pipe => "",
            Test::Udp => "udp-",
            Test::Syscall => "syscall-",
            Test::Bw => "bw-",
            Test::Grep => "grep-",
            Test::Flex => "flex-",
        }
    }

    /// gnuplot data: size, then the mean rate of each implementation (NaN when missing); for
    /// UDP then the mean sent rate of each (`IMPL-sent`).
    pub fn data(&self) -> String {
        let mut d = String::from("# size");
        for i in &self.imps {
            let _ = write!(d, " {i}");
        }
        if self.test == Test::Udp {
            for i in &self.imps {
                let _ = write!(d, " {i}-sent");
            }
        }
        d.push('\n');
        let num = |d: &mut String, v: Option<f64>| match v {
            Some(r) => {
                let _ = write!(d, " {r}");
            }
            None => d.push_str(" NaN"),
        };
        for &s in &self.sizes {
            let _ = write!(d, "{s}");
            for i in &self.imps {
                num(&mut d, self.rate(i, s));
            }
            if self.test == Test::Udp {
                for i in &self.imps {
                    num(&mut d, self.sent_rate(i, s));
                }
            }
            d.push('\n');
        }
        d
    }

    /// The four gnuplot scripts: (chart name without [`Summary::chart_prefix`], script).
    pub fn scripts(&self, data: &Path) -> Vec<(&'static str, String)> {
        let q = |s: &str| s.replace('"', "'");
        let udp = self.test == Test::Udp;
        let prefix = self.chart_prefix();
        let xlabel = if udp {
            "message size (bytes)"
        } else {
            "write size (bytes)"
        };
        let head = |name: &str, title: &str, ylabel: &str, logx: bool, logy: bool| {
            format!(
                "set terminal pngcairo noenhanced size 900,600\nset output \"{prefix}{name}.png\"\n\
                 set title \"{}{title}\"\nset xlabel \"{xlabel}\"\nset ylabel \"{ylabel}\"\n\
                 set grid\nset key top right\n{}{}",
                if udp { "UDP " } else { "" },
                if logx { "set logscale x 2\n" } else { "" },
                if logy { "set logscale y 10\n" } else { "" }
            )
        };
        let dat = q(&data.display().to_string());
        let plot = |expr: &dyn Fn(usize) -> String, which: &[usize]| {
            let parts: Vec<String> = which
                .iter()
                .map(|&k| {
                    format!(
                        "\"{dat}\" using 1:({}) with linespoints title \"{}\"",
                        expr(k + 2),
                        q(&self.imps[k])
                    )
                })
                .collect();
            if parts.is_empty() {
                // Nothing to compare: an empty frame says so.
                "set label \"no baseline in data\" at graph 0.4,0.5\nplot [1:4096] [-1:1] NaN notitle\n".to_string()
            } else {
                format!("plot {}\n", parts.join(", \\\n     "))
            }
        };
        let all: Vec<usize> = (0..self.imps.len()).collect();
        let others: Vec<usize> = if self.baseline.is_some() {
            (1..self.imps.len()).collect()
        } else {
            vec![]
        };
        // UDP performance: received (solid, the figure of merit) and sent (dashed), as the
        // paper's "messages sent and received per second".
        let performance = if udp {
            let n = self.imps.len();
            let parts: Vec<String> = (0..n)
                .map(|k| {
                    format!(
                        "\"{dat}\" using 1:(${}) with linespoints lc {} title \"{} received\"",
                        k + 2,
                        k + 1,
                        q(&self.imps[k])
                    )
                })
                .chain((0..n).map(|k| {
                    format!(
                        "\"{dat}\" using 1:(${}) with lines dt 2 lc {} title \"{} sent\"",
                        n + k + 2,
                        k + 1,
                        q(&self.imps[k])
                    )
                }))
                .collect();
            format!("plot {}\n", parts.join(", \\\n     "))
        } else {
            plot(&|c| format!("${c}"), &all)
        };
        let (ylabel_perf, ylabel_delay) = if udp {
            ("messages per second", "seconds per message received")
        } else {
            ("writes per second", "seconds per write")
        };
        vec![
            (
                "performance",
                head("performance", "Performance", ylabel_perf, true, false) + &performance,
            ),
            (
                "delay",
                head("delay", "Delay", ylabel_delay, false, false)
                    + &plot(&|c| format!("1.0/${c}"), &all),
            ),
            (
                "throughput",
                head("throughput", "Throughput", "bytes per second", true, true)
                    + &plot(&|c| format!("$1*${c}"), &all),
            ),
            (
                "improvement",
                head(
                    "improvement",
                    &format!(
                        "Improvement over {}",
                        self.baseline.as_deref().unwrap_or("baseline")
                    ),
                    "improvement (%)",
                    true,
                    false,
                ) + "set yrange [*:*]\n"
                    + &plot(&|c| format!("100.0*(${c}/$2-1.0)"), &others),
            ),
        ]
    }
}

/// Write report.md, report.dat, the gnuplot scripts and the four PNGs into `dir`.
/// report.md is written even when gnuplot is missing (then the error says so).
pub fn write_report(rows: &[Row], dir: &Path, baseline: &str) -> Result<Vec<PathBuf>, String> {
    write_report_with(rows, &[], dir, baseline, "")
}

/// The report: title, preamble, then the sections of each test that has rows or status lines
/// (the pipe test first).
pub fn markdown(parts: &[&Summary], preamble: &str) -> String {
    let mut m = String::from("# perftest report\n\n");
    if !preamble.is_empty() {
        m.push_str(preamble.trim_end());
        m.push_str("\n\n");
    }
    let mut first = true;
    for s in parts.iter().filter(|s| !s.is_empty() || parts.len() == 1) {
        if !first {
            m.push('\n');
        }
        first = false;
        m.push_str(&s.body());
    }
    m
}

/// [`write_report`] with status lines (runs without a number) and a Markdown preamble.
/// With status lines but no measurement at all, report.md is written and the error says
/// that there is nothing to chart. The pipe test's rows are compared with `baseline`, the UDP
/// test's with `udp-socket`.
pub fn write_report_with(
    rows: &[Row],
    status: &[Status],
    dir: &Path,
    baseline: &str,
    preamble: &str,
) -> Result<Vec<PathBuf>, String> {
    if rows.is_empty() && status.is_empty() {
        return Err("no rows in the CSV input".into());
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let pipe = Summary::of(Test::Pipe, rows, status, baseline);
    let udp = Summary::of(Test::Udp, rows, status, Test::UDP_BASELINE);
    let syscall = Summary::of(Test::Syscall, rows, status, "syscall");
    let seed: Vec<workload::Section> = [Test::Bw, Test::Grep, Test::Flex]
        .into_iter()
        .map(|t| workload::Section::of(t, rows, status))
        .filter(|s| !s.is_empty())
        .collect();
    let w = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let parts: Vec<&Summary> = [&pipe, &udp]
        .into_iter()
        .filter(|s| !s.is_empty())
        .collect();
    let mut md = markdown(&parts, preamble);
    for extra in std::iter::once(goals::section(&pipe, &syscall))
        .chain(seed.iter().map(workload::Section::markdown))
        .filter(|t| !t.is_empty())
    {
        md.push('\n');
        md.push_str(&extra);
    }
    w("report.md", &md)?;
    w("results.json", &crate::csv::to_json(rows, status))?;
    if rows.is_empty() {
        return Err("no measurement in the CSV input: report.md written, no charts".into());
    }
    let gnuplot = |gp: &str| -> Result<(), String> {
        let out = Command::new("gnuplot")
            .arg(gp)
            .current_dir(dir)
            .output()
            .map_err(|e| {
                format!("gnuplot: {e} (install gnuplot-nox); report.md written, charts not drawn")
            })?;
        if !out.status.success() {
            return Err(format!(
                "gnuplot {gp} failed: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok(())
    };
    let mut pngs = Vec::new();
    for s in parts.into_iter().filter(|s| !s.imps.is_empty()) {
        let p = s.chart_prefix();
        let dat = format!("{p}report.dat");
        w(&dat, &s.data())?;
        for (name, script) in s.scripts(Path::new(&dat)) {
            let gp = format!("{p}{name}.gp");
            w(&gp, &script)?;
            gnuplot(&gp)?;
            pngs.push(dir.join(format!("{p}{name}.png")));
        }
    }
    for s in &seed {
        let (titles, data) = s.data();
        if titles.is_empty() {
            continue;
        }
        let name = s.name();
        w(&format!("{name}.dat"), &data)?;
        let gp = format!("{name}.gp");
        w(&gp, &s.script(&titles))?;
        gnuplot(&gp)?;
        pngs.push(dir.join(format!("{name}.png")));
    }
    Ok(pngs)
}
