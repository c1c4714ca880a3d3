//! Everything a worker does before the clock starts: open its descriptors (never through a
//! swapped path), advise the kernel, allocate its buffers and build its engine.

use super::*;

/// Open the target again for this worker: never through a symbolic link (unless --force),
/// and only if it is still the file that was prepared (same device and inode), so a path
/// swapped during the run cannot redirect the I/O to another file.
fn open_fd(
    path: &std::path::Path,
    flags: i32,
    follow: bool,
    id: Option<FileId>,
    sys: &mut SyscallCounts,
) -> std::io::Result<i32> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::other("path has a NUL byte"))?;
    sys.open += 1;
    use rustix::fs::OFlags;
    let mut oflags = OFlags::from_bits_retain(flags as u32) | OFlags::CLOEXEC;
    if !follow {
        oflags |= OFlags::NOFOLLOW;
    }
    let fd = match rustix::fs::open(c.as_c_str(), oflags, rustix::fs::Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::LOOP) => {
            return Err(std::io::Error::other(
                "the target was replaced by a symbolic link during the run; not followed",
            ))
        }
        Err(e) => return Err(e.into()),
    };
    if let Some(want) = id {
        let same =
            rustix::fs::fstat(&fd).is_ok_and(|st| st.st_dev == want.dev && st.st_ino == want.ino);
        if !same {
            // Dropping `fd` closes it.
            return Err(std::io::Error::other(
                "the target was replaced by another file during the run; not touched",
            ));
        }
    }
    // From here the worker's `Fds` owns and closes the descriptor.
    Ok(std::os::fd::IntoRawFd::into_raw_fd(fd))
}

impl Worker {
    /// Everything untimed: descriptors, advice, buffers, engine.
    pub(crate) fn prepare(
        job: &Job,
        plan: &Plan,
        id: Option<FileId>,
        user: usize,
        thread: u32,
        shared: Option<&std::sync::Arc<verify::VerifyShared>>,
    ) -> Result<Worker, IoFailure> {
        let t = &plan.targets[user];
        let fail = |msg: String| IoFailure {
            user,
            thread,
            path: t.path.display().to_string(),
            offset: None,
            message: msg,
        };
        let mut sys = SyscallCounts::default();
        let policy = plan.cache;
        let bs = job.io_size();
        let align = t.dio_align.max(1);
        // The null engine does no I/O on the target: it opens nothing.
        let fds = if job.engine == EngineKind::Null {
            Fds([-1; 3])
        } else {
            open_fds(job, policy, t, id, &mut sys, &fail)?
        };
        advise_fds(job, &fds, &mut sys);
        // Buffers for the I/Os that can be in flight, not for the whole queue depth.
        let depth = job.effective_depth() as usize;
        let mut pool = BufferPool::new(depth, bs as usize, thread_seed(job.seed, user, thread))
            .map_err(|e| fail(format!("allocating buffers: {e}")))?;
        if job.mlock {
            pool.lock().map_err(|e| {
                fail(format!(
                    "mlock of I/O buffers failed: {e} (raise the memlock limit, e.g. ulimit -l unlimited)"
                ))
            })?;
        }
        let deadline = deadline_of(job).map_err(|e| fail(e.to_string()))?;
        let handles = vec![FileHandles {
            fds: fds.0,
            size: t.size,
        }];
        let mut engine = engine::build(job, handles, pool).map_err(|e| fail(format!("{e:#}")))?;
        let fill = engine::shaped::DataFill::for_job(
            job,
            thread_seed(job.seed, user, thread),
            engine::shaped::FillPlace {
                file_size: t.size,
                thread,
                threads: job.threads,
            },
        );
        let mut checker = match shared {
            Some(s) => Some(Box::new(
                verify::Checker::new(
                    job,
                    policy,
                    job.engine == EngineKind::Mmap,
                    s.clone(),
                    user,
                    thread,
                    t.path.display().to_string(),
                )
                .map_err(|e| fail(format!("{e:#}")))?,
            )),
            None => None,
        };
        // With --verify the checker shapes what follows each block's header (the header
        // goes on last, with the CRC of the bytes); without it the engine shapes the writes.
        match (fill, checker.as_mut()) {
            (Some(f), Some(c)) => c.shape_with(f),
            (Some(f), None) => engine = engine.shaped(f),
            (None, _) => {}
        }
        let mut core = Core::new(
            job,
            t.size,
            user,
            thread,
            t.path.display().to_string(),
            // The plan's policy, not the job's: a block device turns buffered into raw.
            // Mixed sizes are routed one I/O at a time (each size meets the threshold and
            // the alignment on its own).
            if job.mixed_sizes() {
                RouteRule::PerOp { policy, align }
            } else {
                RouteRule::new(policy, bs, align)
            },
            deadline,
            sys,
            None,
            plan.part,
        );
        core.verify = checker;
        Ok(Worker {
            core,
            engine,
            _fds: fds,
        })
    }

