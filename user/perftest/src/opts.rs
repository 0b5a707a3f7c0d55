//! The options of one measurement: LfS `perftest` options (`-s -t -i -r -w -F -H -M -b -a -p -m
//! -q -v --hiwat --lowat -R -S`) plus ours (`--pipe KIND`, `--putmsg`, `-c COUNT`, `--csv`,
//! `--label`, for the UDP test `--udp KIND`, `--bufsize N`, and for the other workloads
//! `--workload syscall|devnull|bw|grep|flex`, `--pipe-size N`, `--total N`, `--file PATH`, `--file-mb N`,
//! `--pattern P`, `--children N`, `--compute-us R`), declared for clap
//! ([`RunArgs`]) and resolved into [`Opts`].
//!
//! Two LfS habits clap does not have are kept by reading the options in command-line order
//! (as getopt did): `-p` with a number is the push count and with a kind name (`linux`,
//! `socketpair`, `seqpacket`, `streams`) selects the channel, the last of `-p N`/`--push N`
//! winning; `-q` sets the verbosity to 0 and a later `-v` raises it again (clap keeps the
//! position of the last `-v` only, so in `-v -q -v` both count: verbosity 2, not getopt's 1).

use crate::udp::UdpKind;
use crate::workload::Workload;
use clap::{ArgAction, ArgMatches};
use std::fmt;
use std::path::{Path, PathBuf};

/// The channel under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// pipe(2).
    Linux,
    /// socketpair(AF_UNIX, SOCK_STREAM).
    Socketpair,
    /// socketpair(AF_UNIX, SOCK_SEQPACKET).
    Seqpacket,
    /// A STREAMS pipe through libstreams (`/dev/streams/clone/pipe` + I_PIPE).
    Streams,
}

impl Kind {
    /// Parse a kind name.
    pub fn parse(s: &str) -> Option<Kind> {
        match s {
            "linux" | "pipe" => Some(Kind::Linux),
            "socketpair" | "socket" => Some(Kind::Socketpair),
            "seqpacket" => Some(Kind::Seqpacket),
            "streams" => Some(Kind::Streams),
            _ => None,
        }
    }

    /// The name used in output and CSV.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Linux => "linux",
            Kind::Socketpair => "socketpair",
            Kind::Seqpacket => "seqpacket",
            Kind::Streams => "streams",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Largest message (LfS MAXMSGSIZE).
pub const MAXMSGSIZE: usize = 32768;

/// Send and receive buffer of the UDP test: the LfS netperf script's `--bufsizes=131071`.
pub const UDP_BUFSIZE: u32 = 131_071;

/// What the bandwidth workload moves by default: lmbench bw_pipe's 10 MB (10 MiB).
pub const BW_TOTAL: u64 = 10 << 20;

/// The grep workload's file by default.
pub const GREP_FILE: &str = "/tmp/perftest-grep.txt";

/// The grep workload's file size by default, in MiB (the seed's 50 MB file).
pub const GREP_FILE_MB: u64 = 50;

/// The pipe(2) interposer's file name.
pub const PRELOAD_NAME: &str = "libstreams_pipe.so";

/// Debian's multiarch directory of the target perftest is built for (what
/// `dpkg-architecture -qDEB_HOST_MULTIARCH` says on such a host): `rstreams-tools` installs
/// the interposer in `/usr/lib/<multiarch>/`. None where Debian has no such tuple.
pub const MULTIARCH: Option<&str> = multiarch();

const fn multiarch() -> Option<&'static str> {
    if !cfg!(all(target_os = "linux", target_env = "gnu")) {
        None
    } else if cfg!(target_arch = "x86_64") {
        Some("x86_64-linux-gnu")
    } else if cfg!(target_arch = "aarch64") {
        Some("aarch64-linux-gnu")
    } else if cfg!(target_arch = "x86") {
        Some("i386-linux-gnu")
    } else if cfg!(target_arch = "riscv64") {
        Some("riscv64-linux-gnu")
    } else if cfg!(target_arch = "powerpc64") && cfg!(target_endian = "little") {
        Some("powerpc64le-linux-gnu")
    } else if cfg!(target_arch = "s390x") {
        Some("s390x-linux-gnu")
    } else {
        None
    }
}

