//! The MPI calls of a distributed run, all made from the rank's main thread (MPI thread level
//! FUNNELED): meeting points that time out instead of hanging, broadcast and gather of byte
//! strings (JSON documents), and the stonewall message.
//!
//! Every collective is entered only after a non-blocking barrier (MPI_Ibarrier) completed,
//! polled against a deadline: when a rank hangs or died without MPI noticing, the others say
//! which meeting point they waited at and abort the MPI job instead of waiting for ever.

use mpi::topology::SimpleCommunicator;
use mpi::traits::{Communicator, CommunicatorCollectives, Destination, Root, Source};
use std::time::{Duration, Instant};

/// Tag of the stonewall message: "I finished my work at this time of the barrier clock".
const STONE_TAG: i32 = 0x5701;
/// Longest host name exchanged.
const HOST_BYTES: usize = 256;

/// This process as one rank of the run.
pub(crate) struct World {
    world: SimpleCommunicator,
    pub rank: u32,
    pub size: u32,
    pub host: String,
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
            _universe: universe,
        })
    }

    /// Wait until every rank has reached this point, for at most `timeout`; past it, say so
    /// on stderr and abort the whole MPI job (exit status 3 on every rank).
    pub(crate) fn meet(&self, step: &str, timeout: Duration) {
        let t0 = Instant::now();
        let mut req = self.world.immediate_barrier();
        loop {
            match req.test() {
                Ok(_) => return,
                Err(r) => req = r,
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
            let nap =
                (t0.elapsed() / 5).clamp(Duration::from_micros(250), Duration::from_millis(5));
            std::thread::sleep(nap);
        }
    }

    /// Rank 0's bytes on every rank.
    pub(crate) fn broadcast(&self, step: &str, timeout: Duration, bytes: Vec<u8>) -> Vec<u8> {
        self.meet(step, timeout);
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

    /// Every rank's bytes at rank 0, in rank order (None on the other ranks).
    pub(crate) fn gather(
        &self,
        step: &str,
        timeout: Duration,
        mine: &[u8],
    ) -> Option<Vec<Vec<u8>>> {
        self.meet(step, timeout);
        if self.rank != 0 {
            self.world.process_at_rank(0).send(mine);
            return None;
        }
        let mut all = vec![mine.to_vec()];
        for r in 1..self.size as i32 {
            let (v, _) = self.world.process_at_rank(r).receive_vec::<u8>();
            all.push(v);
        }
        Some(all)
    }

    /// The least of every rank's value.
    pub(crate) fn all_min(&self, step: &str, timeout: Duration, v: u64) -> u64 {
        self.meet(step, timeout);
        let mut out = 0u64;
        self.world
            .all_reduce_into(&v, &mut out, mpi::collective::SystemOperation::min());
        out
    }

    /// The sum of every rank's value.
    pub(crate) fn all_sum(&self, step: &str, timeout: Duration, v: u64) -> u64 {
        self.meet(step, timeout);
        let mut out = 0u64;
        self.world
            .all_reduce_into(&v, &mut out, mpi::collective::SystemOperation::sum());
        out
    }

    /// Every rank's host name, in rank order.
    pub(crate) fn all_hosts(&self, timeout: Duration) -> Vec<String> {
        self.meet("exchanging host names", timeout);
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
        for _ in 0..n {
            let _ = self.world.any_process().receive_with_tag::<f64>(STONE_TAG);
        }
    }
}
