//! The one writer of output files. It sits below the front ends and the sweeps, so both store
//! through it and neither reaches up into the other.
//!
//! Every file fsbench writes as output (`--output FILE` of run, vx, quick, advise, workload,
//! report, trace; a sweep's or suite's results directory; `--trace FILE`) goes through
//! `write_at`, which keeps the "never lose data" rule for outputs:
//! - an existing file fsbench did not write (no `user.fsbench` mark, not an fsbench JSON
//!   document) is refused unless `--force`; a non-regular file (device, fifo, directory,
//!   symbolic link) is never replaced, even with `--force`;
//! - the new content goes to a temporary file made with `O_CREAT|O_EXCL|O_NOFOLLOW` under a
//!   name unique to this process, then replaces the destination by an atomic rename, so a
//!   planted symbolic link or someone else's `.partial` file is never opened or removed;
//! - the destination is checked through a descriptor, and the rename is an exchange whose
//!   loser is checked again, so a file swapped in after the check is put back, not lost.
//!
//! Sweeps and suites write into a results directory ([`ResultsDir`]): fsbench's only when it
//! carries the mark (xattr `user.fsbench=results`, or the marker file `.fsbench-results` made
//! with `O_EXCL` where xattrs are missing); every name in it is opened relative to the
//! directory's descriptor without following symbolic links.

use crate::error::UsageError;
use crate::usage;
use rustix::fs::Stat;
use std::ffi::{CStr, CString, OsStr};
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The `kind` of every JSON document fsbench writes (results, workload results, advice,
/// skipped sweep points, suite manifests).
const KINDS: &[&str] = &[
    "io", "workload", "advise", "skipped", "suite", "replay", "backup", "verify",
];

/// Value of the `user.fsbench` mark on an output file.
const OUTPUT_MARK: &[u8] = b"output";
/// Value of the `user.fsbench` mark on a results directory.
const RESULTS_MARK: &[u8] = b"results";
/// Marker file of a results directory, for file systems without user xattrs.
pub(crate) const RESULTS_MARKER_FILE: &str = ".fsbench-results";

/// Largest existing file read to decide whether it is an fsbench JSON document.
const MAX_SNIFF: u64 = 256 << 20;

/// The `user.fsbench` mark of an open file, if any.
fn fget_mark(f: &File) -> Option<Vec<u8>> {
    crate::safety::fd_get_mark(f).ok().flatten()
}

/// Set the `user.fsbench` mark on an open file; false where the file system has no xattrs.
fn fset_mark(f: &File, value: &[u8]) -> bool {
    crate::safety::fd_set_mark(f, value)
}

fn cname(name: &OsStr) -> Result<CString, UsageError> {
    CString::new(name.as_bytes()).map_err(|_| usage!("file name {name:?} holds a NUL byte"))
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)` as a `File`.
fn openat(dir: &File, name: &CStr, flags: i32, mode: u32) -> std::io::Result<File> {
    let fd = crate::sys::openat(dir.as_raw_fd(), name, flags | libc::O_CLOEXEC, mode)?;
    Ok(File::from(fd))
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`.
fn lstatat(dir: &File, name: &CStr) -> std::io::Result<Stat> {
    crate::sys::lstatat(dir.as_raw_fd(), name)
}

fn fstat(f: &File) -> std::io::Result<Stat> {
    crate::sys::fstat(f.as_raw_fd())
}

fn unlinkat(dir: &File, name: &CStr) {
    let _ = crate::sys::unlinkat(dir.as_raw_fd(), name, false);
}

fn renameat2(dir: &File, from: &CStr, to: &CStr, flags: libc::c_uint) -> std::io::Result<()> {
    crate::sys::renameat2(dir.as_raw_fd(), from, to, flags)
}

fn kind_of(mode: libc::mode_t) -> &'static str {
    match mode & libc::S_IFMT {
        libc::S_IFLNK => "a symbolic link",
        libc::S_IFDIR => "a directory",
        libc::S_IFIFO => "a fifo",
        libc::S_IFBLK => "a block device",
        libc::S_IFCHR => "a character device",
        libc::S_IFSOCK => "a socket",
        _ => "not a regular file",
    }
}

/// Is the JSON text an fsbench document: top level (or first element) with `schema_version`
/// and one of fsbench's kinds?
pub(crate) fn is_fsbench_json(text: &[u8]) -> bool {
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(text) else {
        return false;
    };
    let doc = match &v {
        serde_json::Value::Array(items) => match items.first() {
            Some(x) => x,
            None => return false,
        },
        other => other,
    };
    doc.get("schema_version").is_some_and(|s| s.is_u64())
        && doc
            .get("kind")
            .and_then(|k| k.as_str())
            .is_some_and(|k| KINDS.contains(&k))
}

