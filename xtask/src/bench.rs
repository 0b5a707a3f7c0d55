//! `cargo xtask bench`: the main job — STREAMS pipes against Linux pipes, then TPI UDP against
//! socket UDP (the LfS UDP paper's test, `perftest --udp`), the system call floor, and the
//! seed-001 workloads (bw_pipe, cat | grep, pipeflex over pipe sizes 4–64 KiB, `perftest
//! --workload`), in ONE guest boot, and a report on the host.
//!
//! The host writes a plan (one perftest command line per run: every size, the repetitions, the
//! implementations alternating within each size, as LfS `perftest_script` did) into the
//! initramfs; the guest's `/init` (`tests/vm/init.sh`, mode `bench`) runs `scls -a`, then the
//! plan, printing one marker line per run on the console:
//!
//! ```text
//! RSTREAMS-BENCH-ENV key=value          guest facts (kernel, CPUs, ...)
//! RSTREAMS-SCLS <line>                  scls -a output
//! RSTREAMS-BENCH-RUN i/n label size rep a run starts (so a crash names the run)
//! RSTREAMS-BENCH-NOTE i <line>          perftest's stderr for run i
//! RSTREAMS-BENCH-ROW i <csv>            run i's CSV result
//! RSTREAMS-BENCH-FAIL i rc=N            run i produced no result
//! RSTREAMS-SCLS-AFTER <line>            scls -a output after the sweep
//! RSTREAMS-BENCH-DONE n=N               the sweep finished
//! RSTREAMS-BENCH-PROF label size ...     the guest profile after the sweep (xtask/src/profile.rs)
//! ```
//!
//! The console is the transport because it is the one channel that survives everything short
//! of a dead guest, and its log is kept with the report. The host turns the markers into
//! `bench.csv` (measurements plus `#status` lines for runs without a number: `unavailable`,
//! `failed`, `not-run`) and runs `perftest report` on it. No number is ever invented: an
//! implementation that could not run (no STREAMS pipe device yet) is reported as such and the
//! command exits non-zero.
//!
//! With the profile on (the default, except for `--quick`), the guest then records a `perf`
//! profile of a few of the sweep's cases (`crate::profile`); the host writes `profile.md` and a
//! "Guest profile" section at the end of `report.md`. The profile never changes the exit status.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use perftest::csv::{Row, State, Status};

use crate::kernel::Variant;
use crate::profile::{self, Profile};
use crate::util::{self, Result};

/// One implementation of the sweep: its report label and perftest options.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Impl {
    /// Label in the CSV and report (perftest's own naming: kind, `-putmsg`, `+H+w+F+M`).
    pub(crate) label: &'static str,
    /// perftest options selecting it.
    pub(crate) args: &'static str,
    /// What it is, for the report.
    pub(crate) what: &'static str,
    /// Which sweep it belongs to (its sizes and base options).
    pub(crate) sweep: Sweep,
}

/// The sweeps of one bench boot, in plan order: each has its own sizes and base options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sweep {
    /// The LfS perftest writer/reader pair over the pipe sizes (`Config::sizes`).
    Pipe,
    /// The LfS UDP test over `Config::udp_sizes`.
    Udp,
    /// The system call floor (`perftest --workload=syscall`), once per repetition.
    Syscall,
    /// The write floor W (`perftest --workload=devnull -s 1`: 1-byte write(2) to /dev/null),
    /// once per repetition, next to the system call floor.
    Devnull,
    /// bw_pipe (seed 001): chunk sizes `Config::bw_sizes` x pipe sizes.
    Bw,
    /// cat | grep (seed 001): pipe sizes.
    Grep,
    /// cat | grep in a dash pipeline, the pipe from pipe(2), LD_PRELOAD for STREAMS: one point.
    GrepSh,
    /// pipeflex (seed 001): chunk sizes `Config::flex_sizes` x pipe sizes.
    Flex,
}

impl Sweep {
    /// Every sweep, in plan order (the pipe and UDP sweeps first, as before the workloads).
    pub(crate) const ALL: [Sweep; 8] = [
        Sweep::Pipe,
        Sweep::Udp,
        Sweep::Syscall,
        Sweep::Devnull,
        Sweep::Bw,
        Sweep::Grep,
        Sweep::GrepSh,
        Sweep::Flex,
    ];
}

/// The implementations, in the order they alternate within each size.
pub(crate) const IMPLS: &[Impl] = &[
    Impl {
        label: "linux",
        args: "--pipe=linux",
        what: "Linux pipe(2), write/read (the baseline)",
        sweep: Sweep::Pipe,
    },
    Impl {
        label: "streams",
        args: "--pipe=streams",
        what: "STREAMS pipe (/dev/streams/clone/pipe), write/read",
        sweep: Sweep::Pipe,
    },
    Impl {
        label: "streams+H+w+F+M",
        args: "--pipe=streams -H -M -F -w",
        what: "STREAMS pipe with the LfS 2008 options: write hold (-H), M_READ (-M), full 4096-byte reads (-F), read fill (-w)",
        sweep: Sweep::Pipe,
    },
    Impl {
        label: "streams-putmsg",
        args: "--pipe=streams --putmsg",
        what: "STREAMS pipe, putmsg/getmsg",
        sweep: Sweep::Pipe,
    },
    Impl {
        label: "seqpacket",
        args: "--pipe=seqpacket",
        what: "AF_UNIX SOCK_SEQPACKET socketpair (context)",
        sweep: Sweep::Pipe,
    },
    Impl {
        label: "socketpair",
        args: "--pipe=socketpair",
        what: "AF_UNIX SOCK_STREAM socketpair (context)",
        sweep: Sweep::Pipe,
    },
    Impl {
        label: "udp-socket",
        args: "--udp=socket",
        what: "UDP test: Linux sockets, sendto/recvfrom on AF_INET SOCK_DGRAM (the UDP baseline)",
        sweep: Sweep::Udp,
    },
    Impl {
        label: "udp-tpi",
        args: "--udp=tpi",
        what: "UDP test: XTI (t_sndudata/t_rcvudata) on the TPI UDP driver, /dev/streams/clone/udp",
        sweep: Sweep::Udp,
    },
    Impl {
        label: "udp-xtiso",
        args: "--udp=xtiso",
        what: "UDP test: the same XTI calls on XTI over an in-kernel socket, /dev/streams/clone/xtiso-udp",
        sweep: Sweep::Udp,
    },
    Impl {
        label: "syscall",
        args: "--workload=syscall",
        what: "the system call floor: getppid(2) in a loop in one process for -t x -i seconds; calls/s",
        sweep: Sweep::Syscall,
    },
    Impl {
        label: "devnull",
        args: "--workload=devnull",
        what: "the write floor W: 1-byte write(2) to /dev/null in a loop in one process for -t x -i seconds; calls/s",
        sweep: Sweep::Devnull,
    },
    Impl {
        label: "bw-linux",
        args: "--workload=bw --pipe=linux",
        what: "bw_pipe (lmbench, seed 001): 10 MB in SIZE-byte chunks through a Linux pipe sized by F_SETPIPE_SZ; MB/s",
        sweep: Sweep::Bw,
    },
    Impl {
        label: "bw-streams",
        args: "--workload=bw --pipe=streams",
        what: "bw_pipe through a STREAMS pipe, I_SET_HIWAT the pipe size and I_SET_LOWAT an eighth of it on both ends; MB/s",
        sweep: Sweep::Bw,
    },
    Impl {
        label: "grep-linux",
        args: "--workload=grep --pipe=linux",
        what: "cat FILE | grep -F PATTERN (seed 001; busybox cat and grep exec'd by perftest) over a Linux pipe sized by F_SETPIPE_SZ; wall time, MB/s",
        sweep: Sweep::Grep,
    },
    Impl {
        label: "grep-streams",
        args: "--workload=grep --pipe=streams",
        what: "the same over a STREAMS pipe (the pipe libstreams_pipe.so gives an interposed pipe(2)), water marks as for bw-streams",
        sweep: Sweep::Grep,
    },
    Impl {
        label: "grep-linux-sh",
        args: "--workload=grep --pipe=linux --shell=/usr/bin/dash",
        what: "cat FILE | grep -F PATTERN as a dash pipeline (dash's pipe(2): a Linux pipe, default size); wall time, MB/s",
        sweep: Sweep::GrepSh,
    },
    Impl {
        label: "grep-streams-sh",
        args: "--workload=grep --pipe=streams --shell=/usr/bin/dash --preload=/usr/lib/libstreams_pipe.so",
        what: "the same dash pipeline with LD_PRELOAD=libstreams_pipe.so: dash's pipe(2) gives a STREAMS pipe (checked with isastream before the run), default water marks",
        sweep: Sweep::GrepSh,
    },
    Impl {
        label: "flex-linux",
        args: "--workload=flex --pipe=linux --children=2 --compute-us=500",
        what: "pipeflex (seed 001): 2 children over 1 Linux pipe, SIZE-byte writes, the reader computing 250-750 us after each read; MB/s read",
        sweep: Sweep::Flex,
    },
    Impl {
        label: "flex-streams",
        args: "--workload=flex --pipe=streams --children=2 --compute-us=500",
        what: "pipeflex over a STREAMS pipe, water marks as for bw-streams",
        sweep: Sweep::Flex,
    },
];

/// The pipe sizes of the seed-001 workloads: Linux F_SETPIPE_SZ, STREAMS I_SET_HIWAT (and
/// I_SET_LOWAT an eighth), 4 to 64 KiB (the seed's PIPE_SIZE of 1, 2, 4, 8 pages and 16).
pub(crate) fn default_pipe_sizes() -> Vec<usize> {
    (12..=16).map(|i| 1usize << i).collect()
}

/// bw_pipe's chunk sizes: the seed's 2..32 KiB by powers of two.
pub(crate) fn default_bw_sizes() -> Vec<usize> {
    (11..=15).map(|i| 1usize << i).collect()
}

/// pipeflex's chunk sizes: 8 and 32 KiB (at 2–6 KiB the seed saw no effect of the pipe size).
pub(crate) fn default_flex_sizes() -> Vec<usize> {
    vec![8192, 32768]
}

/// The grep workload's file: the seed's 50 MB.
pub(crate) const GREP_MB: u64 = 50;

