//! Before any worker starts: can io_uring run this job here, and with what (fixed buffers and
//! files, polling, SQ polling)? Errors name the missing feature and what to do instead.

use super::{build_ring, register_buffers, setup_error, UringEngine};
use crate::engine::{BufferPool, Engine, FileHandles, IoOp, OpKind};
use crate::job::{CachePolicy, Job};
use crate::stats::SyscallCounts;
use io_uring::{opcode, Probe};
use std::os::fd::BorrowedFd;
use std::time::Duration;

/// What [`preflight`] checks: the ring every worker will build and the targets it will
/// serve, described at the engine's level (the runner fills it from its plan).
pub(crate) struct RingCheck<'a> {
    /// Ring entries per worker: the I/Os a thread can have in flight.
    pub depth: u32,
    pub block_size: u64,
    pub sqpoll: bool,
    pub hipri: bool,
    /// The cache policy the run uses (block devices turn buffered into raw).
    pub cache: CachePolicy,
    pub targets: Vec<RingTarget<'a>>,
    /// An open descriptor of the first target, to try registering it as a fixed file.
    pub first_file: Option<BorrowedFd<'a>>,
}

/// One target as the ring will see it.
pub(crate) struct RingTarget<'a> {
    pub path: &'a std::path::Path,
    /// Bytes the job's offsets fall in.
    pub size: u64,
    /// Direct-I/O alignment (offset and length).
    pub dio_align: u64,
}

/// Check, before any worker starts, that io_uring can run this job, and describe what the
/// engine will use. Errors name the missing feature and what to do instead.
pub(crate) fn preflight(c: &RingCheck) -> anyhow::Result<Vec<String>> {
    let mut notes = Vec::new();
    if c.hipri && !all_direct(c) {
        crate::bail_usage!(
            "--hipri polls for completions, which only direct I/O delivers: use --cache direct, concurrent or raw with an I/O size that is a multiple of the device block size (got {})",
            c.cache.name()
        );
    }
    let (ring, setup) = build_ring(c.depth, c.sqpoll, c.hipri)
        .map_err(|e| anyhow::anyhow!("{}", setup_error(e, c.sqpoll, c.hipri)))?;
    let mut probe = Probe::new();
    if ring.submitter().register_probe(&mut probe).is_err() {
        anyhow::bail!(
            "io_uring on this kernel is too old for fsbench (no opcode probe, needs Linux 5.6+); use --engine sync"
        );
    }
    for (code, name) in [(opcode::Read::CODE, "READ"), (opcode::Write::CODE, "WRITE")] {
        if !probe.is_supported(code) {
            anyhow::bail!("io_uring on this kernel lacks IORING_OP_{name}; use --engine sync");
        }
    }
    let fixed_ops =
        probe.is_supported(opcode::ReadFixed::CODE) && probe.is_supported(opcode::WriteFixed::CODE);
    let pool = BufferPool::new(c.depth as usize, c.block_size as usize, 1)?;
    let buffers = if !fixed_ops {
        "plain buffers (kernel lacks READ_FIXED/WRITE_FIXED)".to_string()
    } else {
        match register_buffers(&ring, &pool) {
            Ok(()) => "registered buffers".to_string(),
            Err(e) => format!(
                "plain buffers (registering fixed buffers failed: {e}; raise the memlock limit to use them)"
            ),
        }
    };
    let mut files = "registered files";
    if let Some(fd) = c.first_file {
        use std::os::fd::AsRawFd;
        if ring.submitter().register_files(&[fd.as_raw_fd()]).is_err() {
            files = "plain descriptors (registering files failed)";
        }
    }
    let mut flags = Vec::new();
    if setup.sqpoll {
        flags.push("SQ polling");
    }
    if setup.iopoll {
        flags.push("polled completions");
    }
    if setup.defer_taskrun {
        flags.push("deferred task run");
    } else if setup.coop_taskrun {
        flags.push("cooperative task run");
    }
    notes.push(format!(
        "io_uring: ring of {} entries per thread, {buffers}, {files}{}{}",
        ring.params().sq_entries(),
        if flags.is_empty() { "" } else { ", " },
        flags.join(", ")
    ));
    if c.hipri {
        for t in &c.targets {
            polled_read_test(c, t.path, t.size, t.dio_align)?;
        }
        for t in &c.targets {
            let poll = crate::probe::sysfs_block_dir(t.path)
                .and_then(|d| std::fs::read_to_string(d.join("queue/io_poll")).ok())
                .or_else(|| {
                    // A partition's queue settings live in its parent's directory.
                    crate::probe::sysfs_block_dir(t.path)
                        .and_then(|d| std::fs::read_to_string(d.join("../queue/io_poll")).ok())
                });
            if poll.as_deref().map(str::trim) == Some("0") {
                notes.push(format!(
                    "--hipri: the device under {} has no poll queues (queue/io_poll = 0): the ring is polled but the device completes by interrupt (for NVMe, load the driver with poll_queues=N)",
                    t.path.display()
                ));
            }
        }
    }
    Ok(notes)
}

/// Read one block of `path` O_DIRECT through a polled ring built the way the workers build
/// theirs: devices without polling support fail every polled I/O with EOPNOTSUPP, which is
/// better said once before the run than as an I/O error in every worker.
fn polled_read_test(
    c: &RingCheck,
    path: &std::path::Path,
    size: u64,
    align: u64,
) -> anyhow::Result<()> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .map_err(|e| anyhow::anyhow!("--hipri: cannot open {} O_DIRECT: {e}", path.display()))?;
    let len = align.max(4096);
    if size < len {
        return Ok(());
    }
    // A one-entry ring with the job's ring features, built the way a worker builds its own.
    let probe_job = Job {
        queue_depth: 1,
        sqpoll: c.sqpoll,
        hipri: c.hipri,
        ..Job::default()
    };
    let handles = vec![FileHandles {
        fds: [-1, f.as_raw_fd(), -1],
        size,
    }];
    let mut engine = UringEngine::new(&probe_job, handles, BufferPool::new(1, len as usize, 1)?)?;
    let op = IoOp {
        kind: OpKind::Read,
        file: 0,
        route: crate::job::Route::Direct,
        offset: (size / 2) / len * len,
        len: len as u32,
        slot: 0,
    };
    let mut sys = SyscallCounts::default();
    engine.submit(&[op], &mut sys)?;
    let mut done = Vec::with_capacity(4);
    let t0 = std::time::Instant::now();
    while done.is_empty() && t0.elapsed() < Duration::from_secs(5) {
        engine.reap_timeout(Duration::from_millis(100), &mut done, &mut sys)?;
    }
    match done.first().map(|c| c.result) {
        Some(r) if r == -(libc::EOPNOTSUPP as i64) => crate::bail_usage!(
            "--hipri: the device under {} does not support polled I/O (EOPNOTSUPP; for NVMe load the driver with poll_queues=N); run without --hipri",
            path.display()
        ),
        Some(_) => Ok(()),
        None => anyhow::bail!(
            "--hipri: a polled read of {} did not complete within 5 s; run without --hipri",
            path.display()
        ),
    }
}

/// True when every I/O of the job goes direct (what polled completions need).
fn all_direct(c: &RingCheck) -> bool {
    matches!(
        c.cache,
        CachePolicy::Direct | CachePolicy::Concurrent | CachePolicy::Raw
    ) && c
        .targets
        .iter()
        .all(|t| c.block_size.is_multiple_of(t.dio_align.max(1)))
}
