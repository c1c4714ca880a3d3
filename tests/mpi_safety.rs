//! Distributed runs that meet trouble lose nothing: a second run on a shared file in use is
//! refused in one line naming the holder; a run that loses a rank still writes its Result
//! (failed, naming the rank); the files of a killed run go with the next run; hostile flags
//! are refused on every rank together.
#![cfg(feature = "mpi")]

mod common;

use common::Sandbox;
use std::time::{Duration, Instant};

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_second_shared_file_run_on_the_same_file_is_refused_naming_the_holder() {
    let sb = Sandbox::new();
    let mut first = start_in_background(
        &sb,
        2,
        "run s --rw randwrite --bs 4k --size 8m --time 15s --shared-file",
    );
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

/// `mpirun -np NP fsbench LINE` started in the sandbox and left running (output discarded).
fn start_in_background(sb: &Sandbox, np: u32, line: &str) -> std::process::Child {
    std::process::Command::new("mpirun")
        .current_dir(sb.path())
        .args(["--allow-run-as-root", "--oversubscribe", "-np"])
        .arg(np.to_string())
        .arg(env!("CARGO_BIN_EXE_fsbench"))
        .args(common::words(line))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap_or_else(|e| common::cannot(&format!("mpirun does not start: {e}")))
}

/// Wait until every file of `files` has `len` bytes (the run laid them out and is writing),
/// while the run started in the background goes on.
fn wait_laid_out(run: &mut std::process::Child, files: &[std::path::PathBuf], len: u64) {
    let t0 = Instant::now();
    while !files
        .iter()
        .all(|f| std::fs::metadata(f).is_ok_and(|m| m.len() >= len))
    {
        assert!(run.try_wait().unwrap().is_none(), "the run ended early");
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the run never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// SIGKILL rank `rank` of the run whose mpirun is `mpirun_pid`.
fn kill_rank(mpirun_pid: u32, rank: u32) {
    let (_, pid) = ranks_of(mpirun_pid)
        .into_iter()
        .find(|(r, _)| *r == rank)
        .unwrap_or_else(|| panic!("rank {rank} not found"));
    // SAFETY: killing a rank this test's mpirun started.
    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
}

/// The exit of a run started in the background, waited for at most a minute.
fn wait_exit(run: &mut std::process::Child) -> std::process::ExitStatus {
    let t0 = Instant::now();
    loop {
        if let Some(st) = run.try_wait().unwrap() {
            return st;
        }
        if t0.elapsed() > Duration::from_secs(60) {
            let _ = run.kill();
            panic!("mpirun hung for 60 s after a rank was killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// mpirun ends every rank when one dies (SIGTERM, then SIGKILL a second later): rank 0 still
/// writes the Result of the ranks that reported, failed, naming the lost rank.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_run_that_loses_a_rank_writes_a_failed_result_naming_it() {
    let sb = Sandbox::new();
    let mut run = start_in_background(
        &sb,
        3,
        "run f --rw randwrite --bs 4k --size 4m --time 30s --output result.json",
    );
    let files: Vec<_> = (0..3)
        .map(|r| sb.file(&format!("f.d/rank-{r:05}/f")))
        .collect();
    wait_laid_out(&mut run, &files, 4 << 20);
    std::thread::sleep(Duration::from_millis(300));
    kill_rank(run.id(), 2);
    let st = wait_exit(&mut run);
    assert!(!st.success());
    let text = std::fs::read_to_string(sb.file("result.json"))
        .expect("rank 0 wrote no Result after rank 2 was lost");
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["status"], "failed", "{text}");
    let failures = r["failures"].as_array().unwrap();
    assert!(
        failures.iter().any(|f| {
            let m = f["message"].as_str().unwrap_or("");
            m.starts_with("rank 2 ") && m.contains("lost")
        }),
        "no failure names the lost rank: {failures:?}"
    );
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 3);
    assert_eq!(ranks[2]["status"], "failed");
    assert!(ranks[2]["failure"].as_str().unwrap().contains("lost"));
    // The ranks that reported are counted: their work is in the Result.
    for k in 0..2 {
        assert!(
            ranks[k]["ops"].as_u64().unwrap() > 0,
            "rank {k}: {:?}",
            ranks[k]
        );
        assert_ne!(ranks[k]["status"], "failed", "rank {k}: {:?}", ranks[k]);
        assert!(!files[k].exists(), "rank {k} left its file");
    }
}

/// SIGTERM to one rank alone (not through mpirun): that rank stops and waits for the others,
/// which finish their time; the Result counts every rank, `partial`, and mpirun (not
/// interrupted itself) passes on the status 130.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_rank_signalled_alone_stops_and_the_run_ends_partial_with_every_rank() {
    let sb = Sandbox::new();
    let mut run = start_in_background(
        &sb,
        3,
        "run f --rw randwrite --bs 4k --size 4m --time 6s --output result.json",
    );
    let files: Vec<_> = (0..3)
        .map(|r| sb.file(&format!("f.d/rank-{r:05}/f")))
        .collect();
    wait_laid_out(&mut run, &files, 4 << 20);
    let (_, pid1) = ranks_of(run.id())
        .into_iter()
        .find(|(r, _)| *r == 1)
        .expect("rank 1 found");
    // SAFETY: signalling a rank this test's mpirun started.
    unsafe { libc::kill(pid1 as i32, libc::SIGTERM) };
    let st = wait_exit(&mut run);
    let text = std::fs::read_to_string(sb.file("result.json")).expect("no Result written");
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["status"], "partial", "{text}");
    let ranks = r["ranks"].as_array().unwrap();
    assert_eq!(ranks.len(), 3);
    for (k, row) in ranks.iter().enumerate() {
        assert!(row["ops"].as_u64().unwrap() > 0, "rank {k}: {row:?}");
        assert_ne!(row["status"], "failed", "rank {k}: {row:?}");
    }
    assert_eq!(st.code(), Some(130));
    assert!(!sb.file("f.d").exists(), "the run left its files");
}

/// A distributed workload that loses a rank: rank 0's Result fails naming it, and the next
/// workload in the same directory removes what the lost rank left (its fileset and its
/// directory).
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn a_workload_that_loses_a_rank_fails_naming_it_and_the_next_one_cleans_up() {
    let sb = Sandbox::new();
    let flow = |secs: u32| {
        format!(
            "define fileset name=fs,path=$dir,entries=4,size=1m,prealloc=100\n\
             define process name=p,instances=1 {{ thread name=t,instances=1 {{\n\
             flowop read name=rd,filesetname=fs,iosize=4k,random }} }}\n\
             run {secs}\n"
        )
    };
    std::fs::write(sb.file("wl.f"), flow(30)).unwrap();
    std::fs::write(sb.file("short.f"), flow(1)).unwrap();
    std::fs::create_dir(sb.file("wd")).unwrap();
    let mut run = start_in_background(&sb, 3, "workload wl.f --dir wd --output result.json");
    let files: Vec<_> = (1..=4)
        .map(|i| sb.file(&format!("wd/rank-00002/fs/{i:08}")))
        .collect();
    wait_laid_out(&mut run, &files, 1 << 20);
    std::thread::sleep(Duration::from_millis(500));
    kill_rank(run.id(), 2);
    assert!(!wait_exit(&mut run).success());
    let text = std::fs::read_to_string(sb.file("result.json"))
        .expect("rank 0 wrote no Result after rank 2 was lost");
    let r: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(r["status"], "failed", "{text}");
    let failures = r["failures"].as_array().unwrap();
    assert!(
        failures.iter().any(|f| {
            let m = f["message"].as_str().unwrap_or("");
            m.starts_with("rank 2 ") && m.contains("lost")
        }),
        "no failure names the lost rank: {failures:?}"
    );
    assert!(
        files[0].exists(),
        "the lost rank's fileset stays for the next run"
    );
    let o = common::mpirun(&sb, 3, &common::words("workload short.f --dir wd"));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let left: Vec<_> = std::fs::read_dir(sb.file("wd"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(left.is_empty(), "left after the next workload: {left:?}");
}

/// fsbench processes of this sandbox's run, by rank (from OMPI_COMM_WORLD_RANK).
fn ranks_of(mpirun_pid: u32) -> Vec<(u32, u32)> {
    let mut v = Vec::new();
    let Ok(children) =
        std::fs::read_to_string(format!("/proc/{mpirun_pid}/task/{mpirun_pid}/children"))
    else {
        return v;
    };
    for pid in children
        .split_whitespace()
        .filter_map(|p| p.parse::<u32>().ok())
    {
        let env = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        for var in env.split(|&b| b == 0) {
            if let Some(r) = var.strip_prefix(b"OMPI_COMM_WORLD_RANK=") {
                if let Ok(r) = String::from_utf8_lossy(r).parse() {
                    v.push((r, pid));
                }
            }
        }
    }
    v
}

#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn the_files_of_a_run_that_lost_a_rank_go_with_the_next_run() {
    let sb = Sandbox::new();
    let mut first =
        start_in_background(&sb, 2, "run f --rw randwrite --bs 4k --size 4m --time 30s");
    let rank_file = |r: u32| sb.file(&format!("f.d/rank-{r:05}/f"));
    wait_laid_out(
        &mut first,
        &(0..2).map(rank_file).collect::<Vec<_>>(),
        4 << 20,
    );
    // Rank 1 is lost (SIGKILL); mpirun then ends the others.
    let ranks = ranks_of(first.id());
    kill_rank(first.id(), 1);
    let st = first.wait().unwrap();
    assert!(!st.success());
    // mpirun may end before its other ranks are gone: the next run is started after them.
    let t1 = Instant::now();
    for (_, pid) in &ranks {
        while std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .is_ok_and(|s| !s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z')))
        {
            assert!(
                t1.elapsed() < Duration::from_secs(30),
                "rank {pid} lives on"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    // The lost rank's file stays for the next run (rank 0 removes its own as it reports,
    // unless mpirun's SIGKILL came first).
    assert!(rank_file(1).exists(), "the lost rank's file is gone");
    let o = common::mpirun(
        &sb,
        2,
        &common::words("run f --rw randwrite --bs 4k --size 4m --count 16"),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("was killed"), "the rerun says so: {err}");
    // The ranks' files are gone, and so are the directories the killed run made for them.
    for r in 0..2 {
        assert!(
            !rank_file(r).exists(),
            "rank {r}'s file left after the rerun"
        );
    }
    assert!(
        !sb.file("f.d").exists(),
        "left after the rerun: {:?}",
        std::fs::read_dir(sb.file("f.d"))
            .map(|d| d.flatten().map(|e| e.path()).collect::<Vec<_>>())
    );
}

/// The flags of a distributed run, fuzzed under mpirun: hostile values are refused in one
/// line with exit 2 by every rank together (no hang, no panic, no file left), and random ones
/// either run or are refused the same way.
#[test]
#[cfg_attr(not(has_mpirun), ignore = "SKIPPED: needs mpirun (openmpi-bin)")]
fn distributed_flags_with_bad_values_are_refused_in_one_line_on_every_rank() {
    let hostile: &[&[&str]] = &[
        &["--shared-file", "bogus"],
        &["--shared-file", ""],
        &["--shared-file", "segmented", "--file-per-rank"],
        &["--shared-file", "strided,segmented"],
        &["--stonewall", "-1"],
        &["--stonewall", "soon"],
        &["--stonewall", "1e99s"],
        &["--mpi-timeout", "abc"],
        &["--mpi-timeout", "99999999999999999999d"],
        &["--mpi-timeout", "-5s"],
    ];
    let sb = Sandbox::new();
    let base = common::words("run f --rw write --bs 4k --size 64k --count 4");
    let run = |extra: &[&str]| {
        let mut args: Vec<&str> = base.clone();
        args.extend_from_slice(extra);
        let o = common::mpirun(&sb, 2, &args);
        let err = String::from_utf8_lossy(&o.stderr).into_owned();
        assert!(!err.contains("panicked"), "{extra:?}: {err}");
        (o, err)
    };
    for extra in hostile {
        let (o, _) = run(extra);
        let line = common::mpi_refused_in_one_line(&o);
        assert!(
            line.contains("--"),
            "{extra:?}: the line names no option: {line}"
        );
    }
    // Random values from a fixed seed: whatever is accepted runs, whatever is refused is one line.
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let flags = ["--shared-file", "--stonewall", "--mpi-timeout"];
    let pool = [
        "0",
        "1",
        "first",
        "last",
        "1s",
        "0s",
        "100ms",
        "5m",
        "segmented",
        "strided",
        "∞",
        "%n%n",
        "../../x",
        "1k",
        " ",
        "1,2",
        "18446744073709551616",
    ];
    for _ in 0..8 {
        let flag = flags[(next() % flags.len() as u64) as usize];
        let value = pool[(next() % pool.len() as u64) as usize];
        let (o, err) = run(&[flag, value]);
        match o.status.code() {
            Some(0) => {}
            Some(2) => {
                common::mpi_refused_in_one_line(&o);
            }
            c => panic!("{flag} {value:?}: exit {c:?}: {err}"),
        }
    }
    // Nothing of the refused runs is left beside the accepted runs' removed files.
    let left: Vec<_> = std::fs::read_dir(sb.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().starts_with('f'))
        .filter(|n| {
            std::fs::symlink_metadata(sb.file(&n.to_string_lossy())).is_ok_and(|m| m.is_file())
        })
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
