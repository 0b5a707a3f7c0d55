//! The guest's root file system: an uncompressed `newc` cpio archive written here directly.
//!
//! Contents: busybox-static and its applet links, `/init` (`tests/vm/init.sh`), the modules in
//! `/lib/modules/<release>/extra/` (the guest runs `depmod`, so `modprobe streams` works),
//! the static user programs in `/usr/bin`, the VM suites from `tests/vm/suites/`, and for
//! `cargo xtask vm --copy DIR` the folder as `/host`, and extra files such as the plan of
//! `cargo xtask bench` (`/etc/rstreams/bench.plan`), and host files at a path of their own
//! (the bench's guest profile: the host's perf under `/opt/perf`). For LD_PRELOAD runs (the
//! pipeline suite) also a dynamically linked shell, `/usr/bin/dash`, the interposer
//! `/usr/lib/libstreams_pipe.so`, and the host's shared libraries and loader they need (found
//! with `ldd`): busybox is static, so only dash's pipes can be interposed.
//!
//! The guest of `cargo xtask test` takes what the Debian packages ship from the packages
//! ([`Packaged`]), so that a file a package misses fails the tests; the test build of the
//! modules and the programs no package ships (strtest, strstress, pipetest, strc, xtiudp) still come
//! from the workspace.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::install::Dkms;
use crate::package;
use crate::util::{self, Result};

/// A cpio `newc` archive being built in memory.
#[derive(Default)]
pub(crate) struct Cpio {
    buf: Vec<u8>,
    ino: u32,
    dirs: std::collections::BTreeSet<String>,
}

impl Cpio {
    fn header(&mut self, name: &str, mode: u32, size: usize) {
        self.ino += 1;
        let namesize = name.len() + 1;
        let fields = [
            self.ino,
            mode,
            0,
            0,
            1,
            0,
            size as u32,
            0,
            0,
            0,
            0,
            namesize as u32,
            0,
        ];
        self.buf.extend_from_slice(b"070701");
        for f in fields {
            self.buf.extend_from_slice(format!("{f:08x}").as_bytes());
        }
        self.buf.extend_from_slice(name.as_bytes());
        self.buf.push(0);
        self.pad();
    }

    fn pad(&mut self) {
        while !self.buf.len().is_multiple_of(4) {
            self.buf.push(0);
        }
    }

    /// Add directory `path` and its parents (once each).
    pub(crate) fn dir(&mut self, path: &str) {
        let mut cur = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            if !cur.is_empty() {
                cur.push('/');
            }
            cur.push_str(part);
            if self.dirs.insert(cur.clone()) {
                let c = cur.clone();
                self.header(&c, 0o040755, 0);
            }
        }
    }

    /// Add a regular file with `data`.
    pub(crate) fn file(&mut self, path: &str, mode: u32, data: &[u8]) {
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.header(path, 0o100000 | mode, data.len());
        self.buf.extend_from_slice(data);
        self.pad();
    }

    /// Add a symbolic link `path` -> `target`.
    pub(crate) fn symlink(&mut self, path: &str, target: &str) {
        if let Some((parent, _)) = path.rsplit_once('/') {
            self.dir(parent);
        }
        self.header(path, 0o120777, target.len());
        self.buf.extend_from_slice(target.as_bytes());
        self.pad();
    }

    /// Add the host tree `src` under `dst` (regular files and directories, modes kept).
    pub(crate) fn tree(&mut self, src: &Path, dst: &str) -> Result<()> {
        self.dir(dst);
        for p in util::walk(src) {
            let rel = p.strip_prefix(src).map_err(|e| e.to_string())?;
            let data = fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?;
            let mode = {
                use std::os::unix::fs::PermissionsExt;
                fs::metadata(&p)
                    .map(|m| m.permissions().mode() & 0o777)
                    .unwrap_or(0o644)
            };
            self.file(&format!("{dst}/{}", rel.display()), mode, &data);
        }
        Ok(())
    }

    /// The finished archive.
    pub(crate) fn finish(mut self) -> Vec<u8> {
        self.header("TRAILER!!!", 0, 0);
        while !self.buf.len().is_multiple_of(512) {
            self.buf.push(0);
        }
        self.buf
    }
}

