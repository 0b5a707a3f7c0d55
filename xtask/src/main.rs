//! `cargo xtask`: the rstreams build driver (std only). See `cargo xtask help` and
//! `docs/building.md`.
//!
//! It turns a fresh Debian 12 machine into one that builds a Rust-enabled Linux 6.12, builds
//! `streams.ko` through the top-level `Kbuild`, boots a QEMU guest and runs the KUnit suites
//! (the core's own test tables) there, failing on any failed case, missing result or kernel
//! report (oops, BUG, WARNING, KASAN, lockdep, kmemleak).

mod bench;
mod checks;
mod deps;
mod initramfs;
mod kernel;
mod ktap;
mod modules;
mod util;
mod vm;

use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use kernel::Variant;
use modules::Build;
use util::Result;

const HELP: &str = "\
cargo xtask <command> [options]      (run as root on Debian 12; see docs/building.md)

commands:
{BENCH}  test [--variant test|lean] [--no-host] [--no-negative-control]
      Host checks (cargo fmt --check, clippy -D warnings, cargo test --workspace, core tests
      under valgrind, loom models, unsafe audit table), then both builds of streams.ko
      (the production one must have no KUnit suite, test driver or fault injection: nm and
      its strings are checked), then the test build's KUnit suites and the guest tests in a
      QEMU guest with the test kernel (KASAN, lockdep, kmemleak), then the negative control
      (a build with a deliberately failing case, which must be reported as failing). Exit
      status 0 only if everything passed.
  test --negative-control
      Only the run with the failing case: shows how a failure is reported (exits non-zero).
  selftest
      The driver's own test: the negative-control run must fail, naming the failing case.
  vm [--variant lean|test] [--build prod|test] [--copy DIR] [--timeout SECS] -- CMD...
      Boot a guest (default: lean kernel) with streams.ko loaded (default: the production
      build; --build test adds the test drivers sloop, echo, nuls, mux, loop/spx, with
      KUnit disabled), DIR copied to /host (the working directory), run CMD with sh, print
      its output, exit with its exit status.
  kernel [--variant test|lean]
      Build (or find cached) the kernel in ~/.cache/rstreams/kernel/<variant>-<key>/.
  modules [--variant test|lean] [--build test|prod] [--negative-control]
      Build the modules through the top-level Kbuild (warnings are errors); default: the
      test build of streams.ko against the test kernel.
  help
      This text.

environment:
  KDIR=/path          use this prebuilt Rust-enabled kernel tree instead of the cache
  RSTREAMS_ACCEL=kvm|tcg   force the QEMU accelerator (default: probe KVM, else TCG)
  RSTREAMS_CACHE=/path     cache root (default ~/.cache/rstreams)
  RSTREAMS_TIMEOUT=SECS    guest timeout (default 900 for tests, 600 for vm)
";

/// The help text, with the bench command's (kept next to its code).
fn help() -> String {
    HELP.replace("{BENCH}", bench::HELP)
}

/// Parsed options (a deliberately small CLI).
#[derive(Default)]
struct Opts {
    variant: Option<Variant>,
    build: Option<Build>,
    negative_control: bool,
    no_host: bool,
    no_negative: bool,
    copy: Option<PathBuf>,
    timeout: Option<u64>,
    cmd: Vec<String>,
}

fn parse(args: &[String]) -> Result<Opts> {
    let mut o = Opts::default();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--variant" => {
                o.variant = Some(Variant::parse(it.next().ok_or("--variant needs a value")?)?)
            }
            "--build" => o.build = Some(Build::parse(it.next().ok_or("--build needs a value")?)?),
            "--negative-control" => o.negative_control = true,
            "--no-host" => o.no_host = true,
            "--no-negative-control" => o.no_negative = true,
            "--copy" => o.copy = Some(PathBuf::from(it.next().ok_or("--copy needs a directory")?)),
            "--timeout" => {
                let t = it.next().ok_or("--timeout needs seconds")?;
                o.timeout = Some(
                    t.parse()
                        .map_err(|_| format!("--timeout {t:?}: not a number"))?,
                );
            }
            "--" => {
                o.cmd = it.cloned().collect();
                break;
            }
            _ => return Err(format!("unknown option {a:?} (see cargo xtask help)")),
        }
    }
    Ok(o)
}

