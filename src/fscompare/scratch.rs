//! Scratch storage for `fscompare`: loop devices over sparse files fsbench creates in a
//! directory, or whole devices the user names with `--force`. Everything made is written to
//! a state file in the scratch directory *before* it is made, and torn down in reverse order
//! (unmount, stop md arrays and volume groups, detach loops, wipe forced devices, remove the
//! files) on success, failure and Ctrl-C; a run killed with SIGKILL leaves the state file,
//! and the next run in that directory tears down what it lists first, and says so.

use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The state file in the scratch directory.
pub(crate) const STATE: &str = ".fsbench-fscompare.state";

/// One thing a run made, in the order it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item {
    /// A sparse backing file (created O_EXCL, marked).
    File(PathBuf),
    /// A loop device and the backing file it was attached to.
    Loop(PathBuf, PathBuf),
    /// A user's device fsbench wrote a file system or array on (`wipefs -a` at the end).
    Wipe(PathBuf),
    /// An md array fsbench created.
    Md(PathBuf),
    /// An LVM volume group fsbench created, and its physical volumes.
    Vg(String, Vec<PathBuf>),
    /// A mount point directory fsbench created.
    MountDir(PathBuf),
    /// A mount fsbench made there.
    Mount(PathBuf),
}

impl Item {
    fn line(&self) -> String {
        let p = |x: &Path| x.display().to_string();
        match self {
            Item::File(f) => format!("file\t{}", p(f)),
            Item::Loop(d, b) => format!("loop\t{}\t{}", p(d), p(b)),
            Item::Wipe(d) => format!("wipe\t{}", p(d)),
            Item::Md(d) => format!("md\t{}", p(d)),
            Item::Vg(n, pvs) => {
                let mut s = format!("vg\t{n}");
                for d in pvs {
                    s.push('\t');
                    s.push_str(&p(d));
                }
                s
            }
            Item::MountDir(d) => format!("mntdir\t{}", p(d)),
            Item::Mount(d) => format!("mount\t{}", p(d)),
        }
    }

