use super::*;

fn worker(start_ns: u64, end_ns: u64) -> ThreadOutcome {
    ThreadOutcome {
        user: 0,
        thread: 0,
        stats: Stats {
            write_ops: 1,
            write_bytes: 4096,
            elapsed_s: (end_ns - start_ns) as f64 / 1e9,
            loop_start_ns: start_ns,
            loop_end_ns: end_ns,
            ..Default::default()
        },
        failure: None,
        verify: None,
        intervals: Vec::new(),
    }
}

fn outcome(threads: Vec<ThreadOutcome>) -> RunOutcome {
    RunOutcome {
        plan: Plan {
            part: None,
            targets: Vec::new(),
            cache: Default::default(),
            notes: Vec::new(),
        },
        threads,
        status: RunStatus::Complete,
        failures: Vec::new(),
        elapsed_s: 0.5,
        started_unix_s: 0.0,
        probes: Default::default(),
        status_interval_ns: None,
        steady: None,
        host: None,
        stability_grid_ns: None,
        host_ticks: Vec::new(),
    }
}

#[test]
fn a_ranks_span_is_its_workers_loop_clocks_on_the_barrier_clock() {
    // Barrier left at 1 s; workers ran 1.002..1.030 and 1.001..1.040; the main thread
    // heard of the end much later (9 s): that wake-up is not the rank's I/O.
    let mut rec = RankRecord::new(0, "h", Vec::new());
    let o = outcome(vec![
        worker(1_002_000_000, 1_030_000_000),
        worker(1_001_000_000, 1_040_000_000),
    ]);
    rec.fill(o, 1_000_000_000, 9.0);
    assert!((rec.start_s - 0.001).abs() < 1e-9, "{}", rec.start_s);
    assert!((rec.end_s - 0.040).abs() < 1e-9, "{}", rec.end_s);
}

/// A workload rank whose runs went (barrier, start, end, stopped) on its clock.
fn workload_rank(rank: u32, runs: &[(f64, f64, f64, bool)]) -> RankRecord {
    let mut rec = RankRecord::new(rank, "h", Vec::new());
    rec.workload = Some(WorkloadRank {
        runs: runs
            .iter()
            .map(|&(barrier_s, start_s, end_s, stopped)| RankRun {
                outcomes: Vec::new(),
                duration_s: end_s - start_s,
                stop_reason: String::new(),
                psrun: Vec::new(),
                started_unix_s: 0.0,
                start_s,
                end_s,
                barrier_s,
                stopped,
            })
            .collect(),
        filesets: Vec::new(),
    });
    rec
}

#[test]
fn a_workloads_stonewall_has_a_wall_per_run() {
    // Run 1: rank 1 ends first (0.5), the others are stopped; run 2 (barrier 1.0): rank 2
    // ends first (1.7). A rank that did not run (called off) counts for nothing.
    let mut off = workload_rank(3, &[(0.0, 0.001, 0.2, false)]);
    off.called_off = true;
    let records = vec![
        workload_rank(0, &[(0.0, 0.01, 0.52, true), (1.0, 1.01, 1.71, true)]),
        workload_rank(1, &[(0.0, 0.02, 0.5, false), (1.0, 1.02, 1.72, true)]),
        workload_rank(2, &[(0.0, 0.03, 0.53, true), (1.0, 1.03, 1.7, false)]),
        off,
    ];
    let sw = workload_stonewall(Stonewall::FirstFinish, &records, 2);
    assert_eq!(sw.mode, "first_finish");
    assert_eq!((sw.wall_s, sw.called_by_rank), (1.7, Some(2)));
    let timed = (0.5 - 0.01) + (1.7 - 1.01);
    assert!((sw.timed_s - timed).abs() < 1e-12, "{sw:?}");
    assert!((sw.stop_lag_s - 0.03).abs() < 1e-12, "{sw:?}");
    // A wall at a time: DUR after each run's barrier.
    let sw = workload_stonewall(Stonewall::Time(0.4), &records, 2);
    assert_eq!(
        (sw.mode.as_str(), sw.wall_s, sw.called_by_rank),
        ("time", 1.4, None)
    );
    assert!((sw.timed_s - (0.39 + 0.39)).abs() < 1e-12, "{sw:?}");
    assert!((sw.stop_lag_s - (1.72 - 1.4)).abs() < 1e-12, "{sw:?}");
    // Every rank stopped (none ended on its own): the earliest end is the wall.
    let all_stopped = vec![
        workload_rank(0, &[(0.0, 0.0, 0.6, true)]),
        workload_rank(1, &[(0.0, 0.0, 0.55, true)]),
    ];
    let sw = workload_stonewall(Stonewall::FirstFinish, &all_stopped, 1);
    assert_eq!((sw.wall_s, sw.called_by_rank), (0.55, None));
}

fn model(flowops: &str) -> fsbench_core::workload::model::Model {
    let text = format!(
        "define fileset name=fs,path=/nonexistent,entries=2,size=4k,prealloc
define process name=p {{ thread name=t {{ {flowops} }} }}"
    );
    let src = fsbench_core::workload::Source {
        name: "t.f".into(),
        text,
        defines: Vec::new(),
        shared_rank: None,
    };
    fsbench_core::workload::load_source(&src).unwrap_or_else(|e| panic!("{e:#}"))
}

#[test]
fn a_workloads_client_cache_note_is_there_only_for_buffered_reads_of_its_own_hosts_files() {
    let reads = model(
        "flowop openfile name=o,filesetname=fs,fd=1
         flowop readwholefile name=r,fd=1
         flowop closefile name=c,fd=1",
    );
    let rank = |r: u32, own: bool| {
        let mut rec = RankRecord::new(r, "h", Vec::new());
        rec.own_host_data = own;
        rec
    };
    // Every rank ran over another host's files: no note.
    let away = vec![rank(0, false), rank(1, false)];
    assert_eq!(workload_cache_note(&reads, &away, 2, Some(1)), None);
    // Reordered, all on one host: the note says --reorder-ranks cannot avoid it.
    let home = vec![rank(0, true), rank(1, true)];
    let n = workload_cache_note(&reads, &home, 1, Some(1)).unwrap();
    assert!(
        n.starts_with("client cache: 2 of 2 ranks") && n.contains("every rank ran on one host"),
        "{n}"
    );
    // Not reordered: the note says to add --reorder-ranks.
    let n = workload_cache_note(&reads, &home[..1], 2, None).unwrap();
    assert!(
        n.contains("1 of 1 ranks") && n.contains("add --reorder-ranks"),
        "{n}"
    );
    // No read flowop, or only direct reads: no note.
    let writes = model(
        "flowop openfile name=o,filesetname=fs,fd=1
         flowop write name=w,fd=1,iosize=4k
         flowop closefile name=c,fd=1",
    );
    assert_eq!(workload_cache_note(&writes, &home, 1, None), None);
    let direct = model(
        "flowop openfile name=o,filesetname=fs,fd=1
         flowop read name=r,fd=1,iosize=4k,directio
         flowop closefile name=c,fd=1",
    );
    assert_eq!(workload_cache_note(&direct, &home, 1, None), None);
}

#[test]
fn without_worker_clocks_the_heard_end_is_used() {
    let mut rec = RankRecord::new(0, "h", Vec::new());
    rec.fill(outcome(Vec::new()), 1_000_000_000, 2.0);
    assert!((rec.end_s - 2.0).abs() < 1e-9);
    assert!((rec.start_s - 1.5).abs() < 1e-9);
}
