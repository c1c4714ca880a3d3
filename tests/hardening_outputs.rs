//! Hardening of everything fsbench writes besides its targets: `--output` files, the
//! temporary files behind them, sweep and suite results directories, concurrent sweeps,
//! leftovers of a killed raw sweep, and the signatures that make a block device off limits.

mod common;
use common::{words, LoopDevice, Sandbox};
use std::io::{Seek, SeekFrom, Write};
use std::os::unix::fs::symlink;
use std::path::Path;

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

/// Exit 2 with exactly one line on stderr; returns that line.
fn refused(sb: &Sandbox, args: &[&str]) -> String {
    let out = sb.cmd(args).assert().code(2).get_output().clone();
    let err = stderr_of(&out);
    assert_eq!(err.trim_end().lines().count(), 1, "not one line: {err}");
    err
}

#[test]
fn output_never_replaces_a_foreign_file_or_a_non_regular_one() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("precious.txt"), b"my notes").unwrap();
    // Refused before the run: the target is not even created.
    let err = refused(
        &sb,
        &words("run --rw write --size 64k f.dat --output precious.txt"),
    );
    assert!(
        err.contains("precious.txt") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(std::fs::read(sb.file("precious.txt")).unwrap(), b"my notes");
    assert!(!sb.file("f.dat").exists(), "the run started anyway");
    // A target fsbench may only read is not an output either.
    std::fs::write(sb.file("data.bin"), vec![7u8; 65536]).unwrap();
    refused(
        &sb,
        &words("run --rw read --size 64k data.bin --output data.bin"),
    );
    assert_eq!(
        std::fs::read(sb.file("data.bin")).unwrap(),
        vec![7u8; 65536]
    );
    // Same rule for the other commands that take --output FILE.
    refused(
        &sb,
        &words("vx -w write -i iosize=4k,iocount=4 g.dat --output precious.txt"),
    );
    refused(
        &sb,
        &words("quick --size 64k --time 1s --output precious.txt"),
    );
    refused(&sb, &words("advise . --output precious.txt"));
    assert_eq!(std::fs::read(sb.file("precious.txt")).unwrap(), b"my notes");
    // With --force a foreign regular file may be replaced...
    sb.cmd(&words(
        "run --rw write --size 64k f.dat --output precious.txt --force",
    ))
    .assert()
    .success();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(sb.file("precious.txt")).unwrap()).unwrap();
    assert_eq!(v["kind"], "io");
    // ...and fsbench's own result is replaced without it.
    sb.cmd(&words(
        "run --rw read --size 64k f.dat --output precious.txt",
    ))
    .assert()
    .success();
    // A device, a fifo, a directory or a symbolic link: never, even with --force.
    let fifo = sb.file("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    std::fs::create_dir(sb.file("adir")).unwrap();
    symlink(sb.file("data.bin"), sb.file("link.json")).unwrap();
    for out in ["/dev/null", "fifo", "adir", "link.json"] {
        let err = refused(
            &sb,
            &[
                "run", "--rw", "read", "--size", "64k", "f.dat", "--output", out, "--force",
            ],
        );
        assert!(err.contains("never replaces"), "{out}: {err}");
    }
    assert!(std::fs::symlink_metadata(sb.file("link.json"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        std::fs::read(sb.file("data.bin")).unwrap(),
        vec![7u8; 65536]
    );
}

#[test]
fn planted_partial_files_are_not_followed_or_removed() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("victim"), b"victim data").unwrap();
    symlink(sb.file("victim"), sb.file("out.json.partial")).unwrap();
    std::fs::write(sb.file("report.partial"), b"someone's work").unwrap();
    sb.cmd(&words("run --rw write --size 64k f.dat --output out.json"))
        .assert()
        .success();
    assert_eq!(std::fs::read(sb.file("victim")).unwrap(), b"victim data");
    assert!(std::fs::symlink_metadata(sb.file("out.json.partial"))
        .unwrap()
        .file_type()
        .is_symlink());
    // `report --output report.html` used report.partial as its temporary file.
    sb.cmd(&words("report out.json --format html --output report.html"))
        .assert()
        .success();
    assert_eq!(
        std::fs::read(sb.file("report.partial")).unwrap(),
        b"someone's work"
    );
    // No temporary of ours is left behind.
    let left: Vec<String> = sb
        .listing()
        .into_iter()
        .filter(|n| n.contains(".fsbench-"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // And report --output respects foreign files too.
    std::fs::write(sb.file("mine.md"), b"# my document").unwrap();
    refused(&sb, &words("report out.json --format md --output mine.md"));
    assert_eq!(std::fs::read(sb.file("mine.md")).unwrap(), b"# my document");
}

const SWEEP: &str = "sweep --rw write --bs 4k,8k --size 64k f --output res";

#[test]
fn sweep_output_directory_is_fsbench_s_only_when_marked() {
    let sb = Sandbox::new();
    // A directory of someone else's files is refused.
    std::fs::create_dir(sb.file("res")).unwrap();
    std::fs::write(sb.file("res/report.html"), b"<p>mine</p>").unwrap();
    let err = refused(&sb, &words(SWEEP));
    assert!(err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read(sb.file("res/report.html")).unwrap(),
        b"<p>mine</p>"
    );
    // With --force the directory is used, but a foreign file in it is still refused unless
    // --force, and never followed when it is a link.
    std::fs::remove_file(sb.file("res/report.html")).unwrap();
    std::fs::remove_dir(sb.file("res")).unwrap();
    sb.cmd(&words(SWEEP)).assert().success();
    assert!(sb.file("res/.fsbench-results").exists());
    // Our own directory: a re-run is fine.
    sb.cmd(&words(SWEEP)).assert().success();
    // A planted link in it is not followed, even with --force.
    std::fs::write(sb.file("victim"), b"victim").unwrap();
    std::fs::remove_file(sb.file("res/report.md")).unwrap();
    symlink(sb.file("victim"), sb.file("res/report.md")).unwrap();
    let force = format!("{SWEEP} --force");
    refused(&sb, &words(&force));
    assert_eq!(std::fs::read(sb.file("victim")).unwrap(), b"victim");
    // A foreign file under a point's name is refused.
    std::fs::remove_file(sb.file("res/report.md")).unwrap();
    let point = std::fs::read_dir(sb.file("res"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "json"))
        .unwrap();
    // (A new file: one written in place would keep our mark.)
    std::fs::remove_file(&point).unwrap();
    std::fs::write(&point, b"not fsbench's").unwrap();
    refused(&sb, &words(&format!("{SWEEP} --fresh")));
    assert_eq!(std::fs::read(&point).unwrap(), b"not fsbench's");
}

#[test]
fn suite_output_directory_is_refused_when_foreign() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("d")).unwrap();
    std::fs::create_dir(sb.file("out")).unwrap();
    std::fs::write(sb.file("out/sweep-0000.json"), b"someone else's").unwrap();
    let err = refused(
        &sb,
        &words("suite whitepaper --dir d --scale 0.01 --output out"),
    );
    assert!(err.contains("out") && err.contains("--force"), "{err}");
    assert_eq!(
        std::fs::read(sb.file("out/sweep-0000.json")).unwrap(),
        b"someone else's"
    );
}

