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
        // SAFETY: fstat fills a zeroed struct we own; a closed descriptor just fails.
        let mut st: libc::stat = unsafe { std::mem::zeroed() };
        (unsafe { libc::fstat(fd, &mut st) } == 0).then_some((st.st_dev, st.st_ino))
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
