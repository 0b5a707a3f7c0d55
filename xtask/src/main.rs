//! `cargo xtask`: the rstreams build driver. See `cargo xtask help` and `docs/building.md`.
//! Its dependencies are few and common (clap for the command line) so that it still builds in
//! well under a minute on a fresh machine.
//!
//! It turns a fresh Debian 12 machine into one that builds a Rust-enabled Linux 6.12, builds
//! `streams.ko` through the top-level `Kbuild`, boots a QEMU guest and runs the KUnit suites
//! (the core's own test tables) there, failing on any failed case, missing result or kernel
//! report (oops, BUG, WARNING, KASAN, lockdep, kmemleak).

mod bench;
mod checks;
mod deps;
mod initramfs;
mod install;
mod kernel;
mod ktap;
mod man;
mod modules;
mod package;
mod profile;
mod util;
mod vm;

use clap::{CommandFactory, Parser, Subcommand};
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use kernel::Variant;
use modules::Build;
use util::Result;

/// `cargo xtask`: the commands. The long texts are what `cargo xtask help COMMAND` prints.
#[derive(Debug, Parser)]
#[command(
    name = "cargo xtask",
    bin_name = "cargo xtask",
    about = "The rstreams build driver: kernel, modules, QEMU guest, KUnit, benchmarks \
             (run as root on Debian 12; see docs/building.md)",
    after_help = ENVIRONMENT,
    disable_version_flag = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

const ENVIRONMENT: &str = "\
Environment:
  KDIR=/path               use this prebuilt Rust-enabled kernel tree instead of the cache
  RSTREAMS_ACCEL=kvm|tcg   force the QEMU accelerator (default: probe KVM, else TCG)
  RSTREAMS_CACHE=/path     cache root (default ~/.cache/rstreams)
  RSTREAMS_TIMEOUT=SECS    guest timeout (default 1200 for tests, 600 for vm)";

#[derive(Debug, Subcommand)]
enum Cmd {
    /// The main job: the perftest sweep in one guest, and its report
    #[command(long_about = bench::LONG_ABOUT)]
    Bench(bench::Args),
    /// Host checks, both builds of streams.ko, KUnit and guest tests, the negative control
    ///
    /// Host checks (cargo fmt --check, clippy -D warnings, cargo test --workspace, core tests
    /// under valgrind, loom models, man pages, unsafe audit table), the Debian packages (also
    /// with --no-host), then both builds of streams.ko (the production one must have no KUnit
    /// suite, test driver or fault injection: nm and its strings are checked; make
    /// modules_install and DKMS), then the test build's KUnit suites and the guest tests in a
    /// QEMU guest with the test kernel (KASAN, lockdep, kmemleak) whose perftest, scls and
    /// libraries come from the packages, which after unloading the test build loads the
    /// DKMS-built modules with modprobe; then the negative control (a build with a
    /// deliberately failing case, which must be reported as failing).
    /// Exit status 0 only if everything passed. With --negative-control: only the run with the
    /// failing case, to show how a failure is reported (exits non-zero).
    Test(TestArgs),
    /// The driver's own test: the negative-control run must fail, naming the failing case
    Selftest(GuestArgs),
    /// Boot a guest with streams.ko loaded and run CMD there
    ///
    /// Boot a guest (default: lean kernel) with streams.ko loaded (default: the production
    /// build; --build test adds the test drivers sloop, echo, nuls, mux, loop/spx, with KUnit
    /// disabled), DIR copied to /host (the working directory), run CMD with sh, print its
    /// output, exit with its exit status.
    Vm(VmArgs),
    /// The long random-syscall stress (strstress) on the test and KCSAN kernels
    ///
    /// Boot a guest with the test build of streams.ko and run strstress (tests/vm/strstress,
    /// docs/stress.md): -n random STREAMS system calls from -p processes of -t threads, with
    /// sequence-checked pipes, workers killed and restarted; then kmemleak, the module unload
    /// and kmemleak again. Once on the test kernel (KASAN, lockdep, hung-task and soft-lockup
    /// detectors), then on the kcsan kernel (KCSAN instead of KASAN; built on first use, ~15
    /// min cold), unless --variant names one. Passes only if strstress passed and the console
    /// has no kernel report (KASAN, KCSAN data race, lockdep, WARN, hung task, soft lockup,
    /// leak).
    Stress(StressArgs),
    /// Build (or find cached) the kernel in ~/.cache/rstreams/kernel/<variant>-<key>/
    Kernel(KernelArgs),
    /// Build the modules through the top-level Kbuild (warnings are errors)
    ///
    /// Build the modules through the top-level Kbuild (warnings are errors); default: the test
    /// build of streams.ko against the test kernel.
    Modules(ModulesArgs),
    /// Manual pages into target/man/, linted with mandoc
    ///
    /// Render perftest(8), perftest-sweep(8), perftest-report(8) and scls(8) from the programs'
    /// clap definitions, copy the hand-written pages of docs/man/ (streamio(7), putmsg(2),
    /// getmsg(2), isastream(3), fattach(3), fdetach(3), libstreams_pipe(7)), and fail on any
    /// message of mandoc -T lint -W warning. cargo xtask test runs the same as a host check.
    Man,
    /// Debian packages in target/package/, checked with lintian
    ///
    /// Build rstreams-dkms (module sources, dkms.conf, udev rules, modules-load.d),
    /// libstreams0 (libstreams.so.0), libstreams-dev (headers, static library, libstreams.pc,
    /// the API's manual pages), libxnet0 (libxnet.so.0, XTI), libxnet-dev (<xti.h>, libxnet.a,
    /// xnet.pc, the t_*(3) pages) and rstreams-tools (perftest, scls, libstreams_pipe.so, their
    /// pages) with dpkg-deb, run lintian on them (any error fails), then use their contents
    /// unpacked: compile tests/vm/ctest with pkg-config --static, run a program linked with
    /// libstreams.so.0, an XTI program built with cc -lxnet, perftest and scls, and a pipeline
    /// under LD_PRELOAD.
    Package,
}

