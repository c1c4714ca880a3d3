//! The user documentation stays a guide and stays true: README.md is short and keeps the test
//! command CI runs; no document cites an issue number, a work session or a CI run; every
//! relative link points to a file that exists; and every figure in docs/performance.md links
//! the raw run it comes from under bench/results/.
//!
//! The performance convention: every table row and every paragraph of docs/performance.md
//! that states a figure (a ratio such as `1.076` or `1.37x`) carries a link to
//! `../bench/results/FILE`, and each such file is committed.

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, CHANGELOG.md, tests/README.md and every docs/*.md.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = ["README.md", "CHANGELOG.md", "tests/README.md"]
        .iter()
        .map(|p| root().join(p))
        .filter(|p| p.exists())
        .collect();
    for e in std::fs::read_dir(root().join("docs")).unwrap().flatten() {
        if e.path().extension().is_some_and(|x| x == "md") {
            docs.push(e.path());
        }
    }
    docs.sort();
    docs
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// What in `line` reads as development talk: an issue number (`#15`, not `#[ignore]` or a
/// colour such as `#1f77b4`), a work session, or a CI run's result line.
fn development_talk(line: &str) -> Option<String> {
    let b = line.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if c != b'#' {
            continue;
        }
        let before_ok = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'&');
        let digits = b[i + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
        let after = b.get(i + 1 + digits).copied().unwrap_or(b' ');
        if before_ok && digits > 0 && !after.is_ascii_alphanumeric() {
            return Some(format!("issue number {}", &line[i..i + 1 + digits]));
        }
    }
    let lower = line.to_ascii_lowercase();
    let lb = lower.as_bytes();
    for word in ["session", "fresh-clone", "ci run", "last ci"] {
        let mut from = 0;
        while let Some(k) = lower[from..].find(word) {
            let i = from + k;
            let end = i + word.len();
            let starts_word = i == 0 || !lb[i - 1].is_ascii_alphanumeric();
            // "session" and "sessions" are the word; "CI runs" (what CI runs) is not a run.
            let ends_word = end == lb.len()
                || !lb[end].is_ascii_alphanumeric()
                || (word == "session" && lb[end] == b's');
            if starts_word && ends_word {
                return Some(format!("'{word}'"));
            }
            from = end;
        }
    }
    // A test runner's closing count, as a CI line quotes it: "726 passed".
    let words: Vec<&str> = lower.split_whitespace().collect();
    for w in words.windows(2) {
        let n = w[0].trim_start_matches(['(', '[', ':']);
        if !n.is_empty() && n.bytes().all(|d| d.is_ascii_digit()) && w[1].starts_with("passed") {
            return Some(format!("a test count '{} {}'", w[0], w[1]));
        }
    }
    None
}

/// The targets of the Markdown links `[text](target)` in `text`.
fn link_targets(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("](") {
        rest = &rest[i + 2..];
        let end = rest.find(')').unwrap_or(rest.len());
        let target = rest[..end].trim();
        if !target.is_empty() && !target.contains(char::is_whitespace) {
            out.push(target.to_string());
        }
        rest = &rest[end..];
    }
    out
}

/// Relative link targets of `doc` (in `text`) that name no existing file or directory.
fn missing_links(doc: &Path, text: &str) -> Vec<String> {
    let dir = doc.parent().unwrap();
    link_targets(text)
        .into_iter()
        .filter(|t| !t.starts_with('#') && !t.contains("://") && !t.starts_with("mailto:"))
        .filter(|t| {
            let path = t.split('#').next().unwrap();
            !dir.join(path).exists()
        })
        .collect()
}

/// Does this text state a performance figure: a ratio such as `1.076`, `0.95` or `1.37x`
/// (0 to 2 before the point, two or more digits after it, or any `N.Nx`)? Versions such as
/// `6.18.44` or `3.33` are not ratios.
fn states_a_figure(text: &str) -> bool {
    let b = text.as_bytes();
    for i in 0..b.len() {
        let starts = i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'.');
        if !starts || !b[i].is_ascii_digit() {
            continue;
        }
        let int = b[i..].iter().take_while(|d| d.is_ascii_digit()).count();
        let j = i + int;
        if int == 1 && b.get(j) == Some(&b'.') {
            let frac = b[j + 1..].iter().take_while(|d| d.is_ascii_digit()).count();
            let next = b.get(j + 1 + frac).copied().unwrap_or(b' ');
            let version = next == b'.' && b.get(j + 2 + frac).is_some_and(u8::is_ascii_digit);
            let ratio_range = b[i] <= b'2';
            if frac >= 1 && next == b'x' {
                return true;
            }
            if frac >= 2 && ratio_range && !version {
                return true;
            }
        }
    }
    false
}

/// Table rows and paragraphs of a performance page that state a figure without linking a raw
/// file under bench/results/, and linked raw files that do not exist.
fn unsourced_figures(page: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut in_code = false;
    let mut paragraph = String::new();
    let check_paragraph = |p: &mut String, problems: &mut Vec<String>| {
        if states_a_figure(p) && !p.contains("bench/results/") {
            problems.push(format!("figure without a raw run: {}", p.trim()));
        }
        p.clear();
    };
    let lines: Vec<&str> = text.lines().collect();
    for (n, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if in_code {
            continue;
        }
        let is_row = line.trim_start().starts_with('|');
        let is_separator = is_row && line.chars().all(|c| "|-: ".contains(c));
        let is_header = is_row
            && lines.get(n + 1).is_some_and(|next| {
                next.trim_start().starts_with("|-") || next.trim_start().starts_with("|:")
            });
        if is_row {
            check_paragraph(&mut paragraph, &mut problems);
            if !is_separator && !is_header && !line.contains("bench/results/") {
                problems.push(format!("table row without a raw run: {line}"));
            }
        } else if line.trim().is_empty() || line.starts_with('#') {
            check_paragraph(&mut paragraph, &mut problems);
        } else {
            paragraph.push_str(line);
            paragraph.push('\n');
        }
    }
    check_paragraph(&mut paragraph, &mut problems);
    let dir = page.parent().unwrap();
    for t in link_targets(text) {
        if t.contains("bench/results/") && !dir.join(t.split('#').next().unwrap()).exists() {
            problems.push(format!("raw run {t} is not committed"));
        }
    }
    problems
}

#[test]
fn readme_is_a_guide_of_at_most_400_lines_with_the_ci_test_command() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines; reference belongs in docs/"
    );
    assert!(
        readme.contains("cargo test --release -- --test-threads=2"),
        "README.md must keep the test command CI runs"
    );
}

#[test]
fn no_document_cites_an_issue_a_session_or_a_ci_run() {
    let mut found = Vec::new();
    for doc in documents() {
        for (n, line) in read(&doc).lines().enumerate() {
            if let Some(what) = development_talk(line) {
                found.push(format!("{}:{}: {what}", doc.display(), n + 1));
            }
        }
    }
    assert!(
        found.is_empty(),
        "development talk in the docs:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_relative_link_points_to_an_existing_file() {
    let mut broken = Vec::new();
    for doc in documents() {
        for t in missing_links(&doc, &read(&doc)) {
            broken.push(format!("{}: {t}", doc.display()));
        }
    }
    assert!(
        broken.is_empty(),
        "links to missing files:\n{}",
        broken.join("\n")
    );
}

#[test]
fn every_performance_figure_links_its_committed_raw_run() {
    let page = root().join("docs/performance.md");
    let problems = unsourced_figures(&page, &read(&page));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The checkers themselves: each catches what it is for and passes what it is not.
#[test]
fn the_checkers_catch_what_they_are_for() {
    assert!(development_talk("#15 stays open on that").is_some());
    assert!(development_talk("see issue #7.").is_some());
    assert!(development_talk("measured in session 16").is_some());
    assert!(development_talk("Last fresh-clone `.ci/run`: 726 passed").is_some());
    assert!(development_talk("(726 passed, 0 failed)").is_some());
    assert!(development_talk("what CI runs; exit 1 failed run").is_none());
    assert!(development_talk("`#[ignore]` by design; colour #1f77b4; &#160;").is_none());
    assert!(development_talk("## Heading 2").is_none());

    let docs = root().join("docs");
    let page = docs.join("performance.md");
    assert_eq!(
        missing_links(
            &page,
            "[a](no-such-page.md) [b](README.md) [c](#x) [d](https://x.org/y)"
        ),
        ["no-such-page.md"]
    );

    assert!(states_a_figure("a ratio of 1.076 over 120 pairs"));
    assert!(states_a_figure("fsbench does 1.4x fio"));
    assert!(!states_a_figure(
        "Linux 6.18.44, fio 3.33, 2 cores, 4 KiB, 1.5 us"
    ));
    assert!(!states_a_figure("kernel 2.6.32"));
    let unsourced =
        "Intro.\n\nfsbench is 1.37x fio.\n\n| case | ratio |\n|---|---|\n| hot | 1.366 |\n";
    assert_eq!(
        unsourced_figures(&page, unsourced).len(),
        2,
        "a bare paragraph and a bare row"
    );
    let sourced = "fsbench is 1.37x fio ([raw](../bench/results/vs-fio-2026-11-23-inline.md)).\n\n| case | ratio | raw |\n|---|---|---|\n| hot | 1.366 | [r](../bench/results/vs-fio-2026-11-23-inline.md) |\n";
    assert!(unsourced_figures(&page, sourced).is_empty());
    let uncommitted = "1.50x ([raw](../bench/results/not-committed.txt))\n";
    assert_eq!(unsourced_figures(&page, uncommitted).len(), 1);
}
