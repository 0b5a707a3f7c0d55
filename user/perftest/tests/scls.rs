//! scls: option parsing and the listing, on fake /proc and /dev trees.

use perftest::scls::{list, parse, reset, Roots, SclsOpts};
use std::path::PathBuf;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn options() {
    let o = parse(&args("-a -c -r")).unwrap().unwrap();
    assert!(o.all && o.count && o.reset && !o.long);
    assert!(o.names.is_empty());
    let o = parse(&args("-lc pipe pipemod")).unwrap().unwrap();
    assert!(o.long && o.count && !o.all);
    assert_eq!(o.names, vec!["pipe", "pipemod"]);
    // No names: everything.
    assert!(parse(&args("")).unwrap().unwrap().all);
    assert!(parse(&args("--long --count")).unwrap().unwrap().long);
    assert_eq!(parse(&args("-h")).unwrap(), None);
    assert_eq!(parse(&args("--help")).unwrap(), None);
    assert!(parse(&args("-x")).is_err());
    assert!(parse(&args("--bogus")).is_err());
}

#[test]
fn prints_proc_streams_files() {
    let d = tmp("scls_proc");
    let ps = d.join("proc_streams");
    std::fs::create_dir_all(ps.join("modules")).unwrap();
    std::fs::write(
        ps.join("modules/stats"),
        "name puts srvs\nnullmod 10 2\npipemod 5 1\n",
    )
    .unwrap();
    std::fs::write(ps.join("drivers"), "name opens\nsloop 3\n").unwrap();
    let r = Roots {
        proc_streams: ps,
        dev_streams: d.join("nodev"),
        proc_modules: d.join("nomodules"),
    };
    let (text, found) = list(&parse(&args("-a")).unwrap().unwrap(), &r);
    assert!(found);
    assert!(
        text.contains("==> drivers <==\nname opens\nsloop 3\n"),
        "{text}"
    );
    assert!(
        text.contains("==> modules/stats <==\nname puts srvs\nnullmod 10 2\npipemod 5 1\n"),
        "{text}"
    );
    // With names: the header line of each file and the lines naming them.
    let (text, _) = list(&parse(&args("nullmod")).unwrap().unwrap(), &r);
    assert!(text.contains("name puts srvs\nnullmod 10 2\n"), "{text}");
    assert!(!text.contains("pipemod"), "{text}");
    assert!(!text.contains("sloop"), "{text}");
}

#[test]
fn falls_back_to_modules_and_devices() {
    let d = tmp("scls_fallback");
    std::fs::write(
        d.join("modules"),
        "streams 536576 0 - Live 0xffffffffa0008000 (O)\n\
         strshim 12288 1 streams, Live 0xffffffffa0000000 (O)\n\
         e1000 100 0 - Live 0x0\n",
    )
    .unwrap();
    let r = Roots {
        proc_streams: d.join("no_proc_streams"),
        dev_streams: d.join("dev_streams"),
        proc_modules: d.join("modules"),
    };
    let o = SclsOpts {
        long: true,
        count: true,
        ..parse(&args("-a")).unwrap().unwrap()
    };
    let (text, found) = list(&o, &r);
    assert!(!found);
    assert!(text.starts_with("no "), "{text}");
    assert!(
        text.contains("  streams          size   536576  refs   0"),
        "{text}"
    );
    assert!(text.contains("  strshim "), "{text}");
    assert!(!text.contains("e1000"), "{text}");
    assert!(text.contains("(no devices under"), "{text}");
    assert!(text.contains("statistics: not available"), "{text}");
    assert!(reset(&r).is_err());
}

#[test]
fn lists_real_char_devices() {
    // /dev/null is a character device on every Linux: use /dev as the device tree.
    let r = Roots {
        proc_streams: "/nonexistent/proc_streams".into(),
        dev_streams: "/dev".into(),
        proc_modules: "/nonexistent/modules".into(),
    };
    let (text, _) = list(&parse(&args("-l null")).unwrap().unwrap(), &r);
    assert!(text.contains("null             /dev/null"), "{text}");
    assert!(text.contains("c 1:3"), "{text}");
    assert!(text.contains("(none loaded)"), "{text}");
}
