//! The machine-readable result: one CSV line per measurement, same columns for `perftest
//! --csv`, `perftest sweep` and `cargo xtask bench`, written and read with the `csv` crate
//! (serde); f64 fields in the shortest form that reads back exactly (`1.0`, `7.16e-7`).
//! The pipe test and the UDP test share the columns: the UDP test's sent messages are the
//! writes, its received datagrams the reads, and it fills the three columns added for it
//! (`reads_per_sec`, `lost`, `reordered`; see [`HEADER`]), which older nine-column lines
//! lack and pipe rows leave empty (`lost`, `reordered`).
//!
//! A run that produced no number is recorded as a status comment,
//! `#status,IMPL,SIZE,REP,STATE,MESSAGE` (STATE `unavailable`, `failed` or `not-run`; the
//! fields after the prefix are a CSV record, MESSAGE quoted when it holds a comma), so the
//! report can say why a cell is empty instead of leaving a gap — and tools that only want
//! measurements skip it like any other `#` comment. Lines written before the quoting (a bare
//! MESSAGE with commas) still read back.
//!
//! [`to_json`] gives the same results as JSON (serde_json) for `results.json`.

use crate::run::Outcome;
use serde::{Deserialize, Serialize};

/// The header line.
pub const HEADER: &str = "impl,size,seconds,writes,writes_per_sec,bytes_per_sec,delay_sec,reads,read_bytes,reads_per_sec,lost,reordered";

/// Columns of a line written before the UDP test (the first nine of [`HEADER`]); such lines
/// still read, with `reads_per_sec` computed and `lost`/`reordered` empty.
pub const OLD_COLUMNS: usize = 9;
/// Columns of a line now.
pub const COLUMNS: usize = 12;

/// One measurement; its fields in order are the CSV columns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// Implementation label (`linux`, `streams`, `streams-putmsg+H`, …).
    #[serde(rename = "impl")]
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
    /// reads / seconds: for UDP the datagrams received over the test time (the LfS UDP
    /// paper's received rate); for pipes read calls over the writer's time.
    #[serde(default)]
    pub reads_per_sec: f64,
    /// UDP: datagrams sent and never received; empty for pipes.
    #[serde(default)]
    pub lost: Option<u64>,
    /// UDP with size ≥ 4: datagrams that arrived after a later one (from the sequence
    /// numbers); empty otherwise.
    #[serde(default)]
    pub reordered: Option<u64>,
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
            reads_per_sec: o.read_rate(),
            lost: o.lost,
            reordered: o.reordered,
        }
    }

    /// A record of 9 (older files) or 12 fields.
    fn from_record(rec: &csv::StringRecord) -> Result<Row, String> {
        if rec.len() != OLD_COLUMNS && rec.len() != COLUMNS {
            return Err(format!(
                "expected {OLD_COLUMNS} or {COLUMNS} fields, got {}: {rec:?}",
                rec.len()
            ));
        }
        let mut r: Row = rec.deserialize(None).map_err(|e| format!("{e}: {rec:?}"))?;
        if rec.len() == OLD_COLUMNS && r.seconds > 0.0 {
            r.reads_per_sec = r.reads as f64 / r.seconds;
        }
        Ok(r)
    }

    /// A UDP measurement (`lost` is counted only by the UDP test).
    pub fn is_udp(&self) -> bool {
        self.lost.is_some()
    }

    /// The CSV line (no newline).
    pub fn to_line(&self) -> String {
        record_line(self)
    }

    /// Parse a CSV line.
    pub fn parse(line: &str) -> Result<Row, String> {
        let rec = one_record(line, true)?;
        Row::from_record(&rec).map_err(|e| format!("{e} in {line:?}"))
    }
}

/// A CSV reader of headerless records, trimmed if `trim`; `#` lines are comments.
fn reader<R: std::io::Read>(r: R, trim: bool) -> csv::Reader<R> {
    csv::ReaderBuilder::new()
        .has_headers(false)
        .flexible(true)
        .trim(if trim {
            csv::Trim::All
        } else {
            csv::Trim::None
        })
        .comment(Some(b'#'))
        .from_reader(r)
}

/// The only record of `line` (its fields trimmed if `trim`).
fn one_record(line: &str, trim: bool) -> Result<csv::StringRecord, String> {
    let mut records = reader(line.trim().as_bytes(), trim).into_records();
    match (records.next(), records.next()) {
        (Some(Ok(rec)), None) => Ok(rec),
        (Some(Err(e)), _) => Err(format!("{e} in {line:?}")),
        _ => Err(format!("not one CSV record: {line:?}")),
    }
}

/// `value` as one CSV record (no newline).
fn record_line<T: Serialize>(value: &T) -> String {
    let mut w = csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(Vec::new());
    // Serializing plain strings and numbers into memory cannot fail.
    let serialized = w.serialize(value).is_ok();
    let bytes = match w.into_inner() {
        Ok(b) if serialized => b,
        _ => unreachable!("a CSV record of strings and numbers always serializes"),
    };
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

/// Why a run has no measurement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
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

/// A run without a measurement, and why; its fields in order follow `#status,`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Status {
    /// Implementation label.
    #[serde(rename = "impl")]
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
        let flat = Status {
            message: self.message.replace(['\n', '\r'], " "),
            ..self.clone()
        };
        format!("{STATUS_PREFIX}{}", record_line(&flat))
    }

    /// Parse a `#status,...` line.
    pub fn parse(line: &str) -> Result<Status, String> {
        let body = line
            .trim()
            .strip_prefix(STATUS_PREFIX)
            .ok_or_else(|| format!("not a status line: {line:?}"))?;
        // Untrimmed: an old unquoted MESSAGE keeps the spaces after its commas.
        let rec = one_record(body, false)?;
        if rec.len() < 5 {
            return Err(format!("expected 6 fields in status line {line:?}"));
        }
        // An unquoted MESSAGE with commas (older files) is the rest of the line.
        let message = rec.iter().skip(4).collect::<Vec<_>>().join(",");
        let mut fields: Vec<&str> = rec.iter().take(4).collect();
        fields.push(&message);
        csv::StringRecord::from(fields)
            .deserialize(None)
            .map_err(|e| format!("bad status line {line:?}: {e}"))
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
    let mut rows = Vec::new();
    for rec in reader(text.as_bytes(), true).into_records() {
        let rec = rec.map_err(|e| e.to_string())?;
        if rec.get(0) == Some("impl") {
            continue;
        }
        rows.push(Row::from_record(&rec)?);
    }
    Ok(rows)
}

/// A whole CSV file: the header, the measurements, then the status lines.
pub fn to_text(rows: &[Row], status: &[Status]) -> String {
    let mut t = format!("{HEADER}\n");
    for line in rows
        .iter()
        .map(Row::to_line)
        .chain(status.iter().map(Status::to_line))
    {
        t.push_str(&line);
        t.push('\n');
    }
    t
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

/// The same results as JSON: `{"measurements": [{impl, size, ...}], "not_measured": [{impl,
/// size, rep, state, message}]}` (the CSV's columns, by name; a non-finite number is `null`).
pub fn to_json(rows: &[Row], status: &[Status]) -> String {
    #[derive(Serialize)]
    struct Results<'a> {
        measurements: &'a [Row],
        not_measured: &'a [Status],
    }
    let r = Results {
        measurements: rows,
        not_measured: status,
    };
    // Serializing plain strings and numbers into memory cannot fail.
    serde_json::to_string_pretty(&r).unwrap_or_default() + "\n"
}
