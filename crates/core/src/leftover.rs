//! Files a killed run of fsbench left behind, told apart from everything else.
//!
//! A file fsbench creates carries the `user.fsbench` mark (`crate::safety`). While the run
//! that created it may still remove it, the file also carries `user.fsbench.run`: the host,
//! boot, process id and process start time of that run. A run that ends removes the file or,
//! when the user asked to keep it, takes the record off (`clear_run`). So a file that still
//! names a run that no longer exists (same host, and another boot, or no such process, or a
//! process started at another time: the PID was reused) was left by a run that was killed:
//! nobody asked to keep it, and the next run may remove it ([`left_by_dead_run`],
//! `remove_dead_runs_files`).
//!
//! Everything is checked through a descriptor opened without following a link; a file that
//! is not a regular file, not marked, names a live run, names another host, or whose name
//! no longer holds the file that was checked is never touched. Where the file system has no
//! user xattrs nothing can be recorded, and nothing is removed.
//!
//! A file is made with its mark and record already on it (`create_marked`): created
//! without a name (O_TMPFILE), marked through its descriptor, then linked to its name, which
//! fails if the name exists. A run killed at any moment leaves either nothing or a file the
//! next run recognises. (Where O_TMPFILE is not supported the file is created, then marked:
//! a kill between the two leaves an empty file nobody can tell from a stranger's.)
//!
//! The directories a run makes for its files (an MPI run's `PATH.d/rank-NNNNN`, a replay's
//! scratch directory) carry the mark and the record as well ([`make_marked_dir`]); the next
//! run takes over a directory a killed run left ([`take_over_dir`]) and removes it when done.
//! (`mkdir` has no nameless form: a kill between a directory's creation and its mark, a few
//! microseconds, leaves an empty directory that is never removed.)

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsFd, AsRawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;

/// The extended attribute naming the run that may still remove the file.
const RUN_XATTR: &str = "user.fsbench.run";

/// This process as a run: `host boot pid start`, where `start` is the process start time in
/// clock ticks since boot (field 22 of /proc/PID/stat).
fn this_run() -> Option<String> {
    let pid = std::process::id();
    Some(format!(
        "{} {} {pid} {}",
        host()?,
        boot_id()?,
        start_time(pid)?
    ))
}

fn host() -> Option<String> {
    let h = std::fs::read_to_string("/proc/sys/kernel/hostname").ok()?;
    let h = h.trim().to_string();
    (!h.is_empty() && !h.contains(' ')).then_some(h)
}

fn boot_id() -> Option<String> {
    let b = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").ok()?;
    let b = b.trim().to_string();
    (!b.is_empty() && !b.contains(' ')).then_some(b)
}

/// Start time of process `pid` (clock ticks after boot), None when there is no such process
/// or it has ended (a zombie not yet reaped: it will never remove anything again).
fn start_time(pid: u32) -> Option<u64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces and parentheses: count after the last ')'.
    let (_, rest) = s.rsplit_once(')')?;
    let mut f = rest.split_whitespace();
    if matches!(f.next(), Some("Z") | Some("X") | Some("x")) {
        return None;
    }
    f.nth(18)?.parse().ok()
}

/// Record on the open file that this run created it and will remove it unless the user
/// asks to keep it. False where the file system has no user xattrs.
pub(crate) fn set_run(f: impl AsFd) -> bool {
    let Some(v) = this_run() else { return false };
    let name = CString::new(RUN_XATTR).expect("constant has no NUL");
    crate::sys::fsetxattr(f.as_fd().as_raw_fd(), &name, v.as_bytes()).is_ok()
}

/// The file is kept (the user asked for it): no run removes it any more.
pub(crate) fn clear_run(f: impl AsFd) {
    let name = CString::new(RUN_XATTR).expect("constant has no NUL");
    // ENODATA (nothing recorded) is fine.
    let _ = crate::sys::fremovexattr(f.as_fd().as_raw_fd(), &name);
}

/// Record this run on the regular file at `path` (`set`, or take the record off when not
/// `set`) if it still is the file (`dev`, `ino`).
pub fn mark_run_at(path: &Path, dev: u64, ino: u64, set: bool) {
    let Some(f) = open_to_look(path) else { return };
    if !f
        .metadata()
        .is_ok_and(|m| m.is_file() && m.dev() == dev && m.ino() == ino)
    {
        return;
    }
    if set {
        set_run(&f);
    } else {
        clear_run(&f);
    }
}

