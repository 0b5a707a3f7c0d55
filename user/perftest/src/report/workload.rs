//! The report's sections for the seed-001 workloads (perftest `--workload bw|grep|flex`):
//! per workload a table of MB/s (10^6 bytes/s; mean of the repetitions, min–max in brackets)
//! for Linux and STREAMS pipes at each pipe size, their ratio, and one gnuplot chart
//! (`bw.png`, `grep.png`, `flex.png`).
//!
//! Labels are `WORKLOAD-KIND[-psSIZE]` (perftest's own: `bw-streams-ps16k`); the CSV `size`
//! is the chunk size for bw and flex and the pipe size for grep.

use super::Test;
use crate::csv::{Row, Status};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// A workload label taken apart: (kind, pipe size in bytes; 0 = the default size).
pub fn split(label: &str) -> Option<(String, u64)> {
    let rest = label.split_once('-')?.1;
    match rest.rsplit_once("-ps") {
        Some((kind, tag)) => Some((kind.to_string(), parse_tag(tag)?)),
        None => Some((rest.to_string(), 0)),
    }
}

/// `16k` → 16384, `5000` → 5000.
fn parse_tag(t: &str) -> Option<u64> {
    match t.strip_suffix('k') {
        Some(k) => k.parse::<u64>().ok().map(|n| n * 1024),
        None => t.parse().ok(),
    }
}

fn ps_text(ps: u64) -> String {
    if ps == 0 {
        "default".into()
    } else {
        crate::workload::size_tag(ps)
    }
}

/// One line of a workload's chart.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Its title: kind and pipe size.
    pub title: String,
    /// gnuplot line colour: one per pipe size.
    pub color: usize,
    /// Dashed: not the Linux baseline.
    pub dashed: bool,
}

/// mean, min, max, n.
type Stat = (f64, f64, f64, usize);

fn stat(v: &[f64]) -> Stat {
    let n = v.len();
    (
        v.iter().sum::<f64>() / n as f64,
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        n,
    )
}

/// One workload's rows, grouped.
pub struct Section {
    test: Test,
    /// (kind, pipe size, size) → MB/s of each repetition.
    mbs: BTreeMap<(String, u64, usize), Vec<f64>>,
    /// (kind, pipe size, size) → seconds of each repetition (grep: wall time).
    secs: BTreeMap<(String, u64, usize), Vec<f64>>,
    status: Vec<Status>,
}

impl Section {
    /// The rows and status lines of `test` (Bw, Grep or Flex).
    pub fn of(test: Test, rows: &[Row], status: &[Status]) -> Section {
        let mut mbs: BTreeMap<_, Vec<f64>> = BTreeMap::new();
        let mut secs: BTreeMap<_, Vec<f64>> = BTreeMap::new();
        for r in rows.iter().filter(|r| Test::of(&r.imp) == test) {
            if let Some((kind, ps)) = split(&r.imp) {
                // grep's sweep variable is the pipe size, also its CSV size.
                let k = match test {
                    Test::Grep => (kind, ps.max(r.size as u64), ps.max(r.size as u64) as usize),
                    _ => (kind, ps, r.size),
                };
                mbs.entry(k.clone())
                    .or_default()
                    .push(r.bytes_per_sec / 1e6);
                secs.entry(k).or_default().push(r.seconds);
            }
        }
        Section {
            test,
            mbs,
            secs,
            status: status
                .iter()
                .filter(|s| Test::of(&s.imp) == test)
                .cloned()
                .collect(),
        }
    }

    /// Nothing measured and nothing missing.
    pub fn is_empty(&self) -> bool {
        self.mbs.is_empty() && self.status.is_empty()
    }

    fn kinds(&self) -> Vec<String> {
        let mut k: Vec<String> = self
            .mbs
            .keys()
            .map(|(k, _, _)| k.clone())
            .chain(
                self.status
                    .iter()
                    .filter_map(|s| split(&s.imp).map(|x| x.0)),
            )
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        // The baseline first.
        k.sort_by_key(|x| (x != "linux", x.clone()));
        k
    }

    /// (pipe size, size) pairs in the data, ascending.
    fn points(&self) -> Vec<(u64, usize)> {
        let mut p: BTreeSet<(u64, usize)> = self.mbs.keys().map(|(_, ps, s)| (*ps, *s)).collect();
        for st in &self.status {
            if let Some((_, ps)) = split(&st.imp) {
                p.insert((ps, st.size));
            }
        }
        p.into_iter().collect()
    }