/// `--variant test|lean|kcsan`.
#[derive(Debug, clap::Args)]
struct KernelArgs {
    /// Kernel variant: test (KASAN, lockdep, kmemleak, fault injection), lean, or kcsan
    /// (KCSAN instead of KASAN) [default: test]
    #[arg(long, value_name = "test|lean|kcsan", value_parser = Variant::parse)]
    variant: Option<Variant>,
}

#[derive(Debug, clap::Args)]
struct StressArgs {
    /// Only this kernel variant (test or kcsan) [default: test, then kcsan]
    #[arg(long, value_name = "test|kcsan", value_parser = Variant::parse)]
    variant: Option<Variant>,
    /// System calls per run
    #[arg(short = 'n', long, default_value_t = 10_000_000)]
    ops: u64,
    /// Worker processes
    #[arg(short = 'p', long, default_value_t = 4)]
    procs: u64,
    /// Random-operation threads per worker
    #[arg(short = 't', long, default_value_t = 3)]
    threads: u64,
    /// Seed
    #[arg(short = 's', long, default_value_t = 1)]
    seed: u64,
    /// Guest time limit in seconds, per run [default: $RSTREAMS_TIMEOUT or 10800]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// After strstress, the fault-injection pass (tests/vm/fault.sh): PERCENT of the
    /// allocations under our modules fail while strtest and CALLS strstress calls run
    #[arg(long, num_args = 2, value_names = ["PERCENT", "CALLS"])]
    faults: Option<Vec<u64>>,
}

/// Options of the commands that boot a test guest.
#[derive(Debug, clap::Args)]
struct GuestArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// Guest time limit in seconds [default: $RSTREAMS_TIMEOUT or 1200]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
}

#[derive(Debug, clap::Args)]
struct TestArgs {
    #[command(flatten)]
    guest: GuestArgs,
    /// Skip the host checks
    #[arg(long)]
    no_host: bool,
    /// Skip the negative-control run
    #[arg(long = "no-negative-control")]
    no_negative: bool,
    /// Only the run with the deliberately failing case (exits non-zero)
    #[arg(long)]
    negative_control: bool,
}