/// The part of the test guest that comes from the Debian packages (issue 15).
///
/// From the unpacked packages: all of `/usr/bin` (`perftest`, `scls`, which replace the
/// workspace's) and `/usr/lib` (`libstreams.so.0`, `libstreams_pipe.so`, the udev rules, the
/// modules-load.d file), and `/usr/lib/libstreams_pipe.so` as a link to the packaged preload
/// (the path the guest scripts use). From the DKMS build of the `rstreams-dkms` sources: the
/// production modules, where `dkms build` leaves them in its tree (`/var/lib/dkms/rstreams/
/// <version>/<release>/<arch>/module/`, the layout of an installed system); the guest
/// installs them after the test build is unloaded, as `dkms install` does (`tests/vm/init.sh`,
/// step `dkms`).
pub(crate) struct Packaged {
    /// The packages unpacked (`target/package/unpacked`).
    pub(crate) unpacked: PathBuf,
    /// What `dkms build` made (`target/dkms/tree`).
    pub(crate) dkms: Dkms,
}

impl Packaged {
    /// Add the packaged files and the DKMS-built modules to `a` (`multiarch`: the library
    /// directory's triplet); returns the ELF files among them whose shared libraries the guest
    /// needs. A tool or the preload missing from the packages is an error.
    fn add_to(&self, a: &mut Cpio, multiarch: &str) -> Result<Vec<PathBuf>> {
        let mut elfs = Vec::new();
        for tool in package::TOOLS {
            let p = self.unpacked.join("usr/bin").join(tool);
            if !p.is_file() {
                return Err(format!(
                    "the packages ship no /usr/bin/{tool} ({})",
                    p.display()
                ));
            }
        }
        let preload = format!("usr/lib/{multiarch}/libstreams_pipe.so");
        if !self.unpacked.join(&preload).is_file() {
            return Err(format!("the packages ship no /{preload}"));
        }
        for top in ["usr/bin", "usr/lib"] {
            for p in util::walk(&self.unpacked.join(top)) {
                let rel = p.strip_prefix(&self.unpacked).map_err(|e| e.to_string())?;
                let dst = rel.to_string_lossy();
                let meta = fs::symlink_metadata(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                if meta.file_type().is_symlink() {
                    let target = fs::read_link(&p).map_err(|e| format!("{}: {e}", p.display()))?;
                    a.symlink(&dst, &target.to_string_lossy());
                    continue;
                }
                let mode = {
                    use std::os::unix::fs::PermissionsExt;
                    meta.permissions().mode() & 0o777
                };
                a.file(
                    &dst,
                    mode,
                    &fs::read(&p).map_err(|e| format!("{}: {e}", p.display()))?,
                );
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy())
                    .unwrap_or_default();
                if top == "usr/bin" || name.contains(".so") {
                    elfs.push(p);
                }
            }
        }
        a.symlink(
            "usr/lib/libstreams_pipe.so",
            &format!("{multiarch}/libstreams_pipe.so"),
        );
        for m in &self.dkms.modules {
            let rel = m.strip_prefix(&self.dkms.tree).map_err(|e| e.to_string())?;
            a.file(
                &format!("var/lib/dkms/{}", rel.display()),
                0o644,
                &fs::read(m).map_err(|e| format!("{}: {e}", m.display()))?,
            );
        }
        Ok(elfs)
    }
}

/// What goes into the guest.
pub(crate) struct Contents<'a> {
    pub(crate) release: &'a str,
    pub(crate) modules: &'a [PathBuf],
    pub(crate) programs: &'a [PathBuf],
    /// `cargo xtask vm --copy DIR`.
    pub(crate) copy: Option<&'a Path>,
    /// The command for `vm` mode (stored as `/etc/rstreams/cmd`).
    pub(crate) cmd: Option<&'a str>,
    /// More files: (path in the guest without the leading `/`, contents), e.g. the bench plan
    /// `etc/rstreams/bench.plan`.
    pub(crate) extra: &'a [(&'a str, &'a [u8])],
    /// Host files: (path in the guest without the leading `/`, file on the host), the host
    /// file's mode kept, e.g. the bench profile's perf (`opt/perf/perf`).
    pub(crate) host_files: &'a [(String, PathBuf)],
    /// `cargo xtask test`: the files the packages ship come from them.
    pub(crate) packaged: Option<&'a Packaged>,
}

