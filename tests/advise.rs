//! `fsbench advise`: topology parsing on recorded sysfs trees (tests/fixtures/sys), derived
//! values against the tuning chapter's worked examples, live runs on this machine's disk and a
//! loop device, and the measured mode against points rerun by hand.
mod common;

use common::{can_use_loop_devices, cannot, words, LoopDevice, Sandbox};
use fsbench::advise::checks::{Check, Status};
use fsbench::advise::measure::{self, Dir, Phase};
use fsbench::advise::{self, derive};
use fsbench::probe::fsgeom::FsGeometry;
use fsbench::probe::topology::{DeviceKind, SysfsProbe, Topology};
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sys")
        .join(name)
}

fn topo_of(probe: &SysfsProbe, major: u32, minor: u32, fs: Option<FsGeometry>) -> Topology {
    Topology {
        path: "/fixture".into(),
        mount: fs.as_ref().map(|g| fsbench::probe::MountInfo {
            mount_point: "/data".into(),
            fs_type: g.fs_type.clone(),
            source: "/dev/md0p1".into(),
            options: "rw".into(),
            dev: format!("{major}:{minor}"),
        }),
        fs,
        device: probe.device(major, minor),
        notes: vec![],
    }
}

fn find<'a>(checks: &'a [Check], id: &str, subject: &str) -> &'a Check {
    checks
        .iter()
        .find(|c| c.id == id && c.subject == subject)
        .unwrap_or_else(|| panic!("no check {id} for {subject}: {checks:#?}"))
}

#[test]
fn single_disk_partitions_queue_depth_numa_and_checks() {
    let probe = SysfsProbe::with_root(fixture("single_disk"));
    let sda2 = probe.device(8, 2).expect("sda2 in the fixture");
    assert_eq!(sda2.kind, DeviceKind::Partition);
    assert_eq!(sda2.partition.as_ref().unwrap().start_bytes, 63 * 512);
    let sda = &sda2.lower[0];
    assert_eq!((sda.name.as_str(), sda.kind), ("sda", DeviceKind::Disk));
    let q = sda2.effective_queue().unwrap();
    assert_eq!(q.physical_block_size_bytes, Some(4096));
    assert_eq!(q.rotational, Some(true));
    assert_eq!(q.nr_requests, Some(64));
    assert_eq!(q.max_sectors_kb, Some(1280));
    assert_eq!(q.read_ahead_kb, Some(128));
    assert_eq!(q.scheduler.as_deref(), Some("none"));
    assert_eq!(sda.queue_depth, Some(32));
    assert_eq!(
        sda.queue_depth_source.as_deref(),
        Some("device/queue_depth")
    );
    assert_eq!(sda.numa_node, Some(0));

    let a = advise::from_topology(topo_of(&probe, 8, 2, None));
    assert_eq!(a.derived.layout.kind, derive::LayoutKind::Concat);
    assert_eq!(a.derived.get("read_pref_io"), Some(65536));
    let c = find(&a.checks, "partition_alignment", "sda2");
    assert_eq!(
        c.status,
        Status::Warn,
        "sector 63 is not on a 4k physical block"
    );
    assert!(c.fix.as_ref().unwrap().contains("parted"));
    let c = find(&a.checks, "scheduler", "sda");
    assert_eq!(c.status, Status::Warn, "no elevator on a rotational disk");
    assert!(c
        .fix
        .as_ref()
        .unwrap()
        .starts_with("echo mq-deadline > /sys/block/sda/queue/scheduler"));
    assert_eq!(find(&a.checks, "read_ahead", "sda").status, Status::Ok);
    assert_eq!(find(&a.checks, "nr_requests", "sda").status, Status::Ok);

    let a = advise::from_topology(topo_of(&probe, 8, 1, None));
    assert_eq!(
        find(&a.checks, "partition_alignment", "sda1").status,
        Status::Ok
    );

    let nvme = probe.device(259, 0).unwrap();
    assert_eq!(nvme.numa_node, Some(1));
    assert_eq!(nvme.hw_queues, Some(2));
    assert_eq!(nvme.queue_depth, Some(1023));
    assert_eq!(nvme.queue_depth_source.as_deref(), Some("mq/*/nr_tags"));
    let a = advise::from_topology(topo_of(&probe, 259, 0, None));
    let c = find(&a.checks, "scheduler", "nvme0n1");
    assert_eq!(c.status, Status::Warn);
    assert!(c
        .fix
        .as_ref()
        .unwrap()
        .starts_with("echo none > /sys/block/nvme0n1/queue/scheduler"));
    // 128 KiB max_sectors_kb is fine for a 64k preferred I/O.
    assert!(!a.checks.iter().any(|c| c.id == "request_size"));
}