    /// A worker of `job` on a target of `target_size` bytes that issues its I/O through
    /// `engine` and opens nothing (the runner's tests drive the loop with `engine::mock`).
    #[cfg(any(test, feature = "test-support"))]
    pub fn with_engine(
        job: &Job,
        target_size: u64,
        user: usize,
        thread: u32,
        engine: Box<dyn Engine>,
    ) -> Result<Worker, IoFailure> {
        let path = job
            .targets
            .get(user)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        let fail = |message: String| IoFailure {
            user,
            thread,
            path: path.clone(),
            offset: None,
            message,
        };
        let deadline = deadline_of(job).map_err(|e| fail(e.to_string()))?;
        Ok(Worker {
            core: Core::new(
                job,
                target_size,
                user,
                thread,
                path.clone(),
                RouteRule::new(job.cache, job.block_size, 1),
                deadline,
                SyscallCounts::default(),
                None,
                None,
            ),
            engine: Built::Boxed(engine),
            _fds: Fds([-1; 3]),
        })
    }

    /// Time the loop with `clock` (a test's virtual clock) instead of the real one.
    #[cfg(any(test, feature = "test-support"))]
    pub fn set_clock(&mut self, clock: crate::stats::clock::Clock) {
        self.core.clock = clock;
    }

    /// [`Worker::with_engine`] with verification on, sharing `shared` (tests).
    #[cfg(test)]
    pub(crate) fn with_engine_verified(
        job: &Job,
        target_size: u64,
        user: usize,
        thread: u32,
        engine: Box<dyn Engine>,
        shared: std::sync::Arc<verify::VerifyShared>,
    ) -> anyhow::Result<Worker> {
        let mut w = Self::with_engine(job, target_size, user, thread, engine)
            .map_err(|f| anyhow::anyhow!("{f}"))?;
        w.core.verify = Some(Box::new(verify::Checker::new(
            job,
            job.cache,
            false,
            shared,
            user,
            thread,
            w.core.path.clone(),
        )?));
        Ok(w)
    }
}

/// The open(2) flags every descriptor of the worker starts from: read-only unless the job
/// writes or maps, plus the job's O_SYNC / O_DSYNC / O_APPEND.
fn base_flags(job: &Job) -> i32 {
    let writes = job.access.read_pct(job.read_pct) < 100;
    let mmap = job.engine == EngineKind::Mmap;
    // fallocate and ftruncate need a descriptor open for writing, also for falloc's reads.
    let mut base = if writes || mmap || job.engine.changes_space() {
        libc::O_RDWR
    } else {
        libc::O_RDONLY
    };
    if job.open.sync {
        base |= libc::O_SYNC;
    }
    if job.open.dsync {
        base |= libc::O_DSYNC;
    }
    if job.open.append {
        base |= libc::O_APPEND;
    }
    base
}

/// The worker's descriptors on target `t`, one per route the cache policy uses: buffered,
/// direct, and the O_DSYNC fallback for I/Os direct I/O cannot align.
fn open_fds(
    job: &Job,
    policy: CachePolicy,
    t: &super::super::target::TargetPlan,
    id: Option<FileId>,
    sys: &mut SyscallCounts,
    fail: &dyn Fn(String) -> IoFailure,
) -> Result<Fds, IoFailure> {
    let base = base_flags(job);
    let mmap = job.engine == EngineKind::Mmap;
    let misaligned_possible = !job.block_size.is_multiple_of(t.dio_align.max(1))
        || job.mixed_sizes()
        || job.block_align.is_some();
    // Owned from the first open: every early return below closes what was opened.
    let mut fds = Fds([-1i32; 3]);
    let want_buffered = !policy.uses_direct() || matches!(policy, CachePolicy::Discovered { .. });
    if want_buffered || mmap {
        let mut fl = base;
        if policy.buffered_dsync() {
            fl |= libc::O_DSYNC;
        }
        fds.0[Route::Buffered as usize] =
            open_fd(&t.path, fl, job.force, id, sys).map_err(|e| fail(format!("open: {e}")))?;
    }
    if policy.uses_direct() && !mmap {
        fds.0[Route::Direct as usize] = open_fd(&t.path, base | libc::O_DIRECT, job.force, id, sys)
            .map_err(|e| {
                fail(format!(
                    "open with O_DIRECT: {e} (the file system may not support direct I/O; try --cache buffered)"
                ))
            })?;
        if misaligned_possible && !matches!(policy, CachePolicy::Discovered { .. }) {
            fds.0[Route::Fallback as usize] =
                open_fd(&t.path, base | libc::O_DSYNC, job.force, id, sys)
                    .map_err(|e| fail(format!("open: {e}")))?;
        }
    }
    Ok(fds)
}

