//! The machine-readable result: one CSV line per measurement, same columns for `perftest
//! --csv` and `perftest sweep`. f64 fields are written with Rust's shortest round-trip form.
//!
//! A run that produced no number is recorded as a status comment,
//! `#status,IMPL,SIZE,REP,STATE,MESSAGE` (STATE `unavailable`, `failed` or `not-run`), so the
//! report can say why a cell is empty instead of leaving a gap — and tools that only want
//! measurements skip it like any other `#` comment.

use crate::run::Outcome;

/// The header line.
pub const HEADER: &str =
    "impl,size,seconds,writes,writes_per_sec,bytes_per_sec,delay_sec,reads,read_bytes";

/// One measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Implementation label (`linux`, `streams`, `streams-putmsg+H`, …).
    pub imp: String,
    /// Write size.
    pub size: usize,
    /// Writer's running time.
    pub seconds: f64,
    /// Messages written.
    pub writes: u64,
    /// writes / seconds.
    pub writes_per_sec: f64,
    /// writes_per_sec × size.
    pub bytes_per_sec: f64,
    /// 1 / writes_per_sec.
    pub delay_sec: f64,
    /// Reads that returned data.
    pub reads: u64,
    /// Bytes read.
    pub read_bytes: u64,
}

impl Row {
    /// The row of a measurement.
    pub fn from_outcome(imp: &str, size: usize, o: &Outcome) -> Row {
        let rate = o.rate();
        Row {
            imp: imp.to_string(),
            size,
            seconds: o.write_secs,
            writes: o.writes,
            writes_per_sec: rate,
            bytes_per_sec: rate * size as f64,
            delay_sec: if rate > 0.0 { 1.0 / rate } else { 0.0 },
            reads: o.reads,
            read_bytes: o.read_bytes,
        }
    }

    /// The CSV line (no newline).
    pub fn to_line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{}",
            self.imp,
            self.size,
            self.seconds,
            self.writes,
            self.writes_per_sec,
            self.bytes_per_sec,
            self.delay_sec,
            self.reads,
            self.read_bytes
        )
    }

    /// Parse a CSV line.
    pub fn parse(line: &str) -> Result<Row, String> {
        let f: Vec<&str> = line.trim().split(',').collect();
        if f.len() != 9 {
            return Err(format!("expected 9 fields, got {}: {line:?}", f.len()));
        }
        let bad = |i: usize| format!("bad field {} ({:?}) in {line:?}", i + 1, f[i]);
        Ok(Row {
            imp: f[0].to_string(),
            size: f[1].parse().map_err(|_| bad(1))?,
            seconds: f[2].parse().map_err(|_| bad(2))?,
            writes: f[3].parse().map_err(|_| bad(3))?,
            writes_per_sec: f[4].parse().map_err(|_| bad(4))?,
            bytes_per_sec: f[5].parse().map_err(|_| bad(5))?,
            delay_sec: f[6].parse().map_err(|_| bad(6))?,
            reads: f[7].parse().map_err(|_| bad(7))?,
            read_bytes: f[8].parse().map_err(|_| bad(8))?,
        })
    }
}

/// Why a run has no measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum State {
    /// The implementation cannot run on this system (e.g. no STREAMS pipe device).
    Unavailable,
    /// The run started and failed (perftest error, child died).
    Failed,
    /// The run never started (the guest crashed or timed out before it).
    NotRun,
}

impl State {
    /// The name used in the CSV and the report.
    pub fn name(self) -> &'static str {
        match self {
            State::Unavailable => "unavailable",
            State::Failed => "failed",
            State::NotRun => "not-run",
        }
    }

    /// Parse a state name.
    pub fn parse(s: &str) -> Option<State> {
        match s {
            "unavailable" => Some(State::Unavailable),
            "failed" => Some(State::Failed),
            "not-run" => Some(State::NotRun),
            _ => None,
        }
    }
}

/// Prefix of a status comment line.
pub const STATUS_PREFIX: &str = "#status,";

/// A run without a measurement, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Status {
    /// Implementation label.
    pub imp: String,
    /// Write size.
    pub size: usize,
    /// Repetition (1-based; 0 = every repetition).
    pub rep: u32,
    /// What happened.
    pub state: State,
    /// The reason (perftest's error message); commas allowed, newlines replaced.
    pub message: String,
}

impl Status {
    /// The comment line (no newline).
    pub fn to_line(&self) -> String {
        format!(
            "{STATUS_PREFIX}{},{},{},{},{}",
            self.imp,
            self.size,
            self.rep,
            self.state.name(),
            self.message.replace(['\n', '\r'], " ")
        )
    }

    /// Parse a `#status,...` line.
    pub fn parse(line: &str) -> Result<Status, String> {
        let body = line
            .trim()
            .strip_prefix(STATUS_PREFIX)
            .ok_or_else(|| format!("not a status line: {line:?}"))?;
        let f: Vec<&str> = body.splitn(5, ',').collect();
        if f.len() != 5 {
            return Err(format!("expected 6 fields in status line {line:?}"));
        }
        let bad = |what: &str| format!("bad {what} in status line {line:?}");
        Ok(Status {
            imp: f[0].to_string(),
            size: f[1].parse().map_err(|_| bad("size"))?,
            rep: f[2].parse().map_err(|_| bad("repetition"))?,
            state: State::parse(f[3]).ok_or_else(|| bad("state"))?,
            message: f[4].to_string(),
        })
    }
}

/// The status lines of CSV text (other lines are ignored).
pub fn parse_status(text: &str) -> Result<Vec<Status>, String> {
    text.lines()
        .filter(|l| l.trim_start().starts_with(STATUS_PREFIX))
        .map(Status::parse)
        .collect()
}

/// Parse CSV text: header lines, blank lines and `#` comments are skipped.
pub fn parse_text(text: &str) -> Result<Vec<Row>, String> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("impl,"))
        .map(Row::parse)
        .collect()
}

/// Read a CSV file.
pub fn read_file(path: &std::path::Path) -> Result<Vec<Row>, String> {
    read_file_with_status(path).map(|(rows, _)| rows)
}

/// Read a CSV file: measurements and status lines.
pub fn read_file_with_status(path: &std::path::Path) -> Result<(Vec<Row>, Vec<Status>), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let err = |e: String| format!("{}: {e}", path.display());
    Ok((
        parse_text(&text).map_err(err)?,
        parse_status(&text).map_err(err)?,
    ))
}
