//! What `fscompare` builds: file-system specs `FS[:MKFS OPTIONS][;MOUNT OPTIONS]` and volume
//! layouts `single`, `stripe:NxUNIT`, `concat:N`. Parsing only; every refusal is one line
//! naming what is accepted.

use crate::error::UsageError;
use crate::usage;

/// One file system to build: `mkfs.FS MKFS_OPTS... DEVICES` then `mount [-o MOUNT_OPTS]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FsSpec {
    pub fs: String,
    pub mkfs_opts: Vec<String>,
    pub mount_opts: Option<String>,
    /// The spec as the user wrote it (trimmed): the target's label in results and reports.
    pub text: String,
}

const FS_FORM: &str = "expected FS[:MKFS OPTIONS][;MOUNT OPTIONS], e.g. ext4, 'xfs:-d su=64k,sw=4', 'ext4:-E stride=16;noatime' (FS: letters and digits naming a mkfs.FS on PATH; plain names may be comma-separated)";

/// Parse one `--fs` value: plain names separated by commas (`ext4,xfs,btrfs`), or one full
/// spec (a value with `:` or `;` is one spec, since mkfs options hold commas).
pub(crate) fn parse_fs_arg(arg: &str) -> Result<Vec<FsSpec>, UsageError> {
    let shown: String = arg
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let bad = |why: &str| usage!("bad --fs '{shown}': {why}; {FS_FORM}");
    if arg.chars().any(char::is_control) {
        return Err(bad("control characters"));
    }
    if arg.contains(':') || arg.contains(';') {
        return Ok(vec![parse_one(arg.trim()).map_err(|w| bad(&w))?]);
    }
    let mut out = Vec::new();
    for part in arg.split(',') {
        out.push(parse_one(part.trim()).map_err(|w| bad(&w))?);
    }
    Ok(out)
}

fn parse_one(s: &str) -> Result<FsSpec, String> {
    let (head, mount) = match s.split_once(';') {
        Some((h, m)) => (h, Some(m.trim())),
        None => (s, None),
    };
    let (fs, mkfs) = match head.split_once(':') {
        Some((f, o)) => (f.trim(), o.trim()),
        None => (head.trim(), ""),
    };
    if fs.is_empty() {
        return Err("no file-system name".into());
    }
    if !fs
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        || fs.len() > 16
    {
        return Err(format!("'{fs}' is not a file-system name"));
    }
    let mount_opts = match mount {
        None | Some("") => None,
        Some(m) if m.contains(char::is_whitespace) || m.contains(';') => {
            return Err(format!(
                "mount options '{m}' must be one comma-separated list without spaces"
            ))
        }
        Some(m) => Some(m.to_string()),
    };
    let mkfs_opts: Vec<String> = mkfs.split_whitespace().map(str::to_string).collect();
    // The devices are fsbench's to name, and always last: options that name another device
    // or file, and positional arguments, are refused before anything is created.
    super::options::check_mkfs(fs, &mkfs_opts)?;
    if let Some(m) = &mount_opts {
        super::options::check_mount(fs, m)?;
    }
    Ok(FsSpec {
        fs: fs.to_string(),
        mkfs_opts,
        mount_opts,
        text: s.to_string(),
    })
}

/// How the scratch devices of one target are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Layout {
    Single,
    /// N devices striped in units of `unit` bytes.
    Stripe {
        n: u32,
        unit: u64,
    },
    /// N devices one after another.
    Concat {
        n: u32,
    },
}

/// Most devices one layout may span.
pub(crate) const MAX_DEVICES: u32 = 16;

const LAYOUT_FORM: &str = "expected single, stripe:NxUNIT (e.g. stripe:4x64k) or concat:N, comma-separated, with N from 2 to 16 and UNIT a power of two from 4k to 16m";

impl Layout {
    /// Devices the layout needs.
    pub(crate) fn devices(&self) -> u32 {
        match *self {
            Layout::Single => 1,
            Layout::Stripe { n, .. } | Layout::Concat { n } => n,
        }
    }

    /// `single`, `stripe:4x64k`, `concat:2`.
    pub(crate) fn label(&self) -> String {
        match *self {
            Layout::Single => "single".into(),
            Layout::Stripe { n, unit } => {
                format!("stripe:{n}x{}", crate::units::format_size_exact(unit))
            }
            Layout::Concat { n } => format!("concat:{n}"),
        }
    }
}