    fn get(&self, kind: &str, ps: u64, size: usize) -> Option<Stat> {
        self.mbs.get(&(kind.to_string(), ps, size)).map(|v| stat(v))
    }

    fn gap(&self, kind: &str, ps: u64, size: usize) -> String {
        self.status
            .iter()
            .filter(|s| s.size == size && split(&s.imp) == Some((kind.to_string(), ps)))
            .map(|s| s.state)
            .min()
            .map_or("–".into(), |s| s.name().into())
    }

    fn title(&self) -> (&'static str, &'static str, &'static str) {
        match self.test {
            Test::Bw => (
                "bw_pipe (lmbench; seed 001)",
                "bw",
                "A writer moves 10 MB (`--total`) through one pipe in chunks of SIZE bytes to a \
                 reader reading SIZE bytes per call (lmbench bw_pipe with the chunk size as a \
                 parameter, as in the LKML \"larger pipes\" thread); timed by the reader from its \
                 first read to the last byte.",
            ),
            Test::Grep => (
                "cat | grep (seed 001)",
                "grep",
                "`cat FILE | grep -F PATTERN` with a pattern found nowhere, the file in tmpfs \
                 (warm); `cat` and `grep` are the guest's programs (busybox applets), exec'd by \
                 perftest with the pipe as cat's stdout and grep's stdin; the pipe is a Linux \
                 pipe or a STREAMS pipe made by the call libstreams_pipe.so makes for an \
                 interposed pipe(2). The `-sh` kinds (pipe size \"default\") let the shell \
                 (dash) make the pipe, with LD_PRELOAD=libstreams_pipe.so for STREAMS. Wall \
                 time from the fork(s) to the exits; MB/s is the file's size over it.",
            ),
            _ => (
                "pipeflex (seed 001)",
                "flex",
                "CHILDREN processes over half as many pipes (default 2 over 1); each writer \
                 writes SIZE-byte chunks continuously, each reader reads up to SIZE bytes and \
                 then computes for a random 0.5–1.5 × R µs (default R = 500); MB/s is what the \
                 readers read per second of the run.",
            ),
        }
    }

    /// The Markdown section.
    pub fn markdown(&self) -> String {
        let (title, name, what) = self.title();
        let kinds = self.kinds();
        let mut m = format!(
            "## {title}\n\n{what} Pipe sizes: Linux `F_SETPIPE_SZ`; STREAMS `I_SET_HIWAT` of \
             the size and `I_SET_LOWAT` of an eighth of it on both ends (the PIPE_SIZE / \
             PIPE_SEG analogue). MB/s = 10^6 bytes/s, mean of the repetitions, min–max in \
             brackets.\n\n"
        );
        let grep = self.test == Test::Grep;
        m.push_str(if grep {
            "| pipe size |"
        } else {
            "| chunk (bytes) | pipe size |"
        });
        for k in &kinds {
            let _ = write!(m, " {k} MB/s |");
            if grep {
                let _ = write!(m, " {k} s |");
            }
        }
        // Each STREAMS kind over its Linux counterpart (`streams-sh` over `linux-sh`).
        let pairs: Vec<(&String, String)> = kinds
            .iter()
            .filter(|k| k.contains("streams"))
            .map(|k| (k, k.replace("streams", "linux")))
            .filter(|(_, b)| kinds.contains(b))
            .collect();
        for (k, b) in &pairs {
            let _ = write!(m, " {k}/{b} |");
        }
        let ncol = kinds.len() * if grep { 2 } else { 1 } + pairs.len();
        m.push_str(if grep { "\n|---:|" } else { "\n|---:|---:|" });
        m.push_str(&"---:|".repeat(ncol));
        m.push('\n');
        let mut points = self.points();
        if !grep {
            points.sort_by_key(|&(ps, s)| (s, ps));
        }
        for (ps, size) in points {
            if grep {
                let _ = write!(m, "| {} |", ps_text(ps));
            } else {
                let _ = write!(m, "| {size} | {} |", ps_text(ps));
            }
            for k in &kinds {
                let c = match self.get(k, ps, size) {
                    Some((mean, lo, hi, n)) if n > 1 => format!("{mean:.2} [{lo:.2}–{hi:.2}]"),
                    Some((mean, ..)) => format!("{mean:.2}"),
                    None => self.gap(k, ps, size),
                };
                let _ = write!(m, " {c} |");
                if grep {
                    let s = self
                        .secs
                        .get(&(k.to_string(), ps, size))
                        .map_or("–".into(), |v| format!("{:.3}", stat(v).0));
                    let _ = write!(m, " {s} |");
                }
            }
            for (k, b) in &pairs {
                let r = match (self.get(k, ps, size), self.get(b, ps, size)) {
                    (Some(a), Some(b)) if b.0 > 0.0 => format!("{:.2}", a.0 / b.0),
                    _ => "–".into(),
                };
                let _ = write!(m, " {r} |");
            }
            m.push('\n');
        }
        if !self.status.is_empty() {
            let mut why: BTreeMap<(String, &str, String), BTreeSet<usize>> = BTreeMap::new();
            for s in &self.status {
                why.entry((s.imp.clone(), s.state.name(), s.message.clone()))
                    .or_default()
                    .insert(s.size);
            }
            m.push_str("\nNot measured (no value is invented for these):\n\n| run | state | sizes | reason |\n|---|---|---|---|\n");
            for ((imp, st, msg), sizes) in why {
                let sizes: Vec<String> = sizes.iter().map(usize::to_string).collect();
                let _ = writeln!(
                    m,
                    "| {imp} | {st} | {} | {} |",
                    sizes.join(", "),
                    msg.replace('|', "\\|")
                );
            }
        }
        if !self.mbs.is_empty() {
            let _ = writeln!(m, "\n![{name}]({name}.png)");
        }
        m
    }

