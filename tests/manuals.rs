//! `fsbench completions` and `fsbench man` through the binary: the scripts and pages come from
//! the parser's own definitions, and a shell or page that does not exist is one line, exit 2.

mod common;
use common::Sandbox;

fn stdout_of(sb: &Sandbox, args: &[&str]) -> String {
    let o = sb.cmd(args).output().unwrap();
    assert!(
        o.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn bash_completion_names_every_subcommand_and_run_s_options() {
    let sb = Sandbox::new();
    let script = stdout_of(&sb, &["completions", "bash"]);
    assert!(script.contains("complete -F _fsbench"), "{script}");
    for sub in [
        "quick",
        "run",
        "sweep",
        "workload",
        "fscompare",
        "verify",
        "man",
    ] {
        assert!(script.contains(sub), "bash completion lacks {sub}");
    }
    assert!(script.contains("--rw"), "run's options are completed");
    assert!(
        !script.contains("__worker"),
        "the hidden worker command is not offered"
    );
}

#[test]
fn zsh_and_fish_scripts_are_their_shell_s_syntax() {
    let sb = Sandbox::new();
    let zsh = stdout_of(&sb, &["completions", "zsh"]);
    assert!(
        zsh.starts_with("#compdef fsbench"),
        "{}",
        &zsh[..zsh.len().min(200)]
    );
    let fish = stdout_of(&sb, &["completions", "fish"]);
    assert!(fish.contains("complete -c fsbench"), "{fish}");
}

#[test]
fn man_pages_are_roff_for_fsbench_and_each_subcommand() {
    let sb = Sandbox::new();
    let top = stdout_of(&sb, &["man"]);
    assert!(top.contains(".TH fsbench 1"), "{top}");
    assert!(
        top.contains(".SH SUBCOMMANDS") || top.contains("fsbench\\-run"),
        "{top}"
    );
    let run = stdout_of(&sb, &["man", "run"]);
    assert!(run.contains(".TH fsbench-run 1"), "{run}");
    assert!(run.contains("\\-\\-rw"), "run's page lists its options");
}

#[test]
fn an_unknown_shell_or_page_is_one_line_and_exit_2() {
    let sb = Sandbox::new();
    for args in [
        &["completions", "tcsh"][..],
        &["man", "nope"][..],
        &["man", "__worker"][..],
    ] {
        let o = sb.cmd(args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(o.stdout.is_empty(), "{args:?} printed to stdout");
    }
}
