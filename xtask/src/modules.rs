//! The project's kernel modules (through the top-level `Kbuild`) and the static guest programs.
//!
//! Two builds of `streams.ko` from the same sources ([`Build`]): the production module
//! (`cargo xtask bench`, `cargo xtask vm`) and the test build (`RSTREAMS_TEST=1`, Kbuild passes
//! `--cfg rstreams_test`: KUnit suites, test drivers, fault injection; `cargo xtask test`).
//!
//! Modules are built in a staging copy of the sources, `target/kmod/<variant>-<build>/`, one per
//! kernel and build: Kbuild writes objects next to the sources, and sharing one tree between
//! kernels (or builds) would link objects compiled against another kernel's `kernel` crate (or
//! with other cfgs). Files are copied only when changed, so `make` stays incremental. Any
//! warning fails the build.
//!
//! The build goes through the top-level `Makefile`, the one kernel developers and DKMS use
//! (`make KDIR=...`), with the toolchain variables given explicitly; so every test run also
//! builds the modules the way an installation does.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::kernel::{self, Kernel, Variant};
use crate::util::{self, Result};

/// Which `streams.ko` (the file name is the same in both builds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Build {
    /// Production: no KUnit suites, no test drivers, no fault injection.
    Prod,
    /// Test build (`RSTREAMS_TEST=1`): KUnit suites, test drivers and their devices, fault
    /// injection; `negative_control` adds the deliberately failing KUnit case.
    Test { negative_control: bool },
}

impl Build {
    /// `--build prod|test`.
    pub(crate) fn parse(s: &str) -> Result<Self> {
        match s {
            "prod" => Ok(Build::Prod),
            "test" => Ok(Build::Test {
                negative_control: false,
            }),
            _ => Err(format!("unknown module build {s:?} (prod or test)")),
        }
    }

    /// Name of the build in staging directories and logs.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Build::Prod => "prod",
            Build::Test {
                negative_control: false,
            } => "test",
            Build::Test {
                negative_control: true,
            } => "test-negctl",
        }
    }
}

/// Built modules.
pub(crate) struct Modules {
    /// The staging tree they were built in (`make -C` here installs them).
    pub(crate) stage: PathBuf,
    /// The `.ko` files.
    pub(crate) files: Vec<PathBuf>,
}

impl Modules {
    /// `streams.ko` among them.
    pub(crate) fn streams_ko(&self) -> Result<&Path> {
        self.files
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == "streams.ko"))
            .map(PathBuf::as_path)
            .ok_or_else(|| "the module build produced no streams.ko".to_string())
    }
}

/// Build the modules against `k`, as build `b`.
pub(crate) fn build(k: &Kernel, v: Variant, b: Build) -> Result<Modules> {
    let root = util::repo_root();
    let name = format!("{}-{}", v.name(), b.name());
    let stage = root.join("target/kmod").join(&name);
    let st = util::step(format!(
        "build modules ({name}) via the Makefile and Kbuild: make -C {} KDIR={}",
        stage.display(),
        k.kdir.display()
    ));
    sync_sources(&root, &stage)?;
    let log = stage.join("build.log");
    let _ = fs::remove_file(&log);
    let mut cmd = makefile(&stage, &k.kdir);
    if let Build::Test { negative_control } = b {
        cmd.arg("RSTREAMS_TEST=1");
        if negative_control {
            cmd.arg("RSTREAMS_NEGATIVE_CONTROL=1");
        }
    }
    cmd.arg("modules");
    let lines = util::run_logged(&mut cmd, &log, true)?;
    let warnings: Vec<&String> = lines
        .iter()
        .filter(|l| l.to_lowercase().contains("warning"))
        .collect();
    if !warnings.is_empty() {
        return Err(format!(
            "module build produced {} warning line(s) (warnings are errors here); see {}",
            warnings.len(),
            log.display()
        ));
    }
    let files: Vec<PathBuf> = util::walk(&stage)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ko"))
        .collect();
    if files.is_empty() {
        return Err(format!("no .ko produced under {}", stage.display()));
    }
    let names: Vec<String> = files
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    st.done_with(&format!("{} (no warnings)", names.join(" ")));
    Ok(Modules { stage, files })
}

/// Copy (when changed) what the module build reads into `dest`: `Makefile`, `Kbuild`,
/// `rust/modules/` and the Rust sources of the core and the pipe driver it mounts. The same set
/// is DKMS's source tree and the `rstreams-dkms` package's.
pub(crate) fn sync_sources(root: &Path, dest: &Path) -> Result<()> {
    for f in ["Kbuild", "Makefile"] {
        util::sync_file(&root.join(f), &dest.join(f))?;
    }
    let rs_or_kbuild = |p: &Path| {
        let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        n.ends_with(".rs") || n.ends_with(".c") || n.ends_with(".h") || n == "Kbuild"
    };
    util::sync_tree(
        &root.join("rust/modules"),
        &dest.join("rust/modules"),
        &rs_or_kbuild,
    )?;
    for src in ["rust/streams_core/src", "rust/pipe/src", "rust/tpi_udp/src"] {
        util::sync_tree(&root.join(src), &dest.join(src), &rs_or_kbuild)?;
    }
    Ok(())
}