/// Write the initramfs to `out`.
pub(crate) fn build(c: &Contents<'_>, out: &Path) -> Result<()> {
    let st = util::step(format!("initramfs {}", out.display()));
    let root = util::repo_root();
    let mut a = Cpio::default();
    for d in [
        "bin",
        "sbin",
        "usr/bin",
        "etc/rstreams",
        "proc",
        "sys",
        "dev",
        "tmp",
        "root",
        "mnt",
    ] {
        a.dir(d);
    }
    let busybox = Path::new("/bin/busybox");
    let bb = fs::read(busybox).map_err(|e| {
        format!(
            "{}: {e} (apt-get install busybox-static)",
            busybox.display()
        )
    })?;
    a.file("bin/busybox", 0o755, &bb);
    let applets = util::output(Command::new(busybox).arg("--list"))?;
    for app in applets.lines().map(str::trim) {
        // `busybox` itself is in the list; linking it to itself would loop (ELOOP at boot).
        if !app.is_empty() && app != "busybox" {
            a.symlink(&format!("bin/{app}"), "busybox");
        }
    }
    a.file(
        "init",
        0o755,
        util::read(&root.join("tests/vm/init.sh"))?.as_bytes(),
    );
    // The fault-injection pass of test mode (init.sh runs it with sh).
    a.file(
        "tests/vm/fault.sh",
        0o755,
        util::read(&root.join("tests/vm/fault.sh"))?.as_bytes(),
    );
    let suites = root.join("tests/vm/suites");
    if suites.is_dir() {
        a.tree(&suites, "tests/vm/suites")?;
    }
    let kmod = format!("lib/modules/{}/extra", c.release);
    for m in c.modules {
        let name = m
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        a.file(
            &format!("{kmod}/{name}"),
            0o644,
            &fs::read(m).map_err(|e| format!("{}: {e}", m.display()))?,
        );
    }
    for p in c.programs {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if c.packaged.is_some() && package::TOOLS.contains(&name.as_str()) {
            continue;
        }
        a.file(
            &format!("usr/bin/{name}"),
            0o755,
            &fs::read(p).map_err(|e| format!("{}: {e}", p.display()))?,
        );
    }
    dynamic_extras(&mut a, c.packaged)?;
    if let Some(dir) = c.copy {
        a.tree(dir, "host")?;
    }
    if let Some(cmd) = c.cmd {
        a.file("etc/rstreams/cmd", 0o644, cmd.as_bytes());
    }
    for (path, data) in c.extra {
        a.file(path, 0o644, data);
    }
    for (path, host) in c.host_files {
        let err = |e: std::io::Error| format!("{}: {e}", host.display());
        let mode = {
            use std::os::unix::fs::PermissionsExt;
            fs::metadata(host).map_err(err)?.permissions().mode() & 0o777
        };
        a.file(path, mode, &fs::read(host).map_err(err)?);
    }
    let data = a.finish();
    util::write_atomic(out, &data)?;
    st.done_with(&format!("{} KiB", data.len() / 1024));
    Ok(())
}

/// The dynamically linked part of the guest: dash, the packaged files ([`Packaged`]) or else
/// `libstreams_pipe.so` (built here without `+crt-static`, which a preloaded library cannot
/// have), and their shared libraries.
fn dynamic_extras(a: &mut Cpio, packaged: Option<&Packaged>) -> Result<()> {
    let dash = PathBuf::from("/usr/bin/dash");
    a.file(
        "usr/bin/dash",
        0o755,
        &fs::read(&dash).map_err(|e| format!("{}: {e}", dash.display()))?,
    );
    let mut elfs = vec![dash];
    match packaged {
        Some(p) => elfs.extend(p.add_to(a, &package::arch_var("DEB_HOST_MULTIARCH")?)?),
        None => {
            let preload = build_preload()?;
            a.file(
                "usr/lib/libstreams_pipe.so",
                0o755,
                &fs::read(&preload).map_err(|e| format!("{}: {e}", preload.display()))?,
            );
            elfs.push(preload);
        }
    }
    let mut libs = std::collections::BTreeSet::new();
    for bin in &elfs {
        libs.extend(shared_libs(&util::output(Command::new("ldd").arg(bin))?));
    }
    for lib in libs {
        let data = fs::read(&lib).map_err(|e| format!("{lib}: {e}"))?;
        a.file(lib.trim_start_matches('/'), 0o755, &data);
    }
    Ok(())
}

/// `libstreams_pipe.so` for the guests that do not take it from the package.
fn build_preload() -> Result<PathBuf> {
    let root = util::repo_root();
    let tdir = root.join("target/guest-dyn");
    util::run(
        Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
            .current_dir(&root)
            .env("CARGO_TARGET_DIR", &tdir)
            .env_remove("RUSTFLAGS")
            .args([
                "build",
                "--quiet",
                "--release",
                "-p",
                "streams-pipe-preload",
            ]),
    )?;
    Ok(tdir.join("release/libstreams_pipe.so"))
}

