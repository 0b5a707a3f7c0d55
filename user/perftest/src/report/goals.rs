//! The report's "Goals" section: the project's performance goals (issue 12) against the
//! measured ratios, so a run says at a glance which are met.
//!
//! | goal | numerator / denominator | target |
//! |---|---|---|
//! | write hold | `streams+H+w+F+M` / `linux` | ≥ 2.0 at 1–64 bytes, ≥ 1.0 at every size to 8192 |
//! | plain | `streams` / `linux` | ≥ 1.0 at every size |
//! | putmsg | `streams-putmsg` / `seqpacket` | ≥ 1.0 at every size |
//! | floor | `streams+H+w+F+M` at 1 byte / `syscall` | ≥ 0.4 |
//!
//! A ratio is the ratio of the means of the repetitions; its range pairs the repetitions
//! worst to best (min/max to max/min). A goal is met when every size it covers that the run
//! has (measured, or planned and not measured) was measured and meets the target.

use super::Summary;
use std::fmt::Write as _;

/// What a goal divides by what, and the target at a size (None: the size is not covered).
struct Goal {
    name: &'static str,
    num: &'static str,
    den: &'static str,
    target: fn(usize) -> Option<f64>,
    target_text: &'static str,
}

const HOLD: &str = "streams+H+w+F+M";

const GOALS: &[Goal] = &[
    Goal {
        name: "write hold (2008 options) vs Linux pipe",
        num: HOLD,
        den: "linux",
        target: |s| match s {
            1..=64 => Some(2.0),
            65..=8192 => Some(1.0),
            _ => None,
        },
        target_text: "≥ 2.0x at 1–64 bytes, ≥ 1.0x at every size to 8192",
    },
    Goal {
        name: "plain write/read vs Linux pipe",
        num: "streams",
        den: "linux",
        target: |_| Some(1.0),
        target_text: "≥ 1.0x at every size",
    },
    Goal {
        name: "putmsg/getmsg vs SOCK_SEQPACKET",
        num: "streams-putmsg",
        den: "seqpacket",
        target: |_| Some(1.0),
        target_text: "≥ 1.0x at every size",
    },
];

/// The floor goal's target: 1-byte writes with hold at this fraction of getppid(2)'s rate.
const FLOOR_TARGET: f64 = 0.4;

/// A measured ratio: of the means, and its worst–best range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Ratio {
    /// mean(num) / mean(den).
    pub mean: f64,
    /// min(num) / max(den).
    pub low: f64,
    /// max(num) / min(den).
    pub high: f64,
}

impl Ratio {
    fn text(&self, n: usize) -> String {
        if n > 1 {
            format!("{:.2} [{:.2}–{:.2}]", self.mean, self.low, self.high)
        } else {
            format!("{:.2}", self.mean)
        }
    }
}

/// `num` at `ns` in `a` over `den` at `ds` in `b`, with the smaller repetition count.
fn ratio(
    a: &Summary,
    num: &str,
    ns: usize,
    b: &Summary,
    den: &str,
    ds: usize,
) -> Option<(Ratio, usize)> {
    let (x, y) = (a.stat(num, ns)?, b.stat(den, ds)?);
    (y.mean > 0.0 && y.min > 0.0).then(|| {
        (
            Ratio {
                mean: x.mean / y.mean,
                low: x.min / y.max,
                high: x.max / y.min,
            },
            x.n.min(y.n),
        )
    })
}

fn verdict(met: usize, failed: usize, covered: usize) -> &'static str {
    if failed > 0 {
        "**not met**"
    } else if met == 0 {
        "not measured"
    } else if met < covered {
        "met where measured (incomplete)"
    } else {
        "met"
    }
}

/// The line of a floor (`imp` at `size` in `floors`, `what` it measures, per `unit`): its
/// rate, the cost of one, and the 1-byte writes as a fraction of it; nothing if not measured.
fn floor_line(
    m: &mut String,
    pipe: &Summary,
    floors: &Summary,
    (imp, size): (&str, usize),
    what: &str,
    unit: &str,
) {
    let Some(f) = floors.stat(imp, size) else {
        return;
    };
    let range = if f.n > 1 {
        format!(" [{:.0}–{:.0}]", f.min, f.max)
    } else {
        String::new()
    };
    let _ = write!(
        m,
        "\n{what}: {:.0} {unit}s/s{range}, {:.1} ns per {unit}.",
        f.mean,
        1e9 / f.mean
    );
    let ctx: Vec<String> = [HOLD, "streams", "linux"]
        .iter()
        .filter_map(|i| {
            ratio(pipe, i, 1, floors, imp, size).map(|(r, n)| format!("{i} {}", r.text(n)))
        })
        .collect();
    if !ctx.is_empty() {
        let _ = write!(m, " 1-byte writes as a fraction of it: {}.", ctx.join(", "));
    }
    m.push('\n');
}

