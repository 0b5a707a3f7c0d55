//! Booting the guest in QEMU: accelerator choice, console streaming, timeout.
//!
//! KVM is used only when it works: some hosts expose a `/dev/kvm` whose guests hang in the
//! decompressor, so a short probe boot decides (its result is cached per host boot and kernel).
//! `RSTREAMS_ACCEL=kvm|tcg` forces the choice. The console goes to stdout and to a log file as
//! it arrives; the whole log is returned for judging.

use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::kernel::Kernel;
use crate::util::{self, Result};

/// How to print the console while it runs.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Echo {
    /// Every line.
    All,
    /// Only what follows the guest's `RSTREAMS-VM-START` marker (the command's output and any
    /// kernel errors it causes), without the markers — for `cargo xtask vm`.
    AfterStart,
}

/// A finished guest run.
pub(crate) struct Run {
    pub(crate) lines: Vec<String>,
    pub(crate) timed_out: bool,
    pub(crate) log: PathBuf,
}

fn qemu(k: &Kernel, initrd: &Path, accel: &str, append: &str) -> Command {
    let mut c = Command::new("qemu-system-x86_64");
    c.args(["-accel", accel, "-m", "1G", "-smp", "2", "-kernel"])
        .arg(k.bzimage())
        .arg("-initrd")
        .arg(initrd)
        .arg("-append")
        .arg(format!("console=ttyS0 panic=-1 {append}"))
        .args([
            "-display",
            "none",
            "-serial",
            "stdio",
            "-monitor",
            "none",
            "-no-reboot",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if accel == "kvm" {
        c.args(["-cpu", "host"]);
    }
    c
}

/// Boot and collect the console until the guest powers off or `timeout` passes.
pub(crate) fn boot(
    k: &Kernel,
    initrd: &Path,
    accel: &str,
    append: &str,
    timeout: Duration,
    log: &Path,
    echo: Option<Echo>,
) -> Result<Run> {
    let mut cmd = qemu(k, initrd, accel, append);
    if echo.is_some() {
        eprintln!(
            "    $ {}   (console log: {})",
            util::show(&cmd),
            log.display()
        );
    }
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start qemu-system-x86_64: {e}"))?;
    let mut logf = fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let (tx, rx) = mpsc::channel::<String>();
    let mut readers = Vec::new();
    for pipe in [
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn std::io::Read + Send>),
        child.stderr.take().map(|p| Box::new(p) as _),
    ]
    .into_iter()
    .flatten()
    {
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            let mut r = BufReader::new(pipe);
            let mut buf = Vec::new();
            while matches!(r.read_until(b'\n', &mut buf), Ok(n) if n > 0) {
                let line = String::from_utf8_lossy(&buf)
                    .trim_end_matches(['\n', '\r'])
                    .to_string();
                buf.clear();
                if tx.send(line).is_err() {
                    break;
                }
            }
        }));
    }
    drop(tx);
    let deadline = Instant::now() + timeout;
    let mut lines = Vec::new();
    let mut timed_out = false;
    let mut started = false;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left.min(Duration::from_millis(500))) {
            Ok(line) => {
                let _ = writeln!(logf, "{line}");
                match echo {
                    Some(Echo::All) => println!("{line}"),
                    Some(Echo::AfterStart) => {
                        if line.contains("RSTREAMS-VM-START") {
                            started = true;
                        } else if line.contains("RSTREAMS-EXIT") {
                            started = false;
                        } else if started && !line.starts_with("RSTREAMS-") {
                            println!("{line}");
                        }
                    }
                    _ => {}
                }
                lines.push(line);
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if Instant::now() >= deadline {
                    timed_out = true;
                    let _ = child.kill();
                    let msg = format!(
                        "RSTREAMS-HOST: timeout after {}s, guest killed",
                        timeout.as_secs()
                    );
                    let _ = writeln!(logf, "{msg}");
                    if echo.is_some() {
                        eprintln!("{msg}");
                    }
                    break;
                }
            }
        }
    }
    let _ = child.wait();
    for r in readers {
        let _ = r.join();
    }
    Ok(Run {
        lines,
        timed_out,
        log: log.to_path_buf(),
    })
}

/// Choose the accelerator: `RSTREAMS_ACCEL`, else KVM if a probe boot works, else TCG.
pub(crate) fn accel(k: &Kernel, initrd: &Path, key: &str) -> Result<String> {
    if let Ok(a) = std::env::var("RSTREAMS_ACCEL") {
        if a != "kvm" && a != "tcg" {
            return Err(format!("RSTREAMS_ACCEL={a:?}: use kvm or tcg"));
        }
        eprintln!("    accelerator {a} (forced by RSTREAMS_ACCEL)");
        return Ok(a);
    }
    let usable = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/kvm")
        .is_ok();
    if !usable {
        eprintln!("    notice: /dev/kvm not usable: using TCG (slow emulation; timings are not meaningful)");
        return Ok("tcg".into());
    }
    let boot_id = util::read(Path::new("/proc/sys/kernel/random/boot_id")).unwrap_or_default();
    let mut h = util::Fnv::new();
    h.add("boot", boot_id.trim().as_bytes());
    h.add("kernel", key.as_bytes());
    let memo = util::cache_root().join(format!("kvm-probe-{}", h.hex()));
    let verdict = match fs::read_to_string(&memo) {
        Ok(v) => v.trim().to_string(),
        Err(_) => {
            let st = util::step("probe KVM with a short boot (30 s limit)");
            let log = util::repo_root().join("target/vm/kvm-probe.log");
            let r = boot(
                k,
                initrd,
                "kvm",
                "rstreams.mode=probe",
                Duration::from_secs(30),
                &log,
                None,
            )?;
            let ok = r.lines.iter().any(|l| l.contains("RSTREAMS-PROBE-OK"));
            let v = if ok { "kvm" } else { "tcg" };
            util::write_atomic(&memo, v.as_bytes())?;
            st.done_with(if ok {
                "KVM works"
            } else {
                "KVM boot did not finish"
            });
            v.to_string()
        }
    };
    if verdict == "tcg" {
        eprintln!("    notice: /dev/kvm exists but a KVM boot hangs on this host: using TCG (set RSTREAMS_ACCEL=kvm to force)");
    } else {
        eprintln!("    accelerator kvm");
    }
    Ok(verdict)
}