#[test]
fn md_stripe_five_columns_of_64k() {
    let probe = SysfsProbe::with_root(fixture("md_stripe"));
    let p1 = probe.device(259, 1).expect("md0p1");
    assert_eq!(p1.kind, DeviceKind::Partition);
    let md0 = &p1.lower[0];
    assert_eq!(md0.kind, DeviceKind::Md);
    let md = md0.md.as_ref().unwrap();
    assert_eq!(
        (md.level.as_str(), md.raid_disks, md.chunk_size_bytes),
        ("raid0", 5, Some(65536))
    );
    let q = md0.queue.as_ref().unwrap();
    assert_eq!(q.minimum_io_size_bytes, Some(65536));
    assert_eq!(q.optimal_io_size_bytes, Some(327680));
    let leaves: Vec<&str> = p1.leaves().iter().map(|d| d.name.as_str()).collect();
    assert_eq!(leaves, ["sdb", "sdc", "sdd", "sde", "sdf"]);
    assert!(p1.leaves().iter().all(|d| d.queue_depth == Some(32)));

    // ext4 made without -E stride: the check says how to tell it about the stripe.
    let ext4 = FsGeometry {
        fs_type: "ext4".into(),
        block_size_bytes: Some(4096),
        source: "test".into(),
        ..Default::default()
    };
    let a = advise::from_topology(topo_of(&probe, 259, 1, Some(ext4)));
    let l = &a.derived.layout;
    assert_eq!(
        (l.kind, l.columns, l.stripe_unit_bytes),
        (derive::LayoutKind::Stripe, 5, Some(65536))
    );
    assert_eq!(l.device.as_deref(), Some("md0"));
    assert_eq!(a.derived.get("read_pref_io"), Some(65536));
    assert_eq!(a.derived.get("read_nstream"), Some(5));
    assert_eq!(a.derived.get("max_diskq"), Some(16 * 65536 * 5));
    assert_eq!(
        find(&a.checks, "partition_alignment", "md0p1").status,
        Status::Ok
    );
    let c = find(&a.checks, "fs_stripe", "/data");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(
        c.fix.as_deref(),
        Some("tune2fs -E stride=16,stripe_width=80 /dev/md0p1")
    );
    let c = find(&a.checks, "read_ahead", "md0");
    assert_eq!(c.status, Status::Warn, "128k read-ahead < 5 x 64k");
    assert!(c
        .fix
        .as_ref()
        .unwrap()
        .contains("blockdev --setra 640 /dev/md0"));

    // XFS made with su=64k,sw=5 knows the stripe.
    let xfs = FsGeometry {
        fs_type: "xfs".into(),
        block_size_bytes: Some(4096),
        stripe_unit_bytes: Some(65536),
        stripe_width_bytes: Some(327680),
        source: "test".into(),
    };
    let a = advise::from_topology(topo_of(&probe, 259, 1, Some(xfs)));
    assert_eq!(find(&a.checks, "fs_stripe", "/data").status, Status::Ok);
}

/// Copy a fixture tree (symlinks kept) so a test can change a value in it.
fn copy_tree(from: &Path, to: &Path) {
    let st = std::process::Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(st.success());
}

