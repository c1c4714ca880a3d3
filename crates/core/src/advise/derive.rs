//! VxFS-style I/O tunables derived from the volume layout, the way `mount_vxfs` derives them
//! ("Tuning Storage Foundation", 13.1): the preferred I/O size is the stripe unit (64 KiB for a
//! single device), the number of streams is the number of columns (plexes for reads of a
//! mirror), and the maximum dirty queue per file is 16 preferred-size I/Os per write stream.
//!
//! Worked examples from the chapter (tested below): concat -> 65536/1/1 MiB; 5 columns x 1 MiB
//! -> 1 MiB/5/80 MiB; 3-way mirror -> read_nstream 3, max_diskq 1 MiB; stripe-mirror 3 columns x
//! 64 KiB -> nstream 3, max_diskq 3 MiB.

use crate::probe::fsgeom::FsGeometry;
use crate::probe::topology::{BlockDev, DeviceKind};
use serde::{Deserialize, Serialize};

/// VxFS's preferred I/O size for a volume with no stripe (vxtunefs on a concat volume).
pub const DEFAULT_PREF_IO: u64 = 64 * 1024;
/// VxFS's default discovered_direct_iosz.
pub const DEFAULT_DISCOVERED_DIRECT: u64 = crate::job::cache::DEFAULT_DISCOVERED_THRESHOLD;
/// VxFS's default max_direct_iosz.
pub const DEFAULT_MAX_DIRECT: u64 = 1024 * 1024;
/// I/Os of the preferred size granted to each write stream before writes are throttled.
pub const DISKQ_IOS_PER_STREAM: u64 = 16;
/// pref_strength as vxtunefs reports it in the chapter: 10 on a volume with no stripe
/// (concat, mirror), 20 on a striped one (stripe, stripe-mirror).
pub const PREF_STRENGTH_UNSTRIPED: u64 = 10;
pub const PREF_STRENGTH_STRIPED: u64 = 20;

/// The chapter's other `vxtunefs` parameters, which nothing on Linux corresponds to, each
/// with the reason (so the output accounts for all 26).
pub const NOT_APPLICABLE: &[(&str, &str)] = &[
    ("buf_breakup_size", "VxFS splits buffered I/O above this size; the Linux page cache has no such knob"),
    ("default_indir_size", "VxFS indirect extent size; Linux file systems choose their own mapping (extents, B-trees)"),
    ("qio_cache_enable", "Quick I/O caching; Quick I/O is VxFS's (fsbench's concurrent policy imitates it, with no cache to enable)"),
    ("write_throttle", "VxFS per-file dirty-page limit; Linux throttles dirty pages system-wide (vm.dirty_ratio, vm.dirty_bytes)"),
    ("initial_extent_size", "VxFS's first extent of a file; ext4 and XFS allocate delayed, XFS takes an extent size hint per file (fsbench -e)"),
    ("max_seqio_extent_size", "VxFS's largest extent for sequential writes; Linux file systems have no mount tunable for it"),
    ("max_buf_data_size", "VxFS buffered I/O block (8k or 64k); the Linux page cache works in pages"),
    ("hsm_write_prealloc", "VxFS hierarchical storage management; no Linux equivalent"),
    ("read_ahead", "VxFS read-ahead on or off; Linux read-ahead is per device (read_ahead_kb, derived above)"),
    ("inode_aging_size", "VxFS inode aging (undelete support); no Linux equivalent"),
    ("inode_aging_count", "VxFS inode aging; no Linux equivalent"),
    ("fcl_maxalloc", "VxFS File Change Log; Linux has no file change log (fanotify is not a log on disk)"),
    ("fcl_keeptime", "VxFS File Change Log; no Linux equivalent"),
    ("fcl_winterval", "VxFS File Change Log; no Linux equivalent"),
    ("fcl_ointerval", "VxFS File Change Log; no Linux equivalent"),
    ("oltp_load", "VxFS tuning for OLTP loads (Storage Foundation for databases); no Linux equivalent"),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LayoutKind {
    /// One device, or devices concatenated: one stream.
    Concat,
    Stripe,
    Mirror,
    StripeMirror,
    /// RAID 4/5/6: striped over the data columns.
    Parity,
}

/// The volume layout as VxFS would see it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    pub kind: LayoutKind,
    /// Data columns a full stripe spans.
    pub columns: u32,
    /// Copies of each block (plexes).
    pub mirrors: u32,
    pub stripe_unit_bytes: Option<u64>,
    /// A hint of the best I/O size from a device that is not a stripe (e.g. a SAN LUN's
    /// optimal transfer length in `optimal_io_size`).
    pub optimal_io_hint_bytes: Option<u64>,
    /// Where the layout was read from.
    pub source: String,
    /// The device the stripe belongs to (None: told by the file system only).
    pub device: Option<String>,
}

