//! perftest(8) for rstreams: `perftest [options]`, `perftest sweep ...`, `perftest report ...`.
//! See docs/perftest.md.

use perftest::csv::{read_file_with_status, Row, Status, HEADER};
use perftest::opts::{self, Cmd};
use perftest::{report, run, sweep};
use std::path::PathBuf;
use std::process::exit;

fn fail(msg: &str, code: i32) -> ! {
    eprintln!("perftest: {msg}");
    exit(code)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("sweep") => {
            let s = sweep::parse(&args[1..]).unwrap_or_else(|e| fail(&e, 2));
            match sweep::sweep(&s, &mut |l| eprintln!("{l}")) {
                Ok(rows) => eprintln!(
                    "perftest sweep: {} rows written to {}",
                    rows.len(),
                    s.out.display()
                ),
                Err(e) => fail(&e, 1),
            }
        }
        Some("report") => {
            let (mut files, mut out, mut base) = (Vec::new(), None, "linux".to_string());
            let mut preamble = None;
            let mut it = args[1..].iter();
            while let Some(a) = it.next() {
                match a.as_str() {
                    "--out" | "-o" => out = it.next().map(PathBuf::from),
                    "--baseline" => {
                        base = it
                            .next()
                            .cloned()
                            .unwrap_or_else(|| fail("--baseline needs a value", 2))
                    }
                    "--preamble" => {
                        preamble = Some(PathBuf::from(
                            it.next()
                                .unwrap_or_else(|| fail("--preamble needs a file", 2)),
                        ))
                    }
                    x if x.starts_with("--preamble=") => preamble = Some(PathBuf::from(&x[11..])),
                    x if x.starts_with("--out=") => out = Some(PathBuf::from(&x[6..])),
                    x if x.starts_with("--baseline=") => base = x[11..].to_string(),
                    x if x.starts_with('-') => fail(&format!("unknown report option {x}"), 2),
                    x => files.push(PathBuf::from(x)),
                }
            }
            let out = out.unwrap_or_else(|| fail("report: --out DIR is required", 2));
            if files.is_empty() {
                fail("report: no CSV files given", 2);
            }
            let (mut rows, mut status): (Vec<Row>, Vec<Status>) = (Vec::new(), Vec::new());
            for f in &files {
                let (r, s) = read_file_with_status(f).unwrap_or_else(|e| fail(&e, 1));
                rows.extend(r);
                status.extend(s);
            }
            let preamble = preamble
                .map(|p| {
                    std::fs::read_to_string(&p)
                        .unwrap_or_else(|e| fail(&format!("{}: {e}", p.display()), 1))
                })
                .unwrap_or_default();
            match report::write_report_with(&rows, &status, &out, &base, &preamble) {
                Ok(pngs) => eprintln!(
                    "perftest report: report.md and {} charts in {}",
                    pngs.len(),
                    out.display()
                ),
                Err(e) => fail(&e, 1),
            }
        }
        _ => match opts::parse(&args) {
            Err(e) => {
                eprintln!("perftest: {e}\n{}", opts::USAGE);
                exit(2)
            }
            Ok(Cmd::Help) => print!("{}\n{}", opts::USAGE, sweep::SWEEP_USAGE),
            Ok(Cmd::Version) => println!("perftest (rstreams) {}", env!("CARGO_PKG_VERSION")),
            Ok(Cmd::Run(o)) => {
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
                let out = run::run(&o, &mut |w| eprintln!("perftest: {w}"))
                    .unwrap_or_else(|e| fail(&e, 1));
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
        },
    }
}
