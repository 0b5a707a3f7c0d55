//! perftest(8) for rstreams: `perftest [options]`, `perftest sweep ...`, `perftest report ...`.
//! See docs/perftest.md.

use clap::FromArgMatches;
use perftest::cli::{self, Perftest, Sub};
use perftest::csv::{read_file_with_status, Row, Status, HEADER};
use perftest::opts::Opts;
use perftest::workload::Workload;
use perftest::{report, run, sweep};
use std::process::exit;

fn fail(msg: &str, code: i32) -> ! {
    eprintln!("perftest: {msg}");
    exit(code)
}

fn main() {
    // clap prints help and version (exit 0) and usage errors (exit 2) itself.
    let m = cli::perftest().get_matches();
    let usage = |e: String| -> ! {
        eprintln!("perftest: {e}");
        exit(2)
    };
    let args = Perftest::from_arg_matches(&m).unwrap_or_else(|e| e.exit());
    match (&args.sub, m.subcommand()) {
        (Some(Sub::Sweep(a)), Some((_, sm))) => {
            let s = a.resolve(sm).unwrap_or_else(|e| usage(e));
            match sweep::sweep(&s, &mut |l| eprintln!("{l}")) {
                Ok(rows) => eprintln!(
                    "perftest sweep: {} rows written to {}",
                    rows.len(),
                    s.out.display()
                ),
                Err(e) => fail(&e, 1),
            }
        }
        (Some(Sub::Report(r)), _) => {
            let (mut rows, mut status): (Vec<Row>, Vec<Status>) = (Vec::new(), Vec::new());
            for f in &r.files {
                let (rs, st) = read_file_with_status(f).unwrap_or_else(|e| fail(&e, 1));
                rows.extend(rs);
                status.extend(st);
            }
            let preamble = r
                .preamble
                .as_ref()
                .map(|p| {
                    std::fs::read_to_string(p)
                        .unwrap_or_else(|e| fail(&format!("{}: {e}", p.display()), 1))
                })
                .unwrap_or_default();
            match report::write_report_with(&rows, &status, &r.out, &r.baseline, &preamble) {
                Ok(pngs) => eprintln!(
                    "perftest report: report.md and {} charts in {}",
                    pngs.len(),
                    r.out.display()
                ),
                Err(e) => fail(&e, 1),
            }
        }
        _ => {
            let mut o = Opts::default();
            args.run.apply(&mut o, &m).unwrap_or_else(|e| usage(e));
            run_one(&o);
        }
    }
}

/// One measurement: banner, the run, summary and CSV line.
fn run_one(o: &Opts) {
    if let Some(fd) = o.isastream {
        // The probe of `--workload=grep --shell`: is this descriptor a Stream?
        println!("{}", i32::from(streams::ffi::isastream(fd) == 1));
        return;
    }
    if let Some(w) = o.workload {
        return run_workload(o, w);
    }
    if let Some(kind) = o.udp {
        return run_udp(o, kind);
    }
    // Fail before the banner when the channel cannot exist here (no modules).
    if let Err(e) = run::open_channel(o.kind) {
        fail(&e, 1);
    }
    if o.verbose > 0 {
        println!("\nSTREAMS Benchmark Performance Tests on a Pipe\n");
        println!(
            "{}: {}, size {}, interval {} s x {}{}",
            o.kind,
            if o.putmsg {
                "putmsg/getmsg"
            } else {
                "write/read"
            },
            o.size,
            o.time,
            o.iterations,
            o.count.map(|c| format!(", count {c}")).unwrap_or_default()
        );
    }
    let out = run::run(o, &mut |w| eprintln!("perftest: {w}")).unwrap_or_else(|e| fail(&e, 1));
    let row = Row::from_outcome(&o.impl_label(), o.size, &out);
    if o.verbose > 0 {
        println!(
            "{} size {}: {} writes in {:.3} s: {:.0} writes/s, {:.0} bytes/s, delay {:.3e} s/write; {} reads, {} bytes read",
            row.imp, row.size, row.writes, row.seconds, row.writes_per_sec, row.bytes_per_sec, row.delay_sec, row.reads, row.read_bytes
        );
    }
    if o.csv {
        if o.verbose > 1 {
            println!("{HEADER}");
        }
        println!("{}", row.to_line());
    }
}

