//! `perftest sweep`: the LfS `perftest_script` loop — every write size (1..4096 by powers of
//! two), every implementation, `--reps` repetitions — appending one CSV row per run.
//! Implementations that cannot run here (no STREAMS device) are skipped with one message.

use crate::csv::{Row, State, Status, HEADER};
use crate::opts::{parse_into, Kind, Opts};
use crate::run::run;
use std::io::Write;
use std::path::PathBuf;

/// Sweep parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepOpts {
    /// (kind, putmsg) pairs, from `--kinds linux,streams,streams-putmsg,...`.
    pub kinds: Vec<(Kind, bool)>,
    /// Write sizes (`--sizes 1,2,4`).
    pub sizes: Vec<usize>,
    /// Repetitions per (kind, size) (`--reps`).
    pub reps: u32,
    /// CSV output (`--out`).
    pub out: PathBuf,
    /// Options of every run (`-t`, `-H`, `-w`, `-F`…); default interval 2 s as perftest_script.
    pub base: Opts,
}

/// Usage text.
pub const SWEEP_USAGE: &str = "\
perftest sweep [--kinds K1,K2,...] [--sizes S1,S2,...] [--reps N] [--out FILE.csv] [options]
    --kinds   linux, socketpair, seqpacket, streams, streams-putmsg [default: linux,streams]
    --sizes   write sizes [default: 1,2,4,...,4096]
    --reps    repetitions of each run [default: 3]
    --out     CSV file to write [default: perftest.csv]
    options   as for a single run (-t SECS [default 2], -H, -w, -F, -b, -p N -m MOD ...)
";

fn parse_kind(s: &str) -> Result<(Kind, bool), String> {
    match s.strip_suffix("-putmsg") {
        Some(k) => Kind::parse(k).map(|k| (k, true)),
        None => Kind::parse(s).map(|k| (k, false)),
    }
    .ok_or_else(|| format!("unknown kind {s:?}"))
}

/// Parse `perftest sweep` arguments.
pub fn parse(args: &[String]) -> Result<SweepOpts, String> {
    let mut s = SweepOpts {
        kinds: vec![(Kind::Linux, false), (Kind::Streams, false)],
        sizes: (0..=12).map(|i| 1usize << i).collect(),
        reps: 3,
        out: PathBuf::from("perftest.csv"),
        base: Opts {
            time: 2.0,
            verbose: 0,
            ..Opts::default()
        },
    };
    let mut rest = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        let (name, inline) = match a.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        if !matches!(name, "--kinds" | "--sizes" | "--reps" | "--out") {
            rest.push(a.clone());
            continue;
        }
        let v = match inline {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i - 1)
                    .cloned()
                    .ok_or(format!("{name} needs a value"))?
            }
        };
        match name {
            "--kinds" => s.kinds = v.split(',').map(parse_kind).collect::<Result<_, _>>()?,
            "--sizes" => {
                s.sizes = v
                    .split(',')
                    .map(|x| x.trim().parse().map_err(|_| format!("bad size {x:?}")))
                    .collect::<Result<_, _>>()?
            }
            "--reps" => s.reps = v.parse().map_err(|_| format!("bad --reps {v:?}"))?,
            _ => s.out = PathBuf::from(v),
        }
    }
    if parse_into(&mut s.base, &rest)?.is_some() {
        return Err(SWEEP_USAGE.to_string());
    }
    s.base.label = None;
    if s.kinds.is_empty() || s.sizes.is_empty() || s.reps == 0 {
        return Err("nothing to do: empty --kinds/--sizes or --reps 0".into());
    }
    if let Some(bad) = s
        .sizes
        .iter()
        .find(|&&z| z == 0 || z > crate::opts::MAXMSGSIZE)
    {
        return Err(format!("size {bad} out of range"));
    }
    Ok(s)
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
    if kinds.is_empty() {
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
        }
    }
    Ok(rows)
}
