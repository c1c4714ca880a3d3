//! Filesets whose directories are shared by the ranks of a run on MPI ranks
//! (`--shared-file` with a workload: mdtest's default shared-directory mode).
//!
//! Rank 0 makes every fileset's directory tree once, before the start barrier
//! ([`make_tree`]): the same checks as a fileset of one host (a root fsbench did not make is
//! refused; an old one it left is swept of what its manifests list), then the root (marked)
//! and its directories, their identities recorded in the fileset's manifest. Every rank then
//! creates only its own entries in those directories, their names tagged with its rank
//! (`00000001.r00003`, [`super::SetLayout`]), each with `O_CREAT|O_EXCL|O_NOFOLLOW`
//! (`prepare_entries`), and at its end removes only the entries it created
//! (`remove_entries`), by identity. When every rank is done, rank 0 removes the directories
//! ([`remove_tree`]): only those whose identity it recorded, only when nothing else is in
//! them; anything else (a user's file, an entry a failed rank left) stays and is reported.
//! Each rank's entries are recorded in a manifest of its own next to the root
//! (`.NAME.r00003.fsbench-manifest`), so a later run removes what a kept or killed run left.
//! With `reuse`, a tree a kept run left is used again: rank 0 checks it against every
//! manifest and makes only the missing directories, and each rank reuses its own tagged
//! entries, each checked by identity against its own manifest, creating only what is missing.

use super::*;

/// The name a rank's entries are recorded under: `NAME.r00003`.
fn rank_set(name: &str, rank: u32) -> String {
    format!("{name}.r{rank:05}")
}

/// The rank suffixes (`r00003`) of the rank manifests next to fileset `name`'s root.
fn rank_manifests(parent: &Path, name: &str) -> Vec<String> {
    let prefix = format!(".{name}.r");
    let Ok(rd) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    rd.flatten()
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let digits = n.strip_prefix(&prefix)?.strip_suffix(".fsbench-manifest")?;
            (digits.len() >= 5 && digits.bytes().all(|b| b.is_ascii_digit()))
                .then(|| format!("{name}.r{digits}"))
        })
        .collect()
}

/// Everything the manifests next to fileset `name`'s root list: its own and every rank's.
pub(super) fn read_all_manifests(parent: &Path, pfd: RawFd, name: &str) -> Known {
    let mut inos = read_manifest(pfd, name).unwrap_or_default().inos;
    for set in rank_manifests(parent, name) {
        if let Some(k) = read_manifest(pfd, &set) {
            inos.extend(k.inos);
        }
    }
    Known::from(inos)
}

/// Remove the rank manifests next to fileset `name`'s root (only files that are manifests).
pub(super) fn remove_rank_manifests(parent: &Path, pfd: RawFd, name: &str) {
    for set in rank_manifests(parent, name) {
        remove_manifest(pfd, &set);
    }
}

/// A fileset's directory tree as rank 0 made it for every rank.
#[derive(Debug)]
pub struct SharedTree {
    parent: PathBuf,
    name: String,
    pub root: PathBuf,
    /// The identities of the root and every directory made.
    known: Known,
}

/// The rank numbers of the rank manifests next to fileset `name`'s root.
fn manifest_ranks(parent: &Path, name: &str) -> Vec<u64> {
    rank_manifests(parent, name)
        .iter()
        .filter_map(|set| set.rsplit_once(".r")?.1.parse().ok())
        .collect()
}

