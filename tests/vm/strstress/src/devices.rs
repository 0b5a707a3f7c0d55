//! What the guest has: the STREAMS device nodes under `/dev/streams` (and `/dev/udp`), the
//! modules `/proc/streams/modules` lists, and the files strstress attaches Streams to.

use std::fs;
use std::path::Path;

/// A device node and what opening it gives.
#[derive(Debug, Clone)]
pub(crate) struct Device {
    pub(crate) path: String,
    pub(crate) kind: DevKind,
}

/// The kinds of device node that behave differently for the operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DevKind {
    /// `/dev/streams/clone/pipe`: an unconnected pipe end.
    PipeEnd,
    /// `/dev/streams/fifo/N`: every open is the same FIFO.
    Fifo,
    /// The multiplexing driver `mux` (I_LINK/I_PLINK under it).
    Mux,
    /// The loop-around drivers `loop`/`spx` (joined with I_FDINSERT).
    Loop,
    /// The `xput` driver (puts from timers, tasklets, work items).
    Xput,
    /// TPI UDP (`/dev/udp`, `/dev/streams/clone/udp`).
    Udp,
    /// Any other clone device (sloop, echo, nuls…).
    Other,
}

fn kind_of(path: &str) -> DevKind {
    let name = path.rsplit('/').next().unwrap_or("");
    if path.contains("/fifo/") {
        return DevKind::Fifo;
    }
    match name {
        "pipe" => DevKind::PipeEnd,
        "mux" => DevKind::Mux,
        "loop" | "spx" => DevKind::Loop,
        "xput" => DevKind::Xput,
        "udp" => DevKind::Udp,
        _ => DevKind::Other,
    }
}

fn is_chardev(p: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    fs::metadata(p).is_ok_and(|m| m.file_type().is_char_device())
}

fn walk(dir: &Path, out: &mut Vec<Device>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    let mut paths: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            walk(&p, out);
        } else if is_chardev(&p) {
            let path = p.display().to_string();
            out.push(Device {
                kind: kind_of(&path),
                path,
            });
        }
    }
}

/// Every STREAMS device node, sorted by path (the same list for a given module build, so a
/// seed picks the same devices).
pub(crate) fn devices() -> Vec<Device> {
    let mut out = Vec::new();
    walk(Path::new("/dev/streams"), &mut out);
    if is_chardev(Path::new("/dev/udp")) {
        out.push(Device {
            path: "/dev/udp".into(),
            kind: DevKind::Udp,
        });
    }
    out
}

/// The pushable modules: the `mod` rows of `/proc/streams/modules`.
pub(crate) fn modules() -> Vec<String> {
    let text = fs::read_to_string("/proc/streams/modules").unwrap_or_default();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            let (name, kind) = (w.next()?, w.next()?);
            (kind == "mod").then(|| name.to_string())
        })
        .collect()
}

/// Where Streams get attached: plain files made by the orchestrator (mode 0666) in `dir`.
pub(crate) fn attach_paths(dir: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{dir}/attach{i}")).collect()
}