impl Layout {
    pub fn concat(source: impl Into<String>) -> Self {
        Layout {
            kind: LayoutKind::Concat,
            columns: 1,
            mirrors: 1,
            stripe_unit_bytes: None,
            optimal_io_hint_bytes: None,
            source: source.into(),
            device: None,
        }
    }
    pub fn stripe(columns: u32, su: u64, source: impl Into<String>) -> Self {
        Layout {
            kind: LayoutKind::Stripe,
            columns,
            mirrors: 1,
            stripe_unit_bytes: Some(su),
            optimal_io_hint_bytes: None,
            source: source.into(),
            device: None,
        }
    }
    pub fn mirror(mirrors: u32, source: impl Into<String>) -> Self {
        Layout {
            kind: LayoutKind::Mirror,
            columns: 1,
            mirrors,
            stripe_unit_bytes: None,
            optimal_io_hint_bytes: None,
            source: source.into(),
            device: None,
        }
    }
    pub fn stripe_mirror(columns: u32, mirrors: u32, su: u64, source: impl Into<String>) -> Self {
        Layout {
            kind: LayoutKind::StripeMirror,
            columns,
            mirrors,
            stripe_unit_bytes: Some(su),
            optimal_io_hint_bytes: None,
            source: source.into(),
            device: None,
        }
    }
    /// Full stripe width in bytes (stripe unit x columns), when striped.
    pub fn stripe_width_bytes(&self) -> Option<u64> {
        self.stripe_unit_bytes
            .map(|su| su.saturating_mul(self.columns as u64))
    }
    pub fn describe(&self) -> String {
        let su = |v: Option<u64>| v.map(crate::units::format_size_exact).unwrap_or_default();
        match self.kind {
            LayoutKind::Concat => "concat (single device)".into(),
            LayoutKind::Stripe => format!(
                "stripe, {} columns x {} stripe unit",
                self.columns,
                su(self.stripe_unit_bytes)
            ),
            LayoutKind::Mirror => format!("mirror, {} plexes", self.mirrors),
            LayoutKind::StripeMirror => format!(
                "stripe-mirror, {} columns x {} stripe unit, {} plexes",
                self.columns,
                su(self.stripe_unit_bytes),
                self.mirrors
            ),
            LayoutKind::Parity => format!(
                "parity RAID, {} data columns x {} stripe unit",
                self.columns,
                su(self.stripe_unit_bytes)
            ),
        }
    }
}

/// Layout of an md array from its level, disk count, chunk and layout number.
fn md_layout(d: &BlockDev) -> Option<Layout> {
    let md = d.md.as_ref()?;
    let n = md.raid_disks.max(1);
    let src = format!("md {} ({}/md/)", md.level, d.name);
    let chunk = md.chunk_size_bytes;
    Some(match md.level.as_str() {
        "raid0" => Layout::stripe(n, chunk?, src),
        "raid1" => Layout::mirror(n, src),
        "raid10" => {
            // md packs near copies in the low byte and far copies in the next one.
            let l = md.layout.unwrap_or(0x102);
            let copies = ((l & 0xff).max(1) * ((l >> 8) & 0xff).max(1)).max(1);
            Layout::stripe_mirror((n / copies).max(1), copies, chunk?, src)
        }
        "raid4" | "raid5" | "raid6" => {
            let parity = if md.level == "raid6" { 2 } else { 1 };
            Layout {
                kind: LayoutKind::Parity,
                columns: n.saturating_sub(parity).max(1),
                mirrors: 1,
                stripe_unit_bytes: chunk,
                optimal_io_hint_bytes: None,
                source: src,
                device: None,
            }
        }
        _ => Layout::concat(src),
    })
}

/// Layout from queue limits alone (dm stripes, hardware RAID that reports its geometry):
/// minimum_io_size is the stripe unit and optimal_io_size the full width.
fn limits_layout(d: &BlockDev) -> Option<Layout> {
    let q = d.effective_queue()?;
    let min = q.minimum_io_size_bytes.unwrap_or(0);
    let opt = q.optimal_io_size_bytes.unwrap_or(0);
    let phys = q.physical_block_size_bytes.unwrap_or(512);
    if min > phys && opt > min && opt % min == 0 {
        return Some(Layout::stripe(
            (opt / min) as u32,
            min,
            format!(
                "{}/queue: minimum_io_size {} x {} = optimal_io_size {}",
                d.queue_owner(),
                min,
                opt / min,
                opt
            ),
        ));
    }
    None
}

