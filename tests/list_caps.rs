//! Value lists are bounded: a sweep axis takes at most 1000 values, each once, and a job at
//! most 16 access advice values; more is one line naming the cap, exit 2, nothing run.

mod common;
use common::Sandbox;

fn refused(sb: &Sandbox, args: &[&str], needles: &[&str]) {
    let out = sb.cmd(args).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    for n in needles {
        assert!(err.contains(n), "{err:?} lacks {n:?}");
    }
    assert_eq!(sb.listing(), Vec::<String>::new(), "nothing was made");
}

#[test]
fn a_sweep_axis_of_20001_values_is_refused_with_the_cap() {
    let sb = Sandbox::new();
    let many = vec!["4k"; 20_001].join(",");
    refused(
        &sb,
        &[
            "sweep", "f", "--bs", &many, "--size", "8k", "--output", "out",
        ],
        &["axis bs", "20001 values", "1000"],
    );
    let distinct: Vec<String> = (1..=1001).map(|i| format!("{}k", i * 4)).collect();
    let axis = format!("bs={}", distinct.join(","));
    refused(
        &sb,
        &[
            "sweep", "f", "--axis", &axis, "--size", "8k", "--output", "out",
        ],
        &["axis bs", "1001 values"],
    );
}

#[test]
fn a_value_given_twice_in_a_sweep_axis_is_refused() {
    let sb = Sandbox::new();
    refused(
        &sb,
        &[
            "sweep", "f", "--bs", "4k,8k,4k", "--size", "8k", "--output", "out",
        ],
        &["axis bs", "'4k' is given twice", "--repeat"],
    );
    refused(
        &sb,
        &[
            "sweep",
            "f",
            "--axis",
            "nrep=1,2,1",
            "--size",
            "8k",
            "--output",
            "out",
        ],
        &["'1' is given twice"],
    );
}

#[test]
fn more_than_16_advice_values_are_refused() {
    let sb = Sandbox::new();
    let advice = vec!["seq"; 17].join(",");
    refused(
        &sb,
        &["run", "f", "--size", "8k", "--advise", &advice],
        &["at most 16"],
    );
}
