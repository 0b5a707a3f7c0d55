//! `cargo xtask package`: Debian packages of rstreams, built with `dpkg-deb` from what the
//! workspace builds and checked with `lintian` (no error allowed).
//!
//! | package | contents |
//! |---|---|
//! | `rstreams-dkms` | the module sources, `Makefile`, `Kbuild` and `dkms.conf` in `/usr/src/rstreams-<version>/` (DKMS builds them for every Rust-enabled kernel), the udev rules and the modules-load.d file |
//! | `libstreams0` | `libstreams.so.0` (SONAME `libstreams.so.0`) |
//! | `libstreams-dev` | `<stropts.h>`, `<sys/stropts.h>`, `<sys/bufmod.h>`, `<sys/tpi.h>`, `<sys/tihdr.h>`, `libstreams.a`, the `libstreams.so` link, `libstreams.pc`, putmsg(2), getmsg(2), isastream(3), fattach(3), fdetach(3), streamio(7) |
//! | `libxnet0` | `libxnet.so.0` (SONAME `libxnet.so.0`): XTI, LfS's library name (docs/xti.md) |
//! | `libxnet-dev` | `<xti.h>`, `<xti_inet.h>`, `libxnet.a`, the `libxnet.so` link, `xnet.pc`, the t_*(3) pages (one link per function a page describes) |
//! | `rstreams-tools` | `perftest`, `scls`, `libstreams_pipe.so` (the LD_PRELOAD pipe), their pages |
//!
//! The runtime library is `libstreams0`, not `libstreams`: Debian names a shared library's
//! package after its SONAME (policy 8.1), so that an incompatible `libstreams.so.1` can be
//! installed next to it later. The packages are native (version = the workspace version).
//! Everything is written under `target/package/`; nothing is installed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, Result};

const VERSION: &str = env!("CARGO_PKG_VERSION");
/// The SONAME of the C library (and the `0` in `libstreams0`).
const SONAME: &str = "libstreams.so.0";
/// The SONAME of the XTI library (and the `0` in `libxnet0`).
const XNET_SONAME: &str = "libxnet.so.0";
/// The programs `rstreams-tools` ships in `/usr/bin`; `cargo xtask test`'s guest runs these
/// copies, not the workspace's.
pub(crate) const TOOLS: &[&str] = &["perftest", "scls"];

/// One file of a package: where it goes, and its bytes or a link target.
enum Entry {
    /// A regular file with this mode.
    File(Vec<u8>, u32),
    /// A symbolic link to this (relative) target.
    Link(String),
}

/// A binary package being assembled.
struct Deb {
    name: &'static str,
    /// `amd64`-style architecture, or `all`.
    arch: String,
    section: &'static str,
    depends: String,
    /// Synopsis and extended description (lines of the control file's Description).
    description: &'static str,
    files: Vec<(String, Entry)>,
    /// Extra DEBIAN/ files: maintainer scripts (mode 0755), shlibs, triggers (0644).
    control: Vec<(&'static str, String)>,
}

impl Deb {
    fn file(&mut self, dest: impl Into<String>, data: Vec<u8>, mode: u32) {
        self.files.push((dest.into(), Entry::File(data, mode)));
    }

    fn copy(&mut self, dest: impl Into<String>, src: &Path, mode: u32) -> Result<()> {
        let data = fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
        self.file(dest, data, mode);
        Ok(())
    }