/// The run recorded on the open file, when it names one of this host that no longer exists:
/// its process id.
pub(crate) fn dead_run_of(f: impl AsFd) -> Option<u32> {
    let name = CString::new(RUN_XATTR).expect("constant has no NUL");
    let mut buf = [0u8; 256];
    let n = crate::sys::fgetxattr(f.as_fd().as_raw_fd(), &name, &mut buf).ok()?;
    if n == 0 {
        return None;
    }
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let f: Vec<&str> = text.split(' ').collect();
    let [h, boot, pid, start] = f[..] else {
        return None;
    };
    let pid: u32 = pid.parse().ok()?;
    let start: u64 = start.parse().ok()?;
    if Some(h.to_string()) != host() {
        // Another host's run (a shared file system): its processes cannot be seen from here.
        return None;
    }
    let dead = Some(boot.to_string()) != boot_id() || start_time(pid) != Some(start);
    dead.then_some(pid)
}

/// The open file is a regular file fsbench created (marked) for a run that was killed: its
/// process id.
pub(crate) fn left_by_dead_run_fd(f: &File) -> Option<u32> {
    if !f.metadata().is_ok_and(|m| m.is_file()) || !crate::safety::fd_is_marked(f) {
        return None;
    }
    dead_run_of(f)
}

/// Open `path` for a look (no link followed, no FIFO blocked on).
fn open_to_look(path: &Path) -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()
}

/// `path` is a regular file fsbench created for a run that was killed (see the module
/// documentation): the process id of that run.
pub fn left_by_dead_run(path: &Path) -> Option<u32> {
    left_by_dead_run_fd(&open_to_look(path)?)
}

/// Remove `path` if it is a file a killed run left (checked through a descriptor, and the
/// name must still hold that file when it is unlinked). The note saying so, if removed.
pub(crate) fn remove_if_left_by_dead_run(path: &Path) -> Option<String> {
    let f = open_to_look(path)?;
    let pid = left_by_dead_run_fd(&f)?;
    let m = f.metadata().ok()?;
    let now = std::fs::symlink_metadata(path).ok()?;
    if now.dev() != m.dev() || now.ino() != m.ino() {
        return None;
    }
    std::fs::remove_file(path).ok()?;
    Some(format!(
        "removed {}: a run of fsbench (pid {pid}) that was killed left it",
        path.display()
    ))
}

/// Remove, in `dir`, the files whose names `ours` accepts and that a killed run left: a note
/// for each, for the caller to say (this module sits under the runner and prints nothing).
/// Names that do not pass `ours` are not even opened.
pub(crate) fn remove_dead_runs_files(dir: &Path, ours: impl Fn(&str) -> bool) -> Vec<String> {
    let mut notes = Vec::new();
    let Ok(rd) = std::fs::read_dir(dir) else {
        return notes;
    };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(n) = name.to_str() else { continue };
        if !ours(n) || name.as_bytes().contains(&b'/') {
            continue;
        }
        if let Some(note) = remove_if_left_by_dead_run(&dir.join(n)) {
            notes.push(note);
        }
    }
    notes
}

/// Create the new regular file `path` (never through a link, never over an existing name)
/// with the `user.fsbench` mark and this run's record already on it, so a kill at any moment
/// leaves nothing or a file the next run recognises (see the module notes). Whether it is
/// marked (false where the file system has no user xattrs).
pub(crate) fn create_marked(path: &Path) -> std::io::Result<(File, bool)> {
    match create_nameless(path) {
        Ok(f) => {
            let marked = mark_new(&f);
            // linkat of /proc/self/fd/N with AT_SYMLINK_FOLLOW links the open file itself;
            // like O_EXCL it fails when the name exists (a link there included).
            let from = CString::new(format!("/proc/self/fd/{}", f.as_raw_fd()))
                .expect("digits have no NUL");
            let to = CString::new(path.as_os_str().as_bytes()).map_err(|_| {
                std::io::Error::new(std::io::ErrorKind::InvalidInput, "path has a NUL byte")
            })?;
            let cwd = crate::sys::AT_FDCWD;
            let Err(e) = crate::sys::linkat(cwd, &from, cwd, &to, libc::AT_SYMLINK_FOLLOW) else {
                return Ok((named(f, path), marked));
            };
            match e.raw_os_error() {
                // No /proc to link through: create the named file instead.
                Some(libc::ENOENT) if !Path::new("/proc/self/fd").exists() => {
                    create_then_mark(path)
                }
                _ => Err(e),
            }
        }
        // The file system (or kernel) has no nameless files.
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::EOPNOTSUPP) | Some(libc::EISDIR) | Some(libc::EINVAL)
            ) =>
        {
            create_then_mark(path)
        }
        Err(e) => Err(e),
    }
}

