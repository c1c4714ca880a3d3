//! Which mkfs and mount options `fscompare` passes on. The device fsbench built is always
//! the last argument of mkfs and the source of mount, and it must be the only device or file
//! they touch: an option such as `-l logdev=/dev/loop1`, `-J device=...`, `--rootdir DIR`
//! or a stray positional (`-f rel.img`) would make mkfs write to, or read, something fsbench
//! did not create.
//!
//! This is an ALLOW-LIST, not a deny-list: every mkfs option and sub-option, and every mount
//! option, must be one this module knows to take only a number, a word or a list of words.
//! A deny-list would have to know every option of every mkfs version that names a path or a
//! device (and their abbreviations and spellings); an allow-list fails closed when a new one
//! appears. Values never hold a `/`. File systems whose mkfs this module does not know take
//! no mkfs options at all.

/// How an option's value is checked.
#[derive(Clone, Copy)]
enum Value {
    /// One word: letters, digits and `_.:+-` (a size, a count, a label, a profile name).
    Word,
    /// `key[=word],key[=word]...` with every key from the list.
    Sub(&'static [&'static str]),
    /// A comma list of feature words (`^` negates), none of them in the list.
    FeaturesExcept(&'static [&'static str]),
}

/// One option of a mkfs: its short letter and/or long name, and its value (None: a flag).
struct Opt {
    short: Option<char>,
    long: Option<&'static str>,
    value: Option<Value>,
}

const fn flag(c: char) -> Opt {
    Opt {
        short: Some(c),
        long: None,
        value: None,
    }
}

const fn valued(c: char, v: Value) -> Opt {
    Opt {
        short: Some(c),
        long: None,
        value: Some(v),
    }
}

const fn both(c: char, l: &'static str, v: Option<Value>) -> Opt {
    Opt {
        short: Some(c),
        long: Some(l),
        value: v,
    }
}

const fn long(l: &'static str, v: Option<Value>) -> Opt {
    Opt {
        short: None,
        long: Some(l),
        value: v,
    }
}

/// The options of one mkfs that fsbench passes on, and those it names as touching a device
/// or file (for a clearer refusal; everything not allowed is refused anyway).
struct Mkfs {
    opts: &'static [Opt],
    /// Options and sub-options that name a device or file: refused with that reason.
    names_files: &'static [&'static str],
}

use Value::{FeaturesExcept, Sub, Word};

const XFS: Mkfs = Mkfs {
    opts: &[
        flag('f'),
        flag('q'),
        flag('K'),
        flag('N'),
        valued('b', Sub(&["size", "log"])),
        valued(
            'm',
            Sub(&[
                "crc",
                "finobt",
                "uuid",
                "rmapbt",
                "reflink",
                "inobtcount",
                "bigtime",
                "nrext64",
                "exchange",
                "metadir",
                "autofsck",
            ]),
        ),
        valued(
            'd',
            Sub(&[
                "agcount",
                "agsize",
                "cowextsize",
                "size",
                "sunit",
                "swidth",
                "su",
                "sw",
                "noalign",
                "extszinherit",
                "projinherit",
                "rtinherit",
                "daxinherit",
                "concurrency",
            ]),
        ),
        valued(
            'i',
            Sub(&[
                "align",
                "attr",
                "maxpct",
                "perblock",
                "size",
                "sparse",
                "projid32bit",
                "nrext64",
                "exchange",
            ]),
        ),
        // `internal` only as internal=1 (see `internal_log`): an external log needs logdev.
        valued(
            'l',
            Sub(&[
                "agnum",
                "internal",
                "size",
                "version",
                "sunit",
                "su",
                "lazy-count",
                "concurrency",
            ]),
        ),
        valued('n', Sub(&["size", "log", "version", "ftype", "parent"])),
        valued(
            'r',
            Sub(&["extsize", "size", "noalign", "rgcount", "rgsize"]),
        ),
        valued('s', Sub(&["size", "log"])),
        valued('L', Word),
    ],
    names_files: &[
        "logdev",
        "rtdev",
        "name",
        "file",
        "-p",
        "-c",
        "protofile",
        "options",
    ],
};

