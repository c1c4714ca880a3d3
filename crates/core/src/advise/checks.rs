//! Checks of the storage stack against the derived tunables: the mismatches the tuning chapter
//! warns about, each with its reason and the command a user would run to change it. fsbench
//! never runs these commands.

use super::derive::Tunables;
use crate::probe::topology::{BlockDev, DeviceKind, Topology};
use crate::units::format_size_exact as sz;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Ok,
    Info,
    Warn,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Stable identifier, e.g. `partition_alignment`.
    pub id: String,
    pub status: Status,
    /// The device (or mount point) the finding is about.
    pub subject: String,
    pub finding: String,
    pub reason: String,
    /// The command that changes it (printed, never run).
    pub fix: Option<String>,
}

fn check(
    id: &str,
    status: Status,
    subject: &str,
    finding: String,
    reason: &str,
    fix: Option<String>,
) -> Check {
    Check {
        id: id.into(),
        status,
        subject: subject.into(),
        finding,
        reason: reason.into(),
        fix,
    }
}

/// Run every check that the topology has data for.
pub fn run(topo: &Topology, tun: &Tunables) -> Vec<Check> {
    let mut out = Vec::new();
    let Some(dev) = &topo.device else {
        return out;
    };
    alignment(dev, tun, &mut out);
    fs_stripe(topo, tun, &mut out);
    io_split(dev, tun, &mut out);
    read_ahead(dev, tun, &mut out);
    queues(dev, tun, &mut out);
    schedulers(dev, &mut out);
    loops(dev, &mut out);
    out
}

/// Partitions must start on a physical block, and on a stripe unit when they sit on a stripe.
fn alignment(top: &BlockDev, tun: &Tunables, out: &mut Vec<Check>) {
    let layout = &tun.layout;
    for d in top.walk() {
        let Some(p) = &d.partition else { continue };
        let start = p.start_bytes + d.alignment_offset_bytes.unwrap_or(0);
        let phys = d
            .effective_queue()
            .and_then(|q| q.physical_block_size_bytes)
            .unwrap_or(512);
        let below: Vec<&str> = d.walk().iter().skip(1).map(|x| x.name.as_str()).collect();
        // The stripe is under this partition when its device is below it, or when only the
        // file system knows about it (hardware RAID) and this partition holds the fs.
        let on_stripe = match (&layout.device, layout.stripe_unit_bytes) {
            (Some(dn), Some(_)) => below.contains(&dn.as_str()),
            (None, Some(_)) => std::ptr::eq(d, top),
            _ => false,
        };
        let unit = if on_stripe {
            layout.stripe_unit_bytes.unwrap_or(phys)
        } else {
            phys
        };
        let what = if on_stripe {
            "stripe unit"
        } else {
            "physical block"
        };
        let fix = format!(
            "cannot be changed in place: back up, re-create {} starting at a multiple of {} (e.g. `parted -a optimal /dev/{} mkpart primary 1MiB 100%`), restore",
            d.name, sz(unit), p.disk
        );
        if start % unit != 0 {
            out.push(check(
                "partition_alignment",
                Status::Warn,
                &d.name,
                format!(
                    "partition starts at byte {start} (sector {}), not a multiple of the {} {what}",
                    start / 512,
                    sz(unit)
                ),
                "I/Os that the file system aligns to its blocks and stripe straddle two device blocks or two columns: every one becomes two device I/Os (or a read-modify-write)",
                Some(fix),
            ));
        } else {
            out.push(check(
                "partition_alignment",
                Status::Ok,
                &d.name,
                format!(
                    "partition starts at byte {start}, a multiple of the {} {what}",
                    sz(unit)
                ),
                "aligned",
                None,
            ));
        }
    }
}