/// The file `f` just linked at `path`, opened again by that name: a descriptor of a nameless
/// file keeps its "#inode (deleted)" name in /proc after the link, and whatever later names
/// the file through its descriptor (a SIGBUS message, a reopen) must see `path`. Only when
/// `path` still names the same inode; otherwise (replaced meanwhile) `f` itself.
fn named(f: File, path: &Path) -> File {
    let again = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path);
    let same = |g: &File| {
        let (Ok(a), Ok(b)) = (f.metadata(), g.metadata()) else {
            return false;
        };
        a.dev() == b.dev() && a.ino() == b.ino()
    };
    match again {
        Ok(g) if same(&g) => g,
        _ => f,
    }
}

/// A regular file without a name, in the directory that will hold `path`.
fn create_nameless(path: &Path) -> std::io::Result<File> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o644)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)
}

/// O_CREAT|O_EXCL|O_NOFOLLOW, then the mark and the record (the fallback of
/// [`create_marked`]).
fn create_then_mark(path: &Path) -> std::io::Result<(File, bool)> {
    let f = crate::runner::mark::create_new(path)?;
    let marked = mark_new(&f);
    Ok((f, marked))
}

/// The `user.fsbench` mark and this run's record on a file or directory this run created:
/// whether it is marked.
fn mark_new(f: &File) -> bool {
    let marked = crate::runner::mark::fd_mark(f);
    set_run(f);
    marked
}

/// Open the directory `path` for a look (no link followed).
fn open_dir(path: &Path) -> Option<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .ok()
}

/// Create the directory `path` and put the `user.fsbench` mark and this run's record on it
/// (checked to be the directory just made, through a descriptor).
pub fn make_marked_dir(path: &Path) -> std::io::Result<()> {
    std::fs::create_dir(path)?;
    if let Some(d) = open_dir(path) {
        mark_new(&d);
    }
    Ok(())
}

/// The directory `path` was made (marked) by a run of fsbench that was killed: the open
/// directory and that run's process id.
fn dead_runs_dir(path: &Path) -> Option<(File, u32)> {
    let d = open_dir(path)?;
    if !d.metadata().is_ok_and(|m| m.is_dir()) || !crate::safety::fd_is_marked(&d) {
        return None;
    }
    let pid = dead_run_of(&d)?;
    Some((d, pid))
}

/// Take over the directory `path` if a killed run made it: it now carries this run's record,
/// and the caller removes it when done, as if it had made it. The note saying so.
pub fn take_over_dir(path: &Path) -> Option<String> {
    let (d, pid) = dead_runs_dir(path)?;
    set_run(&d);
    Some(format!(
        "{}: a directory left by a run of fsbench (pid {pid}) that was killed; this run removes it when done",
        path.display()
    ))
}

/// The file or directory `path` is kept (the user asked for it): no run removes it any more.
pub fn clear_run_of(path: &Path) {
    if let Some(f) = open_to_look(path) {
        clear_run(&f);
    }
}