    /// The chart's lines: (title, column in the data) and the data: x, then the mean MB/s of
    /// each line (NaN when missing). bw/flex: x the chunk size, a line per (kind, pipe
    /// size); grep: x the pipe size, a line per kind.
    pub fn data(&self) -> (Vec<Line>, String) {
        let grep = self.test == Test::Grep;
        let mut lines: Vec<(String, u64)> = Vec::new();
        let mut xs: BTreeSet<u64> = BTreeSet::new();
        for (k, ps, s) in self.mbs.keys() {
            // grep's x axis is the pipe size: runs at the default size (the shell's own
            // pipe) are in the table only.
            if grep && *ps == 0 {
                continue;
            }
            let line = (k.clone(), if grep { 0 } else { *ps });
            if !lines.contains(&line) {
                lines.push(line);
            }
            xs.insert(if grep { *ps } else { *s as u64 });
        }
        lines.sort_by_key(|(k, ps)| (k != "linux", k.clone(), *ps));
        let sizes: Vec<u64> = lines
            .iter()
            .map(|l| l.1)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let titles: Vec<Line> = lines
            .iter()
            .map(|(k, ps)| Line {
                title: if grep {
                    k.clone()
                } else {
                    format!("{k} pipe {}", ps_text(*ps))
                },
                // One colour per pipe size, solid for Linux, dashed for the others.
                color: if grep {
                    if k == "linux" {
                        1
                    } else {
                        2
                    }
                } else {
                    sizes.iter().position(|s| s == ps).unwrap_or(0) + 1
                },
                dashed: k != "linux",
            })
            .collect();
        let mut d = String::from("# x");
        for t in &titles {
            let _ = write!(d, " {}", t.title.replace(' ', "_"));
        }
        d.push('\n');
        for x in xs.into_iter().filter(|&x| x > 0) {
            let _ = write!(d, "{x}");
            for (k, ps) in &lines {
                let v = if grep {
                    self.get(k, x, x as usize)
                } else {
                    self.get(k, *ps, x as usize)
                };
                match v {
                    Some((mean, ..)) => {
                        let _ = write!(d, " {mean}");
                    }
                    None => d.push_str(" NaN"),
                }
            }
            d.push('\n');
        }
        (titles, d)
    }

    /// The gnuplot script drawing `NAME.png` from `NAME.dat`.
    pub fn script(&self, titles: &[Line]) -> String {
        let (title, name, _) = self.title();
        let xlabel = if self.test == Test::Grep {
            "pipe size (bytes)"
        } else {
            "chunk size (bytes)"
        };
        let parts: Vec<String> = titles
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "\"{name}.dat\" using 1:{} with linespoints lc {} dt {} title \"{}\"",
                    i + 2,
                    t.color,
                    if t.dashed { 2 } else { 1 },
                    t.title.replace('"', "'")
                )
            })
            .collect();
        format!(
            "set terminal pngcairo noenhanced size 900,600\nset output \"{name}.png\"\n\
             set title \"{}\"\nset xlabel \"{xlabel}\"\nset ylabel \"MB/s (10^6 bytes/s)\"\n\
             set grid\nset key outside right\nset logscale x 2\nset yrange [0:*]\nplot {}\n",
            title.replace('"', "'"),
            parts.join(", \\\n     ")
        )
    }

    /// The chart's file name stem.
    pub fn name(&self) -> &'static str {
        self.title().1
    }
}