/// Parse one `--layout` value (a comma-separated list).
pub(crate) fn parse_layouts(arg: &str) -> Result<Vec<Layout>, UsageError> {
    let shown: String = arg
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    let bad = |why: String| usage!("bad --layout '{shown}': {why}; {LAYOUT_FORM}");
    let mut out = Vec::new();
    for part in arg.split(',') {
        let p = part.trim();
        let count = |n: &str| -> Result<u32, String> {
            match n.parse::<u32>() {
                Ok(n) if (2..=MAX_DEVICES).contains(&n) => Ok(n),
                _ => Err(format!("'{p}' has device count '{n}'")),
            }
        };
        let l = if p == "single" {
            Layout::Single
        } else if let Some(rest) = p.strip_prefix("stripe:") {
            let (n, unit) = rest
                .split_once('x')
                .ok_or_else(|| bad(format!("'{p}' has no NxUNIT")))?;
            let n = count(n).map_err(bad)?;
            let unit = crate::units::parse_size(unit)
                .ok()
                .filter(|u| u.is_power_of_two() && (4096..=16 << 20).contains(u))
                .ok_or_else(|| bad(format!("'{p}' has stripe unit '{unit}'")))?;
            Layout::Stripe { n, unit }
        } else if let Some(n) = p.strip_prefix("concat:") {
            Layout::Concat {
                n: count(n).map_err(bad)?,
            }
        } else {
            return Err(bad(format!("unknown layout '{p}'")));
        };
        if !out.contains(&l) {
            out.push(l);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_split_into_name_mkfs_and_mount_options() {
        let v = parse_fs_arg("ext4,xfs, btrfs").unwrap();
        let names: Vec<&str> = v.iter().map(|s| s.fs.as_str()).collect();
        assert_eq!(names, ["ext4", "xfs", "btrfs"]);
        let x = &parse_fs_arg("xfs:-d su=64k,sw=4").unwrap()[0];
        assert_eq!(x.fs, "xfs");
        assert_eq!(x.mkfs_opts, ["-d", "su=64k,sw=4"]);
        assert_eq!(x.mount_opts, None);
        assert_eq!(x.text, "xfs:-d su=64k,sw=4");
        let e = &parse_fs_arg("ext4:-E stride=16,stripe_width=64;noatime").unwrap()[0];
        assert_eq!(e.mkfs_opts, ["-E", "stride=16,stripe_width=64"]);
        assert_eq!(e.mount_opts.as_deref(), Some("noatime"));
        let m = &parse_fs_arg("xfs;noatime,nodiratime").unwrap()[0];
        assert!(m.mkfs_opts.is_empty());
        assert_eq!(m.mount_opts.as_deref(), Some("noatime,nodiratime"));
        for bad in [
            "",
            ",",
            "ext4,,xfs",
            "EXT4",
            "ext 4",
            ":-f",
            "xfs;no atime",
            "xfs;a;b",
            "xfs:-f /dev/sda",
            "../x",
            "ext4\n",
        ] {
            let e = parse_fs_arg(bad).unwrap_err();
            assert!(e.0.contains("expected FS[:MKFS OPTIONS]"), "{bad}: {}", e.0);
            assert!(!e.0.contains('\n'), "{bad}");
        }
    }

    #[test]
    fn specs_naming_other_devices_or_files_are_refused() {
        for (bad, why) in [
            (
                "xfs:-f -l logdev=/dev/loop1,size=64m",
                "'logdev' names a device or file",
            ),
            ("btrfs:-f rel.img", "'rel.img' is not an option"),
            (
                "btrfs:-f;device=/dev/loop1",
                "mount option 'device=/dev/loop1' names",
            ),
            ("ext4:-J device=/dev/sdb", "'device' names a device or file"),
            (
                "xfs;logdev=/dev/loop1",
                "mount option 'logdev=/dev/loop1' names",
            ),
        ] {
            let e = parse_fs_arg(bad).unwrap_err();
            assert!(e.0.contains(why), "{bad}: {}", e.0);
            assert!(e.0.contains("expected FS[:MKFS OPTIONS]"), "{bad}: {}", e.0);
        }
        for good in [
            "xfs:-f -m crc=1",
            "ext4:-E lazy_itable_init=0",
            "btrfs:-f -m single",
        ] {
            assert!(parse_fs_arg(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn layouts_parse_and_refuse() {
        assert_eq!(
            parse_layouts("single,stripe:4x64k,concat:2").unwrap(),
            [
                Layout::Single,
                Layout::Stripe { n: 4, unit: 65536 },
                Layout::Concat { n: 2 }
            ]
        );
        assert_eq!(
            parse_layouts("stripe:2x1m").unwrap()[0].label(),
            "stripe:2x1m"
        );
        for bad in [
            "",
            "raid5",
            "stripe:4",
            "stripe:1x64k",
            "stripe:4x3k",
            "stripe:4x1k",
            "stripe:99x64k",
            "concat:1",
            "concat:x",
            "single,",
        ] {
            let e = parse_layouts(bad).unwrap_err();
            assert!(
                e.0.contains("expected single, stripe:NxUNIT"),
                "{bad}: {}",
                e.0
            );
        }
    }

    proptest::proptest! {
        // Any text is a spec or one line naming the accepted form; a spec keeps its name and
        // options, and never a device path among them.
        #[test]
        fn fs_spec_parsing_never_panics(s in "[a-z0-9:;,=/ \\-\n]{0,40}") {
            match parse_fs_arg(&s) {
                Ok(v) => for f in v {
                    proptest::prop_assert!(!f.fs.is_empty());
                    proptest::prop_assert!(f.mkfs_opts.iter().all(|o| !o.starts_with('/')));
                },
                Err(e) => proptest::prop_assert!(!e.0.contains('\n') && e.0.contains("expected")),
            }
        }

        #[test]
        fn layout_parsing_never_panics(s in "[a-z0-9:x,]{0,30}") {
            match parse_layouts(&s) {
                Ok(v) => for l in v {
                    proptest::prop_assert!((1..=MAX_DEVICES).contains(&l.devices()));
                    proptest::prop_assert_eq!(parse_layouts(&l.label()).unwrap(), vec![l]);
                },
                Err(e) => proptest::prop_assert!(e.0.contains("expected single")),
            }
        }
    }
}