/// bw's and grep's time limit in perftest (`-t N -i 1`; the guest watchdog allows 3x + 30 s).
const BW_LIMIT: u64 = 30;
const GREP_LIMIT: u64 = 120;

/// pipeflex's intervals: it runs for `-t` x this many seconds.
const FLEX_ITERATIONS: u32 = 2;

/// The paper's sizes (1..4096 by powers of two) and 8192 (the CentOS 5.2 table).
pub(crate) fn default_sizes() -> Vec<usize> {
    (0..=13).map(|i| 1usize << i).collect()
}

/// The UDP paper's message sizes: 1..16384 by powers of two (netperf_udp_range --end=16384).
pub(crate) fn default_udp_sizes() -> Vec<usize> {
    (0..=14).map(|i| 1usize << i).collect()
}

/// The UDP paper's send and receive buffers (netperf_benchmark: --bufsizes=131071).
pub(crate) const UDP_BUFSIZE: u32 = 131_071;

/// `cargo xtask bench` options.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Config {
    /// perftest `-t`: report interval (s).
    pub(crate) interval: f64,
    /// perftest `-i`: intervals per run.
    pub(crate) iterations: u32,
    /// Repetitions of every (size, implementation).
    pub(crate) repeats: u32,
    /// Write sizes.
    pub(crate) sizes: Vec<usize>,
    /// Message sizes of the UDP test.
    pub(crate) udp_sizes: Vec<usize>,
    /// Pipe sizes of the seed-001 workloads.
    pub(crate) pipe_sizes: Vec<usize>,
    /// bw_pipe chunk sizes.
    pub(crate) bw_sizes: Vec<usize>,
    /// pipeflex chunk sizes.
    pub(crate) flex_sizes: Vec<usize>,
    /// The grep workload's file size in MiB.
    pub(crate) grep_mb: u64,
    /// Implementation labels to run (default: all of [`IMPLS`]).
    pub(crate) impls: Vec<&'static Impl>,
    /// Kernel variant (default lean: no debugging options).
    pub(crate) variant: Variant,
    /// Guest time limit; default computed from the plan.
    pub(crate) timeout: Option<u64>,
    /// `--quick` was given (for the report's command line).
    pub(crate) quick: bool,
    /// Record the guest profile after the sweep (`crate::profile`).
    pub(crate) profile: bool,
    /// The command line as given (for the report).
    pub(crate) argv: Vec<String>,
}

/// The long help of `cargo xtask help bench`.
pub(crate) const LONG_ABOUT: &str = "\
The main job: build the lean kernel (cached), the production streams.ko (no KUnit, no test \
drivers) and the static perftest/scls, boot ONE guest, run the perftest sweep there (LfS \
perftest_script options: -q -r -t SECS -i N -m nullmod -p 0 -s SIZE -a -S10 --hiwat=65536 \
--lowat=8192; sizes 1..8192; the implementations linux, streams, streams+H+w+F+M (the 2008 \
-H -M -F -w run), streams-putmsg, seqpacket, socketpair alternating within each size), then in \
the same boot the LfS UDP paper's test (perftest --udp: a sender and a receiver on 127.0.0.1, \
buffers 131071, sizes 1..16384; udp-socket, udp-tpi, udp-xtiso alternating within each size), \
the system call floor (perftest --workload=syscall: getppid(2) in a loop), and the workloads of \
the LKML \"larger pipes\" thread, Linux pipes against STREAMS pipes over pipe sizes \
4096..65536 (F_SETPIPE_SZ; I_SET_HIWAT and I_SET_LOWAT an eighth): bw_pipe (10 MB in chunks of \
2048..32768 bytes), cat | grep -F of a 50 MiB file (busybox cat and grep; also once as a dash \
pipeline at the default pipe size, LD_PRELOAD=libstreams_pipe.so for STREAMS), pipeflex (2 \
children over 1 pipe, chunks of 8192 and 32768 bytes, the reader computing 250..750 us per \
read, 2 s); default -t 1 -i 3, 3 repeats, 639 runs, about 27 minutes under TCG (26.8 measured \
with builds, boot and profile on 2026-12-07); \
then, in the same boot, the guest profile (on unless --no-profile; with --quick only if \
--profile is given): perf record -e cpu-clock -a -g (the host's perf, Debian linux-perf, copied \
into the guest) over one -t 1 -i 2 run each of linux, streams and streams+H+w+F+M at 1 and 4096 \
bytes, streams-putmsg at 16 and udp-socket and udp-tpi at 64 bytes (those of --impls, each at \
the nearest size of --sizes or --udp-sizes); then \
write the report (report.md with the goals table, 4 pipe charts, 4 UDP charts, one chart per \
workload and the guest profile's top 10 self symbols per case; profile.md with the top 40 self \
and children symbols and the share by command; bench.csv, console.log) to \
target/bench/<UTC time>/ and target/bench/latest. Rates under perf are not bench figures.

Exits non-zero if any run gave no number (e.g. no STREAMS pipe driver, no TPI UDP driver), the \
guest crashed or timed out during the sweep; the report says which runs and why. A profile \
that could not be recorded (no perf, a case that failed) is reported as such and does not \
change the exit status. XTI over sockets missing from \
the kernel (no /dev/streams/clone/xtiso-udp) is reported as unavailable, not as a failure. Under TCG absolute numbers mean nothing: compare \
implementations (ratios) within the run.";

fn interval(v: &str) -> std::result::Result<f64, String> {
    match v.parse::<f64>() {
        Ok(t) if t > 0.0 && t.is_finite() => Ok(t),
        _ => Err(format!("{v:?}: not a positive number of seconds")),
    }
}

fn size(v: &str) -> std::result::Result<usize, String> {
    match v.trim().parse::<usize>() {
        Ok(s) if (1..=32768).contains(&s) => Ok(s),
        _ => Err(format!("{v:?}: sizes are 1..32768")),
    }
}

fn udp_size(v: &str) -> std::result::Result<usize, String> {
    size(v)
}

fn pipe_size(v: &str) -> std::result::Result<usize, String> {
    match v.trim().parse::<usize>() {
        // Linux rounds F_SETPIPE_SZ up to a power of two pages, and perftest fails a run whose
        // pipe does not get the size asked for.
        Ok(s) if (4096..=1 << 20).contains(&s) && s.is_power_of_two() => Ok(s),
        _ => Err(format!(
            "{v:?}: pipe sizes are powers of two from 4096 to 1048576"
        )),
    }
}

fn impl_label(l: &str) -> std::result::Result<&'static Impl, String> {
    IMPLS.iter().find(|i| i.label == l.trim()).ok_or_else(|| {
        let all: Vec<&str> = IMPLS.iter().map(|i| i.label).collect();
        format!("unknown {l:?} (known: {})", all.join(","))
    })
}

/// `cargo xtask bench` options as given; [`Config::new`] applies them over the defaults.
#[derive(Debug, Clone, clap::Parser)]
#[command(name = "bench")]
pub(crate) struct Args {
    /// -t 0.5 -i 2, 1 repeat, sizes 1,64,1024,4096, UDP sizes 1,64,1024, workload pipe sizes
    /// 4096,65536, bw sizes 4096,32768, flex size 32768, grep file 10 MiB (about a minute of
    /// runs), no guest profile; the other options win over it
    #[arg(long)]
    quick: bool,
    /// perftest -t: report interval [default: 1]
    #[arg(short = 't', long, value_name = "SECS", value_parser = interval)]
    interval: Option<f64>,
    /// perftest -i: intervals per run [default: 3]
    #[arg(short = 'i', long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    iterations: Option<u32>,
    /// Repetitions of every (size, implementation) [default: 3]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    repeats: Option<u32>,
    /// Write sizes [default: 1,2,4,...,8192]
    #[arg(long, value_name = "1,2,...", value_delimiter = ',', value_parser = size)]
    sizes: Vec<usize>,
    /// UDP test message sizes [default: 1,2,4,...,16384]
    #[arg(long, value_name = "1,2,...", value_delimiter = ',', value_parser = udp_size)]
    udp_sizes: Vec<usize>,
    /// Pipe sizes of the bw, grep and flex workloads [default: 4096,8192,...,65536]
    #[arg(long, value_name = "4096,...", value_delimiter = ',', value_parser = pipe_size)]
    pipe_sizes: Vec<usize>,
    /// bw_pipe chunk sizes [default: 2048,4096,...,32768]
    #[arg(long, value_name = "2048,...", value_delimiter = ',', value_parser = size)]
    bw_sizes: Vec<usize>,
    /// pipeflex chunk sizes [default: 8192,32768]
    #[arg(long, value_name = "8192,...", value_delimiter = ',', value_parser = size)]
    flex_sizes: Vec<usize>,
    /// The grep workload's file size in MiB [default: 50]
    #[arg(long, value_name = "MIB", value_parser = clap::value_parser!(u64).range(1..=512))]
    grep_mb: Option<u64>,
    /// Implementations to run: pipe, UDP (udp-socket, udp-tpi, udp-xtiso), syscall, and the
    /// workloads bw-linux, bw-streams, grep-linux, grep-streams, grep-linux-sh,
    /// grep-streams-sh, flex-linux, flex-streams [default: all]
    #[arg(long, value_name = "linux,streams,...", value_delimiter = ',', value_parser = impl_label)]
    impls: Vec<&'static Impl>,
    /// Kernel variant: lean or test [default: lean]
    #[arg(long, value_name = "lean|test", value_parser = Variant::parse)]
    variant: Option<Variant>,
    /// Guest time limit in seconds [default: the plan's expected time + 0.5 s per run + 5 min,
    /// + 30 s per profiled case]
    #[arg(long, value_name = "SECS")]
    timeout: Option<u64>,
    /// After the sweep, profile the 1-byte and 4 KiB pipe runs, putmsg at 16 bytes and UDP at
    /// 64 bytes (each at the sweep's nearest size) with perf in the guest (profile.md)
    /// [default: on, off with --quick]
    #[arg(long, overrides_with = "no_profile")]
    profile: bool,
    /// No guest profile
    #[arg(long, overrides_with = "profile")]
    no_profile: bool,
}

