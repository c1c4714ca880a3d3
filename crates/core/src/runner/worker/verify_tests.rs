//! `--verify` in the real worker loop, on the scripted engine with a store of blocks: the
//! generation table, the overlap rule, each kind of mismatch, the backlog and the journal.

use super::verify::VerifyShared;
use super::*;
use crate::engine::mock::{Fault, MockEngine, Script, Store};
use crate::job::Access;
use crate::runner::target::{TargetKind, TargetPlan};
use crate::verify::journal::Journal;
use crate::verify::report::VerifyReport;
use std::sync::{Arc, Mutex};

const BS: u64 = 4096;

fn job(access: Access, size: u64, count: u64) -> Job {
    Job {
        targets: vec!["mock".into()],
        access,
        block_size: BS,
        file_size: Some(size),
        io_count: Some(count),
        verify: true,
        ..Default::default()
    }
}

fn shared(job: &Job, size: u64) -> Arc<VerifyShared> {
    let plan = Plan {
        part: None,
        targets: vec![TargetPlan {
            path: "mock".into(),
            kind: TargetKind::File,
            size,
            created: true,
            dio_align: 512,
            reserved: None,
        }],
        cache: job.cache,
        notes: Vec::new(),
    };
    let v = VerifyShared::create(job, &plan).unwrap();
    v.table.unlink();
    Arc::new(v)
}

/// Run every thread of `job` (one target of `size` bytes) on mock engines that share one
/// store; `script(thread)` scripts each. Returns the outcomes and the store.
fn run(job: &Job, size: u64, script: impl Fn(u32) -> Script) -> (Vec<ThreadOutcome>, Store) {
    let store: Store = Arc::new(Mutex::new(Default::default()));
    let v = shared(job, size);
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..job.threads)
        .map(|t| {
            let mut s = script(t);
            s.store = Some(store.clone());
            if s.depth == 0 {
                s.depth = job.queue_depth;
            }
            let (e, _) = MockEngine::new(s, BS as usize);
            let w = Worker::with_engine_verified(job, size, 0, t, Box::new(e), v.clone()).unwrap();
            let stop = stop.clone();
            std::thread::spawn(move || w.run_until(&stop, &AtomicBool::new(false)))
        })
        .collect();
    let out = hs.into_iter().map(|h| h.join().unwrap()).collect();
    (out, store)
}

fn report(out: &[ThreadOutcome]) -> VerifyReport {
    VerifyReport::merged(out.iter().filter_map(|o| o.verify.as_ref())).unwrap()
}

#[test]
fn a_clean_run_reads_back_every_written_block_intact() {
    // One thread, one I/O at a time: no overlap; every distinct block written is checked.
    let j = job(Access::RandWrite, 64 * BS, 300);
    let (out, store) = run(&j, 64 * BS, |_| Script::default());
    let r = report(&out);
    assert!(out[0].failure.is_none(), "{:?}", out[0].failure);
    let written = store.lock().unwrap().len() as u64;
    assert_eq!(r.read_back_blocks, written);
    assert_eq!((r.blocks_intact, r.bad_blocks()), (written, 0));
    assert_eq!(r.blocks_skipped_overlap, 0);
    assert!(r.read_back_done);
    // The read-back is not the run's I/O.
    assert_eq!((out[0].stats.write_ops, out[0].stats.read_ops), (300, 0));
}

#[test]
fn overlapping_writes_in_flight_are_skipped_not_reported() {
    // 4 blocks, 2 threads of queue depth 8: most writes overlap another of the same block.
    let mut j = job(Access::RandWrite, 4 * BS, 400);
    j.threads = 2;
    j.queue_depth = 8;
    let (out, _) = run(&j, 4 * BS, |_| Script {
        latency: Duration::from_micros(50),
        ..Default::default()
    });
    let r = report(&out);
    assert!(out.iter().all(|o| o.failure.is_none()));
    assert_eq!(r.bad_blocks(), 0);
    assert!(r.blocks_skipped_overlap > 0, "{r:?}");
    assert_eq!(r.blocks_skipped_overlap + r.read_back_blocks, 4);
}

