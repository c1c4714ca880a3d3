//! Build script: finds out once, at build time, what this machine offers the tests that need
//! more than a temp dir (root, loop devices, io_uring, tools, properties of the temp dir's file
//! system) and tells rustc with `--cfg has_<capability>`.
//!
//! Why: a test that cannot run here must be counted by the test runner as ignored, with its
//! reason, not as passed. Stable libtest cannot ignore a test at run time, so each such test
//! carries `#[cfg_attr(not(has_loop), ignore = "SKIPPED: needs root and loop devices")]`;
//! `cargo test` then prints `test x ... ignored, SKIPPED: ...` and counts it in `N ignored`,
//! and `cargo test -- --include-ignored` still tries it. The library and the binary never
//! read these cfgs: they only change which tests run.
//!
//! The tests check again at run time and fail loudly (tests/common `cannot`) when the machine
//! no longer matches the probe, so a stale probe shows as a failure, never as a silent pass.
//!
//! `FSBENCH_TEST_CAPS` overrides the probe: a comma-separated list where `name` forces a
//! capability on, `-name` forces it off, and `none` / `all` set every capability first, e.g.
//! `FSBENCH_TEST_CAPS=none` (a bare machine) or `FSBENCH_TEST_CAPS=-chromium,-tmp_polled_io`.
//!
//! The probe reruns when this file, FSBENCH_TEST_CAPS, PATH or TMPDIR change, when a tool it
//! found changes, or when the package database changes (a tool installed with apt or rpm);
//! other builds reuse its result, so they are not slowed. After installing a tool by hand,
//! `touch build.rs`.

use std::ffi::CString;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Every capability: its name (cfg `has_<name>`, FSBENCH_TEST_CAPS word) and what it means.
const CAPS: &[(&str, &str)] = &[
    ("root", "effective uid 0 with CAP_SYS_ADMIN (can mount)"),
    ("loop", "root, losetup on PATH and /dev/loop-control"),
    (
        "fuse",
        "root and /dev/fuse opens read-write (a FUSE file system can be mounted)",
    ),
    ("cpus2", "at least 2 CPUs online"),
    ("uring", "io_uring_setup succeeds"),
    (
        "uring_sqpoll",
        "an io_uring with a kernel submission thread (SQPOLL) can be set up",
    ),
    ("strace", "strace can trace a child"),
    ("python3", "python3 runs"),
    ("fio", "fio on PATH and it runs (fio --version)"),
    ("chromium", "/usr/bin/chromium or /usr/bin/chromium-browser"),
    (
        "mpirun",
        "mpirun on PATH (openmpi-bin): the MPI tests (tests/mpi.rs)",
    ),
    ("mkfs_ext4", "mkfs.ext4 on PATH"),
    ("mkfs_xfs", "mkfs.xfs on PATH"),
    ("mkfs_btrfs", "mkfs.btrfs on PATH"),
    ("mkfs_cramfs", "mkfs.cramfs on PATH"),
    ("mkfs_minix", "mkfs.minix on PATH"),
    ("mkfs_bfs", "mkfs.bfs on PATH"),
    ("root_blockdev", "/ is on a block device"),
    ("tmp_blockdev", "the temp dir is on a block device"),
    (
        "tmp_direct_io",
        "the temp dir's file system takes O_DIRECT writes",
    ),
    ("tmp_fiemap", "the temp dir's file system answers FIEMAP"),
    ("tmp_xattr", "the temp dir's file system keeps user xattrs"),
    ("tmp_xfs", "the temp dir is on XFS"),
    (
        "tmp_immutable",
        "chattr on PATH, CAP_LINUX_IMMUTABLE and inode flags in the temp dir",
    ),
    (
        "tmp_polled_io",
        "the temp dir's device has poll queues (io_uring --hipri)",
    ),
];

