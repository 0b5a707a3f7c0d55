//! `perftest sweep`: the LfS `perftest_script` loop — every write size (1..4096 by powers of
//! two), every implementation, `--reps` repetitions — appending one CSV row per run.
//! Implementations that cannot run here (no STREAMS device) are skipped with one message.
//! The UDP test's implementations (`udp-socket`, `udp-tpi`, `udp-xtiso`) can be in the same
//! list; they run after the pipe kinds of each size and repetition.

use crate::csv::{Row, State, Status, HEADER};
use crate::opts::{Kind, Opts, RunArgs};
use crate::run::run;
use crate::udp::UdpKind;
use clap::{ArgMatches, FromArgMatches};
use std::io::Write;
use std::path::PathBuf;

/// Sweep parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOpts {
    /// (kind, putmsg) pairs, from `--kinds linux,streams,streams-putmsg,...`.
    pub kinds: Vec<(Kind, bool)>,
    /// UDP implementations, from `--kinds ...,udp-socket,udp-tpi,udp-xtiso`.
    pub udp: Vec<UdpKind>,
    /// Write sizes (`--sizes 1,2,4`).
    pub sizes: Vec<usize>,
    /// Repetitions per (kind, size) (`--reps`).
    pub reps: u32,
    /// CSV output (`--out`).
    pub out: PathBuf,
    /// Options of every run (`-t`, `-H`, `-w`, `-F`…); default interval 2 s as perftest_script.
    pub base: Opts,
}

/// One entry of `--kinds`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SweepKind {
    /// A pipe kind, write/read or putmsg/getmsg.
    Pipe(Kind, bool),
    /// A UDP implementation.
    Udp(UdpKind),
}

fn parse_kind(s: &str) -> Result<SweepKind, String> {
    if let Some(u) = s.strip_prefix(crate::udp::LABEL_PREFIX) {
        return UdpKind::parse(u)
            .map(SweepKind::Udp)
            .ok_or_else(|| format!("unknown kind {s:?}"));
    }
    match s.strip_suffix("-putmsg") {
        Some(k) => Kind::parse(k).map(|k| SweepKind::Pipe(k, true)),
        None => Kind::parse(s).map(|k| SweepKind::Pipe(k, false)),
    }
    .ok_or_else(|| format!("unknown kind {s:?}"))
}

fn parse_size(s: &str) -> Result<usize, String> {
    match s.trim().parse() {
        Ok(z) if (1..=crate::opts::MAXMSGSIZE).contains(&z) => Ok(z),
        Ok(z) => Err(format!("size {z} out of range")),
        Err(_) => Err(format!("bad size {s:?}")),
    }
}

/// `perftest sweep` as given on the command line; [`SweepArgs::resolve`] makes the
/// [`SweepOpts`].
#[derive(Debug, Clone, clap::Args)]
pub struct SweepArgs {
    /// Implementations: linux, socketpair, seqpacket, streams, streams-putmsg; UDP test:
    /// udp-socket, udp-tpi, udp-xtiso
    #[arg(long, value_name = "K1,K2,...", value_delimiter = ',', value_parser = parse_kind, default_value = "linux,streams")]
    kinds: Vec<SweepKind>,
    /// Write sizes [default: 1,2,4,...,4096]
    #[arg(long, value_name = "S1,S2,...", value_delimiter = ',', value_parser = parse_size)]
    sizes: Vec<usize>,
    /// Repetitions of each run
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    reps: u32,
    /// CSV file to write
    #[arg(long, value_name = "FILE.csv", default_value = "perftest.csv")]
    out: PathBuf,
    /// The options of every run (-t SECS [default 2], -H, -w, -F, -b, -p N -m MOD ...).
    #[command(flatten)]
    run: RunArgs,
    /// Print help
    #[arg(short = 'h', long, action = clap::ArgAction::Help)]
    help: Option<bool>,
}