impl Config {
    /// The configuration: the defaults (or `--quick`'s), then the options given. `argv` is the
    /// command line as typed, for the report.
    pub(crate) fn new(a: Args, argv: Vec<String>) -> Config {
        let (interval, iterations, repeats, sizes, udp_sizes) = if a.quick {
            (0.5, 2, 1, vec![1, 64, 1024, 4096], vec![1, 64, 1024])
        } else {
            (1.0, 3, 3, default_sizes(), default_udp_sizes())
        };
        let (pipe_sizes, bw_sizes, flex_sizes, grep_mb) = if a.quick {
            (vec![4096, 65536], vec![4096, 32768], vec![32768], 10)
        } else {
            (
                default_pipe_sizes(),
                default_bw_sizes(),
                default_flex_sizes(),
                GREP_MB,
            )
        };
        let or = |given: Vec<usize>, default: Vec<usize>| {
            if given.is_empty() {
                default
            } else {
                given
            }
        };
        Config {
            interval: a.interval.unwrap_or(interval),
            iterations: a.iterations.unwrap_or(iterations),
            repeats: a.repeats.unwrap_or(repeats),
            sizes: if a.sizes.is_empty() { sizes } else { a.sizes },
            udp_sizes: if a.udp_sizes.is_empty() {
                udp_sizes
            } else {
                a.udp_sizes
            },
            pipe_sizes: or(a.pipe_sizes, pipe_sizes),
            bw_sizes: or(a.bw_sizes, bw_sizes),
            flex_sizes: or(a.flex_sizes, flex_sizes),
            grep_mb: a.grep_mb.unwrap_or(grep_mb),
            impls: if a.impls.is_empty() {
                IMPLS.iter().collect()
            } else {
                a.impls
            },
            variant: a.variant.unwrap_or(Variant::Lean),
            timeout: a.timeout,
            quick: a.quick,
            profile: if a.quick { a.profile } else { !a.no_profile },
            argv,
        }
    }
}

/// Parse `cargo xtask bench` arguments (without `bench`).
#[cfg(test)]
pub(crate) fn parse(args: &[String]) -> Result<Config> {
    use clap::Parser;
    let argv = std::iter::once("bench").chain(args.iter().map(String::as_str));
    let a = Args::try_parse_from(argv).map_err(|e| e.to_string())?;
    Ok(Config::new(a, args.to_vec()))
}

/// One planned run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Run {
    /// 1-based index.
    pub(crate) n: usize,
    pub(crate) label: String,
    pub(crate) size: usize,
    pub(crate) rep: u32,
    /// perftest arguments (without `--csv --label`, which the guest adds).
    pub(crate) args: String,
    /// Seconds it is expected to take in the guest (its measuring time, or an estimate).
    pub(crate) secs: f64,
    /// The pipe size of a seed-001 workload run (`--pipe-size`).
    pub(crate) pipe_size: Option<usize>,
}

/// The perftest options common to every pipe run (the paper's) with `-t interval -i
/// iterations`; the guest profile uses them with its own `-t`/`-i`.
pub(crate) fn pipe_base_args(interval: f64, iterations: u32, size: usize) -> String {
    format!(
        "-q -r -t {interval} -i {iterations} -m nullmod -p 0 -s {size} -a -S10 --hiwat=65536 --lowat=8192"
    )
}

/// The perftest options common to every UDP run: the paper's buffers, `-t`/`-i` as words 4 and
/// 6, where the guest's watchdog reads them, as in [`pipe_base_args`].
pub(crate) fn udp_base_args(interval: f64, iterations: u32, size: usize) -> String {
    format!("-q -r -t {interval} -i {iterations} -s {size} --bufsize={UDP_BUFSIZE}")
}

impl Config {
    /// The perftest options common to every pipe run, with our -t/-i.
    pub(crate) fn base_args(&self, size: usize) -> String {
        pipe_base_args(self.interval, self.iterations, size)
    }

    /// The perftest options common to every UDP run, with our -t/-i.
    pub(crate) fn udp_base_args(&self, size: usize) -> String {
        udp_base_args(self.interval, self.iterations, size)
    }

    /// The options of a seed-001 workload run at chunk `size` (bw, flex) over a pipe of
    /// `ps` bytes: `-t`/`-i` first (words 4 and 6, for the guest's watchdog), then the
    /// workload's, and the expected seconds.
    pub(crate) fn workload_args(&self, sweep: Sweep, size: usize, ps: usize) -> (String, f64) {
        match sweep {
            Sweep::Bw => (
                format!("-q -r -t {BW_LIMIT} -i 1 -s {size} --pipe-size={ps}"),
                // 10 MB: well under a second under TCG at the sizes swept.
                1.0,
            ),
            Sweep::Grep | Sweep::GrepSh => (
                format!(
                    "-q -r -t {GREP_LIMIT} -i 1 --file-mb={} --pipe-size={ps}",
                    self.grep_mb
                ),
                // An estimate for busybox cat | grep -F under TCG: 10 MB/s.
                self.grep_mb as f64 / 10.0,
            ),
            _ => (
                format!(
                    "-q -r -t {} -i {FLEX_ITERATIONS} -s {size} --pipe-size={ps}",
                    self.interval
                ),
                self.interval * f64::from(FLEX_ITERATIONS),
            ),
        }
    }

    /// Every run, in order: the pipe sweep by size, then repetition, then implementation
    /// (alternating); then the UDP sweep the same way over its sizes; then the system call
    /// floor once per repetition; then bw (by chunk size, pipe size, repetition,
    /// implementation), grep (by pipe size, repetition, implementation) and flex (as bw).
    pub(crate) fn plan(&self) -> Vec<Run> {
        let mut runs = Vec::new();
        for sweep in Sweep::ALL {
            let impls: Vec<&&Impl> = self.impls.iter().filter(|i| i.sweep == sweep).collect();
            if impls.is_empty() {
                continue;
            }
            // (pipe size, CSV size, args, expected seconds) of each point of the sweep.
            let mut points: Vec<(Option<usize>, usize, String, f64)> = Vec::new();
            match sweep {
                Sweep::Pipe => {
                    for &size in &self.sizes {
                        points.push((None, size, self.base_args(size), self.run_secs()));
                    }
                }
                Sweep::Udp => {
                    for &size in &self.udp_sizes {
                        let a = self.udp_base_args(size);
                        points.push((None, size, a, self.run_secs()));
                    }
                }
                Sweep::Syscall => {
                    let a = format!("-q -r -t {} -i {}", self.interval, self.iterations);
                    points.push((None, 0, a, self.run_secs()));
                }
                Sweep::Devnull => {
                    let a = format!("-q -r -t {} -i {} -s 1", self.interval, self.iterations);
                    points.push((None, 1, a, self.run_secs()));
                }
                Sweep::Bw | Sweep::Flex => {
                    let sizes = if sweep == Sweep::Bw {
                        &self.bw_sizes
                    } else {
                        &self.flex_sizes
                    };
                    for &size in sizes {
                        for &ps in &self.pipe_sizes {
                            let (a, secs) = self.workload_args(sweep, size, ps);
                            points.push((Some(ps), size, a, secs));
                        }
                    }
                }
                Sweep::Grep => {
                    for &ps in &self.pipe_sizes {
                        let (a, secs) = self.workload_args(sweep, 0, ps);
                        // grep's CSV size is the pipe size.
                        points.push((Some(ps), ps, a, secs));
                    }
                }
                Sweep::GrepSh => {
                    // The shell's pipe keeps its default size (CSV size 0).
                    let (a, secs) = self.workload_args(sweep, 0, 0);
                    let a = a.replace(" --pipe-size=0", "");
                    points.push((None, 0, a, secs));
                }
            }
            for &(ps, size, ref base, secs) in &points {
                let suffix = ps.map(ps_suffix).unwrap_or_default();
                for rep in 1..=self.repeats {
                    for i in &impls {
                        runs.push(Run {
                            n: runs.len() + 1,
                            label: format!("{}{suffix}", i.label),
                            size,
                            rep,
                            args: format!("{base} {}", i.args),
                            secs,
                            pipe_size: ps,
                        });
                    }
                }
            }
        }
        runs
    }

    /// Seconds one run of the pipe, UDP or syscall sweep measures.
    pub(crate) fn run_secs(&self) -> f64 {
        self.interval * f64::from(self.iterations)
    }

    /// The plan's expected guest time: every run's seconds plus the 0.16 s per run the
    /// 2026-11-22 run measured for fork/exec, start-up and drain under TCG (531 s for 168
    /// runs of 3 s), without boot.
    pub(crate) fn expected_secs(&self) -> f64 {
        self.plan().iter().map(|r| r.secs + 0.16).sum()
    }

    /// Default guest time limit: every run's expected seconds plus 0.5 s (three times the
    /// measured overhead), 5 minutes for boot and slack, and the profile's budget.
    pub(crate) fn default_timeout(&self) -> u64 {
        let plan = self.plan();
        let profile = self.profile_cases().len() as f64 * profile::CASE_BUDGET_SECS;
        (plan.iter().map(|r| r.secs + 0.5).sum::<f64>() + 300.0 + profile).ceil() as u64
    }

    /// The cases the guest profiles after the sweep (none with the profile off).
    pub(crate) fn profile_cases(&self) -> Vec<profile::Case> {
        if self.profile {
            profile::cases(&self.impls, &self.sizes, &self.udp_sizes)
        } else {
            Vec::new()
        }
    }
}

/// A workload label's pipe-size suffix: `-ps4k` (perftest's own naming).
pub(crate) fn ps_suffix(ps: usize) -> String {
    format!("-ps{}", perftest::workload::size_tag(ps as u64))
}

/// The plan file the guest reads: `n label size rep perftest-args...` per line.
pub(crate) fn plan_text(runs: &[Run]) -> String {
    let mut s = String::new();
    for r in runs {
        let _ = writeln!(s, "{} {} {} {} {}", r.n, r.label, r.size, r.rep, r.args);
    }
    s
}

/// What happened to one run, from the console.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Outcome {
    /// The run started (RUN marker seen).
    pub(crate) started: bool,
    /// Its CSV line.
    pub(crate) row: Option<String>,
    /// Its exit status when it produced no row.
    pub(crate) failed: Option<i32>,
    /// perftest's stderr.
    pub(crate) notes: Vec<String>,
}

