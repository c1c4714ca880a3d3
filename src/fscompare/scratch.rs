//! Scratch storage for `fscompare`: loop devices over sparse files fsbench creates in a
//! directory, or whole devices the user names with `--force`. Everything made is written to
//! a state file in the scratch directory *before* it is made, with the identity it got once
//! made, and torn down in reverse order (unmount, stop md arrays and volume groups, detach
//! loops, wipe forced devices, remove the files) on success, failure and Ctrl-C; a run
//! killed with SIGKILL leaves the state file, and the next run in that directory tears down
//! what it lists first, and says so.
//!
//! The state file is input another user may have planted, so it is trusted only when this
//! fsbench could have written it: the scratch directory is ours and writable by no one else
//! (nor any directory above it, sticky ones such as /tmp excepted), and the state file is a
//! regular file with one link, owned by the running user, not writable by group or others,
//! in this version's format. Otherwise it is refused and nothing in it is acted on. Each
//! entry of a trusted one is undone only while it still has the identity recorded when
//! fsbench made it (device and inode of files and directories; device number and backing
//! inode of loop devices; mount ID and device of mounts; device number of forced devices;
//! members of arrays); an entry that does not match is left alone, and said so.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The state file in the scratch directory.
pub(crate) const STATE: &str = ".fsbench-fscompare.state";

/// The header line of a state file this version writes (the pid follows).
const HEADER: &str = "fsbench-fscompare state 2 pid ";

/// Largest state file read (a run lists a few dozen lines).
const STATE_MAX: u64 = 1 << 20;

/// Most entries of a refused state file named one by one.
const SHOWN_MAX: usize = 32;

/// The name every file, directory, array and volume group a run makes starts with.
const OUR_PREFIX: &str = "fsbench-fscompare-";

/// The identity of a file or directory: its device and inode numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Id {
    pub dev: u64,
    pub ino: u64,
}

impl Id {
    fn of(m: &std::fs::Metadata) -> Id {
        use std::os::unix::fs::MetadataExt;
        Id {
            dev: m.dev(),
            ino: m.ino(),
        }
    }
}

/// A mount as /proc/self/mountinfo lists it: its mount ID and the device number it shows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MountId {
    pub id: u64,
    pub majmin: String,
}

/// One thing a run made, in the order it was made, with the identity it had when fsbench
/// made it (None while it is being made: recorded first, identified once made).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A sparse backing file (created O_EXCL, marked).
    File(PathBuf, Option<Id>),
    /// A loop device (its device number) and the backing file it was attached to (path and
    /// identity).
    Loop {
        dev: PathBuf,
        rdev: u64,
        backing: PathBuf,
        backing_id: Id,
    },
    /// A user's device (and its device number) fsbench wrote a file system or array on
    /// (`wipefs -a` at the end).
    Wipe(PathBuf, u64),
    /// An md array fsbench created (its members must be devices of this run).
    Md(PathBuf),
    /// An LVM volume group fsbench created, and its physical volumes.
    Vg(String, Vec<PathBuf>),
    /// A mount point directory fsbench created.
    MountDir(PathBuf, Option<Id>),
    /// A mount fsbench made there: the device number of the device it mounted, and the
    /// mount's ID once mounted.
    Mount {
        mnt: PathBuf,
        source_rdev: u64,
        id: Option<MountId>,
    },
}

fn id_field(id: &Option<Id>) -> String {
    match id {
        Some(i) => format!("{}:{}", i.dev, i.ino),
        None => "-".into(),
    }
}

fn parse_id(s: &str) -> Option<Option<Id>> {
    if s == "-" {
        return Some(None);
    }
    let (d, i) = s.split_once(':')?;
    Some(Some(Id {
        dev: d.parse().ok()?,
        ino: i.parse().ok()?,
    }))
}

impl Item {
    fn line(&self) -> String {
        let p = |x: &Path| x.display().to_string();
        match self {
            Item::File(f, id) => format!("file\t{}\t{}", p(f), id_field(id)),
            Item::Loop {
                dev,
                rdev,
                backing,
                backing_id,
            } => format!(
                "loop\t{}\t{rdev}\t{}\t{}",
                p(dev),
                p(backing),
                id_field(&Some(*backing_id))
            ),
            Item::Wipe(d, rdev) => format!("wipe\t{}\t{rdev}", p(d)),
            Item::Md(d) => format!("md\t{}", p(d)),
            Item::Vg(n, pvs) => {
                let mut s = format!("vg\t{n}");
                for d in pvs {
                    s.push('\t');
                    s.push_str(&p(d));
                }
                s
            }
            Item::MountDir(d, id) => format!("mntdir\t{}\t{}", p(d), id_field(id)),
            Item::Mount {
                mnt,
                source_rdev,
                id,
            } => match id {
                Some(m) => format!("mount\t{}\t{source_rdev}\t{}\t{}", p(mnt), m.id, m.majmin),
                None => format!("mount\t{}\t{source_rdev}\t-\t-", p(mnt)),
            },
        }
    }

