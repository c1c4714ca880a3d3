//! `fsbench frag` on real file systems: the free-space report against the file systems' own
//! tools (e2freefrag, xfs_db freesp), directory extents, and `--reorg` turning a file made
//! fragmented on purpose (written into free space cut into holes) into fewer extents on ext4 and XFS without changing its contents,
//! while a file fsbench did not create is refused without --force.

mod common;
use common::{cannot, MountedFs, Sandbox};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// `fsbench ARGS --format json` (stdout parsed), asserting success.
fn frag_json(sb: &Sandbox, args: &[&str]) -> serde_json::Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let o = sb.cmd(&all).output().unwrap();
    assert!(
        o.status.success(),
        "fsbench {args:?}: {}{}",
        String::from_utf8_lossy(&o.stderr),
        String::from_utf8_lossy(&o.stdout)
    );
    serde_json::from_slice(&o.stdout).expect("JSON on stdout")
}

fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool} >/dev/null")])
        .status()
        .is_ok_and(|s| s.success())
}

fn run(cmd: &str, args: &[&str]) -> String {
    let o = Command::new(cmd).args(args).output().unwrap();
    assert!(o.status.success(), "{cmd} {args:?}: {o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Extent count by `filefrag` (e2fsprogs), an independent reader of FIEMAP.
fn filefrag(p: &Path) -> Option<u64> {
    if !have("filefrag") {
        return None;
    }
    let out = run("filefrag", &[p.to_str().unwrap()]);
    let tail = out.rsplit(": ").next()?;
    tail.split_whitespace().next()?.parse().ok()
}

/// Free space with holes in it: files written, every other one removed, all synced.
fn fragment_free_space(dir: &Path, files: usize, size: usize) {
    for i in 0..files {
        std::fs::write(dir.join(format!("f{i}")), vec![i as u8; size]).unwrap();
    }
    run("sync", &[]);
    for i in (0..files).step_by(2) {
        std::fs::remove_file(dir.join(format!("f{i}"))).unwrap();
    }
    run("sync", &[]);
}

/// fsbench's free-space classes: first block of the class -> (extents, blocks).
fn classes(free: &serde_json::Value) -> BTreeMap<u64, (u64, u64)> {
    free["classes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            let n = |k: &str| c[k].as_u64().unwrap();
            (n("min_blocks"), (n("extents"), n("blocks")))
        })
        .collect()
}

/// `64K` / `4M` / `1G` of e2freefrag's histogram, in bytes.
fn e2_size(s: &str) -> u64 {
    let s = s.trim().trim_end_matches('-');
    let (num, unit) = s.split_at(s.len() - 1);
    let mult = match unit {
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        "T" => 1 << 40,
        _ => panic!("unit of {s}"),
    };
    num.trim().parse::<u64>().unwrap() * mult
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn free_space_on_ext4_agrees_with_e2freefrag() {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), "ext4", 64) else {
        cannot("an ext4 loop file system could not be made");
    };
    fragment_free_space(fs.path(), 24, 300 << 10);
    let r = frag_json(&sb, &["frag", "--free", fs.path().to_str().unwrap()]);
    let free = &r["free_space"];
    assert_eq!(free["fs_type"], "ext4");
    assert!(free["unsupported"].is_null(), "{free}");
    let bs = free["block_size"].as_u64().unwrap();
    let mine = classes(free);
    // Removing every other file left holes: more than one class of free extents.
    assert!(free["free_extents"].as_u64().unwrap() >= 12, "{free}");
    let sum: u64 = mine.values().map(|c| c.1).sum();
    assert_eq!(sum, free["free_blocks"].as_u64().unwrap());
    if !have("e2freefrag") {
        eprintln!("e2freefrag is not installed: the report was checked on its own only");
        return;
    }
    let out = run("e2freefrag", &[fs.lo.dev.to_str().unwrap()]);
    let field = |name: &str| -> u64 {
        let l = out.lines().find(|l| l.starts_with(name)).expect(name);
        l[name.len()..]
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(
        free["free_blocks"].as_u64().unwrap(),
        field("Free blocks:"),
        "{out}"
    );
    assert_eq!(
        free["free_extents"].as_u64().unwrap(),
        field("Num. free extent:"),
        "{out}"
    );
    assert_eq!(
        free["largest_blocks"].as_u64().unwrap() * bs / 1024,
        field("Max. free extent:"),
        "{out}"
    );
    let theirs: BTreeMap<u64, (u64, u64)> = out
        .lines()
        .skip_while(|l| !l.contains("Extent Size Range"))
        .skip(1)
        .filter_map(|l| {
            let (range, nums) = l.split_once(':')?;
            let start = e2_size(range.split("...").next()?);
            let n: Vec<u64> = nums
                .split_whitespace()
                .take(2)
                .map(|x| x.parse().unwrap())
                .collect();
            Some((start / bs, (n[0], n[1])))
        })
        .collect();
    assert_eq!(mine, theirs, "{out}");
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_xfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.xfs"
)]
fn free_space_on_xfs_agrees_with_xfs_db_freesp() {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), "xfs", 320) else {
        cannot("an XFS loop file system could not be made");
    };
    fragment_free_space(fs.path(), 40, 1 << 20);
    // xfs_db reads the disk: have the log written back first.
    let mnt = fs.path().to_str().unwrap();
    run("xfs_freeze", &["-f", mnt]);
    run("xfs_freeze", &["-u", mnt]);
    let r = frag_json(&sb, &["frag", "--free", mnt]);
    let free = &r["free_space"];
    assert_eq!(free["fs_type"], "xfs");
    assert!(free["unsupported"].is_null(), "{free}");
    let mine = classes(free);
    assert!(free["free_extents"].as_u64().unwrap() >= 20, "{free}");
    if !have("xfs_db") {
        eprintln!("xfs_db is not installed: the report was checked on its own only");
        return;
    }
    let dev = fs.lo.dev.to_str().unwrap();
    let out = run("xfs_db", &["-r", "-c", "freesp", dev]);
    let mut theirs: BTreeMap<u64, (u64, u64)> = out
        .lines()
        .skip(1)
        .map(|l| {
            let n: Vec<u64> = l
                .split_whitespace()
                .take(4)
                .map(|x| x.parse().unwrap())
                .collect();
            (n[0], (n[2], n[3]))
        })
        .collect();
    // xfs_db also counts each block on an allocation group's free list (AGFL) as a free
    // one-block extent; those are held for the btrees, and GETFSMAP does not list them.
    let ags: u64 = run("xfs_db", &["-r", "-c", "sb 0", "-c", "print agcount", dev])
        .trim()
        .trim_start_matches("agcount = ")
        .parse()
        .unwrap();
    let mut agfl = 0;
    for ag in 0..ags {
        let fl = run(
            "xfs_db",
            &["-r", "-c", &format!("agf {ag}"), "-c", "print flcount", dev],
        );
        agfl += fl
            .trim()
            .trim_start_matches("flcount = ")
            .parse::<u64>()
            .unwrap();
    }
    if agfl > 0 {
        let one = theirs
            .get_mut(&1)
            .expect("AGFL blocks in the 1-block class");
        one.0 -= agfl;
        one.1 -= agfl;
        if one.0 == 0 {
            theirs.remove(&1);
        }
    }
    assert_eq!(mine, theirs, "{out}");
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.btrfs"
)]
fn free_space_and_directories_on_btrfs_say_why_not() {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), "btrfs", 200) else {
        cannot("a btrfs loop file system could not be made");
    };
    let p = fs.path().to_str().unwrap();
    let r = frag_json(&sb, &["frag", "--free", "--dirs", p]);
    let why = r["free_space"]["unsupported"].as_str().expect("a reason");
    assert!(why.contains("btrfs") && why.contains("GETFSMAP"), "{why}");
    let dirs = r["directories"]["unsupported"].as_str().expect("a reason");
    assert!(dirs.contains("btrfs"), "{dirs}");
    let text = sb.cmd(&["frag", "--free", p]).output().unwrap();
    assert!(text.status.success());
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("not available: btrfs does not implement FS_IOC_GETFSMAP"),
        "{text}"
    );
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4, has_mkfs_xfs)),
    ignore = "SKIPPED: needs root, loop devices, mkfs.ext4 and mkfs.xfs"
)]
fn directory_extents_on_ext4_match_filefrag_and_xfs_says_why_not() {
    let sb = Sandbox::new();
    let Some(ext4) = MountedFs::new(sb.path(), "ext4", 64) else {
        cannot("an ext4 loop file system could not be made");
    };
    // Two directories growing in turn: their entry blocks interleave.
    let (a, b) = (ext4.path().join("a"), ext4.path().join("b"));
    std::fs::create_dir(&a).unwrap();
    std::fs::create_dir(&b).unwrap();
    for i in 0..300 {
        for d in [&a, &b] {
            std::fs::write(
                d.join(format!("a-long-name-that-fills-directory-blocks-{i}")),
                b"",
            )
            .unwrap();
        }
    }
    run("sync", &[]);
    let r = frag_json(
        &sb,
        &[
            "frag",
            "--dirs",
            "--top",
            "2",
            ext4.path().to_str().unwrap(),
        ],
    );
    let d = &r["directories"];
    assert!(d["unsupported"].is_null(), "{d}");
    assert_eq!(d["dirs"], 4, "root, lost+found, a, b: {d}");
    let worst = &d["worst"][0];
    let path = Path::new(worst["path"].as_str().unwrap());
    assert!(worst["extents"].as_u64().unwrap() > 1, "{d}");
    assert_eq!(worst["entries"], 300);
    if let Some(n) = filefrag(path) {
        assert_eq!(worst["extents"].as_u64().unwrap(), n);
    }
    let text = sb
        .cmd(&["frag", "--dirs", ext4.path().to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("Directory fragmentation report"), "{text}");
    assert!(text.contains("in more than one extent 2"), "{text}");
    let Some(xfs) = MountedFs::new(sb.path(), "xfs", 320) else {
        cannot("an XFS loop file system could not be made");
    };
    let r = frag_json(&sb, &["frag", "--dirs", xfs.path().to_str().unwrap()]);
    let why = r["directories"]["unsupported"].as_str().expect("a reason");
    assert!(why.contains("XFS"), "{why}");
}

/// Free space cut into 256 KiB holes: the file system filled with 256 KiB files (allocated
/// with fallocate), then every other one removed. The rest are returned.
fn punch_free_space(dir: &Path) -> Vec<std::path::PathBuf> {
    use std::os::fd::AsRawFd;
    let fill = dir.join("fill");
    std::fs::create_dir(&fill).unwrap();
    let mut files = Vec::new();
    for i in 0.. {
        let p = fill.join(format!("{i}"));
        let f = std::fs::File::create(&p).unwrap();
        // SAFETY: fallocate on an open descriptor; no memory is passed.
        let rc = unsafe { libc::fallocate(f.as_raw_fd(), 0, 0, 256 << 10) };
        if rc != 0 {
            drop(f);
            std::fs::remove_file(&p).unwrap();
            break;
        }
        files.push(p);
    }
    assert!(files.len() > 100, "filled with {} files", files.len());
    run("sync", &[]);
    let mut kept = Vec::new();
    for (i, p) in files.into_iter().enumerate() {
        if i % 2 == 0 {
            std::fs::remove_file(&p).unwrap();
        } else {
            kept.push(p);
        }
    }
    run("sync", &[]);
    kept
}

/// Two 4 MiB files written by fsbench into free space cut into 256 KiB holes.
fn write_fragmented(sb: &Sandbox, dir: &Path, size: &str) -> Vec<std::path::PathBuf> {
    let files: Vec<_> = (0..2).map(|i| dir.join(format!("f{i}"))).collect();
    let mut args = vec!["run", "--rw", "write", "--bs", "64k", "--size", size];
    args.extend(["--cache", "direct", "--keep"]);
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    args.extend(names.iter().map(String::as_str));
    let o = sb.cmd(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    files
}

/// A 2 MiB file written by another program (dd, direct 64 KiB writes, as fsbench's were).
fn write_foreign(dir: &Path) -> std::path::PathBuf {
    let p = dir.join("theirs");
    let of = format!("of={}", p.display());
    run(
        "dd",
        &[
            "if=/dev/urandom",
            &of,
            "bs=64k",
            "count=32",
            "oflag=direct",
            "status=none",
        ],
    );
    p
}

fn reorganises_on(fstype: &str, size_mb: u64) {
    let sb = Sandbox::new();
    let Some(fs) = MountedFs::new(sb.path(), fstype, size_mb) else {
        cannot(&format!("a {fstype} loop file system could not be made"));
    };
    let dir = fs.path().join("d");
    std::fs::create_dir(&dir).unwrap();
    let filler = punch_free_space(fs.path());
    // On XFS (without the reverse-map btree) a file of about 16 extents in 256 KiB holes can
    // sit in a btree that the kernel will not exchange with a donor's inline map (the
    // command says so); 8 MiB (about 32 extents) is past every inline form.
    let size = if fstype == "xfs" { "8m" } else { "4m" };
    let files = write_fragmented(&sb, &dir, size);
    let theirs = write_foreign(&dir);
    // Room for contiguous donors again.
    for p in filler {
        std::fs::remove_file(p).unwrap();
    }
    run("sync", &[]);
    let before: Vec<Vec<u8>> = files.iter().map(|f| std::fs::read(f).unwrap()).collect();
    let names: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    let mut args = vec!["frag", "--reorg"];
    args.extend(names.iter().map(String::as_str));
    let r = frag_json(&sb, &args);
    let out = r["files"].as_array().unwrap();
    assert_eq!(out.len(), 2);
    let method = match fstype {
        "ext4" => "EXT4_IOC_MOVE_EXT",
        "xfs" => "XFS_IOC_SWAPEXT",
        _ => "BTRFS_IOC_DEFRAG_RANGE",
    };
    let mut improved = 0;
    for (o, f) in out.iter().zip(&files) {
        assert_eq!(o["method"], method, "{o}");
        assert!(o["error"].is_null(), "{o}");
        let (b, a) = (
            o["extents_before"].as_u64().unwrap(),
            o["extents_after"].as_u64().unwrap(),
        );
        assert!(a <= b, "{o}");
        if b > 1 {
            assert!(a < b, "a fragmented file ends in fewer extents: {o}");
            improved += 1;
        }
        if let Some(n) = filefrag(f) {
            assert_eq!(n, a, "{o}");
        }
    }
    assert_eq!(
        improved, 2,
        "both files were fragmented and reorganised: {r}"
    );
    for (f, want) in files.iter().zip(&before) {
        assert!(
            &std::fs::read(f).unwrap() == want,
            "{} changed",
            f.display()
        );
    }
    // A file fsbench did not create: refused in one line, untouched; taken with --force.
    let data = std::fs::read(&theirs).unwrap();
    let extents = filefrag(&theirs);
    let t = theirs.to_str().unwrap();
    let o = sb.cmd(&["frag", "--reorg", t]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("not created by fsbench") && err.contains("--force"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    assert_eq!(filefrag(&theirs), extents);
    // With several files, one refusal means none is touched.
    let o = sb.cmd(&["frag", "--reorg", &names[0], t]).output().unwrap();
    assert_eq!(o.status.code(), Some(2));
    let r = frag_json(&sb, &["frag", "--reorg", "--force", t]);
    let o = &r["files"][0];
    assert!(o["error"].is_null(), "{r}");
    assert!(
        o["extents_after"].as_u64() < o["extents_before"].as_u64(),
        "{r}"
    );
    assert!(std::fs::read(&theirs).unwrap() == data);
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_ext4)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.ext4"
)]
fn reorg_on_ext4_moves_a_fragmented_file_into_fewer_extents() {
    reorganises_on("ext4", 128);
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_xfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.xfs"
)]
fn reorg_on_xfs_swaps_a_fragmented_file_into_fewer_extents() {
    reorganises_on("xfs", 320);
}

#[test]
#[cfg_attr(
    not(all(has_loop, has_mkfs_btrfs)),
    ignore = "SKIPPED: needs root, loop devices and mkfs.btrfs"
)]
fn reorg_on_btrfs_defragments_a_fragmented_file_into_fewer_extents() {
    reorganises_on("btrfs", 300);
}

#[test]
fn reorg_refuses_links_directories_and_missing_files_in_one_line() {
    let sb = Sandbox::new();
    std::fs::write(sb.file("victim"), b"keep").unwrap();
    std::os::unix::fs::symlink(sb.file("victim"), sb.file("link")).unwrap();
    for (args, want) in [
        (vec!["frag", "--reorg", "link", "--force"], "symbolic link"),
        (vec!["frag", "--reorg", "."], "directory"),
        (vec!["frag", "--reorg", "missing"], "does not exist"),
        (vec!["frag", "--force", "."], "--reorg"),
        (
            vec!["frag", "--reorg", "--force", "victim", "."],
            "directory",
        ),
        (vec!["frag", ".", "victim"], "one PATH"),
        (
            vec!["frag", "--reorg", "--free", "victim"],
            "cannot be used",
        ),
    ] {
        let o = sb.cmd(&args).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
    assert_eq!(std::fs::read(sb.file("victim")).unwrap(), b"keep");
}