    /// A manual page, gzip-compressed into its section's directory.
    fn man(&mut self, page: &Path) -> Result<()> {
        let name = page
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or("a manual page without a name")?;
        let section = name.rsplit('.').next().unwrap_or("1");
        let gz = gzip(&fs::read(page).map_err(|e| format!("{}: {e}", page.display()))?)?;
        self.file(format!("usr/share/man/man{section}/{name}.gz"), gz, 0o644);
        Ok(())
    }
}

/// Where a built file of the release build is.
struct Built {
    /// `target/package/cargo/release`.
    release: PathBuf,
}

/// `gzip -9n` (no name or time stamp: the same input gives the same bytes).
fn gzip(data: &[u8]) -> Result<Vec<u8>> {
    use std::io::Write;
    let mut child = Command::new("gzip")
        .args(["-9nc"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("gzip: {e}"))?;
    child
        .stdin
        .take()
        .ok_or("gzip: no stdin")?
        .write_all(data)
        .map_err(|e| format!("gzip: {e}"))?;
    let out = child.wait_with_output().map_err(|e| format!("gzip: {e}"))?;
    if !out.status.success() {
        return Err(format!("gzip failed: {}", out.status));
    }
    Ok(out.stdout)
}

/// The release build of the user side: programs, the C library (shared with its SONAME, and
/// static) and the LD_PRELOAD library, in their own target directory.
fn build_user(root: &Path) -> Result<Built> {
    let target = root.join("target/package/cargo");
    let cargo = || {
        let mut c = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        c.current_dir(root).env("CARGO_TARGET_DIR", &target);
        c
    };
    util::run(cargo().args(["build", "--quiet", "--release", "-p", "perftest", "--bins"]))?;
    // libxnet first: building it builds its dependency libstreams-sys with that crate's own
    // crate types, which would replace a libstreams.so linked with the SONAME below.
    let xnet = ["rustc", "--quiet", "--release", "-p", "libxnet", "--lib"];
    util::run(cargo().args(xnet).args(["--crate-type", "staticlib"]))?;
    util::run(
        cargo()
            .args(xnet)
            .args(["--crate-type", "cdylib", "--"])
            .arg(format!("-Clink-arg=-Wl,-soname,{XNET_SONAME}")),
    )?;
    // Each `cargo rustc` replaces the previous library build's flags, so the shared library
    // with its SONAME comes after the static one.
    let lib = [
        "rustc",
        "--quiet",
        "--release",
        "-p",
        "libstreams-sys",
        "--lib",
    ];
    util::run(cargo().args(lib).args(["--crate-type", "staticlib"]))?;
    util::run(
        cargo()
            .args(lib)
            .args(["--crate-type", "cdylib", "--"])
            .arg(format!("-Clink-arg=-Wl,-soname,{SONAME}")),
    )?;
    util::run(cargo().args([
        "rustc",
        "--quiet",
        "--release",
        "-p",
        "streams-pipe-preload",
        "--lib",
        "--crate-type",
        "cdylib",
        "--",
        "-Clink-arg=-Wl,-soname,libstreams_pipe.so",
    ]))?;
    Ok(Built {
        release: target.join("release"),
    })
}

/// A stripped copy of an ELF file (`strip --strip-unneeded`; `--strip-debug` for an archive),
/// left in `scratch` too (for dpkg-shlibdeps).
fn stripped(src: &Path, scratch: &Path) -> Result<Vec<u8>> {
    let name = src.file_name().ok_or("no file name")?;
    let out = scratch.join(name);
    let how = if src.extension().is_some_and(|e| e == "a") {
        "--strip-debug"
    } else {
        "--strip-unneeded"
    };
    util::run(Command::new("strip").arg(how).arg("-o").arg(&out).arg(src))?;
    fs::read(&out).map_err(|e| format!("{}: {e}", out.display()))
}

/// The Depends of ELF files, as Debian computes it: `dpkg-shlibdeps` (which wants a
/// `debian/control` in its working directory; a minimal one in `scratch` will do).
fn shlib_depends(scratch: &Path, elfs: &[PathBuf]) -> Result<String> {
    let dir = scratch.join("shlibdeps");
    util::write_atomic(
        &dir.join("debian/control"),
        b"Source: rstreams\n\nPackage: rstreams\nArchitecture: any\n",
    )?;
    let mut cmd = Command::new("dpkg-shlibdeps");
    cmd.current_dir(&dir).arg("-O");
    for e in elfs {
        cmd.arg(format!("-e{}", e.display()));
    }
    let out = util::output(&mut cmd)?;
    out.lines()
        .find_map(|l| l.strip_prefix("shlibs:Depends="))
        .map(|d| d.trim().to_string())
        .ok_or_else(|| format!("dpkg-shlibdeps gave no shlibs:Depends: {out:?}"))
}

/// `dpkg-architecture -qVAR`.
pub(crate) fn arch_var(var: &str) -> Result<String> {
    Ok(
        util::output(Command::new("dpkg-architecture").arg(format!("-q{var}")))?
            .trim()
            .to_string(),
    )
}

/// The maintainer: `$DEBFULLNAME <$DEBEMAIL>`, else git's user, as Debian's tools do, else
/// the project.
fn maintainer(root: &Path) -> String {
    let git = |key: &str| {
        util::try_output(Command::new("git").current_dir(root).args(["config", key]))
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let name = std::env::var("DEBFULLNAME")
        .ok()
        .or_else(|| git("user.name"));
    let mail = std::env::var("DEBEMAIL").ok().or_else(|| git("user.email"));
    match (name, mail) {
        (Some(n), Some(m)) => format!("{n} <{m}>"),
        _ => "rstreams developers <rstreams@users.noreply.github.com>".into(),
    }
}

/// The native changelog every package carries (`usr/share/doc/<pkg>/changelog.gz`).
fn changelog(root: &Path, maintainer: &str) -> Result<Vec<u8>> {
    let date =
        util::try_output(
            Command::new("git")
                .current_dir(root)
                .args(["log", "-1", "--format=%aD"]),
        )
        .map(|d| d.trim().to_string())
        .filter(|d| !d.is_empty())
        .unwrap_or_else(|| "Thu, 01 Jan 2026 00:00:00 +0000".into());
    let text = format!(
        "rstreams ({VERSION}) unstable; urgency=medium\n\n  * Built from the rstreams sources by \
         cargo xtask package.\n\n -- {maintainer}  {date}\n"
    );
    gzip(text.as_bytes())
}

/// The packages' contents.
fn assemble(root: &Path, built: &Built, scratch: &Path) -> Result<Vec<Deb>> {
    let arch = arch_var("DEB_HOST_ARCH")?;
    let multiarch = arch_var("DEB_HOST_MULTIARCH")?;
    let libdir = format!("usr/lib/{multiarch}");
    let pages = crate::man::build(root)?;
    let page = |name: &str| -> Result<&PathBuf> {
        pages
            .iter()
            .find(|p| p.file_name().is_some_and(|n| n == name))
            .ok_or_else(|| format!("no manual page {name} in target/man"))
    };
    let new = |name, arch: &str, section, depends: String, description| Deb {
        name,
        arch: arch.to_string(),
        section,
        depends,
        description,
        files: Vec::new(),
        control: Vec::new(),
    };

    // rstreams-dkms: the sources DKMS builds, and the files that go with loaded modules.
    let mut dkms = new(
        "rstreams-dkms",
        "all",
        "kernel",
        "dkms (>= 3.0), make".into(),
        "SVR4 STREAMS kernel modules for Linux (DKMS source)\n \
         rstreams implements SVR4.2 MP STREAMS as Rust loadable kernel modules:\n \
         streams.ko (the STREAMS executive, the Stream head, STREAMS pipes and\n \
         FIFOs, the modules nullmod, pipemod, bufmod and connld), strshim.ko and\n \
         strattach.ko (fattach).\n \
         .\n \
         This package holds their sources; DKMS builds them for every installed\n \
         kernel with Rust support (CONFIG_RUST=y), with the rustc that built it.",
    );
    let src = scratch.join(format!("rstreams-{VERSION}"));
    crate::modules::sync_sources(root, &src)?;
    util::sync_file(&root.join("dkms.conf"), &src.join("dkms.conf"))?;
    for p in util::walk(&src) {
        let rel = p.strip_prefix(&src).map_err(|e| e.to_string())?;
        dkms.copy(
            format!("usr/src/rstreams-{VERSION}/{}", rel.display()),
            &p,
            0o644,
        )?;
    }
    dkms.copy(
        "usr/lib/udev/rules.d/60-rstreams.rules",
        &root.join("packaging/60-rstreams.rules"),
        0o644,
    )?;
    dkms.copy(
        "usr/lib/modules-load.d/rstreams.conf",
        &root.join("packaging/rstreams.conf"),
        0o644,
    )?;
    // As dh_dkms writes them: DKMS's own helper adds, builds and installs for the kernels.
    dkms.control.push((
        "postinst",
        format!(
            "#!/bin/sh\nset -e\ncase \"$1\" in\nconfigure)\n\t\
             /usr/lib/dkms/common.postinst rstreams {VERSION} \"\" \"\" \"$2\"\n\t;;\nesac\n"
        ),
    ));
    dkms.control.push((
        "prerm",
        format!(
            "#!/bin/sh\nset -e\ncase \"$1\" in\nremove|upgrade|deconfigure)\n\t\
             if [ \"$(dkms status -m rstreams -v {VERSION})\" ]; then\n\t\t\
             dkms remove -m rstreams -v {VERSION} --all\n\tfi\n\t;;\nesac\n"
        ),
    ));

    // libstreams0: the shared C library.
    let so_file = scratch.join("libstreams.so");
    let so = stripped(&built.release.join("libstreams.so"), scratch)?;
    let mut lib = new(
        "libstreams0",
        &arch,
        "libs",
        shlib_depends(scratch, &[so_file])?,
        "SVR4 STREAMS user library (putmsg, getmsg, isastream, fattach)\n \
         libstreams gives C programs the SVR4 STREAMS calls on rstreams: putmsg, getmsg,\n \
         putpmsg, getpmsg, isastream, fattach, fdetach and STREAMS pipes (s_pipe).\n \
         .\n \
         This package holds the shared library.",
    );
    lib.file(format!("{libdir}/{SONAME}"), so, 0o644);
    lib.control.push((
        "shlibs",
        format!("libstreams 0 libstreams0 (>= {VERSION})\n"),
    ));
    lib.control
        .push(("triggers", "activate-noawait ldconfig\n".into()));

    // libstreams-dev: headers, static library, link, pkg-config, API pages.
    let mut dev = new(
        "libstreams-dev",
        &arch,
        "libdevel",
        format!("libstreams0 (= {VERSION})"),
        "SVR4 STREAMS user library (development files)\n \
         libstreams gives C programs the SVR4 STREAMS calls on rstreams: putmsg, getmsg,\n \
         putpmsg, getpmsg, isastream, fattach, fdetach and STREAMS pipes (s_pipe).\n \
         .\n \
         This package holds <stropts.h> with the SVR4/LfS constants and\n \
         structures, <sys/tihdr.h> (TPI), the static library, the pkg-config file\n \
         and the manual pages of the calls and ioctls.",
    );
    let inc = root.join("user/libstreams-sys/include");
    dev.copy("usr/include/stropts.h", &inc.join("stropts.h"), 0o644)?;
    for h in ["stropts.h", "bufmod.h", "tpi.h", "tihdr.h"] {
        dev.copy(
            format!("usr/include/sys/{h}"),
            &inc.join("sys").join(h),
            0o644,
        )?;
    }
    let a = stripped(&built.release.join("libstreams.a"), scratch)?;
    dev.file(format!("{libdir}/libstreams.a"), a, 0o644);
    dev.files.push((
        format!("{libdir}/libstreams.so"),
        Entry::Link(SONAME.into()),
    ));
    let pc = util::read(&root.join("packaging/libstreams.pc.in"))?
        .replace("@LIBDIR@", &format!("/{libdir}"))
        .replace("@VERSION@", VERSION);
    dev.file(
        format!("{libdir}/pkgconfig/libstreams.pc"),
        pc.into(),
        0o644,
    );
    for p in [
        "putmsg.2",
        "getmsg.2",
        "isastream.3",
        "fattach.3",
        "fdetach.3",
        "streamio.7",
    ] {
        dev.man(page(p)?)?;
    }

    let (xnet, xnet_dev) = xnet_packages(root, built, scratch, &arch, &libdir, &pages)?;

    // rstreams-tools: perftest, scls, the LD_PRELOAD pipe library.
    let mut tool_files = Vec::new();
    for &f in TOOLS.iter().chain(&["libstreams_pipe.so"]) {
        tool_files.push((f, stripped(&built.release.join(f), scratch)?));
    }
    let elfs: Vec<PathBuf> = tool_files.iter().map(|(f, _)| scratch.join(f)).collect();
    let mut tools = new(
        "rstreams-tools",
        &arch,
        "admin",
        shlib_depends(scratch, &elfs)?,
        "SVR4 STREAMS tools: perftest, scls and STREAMS pipes for any program\n \
         perftest is the Linux Fast-STREAMS pipe benchmark (Linux pipes against\n \
         STREAMS pipes, with its sweep and report), scls lists the STREAMS modules\n \
         and drivers and their statistics, and libstreams_pipe.so, preloaded with\n \
         LD_PRELOAD, gives unmodified programs STREAMS pipes from pipe(2).",
    );
    for (f, data) in tool_files {
        if f.ends_with(".so") {
            // In the library directory, so that LD_PRELOAD=libstreams_pipe.so finds it by name.
            tools.file(format!("{libdir}/{f}"), data, 0o644);
        } else {
            tools.file(format!("usr/bin/{f}"), data, 0o755);
        }
    }
    tools.file(
        "usr/share/lintian/overrides/rstreams-tools",
        format!(
            "# libstreams_pipe.so is an LD_PRELOAD object, not a library programs link with:\n\
             # it has no version and no package of its own.\n\
             rstreams-tools: package-name-doesnt-match-sonames libstreams-pipe\n\
             rstreams-tools: shared-library-lacks-version {libdir}/libstreams_pipe.so libstreams_pipe.so\n"
        )
        .into(),
        0o644,
    );
    tools
        .control
        .push(("triggers", "activate-noawait ldconfig\n".into()));
    for p in [
        "perftest.8",
        "perftest-sweep.8",
        "perftest-report.8",
        "scls.8",
        "libstreams_pipe.7",
    ] {
        tools.man(page(p)?)?;
    }
    Ok(vec![dkms, lib, dev, xnet, xnet_dev, tools])
}

/// `libxnet0` and `libxnet-dev`: XTI as LfS ships it, `-lxnet` with `<xti.h>`, packaged as
/// libstreams is (docs/xti.md). The library is libstreams' code under XTI's name, so the
/// runtime package conflicts with nothing; the headers need `<sys/tpi.h>` from
/// libstreams-dev.
fn xnet_packages(
    root: &Path,
    built: &Built,
    scratch: &Path,
    arch: &str,
    libdir: &str,
    pages: &[PathBuf],
) -> Result<(Deb, Deb)> {
    // Synopsis and the paragraph both packages share, then what each holds.
    macro_rules! description {
        ($holds:literal) => {
            concat!(
                "XTI (X/Open Transport Interface) library for SVR4 STREAMS\n \
                 libxnet gives C programs the XNS 5 XTI calls (t_open, t_bind, t_sndudata,\n \
                 t_rcvudata, t_optmgmt...) over the TPI transport providers of rstreams,\n \
                 such as its UDP driver, ABI-compatible with Linux Fast-STREAMS.\n \
                 .\n ",
                $holds
            )
        };
    }
    let mut lib = Deb {
        name: "libxnet0",
        arch: arch.to_string(),
        section: "libs",
        depends: String::new(),
        description: description!("This package holds the shared library."),
        files: Vec::new(),
        control: Vec::new(),
    };
    let so_file = scratch.join("libxnet.so");
    let so = stripped(&built.release.join("libxnet.so"), scratch)?;
    lib.depends = shlib_depends(scratch, &[so_file])?;
    lib.file(format!("{libdir}/{XNET_SONAME}"), so, 0o644);
    lib.control
        .push(("shlibs", format!("libxnet 0 libxnet0 (>= {VERSION})\n")));
    lib.control
        .push(("triggers", "activate-noawait ldconfig\n".into()));

    let mut dev = Deb {
        name: "libxnet-dev",
        arch: arch.to_string(),
        section: "libdevel",
        depends: format!("libxnet0 (= {VERSION}), libstreams-dev (= {VERSION})"),
        description: description!(
            "This package holds <xti.h> and <xti_inet.h>, the static library, the\n \
             pkg-config file (xnet) and the manual pages of the t_* calls."
        ),
        files: Vec::new(),
        control: Vec::new(),
    };
    let inc = root.join("user/libstreams-sys/include");
    for h in ["xti.h", "xti_inet.h"] {
        dev.copy(format!("usr/include/{h}"), &inc.join(h), 0o644)?;
    }
    let a = stripped(&built.release.join("libxnet.a"), scratch)?;
    dev.file(format!("{libdir}/libxnet.a"), a, 0o644);
    dev.files.push((
        format!("{libdir}/libxnet.so"),
        Entry::Link(XNET_SONAME.into()),
    ));
    let pc = util::read(&root.join("packaging/xnet.pc.in"))?
        .replace("@LIBDIR@", &format!("/{libdir}"))
        .replace("@VERSION@", VERSION);
    dev.file(format!("{libdir}/pkgconfig/xnet.pc"), pc.into(), 0o644);
    for p in pages {
        let Some(name) = p.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !(name.starts_with("t_") && name.ends_with(".3")) {
            continue;
        }
        dev.man(p)?;
        // The other functions the page describes (NAME: "t_open, t_close \- ..."), as links.
        for alias in crate::man::names(&util::read(p)?) {
            if alias != name.trim_end_matches(".3") {
                dev.files.push((
                    format!("usr/share/man/man3/{alias}.3.gz"),
                    Entry::Link(format!("{name}.gz")),
                ));
            }
        }
    }
    Ok((lib, dev))
}

/// Lay out `deb` under `dir` (with DEBIAN/control and md5sums) and build it with dpkg-deb.
fn build_deb(root: &Path, deb: &Deb, dir: &Path, out: &Path, maintainer: &str) -> Result<PathBuf> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let doc = format!("usr/share/doc/{}", deb.name);
    let copyright = fs::read(root.join("packaging/copyright"))
        .map_err(|e| format!("packaging/copyright: {e}"))?;
    let mut files: Vec<(String, &Entry)> = deb.files.iter().map(|(d, e)| (d.clone(), e)).collect();
    let (cr, cl) = (
        Entry::File(copyright, 0o644),
        Entry::File(changelog(root, maintainer)?, 0o644),
    );
    files.push((format!("{doc}/copyright"), &cr));
    files.push((format!("{doc}/changelog.gz"), &cl));
    let mut md5 = String::new();
    let mut size = 0u64;
    for (dest, entry) in &files {
        let p = dir.join(dest);
        if let Some(d) = p.parent() {
            fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        }
        match entry {
            Entry::File(data, mode) => {
                fs::write(&p, data).map_err(|e| format!("{}: {e}", p.display()))?;
                fs::set_permissions(&p, fs::Permissions::from_mode(*mode))
                    .map_err(|e| format!("{}: {e}", p.display()))?;
                let sum = util::output(Command::new("md5sum").arg(&p))?;
                let hash = sum.split_whitespace().next().unwrap_or_default();
                md5.push_str(&format!("{hash}  {dest}\n"));
                size += data.len() as u64;
            }
            Entry::Link(target) => std::os::unix::fs::symlink(target, &p)
                .map_err(|e| format!("{}: {e}", p.display()))?,
        }
    }
    let control = format!(
        "Package: {}\nSource: rstreams\nVersion: {VERSION}\nArchitecture: {}\n\
         Maintainer: {maintainer}\nInstalled-Size: {}\nDepends: {}\nSection: {}\n\
         Priority: optional\nDescription: {}\n",
        deb.name,
        deb.arch,
        size.div_ceil(1024),
        deb.depends,
        deb.section,
        deb.description
    );
    let debian = dir.join("DEBIAN");
    util::write_atomic(&debian.join("control"), control.as_bytes())?;
    util::write_atomic(&debian.join("md5sums"), md5.as_bytes())?;
    for (name, text) in &deb.control {
        let p = debian.join(name);
        util::write_atomic(&p, text.as_bytes())?;
        let mode = if text.starts_with("#!") { 0o755 } else { 0o644 };
        fs::set_permissions(&p, fs::Permissions::from_mode(mode))
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    // Directories 0755 whatever the umask.
    for d in dirs(dir) {
        fs::set_permissions(&d, fs::Permissions::from_mode(0o755))
            .map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let file = out.join(format!("{}_{VERSION}_{}.deb", deb.name, deb.arch));
    util::run(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-Zxz", "--build"])
            .arg(dir)
            .arg(&file),
    )?;
    Ok(file)
}

/// Every directory under `dir`, `dir` included.
fn dirs(dir: &Path) -> Vec<PathBuf> {
    let mut out = vec![dir.to_path_buf()];
    let mut i = 0;
    while i < out.len() {
        if let Ok(rd) = fs::read_dir(&out[i]) {
            for e in rd.flatten() {
                if e.file_type().is_ok_and(|t| t.is_dir()) {
                    out.push(e.path());
                }
            }
        }
        i += 1;
    }
    out
}

/// `lintian` on the packages: its tags are printed, any error (E:) fails.
pub(crate) fn lint(debs: &[PathBuf]) -> Result<()> {
    let out = Command::new("lintian")
        .args([
            "--fail-on",
            "error",
            "--allow-root",
            "--no-tag-display-limit",
        ])
        .args(debs)
        .output()
        .map_err(|e| format!("cannot run lintian (apt-get install lintian): {e}"))?;
    let tags = String::from_utf8_lossy(&out.stdout);
    for l in tags.lines() {
        eprintln!("    lintian: {l}");
    }
    if !out.status.success() {
        return Err(format!(
            "lintian reported errors ({}):\n{}{}",
            out.status,
            tags.lines()
                .filter(|l| l.starts_with("E:"))
                .collect::<Vec<_>>()
                .join("\n"),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

/// Build the packages into `target/package/`; returns the .deb files.
pub(crate) fn build(root: &Path) -> Result<Vec<PathBuf>> {
    let maintainer = maintainer(root);
    let out = root.join("target/package");
    let st = util::step("package: release build of libstreams, perftest, scls, the preload");
    let built = build_user(root)?;
    st.done();
    let scratch = out.join("scratch");
    if scratch.exists() {
        fs::remove_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    }
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    let st = util::step("package: dpkg-deb");
    let mut debs = Vec::new();
    for deb in assemble(root, &built, &scratch)? {
        debs.push(build_deb(
            root,
            &deb,
            &out.join("root").join(deb.name),
            &out,
            &maintainer,
        )?);
    }
    st.done_with(&format!("{} packages in {}", debs.len(), out.display()));
    Ok(debs)
}

/// Use the packages' contents as a user would, unpacked into `target/package/unpacked/` (not
/// installed): compile the C test program `tests/vm/ctest` with `pkg-config --static` against
/// the headers and `libstreams.a`, link a program with the shared library and run it, build
/// and run the XTI program with `-lxnet` (`check_xnet`), run `perftest` and `scls`, and run a pipeline under `LD_PRELOAD=libstreams_pipe.so` (which
/// falls back to Linux pipes on a host without the modules). A file a package misses fails.
/// Returns the unpacked tree, from which `cargo xtask test` assembles its guest.
pub(crate) fn check_contents(root: &Path, debs: &[PathBuf]) -> Result<PathBuf> {
    let dir = root.join("target/package/unpacked");
    if dir.exists() {
        fs::remove_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    for d in debs {
        util::run(Command::new("dpkg-deb").arg("-x").arg(d).arg(&dir))?;
    }
    let libdir = dir.join("usr/lib").join(arch_var("DEB_HOST_MULTIARCH")?);
    let pkg_config_of = |pc: &str, args: &[&str]| -> Result<Vec<String>> {
        let out = util::output(
            Command::new("pkg-config")
                .args(args)
                .arg(pc)
                .env("PKG_CONFIG_PATH", libdir.join("pkgconfig"))
                .env("PKG_CONFIG_SYSROOT_DIR", &dir),
        )?;
        Ok(out.split_whitespace().map(String::from).collect())
    };
    let pkg_config = |args: &[&str]| pkg_config_of("libstreams", args);
    let scratch = root.join("target/package/scratch/cc");
    fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    // The C test program, statically, as an SVR4 program is built.
    let ctest = crate::modules::strc_sources(root);
    util::run(
        Command::new("cc")
            .args(["-static", "-O2", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(scratch.join("strc"))
            .args(&ctest)
            .args(pkg_config(&["--static", "--cflags", "--libs"])?),
    )?;
    // A program against the shared library, run with the unpacked library.
    let prog = scratch.join("isastream.c");
    util::write_atomic(
        &prog,
        b"#include <stropts.h>\nint main(void) { return isastream(0) == 0 ? 0 : 1; }\n",
    )?;
    util::run(
        Command::new("cc")
            .args(["-Wall", "-Werror", "-o"])
            .arg(scratch.join("isastream"))
            .arg(&prog)
            .args(pkg_config(&["--cflags", "--libs"])?),
    )?;
    util::run(
        Command::new(scratch.join("isastream"))
            .env("LD_LIBRARY_PATH", &libdir)
            .stdin(std::process::Stdio::null()),
    )?;
    let xnet_static = pkg_config_of("xnet", &["--static", "--cflags", "--libs"])?;
    check_xnet(root, &dir, &libdir, &scratch, &xnet_static)?;
    let bin = dir.join("usr/bin");
    util::output(Command::new(bin.join("perftest")).arg("--version"))?;
    util::output(Command::new(bin.join("scls")).arg("--help"))?;
    // ld.so only warns about an object it cannot preload: its silence is part of the check.
    let piped = Command::new("sh")
        .args(["-c", "echo through-a-pipe | cat"])
        .env("LD_PRELOAD", libdir.join("libstreams_pipe.so"))
        .output()
        .map_err(|e| format!("sh: {e}"))?;
    let (out, err) = (
        String::from_utf8_lossy(&piped.stdout),
        String::from_utf8_lossy(&piped.stderr),
    );
    if !piped.status.success() || out.trim() != "through-a-pipe" || !err.is_empty() {
        return Err(format!(
            "a pipeline under LD_PRELOAD=libstreams_pipe.so: {}, stdout {out:?}, stderr {err:?}",
            piped.status
        ));
    }
    Ok(dir)
}

/// XTI as a user builds it: `tests/vm/ctest/xti/xtiudp.c`, an unmodified-style XTI program
/// (only `<xti.h>`, `<xti_inet.h>`), compiled as `cc xtiudp.c -lxnet` against the unpacked
/// headers and libraries. The program must need `libxnet.so.0` (the SONAME) and run with the
/// unpacked library: on a host without the UDP driver it stops at t_open with TBADNAME (exit
/// 2); with one it exchanges datagrams (exit 0). The same program linked statically by
/// `pkg-config --static xnet` (libxnet.a) must run as well.
fn check_xnet(
    root: &Path,
    dir: &Path,
    libdir: &Path,
    scratch: &Path,
    static_flags: &[String],
) -> Result<()> {
    let src = root.join("tests/vm/ctest/xti/xtiudp.c");
    let (dynamic, stat) = (scratch.join("xtiudp"), scratch.join("xtiudp-static"));
    util::run(
        Command::new("cc")
            .args(["-Wall", "-Wextra", "-Werror", "-I"])
            .arg(dir.join("usr/include"))
            .arg(&src)
            .arg("-L")
            .arg(libdir)
            .arg("-lxnet")
            .arg("-o")
            .arg(&dynamic),
    )?;
    let needed = util::output(Command::new("readelf").arg("-d").arg(&dynamic))?;
    if !needed.contains(&format!("Shared library: [{XNET_SONAME}]")) {
        return Err(format!(
            "{} does not need {XNET_SONAME}:\n{needed}",
            dynamic.display()
        ));
    }
    util::run(
        Command::new("cc")
            .args(["-static", "-Wall", "-Wextra", "-Werror", "-o"])
            .arg(&stat)
            .arg(&src)
            .args(static_flags),
    )?;
    for exe in [&dynamic, &stat] {
        let out = Command::new(exe)
            .env("LD_LIBRARY_PATH", libdir)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{}: {e}", exe.display()))?;
        let err = String::from_utf8_lossy(&out.stderr);
        let no_provider = out.status.code() == Some(2) && err.contains("no UDP provider");
        if !(out.status.success() || no_provider) {
            return Err(format!(
                "{} (linked with libxnet): {}, stderr {err:?}",
                exe.display(),
                out.status
            ));
        }
    }
    Ok(())
}

/// `cargo xtask package`.
pub(crate) fn cmd() -> Result<()> {
    let root = util::repo_root();
    let debs = build(&root)?;
    let st = util::step("package: lintian (errors fail)");
    lint(&debs)?;
    st.done_with("no errors");
    let st = util::step("package: use the contents (pkg-config, cc, perftest, LD_PRELOAD)");
    check_contents(&root, &debs)?;
    st.done();
    for d in &debs {
        println!("{}", d.display());
    }
    Ok(())
}