    fn parse(line: &str) -> Option<Item> {
        let f: Vec<&str> = line.split('\t').collect();
        let pb = |i: usize| f.get(i).filter(|s| s.starts_with('/')).map(PathBuf::from);
        Some(match *f.first()? {
            "file" => Item::File(pb(1)?),
            "loop" => Item::Loop(pb(1)?, pb(2)?),
            "wipe" => Item::Wipe(pb(1)?),
            "md" => Item::Md(pb(1)?),
            "vg" => Item::Vg(f.get(1)?.to_string(), (2..f.len()).filter_map(pb).collect()),
            "mntdir" => Item::MountDir(pb(1)?),
            "mount" => Item::Mount(pb(1)?),
            _ => return None,
        })
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

/// Is `dir` a mount point right now (from /proc/self/mountinfo)?
pub(crate) fn is_mounted(dir: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let want = dir.display().to_string().replace(' ', "\\040");
    text.lines()
        .any(|l| l.split_whitespace().nth(4) == Some(want.as_str()))
}

/// Undo one item; Err says what could not be undone. `stale`: the item comes from a killed
/// run's state file, so each step first checks it still names what that run made.
fn undo(item: &Item, stale: bool) -> Result<Option<String>, String> {
    match item {
        Item::Mount(m) => {
            if !is_mounted(m) {
                return Ok(None);
            }
            // SAFETY: sync has no preconditions.
            unsafe { libc::sync() };
            if unmount(m).is_err() {
                // A process still in the directory: detach it now, the kernel finishes later.
                tool(&args(&["umount", "-l"], &[m]))?;
            }
            Ok(Some(format!("unmounted {}", m.display())))
        }
        Item::MountDir(d) => match std::fs::remove_dir(d) {
            Ok(()) => Ok(Some(format!("removed {}", d.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(format!("cannot remove {}: {e}", d.display())),
        },
        Item::Md(d) => {
            if !d.exists() {
                return Ok(None);
            }
            tool(&args(&["mdadm", "--stop"], &[d]))?;
            Ok(Some(format!("stopped {}", d.display())))
        }
        Item::Vg(name, pvs) => {
            let vg = vec!["vgremove".to_string(), "-f".into(), name.clone()];
            match tool(&vg) {
                Ok(_) => {}
                Err(e) if !stale => return Err(e),
                Err(_) => {}
            }
            for pv in pvs {
                let _ = tool(&args(&["pvremove", "-ff", "-y"], &[pv]));
            }
            Ok(Some(format!("removed volume group {name}")))
        }
        Item::Loop(dev, backing) => {
            // A loop number is reused by the next attach: detach only while it is still
            // backed by our file (/sys/block/loopN/loop/backing_file).
            let ours = crate::sweep::rawdev::loops_backed_by(backing);
            if !ours.contains(dev) {
                return Ok(None);
            }
            tool(&args(&["losetup", "-d"], &[dev]))?;
            Ok(Some(format!("detached {}", dev.display())))
        }
        Item::Wipe(dev) => {
            if stale && !crate::safety::is_block_device(dev) {
                return Ok(None);
            }
            tool(&args(&["wipefs", "-a", "-q"], &[dev]))?;
            Ok(Some(format!("wiped {}", dev.display())))
        }
        Item::File(f) => {
            // Every loop still over the file goes first (one attached after the state was
            // written and before it was recorded, in a killed run).
            for dev in crate::sweep::rawdev::loops_backed_by(f) {
                let _ = tool(&args(&["losetup", "-d"], &[&dev]));
            }
            let Ok(file) = std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
                .open(f)
            else {
                return Ok(None);
            };
            let regular = file.metadata().is_ok_and(|m| m.is_file());
            // The mark, where the scratch file system keeps xattrs; our name pattern where it
            // does not (the file was created O_EXCL under that name by the run).
            let marked = match crate::safety::fd_get_mark(&file) {
                Ok(Some(v)) => v == b"created",
                Ok(None) => false,
                Err(_) => true,
            };
            if !regular || !marked {
                return Err(format!(
                    "left {}: it is not the file fsbench created",
                    f.display()
                ));
            }
            std::fs::remove_file(f).map_err(|e| format!("cannot remove {}: {e}", f.display()))?;
            Ok(Some(format!("removed {}", f.display())))
        }
    }
}

/// Tear down what the state file of a killed run in `dir` lists (the caller holds the
/// directory's lock, so its writer is gone). What cannot be undone stays in the state file.
fn clean_stale(dir: &Path) -> anyhow::Result<Vec<String>> {
    let path = dir.join(STATE);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => anyhow::bail!("cannot read {}: {e}", path.display()),
    };
    let pid = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("fsbench-fscompare pid "))
        .unwrap_or("?")
        .to_string();
    let items: Vec<Item> = text.lines().skip(1).filter_map(Item::parse).collect();
    let mut done = Vec::new();
    let mut failed = Vec::new();
    let mut left = Vec::new();
    for it in items.iter().rev() {
        match undo(it, true) {
            Ok(Some(what)) => done.push(what),
            Ok(None) => {}
            Err(e) => {
                failed.push(e);
                left.insert(0, it.clone());
            }
        }
    }
    if !failed.is_empty() {
        // What is left stays listed, under the killed run's pid, for the next attempt.
        let header = text.lines().next().unwrap_or("fsbench-fscompare pid ?");
        write_state(dir, header, &left)?;
        anyhow::bail!(
            "{} lists what an earlier fscompare run (pid {pid}) made, and some of it cannot be undone: {}",
            path.display(),
            failed.join("; ")
        );
    }
    std::fs::remove_file(&path)?;
    let mut lines = vec![format!(
        "fsbench: cleaned up after an earlier fscompare run (pid {pid}) that did not finish"
    )];
    lines.extend(done.into_iter().map(|d| format!("  {d}")));
    Ok(lines)
}

/// Write the state file of `dir` (a temporary file created O_EXCL|O_NOFOLLOW, then renamed
/// over it), or remove it when nothing is listed.
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
    /// Open (creating when missing) and lock the scratch directory, first tearing down what
    /// a killed run left there. Returns the lines saying what was cleaned.
    pub(crate) fn open(dir: &Path) -> anyhow::Result<(Scratch, Vec<String>)> {
        if dir.as_os_str().as_encoded_bytes().iter().any(|b| *b < 0x20) {
            crate::bail_usage!(
                "bad --scratch {}: control characters in the path",
                dir.display()
            );
        }
        let made_dir = match std::fs::create_dir(dir) {
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
        let header = format!("fsbench-fscompare pid {}", std::process::id());
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
                    let _ = undo(&it, true);
                }
                self.save()?;
                Err(e)
            }
        }
    }

    /// A new name in the scratch directory: `fsbench-fscompare-PID-N` + `suffix`.
    pub(crate) fn fresh_name(&mut self, suffix: &str) -> PathBuf {
        self.seq += 1;
        self.dir.join(format!(
            "fsbench-fscompare-{}-{}{suffix}",
            std::process::id(),
            self.seq
        ))
    }

