//! The UDP test: its options, a short socket run on the host loopback (counts, loss
//! accounting), the clean failure of the XTI implementations when they are not here, the
//! receiver's sequence accounting, and the report's UDP tables and ratios on synthetic CSV.

use perftest::csv::{parse_status, parse_text, Row, State, Status, HEADER};
use perftest::opts::{parse, Cmd, Opts, UDP_BUFSIZE};
use perftest::report::{write_report_with, Summary, Test};
use perftest::run::Outcome;
use perftest::udp::{totals, Received, UdpKind, UNAVAILABLE};
use std::process::Command;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn run_opts(s: &str) -> Opts {
    match parse(&args(s)) {
        Ok(Cmd::Run(o)) => o,
        other => panic!("{s}: {other:?}"),
    }
}

fn perftest(a: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(a)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn udp_options() {
    let o = run_opts("-s 1024 -t 2 --udp socket");
    assert_eq!(o.udp, Some(UdpKind::Socket));
    assert_eq!((o.size, o.bufsize), (1024, UDP_BUFSIZE));
    assert_eq!(UDP_BUFSIZE, 131_071);
    assert_eq!(o.impl_label(), "udp-socket");
    let o = run_opts("--udp=tpi --bufsize=65536 -b");
    assert_eq!((o.udp, o.bufsize), (Some(UdpKind::Tpi), 65536));
    assert_eq!(o.impl_label(), "udp-tpi+b");
    let o = run_opts("--udp xtiso --label=x");
    assert_eq!(o.udp, Some(UdpKind::Xtiso));
    assert_eq!(o.impl_label(), "x");
    // The bench's UDP line: -t and -i are words 4 and 6, as the guest's watchdog expects.
    let o = run_opts("-q -r -t 1 -i 3 -s 16384 --bufsize=131071 --udp=tpi");
    assert_eq!(
        (o.time, o.iterations, o.size, o.verbose),
        (1.0, 3, 16384, 0)
    );
    assert_eq!(run_opts("-s 64").udp, None);
    for bad in [
        "--udp bogus",
        "--udp",
        "--bufsize 0",
        "--bufsize x --udp socket",
    ] {
        assert!(parse(&args(bad)).is_err(), "{bad}");
    }
    for k in UdpKind::ALL {
        assert_eq!(UdpKind::parse(k.name()), Some(k));
        assert_eq!(k.label(), format!("udp-{}", k.name()));
    }
    assert_eq!(UdpKind::Tpi.device(), Some("/dev/streams/clone/udp"));
    assert_eq!(
        UdpKind::Xtiso.device(),
        Some("/dev/streams/clone/xtiso-udp")
    );
    assert_eq!(UdpKind::Socket.device(), None);
    let s = perftest::sweep::parse(&args("--kinds linux,udp-socket,udp-xtiso")).unwrap();
    assert_eq!(s.udp, vec![UdpKind::Socket, UdpKind::Xtiso]);
    assert_eq!(s.kinds.len(), 1);
    assert!(perftest::sweep::parse(&args("--kinds udp-bogus")).is_err());
}

/// `FD Msgs WHAT: N (N), ...`: the per-second count.
fn lfs_count(l: &str, what: &str) -> Option<u64> {
    let rest = l
        .split_once(' ')?
        .1
        .strip_prefix(&format!("Msgs {what}: "))?;
    rest.split_whitespace().next()?.parse().ok()
}

#[test]
fn socket_run_on_loopback() {
    let (rc, out, err) = perftest(&[
        "--udp", "socket", "-t", "0.5", "-i", "2", "-s", "64", "--csv",
    ]);
    assert_eq!(rc, Some(0), "{err}");
    let sent: Vec<u64> = out.lines().filter_map(|l| lfs_count(l, "sent")).collect();
    let recv: Vec<u64> = out.lines().filter_map(|l| lfs_count(l, "recv")).collect();
    assert_eq!(sent.len(), 2, "{out}");
    assert!(!recv.is_empty(), "{out}");
    let row = Row::parse(out.lines().last().unwrap()).unwrap();
    assert_eq!((row.imp.as_str(), row.size), ("udp-socket", 64));
    assert!(row.writes > 0 && row.reads > 0, "{row:?}");
    assert!((row.seconds - 1.0).abs() < 0.3, "{}", row.seconds);
    // Loss accounting: what was not received is lost, nothing more was received than sent,
    // every datagram received was whole, reordering is counted (size >= 4).
    assert!(row.reads <= row.writes, "{row:?}");
    assert_eq!(row.lost, Some(row.writes - row.reads), "{row:?}");
    assert_eq!(row.read_bytes, row.reads * 64);
    assert!(row.reordered.is_some_and(|r| r <= row.reads), "{row:?}");
    // Rates: the received rate is the receiver's count over the test (the sender's) time.
    assert!((row.writes_per_sec - row.writes as f64 / row.seconds).abs() < 1e-6);
    assert!((row.reads_per_sec - row.reads as f64 / row.seconds).abs() < 1e-6);
    let summary = out
        .lines()
        .find(|l| l.starts_with("udp-socket size 64:"))
        .unwrap();
    assert!(summary.contains("msgs/s received"), "{summary}");
}

#[test]
fn socket_run_tiny_messages_and_count_mode() {
    // 1 byte: no room for a sequence number, so no reordering count.
    let (rc, out, err) = perftest(&["-q", "--udp=socket", "-t", "0.3", "-s", "1", "--csv"]);
    assert_eq!(rc, Some(0), "{err}");
    let row = Row::parse(out.trim()).unwrap();
    assert!(row.writes > 0 && row.reads > 0 && row.reads <= row.writes);
    assert_eq!(row.reordered, None);
    assert_eq!(row.lost, Some(row.writes - row.reads));
    // -c: exactly that many sent.
    let (rc, out, err) = perftest(&[
        "-q",
        "--udp=socket",
        "-c",
        "2000",
        "-t",
        "5",
        "-s",
        "32",
        "-b",
        "--csv",
    ]);
    assert_eq!(rc, Some(0), "{err}");
    let row = Row::parse(out.trim()).unwrap();
    assert_eq!(row.writes, 2000);
    assert_eq!(row.imp, "udp-socket+b");
    assert_eq!(row.lost, Some(2000 - row.reads));
}

#[test]
fn xti_kinds_fail_cleanly_when_not_here() {
    for (kind, dev) in [
        ("tpi", "/dev/streams/clone/udp"),
        ("xtiso", "/dev/streams/clone/xtiso-udp"),
    ] {
        if std::path::Path::new(dev).exists() {
            continue;
        }
        let (rc, out, err) = perftest(&["--udp", kind, "-t", "0.1", "--csv"]);
        assert_eq!(rc, Some(1), "{err}");
        assert!(out.is_empty(), "no banner, no number: {out}");
        let msg = err.trim().strip_prefix("perftest: ").unwrap();
        assert!(
            UNAVAILABLE.iter().any(|u| msg.starts_with(u)) && msg.contains(dev),
            "{msg}"
        );
    }
}

#[test]
fn sweep_records_missing_xti_as_unavailable() {
    if std::path::Path::new("/dev/streams/clone/xtiso-udp").exists() {
        return;
    }
    let csv = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("udp_sweep.csv");
    let (rc, _, err) = perftest(&[
        "sweep",
        "--kinds",
        "udp-socket,udp-xtiso",
        "--sizes",
        "1,64",
        "--reps",
        "1",
        "-t",
        "0.2",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert_eq!(rc, Some(0), "{err}");
    assert!(err.contains("skipping udp-xtiso"), "{err}");
    let text = std::fs::read_to_string(&csv).unwrap();
    let rows = parse_text(&text).unwrap();
    assert_eq!(
        rows.iter()
            .map(|r| (r.imp.as_str(), r.size))
            .collect::<Vec<_>>(),
        vec![("udp-socket", 1), ("udp-socket", 64)]
    );
    assert!(rows.iter().all(|r| r.reads > 0 && r.is_udp()));
    let st = parse_status(&text).unwrap();
    assert_eq!(st.len(), 2);
    assert!(st
        .iter()
        .all(|s| s.imp == "udp-xtiso" && s.state == State::Unavailable));
}

#[test]
fn receiver_sequence_accounting() {
    let mut r = Received::default();
    for seq in [0u32, 1, 2, 5, 3, 6, 4, 7] {
        r.count(&seq.to_ne_bytes(), 8, 8);
    }
    // 3 and 4 came after 5: reordered; nothing else.
    assert_eq!((r.msgs, r.bytes, r.reordered, r.bad_len), (8, 64, 2, 0));
    // Wrapping sequence numbers stay in order.
    let mut w = Received::default();
    for seq in [u32::MAX - 2, u32::MAX - 1, u32::MAX, 0, 1] {
        w.count(&seq.to_ne_bytes(), 4, 4);
    }
    assert_eq!(w.reordered, 0);
    w.count(&(u32::MAX - 5).to_ne_bytes(), 4, 4);
    assert_eq!(w.reordered, 1);
    // A short datagram is counted as bad, not as data.
    let mut b = Received::default();
    b.count(&[1, 2], 2, 8);
    assert_eq!((b.msgs, b.bad_len), (1, 1));
    // Sizes under 4 carry no sequence number.
    let mut t = Received::default();
    for _ in 0..3 {
        t.count(&[0x5a], 1, 1);
    }
    assert_eq!((t.msgs, t.reordered), (3, 0));
}

#[test]
fn totals_check_the_loss_accounting() {
    let t = totals("W 100 6400 1.0 2\nR 90 5760 1.2 0 3 1\n", 64).unwrap();
    assert_eq!(t.outcome.writes, 100);
    assert_eq!(t.outcome.reads, 90);
    assert_eq!(t.outcome.lost, Some(10));
    assert_eq!(t.outcome.reordered, Some(3));
    assert_eq!((t.send_errors, t.recv_errors), (2, 1));
    assert_eq!(t.outcome.read_rate(), 90.0);
    // Size under 4: no reorder count.
    assert_eq!(
        totals("W 5 5 1 0\nR 5 5 1 0 0 0\n", 1)
            .unwrap()
            .outcome
            .reordered,
        None
    );
    let more = totals("W 10 640 1.0 0\nR 11 704 1.0 0 0 0\n", 64).unwrap_err();
    assert!(more.contains("loss accounting"), "{more}");
    let bad = totals("W 10 640 1.0 0\nR 10 600 1.0 1 0 0\n", 64).unwrap_err();
    assert!(bad.contains("not 64 bytes"), "{bad}");
    assert!(totals("W 10 640 1.0 0\n", 64).is_err());
    assert!(totals("W 10 x 1.0 0\nR 1 1 1 0 0 0\n", 64).is_err());
}

/// A UDP row: `sent` and `recv` messages in one second.
fn udp(imp: &str, size: usize, sent: u64, recv: u64) -> Row {
    Row::from_outcome(
        imp,
        size,
        &Outcome {
            writes: sent,
            write_bytes: sent * size as u64,
            write_secs: 1.0,
            reads: recv,
            read_bytes: recv * size as u64,
            read_secs: 1.1,
            lost: Some(sent - recv),
            reordered: Some(0),
        },
    )
}

fn pipe(imp: &str, size: usize, rate: u64) -> Row {
    Row::from_outcome(
        imp,
        size,
        &Outcome {
            writes: rate,
            write_bytes: rate * size as u64,
            write_secs: 1.0,
            reads: rate,
            read_bytes: rate * size as u64,
            read_secs: 1.0,
            ..Outcome::default()
        },
    )
}

fn unavailable(imp: &str, size: usize) -> Status {
    Status {
        imp: imp.into(),
        size,
        rep: 1,
        state: State::Unavailable,
        message: "no XTI UDP device: /dev/streams/clone/xtiso-udp: No such file or directory"
            .into(),
    }
}

#[test]
fn csv_columns_and_old_lines() {
    assert!(HEADER.ends_with(",read_bytes,reads_per_sec,lost,reordered"));
    let r = udp("udp-tpi", 64, 1000, 900);
    let line = r.to_line();
    assert_eq!(
        line,
        "udp-tpi,64,1.0,1000,1000.0,64000.0,0.001,900,57600,900.0,100,0"
    );
    assert_eq!(Row::parse(&line).unwrap(), r);
    assert!(r.is_udp());
    // Pipe rows: lost and reordered empty.
    let p = pipe("linux", 8, 10);
    assert!(p.to_line().ends_with(",10.0,,"), "{}", p.to_line());
    assert!(!Row::parse(&p.to_line()).unwrap().is_udp());
    // A 9-column line of an older file: reads_per_sec computed, the rest empty.
    let old = Row::parse("linux,8,2.0,10,5.0,40.0,0.2,4,80").unwrap();
    assert_eq!(
        (old.reads_per_sec, old.lost, old.reordered),
        (2.0, None, None)
    );
    assert!(Row::parse("linux,8,2.0,10,5.0,40.0,0.2,4,80,1").is_err());
}

#[test]
fn report_udp_tables_ratios_and_unavailable() {
    let rows = vec![
        pipe("linux", 64, 1000),
        pipe("streams", 64, 500),
        udp("udp-socket", 1, 1000, 800),
        udp("udp-socket", 1, 1400, 1200),
        udp("udp-tpi", 1, 2000, 1500),
        udp("udp-tpi", 1, 2000, 1500),
        udp("udp-socket", 64, 1000, 1000),
        udp("udp-tpi", 64, 1500, 1250),
    ];
    let st = vec![unavailable("udp-xtiso", 1), unavailable("udp-xtiso", 64)];
    let s = Summary::of(Test::Udp, &rows, &st, Test::UDP_BASELINE);
    assert_eq!(s.imps, vec!["udp-socket", "udp-tpi"]);
    assert_eq!(s.unmeasured, vec!["udp-xtiso"]);
    assert_eq!(s.sizes, vec![1, 64]);
    // The figure of merit is the received rate; sent is kept beside it.
    assert_eq!(s.rate("udp-socket", 1), Some(1000.0));
    let st1 = s.stat("udp-socket", 1).unwrap();
    assert_eq!((st1.min, st1.max, st1.n), (800.0, 1200.0, 2));
    assert_eq!(s.sent_rate("udp-tpi", 64), Some(1500.0));
    assert_eq!(s.ratio("udp-tpi", 1), Some(1.5));
    assert_eq!(s.ratio_of("udp-tpi", "udp-xtiso", 1), None);
    let md = s.markdown();
    assert!(md.contains("### Performance (messages received/s)"), "{md}");
    assert!(
        md.contains("| size | udp-socket | udp-tpi | udp-xtiso | udp-tpi/udp-socket | udp-xtiso/udp-socket | udp-tpi/udp-xtiso |"),
        "{md}"
    );
    assert!(
        md.contains("| 1 | 1000 [800–1200] | 1500 [1500–1500] | unavailable | 1.50 | – | – |"),
        "{md}"
    );
    assert!(
        md.contains("| 64 | 1000 | 1250 | unavailable | 1.25 | – | – |"),
        "{md}"
    );
    // Sent, delay (µs per message received), throughput (received), improvement.
    assert!(md.contains("### Messages sent/s"), "{md}");
    assert!(md.contains("| 1 | 1200 | 2000 |"), "{md}");
    assert!(md.contains("| 1 | 1000.000 | 666.667 |"), "{md}");
    assert!(md.contains("| 64 | 0.06 | 0.08 |"), "{md}");
    assert!(md.contains("| 1 | +50.0 |\n| 64 | +25.0 |"), "{md}");
    assert!(md.contains("| udp-xtiso | unavailable | 1, 64 |"), "{md}");
    // Chart data: received, then sent; no column for the unavailable one.
    assert_eq!(
        s.data().lines().next(),
        Some("# size udp-socket udp-tpi udp-socket-sent udp-tpi-sent")
    );
    assert!(
        s.data().contains("\n64 1000 1250 1000 1500\n"),
        "{}",
        s.data()
    );
    // With xtiso measured, tpi/xtiso is computed.
    let mut all = rows.clone();
    all.push(udp("udp-xtiso", 64, 1000, 500));
    let s = Summary::of(Test::Udp, &all, &[], Test::UDP_BASELINE);
    assert_eq!(s.ratio_of("udp-tpi", "udp-xtiso", 64), Some(2.5));
    assert!(s
        .markdown()
        .contains("| 64 | 1000 | 1250 | 500 | 1.25 | 0.50 | 2.50 |"));

    // The whole report: the pipe part as before, then the UDP part, and eight charts.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_udp");
    let _ = std::fs::remove_dir_all(&dir);
    let res = write_report_with(&rows, &st, &dir, "linux", "");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    let pipe_at = md.find("## Performance (writes/s)").unwrap();
    let udp_at = md.find("## UDP\n").unwrap();
    assert!(pipe_at < udp_at, "{md}");
    assert!(md.contains("| 64 | 1000 | 500 | 0.50 |"), "{md}");
    assert!(!md[..udp_at].contains("udp-"), "{md}");
    assert!(md.contains("![performance](udp-performance.png)"), "{md}");
    let data = std::fs::read_to_string(dir.join("udp-report.dat")).unwrap();
    assert!(data.starts_with("# size udp-socket udp-tpi"), "{data}");
    let gp = std::fs::read_to_string(dir.join("udp-performance.gp")).unwrap();
    assert!(
        gp.contains("udp-tpi sent") && gp.contains("message size"),
        "{gp}"
    );
    if Command::new("gnuplot").arg("--version").output().is_err() {
        assert!(res.is_err());
        return;
    }
    let pngs = res.unwrap();
    assert_eq!(pngs.len(), 8);
    for name in ["performance", "delay", "throughput", "improvement"] {
        let b = std::fs::read(dir.join(format!("udp-{name}.png"))).unwrap();
        assert_eq!(&b[..8], b"\x89PNG\r\n\x1a\n", "udp-{name}.png");
    }
}

#[test]
fn report_udp_only_and_all_unavailable() {
    // UDP rows only: no pipe section at all.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_udp_only");
    let _ = std::fs::remove_dir_all(&dir);
    let rows = vec![udp("udp-socket", 1, 10, 10)];
    let st = vec![unavailable("udp-tpi", 1)];
    let _ = write_report_with(&rows, &st, &dir, "linux", "");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(!md.contains("writes/s"), "{md}");
    assert!(md.contains("| 1 | 10 | unavailable | – |"), "{md}");
    assert!(!dir.join("report.dat").exists());
    // Status lines only: report.md says so, no charts, an error.
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("report_udp_none");
    let _ = std::fs::remove_dir_all(&dir);
    let e = write_report_with(&[], &st, &dir, "linux", "").unwrap_err();
    assert!(e.contains("no measurement"), "{e}");
    let md = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(md.contains("**Not measured at all: udp-tpi**"), "{md}");
}
