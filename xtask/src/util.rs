//! Small helpers: timed steps, running commands, paths, hashing, file copies.
//!
//! Everything the driver does is announced as a step with its elapsed time, so a slow or stuck
//! stage is visible in CI logs without extra tooling.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

/// Errors are messages for the user; `main` prints them and exits non-zero.
pub(crate) type Result<T> = std::result::Result<T, String>;

/// A named stage with its start time; prints `==>` at start and `<==` with seconds at the end.
pub(crate) struct Step {
    name: String,
    start: Instant,
}

/// Start a step.
pub(crate) fn step(name: impl Into<String>) -> Step {
    let name = name.into();
    eprintln!("==> {name}");
    Step {
        name,
        start: Instant::now(),
    }
}

impl Step {
    /// Finish the step, printing its elapsed time.
    pub(crate) fn done(self) {
        eprintln!(
            "<== {} ({:.1}s)",
            self.name,
            self.start.elapsed().as_secs_f64()
        );
    }

    /// Finish the step with a note.
    pub(crate) fn done_with(self, note: &str) {
        eprintln!(
            "<== {}: {note} ({:.1}s)",
            self.name,
            self.start.elapsed().as_secs_f64()
        );
    }
}

/// `cmd` as a shell-like string, for messages.
pub(crate) fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

/// Run `cmd` with inherited output; error unless it exits 0.
pub(crate) fn run(cmd: &mut Command) -> Result<()> {
    eprintln!("    $ {}", show(cmd));
    let st = cmd
        .status()
        .map_err(|e| format!("cannot run {}: {e}", show(cmd)))?;
    if st.success() {
        Ok(())
    } else {
        Err(format!("command failed ({st}): {}", show(cmd)))
    }
}