    fn parse(line: &str) -> Option<Item> {
        let f: Vec<&str> = line.split('\t').collect();
        // Paths are absolute and free of control characters (they are shown on stderr).
        let pb = |i: usize| {
            f.get(i)
                .filter(|s| s.starts_with('/') && !s.chars().any(char::is_control))
                .map(PathBuf::from)
        };
        let num = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok());
        let n = f.len();
        Some(match *f.first()? {
            "file" if n == 3 => Item::File(pb(1)?, parse_id(f[2])?),
            "loop" if n == 5 => Item::Loop {
                dev: pb(1)?,
                rdev: num(2)?,
                backing: pb(3)?,
                backing_id: parse_id(f[4])??,
            },
            "wipe" if n == 3 => Item::Wipe(pb(1)?, num(2)?),
            "md" if n == 2 => Item::Md(pb(1)?),
            "vg" if n >= 2 && !f[1].chars().any(char::is_control) => Item::Vg(
                f[1].to_string(),
                (2..n).map(pb).collect::<Option<Vec<_>>>()?,
            ),
            "mntdir" if n == 3 => Item::MountDir(pb(1)?, parse_id(f[2])?),
            "mount" if n == 5 => Item::Mount {
                mnt: pb(1)?,
                source_rdev: num(2)?,
                id: match (f[3], f[4]) {
                    ("-", "-") => None,
                    (id, majmin) if majmin.contains(':') => Some(MountId {
                        id: id.parse().ok()?,
                        majmin: majmin.to_string(),
                    }),
                    _ => return None,
                },
            },
            _ => return None,
        })
    }

    /// What the item is, for the lines that say what was left alone.
    fn what(&self) -> String {
        match self {
            Item::File(f, _) => format!("file {}", f.display()),
            Item::Loop { dev, backing, .. } => {
                format!("loop device {} (over {})", dev.display(), backing.display())
            }
            Item::Wipe(d, _) => format!("device {}", d.display()),
            Item::Md(d) => format!("md array {}", d.display()),
            Item::Vg(n, _) => format!("volume group {n}"),
            Item::MountDir(d, _) => format!("directory {}", d.display()),
            Item::Mount { mnt, .. } => format!("mount on {}", mnt.display()),
        }
    }
}

/// Run a system tool, stdin closed; Ok(stdout) or Err(its last stderr line).
pub(crate) fn tool(argv: &[String]) -> Result<String, String> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {}: {e}", argv[0]))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        let last = why_failed(&err);
        Err(format!(
            "`{}` failed ({}): {last}",
            shell_line(argv),
            out.status
        ))
    }
}

/// How long [`unmount`] keeps trying a file system that is busy.
const UNMOUNT_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// `umount MNT`, tried again for a while when the file system is busy: an io_uring run
/// that just ended releases its files from a kernel worker a moment after the process (or
/// the engine) let go of the ring, and a `umount` in that moment fails with "target is busy".
pub(crate) fn unmount(mnt: &Path) -> Result<(), String> {
    let argv = args(&["umount"], &[mnt]);
    let t0 = std::time::Instant::now();
    loop {
        match tool(&argv) {
            Ok(_) => return Ok(()),
            Err(e) if e.contains("busy") && t0.elapsed() < UNMOUNT_PATIENCE => {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Err(e) => return Err(e),
        }
    }
}

/// The line of a tool's stderr that says why it failed: the last one before a usage text
/// (mkfs.xfs prints the reason, then its whole usage), else the last one.
fn why_failed(stderr: &str) -> String {
    stderr
        .lines()
        .take_while(|l| !l.trim_start().starts_with("Usage:"))
        .filter(|l| !l.trim().is_empty())
        .last()
        .unwrap_or("")
        .trim()
        .to_string()
}

/// A command line as a shell would need it typed (what the Results record).
pub(crate) fn shell_line(argv: &[String]) -> String {
    argv.iter()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./=,:@+".contains(&b))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn args(v: &[&str], paths: &[&Path]) -> Vec<String> {
    v.iter()
        .map(|s| s.to_string())
        .chain(paths.iter().map(|p| p.display().to_string()))
        .collect()
}

/// `path` as /proc/self/mountinfo writes it (space, tab, newline and backslash in octal).
fn mountinfo_escape(path: &Path) -> String {
    let mut out = String::new();
    for c in path.display().to_string().chars() {
        match c {
            ' ' => out.push_str("\\040"),
            '\t' => out.push_str("\\011"),
            '\n' => out.push_str("\\012"),
            '\\' => out.push_str("\\134"),
            c => out.push(c),
        }
    }
    out
}

/// The topmost mount on `dir` now, from /proc/self/mountinfo: its mount ID, the MAJ:MIN it
/// shows, and its source.
fn mount_on(dir: &Path) -> Option<(u64, String, String)> {
    let text = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    let want = mountinfo_escape(dir);
    text.lines().rev().find_map(|l| {
        let f: Vec<&str> = l.split(' ').collect();
        if f.get(4) != Some(&want.as_str()) {
            return None;
        }
        let sep = f.iter().position(|x| *x == "-")?;
        Some((
            f[0].parse().ok()?,
            f.get(2)?.to_string(),
            f.get(sep + 2)?.to_string(),
        ))
    })
}

/// The device number of the block device `path` names (a symbolic link such as /dev/md/x
/// is followed), if it is one.
fn rdev_of(path: &Path) -> Option<u64> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::metadata(path)
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .map(|m| m.rdev())
}

fn majmin(rdev: u64) -> String {
    format!("{}:{}", libc::major(rdev), libc::minor(rdev))
}

/// `struct loop_info64` of <linux/loop.h>.
#[repr(C)]
struct LoopInfo64 {
    lo_device: u64,
    lo_inode: u64,
    lo_rdevice: u64,
    lo_offset: u64,
    lo_sizelimit: u64,
    lo_number: u32,
    lo_encrypt_type: u32,
    lo_encrypt_key_size: u32,
    lo_flags: u32,
    lo_file_name: [u8; 64],
    lo_crypt_name: [u8; 64],
    lo_encrypt_key: [u8; 32],
    lo_init: [u64; 2],
}

const LOOP_CLR_FD: libc::c_ulong = 0x4C01;
const LOOP_GET_STATUS64: libc::c_ulong = 0x4C05;