/// The job's posix_fadvise hints on each open descriptor.
fn advise_fds(job: &Job, fds: &Fds, sys: &mut SyscallCounts) {
    for &fd in fds.0.iter().filter(|&&fd| fd >= 0) {
        for a in &job.advice {
            let adv = match a {
                Advice::NoReuse => libc::POSIX_FADV_NOREUSE,
                Advice::Random => libc::POSIX_FADV_RANDOM,
                Advice::Seq => libc::POSIX_FADV_SEQUENTIAL,
            };
            sys.fadvise += 1;
            // Advice only: a refusal changes nothing the run depends on.
            let _ = engine::meta::advise(fd, adv);
        }
    }
}

/// The run time as a Duration; a time no Duration holds (NaN, infinite, negative, huge) is
/// the Job's mistake.
pub(super) fn deadline_of(job: &Job) -> Result<Option<Duration>, crate::error::UsageError> {
    match job.time_s.map(Duration::try_from_secs_f64) {
        None => Ok(None),
        Some(Ok(d)) => Ok(Some(d)),
        Some(Err(_)) => Err(crate::usage!(
            "bad run time {:?}: must be a finite number of seconds",
            job.time_s
        )),
    }
}

impl Core {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn new(
        job: &Job,
        target_size: u64,
        user: usize,
        thread: u32,
        path: String,
        route: RouteRule,
        deadline: Option<Duration>,
        sys: SyscallCounts,
        trace: Option<crate::trace::TraceRing>,
        part: Option<crate::result::RankPart>,
    ) -> Core {
        let read_pct = job.access.read_pct(job.read_pct);
        let mix = match job.access {
            crate::job::Access::Trim | crate::job::Access::RandTrim => Mix::Trim,
            crate::job::Access::TrimWrite => Mix::TrimWrite,
            _ => Mix::ReadPct(read_pct),
        };
        let gen = OpGen::new(&GenSpec {
            random: job.access.is_random(),
            mix,
            block_size: job.block_size,
            sizes: job.size_table(),
            mean_size: job.mean_io_size(),
            block_align: job.block_align,
            skip: job.skip.unwrap_or(0),
            random_run: job.random_run.unwrap_or(1),
            run_same_offset: job.run_same_offset,
            random_slices: job.random_slices,
            target_size,
            threads: job.threads,
            thread,
            io_count: job.io_count,
            repeats: job.repeats,
            timed: job.time_s.is_some(),
            seed: thread_seed(job.seed, user, thread),
            part,
            distribution: job.distribution.clone(),
            random_map: job.random_map,
        });
        Core {
            user,
            thread,
            path,
            gen,
            route,
            depth: job.effective_depth() as usize,
            fsync: job.fsync && read_pct < 100,
            sync_every: match (job.verifying(), job.fsync_every, job.fdatasync_every) {
                (false, Some(writes), _) => Some(SyncEvery {
                    writes,
                    data_only: false,
                }),
                (false, None, Some(writes)) => Some(SyncEvery {
                    writes,
                    data_only: true,
                }),
                _ => None,
            },
            deadline,
            ramp: job
                .ramp_s
                .filter(|r| *r > 0.0)
                .and_then(|r| Duration::try_from_secs_f64(r).ok()),
            ramp_bytes: job.ramp_bytes.unwrap_or(0),
            think: job.think.map(super::think::Thinker::new),
            sys,
            pacer: Pacers::for_worker(job, user as u64 * job.threads as u64 + thread as u64),
            trace,
            clock: crate::stats::clock::Clock::new(),
            verify: None,
            roll: Default::default(),
            board: None,
            tracing: None,
        }
    }
}