/// Run `cmd` and return its stdout (trimmed); error unless it exits 0.
pub(crate) fn output(cmd: &mut Command) -> Result<String> {
    let out = cmd
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", show(cmd)))?;
    if !out.status.success() {
        return Err(format!("command failed ({}): {}", out.status, show(cmd)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Like [`output`] but `None` instead of an error (probing for tools).
pub(crate) fn try_output(cmd: &mut Command) -> Option<String> {
    let out = cmd.stderr(Stdio::null()).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Run `cmd` with stdout+stderr appended to `log`; `echo` also prints each line. Returns the
/// combined output lines; error (with the last lines) unless it exits 0.
pub(crate) fn run_logged(cmd: &mut Command, log: &Path, echo: bool) -> Result<Vec<String>> {
    eprintln!("    $ {}   (log: {})", show(cmd), log.display());
    let mut logf = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| format!("{}: {e}", log.display()))?;
    // One pipe for both streams keeps their order (as a terminal would show them).
    let (reader, writer) = std::io::pipe().map_err(|e| format!("pipe: {e}"))?;
    let writer2 = writer.try_clone().map_err(|e| format!("pipe: {e}"))?;
    let mut child = cmd
        .stdout(writer)
        .stderr(writer2)
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", show(cmd)))?;
    // Drop our copies of the write end (held by `cmd`) so the read loop sees EOF.
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut lines = Vec::new();
    for line in BufReader::new(reader).lines() {
        let line = line.unwrap_or_default();
        let _ = writeln!(logf, "{line}");
        if echo {
            eprintln!("    {line}");
        }
        lines.push(line);
    }
    let st = child.wait().map_err(|e| format!("wait: {e}"))?;
    if st.success() {
        Ok(lines)
    } else {
        let tail: Vec<&str> = lines
            .iter()
            .rev()
            .take(40)
            .rev()
            .map(String::as_str)
            .collect();
        Err(format!(
            "command failed ({st}): {}\n--- last lines ---\n{}",
            show(cmd),
            tail.join("\n")
        ))
    }
}

/// The repository root (the workspace holding `xtask/`).
pub(crate) fn repo_root() -> PathBuf {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    here.parent().map(Path::to_path_buf).unwrap_or(here)
}

/// `$HOME`, or `/root`.
pub(crate) fn home() -> PathBuf {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/root"))
}

/// The cache root: `$RSTREAMS_CACHE` or `~/.cache/rstreams`.
pub(crate) fn cache_root() -> PathBuf {
    std::env::var_os("RSTREAMS_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| home().join(".cache/rstreams"))
}

/// Read a file to a string, with the path in the error.
pub(crate) fn read(p: &Path) -> Result<String> {
    fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))
}

/// Write a file atomically (temporary file + rename), creating parent directories.
pub(crate) fn write_atomic(p: &Path, data: &[u8]) -> Result<()> {
    if let Some(d) = p.parent() {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    let tmp = p.with_extension(format!("tmp{}", std::process::id()));
    fs::write(&tmp, data).map_err(|e| format!("{}: {e}", tmp.display()))?;
    fs::rename(&tmp, p).map_err(|e| format!("{}: {e}", p.display()))
}

/// 64-bit FNV-1a: a stable content hash for cache keys (not for security).
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    /// Mix in a labelled value (the label keeps fields from running into each other).
    pub(crate) fn add(&mut self, label: &str, data: &[u8]) {
        for b in label
            .as_bytes()
            .iter()
            .chain(&[0u8])
            .chain(data)
            .chain(&[0xffu8])
        {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    pub(crate) fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// Copy `src` to `dst` only if the contents differ (keeps mtimes, so `make` stays incremental).
pub(crate) fn sync_file(src: &Path, dst: &Path) -> Result<()> {
    let data = fs::read(src).map_err(|e| format!("{}: {e}", src.display()))?;
    if fs::read(dst).ok().as_deref() == Some(&data[..]) {
        return Ok(());
    }
    if let Some(d) = dst.parent() {
        fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    fs::write(dst, &data).map_err(|e| format!("{}: {e}", dst.display()))
}

/// Copy the files under `src` (recursively) that `keep` accepts into `dst`, only where changed,
/// and delete the files under `dst` that `keep` accepts but `src` no longer has (a renamed or
/// removed source file must not linger in the staging copy: `foo.rs` next to a new
/// `foo/mod.rs` would break the build).
pub(crate) fn sync_tree(src: &Path, dst: &Path, keep: &dyn Fn(&Path) -> bool) -> Result<()> {
    if let Ok(rd) = fs::read_dir(dst) {
        for e in rd.flatten() {
            let t = e.path();
            // Kbuild's generated `*.mod.c` live next to the sources: not ours to delete.
            let generated = t.to_string_lossy().ends_with(".mod.c");
            let gone = !generated && !src.join(e.file_name()).exists();
            if gone && t.is_dir() {
                fs::remove_dir_all(&t).map_err(|e| format!("{}: {e}", t.display()))?;
            } else if gone && keep(&t) {
                fs::remove_file(&t).map_err(|e| format!("{}: {e}", t.display()))?;
            }
        }
    }
    for e in fs::read_dir(src).map_err(|e| format!("{}: {e}", src.display()))? {
        let e = e.map_err(|e| format!("{}: {e}", src.display()))?;
        let p = e.path();
        let t = dst.join(e.file_name());
        if p.is_dir() {
            sync_tree(&p, &t, keep)?;
        } else if keep(&p) {
            sync_file(&p, &t)?;
        }
    }
    Ok(())
}

/// All files under `dir` (recursively), sorted.
pub(crate) fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        if let Ok(rd) = fs::read_dir(&d) {
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    todo.push(p);
                } else {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

#[cfg(test)]
mod sync_tests {
    use super::*;

    #[test]
    fn sync_tree_copies_and_deletes_stale_sources() {
        let base = std::env::temp_dir().join(format!("rstreams-sync-{}", std::process::id()));
        let (src, dst) = (base.join("src"), base.join("dst"));
        let _ = fs::remove_dir_all(&base);
        fs::create_dir_all(src.join("m/tests")).unwrap();
        fs::write(src.join("a.rs"), "a").unwrap();
        fs::write(src.join("m/tests/mod.rs"), "t").unwrap();
        fs::create_dir_all(dst.join("m")).unwrap();
        fs::create_dir_all(dst.join("old")).unwrap();
        fs::write(dst.join("m/tests.rs"), "stale").unwrap();
        fs::write(dst.join("old/x.rs"), "stale").unwrap();
        fs::write(dst.join("streams.mod.c"), "generated").unwrap();
        fs::write(dst.join("streams.o"), "object").unwrap();
        let keep = |p: &Path| {
            let n = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            n.ends_with(".rs") || n.ends_with(".c")
        };
        sync_tree(&src, &dst, &keep).unwrap();
        assert_eq!(fs::read_to_string(dst.join("a.rs")).unwrap(), "a");
        assert_eq!(fs::read_to_string(dst.join("m/tests/mod.rs")).unwrap(), "t");
        assert!(!dst.join("m/tests.rs").exists(), "stale source kept");
        assert!(!dst.join("old").exists(), "stale directory kept");
        assert!(dst.join("streams.mod.c").exists(), "generated file deleted");
        assert!(dst.join("streams.o").exists(), "build output deleted");
        let _ = fs::remove_dir_all(&base);
    }
}
