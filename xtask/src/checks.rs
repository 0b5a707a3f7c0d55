//! Source consistency checks between the two builds of the core.
//!
//! - The kernel crate root (`rust/modules/streams.rs`) must mount exactly the modules that
//!   `rust/streams_core/src/lib.rs` declares, each from the file cargo uses (`m.rs` or
//!   `m/mod.rs`); otherwise the kernel would silently run different code than the host tests.
//! - Every `ktest_suite!` table in the sources must be registered in `rust/modules/suites.rs`,
//!   and the guest must report each with exactly its number of cases (see [`expected_suites`]).
//! - `streams.rs`'s `VERSION` must be the workspace version (logged at load and unload), and so
//!   must `dkms.conf`'s `PACKAGE_VERSION`.
//! - The production `streams.ko` carries no test code, and the test build does
//!   ([`check_builds`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::util::{self, Result};

/// A `ktest_suite!` invocation found in the sources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Declared {
    /// The static's name (`MSG_SUITE`).
    pub(crate) ident: String,
    /// The KUnit suite name (`streams_msg`).
    pub(crate) name: String,
    /// Number of cases.
    pub(crate) cases: usize,
    /// Only compiled with `--cfg rstreams_negative_control`.
    pub(crate) negative_control: bool,
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !s.starts_with(|c: char| c.is_ascii_digit())
}

/// Parse `ktest_suite!(IDENT, "name": a, b, c);` invocations out of Rust source text.
pub(crate) fn parse_suites(src: &str) -> Vec<Declared> {
    // Drop line comments (doc examples) first.
    let code: String = src
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("//") {
                ""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("ktest_suite!(") {
        rest = &rest[i + "ktest_suite!(".len()..];
        let Some(end) = rest.find(')') else { break };
        let body = &rest[..end];
        let Some((ident, after)) = body.split_once(',') else {
            continue;
        };
        let Some((name, cases)) = after.split_once(':') else {
            continue;
        };
        let (ident, name) = (ident.trim(), name.trim());
        if !(is_ident(ident) && name.len() >= 2 && name.starts_with('"') && name.ends_with('"')) {
            continue;
        }
        let cases: Vec<&str> = cases
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        if cases.is_empty() || !cases.iter().all(|c| is_ident(c)) {
            continue;
        }
        out.push(Declared {
            ident: ident.to_string(),
            name: name.trim_matches('"').to_string(),
            cases: cases.len(),
            negative_control: false,
        });
    }
    out
}

/// Every `ktest_suite!` in `rust/streams_core/src` and `rust/modules`.
pub(crate) fn declared_suites(root: &Path) -> Result<Vec<Declared>> {
    let mut out = Vec::new();
    for dir in ["rust/streams_core/src", "rust/modules"] {
        for f in util::walk(&root.join(dir)) {
            if f.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let negctl = f.file_name().is_some_and(|n| n == "negative_control.rs");
            for mut d in parse_suites(&util::read(&f)?) {
                d.negative_control = negctl;
                out.push(d);
            }
        }
    }
    Ok(out)
}

/// The suites (name -> cases) the guest must report, checking each is registered.
pub(crate) fn expected_suites(
    root: &Path,
    negative_control: bool,
) -> Result<BTreeMap<String, usize>> {
    let list = util::read(&root.join("rust/modules/suites.rs"))?;
    let listed: Vec<&str> = list
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with("//"))
        .collect();
    let mut out = BTreeMap::new();
    let mut unlisted = Vec::new();
    for d in declared_suites(root)? {
        if !listed
            .iter()
            .any(|l| l.contains(&format!("::{},", d.ident)))
        {
            unlisted.push(format!("{} ({})", d.ident, d.name));
        }
        if d.negative_control && !negative_control {
            continue;
        }
        if out.insert(d.name.clone(), d.cases).is_some() {
            return Err(format!("two ktest_suite! tables are named {:?}", d.name));
        }
    }
    if !unlisted.is_empty() {
        return Err(format!(
            "ktest_suite! table(s) not registered in rust/modules/suites.rs (the kernel would not run them): {}",
            unlisted.join(", ")
        ));
    }
    Ok(out)
}

