//! Command-line options: LfS `perftest` options (`-s -t -i -r -w -F -H -M -b -a -p -m -q -v
//! --hiwat --lowat -R -S`) plus ours (`--pipe KIND`, `--putmsg`, `-c COUNT`, `--csv`,
//! `--label`). LfS's `-p N` (push N modules) is kept: `-p` with a number pushes, with a kind
//! name (`linux`, `socketpair`, `seqpacket`, `streams`) selects the channel.

use std::fmt;

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
    /// M_READ notification (`-M`; not supported by the rstreams Stream head yet).
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
        }
    }
}

impl Opts {
    /// The implementation label: `--label`, else kind plus mode and STREAMS options, e.g.
    /// `streams-putmsg+H`.
    pub fn impl_label(&self) -> String {
        if let Some(l) = &self.label {
            return l.clone();
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
#[derive(Debug, Clone, PartialEq)]
pub enum Cmd {
    /// Run one measurement.
    Run(Opts),
    /// Print help.
    Help,
    /// Print the version.
    Version,
}

/// Usage text.
pub const USAGE: &str = "\
Usage:
    perftest [options]                 one measurement (LfS perftest)
    perftest sweep [sweep options] [options]
    perftest report FILE.csv... --out DIR [--baseline IMPL] [--preamble FILE.md]
    perftest {-h, --help} | {-V, --version}
Options:
    -p, --pipe=KIND       linux (pipe(2), default), socketpair, seqpacket, streams
    -p, --push=COUNT      push COUNT instances of the module (numeric -p, as LfS)
    -m, --module=NAME     module to push [default: pipemod]
    -s, --size=SIZE       write size in bytes, 1..32768 [default: 64]
    -t, --time=SECS       report interval in seconds (fractions allowed) [default: 1]
    -i, --iterations=N    stop after N reports [default: 1]
    -c, --count=N         stop the writer after N messages
    -r, --readwrite       use read/write (default)
        --putmsg          use putmsg/getmsg (STREAMS only)
    -H, --hold            SNDHOLD write coalescing (STREAMS)
    -w, --readfill        RFILL read-fill mode (STREAMS)
    -F, --full            full-size (4096-byte) reads
    -M, --mread           M_READ notification (not supported yet)
        --hiwat=N, --lowat=N  Stream head water marks (I_SET_HIWAT/I_SET_LOWAT)
    -b, --blocking        blocking I/O instead of O_NONBLOCK + poll
    -a, --async           fork reader and writer (always on; accepted for LfS scripts)
    -R, --niceread[=N]    run the reader at nice N [19]
    -S, --nicesend[=N]    run the writer at nice N [19]
    -q, --quiet           no per-interval lines
    -v, --verbose[=N]     more output
        --csv             print the CSV result line
        --label=NAME      implementation name in CSV output
";

fn num<T: std::str::FromStr>(opt: &str, v: &str) -> Result<T, String> {
    let v = v.trim();
    let parsed = if let Some(h) = v.strip_prefix("0x") {
        u64::from_str_radix(h, 16)
            .ok()
            .and_then(|n| n.to_string().parse().ok())
    } else {
        v.parse().ok()
    };
    parsed.ok_or_else(|| format!("bad value for {opt}: {v:?}"))
}

/// Which options take a value: 'r' required, 'o' optional (attached only), 'n' none.
fn arity(long: &str) -> Option<(char, char)> {
    // (short letter or '\0', arity)
    Some(match long {
        "pipe" => ('p', 'r'),
        "push" => ('\0', 'r'),
        "module" => ('m', 'r'),
        "size" => ('s', 'r'),
        "time" => ('t', 'r'),
        "iterations" => ('i', 'r'),
        "count" => ('c', 'r'),
        "readwrite" => ('r', 'n'),
        "putmsg" => ('\0', 'n'),
        "hold" => ('H', 'n'),
        "readfill" => ('w', 'n'),
        "full" => ('F', 'n'),
        "mread" => ('M', 'n'),
        "hiwat" => ('\0', 'r'),
        "lowat" => ('\0', 'r'),
        "blocking" => ('b', 'n'),
        "async" => ('a', 'n'),
        "fifo" => ('f', 'n'),
        "niceread" => ('R', 'o'),
        "nicesend" => ('S', 'o'),
        "quiet" => ('q', 'n'),
        "verbose" => ('v', 'o'),
        "csv" => ('\0', 'n'),
        "label" => ('\0', 'r'),
        "help" => ('h', 'n'),
        "version" => ('V', 'n'),
        _ => return None,
    })
}

const LONGS: &[&str] = &[
    "pipe",
    "module",
    "size",
    "time",
    "iterations",
    "count",
    "readwrite",
    "hold",
    "readfill",
    "full",
    "mread",
    "blocking",
    "async",
    "fifo",
    "niceread",
    "nicesend",
    "quiet",
    "verbose",
    "help",
    "version",
];

fn long_of(short: char) -> Option<&'static str> {
    LONGS
        .iter()
        .copied()
        .find(|l| arity(l).is_some_and(|(s, _)| s == short))
}

/// Apply one option (by long name) with its value.
fn apply(o: &mut Opts, name: &str, val: Option<&str>) -> Result<Option<Cmd>, String> {
    let need = || val.ok_or_else(|| format!("option --{name} needs a value"));
    match name {
        "pipe" => {
            let v = need()?;
            if let Some(k) = Kind::parse(v) {
                o.kind = k;
            } else if v.chars().all(|c| c.is_ascii_digit()) {
                o.push = num("-p", v)?;
            } else {
                return Err(format!(
                    "unknown pipe kind {v:?} (linux, socketpair, seqpacket, streams)"
                ));
            }
        }
        "push" => o.push = num("--push", need()?)?,
        "module" => {
            let v = need()?;
            if v.is_empty() || v.len() > 8 {
                return Err(format!("bad module name {v:?} (1..8 characters)"));
            }
            o.module = v.into();
        }
        "size" => {
            let v: usize = num("-s", need()?)?;
            if !(1..=MAXMSGSIZE).contains(&v) {
                return Err(format!("size {v} out of range 1..{MAXMSGSIZE}"));
            }
            o.size = v;
        }
        "time" => {
            let v: f64 = num("-t", need()?)?;
            if !(v > 0.0 && v.is_finite()) {
                return Err(format!("bad time {v}"));
            }
            o.time = v;
        }
        "iterations" => {
            let v: u32 = num("-i", need()?)?;
            if v == 0 {
                return Err("iterations must be at least 1".into());
            }
            o.iterations = v;
        }
        "count" => {
            let v: u64 = num("-c", need()?)?;
            if v == 0 {
                return Err("count must be at least 1".into());
            }
            o.count = Some(v);
        }
        "readwrite" => o.putmsg = false,
        "putmsg" => o.putmsg = true,
        "hold" => o.hold = true,
        "readfill" => o.readfill = true,
        "full" => o.full = true,
        "mread" => o.mread = true,
        "hiwat" => o.hiwat = Some(num("--hiwat", need()?)?),
        "lowat" => o.lowat = Some(num("--lowat", need()?)?),
        "blocking" => o.blocking = true,
        "async" => {}
        "fifo" => return Err("--fifo: STREAMS FIFOs are not supported".into()),
        "niceread" => o.niceread = Some(val.map(|v| num("-R", v)).transpose()?.unwrap_or(19)),
        "nicesend" => o.nicesend = Some(val.map(|v| num("-S", v)).transpose()?.unwrap_or(19)),
        "quiet" => o.verbose = 0,
        "verbose" => {
            o.verbose = val
                .map(|v| num("-v", v))
                .transpose()?
                .unwrap_or(o.verbose + 1)
        }
        "csv" => o.csv = true,
        "label" => o.label = Some(need()?.to_string()),
        "help" => return Ok(Some(Cmd::Help)),
        "version" => return Ok(Some(Cmd::Version)),
        _ => return Err(format!("unknown option --{name}")),
    }
    Ok(None)
}

/// Parse options into `o` (so the sweep can start from its own defaults).
pub fn parse_into(o: &mut Opts, args: &[String]) -> Result<Option<Cmd>, String> {
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if let Some(l) = a.strip_prefix("--") {
            let (name, mut val) = match l.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (l, None),
            };
            let (_, ar) = arity(name).ok_or_else(|| format!("unknown option --{name}"))?;
            if ar == 'r' && val.is_none() {
                val = Some(
                    args.get(i)
                        .ok_or(format!("option --{name} needs a value"))?
                        .clone(),
                );
                i += 1;
            }
            if ar == 'n' && val.is_some() {
                return Err(format!("option --{name} takes no value"));
            }
            if let Some(c) = apply(o, name, val.as_deref())? {
                return Ok(Some(c));
            }
        } else if let Some(s) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            let chars: Vec<char> = s.chars().collect();
            let mut j = 0;
            while j < chars.len() {
                let c = chars[j];
                j += 1;
                let name = if c == '?' {
                    "help"
                } else {
                    long_of(c).ok_or(format!("unknown option -{c}"))?
                };
                let (_, ar) = arity(name).unwrap_or(('\0', 'n'));
                let rest: String = chars[j..].iter().collect();
                let val = match ar {
                    'r' if !rest.is_empty() => Some(rest),
                    'r' => {
                        let v = args
                            .get(i)
                            .ok_or(format!("option -{c} needs a value"))?
                            .clone();
                        i += 1;
                        Some(v)
                    }
                    // As LfS's getopt string: -R and -S take an attached value, -v never does.
                    'o' if c != 'v' && !rest.is_empty() => Some(rest),
                    _ => None,
                };
                if val.is_some() {
                    j = chars.len();
                }
                if let Some(cmd) = apply(o, name, val.as_deref())? {
                    return Ok(Some(cmd));
                }
            }
        } else {
            return Err(format!("unexpected argument {a:?}"));
        }
    }
    Ok(None)
}

/// Parse a `perftest [options]` command line (without the program name).
pub fn parse(args: &[String]) -> Result<Cmd, String> {
    let mut o = Opts::default();
    Ok(parse_into(&mut o, args)?.unwrap_or(Cmd::Run(o)))
}