/// Make fileset `spec`'s root and directories for the `ranks` ranks of the run (rank 0
/// only, before the start barrier). A root that fsbench did not make is refused; one it left
/// (a kept or killed run) is swept of what its manifests list first, refused if anything
/// else is in it. With `reuse` a tree a kept run left is used as it is instead (checked:
/// everything in it is listed in its manifests, and none is of a rank this run does not
/// have), its missing directories made; each rank then reuses its own entries.
pub fn make_tree(spec: &FilesetSpec, lay: &SetLayout, ranks: u32) -> Result<SharedTree> {
    let (parent, pfd) = super::open_parent(spec)?;
    let cname = ccstr(spec.name.as_bytes());
    let mut reuse_existing = false;
    let mut known = Known::default();
    if super::root_is_ours(&pfd, &cname, spec)? {
        known = read_all_manifests(parent, pfd.as_raw_fd(), &spec.name);
        if spec.reuse {
            let s = sweep_tree(parent, &spec.name, &known, true)?;
            if let Some(n) = s.note() {
                crate::bail_usage!(
                    "fileset '{}': {n}; refusing to reuse {} (move them away or remove it)",
                    spec.name,
                    spec.root.display()
                );
            }
            if let Some(r) = manifest_ranks(parent, &spec.name)
                .into_iter()
                .find(|&r| r >= ranks as u64)
            {
                crate::bail_usage!(
                    "fileset '{}': {} holds the entries of rank {r}, and this run has {ranks} ranks: reuse it with as many ranks as the run that kept it, or drop reuse",
                    spec.name,
                    spec.root.display()
                );
            }
            // The tree's own manifest: its root and directories (the ranks' entries are in
            // theirs, which each rank reads).
            known = read_manifest(pfd.as_raw_fd(), &spec.name).unwrap_or_default();
            reuse_existing = true;
        } else {
            let unfinished = known.inos.is_empty();
            super::clear_old_fileset(parent, &pfd, spec, &known, unfinished)?;
            known = Known::default();
        }
    }
    let made_root = if reuse_existing {
        Ok(())
    } else {
        crate::sys::mkdirat(pfd.as_raw_fd(), &cname, 0o755)
    };
    if let Err(e) = made_root {
        return Err(super::root_creation_error(spec, e));
    }
    let mut p = Prepared {
        root: spec.root.clone(),
        name: spec.name.clone(),
        created_root: !reuse_existing,
        known,
        files_created: 0,
        bytes_written: 0,
        reused: 0,
    };
    let made = open_dir(pfd.as_raw_fd(), &cname, false)
        .map_err(|e| anyhow::anyhow!("opening {}: {e}", spec.root.display()))
        .and_then(|rfd| {
            if !reuse_existing {
                // Failure (no xattrs) is tolerated: removal goes by the recorded identities.
                crate::safety::fd_set_mark(&rfd, b"created");
            }
            create_dirs(&rfd, lay, reuse_existing, &mut p)
        })
        .and_then(|()| write_manifest(parent, &spec.name, &p.known));
    let tree = SharedTree {
        parent: parent.to_path_buf(),
        name: spec.name.clone(),
        root: spec.root.clone(),
        known: p.known,
    };
    if let Err(e) = made {
        if tree.known.inos.is_empty() {
            // Not even the root's identity was taken: it is empty and ours, made above.
            let _ = crate::sys::unlinkat(pfd.as_raw_fd(), &cname, true);
            return Err(e);
        }
        return match remove_tree(&tree) {
            Ok(Some(note)) => Err(e.context(note)),
            Ok(None) => Err(e),
            Err(e2) => Err(e.context(format!("cleanup: {e2:#}"))),
        };
    }
    Ok(tree)
}

/// Remove a shared tree once every rank removed its entries: only the directories rank 0
/// made, and each only when nothing else is in it. Returns the note about what was left.
pub fn remove_tree(t: &SharedTree) -> Result<Option<String>> {
    let Ok(pfd) = open_dir(
        libc::AT_FDCWD,
        &ccstr(t.parent.as_os_str().as_bytes()),
        true,
    ) else {
        return Ok(None);
    };
    match open_dir(pfd.as_raw_fd(), &ccstr(t.name.as_bytes()), false) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(None),
        Err(e) => anyhow::bail!("not removing {}: {e}", t.root.display()),
        Ok(fd) => {
            // The root must be the directory made for this run, not one put in its place.
            if !fstat(fd.as_raw_fd()).is_ok_and(|st| t.known.contains(st.key)) {
                anyhow::bail!(
                    "not removing {}: it is not the directory fsbench made for this run",
                    t.root.display()
                );
            }
        }
    }
    let s = sweep_tree(&t.parent, &t.name, &t.known, false)?;
    if let Some(e) = &s.error {
        anyhow::bail!("removing {}: {e}", t.root.display());
    }
    Ok(s.note())
}