/// `make -C dir KDIR=kdir <the kernel's toolchain variables>` through the top-level `Makefile`
/// (synced into `dir`), with the kernel-build PATH.
pub(crate) fn makefile(dir: &Path, kdir: &Path) -> Command {
    let mut c = Command::new("make");
    c.arg("-C")
        .arg(dir)
        .arg(format!("KDIR={}", kdir.display()))
        .args(kernel::make_vars())
        .env("PATH", crate::deps::kernel_path());
    c
}

/// Build the workspace's user-space programs as static binaries for the guest; returns them.
pub(crate) fn build_user() -> Result<Vec<PathBuf>> {
    let root = util::repo_root();
    let st = util::step("build static user-space programs for the guest (+crt-static)");
    let tdir = root.join("target/guest");
    let triple = "x86_64-unknown-linux-gnu";
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo
        .current_dir(&root)
        .env("CARGO_TARGET_DIR", &tdir)
        .env("RUSTFLAGS", "-C target-feature=+crt-static")
        .args([
            "build",
            "--quiet",
            "--release",
            "--workspace",
            "--exclude",
            "xtask",
            "--bins",
            "--target",
            triple,
        ]);
    util::run(&mut cargo)?;
    let rel = tdir.join(triple).join("release");
    let mut bins = Vec::new();
    if let Ok(rd) = fs::read_dir(&rel) {
        for e in rd.flatten() {
            let p = e.path();
            let exec = e.metadata().map(|m| {
                use std::os::unix::fs::PermissionsExt;
                m.is_file() && m.permissions().mode() & 0o111 != 0
            });
            let plain = p
                .file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.contains('.'));
            if exec.unwrap_or(false) && plain {
                bins.push(p);
            }
        }
    }
    bins.extend(build_strc(&root, &tdir, triple)?);
    bins.sort();
    st.done_with(&format!("{} program(s)", bins.len()));
    Ok(bins)
}

/// The sources of `strc`: the `.c` files directly in `tests/vm/ctest` (its subdirectories
/// hold programs of their own, such as `xti/xtiudp.c`).
pub(crate) fn strc_sources(root: &Path) -> Vec<PathBuf> {
    let mut sources: Vec<PathBuf> = fs::read_dir(root.join("tests/vm/ctest"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "c"))
        .collect();
    sources.sort();
    sources
}

/// The C integration test `strc` (`tests/vm/ctest/*.c`): compiled with the host C compiler
/// against `<stropts.h>` and linked statically with `libstreams.a` (the staticlib of
/// `user/libstreams-sys`, built here for the guest), as an SVR4 program would be; and the XTI
/// program `xtiudp` (`tests/vm/ctest/xti/xtiudp.c`) against `<xti.h>` and the same archive,
/// which exports libxnet's functions (the package check links it with `-lxnet`). Warnings are
/// errors; the linker's notes about glibc's NSS functions in static programs are dropped.
fn build_strc(root: &Path, tdir: &Path, triple: &str) -> Result<Vec<PathBuf>> {
    util::run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(root)
            .env("CARGO_TARGET_DIR", tdir)
            .env("RUSTFLAGS", "-C target-feature=+crt-static")
            .args([
                "rustc",
                "--quiet",
                "--release",
                "-p",
                "libstreams-sys",
                "--lib",
            ])
            .args(["--crate-type", "staticlib", "--target", triple]),
    )?;
    let lib = tdir.join(triple).join("release/libstreams.a");
    let inc = root.join("user/libstreams-sys/include");
    let programs = [
        ("strc", strc_sources(root)),
        ("xtiudp", vec![root.join("tests/vm/ctest/xti/xtiudp.c")]),
    ];
    let mut out = Vec::new();
    for (name, sources) in programs {
        let exe = tdir.join(name);
        let mut cc = Command::new("cc");
        cc.args(["-static", "-O2", "-Wall", "-Wextra", "-Werror", "-I"])
            .arg(&inc)
            .arg("-o")
            .arg(&exe)
            .args(&sources)
            .arg(&lib)
            .args(["-lpthread", "-ldl", "-lm"]);
        let res = cc
            .output()
            .map_err(|e| format!("cannot run cc (apt-get install gcc): {e}"))?;
        if !res.status.success() {
            return Err(format!(
                "cc failed for {name} (tests/vm/ctest) ({}):\n{}",
                res.status,
                String::from_utf8_lossy(&res.stderr)
            ));
        }
        out.push(exe);
    }
    Ok(out)
}
