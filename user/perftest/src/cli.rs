//! The command lines of the crate's two programs, `perftest` and `scls`, as clap commands: the
//! binaries parse with them and `cargo xtask man` renders perftest(8) and scls(8) from them, so
//! the help text and the manual page cannot drift apart.

use crate::opts::RunArgs;
use crate::report::ReportArgs;
use crate::scls::SclsArgs;
use crate::sweep::SweepArgs;
use clap::{ArgAction, CommandFactory, Parser, Subcommand};

/// `perftest`: one measurement, or a subcommand.
#[derive(Debug, Parser)]
#[command(
    name = "perftest",
    version,
    about = "STREAMS pipe benchmark (Linux Fast-STREAMS perftest): Linux pipes vs STREAMS pipes",
    long_about = "STREAMS pipe benchmark (Linux Fast-STREAMS perftest): Linux pipes vs STREAMS \
                  pipes.\n\nWithout a subcommand, one measurement: open one channel, fork a \
                  writer and a reader, and let the writer write SIZE-byte messages for the \
                  report intervals while the reader reads them. Every interval each child \
                  prints the LfS report line; the figure of merit is the writer's rate \
                  (writes/s). Options keep their LfS meaning, so perftest_script command lines \
                  work unchanged. Bad usage exits 2, a failed run 1.",
    args_conflicts_with_subcommands = true,
    args_override_self = true,
    disable_help_flag = true
)]
pub struct Perftest {
    /// Print help (-? as in LfS)
    #[arg(short = 'h', long, short_alias = '?', action = ArgAction::Help)]
    help: Option<bool>,
    /// The options of a single run.
    #[command(flatten)]
    pub run: RunArgs,
    /// `sweep` or `report`.
    #[command(subcommand)]
    pub sub: Option<Sub>,
}

/// perftest's subcommands.
#[derive(Debug, Subcommand)]
pub enum Sub {
    /// The perftest_script loop: every size, kind and repetition, one CSV row each
    Sweep(Box<SweepArgs>),
    /// Tables (report.md, results.json) and four gnuplot charts from sweep CSV files
    Report(ReportArgs),
}

/// The `perftest` command.
pub fn perftest() -> clap::Command {
    Perftest::command()
}

/// `scls`.
#[derive(Debug, Parser)]
#[command(
    name = "scls",
    version,
    about = "List the STREAMS modules and drivers and their statistics",
    long_about = "List the STREAMS modules and drivers and their statistics, as LfS scls -a -c \
                  -r did in perftest_script. Every file under /proc/streams/ is printed as the \
                  kernel writes it (with NAMEs: each file's first line and the lines naming \
                  them); without /proc/streams, the streams and strshim entries of \
                  /proc/modules and the character devices under /dev/streams/. Bad usage \
                  exits 2.",
    args_override_self = true,
    disable_help_flag = true
)]
pub struct Scls {
    /// Print help
    #[arg(short = 'h', long, short_alias = '?', action = ArgAction::Help)]
    help: Option<bool>,
    /// The options.
    #[command(flatten)]
    pub args: SclsArgs,
}

/// The `scls` command.
pub fn scls() -> clap::Command {
    Scls::command()
}
