//! Started by mpirun without being able to take part: a build without MPI refuses `run` (and
//! the flags of a distributed run) in one line, and no build runs the other I/O commands as
//! N unrelated copies. The launcher is simulated by the variable Open MPI sets in each rank.

mod common;

use common::Sandbox;

#[test]
fn io_commands_other_than_run_refuse_under_mpirun() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&["workload", "fileserver", "--dir", "wl", "--time", "1s"])
        .env("OMPI_COMM_WORLD_SIZE", "4")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("fsbench workload does not run on MPI ranks"),
        "{err}"
    );
    assert!(sb.listing().is_empty());
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_refuses_ranks_in_one_line() {
    let sb = Sandbox::new();
    for (env, args) in [
        (Some("4"), vec!["run", "f", "--rw", "write", "--count", "4"]),
        (
            None,
            vec![
                "run",
                "f",
                "--rw",
                "write",
                "--count",
                "4",
                "--file-per-rank",
            ],
        ),
    ] {
        let mut c = sb.cmd(&args);
        if let Some(n) = env {
            c.env("OMPI_COMM_WORLD_SIZE", n);
        }
        let o = c.output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("built without MPI") && err.contains("--features mpi"),
            "{err}"
        );
        assert!(sb.listing().is_empty(), "{:?}", sb.listing());
    }
    // One rank (mpirun -np 1) is an ordinary run.
    let o = sb
        .cmd(&["run", "f", "--rw", "write", "--count", "4"])
        .env("OMPI_COMM_WORLD_SIZE", "1")
        .output()
        .unwrap();
    assert!(o.status.success());
}
