//! A verification journal that fills its file system (ENOSPC) fails the run naming the
//! journal and where in it the append went, not the data file.

mod common;
use common::Sandbox;

#[test]
#[cfg_attr(not(has_root), ignore = "SKIPPED: needs root to mount a small tmpfs")]
fn a_full_journal_is_named_with_its_offset() {
    let mnt = tempfile::tempdir().unwrap();
    // One page: the header fits, the first batch of 256 acknowledgements (8 KiB) does not.
    let _u = common::Tmpfs::mount(mnt.path(), "size=4k");
    let sb = Sandbox::new();
    let journal = mnt.path().join("j");
    let j = journal.to_str().unwrap();
    let json = sb.file("r.json");
    let out = sb
        .cmd(&[
            "run",
            "f",
            "--rw",
            "write",
            "--bs",
            "4k",
            "--size",
            "4m",
            "--cache",
            "direct",
            "--journal",
            j,
            "--output",
            json.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let f = &v["failures"][0];
    assert_eq!(f["path"], j, "{f}");
    let at = f["offset"].as_u64().expect("the offset in the journal");
    assert!(at > 0 && at <= 4096, "{f}");
    assert!(
        f["message"]
            .as_str()
            .unwrap()
            .contains("verify journal full (ENOSPC) on write"),
        "{f}"
    );
    assert!(
        text.contains(&format!("{j} at offset {at}")) && text.contains("ENOSPC"),
        "{text}"
    );
}
