//! Device statistics from /proc/diskstats, the way `sar -d` and `iostat -x` report them:
//! r/s, w/s, read and write KB/s, average queue length, await split into avwait (queued) and
//! avserv (being serviced), and %util. Also resolves the block devices under a path (partition
//! -> disk, loop device -> the device of its backing file, dm/md -> slaves) and runs a sampler
//! thread that never touches the I/O path.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Sectors in /proc/diskstats are always 512 bytes, whatever the device's block size.
const SECTOR_BYTES: f64 = 512.0;

/// One device's cumulative counters (one line of /proc/diskstats).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskCounters {
    pub reads: u64,
    pub reads_merged: u64,
    pub sectors_read: u64,
    pub read_ms: u64,
    pub writes: u64,
    pub writes_merged: u64,
    pub sectors_written: u64,
    pub write_ms: u64,
    pub in_flight: u64,
    /// Milliseconds the device had at least one I/O in flight (basis of %util).
    pub io_ms: u64,
    /// Milliseconds spent doing I/O weighted by the number in flight (basis of avgqu-sz).
    pub weighted_io_ms: u64,
    /// Discards and flushes (kernel 4.18+ and 5.5+); zero where the kernel omits them.
    pub discards: u64,
    pub discard_ms: u64,
    pub flushes: u64,
    pub flush_ms: u64,
}

/// Parse the text of /proc/diskstats into name -> counters. Lines with fewer than the 14
/// fields every kernel since 2.6 prints are skipped (never a panic on odd input).
pub fn parse(text: &str) -> BTreeMap<String, DiskCounters> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 14 {
            continue;
        }
        let n: Vec<u64> = f[3..].iter().map(|x| x.parse().unwrap_or(0)).collect();
        let at = |i: usize| n.get(i).copied().unwrap_or(0);
        out.insert(
            f[2].to_string(),
            DiskCounters {
                reads: at(0),
                reads_merged: at(1),
                sectors_read: at(2),
                read_ms: at(3),
                writes: at(4),
                writes_merged: at(5),
                sectors_written: at(6),
                write_ms: at(7),
                in_flight: at(8),
                io_ms: at(9),
                weighted_io_ms: at(10),
                discards: at(11),
                discard_ms: at(14),
                flushes: at(15),
                flush_ms: at(16),
            },
        );
    }
    out
}

/// Read /proc/diskstats now.
pub fn read_now() -> std::io::Result<BTreeMap<String, DiskCounters>> {
    Ok(parse(&std::fs::read_to_string("/proc/diskstats")?))
}

/// One device over one interval, in the units sar and iostat use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DeviceSample {
    pub device: String,
    /// Seconds from the start of sampling to the end of this interval.
    pub t_s: f64,
    pub interval_s: f64,
    pub reads_per_sec: f64,
    pub writes_per_sec: f64,
    pub read_kb_per_sec: f64,
    pub write_kb_per_sec: f64,
    /// 512-byte blocks per second, read + written (sar's blks/s).
    pub blocks_per_sec: f64,
    /// Average number of requests in the queue or being serviced (sar avque, iostat aqu-sz).
    pub avg_queue: f64,
    /// Mean time per I/O from queueing to completion, ms (iostat await).
    pub await_ms: f64,
    /// Mean time an I/O waited before service, ms (sar avwait): await - avserv.
    pub avwait_ms: f64,
    /// Mean service time per I/O, ms (sar avserv): busy time / I/Os completed.
    pub avserv_ms: f64,
    /// Share of the interval the device was busy, percent (sar %busy).
    pub util_pct: f64,
}

