//! "Never lose data, never hang" for `fsbench workload`: each test is an attack that once
//! lost data, hung, aborted or left files behind, run against the real binary.
mod common;

use common::Sandbox;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn bin() -> PathBuf {
    assert_cmd::cargo::cargo_bin("fsbench")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A tmpfs of `opts` mounted on a temp dir, unmounted on drop; fails the test (`cannot`) when
/// it cannot be mounted (tests that use it carry `cfg_attr(not(has_root), ignore)`).
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    fn new(opts: &str) -> Tmpfs {
        if !is_root() {
            common::cannot("needs root to mount a tmpfs");
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", opts, "fsbench-wl-test"])
            .arg(dir.path())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        if !ok {
            common::cannot("could not mount a tmpfs");
        }
        Tmpfs { dir }
    }
    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

fn write_f(sb: &Sandbox, name: &str, text: &str) -> String {
    let p = sb.file(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

fn stderr_of(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// Exit 2 with exactly one line on stderr.
fn assert_usage(o: &std::process::Output, what: &str) -> String {
    let err = stderr_of(o);
    assert_eq!(o.status.code(), Some(2), "{what}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{what}: {err}");
    err
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

/// Wait for a child with a deadline; kill it if it overstays.
fn wait_for(child: &mut std::process::Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let t = Instant::now();
    while t.elapsed() < limit {
        if let Ok(Some(s)) = child.try_wait() {
            return Some(s);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

const STAT_SET: &str = "set $dir=.
define fileset name=fs,path=$dir,entries=20,dirwidth=5,size=4k,prealloc=100
define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }
run 1
";

/// Item 1: the run after a `--keep` run removes only what fsbench created; the user's added
/// and replaced files survive, a planted symlink is not followed, the rest is reported.
#[test]
fn kept_tree_next_run_spares_what_the_user_put_there() {
    let sb = Sandbox::new();
    let f = write_f(&sb, "stat.f", STAT_SET);
    let data = sb.file("data");
    std::fs::create_dir(&data).unwrap();
    let d = data.to_str().unwrap();
    sb.cmd(&["workload", &f, "--dir", d, "--time", "0.2s", "--keep"])
        .assert()
        .success();
    let root = data.join("fs");
    // Find two entries fsbench created, and a directory of the tree.
    let mut files = Vec::new();
    let mut stack = vec![root.clone()];
    let mut a_dir = None;
    while let Some(p) = stack.pop() {
        for e in std::fs::read_dir(&p).unwrap().flatten() {
            if e.file_type().unwrap().is_dir() {
                a_dir.get_or_insert(e.path());
                stack.push(e.path());
            } else {
                files.push(e.path());
            }
        }
    }
    assert_eq!(files.len(), 20);
    let outside = sb.file("outside");
    std::fs::create_dir(&outside).unwrap();
    std::fs::write(outside.join("precious"), b"keep me").unwrap();
    let added = a_dir.unwrap().join("notes.txt");
    std::fs::write(&added, b"user data").unwrap();
    std::fs::remove_file(&files[0]).unwrap();
    std::fs::write(&files[0], b"user replaced").unwrap();
    let link = root.join("link");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    let o = sb
        .cmd(&["workload", &f, "--dir", d, "--time", "0.2s"])
        .output()
        .unwrap();
    let err = assert_usage(&o, "run over a changed kept tree");
    assert!(
        err.contains("left 3 entries fsbench did not create: first"),
        "{err}"
    );
    assert_eq!(std::fs::read(&added).unwrap(), b"user data");
    assert_eq!(std::fs::read(&files[0]).unwrap(), b"user replaced");
    assert!(std::fs::symlink_metadata(&link).is_ok());
    assert_eq!(std::fs::read(outside.join("precious")).unwrap(), b"keep me");
    assert!(!files[1].exists(), "fsbench's own files were removed");
    // Once the user moves their files away, the fileset is fsbench's again.
    std::fs::remove_file(&added).unwrap();
    std::fs::remove_file(&files[0]).unwrap();
    std::fs::remove_file(&link).unwrap();
    sb.cmd(&["workload", &f, "--dir", d, "--time", "0.2s"])
        .assert()
        .success();
    assert!(names_in(&data).is_empty(), "{:?}", names_in(&data));
}

/// Item 2: dirwidth=1 used to loop forever at 100 % CPU.
#[test]
fn dirwidth_one_lays_out_and_finishes() {
    let sb = Sandbox::new();
    let f = write_f(
        &sb,
        "w1.f",
        "set $dir=.
define fileset name=fs,path=$dir,entries=1000,dirwidth=1,size=0,prealloc=100
define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }
run 1
",
    );
    let t = Instant::now();
    sb.cmd(&["workload", &f, "--dir", ".", "--time", "0.2s"])
        .timeout(Duration::from_secs(30))
        .assert()
        .success();
    assert!(t.elapsed() < Duration::from_secs(30));
    assert_eq!(sb.listing(), vec!["w1.f".to_string()]);
}

/// Item 3: more processes or threads than can run are refused before anything starts.
#[test]
fn too_many_processes_or_threads_are_refused_up_front() {
    let sb = Sandbox::new();
    let f = write_f(
        &sb,
        "many.f",
        "set $dir=.
define process name=p,instances=100000 { thread name=t { flowop delay name=d,value=1 } }
run 1
",
    );
    let t = Instant::now();
    let o = sb
        .cmd(&["workload", &f, "--time", "1s"])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let err = assert_usage(&o, "instances=100000");
    assert!(err.contains("100000 processes"), "{err}");
    assert!(t.elapsed() < Duration::from_secs(10));
    let o = sb
        .cmd(&[
            "workload",
            "fileserver",
            "-D",
            "nthreads=100000",
            "-D",
            "nfiles=10",
            "--time",
            "1s",
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let err = assert_usage(&o, "nthreads=100000");
    assert!(err.contains("100000 threads"), "{err}");
    assert_eq!(sb.listing(), vec!["many.f".to_string()]);
}

/// Item 4: an absurd fileset is refused with the memory estimate instead of aborting.
#[test]
fn huge_fileset_is_refused_with_the_estimate() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&[
            "workload",
            "createfiles",
            "-D",
            "nfiles=1e12",
            "--time",
            "1s",
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let err = assert_usage(&o, "nfiles=1e12");
    assert!(
        err.contains("memory") && err.contains("bytes each"),
        "{err}"
    );
    assert!(sb.listing().is_empty());
}

/// An ext4 file system mounted with `-o sync` on a loop device: every create and write waits
/// for the device, so preallocation is slow (like a real disk under writeback pressure).
struct SyncExt4 {
    mnt: tempfile::TempDir,
    dev: String,
    _img: tempfile::TempDir,
}

impl SyncExt4 {
    /// Fails the test (`cannot`) when the machine cannot (tests that use it carry
    /// `cfg_attr(not(all(has_loop, has_mkfs_ext4)), ignore)`).
    fn new() -> SyncExt4 {
        if !common::can_use_loop_devices() {
            common::cannot("needs root and loop devices");
        }
        let img = tempfile::tempdir().unwrap();
        let file = img.path().join("img");
        std::fs::File::create(&file)
            .unwrap()
            .set_len(256 << 20)
            .unwrap();
        let out = Command::new("losetup")
            .args(["--find", "--show"])
            .arg(&file)
            .output()
            .unwrap();
        if !out.status.success() {
            common::cannot("losetup could not attach a loop device");
        }
        let dev = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let mnt = tempfile::tempdir().unwrap();
        let fs = SyncExt4 {
            mnt,
            dev,
            _img: img,
        };
        let ok = Command::new("mkfs.ext4")
            .args(["-q", "-F", &fs.dev])
            .status()
            .map(|s| s.success())
            .unwrap_or(false)
            && Command::new("mount")
                .args(["-o", "sync", &fs.dev])
                .arg(fs.mnt.path())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
        if !ok {
            common::cannot("mkfs.ext4 or mount failed");
        }
        fs
    }
    fn path(&self) -> &Path {
        self.mnt.path()
    }
}

impl Drop for SyncExt4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.mnt.path()).status();
        let _ = Command::new("losetup").args(["-d", &self.dev]).status();
    }
}

/// Item 5: Ctrl-C during preallocation stops within a second or two (it used to be ignored
/// until the preallocation ended, ~30 s here), reports partial (130) and removes what was
/// created.
#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn ctrl_c_during_preallocation_stops_and_cleans_up() {
    let fs = SyncExt4::new();
    let sb = Sandbox::new();
    let f = write_f(
        &sb,
        "big.f",
        "set $dir=.
define fileset name=fs,path=$dir,entries=3000,dirwidth=100,size=16k,prealloc=100
define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }
run 1
",
    );
    let mut child = Command::new(bin())
        .args(["workload", &f, "--dir"])
        .arg(fs.path())
        .args(["--time", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        child.try_wait().unwrap().is_none(),
        "preallocation ended before the signal: make the fileset bigger"
    );
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let status = wait_for(&mut child, Duration::from_secs(60)).expect("exits after Ctrl-C");
    let took = t.elapsed();
    assert_eq!(status.code(), Some(130));
    assert!(took < Duration::from_secs(3), "took {took:?} after Ctrl-C");
    let left: Vec<String> = names_in(fs.path())
        .into_iter()
        .filter(|n| n != "lost+found")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// Item 6: ENOSPC while preallocating: the tree is removed and the JSON result is written
/// (status failed, naming the file and the offset).
#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a tmpfs")]
fn enospc_during_preallocation_cleans_up_and_reports() {
    // 2000 one-byte files pass the free-space check (2000 bytes) but each takes a 4 KiB page.
    let fs = Tmpfs::new("size=4m");
    let sb = Sandbox::new();
    let f = write_f(
        &sb,
        "full.f",
        "set $dir=.
define fileset name=fs,path=$dir,entries=2000,dirwidth=50,size=1,prealloc=100
define process name=p { thread name=t { flowop statfile name=s,filesetname=fs } }
run 1
",
    );
    let json = sb.file("r.json");
    let o = sb
        .cmd(&[
            "workload",
            &f,
            "--time",
            "1s",
            "--output",
            json.to_str().unwrap(),
            "--dir",
        ])
        .arg(fs.path())
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    let err = stderr_of(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["status"], "failed");
    let notes = r["notes"].to_string();
    assert!(
        notes.contains("at offset 0") && notes.contains("No space left") && notes.contains("/fs/"),
        "{notes}"
    );
    assert!(names_in(fs.path()).is_empty(), "{:?}", names_in(fs.path()));
}

/// Item 6: a size larger than the file system is refused before anything is written.
#[test]
fn preallocation_larger_than_free_space_is_refused() {
    let sb = Sandbox::new();
    let o = sb
        .cmd(&[
            "workload",
            "fileserver",
            "-D",
            "nfiles=4",
            "-D",
            "filesize=1000t",
            "-D",
            "nthreads=1",
            "--time",
            "1s",
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let err = assert_usage(&o, "filesize=1000t");
    assert!(err.contains("free"), "{err}");
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}

/// Item 7: a second workload in the same directory is refused, naming the first one's PID,
/// and the first one's fileset survives.
#[test]
fn second_workload_in_the_same_dir_is_refused() {
    let sb = Sandbox::new();
    let f = write_f(&sb, "stat.f", STAT_SET);
    let data = sb.file("data");
    std::fs::create_dir(&data).unwrap();
    let mut first = Command::new(bin())
        .args(["workload", &f, "--time", "20s", "--dir"])
        .arg(&data)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let t = Instant::now();
    while !data.join("fs").exists() && t.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    let o = sb
        .cmd(&[
            "workload",
            &f,
            "--time",
            "1s",
            "--dir",
            data.to_str().unwrap(),
        ])
        .timeout(Duration::from_secs(20))
        .output()
        .unwrap();
    let err = assert_usage(&o, "second run");
    assert!(err.contains(&first.id().to_string()), "{err}");
    assert!(data.join("fs").exists(), "the first run's fileset survives");
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(first.id() as i32, libc::SIGINT) };
    let s = wait_for(&mut first, Duration::from_secs(10)).expect("first run ends");
    assert_eq!(s.code(), Some(130));
    assert!(names_in(&data).is_empty(), "{:?}", names_in(&data));
}

/// Item 8: a write error during the run names the file and the offset.
#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a tmpfs")]
fn run_time_write_error_names_file_and_offset() {
    let fs = Tmpfs::new("size=4m");
    let sb = Sandbox::new();
    let f = write_f(
        &sb,
        "fill.f",
        "set $dir=.
define fileset name=fs,path=$dir,entries=10,size=1m,prealloc=0
define process name=p { thread name=t {
  flowop createfile name=c,filesetname=fs,fd=1
  flowop write name=w,fd=1,iosize=1m,iters=100
  flowop closefile name=cl,fd=1 } }
run 5
",
    );
    let json = sb.file("r.json");
    let o = sb
        .cmd(&[
            "workload",
            &f,
            "--time",
            "5s",
            "--output",
            json.to_str().unwrap(),
            "--dir",
        ])
        .arg(fs.path())
        .timeout(Duration::from_secs(30))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", stderr_of(&o));
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let failures = r["failures"].to_string();
    assert!(
        failures.contains("/fs/")
            && failures.contains("at offset")
            && failures.contains("No space"),
        "{failures}"
    );
    assert!(names_in(fs.path()).is_empty(), "{:?}", names_in(fs.path()));
}

/// Item 10: bad input is one line and exit 2.
#[test]
fn bad_values_and_bad_files_are_usage_errors() {
    let sb = Sandbox::new();
    for d in [
        "nfiles=-1",
        "nfiles=x",
        "nfiles=nan",
        "nfiles=1e400",
        "filesize=-4k",
    ] {
        let o = sb
            .cmd(&["workload", "createfiles", "-D", d, "--time", "1s"])
            .output()
            .unwrap();
        let err = assert_usage(&o, d);
        assert!(err.contains("createfiles:"), "{d}: {err}");
    }
    let mut junk: Vec<u8> = b"set $dir=.\n# ok so far\ndefine \xff\xfe junk".to_vec();
    junk.extend((0..200u32).map(|i| (i * 37 % 251) as u8));
    let p = sb.file("junk.f");
    std::fs::write(&p, &junk).unwrap();
    let o = sb.cmd(&["workload", p.to_str().unwrap()]).output().unwrap();
    let err = assert_usage(&o, "random bytes");
    assert!(err.contains("junk.f:3:8:"), "{err}");
    std::fs::create_dir(sb.file("d")).unwrap();
    for args in [
        "sweep --workload bogus --time 1s d --output w",
        "sweep --workload fileserver -D nfiles=x --time 1s d --output w",
        "sweep --workload fileserver -D nfiles=10,-1 --time 1s d --output w",
    ] {
        let o = sb.cmd(&common::words(args)).output().unwrap();
        assert_usage(&o, args);
        assert!(!sb.file("w").exists(), "{args}: nothing written");
    }
    assert_eq!(sb.listing(), vec!["d".to_string(), "junk.f".to_string()]);
}

/// Item 11: killing the parent ends the worker processes.
#[test]
fn workers_die_with_a_killed_parent() {
    let sb = Sandbox::new();
    let f = write_f(
        &sb,
        "procs.f",
        "set $dir=.
define process name=p,instances=3 { thread name=t { flowop delay name=d,value=1 } }
run 30
",
    );
    let mut parent = Command::new(bin())
        .args(["workload", &f, "--time", "30s", "--dir"])
        .arg(sb.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let ppid = parent.id();
    let children = |ppid: u32| -> Vec<u32> {
        let mut v = Vec::new();
        for e in std::fs::read_dir("/proc").unwrap().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
                // pid (comm) state ppid ...
                let rest = stat.rsplit(')').next().unwrap_or("");
                let f: Vec<&str> = rest.split_whitespace().collect();
                if f.get(1).and_then(|x| x.parse::<u32>().ok()) == Some(ppid) {
                    v.push(pid);
                }
            }
        }
        v
    };
    let t = Instant::now();
    let mut kids = Vec::new();
    while t.elapsed() < Duration::from_secs(15) {
        kids = children(ppid);
        if kids.len() >= 3 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(kids.len(), 3, "three worker processes started");
    std::thread::sleep(Duration::from_millis(300));
    parent.kill().unwrap();
    parent.wait().unwrap();
    let alive = |pid: u32| -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => !s
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim_start()
                .starts_with('Z'),
            Err(_) => false,
        }
    };
    let t = Instant::now();
    while kids.iter().any(|&k| alive(k)) && t.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<u32> = kids.iter().copied().filter(|&k| alive(k)).collect();
    for &k in &left {
        // SAFETY: cleaning up the worker this test caused, by its PID.
        unsafe { libc::kill(k as i32, libc::SIGKILL) };
    }
    assert!(left.is_empty(), "workers still running: {left:?}");
}

mod parse_fuzz {
    use proptest::prelude::*;

    fn stock() -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("workloads");
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "f"))
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect();
        v.sort();
        v
    }

    fn load(text: String, defines: Vec<(String, String)>) {
        let src = fsbench::workload::Source {
            name: "fuzz.f".into(),
            text,
            defines,
            shared_rank: None,
        };
        if let Err(e) = fsbench::workload::load_source(&src) {
            assert!(fsbench::error::is_usage(&e), "not a usage error: {e:#}");
            assert_eq!(format!("{e}").lines().count(), 1, "{e}");
        }
    }

    const WORDS: &[&str] = &[
        "-1",
        "1e400",
        "nan",
        "-inf",
        "0",
        "x",
        "$",
        "{",
        "}",
        ",",
        "=",
        "\"",
        "\n",
        "1k",
        "-2k",
        "define",
        "flowop",
        "fileset",
        "$nfiles",
        "$dir",
        "entries=-5",
        "instances=-1",
    ];

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        #[test]
        fn random_bytes_are_usage_errors(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
            load(String::from_utf8_lossy(&bytes).to_string(), vec![("dir".into(), "/nonexistent".into())]);
        }

        #[test]
        fn mutated_stock_files_are_usage_errors(
            which in 0usize..64,
            edits in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..3, 0usize..WORDS.len()), 1..6),
            define in proptest::option::of((0usize..4, 0usize..WORDS.len())),
        ) {
            let all = stock();
            let mut text = all[which % all.len()].clone().into_bytes();
            for (at, op, w) in edits {
                let i = at.index(text.len() + 1);
                let word = WORDS[w].as_bytes();
                match op {
                    0 => { text.splice(i..i, word.iter().copied()); }
                    1 => { let end = (i + word.len()).min(text.len()); text.splice(i..end, word.iter().copied()); }
                    _ => { let end = (i + 3).min(text.len()); text.drain(i..end); }
                }
            }
            let mut defines = vec![("dir".to_string(), "/nonexistent".to_string())];
            if let Some((k, w)) = define {
                let name = ["nfiles", "nthreads", "filesize", "iosize"][k];
                defines.push((name.into(), WORDS[w].into()));
            }
            load(String::from_utf8_lossy(&text).to_string(), defines);
        }
    }
}
