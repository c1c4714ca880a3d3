//! The job's `--verify` hooks, run by its queue-depth loop (`runner/worker/drive.rs`): what a
//! worker does to every write (stamp the buffer with a
//! self-describing block of the next generation), to every read of a block the run wrote
//! (check it), every N writes (`--verify-backlog`: read those blocks back), at every fsync
//! (`--fsync-every`, `--journal`: make the acknowledgements durable), and after the timed
//! loop (read back every block the run wrote and check it). All I/O goes through the
//! worker's Engine. None of this is compiled into the loop of a run without verification
//! (`Core::drive` picks the loop with a const generic).

use crate::engine::{Completion, Engine, IoOp, OpKind};
use crate::job::{CachePolicy, Job, Route};
use crate::runner::target::Plan;
use crate::runner::worker::{IoFailure, RouteRule};
use crate::stats::SyscallCounts;
use crate::verify::block::BlockId;
use crate::verify::journal::{Ack, JournalHeader, JournalWriter};
use crate::verify::report::VerifyReport;
use crate::verify::table::{BlockWords, GenTable, State};
use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Acknowledgements gathered before one journal append (one write + one fdatasync) when
/// writes are acknowledged at completion (direct, dsync): the journal costs one fdatasync
/// per this many writes, not one per write.
const ACK_BATCH: usize = 256;

/// What a worker process needs to join a verifying run (crosses the pipe in the spec).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VerifySpec {
    pub table: PathBuf,
    /// First table block of each target, and its blocks.
    pub bases: Vec<u64>,
    pub blocks: Vec<u64>,
    pub seed: u64,
    pub journal: Option<PathBuf>,
    /// (device, inode) of the journal the run created.
    pub journal_id: Option<(u64, u64)>,
}

/// The seed stamped into this run's blocks: the job's seed (which also draws the offsets,
/// and stays reproducible) mixed with a value of this run alone, so a block an earlier run
/// left at the same offset, with the same generation, is never taken for this run's write
/// (it is judged misdirected: another run's block).
pub fn block_seed(job_seed: u64) -> u64 {
    crate::runner::verify::run_seed(job_seed)
}

/// The run's verification state shared by its workers: the generation table and where the
/// journal is.
pub struct VerifyShared {
    pub spec: VerifySpec,
    pub table: GenTable,
}

impl VerifyShared {
    /// Create the table (and the journal, refusing an existing file) for a run of `job`
    /// over the prepared targets. Called by the runner before any worker starts.
    pub(crate) fn create(job: &Job, plan: &Plan) -> Result<VerifyShared> {
        let bs = job.block_size;
        let mut bases = Vec::new();
        let mut blocks = Vec::new();
        let mut total = 0u64;
        for t in &plan.targets {
            // As the offset generator counts them: at least one block.
            let b = (t.size / bs).max(1);
            bases.push(total);
            blocks.push(b);
            total = total.saturating_add(b);
        }
        // With one thread (or process) per target no block has two writers.
        let table = GenTable::create(
            &std::env::temp_dir(),
            total,
            job.total_threads(),
            job.threads <= 1,
        )?;
        // A rank of a distributed run on a shared file stamps the seed rank 0 drew for all.
        let seed = plan
            .part
            .and_then(|p| p.verify_seed)
            .unwrap_or_else(|| block_seed(job.seed));
        let (journal, journal_id) = match &job.journal {
            None => (None, None),
            Some(p) => {
                let header = JournalHeader {
                    seed,
                    block_size: bs,
                    files: plan
                        .targets
                        .iter()
                        .map(|t| t.path.display().to_string())
                        .collect(),
                };
                let w = match JournalWriter::create(p, &header) {
                    Ok(w) => w,
                    Err(_) if p.symlink_metadata().is_ok() => crate::bail_usage!(
                        "--journal {}: the file exists; fsbench never overwrites a journal: name a new file",
                        p.display()
                    ),
                    Err(e) => return Err(e),
                };
                (Some(p.clone()), Some(w.identity()?))
            }
        };
        Ok(VerifyShared {
            spec: VerifySpec {
                table: table.path().to_path_buf(),
                bases,
                blocks,
                seed,
                journal,
                journal_id,
            },
            table,
        })
    }

    /// Join the run's table from a worker process.
    pub(crate) fn open(spec: VerifySpec) -> Result<VerifyShared> {
        let table = GenTable::open(&spec.table)?;
        Ok(VerifyShared { spec, table })
    }