/// Did fsbench write this open regular file? Its mark, or an fsbench JSON document. Reports
/// and Markdown fsbench wrote on a file system without xattrs are recognised by their first
/// line, so a results directory there can be written again.
fn written_by_fsbench(f: &mut File, size: u64) -> bool {
    if fget_mark(f).is_some() {
        return true;
    }
    if size == 0 || size > MAX_SNIFF {
        return false;
    }
    let mut text = Vec::with_capacity(size as usize);
    if f.take(MAX_SNIFF).read_to_end(&mut text).is_err() {
        return false;
    }
    const HTML: &[u8] =
        b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>fsbench ";
    // Traces (`fsbench trace --output`): the binary format's magic, or the CSV header.
    const TRACE_MAGIC: &[u8] = b"FSBTRC01";
    let csv = crate::trace::format::CSV_HEADER.as_bytes();
    is_fsbench_json(&text)
        || text.starts_with(HTML)
        || text.starts_with(b"# fsbench ")
        || text.starts_with(TRACE_MAGIC)
        || text.starts_with(csv)
}

/// What is at `name` in `dir` now.
enum Existing {
    Absent,
    /// A regular file we may replace: its device and inode as checked.
    Replaceable(u64, u64),
}

/// Check what `name` in `dir` holds, through a descriptor: absent, or a regular file that
/// fsbench wrote (or any regular file with `force`). Everything else is a usage error.
fn check_existing(
    dir: &File,
    name: &CStr,
    shown: &Path,
    force: bool,
) -> Result<Existing, UsageError> {
    let st = match lstatat(dir, name) {
        Ok(st) => st,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Existing::Absent),
        Err(e) => return Err(usage!("cannot check output {}: {e}", shown.display())),
    };
    let not_regular = |mode| {
        usage!(
            "output {} exists and is {}: fsbench never replaces it, even with --force; name a new file",
            shown.display(),
            kind_of(mode)
        )
    };
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(not_regular(st.st_mode));
    }
    // Opened without following links and without blocking, in case it changed since lstat.
    let mut f = openat(
        dir,
        name,
        libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
        0,
    )
    .map_err(|e| match e.raw_os_error() {
        Some(libc::ELOOP) => not_regular(libc::S_IFLNK),
        _ => usage!("cannot open output {} to check it: {e}", shown.display()),
    })?;
    let st = fstat(&f).map_err(|e| usage!("cannot check output {}: {e}", shown.display()))?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(not_regular(st.st_mode));
    }
    if !force && !written_by_fsbench(&mut f, st.st_size as u64) {
        return Err(usage!(
            "output {} exists and was not written by fsbench: name a new file, or add --force to replace it",
            shown.display()
        ));
    }
    Ok(Existing::Replaceable(st.st_dev, st.st_ino))
}

/// The directory holding `path` and the name in it.
fn split(path: &Path) -> Result<(File, &OsStr), UsageError> {
    let name = path
        .file_name()
        .ok_or_else(|| usage!("output {} does not name a file", path.display()))?;
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let dir = {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
            .open(parent)
    }
    .map_err(|e| {
        usage!(
            "cannot write {}: directory {}: {e}",
            path.display(),
            parent.display()
        )
    })?;
    Ok((dir, name))
}

/// Check an output file before the run starts: absent, or replaceable (see the module doc).
/// `None` is no output. A usage error names what is wrong.
pub fn check_output(path: Option<&Path>, force: bool) -> Result<(), UsageError> {
    let Some(path) = path else { return Ok(()) };
    let (dir, name) = split(path)?;
    check_existing(&dir, &cname(name)?, path, force).map(|_| ())
}

/// A name for a temporary file unique to this process and call.
fn temp_name(name: &OsStr) -> CString {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut t = b".".to_vec();
    t.extend_from_slice(name.as_bytes());
    t.extend_from_slice(format!(".fsbench-{}-{n}.partial", std::process::id()).as_bytes());
    CString::new(t).expect("name checked for NUL")
}

