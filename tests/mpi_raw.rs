//! Raw I/O on MPI ranks (issue #16, h-rawranks): `run` on a block device every rank shares
//! (`--shared-file`, a SAN LUN's N-to-1 case; a loop device made by the test here), each rank
//! on its segment or stride, with the one-host safety checks and `--size` default; a device
//! with `--file-per-rank` refused; and a sweep's raw points on a file target, where every rank
//! makes a loop device of its own in its own directory and releases it at the end. The real
//! binary under `mpirun --allow-run-as-root --oversubscribe -np 4` on this machine. Run with
//! `cargo test --release --features mpi --test mpi_raw -- --test-threads=1`.
#![cfg(feature = "mpi")]

mod common;

use common::{mpi_refused_in_one_line, sweep_records, u, LoopDevice, Sandbox};
use serde_json::Value;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Output;

const NP: u64 = 4;

/// `mpirun -np 4 fsbench ARGS` in the sandbox (`common::mpirun`).
fn mpirun(sb: &Sandbox, args: &[&str]) -> Output {
    common::mpirun(sb, NP, args)
}

/// Run on the ranks with --output: the Result (the run must succeed).
fn run_json(sb: &Sandbox, args: &[&str]) -> Value {
    common::mpirun_json(sb, NP, args)
}

/// A zero-filled loop device of `mb` MiB over a file in the sandbox (detached on drop).
fn loop_device(sb: &Sandbox, mb: u64) -> LoopDevice {
    if !common::can_use_loop_devices() {
        common::cannot("raw device tests need root, losetup and /dev/loop-control");
    }
    LoopDevice::new(sb.path(), mb)
        .unwrap_or_else(|| common::cannot("losetup could not attach a loop device"))
}

/// `len` bytes of the device from `off`.
fn read_at(dev: &Path, off: u64, len: usize) -> Vec<u8> {
    let mut f = std::fs::File::open(dev).unwrap();
    // Pages cached by an earlier look are dropped, so the device itself is read.
    // SAFETY: fadvise on a descriptor we own; no memory is passed.
    unsafe {
        libc::posix_fadvise(
            std::os::fd::AsRawFd::as_raw_fd(&f),
            0,
            0,
            libc::POSIX_FADV_DONTNEED,
        )
    };
    f.seek(SeekFrom::Start(off)).unwrap();
    let mut b = vec![0u8; len];
    f.read_exact(&mut b).unwrap();
    b
}

/// Overwrite the whole device with zeros.
fn zero(dev: &Path, mb: u64) {
    let mut f = std::fs::OpenOptions::new().write(true).open(dev).unwrap();
    let z = vec![0u8; 1 << 20];
    for _ in 0..mb {
        f.write_all(&z).unwrap();
    }
    f.sync_all().unwrap();
}

/// The whole device's content hashed (FNV-1a): to show a refused run changed nothing.
fn checksum(dev: &Path) -> u64 {
    let mut f = std::fs::File::open(dev).unwrap();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).unwrap();
        if n == 0 {
            return h;
        }
        for &b in &buf[..n] {
            h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// Every rank's row: (rank, bytes, targets).
fn rank_rows(r: &Value) -> Vec<(u64, u64, Vec<String>)> {
    r["ranks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| {
            let t = x["targets"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t.as_str().unwrap().to_string())
                .collect();
            (u(&x["rank"]), u(&x["bytes"]), t)
        })
        .collect()
}

