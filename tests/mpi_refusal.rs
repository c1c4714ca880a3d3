//! Started by mpirun without being able to take part: a build without MPI refuses `run`,
//! sweep, suite, workload, vx, quick, replay, mdtest, ior, io500 and advise --measure (and the flags of a
//! distributed run) in one line, and no build runs the other I/O commands (fscompare; trace
//! without MPI) as N unrelated copies, nor advise without --measure (no I/O to spread). The
//! launcher is simulated by the variable Open MPI sets in each rank.

mod common;

use common::Sandbox;

/// The commands that cannot run on ranks (fscompare; trace without MPI) refuse in one
/// line, exit 2, in every build, and name the commands that can; so does advise without
/// --measure, which does no I/O.
#[test]
fn io_commands_that_cannot_run_on_ranks_refuse_under_mpirun() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&["advise", "."])
        .env("OMPI_COMM_WORLD_SIZE", "4")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("advise without --measure does no I/O: run it without mpirun"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
    let mut commands = vec![vec!["fscompare", "--device", "/dev/null", "--fs", "ext4"]];
    // Built with MPI, each rank captures its own command (tests/mpi_replay.rs).
    if !cfg!(feature = "mpi") {
        commands.push(vec!["trace", "--", "true"]);
    }
    for args in commands {
        let o = sb
            .cmd(&args)
            .env("OMPI_COMM_WORLD_SIZE", "4")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        // A parse error comes first for a command line clap refuses: that is one line too.
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains(&format!("fsbench {} does not run on MPI ranks", args[0]))
                && err.contains(
                    "run, sweep, suite, workload, vx, quick, replay, mdtest, ior, io500 and advise --measure do"
                ),
            "{args:?}: {err}"
        );
        assert!(sb.listing().is_empty(), "{args:?}: {:?}", sb.listing());
    }
}

#[cfg(not(feature = "mpi"))]
#[test]
fn a_build_without_mpi_refuses_ranks_in_one_line() {
    let sb = Sandbox::new();
    for (env, args) in [
        (Some("4"), vec!["run", "f", "--rw", "write", "--count", "4"]),
        (Some("4"), vec!["quick", "."]),
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
    // The commands that run on ranks with MPI refuse in a build without it.
    for args in [
        vec!["workload", "fileserver", "--dir", ".", "--time", "1s"],
        vec!["sweep", "f", "--rw", "write", "--count", "4,8"],
        vec!["vx", "-w", "write", "f"],
        vec!["replay", "t.csv", "--dir", "."],
        vec!["advise", ".", "--measure"],
        vec!["mdtest", "-n", "5", "-d", "."],
        vec!["io500", "--stonewall", "1", "."],
    ] {
        let o = sb
            .cmd(&args)
            .env("OMPI_COMM_WORLD_SIZE", "4")
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("built without MPI")
                && err.contains(&format!("`fsbench {}` with mpirun", args[0])),
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