/// The Goals section, or nothing when the run has none of the rows a goal needs.
pub fn section(pipe: &Summary, syscall: &Summary) -> String {
    let relevant = GOALS
        .iter()
        .any(|g| pipe.imps.iter().any(|i| i == g.num || i == g.den))
        || !syscall.imps.is_empty();
    if !relevant {
        return String::new();
    }
    let mut m = String::from(
        "## Goals\n\nThe project's performance goals against this run: ratios of the means of \
         the repetitions, in brackets the range pairing the repetitions worst to best \
         (min/max to max/min). A goal is met when every size it covers was measured and \
         meets the target.\n\n| goal | ratio | target | met at | worst (size) | verdict |\n\
         |---|---|---|---|---|---|\n",
    );
    let mut per_size: Vec<Vec<String>> = Vec::new();
    for g in GOALS {
        let covered: Vec<usize> = pipe
            .sizes
            .iter()
            .copied()
            .filter(|&s| (g.target)(s).is_some())
            .collect();
        let (mut met, mut failed, mut worst) = (0, 0, None::<(f64, usize)>);
        let mut cells = Vec::new();
        for &s in &covered {
            let t = (g.target)(s).unwrap_or(f64::INFINITY);
            match ratio(pipe, g.num, s, pipe, g.den, s) {
                Some((r, n)) => {
                    let ok = r.mean >= t;
                    if ok {
                        met += 1;
                    } else {
                        failed += 1;
                    }
                    if worst.is_none_or(|(w, _)| r.mean / t < w) {
                        worst = Some((r.mean / t, s));
                    }
                    cells.push(format!("{} {}", r.text(n), if ok { "yes" } else { "no" }));
                }
                None => cells.push(
                    pipe.state(g.num, s)
                        .or_else(|| pipe.state(g.den, s))
                        .map_or("–".into(), |st| st.name().to_string()),
                ),
            }
        }
        per_size.push(cells);
        let worst = worst.map_or("–".to_string(), |(_, s)| {
            ratio(pipe, g.num, s, pipe, g.den, s)
                .map_or("–".into(), |(r, _)| format!("{:.2} ({s})", r.mean))
        });
        let _ = writeln!(
            m,
            "| {} | {}/{} | {} | {met} of {} sizes | {worst} | {} |",
            g.name,
            g.num,
            g.den,
            g.target_text,
            covered.len(),
            verdict(met, failed, covered.len())
        );
    }
    let hold1 = ratio(pipe, HOLD, 1, syscall, "syscall", 0);
    let (cell, v) = match hold1 {
        Some((r, _)) if r.mean >= FLOOR_TARGET => (format!("{:.2}", r.mean), "met"),
        Some((r, _)) => (format!("{:.2}", r.mean), "**not met**"),
        None => ("–".to_string(), "not measured"),
    };
    let _ = writeln!(
        m,
        "| 1-byte writes with hold vs the system call floor | {HOLD} at 1 byte/syscall | ≥ {FLOOR_TARGET} | {} | {cell} | {v} |",
        if v == "met" { "1 of 1" } else if hold1.is_some() { "0 of 1" } else { "0 of 1 (not measured)" }
    );
    floor_line(
        &mut m,
        pipe,
        syscall,
        ("syscall", 0),
        "System call floor (`syscall`: getppid(2) in a loop)",
        "call",
    );
    floor_line(
        &mut m,
        pipe,
        syscall,
        ("devnull", 1),
        "Write floor W (`devnull`: 1-byte write(2) to /dev/null in a loop)",
        "write",
    );
    // Per size.
    m.push_str("\n### Goals per size\n\n| size |");
    for g in GOALS {
        let _ = write!(m, " {}/{} |", g.num, g.den);
    }
    m.push_str(" target of the first |\n|---:|");
    m.push_str(&"---|".repeat(GOALS.len() + 1));
    m.push('\n');
    for &s in &pipe.sizes {
        let _ = write!(m, "| {s} |");
        for (k, g) in GOALS.iter().enumerate() {
            let covered: Vec<usize> = pipe
                .sizes
                .iter()
                .copied()
                .filter(|&z| (g.target)(z).is_some())
                .collect();
            let cell = covered
                .iter()
                .position(|&z| z == s)
                .and_then(|i| per_size[k].get(i).cloned())
                .unwrap_or_else(|| "–".into());
            let _ = write!(m, " {cell} |");
        }
        let t = (GOALS[0].target)(s).map_or("–".to_string(), |t| format!("≥ {t:.1}"));
        let _ = writeln!(m, " {t} |");
    }
    m.push('\n');
    m
}
