//! The MPI calls of a distributed run, all made from the rank's main thread (MPI thread level
//! FUNNELED): meeting points that time out instead of hanging, broadcast and gather of byte
//! strings (JSON documents), and the stonewall message.
//!
//! Every collective is entered only after a non-blocking barrier (MPI_Ibarrier) completed,
//! polled against a deadline: when a rank hangs or died without MPI noticing, the others say
//! which meeting point they waited at and abort the MPI job instead of waiting for ever.
//!
//! When a rank dies, Open MPI's mpirun ends every other rank: SIGTERM, then SIGKILL one second
//! later (`odls_base_sigkill_timeout`). A meeting then never completes. So rank 0, once
//! signalled (Ctrl-C, SIGTERM), waits at a meeting point only [`SIGNAL_GRACE`] for the others;
//! past it the job is *ending*: rank 0 tells every rank so (a message, as the barrier it left
//! cannot be taken back), each rank waiting at a meeting point hears it there, and from then on
//! no collective is entered (each returns what this rank alone knows): [`World::gather_reported`]
//! sends rank 0 each rank's bytes point to point, rank 0 taking what arrives within
//! [`REPORT_WAIT`], so it can still write the Result of the ranks that reported and name the
//! ones that did not. Only rank 0 decides: a rank signalled alone (not through mpirun) waits
//! for the others as before, so no rank is left in a collective the others have given up.

use mpi::point_to_point::MatchedReceiveVec;
use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};
use std::cell::{Cell, RefCell};
use std::time::{Duration, Instant};

/// Tag of the stonewall message: "I finished my work at this time of the barrier clock".
const STONE_TAG: i32 = 0x5701;
/// Tag of a rank's bytes sent to rank 0 while the job is ending (no collective any more).
const REPORT_TAG: i32 = 0x5702;
/// Tag of rank 0's word to every rank that the job is ending.
const ENDING_TAG: i32 = 0x5703;
/// The (empty) content of that word: sent without waiting, so it must outlive the call.
static ENDING_WORD: [u8; 0] = [];
/// How long a signalled rank still waits at a meeting point: every live rank got the same
/// signal from mpirun at the same time, stops its workers at their next I/O and arrives within
/// milliseconds; one that does not arrive by then is dead, and mpirun's SIGKILL comes one
/// second after its SIGTERM.
const SIGNAL_GRACE: Duration = Duration::from_millis(150);
/// How long rank 0 waits for the other ranks' bytes once the job is ending (what arrives
/// later is lost with the SIGKILL that follows).
const REPORT_WAIT: Duration = Duration::from_millis(250);
/// Longest host name exchanged.
const HOST_BYTES: usize = 256;

/// This process as one rank of the run.
pub(crate) struct World {
    world: SimpleCommunicator,
    pub rank: u32,
    pub size: u32,
    pub host: String,
    /// A signal arrived and a meeting point did not complete within [`SIGNAL_GRACE`]: the
    /// MPI job is ending (a rank was lost); no collective is entered any more.
    ending: Cell<bool>,
    /// What this rank removes only after rank 0 wrote the Result ([`World::after_result`]).
    put_off: RefCell<Vec<Box<dyn FnOnce()>>>,
    /// Dropped last: MPI_Finalize.
    _universe: mpi::environment::Universe,
}