/// The absolute paths in `ldd` output (`libc.so.6 => /lib/.../libc.so.6 (0x…)`, and the
/// loader's own `/lib64/ld-linux-x86-64.so.2 (0x…)`); the vDSO has none.
fn shared_libs(ldd: &str) -> Vec<String> {
    ldd.lines()
        .filter_map(|l| {
            let l = l.trim();
            let path = l.rsplit_once("=> ").map_or(l, |(_, p)| p);
            let path = path.split_whitespace().next()?;
            path.starts_with('/').then(|| path.to_string())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn newc_layout() {
        let mut a = Cpio::default();
        a.file("a/b", 0o644, b"xyz");
        let out = a.finish();
        assert!(out.starts_with(b"070701"));
        assert_eq!(out.len() % 512, 0);
        // dir "a", file "a/b" and the trailer.
        let text = String::from_utf8_lossy(&out);
        assert_eq!(text.matches("070701").count(), 3);
        assert!(text.contains("a/b\0"));
        assert!(text.contains("xyz"));
        assert!(text.contains("TRAILER!!!"));
    }

    /// The packaged tools replace nothing silently: each must be in the unpacked tree, and
    /// what is there lands at its path, links as links, the DKMS modules in DKMS's layout.
    #[test]
    fn packaged_files() {
        let base = std::env::temp_dir().join(format!("rstreams-packaged-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let (unpacked, tree) = (base.join("unpacked"), base.join("dkms"));
        let lib = unpacked.join("usr/lib/x86_64-linux-gnu");
        let module = tree.join("rstreams/0.1.0/6.12.117/x86_64/module");
        for d in [unpacked.join("usr/bin"), lib.clone(), module.clone()] {
            fs::create_dir_all(d).unwrap();
        }
        fs::write(unpacked.join("usr/bin/perftest"), b"elf").unwrap();
        fs::write(lib.join("libstreams_pipe.so"), b"elf").unwrap();
        fs::write(lib.join("libstreams.so.0"), b"elf").unwrap();
        std::os::unix::fs::symlink("libstreams.so.0", lib.join("libstreams.so")).unwrap();
        fs::write(module.join("streams.ko"), b"ko").unwrap();
        let p = Packaged {
            unpacked: unpacked.clone(),
            dkms: Dkms {
                tree,
                modules: vec![module.join("streams.ko")],
            },
        };
        let missing = p.add_to(&mut Cpio::default(), "x86_64-linux-gnu");
        assert!(missing.is_err_and(|e| e.contains("/usr/bin/scls")));
        fs::write(unpacked.join("usr/bin/scls"), b"elf").unwrap();
        let mut a = Cpio::default();
        let elfs = p.add_to(&mut a, "x86_64-linux-gnu").unwrap();
        let names: Vec<String> = elfs
            .iter()
            .map(|e| e.strip_prefix(&unpacked).unwrap().display().to_string())
            .collect();
        assert_eq!(
            names,
            [
                "usr/bin/perftest",
                "usr/bin/scls",
                "usr/lib/x86_64-linux-gnu/libstreams.so.0",
                "usr/lib/x86_64-linux-gnu/libstreams_pipe.so"
            ]
        );
        let text = String::from_utf8_lossy(&a.finish()).into_owned();
        // A `newc` entry: its name, NUL, padding to 4 bytes, then its data (a link's target).
        for (name, data) in [
            ("usr/bin/scls", "elf"),
            ("usr/lib/x86_64-linux-gnu/libstreams.so", "libstreams.so.0"),
            (
                "usr/lib/libstreams_pipe.so",
                "x86_64-linux-gnu/libstreams_pipe.so",
            ),
            (
                "var/lib/dkms/rstreams/0.1.0/6.12.117/x86_64/module/streams.ko",
                "ko",
            ),
        ] {
            let at = text
                .find(&format!("{name}\0"))
                .unwrap_or_else(|| panic!("{name} not in the archive"));
            let rest = text[at + name.len() + 1..].trim_start_matches('\0');
            assert!(rest.starts_with(data), "{name}: not followed by {data:?}");
        }
        fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn ldd_paths() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd)\n\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x7f)\n\t/lib64/ld-linux-x86-64.so.2 (0x7f)\n";
        assert_eq!(
            shared_libs(out),
            [
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2"
            ]
        );
    }
}