/// Rates of one device between two snapshots `dt_s` seconds apart.
pub fn delta(
    device: &str,
    a: &DiskCounters,
    b: &DiskCounters,
    dt_s: f64,
    t_s: f64,
) -> DeviceSample {
    let d = |x: u64, y: u64| y.saturating_sub(x) as f64;
    let reads = d(a.reads, b.reads);
    let writes = d(a.writes, b.writes);
    let ios = reads + writes;
    let rsec = d(a.sectors_read, b.sectors_read);
    let wsec = d(a.sectors_written, b.sectors_written);
    let ticks = d(a.read_ms, b.read_ms) + d(a.write_ms, b.write_ms);
    let busy_ms = d(a.io_ms, b.io_ms);
    let dt = if dt_s > 0.0 { dt_s } else { f64::INFINITY };
    let per_io = |v: f64| if ios > 0.0 { v / ios } else { 0.0 };
    let await_ms = per_io(ticks);
    // Service time cannot exceed the whole time per I/O; a busy device with overlapping
    // requests has a per-I/O busy time below await, and the rest is queueing.
    let avserv_ms = per_io(busy_ms).min(await_ms);
    DeviceSample {
        device: device.to_string(),
        t_s,
        interval_s: dt_s,
        reads_per_sec: reads / dt,
        writes_per_sec: writes / dt,
        read_kb_per_sec: rsec * SECTOR_BYTES / 1024.0 / dt,
        write_kb_per_sec: wsec * SECTOR_BYTES / 1024.0 / dt,
        blocks_per_sec: (rsec + wsec) / dt,
        avg_queue: d(a.weighted_io_ms, b.weighted_io_ms) / (dt * 1000.0),
        await_ms,
        avwait_ms: (await_ms - avserv_ms).max(0.0),
        avserv_ms,
        util_pct: (busy_ms / (dt * 1000.0) * 100.0).min(100.0),
    }
}

/// Average a device's samples over their intervals (weighted by interval length).
pub fn average(samples: &[&DeviceSample]) -> Option<DeviceSample> {
    let total: f64 = samples.iter().map(|s| s.interval_s).sum();
    if samples.is_empty() || total <= 0.0 {
        return None;
    }
    let w = |f: fn(&DeviceSample) -> f64| -> f64 {
        samples.iter().map(|s| f(s) * s.interval_s).sum::<f64>() / total
    };
    let ios: f64 = samples
        .iter()
        .map(|s| (s.reads_per_sec + s.writes_per_sec) * s.interval_s)
        .sum();
    // Per-I/O times are averaged over I/Os, not over time.
    let per_io = |f: fn(&DeviceSample) -> f64| -> f64 {
        if ios <= 0.0 {
            return 0.0;
        }
        samples
            .iter()
            .map(|s| f(s) * (s.reads_per_sec + s.writes_per_sec) * s.interval_s)
            .sum::<f64>()
            / ios
    };
    Some(DeviceSample {
        device: samples[0].device.clone(),
        t_s: samples.last().map(|s| s.t_s).unwrap_or(0.0),
        interval_s: total,
        reads_per_sec: w(|s| s.reads_per_sec),
        writes_per_sec: w(|s| s.writes_per_sec),
        read_kb_per_sec: w(|s| s.read_kb_per_sec),
        write_kb_per_sec: w(|s| s.write_kb_per_sec),
        blocks_per_sec: w(|s| s.blocks_per_sec),
        avg_queue: w(|s| s.avg_queue),
        await_ms: per_io(|s| s.await_ms),
        avwait_ms: per_io(|s| s.avwait_ms),
        avserv_ms: per_io(|s| s.avserv_ms),
        util_pct: w(|s| s.util_pct),
    })
}

