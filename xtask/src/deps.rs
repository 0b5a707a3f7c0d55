//! Host toolchain: check what the kernel build and the guest need, install only what is missing.
//!
//! The kernel's Rust side must be built by the Debian `rustc-web` 1.96 (with `rust-src`), pinned
//! because a newer upload may not build 6.12; rustup's toolchain (no `rust-src`) is used only for
//! the host tests and the static guest programs. bindgen comes from crates.io (Debian's is too
//! old for 6.12). `apt-get update` runs once, and only when something is missing.

use std::path::PathBuf;
use std::process::Command;

use crate::util::{self, Result};

/// Pinned version of the Debian Rust toolchain used for the kernel.
pub(crate) const RUST_WEB_VERSION: &str = "1.96.0+dfsg1-1~deb12u2";
/// bindgen-cli version (kernel minimum is 0.65.1).
pub(crate) const BINDGEN_VERSION: &str = "0.70.1";

/// Debian packages: `(name, pinned version)`.
const PACKAGES: &[(&str, Option<&str>)] = &[
    ("linux-source-6.12", None),
    ("rustc-web", Some(RUST_WEB_VERSION)),
    ("rust-web-src", Some(RUST_WEB_VERSION)),
    ("cargo-web", Some(RUST_WEB_VERSION)),
    ("libclang-dev", None),
    ("clang", None),
    ("lld", None),
    ("llvm", None),
    ("bc", None),
    ("flex", None),
    ("bison", None),
    ("libelf-dev", None),
    ("libssl-dev", None),
    ("cpio", None),
    ("busybox-static", None),
    ("qemu-system-x86", None),
    ("kmod", None),
    ("make", None),
    ("gcc", None),
    ("libc6-dev", None),
    ("xz-utils", None),
    // host checks: valgrind runs the core's tests, gnuplot draws perftest's charts, mandoc
    // lints the manual pages
    ("valgrind", None),
    ("gnuplot-nox", None),
    ("mandoc", None),
    // the installation checks: a DKMS build of the modules against the test kernel; the
    // Debian packages (cargo xtask package): dpkg-architecture, lintian
    ("dkms", None),
    ("dpkg-dev", None),
    ("lintian", None),
    // the guest profile of `cargo xtask bench`: the host's perf, copied into the guest
    ("linux-perf", None),
];

/// Packages installed without their recommendations (dkms would pull in the Debian kernel's
/// headers, which nothing here uses).
const WITHOUT_RECOMMENDS: &[&str] = &["dkms"];

/// The Debian rustc that builds the kernel and the modules.
pub(crate) const KERNEL_RUSTC: &str = "/usr/bin/rustc";
/// Its rustdoc.
pub(crate) const KERNEL_RUSTDOC: &str = "/usr/bin/rustdoc";
/// The Rust standard library source the kernel builds `core` from.
pub(crate) const RUST_LIB_SRC: &str = "/usr/lib/rustlib/src/rust/library";

/// Where `cargo install` puts bindgen.
pub(crate) fn cargo_root() -> PathBuf {
    util::cache_root().join("cargo-root")
}

/// The bindgen the kernel build uses.
pub(crate) fn bindgen() -> PathBuf {
    cargo_root().join("bin/bindgen")
}

/// `PATH` for the kernel build: bindgen first, then the system; never `~/.cargo/bin` (rustup's
/// rustc has no `rust-src`, so `make rustavailable` would fail if it came first).
pub(crate) fn kernel_path() -> String {
    format!(
        "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        cargo_root().join("bin").display()
    )
}

/// Installed version of a Debian package, if installed.
fn dpkg_version(pkg: &str) -> Option<String> {
    let s =
        util::try_output(Command::new("dpkg-query").args(["-W", "-f=${Status}\t${Version}", pkg]))?;
    let (status, version) = s.split_once('\t')?;
    (status == "install ok installed").then(|| version.to_string())
}

/// The cargo to install bindgen with (rustup's if present).
fn host_cargo() -> PathBuf {
    let c = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| util::home().join(".cargo"));
    let p = c.join("bin/cargo");
    if p.exists() {
        p
    } else {
        PathBuf::from("cargo")
    }
}

/// Make sure every package and bindgen are present; install what is missing.
pub(crate) fn ensure() -> Result<()> {
    let st = util::step("check host packages and bindgen");
    let mut missing = Vec::new();
    for (pkg, pin) in PACKAGES {
        match (dpkg_version(pkg), pin) {
            (Some(v), Some(p)) if v != *p => missing.push(format!("{pkg}={p}")),
            (Some(_), _) => {}
            (None, Some(p)) => missing.push(format!("{pkg}={p}")),
            (None, None) => missing.push((*pkg).to_string()),
        }
    }
    if !missing.is_empty() {
        eprintln!("    missing: {}", missing.join(" "));
        if util::try_output(Command::new("id").arg("-u")).as_deref() != Some("0") {
            return Err(format!(
                "missing packages and not root; run as root or install: apt-get install {}",
                missing.join(" ")
            ));
        }
        util::run(Command::new("apt-get").args(["update", "-qq"]))?;
        let (lean, full): (Vec<&String>, Vec<&String>) = missing
            .iter()
            .partition(|p| WITHOUT_RECOMMENDS.contains(&p.as_str()));
        for (pkgs, recommends) in [(full, true), (lean, false)] {
            if pkgs.is_empty() {
                continue;
            }
            util::run(
                Command::new("apt-get")
                    .env("DEBIAN_FRONTEND", "noninteractive")
                    .args(["install", "-y", "-qq", "--allow-downgrades"])
                    .args((!recommends).then_some("--no-install-recommends"))
                    .args(pkgs),
            )?;
        }
    }
    let bg = bindgen();
    let have = util::try_output(Command::new(&bg).arg("--version")).unwrap_or_default();
    if !have.contains(BINDGEN_VERSION) {
        eprintln!(
            "    bindgen {BINDGEN_VERSION} missing at {} (found: {have:?})",
            bg.display()
        );
        util::run(
            Command::new(host_cargo())
                .args([
                    "install",
                    "--locked",
                    "bindgen-cli",
                    "--version",
                    BINDGEN_VERSION,
                    "--root",
                ])
                .arg(cargo_root()),
        )?;
    }
    st.done_with(if missing.is_empty() {
        "all present"
    } else {
        "installed the missing ones"
    });
    Ok(())
}

/// Describe the toolchain (part of the kernel cache key).
pub(crate) fn toolchain_id() -> String {
    let rustc = util::try_output(Command::new(KERNEL_RUSTC).arg("-vV")).unwrap_or_default();
    let bindgen = util::try_output(Command::new(bindgen()).arg("--version")).unwrap_or_default();
    let clang = util::try_output(Command::new("clang").arg("--version")).unwrap_or_default();
    let clang = clang.lines().next().unwrap_or_default();
    format!("{rustc}\n{bindgen}\n{clang}")
}
