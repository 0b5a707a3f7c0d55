//! scls(8) for rstreams: list the STREAMS modules and drivers and their statistics. See
//! `perftest::scls` and docs/perftest.md.

use clap::FromArgMatches;
use perftest::cli::{self, Scls};
use perftest::scls::{self, Roots, SclsOpts};
use std::process::exit;

fn main() {
    // clap prints help and version (exit 0) and usage errors (exit 2) itself.
    let m = cli::scls().get_matches();
    let o: SclsOpts = match Scls::from_arg_matches(&m) {
        Ok(s) => s.args.into(),
        Err(e) => e.exit(),
    };
    let roots = Roots::default();
    let (text, _) = scls::list(&o, &roots);
    print!("{text}");
    if o.reset {
        if let Err(e) = scls::reset(&roots) {
            eprintln!("scls: {e}");
            exit(1)
        }
    }
}