fn main() {
    // The core crate runs this script too (its `build` key points here): name the file by
    // its absolute path, found from the package's directory upwards.
    let manifest =
        std::path::PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    if let Some(script) = manifest
        .ancestors()
        .map(|d| d.join("build.rs"))
        .find(|p| p.is_file())
    {
        println!("cargo::rerun-if-changed={}", script.display());
    }
    for var in ["FSBENCH_TEST_CAPS", "PATH", "TMPDIR"] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    for db in ["/var/lib/dpkg/status", "/var/lib/rpm/rpmdb.sqlite"] {
        if Path::new(db).exists() {
            println!("cargo::rerun-if-changed={db}");
        }
    }
    for (name, _) in CAPS {
        println!("cargo::rustc-check-cfg=cfg(has_{name})");
    }
    println!("cargo::rustc-check-cfg=cfg(fsbench_caps_forced)");
    let mut found = probe();
    if let Some(spec) = std::env::var("FSBENCH_TEST_CAPS")
        .ok()
        .filter(|s| !s.is_empty())
    {
        apply_override(&mut found, &spec);
        // The test that compares the probe with the machine has nothing to compare then.
        println!("cargo::rustc-cfg=fsbench_caps_forced");
    }
    let mut names = Vec::new();
    for ((name, _), on) in CAPS.iter().zip(&found) {
        if *on {
            println!("cargo::rustc-cfg=has_{name}");
            names.push(*name);
        }
    }
    // For the tests' failure messages: what the probe said when they were built.
    println!(
        "cargo::rustc-env=FSBENCH_TEST_CAPS_FOUND={}",
        names.join(",")
    );
}

/// FSBENCH_TEST_CAPS: `all`, `none`, `name` or `-name`, comma-separated, applied in order.
fn apply_override(found: &mut [bool], spec: &str) {
    for word in spec.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        match word {
            "all" | "none" => found.iter_mut().for_each(|f| *f = word == "all"),
            _ => {
                let (on, name) = match word.strip_prefix('-') {
                    Some(n) => (false, n),
                    None => (true, word.strip_prefix('+').unwrap_or(word)),
                };
                let Some(i) = CAPS.iter().position(|(n, _)| *n == name) else {
                    let known: Vec<String> = CAPS
                        .iter()
                        .map(|(n, what)| format!("  {n}: {what}"))
                        .collect();
                    panic!(
                        "FSBENCH_TEST_CAPS: unknown capability {name:?}; accepted: all, none, \
                         or these names, each optionally prefixed by -:\n{}",
                        known.join("\n")
                    );
                };
                found[i] = on;
            }
        }
    }
}

/// Probe every capability, in the order of `CAPS`.
fn probe() -> Vec<bool> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let caps = effective_caps(&status);
    let root = euid(&status) == Some(0) && caps & (1 << 21) != 0;
    let tmp = TempProbe::run();
    let tool = |name: &str| watch(on_path(name)).is_some();
    CAPS.iter()
        .map(|(name, _)| match *name {
            "root" => root,
            "loop" => root && tool("losetup") && Path::new("/dev/loop-control").exists(),
            "fuse" => {
                root && std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .open("/dev/fuse")
                    .is_ok()
            }
            // SAFETY: sysconf reads a system value and has no memory effects.
            "cpus2" => (unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }) >= 2,
            "uring" => uring_works(0),
            "uring_sqpoll" => uring_works(IORING_SETUP_SQPOLL),
            "strace" => {
                tool("strace") && runs(Command::new("strace").args(["-o", "/dev/null", "true"]))
            }
            "mpirun" => tool("mpirun"),
            "python3" => tool("python3") && runs(Command::new("python3").args(["-c", "pass"])),
            "fio" => tool("fio") && runs(Command::new("fio").arg("--version")),
            "chromium" => ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
                .iter()
                .any(|p| watch(Some(PathBuf::from(p)).filter(|p| p.exists())).is_some()),
            "root_blockdev" => block_device_of(Path::new("/")).is_some(),
            "tmp_blockdev" => tmp.blockdev,
            "tmp_direct_io" => tmp.direct_io,
            "tmp_fiemap" => tmp.fiemap,
            "tmp_xattr" => tmp.xattr,
            "tmp_xfs" => tmp.xfs,
            "tmp_immutable" => tmp.inode_flags && caps & (1 << 9) != 0 && tool("chattr"),
            "tmp_polled_io" => tmp.polled_io,
            m if m.starts_with("mkfs_") => tool(&m.replacen('_', ".", 1)),
            other => unreachable!("capability {other} has no probe"),
        })
        .collect()
}

