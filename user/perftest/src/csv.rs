//! The machine-readable result: one CSV line per measurement, same columns for `perftest
//! --csv` and `perftest sweep`. f64 fields are written with Rust's shortest round-trip form.

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
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    parse_text(&text).map_err(|e| format!("{}: {e}", path.display()))
}
