//! CSV round trip and `perftest report` on a fixture: computed ratios, tables, four PNGs.

use perftest::csv::{parse_status, parse_text, Row, State, Status, HEADER};
use perftest::report::{write_report, write_report_with, Summary};
use perftest::run::Outcome;

fn row(imp: &str, size: usize, rate: f64) -> Row {
    Row::from_outcome(
        imp,
        size,
        &Outcome {
            writes: rate as u64,
            write_bytes: rate as u64 * size as u64,
            write_secs: 1.0,
            reads: 1,
            read_bytes: 1,
            read_secs: 1.0,
            ..Outcome::default()
        },
    )
}

fn fixture() -> Vec<Row> {
    vec![
        row("linux", 1, 100_000.0),
        row("linux", 1, 300_000.0),
        row("streams", 1, 400_000.0),
        row("streams", 1, 400_000.0),
        row("linux", 1024, 200_000.0),
        row("streams", 1024, 150_000.0),
        row("socketpair", 1024, 100_000.0),
    ]
}

#[test]
fn csv_round_trip() {
    let out = Outcome {
        writes: 123_457,
        write_bytes: 123_457 * 64,
        write_secs: 0.300_123,
        reads: 99,
        read_bytes: 123_457 * 64,
        read_secs: 0.31,
        ..Outcome::default()
    };
    let r = Row::from_outcome("streams-putmsg+H", 64, &out);
    assert_eq!(Row::parse(&r.to_line()).unwrap(), r);
    let text = format!(
        "{HEADER}\n# comment\n\n{}\n{}\n",
        r.to_line(),
        row("linux", 8, 5.0).to_line()
    );
    let rows = parse_text(&text).unwrap();
    assert_eq!(rows, vec![r.clone(), row("linux", 8, 5.0)]);
    assert!((r.writes_per_sec - 123_457.0 / 0.300_123).abs() < 1e-6);
    assert!((r.bytes_per_sec - r.writes_per_sec * 64.0).abs() < 1e-6);
    assert!(Row::parse("a,b").is_err());
    assert!(Row::parse("linux,x,1,1,1,1,1,1,1").is_err());
    // Lines written before the csv crate (Rust's Display for f64) read back the same.
    let old = "linux,64,0.300049781,418927,1396191.65394425,89356265.852432,0.0000007162340479367528,418927,26811328";
    let r = Row::parse(old).unwrap();
    assert_eq!(r.delay_sec, 0.0000007162340479367528);
    assert_eq!(Row::parse(&r.to_line()).unwrap(), r);
    // A whole file: header, rows, status lines; each parser finds its own.
    let st = Status {
        imp: "streams".into(),
        size: 8,
        rep: 0,
        state: State::Unavailable,
        message: "no device".into(),
    };
    let text = perftest::csv::to_text(std::slice::from_ref(&r), std::slice::from_ref(&st));
    assert!(text.starts_with(&format!("{HEADER}\n")), "{text}");
    assert_eq!(parse_text(&text).unwrap(), vec![r]);
    assert_eq!(parse_status(&text).unwrap(), vec![st]);
}

#[test]
fn summary_ratios() {
    let s = Summary::new(&fixture(), "linux");
    assert_eq!(s.imps, vec!["linux", "streams", "socketpair"]);
    assert_eq!(s.sizes, vec![1, 1024]);
    assert_eq!(s.rate("linux", 1), Some(200_000.0));
    let st = s.stat("linux", 1).unwrap();
    assert_eq!((st.min, st.max, st.n), (100_000.0, 300_000.0, 2));
    assert_eq!(s.ratio("streams", 1), Some(2.0));
    assert_eq!(s.ratio("streams", 1024), Some(0.75));
    assert_eq!(s.ratio("socketpair", 1024), Some(0.5));
    assert_eq!(s.ratio("socketpair", 1), None);
    let none = Summary::new(&fixture(), "nosuch");
    assert_eq!(none.baseline, None);
    assert_eq!(none.ratio("streams", 1), None);
}

