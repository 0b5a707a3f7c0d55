//! The installations a kernel developer makes, checked on the host against the test kernel
//! (nothing is loaded, nothing outside `target/` is written):
//!
//! - [`check`]: `make modules_install` of the production build into a scratch root
//!   (`target/install/root/lib/modules/<release>/updates/`), whose depmod data must make
//!   `modprobe streams` load strshim and strattach first (streams.ko uses their symbols);
//!   `modprobe --show-depends` only reads what depmod wrote.
//! - [`check_dkms`]: `dkms add` and `dkms build` of the source tree with `dkms.conf`, in
//!   DKMS trees under `target/dkms/` (`--sourcetree`, `--dkmstree`), against the kernel tree
//!   (`--kernelsourcedir`): the three modules must come out. `cargo xtask test`'s guest then
//!   installs and loads them ([`Dkms`]).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::kernel::Kernel;
use crate::modules::{self, Modules};
use crate::util::{self, Result};

/// The modules `modprobe streams` must load, dependencies first, streams.ko last.
const LOAD_ORDER_END: &str = "streams.ko";
/// Modules streams.ko depends on (any order between them).
const DEPENDENCIES: &[&str] = &["strshim.ko", "strattach.ko"];

/// The module files `modprobe --show-depends` would insert, in order (its `insmod PATH` lines).
pub(crate) fn insmods(show_depends: &str) -> Vec<String> {
    show_depends
        .lines()
        .filter_map(|l| l.trim().strip_prefix("insmod "))
        .filter_map(|p| Path::new(p.trim()).file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect()
}

/// Check a `--show-depends` answer: every dependency, then streams.ko, nothing else.
pub(crate) fn check_load_order(files: &[String]) -> Result<()> {
    let (last, deps) = files
        .split_last()
        .ok_or("modprobe streams would load nothing")?;
    let mut deps: Vec<&str> = deps.iter().map(String::as_str).collect();
    deps.sort_unstable();
    let mut want = DEPENDENCIES.to_vec();
    want.sort_unstable();
    if last != LOAD_ORDER_END || deps != want {
        return Err(format!(
            "modprobe streams would load {files:?}; expected {DEPENDENCIES:?} then {LOAD_ORDER_END}"
        ));
    }
    Ok(())
}

/// `make modules_install INSTALL_MOD_PATH=target/install/root` from the staging tree of
/// `built`, then the depmod check.
pub(crate) fn check(root: &Path, k: &Kernel, built: &Modules) -> Result<()> {
    let st = util::step(
        "check: make modules_install into a scratch root; modprobe streams loads strshim, strattach",
    );
    let dest = root.join("target/install/root");
    if dest.exists() {
        fs::remove_dir_all(&dest).map_err(|e| format!("{}: {e}", dest.display()))?;
    }
    let log = root.join("target/install/modules_install.log");
    fs::create_dir_all(root.join("target/install")).map_err(|e| format!("target/install: {e}"))?;
    let _ = fs::remove_file(&log);
    let mut cmd = modules::makefile(&built.stage, &k.kdir);
    cmd.arg(format!("INSTALL_MOD_PATH={}", dest.display()))
        .arg("modules_install");
    util::run_logged(&mut cmd, &log, false)?;
    let updates = dest.join("lib/modules").join(&k.release).join("updates");
    let installed: Vec<String> = util::walk(&updates)
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ko"))
        .collect();
    for want in DEPENDENCIES.iter().chain([&LOAD_ORDER_END]) {
        if !installed.iter().any(|n| n == want) {
            return Err(format!(
                "make modules_install put no {want} under {} (found {installed:?}); see {}",
                updates.display(),
                log.display()
            ));
        }
    }
    let answer = util::output(
        Command::new("modprobe")
            .arg("-d")
            .arg(&dest)
            .args(["-S", &k.release, "--show-depends", "streams"])
            .env("PATH", crate::deps::kernel_path()),
    )?;
    let order = insmods(&answer);
    check_load_order(&order)?;
    st.done_with(&format!("modprobe streams: insmod {}", order.join(", ")));
    Ok(())
}

/// What `dkms build` left in its tree.
pub(crate) struct Dkms {
    /// The DKMS tree (`--dkmstree`, `/var/lib/dkms` on an installed system).
    pub(crate) tree: PathBuf,
    /// The built `.ko` files, under `tree/rstreams/<version>/<release>/<arch>/module/`.
    pub(crate) modules: Vec<PathBuf>,
}

/// `dkms add` + `dkms build` of a fresh source tree `target/dkms/src/rstreams-<version>/`.
pub(crate) fn check_dkms(root: &Path, k: &Kernel) -> Result<Dkms> {
    let version = env!("CARGO_PKG_VERSION");
    let st = util::step(format!(
        "check: dkms add + build rstreams/{version} against {} (target/dkms/)",
        k.release
    ));
    let base = root.join("target/dkms");
    if base.exists() {
        fs::remove_dir_all(&base).map_err(|e| format!("{}: {e}", base.display()))?;
    }
    let (src, tree) = (base.join("src"), base.join("tree"));
    let pkg = src.join(format!("rstreams-{version}"));
    modules::sync_sources(root, &pkg)?;
    util::sync_file(&root.join("dkms.conf"), &pkg.join("dkms.conf"))?;
    fs::create_dir_all(&tree).map_err(|e| format!("{}: {e}", tree.display()))?;
    let dkms = |action: &str| {
        let mut c = Command::new("dkms");
        c.arg(action)
            .args(["-m", "rstreams", "-v", version])
            .arg(format!("--sourcetree={}", src.display()))
            .arg(format!("--dkmstree={}", tree.display()))
            .env("PATH", crate::deps::kernel_path());
        c
    };
    util::run_logged(&mut dkms("add"), &base.join("add.log"), false)?;
    let mut build = dkms("build");
    build
        .args(["-k", &k.release])
        .arg(format!("--kernelsourcedir={}", k.kdir.display()));
    let log = base.join("build.log");
    util::run_logged(&mut build, &log, false)?;
    let out = tree.join(format!("rstreams/{version}/{}", k.release));
    let modules: Vec<PathBuf> = util::walk(&out)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "ko"))
        .collect();
    let built: Vec<String> = modules
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .collect();
    for want in DEPENDENCIES.iter().chain([&LOAD_ORDER_END]) {
        if !built.iter().any(|n| n == want) {
            return Err(format!(
                "dkms build made no {want} under {} (found {built:?}); see {} and {}",
                out.display(),
                log.display(),
                tree.join(format!("rstreams/{version}/build/make.log"))
                    .display()
            ));
        }
    }
    st.done_with(&format!("built {}", built.join(", ")));
    Ok(Dkms { tree, modules })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn show_depends_order() {
        let out = "insmod /r/lib/modules/6.12.117/updates/rust/modules/strattach.ko \n\
                   insmod /r/lib/modules/6.12.117/updates/rust/modules/strshim.ko \n\
                   insmod /r/lib/modules/6.12.117/updates/rust/modules/streams.ko \n";
        let files = insmods(out);
        assert_eq!(files, ["strattach.ko", "strshim.ko", "streams.ko"]);
        assert!(check_load_order(&files).is_ok());
        // streams.ko alone (depmod found no dependency), or loaded before a dependency.
        assert!(check_load_order(&insmods("insmod /x/streams.ko\n")).is_err());
        let wrong = ["strshim.ko", "streams.ko", "strattach.ko"].map(String::from);
        assert!(check_load_order(&wrong).is_err());
        assert!(check_load_order(&[]).is_err());
    }
}