/// Create this rank's entries of a shared fileset in the directories rank 0 made (a
/// fileset's `prepare` on one rank with `--shared-file`). On an error or Ctrl-C what was
/// created is removed again (unless `keep`) before returning.
pub(super) fn prepare_entries(
    spec: &FilesetSpec,
    lay: &SetLayout,
    arena: &Arena,
    set: usize,
    keep: bool,
    pfd: &OwnedFd,
    board: Option<std::sync::Arc<crate::runner::live::Board>>,
) -> Result<Prepared> {
    let parent = spec.root.parent().unwrap_or(Path::new("."));
    let rank = spec.shared_rank.unwrap_or(0);
    let cname = ccstr(spec.name.as_bytes());
    match open_dir(pfd.as_raw_fd(), &cname, false) {
        Ok(rfd) => drop(rfd),
        Err(e) => anyhow::bail!(
            "opening {} (the fileset's directory, made by rank 0 for every rank): {e}",
            spec.root.display()
        ),
    }
    // With reuse: this rank's entries a kept run left, as its manifest records them (rank 0
    // checked that everything in the tree is in a manifest); each one found is reused only
    // when its identity is there, the missing ones are laid out afresh.
    let known = if spec.reuse {
        read_manifest(pfd.as_raw_fd(), &rank_set(&spec.name, rank)).unwrap_or_default()
    } else {
        Known::default()
    };
    let mut p = Prepared::starting(spec, false, known);
    let mut created_inos: Vec<u64> = Vec::new();
    let res = create(
        spec,
        lay,
        arena,
        set,
        pfd,
        &cname,
        spec.reuse,
        &mut p,
        &mut created_inos,
        board,
    );
    p.known = p.known.merged(created_inos);
    if let Err(e) = res {
        if keep {
            let _ = write_manifest(parent, &rank_set(&spec.name, rank), &p.known);
            return Err(e);
        }
        return match remove_entries(&p, lay, arena, set, rank) {
            Ok(()) => Err(e),
            Err(e2) => Err(e.context(format!("cleanup: {e2:#}"))),
        };
    }
    // Record this rank's entries, so a later run can remove them should this one be killed.
    write_manifest(parent, &rank_set(&spec.name, rank), &p.known)?;
    Ok(p)
}

/// Remove this rank's entries of a shared fileset: each entry path of the layout (all
/// tagged with this rank) whose identity this run recorded or that the arena says this run
/// made exist; the directories stay for rank 0 ([`remove_tree`]).
pub(super) fn remove_entries(
    p: &Prepared,
    lay: &SetLayout,
    arena: &Arena,
    set: usize,
    rank: u32,
) -> Result<()> {
    let parent = p.root.parent().unwrap_or(Path::new("."));
    let Ok(pfd) = open_dir(libc::AT_FDCWD, &ccstr(parent.as_os_str().as_bytes()), true) else {
        return Ok(());
    };
    let root = match open_dir(pfd.as_raw_fd(), &ccstr(p.name.as_bytes()), false) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(()),
        Err(e) => anyhow::bail!("not removing entries of {}: {e}", p.root.display()),
    };
    let dev = fstat(root.as_raw_fd())?.dev;
    let known = known_now(p, lay, arena, set);
    let mut first_err = None;
    for i in 0..lay.len() {
        let path = lay.path(i);
        let Ok(st) = lstat(&path) else {
            continue;
        };
        if st.dev != dev || !known.contains(st.key) {
            continue;
        }
        let rmdir = if is_dir(&st) {
            true
        } else if is_reg(&st) {
            false
        } else {
            continue;
        };
        if let Err(e) = crate::sys::unlinkat(crate::sys::AT_FDCWD, &path, rmdir) {
            // A leaf directory holding what someone else put there stays (ENOTEMPTY).
            if e.raw_os_error() != Some(libc::ENOENT) && e.raw_os_error() != Some(libc::ENOTEMPTY) {
                first_err.get_or_insert(format!("removing {path}: {e}"));
            }
        }
    }
    if let Some(e) = first_err {
        let _ = write_manifest(parent, &rank_set(&p.name, rank), &known);
        anyhow::bail!("{e}");
    }
    remove_manifest(pfd.as_raw_fd(), &rank_set(&p.name, rank));
    Ok(())
}