/// Where `--preload` looks by default, in order: the packaged library
/// (`/usr/lib/<multiarch>/libstreams_pipe.so`), then `/usr/lib/libstreams_pipe.so` (a
/// hand-made install; the test guests have both).
pub fn preload_candidates() -> Vec<PathBuf> {
    let lib = Path::new("/usr/lib");
    MULTIARCH
        .map(|m| lib.join(m).join(PRELOAD_NAME))
        .into_iter()
        .chain([lib.join(PRELOAD_NAME)])
        .collect()
}

/// The default `--preload`: the first candidate `exists` accepts, else the first candidate
/// (so that the error names where the package puts it).
pub fn default_preload(exists: impl Fn(&Path) -> bool) -> PathBuf {
    let all = preload_candidates();
    all.iter()
        .find(|p| exists(p))
        .or(all.first())
        .cloned()
        .unwrap_or_else(|| PathBuf::from("/usr/lib").join(PRELOAD_NAME))
}

/// The grep workload's pattern by default: found nowhere in the file perftest writes.
pub const GREP_PATTERN: &str = "rstreams-no-such-pattern";

/// Options of one measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct Opts {
    /// Channel kind (`--pipe`, `-p KIND`).
    pub kind: Kind,
    /// putmsg/getmsg instead of write/read (`--putmsg`; `-r` selects read/write).
    pub putmsg: bool,
    /// Write size in bytes (`-s`).
    pub size: usize,
    /// Report interval in seconds (`-t`, fractions allowed).
    pub time: f64,
    /// Number of reports before stopping (`-i`).
    pub iterations: u32,
    /// Stop the writer after this many messages (`-c`).
    pub count: Option<u64>,
    /// Write hold / coalescing, SNDHOLD (`-H`).
    pub hold: bool,
    /// Read notification, SNDMREAD on the write end (`-M`): the reading end's head sends
    /// M_READ before a read blocks.
    pub mread: bool,
    /// Read-fill mode, RFILL (`-w`).
    pub readfill: bool,
    /// Full-size (PIPE_BUF) reads (`-F`).
    pub full: bool,
    /// Blocking I/O instead of O_NONBLOCK + poll (`-b`).
    pub blocking: bool,
    /// Modules to push (`-p N`, `--push N`).
    pub push: u32,
    /// Module name (`-m`).
    pub module: String,
    /// Stream head high water mark (`--hiwat`; I_SET_HIWAT on both ends).
    pub hiwat: Option<u64>,
    /// Stream head low water mark (`--lowat`; I_SET_LOWAT on both ends).
    pub lowat: Option<u64>,
    /// Reader nice value (`-R[N]`).
    pub niceread: Option<i32>,
    /// Writer nice value (`-S[N]`).
    pub nicesend: Option<i32>,
    /// Verbosity (`-q` = 0, `-v` increments; default 1).
    pub verbose: u32,
    /// Print the CSV result line (`--csv`).
    pub csv: bool,
    /// Implementation label for CSV/report (`--label`; default derived from the options).
    pub label: Option<String>,
    /// The UDP test instead of the pipe test, and its implementation (`--udp KIND`).
    pub udp: Option<UdpKind>,
    /// UDP send and receive buffer size (`--bufsize`): SO_SNDBUF/SO_RCVBUF or
    /// XTI_SNDBUF/XTI_RCVBUF.
    pub bufsize: u32,
    /// Another workload than the writer/reader pair (`--workload`).
    pub workload: Option<Workload>,
    /// Pipe size (`--pipe-size`): F_SETPIPE_SZ on a Linux pipe; on a STREAMS pipe the high
    /// water mark of both Stream heads, and the low mark an eighth of it unless `--lowat`.
    pub pipe_size: Option<u64>,
    /// Bytes the bandwidth workload moves (`--total`).
    pub total: u64,
    /// The grep workload's file (`--file`; written if it does not have `file_mb` MiB).
    pub file: PathBuf,
    /// The grep workload's file size in MiB (`--file-mb`).
    pub file_mb: u64,
    /// The grep workload's pattern (`--pattern`).
    pub pattern: String,
    /// pipeflex: children, two per pipe (`--children`, the seed's `-c`).
    pub children: u32,
    /// pipeflex: mean compute time after each read in µs (`--compute-us`, the seed's `-r`).
    pub compute_us: u64,
    /// grep: run `SHELL -c 'cat FILE | grep -F PATTERN'` instead of making the pipe (`--shell`);
    /// for the STREAMS kind with `preload` as LD_PRELOAD.
    pub shell: Option<PathBuf>,
    /// The pipe(2) interposer for `--shell` with the STREAMS kind (`--preload`); None: the
    /// first of [`preload_candidates`] that exists (see [`Opts::preload_path`]).
    pub preload: Option<PathBuf>,
    /// Print isastream(FD) (0 or 1) and exit (`--isastream FD`, hidden: the `--shell` probe).
    pub isastream: Option<i32>,
}

