//! The guest kernel: Linux 6.12 with Rust and KUnit, configured from fragments, built and cached.
//!
//! Config = `make tinyconfig` + `xtask/kconfig/base.config` + the variant's delta
//! (`test.config`: KASAN, lockdep, atomic-sleep checks, kmemleak, hung-task and soft-lockup
//! detectors, fault injection; `kcsan.config`: the same checks with KCSAN instead of KASAN,
//! which cannot be combined; `lean.config`: none), merged
//! with `scripts/kconfig/merge_config.sh`, then `olddefconfig`. Kconfig silently drops options
//! whose dependencies are not met, so every option of the fragments is checked afterwards.
//!
//! The built tree is cached in `~/.cache/rstreams/kernel/<variant>-<key>/` where the key hashes
//! the kernel source version, the fragments, the toolchain and this recipe. A `complete` marker
//! (written atomically, last) says the tree may be used; an interrupted build has none, and the
//! next run configures again and lets `make` finish it. `KDIR=/path` uses a prebuilt tree
//! instead (no configuration, no cache).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::deps;
use crate::util::{self, Result};

/// Bumped when the build steps below change in a way that must invalidate cached kernels.
const RECIPE: &str = "rstreams-kernel-recipe-1";
/// The Debian kernel source package and its tarball.
const SOURCE_PKG: &str = "linux-source-6.12";
const TARBALL: &str = "/usr/src/linux-source-6.12.tar.xz";

/// Which kernel to build.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Variant {
    /// CI: sanitizers and lock checking.
    Test,
    /// Benchmarks: no debugging options.
    Lean,
    /// `cargo xtask stress`: the data-race detector KCSAN (instead of KASAN) and lock checking.
    Kcsan,
}

impl Variant {
    pub(crate) fn parse(s: &str) -> Result<Self> {
        match s {
            "test" => Ok(Variant::Test),
            "lean" => Ok(Variant::Lean),
            "kcsan" => Ok(Variant::Kcsan),
            _ => Err(format!(
                "unknown kernel variant {s:?} (test, lean or kcsan)"
            )),
        }
    }
    pub(crate) fn name(self) -> &'static str {
        match self {
            Variant::Test => "test",
            Variant::Lean => "lean",
            Variant::Kcsan => "kcsan",
        }
    }
}

/// A configured and built kernel tree.
pub(crate) struct Kernel {
    /// The tree (`KDIR` for module builds).
    pub(crate) kdir: PathBuf,
    /// `include/config/kernel.release` (the guest's `uname -r`).
    pub(crate) release: String,
}

impl Kernel {
    pub(crate) fn bzimage(&self) -> PathBuf {
        self.kdir.join("arch/x86/boot/bzImage")
    }
}

/// Variables passed to every `make` in the kernel tree (kernel and module builds alike: modules
/// must be built with exactly the toolchain that built the kernel). `LLVM=1` because KASAN with
/// Rust needs clang (init/Kconfig: `config RUST … depends on !KASAN || CC_IS_CLANG`).
pub(crate) fn make_vars() -> Vec<String> {
    vec![
        "LLVM=1".into(),
        format!("RUSTC={}", deps::KERNEL_RUSTC),
        format!("RUSTDOC={}", deps::KERNEL_RUSTDOC),
        format!("BINDGEN={}", deps::bindgen().display()),
        format!("RUST_LIB_SRC={}", deps::RUST_LIB_SRC),
    ]
}

/// `make -C kdir <vars>` with the kernel-build PATH.
pub(crate) fn make(kdir: &Path) -> Command {
    let mut c = Command::new("make");
    c.arg("-C")
        .arg(kdir)
        .args(make_vars())
        .env("PATH", deps::kernel_path());
    c
}

fn fragments(v: Variant) -> Vec<PathBuf> {
    let k = util::repo_root().join("xtask/kconfig");
    vec![
        k.join("base.config"),
        k.join(format!("{}.config", v.name())),
    ]
}