/// The file system should know the stripe the devices report (XFS sunit/swidth, ext4
/// stride/stripe-width) so it allocates and writes whole stripe units.
fn fs_stripe(topo: &Topology, tun: &Tunables, out: &mut Vec<Check>) {
    let layout = &tun.layout;
    let (Some(fs), Some(m), Some(su)) = (&topo.fs, &topo.mount, layout.stripe_unit_bytes) else {
        return;
    };
    if layout.device.is_none() {
        return; // the layout came from the file system itself
    }
    let sw = layout.stripe_width_bytes().unwrap_or(su);
    let bs = fs.block_size_bytes.unwrap_or(4096).max(1);
    let fix = match fs.fs_type.as_str() {
        "xfs" => Some(format!(
            "umount {mp} && mount -o sunit={},swidth={} {} {mp}   (and add the options to /etc/fstab)",
            su / 512,
            sw / 512,
            m.source,
            mp = m.mount_point
        )),
        "ext2" | "ext3" | "ext4" => Some(format!(
            "tune2fs -E stride={},stripe_width={} {}",
            su / bs,
            sw / bs,
            m.source
        )),
        _ => None,
    };
    if fix.is_none() {
        return;
    }
    let subject = m.mount_point.as_str();
    if fs.stripe_unit_bytes == Some(su) && fs.stripe_width_bytes == Some(sw) {
        out.push(check(
            "fs_stripe",
            Status::Ok,
            subject,
            format!(
                "{} knows the stripe: unit {} width {} ({})",
                fs.fs_type,
                sz(su),
                sz(sw),
                fs.source
            ),
            "aligned allocation",
            None,
        ));
    } else {
        let has = match (fs.stripe_unit_bytes, fs.stripe_width_bytes) {
            (Some(a), Some(b)) => format!("unit {} width {}", sz(a), sz(b)),
            _ => "no stripe".into(),
        };
        out.push(check(
            "fs_stripe",
            Status::Warn,
            subject,
            format!(
                "{} has {has} but the device is a {} (width {})",
                fs.fs_type,
                layout.describe(),
                sz(sw)
            ),
            "the file system does not align files and large writes to the stripe, so writes straddle columns and parity RAID does read-modify-write",
            fix,
        ));
    }
}

/// I/Os split below the preferred size: a request size limit smaller than pref_io, or a
/// stripe unit so small that a typical large I/O becomes many device I/Os (the chapter's 1 MB
/// read split into 32 KB pieces).
fn io_split(top: &BlockDev, tun: &Tunables, out: &mut Vec<Check>) {
    let pref = tun.get("read_pref_io").unwrap_or(65536);
    for d in top.walk() {
        let Some(q) = &d.queue else { continue };
        let Some(max_kb) = q.max_sectors_kb else {
            continue;
        };
        let hw_kb = q.max_hw_sectors_kb.unwrap_or(u64::MAX);
        if max_kb * 1024 < pref {
            let want_kb = (pref / 1024).min(hw_kb);
            let (status, fix) = if want_kb > max_kb {
                (
                    Status::Warn,
                    Some(format!(
                        "echo {want_kb} > /sys/block/{}/queue/max_sectors_kb",
                        d.name
                    )),
                )
            } else {
                (Status::Info, None)
            };
            out.push(check(
                "request_size",
                status,
                &d.name,
                format!(
                    "max_sectors_kb {max_kb} (hardware limit {}) is below the preferred I/O size {}",
                    if hw_kb == u64::MAX { "unknown".into() } else { hw_kb.to_string() },
                    sz(pref)
                ),
                "every preferred-size I/O is split into several requests by the block layer",
                fix,
            ));
        }
    }
    if let Some(su) = tun.layout.stripe_unit_bytes {
        // Only a measured pref_io can differ from the stripe unit: the storage does best with
        // I/Os that span several columns, and each is split at every column boundary.
        let best = tun.get("write_pref_io").unwrap_or(su).max(pref);
        if best > su {
            out.push(check(
                "io_size_vs_stripe_unit",
                Status::Info,
                tun.layout.device.as_deref().unwrap_or("file system"),
                format!(
                    "the measured best I/O size {} is larger than the stripe unit {}: each such I/O is split into {} column I/Os",
                    sz(best),
                    sz(su),
                    best.div_ceil(su)
                ),
                "splitting costs device I/Os; a stripe unit of at least the best I/O size keeps each I/O on one column (the chapter's advice for shared arrays)",
                None,
            ));
        }
        if su < 64 * 1024 {
            let pieces = (1u64 << 20).div_ceil(su);
            out.push(check(
                "stripe_unit_small",
                Status::Warn,
                tun.layout.device.as_deref().unwrap_or("file system"),
                format!(
                    "stripe unit {} is smaller than 64k: a 1 MiB I/O becomes {pieces} device I/Os",
                    sz(su)
                ),
                "each column boundary an I/O crosses costs an extra device I/O and more load on the array's controllers",
                tun.layout.device.as_ref().filter(|d| d.starts_with("md")).map(|d| {
                    format!("mdadm --grow /dev/{d} --chunk=512   (reshapes the array; back up first)")
                }),
            ));
        }
    }
}

