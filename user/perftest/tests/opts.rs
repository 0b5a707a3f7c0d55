//! Option parsing: the LfS perftest_script command line must parse, ours too, bad values fail.

use perftest::opts::{default_preload, parse, preload_candidates, Cmd, Kind, Opts, MULTIARCH};
use std::path::{Path, PathBuf};

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn run_opts(s: &str) -> Opts {
    match parse(&args(s)) {
        Ok(Cmd::Run(o)) => o,
        other => panic!("{s}: {other:?}"),
    }
}

#[test]
fn lfs_script_command_line() {
    // perftest_script: -q -r -t $testtime -i $interval -m nullmod -p 0 -s $size -H -M -F -w
    let o = run_opts("-q -r -t 2 -i 5 -m nullmod -p 0 -s 4096 -H -M -F -w");
    assert_eq!(o.verbose, 0);
    assert!(!o.putmsg);
    assert_eq!(o.time, 2.0);
    assert_eq!(o.iterations, 5);
    assert_eq!(o.module, "nullmod");
    assert_eq!(o.push, 0);
    assert_eq!(o.size, 4096);
    assert!(o.hold && o.mread && o.full && o.readfill);
    assert_eq!(o.kind, Kind::Linux);
}

#[test]
fn our_options() {
    let o = run_opts("--pipe=streams --putmsg -c 100 -s64 -t 0.3 --csv --label=x");
    assert_eq!(o.kind, Kind::Streams);
    assert!(o.putmsg);
    assert_eq!(o.count, Some(100));
    assert_eq!(o.size, 64);
    assert_eq!(o.time, 0.3);
    assert!(o.csv);
    assert_eq!(o.label.as_deref(), Some("x"));
    let o = run_opts("-p socketpair -p 3 --push 2");
    assert_eq!(o.kind, Kind::Socketpair);
    assert_eq!(o.push, 2);
    let o = run_opts("--pipe seqpacket -rHb");
    assert_eq!(o.kind, Kind::Seqpacket);
    assert!(o.hold && o.blocking && !o.putmsg);
    let o = run_opts("-R -S5 -vv --hiwat=65536 --lowat 8192");
    assert_eq!((o.niceread, o.nicesend, o.verbose), (Some(19), Some(5), 3));
    assert_eq!((o.hiwat, o.lowat), (Some(65536), Some(8192)));
    let d = run_opts("");
    assert_eq!(
        (d.kind, d.size, d.time, d.iterations, d.putmsg),
        (Kind::Linux, 64, 1.0, 1, false)
    );
}

#[test]
fn labels() {
    assert_eq!(
        run_opts("-p streams --putmsg -H -w").impl_label(),
        "streams-putmsg+H+w"
    );
    assert_eq!(run_opts("").impl_label(), "linux");
    assert_eq!(run_opts("-p streams --label=rs").impl_label(), "rs");
}

#[test]
fn help_version_and_errors() {
    assert_eq!(parse(&args("-h")), Ok(Cmd::Help));
    assert_eq!(parse(&args("--version")), Ok(Cmd::Version));
    for bad in [
        "-s 0",
        "-s 40000",
        "-s x",
        "-t 0",
        "-t -1",
        "-i 0",
        "-c 0",
        "-p bogus",
        "--nope",
        "-Z",
        "-s",
        "--size",
        "-m toolongname",
        "--hold=1",
        "extra",
        "--fifo",
    ] {
        assert!(parse(&args(bad)).is_err(), "{bad} should fail");
    }
}