/// 4 ranks write their segments of one shared raw device, --verify reading every block back;
/// each rank's row has its exact bytes on the device; the device holds data in each rank's
/// segment and nothing past `--size`. Then strided, and reads under every cache policy, and a
/// run without `--size` covering the whole device, as on one host.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_loop)),
    ignore = "SKIPPED: needs mpirun (openmpi-bin), root and loop devices"
)]
fn four_ranks_share_a_raw_device_each_on_its_part() {
    let sb = Sandbox::new();
    let lo = loop_device(&sb, 32);
    let dev = lo.dev.to_str().unwrap();
    let seg: u64 = 4 << 20;
    let line =
        format!("run {dev} --shared-file --cache raw --rw write --bs 64k --size 16m --verify");
    let r = run_json(&sb, &common::words(&line));
    assert_eq!(r["status"], "complete");
    assert_eq!(r["plan"]["cache"]["policy"], "raw");
    assert_eq!(r["distributed"]["layout"], "shared_segmented");
    assert_eq!(u(&r["total"]["write_ops"]), 256);
    assert_eq!(u(&r["total"]["bytes"]), NP * seg);
    let rows = rank_rows(&r);
    assert_eq!(rows.len(), NP as usize);
    for (k, (rank, bytes, targets)) in rows.iter().enumerate() {
        assert_eq!(*rank, k as u64);
        assert_eq!(*bytes, seg, "rank {rank}");
        assert_eq!(targets, &vec![dev.to_string()], "rank {rank}");
    }
    let v = &r["verify"];
    assert_eq!(u(&v["blocks_intact"]), 256, "{v}");
    assert_eq!(u(&v["read_back_blocks"]), 256, "{v}");
    // Each rank's segment: its first and last 64k block written (the device was zeros).
    for rank in 0..NP {
        for off in [rank * seg, (rank + 1) * seg - 65536] {
            let b = read_at(&lo.dev, off, 65536);
            assert!(b.iter().any(|&x| x != 0), "rank {rank}: zeros at {off}");
        }
    }
    // Nothing past the 16 MiB the ranks divided.
    let rest = read_at(&lo.dev, 16 << 20, 16 << 20);
    assert!(rest.iter().all(|&x| x == 0), "written past --size");

    // Strided, on zeros again: rank r writes 64k blocks r, r+4, ...: blocks 0..32 (2 MiB) all
    // written, nothing after.
    zero(&lo.dev, 32);
    let line = format!(
        "run {dev} --shared-file strided --cache raw --rw write --bs 64k --size 2m --verify"
    );
    let r = run_json(&sb, &common::words(&line));
    assert_eq!(r["distributed"]["layout"], "shared_strided");
    assert!(
        rank_rows(&r).iter().all(|x| x.1 == 8 * 65536),
        "{:?}",
        rank_rows(&r)
    );
    assert_eq!(u(&r["verify"]["blocks_intact"]), 32);
    for block in 0..32u64 {
        let b = read_at(&lo.dev, block * 65536, 65536);
        assert!(
            b.iter().any(|&x| x != 0),
            "block {block} (rank {})",
            block % 4
        );
    }
    assert!(read_at(&lo.dev, 2 << 20, 1 << 20).iter().all(|&x| x == 0));

    // Reads: buffered becomes raw on a device (as on one host, with a note), direct stays.
    for (cache, policy) in [("buffered", "raw"), ("direct", "direct"), ("raw", "raw")] {
        let line = format!("run {dev} --shared-file --cache {cache} --rw read --bs 64k --size 16m");
        let r = run_json(&sb, &common::words(&line));
        assert_eq!(r["status"], "complete", "{cache}");
        assert_eq!(r["plan"]["cache"]["policy"], policy, "{cache}");
        assert!(
            rank_rows(&r).iter().all(|x| x.1 == seg),
            "{cache}: {:?}",
            rank_rows(&r)
        );
    }
    // No --size: the whole device (32 MiB, 8 MiB a rank), as on one host.
    let line = format!("run {dev} --shared-file --rw randread --bs 64k --count 16");
    let r = run_json(&sb, &common::words(&line));
    assert_eq!(u(&r["job"]["file_size"]), 32 << 20, "{}", r["job"]);
    assert!(
        rank_rows(&r).iter().all(|x| x.1 == 16 * 65536),
        "{:?}",
        rank_rows(&r)
    );
    // A --size larger than the device: refused as on one host.
    let o = mpirun(
        &sb,
        &common::words(&format!(
            "run {dev} --shared-file --rw read --bs 64k --size 64m"
        )),
    );
    let line = mpi_refused_in_one_line(&o);
    assert!(line.contains("has 33554432 bytes"), "{line}");
}