#[test]
fn chapter_example_five_columns_of_1m_gives_80mb_diskq() {
    let sb = Sandbox::new();
    let root = sb.file("sys");
    copy_tree(&fixture("md_stripe"), &root);
    let md = root.join("devices/virtual/block/md0");
    std::fs::write(md.join("md/chunk_size"), "1048576\n").unwrap();
    std::fs::write(md.join("queue/minimum_io_size"), "1048576\n").unwrap();
    std::fs::write(md.join("queue/optimal_io_size"), "5242880\n").unwrap();
    let probe = SysfsProbe::with_root(&root);
    let a = advise::from_topology(topo_of(&probe, 9, 0, None));
    assert_eq!(a.derived.get("read_pref_io"), Some(1048576));
    assert_eq!(a.derived.get("read_nstream"), Some(5));
    assert_eq!(a.derived.get("write_pref_io"), Some(1048576));
    assert_eq!(a.derived.get("write_nstream"), Some(5));
    assert_eq!(
        a.derived.get("max_diskq"),
        Some(83886080),
        "the chapter's 80 MB"
    );
    // md0 takes 128k requests: each 1 MiB preferred I/O is split, and the hardware limit
    // (128k) leaves nothing to change.
    let c = find(&a.checks, "request_size", "md0");
    assert_eq!((c.status, c.fix.is_none()), (Status::Info, true));
    std::fs::write(md.join("queue/max_hw_sectors_kb"), "2048\n").unwrap();
    let a = advise::from_topology(topo_of(&probe, 9, 0, None));
    let c = find(&a.checks, "request_size", "md0");
    assert_eq!(c.status, Status::Warn);
    assert_eq!(
        c.fix.as_deref(),
        Some("echo 1024 > /sys/block/md0/queue/max_sectors_kb")
    );

    // The same array as raid10 (2 near copies over 6 disks) is the chapter's stripe-mirror:
    // 3 columns, 64k default unit -> max_diskq 3 MB.
    std::fs::write(md.join("md/level"), "raid10\n").unwrap();
    std::fs::write(md.join("md/raid_disks"), "6\n").unwrap();
    std::fs::write(md.join("md/layout"), "258\n").unwrap(); // 0x102: 2 near copies
    std::fs::write(md.join("md/chunk_size"), "65536\n").unwrap();
    let a = advise::from_topology(topo_of(&probe, 9, 0, None));
    assert_eq!(a.derived.layout.kind, derive::LayoutKind::StripeMirror);
    assert_eq!(a.derived.get("read_nstream"), Some(3));
    assert_eq!(a.derived.get("max_diskq"), Some(3145728));
}

#[test]
fn loop_fixture_follows_backing_file() {
    let root = fixture("loop");
    let recorded =
        std::fs::read_to_string(root.join("devices/virtual/block/loop0/loop/backing_file"))
            .unwrap();
    let backing = PathBuf::from(recorded.trim());
    let want = backing.clone();
    let probe = SysfsProbe::with_root(&root)
        .with_dev_of_file(Box::new(move |p: &Path| (p == want).then_some((254, 0))));
    let lo = probe.device(7, 0).unwrap();
    assert_eq!(lo.kind, DeviceKind::Loop);
    let li = lo.loop_info.as_ref().unwrap();
    assert_eq!(Path::new(&li.backing_file), backing);
    assert_eq!(li.direct_io, Some(false));
    assert_eq!(lo.lower.len(), 1);
    assert_eq!(lo.lower[0].name, "vda");
    assert_eq!(lo.lower[0].kind, DeviceKind::Disk);
    let a = advise::from_topology(topo_of(&probe, 7, 0, None));
    let c = find(&a.checks, "loop_direct_io", "loop0");
    assert_eq!(c.fix.as_deref(), Some("losetup --direct-io=on /dev/loop0"));
    // The scheduler check looks at the disk under the loop device.
    find(&a.checks, "scheduler", "vda");

    // Without the mapping the recorded backing file does not exist here: said, not guessed.
    let plain = SysfsProbe::with_root(&root).with_dev_of_file(Box::new(|_| None));
    let lo = plain.device(7, 0).unwrap();
    assert!(lo.lower.is_empty());
    assert!(
        lo.notes.iter().any(|n| n.contains("not found")),
        "{:?}",
        lo.notes
    );
}

