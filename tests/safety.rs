//! Never lose data: refusals without --force, what --force allows, cleanup after failures,
//! and block devices with signatures. Loop-device tests run when root and are reported as
//! ignored (`SKIPPED: reason`) otherwise.

mod common;
use common::{words, LoopDevice, MountedFs, Sandbox};

fn digest(p: &std::path::Path) -> Vec<u8> {
    std::fs::read(p).unwrap()
}

#[test]
fn refuses_to_write_a_file_it_did_not_create() {
    let sb = Sandbox::new();
    let f = sb.file("precious");
    std::fs::write(&f, vec![42u8; 100_000]).unwrap();
    let before = digest(&f);
    for args in [
        vec![
            "vx",
            "-t",
            "-w",
            "write",
            "-i",
            "iosize=4k,iocount=10",
            "precious",
        ],
        vec![
            "vx",
            "-t",
            "-w",
            "rand_mixed",
            "-i",
            "iosize=4k,iocount=10",
            "precious",
        ],
        vec![
            "vx",
            "-t",
            "-w",
            "mmap_write",
            "-i",
            "iosize=4k,iocount=10",
            "precious",
        ],
        vec![
            "vx",
            "-t",
            "-w",
            "read",
            "-o",
            "trunc",
            "-i",
            "iosize=4k,iocount=10",
            "precious",
        ],
        vec![
            "run",
            "--rw",
            "randwrite",
            "--bs",
            "4k",
            "--count",
            "10",
            "precious",
        ],
    ] {
        let out = sb.cmd(&args).assert().code(2);
        let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
        assert!(
            err.contains("refusing") && err.contains("--force"),
            "{args:?}: {err}"
        );
        assert_eq!(err.trim().lines().count(), 1, "one clear line: {err}");
        assert_eq!(digest(&f), before, "{args:?} changed the file");
    }
    // Reading it is fine, stays inside the file, and leaves it alone.
    let v = sb.run_json(&words(
        "vx -t -w rand_read -i iosize=4k,iocount=100 precious",
    ));
    assert_eq!(v["total"]["read_ops"], 100);
    assert!(v["plan"]["targets"][0]["size"].as_u64().unwrap() <= 100_000);
    assert_eq!(digest(&f), before);
    // With --force the write happens, and the file is not removed (fsbench did not create it).
    sb.cmd(&words(
        "vx -t -w write -i iosize=4k,iocount=10 --force precious",
    ))
    .assert()
    .success();
    assert!(f.exists());
    assert_ne!(digest(&f), before);
}

#[test]
fn directory_and_missing_parent_are_usage_errors() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("d")).unwrap();
    sb.cmd(&words("vx -w read d"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("directory"));
    sb.cmd(&words("vx -w write no/such/dir/f"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("cannot create"));
}

#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a small tmpfs")]
fn full_file_system_ends_the_run_with_partial_results_and_cleanup() {
    let mnt = tempfile::tempdir().unwrap();
    let _u = common::Tmpfs::mount(mnt.path(), "size=4m");
    let sb = Sandbox::new();
    let target = mnt.path().join("big");
    let json = sb.file("r.json");
    // A job larger than the free space is refused before it writes (free-space check), so
    // the file system fills during the run: a paced 3 MiB write, and a 2 MiB hog written by
    // another program once the run has started.
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
        .current_dir(sb.path())
        .args([
            "vx",
            "-t",
            "-w",
            "write",
            "-i",
            "iosize=64k,iocount=48",
            "--rate-iops",
            "40",
            "--output",
            json.to_str().unwrap(),
            target.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    while !target.exists() && t0.elapsed() < std::time::Duration::from_secs(10) {
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    std::fs::write(mnt.path().join("hog"), vec![1u8; 2 << 20]).unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("FAILED"), "{text}");
    assert!(text.contains("ENOSPC") && text.contains("offset"), "{text}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["status"], "failed");
    let done = v["total"]["write_ops"].as_u64().unwrap();
    assert!(done > 0 && done < 48, "partial: {done}");
    assert!(v["failures"][0]["offset"].as_u64().is_some());
    assert!(!target.exists(), "created file removed after the failure");
}

#[test]
fn sigint_gives_partial_results() {
    for mode in ["-t", "-P"] {
        let sb = Sandbox::new();
        let json = sb.file("r.json");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("fsbench"))
            .current_dir(sb.path())
            .args([
                "vx",
                mode,
                "-w",
                "rand_read",
                "-i",
                "iosize=4k,maxfilesize=1m",
                "--time",
                "60s",
                "--output",
            ])
            .arg(&json)
            .arg("f")
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1500));
        let started = std::time::Instant::now();
        // SAFETY: signalling the child we started.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        let status = child.wait().unwrap();
        assert!(started.elapsed().as_secs() < 10, "stopped promptly");
        assert_eq!(status.code(), Some(130), "{mode}");
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        assert_eq!(v["status"], "partial", "{mode}");
        assert!(v["total"]["read_ops"].as_u64().unwrap() > 0, "{mode}");
        assert!(!sb.file("f").exists(), "{mode}: created file removed");
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn raw_device_rules_on_loop_devices() {
    if !common::can_use_loop_devices() {
        common::cannot("raw device tests need root and losetup");
    }
    let sb = Sandbox::new();
    let Some(lo) = LoopDevice::new(sb.path(), 64) else {
        common::cannot("losetup could not attach a loop device");
    };
    let dev = lo.dev.to_str().unwrap().to_string();
    // A blank device: raw I/O, writes allowed.
    let v = sb.run_json(&[
        "vx",
        "-t",
        "-w",
        "rand_write",
        "-i",
        "iosize=4k,iocount=100",
        &dev,
    ]);
    assert_eq!(v["plan"]["cache"]["policy"], "raw");
    assert_eq!(v["total"]["direct_ops"], 100);
    let v = sb.run_json(&[
        "vx",
        "-t",
        "-w",
        "read",
        "-i",
        "iosize=64k,iocount=100",
        &dev,
    ]);
    assert_eq!(v["total"]["read_ops"], 100);
    // A device with a file system: writes refused, reads allowed.
    let mk = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", &dev])
        .status();
    if !mk.map(|s| s.success()).unwrap_or(false) {
        common::cannot("mkfs.ext4 failed");
    }
    let before = {
        let mut b = vec![0u8; 4096];
        use std::io::Read;
        std::fs::File::open(&dev)
            .unwrap()
            .read_exact(&mut b)
            .unwrap();
        b
    };
    let out = sb
        .cmd(&[
            "vx",
            "-t",
            "-w",
            "write",
            "-i",
            "iosize=4k,iocount=10",
            &dev,
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("ext2/3/4") && err.contains("--force"), "{err}");
    sb.cmd(&["vx", "-t", "-w", "read", "-i", "iosize=4k,iocount=10", &dev])
        .assert()
        .success();
    let after = {
        let mut b = vec![0u8; 4096];
        use std::io::Read;
        std::fs::File::open(&dev)
            .unwrap()
            .read_exact(&mut b)
            .unwrap();
        b
    };
    assert_eq!(before, after);
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn mounted_device_is_refused() {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), "ext4", 64) else {
        common::cannot("could not make and mount ext4 on a loop device");
    };
    let dev = fs.lo.dev.to_str().unwrap().to_string();
    let out = sb
        .cmd(&[
            "vx",
            "-t",
            "-w",
            "write",
            "-i",
            "iosize=4k,iocount=10",
            &dev,
        ])
        .assert()
        .code(2);
    let err = String::from_utf8_lossy(&out.get_output().stderr).to_string();
    assert!(err.contains("mounted"), "{err}");
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_xfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.xfs"
)]
fn extsize_hint_on_xfs() {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), "xfs", 300) else {
        common::cannot("could not make and mount XFS on a loop device");
    };
    let f = fs.path().join("e");
    let f = f.to_str().unwrap();
    let v = sb.run_json(&[
        "vx",
        "-t",
        "-w",
        "write",
        "-e",
        "1024",
        "-i",
        "iosize=64k,iocount=32",
        "--keep",
        f,
    ]);
    assert_eq!(v["status"], "complete");
    let out = std::process::Command::new("xfs_io")
        .args(["-c", "extsize", f])
        .output();
    if let Ok(o) = out {
        let s = String::from_utf8_lossy(&o.stdout);
        assert!(s.contains("1048576"), "xfs_io extsize: {s}");
    }
    // Reused without --force because fsbench marked it.
    sb.cmd(&[
        "vx",
        "-t",
        "-w",
        "rand_write",
        "-i",
        "iosize=4k,iocount=16,remove",
        f,
    ])
    .assert()
    .success();
    assert!(!std::path::Path::new(f).exists());
}