/// The identity of the file behind the loop device open as `f` (LOOP_GET_STATUS64), None
/// when no file is attached.
fn loop_backing(f: &std::fs::File) -> Result<Option<Id>, String> {
    use std::os::fd::AsRawFd;
    // SAFETY: all-zero bytes are a valid LoopInfo64 (integers and byte arrays).
    let mut info: LoopInfo64 = unsafe { std::mem::zeroed() };
    // SAFETY: LOOP_GET_STATUS64 fills a struct loop_info64, which LoopInfo64 mirrors; the
    // descriptor is ours and open.
    let rc = unsafe { libc::ioctl(f.as_raw_fd(), LOOP_GET_STATUS64 as _, &mut info) };
    if rc != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENXIO) {
            return Ok(None);
        }
        return Err(format!("LOOP_GET_STATUS64: {e}"));
    }
    // The kernel encodes the backing file's device as new_encode_dev does.
    let d = info.lo_device;
    let (maj, min) = ((d >> 8) & 0xfff, (d & 0xff) | ((d >> 12) & 0xfff00));
    Ok(Some(Id {
        dev: libc::makedev(maj as u32, min as u32),
        ino: info.lo_inode,
    }))
}

/// What undoing one item did.
#[derive(Debug, PartialEq, Eq)]
enum Undone {
    /// Undone; the line says what was done.
    Done(String),
    /// It was gone already.
    Gone,
    /// It is not what fsbench made (it does not have the identity recorded when fsbench
    /// made it): left alone, and why.
    NotOurs(String),
}
use Undone::{Done, Gone, NotOurs};

/// What the items of one state file may touch: paths in the scratch directory that carry
/// fsbench's name, and the device numbers of the loop devices (still backed by the file
/// fsbench attached) and forced devices it lists.
struct Ours<'a> {
    dir: &'a Path,
    rdevs: Vec<u64>,
}

impl<'a> Ours<'a> {
    fn of(dir: &'a Path, items: &[Item]) -> Ours<'a> {
        let rdevs = items
            .iter()
            .filter_map(|it| match it {
                Item::Loop {
                    dev,
                    rdev,
                    backing_id,
                    ..
                } => {
                    let f = open_device(dev).ok()?;
                    let same = rdev_of_fd(&f) == Some(*rdev)
                        && loop_backing(&f).ok()? == Some(*backing_id);
                    same.then_some(*rdev)
                }
                Item::Wipe(d, rdev) => (rdev_of(d) == Some(*rdev)).then_some(*rdev),
                _ => None,
            })
            .collect();
        Ours { dir, rdevs }
    }

    /// Does `p` name something of a run in the scratch directory?
    fn names(&self, p: &Path) -> bool {
        p.parent() == Some(self.dir)
            && p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(OUR_PREFIX))
    }
}

fn open_device(dev: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dev)
}

fn rdev_of_fd(f: &std::fs::File) -> Option<u64> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    f.metadata()
        .ok()
        .filter(|m| m.file_type().is_block_device())
        .map(|m| m.rdev())
}

/// Detach loop device `dev` only while it is still the device `rdev` and still backed by
/// the file `backing` (path in sysfs, device and inode from the kernel): checked and detached
/// through one open descriptor.
fn detach_loop(dev: &Path, rdev: u64, backing: &Path, id: Id) -> Result<Undone, String> {
    use std::os::fd::AsRawFd;
    let f = match open_device(dev) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Gone),
        Err(e) => return Err(format!("cannot open {}: {e}", dev.display())),
    };
    let now = rdev_of_fd(&f);
    if now != Some(rdev) {
        return Ok(NotOurs(format!(
            "it is not the device {} fsbench attached",
            majmin(rdev)
        )));
    }
    match loop_backing(&f)? {
        None => return Ok(Gone),
        Some(b) if b != id => {
            return Ok(NotOurs(format!(
                "it is backed by inode {} on device {}, not by the file fsbench attached (inode {} on {})",
                b.ino,
                majmin(b.dev),
                id.ino,
                majmin(id.dev)
            )))
        }
        Some(_) => {}
    }
    let sys = format!("/sys/dev/block/{}/loop/backing_file", majmin(rdev));
    let named = std::fs::read_to_string(&sys).unwrap_or_default();
    let named = named.trim_end_matches('\n');
    if Path::new(named.strip_suffix(" (deleted)").unwrap_or(named)) != backing {
        return Ok(NotOurs(format!(
            "sysfs names its backing file '{named}', not {}",
            backing.display()
        )));
    }
    // SAFETY: LOOP_CLR_FD takes no argument; the descriptor is ours and open.
    if unsafe { libc::ioctl(f.as_raw_fd(), LOOP_CLR_FD as _, 0) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::ENXIO) {
            return Ok(Gone);
        }
        return Err(format!("cannot detach {}: {e}", dev.display()));
    }
    Ok(Done(format!("detached {}", dev.display())))
}

/// Is every member of the md array or device-mapper device `dev` one of `ours`?
fn members_are_ours(dev: &Path, ours: &Ours) -> Result<bool, String> {
    let Some(rdev) = rdev_of(dev) else {
        return Ok(false);
    };
    let dir = format!("/sys/dev/block/{}/slaves", majmin(rdev));
    let rd = std::fs::read_dir(&dir).map_err(|e| format!("cannot read {dir}: {e}"))?;
    let mut any = false;
    for e in rd.flatten() {
        any = true;
        let numbers = std::fs::read_to_string(e.path().join("dev")).unwrap_or_default();
        let member = numbers
            .trim()
            .split_once(':')
            .and_then(|(a, b)| Some(libc::makedev(a.parse().ok()?, b.parse().ok()?)));
        if !member.is_some_and(|m| ours.rdevs.contains(&m)) {
            return Ok(false);
        }
    }
    Ok(any)
}