/// `pub mod x;` names of a crate root.
fn pub_mods(src: &str) -> Vec<String> {
    src.lines()
        .filter_map(|l| l.trim().strip_prefix("pub mod "))
        .filter_map(|r| r.strip_suffix(';'))
        .map(|s| s.trim().to_string())
        .collect()
}

/// `(module, path)` pairs of `#[path = "…"] pub mod m;` in the kernel crate root.
fn mounted(src: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut path: Option<String> = None;
    for l in src.lines().map(str::trim) {
        if let Some(p) = l
            .strip_prefix("#[path = \"")
            .and_then(|p| p.strip_suffix("\"]"))
        {
            path = Some(p.to_string());
        } else if let Some(m) = l.strip_prefix("pub mod ").and_then(|m| m.strip_suffix(';')) {
            if let Some(p) = path.take() {
                out.push((m.trim().to_string(), p));
            }
        } else if !l.starts_with("#[") && !l.starts_with("//") {
            path = None;
        }
    }
    out
}

/// Check the kernel crate root against the cargo crate root and the version.
pub(crate) fn check_sources(root: &Path) -> Result<()> {
    let st =
        util::step("check: kernel crate mounts the core's modules; suites registered; version");
    let lib = util::read(&root.join("rust/streams_core/src/lib.rs"))?;
    let kroot_path = root.join("rust/modules/streams.rs");
    let kroot = util::read(&kroot_path)?;
    let mut problems = Vec::new();
    let mounts = mounted(&kroot);
    for m in pub_mods(&lib) {
        let file = if root
            .join(format!("rust/streams_core/src/{m}/mod.rs"))
            .exists()
        {
            format!("../streams_core/src/{m}/mod.rs")
        } else {
            format!("../streams_core/src/{m}.rs")
        };
        match mounts.iter().find(|(n, _)| *n == m) {
            None => problems.push(format!("rust/modules/streams.rs does not mount `{m}`: add #[path = \"{file}\"] pub mod {m};")),
            Some((_, p)) if *p != file => problems.push(format!("`{m}` is mounted from {p}, cargo uses {file}")),
            _ => {}
        }
    }
    for (m, p) in &mounts {
        if p.starts_with("../streams_core/") && !pub_mods(&lib).contains(m) {
            problems.push(format!(
                "rust/modules/streams.rs mounts `{m}` ({p}) which lib.rs does not declare"
            ));
        }
    }
    let ws = util::read(&root.join("Cargo.toml"))?;
    let ws_version = ws
        .lines()
        .skip_while(|l| l.trim() != "[workspace.package]")
        .find_map(|l| {
            l.trim()
                .strip_prefix("version = \"")
                .and_then(|v| v.strip_suffix('"'))
        });
    let k_version = kroot.lines().find_map(|l| {
        l.trim()
            .strip_prefix("pub const VERSION: &str = \"")
            .and_then(|v| v.strip_suffix("\";"))
    });
    if ws_version.is_none() || ws_version != k_version {
        problems.push(format!(
            "version mismatch: workspace {ws_version:?}, rust/modules/streams.rs {k_version:?}"
        ));
    }
    // DKMS names the installed source tree and its modules by this version.
    let dkms = util::read(&root.join("dkms.conf"))?;
    let dkms_version = dkms.lines().find_map(|l| {
        l.trim()
            .strip_prefix("PACKAGE_VERSION=\"")
            .and_then(|v| v.strip_suffix('"'))
    });
    if ws_version.is_none() || ws_version != dkms_version {
        problems.push(format!(
            "version mismatch: workspace {ws_version:?}, dkms.conf PACKAGE_VERSION {dkms_version:?}"
        ));
    }
    if let Err(e) = expected_suites(root, true) {
        problems.push(e);
    }
    if !problems.is_empty() {
        return Err(format!(
            "source checks failed:\n  {}",
            problems.join("\n  ")
        ));
    }
    st.done_with(&format!("{} modules mounted", mounts.len()));
    Ok(())
}