#[test]
fn report_markdown_and_charts() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_fixture");
    let _ = std::fs::remove_dir_all(&dir);
    let res = write_report(&fixture(), &dir, "linux");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(
        md.contains("| size | linux | streams | socketpair | streams/linux | socketpair/linux |"),
        "{md}"
    );
    assert!(
        md.contains("| 1 | 200000 [100000–300000] | 400000 [400000–400000] | – | 2.00 | – |"),
        "{md}"
    );
    assert!(
        md.contains("| 1024 | 200000 | 150000 | 100000 | 0.75 | 0.50 |"),
        "{md}"
    );
    // Delay 1/rate in µs, throughput rate×size in MB/s, improvement (ratio-1)×100.
    assert!(md.contains("| 1 | 5.000 | 2.500 | – |"), "{md}");
    assert!(md.contains("| 1024 | 204.80 | 153.60 | 102.40 |"), "{md}");
    assert!(md.contains("| 1 | +100.0 | – |"), "{md}");
    assert!(md.contains("| 1024 | -25.0 | -50.0 |"), "{md}");
    let data = std::fs::read_to_string(dir.join("report.dat")).unwrap();
    assert!(data.contains("1 200000 400000 NaN\n"), "{data}");
    if std::process::Command::new("gnuplot")
        .arg("--version")
        .output()
        .is_err()
    {
        println!("SKIP PNG checks: gnuplot not installed (apt-get install gnuplot-nox)");
        assert!(res.is_err());
        return;
    }
    let pngs = res.unwrap();
    assert_eq!(pngs.len(), 4);
    for name in ["performance", "delay", "throughput", "improvement"] {
        let p = dir.join(format!("{name}.png"));
        let b = std::fs::read(&p).unwrap();
        assert!(b.len() > 2000, "{name}.png is {} bytes", b.len());
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "{name}.png signature");
    }
}

