//! Source consistency checks between the two builds of the core.
//!
//! - The kernel crate root (`rust/modules/streams.rs`) must mount exactly the modules that
//!   `rust/streams_core/src/lib.rs` declares, each from the file cargo uses (`m.rs` or
//!   `m/mod.rs`); otherwise the kernel would silently run different code than the host tests.
//! - Every `ktest_suite!` table in the sources must be registered in `rust/modules/suites.rs`,
//!   and the guest must report each with exactly its number of cases (see [`expected_suites`]).
//! - `streams.rs`'s `VERSION` must be the workspace version (logged at load and unload).

use std::collections::BTreeMap;
use std::path::Path;

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

#[cfg(test)]
mod tests {
    use super::*;

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