/// Test-only code, as fragments of symbol names (`nm`, defined and undefined): `(what, fragment)`.
/// Rust symbols are mangled; a path segment `x` is spelled `<len>x` in both the v0 scheme the
/// kernel uses and the legacy one, so `7streams5sloop` is the crate `streams`, module `sloop`,
/// whatever follows. The production `streams.ko` must match none of them, and the test build
/// must match each (so a fragment that stopped matching anything is noticed).
pub(crate) const TEST_SYMBOLS: &[(&str, &str)] = &[
    ("KUnit API (__kunit_test_suites_init, kunit_*)", "kunit_"),
    ("KUnit glue", "7streams10kunit_glue"),
    ("glue self-test suite", "7streams8selftest"),
    ("test build part", "7streams9testbuild"),
    ("sloop test driver", "7streams5sloop"),
    ("echo test driver", "7streams4echo"),
    ("nuls test driver", "7streams4nuls"),
    ("mux test driver (core mods::mux)", "7streams4mods3mux"),
    ("loop/spx test driver", "7streams4mods7loopdrv"),
    ("any `tests` module of the core", "5tests"),
    (
        "test modules (stream::testmods)",
        "7streams6stream8testmods",
    ),
    ("stats tests", "7streams6stream11stats_tests"),
    ("fault injection (sys::fault)", "7streams3sys5fault"),
    ("fault injection hook", "should_fail"),
    ("test buffers", "leak_zeroed"),
    ("test buffers", "release_kept"),
];

/// Test-only strings in the module file (what `strings`/`modinfo` would show), matched as whole
/// tokens: the test drivers' device nodes and misc device names. The KUnit suite names (every
/// `ktest_suite!`) are added by [`check_builds`].
const TEST_STRINGS: &[&str] = &[
    "streams/clone/sloop",
    "streams/clone/echo",
    "streams/clone/nuls",
    "streams/clone/mux",
    "streams/clone/loop",
    "streams/clone/spx",
    "streams-sloop",
    "streams-echo",
    "streams-nuls",
    "streams-mux",
    "streams-loop",
    "streams-spx",
];