/// Undo one item, after checking it is still what fsbench made (the identity recorded in
/// the state file); Err says what could not be undone.
fn undo(item: &Item, ours: &Ours) -> Result<Undone, String> {
    let not_here = || {
        Ok(NotOurs(format!(
            "it is not in the scratch directory {} under fsbench's name",
            ours.dir.display()
        )))
    };
    match item {
        Item::Mount {
            mnt,
            source_rdev,
            id,
        } => {
            if !ours.names(mnt) {
                return not_here();
            }
            let Some((mid, shown, source)) = mount_on(mnt) else {
                return Ok(Gone);
            };
            let same = match id {
                Some(m) => m.id == mid && m.majmin == shown,
                // Killed between mount and recording its ID: the device must be the one
                // fsbench mounted.
                None => rdev_of(Path::new(&source)) == Some(*source_rdev),
            };
            if !same {
                let want = match id {
                    Some(m) => format!("mount ID {} on {}", m.id, m.majmin),
                    None => format!("a mount of device {}", majmin(*source_rdev)),
                };
                return Ok(NotOurs(format!(
                    "it is mount ID {mid} on {shown} ({source}), not the one fsbench made ({want})"
                )));
            }
            // SAFETY: sync has no preconditions.
            unsafe { libc::sync() };
            if unmount(mnt).is_err() {
                // A process still in our file system: detach it now, the kernel finishes later.
                tool(&args(&["umount", "-l"], &[mnt]))?;
            }
            Ok(Done(format!("unmounted {}", mnt.display())))
        }
        Item::MountDir(d, id) => {
            if !ours.names(d) {
                return not_here();
            }
            let m = match std::fs::symlink_metadata(d) {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Gone),
                Err(e) => return Err(format!("cannot examine {}: {e}", d.display())),
            };
            if !m.is_dir() {
                return Ok(NotOurs("it is not a directory".into()));
            }
            if let Some(id) = id.filter(|id| *id != Id::of(&m)) {
                return Ok(NotOurs(format!(
                    "it is inode {} on device {}, not the directory fsbench made (inode {} on {})",
                    Id::of(&m).ino,
                    majmin(Id::of(&m).dev),
                    id.ino,
                    majmin(id.dev)
                )));
            }
            match std::fs::remove_dir(d) {
                Ok(()) => Ok(Done(format!("removed {}", d.display()))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Gone),
                Err(e) => Err(format!("cannot remove {}: {e}", d.display())),
            }
        }
        Item::Md(d) => {
            if rdev_of(d).is_none() {
                return Ok(Gone);
            }
            if !members_are_ours(d, ours)? {
                return Ok(NotOurs(
                    "its members are not the devices fsbench listed".into(),
                ));
            }
            tool(&args(&["mdadm", "--stop"], &[d]))?;
            Ok(Done(format!("stopped {}", d.display())))
        }
        Item::Vg(name, pvs) => {
            if !name.starts_with(&OUR_PREFIX.replace('-', "_")) {
                return Ok(NotOurs("it does not carry fsbench's name".into()));
            }
            if !pvs
                .iter()
                .all(|pv| rdev_of(pv).is_some_and(|r| ours.rdevs.contains(&r)))
            {
                return Ok(NotOurs(
                    "its physical volumes are not the devices fsbench listed".into(),
                ));
            }
            let vg = vec!["vgremove".to_string(), "-f".into(), name.clone()];
            tool(&vg)?;
            for pv in pvs {
                let _ = tool(&args(&["pvremove", "-ff", "-y"], &[pv]));
            }
            Ok(Done(format!("removed volume group {name}")))
        }
        Item::Loop {
            dev,
            rdev,
            backing,
            backing_id,
        } => {
            if !ours.names(backing) {
                return not_here();
            }
            detach_loop(dev, *rdev, backing, *backing_id)
        }
        Item::Wipe(dev, rdev) => {
            match rdev_of(dev) {
                None => return Ok(Gone),
                Some(r) if r != *rdev => {
                    return Ok(NotOurs(format!(
                        "it is device {}, not the device {} given with --device",
                        majmin(r),
                        majmin(*rdev)
                    )))
                }
                Some(_) => {}
            }
            tool(&args(&["wipefs", "-a", "-q"], &[dev]))?;
            Ok(Done(format!("wiped {}", dev.display())))
        }
        Item::File(f, id) => {
            if !ours.names(f) {
                return not_here();
            }
            let file = match std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(f)
            {
                Ok(file) => file,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Gone),
                Err(_) => return Ok(NotOurs("it is not the file fsbench created".into())),
            };
            let Ok(m) = file.metadata() else {
                return Ok(NotOurs("it cannot be examined".into()));
            };
            let now = Id::of(&m);
            let same = m.is_file()
                && match id {
                    Some(id) => *id == now,
                    // Killed before its identity was recorded: fsbench's mark, where the
                    // scratch file system keeps xattrs.
                    None => match crate::safety::fd_get_mark(&file) {
                        Ok(Some(v)) => v == b"created",
                        Ok(None) => false,
                        Err(_) => true,
                    },
                };
            if !same {
                return Ok(NotOurs("it is not the file fsbench created".into()));
            }
            // Every loop still over this very file goes first (one attached after the state
            // was written and before it was recorded, in a killed run).
            for dev in crate::sweep::rawdev::loops_backed_by(f) {
                if let Some(r) = rdev_of(&dev) {
                    let _ = detach_loop(&dev, r, f, now);
                }
            }
            std::fs::remove_file(f).map_err(|e| format!("cannot remove {}: {e}", f.display()))?;
            Ok(Done(format!("removed {}", f.display())))
        }
    }
}

