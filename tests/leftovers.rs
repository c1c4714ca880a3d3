//! What a killed run leaves behind, and what the next run does with it: a run of fsbench that
//! was killed (SIGKILL, nothing of it could clean up) leaves files it made; the rerun must
//! recognise them as fsbench's (by identity, never by name alone), remove them and say so.
//! Also the exit status of a command refused by the file system (a read-only mount).

mod common;
use common::{words, Sandbox};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

fn fsbench(sb: &Sandbox, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.current_dir(sb.path()).args(args);
    c
}

/// Run to its end within `limit` (killed and failed otherwise): exit code and stderr.
fn run_bounded(mut cmd: Command, limit: Duration) -> (i32, String) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            let mut err = String::new();
            use std::io::Read;
            child.stderr.take().unwrap().read_to_string(&mut err).ok();
            return (st.code().unwrap_or(-1), err);
        }
        if start.elapsed() > limit {
            child.kill().ok();
            child.wait().ok();
            panic!("fsbench did not finish within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Start fsbench, wait until `ready` says the run is under way, then SIGKILL it (nothing of
/// it runs after that: no handler, no cleanup).
fn kill_when(mut cmd: Command, limit: Duration, ready: impl Fn() -> bool) {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while !ready() {
        if let Some(st) = child.try_wait().unwrap() {
            panic!("fsbench ended ({st}) before the moment to kill it");
        }
        assert!(start.elapsed() < limit, "the run never got under way");
        std::thread::sleep(Duration::from_millis(5));
    }
    child.kill().unwrap();
    child.wait().unwrap();
}

/// Names in `dir` (sorted).
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A small tmpfs mounted read-only for the test, unmounted on drop.
struct ReadOnlyTmpfs(tempfile::TempDir);

impl ReadOnlyTmpfs {
    fn new() -> Option<ReadOnlyTmpfs> {
        if !is_root() {
            return None;
        }
        let mnt = tempfile::tempdir().ok()?;
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=4m,ro", "fsbench-ro"])
            .arg(mnt.path())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        ok.then_some(ReadOnlyTmpfs(mnt))
    }
}

impl Drop for ReadOnlyTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a small tmpfs")]
fn workload_on_a_read_only_mount_exits_2_in_one_line() {
    let Some(fs) = ReadOnlyTmpfs::new() else {
        common::cannot("could not mount a small read-only tmpfs");
    };
    let sb = Sandbox::new();
    let dir = fs.0.path().to_str().unwrap().to_string();
    let (code, err) = run_bounded(
        fsbench(
            &sb,
            &[
                "workload",
                "fileserver",
                "-D",
                "nfiles=10",
                "--time",
                "1s",
                "--dir",
                &dir,
            ],
        ),
        Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(last.contains("Read-only file system"), "{err}");
    assert!(names(fs.0.path()).is_empty());
}

/// Processes whose command line holds `needle` (and that are not zombies).
fn live_processes_with(needle: &str) -> Vec<u32> {
    let mut v = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        let zombie = std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|s| s.rsplit_once(") ").map(|(_, r)| r.starts_with('Z')))
            .unwrap_or(true);
        if cmd.contains(needle) && !zombie {
            v.push(pid);
        }
    }
    v
}

#[test]
#[cfg_attr(
    not(has_strace),
    ignore = "SKIPPED: needs strace able to trace a child"
)]
fn a_killed_trace_takes_its_command_along_and_leaves_no_log() {
    let sb = Sandbox::new();
    let tmp = sb.file("tmp");
    std::fs::create_dir(&tmp).unwrap();
    // A count no other process on the machine has on its command line.
    let count = format!("count={}", 900_000_000 + std::process::id());
    let mut cmd = fsbench(&sb, &["trace", "-o", "t.csv", "--", "dd", "if=/dev/zero"]);
    cmd.args(["of=/dev/null", "bs=1k", &count])
        .env("TMPDIR", &tmp);
    kill_when(cmd, Duration::from_secs(30), || {
        live_processes_with(&format!("dd if=/dev/zero of=/dev/null bs=1k {count}"))
            .iter()
            .any(|p| {
                std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "dd")
            })
    });
    // strace dies with fsbench, and the command with strace.
    let start = Instant::now();
    while !live_processes_with(&format!("bs=1k {count}")).is_empty() {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "the traced command still runs after fsbench was killed"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(names(&tmp).is_empty(), "left in TMPDIR: {:?}", names(&tmp));
    assert!(!sb.file("t.csv").exists());
}