#[test]
fn points_stored_with_other_settings_are_not_overwritten() {
    let sb = Sandbox::new();
    sb.cmd(&words(SWEEP)).assert().success();
    let stored: Vec<(std::path::PathBuf, Vec<u8>)> = std::fs::read_dir(sb.file("res"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .map(|p| {
            let b = std::fs::read(&p).unwrap();
            (p, b)
        })
        .collect();
    assert_eq!(stored.len(), 2);
    // Same points, another file size: refused naming the setting, nothing measured.
    let other = SWEEP.replace("--size 64k", "--size 128k");
    let err = refused(&sb, &words(&other));
    assert!(
        err.contains("size=64k") && err.contains("size=128k"),
        "{err}"
    );
    for (p, b) in &stored {
        assert_eq!(&std::fs::read(p).unwrap(), b, "{} changed", p.display());
    }
    // --force replaces them.
    sb.cmd(&words(&format!("{other} --force")))
        .assert()
        .success();
    let v: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&stored[0].0).unwrap()).unwrap();
    assert!(v.to_string().contains("128k"), "{v}");
}

#[test]
fn two_sweeps_into_one_directory_are_refused() {
    let sb = Sandbox::new();
    let long = "sweep --rw write --bs 4k,8k --size 1m --time 2s f --output res";
    let mut first = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args(words(long))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The marker file appears once the first run holds the directory.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !sb.file("res/.fsbench-results").exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let err = refused(
        &sb,
        &words("sweep --rw write --bs 4k --size 64k g --output res"),
    );
    let _ = first.wait();
    assert!(
        err.contains(&first.id().to_string()),
        "holder not named: {err}"
    );
}