/// The effective uid from /proc/self/status (`Uid: real effective saved fs`).
fn euid(status: &str) -> Option<u32> {
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The effective capability mask from /proc/self/status (`CapEff: hex`).
fn effective_caps(status: &str) -> u64 {
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|h| u64::from_str_radix(h.trim(), 16).ok())
        .unwrap_or(0)
}

/// The first executable `name` on PATH, as the tests' `Command::new(name)` would find it.
fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.mode() & 0o111 != 0)
        })
}

/// Rerun the probe when a found tool changes (upgraded, removed).
fn watch(p: Option<PathBuf>) -> Option<PathBuf> {
    if let Some(p) = &p {
        println!("cargo::rerun-if-changed={}", p.display());
    }
    p
}

fn runs(c: &mut Command) -> bool {
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

const IORING_SETUP_SQPOLL: u32 = 1 << 1;

/// A real ring of two entries with `flags`: io_uring can be compiled in but switched off
/// (sysctl kernel.io_uring_disabled) or blocked (seccomp in containers), and SQPOLL needed
/// privileges before Linux 5.11, which only a setup shows.
fn uring_works(flags: u32) -> bool {
    // struct io_uring_params is 120 bytes: sq_entries, cq_entries, flags (u32), ...; zero
    // elsewhere asks for defaults.
    let mut params = [0u32; 30];
    params[2] = flags;
    // SAFETY: io_uring_setup reads and writes `params` (120 bytes) and returns a new
    // descriptor or -1; the descriptor is ours to close.
    unsafe {
        let fd = libc::syscall(libc::SYS_io_uring_setup, 2u32, params.as_mut_ptr());
        if fd < 0 {
            return false;
        }
        libc::close(fd as libc::c_int);
    }
    true
}

/// The block device (major, minor) under `path`: its st_dev when sysfs knows it, else the
/// source of its mount when that is a block device (btrfs gives files an anonymous st_dev).
fn block_device_of(path: &Path) -> Option<(u64, u64)> {
    let dev = std::fs::metadata(path).ok()?.dev();
    let (major, minor) = (libc::major(dev) as u64, libc::minor(dev) as u64);
    if major != 0 && Path::new(&format!("/sys/dev/block/{major}:{minor}")).exists() {
        return Some((major, minor));
    }
    let path = path.canonicalize().ok()?;
    let info = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    // Fields: id parent maj:min root mountpoint options... - fstype source superoptions.
    let source = info
        .lines()
        .filter_map(|l| {
            let mnt = l.split_whitespace().nth(4)?;
            let src = l.split(" - ").nth(1)?.split_whitespace().nth(1)?;
            path.starts_with(mnt).then_some((mnt.len(), src))
        })
        .max_by_key(|(len, _)| *len)?
        .1;
    let meta = std::fs::metadata(source).ok()?;
    use std::os::unix::fs::FileTypeExt;
    meta.file_type().is_block_device().then(|| {
        let r = meta.rdev();
        (libc::major(r) as u64, libc::minor(r) as u64)
    })
}

/// What the temp dir's file system can do, found on a scratch directory made there and
/// removed again.
#[derive(Default)]
struct TempProbe {
    blockdev: bool,
    direct_io: bool,
    fiemap: bool,
    xattr: bool,
    xfs: bool,
    inode_flags: bool,
    polled_io: bool,
}

impl TempProbe {
    fn run() -> TempProbe {
        let tmp = std::env::temp_dir();
        let dev = block_device_of(&tmp);
        let mut t = TempProbe {
            blockdev: dev.is_some(),
            polled_io: dev.is_some_and(|(ma, mi)| polled(ma, mi)),
            ..TempProbe::default()
        };
        let dir = tmp.join(format!("fsbench-build-probe-{}", std::process::id()));
        if std::fs::create_dir(&dir).is_err() {
            return t;
        }
        t.on_scratch(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        t
    }

    fn on_scratch(&mut self, dir: &Path) {
        if let Ok(d) = std::fs::File::open(dir) {
            let mut flags: libc::c_long = 0;
            // SAFETY: FS_IOC_GETFLAGS writes one c_long into `flags`.
            self.inode_flags =
                unsafe { libc::ioctl(d.as_raw_fd(), libc::FS_IOC_GETFLAGS, &mut flags) } == 0;
            // SAFETY: statfs is plain data; fstatfs fills it for an open descriptor.
            let mut st: libc::statfs = unsafe { std::mem::zeroed() };
            // SAFETY: `st` is a valid statfs to write.
            if unsafe { libc::fstatfs(d.as_raw_fd(), &mut st) } == 0 {
                self.xfs = st.f_type as i64 == libc::XFS_SUPER_MAGIC;
            }
        }
        let file = dir.join("f");
        let Ok(f) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&file)
        else {
            return;
        };
        self.xattr = set_user_xattr(&f);
        self.direct_io = direct_write(&dir.join("d"));
        self.fiemap = fiemap_works(&f);
    }
}

fn set_user_xattr(f: &std::fs::File) -> bool {
    let name = CString::new("user.fsbench-probe").expect("no NUL");
    let value = b"1";
    // SAFETY: a NUL-terminated name and a value buffer of the given length.
    unsafe {
        libc::fsetxattr(
            f.as_raw_fd(),
            name.as_ptr(),
            value.as_ptr() as *const libc::c_void,
            value.len(),
            0,
        ) == 0
    }
}

/// One aligned 4 KiB O_DIRECT write: some file systems refuse the open, others the I/O.
fn direct_write(path: &Path) -> bool {
    let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    else {
        return false;
    };
    let layout = std::alloc::Layout::from_size_align(4096, 4096).expect("valid layout");
    // SAFETY: a non-zero-sized layout; freed below with the same layout.
    let buf = unsafe { std::alloc::alloc_zeroed(layout) };
    if buf.is_null() {
        return false;
    }
    // SAFETY: `buf` holds 4096 initialised bytes, aligned to 4096.
    let n = unsafe { libc::pwrite(f.as_raw_fd(), buf as *const libc::c_void, 4096, 0) };
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(buf, layout) };
    n == 4096
}