fn timeout(o: &Opts, default: u64) -> Result<Duration> {
    let env = std::env::var("RSTREAMS_TIMEOUT").ok().map(|t| {
        t.parse::<u64>()
            .map_err(|_| format!("RSTREAMS_TIMEOUT={t:?}"))
    });
    Ok(Duration::from_secs(match (o.timeout, env) {
        (Some(t), _) => t,
        (None, Some(t)) => t?,
        (None, None) => default,
    }))
}

/// Host-side checks: formatting, clippy, the workspace tests.
fn host_tests() -> Result<()> {
    let root = util::repo_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    for args in [
        &["fmt", "--all", "--check"][..],
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--quiet",
            "--",
            "-D",
            "warnings",
        ][..],
        &["test", "--workspace", "--quiet"][..],
    ] {
        let st = util::step(format!("host: cargo {}", args.join(" ")));
        util::run(Command::new(&cargo).current_dir(&root).args(args))?;
        st.done();
    }
    // The core's shared cases again under valgrind (memcheck; a definite leak fails).
    let st = util::step("host: streams_core tests under valgrind");
    util::run(
        Command::new(&cargo)
            .current_dir(&root)
            .args(["test", "-p", "streams_core", "--lib", "--quiet"])
            .env(
                "CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_RUNNER",
                "valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite",
            ),
    )?;
    st.done();
    // loom models of the scheduler, back-enable, perimeter and reader-token races (own target
    // dir: other RUSTFLAGS).
    let st = util::step(
        "host: loom models (tests/loom_sched.rs, tests/loom_perim.rs, tests/loom_token.rs)",
    );
    util::run(
        Command::new(&cargo)
            .current_dir(&root)
            .args(["test", "-p", "streams_core", "--release", "--quiet"])
            .args(["--test", "loom_sched", "--test", "loom_perim"])
            .args(["--test", "loom_token"])
            .env("RUSTFLAGS", "--cfg loom")
            .env("CARGO_TARGET_DIR", root.join("target/loom")),
    )?;
    st.done();
    let st = util::step("host: docs/unsafe.md matches the code (scripts/unsafe-report.sh)");
    util::run(Command::new(root.join("scripts/unsafe-report.sh")).arg("--check"))?;
    st.done();
    Ok(())
}

/// What a guest boot is for.
enum Mode<'a> {
    Test {
        negative_control: bool,
    },
    Vm {
        /// The production module unless `--build test`.
        build: Build,
        copy: Option<&'a std::path::Path>,
        cmd: &'a str,
    },
    /// `cargo xtask bench`: the plan file for the guest's sweep.
    Bench {
        plan: &'a str,
    },
}

/// What a guest boot used, besides its console.
pub(crate) struct GuestInfo {
    /// `kvm` or `tcg`.
    pub(crate) accel: String,
    /// The kernel tree.
    pub(crate) kdir: PathBuf,
    /// The static user programs put in `/usr/bin` (they run on the host too).
    pub(crate) programs: Vec<PathBuf>,
}