/// Is a directory with these permissions writable by another user (world-writable, or
/// group-writable by a group other than ours)?
fn writable_by_others(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let egid = rustix::process::getegid().as_raw();
    m.mode() & 0o002 != 0 || (m.mode() & 0o020 != 0 && m.gid() != egid)
}

/// Refuse a scratch directory another user could change: it must be ours and writable only
/// by us, and every directory above it owned by root or us and not writable by others
/// (unless sticky, as /tmp is).
fn check_scratch_dir(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let euid = rustix::process::geteuid().as_raw();
    let m = std::fs::symlink_metadata(dir)?;
    if m.uid() != euid {
        crate::bail_usage!(
            "refusing --scratch {}: it is owned by uid {}, not by this user (uid {euid}); fscompare keeps the record of what it builds there",
            dir.display(),
            m.uid()
        );
    }
    if writable_by_others(&m) {
        crate::bail_usage!(
            "refusing --scratch {}: other users may write to it (mode {:o}); fscompare keeps the record of what it builds there (chmod go-w, or use another directory)",
            dir.display(),
            m.mode() & 0o7777
        );
    }
    for a in dir.ancestors().skip(1) {
        let m = std::fs::symlink_metadata(a)?;
        let sticky = m.mode() & 0o1000 != 0;
        if (m.uid() != 0 && m.uid() != euid) || (writable_by_others(&m) && !sticky) {
            crate::bail_usage!(
                "refusing --scratch {}: {} above it may be changed by another user (owner uid {}, mode {:o}); give a --scratch under directories only root or you can change, e.g. /var/tmp/fscompare",
                dir.display(),
                a.display(),
                m.uid(),
                m.mode() & 0o7777
            );
        }
    }
    Ok(())
}

/// Why the state file open as `f` is not one this fsbench wrote, if it is not: it must be a
/// regular file with one link, owned by the running user, not writable by group or others.
fn foreign_state(m: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let euid = rustix::process::geteuid().as_raw();
    if !m.is_file() {
        Some("it is not a regular file".into())
    } else if m.uid() != euid {
        Some(format!(
            "it is owned by uid {}, not by this user (uid {euid})",
            m.uid()
        ))
    } else if m.mode() & 0o022 != 0 {
        Some(format!(
            "it is writable by group or others (mode {:o})",
            m.mode() & 0o7777
        ))
    } else if m.nlink() != 1 {
        Some(format!("it has {} links", m.nlink()))
    } else if m.len() > STATE_MAX {
        Some(format!("it is larger than {STATE_MAX} bytes"))
    } else {
        None
    }
}

/// Tear down what the state file of a killed run in `dir` lists (the caller holds the
/// directory's lock, so its writer is gone). A state file fsbench did not write is refused
/// and nothing in it is acted on; an item whose identity is not the one recorded is left
/// alone and said so; what cannot be undone stays in the state file.
fn clean_stale(dir: &Path) -> anyhow::Result<Vec<String>> {
    use std::io::Read as _;
    let path = dir.join(STATE);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => crate::bail_usage!(
            "refusing {}: it is a symbolic link; nothing it names is undone (remove it, or use another --scratch)",
            path.display()
        ),
        Err(e) => anyhow::bail!("cannot open {}: {e}", path.display()),
    };
    let meta = file.metadata()?;
    let mut text = String::new();
    if meta.is_file() {
        file.take(STATE_MAX)
            .read_to_string(&mut text)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
    }
    let items: Vec<Item> = text.lines().skip(1).filter_map(Item::parse).collect();
    let pid = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(HEADER))
        .filter(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
    let refusal = foreign_state(&meta).or_else(|| {
        pid.is_none()
            .then(|| "it is not a state file this version of fsbench writes".to_string())
    });
    if let Some(why) = refusal {
        for it in items.iter().take(SHOWN_MAX) {
            eprintln!(
                "fsbench: left alone: {} (listed in a state file fsbench did not write)",
                it.what()
            );
        }
        if items.len() > SHOWN_MAX {
            eprintln!(
                "fsbench: left alone: {} more entries",
                items.len() - SHOWN_MAX
            );
        }
        crate::bail_usage!(
            "refusing {}: {why}; nothing it lists is undone (remove it, or use another --scratch)",
            path.display()
        );
    }
    let pid = pid.unwrap_or("?").to_string();
    let ours = Ours::of(dir, &items);
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    let mut left = Vec::new();
    for it in items.iter().rev() {
        match undo(it, &ours) {
            Ok(Done(what)) => lines.push(format!("  {what}")),
            Ok(Gone) => {}
            Ok(NotOurs(why)) => lines.push(format!("  left alone: {}: {why}", it.what())),
            Err(e) => {
                failed.push(e);
                left.insert(0, it.clone());
            }
        }
    }
    if !failed.is_empty() {
        for l in &lines {
            eprintln!("fsbench:{l}");
        }
        // What is left stays listed, under the killed run's pid, for the next attempt.
        write_state(dir, &format!("{HEADER}{pid}"), &left)?;
        anyhow::bail!(
            "{} lists what an earlier fscompare run (pid {pid}) made, and some of it cannot be undone: {}",
            path.display(),
            failed.join("; ")
        );
    }
    std::fs::remove_file(&path)?;
    lines.insert(
        0,
        format!(
            "fsbench: cleaned up after an earlier fscompare run (pid {pid}) that did not finish"
        ),
    );
    Ok(lines)
}

