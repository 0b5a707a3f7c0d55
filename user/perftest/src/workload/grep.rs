//! The LKML "larger pipes" thread's grep benchmark (seed 001): "the time taken to grep for some
//! unexisting pattern on a 50mb file, i.e. `cat 50mbfile | grep "$$$$"`, with a warm file
//! cache". perftest writes the file (`--file`, `--file-mb` MiB of 100-byte text lines; kept
//! when it already has that size, and in the guest it lives in tmpfs, so the cache is always
//! warm), makes the channel (a Linux pipe or a STREAMS pipe, sized by `--pipe-size`), and
//! execs `cat FILE` with the channel as its stdout and `grep -F PATTERN` with it as its stdin
//! (the first `cat` and `grep` on PATH: busybox applets in the guest). `-F`: the pattern is a
//! literal either way, and busybox's regex path costs about 9x its fixed-string one on the
//! host, which would hide the pipe. The run is timed from before the two forks until both
//! have exited (the shell pipeline's wall time); grep must find nothing (exit 1) and cat must
//! succeed. `-t` × `-i` seconds is the time limit.
//!
//! With `--shell SHELL` the shell makes the pipe instead, as in the seed: `SHELL -c '{ cat
//! "$1"; echo $? >"$3"; } | grep -F -- "$2"'` (cat's status through a file: the shell has no
//! pipefail), for the STREAMS kind with `--preload` (`libstreams_pipe.so`) as LD_PRELOAD, so
//! that the shell's pipe(2) returns a STREAMS pipe; the pipe keeps its default size. Before the
//! timed run a probe pipeline `echo x | perftest --isastream 0` under the same environment
//! must say 1 for STREAMS and 0 for Linux (the interposer falls back to a Linux pipe silently
//! when the device is missing, which would measure Linux under the STREAMS name).

use super::Workload;
use crate::csv::Row;
use crate::opts::{Kind, Opts};
use crate::run::{cloexec_pipe, os_err};
use std::ffi::CString;
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::time::Instant;

/// One line of the file: 100 bytes, without the pattern.
const LINE: &[u8] =
    b"the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOP\n";

/// Write `path` with exactly `bytes` bytes of [`LINE`]s unless it already has that size.
pub fn ensure_file(path: &Path, bytes: u64) -> Result<(), String> {
    if std::fs::metadata(path).is_ok_and(|m| m.len() == bytes) {
        return Ok(());
    }
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut f =
        std::io::BufWriter::with_capacity(1 << 20, std::fs::File::create(path).map_err(err)?);
    let block: Vec<u8> = LINE
        .iter()
        .copied()
        .cycle()
        .take(LINE.len() * 655)
        .collect();
    let mut left = bytes;
    while left > 0 {
        let n = (block.len() as u64).min(left) as usize;
        f.write_all(&block[..n]).map_err(err)?;
        left -= n as u64;
    }
    f.flush().map_err(err)
}

/// Fork and exec `argv` (searched on PATH) with `stdin`/`stdout` as given; `close` are
/// descriptors the child must not keep (the channel's other ends).
fn fork_exec(
    argv: &[CString],
    stdin: RawFd,
    stdout: RawFd,
    close: &[RawFd],
) -> Result<libc::pid_t, String> {
    let mut ptrs: Vec<*const libc::c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    ptrs.push(std::ptr::null());
    // SAFETY: perftest is single-threaded; the child only calls async-signal-safe functions
    // (dup2, close, execvp, write, _exit) on memory prepared before the fork.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(os_err("fork()"));
    }
    if pid == 0 {
        // SAFETY: as above; `ptrs` is a NULL-terminated array of NUL-terminated strings.
        unsafe {
            if libc::dup2(stdin, 0) < 0 || libc::dup2(stdout, 1) < 0 {
                libc::_exit(126);
            }
            for &fd in close {
                if fd > 2 {
                    libc::close(fd);
                }
            }
            libc::execvp(ptrs[0], ptrs.as_ptr());
            let msg = b"perftest: grep workload: exec failed\n";
            libc::write(2, msg.as_ptr().cast(), msg.len());
            libc::_exit(127);
        }
    }
    Ok(pid)
}

/// `cmd` with the environment of a `--shell` run: LD_PRELOAD for STREAMS, none for Linux,
/// never STREAMS_PIPE (which turns the interposer off).
fn shell_env(o: &Opts, cmd: &mut std::process::Command) -> Result<(), String> {
    cmd.env_remove("STREAMS_PIPE").env_remove("LD_PRELOAD");
    match o.kind {
        Kind::Linux => Ok(()),
        Kind::Streams => {
            let preload = o.preload_path();
            if !preload.exists() {
                return Err(format!("--preload {}: no such file", preload.display()));
            }
            cmd.env("LD_PRELOAD", &preload);
            Ok(())
        }
        k => Err(format!("--shell: a pipe kind is linux or streams, not {k}")),
    }
}

