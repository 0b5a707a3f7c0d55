//! scls(8) for rstreams: list the STREAMS modules and drivers and their statistics. See
//! `perftest::scls` and docs/perftest.md.

use perftest::scls::{self, Roots};
use std::process::exit;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let o = match scls::parse(&args) {
        Ok(Some(o)) => o,
        Ok(None) => {
            print!("{}", scls::USAGE);
            return;
        }
        Err(e) => {
            eprintln!("scls: {e}\n{}", scls::USAGE);
            exit(2)
        }
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