/// Write `bytes` as `name` in `dir`: the one writer of every output file (see the module
/// doc). `shown` is the path used in messages.
pub(crate) fn write_at(
    dir: &File,
    name: &OsStr,
    shown: &Path,
    bytes: &[u8],
    force: bool,
) -> anyhow::Result<()> {
    let cn = cname(name)?;
    let mut existing = check_existing(dir, &cn, shown, force)?;
    let tmp = temp_name(name);
    let mut f = openat(
        dir,
        &tmp,
        libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
        0o644,
    )
    .map_err(|e| {
        anyhow::anyhow!(
            "cannot create a temporary file beside {}: {e}",
            shown.display()
        )
    })?;
    let written = f
        .write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| anyhow::anyhow!("writing {}: {e}", shown.display()));
    if let Err(e) = written {
        unlinkat(dir, &tmp);
        return Err(e);
    }
    fset_mark(&f, OUTPUT_MARK);
    drop(f);
    // Two tries: a file that appears between the check and a no-replace rename is checked.
    for _ in 0..2 {
        let done = match existing {
            Existing::Absent => install_new(dir, &tmp, &cn),
            Existing::Replaceable(dev, ino) => install_over(dir, &tmp, &cn, dev, ino, shown),
        };
        match done {
            Ok(true) => return Ok(()),
            Ok(false) => match check_existing(dir, &cn, shown, force) {
                Ok(e) => existing = e,
                Err(e) => {
                    unlinkat(dir, &tmp);
                    return Err(e.into());
                }
            },
            Err(e) => {
                unlinkat(dir, &tmp);
                return Err(e);
            }
        }
    }
    unlinkat(dir, &tmp);
    Err(usage!(
        "output {} keeps changing while fsbench writes it: is another program writing it?",
        shown.display()
    )
    .into())
}

/// Rename `tmp` to the absent `name` without replacing anything; false when `name` appeared.
fn install_new(dir: &File, tmp: &CStr, name: &CStr) -> anyhow::Result<bool> {
    match renameat2(dir, tmp, name, libc::RENAME_NOREPLACE) {
        Ok(()) => Ok(true),
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(false),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
            // No renameat2 here: a hard link also refuses to replace an existing name.
            let dfd = dir.as_raw_fd();
            let Err(e) = crate::sys::linkat(dfd, tmp, dfd, name, 0) else {
                unlinkat(dir, tmp);
                return Ok(true);
            };
            if e.raw_os_error() == Some(libc::EEXIST) {
                return Ok(false);
            }
            Err(anyhow::anyhow!("cannot install output: {e}"))
        }
        Err(e) => Err(anyhow::anyhow!("cannot install output: {e}")),
    }
}

/// Replace the checked file (dev, ino) at `name` with `tmp`. The two are exchanged, then what
/// came out is compared with what was checked; a different file is put back (false).
fn install_over(
    dir: &File,
    tmp: &CStr,
    name: &CStr,
    dev: u64,
    ino: u64,
    shown: &Path,
) -> anyhow::Result<bool> {
    let same = |st: &Stat| st.st_dev == dev && st.st_ino == ino;
    match renameat2(dir, tmp, name, libc::RENAME_EXCHANGE) {
        Ok(()) => {
            let out = lstatat(dir, tmp);
            if out.as_ref().is_ok_and(same) {
                unlinkat(dir, tmp);
                return Ok(true);
            }
            // Someone swapped the file after the check: give it back its name.
            renameat2(dir, tmp, name, libc::RENAME_EXCHANGE)
                .map_err(|e| anyhow::anyhow!("cannot restore {}: {e}", shown.display()))?;
            Ok(false)
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(false),
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
            // No exchange on this file system: check again just before a plain rename.
            if !lstatat(dir, name).as_ref().is_ok_and(same) {
                return Ok(false);
            }
            let dfd = dir.as_raw_fd();
            if let Err(e) = crate::sys::renameat(dfd, tmp, dfd, name) {
                return Err(anyhow::anyhow!("cannot install {}: {e}", shown.display()));
            }
            Ok(true)
        }
        Err(e) => Err(anyhow::anyhow!("cannot install {}: {e}", shown.display())),
    }
}

/// Write `bytes` to `path` (see `write_at`).
pub fn write_file(path: &Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    let (dir, name) = split(path)?;
    write_at(&dir, name, path, bytes, force)
}

/// Write what `fill` produces to `path` (see `write_at`), for writers that stream.
pub fn write_with(
    path: &Path,
    force: bool,
    fill: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut bytes = Vec::new();
    fill(&mut bytes).map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    write_file(path, &bytes, force)
}

/// Write a value as JSON (see `write_at`); an existing foreign file is refused.
pub fn write_json(path: &Path, value: &impl serde::Serialize) -> anyhow::Result<()> {
    write_json_force(path, value, false)
}

/// Write a value as JSON; `force` lets it replace a regular file fsbench did not write.
pub fn write_json_force(
    path: &Path,
    value: &impl serde::Serialize,
    force: bool,
) -> anyhow::Result<()> {
    let text = serde_json::to_string_pretty(value)? + "\n";
    write_file(path, text.as_bytes(), force)
}