/// One run of another workload (`--workload NAME`): banner, the run, summary and CSV line.
fn run_workload(o: &Opts, w: Workload) {
    if w.uses_channel() {
        if let Err(e) = run::open_channel(o.kind) {
            fail(&e, 1);
        }
    }
    if o.verbose > 0 {
        println!("\nSTREAMS Benchmark Performance Tests: workload {w}\n");
        println!(
            "{}: {}",
            o.impl_label(),
            match w {
                Workload::Syscall =>
                    format!("getppid(2) for {} s", o.time * f64::from(o.iterations)),
                Workload::Devnull => format!(
                    "write(2) of {} bytes to /dev/null for {} s",
                    o.size,
                    o.time * f64::from(o.iterations)
                ),
                Workload::Bw => format!("{} bytes in {}-byte chunks", o.total, o.size),
                Workload::Grep => format!(
                    "cat {} ({} MiB) | grep -F {:?}",
                    o.file.display(),
                    o.file_mb,
                    o.pattern
                ),
                Workload::Flex => format!(
                    "{} children over {} pipes, {}-byte chunks, {} us compute per read, {} s",
                    o.children,
                    o.children / 2,
                    o.size,
                    o.compute_us,
                    o.time * f64::from(o.iterations)
                ),
            }
        );
    }
    let row = w
        .run(o, &mut |m| eprintln!("perftest: {m}"))
        .unwrap_or_else(|e| fail(&e, 1));
    if o.verbose > 0 {
        match w {
            Workload::Syscall | Workload::Devnull => println!(
                "{}: {} calls in {:.3} s: {:.0} calls/s, {:.1} ns/call",
                row.imp,
                row.writes,
                row.seconds,
                row.writes_per_sec,
                row.delay_sec * 1e9
            ),
            _ => println!(
                "{} size {}: {:.3} s: {:.2} MB/s (10^6 bytes); {} writes, {} reads, {} bytes read",
                row.imp,
                row.size,
                row.seconds,
                row.bytes_per_sec / 1e6,
                row.writes,
                row.reads,
                row.read_bytes
            ),
        }
    }
    if o.csv {
        if o.verbose > 1 {
            println!("{HEADER}");
        }
        println!("{}", row.to_line());
    }
}

/// One UDP measurement (`--udp KIND`): banner, the run, summary and CSV line.
fn run_udp(o: &Opts, kind: perftest::udp::UdpKind) {
    // Fail before the banner when the implementation cannot exist here.
    if let Err(e) = perftest::udp::check(kind) {
        fail(&e, 1);
    }
    if o.verbose > 0 {
        println!("\nSTREAMS Benchmark Performance Tests on UDP\n");
        println!(
            "{}: 127.0.0.1, size {}, buffers {}, interval {} s x {}{}",
            o.impl_label(),
            o.size,
            o.bufsize,
            o.time,
            o.iterations,
            o.count.map(|c| format!(", count {c}")).unwrap_or_default()
        );
    }
    let t = perftest::udp::run(o, kind, &mut |w| eprintln!("perftest: {w}"))
        .unwrap_or_else(|e| fail(&e, 1));
    let row = Row::from_outcome(&o.impl_label(), o.size, &t.outcome);
    if o.verbose > 0 {
        println!(
            "{} size {}: {} sent in {:.3} s: {:.0} msgs/s sent, {:.0} msgs/s received, {:.0} bytes/s received; {} received, {} lost, {} reordered, {} send errors, {} receive errors",
            row.imp,
            row.size,
            row.writes,
            row.seconds,
            row.writes_per_sec,
            row.reads_per_sec,
            row.reads_per_sec * row.size as f64,
            row.reads,
            row.lost.unwrap_or(0),
            row.reordered.map_or("?".to_string(), |r| r.to_string()),
            t.send_errors,
            t.recv_errors
        );
    }
    if o.csv {
        if o.verbose > 1 {
            println!("{HEADER}");
        }
        println!("{}", row.to_line());
    }
}