impl Default for Opts {
    fn default() -> Opts {
        Opts {
            kind: Kind::Linux,
            putmsg: false,
            size: 64,
            time: 1.0,
            iterations: 1,
            count: None,
            hold: false,
            mread: false,
            readfill: false,
            full: false,
            blocking: false,
            push: 0,
            module: "pipemod".into(),
            hiwat: None,
            lowat: None,
            niceread: None,
            nicesend: None,
            verbose: 1,
            csv: false,
            label: None,
            udp: None,
            bufsize: UDP_BUFSIZE,
            workload: None,
            pipe_size: None,
            total: BW_TOTAL,
            file: PathBuf::from(GREP_FILE),
            file_mb: GREP_FILE_MB,
            pattern: GREP_PATTERN.into(),
            children: 2,
            compute_us: 500,
            shell: None,
            preload: None,
            isastream: None,
        }
    }
}

impl Opts {
    /// The interposer `--shell` preloads: `--preload`, else [`default_preload`] on this
    /// machine's files.
    pub fn preload_path(&self) -> PathBuf {
        self.preload
            .clone()
            .unwrap_or_else(|| default_preload(|p| p.is_file()))
    }

    /// The implementation label: `--label`, else kind plus mode and STREAMS options, e.g.
    /// `streams-putmsg+H`.
    pub fn impl_label(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
        }
        if let Some(u) = self.udp {
            let mut s = u.label().to_string();
            if self.blocking {
                s.push_str("+b");
            }
            return s;
        }
        if let Some(w) = self.workload {
            return w.label(self);
        }
        let mut s = self.kind.name().to_string();
        if self.putmsg {
            s.push_str("-putmsg");
        }
        for (on, tag) in [
            (self.hold, "+H"),
            (self.readfill, "+w"),
            (self.full, "+F"),
            (self.mread, "+M"),
            (self.blocking, "+b"),
        ] {
            if on {
                s.push_str(tag);
            }
        }
        s
    }
}

/// What the command line asks for.
// One per process, parsed once: a boxed Opts would only add noise at every use.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    /// Run one measurement.
    Run(Opts),
    /// Print help.
    Help,
    /// Print the version.
    Version,
}

/// A number, decimal or `0x` hexadecimal (as LfS's `strtoul`).
fn num<T: std::str::FromStr>(v: &str) -> Result<T, String> {
    let v = v.trim();
    let parsed = if let Some(h) = v.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
            .ok()
            .and_then(|n| n.to_string().parse().ok())
    } else {
        v.parse().ok()
    };
    parsed.ok_or_else(|| format!("bad number {v:?}"))
}

fn positive<T: std::str::FromStr + PartialOrd + From<u8>>(v: &str) -> Result<T, String> {
    let n: T = num(v)?;
    if n < T::from(1) {
        return Err("must be at least 1".into());
    }
    Ok(n)
}

fn size(v: &str) -> Result<usize, String> {
    let n: usize = num(v)?;
    if !(1..=MAXMSGSIZE).contains(&n) {
        return Err(format!("size {n} out of range 1..{MAXMSGSIZE}"));
    }
    Ok(n)
}

fn seconds(v: &str) -> Result<f64, String> {
    let t: f64 = num(v)?;
    if !(t > 0.0 && t.is_finite()) {
        return Err(format!("bad time {t}"));
    }
    Ok(t)
}

fn module_name(v: &str) -> Result<String, String> {
    if v.is_empty() || v.len() > 8 {
        return Err(format!("bad module name {v:?} (1..8 characters)"));
    }
    Ok(v.to_string())
}

/// A value of `-p`: LfS's push count when numeric, else the channel kind.
#[derive(Debug, Clone, Copy, PartialEq)]
enum PipeArg {
    Kind(Kind),
    Push(u32),
}

fn pipe_arg(v: &str) -> Result<PipeArg, String> {
    if let Some(k) = Kind::parse(v) {
        Ok(PipeArg::Kind(k))
    } else if !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()) {
        num(v).map(PipeArg::Push)
    } else {
        Err(format!(
            "unknown pipe kind {v:?} (linux, socketpair, seqpacket, streams)"
        ))
    }
}

