//! The workloads besides the writer/reader pair (`--workload syscall|bw|grep|flex`) on the
//! host against Linux pipes: each prints one sane CSV row (smoke tests, not performance
//! claims), `--pipe-size` takes effect or fails, and the STREAMS kind fails cleanly without
//! the modules. The STREAMS side runs the same code with another channel (guest only).

use perftest::csv::Row;
use perftest::opts::{parse, Cmd};
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

fn row(args: &[&str]) -> Row {
    let (ok, out, err) = perftest(args);
    assert!(ok, "perftest {args:?}: {err}");
    Row::parse(out.lines().last().unwrap()).unwrap()
}

#[test]
fn syscall_floor() {
    let r = row(&["--workload=syscall", "-t", "0.2", "-q", "--csv"]);
    assert_eq!((r.imp.as_str(), r.size), ("syscall", 0));
    assert!(r.writes > 1000 && r.writes_per_sec > 0.0);
    assert!((r.seconds - 0.2).abs() < 0.1, "{}", r.seconds);
    assert!((r.delay_sec * r.writes_per_sec - 1.0).abs() < 1e-9);
    assert_eq!((r.reads, r.read_bytes, r.bytes_per_sec), (0, 0, 0.0));
}

#[test]
fn bw_moves_every_byte() {
    let r = row(&[
        "--workload=bw",
        "-p",
        "linux",
        "-s",
        "4096",
        "--pipe-size=8192",
        "--total=1048576",
        "-q",
        "--csv",
    ]);
    assert_eq!((r.imp.as_str(), r.size), ("bw-linux-ps8k", 4096));
    assert_eq!(r.writes, 256);
    // The reader times everything after its first read.
    assert!(
        r.read_bytes > 1048576 - 8192 && r.read_bytes < 1048576,
        "{}",
        r.read_bytes
    );
    assert!(r.bytes_per_sec > 0.0 && r.seconds > 0.0);
    assert!((r.bytes_per_sec - r.read_bytes as f64 / r.seconds).abs() < 1.0);
}

#[test]
fn grep_over_a_pipe() {
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("perftest-grep-2m.txt");
    let f = file.to_str().unwrap();
    let r = row(&[
        "--workload=grep",
        "--pipe=linux",
        "--pipe-size=16384",
        "--file",
        f,
        "--file-mb=2",
        "-q",
        "--csv",
    ]);
    assert_eq!((r.imp.as_str(), r.size), ("grep-linux-ps16k", 16384));
    assert_eq!(std::fs::metadata(&file).unwrap().len(), 2 << 20);
    assert_eq!((r.writes, r.read_bytes), (1, 2 << 20));
    assert!((r.bytes_per_sec * r.seconds - (2 << 20) as f64).abs() < 1.0);
    assert!((r.delay_sec - r.seconds).abs() < 1e-12);
    // A pattern that is in the file: grep finds it, and the run says so.
    let (ok, _, err) = perftest(&[
        "--workload=grep",
        "--file",
        f,
        "--file-mb=2",
        "--pattern=lazy dog",
        "-q",
        "--csv",
    ]);
    assert!(!ok);
    assert!(err.contains("grep -F exit Some(0)"), "{err}");
}

#[test]
fn grep_in_a_shell_pipeline() {
    if !std::path::Path::new("/usr/bin/dash").exists() {
        println!("SKIP: no /usr/bin/dash");
        return;
    }
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let file = dir.join("perftest-grep-sh-1m.txt");
    let f = file.to_str().unwrap();
    let base = [
        "--workload=grep",
        "--shell=/usr/bin/dash",
        "--file",
        f,
        "--file-mb=1",
    ];
    let r = row(&[&base[..], &["-p", "linux", "-q", "--csv"]].concat());
    assert_eq!(
        (r.imp.as_str(), r.size, r.read_bytes),
        ("grep-linux-sh", 0, 1 << 20)
    );
    // The shell makes the pipe: it cannot be sized.
    let (ok, _, err) = perftest(&[&base[..], &["--pipe-size=8192"]].concat());
    assert!(!ok);
    assert!(err.contains("--pipe-size cannot size it"), "{err}");
    // The probe: a plain pipe is not a Stream.
    let (ok, out, _) = perftest(&["--isastream", "0"]);
    assert!(ok);
    assert_eq!(out.trim(), "0");
}

#[test]
fn flex_children_over_pipes() {
    let r = row(&[
        "--workload=flex",
        "--pipe=linux",
        "-s",
        "8192",
        "--pipe-size=4096",
        "--children=4",
        "--compute-us=200",
        "-t",
        "0.3",
        "-q",
        "--csv",
    ]);
    assert_eq!((r.imp.as_str(), r.size), ("flex-linux-ps4k", 8192));
    assert!(r.reads > 0 && r.read_bytes > 0 && r.writes > 0);
    assert!((r.seconds - 0.3).abs() < 0.2, "{}", r.seconds);
    // Each read is followed by at least 100 µs of compute: 2 readers, 0.3 s.
    assert!(r.reads < 2 * 3000 + 100, "{}", r.reads);
    // With a 4 KiB pipe no read returns more than 4 KiB.
    assert!(
        r.read_bytes <= r.reads * 4096,
        "{} {}",
        r.read_bytes,
        r.reads
    );
}

#[test]
fn pipe_size_errors_and_streams_without_modules() {
    // Above pipe-max-size for an unprivileged caller, or not a pipe: a failed run, not the
    // default size under another name.
    let (ok, _, err) = perftest(&["--workload=bw", "-p", "socketpair", "--pipe-size=8192"]);
    assert!(!ok);
    assert!(err.contains("--pipe-size needs a pipe"), "{err}");
    if !std::path::Path::new(streams::PIPE_DEVICE).exists() {
        for w in ["bw", "grep", "flex"] {
            let (ok, out, err) = perftest(&[&format!("--workload={w}"), "-p", "streams", "--csv"]);
            assert!(!ok, "{w}");
            assert!(out.is_empty(), "{w}: {out}");
            assert!(err.contains("no STREAMS pipe device"), "{w}: {err}");
        }
    }
}

#[test]
fn options() {
    let args = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
    let o = match parse(&args(
        "--workload=flex -p streams --pipe-size 16384 --children 6 --compute-us 100 -s 32768",
    )) {
        Ok(Cmd::Run(o)) => o,
        other => panic!("{other:?}"),
    };
    assert_eq!(o.impl_label(), "flex-streams-ps16k");
    assert_eq!(
        (o.children, o.compute_us, o.pipe_size),
        (6, 100, Some(16384))
    );
    let w = perftest::run::WaterMarks::of(&o);
    assert_eq!((w.hiwat, w.lowat), (Some(16384), Some(2048)));
    let o = match parse(&args("--workload syscall -p streams --label x")) {
        Ok(Cmd::Run(o)) => o,
        other => panic!("{other:?}"),
    };
    assert_eq!(o.impl_label(), "x");
    for bad in [
        "--workload=nosuch",
        "--workload=flex --children=3",
        "--pipe-size=0",
        "--file-mb=0",
    ] {
        assert!(parse(&args(bad)).is_err(), "{bad}");
    }
}