/// Read-ahead of the device the file system is on, against pref_io x nstream.
fn read_ahead(top: &BlockDev, tun: &Tunables, out: &mut Vec<Check>) {
    let Some(q) = top.effective_queue() else {
        return;
    };
    let Some(ra_kb) = q.read_ahead_kb else { return };
    let want_kb = tun.get("read_ahead_kb").unwrap_or(64);
    let pref = tun.get("read_pref_io").unwrap_or(65536);
    let owner = top.queue_owner();
    if ra_kb * 1024 < pref {
        out.push(check(
            "read_ahead",
            Status::Warn,
            owner,
            format!(
                "read_ahead_kb {ra_kb} is smaller than the preferred I/O size {}",
                sz(pref)
            ),
            "sequential buffered reads are issued in read-ahead sized pieces, smaller than the device's best I/O size",
            Some(format!(
                "blockdev --setra {} /dev/{owner}   (or: echo {want_kb} > /sys/block/{owner}/queue/read_ahead_kb)",
                want_kb * 2
            )),
        ));
    } else if ra_kb < want_kb {
        out.push(check(
            "read_ahead",
            Status::Warn,
            owner,
            format!(
                "read_ahead_kb {ra_kb} covers fewer than read_nstream preferred I/Os ({want_kb} KiB)"
            ),
            "read-ahead cannot keep every column busy at once",
            Some(format!(
                "blockdev --setra {} /dev/{owner}   (or: echo {want_kb} > /sys/block/{owner}/queue/read_ahead_kb)",
                want_kb * 2
            )),
        ));
    } else {
        out.push(check(
            "read_ahead",
            Status::Ok,
            owner,
            format!("read_ahead_kb {ra_kb} >= {want_kb} (pref_io x nstream)"),
            "read-ahead covers one preferred I/O per stream",
            None,
        ));
    }
}

