//! The fileset's tests: layouts, preparation, the picker and removal.

use super::layout::{fnv, name_seed};
use super::*;
use crate::workload::lexer::Pos;
use crate::workload::model::Param;
use crate::workload::shared::{Layout, Rotor};

fn spec(root: &Path, n: u64, width: f64, gamma: f64) -> FilesetSpec {
    FilesetSpec {
        name: "fs".into(),
        root: root.join("fs"),
        is_file: false,
        entries: n,
        size: Param::Const(1000.0),
        dirwidth: width,
        dirgamma: gamma,
        dirdepth: None,
        leafdirs: 0,
        prealloc_pct: 50.0,
        paralloc: true,
        reuse: false,
        readonly: false,
        writeonly: false,
        cached: true,
        shared_rank: None,
        pos: Pos::default(),
    }
}

fn paths(l: &SetLayout) -> Vec<PathBuf> {
    (0..l.len())
        .map(|i| l.path(i).as_path().to_path_buf())
        .collect()
}

#[test]
fn tree_shape_follows_dirwidth() {
    let d = tempfile::tempdir().unwrap();
    let l = layout(&spec(d.path(), 1000, 10.0, 0.0)).unwrap();
    assert_eq!(l.len(), 1000);
    // 1000 files, width 10: 100 leaf dirs of 10 + 10 middle dirs + root.
    assert_eq!(l.dir_count(), 111);
    // 500 files, width 20: root, 2 middle dirs of 250, each with 13 leaves of <= 20.
    assert_eq!(
        layout(&spec(d.path(), 500, 20.0, 0.0)).unwrap().dir_count(),
        29
    );
    let all = paths(&l);
    let uniq: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(uniq.len(), 1000);
    assert_eq!(all[0], d.path().join("fs/00000001/00000001/00000001"));
    assert_eq!(all[999], d.path().join("fs/00000010/00000010/00001000"));
    // Every entry's directory is one of the tree's directories.
    let dirs: std::collections::HashSet<PathBuf> = (0..l.dir_count())
        .map(|k| l.dir_path(k).as_path().to_path_buf())
        .collect();
    assert!(all.iter().all(|p| dirs.contains(p.parent().unwrap())));
    let g = layout(&spec(d.path(), 1000, 10.0, 1500.0)).unwrap();
    assert_eq!(g.len(), 1000);
    assert_ne!(g.dir_count(), 111, "gamma widths vary");
    let pre = (0..l.len()).filter(|&i| l.preallocated(i)).count();
    assert!((400..600).contains(&pre), "{pre}");
}

#[test]
fn width_one_terminates_with_a_binary_tree() {
    let d = tempfile::tempdir().unwrap();
    let t = std::time::Instant::now();
    let l = layout(&spec(d.path(), 1000, 1.0, 0.0)).unwrap();
    assert!(t.elapsed().as_secs() < 2);
    assert_eq!(l.len(), 1000);
    let all = paths(&l);
    let uniq: std::collections::HashSet<_> = all.iter().collect();
    assert_eq!(uniq.len(), 1000);
    // One entry per leaf directory, about log2(1000) levels deep.
    let depth = all
        .iter()
        .map(|p| p.strip_prefix(d.path()).unwrap().components().count())
        .max()
        .unwrap();
    assert!((10..=13).contains(&depth), "{depth}");
    // Widths below 1 and gamma widths from a width of 1 also end.
    assert_eq!(layout(&spec(d.path(), 300, 0.5, 0.0)).unwrap().len(), 300);
    assert_eq!(layout(&spec(d.path(), 300, 1.0, 500.0)).unwrap().len(), 300);
}