/// A device holding a file system: rank 0 refuses the write in one line before any rank
/// writes (the device's content unchanged), reads are allowed, and --force writes as on one
/// host.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs mpirun (openmpi-bin), root, loop devices and mkfs.ext4"
)]
fn a_device_with_a_file_system_is_refused_on_rank_0() {
    let sb = Sandbox::new();
    let lo = loop_device(&sb, 32);
    let dev = lo.dev.to_str().unwrap();
    let mk = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", dev])
        .status();
    if !mk.is_ok_and(|s| s.success()) {
        common::cannot("mkfs.ext4 failed");
    }
    let before = checksum(&lo.dev);
    for layout in ["--shared-file", "--shared-file=strided"] {
        let o = mpirun(
            &sb,
            &common::words(&format!(
                "run {dev} {layout} --cache raw --rw write --bs 64k --size 16m"
            )),
        );
        let line = mpi_refused_in_one_line(&o);
        assert!(
            line.contains("rank 0")
                && line.contains("refusing to write")
                && line.contains("ext2/3/4")
                && line.contains("--force"),
            "{line}"
        );
        assert_eq!(checksum(&lo.dev), before, "{layout}: the device changed");
    }
    let line = format!("run {dev} --shared-file --cache raw --rw read --bs 64k --size 16m");
    let r = run_json(&sb, &common::words(&line));
    assert_eq!(u(&r["total"]["bytes"]), 16 << 20);
    assert_eq!(checksum(&lo.dev), before);
    let line =
        format!("run {dev} --shared-file --cache raw --rw write --bs 64k --size 16m --force");
    let r = run_json(&sb, &common::words(&line));
    assert_eq!(u(&r["total"]["bytes"]), 16 << 20);
    assert_ne!(checksum(&lo.dev), before, "--force wrote nothing");
}

/// `--file-per-rank` (the default) on a device would make a file per rank in DEVICE.d (in
/// /dev): refused in one line, nothing made.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_loop)),
    ignore = "SKIPPED: needs mpirun (openmpi-bin), root and loop devices"
)]
fn a_device_per_rank_layout_is_refused() {
    let sb = Sandbox::new();
    let lo = loop_device(&sb, 8);
    let dev = lo.dev.to_str().unwrap();
    let before = checksum(&lo.dev);
    for flag in ["", "--file-per-rank"] {
        let o = mpirun(
            &sb,
            &common::words(&format!(
                "run {dev} {flag} --cache raw --rw write --bs 64k --size 1m"
            )),
        );
        let line = mpi_refused_in_one_line(&o);
        assert!(
            line.contains("is a block device") && line.contains("--shared-file"),
            "{line}"
        );
        let mut d = lo.dev.clone().into_os_string();
        d.push(".d");
        assert!(!Path::new(&d).exists(), "{d:?} was made");
    }
    assert_eq!(checksum(&lo.dev), before);
}

/// Loop devices attached to a backing file under `dir`, from `losetup -a`.
fn loops_under(dir: &Path) -> Vec<String> {
    let out = std::process::Command::new("losetup")
        .arg("-a")
        .output()
        .unwrap();
    let dir = std::fs::canonicalize(dir).unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains(dir.to_str().unwrap()))
        .map(String::from)
        .collect()
}

/// Every file and directory under `dir`.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut v = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        v.push(e.path());
        if e.file_type().unwrap().is_dir() {
            v.extend(tree(&e.path()));
        }
    }
    v.sort();
    v
}