/// The options of one run as given on the command line (flattened into `perftest` and
/// `perftest sweep`); [`RunArgs::apply`] resolves them into [`Opts`].
#[derive(Debug, Clone, Default, clap::Args)]
#[command(next_help_heading = "Run options")]
pub struct RunArgs {
    /// Channel: linux (pipe(2), default), socketpair, seqpacket, streams; a number is the push
    /// count (LfS's -p N)
    #[arg(short = 'p', long = "pipe", value_name = "KIND", value_parser = pipe_arg, action = ArgAction::Append)]
    pipe: Vec<PipeArg>,
    /// Push COUNT instances of the module
    #[arg(long, value_name = "COUNT", value_parser = num::<u32>)]
    push: Option<u32>,
    /// Module to push [default: pipemod]
    #[arg(short, long, value_name = "NAME", value_parser = module_name)]
    module: Option<String>,
    /// Write size in bytes, 1..32768 [default: 64]
    #[arg(short, long, value_name = "SIZE", value_parser = size)]
    size: Option<usize>,
    /// Report interval in seconds, fractions allowed [default: 1; sweep: 2]
    #[arg(short, long, value_name = "SECS", value_parser = seconds)]
    time: Option<f64>,
    /// Stop after N reports [default: 1]
    #[arg(short, long, value_name = "N", value_parser = positive::<u32>)]
    iterations: Option<u32>,
    /// Stop the writer after N messages
    #[arg(short, long, value_name = "N", value_parser = positive::<u64>)]
    count: Option<u64>,
    /// Use read/write (the default)
    #[arg(short, long)]
    readwrite: bool,
    /// Use putmsg/getmsg (STREAMS only)
    #[arg(long)]
    putmsg: bool,
    /// SNDHOLD write coalescing (STREAMS)
    #[arg(short = 'H', long)]
    hold: bool,
    /// RFILL read-fill mode (STREAMS)
    #[arg(short = 'w', long)]
    readfill: bool,
    /// Full-size (4096-byte) reads
    #[arg(short = 'F', long)]
    full: bool,
    /// Read notification: I_SWROPT SNDMREAD on the write end (the reader's head sends M_READ
    /// before a read blocks)
    #[arg(short = 'M', long)]
    mread: bool,
    /// Stream head read queue high water mark on both ends (I_SET_HIWAT)
    #[arg(long, value_name = "N", value_parser = num::<u64>)]
    hiwat: Option<u64>,
    /// Stream head read queue low water mark on both ends (I_SET_LOWAT)
    #[arg(long, value_name = "N", value_parser = num::<u64>)]
    lowat: Option<u64>,
    /// Blocking I/O instead of O_NONBLOCK + poll
    #[arg(short, long)]
    blocking: bool,
    /// Fork reader and writer (always on; accepted for LfS scripts)
    #[arg(short, long = "async")]
    asynchronous: bool,
    /// STREAMS FIFOs (LfS -f): not supported, an error
    #[arg(short, long, hide = true)]
    fifo: bool,
    /// Run the reader at nice N [N: 19]
    #[arg(short = 'R', long, value_name = "N", num_args = 0..=1, default_missing_value = "19", value_parser = num::<i32>)]
    niceread: Option<i32>,
    /// Run the writer at nice N [N: 19]
    #[arg(short = 'S', long, value_name = "N", num_args = 0..=1, default_missing_value = "19", value_parser = num::<i32>)]
    nicesend: Option<i32>,
    /// No per-interval lines, no summary
    #[arg(short, long)]
    quiet: bool,
    /// More output (repeatable)
    #[arg(short = 'v', action = ArgAction::Count)]
    more: u8,
    /// Set the verbosity to N (without N: one more)
    #[arg(long = "verbose", value_name = "N", num_args = 0..=1, require_equals = true, default_missing_value = "+", action = ArgAction::Append)]
    verbose: Vec<String>,
    /// Print the CSV result line last
    #[arg(long)]
    csv: bool,
    /// Implementation name in the CSV output [default: kind and options, e.g. streams-putmsg+H;
    /// udp-socket, udp-tpi, udp-xtiso]
    #[arg(long, value_name = "NAME")]
    label: Option<String>,
    /// The UDP test (LfS UDP paper) on 127.0.0.1 instead of a pipe: socket (sendto/recvfrom),
    /// tpi (XTI on /dev/streams/clone/udp), xtiso (XTI on /dev/streams/clone/xtiso-udp)
    #[arg(long, value_name = "KIND", value_parser = UdpKind::parse_arg)]
    udp: Option<UdpKind>,
    /// UDP send and receive buffer in bytes (SO_SNDBUF/SO_RCVBUF, XTI_SNDBUF/XTI_RCVBUF)
    /// [default: 131071, the LfS netperf script's]
    #[arg(long, value_name = "BYTES", value_parser = positive::<u32>)]
    bufsize: Option<u32>,
    /// Another workload over the channel (--pipe linux|streams) instead of the writer/reader
    /// pair: syscall (getppid(2) in a loop for -t x -i seconds: the system call floor), devnull
    /// (write(2) of -s bytes to /dev/null in a loop for -t x -i seconds: the write floor), bw
    /// (lmbench bw_pipe: --total bytes in -s byte chunks), grep (cat FILE | grep PATTERN over
    /// the channel), flex (pipeflex: --children over half as many pipes for -t x -i seconds,
    /// each reader computing 0.5-1.5 x --compute-us after every read)
    #[arg(long, value_name = "NAME", value_parser = Workload::parse_arg)]
    workload: Option<Workload>,
    /// Pipe size: F_SETPIPE_SZ on a Linux pipe; on a STREAMS pipe I_SET_HIWAT on both ends and
    /// I_SET_LOWAT an eighth of it (unless --hiwat/--lowat)
    #[arg(long, value_name = "BYTES", value_parser = positive::<u64>)]
    pipe_size: Option<u64>,
    /// bw: bytes to move [default: 10485760]
    #[arg(long, value_name = "BYTES", value_parser = positive::<u64>)]
    total: Option<u64>,
    /// grep: the file cat reads, written first if it does not have --file-mb MiB
    /// [default: /tmp/perftest-grep.txt]
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
    /// grep: the file's size in MiB [default: 50]
    #[arg(long, value_name = "MIB", value_parser = positive::<u64>)]
    file_mb: Option<u64>,
    /// grep: the pattern, found nowhere in the file [default: rstreams-no-such-pattern]
    #[arg(long, value_name = "PATTERN")]
    pattern: Option<String>,
    /// flex: children, an even number, two per pipe (pipeflex -c) [default: 2]
    #[arg(long, value_name = "N", value_parser = even_children)]
    children: Option<u32>,
    /// flex: mean compute time after each read in microseconds (pipeflex -r) [default: 500]
    #[arg(long, value_name = "US", value_parser = num::<u64>)]
    compute_us: Option<u64>,
    /// grep: let SHELL make the pipe: SHELL -c 'cat FILE | grep -F PATTERN', with --preload as
    /// LD_PRELOAD for --pipe streams (checked to give a STREAMS pipe) and without for linux
    #[arg(long, value_name = "SHELL")]
    shell: Option<PathBuf>,
    /// grep --shell: the pipe(2) interposer [default: /usr/lib/<multiarch>/libstreams_pipe.so
    /// as the package installs it, else /usr/lib/libstreams_pipe.so]
    #[arg(long, value_name = "LIB")]
    preload: Option<PathBuf>,
    /// Print isastream(FD) and exit (the probe of grep --shell)
    #[arg(long, value_name = "FD", hide = true, value_parser = num::<i32>)]
    isastream: Option<i32>,
}

