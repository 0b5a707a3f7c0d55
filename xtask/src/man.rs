//! The manual pages: `cargo xtask man` and the host check of `cargo xtask test`.
//!
//! Each page has one source. perftest(8), its subcommands' pages and scls(8) are rendered by
//! clap_mangen from the clap commands the programs parse with (`perftest::cli`), so options,
//! defaults and help text cannot drift from the code. The pages about the kernel interface and
//! the C library (streamio(7), putmsg(2), getmsg(2), isastream(3), fattach(3), fdetach(3),
//! libstreams_pipe(7), the XTI t_*(3)) are written by hand in `docs/man/` (man(7) macros): they describe
//! behaviour that no argument definition holds.
//!
//! Everything lands in `target/man/` (the packages install from there), and every page must
//! pass `mandoc -T lint -W warning` without a single message.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, Result};

/// The SEE ALSO section of the generated pages (roff).
const SEE_ALSO: &str = "\
.SH \"SEE ALSO\"
.BR perftest (8),
.BR scls (8),
.BR streamio (7),
.BR libstreams_pipe (7)
";

/// The date on the generated pages: the last commit's (so a rebuild gives the same page), or
/// a fixed one outside a git checkout.
fn page_date(root: &Path) -> String {
    util::try_output(
        Command::new("git")
            .current_dir(root)
            .args(["log", "-1", "--format=%cs"]),
    )
    .map(|d| d.trim().to_string())
    .filter(|d| d.len() == 10)
    .unwrap_or_else(|| "2026-01-01".into())
}

/// The generated pages: (file name, roff text).
pub(crate) fn generated(root: &Path) -> Result<Vec<(String, String)>> {
    let version = env!("CARGO_PKG_VERSION");
    let date = page_date(root);
    let render = |cmd: clap::Command, file: &str| -> Result<(String, String)> {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd)
            .section("8")
            .date(date.clone())
            .source(format!("rstreams {version}"))
            .manual("System Manager's Manual")
            .render(&mut page)
            .map_err(|e| format!("rendering {file}: {e}"))?;
        page.extend_from_slice(SEE_ALSO.as_bytes());
        let text = String::from_utf8(page).map_err(|e| format!("{file}: {e}"))?;
        Ok((file.to_string(), text))
    };
    let perftest = perftest::cli::perftest();
    let mut pages = vec![render(perftest.clone(), "perftest.8")?];
    for sub in perftest.get_subcommands() {
        let name = format!("perftest-{}", sub.get_name());
        // Standalone, as `perftest SUB`; its -h/--help is its own argument (the parent's
        // disable_help_flag reaches subcommands only when built under the parent).
        let cmd = sub
            .clone()
            .name(name.clone())
            .bin_name(format!("perftest {}", sub.get_name()))
            .disable_help_flag(true);
        pages.push(render(cmd, &format!("{name}.8"))?);
    }
    pages.push(render(perftest::cli::scls(), "scls.8")?);
    Ok(pages)
}

/// The hand-written pages in `docs/man/`.
pub(crate) fn written(root: &Path) -> Result<Vec<PathBuf>> {
    let dir = root.join("docs/man");
    let mut pages: Vec<PathBuf> = util::walk(&dir)
        .into_iter()
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.len() == 1 && e.chars().all(|c| c.is_ascii_digit()))
        })
        .collect();
    pages.sort();
    if pages.is_empty() {
        return Err(format!("no manual pages in {}", dir.display()));
    }
    Ok(pages)
}

/// The names a page documents: its NAME line up to `\-` (`t_open, t_close \- ...` gives
/// `t_open` and `t_close`). The packages install a link for each name but the page's own.
pub(crate) fn names(page: &str) -> Vec<String> {
    let mut lines = page.lines().skip_while(|l| !l.starts_with(".SH NAME"));
    let Some(line) = lines.nth(1) else {
        return Vec::new();
    };
    let Some((list, _)) = line.split_once("\\-") else {
        return Vec::new();
    };
    list.split(',')
        .map(|n| n.trim().to_string())
        .filter(|n| !n.is_empty())
        .collect()
}

/// Write every page into `target/man/` (generated ones rendered, written ones copied) and lint
/// them all; returns their paths.
pub(crate) fn build(root: &Path) -> Result<Vec<PathBuf>> {
    let out = root.join("target/man");
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let mut pages = Vec::new();
    for (file, text) in generated(root)? {
        let p = out.join(file);
        util::write_atomic(&p, text.as_bytes())?;
        pages.push(p);
    }
    for src in written(root)? {
        let name = src.file_name().ok_or("a page without a file name")?;
        let p = out.join(name);
        util::sync_file(&src, &p)?;
        pages.push(p);
    }
    lint(&pages)?;
    Ok(pages)
}

/// `mandoc -T lint -W warning` on every page: any message (warning, error, unsupported) fails.
pub(crate) fn lint(pages: &[PathBuf]) -> Result<()> {
    let out = Command::new("mandoc")
        .args(["-T", "lint", "-W", "warning"])
        .args(pages)
        .output()
        .map_err(|e| format!("cannot run mandoc (apt-get install mandoc): {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() || !text.trim().is_empty() {
        return Err(format!(
            "mandoc -T lint found problems in the manual pages:\n{}",
            text.trim_end()
        ));
    }
    Ok(())
}

/// `cargo xtask man`.
pub(crate) fn cmd() -> Result<()> {
    let st = util::step("manual pages into target/man/ (mandoc -T lint)");
    let pages = build(&util::repo_root())?;
    st.done_with(&format!("{} pages, lint clean", pages.len()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_the_name_line_before_the_dash() {
        let page = ".TH T_OPEN 3\n.SH NAME\nt_open, t_close \\- open an endpoint\n.SH X\n";
        assert_eq!(names(page), ["t_open", "t_close"]);
        assert_eq!(names(".SH NAME\nisastream \\- test\n"), ["isastream"]);
        assert!(names(".TH X 3\n").is_empty());
        // Every written t_*(3) page names itself first (its links point at it).
        for p in written(&util::repo_root()).unwrap() {
            let file = p.file_name().unwrap().to_str().unwrap();
            if file.starts_with("t_") {
                let n = names(&std::fs::read_to_string(&p).unwrap());
                assert_eq!(
                    n.first().map(String::as_str),
                    file.strip_suffix(".3"),
                    "{file}"
                );
            }
        }
    }

    #[test]
    fn generated_pages_come_from_the_clap_definitions() {
        let pages = generated(&util::repo_root()).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "perftest.8",
                "perftest-sweep.8",
                "perftest-report.8",
                "scls.8"
            ]
        );
        let page = |n: &str| &pages.iter().find(|(f, _)| f == n).unwrap().1;
        assert!(page("perftest.8").starts_with(".ie"), "roff");
        assert!(page("perftest.8").contains(".TH perftest 8 "));
        // Options with their LfS spellings and help text, from perftest::cli.
        assert!(page("perftest.8").contains("\\fB\\-\\-hiwat\\fR"));
        assert!(page("perftest.8").contains("Stream head read queue high water mark"));
        assert!(page("perftest-sweep.8").contains("\\fB\\-\\-kinds\\fR"));
        assert!(page("scls.8").contains("\\fB\\-\\-reset\\fR"));
        assert!(pages.iter().all(|(_, t)| t.contains(".SH \"SEE ALSO\"")));
    }
}