const EXT: Mkfs = Mkfs {
    opts: &[
        flag('F'),
        flag('q'),
        flag('v'),
        flag('j'),
        flag('K'),
        flag('n'),
        flag('D'),
        valued('b', Word),
        valued('C', Word),
        valued('e', Word),
        valued(
            'E',
            Sub(&[
                "stride",
                "stripe_width",
                "stripe-width",
                "offset",
                "resize",
                "lazy_itable_init",
                "lazy_journal_init",
                "assume_storage_prezeroed",
                "num_backup_sb",
                "packed_meta_blocks",
                "root_owner",
                "test_fs",
                "discard",
                "nodiscard",
                "quotatype",
                "encoding",
                "encoding_flags",
                "orphan_file_size",
                "hash_seed",
                "no_copy_xattrs",
            ]),
        ),
        valued('g', Word),
        valued('G', Word),
        valued('i', Word),
        valued('I', Word),
        valued('J', Sub(&["size", "fast_commit_size", "location"])),
        valued('L', Word),
        valued('m', Word),
        valued('N', Word),
        valued('o', Word),
        valued('O', FeaturesExcept(&["journal_dev"])),
        valued('r', Word),
        valued('t', Word),
        valued('T', Word),
        valued('U', Word),
    ],
    names_files: &[
        "device",
        "journal_dev",
        "-d",
        "-l",
        "-z",
        "-M",
        "android_sparse",
        "root_dir",
    ],
};

const PROFILE: Value = Word;

const BTRFS: Mkfs = Mkfs {
    opts: &[
        both('f', "force", None),
        both('q', "quiet", None),
        both('v', "verbose", None),
        both('M', "mixed", None),
        both('K', "nodiscard", None),
        both('b', "byte-count", Some(Word)),
        long("csum", Some(Word)),
        long("checksum", Some(Word)),
        both('d', "data", Some(PROFILE)),
        both('m', "metadata", Some(PROFILE)),
        both('n', "nodesize", Some(Word)),
        both('s', "sectorsize", Some(Word)),
        both('L', "label", Some(Word)),
        both('O', "features", Some(FeaturesExcept(&[]))),
        both('R', "runtime-features", Some(FeaturesExcept(&[]))),
        both('U', "uuid", Some(Word)),
        long("device-uuid", Some(Word)),
    ],
    names_files: &[
        "-r",
        "--rootdir",
        "--shrink",
        "--subvol",
        "--inode-flags",
        "--reflink",
        "--compress",
    ],
};

fn mkfs_of(fs: &str) -> Option<&'static Mkfs> {
    match fs {
        "xfs" => Some(&XFS),
        "ext2" | "ext3" | "ext4" => Some(&EXT),
        "btrfs" => Some(&BTRFS),
        _ => None,
    }
}

/// Is `s` one word a value may be: letters, digits and `_.:+-`, never a path?
fn is_word(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_.:+-".contains(&b))
}