fn even_children(v: &str) -> Result<u32, String> {
    let n: u32 = positive(v)?;
    if !n.is_multiple_of(2) {
        return Err(format!("{n} children: must be even (two per pipe)"));
    }
    Ok(n)
}

/// The command-line positions of an option's occurrences (empty when absent or defaulted).
fn positions(m: &ArgMatches, id: &str) -> Vec<usize> {
    match m.value_source(id) {
        Some(clap::parser::ValueSource::CommandLine) => {
            m.indices_of(id).map(Iterator::collect).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

impl RunArgs {
    /// Resolve the options into `o` (which holds the defaults: a run's or the sweep's). `m` is
    /// the command's matches, for the order of `-p`/`--push` and `-q`/`-v`/`--verbose`.
    pub fn apply(&self, o: &mut Opts, m: &ArgMatches) -> Result<(), String> {
        if self.fifo {
            return Err("--fifo: STREAMS FIFOs are not supported".into());
        }
        // -p KIND|N and --push N, in command-line order.
        let mut push: Vec<(usize, u32)> = positions(m, "push").into_iter().zip(self.push).collect();
        for (i, p) in positions(m, "pipe").into_iter().zip(&self.pipe) {
            match *p {
                PipeArg::Kind(k) => o.kind = k,
                PipeArg::Push(n) => push.push((i, n)),
            }
        }
        if let Some(&(_, n)) = push.iter().max_by_key(|(i, _)| *i) {
            o.push = n;
        }
        // -q, -v and --verbose[=N], in command-line order.
        let mut verbosity: Vec<(usize, Option<u32>)> = Vec::new();
        verbosity.extend(positions(m, "quiet").into_iter().map(|i| (i, Some(0))));
        // clap keeps the position of the last -v only: all of them count from there.
        if let Some(&last) = positions(m, "more").last() {
            verbosity.extend((0..self.more).map(|_| (last, None)));
        }
        for (i, v) in positions(m, "verbose").into_iter().zip(&self.verbose) {
            let set = if v == "+" { None } else { Some(num(v)?) };
            verbosity.push((i, set));
        }
        verbosity.sort_by_key(|(i, _)| *i);
        for (_, set) in verbosity {
            o.verbose = set.unwrap_or(o.verbose + 1);
        }
        if let Some(m) = &self.module {
            o.module.clone_from(m);
        }
        o.size = self.size.unwrap_or(o.size);
        o.time = self.time.unwrap_or(o.time);
        o.iterations = self.iterations.unwrap_or(o.iterations);
        o.count = self.count.or(o.count);
        // -r and --putmsg: the last one wins.
        let mut mode: Vec<(usize, bool)> = positions(m, "readwrite")
            .into_iter()
            .map(|i| (i, false))
            .chain(positions(m, "putmsg").into_iter().map(|i| (i, true)))
            .collect();
        mode.sort_by_key(|(i, _)| *i);
        if let Some(&(_, putmsg)) = mode.last() {
            o.putmsg = putmsg;
        }
        o.hold |= self.hold;
        o.readfill |= self.readfill;
        o.full |= self.full;
        o.mread |= self.mread;
        o.blocking |= self.blocking;
        o.hiwat = self.hiwat.or(o.hiwat);
        o.lowat = self.lowat.or(o.lowat);
        o.niceread = self.niceread.or(o.niceread);
        o.nicesend = self.nicesend.or(o.nicesend);
        o.csv |= self.csv;
        o.udp = self.udp.or(o.udp);
        o.bufsize = self.bufsize.unwrap_or(o.bufsize);
        o.workload = self.workload.or(o.workload);
        o.pipe_size = self.pipe_size.or(o.pipe_size);
        o.total = self.total.unwrap_or(o.total);
        if let Some(f) = &self.file {
            o.file.clone_from(f);
        }
        o.file_mb = self.file_mb.unwrap_or(o.file_mb);
        if let Some(p) = &self.pattern {
            o.pattern.clone_from(p);
        }
        o.children = self.children.unwrap_or(o.children);
        o.compute_us = self.compute_us.unwrap_or(o.compute_us);
        if self.shell.is_some() {
            o.shell.clone_from(&self.shell);
        }
        if self.preload.is_some() {
            o.preload.clone_from(&self.preload);
        }
        o.isastream = self.isastream.or(o.isastream);
        if self.label.is_some() {
            o.label.clone_from(&self.label);
        }
        Ok(())
    }
}

/// Parse a `perftest [options]` command line (without the program name): what `perftest`
/// without a subcommand does.
pub fn parse(args: &[String]) -> Result<Cmd, String> {
    use clap::error::ErrorKind;
    let m = match crate::cli::perftest()
        .try_get_matches_from(std::iter::once("perftest").chain(args.iter().map(String::as_str)))
    {
        Ok(m) => m,
        Err(e) if e.kind() == ErrorKind::DisplayHelp => return Ok(Cmd::Help),
        Err(e) if e.kind() == ErrorKind::DisplayVersion => return Ok(Cmd::Version),
        Err(e) => return Err(e.to_string()),
    };
    if m.subcommand().is_some() {
        return Err("not a single run: a subcommand was given".into());
    }
    let run = <RunArgs as clap::FromArgMatches>::from_arg_matches(&m).map_err(|e| e.to_string())?;
    let mut o = Opts::default();
    run.apply(&mut o, &m)?;
    Ok(Cmd::Run(o))
}