#[test]
fn a_large_layout_stays_within_its_memory_budget() {
    let d = tempfile::tempdir().unwrap();
    let n = 2_000_000u64;
    let s = spec(d.path(), n, 20.0, 0.0);
    let l = layout(&s).unwrap();
    let per = l.heap_bytes() as f64 / n as f64;
    eprintln!("layout: {per:.1} bytes per entry ({} dirs)", l.dir_count());
    // 10 million entries must fit well under 2 GB: at most 40 bytes each here.
    assert!(per < 16.0, "{per} bytes per entry");
    assert!(estimate_bytes(&s) as f64 >= l.heap_bytes() as f64);
    let w1 = layout(&spec(d.path(), n, 1.0, 0.0)).unwrap();
    let per1 = w1.heap_bytes() as f64 / n as f64;
    assert!(per1 < 40.0, "{per1} bytes per entry with dirwidth=1");
    assert!(estimate_bytes(&spec(d.path(), n, 1.0, 0.0)) as f64 >= w1.heap_bytes() as f64);
    // Paths are derived, not stored, and stay distinct.
    assert_ne!(l.path(0).as_path(), l.path(n as usize - 1).as_path());
}

#[test]
fn too_deep_or_too_big_is_a_usage_error() {
    let d = tempfile::tempdir().unwrap();
    let mut s = spec(d.path(), 10, 5.0, 0.0);
    s.dirdepth = Some(Param::Const(1e9));
    assert!(crate::error::is_usage(&layout(&s).unwrap_err()));
    let s = spec(d.path(), MAX_ENTRIES + 1, 5.0, 0.0);
    assert!(crate::error::is_usage(&layout(&s).unwrap_err()));
}

#[test]
fn prepare_pick_release_remove() {
    let d = tempfile::tempdir().unwrap();
    let s = spec(d.path(), 50, 5.0, 0.0);
    let l = layout(&s).unwrap();
    let arena = Arena::create(Layout::new(0, 0, &[50])).unwrap();
    let p = prepare(&s, &l, &arena, 0, false, None).unwrap();
    let have = arena.set_exists_count(0).load(SeqCst);
    assert_eq!(have, p.files_created);
    let Picked::Got(i) = pick(&arena, 0, Want::Exists, From::Shared(Rotor::Exists)) else {
        panic!()
    };
    assert!(l.path(i).as_path().exists());
    release(&arena, 0, i, false);
    assert_eq!(arena.set_exists_count(0).load(SeqCst), have - 1);
    // A directory fsbench did not create is refused.
    std::fs::create_dir(d.path().join("other")).unwrap();
    let mut s2 = spec(d.path(), 1, 5.0, 0.0);
    s2.name = "other".into();
    s2.root = d.path().join("other");
    let e = prepare(&s2, &layout(&s2).unwrap(), &arena, 0, false, None).unwrap_err();
    assert!(crate::error::is_usage(&e), "{e}");
    assert_eq!(remove(&p, &l, &arena, 0).unwrap(), None);
    assert!(!s.root.exists());
    assert!(!d.path().join(".fs.fsbench-manifest").exists());
    assert!(d.path().join("other").exists());
}

