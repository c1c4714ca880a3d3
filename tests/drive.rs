//! One worker subcommand: Job workers and workload processes are both `fsbench __worker`.

use assert_cmd::Command;

#[test]
fn the_second_worker_subcommand_is_gone() {
    let out = Command::cargo_bin("fsbench")
        .unwrap()
        .arg("__wml_worker")
        .write_stdin("")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}

#[test]
fn a_worker_spec_of_an_unknown_kind_is_refused() {
    let out = Command::cargo_bin("fsbench")
        .unwrap()
        .arg("__worker")
        .write_stdin("{\"Replay\":{}}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("reading the worker spec"), "{err}");
}

#[test]
fn a_worker_spec_naming_an_unknown_source_is_refused_with_its_name() {
    let out = Command::cargo_bin("fsbench")
        .unwrap()
        .arg("__worker")
        .write_stdin("{\"source\":\"replay\",\"spec\":{}}\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown source 'replay'"), "{err}");
}