/// Regular files below `dir` (0 when it does not exist).
fn files_below(dir: &Path) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut n = 0;
    for e in rd.flatten() {
        match e.file_type() {
            Ok(t) if t.is_dir() => n += files_below(&e.path()),
            Ok(t) if t.is_file() => n += 1,
            _ => {}
        }
    }
    n
}

/// `workload fileserver` with 20000 small files in `dir`, SIGKILLed while laying them out:
/// the tree is there, partly made, without its manifest.
fn kill_a_workload_during_setup(sb: &Sandbox, dir: &Path) {
    let d = dir.to_str().unwrap();
    let line = format!("workload fileserver -D nfiles=20000 -D filesize=4k --time 1s --dir {d}");
    kill_when(fsbench(sb, &words(&line)), Duration::from_secs(60), || {
        files_below(&dir.join("fileserverset")) > 200
    });
    assert!(
        !dir.join(".fileserverset.fsbench-manifest").exists(),
        "killed too late: the layout was done"
    );
}

#[test]
fn a_fileset_left_by_a_run_killed_during_setup_is_removed_by_the_rerun() {
    let sb = Sandbox::new();
    let dir = sb.file("wl");
    std::fs::create_dir(&dir).unwrap();
    kill_a_workload_during_setup(&sb, &dir);
    let d = dir.to_str().unwrap();
    let line = format!("workload fileserver -D nfiles=50 -D filesize=4k --time 1s --dir {d}");
    let (code, err) = run_bounded(fsbench(&sb, &words(&line)), Duration::from_secs(120));
    assert_eq!(code, 0, "{err}");
    assert!(
        err.contains("that an earlier run left unfinished"),
        "the rerun says what it removed: {err}"
    );
    assert!(names(&dir).is_empty(), "left: {:?}", names(&dir));
}

#[test]
fn a_users_file_in_a_killed_runs_fileset_is_never_removed() {
    let sb = Sandbox::new();
    let dir = sb.file("wl");
    std::fs::create_dir(&dir).unwrap();
    kill_a_workload_during_setup(&sb, &dir);
    // Someone puts a file of their own into the unfinished tree.
    let theirs = dir.join("fileserverset").join("mine.txt");
    std::fs::write(&theirs, b"precious").unwrap();
    let d = dir.to_str().unwrap();
    let line = format!("workload fileserver -D nfiles=50 -D filesize=4k --time 1s --dir {d}");
    let (code, err) = run_bounded(fsbench(&sb, &words(&line)), Duration::from_secs(120));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("mine.txt"), "{err}");
    assert_eq!(std::fs::read(&theirs).unwrap(), b"precious");
}

/// A trace of `n` reads of 4 KiB, one a second, of one file (`replay --speed 1` takes `n` s).
fn slow_read_trace(path: &Path, n: u64) {
    let mut s = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
    for i in 0..n {
        let t = i * 1_000_000_000;
        s.push_str(&format!(
            "{i},0,read,/r0,{},4096,{t},{},4096\n",
            i % 16 * 4096,
            t + 100
        ));
    }
    std::fs::write(path, s).unwrap();
}