/// Everything the guest reported.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Console {
    /// `RSTREAMS-BENCH-ENV key=value`.
    pub(crate) env: Vec<(String, String)>,
    /// `scls -a` output before the sweep.
    pub(crate) scls: Vec<String>,
    /// `scls -a` output after the sweep.
    pub(crate) scls_after: Vec<String>,
    /// By run index.
    pub(crate) runs: BTreeMap<usize, Outcome>,
    /// The last run that started.
    pub(crate) last_started: Option<usize>,
    /// `RSTREAMS-BENCH-DONE` seen.
    pub(crate) done: bool,
    /// Kernel reports (oops, BUG, WARNING...) seen on the console.
    pub(crate) kernel_problems: Vec<String>,
}

/// The run's measurement, if its CSV result line is one: perftest's 9 fields, naming the run's
/// implementation and size, numbers where numbers belong (a console line can be garbled by
/// kernel output).
pub(crate) fn valid_row(row: &str, label: &str, size: usize) -> Option<Row> {
    Row::parse(row)
        .ok()
        .filter(|r| r.imp == label && r.size == size)
}

/// Parse the guest console.
pub(crate) fn parse_console(lines: &[String]) -> Console {
    let mut c = Console::default();
    for line in lines {
        if crate::ktap::BAD.iter().any(|b| line.contains(b)) && !line.contains("RSTREAMS-") {
            c.kernel_problems.push(line.clone());
        }
        for (tag, into) in [
            ("RSTREAMS-SCLS-AFTER", &mut c.scls_after),
            ("RSTREAMS-SCLS", &mut c.scls),
        ] {
            if let Some(i) = line.find(tag) {
                let rest = &line[i + tag.len()..];
                into.push(rest.strip_prefix(' ').unwrap_or(rest).to_string());
                break;
            }
        }
        if line.contains("RSTREAMS-SCLS") {
            continue;
        }
        let Some(i) = line.find("RSTREAMS-BENCH-") else {
            continue;
        };
        let m = &line[i + "RSTREAMS-BENCH-".len()..];
        let (kind, rest) = m.split_once(' ').unwrap_or((m, ""));
        let (idx, body) = rest.split_once(' ').unwrap_or((rest, ""));
        let run = |c: &mut Console, s: &str| -> Option<usize> {
            let n = s.split('/').next()?.parse().ok()?;
            c.runs.entry(n).or_default();
            Some(n)
        };
        match kind {
            "ENV" => {
                if let Some((k, v)) = rest.split_once('=') {
                    c.env.push((k.to_string(), v.trim().to_string()));
                }
            }
            "RUN" => {
                if let Some(n) = run(&mut c, idx) {
                    c.runs.entry(n).or_default().started = true;
                    c.last_started = Some(n);
                }
            }
            "NOTE" => {
                if let Some(n) = run(&mut c, idx) {
                    c.runs.entry(n).or_default().notes.push(body.to_string());
                }
            }
            "ROW" => {
                if let Some(n) = run(&mut c, idx) {
                    c.runs.entry(n).or_default().row = Some(body.trim().to_string());
                }
            }
            "FAIL" => {
                if let Some(n) = run(&mut c, idx) {
                    let rc = body
                        .trim()
                        .strip_prefix("rc=")
                        .and_then(|r| r.parse().ok())
                        .unwrap_or(-1);
                    c.runs.entry(n).or_default().failed = Some(rc);
                }
            }
            "DONE" => c.done = true,
            _ => {}
        }
    }
    c
}

/// The message perftest gives when there is no STREAMS pipe device.
const NO_DEVICE: &str = "no STREAMS pipe device";

/// Whether perftest's error says the implementation cannot exist in this guest (no device,
/// of the pipe or of an XTI UDP provider), rather than that a run failed.
fn unavailable(note: &str) -> bool {
    note.contains(NO_DEVICE) || perftest::udp::UNAVAILABLE.iter().any(|u| note.contains(u))
}

/// The result of matching the console against the plan.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Results {
    /// bench.csv: header, measurements, `#status` lines (perftest's format).
    pub(crate) csv: String,
    /// Runs with a number.
    pub(crate) measured: usize,
    /// Runs without one: (run, state, reason).
    pub(crate) missing: Vec<(Run, &'static str, String)>,
    /// The run going on when the guest died, if it did.
    pub(crate) died_in: Option<Run>,
}

/// Match the console against the plan: one CSV row per measured run, one `#status` line per
/// run without a number. `guest_end` says how the guest ended when the sweep did not finish
/// ("timed out after 900 s", "powered off").
pub(crate) fn results(plan: &[Run], c: &Console, guest_end: &str) -> Results {
    let mut rows = Vec::new();
    let mut status = Vec::new();
    let mut missing = Vec::new();
    let mut died_in = None;
    for r in plan {
        let o = c.runs.get(&r.n).cloned().unwrap_or_default();
        let note = o
            .notes
            .iter()
            .rev()
            .find(|n| !n.trim().is_empty())
            .map(|n| n.trim().trim_start_matches("perftest: ").to_string());
        let (state, why) = match (&o.row, o.failed) {
            (Some(row), _) => match valid_row(row, &r.label, r.size) {
                Some(m) => {
                    rows.push(m);
                    continue;
                }
                None => (
                    State::Failed,
                    format!("garbled result line on the console: {row}"),
                ),
            },
            (None, Some(rc)) => match note {
                Some(n) if unavailable(&n) => (State::Unavailable, n),
                // busybox timeout: 143 (SIGTERM) or 124; 137 if it had to SIGKILL.
                _ if matches!(rc, 124 | 137 | 143) => (
                    State::Failed,
                    format!(
                        "killed by the guest's per-run watchdog (3x the measuring time + 30 s): \
                         the run hung (exit status {rc})"
                    ),
                ),
                Some(n) => (State::Failed, format!("perftest exit status {rc}: {n}")),
                None => (State::Failed, format!("perftest exit status {rc}")),
            },
            (None, None) if o.started => {
                died_in = Some(r.clone());
                (
                    State::Failed,
                    format!("the guest ended during this run ({guest_end}); see console.log"),
                )
            }
            (None, None) => (
                State::NotRun,
                match &died_in {
                    Some(d) => format!("not run: the guest ended during run {}", d.n),
                    None => format!("not run: the guest stopped before it ({guest_end})"),
                },
            ),
        };
        let why = why.replace(['\n', '\r'], " ");
        status.push(Status {
            imp: r.label.clone(),
            size: r.size,
            rep: r.rep,
            state,
            message: why.clone(),
        });
        missing.push((r.clone(), state.name(), why));
    }
    Results {
        csv: perftest::csv::to_text(&rows, &status),
        measured: rows.len(),
        missing,
        died_in,
    }
}

/// `YYYYmmddTHHMMSSZ` for a UNIX time (UTC, proleptic Gregorian).
pub(crate) fn utc_stamp(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z",
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

fn first_line(cmd: &mut Command) -> String {
    util::try_output(cmd)
        .and_then(|s| s.lines().next().map(str::to_string))
        .unwrap_or_else(|| "?".into())
}

/// The report's first line: the command, when, the commit.
fn measured_by(c: &Config, when: &str) -> String {
    let cmd = if c.argv.is_empty() {
        "cargo xtask bench".to_string()
    } else {
        format!("cargo xtask bench {}", c.argv.join(" "))
    };
    let commit = first_line(
        Command::new("git")
            .current_dir(util::repo_root())
            .args(["describe", "--always", "--dirty"]),
    );
    format!("Measured by `{cmd}` at {when} (rstreams `{commit}`), all runs in one guest boot.")
}

/// The Markdown put before perftest's tables: command, TCG notice, environment, notes, scls.
fn preamble(
    c: &Config,
    con: &Console,
    res: &Results,
    accel: &str,
    g: &crate::GuestInfo,
    when: &str,
    guest_secs: f64,
) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "{}\n", measured_by(c, when));
    if accel == "tcg" {
        m.push_str(
            "> **QEMU TCG (software emulation), not KVM.** Absolute numbers under TCG are \
             meaningless (every instruction is emulated; the host is shared). Only ratios between \
             implementations measured in this same boot count.\n\n",
        );
    }
    let env = |k: &str| {
        con.env
            .iter()
            .find(|(key, _)| key == k)
            .map_or("?", |(_, v)| v.as_str())
    };
    let host_cpu = fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| "?".into());
    let nproc = first_line(&mut Command::new("nproc"));
    let _ = writeln!(m, "## Environment\n\n| | |\n|---|---|");
    let _ = writeln!(
        m,
        "| guest kernel | Linux {} (`{}` variant: {}) |",
        env("kernel"),
        c.variant.name(),
        g.kdir.display()
    );
    let _ = writeln!(
        m,
        "| guest | QEMU `-accel {accel}`, {} vCPUs ({}), {} |",
        env("cpus"),
        env("cpu"),
        env("mem")
    );
    let _ = writeln!(
        m,
        "| host | {host_cpu}, {nproc} CPUs, Linux {} |",
        first_line(Command::new("uname").arg("-r"))
    );
    let _ = writeln!(
        m,
        "| QEMU | {} |",
        first_line(Command::new("qemu-system-x86_64").arg("--version"))
    );
    let _ = writeln!(
        m,
        "| streams.ko | {} |",
        if env("modprobe") == "ok" {
            "production build loaded (no KUnit suites, no test drivers)"
        } else {
            "NOT loaded (modprobe failed; see console.log)"
        }
    );
    let _ = writeln!(
        m,
        "| per run | `perftest {} <impl options> --csv` ({} s measured) |",
        c.base_args(0).replace("-s 0", "-s SIZE"),
        c.run_secs()
    );
    let _ = writeln!(
        m,
        "| per UDP run | `perftest {} <impl options> --csv` ({} s measured; a sender and a receiver on 127.0.0.1) |",
        c.udp_base_args(0).replace("-s 0", "-s SIZE"),
        c.run_secs()
    );
    let has = |w: Sweep| c.impls.iter().any(|i| i.sweep == w);
    if has(Sweep::Syscall) {
        let _ = writeln!(
            m,
            "| per syscall run | `perftest -q -r -t {} -i {} --workload=syscall --csv` ({} s of getppid(2)) |",
            c.interval,
            c.iterations,
            c.run_secs()
        );
    }
    if has(Sweep::Devnull) {
        let _ = writeln!(
            m,
            "| per devnull run | `perftest -q -r -t {} -i {} -s 1 --workload=devnull --csv` ({} s of 1-byte write(2) to /dev/null) |",
            c.interval,
            c.iterations,
            c.run_secs()
        );
    }
    for (w, name) in [
        (Sweep::Bw, "bw"),
        (Sweep::Grep, "grep"),
        (Sweep::Flex, "flex"),
    ] {
        if has(w) {
            let (a, _) = c.workload_args(w, 0, 0);
            let a = a.replace("-s 0", "-s SIZE").replace("=0", "=PS");
            let _ = writeln!(
                m,
                "| per {name} run | `perftest {a} <impl options> --csv` (PS the pipe size) |"
            );
        }
    }
    let list = |v: &[usize]| {
        v.iter()
            .map(usize::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        m,
        "| sweep | pipe sizes {}; UDP sizes {}; {} repetition(s); implementations alternating within each size |",
        list(&c.sizes),
        list(&c.udp_sizes),
        c.repeats
    );
    if has(Sweep::Bw) || has(Sweep::Grep) || has(Sweep::GrepSh) || has(Sweep::Flex) {
        let _ = writeln!(
            m,
            "| seed-001 workloads | pipe sizes {}; bw chunks {}; flex chunks {}; grep file {} MiB |",
            list(&c.pipe_sizes),
            list(&c.bw_sizes),
            list(&c.flex_sizes),
            c.grep_mb
        );
    }
    let _ = writeln!(
        m,
        "| runs | {} planned, {} measured; sweep {} s in the guest, {:.1} min wall time with builds and boot |",
        res.measured + res.missing.len(),
        res.measured,
        env("sweep_secs"),
        guest_secs / 60.0
    );
    m.push_str("\n## Implementations\n\n| label | perftest options | what |\n|---|---|---|\n");
    for i in &c.impls {
        let _ = writeln!(m, "| {} | `{}` | {} |", i.label, i.args, i.what);
    }
    if let Some(d) = &res.died_in {
        let _ = writeln!(
            m,
            "\n**The guest ended (crash or timeout) during run {} ({} size {} rep {})**: see console.log.",
            d.n, d.label, d.size, d.rep
        );
    }
    if !con.kernel_problems.is_empty() {
        m.push_str("\n**Kernel reports on the console:**\n\n```\n");
        for l in con.kernel_problems.iter().take(20) {
            let _ = writeln!(m, "{l}");
        }
        m.push_str("```\n");
    }
    // perftest's warnings, once each (e.g. options not supported yet), with how often.
    let mut notes: BTreeMap<String, usize> = BTreeMap::new();
    for o in con.runs.values() {
        for n in &o.notes {
            let n = n.trim().trim_start_matches("perftest: ");
            if !n.is_empty() && !unavailable(n) {
                *notes.entry(n.to_string()).or_default() += 1;
            }
        }
    }
    if !notes.is_empty() {
        m.push_str("\n## perftest notes\n\n");
        for (n, k) in &notes {
            let _ = writeln!(m, "- {n} ({k} run{})", if *k == 1 { "" } else { "s" });
        }
    }
    m.push_str("\n## STREAMS modules and drivers before the sweep (`scls -a`)\n\n```\n");
    if con.scls.is_empty() {
        m.push_str("(no scls output)\n");
    }
    for l in &con.scls {
        let _ = writeln!(m, "{l}");
    }
    m.push_str("```\n");
    if !con.scls_after.is_empty() {
        m.push_str("\n## ... and after the sweep (`scls -a`)\n\n```\n");
        for l in &con.scls_after {
            let _ = writeln!(m, "{l}");
        }
        m.push_str("```\n");
    }
    m
}

