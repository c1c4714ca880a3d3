//! Fuzz of `fscompare --fs` specs through the real binary: specs built from real mkfs and
//! mount option words (safe ones, ones that name devices or files, positionals, paths) and
//! random characters. Without --workload, every case must end with exit 2 and exactly one
//! line on stderr (a refused spec, or the missing --workload once the spec is accepted),
//! never a panic, and nothing may be created in the working directory.

mod common;
use proptest::prelude::*;

/// Words a spec is made of: file-system names, separators, options fsbench passes on and
/// options that name another device or file.
const WORDS: &[&str] = &[
    "xfs",
    "ext4",
    "btrfs",
    "ext2",
    "minix",
    ":",
    ";",
    ",",
    " ",
    "-f",
    "-F",
    "-q",
    "-fq",
    "-m",
    "crc=1",
    "-d",
    "su=64k,sw=2",
    "single",
    "raid0",
    "-E",
    "lazy_itable_init=0",
    "-l",
    "logdev=/dev/loop1,size=64m",
    "logdev=loop1",
    "internal=0",
    "-r",
    "rtdev=/dev/loop2",
    "file,name=x.img",
    "-p",
    "proto",
    "-J",
    "device=/dev/loop1",
    "-O",
    "journal_dev",
    "^has_journal",
    "--rootdir",
    "dir",
    "--data",
    "--",
    "-",
    "rel.img",
    "/dev/loop0",
    "noatime",
    "device=/dev/loop1",
    "journal_path=/dev/sdb",
    "x-mount.mkdir",
    "compress=zstd:3",
    "=",
    "^",
    "-L",
    "a/b",
    "100M",
    "--rootdir=dir",
    "-z",
    "undo",
    "-dfile",
    "é",
    "\u{7f}",
];

fn spec() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            4 => prop::sample::select(WORDS).prop_map(str::to_string),
            1 => "[ -~]{0,6}",
        ],
        0..14,
    )
    .prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fs_specs_never_panic_and_are_refused_in_one_line(s in spec()) {
        let sb = common::Sandbox::new();
        let out = sb.cmd(&["fscompare", &format!("--fs={s}")]).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        prop_assert_eq!(out.status.code(), Some(2), "{:?}: {}", s, err);
        prop_assert_eq!(err.lines().count(), 1, "{:?}: {}", s, err);
        prop_assert!(!err.contains("panicked"), "{:?}: {}", s, err);
        prop_assert!(sb.listing().is_empty(), "{:?} created {:?}", s, sb.listing());
    }
}

/// The hostile forms each get their own reason, naming the option.
#[test]
fn hostile_specs_name_the_option_and_why() {
    let sb = common::Sandbox::new();
    for (spec, want) in [
        (
            "xfs:-f -l logdev=/dev/loop1,size=64m",
            "'logdev' names a device or file",
        ),
        ("xfs:-f -r rtdev=x", "'rtdev' names a device or file"),
        ("xfs:-d file,name=x.img", "'file' names a device or file"),
        ("xfs:-p proto", "'-p' names a device or file"),
        (
            "ext4:-J device=/dev/loop1",
            "'device' names a device or file",
        ),
        (
            "ext4:-O journal_dev",
            "'journal_dev' names a device or file",
        ),
        ("ext4:-d dir", "'-d' names a device or file"),
        ("btrfs:-f rel.img", "argument 'rel.img' is not an option"),
        (
            "btrfs:-f --rootdir dir",
            "'--rootdir' names a device or file",
        ),
        (
            "btrfs:-f /dev/loop0 -f",
            "argument '/dev/loop0' is not an option",
        ),
        (
            "xfs;logdev=/dev/loop1",
            "mount option 'logdev=/dev/loop1' names",
        ),
        (
            "btrfs;device=/dev/loop1",
            "mount option 'device=/dev/loop1' names",
        ),
        (
            "ext4;journal_path=/dev/sdb",
            "mount option 'journal_path=/dev/sdb' names",
        ),
    ] {
        let out = sb
            .cmd(&["fscompare", &format!("--fs={spec}"), "--workload", "oltp"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert_eq!(err.lines().count(), 1, "{spec}: {err}");
        assert!(err.contains(want), "{spec}: {err}");
    }
    assert!(sb.listing().is_empty(), "{:?}", sb.listing());
}