/// CRC-32 (IEEE), as GPT headers carry it.
fn crc32_ieee(bytes: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &b in bytes {
        crc ^= b as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xEDB8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

/// A backup GPT header for a disk of `lbas` 512-byte sectors, as it sits in the last one.
fn backup_gpt_header(lbas: u64) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[0..8].copy_from_slice(b"EFI PART");
    h[8..12].copy_from_slice(&0x0001_0000u32.to_le_bytes());
    h[12..16].copy_from_slice(&92u32.to_le_bytes());
    h[24..32].copy_from_slice(&(lbas - 1).to_le_bytes()); // this header
    h[32..40].copy_from_slice(&1u64.to_le_bytes()); // the primary
    h[40..48].copy_from_slice(&34u64.to_le_bytes()); // first usable
    h[48..56].copy_from_slice(&(lbas - 34).to_le_bytes()); // last usable
    h[56..72].copy_from_slice(&[0x5a; 16]); // disk GUID
    h[72..80].copy_from_slice(&(lbas - 33).to_le_bytes()); // entries
    h[80..84].copy_from_slice(&128u32.to_le_bytes());
    h[84..88].copy_from_slice(&128u32.to_le_bytes());
    h[88..92].copy_from_slice(&crc32_ieee(&[0u8; 128 * 128]).to_le_bytes());
    let crc = crc32_ieee(&h[..92]);
    h[16..20].copy_from_slice(&crc.to_le_bytes());
    h
}

/// A device whose primary GPT header was wiped but whose backup (last LBA) survives still
/// holds a partition table (gdisk rebuilds it from the backup): a write is refused and the
/// device is left as it was.
#[test]
#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]
fn a_gpt_with_only_its_backup_header_is_not_written_over() {
    if !common::can_use_loop_devices() {
        common::cannot("needs root and losetup");
    }
    let sb = Sandbox::new();
    let Some(lo) = LoopDevice::new(sb.path(), 16) else {
        common::cannot("losetup could not attach a loop device");
    };
    let size: u64 = 16 << 20;
    {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .open(&lo.dev)
            .unwrap();
        f.write_all_at(&backup_gpt_header(size / 512), size - 512)
            .unwrap();
        f.sync_all().unwrap();
    }
    let before = std::fs::read(&lo.backing).unwrap();
    let dev = lo.dev.to_str().unwrap().to_string();
    let out = sb
        .cmd(&[
            "vx",
            "-t",
            "-w",
            "write",
            "-i",
            "iosize=4k,iocount=10",
            &dev,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("GPT partition table") && err.contains("--force"),
        "{err}"
    );
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");
    assert!(
        std::fs::read(&lo.backing).unwrap() == before,
        "device untouched"
    );
}