/// The target of a run that was SIGKILLed is removed by the next run on it (which says so),
/// not kept as if the user had asked for it; a target kept with --keep stays kept.
fn killed_target_is_removed_by_the_rerun(first: &str, rerun: &str) {
    let sb = Sandbox::new();
    let t = sb.file("t.dat");
    kill_when(fsbench(&sb, &words(first)), Duration::from_secs(60), || {
        std::fs::metadata(&t).is_ok_and(|m| m.len() > 0)
    });
    assert!(t.exists(), "the killed run's target is there");
    let (code, err) = run_bounded(fsbench(&sb, &words(rerun)), Duration::from_secs(60));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("was killed"), "the rerun says so: {err}");
    assert!(!t.exists(), "the rerun removed the killed run's target");
}

#[test]
fn a_run_target_left_by_a_killed_run_is_removed_by_the_rerun() {
    killed_target_is_removed_by_the_rerun(
        "run --rw write --bs 4k --size 64m --time 60s t.dat",
        "run --rw write --bs 4k --count 16 t.dat",
    );
}

#[test]
fn a_vx_target_left_by_a_killed_run_is_removed_by_the_rerun() {
    killed_target_is_removed_by_the_rerun(
        "vx -w rand_write -i iosize=4k,iocount=1k,nrep=10000000 t.dat",
        "vx -w write -i iosize=4k,iocount=16 t.dat",
    );
}

#[test]
fn a_kept_target_is_never_taken_for_a_killed_runs() {
    let sb = Sandbox::new();
    sb.cmd(&words("run --rw write --bs 4k --count 4 --keep k.dat"))
        .assert()
        .success();
    sb.cmd(&words("run --rw read --bs 4k --count 4 k.dat"))
        .assert()
        .success();
    assert!(sb.file("k.dat").exists(), "a kept file stays kept");
}

#[test]
fn replay_scratch_left_by_a_killed_replay_is_removed_by_the_next() {
    let sb = Sandbox::new();
    slow_read_trace(&sb.file("slow.csv"), 60);
    std::fs::create_dir(sb.file("scratch")).unwrap();
    // A file of someone else's with a scratch file's name is never touched.
    let theirs = sb.file("scratch").join("fsbench-replay-1-0.dat");
    std::fs::write(&theirs, b"theirs").unwrap();
    let line = "replay slow.csv --speed 1 --dir scratch";
    let scratch = sb.file("scratch");
    // Killed while it replays (its scratch file laid out).
    kill_when(fsbench(&sb, &words(line)), Duration::from_secs(60), || {
        names(&scratch).iter().any(|n| {
            n != "fsbench-replay-1-0.dat"
                && std::fs::metadata(scratch.join(n)).is_ok_and(|m| m.len() >= 65536)
        })
    });
    assert_eq!(names(&scratch).len(), 2, "{:?}", names(&scratch));
    let (code, err) = run_bounded(
        fsbench(&sb, &words("replay slow.csv --dir scratch --time 1s")),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("was killed"), "the rerun says so: {err}");
    assert_eq!(names(&scratch), ["fsbench-replay-1-0.dat"]);
    assert_eq!(std::fs::read(&theirs).unwrap(), b"theirs");
}

#[test]
fn study_files_left_by_a_killed_suite_are_removed_by_the_rerun() {
    let sb = Sandbox::new();
    let data = sb.file("data");
    std::fs::create_dir(&data).unwrap();
    let line = "suite whitepaper --dir data --scale 0.004 --output wp --study multi-app-reads";
    // Killed while its points run (a study file holds data).
    kill_when(fsbench(&sb, &words(line)), Duration::from_secs(120), || {
        names(&data).iter().any(|n| {
            n.starts_with("fsbench-multi-app-reads.dat")
                && std::fs::metadata(data.join(n)).is_ok_and(|m| m.len() > 0)
        })
    });
    assert!(!names(&data).is_empty());
    let (code, err) = run_bounded(fsbench(&sb, &words(line)), Duration::from_secs(300));
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("was killed"), "the rerun says so: {err}");
    assert!(names(&data).is_empty(), "left: {:?}", names(&data));
}

