//! Text tables fit the terminal (issue #14): on a pty 60 columns wide (util-linux `script`,
//! `COLUMNS=60`) the sweep table of `report`, the `compare` table, the workload table and the
//! latency lines of `run` are no wider than 60 and still carry every value; the same commands
//! piped print one line per row, as before.
mod common;

use common::{words, Sandbox};

/// `fsbench ARGS` on a pseudo-terminal with `COLUMNS=60`: what the screen got, `\r\n` made
/// `\n`.
fn on_a_60_column_pty(sb: &Sandbox, args: &str) -> String {
    let bin = assert_cmd::cargo::cargo_bin("fsbench");
    let cmd = format!("{} {args}", bin.display());
    let out = std::process::Command::new("script")
        .args(["-qefc", &cmd, "/dev/null"])
        .current_dir(sb.path())
        .env("TERM", "dumb")
        .env("COLUMNS", "60")
        .output()
        .expect("script(1) from util-linux");
    let screen = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    assert!(out.status.success(), "{screen}");
    screen
}

/// `fsbench ARGS` with stdout a pipe (COLUMNS set as well: a pipe has no width whatever it says).
fn piped(sb: &Sandbox, args: &str) -> String {
    let out = sb.cmd(&words(args)).env("COLUMNS", "60").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn too_wide(text: &str, width: usize) -> Vec<&str> {
    text.lines().filter(|l| l.chars().count() > width).collect()
}

/// A stored sweep whose table is 148 characters wide: 2 block sizes x 2 cache policies x 4
/// metrics.
fn stored_sweep(sb: &Sandbox) -> String {
    piped(
        sb,
        "sweep --rw write --bs 4k,8k --cache buffered,direct --size 128k f --output res",
    )
}

/// The figures of each row of a table, by the row's first word, in the order printed (rows
/// split over blocks are joined in block order): the numbers, without their units and the
/// row's markers, which each block repeats.
fn figures_by_row(text: &str, labels: &[&str]) -> Vec<Vec<String>> {
    labels
        .iter()
        .map(|l| {
            text.lines()
                .filter(|line| line.split_whitespace().next() == Some(l))
                .flat_map(|line| {
                    line.split_whitespace()
                        .skip(1)
                        .filter(|w| w.starts_with(|c: char| c.is_ascii_digit()))
                        .map(String::from)
                })
                .collect()
        })
        .collect()
}

#[test]
fn a_sweep_table_is_pivoted_on_a_narrow_terminal_and_whole_in_a_pipe() {
    let sb = Sandbox::new();
    let swept = stored_sweep(&sb);
    let whole = piped(&sb, "report res");
    // Piped: the head and each row on one line each, wider than the terminal would be.
    let head = whole
        .lines()
        .find(|l| l.starts_with("block size"))
        .expect("table head");
    assert!(head.chars().count() > 100, "{whole}");
    assert_eq!(whole.matches("block size").count(), 1, "{whole}");
    let rows = figures_by_row(&whole, &["4k", "8k"]);
    assert!(rows.iter().all(|r| r.len() == 8), "{rows:?}\n{whole}");
    assert!(
        swept.contains(head),
        "sweep and report print the same table:\n{swept}"
    );

    let screen = on_a_60_column_pty(&sb, "report res");
    assert!(too_wide(&screen, 60).is_empty(), "{screen}");
    // Several blocks, each headed by the row labels; every figure is still there, in order.
    assert!(screen.matches("block size").count() >= 3, "{screen}");
    assert_eq!(figures_by_row(&screen, &["4k", "8k"]), rows, "{screen}");
    for h in [
        "buffered throughput",
        "direct CPU s",
        "direct mean latency ms",
    ] {
        assert!(screen.contains(h), "{h}: {screen}");
    }
}

#[test]
fn compare_wraps_its_points_on_a_narrow_terminal() {
    let sb = Sandbox::new();
    stored_sweep(&sb);
    let whole = piped(&sb, "compare res res");
    let rows: Vec<&str> = whole.lines().filter(|l| l.starts_with("sweep: ")).collect();
    assert_eq!(
        rows.len(),
        16,
        "4 points x 4 metrics, one line each:\n{whole}"
    );
    assert!(rows.iter().all(|r| r.ends_with("same")), "{whole}");

    let screen = on_a_60_column_pty(&sb, "compare res res");
    assert!(too_wide(&screen, 60).is_empty(), "{screen}");
    // Every comparison is still a row with its verdict; the point words are all there.
    assert_eq!(screen.matches("same").count(), 16, "{screen}");
    for w in [
        "bs=4k",
        "bs=8k",
        "cache=buffered",
        "cache=direct",
        "KiB/s",
        "IOPS",
    ] {
        assert!(screen.contains(w), "{w}: {screen}");
    }
    assert!(screen.contains("16 comparisons:"), "{screen}");
}

#[test]
fn the_workload_table_and_latency_lines_fit_a_narrow_terminal() {
    let sb = Sandbox::new();
    let args = "workload filemicro_seqread -D filesize=256k -D iosize=4k --time 0.3s";
    let screen = on_a_60_column_pty(&sb, args);
    // From the table's head to the summary under it (notes and explanations are prose that
    // other parts print).
    let start = screen.find("flowop").expect("flowop table");
    let end = screen.find(" process(es), ").expect("run line");
    let table = &screen[start..end];
    assert!(too_wide(table, 60).is_empty(), "{screen}");
    assert!(table.matches("seqread").count() >= 2, "pivoted:\n{table}");
    for h in [
        "ops/s",
        "lat mean ms",
        "p99.9 ms",
        "max ms",
        "us cpu/op",
        "IO Summary:",
    ] {
        assert!(table.contains(h), "{h}: {table}");
    }
    let whole = piped(&sb, args);
    assert_eq!(whole.matches("flowop ").count(), 1, "{whole}");
    assert_eq!(
        whole.lines().filter(|l| l.starts_with("seqread ")).count(),
        1,
        "{whole}"
    );

    let run = "run f --rw randrw --bs 4k --size 1m --time 0.3s";
    let screen = on_a_60_column_pty(&sb, run);
    let lat: Vec<&str> = screen
        .lines()
        .skip_while(|l| !l.starts_with("latency:"))
        .take_while(|l| !l.starts_with("ops:"))
        .collect();
    assert!(
        lat.len() >= 6,
        "three latency lines, each cut in two:\n{screen}"
    );
    assert!(lat.iter().all(|l| l.chars().count() <= 60), "{screen}");
    let text = lat.join("\n");
    for p in [
        "read latency:",
        "write latency:",
        "p99.99 ",
        "max ",
        "stdev ",
    ] {
        assert!(text.contains(p), "{p}: {screen}");
    }
    // Piped, each latency line is whole.
    let whole = piped(&sb, run);
    for p in ["latency: min", "read latency: min", "write latency: min"] {
        let line = whole.lines().find(|l| l.starts_with(p)).expect(p);
        assert!(
            line.contains(" p99.99 ") && line.contains(" stdev "),
            "{whole}"
        );
    }
}