/// A sweep's or suite's results directory, opened, marked as fsbench's and locked for the
/// run. Names in it are opened relative to its descriptor, never through a symbolic link.
pub struct ResultsDir {
    dir: File,
    pub path: PathBuf,
    pub force: bool,
    /// This run made the directory (so it may remove it again while it holds nothing).
    made: bool,
}

impl ResultsDir {
    /// Open (creating when absent) the results directory `path`. An existing directory that
    /// fsbench did not make and that holds anything is refused unless `force`; a second run
    /// into the same directory is refused, naming the PID of the first.
    pub fn open(path: &Path, force: bool) -> anyhow::Result<ResultsDir> {
        let shown = path.display();
        let mut made = false;
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => crate::bail_usage!(
                "output directory {shown} is a symbolic link: name the directory itself"
            ),
            Ok(m) if !m.is_dir() => crate::bail_usage!(
                "output directory {shown} exists and is not a directory: name a new directory"
            ),
            Ok(_) => {}
            Err(_) => {
                if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
                    std::fs::create_dir_all(parent).map_err(|e| {
                        usage!("cannot create output directory {}: {e}", parent.display())
                    })?;
                }
                match std::fs::create_dir(path) {
                    Ok(()) => made = true,
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(e) => crate::bail_usage!("cannot create output directory {shown}: {e}"),
                }
            }
        }
        let dir = {
            use std::os::unix::fs::OpenOptionsExt;
            std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)
                .map_err(|e| usage!("cannot open output directory {shown}: {e}"))?
        };
        crate::guard::lock_exclusive(&dir, path)?;
        let rd = ResultsDir {
            dir,
            path: path.to_path_buf(),
            force,
            made,
        };
        if !made && !rd.is_marked() && !force && !rd.is_empty()? {
            crate::bail_usage!(
                "output directory {shown} holds files fsbench did not write: name a new or empty directory, or add --force to write into it"
            );
        }
        rd.mark();
        Ok(rd)
    }

    /// A run refused before it stored anything leaves no directory behind: remove the
    /// directory when this run made it and it holds nothing but the marker file.
    pub fn abandon(&self) {
        if !self.made {
            return;
        }
        let Ok(rd) = std::fs::read_dir(&self.path) else {
            return;
        };
        let names: Vec<_> = rd.flatten().map(|e| e.file_name()).collect();
        if names.iter().any(|n| n != RESULTS_MARKER_FILE) {
            return;
        }
        let marker = CString::new(RESULTS_MARKER_FILE).expect("constant has no NUL");
        if !names.is_empty() {
            unlinkat(&self.dir, &marker);
        }
        let _ = std::fs::remove_dir(&self.path);
    }

    fn is_marked(&self) -> bool {
        if fget_mark(&self.dir).as_deref() == Some(RESULTS_MARK) {
            return true;
        }
        let marker = CString::new(RESULTS_MARKER_FILE).expect("constant has no NUL");
        lstatat(&self.dir, &marker).is_ok_and(|st| st.st_mode & libc::S_IFMT == libc::S_IFREG)
    }

    fn is_empty(&self) -> anyhow::Result<bool> {
        let mut rd = std::fs::read_dir(&self.path)
            .map_err(|e| usage!("cannot read output directory {}: {e}", self.path.display()))?;
        Ok(rd.next().is_none())
    }

    /// Mark the directory as fsbench's: the xattr, and the marker file made with `O_EXCL`.
    fn mark(&self) {
        fset_mark(&self.dir, RESULTS_MARK);
        let marker = CString::new(RESULTS_MARKER_FILE).expect("constant has no NUL");
        // An existing marker (or anything planted under its name) is left alone.
        let _ = openat(
            &self.dir,
            &marker,
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW,
            0o644,
        );
    }

    /// Path of `name` in this directory, for messages and readers.
    pub fn join(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Write `name` (see `write_at`); a foreign file of that name is refused unless `force`.
    pub fn write(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        write_at(
            &self.dir,
            OsStr::new(name),
            &self.join(name),
            bytes,
            self.force,
        )
    }

    /// Write `name` as JSON.
    pub fn write_json(&self, name: &str, value: &impl serde::Serialize) -> anyhow::Result<()> {
        let text = serde_json::to_string_pretty(value)? + "\n";
        self.write(name, text.as_bytes())
    }

    /// Check, before the run, that `name` can be written (absent or fsbench's).
    pub fn check(&self, name: &str) -> Result<(), UsageError> {
        let cn = cname(OsStr::new(name))?;
        check_existing(&self.dir, &cn, &self.join(name), self.force).map(|_| ())
    }

    /// Read `name` as text without following a symbolic link; None when absent or unreadable.
    pub(crate) fn read(&self, name: &str) -> Option<String> {
        let cn = cname(OsStr::new(name)).ok()?;
        let f = openat(
            &self.dir,
            &cn,
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY,
            0,
        )
        .ok()?;
        let st = fstat(&f).ok()?;
        if st.st_mode & libc::S_IFMT != libc::S_IFREG {
            return None;
        }
        let mut s = String::new();
        f.take(MAX_SNIFF).read_to_string(&mut s).ok()?;
        Some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn foreign_files_refused_ours_replaced_nonregular_never() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("out.json");
        // New file: written, marked.
        write_json(&p, &serde_json::json!({"schema_version": 1, "kind": "io"})).unwrap();
        // Ours: replaced.
        write_json(
            &p,
            &serde_json::json!({"schema_version": 1, "kind": "io", "n": 2}),
        )
        .unwrap();
        assert!(std::fs::read_to_string(&p).unwrap().contains("\"n\": 2"));
        // Foreign: refused, untouched; with force replaced.
        let f = d.path().join("precious");
        std::fs::write(&f, b"keep me").unwrap();
        let e = write_json(&f, &1).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e}");
        assert_eq!(std::fs::read(&f).unwrap(), b"keep me");
        write_json_force(&f, &1, true).unwrap();
        // An unmarked fsbench JSON document is ours.
        let j = d.path().join("old.json");
        std::fs::write(&j, br#"[{"schema_version": 1, "kind": "io"}]"#).unwrap();
        write_json(&j, &2).unwrap();
        // Non-regular: never, even with force.
        let l = d.path().join("link");
        symlink(&f, &l).unwrap();
        assert!(write_json_force(&l, &3, true).is_err());
        assert!(std::fs::symlink_metadata(&l)
            .unwrap()
            .file_type()
            .is_symlink());
        let sub = d.path().join("sub");
        std::fs::create_dir(&sub).unwrap();
        assert!(write_json_force(&sub, &3, true).is_err());
        assert!(check_output(Some(Path::new("/dev/null")), true).is_err());
        // No temporary file is left behind.
        let names: Vec<String> = std::fs::read_dir(d.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert!(!names.iter().any(|n| n.contains("partial")), "{names:?}");
    }

    #[test]
    fn planted_partial_files_are_neither_followed_nor_removed() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"victim data").unwrap();
        let p = d.path().join("out.json");
        // The old fixed temporary names, planted as a link and as a foreign file.
        symlink(&victim, d.path().join("out.json.partial")).unwrap();
        std::fs::write(d.path().join("out.partial"), b"someone's").unwrap();
        write_json(&p, &serde_json::json!({"schema_version": 1, "kind": "io"})).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim data");
        assert_eq!(
            std::fs::read(d.path().join("out.partial")).unwrap(),
            b"someone's"
        );
        assert!(std::fs::symlink_metadata(d.path().join("out.json.partial"))
            .unwrap()
            .file_type()
            .is_symlink());
    }

    #[test]
    fn results_dir_marking_and_refusal() {
        let d = tempfile::tempdir().unwrap();
        let foreign = d.path().join("foreign");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("report.html"), b"mine").unwrap();
        let e = ResultsDir::open(&foreign, false).err().unwrap();
        assert!(crate::error::is_usage(&e), "{e}");
        let mine = d.path().join("mine");
        {
            let rd = ResultsDir::open(&mine, false).unwrap();
            rd.write("report.md", b"# fsbench x\n").unwrap();
            // A second run into the same directory is refused while the first holds it.
            let e = ResultsDir::open(&mine, false).err().unwrap();
            assert!(
                e.to_string().contains(&std::process::id().to_string()),
                "{e}"
            );
            // A symbolic link inside is never followed, even with force.
            let victim = d.path().join("victim");
            std::fs::write(&victim, b"v").unwrap();
            symlink(&victim, mine.join("report.html")).unwrap();
            assert!(rd.write("report.html", b"x").is_err());
            assert_eq!(std::fs::read(&victim).unwrap(), b"v");
            // A foreign file inside is refused.
            std::fs::write(mine.join("notes.json"), b"{}").unwrap();
            assert!(rd.write("notes.json", b"x").is_err());
            assert!(rd.read("report.html").is_none());
        }
        assert!(mine.join(RESULTS_MARKER_FILE).exists());
        // Reopened later: it is ours, although not empty.
        ResultsDir::open(&mine, false).unwrap();
    }
}