/// Keep this rank's entries of a shared fileset (`--keep`): record them for a later run.
pub(super) fn keep_entries(
    p: &Prepared,
    lay: &SetLayout,
    arena: &Arena,
    set: usize,
    rank: u32,
) -> Result<()> {
    let parent = p.root.parent().unwrap_or(Path::new("."));
    write_manifest(
        parent,
        &rank_set(&p.name, rank),
        &known_now(p, lay, arena, set),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::lexer::Pos;
    use crate::workload::model::Param;
    use crate::workload::shared::Layout;

    fn spec(dir: &Path, rank: u32) -> FilesetSpec {
        FilesetSpec {
            name: "fs".into(),
            root: dir.join("fs"),
            is_file: false,
            entries: 30,
            size: Param::Const(100.0),
            dirwidth: 5.0,
            dirgamma: 0.0,
            dirdepth: None,
            leafdirs: 0,
            prealloc_pct: 100.0,
            paralloc: false,
            reuse: false,
            readonly: false,
            writeonly: false,
            cached: true,
            shared_rank: Some(rank),
            pos: Pos::default(),
        }
    }

    /// Two ranks in one tree: each creates and removes only its own (tagged) entries; the
    /// directories go last, only when empty, and a user's file anywhere is never touched.
    #[test]
    fn ranks_share_the_directories_and_remove_only_their_own_entries() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("precious"), b"keep me").unwrap();
        let l0 = layout(&spec(d.path(), 0)).unwrap();
        let tree = make_tree(&spec(d.path(), 0), &l0, 2).unwrap();
        let mut ranks = Vec::new();
        for r in 0..2 {
            let s = spec(d.path(), r);
            let l = layout(&s).unwrap();
            let arena = Arena::create(Layout::new(0, 0, &[30])).unwrap();
            let p = prepare(&s, &l, &arena, 0, false, None).unwrap();
            assert_eq!(p.files_created, 30);
            ranks.push((l, arena, p));
        }
        let (a, b) = (&ranks[0].0, &ranks[1].0);
        for i in 0..30 {
            let (pa, pb) = (a.path(i), b.path(i));
            assert_eq!(pa.as_path().parent(), pb.as_path().parent());
            assert!(pa.as_path().to_str().unwrap().ends_with(".r00000"), "{pa}");
            assert!(pb.as_path().to_str().unwrap().ends_with(".r00001"), "{pb}");
            assert!(pa.as_path().is_file() && pb.as_path().is_file());
        }
        let mine = a.dir_path(a.dir_count() - 1).as_path().join("mine");
        std::fs::write(&mine, b"user").unwrap();
        // Rank 0 is done first: its entries go, rank 1's and the directories stay.
        let (l, arena, p) = &ranks[0];
        assert_eq!(remove(p, l, arena, 0).unwrap(), None);
        assert!((0..30).all(|i| !a.path(i).as_path().exists()));
        assert!((0..30).all(|i| b.path(i).as_path().exists()));
        let (l, arena, p) = &ranks[1];
        remove(p, l, arena, 0).unwrap();
        assert!(!d.path().join(".fs.r00001.fsbench-manifest").exists());
        let note = remove_tree(&tree).unwrap().unwrap();
        assert!(
            note.contains("left 1 entries") && note.contains("mine"),
            "{note}"
        );
        assert_eq!(std::fs::read(&mine).unwrap(), b"user");
        std::fs::remove_file(&mine).unwrap();
        assert_eq!(remove_tree(&tree).unwrap(), None);
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(left.len(), 1, "{left:?}");
        assert_eq!(
            std::fs::read(d.path().join("precious")).unwrap(),
            b"keep me"
        );
        // A directory of that name fsbench did not make is refused, untouched.
        std::fs::create_dir(d.path().join("fs")).unwrap();
        std::fs::write(d.path().join("fs/x"), b"x").unwrap();
        let e = make_tree(&spec(d.path(), 0), &l0, 3).unwrap_err();
        assert!(crate::error::is_usage(&e), "{e}");
        assert_eq!(std::fs::read(d.path().join("fs/x")).unwrap(), b"x");
    }

    /// A kept shared tree (every rank's manifest) is removed whole by the next run, shared
    /// or on one host.
    #[test]
    fn a_kept_shared_tree_is_removed_by_the_next_run() {
        let d = tempfile::tempdir().unwrap();
        let l0 = layout(&spec(d.path(), 0)).unwrap();
        let _tree = make_tree(&spec(d.path(), 0), &l0, 3).unwrap();
        for r in 0..3 {
            let s = spec(d.path(), r);
            let l = layout(&s).unwrap();
            let arena = Arena::create(Layout::new(0, 0, &[30])).unwrap();
            let p = prepare(&s, &l, &arena, 0, true, None).unwrap();
            keep(&p, &l, &arena, 0).unwrap();
        }
        // The next shared run sweeps it and makes it afresh.
        let tree = make_tree(&spec(d.path(), 0), &l0, 3).unwrap();
        assert!(!d.path().join(".fs.r00002.fsbench-manifest").exists());
        let empty = (0..l0.dir_count()).all(|k| {
            std::fs::read_dir(l0.dir_path(k).as_path())
                .unwrap()
                .flatten()
                .all(|e| e.file_type().unwrap().is_dir())
        });
        assert!(empty, "the old ranks' files are gone");
        // Kept again, with a rank's files: a run on one host removes it all too.
        let s = spec(d.path(), 1);
        let l = layout(&s).unwrap();
        let arena = Arena::create(Layout::new(0, 0, &[30])).unwrap();
        let p = prepare(&s, &l, &arena, 0, true, None).unwrap();
        keep(&p, &l, &arena, 0).unwrap();
        drop(tree);
        let mut one = spec(d.path(), 0);
        one.shared_rank = None;
        let lone = layout(&one).unwrap();
        let arena = Arena::create(Layout::new(0, 0, &[30])).unwrap();
        let p = prepare(&one, &lone, &arena, 0, false, None).unwrap();
        assert!(!l.path(0).as_path().exists());
        assert!(!d.path().join(".fs.r00001.fsbench-manifest").exists());
        assert_eq!(remove(&p, &lone, &arena, 0).unwrap(), None);
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0);
    }
}