impl World {
    /// Initialise MPI (thread level FUNNELED: only this thread calls MPI).
    pub(crate) fn init() -> anyhow::Result<World> {
        let (universe, _level) = mpi::initialize_with_threading(mpi::Threading::Funneled)
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "MPI could not be initialised (already initialised in this process)"
                )
            })?;
        let world = universe.world();
        let host = mpi::environment::processor_name().unwrap_or_else(|_| "unknown-host".into());
        Ok(World {
            rank: world.rank() as u32,
            size: world.size() as u32,
            world,
            host,
            ending: Cell::new(false),
            put_off: RefCell::new(Vec::new()),
            _universe: universe,
        })
    }

    /// Remove what a run made only once the command's output is written: once the MPI job
    /// is ending without a lost rank, mpirun SIGKILLs every rank one second after its SIGTERM,
    /// and the Result naming the lost rank comes before removing a large tree. What the
    /// SIGKILL interrupts stays marked as this run's, and the next run in the same place
    /// removes it (`crate::leftover`).
    pub(crate) fn after_result(&self, removal: impl FnOnce() + 'static) {
        self.put_off.borrow_mut().push(Box::new(removal));
    }

    /// Do what [`World::after_result`] put off (every rank, before it ends).
    pub(crate) fn remove_put_off(&self) {
        let put_off = std::mem::take(&mut *self.put_off.borrow_mut());
        for removal in put_off {
            removal();
        }
    }

    /// The MPI job is ending without some rank (see the module notes): nothing more can be
    /// agreed with the others.
    pub(crate) fn ending(&self) -> bool {
        self.ending.get()
    }

    /// Wait until every rank has reached this point, for at most `timeout`; past it, say so
    /// on stderr and abort the whole MPI job (exit status 3 on every rank). False when the
    /// job is ending: this process was signalled and the others did not all arrive within
    /// [`SIGNAL_GRACE`] (or it was already ending).
    pub(crate) fn meet(&self, step: &str, timeout: Duration) -> bool {
        if self.ending.get() || self.heard_ending() {
            self.ending.set(true);
            return false;
        }
        let t0 = Instant::now();
        let mut signalled: Option<Instant> = None;
        let mut req = self.world.immediate_barrier();
        loop {
            // Rank 0's word first: once it gave up, this barrier may still complete (rank 0
            // entered it), but rank 0 is in no collective after it.
            let give_up = if self.rank == 0 {
                signalled.is_some_and(|s| s.elapsed() > SIGNAL_GRACE)
            } else {
                self.heard_ending()
            };
            if !give_up {
                match req.test() {
                    Ok(_) => return true,
                    Err(r) => req = r,
                }
            }
            if self.rank == 0 && signalled.is_none() && crate::runner::signal::interrupted() {
                signalled = Some(Instant::now());
            }
            if give_up {
                // The barrier cannot complete without the lost rank; its request stays with
                // MPI (dropping an incomplete request is an error in the bindings).
                std::mem::forget(req);
                self.ending.set(true);
                if self.rank == 0 {
                    self.announce_ending();
                    crate::runner::say(&format!(
                        "fsbench: rank 0 on {}: interrupted, and not every rank reached '{step}' within {} ms (a rank was lost): the ranks that are left report without it",
                        self.host,
                        SIGNAL_GRACE.as_millis()
                    ));
                }
                return false;
            }
            if t0.elapsed() > timeout {
                crate::runner::say(&format!(
                    "fsbench: rank {} on {}: waited {:.0} s for the other ranks at '{step}' (a rank hung or died; raise --mpi-timeout if a rank is only slow): aborting the MPI job",
                    self.rank,
                    self.host,
                    timeout.as_secs_f64()
                ));
                self.world.abort(3);
            }
            // Back off while waiting long (ranks that finished early must not take CPU from
            // the ones still running: with more ranks than cores every wake-up here is time
            // a writer does not get); the blocking collective after a meeting aligns the
            // ranks' exits, so this granularity does not skew the start, and a rank's end is
            // its workers' clock, not this loop's.
            let longest = if signalled.is_some() {
                Duration::from_millis(1)
            } else {
                Duration::from_millis(5)
            };
            let nap = (t0.elapsed() / 5).clamp(Duration::from_micros(250), longest);
            std::thread::sleep(nap);
        }
    }

    /// Rank 0 said the job is ending (never true on rank 0).
    fn heard_ending(&self) -> bool {
        self.rank != 0
            && self
                .world
                .process_at_rank(0)
                .immediate_probe_with_tag(ENDING_TAG)
                .is_some()
    }

    /// Rank 0: tell every other rank that the job is ending. Sent without waiting (a dead
    /// rank never takes it); the requests stay with MPI.
    fn announce_ending(&self) {
        for r in 1..self.size as i32 {
            let req = self.world.process_at_rank(r).immediate_send_with_tag(
                mpi::request::StaticScope,
                &ENDING_WORD[..],
                ENDING_TAG,
            );
            std::mem::forget(req);
        }
    }

    /// Rank 0's bytes on every rank (once the job is ending: rank 0 its own, the others none).
    pub(crate) fn broadcast(&self, step: &str, timeout: Duration, bytes: Vec<u8>) -> Vec<u8> {
        if !self.meet(step, timeout) {
            return if self.rank == 0 { bytes } else { Vec::new() };
        }
        let root = self.world.process_at_rank(0);
        let mut len = bytes.len() as u64;
        root.broadcast_into(&mut len);
        let mut buf = if self.rank == 0 {
            bytes
        } else {
            vec![0u8; len as usize]
        };
        if len > 0 {
            root.broadcast_into(&mut buf[..]);
        }
        buf
    }

    /// Every rank's bytes at rank 0, in rank order (None on the other ranks); once the job
    /// is ending, those of the ranks that reported ([`World::gather_reported`]).
    pub(crate) fn gather(
        &self,
        step: &str,
        timeout: Duration,
        mine: &[u8],
    ) -> Option<Vec<Vec<u8>>> {
        self.gather_reported(step, timeout, mine)
            .map(|all| all.into_iter().flatten().collect())
    }

    /// Every rank's bytes at rank 0, one slot per rank in rank order (None on the other
    /// ranks). Once the job is ending (see the module notes) each rank sends its bytes
    /// point to point and rank 0 takes those that arrive within [`REPORT_WAIT`]: the slot of
    /// a rank that did not report is None.
    pub(crate) fn gather_reported(
        &self,
        step: &str,
        timeout: Duration,
        mine: &[u8],
    ) -> Option<Vec<Option<Vec<u8>>>> {
        if !self.meet(step, timeout) {
            return self.reports(mine);
        }
        if self.rank != 0 {
            self.world.process_at_rank(0).send(mine);
            return None;
        }
        let mut all = vec![Some(mine.to_vec())];
        for r in 1..self.size as i32 {
            let (v, _) = self.world.process_at_rank(r).receive_vec::<u8>();
            all.push(Some(v));
        }
        Some(all)
    }

    /// [`World::gather_reported`] while the job is ending: no collective, a tagged message
    /// from each rank that is still there.
    fn reports(&self, mine: &[u8]) -> Option<Vec<Option<Vec<u8>>>> {
        if self.rank != 0 {
            // Rank 0 is waiting for it (or gone, and this rank ends with the job anyway).
            self.world
                .process_at_rank(0)
                .send_with_tag(mine, REPORT_TAG);
            return None;
        }
        let mut all: Vec<Option<Vec<u8>>> = vec![None; self.size as usize];
        all[0] = Some(mine.to_vec());
        let t0 = Instant::now();
        while all.iter().any(Option::is_none) && t0.elapsed() < REPORT_WAIT {
            match self
                .world
                .any_process()
                .immediate_matched_probe_with_tag(REPORT_TAG)
            {
                Some(matched) => {
                    let (v, status) = matched.matched_receive_vec::<u8>();
                    if let Some(slot) = all.get_mut(status.source_rank() as usize) {
                        *slot = Some(v);
                    }
                }
                None => std::thread::sleep(Duration::from_millis(1)),
            }
        }
        Some(all)
    }

    /// The least of every rank's value (once the job is ending: 0, nothing agreed).
    pub(crate) fn all_min(&self, step: &str, timeout: Duration, v: u64) -> u64 {
        if !self.meet(step, timeout) {
            return 0;
        }
        let mut out = 0u64;
        self.world
            .all_reduce_into(&v, &mut out, mpi::collective::SystemOperation::min());
        out
    }

    /// The sum of every rank's value (once the job is ending: this rank's own).
    pub(crate) fn all_sum(&self, step: &str, timeout: Duration, v: u64) -> u64 {
        if !self.meet(step, timeout) {
            return v;
        }
        let mut out = 0u64;
        self.world
            .all_reduce_into(&v, &mut out, mpi::collective::SystemOperation::sum());
        out
    }

    /// Every rank's host name, in rank order (once the job is ending: only this rank's known).
    pub(crate) fn all_hosts(&self, timeout: Duration) -> Vec<String> {
        if !self.meet("exchanging host names", timeout) {
            let mut hosts = vec!["unknown-host".to_string(); self.size as usize];
            hosts[self.rank as usize] = self.host.clone();
            return hosts;
        }
        let mut mine = [0u8; HOST_BYTES];
        let b = self.host.as_bytes();
        let n = b.len().min(HOST_BYTES);
        mine[..n].copy_from_slice(&b[..n]);
        let mut all = vec![0u8; HOST_BYTES * self.size as usize];
        self.world.all_gather_into(&mine[..], &mut all[..]);
        all.chunks(HOST_BYTES)
            .map(|c| {
                let end = c.iter().position(|&x| x == 0).unwrap_or(c.len());
                String::from_utf8_lossy(&c[..end]).into_owned()
            })
            .collect()
    }

    /// Tell every other rank that this one finished its work at `at_s` (barrier clock).
    pub(crate) fn send_stone(&self, at_s: f64) {
        for r in 0..self.size {
            if r != self.rank {
                self.world
                    .process_at_rank(r as i32)
                    .send_with_tag(&at_s, STONE_TAG);
            }
        }
    }

    /// A stonewall message, if one has arrived: (sender, its finishing time).
    pub(crate) fn poll_stone(&self) -> Option<(u32, f64)> {
        let status = self
            .world
            .any_process()
            .immediate_probe_with_tag(STONE_TAG)?;
        let from = status.source_rank();
        let (at, _) = self
            .world
            .process_at_rank(from)
            .receive_with_tag::<f64>(STONE_TAG);
        Some((from as u32, at))
    }

    /// Receive `n` stonewall messages that were sent but not yet received (after every rank
    /// has passed the end of its I/O, so all of them are on their way).
    pub(crate) fn drain_stones(&self, n: u64) {
        if self.ending.get() {
            // Their senders may be gone: nothing is waited for any more.
            return;
        }
        for _ in 0..n {
            let _ = self.world.any_process().receive_with_tag::<f64>(STONE_TAG);
        }
    }
}