#[test]
fn report_cli() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_cli");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("in.csv");
    let text: String = std::iter::once(HEADER.to_string())
        .chain(fixture().iter().map(Row::to_line))
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(&csv, text).unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args([
            "report",
            csv.to_str().unwrap(),
            "--out",
            dir.join("r").to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let md = std::fs::read_to_string(dir.join("r/report.md")).unwrap();
    assert!(md.contains("streams/linux"));
    if std::process::Command::new("gnuplot")
        .arg("--version")
        .output()
        .is_ok()
    {
        assert!(out.status.success(), "{out:?}");
        assert!(dir.join("r/improvement.png").exists());
    }
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(["report", csv.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}

fn status(imp: &str, size: usize, rep: u32, state: State, msg: &str) -> Status {
    Status {
        imp: imp.into(),
        size,
        rep,
        state,
        message: msg.into(),
    }
}

#[test]
fn status_lines_round_trip_and_are_comments() {
    let s = status(
        "streams",
        64,
        2,
        State::Unavailable,
        "no STREAMS pipe device: /dev/streams/clone/pipe: No such file, or directory",
    );
    let line = s.to_line();
    // The message is a CSV field: quoted because of its comma.
    assert_eq!(
        line,
        "#status,streams,64,2,unavailable,\"no STREAMS pipe device: /dev/streams/clone/pipe: No such file, or directory\""
    );
    assert_eq!(Status::parse(&line).unwrap(), s);
    // Lines written before the quoting still read back.
    assert_eq!(
        Status::parse("#status,streams,64,2,unavailable,no STREAMS pipe device: /dev/streams/clone/pipe: No such file, or directory").unwrap(),
        s
    );
    assert_eq!(
        Status::parse("#status,x,1,0,failed,say \"hi\"")
            .unwrap()
            .message,
        "say \"hi\""
    );
    let nl = status("x", 1, 0, State::Failed, "a\nb");
    assert_eq!(Status::parse(&nl.to_line()).unwrap().message, "a b");
    for st in [State::Unavailable, State::Failed, State::NotRun] {
        assert_eq!(State::parse(st.name()), Some(st));
    }
    assert!(Status::parse("#status,streams,64,1,broken,x").is_err());
    assert!(Status::parse("#status,streams,x,1,failed,x").is_err());
    assert!(Status::parse("#status,streams,64").is_err());
    // Measurement parsers skip them; the status parser finds only them.
    let text = format!(
        "{HEADER}\n{}\n{line}\n{}\n",
        row("linux", 64, 10.0).to_line(),
        status(
            "streams-putmsg",
            64,
            1,
            State::NotRun,
            "guest crashed in run 3/4"
        )
        .to_line()
    );
    assert_eq!(parse_text(&text).unwrap(), vec![row("linux", 64, 10.0)]);
    let st = parse_status(&text).unwrap();
    assert_eq!(st.len(), 2);
    assert_eq!(st[1].state, State::NotRun);
    assert_eq!(st[1].message, "guest crashed in run 3/4");
}

#[test]
fn report_marks_unavailable_and_failed_runs() {
    let rows = vec![
        row("linux", 1, 100_000.0),
        row("linux", 64, 50_000.0),
        row("streams-putmsg", 1, 150_000.0),
    ];
    let why = "no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory";
    let st = vec![
        status("streams", 1, 1, State::Unavailable, why),
        status("streams", 64, 1, State::Unavailable, why),
        status(
            "streams-putmsg",
            64,
            1,
            State::Failed,
            "putmsg(): Bad | address",
        ),
    ];
    let s = Summary::with_status(&rows, &st, "linux");
    assert_eq!(s.imps, vec!["linux", "streams-putmsg"]);
    assert_eq!(s.unmeasured, vec!["streams"]);
    assert_eq!(s.state("streams", 64), Some(State::Unavailable));
    assert_eq!(s.state("linux", 64), None);
    let md = s.markdown_with("Run: `cargo xtask bench --quick`");
    assert!(
        md.starts_with("# perftest report\n\nRun: `cargo xtask bench --quick`\n\n"),
        "{md}"
    );
    assert!(md.contains("**Not measured at all: streams**"), "{md}");
    assert!(
        md.contains(&format!("| streams | unavailable | 1, 64 | {why} |")),
        "{md}"
    );
    assert!(
        md.contains("| streams-putmsg | failed | 64 | putmsg(): Bad \\| address |"),
        "{md}"
    );
    assert!(
        md.contains("| size | linux | streams | streams-putmsg | streams-putmsg/linux |"),
        "{md}"
    );
    assert!(
        md.contains("| 1 | 100000 | unavailable | 150000 | 1.50 |"),
        "{md}"
    );
    assert!(
        md.contains("| 64 | 50000 | unavailable | failed | – |"),
        "{md}"
    );
    // No invented numbers: the unmeasured implementation is not in the chart data.
    assert_eq!(s.data().lines().next(), Some("# size linux streams-putmsg"));
    // Only status lines: report.md is written, and the error says there is nothing to chart.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_status_only");
    let _ = std::fs::remove_dir_all(&dir);
    let e = write_report_with(&[], &st, &dir, "linux", "").unwrap_err();
    assert!(e.contains("no measurement"), "{e}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("| streams | unavailable |"), "{md}");
}

#[test]
fn report_cli_reads_status_lines_and_preamble() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_cli_status");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("in.csv");
    let text = format!(
        "{HEADER}\n{}\n{}\n",
        row("linux", 8, 1000.0).to_line(),
        status("streams", 8, 1, State::Unavailable, "no device").to_line()
    );
    std::fs::write(&csv, text).unwrap();
    let pre = dir.join("pre.md");
    std::fs::write(&pre, "## Environment\n\nTCG guest\n").unwrap();
    let _ = std::process::Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(["report", csv.to_str().unwrap(), "--out"])
        .arg(dir.join("r"))
        .arg(format!("--preamble={}", pre.display()))
        .output()
        .unwrap();
    let md = std::fs::read_to_string(dir.join("r/report.md")).unwrap();
    assert!(md.contains("## Environment\n\nTCG guest\n"), "{md}");
    assert!(md.contains("| 8 | 1000 | unavailable |"), "{md}");
}

#[test]
fn results_json_carries_rows_and_status() {
    let rows = vec![row("linux", 64, 1000.0), row("str\"eams", 64, 500.0)];
    let st = vec![status("streams", 8, 2, State::Failed, "bad\\path\nx")];
    let j = perftest::csv::to_json(&rows, &st);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(
        v["measurements"][0],
        serde_json::json!({"impl": "linux", "size": 64, "seconds": 1.0, "writes": 1000,
            "writes_per_sec": 1000.0, "bytes_per_sec": 64000.0, "delay_sec": 0.001,
            "reads": 1, "read_bytes": 1, "reads_per_sec": 1.0, "lost": null,
            "reordered": null}),
        "{j}"
    );
    assert_eq!(v["measurements"][1]["impl"], "str\"eams", "{j}");
    assert_eq!(
        v["not_measured"],
        serde_json::json!([{"impl": "streams", "size": 8, "rep": 2, "state": "failed",
            "message": "bad\\path\nx"}]),
        "{j}"
    );
    assert!(j.ends_with("}\n"), "{j}");
    // A non-finite number, which JSON cannot carry, is null.
    let inf = Row {
        delay_sec: f64::INFINITY,
        ..row("linux", 1, 0.0)
    };
    let v: serde_json::Value = serde_json::from_str(&perftest::csv::to_json(&[inf], &[])).unwrap();
    assert!(v["measurements"][0]["delay_sec"].is_null());
    // write_report puts it next to report.md.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_json");
    let _ = std::fs::remove_dir_all(&dir);
    let _ = write_report_with(&rows, &st, &dir, "linux", "");
    let on_disk = std::fs::read_to_string(dir.join("results.json")).unwrap();
    assert_eq!(on_disk, j);
}
