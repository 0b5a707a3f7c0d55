//! Short timed runs of the binary on the host (smoke tests, not performance claims) and the
//! clean failure of the STREAMS kind without the modules.

use perftest::csv::Row;
use std::process::Command;

fn perftest(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// Check an LfS report line: `FD Msgs WHAT: N (N), throughput: N (N), size (N) N-N N N N`.
fn lfs_line(l: &str, what: &str) -> Option<(u64, u64)> {
    let (fd, rest) = l.split_once(' ')?;
    fd.parse::<u32>().ok()?;
    let rest = rest.strip_prefix(&format!("Msgs {what}: "))?;
    let nums: Vec<String> = rest
        .replace(['(', ')', ',', '-', ':'], " ")
        .split_whitespace()
        .filter(|w| *w != "throughput" && *w != "size")
        .map(String::from)
        .collect();
    if nums.len() != 10 || nums.iter().any(|n| n.parse::<i64>().is_err()) {
        return None;
    }
    Some((nums[0].parse().ok()?, nums[2].parse().ok()?))
}

fn smoke(kind: &str, size: &str) {
    let (ok, out, err) = perftest(&["-p", kind, "-t", "0.3", "-s", size, "--csv"]);
    assert!(ok, "{err}");
    let sent: Vec<(u64, u64)> = out.lines().filter_map(|l| lfs_line(l, "sent")).collect();
    let read: Vec<(u64, u64)> = out.lines().filter_map(|l| lfs_line(l, "read")).collect();
    assert_eq!(sent.len(), 1, "{out}");
    assert!(!read.is_empty(), "{out}");
    let (msgs, tput) = sent[0];
    assert!(msgs > 0);
    // Both are truncated per-second figures of a fractional interval: equal within one message.
    let sz = size.parse::<u64>().unwrap();
    assert!(
        tput.abs_diff(msgs * sz) <= sz,
        "throughput {tput} = msgs/s {msgs} × size {sz}"
    );
    let csv = out.lines().last().unwrap();
    let row = Row::parse(csv).unwrap();
    assert_eq!(row.imp, kind);
    assert!(row.writes > 0 && row.writes_per_sec > 0.0);
    assert!((row.seconds - 0.3).abs() < 0.2, "{}", row.seconds);
    assert_eq!(
        row.read_bytes,
        row.writes * row.size as u64,
        "every byte written is read"
    );
    assert!((row.delay_sec * row.writes_per_sec - 1.0).abs() < 1e-9);
    let summary = out
        .lines()
        .find(|l| l.starts_with(&format!("{kind} size {size}:")))
        .unwrap();
    assert!(
        summary.contains("writes/s") && summary.contains("s/write"),
        "{summary}"
    );
}

#[test]
fn linux_pipe_run() {
    smoke("linux", "64");
}

#[test]
fn socketpair_run() {
    smoke("socketpair", "256");
}

#[test]
fn count_mode_writes_exactly_count() {
    let (ok, out, err) = perftest(&["-q", "-c", "5000", "-s", "16", "-t", "5", "--csv"]);
    assert!(ok, "{err}");
    let row = Row::parse(out.lines().last().unwrap()).unwrap();
    assert_eq!((row.writes, row.read_bytes), (5000, 5000 * 16));
}

#[test]
fn streams_without_modules_fails_cleanly() {
    if std::path::Path::new(streams::PIPE_DEVICE).exists() {
        return;
    }
    let (ok, _, err) = perftest(&["-q", "-p", "streams", "-t", "0.1"]);
    assert!(!ok);
    assert_eq!(
        err.trim(),
        "perftest: no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory"
    );
    // Without -q too: no banner before the error.
    let (ok, out, err) = perftest(&["-p", "streams", "-t", "0.1"]);
    assert!(
        !ok && out.is_empty() && err.contains("no STREAMS pipe device"),
        "{out}{err}"
    );
    let (ok, _, err) = perftest(&["-q", "--putmsg", "-t", "0.1"]);
    assert!(
        !ok && err.contains("--putmsg needs a STREAMS pipe"),
        "{err}"
    );
}

#[test]
fn sweep_skips_missing_streams_and_writes_csv() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let csv = dir.join("sweep_smoke.csv");
    let (ok, _, err) = perftest(&[
        "sweep",
        "--kinds",
        "linux,streams",
        "--sizes",
        "1,8",
        "--reps",
        "1",
        "-t",
        "0.1",
        "--out",
        csv.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let rows = perftest::csv::read_file(&csv).unwrap();
    if !std::path::Path::new(streams::PIPE_DEVICE).exists() {
        assert!(
            err.contains("skipping streams: no STREAMS pipe device"),
            "{err}"
        );
        assert_eq!(rows.len(), 2);
        // The skipped kind is recorded as unavailable for every size, not silently absent.
        let text = std::fs::read_to_string(&csv).unwrap();
        let st = perftest::csv::parse_status(&text).unwrap();
        assert_eq!(
            st.iter()
                .map(|s| (s.imp.as_str(), s.size))
                .collect::<Vec<_>>(),
            vec![("streams", 1), ("streams", 8)]
        );
        assert!(st
            .iter()
            .all(|s| s.state == perftest::csv::State::Unavailable
                && s.message.starts_with("no STREAMS pipe device")));
    }
    assert!(rows.iter().all(|r| r.writes > 0));
    assert_eq!(
        rows.iter()
            .filter(|r| r.imp == "linux")
            .map(|r| r.size)
            .collect::<Vec<_>>(),
        vec![1, 8]
    );
}

#[test]
fn bad_usage_exits_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_perftest"))
        .args(["-s", "0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}
