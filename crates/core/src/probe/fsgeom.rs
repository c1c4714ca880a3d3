//! A file system's own geometry: its block size and the stripe it was told about at mkfs or
//! mount time (XFS sunit/swidth, ext4 RAID stride/stripe-width, btrfs sectorsize).
//!
//! Sources, in order: XFS mount options (`sunit=`/`swidth=` in 512-byte units, always present
//! when set) and `xfs_info` for the block size; the ext4 superblock read directly from the
//! device (root), else `dumpe2fs -h`; `/sys/fs/btrfs/<uuid>/sectorsize`.

use serde::{Deserialize, Serialize};
use std::path::Path;

#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct FsGeometry {
    pub fs_type: String,
    pub block_size_bytes: Option<u64>,
    /// XFS sunit / ext4 stride, in bytes.
    pub stripe_unit_bytes: Option<u64>,
    /// XFS swidth / ext4 stripe-width, in bytes.
    pub stripe_width_bytes: Option<u64>,
    /// Where the numbers came from.
    pub source: String,
}

/// Parse `xfs_info` output: `bsize=` of the data section, `sunit=`/`swidth=` in fs blocks.
pub fn parse_xfs_info(text: &str) -> Option<FsGeometry> {
    let mut in_data = false;
    let mut bsize = None;
    let mut sunit = None;
    let mut swidth = None;
    for line in text.lines() {
        let section = line.split('=').next().unwrap_or("").trim();
        if !section.is_empty() {
            in_data = section == "data";
        }
        if !in_data {
            continue;
        }
        for tok in line.split(|c: char| c.is_whitespace() || c == ',') {
            let Some((k, v)) = tok.split_once('=') else {
                continue;
            };
            let v: Option<u64> = v.parse().ok();
            match k {
                "bsize" => bsize = v,
                "sunit" => sunit = v,
                "swidth" => swidth = v,
                _ => {}
            }
        }
    }
    let bsize = bsize?;
    let nz = |v: Option<u64>| v.filter(|&x| x > 0).map(|x| x.saturating_mul(bsize));
    Some(FsGeometry {
        fs_type: "xfs".into(),
        block_size_bytes: Some(bsize),
        stripe_unit_bytes: nz(sunit),
        stripe_width_bytes: nz(swidth),
        source: "xfs_info".into(),
    })
}

/// XFS `sunit=`/`swidth=` mount options (512-byte units) -> bytes.
pub fn xfs_stripe_from_mount_options(opts: &str) -> Option<(u64, u64)> {
    let get = |key: &str| {
        opts.split(',')
            .find_map(|o| o.strip_prefix(key)?.strip_prefix('=')?.parse::<u64>().ok())
    };
    let su = get("sunit")?;
    let sw = get("swidth")?;
    (su > 0).then_some((su.saturating_mul(512), sw.saturating_mul(512)))
}

/// Parse the ext4 superblock (the 1024 bytes at offset 1024 of the device).
/// Offsets verified against `mkfs.ext4 -E stride=16,stripe_width=80` + `dumpe2fs -h`.
pub fn parse_ext4_superblock(sb: &[u8]) -> Option<FsGeometry> {
    const MAGIC: u16 = 0xEF53;
    if sb.len() < 0x174 {
        return None;
    }
    let u16_at = |o: usize| u16::from_le_bytes([sb[o], sb[o + 1]]);
    let u32_at = |o: usize| u32::from_le_bytes([sb[o], sb[o + 1], sb[o + 2], sb[o + 3]]);
    if u16_at(0x38) != MAGIC {
        return None;
    }
    let log = u32_at(0x18);
    if log > 6 {
        return None;
    }
    let bs = 1024u64 << log;
    let stride = u16_at(0x164) as u64;
    let width = u32_at(0x170) as u64;
    Some(FsGeometry {
        fs_type: "ext4".into(),
        block_size_bytes: Some(bs),
        stripe_unit_bytes: (stride > 0).then_some(stride * bs),
        stripe_width_bytes: (width > 0).then_some(width * bs),
        source: "ext4 superblock".into(),
    })
}

/// Parse `dumpe2fs -h` / `tune2fs -l` output.
pub fn parse_dumpe2fs(text: &str) -> Option<FsGeometry> {
    let field = |name: &str| {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == name).then(|| v.trim().parse::<u64>().ok())?
        })
    };
    let bs = field("Block size")?;
    Some(FsGeometry {
        fs_type: "ext4".into(),
        block_size_bytes: Some(bs),
        stripe_unit_bytes: field("RAID stride").filter(|&v| v > 0).map(|v| v * bs),
        stripe_width_bytes: field("RAID stripe width")
            .filter(|&v| v > 0)
            .map(|v| v * bs),
        source: "dumpe2fs -h".into(),
    })
}

fn run_tool(tool: &str, arg: &str) -> Option<String> {
    let out = std::process::Command::new(tool)
        .args(if tool == "dumpe2fs" {
            &["-h"][..]
        } else {
            &[][..]
        })
        .arg(arg)
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).to_string())
}