/// The `--shell` variant: the shell's own pipe.
fn run_shell(o: &Opts, shell: &Path, bytes: u64) -> Result<Row, String> {
    use std::process::{Command, Stdio};
    if o.pipe_size.is_some() {
        return Err("--shell: the shell makes the pipe, --pipe-size cannot size it".into());
    }
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    // The probe: which kind of pipe does a pipeline of this shell get?
    let mut probe = Command::new(shell);
    probe
        .args(["-c", "echo x | \"$0\" --isastream 0"])
        .arg(&exe)
        .stdin(Stdio::null());
    shell_env(o, &mut probe)?;
    let out = probe
        .output()
        .map_err(|e| format!("{}: {e}", shell.display()))?;
    let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let want = if o.kind == Kind::Streams { "1" } else { "0" };
    if got != want {
        return Err(format!(
            "--shell probe: isastream() of the shell's pipe is {got:?}, not {want} (LD_PRELOAD={} {}in effect?)",
            o.preload_path().display(),
            if o.kind == Kind::Streams { "not " } else { "" }
        ));
    }
    let status = o.file.with_extension("cat-status");
    let _ = std::fs::remove_file(&status);
    let mut cmd = Command::new(shell);
    cmd.args([
        "-c",
        "{ cat \"$1\"; echo $? >\"$3\"; } | grep -F -- \"$2\"",
        "sh",
    ])
    .arg(&o.file)
    .arg(&o.pattern)
    .arg(&status)
    .stdin(Stdio::null())
    .stdout(Stdio::null());
    shell_env(o, &mut cmd)?;
    let (res_r, res_w) = cloexec_pipe()?;
    drop(res_w);
    let start = Instant::now();
    let child = cmd
        .spawn()
        .map_err(|e| format!("{}: {e}", shell.display()))?;
    let pid = child.id() as libc::pid_t;
    // Reaped by wait_status below, not by `child`.
    drop(child);
    let limit = o.time * f64::from(o.iterations);
    let w = super::wait_status(&[pid], res_r, limit, "grep --shell")?;
    let secs = start.elapsed().as_secs_f64();
    let cat = std::fs::read_to_string(&status).unwrap_or_default();
    let exit = libc::WIFEXITED(w.status[0]).then(|| libc::WEXITSTATUS(w.status[0]));
    if cat.trim() != "0" || exit != Some(1) {
        return Err(format!(
            "cat exit {:?}, grep -F exit {exit:?} (expected 0 and 1: nothing found)",
            cat.trim()
        ));
    }
    Ok(super::row(
        Workload::Grep,
        o,
        1,
        bytes as f64,
        secs,
        0,
        bytes,
    ))
}

/// Run it.
pub fn run(o: &Opts, warn: &mut dyn FnMut(String)) -> Result<Row, String> {
    let bytes = o.file_mb << 20;
    ensure_file(&o.file, bytes)?;
    if let Some(shell) = &o.shell {
        return run_shell(o, shell, bytes);
    }
    let cstr = |s: &[u8]| CString::new(s).map_err(|_| "a NUL byte in an argument".to_string());
    let cat = [cstr(b"cat")?, cstr(o.file.as_os_str().as_bytes())?];
    let grep = [cstr(b"grep")?, cstr(b"-F")?, cstr(o.pattern.as_bytes())?];
    let null = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/null")
        .map_err(|e| format!("/dev/null: {e}"))?;
    let (rd, wr) = super::channel(o, warn)?;
    // Nothing to report through it, but wait_status reads one.
    let (res_r, res_w) = cloexec_pipe()?;
    drop(res_w);
    let (rd_fd, wr_fd) = (rd.raw(), wr.raw());
    let start = Instant::now();
    let cat_pid = fork_exec(&cat, null.as_raw_fd(), wr_fd, &[rd_fd, wr_fd])?;
    let grep_pid = match fork_exec(&grep, rd_fd, null.as_raw_fd(), &[rd_fd, wr_fd]) {
        Ok(p) => p,
        Err(e) => {
            // SAFETY: our own child.
            unsafe { libc::kill(cat_pid, libc::SIGKILL) };
            crate::run::wait(cat_pid);
            return Err(e);
        }
    };
    // grep must see end of file when cat is done: no other copy of the ends stays open.
    drop((rd, wr));
    let limit = o.time * f64::from(o.iterations);
    let w = super::wait_status(&[cat_pid, grep_pid], res_r, limit, "grep")?;
    let secs = start.elapsed().as_secs_f64();
    let exit = |st: libc::c_int| libc::WIFEXITED(st).then(|| libc::WEXITSTATUS(st));
    match (exit(w.status[0]), exit(w.status[1])) {
        (Some(0), Some(1)) => {}
        (c, g) => {
            return Err(format!(
                "cat exit {c:?}, grep -F exit {g:?} (expected 0 and 1: nothing found); wait status {:?}",
                w.status
            ))
        }
    }
    Ok(super::row(
        Workload::Grep,
        o,
        1,
        bytes as f64,
        secs,
        0,
        bytes,
    ))
}
