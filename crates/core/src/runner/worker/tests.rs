//! Worker tests on real files: descriptor tables, swapped targets, run-time checks.

use super::prepare::deadline_of;
use super::*;

/// A run time no Duration holds is the Job's mistake, named in one usage line.
#[test]
fn unrepresentable_run_time_is_a_usage_error() {
    let mut job = Job {
        time_s: Some(f64::NAN),
        ..Default::default()
    };
    assert_eq!(
        deadline_of(&job),
        Err(crate::error::UsageError(
            "bad run time Some(NaN): must be a finite number of seconds".into()
        ))
    );
    job.time_s = Some(1.5);
    assert_eq!(deadline_of(&job), Ok(Some(Duration::from_millis(1500))));
    job.time_s = None;
    assert_eq!(deadline_of(&job), Ok(None));
}

fn is_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only asks whether the descriptor number is open.
    unsafe { libc::fcntl(fd, libc::F_GETFD) >= 0 }
}

#[test]
fn a_worker_thread_gets_a_table_of_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, b"x").unwrap();
    let before = std::fs::File::open(&path).unwrap();
    let fd = std::os::fd::AsRawFd::as_raw_fd(&before);
    let (own, seen, opened) = std::thread::spawn(move || {
        let own = private_fd_table();
        let seen = is_open(fd);
        let f = std::fs::File::open(&path).unwrap();
        let opened = std::os::fd::AsRawFd::as_raw_fd(&f);
        std::mem::forget(f); // left open in the worker's table only
        (own, seen, opened)
    })
    .join()
    .unwrap();
    assert!(
        own,
        "close_range with CLOSE_RANGE_UNSHARE failed on this kernel"
    );
    assert!(!seen, "the worker still held the runner's descriptor");
    assert!(is_open(fd), "the runner's own descriptor was closed");
    // The worker's descriptor lived in its table and went with the thread. Its number
    // is `fd` itself when that was the lowest free one there (impossible in a shared
    // table, where `before` holds it); otherwise here it is free or names some other
    // file (tests run side by side), never ours.
    let ino = |fd: i32| {
        // A closed descriptor just fails.
        let st = crate::sys::fstat(fd).ok()?;
        Some((st.st_dev, st.st_ino))
    };
    assert!(
        opened == fd || ino(opened).is_none() || ino(opened) != ino(fd),
        "the worker's file leaked into the runner's table"
    );
    drop(before);
}

#[test]
fn a_target_swapped_after_prepare_is_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, vec![9u8; 8192]).unwrap();
    let job = Job {
        targets: vec![t.clone()],
        access: crate::job::Access::Write,
        io_count: Some(2),
        block_size: 4096,
        ..Default::default()
    };
    let (plan, cleanup) = super::super::target::prepare(&job).unwrap();
    let id = cleanup.ids()[0];
    // Swap the path for a symlink to the victim, then for a hard link to it.
    std::fs::remove_file(&t).unwrap();
    std::os::unix::fs::symlink(&victim, &t).unwrap();
    let e = Worker::prepare(&job, &plan, Some(id), 0, 0, None)
        .err()
        .unwrap();
    assert!(e.message.contains("symbolic link"), "{}", e.message);
    std::fs::remove_file(&t).unwrap();
    std::fs::hard_link(&victim, &t).unwrap();
    let e = Worker::prepare(&job, &plan, Some(id), 0, 0, None)
        .err()
        .unwrap();
    assert!(e.message.contains("replaced"), "{}", e.message);
    assert_eq!(std::fs::read(&victim).unwrap(), vec![9u8; 8192]);
    drop(cleanup);
    assert!(victim.exists());
    assert!(
        t.exists(),
        "the swapped-in file is not removed by the cleanup"
    );
}

/// Run one worker of `job` on the queue-depth-1 loop or the general one.
fn run_one(job: &Job, inline: bool) -> ThreadOutcome {
    let (plan, cleanup) = super::super::target::prepare(job).unwrap();
    let id = cleanup.ids()[0];
    let mut w = Worker::prepare(job, &plan, Some(id), 0, 0, None).unwrap();
    let stop = AtomicBool::new(false);
    let interrupt = AtomicBool::new(false);
    let Built::Sync(e) = &mut w.engine else {
        panic!("the sync engine was not built")
    };
    assert!(
        w.core.inline_ok(),
        "a plain QD1 sync job must take the inline loop"
    );
    let out = if inline {
        w.core.drive_inline(e, &stop, &interrupt)
    } else {
        w.core.drive::<_, false>(e, &stop, &interrupt)
    };
    drop(w);
    drop(cleanup);
    out
}

/// The queue-depth-1 loop does the same work and counts it the same way as the general
/// loop: same ops of each kind, bytes, routes, syscalls, histogram population and in-flight
/// distribution, for reads, writes and a mix, buffered and direct.
#[test]
fn the_inline_loop_counts_what_the_general_loop_counts() {
    let dir = tempfile::tempdir().unwrap();
    for (access, cache) in [
        (crate::job::Access::RandRw, CachePolicy::Buffered),
        (crate::job::Access::Write, CachePolicy::Buffered),
        (crate::job::Access::RandRead, CachePolicy::Direct),
    ] {
        let job = Job {
            targets: vec![dir.path().join(format!("f-{}", access.name()))],
            access,
            cache,
            io_count: Some(3000),
            block_size: 4096,
            file_size: Some(1 << 20),
            ..Default::default()
        };
        let (a, b) = (run_one(&job, true), run_one(&job, false));
        let what = format!("{} {cache:?}", access.name());
        assert!(
            a.failure.is_none() && b.failure.is_none(),
            "{what}: {a:?} {b:?}"
        );
        let (a, b) = (a.stats, b.stats);
        assert_eq!(a.ops(), 3000, "{what}");
        assert_eq!(
            (a.read_ops, a.write_ops, a.read_bytes, a.write_bytes),
            (b.read_ops, b.write_ops, b.read_bytes, b.write_bytes),
            "{what}"
        );
        assert_eq!(
            (a.direct_ops, a.buffered_fallback_ops),
            (b.direct_ops, b.buffered_fallback_ops),
            "{what}"
        );
        assert_eq!(
            (a.syscalls.read, a.syscalls.write),
            (b.syscalls.read, b.syscalls.write),
            "{what}"
        );
        assert_eq!(a.inflight, b.inflight, "{what}");
        assert_eq!(a.inflight[0], 3000, "{what}");
        assert_eq!(a.lat_count(), b.lat_count(), "{what}");
        assert!(a.elapsed_s > 0.0, "{what}: {a:?}");
    }
}