/// Geometry of the file system mounted at `mount_point` from `source` (e.g. `/dev/sda1`).
pub fn probe(fs_type: &str, mount_point: &str, source: &str, options: &str) -> Option<FsGeometry> {
    match fs_type {
        "xfs" => {
            let mut g = run_tool("xfs_info", mount_point)
                .and_then(|t| parse_xfs_info(&t))
                .unwrap_or(FsGeometry {
                    fs_type: "xfs".into(),
                    source: "mount options".into(),
                    ..Default::default()
                });
            if g.stripe_unit_bytes.is_none() {
                if let Some((su, sw)) = xfs_stripe_from_mount_options(options) {
                    g.stripe_unit_bytes = Some(su);
                    g.stripe_width_bytes = Some(sw);
                    g.source = format!("{} + mount options", g.source);
                }
            }
            Some(g)
        }
        "ext2" | "ext3" | "ext4" => {
            let mut sb = vec![0u8; 1024];
            let direct = std::fs::File::open(source).ok().and_then(|f| {
                use std::os::unix::fs::FileExt;
                f.read_exact_at(&mut sb, 1024).ok()?;
                parse_ext4_superblock(&sb)
            });
            let mut g =
                direct.or_else(|| run_tool("dumpe2fs", source).and_then(|t| parse_dumpe2fs(&t)))?;
            g.fs_type = fs_type.to_string();
            Some(g)
        }
        "btrfs" => {
            let name = Path::new(source).file_name()?.to_string_lossy().to_string();
            let rd = std::fs::read_dir("/sys/fs/btrfs").ok()?;
            for e in rd.flatten() {
                if e.path().join("devices").join(&name).exists() {
                    let ss = std::fs::read_to_string(e.path().join("sectorsize"))
                        .ok()
                        .and_then(|s| s.trim().parse().ok());
                    return Some(FsGeometry {
                        fs_type: "btrfs".into(),
                        block_size_bytes: ss,
                        source: format!(
                            "/sys/fs/btrfs/{}/sectorsize",
                            e.file_name().to_string_lossy()
                        ),
                        ..Default::default()
                    });
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const XFS_INFO: &str =
        "meta-data=/dev/loop0             isize=512    agcount=8, agsize=19184 blks
         =                       sectsz=512   attr=2, projid32bit=1
         =                       crc=1        finobt=1, sparse=1, rmapbt=0
         =                       reflink=1    bigtime=1 inobtcount=1 nrext64=0
data     =                       bsize=4096   blocks=153472, imaxpct=25
         =                       sunit=16     swidth=80 blks
naming   =version 2              bsize=4096   ascii-ci=0, ftype=1
log      =internal log           bsize=4096   blocks=16384, version=2
         =                       sectsz=512   sunit=16 blks, lazy-count=1
realtime =none                   extsz=4096   blocks=0, rtextents=0
";

    #[test]
    fn xfs_info_recorded_from_mkfs_su64k_sw5() {
        let g = parse_xfs_info(XFS_INFO).unwrap();
        assert_eq!(g.block_size_bytes, Some(4096));
        assert_eq!(g.stripe_unit_bytes, Some(65536));
        assert_eq!(g.stripe_width_bytes, Some(327680));
        // The log section's sunit must not leak into the data geometry.
        let no_stripe = XFS_INFO.replace("sunit=16     swidth=80", "sunit=0      swidth=0");
        assert_eq!(parse_xfs_info(&no_stripe).unwrap().stripe_unit_bytes, None);
    }

    #[test]
    fn xfs_mount_options() {
        let o = "rw,relatime,inode64,logbufs=8,logbsize=64k,sunit=128,swidth=640,noquota";
        assert_eq!(xfs_stripe_from_mount_options(o), Some((65536, 327680)));
        assert_eq!(xfs_stripe_from_mount_options("rw,relatime"), None);
    }

    #[test]
    fn ext4_superblock_and_dumpe2fs_agree() {
        let mut sb = vec![0u8; 1024];
        sb[0x38..0x3a].copy_from_slice(&0xEF53u16.to_le_bytes());
        sb[0x18..0x1c].copy_from_slice(&2u32.to_le_bytes()); // 4096
        sb[0x164..0x166].copy_from_slice(&16u16.to_le_bytes());
        sb[0x170..0x174].copy_from_slice(&80u32.to_le_bytes());
        let a = parse_ext4_superblock(&sb).unwrap();
        let b = parse_dumpe2fs("Block size:               4096\nRAID stride:              16\nRAID stripe width:        80\n").unwrap();
        assert_eq!(a.stripe_unit_bytes, Some(65536));
        assert_eq!(a.stripe_width_bytes, Some(327680));
        assert_eq!(a.stripe_unit_bytes, b.stripe_unit_bytes);
        assert_eq!(a.stripe_width_bytes, b.stripe_width_bytes);
        sb[0x38] = 0;
        assert!(parse_ext4_superblock(&sb).is_none());
    }

    proptest! {
        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..1200), text in ".{0,400}") {
            let _ = parse_ext4_superblock(&bytes);
            let _ = parse_xfs_info(&text);
            let _ = parse_dumpe2fs(&text);
            let _ = xfs_stripe_from_mount_options(&text);
        }
    }
}
