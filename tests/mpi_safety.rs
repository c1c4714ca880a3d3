//! Two distributed runs on one shared file: rank 0 of the first holds the file's lock for the
//! whole run, so the second is refused in one line naming that process, and loses nothing.
#![cfg(feature = "mpi")]

mod common;

use common::Sandbox;
use std::time::{Duration, Instant};

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_second_shared_file_run_on_the_same_file_is_refused_naming_the_holder() {
    let sb = Sandbox::new();
    let mut first = std::process::Command::new("mpirun")
        .current_dir(sb.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np", "2"])
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(common::words(
            "run s --rw randwrite --bs 4k --size 8m --time 15s --shared-file",
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| common::cannot(&format!("mpirun does not start: {e}")));
    // Wait until the first run laid its file out and is writing.
    let t0 = Instant::now();
    while !std::fs::metadata(sb.file("s")).is_ok_and(|m| m.len() >= 8 << 20) {
        assert!(
            first.try_wait().unwrap().is_none(),
            "the first run ended early"
        );
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the first run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let o = common::mpirun(
        &sb,
        2,
        &common::words("run s --rw randwrite --bs 4k --size 8m --count 16 --shared-file"),
    );
    let still_running = first.try_wait().unwrap().is_none();
    // SIGTERM: mpirun passes it on to its ranks, which stop and clean up.
    // SAFETY: signalling the mpirun this test started.
    unsafe { libc::kill(first.id() as i32, libc::SIGTERM) };
    let _ = first.wait();
    assert!(
        still_running,
        "the first run ended before the second was tried"
    );
    let line = common::mpi_refused_in_one_line(&o);
    assert!(
        line.contains("in use by another fsbench run (process "),
        "{line}"
    );
}