/// Loop devices whose backing file lies in `dir`.
fn loops_into(dir: &Path) -> Vec<String> {
    let canon = std::fs::canonicalize(dir).unwrap();
    std::fs::read_dir("/sys/block")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let b = std::fs::read_to_string(e.path().join("loop/backing_file")).ok()?;
            Path::new(b.trim())
                .starts_with(&canon)
                .then(|| e.file_name().to_string_lossy().to_string())
        })
        .collect()
}

fn raw_images(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with(".fsbench-raw-"))
        .collect()
}

#[test]
#[cfg_attr(
    not(has_loop),
    ignore = "SKIPPED: raw sweeps need root and loop devices"
)]
fn a_killed_raw_sweep_leaves_nothing_after_the_next_run() {
    if !common::can_use_loop_devices() {
        common::cannot("raw sweeps need root and loop devices");
    }
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("t")).unwrap();
    let mut victim = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args(words(
            "sweep --rw read --cache raw,buffered --size 16m --bs 4k --time 30s t/f --output res",
        ))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while loops_into(&sb.file("t")).is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let attached = !loops_into(&sb.file("t")).is_empty();
    // SAFETY: kill of the child we started.
    unsafe { libc::kill(victim.id() as i32, libc::SIGKILL) };
    let _ = victim.wait();
    if !attached {
        common::cannot("the raw sweep attached no loop device within 60 s");
    }
    assert!(
        !raw_images(&sb.file("t")).is_empty(),
        "nothing was left to clean"
    );
    sb.cmd(&words(
        "sweep --rw read --cache raw --size 1m --bs 4k --count 8 t/f --output res2",
    ))
    .assert()
    .success();
    assert!(
        raw_images(&sb.file("t")).is_empty(),
        "{:?}",
        raw_images(&sb.file("t"))
    );
    // `losetup -d` of a device another process still has open (udev probing a new loop
    // device) succeeds but only marks it to detach at its last close: wait for that.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !loops_into(&sb.file("t")).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        loops_into(&sb.file("t")).is_empty(),
        "{:?}",
        loops_into(&sb.file("t"))
    );
}

/// An image of `mb` MiB with `writes` applied, on a loop device; fails the test (`cannot`)
/// when losetup cannot attach it.
fn device_with(sb: &Sandbox, name: &str, mb: u64, writes: &[(u64, &[u8])]) -> LoopDevice {
    let Some(lo) = LoopDevice::new(&sb.file(name), mb) else {
        common::cannot("losetup could not attach a loop device");
    };
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .open(&lo.dev)
        .unwrap();
    for (off, b) in writes {
        f.seek(SeekFrom::Start(*off)).unwrap();
        f.write_all(b).unwrap();
    }
    f.sync_all().unwrap();
    lo
}