/// The layout of a device stack: the first md/dm level from the top decides; partitions and
/// loop devices pass through to what is below them.
pub fn layout_of(dev: &BlockDev, fs: Option<&FsGeometry>) -> Layout {
    let mut layout = None;
    for d in dev.walk() {
        let found = md_layout(d).or_else(|| {
            matches!(d.kind, DeviceKind::Dm | DeviceKind::Disk)
                .then(|| limits_layout(d))
                .flatten()
        });
        if let Some(mut l) = found {
            l.device = Some(d.name.clone());
            layout = Some(l);
            break;
        }
    }
    let mut layout = layout.unwrap_or_else(|| {
        let leaves = dev.leaves();
        let name = leaves.last().map(|l| l.name.as_str()).unwrap_or("?");
        Layout::concat(format!("{name}: no stripe in sysfs"))
    });
    // A file system told about a stripe the devices do not report (hardware RAID LUN).
    if layout.kind == LayoutKind::Concat {
        if let Some(g) = fs {
            if let (Some(su), Some(sw)) = (g.stripe_unit_bytes, g.stripe_width_bytes) {
                if su > 0 && sw >= su {
                    let cols = (sw / su).max(1) as u32;
                    layout = Layout::stripe(
                        cols,
                        su,
                        format!("{} stripe unit/width ({})", g.fs_type, g.source),
                    );
                }
            }
        }
    }
    if layout.kind == LayoutKind::Concat {
        if let Some(q) = dev.effective_queue() {
            layout.optimal_io_hint_bytes = q.optimal_io_size_bytes.filter(|&o| o > 0);
        }
    }
    layout
}

/// One derived value and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tunable {
    pub name: String,
    pub value: u64,
    /// `bytes`, `count` or `KiB`.
    pub unit: String,
    pub source: String,
    /// Measurements the value rests on, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<String>,
}

/// The vxtunefs-style set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tunables {
    pub layout: Layout,
    pub values: Vec<Tunable>,
}

impl Tunables {
    pub fn get(&self, name: &str) -> Option<u64> {
        self.values.iter().find(|t| t.name == name).map(|t| t.value)
    }
    /// Replace a value (by a measurement) and say so.
    pub fn set(&mut self, name: &str, value: u64, source: String) {
        if let Some(t) = self.values.iter_mut().find(|t| t.name == name) {
            t.value = value;
            t.source = source;
        }
    }
    /// Replace a value by a measurement, with the lines it rests on.
    pub fn set_measured(&mut self, name: &str, value: u64, source: String, evidence: Vec<String>) {
        if let Some(t) = self.values.iter_mut().find(|t| t.name == name) {
            t.value = value;
            t.source = source;
            t.evidence = evidence;
        }
    }
    /// Recompute max_diskq and the read-ahead after pref_io/nstream changed.
    pub fn refresh_dependents(&mut self) {
        let (wp, wn) = (self.get("write_pref_io"), self.get("write_nstream"));
        if let (Some(wp), Some(wn)) = (wp, wn) {
            self.set(
                "max_diskq",
                DISKQ_IOS_PER_STREAM * wp * wn,
                format!("16 x write_pref_io {wp} x write_nstream {wn}"),
            );
        }
        let (rp, rn) = (self.get("read_pref_io"), self.get("read_nstream"));
        if let (Some(rp), Some(rn)) = (rp, rn) {
            self.set(
                "read_ahead_kb",
                (rp * rn).div_ceil(1024),
                format!("read_pref_io {rp} x read_nstream {rn} (VxFS reads ahead one pref_io per stream)"),
            );
        }
    }
}

/// Derive the tunables from a layout, VxFS style.
/// How strongly VxFS prefers I/Os of pref_io size: 20 on a striped volume, 10 without a
/// stripe, as the chapter's vxtunefs output shows (concat 10, 5-column stripe 20, 3-way mirror
/// 10, stripe-mirror 20).
fn pref_strength(layout: &Layout) -> Tunable {
    let striped = matches!(
        layout.kind,
        LayoutKind::Stripe | LayoutKind::StripeMirror | LayoutKind::Parity
    ) && layout.columns > 1;
    let (value, source) = if striped {
        (
            PREF_STRENGTH_STRIPED,
            format!("striped volume ({})", layout.describe()),
        )
    } else {
        (PREF_STRENGTH_UNSTRIPED, "volume with no stripe".to_string())
    };
    Tunable {
        name: "pref_strength".into(),
        value,
        unit: "count".into(),
        source: format!("{source}: as vxtunefs reports it"),
        evidence: Vec::new(),
    }
}

