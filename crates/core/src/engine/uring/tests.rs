use super::*;
use crate::job::{CachePolicy, EngineKind, Route};
use std::io::Write;
use std::os::fd::AsRawFd;

/// These tests are ignored without io_uring (build.rs `has_uring`); a ring that cannot be
/// set up although the probe found one fails loudly.
fn need_ring() {
    if let Err(e) = IoUring::new(2) {
        panic!("CANNOT RUN: io_uring unavailable: {e}, although build.rs found it (see FSBENCH_TEST_CAPS there)");
    }
}

fn job(depth: u32) -> Job {
    Job {
        engine: EngineKind::Uring,
        queue_depth: depth,
        cache: CachePolicy::Buffered,
        ..Default::default()
    }
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn reads_and_writes_through_the_ring() {
    need_ring();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let mut f = std::fs::File::create(&path).unwrap();
    let data: Vec<u8> = (0..16384u32).map(|i| (i * 7 % 251) as u8).collect();
    f.write_all(&data).unwrap();
    drop(f);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    let handles = vec![FileHandles {
        fds: [file.as_raw_fd(), -1, -1],
        size: 16384,
    }];
    let pool = BufferPool::new(4, 4096, 3).unwrap();
    let mut e = UringEngine::new(&job(4), handles, pool).unwrap();
    let mut sys = SyscallCounts::default();
    let ops: Vec<IoOp> = (0..4)
        .map(|i| IoOp {
            kind: OpKind::Read,
            file: 0,
            route: Route::Buffered,
            offset: i as u64 * 4096,
            len: 4096,
            slot: i,
        })
        .collect();
    assert_eq!(e.submit(&ops, &mut sys).unwrap(), 4);
    let mut done = Vec::with_capacity(8);
    while done.len() < 4 {
        e.reap(1, &mut done, &mut sys).unwrap();
    }
    for c in &done {
        assert_eq!(c.result, 4096, "slot {}", c.slot);
        let s = c.slot as usize;
        assert_eq!(
            &e.buffers().slot(s)[..4096],
            &data[s * 4096..(s + 1) * 4096]
        );
    }
    assert!(sys.io_uring_enter >= 1);
    // Write slot 0's bytes at offset 8192 and read them back with std.
    let expect = e.buffers().slot(0)[..4096].to_vec();
    let w = IoOp {
        kind: OpKind::Write,
        offset: 8192,
        ..ops[0]
    };
    done.clear();
    e.submit(&[w], &mut sys).unwrap();
    while done.is_empty() {
        e.reap(1, &mut done, &mut sys).unwrap();
    }
    assert_eq!(done[0].result, 4096);
    let back = std::fs::read(&path).unwrap();
    assert_eq!(&back[8192..12288], &expect[..]);
}

/// Device I/O is handed to the kernel as it is queued (all but the entry that rides along
/// with the wait, or every entry at depth 1); page-cache I/O waits for the reap.
#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn direct_entries_go_to_the_kernel_as_queued() {
    need_ring();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    let data: Vec<u8> = (0..16384u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(&path, &data).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // The engine only looks at the route; the descriptor need not be O_DIRECT here.
    let fd = file.as_raw_fd();
    let ops = |route: Route, n: u32| -> Vec<IoOp> {
        (0..n)
            .map(|i| IoOp {
                kind: OpKind::Read,
                file: 0,
                route,
                offset: i as u64 * 4096,
                len: 4096,
                slot: i,
            })
            .collect()
    };
    for (depth, route, enters_at_submit, left) in [
        (4u32, Route::Direct, 3u64, 1u32),
        (1, Route::Direct, 1, 0),
        (4, Route::Buffered, 0, 4),
    ] {
        let handles = vec![FileHandles {
            fds: [fd, fd, -1],
            size: 16384,
        }];
        let pool = BufferPool::new(depth as usize, 4096, 5).unwrap();
        let mut e = UringEngine::new(&job(depth), handles, pool).unwrap();
        let mut sys = SyscallCounts::default();
        let batch = ops(route, depth);
        assert_eq!(e.submit(&batch, &mut sys).unwrap(), depth as usize);
        assert_eq!(
            sys.io_uring_enter, enters_at_submit,
            "depth {depth} {route:?}"
        );
        assert_eq!(e.unsubmitted, left, "depth {depth} {route:?}");
        let mut done = Vec::with_capacity(8);
        while done.len() < depth as usize {
            e.reap(1, &mut done, &mut sys).unwrap();
        }
        assert_eq!(e.unsubmitted, 0);
        for c in &done {
            let s = c.slot as usize;
            assert_eq!(c.result, 4096);
            assert_eq!(
                &e.buffers().slot(s)[..4096],
                &data[s * 4096..(s + 1) * 4096]
            );
        }
    }
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn errors_come_back_as_negative_errno() {
    need_ring();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ro");
    std::fs::write(&path, vec![0u8; 4096]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let handles = vec![FileHandles {
        fds: [file.as_raw_fd(), -1, -1],
        size: 4096,
    }];
    let mut e = UringEngine::new(&job(1), handles, BufferPool::new(1, 4096, 1).unwrap()).unwrap();
    let mut sys = SyscallCounts::default();
    let op = IoOp {
        kind: OpKind::Write,
        file: 0,
        route: Route::Buffered,
        offset: 0,
        len: 4096,
        slot: 0,
    };
    e.submit(&[op], &mut sys).unwrap();
    let mut done = Vec::with_capacity(2);
    while done.is_empty() {
        e.reap(1, &mut done, &mut sys).unwrap();
    }
    assert_eq!(done[0].result, -(libc::EBADF as i64));
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn non_blocking_reap_delivers_completions() {
    need_ring();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![5u8; 8192]).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    let handles = vec![FileHandles {
        fds: [file.as_raw_fd(), -1, -1],
        size: 8192,
    }];
    let mut e = UringEngine::new(&job(2), handles, BufferPool::new(2, 4096, 1).unwrap()).unwrap();
    let mut sys = SyscallCounts::default();
    let op = IoOp {
        kind: OpKind::Read,
        file: 0,
        route: Route::Buffered,
        offset: 4096,
        len: 4096,
        slot: 1,
    };
    e.submit(&[op], &mut sys).unwrap();
    let mut done = Vec::with_capacity(4);
    let t = std::time::Instant::now();
    // reap(0) never blocks, yet must hand the completion over (deferred task run too).
    while done.is_empty() && t.elapsed() < Duration::from_secs(5) {
        e.reap(0, &mut done, &mut sys).unwrap();
    }
    assert_eq!(done.len(), 1);
    assert_eq!((done[0].slot, done[0].result), (1, 4096));
    assert_eq!(e.buffers().slot(1)[..4096], [5u8; 4096]);
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn timed_reap_returns_without_completions() {
    need_ring();
    let mut e =
        UringEngine::new(&job(2), Vec::new(), BufferPool::new(2, 4096, 1).unwrap()).unwrap();
    let mut sys = SyscallCounts::default();
    let mut done = Vec::with_capacity(4);
    let t = std::time::Instant::now();
    assert_eq!(
        e.reap_timeout(Duration::from_millis(20), &mut done, &mut sys)
            .unwrap(),
        0
    );
    assert!(t.elapsed() >= Duration::from_millis(15));
}

#[test]
#[cfg_attr(not(has_uring), ignore = "SKIPPED: io_uring is unavailable here")]
fn metadata_operations_go_through_the_ring() {
    need_ring();
    let dir = tempfile::tempdir().unwrap();
    let d = std::ffi::CString::new(dir.path().to_str().unwrap()).unwrap();
    let pool = BufferPool::new(2, 4096, 3).unwrap();
    let mut e = UringEngine::for_source(4, crate::engine::empty_files(2), pool).unwrap();
    assert_ne!(e.ring_meta, 0, "this kernel has the metadata opcodes");
    let mut sys = SyscallCounts::default();
    let m = super::super::meta::AT_FDCWD;
    let dfd = e
        .open_at(m, &d, libc::O_RDONLY | libc::O_DIRECTORY, 0, &mut sys)
        .unwrap();
    let fl = libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_RDWR;
    let fd = e.open_at(dfd, c"a", fl, 0o600, &mut sys).unwrap();
    let again = e.open_at(dfd, c"a", fl, 0o600, &mut sys).unwrap_err();
    assert_eq!(again.raw_os_error(), Some(libc::EEXIST));
    e.allocate(fd, 0, 0, 8192, &mut sys).unwrap();
    e.set_file(1, fd).unwrap();
    // A data op queued before a metadata op: its completion is kept for the next reap.
    let w = IoOp {
        kind: OpKind::Write,
        file: 1,
        route: Route::Buffered,
        offset: IoOp::APPEND | IoOp::DSYNC,
        len: 100,
        slot: 0,
    };
    e.submit(&[w], &mut sys).unwrap();
    e.sync_fd(fd, true, &mut sys).unwrap();
    let mut st = super::super::meta::statx_buf();
    e.stat_fd(fd, &mut st, &mut sys).unwrap();
    let mut done = Vec::with_capacity(4);
    e.reap(1, &mut done, &mut sys).unwrap();
    assert_eq!((done[0].slot, done[0].result), (0, 100));
    assert_eq!(st.stx_size, 8292);
    // Reads at the cursor: the descriptor's offset is at the end after the append.
    let r = IoOp {
        kind: OpKind::Read,
        offset: IoOp::AT_CURSOR,
        slot: 1,
        ..w
    };
    e.submit(&[r], &mut sys).unwrap();
    done.clear();
    e.reap(1, &mut done, &mut sys).unwrap();
    assert_eq!(done[0].result, 0);
    e.clear_file(1);
    e.close_fd(fd, &mut sys).unwrap();
    e.mkdir_at(dfd, c"sub", 0o700, &mut sys).unwrap();
    e.unlink_at(dfd, c"sub", true, &mut sys).unwrap();
    e.unlink_at(dfd, c"a", false, &mut sys).unwrap();
    assert!(!dir.path().join("a").exists());
    e.close_fd(dfd, &mut sys).unwrap();
    assert_eq!(
        (sys.open, sys.close, sys.unlink, sys.rmdir, sys.mkdir, sys.stat),
        (3, 2, 1, 1, 1, 1)
    );
    assert_eq!((sys.fdatasync, sys.fallocate), (1, 1));
    // Every one went through io_uring_enter, not its own system call.
    assert!(sys.io_uring_enter >= 12, "{sys:?}");
}