/// A kept tree the user changed: only what fsbench created is removed, a planted symlink
/// is not followed, and the rest is reported.
#[test]
fn kept_tree_removal_spares_foreign_entries() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("precious"), b"keep me").unwrap();
    let mut s = spec(d.path(), 40, 5.0, 0.0);
    s.prealloc_pct = 100.0;
    let l = layout(&s).unwrap();
    let arena = Arena::create(Layout::new(0, 0, &[40])).unwrap();
    let p = prepare(&s, &l, &arena, 0, false, None).unwrap();
    keep(&p, &l, &arena, 0).unwrap();
    // The user adds a file, replaces an entry, and plants symlinks pointing outside.
    let added = l.dir_path(1).as_path().join("mine.txt");
    std::fs::write(&added, b"user data").unwrap();
    let replaced = l.path(3).as_path().to_path_buf();
    std::fs::remove_file(&replaced).unwrap();
    std::fs::write(&replaced, b"user replaced").unwrap();
    let link = l.dir_path(2).as_path().join("link");
    std::os::unix::fs::symlink(outside.path(), &link).unwrap();
    let dirlink = l.path(5).as_path().to_path_buf();
    std::fs::remove_file(&dirlink).unwrap();
    std::os::unix::fs::symlink(outside.path(), &dirlink).unwrap();
    // The next run (no reuse) removes only fsbench's entries and refuses to lay out over
    // the rest.
    let arena2 = Arena::create(Layout::new(0, 0, &[40])).unwrap();
    let e = prepare(&s, &l, &arena2, 0, false, None).unwrap_err();
    assert!(crate::error::is_usage(&e), "{e}");
    assert!(
        e.to_string()
            .contains("left 4 entries fsbench did not create: first"),
        "{e}"
    );
    assert_eq!(std::fs::read(&added).unwrap(), b"user data");
    assert_eq!(std::fs::read(&replaced).unwrap(), b"user replaced");
    assert!(std::fs::symlink_metadata(&link).is_ok());
    assert!(std::fs::symlink_metadata(&dirlink).is_ok());
    assert_eq!(
        std::fs::read(outside.path().join("precious")).unwrap(),
        b"keep me"
    );
    // Every other entry fsbench created is gone.
    assert!(!l.path(0).as_path().exists());
    assert!(!l.path(39).as_path().exists());
    // Reuse is refused too while foreign entries are there.
    let mut r = s.clone();
    r.reuse = true;
    let e = prepare(&r, &l, &arena2, 0, false, None).unwrap_err();
    assert!(crate::error::is_usage(&e), "{e}");
}

/// A layout is the same whatever version computes it (a kept tree is reused by a later
/// run): digests of every path, size and preallocation choice for trees of each shape,
/// computed by the layout code before it was split into steps.
#[test]
fn layouts_are_stable_across_versions() {
    use crate::workload::vars::{Dist, RandVar};
    let root = Path::new("/stable/root");
    let digest = |s: &FilesetSpec| {
        let l = layout(s).unwrap();
        let mut h = name_seed("digest");
        for d in 0..l.dir_count() {
            h = fnv(h, l.dir_path(d).as_path().as_os_str().as_bytes());
        }
        for i in 0..l.len() {
            h = fnv(h, l.path(i).as_path().as_os_str().as_bytes());
            h = fnv(h, &l.size(i).to_le_bytes());
            h = fnv(h, &[l.preallocated(i) as u8]);
        }
        (l.dir_count(), l.len(), h)
    };
    let mut gamma_sizes = spec(root, 1000, 20.0, 0.0);
    gamma_sizes.size = Param::Rand(std::sync::Arc::new(RandVar {
        dist: Dist::Gamma {
            mean: 4096.0,
            shape: 1.5,
        },
        min: 0.0,
        max: None,
        round: 0.0,
        seed: None,
    }));
    let mut fixed_depth = spec(root, 1000, 20.0, 0.0);
    fixed_depth.dirdepth = Some(Param::Const(3.0));
    let mut dirs = spec(root, 0, 7.0, 0.0);
    dirs.leafdirs = 50;
    let mut file = spec(root, 1, 0.0, 0.0);
    file.is_file = true;
    let got: Vec<(usize, usize, u64)> = [
        spec(root, 1000, 20.0, 0.0),
        spec(root, 1000, 20.0, 1500.0),
        spec(root, 500, 1.0, 0.0),
        gamma_sizes,
        fixed_depth,
        dirs,
        file,
    ]
    .iter()
    .map(digest)
    .collect();
    assert_eq!(
        got,
        vec![
            (55, 1000, 3941000330022274126),
            (257, 1000, 16682475448914848634),
            (999, 500, 13482622609857016989),
            (55, 1000, 9479706441578508500),
            (1111, 1000, 14096868254208926642),
            (11, 50, 10773864195150066449),
            (1, 1, 6614963841197568962),
        ]
    );
}