#[test]
fn sweep_options() {
    let s = perftest::sweep::parse(&args(
        "--kinds linux,streams-putmsg --sizes 1,8 --reps 2 --out x.csv -t 0.5 -H",
    ))
    .unwrap();
    assert_eq!(s.kinds, vec![(Kind::Linux, false), (Kind::Streams, true)]);
    assert_eq!(s.sizes, vec![1, 8]);
    assert_eq!(s.reps, 2);
    assert_eq!(s.out, std::path::PathBuf::from("x.csv"));
    assert_eq!(s.base.time, 0.5);
    assert!(s.base.hold);
    let d = perftest::sweep::parse(&[]).unwrap();
    assert_eq!(
        d.sizes,
        vec![1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
    );
    assert_eq!((d.reps, d.base.time), (3, 2.0));
    assert!(perftest::sweep::parse(&args("--kinds bogus")).is_err());
    assert!(perftest::sweep::parse(&args("--sizes 0")).is_err());
}

#[test]
fn water_mark_ioctls_are_lfs_values() {
    // LfS/HP-UX: I_SET_HIWAT (__SID|91), I_SET_LOWAT (__SID|92), __SID = 'S' << 8.
    assert_eq!(perftest::run::I_SET_HIWAT, 0x535b);
    assert_eq!(perftest::run::I_SET_LOWAT, 0x535c);
    let o = run_opts("-p streams --hiwat=65536 --lowat=8192");
    assert_eq!((o.hiwat, o.lowat), (Some(65536), Some(8192)));
}

#[test]
fn bench_line_and_getopt_habits() {
    // cargo xtask bench's command line (docs/perftest.md).
    let o = run_opts(
        "-q -r -t 1 -i 3 -m nullmod -p 0 -s 64 -a -S10 --hiwat=65536 --lowat=8192 --pipe=streams -H -M -F -w --csv --label=streams+H+w+F+M",
    );
    assert_eq!(
        (o.kind, o.push, o.nicesend, o.niceread),
        (Kind::Streams, 0, Some(10), None)
    );
    assert_eq!((o.verbose, o.time, o.iterations, o.size), (0, 1.0, 3, 64));
    assert_eq!(o.impl_label(), "streams+H+w+F+M");
    // Clustered flags, attached values, the last of -p N / --push wins, -r after --putmsg.
    let o = run_opts("-qrHb -s128 -t0.5 --push 4 -p 2 -p streams --putmsg -r -S 5");
    assert_eq!((o.verbose, o.size, o.time, o.push), (0, 128, 0.5, 2));
    assert!(o.hold && o.blocking && !o.putmsg);
    assert_eq!((o.kind, o.nicesend), (Kind::Streams, Some(5)));
    // -q then -v: quiet, then one more; --verbose=N sets; hex numbers as strtoul.
    assert_eq!(run_opts("-q -v").verbose, 1);
    assert_eq!(run_opts("-v --verbose=5").verbose, 5);
    assert_eq!(run_opts("--verbose --verbose").verbose, 3);
    assert_eq!(run_opts("--hiwat=0x10000").hiwat, Some(65536));
    assert_eq!(parse(&args("-?")), Ok(Cmd::Help));
    assert!(
        parse(&args("-H -H")).is_ok(),
        "a repeated flag is accepted, as getopt does"
    );
}

#[test]
fn preload_default_finds_the_packaged_library() {
    // The multiarch directory is the one the packages use (xtask/src/package.rs asks
    // dpkg-architecture), where dpkg-architecture exists.
    if let Ok(out) = std::process::Command::new("dpkg-architecture")
        .arg("-qDEB_HOST_MULTIARCH")
        .output()
    {
        let m = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert_eq!(MULTIARCH, Some(m.as_str()));
    }
    let multi = Path::new("/usr/lib")
        .join(MULTIARCH.expect("a Debian multiarch target"))
        .join("libstreams_pipe.so");
    let plain = PathBuf::from("/usr/lib/libstreams_pipe.so");
    assert_eq!(preload_candidates(), [multi.clone(), plain.clone()]);
    // The packaged one first; /usr/lib as the fallback; neither: the packaged path (named by
    // the error).
    assert_eq!(default_preload(|_| true), multi);
    assert_eq!(default_preload(|p| p == plain), plain);
    assert_eq!(default_preload(|_| false), multi);
    // --preload wins; no --preload leaves the choice to the files present at the run.
    assert_eq!(run_opts("").preload, None);
    assert_eq!(
        run_opts("--preload=/opt/x.so").preload_path(),
        PathBuf::from("/opt/x.so")
    );
    let d = run_opts("").preload_path();
    assert!(d == multi || d == plain, "{d:?}");
}