/// `cargo xtask bench`.
pub(crate) fn cmd(args: Args) -> Result<()> {
    // The command line as typed, for the report: what follows `bench`.
    let argv: Vec<String> = std::env::args()
        .skip_while(|a| a != "bench")
        .skip(1)
        .collect();
    let c = Config::new(args, argv);
    let plan = c.plan();
    let limit = c.timeout.unwrap_or_else(|| c.default_timeout());
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let stamp = utc_stamp(now);
    let root = util::repo_root();
    let out = root.join("target/bench").join(&stamp);
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let prof_cases = c.profile_cases();
    eprintln!(
        "bench: {} runs ({} pipe and {} UDP sizes, the syscall and write floors, the bw/grep/flex \
         workloads over {} pipe sizes; {} repeat(s)): about {:.0} min in the guest plus boot, \
         then a guest profile of {} case(s); limit {} s; results in {}",
        plan.len(),
        c.sizes.len(),
        c.udp_sizes.len(),
        c.pipe_sizes.len(),
        c.repeats,
        c.expected_secs() / 60.0,
        prof_cases.len(),
        limit,
        out.display()
    );
    let plan_txt = plan_text(&plan);
    util::write_atomic(&out.join("plan.txt"), plan_txt.as_bytes())?;
    // perf for the guest, only when there is something to profile; without it the report says
    // why and the sweep runs as usual.
    let (shipment, perf_missing) = if prof_cases.is_empty() {
        (None, None)
    } else {
        match profile::perf_files() {
            Ok(perf) => (
                Some(profile::Shipment {
                    plan: profile::plan_text(&prof_cases),
                    perf,
                }),
                None,
            ),
            Err(e) => {
                eprintln!("bench: no guest profile: {e}");
                (None, Some(e))
            }
        }
    };
    let start = Instant::now();
    let (run, g) = crate::guest(
        c.variant,
        &crate::Mode::Bench {
            plan: &plan_txt,
            profile: shipment.as_ref(),
        },
        Duration::from_secs(limit),
    )?;
    let guest_secs = start.elapsed().as_secs_f64();
    if g.accel == "tcg" {
        eprintln!(
            "bench: NOTE: the guest ran under QEMU TCG (emulation): absolute numbers are \
             meaningless, only ratios within this run count"
        );
    }
    let con = parse_console(&run.lines);
    let guest_end = if run.timed_out {
        format!("guest timed out after {limit} s and was killed")
    } else if con.done {
        "sweep finished".to_string()
    } else {
        "guest stopped without finishing the sweep".to_string()
    };
    let res = results(&plan, &con, &guest_end);
    let prof = if !c.profile {
        Profile::Off(if c.quick {
            "`--quick` runs without it unless `--profile` is given"
        } else {
            "`--no-profile`"
        })
    } else if prof_cases.is_empty() {
        Profile::NoCases
    } else if let Some(e) = perf_missing {
        Profile::Unavailable(e)
    } else {
        let end = if run.timed_out {
            guest_end.clone()
        } else {
            "the guest stopped".to_string()
        };
        Profile::Ran {
            perf: profile::host_perf_version(),
            cases: profile::results(&prof_cases, &run.lines, &end),
        }
    };
    let _ = fs::copy(&run.log, out.join("console.log"));
    util::write_atomic(&out.join("bench.csv"), res.csv.as_bytes())?;
    util::write_atomic(
        &out.join("scls.txt"),
        (con.scls.join("\n") + "\n").as_bytes(),
    )?;
    let when = format!("{stamp} (UTC)");
    // The profile is never a reason to stop: a file it cannot write is a warning.
    if let Some(md) = prof.markdown(&measured_by(&c, &when)) {
        if let Err(e) = util::write_atomic(&out.join("profile.md"), md.as_bytes()) {
            eprintln!("bench: warning: profile.md not written: {e}");
        }
    }
    let pre = preamble(&c, &con, &res, &g.accel, &g, &when, guest_secs);
    util::write_atomic(&out.join("preamble.md"), pre.as_bytes())?;
    // The report: perftest's own (the static binary built for the guest runs on the host too).
    let perftest = g
        .programs
        .iter()
        .find(|p| p.file_name().is_some_and(|n| n == "perftest"))
        .cloned()
        .ok_or("perftest was not built")?;
    let st = util::step("report (perftest report)");
    let rep = util::run(
        Command::new(&perftest)
            .arg("report")
            .arg(out.join("bench.csv"))
            .arg("--out")
            .arg(&out)
            .arg("--preamble")
            .arg(out.join("preamble.md")),
    );
    st.done();
    // The profile's section closes the report perftest wrote.
    let report_md = out.join("report.md");
    if rep.is_ok() {
        let appended = util::read(&report_md).and_then(|text| {
            util::write_atomic(&report_md, (text + &prof.report_section()).as_bytes())
        });
        if let Err(e) = appended {
            eprintln!("bench: warning: no guest profile section in report.md: {e}");
        }
    }
    let latest = root.join("target/bench/latest");
    let _ = fs::remove_file(&latest);
    let _ = std::os::unix::fs::symlink(&stamp, &latest);
    summary(&c, &plan, &res, &con, &out);
    println!("bench: note: {}", prof.summary());
    println!(
        "bench: report: {} (also {})",
        report_md.display(),
        latest.join("report.md").display()
    );
    // Verdict: every failure is named; STREAMS missing is the headline.
    let mut problems = Vec::new();
    if let Some(d) = &res.died_in {
        problems.push(format!(
            "the guest ended during run {}/{} ({} size {} rep {}): {guest_end}",
            d.n,
            plan.len(),
            d.label,
            d.size,
            d.rep
        ));
    } else if !con.done {
        problems.push(format!("the sweep did not finish: {guest_end}"));
    }
    if !con.kernel_problems.is_empty() {
        problems.push(format!(
            "{} kernel report line(s) on the console (first: {})",
            con.kernel_problems.len(),
            con.kernel_problems[0].trim()
        ));
    }
    let (problems_more, notes) = verdict(&plan, &res);
    problems.extend(problems_more);
    for n in &notes {
        println!("bench: note: {n}");
    }
    if res.measured == 0 {
        problems.push("no run gave a number".into());
    }
    if let Err(e) = rep {
        problems.push(format!("perftest report failed: {e}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "bench incomplete (report written to {}):\n  - {}",
            out.display(),
            problems.join("\n  - ")
        ))
    }
}