/// The kernel name (as in /proc/diskstats) of a /sys/dev/block/M:m entry.
fn name_of_devnum(major: u32, minor: u32) -> Option<(String, PathBuf)> {
    let dir = std::fs::canonicalize(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    let name = dir.file_name()?.to_string_lossy().to_string();
    Some((name, dir))
}

/// Block devices that hold `path`, outermost first: the device of the file system, then what
/// it sits on (the whole disk of a partition, the device holding a loop device's backing
/// file, the slaves of a dm or md device), recursively. Empty for tmpfs, overlay and other
/// file systems without a block device.
pub fn devices_under(path: &Path) -> Vec<String> {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    let mut probe = path.to_path_buf();
    let meta = loop {
        match std::fs::metadata(&probe) {
            Ok(m) => break Some(m),
            Err(_) => match probe.parent() {
                Some(p) if !p.as_os_str().is_empty() => probe = p.to_path_buf(),
                _ => break std::fs::metadata(".").ok(),
            },
        }
    };
    let Some(m) = meta else { return Vec::new() };
    let dev = if m.file_type().is_block_device() {
        m.rdev()
    } else {
        m.dev()
    };
    let mut out = Vec::new();
    if let Some((name, dir)) = name_of_devnum(libc::major(dev), libc::minor(dev)) {
        expand(&name, &dir, &mut out, 0);
    }
    out
}

fn expand(name: &str, dir: &Path, out: &mut Vec<String>, depth: usize) {
    if depth > 8 || out.iter().any(|n| n == name) {
        return;
    }
    out.push(name.to_string());
    // A partition: its parent directory is the whole disk.
    if dir.join("partition").exists() {
        if let Some(parent) = dir.parent() {
            if let Some(pn) = parent.file_name() {
                expand(&pn.to_string_lossy(), parent, out, depth + 1);
            }
        }
    }
    // A loop device: the device that holds its backing file.
    if let Ok(back) = std::fs::read_to_string(dir.join("loop/backing_file")) {
        let back = back.trim().trim_end_matches(" (deleted)");
        for d in devices_under(Path::new(back)) {
            if !out.contains(&d) {
                out.push(d);
            }
        }
    }
    // dm and md devices: their slaves.
    if let Ok(rd) = std::fs::read_dir(dir.join("slaves")) {
        let mut slaves: Vec<_> = rd.flatten().collect();
        slaves.sort_by_key(|e| e.file_name());
        for e in slaves {
            if let Ok(sd) = std::fs::canonicalize(e.path()) {
                expand(&e.file_name().to_string_lossy(), &sd, out, depth + 1);
            }
        }
    }
}

/// Every sample a sampler took, with the devices it watched.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct IostatSeries {
    pub devices: Vec<String>,
    pub interval_s: f64,
    /// Seconds between the sampler's start and the start of the timed run (samples whose
    /// interval ends before it cover target preparation).
    #[serde(default)]
    pub run_start_s: f64,
    pub samples: Vec<DeviceSample>,
}

/// A background thread that reads /proc/diskstats every interval. It only reads procfs and
/// keeps its own vector, so the I/O path is untouched.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<IostatSeries>>,
    started: Instant,
}

impl Sampler {
    /// Watch `devices` (all devices with activity when empty) every `interval`.
    pub fn start(devices: Vec<String>, interval: Duration) -> std::io::Result<Sampler> {
        let first = read_now()?;
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let started = Instant::now();
        let handle = std::thread::Builder::new()
            .name("fsbench-iostat".into())
            .spawn(move || sample_loop(devices, interval, first, started, &stop2))?;
        Ok(Sampler {
            stop,
            handle: Some(handle),
            started,
        })
    }

    /// Seconds since the sampler started.
    pub fn elapsed_s(&self) -> f64 {
        self.started.elapsed().as_secs_f64()
    }