/// A sweep with raw points on 4 ranks: each rank makes a loop device of its own (4 distinct
/// devices in the rows), every point is measured (a record each, none skipped) with 4 times
/// one rank's bytes, and at the end no loop device is attached to a file in the sandbox and
/// nothing is left beside the results.
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_loop)),
    ignore = "SKIPPED: needs mpirun (openmpi-bin), root and loop devices"
)]
fn a_raw_sweep_on_4_ranks_gives_each_rank_a_loop_device() {
    if !common::can_use_loop_devices() {
        common::cannot("raw sweeps need root, losetup and /dev/loop-control");
    }
    let sb = Sandbox::new();
    std::fs::create_dir(sb.file("t")).unwrap();
    assert!(loops_under(sb.path()).is_empty());
    let o = mpirun(
        &sb,
        &common::words(
            "sweep --rw write,read --cache buffered,raw --size 4m --bs 64k t/f --output res",
        ),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let recs = sweep_records(&sb.file("res"));
    assert_eq!(
        recs.len(),
        4,
        "{:?}",
        recs.iter().map(|r| &r.0).collect::<Vec<_>>()
    );
    let mut raw_points = 0;
    for (name, r) in &recs {
        assert_eq!(r["status"], "complete", "{name}: {r}");
        assert_eq!(u(&r["total"]["bytes"]), NP * (4 << 20), "{name}");
        let rows = rank_rows(r);
        assert!(rows.iter().all(|x| x.1 == 4 << 20), "{name}: {rows:?}");
        if name.contains("cache-raw") {
            raw_points += 1;
            assert_eq!(r["plan"]["cache"]["policy"], "raw", "{name}");
            let mut devs: Vec<&String> = rows.iter().map(|x| &x.2[0]).collect();
            assert!(devs.iter().all(|d| d.starts_with("/dev/loop")), "{devs:?}");
            devs.sort();
            devs.dedup();
            assert_eq!(devs.len(), NP as usize, "one device per rank: {rows:?}");
        }
    }
    assert_eq!(raw_points, 2);
    // `losetup -d` of a device udev still probes only detaches it at its last close.
    let until = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !loops_under(sb.path()).is_empty() && std::time::Instant::now() < until {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(
        loops_under(sb.path()).is_empty(),
        "{:?}",
        loops_under(sb.path())
    );
    let left: Vec<PathBuf> = tree(sb.path())
        .into_iter()
        .filter(|p| !p.starts_with(sb.file("res")))
        .collect();
    assert_eq!(left, vec![sb.file("t")], "left behind");
    // On a shared file each rank would need the one device the others see: skipped, saying so.
    let o = mpirun(
        &sb,
        &common::words(
            "sweep --rw write --cache direct,raw --size 4m --bs 64k t/s --shared-file --output res2",
        ),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let recs = sweep_records(&sb.file("res2"));
    assert_eq!(recs.len(), 2);
    assert_eq!(u(&recs[0].1["total"]["bytes"]), 4 << 20);
    let why = recs[1].1["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", recs[1].1));
    assert!(
        why.contains("shared file") && why.contains("--file-per-rank"),
        "{why}"
    );
    assert!(loops_under(sb.path()).is_empty());
}

/// Not root: no rank can make a loop device, so the raw point is skipped with that reason
/// (said once for every rank), the other point is measured, the sweep succeeds, nothing is
/// left. mpirun runs as nobody (setpriv).
#[test]
#[cfg_attr(
    not(all(has_mpirun, has_root)),
    ignore = "SKIPPED: needs mpirun (openmpi-bin) and root (to run the ranks as nobody)"
)]
fn without_root_the_raw_point_is_skipped_on_every_rank() {
    // In /tmp (sticky, open to all) whatever TMPDIR is, with a copy of the binary there: the
    // checkout may lie under a directory nobody cannot enter.
    let sb = Sandbox {
        dir: tempfile::tempdir_in("/tmp").unwrap(),
    };
    let bin = sb.file("fsbench-copy");
    std::fs::copy(env!("CARGO_BIN_EXE_fsbench"), &bin).unwrap();
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !setpriv {
        common::cannot("setpriv (util-linux) is not installed");
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(sb.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut c = std::process::Command::new("timeout");
    c.current_dir(sb.path())
        .args([
            "120",
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
        ])
        .arg("env")
        .arg(format!("HOME={}", sb.path().display()))
        .args(["mpirun", "--oversubscribe", "-np"])
        .arg(NP.to_string())
        .arg(&bin)
        .args(common::words(
            "sweep --rw write --cache buffered,raw --size 1m --bs 64k f --output res",
        ));
    let o = c.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let recs = sweep_records(&sb.file("res"));
    assert_eq!(recs.len(), 2);
    let (buffered, raw) = (&recs[0].1, &recs[1].1);
    assert_eq!(buffered["status"], "complete");
    assert_eq!(u(&buffered["total"]["bytes"]), NP << 20);
    let why = raw["reason"].as_str().unwrap_or_else(|| panic!("{raw}"));
    assert!(
        why.contains("not root") && why.ends_with("(on every rank)"),
        "{why}"
    );
    let left: Vec<PathBuf> = tree(sb.path())
        .into_iter()
        .filter(|p| !p.starts_with(sb.file("res")) && *p != bin)
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