/// Build everything a guest needs and boot it; returns the console run. Test runs load the
/// test build of `streams.ko`, benchmarks the production one, `vm` the one asked for.
fn guest(v: Variant, mode: &Mode<'_>, limit: Duration) -> Result<(vm::Run, GuestInfo)> {
    deps::ensure()?;
    let k = kernel::ensure(v)?;
    let build = match mode {
        Mode::Test { negative_control } => Build::Test {
            negative_control: *negative_control,
        },
        Mode::Vm { build, .. } => *build,
        Mode::Bench { .. } => Build::Prod,
    };
    let mods = modules::build(&k, v, build)?;
    let progs = modules::build_user()?;
    let root = util::repo_root();
    let negctl = build
        == Build::Test {
            negative_control: true,
        };
    let tag = format!("{}{}", v.name(), if negctl { "-negctl" } else { "" });
    let (kind, copy, cmd, extra) = match mode {
        Mode::Test { .. } => ("test", None, None, vec![]),
        Mode::Vm { build, copy, cmd } => (
            if *build == Build::Prod {
                "vm"
            } else {
                "vm-testbuild"
            },
            *copy,
            Some(*cmd),
            vec![],
        ),
        Mode::Bench { plan } => (
            "bench",
            None,
            None,
            vec![("etc/rstreams/bench.plan", plan.as_bytes())],
        ),
    };
    let initrd = root.join(format!("target/vm/{tag}-{kind}.cpio"));
    initramfs::build(
        &initramfs::Contents {
            release: &k.release,
            modules: &mods.files,
            programs: &progs,
            copy,
            cmd,
            extra: &extra,
        },
        &initrd,
    )?;
    let key = format!("{}:{}", k.kdir.display(), k.release);
    let accel = vm::accel(&k, &initrd, &key)?;
    let log = root.join(format!("target/vm/{tag}-{kind}.log"));
    let (append, echo) = match mode {
        Mode::Test {
            negative_control: false,
        } => ("rstreams.mode=test oops=panic", vm::Echo::All),
        Mode::Test {
            negative_control: true,
        } => (
            "rstreams.mode=test oops=panic rstreams.noleakscan",
            vm::Echo::All,
        ),
        Mode::Vm { .. } => (
            "rstreams.mode=vm loglevel=4 kunit.enable=0",
            vm::Echo::AfterStart,
        ),
        // The guest prints one human-readable line per run between its markers.
        Mode::Bench { .. } => (
            "rstreams.mode=bench loglevel=4 kunit.enable=0",
            vm::Echo::AfterStart,
        ),
    };
    let st = util::step(format!("boot guest ({accel}, {}s limit)", limit.as_secs()));
    let run = vm::boot(&k, &initrd, &accel, append, limit, &log, Some(echo))?;
    st.done_with(if run.timed_out {
        "TIMED OUT"
    } else {
        "guest powered off"
    });
    Ok((
        run,
        GuestInfo {
            accel,
            kdir: k.kdir.clone(),
            programs: progs,
        },
    ))
}

/// Run the KUnit suites in a guest and judge the console.
fn vm_tests(v: Variant, negative_control: bool, limit: Duration) -> Result<ktap::Verdict> {
    let root = util::repo_root();
    let expected = checks::expected_suites(&root, negative_control)?;
    let (run, _) = guest(v, &Mode::Test { negative_control }, limit)?;
    let mut verdict = ktap::judge(&run.lines, &expected, run.timed_out);
    for must in [
        format!("rstreams {} loaded", env!("CARGO_PKG_VERSION")),
        format!("rstreams {} unloading", env!("CARGO_PKG_VERSION")),
    ] {
        if !run.lines.iter().any(|l| l.contains(&must)) {
            verdict
                .problems
                .push(format!("missing result: no {must:?} in the kernel log"));
        }
    }
    println!(
        "---- KUnit summary ({} kernel{}; log {}) ----",
        v.name(),
        if negative_control {
            ", negative control"
        } else {
            ""
        },
        run.log.display()
    );
    if negative_control {
        // Not in the "N passed, N failed" form: CI reads that form as the run's own result,
        // and this run fails on purpose.
        let summary = verdict.summary();
        let body = summary.rsplit_once('\n').map_or("", |(b, _)| b);
        println!("{body}");
        println!(
            "negative control run (one failure expected): {} cases passed, {} failed as intended",
            verdict.passed, verdict.failed
        );
    } else {
        println!("{}", verdict.summary());
    }
    Ok(verdict)
}

/// The closing `N passed, N failed` line of `cargo xtask test`, printed after the OK line.
static CLOSING: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// The negative control must fail, and name exactly the deliberately failing case.
fn negative_control_expected(v: Variant, limit: Duration) -> Result<()> {
    let st = util::step("negative control: a deliberately failing case must be reported");
    let verdict = vm_tests(v, true, limit)?;
    let want = "streams_negative_control.negative_control_fails".to_string();
    if verdict.ok() || verdict.failed_cases != vec![want.clone()] {
        return Err(format!(
            "negative control: expected exactly {want} to fail, driver reported failed cases {:?} (ok={})",
            verdict.failed_cases,
            verdict.ok()
        ));
    }
    st.done_with(&format!("driver reported {want} as failed, as it must"));
    Ok(())
}

/// Build both `streams.ko` builds against the kernel of `v` and check that the production one
/// carries no test code and the test build does (`checks::check_builds`).
fn builds_apart(v: Variant) -> Result<()> {
    deps::ensure()?;
    let k = kernel::ensure(v)?;
    let test = modules::build(
        &k,
        v,
        Build::Test {
            negative_control: false,
        },
    )?;
    let prod = modules::build(&k, v, Build::Prod)?;
    checks::check_builds(&util::repo_root(), prod.streams_ko()?, test.streams_ko()?)
}

