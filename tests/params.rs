//! One table of Job parameters: `run`'s flags, `vx`'s options and a TOML job file build the
//! same Job from the same values, and each front end refuses a bad value with one line
//! naming the option as it was typed.

mod common;
use common::{words, Sandbox};

/// The Job recorded in a Result, without what differs by front end only by design (the
/// name each front end gives a run).
fn job_of(v: &serde_json::Value) -> serde_json::Value {
    let mut j = v["job"].clone();
    j.as_object_mut().unwrap().remove("name");
    j
}

#[test]
fn run_vx_and_a_job_file_build_the_same_job() {
    let sb = Sandbox::new();
    let by_run = sb.run_json(&words(
        "run --rw rand_read --bs 4k --size 1m --count 16 --threads 2 --rwmix-read 70 --seed 9 --nrep 2 --dsync f",
    ));
    // vxbench's spellings; bare sizes are KB there.
    let by_vx = sb.run_json(&words(
        "vx -t -w rand_read -i iosize=4,maxfilesize=1024,iocount=16,nthreads=2,rdpct=70,randseed=9,nrep=2 -o dsync f",
    ));
    std::fs::write(
        sb.file("j.toml"),
        "targets = [\"f\"]\naccess = \"randread\"\nblock_size = 4096\nfile_size = 1048576\nio_count = 16\nthreads = 2\nread_pct = 70\nseed = 9\nrepeats = 2\n[open]\ndsync = true\n",
    )
    .unwrap();
    let by_toml = sb.run_json(&["run", "j.toml"]);
    assert_eq!(job_of(&by_run), job_of(&by_vx));
    assert_eq!(job_of(&by_run), job_of(&by_toml));
    assert_eq!(by_run["job"]["access"], "randread");
}

#[test]
fn a_value_out_of_range_is_refused_by_every_front_end_naming_the_option() {
    let sb = Sandbox::new();
    for (args, want) in [
        (
            "run --threads 0 --count 4 f",
            "bad --threads '0': must be 1 to 4096",
        ),
        (
            "vx -w read -i nthreads=0 f",
            "bad nthreads '0': must be 1 to 4096",
        ),
        (
            "sweep f --count 4 --axis threads=0,1",
            "bad thread count '0': must be 1 to 4096",
        ),
        ("run --rw sideways --count 4 f", "unknown --rw 'sideways'"),
        ("vx -w sideways f", "unknown workload 'sideways'"),
        (
            "sweep f --count 4 --rw read,sideways",
            "unknown access 'sideways'",
        ),
    ] {
        let out = sb.cmd(&words(args)).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args}: {err}");
        assert_eq!(err.lines().count(), 1, "{args}: {err}");
        assert!(err.contains(want), "{args}: {err}");
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}