/// What the missing runs mean for the exit status: (problems, notes). STREAMS pipes or TPI
/// UDP not measured are problems, with the reason; so is any other run without a number,
/// except XTI over sockets being unavailable (not in the kernel yet), which is a note.
pub(crate) fn verdict(plan: &[Run], res: &Results) -> (Vec<String>, Vec<String>) {
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    let mut named = 0;
    for (what, of, hint) in [
        (
            "STREAMS",
            (|l: &str| l.starts_with("streams") || l.contains("-streams")) as fn(&str) -> bool,
            " (no STREAMS pipe device /dev/streams/clone/pipe in the guest: the pipe driver is not in streams.ko yet)",
        ),
        (
            "TPI UDP",
            |l: &str| l == "udp-tpi",
            " (no /dev/streams/clone/udp in the guest)",
        ),
    ] {
        let missing: Vec<&(Run, &str, String)> =
            res.missing.iter().filter(|(r, _, _)| of(&r.label)).collect();
        if missing.is_empty() {
            continue;
        }
        named += missing.len();
        let all_unavailable = missing.iter().all(|(_, s, _)| *s == "unavailable");
        problems.push(format!(
            "{what} could not be measured in {} of {} {what} runs{}",
            missing.len(),
            plan.iter().filter(|r| of(&r.label)).count(),
            if all_unavailable { hint } else { "" }
        ));
    }
    let xtiso: Vec<&(Run, &str, String)> = res
        .missing
        .iter()
        .filter(|(r, s, _)| r.label == "udp-xtiso" && *s == "unavailable")
        .collect();
    if let Some((_, _, why)) = xtiso.first() {
        named += xtiso.len();
        notes.push(format!(
            "XTI over sockets (udp-xtiso) unavailable in {} run(s), reported as such: {why}",
            xtiso.len()
        ));
    }
    let other_missing = res.missing.len() - named;
    if other_missing > 0 {
        problems.push(format!("{other_missing} other run(s) gave no number"));
    }
    (problems, notes)
}