/// Queue limits of the physical devices: the host queue must hold 16 preferred I/Os per
/// stream (max_diskq), the device queue one I/O per stream; very long host queues only add
/// latency (the chapter: better spread load over more LUNs than grow queues).
fn queues(top: &BlockDev, tun: &Tunables, out: &mut Vec<Check>) {
    let leaves = top.leaves();
    let n = leaves.len().max(1) as u64;
    let nstream = tun
        .get("read_nstream")
        .unwrap_or(1)
        .max(tun.get("write_nstream").unwrap_or(1));
    let per_leaf_streams = nstream.div_ceil(n).max(1);
    for d in leaves {
        let Some(q) = &d.queue else { continue };
        if let Some(nr) = q.nr_requests {
            let want = 16 * per_leaf_streams;
            if nr < want {
                out.push(check(
                    "nr_requests",
                    Status::Warn,
                    &d.name,
                    format!("nr_requests {nr} holds fewer than 16 I/Os x {per_leaf_streams} stream(s) = {want}"),
                    "the dirty queue VxFS-style tuning allows (max_diskq) cannot be in flight: writers block on the request queue",
                    Some(format!("echo {want} > /sys/block/{}/queue/nr_requests", d.name)),
                ));
            } else if nr > 1024 && q.rotational == Some(true) {
                out.push(check(
                    "nr_requests",
                    Status::Info,
                    &d.name,
                    format!("nr_requests {nr} is very long for a rotational device"),
                    "long host queues add latency without adding throughput; spread load over more devices instead",
                    Some(format!("echo 256 > /sys/block/{}/queue/nr_requests", d.name)),
                ));
            } else {
                out.push(check(
                    "nr_requests",
                    Status::Ok,
                    &d.name,
                    format!("nr_requests {nr} >= {want}"),
                    "room for 16 preferred I/Os per stream",
                    None,
                ));
            }
        }
        if let Some(qd) = d.queue_depth {
            if qd < per_leaf_streams {
                let src = d.queue_depth_source.as_deref().unwrap_or("queue depth");
                out.push(check(
                    "queue_depth",
                    Status::Warn,
                    &d.name,
                    format!("device queue depth {qd} ({src}) is below the {per_leaf_streams} stream(s) it serves"),
                    "streams wait for each other in the host queue instead of overlapping in the device",
                    (src == "device/queue_depth").then(|| {
                        format!("echo {per_leaf_streams} > /sys/block/{}/device/queue_depth", d.name)
                    }),
                ));
            }
        }
    }
}

/// Schedulers suited to the device: none for NVMe (it queues and reorders itself), an
/// elevator for rotational disks.
fn schedulers(top: &BlockDev, out: &mut Vec<Check>) {
    for d in top.leaves() {
        if d.kind != DeviceKind::Disk {
            continue;
        }
        let Some(q) = &d.queue else { continue };
        let Some(s) = q.scheduler.as_deref() else {
            continue;
        };
        let has = |x: &str| q.schedulers_available.iter().any(|a| a == x);
        let nvme = d.name.starts_with("nvme");
        let fast = nvme || q.rotational == Some(false);
        let set = |to: &str| {
            format!(
                "echo {to} > /sys/block/{}/queue/scheduler   (persist with a udev rule: ACTION==\"add|change\", KERNEL==\"{}\", ATTR{{queue/scheduler}}=\"{to}\")",
                d.name, d.name
            )
        };
        if fast && matches!(s, "mq-deadline" | "bfq") && has("none") {
            out.push(check(
                "scheduler",
                if nvme { Status::Warn } else { Status::Info },
                &d.name,
                format!("{s} on a {} device", if nvme { "NVMe" } else { "non-rotational" }),
                "the device reorders and parallelises I/O itself; an elevator only adds CPU and a lock per request",
                Some(set("none")),
            ));
        } else if q.rotational == Some(true) && s == "none" && (has("mq-deadline") || has("bfq")) {
            let to = if has("mq-deadline") {
                "mq-deadline"
            } else {
                "bfq"
            };
            out.push(check(
                "scheduler",
                Status::Warn,
                &d.name,
                "no scheduler on a rotational device".into(),
                "without an elevator, concurrent streams make the heads seek between them; mq-deadline sorts and merges requests",
                Some(set(to)),
            ));
        } else {
            out.push(check(
                "scheduler",
                Status::Ok,
                &d.name,
                format!(
                    "{s} on a {} device",
                    if q.rotational == Some(true) {
                        "rotational"
                    } else {
                        "non-rotational"
                    }
                ),
                "suited",
                None,
            ));
        }
    }
}

/// Loop devices without direct I/O cache every block twice (in the loop device and in the
/// backing file).
fn loops(top: &BlockDev, out: &mut Vec<Check>) {
    for d in top.walk() {
        let Some(l) = &d.loop_info else { continue };
        if l.direct_io == Some(false) {
            out.push(check(
                "loop_direct_io",
                Status::Info,
                &d.name,
                format!("loop device over {} without direct I/O", l.backing_file),
                "every block is cached twice (loop device and backing file), and buffered-versus-direct measurements on it describe the host's page cache",
                Some(format!("losetup --direct-io=on /dev/{}", d.name)),
            ));
        }
    }
}