#[derive(Debug, clap::Args)]
struct VmArgs {
    /// Kernel variant: lean or test [default: lean]
    #[arg(long, value_name = "lean|test", value_parser = Variant::parse)]
    variant: Option<Variant>,
    /// streams.ko build: prod or test [default: prod]
    #[arg(long, value_name = "prod|test", value_parser = Build::parse)]
    build: Option<Build>,
    /// Directory copied to /host in the guest (the working directory)
    #[arg(long, value_name = "DIR")]
    copy: Option<PathBuf>,
    /// Guest time limit in seconds [default: $RSTREAMS_TIMEOUT or 600]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// The command, run with sh -c in the guest
    #[arg(last = true, required = true, value_name = "CMD")]
    cmd: Vec<String>,
}

#[derive(Debug, clap::Args)]
struct ModulesArgs {
    #[command(flatten)]
    kernel: KernelArgs,
    /// streams.ko build: test or prod [default: test]
    #[arg(long, value_name = "test|prod", value_parser = Build::parse)]
    build: Option<Build>,
    /// Add the deliberately failing KUnit case (test build only)
    #[arg(long)]
    negative_control: bool,
}

/// The guest time limit: `--timeout`, else `$RSTREAMS_TIMEOUT`, else `default`.
fn timeout(given: Option<u64>, default: u64) -> Result<Duration> {
    let env = std::env::var("RSTREAMS_TIMEOUT").ok().map(|t| {
        t.parse::<u64>()
            .map_err(|_| format!("RSTREAMS_TIMEOUT={t:?}"))
    });
    Ok(Duration::from_secs(match (given, env) {
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
    let st = util::step("host: manual pages in target/man/ (mandoc -T lint -W warning)");
    let pages = man::build(&root)?;
    st.done_with(&format!("{} pages, lint clean", pages.len()));
    let st = util::step("host: docs/unsafe.md matches the code (scripts/unsafe-report.sh)");
    util::run(Command::new(root.join("scripts/unsafe-report.sh")).arg("--check"))?;
    st.done();
    Ok(())
}

/// `cargo xtask package`'s checks (dpkg-deb, lintian, the contents used unpacked); returns
/// the unpacked tree. `cargo xtask test` runs them even with `--no-host`: its guest is
/// assembled from the packages.
fn packages(root: &std::path::Path) -> Result<PathBuf> {
    let st = util::step("Debian packages (cargo xtask package: dpkg-deb, lintian, contents)");
    let debs = package::build(root)?;
    package::lint(&debs)?;
    let unpacked = package::check_contents(root, &debs)?;
    st.done_with(&format!("{} packages, lintian without errors", debs.len()));
    Ok(unpacked)
}

/// What a guest boot is for.
enum Mode<'a> {
    /// The KUnit suites and guest tests; with `packaged`, the packages' files and the
    /// DKMS-built modules too (`None`: the negative control, which only needs KUnit).
    Test {
        negative_control: bool,
        packaged: Option<&'a initramfs::Packaged>,
    },
    Vm {
        /// The production module unless `--build test`.
        build: Build,
        copy: Option<&'a std::path::Path>,
        cmd: &'a str,
    },
    /// `cargo xtask bench`: the plan file for the guest's sweep, and what the guest profile
    /// after it needs (its case list and perf), when it is on.
    Bench {
        plan: &'a str,
        profile: Option<&'a profile::Shipment>,
    },
    /// `cargo xtask stress`: strstress's arguments, and fault.sh's (`PERCENT CALLS`) when
    /// the fault-injection pass runs after it.
    Stress {
        args: &'a str,
        faults: Option<&'a str>,
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
        Mode::Test {
            negative_control, ..
        } => Build::Test {
            negative_control: *negative_control,
        },
        Mode::Vm { build, .. } => *build,
        Mode::Bench { .. } => Build::Prod,
        Mode::Stress { .. } => Build::Test {
            negative_control: false,
        },
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
        Mode::Bench { plan, profile } => {
            let mut extra = vec![("etc/rstreams/bench.plan", plan.as_bytes())];
            if let Some(p) = profile {
                extra.push(("etc/rstreams/profile.plan", p.plan.as_bytes()));
            }
            ("bench", None, None, extra)
        }
        Mode::Stress { args, faults } => {
            let mut extra = vec![("etc/rstreams/stress.args", args.as_bytes())];
            if let Some(f) = faults {
                extra.push(("etc/rstreams/faults", f.as_bytes()));
            }
            ("stress", None, None, extra)
        }
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
            host_files: match mode {
                Mode::Bench {
                    profile: Some(p), ..
                } => &p.perf,
                _ => &[],
            },
            packaged: match mode {
                Mode::Test { packaged, .. } => *packaged,
                _ => None,
            },
        },
        &initrd,
    )?;
    let key = format!("{}:{}", k.kdir.display(), k.release);
    let accel = vm::accel(&k, &initrd, &key)?;
    let log = root.join(format!("target/vm/{tag}-{kind}.log"));
    let (append, echo) = match mode {
        Mode::Test {
            negative_control: false,
            ..
        } => ("rstreams.mode=test oops=panic", vm::Echo::All),
        Mode::Test {
            negative_control: true,
            ..
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
        // The KUnit suites are `cargo xtask test`'s: not run again here.
        Mode::Stress { .. } => (
            "rstreams.mode=stress oops=panic kunit.enable=0",
            vm::Echo::All,
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

/// Run the KUnit suites in a guest and judge the console. With `packaged`, the guest's
/// `dkms` step (the DKMS-built modules loaded with modprobe) must have run.
fn vm_tests(
    v: Variant,
    negative_control: bool,
    packaged: Option<&initramfs::Packaged>,
    limit: Duration,
) -> Result<ktap::Verdict> {
    let root = util::repo_root();
    let expected = checks::expected_suites(&root, negative_control)?;
    let mode = Mode::Test {
        negative_control,
        packaged,
    };
    let (run, _) = guest(v, &mode, limit)?;
    let mut verdict = ktap::judge(&run.lines, &expected, run.timed_out);
    let mut musts = vec![
        format!("rstreams {} loaded", env!("CARGO_PKG_VERSION")),
        format!("rstreams {} unloading", env!("CARGO_PKG_VERSION")),
    ];
    if packaged.is_some() {
        // A step that did not run is as much a failure as one that failed.
        musts.push("RSTREAMS-STEP dkms rc=".into());
    }
    for must in musts {
        if !run.lines.iter().any(|l| l.contains(&must)) {
            verdict
                .problems
                .push(format!("missing result: no {must:?} in the console"));
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
    let verdict = vm_tests(v, true, None, limit)?;
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

/// Build both `streams.ko` builds against the kernel of `v` (through the top-level `Makefile`),
/// check that the production one carries no test code and the test build does
/// (`checks::check_builds`), that its `make modules_install` gives modprobe the right
/// dependencies (`install::check`) and that DKMS builds the modules (`install::check_dkms`,
/// whose output is returned: the test guest loads it).
fn builds_apart(v: Variant) -> Result<install::Dkms> {
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
    let root = util::repo_root();
    checks::check_builds(&root, prod.streams_ko()?, test.streams_ko()?)?;
    install::check(&root, &k, &prod)?;
    install::check_dkms(&root, &k)
}

fn cmd_test(o: &TestArgs) -> Result<()> {
    let v = o.guest.kernel.variant.unwrap_or(Variant::Test);
    let limit = timeout(o.guest.timeout, 1200)?;
    checks::check_sources(&util::repo_root())?;
    if o.negative_control {
        let verdict = vm_tests(v, true, None, limit)?;
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
    deps::ensure()?;
    let packaged = initramfs::Packaged {
        unpacked: packages(&util::repo_root())?,
        dkms: builds_apart(v)?,
    };
    let verdict = vm_tests(v, false, Some(&packaged), limit)?;
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

/// `cargo xtask stress`: strstress on each kernel variant asked for, judged from the console.
fn cmd_stress(o: &StressArgs) -> Result<()> {
    let variants = match o.variant {
        Some(Variant::Lean) => return Err("--variant: test or kcsan (lean has no checks)".into()),
        Some(v) => vec![v],
        None => vec![Variant::Test, Variant::Kcsan],
    };
    let limit = timeout(o.timeout, 10_800)?;
    // strstress's own limit leaves time for the leak scans and the unload.
    let max_secs = limit.as_secs().saturating_sub(300).max(60);
    let args = format!(
        "-n {} -p {} -t {} -s {} --max-secs {max_secs}",
        o.ops, o.procs, o.threads, o.seed
    );
    let mut failed = Vec::new();
    for v in variants {
        let st = util::step(format!(
            "stress on the {} kernel: strstress {args}",
            v.name()
        ));
        let faults = o.faults.as_ref().map(|f| format!("{} {}", f[0], f[1]));
        let mode = Mode::Stress {
            args: &args,
            faults: faults.as_deref(),
        };
        let (run, _) = guest(v, &mode, limit)?;
        let mut verdict = ktap::judge(
            &run.lines,
            &std::collections::BTreeMap::new(),
            run.timed_out,
        );
        let summary = run
            .lines
            .iter()
            .map(|l| ktap::strip_ts(l).trim())
            .rfind(|l| l.starts_with("strstress: ") && l.contains(" calls in "))
            .map(str::to_string);
        if !run.lines.iter().any(|l| l.trim() == "strstress: PASS") {
            verdict
                .problems
                .push("strstress did not report PASS".to_string());
        }
        println!(
            "---- stress on the {} kernel (log {}) ----",
            v.name(),
            run.log.display()
        );
        if let Some(s) = &summary {
            println!("{s}");
        }
        for p in &verdict.problems {
            println!("problem: {p}");
        }
        if verdict.ok() {
            st.done_with("no kernel report, no leak, module unloaded, strstress passed");
        } else {
            failed.push(format!(
                "{}: {} problem(s)",
                v.name(),
                verdict.problems.len()
            ));
        }
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("stress failed: {}", failed.join(", ")))
    }
}

fn cmd_vm(o: &VmArgs) -> Result<u8> {
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
        timeout(o.timeout, 600)?,
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
    // clap prints help (exit 0) and usage errors (exit 2) itself.
    let cli = Cli::parse();
    let Some(cmd) = cli.cmd else {
        let _ = Cli::command().print_help();
        return ExitCode::SUCCESS;
    };
    let name = match &cmd {
        Cmd::Bench(_) => "bench",
        Cmd::Test(_) => "test",
        Cmd::Selftest(_) => "selftest",
        Cmd::Vm(_) => "vm",
        Cmd::Stress(_) => "stress",
        Cmd::Kernel(_) => "kernel",
        Cmd::Modules(_) => "modules",
        Cmd::Man => "man",
        Cmd::Package => "package",
    };
    let result: Result<u8> = match cmd {
        Cmd::Man => man::cmd().map(|_| 0),
        Cmd::Package => deps::ensure().and_then(|_| package::cmd()).map(|_| 0),
        Cmd::Bench(a) => bench::cmd(a).map(|_| 0),
        Cmd::Test(o) => cmd_test(&o).map(|_| 0),
        Cmd::Selftest(o) => timeout(o.timeout, 900)
            .and_then(|t| negative_control_expected(o.kernel.variant.unwrap_or(Variant::Test), t))
            .map(|_| 0),
        Cmd::Vm(o) => cmd_vm(&o),
        Cmd::Stress(o) => cmd_stress(&o).map(|_| 0),
        Cmd::Kernel(o) => deps::ensure()
            .and_then(|_| kernel::ensure(o.variant.unwrap_or(Variant::Test)))
            .map(|_| 0),
        Cmd::Modules(o) => deps::ensure()
            .and_then(|_| {
                let v = o.kernel.variant.unwrap_or(Variant::Test);
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
    };
    let secs = start.elapsed().as_secs_f64();
    match result {
        Ok(0) if name != "vm" => {
            println!("xtask {name}: OK ({secs:.1}s)");
            if let Some(line) = CLOSING.get() {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Ok(rc) => ExitCode::from(rc),
        Err(e) => {
            eprintln!("xtask {name}: FAILED after {secs:.1}s: {e}");
            ExitCode::FAILURE
        }
    }
}