/// FIEMAP with room for no extents: asks only how many there are.
fn fiemap_works(f: &std::fs::File) -> bool {
    use std::io::Write;
    let mut w = f;
    if w.write_all(&[7u8; 8192]).is_err() || f.sync_all().is_err() {
        return false;
    }
    const FS_IOC_FIEMAP: libc::c_ulong = 0xC020_660B;
    // struct fiemap header: fm_start, fm_length (u64), then flags, mapped, count, reserved.
    let mut hdr = [0u64; 4];
    hdr[1] = u64::MAX;
    // SAFETY: a 32-byte fiemap header with fm_extent_count 0: the kernel writes only
    // fm_mapped_extents inside it.
    unsafe { libc::ioctl(f.as_raw_fd(), FS_IOC_FIEMAP as _, hdr.as_mut_ptr()) == 0 }
}

/// Polled completions need poll queues on the whole disk (a partition uses its disk's queue).
fn polled(major: u64, minor: u64) -> bool {
    let dev = PathBuf::from(format!("/sys/dev/block/{major}:{minor}"));
    let queue = if dev.join("partition").exists() {
        dev.join("../queue/io_poll")
    } else {
        dev.join("queue/io_poll")
    };
    std::fs::read_to_string(queue).is_ok_and(|s| s.trim() == "1")
}