/// What the run skipped as overlapping writes, the journal records as overlapped (so that
/// `fsbench verify` does not judge a mix of them as damage) and never as acknowledged: a
/// block is skipped exactly when the journal's overlap of it is at least its newest
/// acknowledgement.
#[test]
fn the_journal_records_the_overlaps_the_run_skipped_and_acknowledges_none_of_them() {
    let d = tempfile::tempdir().unwrap();
    let mut j = job(Access::RandWrite, 4 * BS, 400);
    j.threads = 2;
    j.queue_depth = 8;
    j.cache = crate::job::CachePolicy::Direct;
    j.journal = Some(d.path().join("o.fsj"));
    let (out, _) = run(&j, 4 * BS, |_| Script {
        latency: Duration::from_micros(50),
        ..Default::default()
    });
    let r = report(&out);
    assert!(r.blocks_skipped_overlap > 0, "{r:?}");
    let jr = Journal::read(&d.path().join("o.fsj")).unwrap();
    let unknown_at_end = (0..4)
        .filter(|&b| {
            jr.overlapped
                .get(&(0, b))
                .is_some_and(|&o| o >= jr.acked.get(&(0, b)).copied().unwrap_or(0))
        })
        .count() as u64;
    assert_eq!(unknown_at_end, r.blocks_skipped_overlap, "{jr:?}");
    // Overlaps are counted apart from acknowledgements, in the journal and the report.
    assert!(jr.overlap_records > 0);
    assert_eq!(jr.records, r.journal_acks);
    assert_eq!(jr.overlap_records, r.journal_overlaps);
}

#[test]
fn each_fault_is_found_and_named() {
    // Sequential: op k writes block k once.
    let j = job(Access::Write, 16 * BS, 16);
    let (out, _) = run(&j, 16 * BS, |_| Script {
        faults: vec![
            (3, Fault::Drop),
            (5, Fault::Misdirect(0)),
            (7, Fault::Tear(2048)),
            (9, Fault::FlipBit(8 * 1000 + 3)),
        ],
        ..Default::default()
    });
    let r = report(&out);
    let offs = |k: &crate::verify::report::FindingReport| -> Vec<u64> {
        k.first.iter().map(|m| m.offset_bytes / BS).collect()
    };
    // Block 3 (dropped) and block 5 (went to block 0) hold nothing: lost writes.
    assert_eq!(offs(&r.stale), [3, 5]);
    assert_eq!(offs(&r.misdirected), [0]);
    assert_eq!(r.misdirected.first[0].found.offset_bytes, 5 * BS);
    assert_eq!(offs(&r.torn), [7]);
    assert_eq!(offs(&r.corrupt), [9]);
    let c = &r.corrupt.first[0];
    assert_eq!(c.first_diff.as_ref().unwrap().at_byte, 1000);
    assert!(c.detail.contains("one bit flipped"));
    assert_eq!(r.blocks_intact, 11);
    let f = out[0].failure.as_ref().expect("a mismatch fails the run");
    assert!(f.message.starts_with("verify: 5 block(s)"), "{}", f.message);
    assert_eq!(f.offset, Some(0));
}

#[test]
fn reads_during_the_run_check_blocks_the_run_wrote() {
    // Mixed: reads of blocks written earlier are checked; one dropped write is caught by a
    // read (or the read-back), never missed.
    let mut j = job(Access::RandRw, 8 * BS, 400);
    j.read_pct = 50;
    let (out, _) = run(&j, 8 * BS, |_| Script {
        faults: vec![(399, Fault::Drop)],
        ..Default::default()
    });
    let r = report(&out);
    assert!(r.run_read_blocks > 50, "{r:?}");
    assert_eq!(r.bad_blocks() > 0, out[0].failure.is_some());
    let (out, _) = run(&j, 8 * BS, |_| Script::default());
    let r = report(&out);
    assert_eq!(r.bad_blocks(), 0);
    assert_eq!(r.run_read_blocks + r.read_back_blocks, r.blocks_checked);
}

#[test]
fn the_backlog_checks_while_running_without_counting_as_run_io() {
    let mut j = job(Access::Write, 64 * BS, 64);
    j.verify_backlog = Some(8);
    // The engine numbers every op it sees, the backlog's reads too: 8 writes, 8 reads, ...
    // so op 18 is the write of block 10.
    let (out, _) = run(&j, 64 * BS, |_| Script {
        faults: vec![(18, Fault::Drop)],
        ..Default::default()
    });
    let r = report(&out);
    assert_eq!(r.stale.first[0].offset_bytes, 10 * BS);
    assert_eq!(r.backlog_blocks, 64);
    assert_eq!(out[0].stats.write_ops, 64);
    assert_eq!(out[0].stats.read_ops, 0);
    // Found by its backlog check and again by the read-back.
    assert_eq!(r.stale.blocks, 2);
    assert!(out[0].failure.is_some());
}