/// The cache key of a variant and a readable description of what went into it.
fn cache_key(v: Variant) -> Result<(String, String)> {
    let mut h = util::Fnv::new();
    let mut desc = String::new();
    let src = util::output(Command::new("dpkg-query").args(["-W", "-f=${Version}", SOURCE_PKG]))?;
    for (label, val) in [
        ("recipe", RECIPE.to_string()),
        ("source", format!("{SOURCE_PKG} {src}")),
    ] {
        h.add(label, val.as_bytes());
        desc.push_str(&format!("{label}: {val}\n"));
    }
    for f in fragments(v) {
        h.add("fragment", util::read(&f)?.as_bytes());
        desc.push_str(&format!("fragment: {}\n", f.display()));
    }
    let tc = deps::toolchain_id();
    h.add("toolchain", tc.as_bytes());
    desc.push_str(&format!(
        "toolchain:\n{tc}\nmake: {}\n",
        make_vars().join(" ")
    ));
    h.add("make", make_vars().join(" ").as_bytes());
    Ok((h.hex(), desc))
}

/// The options the fragments ask for: `(name, Some(value))` or `(name, None)` for "is not set".
pub(crate) fn requested(text: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for l in text.lines().map(str::trim) {
        if let Some(rest) = l.strip_prefix("# ") {
            if let Some(name) = rest.strip_suffix(" is not set") {
                if name.starts_with("CONFIG_") {
                    out.push((name.to_string(), None));
                }
            }
        } else if let Some((k, v)) = l.split_once('=') {
            if k.starts_with("CONFIG_") {
                out.push((k.to_string(), Some(v.to_string())));
            }
        }
    }
    out
}

/// Options of `wanted` that `.config` text `config` does not have as asked.
pub(crate) fn missing_options(wanted: &[(String, Option<String>)], config: &str) -> Vec<String> {
    let have: std::collections::HashMap<&str, &str> = config
        .lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| k.starts_with("CONFIG_"))
        .collect();
    let mut miss = Vec::new();
    for (k, v) in wanted {
        match (v, have.get(k.as_str())) {
            (Some(want), Some(got)) if want == got => {}
            (Some(want), got) => {
                miss.push(format!("{k}={want} (got {})", got.unwrap_or(&"not set")))
            }
            (None, Some(got)) if *got != "n" => miss.push(format!("{k} not set (got {got})")),
            (None, _) => {}
        }
    }
    miss
}

fn read_release(kdir: &Path) -> Result<String> {
    Ok(util::read(&kdir.join("include/config/kernel.release"))?
        .trim()
        .to_string())
}

fn describe(kdir: PathBuf) -> Result<Kernel> {
    let config = util::read(&kdir.join(".config"))?;
    if !config.lines().any(|l| l == "CONFIG_RUST=y") {
        return Err(format!("{}: CONFIG_RUST is not enabled", kdir.display()));
    }
    Ok(Kernel {
        release: read_release(&kdir)?,
        kdir,
    })
}