/// Every symbol name in `ko` (`nm`, not demangled).
fn symbols(ko: &Path) -> Result<Vec<String>> {
    let out = Command::new("nm")
        .arg(ko)
        .output()
        .map_err(|e| format!("cannot run nm (apt-get install binutils): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "nm {} failed: {}",
            ko.display(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last())
        .map(str::to_string)
        .collect())
}

/// How often `token` occurs in `text` as a whole token: not preceded or followed by a letter,
/// digit or `_` (so `streams_stream` does not match the lock class name `rstreams_stream`, nor
/// `streams_sth` the start of `streams_sth_ctl`).
fn count_token(text: &str, token: &str) -> usize {
    let word = |b: Option<&u8>| b.is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_');
    let b = text.as_bytes();
    text.match_indices(token)
        .filter(|(i, _)| {
            !word(i.checked_sub(1).and_then(|j| b.get(j))) && !word(b.get(i + token.len()))
        })
        .count()
}

/// How often each test-only pattern occurs in one module file: `(pattern, count, an example)`,
/// first the symbol fragments of [`TEST_SYMBOLS`], then `strings` (searched in the whole file).
fn test_code_in(ko: &Path, strings: &[String]) -> Result<Vec<(String, usize, String)>> {
    let syms = symbols(ko)?;
    let bytes = std::fs::read(ko).map_err(|e| format!("{}: {e}", ko.display()))?;
    let text = String::from_utf8_lossy(&bytes);
    let mut out = Vec::new();
    for (what, frag) in TEST_SYMBOLS {
        let hits: Vec<&String> = syms.iter().filter(|s| s.contains(frag)).collect();
        let example = hits.first().map_or(String::new(), |s| s.to_string());
        out.push((format!("symbol *{frag}* ({what})"), hits.len(), example));
    }
    for st in strings {
        out.push((
            format!("string {st:?}"),
            count_token(&text, st),
            String::new(),
        ));
    }
    Ok(out)
}

/// The production `streams.ko` (`prod`) must carry no test code and the test build (`test`)
/// must carry all of it: symbol fragments ([`TEST_SYMBOLS`]), the test devices' names and every
/// KUnit suite name ([`TEST_STRINGS`], [`declared_suites`]). Prints one line per pattern.
pub(crate) fn check_builds(root: &Path, prod: &Path, test: &Path) -> Result<()> {
    let st = util::step(format!(
        "check: production streams.ko has no test code (nm + strings of {} vs {})",
        prod.display(),
        test.display()
    ));
    let mut strings: Vec<String> = TEST_STRINGS.iter().map(|s| s.to_string()).collect();
    for d in declared_suites(root)? {
        if !d.negative_control {
            strings.push(d.name);
        }
    }
    let in_prod = test_code_in(prod, &strings)?;
    let in_test = test_code_in(test, &strings)?;
    let mut problems = Vec::new();
    for ((what, n_prod, ex_prod), (_, n_test, ex_test)) in in_prod.iter().zip(&in_test) {
        let example = if ex_prod.is_empty() { ex_test } else { ex_prod };
        println!("    production {n_prod:>4}  test {n_test:>4}  {what}  {example}");
        if *n_prod != 0 {
            problems.push(format!(
                "the production streams.ko has test code: {what}: {ex_prod}"
            ));
        }
        if *n_test == 0 {
            problems.push(format!(
                "the test build of streams.ko has no {what}: the check no longer sees that code (fix xtask/src/checks.rs)"
            ));
        }
    }
    if !problems.is_empty() {
        return Err(format!("build checks failed:\n  {}", problems.join("\n  ")));
    }
    st.done_with(&format!(
        "production: none of {} patterns; test build: all",
        in_prod.len()
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_whole() {
        let b = "\0rstreams_stream\0streams_sth_ctl\0streams_sth\0streams/clone/mux";
        assert_eq!(count_token(b, "streams_stream"), 0);
        assert_eq!(count_token(b, "streams_sth"), 1);
        assert_eq!(count_token(b, "streams_sth_ctl"), 1);
        assert_eq!(count_token(b, "streams/clone/mux"), 1);
        assert_eq!(count_token("x", "streams"), 0);
    }

    #[test]
    fn parses_suite_tables() {
        let src = r#"
//! ```ignore
//! ktest_suite!(QUEUE_CASES: putq_counts_bytes);
//! ```
macro_rules! ktest_suite { ($suite:ident, $kname:literal : $($case:ident),+ $(,)?) => {} }
ktest_suite!(MSG_SUITE, "streams_msg": a, b_c,
    d,);
"#;
        let d = parse_suites(src);
        assert_eq!(d.len(), 1);
        assert_eq!(
            (d[0].ident.as_str(), d[0].name.as_str(), d[0].cases),
            ("MSG_SUITE", "streams_msg", 3)
        );
    }

    #[test]
    fn repository_is_consistent() {
        check_sources(&util::repo_root()).unwrap();
    }

    #[test]
    fn mounts_are_read() {
        let m = mounted("#[allow(x)]\n#[path = \"../streams_core/src/sys.rs\"]\npub mod sys;\npub mod selftest;\n");
        assert_eq!(
            m,
            vec![("sys".to_string(), "../streams_core/src/sys.rs".to_string())]
        );
    }
}