/// A short read ends the inline loop with the general loop's failure words, file and offset.
#[test]
fn the_inline_loop_fails_like_the_general_loop() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("short");
    let job = Job {
        targets: vec![path.clone()],
        access: crate::job::Access::Read,
        io_count: Some(10),
        block_size: 4096,
        file_size: Some(64 << 10),
        ..Default::default()
    };
    let mut outcomes = Vec::new();
    for inline in [true, false] {
        let (plan, cleanup) = super::super::target::prepare(&job).unwrap();
        let id = cleanup.ids()[0];
        let mut w = Worker::prepare(&job, &plan, Some(id), 0, 0, None).unwrap();
        // The file shrinks after preparation: the first read finds its end.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        let (stop, interrupt) = (AtomicBool::new(false), AtomicBool::new(false));
        let Built::Sync(e) = &mut w.engine else {
            panic!()
        };
        let out = if inline {
            w.core.drive_inline(e, &stop, &interrupt)
        } else {
            w.core.drive::<_, false>(e, &stop, &interrupt)
        };
        assert!(
            stop.load(Ordering::Relaxed),
            "the other workers are told to stop"
        );
        drop(w);
        drop(cleanup);
        outcomes.push(out);
    }
    let (a, b) = (&outcomes[0], &outcomes[1]);
    let fa = a.failure.as_ref().expect("inline loop reported no failure");
    assert_eq!(Some(fa), b.failure.as_ref());
    assert_eq!(fa.offset, Some(0));
    assert!(fa.message.contains("end of file"), "{fa}");
    assert_eq!((a.stats.errors, a.stats.ops()), (1, 0));
    assert_eq!(a.stats.errors, b.stats.errors);
}

/// With `--verify` the queue-depth-1 loop stamps, checks, fsyncs and reads back what the
/// general loop does: the same counts of I/O and of verified blocks, every block intact,
/// for writes and a mix, with a backlog and an fsync cadence (the verify step between I/Os).
#[test]
fn the_inline_loop_verifies_what_the_general_loop_verifies() {
    let dir = tempfile::tempdir().unwrap();
    for (access, backlog, fsync_every) in [
        (crate::job::Access::RandWrite, None, None),
        (crate::job::Access::RandRw, Some(16), Some(100)),
    ] {
        let job = Job {
            targets: vec![dir.path().join(format!("v-{}", access.name()))],
            access,
            io_count: Some(2000),
            block_size: 4096,
            file_size: Some(256 << 10),
            verify: true,
            verify_backlog: backlog,
            fsync_every,
            ..Default::default()
        };
        let mut outs = Vec::new();
        for inline in [true, false] {
            let (plan, cleanup) = super::super::target::prepare(&job).unwrap();
            let id = cleanup.ids()[0];
            let shared = std::sync::Arc::new(verify::VerifyShared::create(&job, &plan).unwrap());
            let mut w = Worker::prepare(&job, &plan, Some(id), 0, 0, Some(&shared)).unwrap();
            let (stop, interrupt) = (AtomicBool::new(false), AtomicBool::new(false));
            assert!(w.core.inline_ok(), "--verify at QD1 takes the inline loop");
            let Built::Sync(e) = &mut w.engine else {
                panic!("the sync engine was not built")
            };
            let out = if inline {
                w.core.drive_inline(e, &stop, &interrupt)
            } else {
                w.core.drive::<_, false>(e, &stop, &interrupt)
            };
            drop(w);
            shared.table.unlink();
            drop(cleanup);
            outs.push(out);
        }
        let what = access.name();
        let (a, b) = (&outs[0], &outs[1]);
        assert!(a.failure.is_none() && b.failure.is_none(), "{what}");
        let (va, vb) = (a.verify.as_ref().unwrap(), b.verify.as_ref().unwrap());
        assert_eq!(
            (a.stats.read_ops, a.stats.write_ops, a.stats.syscalls.fsync),
            (b.stats.read_ops, b.stats.write_ops, b.stats.syscalls.fsync),
            "{what}"
        );
        let counts = |v: &crate::verify::report::VerifyReport| {
            (
                v.blocks_checked,
                v.blocks_intact,
                v.run_read_blocks,
                v.read_back_blocks,
                v.backlog_blocks,
                v.fsyncs,
                v.bad_blocks(),
            )
        };
        assert_eq!(counts(va), counts(vb), "{what}");
        assert!(va.read_back_done && va.blocks_checked > 0, "{what}: {va:?}");
        assert_eq!(va.blocks_checked, va.blocks_intact, "{what}");
        if backlog.is_some() {
            assert!(va.backlog_blocks > 0 && va.fsyncs > 0, "{what}: {va:?}");
        }
    }
}