    /// Remove the journal of a run refused before it started (it holds nothing).
    pub(crate) fn discard_journal(&self) {
        if let (Some(p), Some(id)) = (&self.spec.journal, self.spec.journal_id) {
            use std::os::unix::fs::MetadataExt;
            if p.symlink_metadata().is_ok_and(|m| (m.dev(), m.ino()) == id) {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// One worker's verification state. Allocated before the clock starts; the per-I/O hooks
/// do not allocate (the journal's batch vectors are sized up front and flushed when full).
pub(crate) struct Checker {
    /// The table's block words, copied here so an I/O reaches them without following
    /// `shared` (valid while `shared` lives: this struct holds both).
    words: BlockWords,
    shared: Arc<VerifyShared>,
    user: usize,
    thread: u32,
    threads: u32,
    target: String,
    base: u64,
    blocks: u64,
    bs: u64,
    /// log2 of `bs` when it is a power of two (the usual case): the block of an offset is
    /// then a shift, not a division on every op.
    bs_shift: Option<u32>,
    seed: u64,
    /// The whole-block CRC's constants for blocks of `bs` bytes.
    crc: crate::verify::block::BlockCrc,
    /// Per buffer slot: the generation a write in it carries (0: its block became
    /// unknown), or the table state a read in it saw when it was issued.
    slot_gen: Vec<u64>,
    slot_state: Vec<State>,
    /// Whether a completed write on each route is durable (O_DIRECT, O_DSYNC, O_SYNC).
    durable_route: [bool; 3],
    journal: Option<JournalWriter>,
    /// Completed writes not yet covered by an fsync (buffered routes, journal on).
    unsynced: Vec<Ack>,
    /// Acknowledged writes waiting for their journal append.
    acked: Vec<Ack>,
    fsync_every: Option<u64>,
    writes_since_fsync: u64,
    backlog: Option<u64>,
    backlog_blocks: Vec<u64>,
    /// Whether the run writes at all (a read-only run has nothing of its own to check).
    writes: bool,
    /// The data shape (`--buffer-compress`, `--dedupe`, `--buffer-pattern`) of the bytes
    /// after each written block's header; None: the derived payload.
    shape: Option<crate::engine::shaped::DataFill>,
    pub(crate) report: VerifyReport,
}

impl Checker {
    /// The checker of worker (`user`, `thread`) of `job`, with its journal opened.
    pub(crate) fn new(
        job: &Job,
        policy: CachePolicy,
        mmap: bool,
        shared: Arc<VerifyShared>,
        user: usize,
        thread: u32,
        target: String,
    ) -> Result<Checker> {
        let depth = job.effective_depth() as usize;
        let journal = match (&shared.spec.journal, shared.spec.journal_id) {
            (Some(p), Some(id)) => Some(JournalWriter::append_to(p, id)?),
            _ => None,
        };
        let synced_open = job.open.dsync || job.open.sync;
        let mut durable_route = [false; 3];
        if !mmap {
            durable_route[Route::Buffered as usize] = synced_open || policy.buffered_dsync();
            durable_route[Route::Direct as usize] = true;
            durable_route[Route::Fallback as usize] = true;
        }
        let backlog = job.verify_backlog;
        Ok(Checker {
            base: shared
                .spec
                .bases
                .get(user)
                .copied()
                .context("no such target")?,
            blocks: shared
                .spec
                .blocks
                .get(user)
                .copied()
                .context("no such target")?,
            seed: shared.spec.seed,
            crc: crate::verify::block::block_crc(job.block_size as usize),
            // SAFETY: the copy lives in this Checker beside `shared`, which owns the table.
            words: unsafe { shared.table.block_words() },
            shared,
            user,
            thread,
            threads: job.threads.max(1),
            target,
            bs: job.block_size,
            bs_shift: job
                .block_size
                .is_power_of_two()
                .then(|| job.block_size.trailing_zeros()),
            slot_gen: vec![0; depth],
            slot_state: vec![State(0); depth],
            durable_route,
            unsynced: Vec::with_capacity(if journal.is_some() { ACK_BATCH } else { 0 }),
            acked: Vec::with_capacity(if journal.is_some() { ACK_BATCH } else { 0 }),
            journal,
            fsync_every: job.fsync_every,
            writes_since_fsync: 0,
            backlog,
            writes: job.access.read_pct(job.read_pct) < 100,
            shape: None,
            backlog_blocks: Vec::with_capacity(backlog.unwrap_or(0).min(1 << 20) as usize),
            report: VerifyReport {
                read_back_done: false,
                ..Default::default()
            },
        })
    }

    fn block_of(&self, offset: u64) -> u64 {
        let o = offset & !IoOp::FLAGS;
        match self.bs_shift {
            Some(s) => o >> s,
            None => o / self.bs,
        }
    }

    /// The next op's offset is known: fetch its block's table word while this op runs.
    #[inline]
    pub(crate) fn prefetch(&self, offset: u64) {
        let block = self.block_of(offset);
        if block < self.blocks {
            self.words.prefetch(self.base + block);
        }
    }

    fn id(&self, block: u64) -> BlockId {
        BlockId {
            seed: self.seed,
            file: self.user as u64,
            offset: block * self.bs,
        }
    }

    fn table(&self) -> &GenTable {
        &self.shared.table
    }

    /// Before an op is submitted: a write takes the block's next generation and its buffer
    /// is filled with that block; a read notes the block's state.
    #[inline]
    pub(crate) fn issue(&mut self, op: &IoOp, buf: &mut [u8]) {
        let block = self.block_of(op.offset);
        if block >= self.blocks {
            return;
        }
        let t = self.base + block;
        match op.kind {
            OpKind::Write => {
                let issued = self.words.start_write(t);
                let id = self.id(block);
                let buf = &mut buf[..op.len as usize];
                match self.shape.as_mut() {
                    Some(shape) => {
                        crate::verify::block::fill_shaped(buf, &id, issued.generation, |rest| {
                            shape.fill(rest)
                        })
                    }
                    None => crate::verify::block::fill(buf, &id, issued.generation, &self.crc),
                }
                self.slot_gen[op.slot as usize] = if issued.overlapped {
                    0
                } else {
                    issued.generation
                };
            }
            OpKind::Read => self.slot_state[op.slot as usize] = self.words.state(t),
            // Job::validate refuses --verify with trims.
            OpKind::Trim => {}
        }
    }

    /// An op the engine never started (the run stopped with it still in the batch).
    pub(crate) fn abandon(&mut self, op: &IoOp) {
        let block = self.block_of(op.offset);
        if op.kind == OpKind::Write && block < self.blocks {
            self.words.fail_write(self.base + block);
        }
    }

    /// A completed op; `buf` is its buffer. `ok` is false for an error or a short transfer.
    #[inline]
    pub(crate) fn complete(&mut self, op: &IoOp, buf: &[u8], ok: bool) {
        let block = self.block_of(op.offset);
        if block >= self.blocks {
            return;
        }
        let t = self.base + block;
        match op.kind {
            OpKind::Write if !ok => self.words.fail_write(t),
            OpKind::Write => {
                let before = self.words.finish_write(t);
                let g = self.slot_gen[op.slot as usize];
                // Only the block's sole write in flight, with the content known, says what
                // the block holds now; the others are not acknowledged (their order is not
                // known), which the journal's reader treats as "not promised".
                let sole = g != 0 && before.in_flight() == 1 && !before.unknown();
                if self.journal.is_some() {
                    let ack = Ack {
                        file: self.user as u64,
                        block,
                        generation: if sole { g } else { before.generation() },
                        overlapped: !sole,
                    };
                    // An overlap promises nothing: journaled at once, not held for an fsync.
                    if self.durable_route[op.route as usize] || !sole {
                        self.acked.push(ack);
                    } else {
                        self.unsynced.push(ack);
                    }
                }
                self.writes_since_fsync += 1;
                if self.backlog.is_some() {
                    self.backlog_blocks.push(block);
                }
            }
            OpKind::Read if ok => {
                let seen = self.slot_state[op.slot as usize];
                if let Some(g) = seen.settled() {
                    if self.words.state(t) == seen {
                        self.report.run_read_blocks += 1;
                        let id = self.id(block);
                        let target = std::mem::take(&mut self.target);
                        self.report.judge(
                            &buf[..op.len as usize],
                            &id,
                            &self.crc,
                            g,
                            self.user,
                            &target,
                        );
                        self.target = target;
                    } else {
                        self.report.blocks_skipped_busy += 1;
                    }
                }
            }
            OpKind::Read | OpKind::Trim => {}
        }
    }

    /// Whether the worker loop's verify step has anything to do (checked inline on
    /// every turn of the loop; the step itself is out of line).
    #[inline]
    pub(crate) fn step_due(&self) -> bool {
        self.fsync_due() || self.journal_due() || self.backlog_due()
    }

    /// Whether an fsync is due (`--fsync-every`).
    #[inline]
    pub(crate) fn fsync_due(&self) -> bool {
        self.fsync_every
            .is_some_and(|n| self.writes_since_fsync >= n)
    }

    /// An fsync of the files completed (`ok`) or failed: the writes completed before it
    /// are acknowledged only when it succeeded.
    pub(crate) fn synced(&mut self, ok: bool) -> Result<(), IoFailure> {
        self.writes_since_fsync = 0;
        self.report.fsyncs += 1;
        if !ok {
            self.unsynced.clear();
            return Ok(());
        }
        self.acked.append(&mut self.unsynced);
        self.journal_flush()
    }

    /// Whether the journal batch is full (call [`Checker::journal_flush`]).
    #[inline]
    pub(crate) fn journal_due(&self) -> bool {
        self.acked.len() >= ACK_BATCH
    }

    /// Append the acknowledged writes to the journal and make them durable. A failure names
    /// the journal and where in it the append went, not the data file.
    pub(crate) fn journal_flush(&mut self) -> Result<(), IoFailure> {
        let Some(j) = self.journal.as_mut() else {
            self.acked.clear();
            return Ok(());
        };
        if self.acked.is_empty() {
            return Ok(());
        }
        if let Err(e) = j.append(&self.acked) {
            let journal = self.shared.spec.journal.as_deref();
            return Err(IoFailure {
                user: self.user,
                thread: self.thread,
                path: journal.map(|p| p.display().to_string()).unwrap_or_default(),
                offset: e.offset,
                message: e.to_string(),
            });
        }
        let overlaps = self.acked.iter().filter(|a| a.overlapped).count() as u64;
        self.report.journal_acks += self.acked.len() as u64 - overlaps;
        self.report.journal_overlaps += overlaps;
        self.report.journal_appends += 1;
        self.acked.clear();
        Ok(())
    }

    /// Whether the backlog is full: issuing pauses until it has been checked.
    #[inline]
    pub(crate) fn backlog_due(&self) -> bool {
        self.backlog
            .is_some_and(|n| self.backlog_blocks.len() as u64 >= n)
    }

    /// Read back and check the blocks of the backlog (none of the worker's I/O in flight).
    pub(crate) fn check_backlog<E: Engine + ?Sized>(
        &mut self,
        engine: &mut E,
        route: RouteRule,
        depth: usize,
    ) -> Result<(), IoFailure> {
        let t0 = Instant::now();
        let mut blocks = std::mem::take(&mut self.backlog_blocks);
        blocks.sort_unstable();
        blocks.dedup();
        let n = blocks.len() as u64;
        let r = self.read_blocks(engine, route, depth, &blocks);
        self.report.backlog_blocks += n;
        self.report.backlog_s += t0.elapsed().as_secs_f64();
        blocks.clear();
        self.backlog_blocks = blocks;
        r
    }

    /// After the timed loop: wait until every worker of the run has stopped writing, then
    /// read back this worker's share of the blocks the run wrote and check each.
    pub(crate) fn read_back<E: Engine + ?Sized>(
        &mut self,
        engine: &mut E,
        route: RouteRule,
        depth: usize,
        interrupt: &AtomicBool,
    ) -> Result<(), IoFailure> {
        self.table().worker_done();
        // After Ctrl-C the other workers stop at once; a worker that still has not arrived
        // a few seconds later (a worker process that died) is not waited for.
        let mut interrupted_at: Option<Instant> = None;
        while !self.table().all_done() {
            if self.table().aborted() {
                return Ok(());
            }
            if interrupt.load(Ordering::Relaxed) {
                let at = *interrupted_at.get_or_insert_with(Instant::now);
                if at.elapsed() > Duration::from_secs(5) {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let t0 = Instant::now();
        let mut batch = Vec::with_capacity(4096);
        let mut b = self.thread as u64;
        while b < self.blocks {
            let s = self.words.state(self.base + b);
            if s.generation() > 0 {
                if s.settled().is_some() {
                    batch.push(b);
                } else {
                    self.report.blocks_skipped_overlap += 1;
                }
            }
            if batch.len() == batch.capacity() {
                self.report.read_back_blocks += batch.len() as u64;
                self.read_blocks(engine, route, depth, &batch)?;
                batch.clear();
            }
            b += self.threads as u64;
        }
        self.report.read_back_blocks += batch.len() as u64;
        self.read_blocks(engine, route, depth, &batch)?;
        self.report.read_back_s = t0.elapsed().as_secs_f64();
        self.report.read_back_done = true;
        Ok(())
    }

    /// The failure that gives the run its status when blocks did not come back as written.
    pub(crate) fn failure(&self) -> Option<IoFailure> {
        let (_, offset, message) = crate::runner::verify::failure_of(&self.report, "block(s)")?;
        Some(IoFailure {
            user: self.user,
            thread: self.thread,
            path: self.target.clone(),
            offset,
            message,
        })
    }

    /// Shape the bytes after each written block's header with `fill`.
    pub(crate) fn shape_with(&mut self, fill: crate::engine::shaped::DataFill) {
        self.shape = Some(fill);
    }

    /// Whether the run writes (else the loop runs without the hooks).
    pub(crate) fn writes(&self) -> bool {
        self.writes
    }

    /// A run that wrote nothing: no block to check, and nothing left to do.
    pub(crate) fn nothing_written(&mut self) {
        self.table().worker_done();
        self.report.read_back_done = true;
    }

    /// This worker will not read back (its run failed): counted as finished all the same.
    pub(crate) fn skip_read_back(&mut self) {
        self.table().worker_done();
    }

    /// Tell the other workers this one failed and will not be checking.
    pub(crate) fn abort(&self) {
        self.table().abort();
    }

    /// Read `blocks` through the engine, up to `depth` at a time, and judge each against
    /// the table. I/O here is not the run's: its syscalls go to a counter of their own.
    fn read_blocks<E: Engine + ?Sized>(
        &mut self,
        engine: &mut E,
        route: RouteRule,
        depth: usize,
        blocks: &[u64],
    ) -> Result<(), IoFailure> {
        let mut sys = SyscallCounts::default();
        let depth = depth.max(1).min(self.slot_state.len().max(1));
        let mut free: Vec<u32> = (0..depth as u32).rev().collect();
        let mut slot_block = vec![0u64; depth];
        let mut pending = blocks.iter().copied().peekable();
        let mut batch: Vec<IoOp> = Vec::with_capacity(depth);
        let mut done: Vec<Completion> = Vec::with_capacity(depth * 2);
        let mut inflight = 0usize;
        let bs = self.bs;
        loop {
            while batch.len() + inflight < depth {
                let Some(&b) = pending.peek() else { break };
                let Some(slot) = free.pop() else { break };
                pending.next();
                let offset = b * bs;
                slot_block[slot as usize] = b;
                self.slot_state[slot as usize] = self.words.state(self.base + b);
                batch.push(IoOp {
                    kind: OpKind::Read,
                    file: 0,
                    route: route.route(offset, bs),
                    offset,
                    len: bs as u32,
                    slot,
                });
            }
            if !batch.is_empty() {
                let n = engine
                    .submit(&batch, &mut sys)
                    .map_err(|e| self.io_failure(batch[0].offset, format!("submit: {e}")))?;
                if n == 0 && inflight == 0 {
                    return Err(
                        self.io_failure(batch[0].offset, "submit: the engine took no read".into())
                    );
                }
                batch.drain(..n);
                inflight += n;
            }
            if inflight == 0 {
                return Ok(());
            }
            engine
                .reap(1, &mut done, &mut sys)
                .map_err(|e| self.io_failure(0, format!("reap: {e}")))?;
            for c in done.drain(..) {
                inflight -= 1;
                free.push(c.slot);
                let b = slot_block[c.slot as usize];
                let offset = b * bs;
                if c.result != bs as i64 {
                    let why = if c.result < 0 {
                        std::io::Error::from_raw_os_error((-c.result) as i32).to_string()
                    } else {
                        format!("{} of {bs} bytes", c.result)
                    };
                    return Err(self.io_failure(offset, format!("read failed: {why}")));
                }
                let seen = self.slot_state[c.slot as usize];
                let now = self.words.state(self.base + b);
                match seen.settled() {
                    Some(g) if now == seen => {
                        let id = self.id(b);
                        let target = std::mem::take(&mut self.target);
                        let buf = &engine.buffers().slot(c.slot as usize)[..bs as usize];
                        self.report
                            .judge(buf, &id, &self.crc, g, self.user, &target);
                        self.target = target;
                    }
                    None if seen.generation() > 0 && now == seen => {
                        self.report.blocks_skipped_overlap += 1
                    }
                    _ => self.report.blocks_skipped_busy += 1,
                }
            }
        }
    }

    fn io_failure(&self, offset: u64, message: String) -> IoFailure {
        IoFailure {
            user: self.user,
            thread: self.thread,
            path: self.target.clone(),
            offset: Some(offset),
            message: format!("verify read-back: {message}"),
        }
    }
}