#[test]
fn the_journal_holds_what_was_acknowledged_and_only_that() {
    let d = tempfile::tempdir().unwrap();
    // Buffered, fsync every 16 writes: acknowledged at each fsync, in 4 appends.
    let mut j = job(Access::Write, 64 * BS, 64);
    j.journal = Some(d.path().join("a.fsj"));
    j.fsync_every = Some(16);
    let (out, _) = run(&j, 64 * BS, |_| Script::default());
    let r = report(&out);
    assert_eq!((r.fsyncs, r.journal_acks, r.journal_appends), (4, 64, 4));
    let jr = Journal::read(d.path().join("a.fsj").as_path()).unwrap();
    assert_eq!(jr.records, 64);
    assert!((0..64).all(|b| jr.acked.get(&(0, b)) == Some(&1)));
    assert_eq!(jr.header.files, ["mock"]);
    // Buffered without fsync: nothing was promised, nothing is recorded.
    let mut j2 = j.clone();
    j2.journal = Some(d.path().join("b.fsj"));
    j2.fsync_every = None;
    run(&j2, 64 * BS, |_| Script::default());
    assert_eq!(Journal::read(&d.path().join("b.fsj")).unwrap().records, 0);
    // Direct: each completed write is acknowledged, without an fsync.
    let mut j3 = j2.clone();
    j3.journal = Some(d.path().join("c.fsj"));
    j3.cache = crate::job::CachePolicy::Direct;
    let (out, _) = run(&j3, 64 * BS, |_| Script::default());
    assert_eq!(report(&out).fsyncs, 0);
    assert_eq!(Journal::read(&d.path().join("c.fsj")).unwrap().records, 64);
    // A failed fsync acknowledges nothing.
    let mut j4 = j.clone();
    j4.journal = Some(d.path().join("d.fsj"));
    let (out, _) = run(&j4, 64 * BS, |_| Script {
        flush_errno: Some(libc::EIO),
        ..Default::default()
    });
    assert!(out[0].failure.as_ref().unwrap().message.contains("fsync"));
    assert_eq!(Journal::read(&d.path().join("d.fsj")).unwrap().records, 0);
}

#[test]
fn an_existing_journal_is_refused_and_kept() {
    let d = tempfile::tempdir().unwrap();
    let p = d.path().join("j.fsj");
    std::fs::write(&p, b"keep").unwrap();
    let mut j = job(Access::Write, 4 * BS, 4);
    j.journal = Some(p.clone());
    let plan = Plan {
        part: None,
        targets: Vec::new(),
        cache: j.cache,
        notes: Vec::new(),
    };
    let e = VerifyShared::create(&j, &plan).err().unwrap();
    assert!(crate::error::is_usage(&e), "{e}");
    assert_eq!(std::fs::read(&p).unwrap(), b"keep");
}

#[test]
fn a_run_that_writes_nothing_checks_nothing_and_says_so() {
    let j = job(Access::RandRead, 16 * BS, 100);
    let (out, _) = run(&j, 16 * BS, |_| Script::default());
    let r = report(&out);
    assert_eq!((r.blocks_checked, r.read_back_blocks), (0, 0));
    assert!(r.read_back_done);
    assert_eq!(out[0].stats.read_ops, 100);
}

#[test]
fn each_run_stamps_a_seed_of_its_own_and_the_journal_names_it() {
    // Else a block an earlier run left with the same offset and generation would pass for
    // this run's lost write.
    let d = tempfile::tempdir().unwrap();
    let mut j = job(Access::Write, 4 * BS, 4);
    let a = shared(&j, 4 * BS);
    let b = shared(&j, 4 * BS);
    assert_ne!(a.spec.seed, b.spec.seed);
    j.journal = Some(d.path().join("j.fsj"));
    let c = shared(&j, 4 * BS);
    let h = Journal::read(&d.path().join("j.fsj")).unwrap().header;
    assert_eq!(h.seed, c.spec.seed);
    // What an earlier run left is not this run's block.
    let mut old = vec![0u8; BS as usize];
    let id = |seed| crate::verify::block::BlockId {
        seed,
        file: 0,
        offset: 0,
    };
    crate::verify::block::fill(
        &mut old,
        &id(a.spec.seed),
        1,
        &crate::verify::block::block_crc(4096),
    );
    let mut r = VerifyReport::default();
    assert!(!r.judge(
        &old,
        &id(b.spec.seed),
        &crate::verify::block::block_crc(4096),
        1,
        0,
        "f"
    ));
    assert_eq!(r.misdirected.blocks, 1);
}