impl SweepArgs {
    /// The sweep: our defaults (sizes 1..4096 by powers of two, `-t 2`, quiet runs) with the
    /// options given. `m` is the sweep subcommand's matches (see [`RunArgs::apply`]).
    pub fn resolve(&self, m: &ArgMatches) -> Result<SweepOpts, String> {
        let mut base = Opts {
            time: 2.0,
            verbose: 0,
            ..Opts::default()
        };
        self.run.apply(&mut base, m)?;
        base.label = None;
        Ok(SweepOpts {
            kinds: self
                .kinds
                .iter()
                .filter_map(|k| match *k {
                    SweepKind::Pipe(k, putmsg) => Some((k, putmsg)),
                    SweepKind::Udp(_) => None,
                })
                .collect(),
            udp: self
                .kinds
                .iter()
                .filter_map(|k| match *k {
                    SweepKind::Udp(u) => Some(u),
                    SweepKind::Pipe(..) => None,
                })
                .collect(),
            sizes: if self.sizes.is_empty() {
                (0..=12).map(|i| 1usize << i).collect()
            } else {
                self.sizes.clone()
            },
            reps: self.reps,
            out: self.out.clone(),
            base,
        })
    }
}

/// Parse `perftest sweep` arguments (without `perftest sweep`).
pub fn parse(args: &[String]) -> Result<SweepOpts, String> {
    let argv = ["perftest", "sweep"]
        .into_iter()
        .chain(args.iter().map(String::as_str));
    let m = crate::cli::perftest()
        .try_get_matches_from(argv)
        .map_err(|e| e.to_string())?;
    let sm = m
        .subcommand_matches("sweep")
        .ok_or("perftest sweep: no subcommand matches")?;
    SweepArgs::from_arg_matches(sm)
        .map_err(|e| e.to_string())?
        .resolve(sm)
}

/// Run the sweep, writing the CSV as it goes; returns the rows. Progress goes to `log`.
pub fn sweep(s: &SweepOpts, log: &mut dyn FnMut(String)) -> Result<Vec<Row>, String> {
    let mut f = std::fs::File::create(&s.out).map_err(|e| format!("{}: {e}", s.out.display()))?;
    writeln!(f, "{HEADER}").map_err(|e| e.to_string())?;
    let mut kinds = s.kinds.clone();
    // A kind that cannot be opened here is dropped once, with the reason (and a status line
    // per size in the CSV, so the report shows it as unavailable rather than absent).
    let mut skipped = Vec::new();
    kinds.retain(|&(k, putmsg)| match crate::run::open_channel(k) {
        Ok(_) => true,
        Err(e) => {
            log(format!("perftest sweep: skipping {k}: {e}"));
            let o = Opts {
                kind: k,
                putmsg,
                ..s.base.clone()
            };
            skipped.push((o.impl_label(), e));
            false
        }
    });
    let mut udp = s.udp.clone();
    udp.retain(|&u| match crate::udp::check(u) {
        Ok(()) => true,
        Err(e) => {
            log(format!("perftest sweep: skipping {}: {e}", u.label()));
            skipped.push((u.label().to_string(), e));
            false
        }
    });
    for (imp, why) in &skipped {
        for &size in &s.sizes {
            let st = Status {
                imp: imp.clone(),
                size,
                rep: 0,
                state: State::Unavailable,
                message: why.clone(),
            };
            writeln!(f, "{}", st.to_line()).map_err(|e| e.to_string())?;
        }
    }
    if kinds.is_empty() && udp.is_empty() {
        return Err("no implementation can run here".into());
    }
    let mut rows = Vec::new();
    for &size in &s.sizes {
        for rep in 1..=s.reps {
            for &(kind, putmsg) in &kinds {
                let o = Opts {
                    kind,
                    putmsg,
                    size,
                    ..s.base.clone()
                };
                let label = o.impl_label();
                let out = run(&o, &mut |w| log(format!("perftest: {w}")))?;
                let row = Row::from_outcome(&label, size, &out);
                log(format!(
                    "{label:>16} size {size:>5} rep {rep}: {:>12.0} writes/s",
                    row.writes_per_sec
                ));
                writeln!(f, "{}", row.to_line()).map_err(|e| e.to_string())?;
                rows.push(row);
            }
            for &u in &udp {
                let o = Opts {
                    udp: Some(u),
                    size,
                    ..s.base.clone()
                };
                let label = o.impl_label();
                let t = crate::udp::run(&o, u, &mut |w| log(format!("perftest: {w}")))?;
                let row = Row::from_outcome(&label, size, &t.outcome);
                log(format!(
                    "{label:>16} size {size:>5} rep {rep}: {:>12.0} msgs/s sent, {:>12.0} received",
                    row.writes_per_sec, row.reads_per_sec
                ));
                writeln!(f, "{}", row.to_line()).map_err(|e| e.to_string())?;
                rows.push(row);
            }
        }
    }
    Ok(rows)
}