fn cmd_test(o: &Opts) -> Result<()> {
    let v = o.variant.unwrap_or(Variant::Test);
    let limit = timeout(o, 900)?;
    checks::check_sources(&util::repo_root())?;
    if o.negative_control {
        let verdict = vm_tests(v, true, limit)?;
        return if verdict.ok() {
            Err("negative control unexpectedly passed".into())
        } else {
            Err("KUnit run failed (negative control, as intended)".into())
        };
    }
    if !o.no_host {
        deps::ensure()?;
        host_tests()?;
    }
    builds_apart(v)?;
    let verdict = vm_tests(v, false, limit)?;
    if !verdict.ok() {
        return Err(format!(
            "VM tests failed: {} problem(s), see above",
            verdict.problems.len()
        ));
    }
    if !o.no_negative {
        negative_control_expected(v, limit)?;
    }
    let _ = CLOSING.set(format!(
        "{} passed, {} failed",
        verdict.passed, verdict.failed
    ));
    Ok(())
}

fn cmd_vm(o: &Opts) -> Result<u8> {
    if o.cmd.is_empty() {
        return Err("usage: cargo xtask vm [--build prod|test] [--copy DIR] -- CMD...".into());
    }
    if let Some(d) = &o.copy {
        if !d.is_dir() {
            return Err(format!("--copy {}: not a directory", d.display()));
        }
    }
    let cmd = o.cmd.join(" ");
    let (run, _) = guest(
        o.variant.unwrap_or(Variant::Lean),
        &Mode::Vm {
            build: o.build.unwrap_or(Build::Prod),
            copy: o.copy.as_deref(),
            cmd: &cmd,
        },
        timeout(o, 600)?,
    )?;
    let rc = run.lines.iter().rev().find_map(|l| {
        l.trim()
            .strip_prefix("RSTREAMS-EXIT rc=")
            .and_then(|r| r.parse::<u8>().ok())
    });
    match rc {
        Some(rc) => Ok(rc),
        None if run.timed_out => Err(format!(
            "guest timed out; console log in {}",
            run.log.display()
        )),
        None => Err(format!(
            "guest ended without the command's exit status; console log in {}",
            run.log.display()
        )),
    }
}

fn main() -> ExitCode {
    let start = Instant::now();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cmd, rest) = match args.split_first() {
        Some((c, r)) => (c.as_str(), r),
        None => ("help", &[][..]),
    };
    // bench has its own options (see bench.rs).
    let parsed = if cmd == "bench" {
        Ok(Opts::default())
    } else {
        parse(rest)
    };
    let result: Result<u8> = parsed.and_then(|o| match cmd {
        "help" | "--help" | "-h" => {
            print!("{}", help());
            Ok(0)
        }
        "bench" => bench::cmd(rest).map(|_| 0),
        "test" => cmd_test(&o).map(|_| 0),
        "selftest" => {
            negative_control_expected(o.variant.unwrap_or(Variant::Test), timeout(&o, 900)?)
                .map(|_| 0)
        }
        "vm" => cmd_vm(&o),
        "kernel" => deps::ensure()
            .and_then(|_| kernel::ensure(o.variant.unwrap_or(Variant::Test)))
            .map(|_| 0),
        "modules" => deps::ensure()
            .and_then(|_| {
                let v = o.variant.unwrap_or(Variant::Test);
                let k = kernel::ensure(v)?;
                let b = match (o.build, o.negative_control) {
                    (Some(Build::Prod), true) => {
                        return Err("--negative-control needs the test build".into())
                    }
                    (Some(Build::Prod), false) => Build::Prod,
                    (_, negative_control) => Build::Test { negative_control },
                };
                modules::build(&k, v, b)
            })
            .map(|_| 0),
        _ => Err(format!("unknown command {cmd:?}\n\n{}", help())),
    });
    let secs = start.elapsed().as_secs_f64();
    match result {
        Ok(0) if cmd != "vm" && cmd != "help" => {
            println!("xtask {cmd}: OK ({secs:.1}s)");
            if let Some(line) = CLOSING.get() {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Ok(rc) => ExitCode::from(rc),
        Err(e) => {
            eprintln!("xtask {cmd}: FAILED after {secs:.1}s: {e}");
            ExitCode::FAILURE
        }
    }
}
