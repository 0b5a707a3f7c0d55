//! `scls`: list the STREAMS modules and drivers the kernel has, with their statistics — the
//! rstreams counterpart of LfS `scls -a -c -r`, which `perftest_script` ran before each size.
//!
//! What the kernel exposes is read as is: every file under `/proc/streams/` is printed (its
//! format belongs to the kernel side, so scls does not interpret it; with NAMEs only the lines
//! naming them, plus each file's first line, are kept). Without `/proc/streams` scls falls back
//! to what can be seen anyway: the character devices under `/dev/streams/` (the drivers, one
//! per clone minor) and the `streams`/`strshim` entries of `/proc/modules`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// scls options as given on the command line.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SclsArgs {
    /// All modules and drivers (the default without NAMEs)
    #[arg(short, long)]
    pub all: bool,
    /// Long listing (device numbers, module sizes)
    #[arg(short, long)]
    pub long: bool,
    /// Statistics (from /proc/streams; all of its files are printed anyway)
    #[arg(short, long)]
    pub count: bool,
    /// Reset the statistics after printing (needs /proc/streams/reset)
    #[arg(short, long)]
    pub reset: bool,
    /// Only these modules/drivers
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
}

/// scls options.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SclsOpts {
    /// `-a`.
    pub all: bool,
    /// `-l`.
    pub long: bool,
    /// `-c`.
    pub count: bool,
    /// `-r`.
    pub reset: bool,
    /// Names to show (empty: all).
    pub names: Vec<String>,
}

impl From<SclsArgs> for SclsOpts {
    fn from(a: SclsArgs) -> SclsOpts {
        SclsOpts {
            all: a.all || a.names.is_empty(),
            long: a.long,
            count: a.count,
            reset: a.reset,
            names: a.names,
        }
    }
}

/// Parse scls arguments (without the program name); `Ok(None)` asks for help.
pub fn parse(args: &[String]) -> Result<Option<SclsOpts>, String> {
    use clap::FromArgMatches;
    let argv = std::iter::once("scls").chain(args.iter().map(String::as_str));
    match crate::cli::scls().try_get_matches_from(argv) {
        Ok(m) => crate::cli::Scls::from_arg_matches(&m)
            .map(|s| Some(s.args.into()))
            .map_err(|e| e.to_string()),
        Err(e) if e.kind() == clap::error::ErrorKind::DisplayHelp => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Where scls looks (the real system: `/proc/streams`, `/dev/streams`, `/proc/modules`).
#[derive(Debug, Clone)]
pub struct Roots {
    /// The kernel's STREAMS statistics directory.
    pub proc_streams: PathBuf,
    /// The STREAMS device directory.
    pub dev_streams: PathBuf,
    /// The kernel module list.
    pub proc_modules: PathBuf,
}

impl Default for Roots {
    fn default() -> Roots {
        Roots {
            proc_streams: "/proc/streams".into(),
            dev_streams: "/dev/streams".into(),
            proc_modules: "/proc/modules".into(),
        }
    }
}

fn wanted(o: &SclsOpts, line: &str) -> bool {
    o.names.is_empty() || o.names.iter().any(|n| line.contains(n.as_str()))
}

/// Files under `dir`, recursively, sorted.
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        if let Ok(rd) = std::fs::read_dir(&d) {
            for e in rd.flatten() {
                let p = e.path();
                match e.file_type() {
                    Ok(t) if t.is_dir() => todo.push(p),
                    Ok(_) => out.push(p),
                    Err(_) => {}
                }
            }
        }
    }
    out.sort();
    out
}

/// `(major, minor)` of a character device, if `p` is one.
fn char_dev(p: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let m = std::fs::metadata(p).ok()?;
    if !m.file_type().is_char_device() {
        return None;
    }
    let rdev = m.rdev();
    // glibc's gnu_dev_major/minor encoding.
    let major = ((rdev >> 8) & 0xfff) | ((rdev >> 32) & !0xfff);
    let minor = (rdev & 0xff) | ((rdev >> 12) & !0xff);
    Some((major, minor))
}

/// The listing. Returns (text, whether the kernel's statistics were found).
pub fn list(o: &SclsOpts, r: &Roots) -> (String, bool) {
    let mut out = String::new();
    let stats = files(&r.proc_streams);
    if r.proc_streams.is_dir() {
        let _ = writeln!(out, "STREAMS statistics ({}):", r.proc_streams.display());
        if stats.is_empty() {
            let _ = writeln!(out, "  (no files)");
        }
        for f in &stats {
            let rel = f.strip_prefix(&r.proc_streams).unwrap_or(f);
            if rel.as_os_str() == "reset" {
                continue;
            }
            let _ = writeln!(out, "==> {} <==", rel.display());
            match std::fs::read_to_string(f) {
                Ok(text) => {
                    for (i, l) in text.lines().enumerate() {
                        if i == 0 || wanted(o, l) {
                            let _ = writeln!(out, "{l}");
                        }
                    }
                }
                Err(e) => {
                    let _ = writeln!(out, "  (unreadable: {e})");
                }
            }
        }
        return (out, true);
    }
    let _ = writeln!(
        out,
        "no {} (the kernel exposes no STREAMS statistics): drivers from {}, modules from {}",
        r.proc_streams.display(),
        r.dev_streams.display(),
        r.proc_modules.display()
    );
    let _ = writeln!(out, "kernel modules:");
    let mut nmods = 0;
    let mods = std::fs::read_to_string(&r.proc_modules).unwrap_or_default();
    for l in mods.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let (Some(name), Some(size), Some(refs)) = (f.first(), f.get(1), f.get(2)) else {
            continue;
        };
        let users = f.get(3).copied().unwrap_or("-");
        let ours = name.starts_with("streams")
            || name.starts_with("str")
            || users.split(',').any(|u| u == "streams");
        if !ours {
            continue;
        }
        nmods += 1;
        if o.long {
            let state = f.get(4).copied().unwrap_or("?");
            let _ = writeln!(
                out,
                "  {name:<16} size {size:>8}  refs {refs:>3}  used by {users}  {state}"
            );
        } else {
            let _ = writeln!(out, "  {name}");
        }
    }
    if nmods == 0 {
        let _ = writeln!(out, "  (none loaded)");
    }
    let _ = writeln!(out, "drivers:");
    let mut ndev = 0;
    for p in files(&r.dev_streams) {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !wanted(o, &name) {
            continue;
        }
        let Some((maj, min)) = char_dev(&p) else {
            continue;
        };
        ndev += 1;
        if o.long {
            let _ = writeln!(out, "  {name:<16} {:<32} c {maj}:{min}", p.display());
        } else {
            let _ = writeln!(out, "  {name:<16} {}", p.display());
        }
    }
    if ndev == 0 {
        let _ = writeln!(out, "  (no devices under {})", r.dev_streams.display());
    }
    if o.count {
        let _ = writeln!(out, "statistics: not available (no /proc/streams)");
    }
    (out, false)
}

/// Reset the statistics (`-r`): write to `/proc/streams/reset` if the kernel offers it.
pub fn reset(r: &Roots) -> Result<(), String> {
    let p = r.proc_streams.join("reset");
    if !p.exists() {
        return Err(format!("-r: {} does not exist; nothing reset", p.display()));
    }
    std::fs::write(&p, "1\n").map_err(|e| format!("-r: {}: {e}", p.display()))
}