#[test]
#[cfg_attr(
    not(has_tmp_blockdev),
    ignore = "SKIPPED: the temp dir is not on a block device"
)]
fn live_disk_matches_sysfs_and_cli_json() {
    let sb = Sandbox::new();
    let probe = SysfsProbe::default();
    let Some(dev) = probe.device_of_path(sb.path()) else {
        cannot("the temp dir is not on a block device");
    };
    let leaf = dev.leaves()[0];
    let q = leaf.queue.as_ref().unwrap();
    let direct =
        std::fs::read_to_string(format!("/sys/block/{}/queue/logical_block_size", leaf.name))
            .unwrap();
    assert_eq!(q.logical_block_size_bytes, direct.trim().parse().ok());
    let out = sb
        .cmd(&["advise", sb.path().to_str().unwrap(), "--format", "json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["kind"], "advise");
    assert_eq!(v["topology"]["device"]["dev"], serde_json::json!(dev.dev));
    let diskq = v["derived"]["values"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "max_diskq")
        .unwrap()["value"]
        .as_u64()
        .unwrap();
    let get = |n: &str| {
        v["derived"]["values"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == n)
            .unwrap()["value"]
            .as_u64()
            .unwrap()
    };
    assert_eq!(diskq, 16 * get("write_pref_io") * get("write_nstream"));
    assert!(v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["id"] == "scheduler"));
    // --output writes the same JSON to a file.
    let file = sb.file("advice.json");
    let out2 = sb
        .cmd(&[
            "advise",
            sb.path().to_str().unwrap(),
            "--format",
            "json",
            "--output",
            file.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(out2.status.success());
    let written: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(written["derived"], v["derived"]);
    // Text output has the vxtunefs shape.
    let out = sb
        .cmd(&["advise", sb.path().to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Filesystem i/o parameters for"), "{text}");
    assert!(text.contains("read_pref_io = "), "{text}");
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn live_loop_device_with_ext4_stripe() {
    if !can_use_loop_devices() {
        cannot("not root or no loop devices");
    }
    let sb = Sandbox::new();
    let Some(lo) = LoopDevice::new(sb.path(), 64) else {
        cannot("losetup could not attach a loop device");
    };
    let ok = std::process::Command::new("mkfs.ext4")
        .args(["-q", "-F", "-b", "4096", "-E", "stride=16,stripe_width=80"])
        .arg(&lo.dev)
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    let mnt = sb.file("mnt");
    std::fs::create_dir(&mnt).unwrap();
    if !ok
        || !std::process::Command::new("mount")
            .arg(&lo.dev)
            .arg(&mnt)
            .status()
            .unwrap()
            .success()
    {
        cannot("mkfs.ext4 or mount failed");
    }
    struct Umount(PathBuf);
    impl Drop for Umount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _u = Umount(mnt.clone());
    let topo = Topology::of_path(&mnt, &SysfsProbe::default());
    let dev = topo.device.as_ref().expect("loop device in sysfs");
    assert_eq!(dev.kind, DeviceKind::Loop);
    assert_eq!(
        Path::new(&dev.loop_info.as_ref().unwrap().backing_file),
        lo.backing
    );
    // The backing file lives in the sandbox: its device is the sandbox's device.
    let sandbox_dev = SysfsProbe::default().device_of_path(sb.path()).unwrap();
    assert_eq!(dev.lower[0].dev, sandbox_dev.dev);
    let g = topo
        .fs
        .as_ref()
        .expect("ext4 superblock of a loop device we made");
    assert_eq!(g.stripe_unit_bytes, Some(65536));
    assert_eq!(g.stripe_width_bytes, Some(327680));
    let a = advise::from_topology(topo);
    // The loop device reports no stripe; the file system does.
    assert_eq!(a.derived.layout.columns, 5);
    assert_eq!(a.derived.get("write_pref_io"), Some(65536));
    assert_eq!(a.derived.get("max_diskq"), Some(16 * 65536 * 5));
}

#[test]
fn measured_mode_agrees_with_points_rerun_by_hand() {
    let sb = Sandbox::new();
    let dir = sb.file("m");
    std::fs::create_dir(&dir).unwrap();
    let out = sb
        .cmd(&[
            "advise",
            dir.to_str().unwrap(),
            "--measure",
            "--measure-size",
            "16m",
            "--measure-time",
            "4s",
            "--measure-repeat",
            "3",
            "--format",
            "json",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        std::fs::read_dir(&dir).unwrap().next().is_none(),
        "scratch file removed"
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let m: measure::Measurement = serde_json::from_value(v["measurement"].clone()).unwrap();
    // Stream counts whose slices would not fit the 16m file are skipped, and said so.
    let skipped = m.notes.iter().filter(|n| n.contains("skipped")).count();
    assert_eq!(
        m.points.len() + skipped,
        measure::SIZES.len() * 4 + measure::STREAMS.len() * 2,
        "{:?}",
        m.notes
    );
    assert_eq!(m.repeat, 3);
    for p in &m.points {
        assert_eq!(p.runs_bytes_per_sec.len(), 3, "{p:?}");
        let mut runs = p.runs_bytes_per_sec.clone();
        runs.sort_by(f64::total_cmp);
        assert_eq!(p.bytes_per_sec, runs[1], "the median run is kept");
        assert!(
            p.bytes > 0 && p.bytes <= 16 << 20,
            "one pass at most: {p:?}"
        );
        assert_eq!(p.bytes % p.block_size_bytes, 0);
        assert!(
            (p.bytes_per_sec - p.bytes as f64 / p.elapsed_s).abs()
                < 1e-6 * p.bytes_per_sec.max(1.0)
        );
    }
    let measured: derive::Tunables = serde_json::from_value(v["measured"].clone()).unwrap();
    // The reported knee is the knee of the reported points, and the stream test ran at it.
    for dir in [Dir::Read, Dir::Write] {
        let curve = measure::size_curve(&m.points, dir, true);
        let k = measure::knee(&curve).unwrap();
        assert_eq!(measured.get(&format!("{}_pref_io", dir.name())), Some(k));
        assert!(m
            .points
            .iter()
            .filter(|p| p.phase == Phase::Streams && p.dir == dir)
            .all(|p| p.block_size_bytes == k));
        let n = measure::knee(&measure::stream_curve(&m.points, dir)).unwrap();
        assert_eq!(
            measured.get(&format!("{}_nstream", dir.name())),
            Some(n as u64)
        );
    }
    let knees = [Dir::Read, Dir::Write]
        .map(|d| measure::knee(&measure::size_curve(&m.points, d, true)).unwrap());
    assert!(measured.get("max_direct_iosz").unwrap() >= knees[0].max(knees[1]).max(1 << 20));
    assert_eq!(
        measured.get("max_diskq").unwrap(),
        16 * measured.get("write_pref_io").unwrap() * measured.get("write_nstream").unwrap()
    );
    // Rerun two points by hand with the same Jobs: same amount of data, and throughput of the
    // same order (a factor of 10 catches unit mistakes without timing flakiness).
    let file = dir.join(measure::SCRATCH_NAME);
    for (d, direct, bs) in [(Dir::Write, true, 1 << 20), (Dir::Read, true, 64 << 10)] {
        let job = measure::point_job(&file, 16 << 20, d, direct, bs, 1, 4.0);
        let mut job = job;
        job.keep = false;
        let hand = measure::run_point(&job, Phase::Sizes).unwrap();
        let tool = m
            .points
            .iter()
            .find(|p| {
                p.phase == Phase::Sizes
                    && p.dir == d
                    && p.direct == direct
                    && p.block_size_bytes == bs
            })
            .unwrap();
        if hand.bytes == 16 << 20 && tool.bytes == 16 << 20 {
            assert_eq!(hand.bytes, tool.bytes);
        }
        let ratio = hand.bytes_per_sec / tool.bytes_per_sec;
        assert!(
            (0.1..10.0).contains(&ratio),
            "by hand {hand:?} vs advise {tool:?}"
        );
    }
    assert!(!file.exists());
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let sb = Sandbox::new();
    for args in [
        vec!["advise", "/no/such/dir"],
        vec!["advise", ".", "--format", "xml"],
        vec!["advise", ".", "--measure", "--measure-size", "1m"],
        vec!["advise", ".", "--measure", "--measure-time", "zz"],
    ] {
        let out = sb.cmd(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    // A foreign file where the scratch file goes is never touched.
    std::fs::write(sb.file(measure::SCRATCH_NAME), b"precious").unwrap();
    let out = sb
        .cmd(&words(
            "advise . --measure --measure-size 16m --measure-time 1s",
        ))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        std::fs::read(sb.file(measure::SCRATCH_NAME)).unwrap(),
        b"precious"
    );
}

#[test]
fn dm_stripe_from_queue_limits() {
    let probe = SysfsProbe::with_root(fixture("dm_stripe"));
    let dm = probe.device(253, 0).unwrap();
    assert_eq!(dm.kind, DeviceKind::Dm);
    assert_eq!(dm.dm.as_ref().unwrap().name, "vg-data");
    let numa: Vec<Option<i32>> = dm.leaves().iter().map(|d| d.numa_node).collect();
    assert_eq!(numa, [Some(0), Some(0), Some(1), Some(1)]);
    let a = advise::from_topology(topo_of(&probe, 253, 0, None));
    let l = &a.derived.layout;
    assert_eq!(
        (l.kind, l.columns, l.stripe_unit_bytes),
        (derive::LayoutKind::Stripe, 4, Some(131072))
    );
    assert_eq!(a.derived.get("max_diskq"), Some(16 * 131072 * 4));
    // 128k max_sectors_kb on the NVMe namespaces equals the stripe unit: no split.
    assert!(
        !a.checks.iter().any(|c| c.id == "request_size"),
        "{:#?}",
        a.checks
    );
    for n in ["nvme0n1", "nvme3n1"] {
        assert_eq!(find(&a.checks, "scheduler", n).status, Status::Ok);
    }
}

/// mkfs with options on a fresh loop device and mount it; fails the test (`cannot`) when the
/// machine cannot.
fn mkfs_mount(sb: &Sandbox, size_mb: u64, mkfs: &[&str]) -> (LoopDevice, PathBuf) {
    if !can_use_loop_devices() {
        cannot("not root or no loop devices");
    }
    let Some(lo) = LoopDevice::new(sb.path(), size_mb) else {
        cannot("losetup could not attach a loop device");
    };
    let ok = std::process::Command::new(mkfs[0])
        .args(&mkfs[1..])
        .arg(&lo.dev)
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    let mnt = sb.file("mnt");
    std::fs::create_dir_all(&mnt).unwrap();
    if !ok
        || !std::process::Command::new("mount")
            .arg(&lo.dev)
            .arg(&mnt)
            .status()
            .is_ok_and(|s| s.success())
    {
        cannot(&format!("{} or mount failed", mkfs[0]));
    }
    (lo, mnt)
}

struct Umount(PathBuf);
impl Drop for Umount {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(&self.0).status();
    }
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_xfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.xfs"
)]
fn live_xfs_geometry() {
    let sb = Sandbox::new();
    let (_lo, mnt) = mkfs_mount(&sb, 600, &["mkfs.xfs", "-q", "-f", "-d", "su=64k,sw=5"]);
    let _u = Umount(mnt.clone());
    let topo = Topology::of_path(&mnt, &SysfsProbe::default());
    let g = topo.fs.as_ref().expect("xfs geometry");
    assert_eq!(
        (g.stripe_unit_bytes, g.stripe_width_bytes),
        (Some(65536), Some(327680))
    );
    assert_eq!(g.block_size_bytes, Some(4096));
    let a = advise::from_topology(topo);
    assert_eq!(a.derived.layout.columns, 5);
    assert_eq!(a.derived.get("read_nstream"), Some(5));
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.btrfs"
)]
fn live_btrfs_geometry() {
    let sb = Sandbox::new();
    let (lo, mnt) = mkfs_mount(&sb, 256, &["mkfs.btrfs", "-q", "-f"]);
    let _u = Umount(mnt.clone());
    let topo = Topology::of_path(&mnt, &SysfsProbe::default());
    // btrfs files have an anonymous st_dev: the device comes from the mount source.
    assert_eq!(
        Path::new(&topo.mount.as_ref().unwrap().source),
        lo.dev.as_path()
    );
    assert_eq!(topo.device.as_ref().unwrap().kind, DeviceKind::Loop);
    let g = topo.fs.as_ref().expect("btrfs sectorsize");
    assert_eq!(g.fs_type, "btrfs");
    assert_eq!(g.block_size_bytes, Some(4096));
}

#[test]
fn measured_io_size_above_stripe_unit_is_reported() {
    let probe = SysfsProbe::with_root(fixture("md_stripe"));
    let a = advise::from_topology(topo_of(&probe, 9, 0, None));
    assert!(!a.checks.iter().any(|c| c.id == "io_size_vs_stripe_unit"));
    let mut t = a.derived.clone();
    t.set("write_pref_io", 1 << 20, "measured".into());
    let topo = topo_of(&probe, 9, 0, None);
    let checks = fsbench::advise::checks::run(&topo, &t);
    let c = find(&checks, "io_size_vs_stripe_unit", "md0");
    assert!(
        c.finding.contains("split into 16 column I/Os"),
        "{}",
        c.finding
    );
}