    /// Stop, take a final (possibly shorter) sample, and return the series.
    pub fn finish(mut self) -> IostatSeries {
        self.stop.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn sample_loop(
    devices: Vec<String>,
    interval: Duration,
    mut prev: BTreeMap<String, DiskCounters>,
    started: Instant,
    stop: &AtomicBool,
) -> IostatSeries {
    let mut series = IostatSeries {
        devices: devices.clone(),
        interval_s: interval.as_secs_f64(),
        run_start_s: 0.0,
        samples: Vec::new(),
    };
    let mut prev_t = started;
    let mut next = started + interval;
    loop {
        // Sleep in short steps so a stop request is answered quickly.
        let stopping = loop {
            if stop.load(Ordering::Relaxed) {
                break true;
            }
            let now = Instant::now();
            if now >= next {
                break false;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(20)));
        };
        let now = Instant::now();
        let Ok(cur) = read_now() else { break };
        let dt = now.duration_since(prev_t).as_secs_f64();
        // A last interval of a few ms says nothing; skip it.
        if !stopping || dt >= 0.05 || series.samples.is_empty() {
            let t = now.duration_since(started).as_secs_f64();
            push_samples(&mut series.samples, &devices, &prev, &cur, dt, t);
        }
        prev = cur;
        prev_t = now;
        if stopping {
            break;
        }
        next += interval;
        if next < now {
            next = now + interval;
        }
    }
    series
}

/// Append one sample per watched device (or per device that did any I/O, when none named).
pub fn push_samples(
    out: &mut Vec<DeviceSample>,
    devices: &[String],
    prev: &BTreeMap<String, DiskCounters>,
    cur: &BTreeMap<String, DiskCounters>,
    dt: f64,
    t: f64,
) {
    if devices.is_empty() {
        for (name, c) in cur {
            if let Some(p) = prev.get(name) {
                if c.reads != p.reads || c.writes != p.writes || c.io_ms != p.io_ms {
                    out.push(delta(name, p, c, dt, t));
                }
            }
        }
    } else {
        for name in devices {
            if let (Some(p), Some(c)) = (prev.get(name), cur.get(name)) {
                out.push(delta(name, p, c, dt, t));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_modern_and_old_formats() {
        let text = " 254 0 vda 10 2 80 5 20 3 400 50 0 30 55 1 0 8 1 4 2\n   8 1 sda1 1 2 3 4 5 6 7 8 9 10 11\n bad line\n";
        let m = parse(text);
        let v = m["vda"];
        assert_eq!(
            (v.reads, v.sectors_read, v.writes, v.sectors_written),
            (10, 80, 20, 400)
        );
        assert_eq!(
            (v.io_ms, v.weighted_io_ms, v.flushes, v.flush_ms),
            (30, 55, 4, 2)
        );
        assert_eq!(m["sda1"].weighted_io_ms, 11);
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn delta_matches_hand_arithmetic() {
        let a = DiskCounters::default();
        let b = DiskCounters {
            reads: 100,
            sectors_read: 800,
            read_ms: 200,
            writes: 300,
            sectors_written: 4800,
            write_ms: 600,
            io_ms: 500,
            weighted_io_ms: 1600,
            ..Default::default()
        };
        let s = delta("x", &a, &b, 2.0, 2.0);
        assert_eq!(s.reads_per_sec, 50.0);
        assert_eq!(s.writes_per_sec, 150.0);
        assert_eq!(s.read_kb_per_sec, 200.0); // 800 * 512 / 1024 / 2
        assert_eq!(s.write_kb_per_sec, 1200.0);
        assert_eq!(s.await_ms, 2.0); // 800 ms / 400 I/Os
        assert_eq!(s.avserv_ms, 1.25); // 500 ms busy / 400 I/Os
        assert_eq!(s.avwait_ms, 0.75);
        assert_eq!(s.avg_queue, 0.8); // 1600 ms / 2000 ms
        assert_eq!(s.util_pct, 25.0);
    }

    proptest::proptest! {
        #[test]
        fn parse_never_panics(s in "\\PC{0,400}") {
            let _ = parse(&s);
        }

        #[test]
        fn numeric_lines_never_panic(fields in proptest::collection::vec("[0-9a-z-]{0,22}", 0..24)) {
            let m = parse(&fields.join(" "));
            for (name, c) in &m {
                let _ = delta(name, c, c, 1.0, 1.0);
            }
        }
    }

    #[test]
    fn counter_wrap_gives_zero_not_garbage() {
        let a = DiskCounters {
            reads: 10,
            ..Default::default()
        };
        let s = delta("x", &a, &DiskCounters::default(), 1.0, 1.0);
        assert_eq!(s.reads_per_sec, 0.0);
    }
}