/// The closing summary on stdout: STREAMS/Linux ratios per size (means over repetitions),
/// then for the UDP test messages received/s and the ratio to udp-socket.
fn summary(c: &Config, plan: &[Run], res: &Results, con: &Console, out: &Path) {
    let mut rate: BTreeMap<(String, usize), Vec<f64>> = BTreeMap::new();
    for r in plan {
        if let Some(row) = con.runs.get(&r.n).and_then(|o| o.row.as_ref()) {
            if let Some(m) = valid_row(row, &r.label, r.size) {
                // The report's figure of merit of each test (perftest's own choice).
                let v = perftest::report::Test::of(&m.imp).metric(&m);
                rate.entry((r.label.clone(), r.size)).or_default().push(v);
            }
        }
    }
    let mean = |l: &str, s: usize| {
        rate.get(&(l.to_string(), s))
            .map(|v| v.iter().sum::<f64>() / v.len() as f64)
    };
    println!(
        "---- bench summary: {} of {} runs measured ----",
        res.measured,
        plan.len()
    );
    for (sweep, sizes, baseline, unit) in [
        (Sweep::Pipe, &c.sizes, "linux", "writes/s (ratio to linux)"),
        (
            Sweep::Udp,
            &c.udp_sizes,
            "udp-socket",
            "UDP messages received/s (ratio to udp-socket)",
        ),
    ] {
        let impls: Vec<&&Impl> = c.impls.iter().filter(|i| i.sweep == sweep).collect();
        if impls.is_empty() {
            continue;
        }
        println!("{unit}");
        let mut head = format!("{:>6}", "size");
        for i in &impls {
            let _ = write!(head, " {:>22}", i.label);
        }
        println!("{head}");
        for &s in sizes {
            let mut line = format!("{s:>6}");
            let base = mean(baseline, s);
            for i in &impls {
                let cell = match (mean(i.label, s), base) {
                    (Some(v), Some(b)) if i.label != baseline && b > 0.0 => {
                        format!("{v:.0} ({:.2}x)", v / b)
                    }
                    (Some(v), _) => format!("{v:.0}"),
                    (None, _) => res
                        .missing
                        .iter()
                        .find(|(r, _, _)| r.label == i.label && r.size == s)
                        .map_or("-".to_string(), |(_, st, _)| st.to_string()),
                };
                let _ = write!(line, " {cell:>22}");
            }
            println!("{line}");
        }
    }
    if let Some(f) = mean("syscall", 0) {
        println!("system call floor (getppid): {f:.0} calls/s");
    }
    if let Some(w) = mean("devnull", 1) {
        println!("write floor W (1-byte write to /dev/null): {w:.0} writes/s");
    }
    // The seed-001 workloads: MB/s of Linux and STREAMS pipes at each point.
    for (sweep, what) in [
        (Sweep::Bw, "bw_pipe MB/s"),
        (Sweep::Grep, "cat | grep MB/s"),
        (
            Sweep::GrepSh,
            "cat | grep in dash (LD_PRELOAD for STREAMS) MB/s",
        ),
        (Sweep::Flex, "pipeflex MB/s"),
    ] {
        let find = |kind: &str| {
            c.impls
                .iter()
                .find(|i| i.sweep == sweep && i.label.contains(kind))
                .map(|i| i.label)
        };
        let (Some(l), Some(st)) = (find("-linux"), find("-streams")) else {
            continue;
        };
        println!("{what} (streams/linux)");
        let mut points: Vec<(usize, Option<usize>)> = Vec::new();
        let ours = |r: &&Run| r.label == l || r.label.starts_with(&format!("{l}-ps"));
        for r in plan.iter().filter(ours) {
            if !points.contains(&(r.size, r.pipe_size)) {
                points.push((r.size, r.pipe_size));
            }
        }
        for (size, ps) in points {
            let suffix = ps.map(ps_suffix).unwrap_or_default();
            let (a, b) = (
                mean(&format!("{l}{suffix}"), size),
                mean(&format!("{st}{suffix}"), size),
            );
            let cell = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{:.2}", v / 1e6));
            let ratio = match (a, b) {
                (Some(a), Some(b)) if a > 0.0 => format!(" ({:.2}x)", b / a),
                _ => String::new(),
            };
            let ps = ps.map_or("default".to_string(), |p| p.to_string());
            if matches!(sweep, Sweep::Grep | Sweep::GrepSh) {
                println!(
                    "  pipe {ps:>7}: linux {:>9} streams {:>9}{ratio}",
                    cell(a),
                    cell(b)
                );
            } else {
                println!(
                    "  size {size:>6} pipe {ps:>7}: linux {:>9} streams {:>9}{ratio}",
                    cell(a),
                    cell(b)
                );
            }
        }
    }
    println!("(all files in {})", out.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<String> {
        s.lines().map(String::from).collect()
    }

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn options_and_plan() {
        let c = parse(&[]).unwrap();
        assert_eq!((c.interval, c.iterations, c.repeats), (1.0, 3, 3));
        assert_eq!(c.sizes.first(), Some(&1));
        assert_eq!(c.sizes.last(), Some(&8192));
        assert_eq!(c.sizes.len(), 14);
        assert_eq!(c.udp_sizes, default_udp_sizes());
        assert_eq!(c.udp_sizes.last(), Some(&16384));
        assert_eq!(c.udp_sizes.len(), 15);
        assert_eq!(c.pipe_sizes, vec![4096, 8192, 16384, 32768, 65536]);
        assert_eq!(c.bw_sizes, vec![2048, 4096, 8192, 16384, 32768]);
        assert_eq!(c.flex_sizes, vec![8192, 32768]);
        assert_eq!(c.grep_mb, 50);
        let plan = c.plan();
        // The pipe sweep, the UDP sweep, the syscall and write floors, then bw, grep and flex, in the
        // same plan (one guest boot).
        let (pipe, udp_n, sys) = (14 * 3 * 6, 15 * 3 * 3, 3 + 3);
        let (bw, grep, grep_sh, flex) = (5 * 5 * 3 * 2, 5 * 3 * 2, 3 * 2, 2 * 5 * 3 * 2);
        assert_eq!(plan.len(), pipe + udp_n + sys + bw + grep + grep_sh + flex);
        assert!(plan[..pipe].iter().all(|r| !r.label.starts_with("udp-")));
        let udp: Vec<(&str, usize, u32)> = plan[pipe..pipe + 4]
            .iter()
            .map(|r| (r.label.as_str(), r.size, r.rep))
            .collect();
        assert_eq!(
            udp,
            vec![
                ("udp-socket", 1, 1),
                ("udp-tpi", 1, 1),
                ("udp-xtiso", 1, 1),
                ("udp-socket", 1, 2),
            ]
        );
        let last_udp = &plan[pipe + udp_n - 1];
        assert_eq!(
            (last_udp.label.as_str(), last_udp.size, last_udp.rep),
            ("udp-xtiso", 16384, 3)
        );
        assert_eq!(
            last_udp.args,
            "-q -r -t 1 -i 3 -s 16384 --bufsize=131071 --udp=xtiso"
        );
        // The syscall floor: once per repetition, size 0.
        let s = &plan[pipe + udp_n];
        assert_eq!(
            (s.label.as_str(), s.size, s.rep, s.args.as_str()),
            ("syscall", 0, 1, "-q -r -t 1 -i 3 --workload=syscall")
        );
        // The write floor next to it: once per repetition, 1 byte.
        let d = &plan[pipe + udp_n + 3];
        assert_eq!(
            (d.label.as_str(), d.size, d.rep, d.args.as_str()),
            ("devnull", 1, 1, "-q -r -t 1 -i 3 -s 1 --workload=devnull")
        );
        // bw: by chunk size, pipe size, repetition, Linux and STREAMS alternating.
        let w = pipe + udp_n + sys;
        let bw_runs: Vec<(&str, usize, u32)> = plan[w..w + 8]
            .iter()
            .map(|r| (r.label.as_str(), r.size, r.rep))
            .collect();
        assert_eq!(
            bw_runs,
            vec![
                ("bw-linux-ps4k", 2048, 1),
                ("bw-streams-ps4k", 2048, 1),
                ("bw-linux-ps4k", 2048, 2),
                ("bw-streams-ps4k", 2048, 2),
                ("bw-linux-ps4k", 2048, 3),
                ("bw-streams-ps4k", 2048, 3),
                ("bw-linux-ps8k", 2048, 1),
                ("bw-streams-ps8k", 2048, 1),
            ]
        );
        assert_eq!(
            plan[w + 1].args,
            "-q -r -t 30 -i 1 -s 2048 --pipe-size=4096 --workload=bw --pipe=streams"
        );
        assert_eq!(plan[w + 1].pipe_size, Some(4096));
        // grep: the CSV size is the pipe size.
        let g = &plan[w + bw + 1];
        assert_eq!(
            (g.label.as_str(), g.size, g.args.as_str()),
            (
                "grep-streams-ps4k",
                4096,
                "-q -r -t 120 -i 1 --file-mb=50 --pipe-size=4096 --workload=grep --pipe=streams"
            )
        );
        // The dash pipeline: the shell's pipe at its default size (CSV size 0).
        let sh = &plan[w + bw + grep + 1];
        assert_eq!(
            (sh.label.as_str(), sh.size, sh.pipe_size, sh.args.as_str()),
            (
                "grep-streams-sh",
                0,
                None,
                "-q -r -t 120 -i 1 --file-mb=50 --workload=grep --pipe=streams --shell=/usr/bin/dash --preload=/usr/lib/libstreams_pipe.so"
            )
        );
        let last = plan.last().unwrap();
        assert_eq!(
            (last.label.as_str(), last.size, last.rep),
            ("flex-streams-ps64k", 32768, 3)
        );
        assert_eq!(
            last.args,
            "-q -r -t 1 -i 2 -s 32768 --pipe-size=65536 --workload=flex --pipe=streams --children=2 --compute-us=500"
        );
        // -t and -i are words 4 and 6 of every line: the guest's watchdog reads them there.
        for r in &plan {
            let w: Vec<&str> = r.args.split_whitespace().collect();
            assert_eq!((w[2], w[4]), ("-t", "-i"), "{}", r.args);
        }
        // perftest's own default label of every workload run is the plan's.
        for r in plan
            .iter()
            .filter(|r| r.label.contains("-ps") || r.label.ends_with("-sh"))
        {
            let words: Vec<String> = r.args.split_whitespace().map(String::from).collect();
            match perftest::opts::parse(&words) {
                Ok(perftest::opts::Cmd::Run(o)) => assert_eq!(o.impl_label(), r.label),
                other => panic!("{}: {other:?}", r.args),
            }
        }
        // Implementations alternate within a size, repetitions follow, then the next size.
        let first: Vec<(&str, usize, u32)> = plan[..7]
            .iter()
            .map(|r| (r.label.as_str(), r.size, r.rep))
            .collect();
        assert_eq!(
            first,
            vec![
                ("linux", 1, 1),
                ("streams", 1, 1),
                ("streams+H+w+F+M", 1, 1),
                ("streams-putmsg", 1, 1),
                ("seqpacket", 1, 1),
                ("socketpair", 1, 1),
                ("linux", 1, 2),
            ]
        );
        assert_eq!(
            plan[2].args,
            "-q -r -t 1 -i 3 -m nullmod -p 0 -s 1 -a -S10 --hiwat=65536 --lowat=8192 --pipe=streams -H -M -F -w"
        );
        // About 29 minutes expected in the guest (the syscall floor and the workloads about 8
        // of them); the limit adds 0.5 s per run and 5 minutes and stays under 40 minutes,
        // then the profile's budget.
        let expected = c.expected_secs();
        assert!((1500.0..1800.0).contains(&expected), "{expected}");
        let sweep_limit = parse(&args("--no-profile")).unwrap().default_timeout();
        assert!(sweep_limit < 40 * 60, "{sweep_limit}");
        assert_eq!(
            c.default_timeout(),
            sweep_limit + (profile::CASES.len() as f64 * profile::CASE_BUDGET_SECS) as u64
        );
        let q = parse(&args("--quick")).unwrap();
        assert_eq!((q.interval, q.iterations, q.repeats), (0.5, 2, 1));
        assert_eq!(q.sizes, vec![1, 64, 1024, 4096]);
        assert_eq!(q.udp_sizes, vec![1, 64, 1024]);
        assert_eq!(
            (
                q.pipe_sizes.clone(),
                q.bw_sizes.clone(),
                q.flex_sizes.clone(),
                q.grep_mb
            ),
            (vec![4096, 65536], vec![4096, 32768], vec![32768], 10)
        );
        // --quick: 24 pipe runs and 9 UDP runs of 1 s each, 1 syscall and 1 devnull run, 8 bw, 4 + 2 grep and
        // 4 flex runs: under 2 minutes of guest time with boot.
        assert_eq!(q.plan().len(), 24 + 9 + 1 + 1 + 8 + 4 + 2 + 4);
        assert!(q.expected_secs() <= 75.0, "{}", q.expected_secs());
        let u = parse(&args("--quick --udp-sizes 8 --impls udp-socket,udp-tpi")).unwrap();
        assert_eq!(
            plan_text(&u.plan()),
            "1 udp-socket 8 1 -q -r -t 0.5 -i 2 -s 8 --bufsize=131071 --udp=socket\n\
             2 udp-tpi 8 1 -q -r -t 0.5 -i 2 -s 8 --bufsize=131071 --udp=tpi\n"
        );
        // Overrides win over --quick wherever they appear.
        let o = parse(&args(
            "--interval 2 --quick --iterations=5 --repeats 3 --sizes 8,16 --impls linux,streams",
        ))
        .unwrap();
        assert_eq!((o.interval, o.iterations, o.repeats), (2.0, 5, 3));
        assert_eq!(o.sizes, vec![8, 16]);
        // Only pipe implementations chosen: no UDP runs, no workloads.
        assert_eq!(o.plan().len(), 2 * 3 * 2);
        // Workload options.
        let wl = parse(&args(
            "--impls grep-linux,grep-streams --pipe-sizes 8192 --grep-mb 5 --repeats 1",
        ))
        .unwrap();
        assert_eq!(
            plan_text(&wl.plan()),
            "1 grep-linux-ps8k 8192 1 -q -r -t 120 -i 1 --file-mb=5 --pipe-size=8192 --workload=grep --pipe=linux\n\
             2 grep-streams-ps8k 8192 1 -q -r -t 120 -i 1 --file-mb=5 --pipe-size=8192 --workload=grep --pipe=streams\n"
        );
        assert_eq!(
            plan_text(&o.plan()).lines().next(),
            Some("1 linux 8 1 -q -r -t 2 -i 5 -m nullmod -p 0 -s 8 -a -S10 --hiwat=65536 --lowat=8192 --pipe=linux")
        );
        for bad in [
            "--interval 0",
            "--iterations x",
            "--repeats 0",
            "--sizes 0",
            "--sizes 1,,2",
            "--impls nosuch",
            "--udp-sizes 0",
            "--udp-sizes 40000",
            "--pipe-sizes 1024",
            "--pipe-sizes 5000",
            "--grep-mb 0",
            "--bw-sizes 0",
            "--bogus",
            "--sizes",
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn profile_options() {
        // On for the full bench, off for --quick; --profile and --no-profile win, the last one
        // given if both are.
        for (line, on) in [
            ("", true),
            ("--quick", false),
            ("--quick --profile", true),
            ("--profile --quick", true),
            ("--no-profile", false),
            ("--profile", true),
            ("--quick --profile --no-profile", false),
            ("--no-profile --profile", true),
            ("--repeats 1 --no-profile --sizes 1", false),
        ] {
            let c = parse(&args(line)).unwrap();
            assert_eq!(c.profile, on, "{line:?}");
            assert_eq!(c.profile_cases().is_empty(), !on, "{line:?}");
        }
        // --quick stays as it was: no profile, no budget for one in its limit.
        let q = parse(&args("--quick")).unwrap();
        let qp = parse(&args("--quick --profile")).unwrap();
        assert_eq!(q.plan(), qp.plan());
        assert_eq!(
            qp.default_timeout() - q.default_timeout(),
            (profile::CASES.len() as f64 * profile::CASE_BUDGET_SECS) as u64
        );
        // The cases follow --impls: here the pipe cases of linux and UDP TPI only.
        let c = parse(&args("--impls linux,udp-tpi,syscall")).unwrap();
        let cases: Vec<(&str, usize)> = c
            .profile_cases()
            .iter()
            .map(|k| (k.label, k.size))
            .collect();
        assert_eq!(cases, [("linux", 1), ("linux", 4096), ("udp-tpi", 64)]);
        assert!(parse(&args("--impls bw-linux"))
            .unwrap()
            .profile_cases()
            .is_empty());
        assert!(parse(&args("--profile=yes")).is_err());
    }

    const ROW1: &str = "linux,1,1.5,300000,200000,200000,0.000005,300000,300000";
    const ROW3: &str = "streams+H+w+F+M,1,1.5,600000,400000,400000,0.0000025,1000,600000";

    fn plan3() -> Vec<Run> {
        parse(&args(
            "--sizes 1 --repeats 1 --impls linux,streams,streams+H+w+F+M",
        ))
        .unwrap()
        .plan()
    }

    #[test]
    fn console_markers_to_csv_rows() {
        // Kernel output may precede a marker on the same line; timestamps too.
        let log = lines(&format!(
            "[    1.0] Run /init as init process\n\
             RSTREAMS-BENCH-ENV kernel=6.12.117\n\
             RSTREAMS-BENCH-ENV cpus=2\n\
             RSTREAMS-SCLS kernel modules:\n\
             RSTREAMS-SCLS   streams\n\
             RSTREAMS-BENCH-RUN 1/3 linux 1 1\n\
             RSTREAMS-BENCH-NOTE 1 perftest: STREAMS options (-H -w -M -p N --hiwat --lowat) ignored for linux\n\
             RSTREAMS-BENCH-ROW 1 {ROW1}\n\
             [   12.5] random: crng init done RSTREAMS-BENCH-RUN 2/3 streams 1 1\n\
             RSTREAMS-BENCH-NOTE 2 perftest: no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory\n\
             RSTREAMS-BENCH-FAIL 2 rc=1\n\
             RSTREAMS-BENCH-RUN 3/3 streams+H+w+F+M 1 1\n\
             RSTREAMS-BENCH-ROW 3 {ROW3}\n\
             RSTREAMS-SCLS-AFTER   streams\n\
             RSTREAMS-BENCH-DONE n=3\n"
        ));
        let c = parse_console(&log);
        assert!(c.done);
        assert_eq!(c.scls_after, vec!["  streams"]);
        assert_eq!(c.last_started, Some(3));
        assert_eq!(c.scls, vec!["kernel modules:", "  streams"]);
        assert_eq!(
            c.env,
            vec![
                ("kernel".to_string(), "6.12.117".to_string()),
                ("cpus".to_string(), "2".to_string())
            ]
        );
        assert!(c.runs[&2].started);
        assert_eq!(c.runs[&2].failed, Some(1));
        assert!(c.kernel_problems.is_empty());
        let r = results(&plan3(), &c, "sweep finished");
        assert_eq!(r.measured, 2);
        assert_eq!(r.died_in, None);
        let csv: Vec<&str> = r.csv.lines().collect();
        let (row1, row3) = (Row::parse(ROW1).unwrap(), Row::parse(ROW3).unwrap());
        assert_eq!(
            csv,
            vec![
                "impl,size,seconds,writes,writes_per_sec,bytes_per_sec,delay_sec,reads,read_bytes,reads_per_sec,lost,reordered",
                "linux,1,1.5,300000,200000.0,200000.0,5e-6,300000,300000,200000.0,,",
                "streams+H+w+F+M,1,1.5,600000,400000.0,400000.0,2.5e-6,1000,600000,666.6666666666666,,",
                "#status,streams,1,1,unavailable,no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory",
            ]
        );
        // perftest report reads it back: the same measurements.
        assert_eq!(perftest::csv::parse_text(&r.csv).unwrap(), vec![row1, row3]);
        assert_eq!(r.missing.len(), 1);
        assert_eq!(r.missing[0].1, "unavailable");
    }

    #[test]
    fn crash_names_the_run_and_the_rest_is_not_run() {
        let log = lines(&format!(
            "RSTREAMS-BENCH-RUN 1/3 linux 1 1\n\
             RSTREAMS-BENCH-ROW 1 {ROW1}\n\
             RSTREAMS-BENCH-RUN 2/3 streams 1 1\n\
             BUG: kernel NULL pointer dereference, address: 0000000000000008\n\
             Kernel panic - not syncing: Fatal exception\n"
        ));
        let c = parse_console(&log);
        assert!(!c.done);
        assert_eq!(c.kernel_problems.len(), 2);
        let r = results(&plan3(), &c, "guest timed out after 60 s and was killed");
        assert_eq!(r.measured, 1);
        assert_eq!(r.died_in.as_ref().map(|d| d.n), Some(2));
        let st: Vec<&str> = r.csv.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            st,
            vec![
                "#status,streams,1,1,failed,the guest ended during this run (guest timed out after 60 s and was killed); see console.log",
                "#status,streams+H+w+F+M,1,1,not-run,not run: the guest ended during run 2",
            ]
        );
    }

    #[test]
    fn garbled_or_foreign_rows_are_not_numbers() {
        assert_eq!(
            valid_row(ROW1, "linux", 1).map(|r| r.writes_per_sec),
            Some(200000.0)
        );
        assert!(valid_row(ROW1, "linux", 2).is_none());
        assert!(valid_row(ROW1, "streams", 1).is_none());
        assert!(valid_row("linux,1,1.5,300[  3.2] x,200000", "linux", 1).is_none());
        assert!(valid_row(
            "linux,1,1.5,3000x0,200000,200000,0.000005,300000,300000",
            "linux",
            1
        )
        .is_none());
        let log = lines(
            "RSTREAMS-BENCH-RUN 1/3 linux 1 1\nRSTREAMS-BENCH-ROW 1 linux,1,1.5\n\
             RSTREAMS-BENCH-RUN 2/3 streams 1 1\n\
             RSTREAMS-BENCH-NOTE 2 perftest: writer child failed\nRSTREAMS-BENCH-FAIL 2 rc=1\n\
             RSTREAMS-BENCH-RUN 3/3 streams+H+w+F+M 1 1\nRSTREAMS-BENCH-FAIL 3 rc=143\n\
             RSTREAMS-BENCH-DONE n=3\n",
        );
        let r = results(&plan3(), &parse_console(&log), "sweep finished");
        assert_eq!(r.measured, 0);
        let st: Vec<&str> = r.csv.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            st,
            vec![
                // A message with commas is a quoted CSV field.
                "#status,linux,1,1,failed,\"garbled result line on the console: linux,1,1.5\"",
                "#status,streams,1,1,failed,perftest exit status 1: writer child failed",
                "#status,streams+H+w+F+M,1,1,failed,killed by the guest's per-run watchdog (3x the measuring time + 30 s): the run hung (exit status 143)",
            ]
        );
    }

    #[test]
    fn udp_rows_unavailable_xtiso_and_the_verdict() {
        let plan = parse(&args(
            "--quick --sizes 1 --udp-sizes 64 --impls linux,udp-socket,udp-tpi,udp-xtiso",
        ))
        .unwrap()
        .plan();
        assert_eq!(plan.len(), 4);
        let udp_row = "udp-socket,64,1.0,1000,1000.0,64000.0,0.001,900,57600,900.0,100,0";
        let log = lines(&format!(
            "RSTREAMS-BENCH-RUN 1/4 linux 1 1\n\
             RSTREAMS-BENCH-ROW 1 {ROW1}\n\
             RSTREAMS-BENCH-RUN 2/4 udp-socket 64 1\n\
             RSTREAMS-BENCH-ROW 2 {udp_row}\n\
             RSTREAMS-BENCH-RUN 3/4 udp-tpi 64 1\n\
             RSTREAMS-BENCH-NOTE 3 perftest: no XTI UDP device: /dev/streams/clone/udp: No such file or directory\n\
             RSTREAMS-BENCH-FAIL 3 rc=1\n\
             RSTREAMS-BENCH-RUN 4/4 udp-xtiso 64 1\n\
             RSTREAMS-BENCH-NOTE 4 perftest: no XTI UDP device: /dev/streams/clone/xtiso-udp: No such file or directory\n\
             RSTREAMS-BENCH-FAIL 4 rc=1\n\
             RSTREAMS-BENCH-DONE n=4\n"
        ));
        let r = results(&plan, &parse_console(&log), "sweep finished");
        assert_eq!(r.measured, 2);
        let rows = perftest::csv::parse_text(&r.csv).unwrap();
        assert_eq!(rows[1].reads_per_sec, 900.0);
        assert_eq!(rows[1].lost, Some(100));
        let st: Vec<&str> = r.csv.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            st,
            vec![
                "#status,udp-tpi,64,1,unavailable,no XTI UDP device: /dev/streams/clone/udp: No such file or directory",
                "#status,udp-xtiso,64,1,unavailable,no XTI UDP device: /dev/streams/clone/xtiso-udp: No such file or directory",
            ]
        );
        // TPI UDP missing fails the bench; XTI over sockets missing is a note.
        let (problems, notes) = verdict(&plan, &r);
        assert_eq!(
            problems,
            vec!["TPI UDP could not be measured in 1 of 1 TPI UDP runs (no /dev/streams/clone/udp in the guest)"]
        );
        assert_eq!(notes.len(), 1);
        assert!(notes[0].starts_with("XTI over sockets (udp-xtiso) unavailable in 1 run(s)"));
        // A failed xtiso run is a problem.
        let failed = lines(&format!(
            "RSTREAMS-BENCH-RUN 1/4 linux 1 1\nRSTREAMS-BENCH-ROW 1 {ROW1}\n\
             RSTREAMS-BENCH-RUN 2/4 udp-socket 64 1\nRSTREAMS-BENCH-ROW 2 {udp_row}\n\
             RSTREAMS-BENCH-RUN 3/4 udp-tpi 64 1\nRSTREAMS-BENCH-ROW 3 {}\n\
             RSTREAMS-BENCH-RUN 4/4 udp-xtiso 64 1\n\
             RSTREAMS-BENCH-NOTE 4 perftest: t_rcvudata(): protocol error\nRSTREAMS-BENCH-FAIL 4 rc=1\n\
             RSTREAMS-BENCH-DONE n=4\n",
            udp_row.replacen("udp-socket", "udp-tpi", 1)
        ));
        let r = results(&plan, &parse_console(&failed), "sweep finished");
        assert_eq!(r.measured, 3);
        let (problems, notes) = verdict(&plan, &r);
        assert_eq!(problems, vec!["1 other run(s) gave no number"]);
        assert!(notes.is_empty());
    }

    #[test]
    fn workload_rows_and_streams_unavailable() {
        let plan = parse(&args(
            "--impls syscall,bw-linux,bw-streams --bw-sizes 4096 --pipe-sizes 8192 --repeats 1",
        ))
        .unwrap()
        .plan();
        let labels: Vec<(&str, usize)> = plan.iter().map(|r| (r.label.as_str(), r.size)).collect();
        assert_eq!(
            labels,
            vec![
                ("syscall", 0),
                ("bw-linux-ps8k", 4096),
                ("bw-streams-ps8k", 4096)
            ]
        );
        let sys = "syscall,0,3.0,9000000,3000000.0,0.0,3.3e-7,0,0,0.0,,";
        let bw = "bw-linux-ps8k,4096,0.05,2560,51180.0,209633280.0,1.95e-5,2559,10481664,51180.0,,";
        let log = lines(&format!(
            "RSTREAMS-BENCH-RUN 1/3 syscall 0 1\n\
             RSTREAMS-BENCH-ROW 1 {sys}\n\
             RSTREAMS-BENCH-RUN 2/3 bw-linux-ps8k 4096 1\n\
             RSTREAMS-BENCH-ROW 2 {bw}\n\
             RSTREAMS-BENCH-RUN 3/3 bw-streams-ps8k 4096 1\n\
             RSTREAMS-BENCH-NOTE 3 perftest: no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory\n\
             RSTREAMS-BENCH-FAIL 3 rc=1\n\
             RSTREAMS-BENCH-DONE n=3\n"
        ));
        let r = results(&plan, &parse_console(&log), "sweep finished");
        assert_eq!(r.measured, 2);
        let rows = perftest::csv::parse_text(&r.csv).unwrap();
        assert_eq!(rows[0].writes_per_sec, 3_000_000.0);
        assert_eq!(rows[1].bytes_per_sec, 209_633_280.0);
        let st: Vec<&str> = r.csv.lines().filter(|l| l.starts_with('#')).collect();
        assert_eq!(
            st,
            vec!["#status,bw-streams-ps8k,4096,1,unavailable,no STREAMS pipe device: /dev/streams/clone/pipe: No such file or directory"]
        );
        // A STREAMS workload without the device is the STREAMS problem, not an "other" one.
        let (problems, notes) = verdict(&plan, &r);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].starts_with("STREAMS could not be measured in 1 of 1 STREAMS runs"));
        assert!(notes.is_empty());
    }

    #[test]
    fn utc_stamps() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(951_782_400), "20000229T000000Z");
        // 2026-11-22 05:21:08 UTC
        assert_eq!(utc_stamp(1_795_324_868), "20261122T052108Z");
    }
}