/// Why `value` of option `shown` is refused, if it is.
fn check_value(fs: &str, shown: &str, v: Value, value: &str, m: &Mkfs) -> Result<(), String> {
    let names_file = |what: &str| {
        format!(
            "mkfs.{fs} option '{shown} {value}': '{what}' names a device or file, and fsbench gives mkfs only the devices it built"
        )
    };
    // A sub-option that names a device or file is named as such, whatever its value.
    if let Sub(_) = v {
        let keys = value
            .split(',')
            .map(|p| p.split_once('=').map_or(p, |(k, _)| k));
        if let Some(k) = keys.into_iter().find(|k| m.names_files.contains(k)) {
            return Err(names_file(k));
        }
    }
    if value.contains('/') {
        return Err(format!(
            "mkfs.{fs} option '{shown} {value}' holds a path: fsbench gives mkfs only the devices it built"
        ));
    }
    match v {
        Word => {
            if !is_word(value) {
                return Err(format!(
                    "mkfs.{fs} option '{shown} {value}': expected one word (letters, digits, _.:+-)"
                ));
            }
        }
        Sub(keys) => {
            for part in value.split(',') {
                let (k, val) = match part.split_once('=') {
                    Some((k, val)) => (k, Some(val)),
                    None => (part, None),
                };
                if m.names_files.contains(&k) {
                    return Err(names_file(k));
                }
                if !keys.contains(&k) {
                    return Err(format!(
                        "mkfs.{fs} option '{shown} {value}': sub-option '{k}' is not one fsbench passes on (accepted: {})",
                        keys.join(", ")
                    ));
                }
                if let Some(val) = val.filter(|val| !is_word(val)) {
                    return Err(format!(
                        "mkfs.{fs} option '{shown} {value}': bad value '{val}' of '{k}'"
                    ));
                }
                // An external log (internal=0) needs logdev, which fsbench never passes.
                if fs == "xfs"
                    && shown == "-l"
                    && k == "internal"
                    && !matches!(val, None | Some("1"))
                {
                    return Err(format!(
                        "mkfs.xfs option '-l {value}': an external log names another device; fsbench builds XFS with an internal log"
                    ));
                }
            }
        }
        FeaturesExcept(bad) => {
            for f in value.split(',') {
                let name = f.strip_prefix('^').unwrap_or(f);
                let name = name.split_once('=').map_or(name, |(n, _)| n);
                if bad.contains(&name) || m.names_files.contains(&name) {
                    return Err(names_file(name));
                }
                if !is_word(f.trim_start_matches('^').replace('=', "").as_str()) {
                    return Err(format!(
                        "mkfs.{fs} option '{shown} {value}': bad feature '{f}'"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Check the mkfs options of a spec for file system `fs`: every option must be one fsbench
/// passes on, with a value of the accepted shape; no positional argument (the device is
/// fsbench's, and always last). Err: one line naming the option and why.
pub(crate) fn check_mkfs(fs: &str, opts: &[String]) -> Result<(), String> {
    if opts.is_empty() {
        return Ok(());
    }
    let Some(m) = mkfs_of(fs) else {
        return Err(format!(
            "fsbench passes mkfs options only to mkfs.ext2/ext3/ext4, mkfs.xfs and mkfs.btrfs, whose options it knows; give {fs} without them"
        ));
    };
    let mut i = 0;
    while i < opts.len() {
        let tok = opts[i].as_str();
        i += 1;
        if let Some(name) = tok.strip_prefix("--") {
            if name.is_empty() {
                return Err(format!(
                    "mkfs.{fs} option '--' would make what follows a device: fsbench names the device itself"
                ));
            }
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (name, None),
            };
            let shown = format!("--{name}");
            if m.names_files.contains(&shown.as_str()) {
                return Err(format!(
                    "mkfs.{fs} option '{shown}' names a device or file, and fsbench gives mkfs only the devices it built"
                ));
            }
            let Some(o) = m.opts.iter().find(|o| o.long == Some(name)) else {
                return Err(unknown(fs, &shown, m));
            };
            match (o.value, inline) {
                (None, None) => {}
                (None, Some(_)) => {
                    return Err(format!("mkfs.{fs} option '{shown}' takes no value"))
                }
                (Some(v), Some(val)) => check_value(fs, &shown, v, val, m)?,
                (Some(v), None) => {
                    let val = opts.get(i).ok_or_else(|| missing(fs, &shown))?;
                    i += 1;
                    check_value(fs, &shown, v, val, m)?;
                }
            }
            continue;
        }
        let Some(letters) = tok.strip_prefix('-').filter(|l| !l.is_empty()) else {
            return Err(format!(
                "mkfs.{fs} argument '{tok}' is not an option: it would name a device or file, and fsbench gives mkfs only the devices it built (always last)"
            ));
        };
        // getopt: flags may be grouped (-fq); an option with a value takes the rest of the
        // word (-dsu=64k) or the next word.
        for (at, c) in letters.char_indices() {
            let shown = format!("-{c}");
            if m.names_files.contains(&shown.as_str()) {
                return Err(format!(
                    "mkfs.{fs} option '{shown}' names a device or file, and fsbench gives mkfs only the devices it built"
                ));
            }
            let Some(o) = m.opts.iter().find(|o| o.short == Some(c)) else {
                return Err(unknown(fs, &shown, m));
            };
            let Some(v) = o.value else { continue };
            let rest = &letters[at + c.len_utf8()..];
            if rest.is_empty() {
                let val = opts.get(i).ok_or_else(|| missing(fs, &shown))?;
                i += 1;
                check_value(fs, &shown, v, val, m)?;
            } else {
                check_value(fs, &shown, v, rest, m)?;
            }
            break;
        }
    }
    Ok(())
}

fn missing(fs: &str, shown: &str) -> String {
    format!("mkfs.{fs} option '{shown}' needs a value")
}

fn unknown(fs: &str, shown: &str, m: &Mkfs) -> String {
    let mut known: Vec<String> = m
        .opts
        .iter()
        .map(|o| match (o.short, o.long) {
            (Some(c), _) => format!("-{c}"),
            (None, Some(l)) => format!("--{l}"),
            (None, None) => String::new(),
        })
        .collect();
    known.dedup();
    format!(
        "mkfs.{fs} option '{shown}' is not one fsbench passes on (accepted: {})",
        known.join(" ")
    )
}

/// Mount options every file system takes (the VFS's own flags).
const MOUNT_COMMON: &[&str] = &[
    "defaults",
    "ro",
    "rw",
    "atime",
    "noatime",
    "relatime",
    "norelatime",
    "strictatime",
    "nostrictatime",
    "lazytime",
    "nolazytime",
    "diratime",
    "nodiratime",
    "sync",
    "async",
    "dirsync",
    "suid",
    "nosuid",
    "dev",
    "nodev",
    "exec",
    "noexec",
    "iversion",
    "noiversion",
    "mand",
    "nomand",
];

const MOUNT_EXT: &[&str] = &[
    "barrier",
    "nobarrier",
    "commit",
    "data",
    "data_err",
    "journal_checksum",
    "nojournal_checksum",
    "journal_async_commit",
    "journal_ioprio",
    "noload",
    "norecovery",
    "discard",
    "nodiscard",
    "delalloc",
    "nodelalloc",
    "max_batch_time",
    "min_batch_time",
    "stripe",
    "auto_da_alloc",
    "noauto_da_alloc",
    "init_itable",
    "noinit_itable",
    "dioread_lock",
    "dioread_nolock",
    "dax",
    "errors",
    "user_xattr",
    "nouser_xattr",
    "acl",
    "noacl",
    "bsddf",
    "minixdf",
    "grpid",
    "bsdgroups",
    "nogrpid",
    "sysvgroups",
    "resgid",
    "resuid",
    "sb",
    "i_version",
    "inode_readahead_blks",
    "block_validity",
    "noblock_validity",
    "debug",
    "quota",
    "noquota",
    "usrquota",
    "grpquota",
    "prjquota",
    "nombcache",
    "no_mbcache",
    "prefetch_block_bitmaps",
    "no_prefetch_block_bitmaps",
    "mb_optimize_scan",
    "nouid32",
    "oldalloc",
    "orlov",
];

const MOUNT_XFS: &[&str] = &[
    "allocsize",
    "attr2",
    "noattr2",
    "dax",
    "discard",
    "nodiscard",
    "grpid",
    "bsdgroups",
    "nogrpid",
    "sysvgroups",
    "filestreams",
    "ikeep",
    "noikeep",
    "inode32",
    "inode64",
    "largeio",
    "nolargeio",
    "logbufs",
    "logbsize",
    "noalign",
    "norecovery",
    "nouuid",
    "noquota",
    "uquota",
    "usrquota",
    "uqnoenforce",
    "quota",
    "pquota",
    "prjquota",
    "pqnoenforce",
    "gquota",
    "grpquota",
    "gqnoenforce",
    "sunit",
    "swidth",
    "swalloc",
    "wsync",
    "lifetime",
    "nolifetime",
    "max_atomic_write",
];

const MOUNT_BTRFS: &[&str] = &[
    "acl",
    "noacl",
    "autodefrag",
    "noautodefrag",
    "barrier",
    "nobarrier",
    "clear_cache",
    "commit",
    "compress",
    "compress-force",
    "datacow",
    "nodatacow",
    "datasum",
    "nodatasum",
    "discard",
    "nodiscard",
    "enospc_debug",
    "noenospc_debug",
    "fatal_errors",
    "flushoncommit",
    "noflushoncommit",
    "max_inline",
    "metadata_ratio",
    "rescan_uuid_tree",
    "skip_balance",
    "space_cache",
    "nospace_cache",
    "ssd",
    "ssd_spread",
    "nossd",
    "nossd_spread",
    "subvolid",
    "thread_pool",
    "treelog",
    "notreelog",
    "user_subvol_rm_allowed",
];

/// Mount options that name a device or file (refused with that reason).
const MOUNT_NAMES_FILES: &[&str] = &[
    "logdev",
    "rtdev",
    "device",
    "journal_path",
    "journal_dev",
    "usrjquota",
    "grpjquota",
    "loop",
    "subvol",
    "helper",
    "uhelper",
];

/// Check a spec's mount options (`a,b=c,...`) for file system `fs`: each key must be a
/// VFS flag or one of that file system's options fsbench knows, with a one-word value (no
/// path). `mount(8)`'s own `x-`/`X-` options (which create directories and read files),
/// `loop=`, `bind` and `remount` are not on the list.
pub(crate) fn check_mount(fs: &str, opts: &str) -> Result<(), String> {
    let own: &[&str] = match fs {
        "ext2" | "ext3" | "ext4" => MOUNT_EXT,
        "xfs" => MOUNT_XFS,
        "btrfs" => MOUNT_BTRFS,
        _ => &[],
    };
    for part in opts.split(',') {
        let (k, v) = match part.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (part, None),
        };
        if MOUNT_NAMES_FILES.contains(&k) || v.is_some_and(|v| v.contains('/')) {
            return Err(format!(
                "mount option '{part}' names a device or file, and fsbench mounts only the device it built"
            ));
        }
        if !MOUNT_COMMON.contains(&k) && !own.contains(&k) {
            return Err(format!(
                "mount option '{k}' is not one fsbench passes on for {fs} (accepted: the VFS flags such as noatime, lazytime, and {fs}'s own options that take no path)"
            ));
        }
        if let Some(v) = v.filter(|v| !is_word(v)) {
            return Err(format!("mount option '{part}': bad value '{v}'"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn ordinary_mkfs_options_are_accepted() {
        for (fs, o) in [
            ("xfs", "-f -m crc=1"),
            ("xfs", "-f -d su=64k,sw=4 -l size=64m,internal"),
            ("xfs", "-fq -dsu=64k,sw=2 -L bench -i sparse=1 -n ftype=1"),
            ("xfs", "-l internal=1,lazy-count=1"),
            ("ext4", "-E lazy_itable_init=0"),
            (
                "ext4",
                "-F -E stride=16,stripe_width=64 -b 4096 -O ^has_journal",
            ),
            ("ext4", "-J size=64 -O metadata_csum,64bit -I 256 -T news"),
            ("ext2", "-q"),
            ("btrfs", "-f -m single"),
            (
                "btrfs",
                "-f --data raid0 --metadata=dup --csum xxhash -O no-holes",
            ),
            ("btrfs", "-n 16k -s 4096 -L x"),
        ] {
            assert_eq!(check_mkfs(fs, &words(o)), Ok(()), "{fs}:{o}");
        }
    }

    #[test]
    fn options_naming_devices_or_files_are_refused() {
        for (fs, o, why) in [
            (
                "xfs",
                "-f -l logdev=/dev/loop1,size=64m",
                "names a device or file",
            ),
            (
                "xfs",
                "-f -l logdev=loop1",
                "'logdev' names a device or file",
            ),
            ("xfs", "-l internal=0", "external log"),
            ("xfs", "-r rtdev=/dev/loop2", "'rtdev' names"),
            ("xfs", "-r rtdev=x", "'rtdev' names"),
            ("xfs", "-d file,name=data.img", "'file' names"),
            ("xfs", "-d name=data.img", "'name' names"),
            ("xfs", "-p proto.txt", "'-p' names a device or file"),
            ("xfs", "-c options=conf", "'-c' names"),
            ("xfs", "-fp proto", "'-p' names"),
            ("xfs", "-f rel.img", "is not an option"),
            ("xfs", "-f -- -x", "'--'"),
            ("ext4", "-J device=/dev/loop1", "'device' names"),
            ("xfs", "-L a/b", "holds a path"),
            ("ext4", "-J device=UUID=x", "'device' names"),
            ("ext4", "-O journal_dev", "'journal_dev' names"),
            (
                "ext4",
                "-F -O ^has_journal,journal_dev",
                "'journal_dev' names",
            ),
            ("ext4", "-d rootdir", "'-d' names"),
            ("ext4", "-z undo.e2undo", "'-z' names"),
            ("ext4", "-l badblocks.txt", "'-l' names"),
            ("ext4", "-E android_sparse", "'android_sparse' names"),
            ("ext4", "-F 100M", "is not an option"),
            ("btrfs", "-f rel.img", "is not an option"),
            ("btrfs", "-f --rootdir dir", "'--rootdir' names"),
            ("btrfs", "-r dir", "'-r' names"),
            ("btrfs", "--rootdir=dir", "'--rootdir' names"),
            ("btrfs", "-f /dev/loop5", "is not an option"),
            ("btrfs", "-m", "needs a value"),
            ("btrfs", "--nosuch", "not one fsbench passes on"),
            ("minix", "-n 30", "only to mkfs.ext2"),
        ] {
            let e = check_mkfs(fs, &words(o)).expect_err(o);
            assert!(e.contains(why), "{fs}:{o}: {e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn mount_options_naming_devices_or_files_are_refused() {
        for (fs, o) in [
            ("xfs", "noatime,logbsize=256k"),
            ("ext4", "noatime,data=writeback,commit=30"),
            ("btrfs", "compress=zstd:3,ssd,space_cache=v2"),
        ] {
            assert_eq!(check_mount(fs, o), Ok(()), "{o}");
        }
        for (fs, o, why) in [
            ("xfs", "logdev=/dev/loop1", "names a device or file"),
            ("xfs", "rtdev=loop2", "names a device or file"),
            (
                "btrfs",
                "noatime,device=/dev/loop1",
                "names a device or file",
            ),
            ("ext4", "journal_path=/dev/loop1", "names a device or file"),
            ("ext4", "journal_dev=1793", "names a device or file"),
            ("ext4", "usrjquota=aquota.user", "names a device or file"),
            ("ext4", "x-mount.mkdir", "not one fsbench passes on"),
            ("ext4", "loop=/dev/loop3", "names a device or file"),
            ("xfs", "bind", "not one fsbench passes on"),
            ("xfs", "commit=5", "not one fsbench passes on for xfs"),
        ] {
            let e = check_mount(fs, o).expect_err(o);
            assert!(e.contains(why), "{fs};{o}: {e}");
        }
    }
}