/// A built kernel of variant `v`: from `KDIR`, from the cache, or built now.
pub(crate) fn ensure(v: Variant) -> Result<Kernel> {
    if let Some(kdir) = std::env::var_os("KDIR") {
        let st = util::step(format!(
            "use kernel tree KDIR={}",
            PathBuf::from(&kdir).display()
        ));
        let k = describe(PathBuf::from(kdir))?;
        if !k.bzimage().exists() {
            return Err(format!(
                "{} missing: build that tree first",
                k.bzimage().display()
            ));
        }
        st.done_with(&format!("release {}, variant not checked", k.release));
        return Ok(k);
    }
    let (key, desc) = cache_key(v)?;
    let dir = util::cache_root()
        .join("kernel")
        .join(format!("{}-{key}", v.name()));
    let tree = dir.join("linux-source-6.12");
    let complete = dir.join("complete");
    if complete.exists() {
        let st = util::step(format!("kernel {} (cached)", v.name()));
        let k = describe(tree)?;
        st.done_with(&format!("{} in {}", k.release, dir.display()));
        return Ok(k);
    }
    let total = util::step(format!(
        "build kernel variant {} into {}",
        v.name(),
        dir.display()
    ));
    fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    fs::write(dir.join("key.txt"), &desc).map_err(|e| format!("{}: {e}", dir.display()))?;
    if !tree.join("Makefile").exists() {
        let st = util::step(format!("unpack {TARBALL}"));
        util::run(
            Command::new("tar")
                .arg("-C")
                .arg(&dir)
                .arg("-xf")
                .arg(TARBALL),
        )?;
        st.done();
    } else {
        eprintln!("    found an incomplete build: configuring again and letting make finish it");
    }
    let log = dir.join("build.log");
    let st = util::step("configure: tinyconfig + fragments, olddefconfig, verify");
    util::run_logged(make(&tree).arg("rustavailable"), &log, true)?;
    util::run_logged(make(&tree).arg("tinyconfig"), &log, false)?;
    let frags = fragments(v);
    util::run_logged(
        Command::new(tree.join("scripts/kconfig/merge_config.sh"))
            .current_dir(&tree)
            .env("PATH", deps::kernel_path())
            .args(["-m", ".config"])
            .args(&frags),
        &log,
        false,
    )?;
    util::run_logged(make(&tree).arg("olddefconfig"), &log, false)?;
    let mut wanted = Vec::new();
    for f in &frags {
        wanted.extend(requested(&util::read(f)?));
    }
    let miss = missing_options(&wanted, &util::read(&tree.join(".config"))?);
    if !miss.is_empty() {
        return Err(format!(
            "kernel config: {} requested option(s) did not end up set (unmet Kconfig dependencies?):\n  {}",
            miss.len(),
            miss.join("\n  ")
        ));
    }
    st.done_with(&format!("{} options verified", wanted.len()));
    let jobs = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let st = util::step(format!(
        "make -j{jobs} bzImage modules (several minutes when cold)"
    ));
    let lines = util::run_logged(
        make(&tree)
            .arg(format!("-j{jobs}"))
            .args(["bzImage", "modules"]),
        &log,
        false,
    )?;
    let warnings: Vec<&String> = lines
        .iter()
        .filter(|l| l.to_lowercase().contains("warning"))
        .collect();
    if !warnings.is_empty() {
        for w in warnings.iter().take(20) {
            eprintln!("    {w}");
        }
        return Err(format!(
            "kernel build produced {} warning line(s); see {}",
            warnings.len(),
            log.display()
        ));
    }
    st.done();
    let k = describe(tree)?;
    util::write_atomic(&complete, desc.as_bytes())?;
    total.done_with(&format!("{} cached in {}", k.release, dir.display()));
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fragment_options_are_verified() {
        let frag = "# comment\nCONFIG_A=y\n# CONFIG_B is not set\nCONFIG_C=\"x\"\nCONFIG_D=y\n";
        let wanted = requested(frag);
        assert_eq!(wanted.len(), 4);
        let config = "CONFIG_A=y\nCONFIG_B=y\nCONFIG_C=\"x\"\n# CONFIG_D is not set\n";
        let miss = missing_options(&wanted, config);
        assert_eq!(
            miss,
            vec![
                "CONFIG_B not set (got y)".to_string(),
                "CONFIG_D=y (got not set)".to_string()
            ]
        );
    }

    #[test]
    fn shipped_fragments_parse() {
        for v in [Variant::Test, Variant::Lean, Variant::Kcsan] {
            for f in fragments(v) {
                assert!(
                    !requested(&util::read(&f).unwrap()).is_empty(),
                    "{}",
                    f.display()
                );
            }
        }
    }
}