/// A trace that makes a directory, then reads 4 KiB once a second `n` times (`replay --speed
/// 1` takes `n` s, in a scratch directory of its own).
fn slow_trace_with_a_directory(path: &Path, n: u64) {
    let mut s = String::from("id,thread,op,file,offset,len,start_ns,end_ns,result\n");
    s.push_str("0,0,mkdir,/d0,0,0,0,100,0\n");
    for i in 1..=n {
        let t = i * 1_000_000_000;
        s.push_str(&format!(
            "{i},0,read,/r0,{},4096,{t},{},4096\n",
            i % 16 * 4096,
            t + 100
        ));
    }
    std::fs::write(path, s).unwrap();
}

#[test]
fn a_killed_replays_scratch_directory_is_removed_by_the_next_and_a_strangers_never() {
    let sb = Sandbox::new();
    slow_trace_with_a_directory(&sb.file("slow.csv"), 60);
    let scratch = sb.file("scratch");
    std::fs::create_dir(&scratch).unwrap();
    // Someone else's directory with a replay directory's name, holding a file.
    let theirs = scratch.join("fsbench-replay-1.d");
    std::fs::create_dir(&theirs).unwrap();
    std::fs::write(theirs.join("keep.txt"), b"theirs").unwrap();
    let line = "replay slow.csv --speed 1 --dir scratch";
    // Killed while it replays: the traced mkdir was replayed in its directory.
    kill_when(fsbench(&sb, &words(line)), Duration::from_secs(60), || {
        names(&scratch).iter().any(|n| {
            n.ends_with(".d")
                && n != "fsbench-replay-1.d"
                && std::fs::read_dir(scratch.join(n)).is_ok_and(|mut d| d.next().is_some())
        })
    });
    assert_eq!(names(&scratch).len(), 3, "{:?}", names(&scratch));
    let (code, err) = run_bounded(
        fsbench(&sb, &words("replay slow.csv --dir scratch --time 1s")),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("was killed"), "the rerun says so: {err}");
    assert_eq!(names(&scratch), ["fsbench-replay-1.d"]);
    assert_eq!(std::fs::read(theirs.join("keep.txt")).unwrap(), b"theirs");
}

/// The target made by a run killed right as it marks the file (strace delivers SIGKILL when
/// the first extended attribute is set): the file appears only marked, so nothing is left,
/// or the rerun removes it. (A file made first and marked after would stay, empty and
/// unmarked, and the rerun would refuse it as a stranger's.)
#[test]
#[cfg_attr(not(has_strace), ignore = "SKIPPED: needs strace")]
fn a_run_killed_as_it_marks_its_target_leaves_nothing_the_rerun_cannot_recognise() {
    let sb = Sandbox::new();
    let t = sb.file("t.dat");
    let st = Command::new("strace")
        .current_dir(sb.path())
        .args(["-o", "/dev/null", "-f", "-e", "trace=fsetxattr"])
        .args(["-e", "inject=fsetxattr:signal=KILL"])
        .arg(bin())
        .args(words("run --rw write --bs 4k --count 16 t.dat"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(
        !st.success(),
        "the run was not killed as it marked its target"
    );
    // Nothing, or a file the rerun takes for the killed run's.
    let (code, err) = run_bounded(
        fsbench(&sb, &words("run --rw write --bs 4k --count 16 t.dat")),
        Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{err}");
    assert!(!t.exists(), "the rerun left the target");
    assert_eq!(names(sb.path()), Vec::<String>::new());
}

/// A file of someone else's at a target's name, empty like a file a killed run made: never
/// removed by a run, which refuses to write to it.
#[test]
fn an_empty_strangers_file_at_a_targets_name_is_never_removed() {
    let sb = Sandbox::new();
    let t = sb.file("t.dat");
    std::fs::write(&t, b"").unwrap();
    let (code, err) = run_bounded(
        fsbench(&sb, &words("run --rw write --bs 4k --count 16 t.dat")),
        Duration::from_secs(60),
    );
    assert_eq!(code, 2, "{err}");
    assert!(t.exists(), "a stranger's file was removed");
}