/// Remove the directory `path` and everything in it if a killed run made it (a scratch
/// directory only that run wrote in; the name must still hold the directory checked; links
/// inside are removed, never followed). The note saying so, if removed.
pub(crate) fn remove_dir_of_dead_run(path: &Path) -> Option<String> {
    let (d, pid) = dead_runs_dir(path)?;
    let m = d.metadata().ok()?;
    let now = std::fs::symlink_metadata(path).ok()?;
    if !now.is_dir() || now.dev() != m.dev() || now.ino() != m.ino() {
        return None;
    }
    std::fs::remove_dir_all(path).ok()?;
    Some(format!(
        "removed {}: a run of fsbench (pid {pid}) that was killed left it",
        path.display()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_runs_file_is_kept_a_dead_ones_is_removed_a_strangers_never() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours");
        let f = crate::runner::mark::create_new(&ours).unwrap();
        if !crate::safety::fd_set_mark(&f, b"created") || !set_run(&f) {
            return; // no user xattrs here: nothing is recorded, nothing removed
        }
        assert_eq!(left_by_dead_run(&ours), None, "this run is alive");
        // The same record with a start time this process never had: a killed run whose
        // PID was reused.
        let v = this_run().unwrap();
        let (head, start) = v.rsplit_once(' ').unwrap();
        let other = format!("{head} {}", start.parse::<u64>().unwrap() + 1);
        let name = CString::new(RUN_XATTR).unwrap();
        let _ = crate::sys::fsetxattr(f.as_raw_fd(), &name, other.as_bytes());
        assert_eq!(left_by_dead_run(&ours), Some(std::process::id()));
        // Another host's record is never judged from here.
        let mut parts: Vec<&str> = other.split(' ').collect();
        parts[0] = "some-other-host";
        let remote_rec = parts.join(" ");
        let strange = dir.path().join("remote");
        let g = crate::runner::mark::create_new(&strange).unwrap();
        crate::safety::fd_set_mark(&g, b"created");
        let _ = crate::sys::fsetxattr(g.as_raw_fd(), &name, remote_rec.as_bytes());
        // Not marked: a stranger's file with a copied record is never removed.
        let theirs = dir.path().join("theirs");
        let t = crate::runner::mark::create_new(&theirs).unwrap();
        let _ = crate::sys::fsetxattr(t.as_raw_fd(), &name, other.as_bytes());
        let notes = remove_dead_runs_files(dir.path(), |_| true);
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(!ours.exists());
        assert!(strange.exists() && theirs.exists());
        clear_run(&g);
        assert_eq!(dead_run_of(&g), None);
    }

    #[test]
    fn a_file_is_made_marked_and_never_over_an_existing_name() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("new");
        let (f, marked) = create_marked(&p).unwrap();
        if !marked {
            return; // no user xattrs here
        }
        assert!(crate::safety::fd_is_marked(&f) && p.is_file());
        assert_eq!(dead_run_of(&f), None, "recorded as this live run's");
        assert_eq!(
            create_marked(&p).unwrap_err().kind(),
            std::io::ErrorKind::AlreadyExists
        );
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &link).unwrap();
        assert!(create_marked(&link).is_err(), "never through a link");
        assert!(!dir.path().join("nowhere").exists());
    }

    #[test]
    fn only_a_dead_runs_marked_directory_is_taken_over_or_removed() {
        let dir = tempfile::tempdir().unwrap();
        let ours = dir.path().join("ours.d");
        make_marked_dir(&ours).unwrap();
        let theirs = dir.path().join("theirs.d");
        std::fs::create_dir(&theirs).unwrap();
        std::fs::write(theirs.join("x"), b"x").unwrap();
        assert_eq!(take_over_dir(&ours), None, "this run is alive");
        assert_eq!(take_over_dir(&theirs), None, "not marked");
        assert_eq!(remove_dir_of_dead_run(&theirs), None);
        assert!(theirs.join("x").exists());
        // Ours, recorded as a run whose process start time is not this one's: killed.
        let v = this_run().unwrap();
        let (head, start) = v.rsplit_once(' ').unwrap();
        let other = format!("{head} {}", start.parse::<u64>().unwrap() + 1);
        let d = open_dir(&ours).unwrap();
        let name = CString::new(RUN_XATTR).unwrap();
        let set = crate::sys::fsetxattr(d.as_raw_fd(), &name, other.as_bytes());
        if set.is_err() || !crate::safety::fd_is_marked(&d) {
            return; // no user xattrs here
        }
        std::fs::create_dir(ours.join("inner")).unwrap();
        assert!(remove_dir_of_dead_run(&ours).is_some());
        assert!(!ours.exists() && theirs.exists());
    }
}
