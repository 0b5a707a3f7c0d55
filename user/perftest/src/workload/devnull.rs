//! The write floor: write(2) of `-s` bytes to /dev/null in a loop for `-t` × `-i` seconds in
//! one process. /dev/null's write returns at once, so a row is the kernel's own share of every
//! write(2) (entry, fdget, vfs_write, the indirect call, exit): what no Stream head can go
//! below. `writes` in its row are calls, `delay_sec` the cost of one; the report sets it next
//! to the system call floor.

use super::Workload;
use crate::csv::Row;
use crate::opts::Opts;
use std::fs::OpenOptions;
use std::io::Write;
use std::time::Instant;

/// Writes between two looks at the clock.
const BATCH: u64 = 1024;

/// Run it.
pub fn run(o: &Opts) -> Result<Row, String> {
    let mut null = OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("/dev/null: {e}"))?;
    let buf = vec![0u8; o.size];
    let secs = o.time * f64::from(o.iterations);
    let (calls, elapsed) = write_loop(&mut null, &buf, secs)?;
    Ok(super::row(
        Workload::Devnull,
        o,
        calls,
        (calls as f64) * (o.size as f64),
        elapsed,
        0,
        0,
    ))
}

/// `write(2)` `buf` to `w` in batches of [`BATCH`] until `secs` have passed: (calls, seconds).
/// `File::write` is one write(2) each, with no buffering in between.
fn write_loop(w: &mut impl Write, buf: &[u8], secs: f64) -> Result<(u64, f64), String> {
    let mut calls = 0u64;
    let start = Instant::now();
    loop {
        for _ in 0..BATCH {
            let n = w.write(buf).map_err(|e| format!("write(/dev/null): {e}"))?;
            std::hint::black_box(n);
        }
        calls += BATCH;
        let e = start.elapsed().as_secs_f64();
        if e >= secs {
            return Ok((calls, e));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that counts its calls and the bytes they carried.
    #[derive(Default)]
    struct Count {
        calls: u64,
        bytes: u64,
    }

    impl Write for Count {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.calls += 1;
            self.bytes += b.len() as u64;
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn the_loop_counts_every_write_it_makes() {
        let mut c = Count::default();
        let (calls, secs) = write_loop(&mut c, &[7u8; 3], 0.0).unwrap();
        // One batch at least, each call counted once with its bytes.
        assert_eq!(calls, BATCH);
        assert_eq!(c.calls, calls);
        assert_eq!(c.bytes, 3 * calls);
        assert!(secs >= 0.0);
    }

    #[test]
    fn a_failing_write_fails_the_run() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::from_raw_os_error(libc::EIO))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        assert!(write_loop(&mut Broken, &[0], 1.0).is_err());
    }

    #[test]
    fn a_row_writes_to_dev_null_and_reports_size_bytes_per_call() {
        let args: Vec<String> = ["--workload=devnull", "-s", "8", "-t", "0.001", "-i", "1"]
            .iter()
            .map(|a| a.to_string())
            .collect();
        let Ok(crate::opts::Cmd::Run(o)) = crate::opts::parse(&args) else {
            panic!("--workload=devnull -s 8 does not parse");
        };
        assert_eq!(o.workload, Some(Workload::Devnull));
        let r = run(&o).unwrap();
        assert_eq!(r.imp, "devnull");
        assert_eq!(r.size, 8);
        assert!(r.writes >= BATCH);
        assert_eq!(r.bytes_per_sec, r.writes_per_sec * 8.0);
    }
}