    /// `n` loop devices over new sparse files of `size` bytes.
    pub(crate) fn loop_devices(&mut self, n: u32, size: u64) -> anyhow::Result<Vec<PathBuf>> {
        let mut devs = Vec::new();
        for _ in 0..n {
            let file = self.fresh_name(".img");
            self.make(Item::File(file.clone()), || {
                let f = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(0o600)
                    .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                    .open(&file)
                    .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", file.display()))?;
                crate::safety::fd_set_mark(&f, b"created");
                f.set_len(size)?;
                Ok(())
            })?;
            // Direct I/O on the backing file where the kernel allows it, so blocks are not
            // cached twice (by the loop device's file system and by the backing file's).
            let out = tool(&args(
                &["losetup", "--find", "--show", "--direct-io=on"],
                &[&file],
            ))
            .or_else(|_| tool(&args(&["losetup", "--find", "--show"], &[&file])))
            .map_err(anyhow::Error::msg)?;
            let dev = PathBuf::from(out.trim());
            self.items.push(Item::Loop(dev.clone(), file));
            self.save()?;
            devs.push(dev);
        }
        Ok(devs)
    }

    /// A new mount point directory.
    pub(crate) fn mount_dir(&mut self) -> anyhow::Result<PathBuf> {
        let d = self.fresh_name(".mnt");
        self.make(Item::MountDir(d.clone()), || {
            std::fs::create_dir(&d)
                .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", d.display()))
        })?;
        Ok(d)
    }

    /// Tear down everything made so far, newest first. Returns what could not be undone.
    pub(crate) fn teardown(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        while let Some(it) = self.items.pop() {
            if let Err(e) = undo(&it, false) {
                failed.push(e);
                // Keep the record: the next run tries again and says so.
                self.items.insert(0, it);
                if failed.len() > 64 {
                    break;
                }
                continue;
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
        let items = [
            Item::File("/s/a.img".into()),
            Item::Loop("/dev/loop3".into(), "/s/a.img".into()),
            Item::Wipe("/dev/sdz".into()),
            Item::Md("/dev/md/x".into()),
            Item::Vg(
                "fsbench-1".into(),
                vec!["/dev/loop3".into(), "/dev/loop4".into()],
            ),
            Item::MountDir("/s/m".into()),
            Item::Mount("/s/m".into()),
        ];
        for it in &items {
            assert_eq!(Item::parse(&it.line()).as_ref(), Some(it));
        }
        for bad in ["", "file", "file\trelative", "loop\t/dev/loop1", "nuke\t/"] {
            assert_eq!(Item::parse(bad), None, "{bad}");
        }
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
        {
            let (mut s, cleaned) = Scratch::open(&dir).unwrap();
            assert!(cleaned.is_empty());
            let f = s.fresh_name(".img");
            s.make(Item::File(f.clone()), || {
                std::fs::write(&f, b"x")?;
                crate::safety::mark_created(&f);
                Ok(())
            })
            .unwrap();
            let m = s.mount_dir().unwrap();
            assert!(m.is_dir());
            // A stranger's file listed in the state (it replaced ours) must be left.
            let stranger = dir.join("stranger.img");
            std::fs::write(&stranger, b"user data").unwrap();
            s.items.push(Item::File(stranger.clone()));
            s.save().unwrap();
            // Simulate SIGKILL: nothing is torn down, the state file stays.
            let state = std::fs::read_to_string(dir.join(STATE)).unwrap();
            s.items.clear();
            drop(s);
            std::fs::write(dir.join(STATE), state).unwrap();
        }
        let state = std::fs::read_to_string(dir.join(STATE)).unwrap();
        assert_eq!(state.lines().count(), 4, "{state}");
        let e = Scratch::open(&dir).err().expect("the stranger is refused");
        assert!(
            e.to_string().contains("not the file fsbench created"),
            "{e}"
        );
        assert!(dir.join("stranger.img").exists());
        // What could be undone was; only the stranger stays listed for the next attempt.
        let left = std::fs::read_to_string(dir.join(STATE)).unwrap();
        assert_eq!(left.lines().count(), 2, "{left}");
        assert!(left.contains("stranger.img"));
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            2,
            "the state file and the stranger"
        );
        // Once the stranger is gone, the rerun cleans up and says so.
        std::fs::remove_file(dir.join("stranger.img")).unwrap();
        let (s, cleaned) = Scratch::open(&dir).unwrap();
        assert!(cleaned[0].contains("cleaned up after an earlier fscompare run"));
        drop(s);
        assert!(std::fs::read_dir(&dir).unwrap().next().is_none());
    }
}