/// Write the state file of `dir` (a temporary file created O_EXCL|O_NOFOLLOW, mode 0600,
/// then renamed over it), or remove it when nothing is listed.
fn write_state(dir: &Path, header: &str, items: &[Item]) -> anyhow::Result<()> {
    let path = dir.join(STATE);
    if items.is_empty() {
        return match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => anyhow::bail!("cannot remove {}: {e}", path.display()),
        };
    }
    let mut text = format!("{header}\n");
    for it in items {
        text.push_str(&it.line());
        text.push('\n');
    }
    let tmp = dir.join(format!("{STATE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&tmp)?;
    f.write_all(text.as_bytes())?;
    f.sync_all()?;
    std::fs::rename(&tmp, &path)?;
    Ok(())
}

/// The scratch directory of one run: locked, its state file kept up to date.
pub(crate) struct Scratch {
    pub dir: PathBuf,
    _lock: crate::guard::DirLock,
    /// Remove `dir` itself at the end (fsbench made it).
    made_dir: bool,
    items: Vec<Item>,
    seq: u32,
}

impl Scratch {
    /// Open (creating when missing, mode 0700) and lock the scratch directory, first tearing
    /// down what a killed run left there. Returns the lines saying what was cleaned.
    pub(crate) fn open(dir: &Path) -> anyhow::Result<(Scratch, Vec<String>)> {
        use std::os::unix::fs::DirBuilderExt;
        if dir.as_os_str().as_encoded_bytes().iter().any(|b| *b < 0x20) {
            crate::bail_usage!(
                "bad --scratch {}: control characters in the path",
                dir.display()
            );
        }
        let made_dir = match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => false,
            Err(e) => crate::bail_usage!("cannot create --scratch {}: {e}", dir.display()),
        };
        let meta = std::fs::symlink_metadata(dir)?;
        if !meta.is_dir() {
            crate::bail_usage!(
                "--scratch {} is not a directory (a symbolic link is not followed)",
                dir.display()
            );
        }
        let dir = std::fs::canonicalize(dir)?;
        if let Err(e) = check_scratch_dir(&dir) {
            if made_dir {
                let _ = std::fs::remove_dir(&dir);
            }
            return Err(e);
        }
        let lock = crate::guard::lock_dir(&dir)?;
        let cleaned = clean_stale(&dir)?;
        let s = Scratch {
            dir,
            _lock: lock,
            made_dir,
            items: Vec::new(),
            seq: 0,
        };
        Ok((s, cleaned))
    }

    /// Write the state file (see [`write_state`]).
    fn save(&self) -> anyhow::Result<()> {
        let header = format!("{HEADER}{}", std::process::id());
        write_state(&self.dir, &header, &self.items)
    }

    /// Record `item` (in the state file first), then make it with `make`; when making fails
    /// the record is dropped again (what was half made is undone by `undo`'s checks).
    pub(crate) fn make<T>(
        &mut self,
        item: Item,
        make: impl FnOnce() -> anyhow::Result<T>,
    ) -> anyhow::Result<T> {
        self.items.push(item);
        self.save()?;
        match make() {
            Ok(v) => Ok(v),
            Err(e) => {
                if let Some(it) = self.items.pop() {
                    let ours = Ours::of(&self.dir, &self.items);
                    let _ = undo(&it, &ours);
                }
                self.save()?;
                Err(e)
            }
        }
    }

    /// Replace the newest record with `item`: the same thing, now with the identity it got
    /// when it was made.
    fn identify(&mut self, item: Item) -> anyhow::Result<()> {
        if let Some(last) = self.items.last_mut() {
            *last = item;
        }
        self.save()
    }

    /// A new name in the scratch directory: `fsbench-fscompare-PID-N` + `suffix`.
    pub(crate) fn fresh_name(&mut self, suffix: &str) -> PathBuf {
        self.seq += 1;
        self.dir.join(format!(
            "{OUR_PREFIX}{}-{}{suffix}",
            std::process::id(),
            self.seq
        ))
    }

    /// `n` loop devices over new sparse files of `size` bytes.
    pub(crate) fn loop_devices(&mut self, n: u32, size: u64) -> anyhow::Result<Vec<PathBuf>> {
        let mut devs = Vec::new();
        for _ in 0..n {
            let file = self.fresh_name(".img");
            let id = self.make(Item::File(file.clone(), None), || {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(&file)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", file.display()))?;
                crate::safety::fd_set_mark(&f, b"created");
                f.set_len(size)?;
                Ok(Id::of(&f.metadata()?))
            })?;
            self.identify(Item::File(file.clone(), Some(id)))?;
            // Direct I/O on the backing file where the kernel allows it, so blocks are not
            // cached twice (by the loop device's file system and by the backing file's).
            let out = tool(&args(
                &["losetup", "--find", "--show", "--direct-io=on"],
                &[&file],
            ))
            .or_else(|_| tool(&args(&["losetup", "--find", "--show"], &[&file])))
            .map_err(anyhow::Error::msg)?;
            let dev = PathBuf::from(out.trim());
            // The loop's own identity (its device number) and the identity of the file
            // behind it, from the kernel: what a later teardown checks before detaching.
            let f = open_device(&dev)
                .map_err(|e| anyhow::anyhow!("cannot open {}: {e}", dev.display()))?;
            let rdev = rdev_of_fd(&f)
                .ok_or_else(|| anyhow::anyhow!("{} is not a block device", dev.display()))?;
            if loop_backing(&f).map_err(anyhow::Error::msg)? != Some(id) {
                anyhow::bail!(
                    "losetup printed {}, which is not backed by {}",
                    dev.display(),
                    file.display()
                );
            }
            self.items.push(Item::Loop {
                dev: dev.clone(),
                rdev,
                backing: file,
                backing_id: id,
            });
            self.save()?;
            devs.push(dev);
        }
        Ok(devs)
    }

    /// A new mount point directory.
    pub(crate) fn mount_dir(&mut self) -> anyhow::Result<PathBuf> {
        use std::os::unix::fs::DirBuilderExt;
        let d = self.fresh_name(".mnt");
        let id = self.make(Item::MountDir(d.clone(), None), || {
            std::fs::DirBuilder::new()
                .mode(0o700)
                .create(&d)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", d.display()))?;
            Ok(Id::of(&std::fs::symlink_metadata(&d)?))
        })?;
        self.identify(Item::MountDir(d.clone(), Some(id)))?;
        Ok(d)
    }

    /// Mount `device` on `mnt` (a directory from [`Scratch::mount_dir`]) with `mount`,
    /// recorded first with the device's number and then with the mount's ID.
    pub(crate) fn mount(
        &mut self,
        device: &Path,
        mnt: &Path,
        mount: impl FnOnce() -> anyhow::Result<String>,
    ) -> anyhow::Result<()> {
        let source_rdev = rdev_of(device)
            .ok_or_else(|| anyhow::anyhow!("{} is not a block device", device.display()))?;
        let pending = Item::Mount {
            mnt: mnt.to_path_buf(),
            source_rdev,
            id: None,
        };
        self.make(pending, mount)?;
        self.record_mount_id(mnt, true)
    }

    /// Record the ID of the mount on `mnt` as it is now (`known`), or forget it while the
    /// mount is being made again (then the device it mounts identifies it).
    pub(crate) fn record_mount_id(&mut self, mnt: &Path, known: bool) -> anyhow::Result<()> {
        let now = if known {
            let (id, majmin, _) = mount_on(mnt).ok_or_else(|| {
                anyhow::anyhow!(
                    "{} is not in /proc/self/mountinfo after mount",
                    mnt.display()
                )
            })?;
            Some(MountId { id, majmin })
        } else {
            None
        };
        for it in &mut self.items {
            if let Item::Mount { mnt: m, id, .. } = it {
                if m == mnt {
                    *id = now.clone();
                }
            }
        }
        self.save()
    }

    /// Tear down everything made so far, newest first. Returns what could not be undone;
    /// what is no longer what fsbench made is left alone and said so on stderr.
    pub(crate) fn teardown(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        while let Some(it) = self.items.pop() {
            let ours = Ours::of(&self.dir, &self.items);
            match undo(&it, &ours) {
                Ok(NotOurs(why)) => {
                    eprintln!("fsbench: scratch cleanup: left alone: {}: {why}", it.what())
                }
                Ok(Done(_) | Gone) => {}
                Err(e) => {
                    failed.push(e);
                    // Keep the record: the next run tries again and says so.
                    self.items.insert(0, it);
                    if failed.len() > 64 {
                        break;
                    }
                    continue;
                }
            }
            let _ = self.save();
        }
        if failed.is_empty() {
            let _ = self.save();
        }
        failed
    }

    /// Tear down, with the failures on stderr.
    pub(crate) fn teardown_loudly(&mut self) -> bool {
        let failed = self.teardown();
        for f in &failed {
            eprintln!("fsbench: scratch cleanup: {f}");
        }
        failed.is_empty()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        self.teardown_loudly();
        if self.made_dir && self.items.is_empty() {
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_lines_round_trip_and_garbage_is_ignored() {
        let backing_id = Id { dev: 2049, ino: 77 };
        let id = Some(backing_id);
        let items = [
            Item::File("/s/a.img".into(), id),
            Item::File("/s/a.img".into(), None),
            Item::Loop {
                dev: "/dev/loop3".into(),
                rdev: libc::makedev(7, 3),
                backing: "/s/a.img".into(),
                backing_id,
            },
            Item::Wipe("/dev/sdz".into(), libc::makedev(8, 16)),
            Item::Md("/dev/md/x".into()),
            Item::Vg(
                "fsbench_fscompare_1_2".into(),
                vec!["/dev/loop3".into(), "/dev/loop4".into()],
            ),
            Item::MountDir("/s/m".into(), id),
            Item::MountDir("/s/m".into(), None),
            Item::Mount {
                mnt: "/s/m".into(),
                source_rdev: libc::makedev(7, 3),
                id: Some(MountId {
                    id: 812,
                    majmin: "7:3".into(),
                }),
            },
            Item::Mount {
                mnt: "/s/m".into(),
                source_rdev: 1795,
                id: None,
            },
        ];
        for it in &items {
            assert_eq!(Item::parse(&it.line()).as_ref(), Some(it));
        }
        for bad in [
            "",
            "file",
            "file\trelative\t-",
            "file\t/s/a",
            "loop\t/dev/loop1",
            "loop\t/dev/loop1\t1793\t/s/a.img\t-",
            "wipe\t/dev/\x1b[2Jsda\t2048",
            "mount\t/s/m",
            "mount\t/s/m\t1795\t12\t-",
            "mntdir\t/s/m\t1:x",
            "nuke\t/",
        ] {
            assert_eq!(Item::parse(bad), None, "{bad}");
        }
    }

    /// A state file as a killed run leaves it.
    fn plant(dir: &Path, items: &[Item]) {
        let mut text = format!("{HEADER}1\n");
        for it in items {
            text.push_str(&it.line());
            text.push('\n');
        }
        std::fs::write(dir.join(STATE), text).unwrap();
    }

    #[test]
    fn the_reason_a_tool_failed_is_found_before_its_usage_text() {
        assert_eq!(
            why_failed("Filesystem must be larger than 300MB.\nUsage: mkfs.xfs\n/* blocksize */ [-b size=num]\n"),
            "Filesystem must be larger than 300MB."
        );
        assert_eq!(
            why_failed("mke2fs 1.47.0 (5-Feb-2023)\n\nBad option(s) specified: bogus\n\n"),
            "Bad option(s) specified: bogus"
        );
        assert_eq!(why_failed(""), "");
    }

    #[test]
    fn command_lines_are_quoted_for_a_shell() {
        let a: Vec<String> = ["mkfs.xfs", "-d", "su=64k,sw=4", "-L", "a b", "it's"]
            .map(String::from)
            .to_vec();
        assert_eq!(
            shell_line(&a),
            "mkfs.xfs -d su=64k,sw=4 -L 'a b' 'it'\\''s'"
        );
    }

    #[test]
    fn a_killed_runs_files_are_removed_by_the_next_and_strangers_are_left() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("scratch");
        let (items, stranger) = {
            let (mut s, cleaned) = Scratch::open(&dir).unwrap();
            assert!(cleaned.is_empty());
            let f = s.fresh_name(".img");
            let id = s
                .make(Item::File(f.clone(), None), || {
                    std::fs::write(&f, b"x")?;
                    Ok(Id::of(&std::fs::metadata(&f)?))
                })
                .unwrap();
            s.identify(Item::File(f.clone(), Some(id))).unwrap();
            let m = s.mount_dir().unwrap();
            assert!(m.is_dir());
            // A stranger's file under our name, listed with another file's identity (it
            // replaced ours), and a stranger's directory outside our names: both are left.
            let stranger = s.fresh_name(".img");
            std::fs::write(&stranger, b"user data").unwrap();
            s.items.push(Item::File(stranger.clone(), Some(id)));
            let elsewhere = dir.join("users-dir");
            std::fs::create_dir(&elsewhere).unwrap();
            s.items.push(Item::MountDir(elsewhere, None));
            s.save().unwrap();
            // Simulate SIGKILL: nothing is torn down, the state file stays.
            let items = std::mem::take(&mut s.items);
            drop(s);
            (items, stranger)
        };
        plant(&dir, &items);
        let (s, cleaned) = Scratch::open(&dir).unwrap();
        drop(s);
        let all = cleaned.join("\n");
        assert!(
            all.contains("cleaned up after an earlier fscompare run (pid 1)"),
            "{all}"
        );
        assert!(all.contains("removed"), "{all}");
        assert!(
            all.contains(&format!(
                "left alone: file {}: it is not the file fsbench created",
                stranger.display()
            )),
            "{all}"
        );
        assert!(
            all.contains("users-dir: it is not in the scratch directory"),
            "{all}"
        );
        assert_eq!(std::fs::read(&stranger).unwrap(), b"user data");
        assert!(dir.join("users-dir").is_dir());
        assert!(!dir.join(STATE).exists());
        let mut left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        left.sort();
        assert_eq!(left, [stranger.clone(), dir.join("users-dir")]);
    }

    #[test]
    fn a_state_file_fsbench_did_not_write_is_refused_and_nothing_in_it_is_undone() {
        use std::os::unix::fs::PermissionsExt;
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("scratch");
        std::fs::create_dir(&dir).unwrap();
        let victim = dir.join(format!("{OUR_PREFIX}1-1.mnt"));
        std::fs::create_dir(&victim).unwrap();
        plant(&dir, &[Item::MountDir(victim.clone(), None)]);
        let state = dir.join(STATE);
        // Writable by others.
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o666)).unwrap();
        let e = Scratch::open(&dir).err().expect("refused").to_string();
        assert!(e.contains("writable by group or others (mode 666)"), "{e}");
        assert!(e.contains("nothing it lists is undone"), "{e}");
        assert!(victim.is_dir());
        // A symbolic link.
        std::fs::set_permissions(&state, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::rename(&state, d.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), &state).unwrap();
        let e = Scratch::open(&dir).err().expect("refused").to_string();
        assert!(e.contains("is a symbolic link"), "{e}");
        assert!(victim.is_dir());
        // Not of this version (no identities).
        std::fs::remove_file(&state).unwrap();
        std::fs::write(
            &state,
            format!("fsbench-fscompare pid 1\nmntdir\t{}\n", victim.display()),
        )
        .unwrap();
        let e = Scratch::open(&dir).err().expect("refused").to_string();
        assert!(e.contains("not a state file this version"), "{e}");
        assert!(victim.is_dir());
        // A scratch directory others may write to is refused before its state is read.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Scratch::open(&dir).err().expect("refused").to_string();
        assert!(e.contains("other users may write to it (mode 777)"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        // Below a directory anyone may change: refused, and the scratch directory fsbench
        // made for it is removed again.
        let open_to_all = d.path().join("open");
        std::fs::create_dir(&open_to_all).unwrap();
        std::fs::set_permissions(&open_to_all, std::fs::Permissions::from_mode(0o777)).unwrap();
        let e = Scratch::open(&open_to_all.join("scratch"))
            .err()
            .expect("refused")
            .to_string();
        assert!(e.contains("above it may be changed by another user"), "{e}");
        assert!(!open_to_all.join("scratch").exists());
        // Ours again: the directory (ours by name, no identity recorded, empty) is removed.
        plant(&dir, &[Item::MountDir(victim.clone(), None)]);
        let (_s, cleaned) = Scratch::open(&dir).unwrap();
        assert!(cleaned
            .join("\n")
            .contains(&format!("removed {}", victim.display())));
        assert!(!victim.exists());
    }
}