pub fn derive(layout: &Layout) -> Tunables {
    let (pref, pref_src) = match (layout.stripe_unit_bytes, layout.optimal_io_hint_bytes) {
        (Some(su), _) => (su, format!("stripe unit of the {}", layout.describe())),
        (None, Some(opt)) if opt > DEFAULT_PREF_IO => (
            opt,
            "device optimal_io_size hint (larger than the 64k VxFS default)".to_string(),
        ),
        _ => (
            DEFAULT_PREF_IO,
            "VxFS default for a volume with no stripe".to_string(),
        ),
    };
    let (rn, wn, rn_src, wn_src) = match layout.kind {
        LayoutKind::Concat => (1, 1, "one device".to_string(), "one device".to_string()),
        LayoutKind::Stripe | LayoutKind::Parity => (
            layout.columns,
            layout.columns,
            format!("{} columns", layout.columns),
            format!("{} columns", layout.columns),
        ),
        LayoutKind::Mirror => (
            layout.mirrors,
            1,
            format!("{} plexes can each serve reads", layout.mirrors),
            "every write goes to all plexes: one stream".to_string(),
        ),
        LayoutKind::StripeMirror => (
            layout.columns,
            layout.columns,
            format!("{} columns", layout.columns),
            format!("{} columns", layout.columns),
        ),
    };
    let stripe_width = layout.stripe_width_bytes().unwrap_or(0);
    let (max_direct, max_direct_src) = if stripe_width > DEFAULT_MAX_DIRECT {
        (
            stripe_width,
            "one full stripe (stripe unit x columns), larger than the 1m default".to_string(),
        )
    } else {
        (DEFAULT_MAX_DIRECT, "VxFS default".to_string())
    };
    let t = |name: &str, value: u64, source: String| Tunable {
        name: name.into(),
        value,
        unit: if name.ends_with("nstream") {
            "count"
        } else if name.ends_with("_kb") {
            "KiB"
        } else {
            "bytes"
        }
        .into(),
        source,
        evidence: Vec::new(),
    };
    let mut tun = Tunables {
        layout: layout.clone(),
        values: vec![
            t("read_pref_io", pref, pref_src.clone()),
            t("read_nstream", rn as u64, rn_src),
            t("read_unit_io", pref, "= read_pref_io".into()),
            t("write_pref_io", pref, pref_src),
            t("write_nstream", wn as u64, wn_src),
            t("write_unit_io", pref, "= write_pref_io".into()),
            pref_strength(layout),
            t(
                "discovered_direct_iosz",
                DEFAULT_DISCOVERED_DIRECT,
                "VxFS default (measure with --measure)".into(),
            ),
            t("max_direct_iosz", max_direct, max_direct_src),
            t("max_diskq", 0, String::new()),
            t("read_ahead_kb", 0, String::new()),
        ],
    };
    tun.refresh_dependents();
    tun
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chapter_concat() {
        let t = derive(&Layout::concat("test"));
        assert_eq!(t.get("read_pref_io"), Some(65536));
        assert_eq!(t.get("read_nstream"), Some(1));
        assert_eq!(t.get("write_pref_io"), Some(65536));
        assert_eq!(t.get("write_nstream"), Some(1));
        assert_eq!(t.get("discovered_direct_iosz"), Some(262144));
        assert_eq!(t.get("max_direct_iosz"), Some(1048576));
        assert_eq!(t.get("max_diskq"), Some(1048576));
        assert_eq!(t.get("pref_strength"), Some(10));
    }

    #[test]
    fn chapter_five_column_stripe_1m() {
        let t = derive(&Layout::stripe(5, 1 << 20, "test"));
        assert_eq!(t.get("read_pref_io"), Some(1048576));
        assert_eq!(t.get("read_nstream"), Some(5));
        assert_eq!(t.get("write_pref_io"), Some(1048576));
        assert_eq!(t.get("write_nstream"), Some(5));
        assert_eq!(t.get("max_diskq"), Some(83886080), "80 MB");
        assert_eq!(t.get("pref_strength"), Some(20));
    }

    #[test]
    fn chapter_three_way_mirror() {
        let t = derive(&Layout::mirror(3, "test"));
        assert_eq!(t.get("read_nstream"), Some(3));
        assert_eq!(t.get("write_nstream"), Some(1));
        assert_eq!(t.get("read_pref_io"), Some(65536));
        assert_eq!(t.get("max_diskq"), Some(1048576));
        assert_eq!(t.get("pref_strength"), Some(10));
    }

    #[test]
    fn chapter_stripe_mirror_three_columns_default_unit() {
        let t = derive(&Layout::stripe_mirror(3, 2, 65536, "test"));
        assert_eq!(t.get("read_nstream"), Some(3));
        assert_eq!(t.get("write_nstream"), Some(3));
        assert_eq!(t.get("max_diskq"), Some(3145728));
        assert_eq!(t.get("pref_strength"), Some(20));
    }

    #[test]
    fn lun_hint_and_measured_override() {
        let mut l = Layout::concat("test");
        l.optimal_io_hint_bytes = Some(1 << 20);
        let mut t = derive(&l);
        assert_eq!(t.get("write_pref_io"), Some(1 << 20));
        t.set("write_nstream", 4, "measured".into());
        t.refresh_dependents();
        assert_eq!(t.get("max_diskq"), Some((16 * 4) << 20));
    }
}