fn refuses_writes_to(sb: &Sandbox, dev: &Path, what: &str) {
    let d = dev.to_str().unwrap();
    let err = refused(
        sb,
        &["run", "--rw", "write", "--bs", "4k", "--count", "4", d],
    );
    assert!(
        err.contains("refusing") && err.contains(what),
        "{d} ({what}): {err}"
    );
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_minix, has_mkfs_bfs)),
    ignore = "SKIPPED: needs root, loop devices, mkfs.minix and mkfs.bfs"
)]
fn signatures_on_loop_devices_refuse_writes() {
    if !common::can_use_loop_devices() {
        common::cannot("block device tests need root and losetup");
    }
    let sb = Sandbox::new();
    const MD: &[u8] = &[0xfc, 0x4e, 0x2b, 0xa9];
    // 33 MiB + 12 KiB would not fit a loop device size granularity: use 33 MiB.
    let size: u64 = 33 << 20;
    for (name, off) in [
        ("md12", 0x1000),
        ("md090", (size & !0xffff) - 0x10000),
        ("md10", (size - 8192) & !4095),
    ] {
        std::fs::create_dir(sb.file(name)).unwrap();
        let lo = device_with(&sb, name, 33, &[(off, MD)]);
        refuses_writes_to(&sb, &lo.dev, "md RAID");
    }
    let tools: [(&str, &[&str], &str); 2] = [("mkfs.minix", &[], "minix"), ("mkfs.bfs", &[], "")];
    for (tool, args, what) in tools {
        std::fs::create_dir(sb.file(tool)).unwrap();
        let lo = device_with(&sb, tool, 8, &[]);
        let ok = std::process::Command::new(tool)
            .args(args)
            .arg(&lo.dev)
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            common::cannot(&format!("{tool} failed"));
        }
        refuses_writes_to(&sb, &lo.dev, if what.is_empty() { "BFS" } else { what });
    }
}

/// cramfs: an image built from a directory, written onto the device.
#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_cramfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.cramfs"
)]
fn a_cramfs_image_on_a_loop_device_refuses_writes() {
    let sb = Sandbox::new();
    std::fs::create_dir_all(sb.file("tree/sub")).unwrap();
    std::fs::write(sb.file("tree/sub/f"), b"hello").unwrap();
    let img = sb.file("cramfs.img");
    let made = std::process::Command::new("mkfs.cramfs")
        .arg(sb.file("tree"))
        .arg(&img)
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        common::cannot("mkfs.cramfs failed");
    }
    let bytes = std::fs::read(&img).unwrap();
    std::fs::create_dir(sb.file("cram")).unwrap();
    let lo = device_with(&sb, "cram", 8, &[(0, &bytes)]);
    refuses_writes_to(&sb, &lo.dev, "cramfs");
}

#[test]
fn a_sweep_refused_at_its_first_point_prints_one_line_and_leaves_nothing() {
    for target in ["sub", "fifo", "missing/x"] {
        let sb = Sandbox::new();
        std::fs::create_dir(sb.file("sub")).unwrap();
        let c = std::ffi::CString::new(sb.file("fifo").to_str().unwrap()).unwrap();
        // SAFETY: mkfifo with a NUL-terminated path inside the sandbox.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let mut args = words("sweep --time 0.1s --size 64k --bs 4k,8k");
        args.push(target);
        refused(&sb, &args);
        assert_eq!(
            sb.listing(),
            ["fifo", "sub"],
            "{target}: a refused sweep left something"
        );
    }
}

#[test]
fn an_unwritable_standard_output_is_one_error_line_not_a_panic() {
    let sb = Sandbox::new();
    for args in [
        "run --rw write --size 64k f.dat",
        "suite list",
        "workload list",
    ] {
        let full = std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
            .current_dir(sb.path())
            .args(words(args))
            .stdout(full)
            .output()
            .unwrap();
        let err = stderr_of(&out);
        assert_eq!(out.status.code(), Some(1), "{args}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args}: {err}");
        assert!(
            err.contains("cannot write to standard output"),
            "{args}: {err}"
        );
        assert!(!sb.file("f.dat").exists(), "{args}: target left behind");
    }
}
