//! State shared by every worker thread and process of a run: one memfd-backed `MAP_SHARED`
//! mapping, so threads and re-executed child processes see the same atomics. It holds the run
//! control (start, stop, counts of live/blocked/done threads), the semaphores, the event
//! generator, each thread's progress counters (for psrun) and each fileset entry's state
//! (exists / busy). Waiting uses shared futexes, never process-private locks.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI64, AtomicU32, AtomicU64, Ordering::*};
use std::time::Duration;

pub const ENTRY_EXISTS: u32 = 1;
pub const ENTRY_BUSY: u32 = 2;
/// The entry's state word counts how many descriptors have it open, in the bits above these
/// two flags (Filebench's `fse_open_cnt`: `deletefile` skips a file that is open elsewhere).
pub const ENTRY_OPEN_ONE: u32 = 4;

/// Why a run was stopped early, as stored in `Control::stop`.
pub const STOP_NONE: u32 = 0;
pub const STOP_NORMAL: u32 = 1;

#[repr(C)]
pub struct Control {
    pub go: AtomicU32,
    pub stop: AtomicU32,
    pub ready: AtomicU32,
    pub live: AtomicU32,
    pub blocked: AtomicU32,
    pub done: AtomicU32,
    /// A thread could not obtain a file (Filebench's "out of resources").
    pub norsc: AtomicU32,
    pub failed: AtomicU32,
    pub start_ns: AtomicU64,
    /// Events per second times 1000 (0 = no event generator: limits do not block).
    pub event_rate_milli: AtomicU64,
    pub events_taken: AtomicU64,
    pub events_epoch_ns: AtomicU64,
    /// `--ramp-bytes`: how many threads are past their warm-up (it ended, or the thread did).
    pub warmed: AtomicU32,
    /// `--ramp-bytes`: when the latest of those warm-ups ended (`now_ns`): the measured window
    /// starts there.
    pub warm_end_ns: AtomicU64,
}

/// One semblock (or block) flowop instance, as in Filebench's System V pair: `count` is the
/// low-water semaphore semblock takes from and sempost adds to; `hw_used` is how much of the
/// high-water credit (`highwater`, the starting value of the second semaphore) blocking
/// sempost calls have taken and semblock has not yet given back.
#[repr(C, align(64))]
pub struct Sem {
    pub count: AtomicI64,
    pub seq: AtomicU32,
    pub hw_used: AtomicI64,
}

/// One thread's running totals, written only by that thread (so no contention).
#[repr(C, align(64))]
#[derive(Default)]
pub struct Progress {
    pub ops: AtomicU64,
    pub read_ops: AtomicU64,
    pub write_ops: AtomicU64,
    pub read_bytes: AtomicU64,
    pub write_bytes: AtomicU64,
}

/// Byte offsets of each part, computed the same way in the parent and in child processes.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Layout {
    pub sems_off: usize,
    pub nsems: usize,
    pub progress_off: usize,
    pub nthreads: usize,
    pub sets_off: Vec<usize>,
    pub set_len: Vec<usize>,
    /// `--verify`: the run's stream seed (8 bytes) then one [`EntryCheck`] per entry of
    /// every fileset, in fileset order.
    pub verify_off: usize,
    pub total: usize,
}

impl Layout {
    pub fn new(nsems: usize, nthreads: usize, set_entries: &[usize]) -> Self {
        let up = |x: usize| (x + 63) & !63;
        let sems_off = up(std::mem::size_of::<Control>());
        let progress_off = up(sems_off + nsems * std::mem::size_of::<Sem>());
        let mut at = up(progress_off + nthreads * std::mem::size_of::<Progress>());
        let mut sets_off = Vec::new();
        for &n in set_entries {
            // An exists-count word, the shared pick rotors, then one state word per entry.
            sets_off.push(at);
            at = up(at + SET_HEADER + n * 4);
        }
        let verify_off = at;
        let entries: usize = set_entries.iter().sum();
        at = up(at + 64 + entries * std::mem::size_of::<EntryCheck>());
        Layout {
            sems_off,
            nsems,
            progress_off,
            nthreads,
            sets_off,
            set_len: set_entries.to_vec(),
            verify_off,
            total: at.max(4096),
        }
    }
}

/// What `--verify` knows of one fileset entry, shared by every thread and process
/// (`crate::workload::verify` reads and moves it).
#[repr(C)]
#[derive(Default)]
pub struct EntryCheck {
    /// Which life of the file this is: one more each time it is created (O_TRUNC).
    pub incarnation: AtomicU64,
    /// Bytes from offset 0 that hold this incarnation's stream (the file's size when all is
    /// well).
    pub len: AtomicU64,
    /// One more at the start and at the end of every write or create: a read that sees it
    /// move was concurrent with one.
    pub seq: AtomicU64,
    /// Writes in flight.
    pub writers: AtomicU32,
    /// 1: what the file holds is not known (two writes at once, an aiowrite, a failed write,
    /// a write past the end, a reused file): its reads are skipped until it is recreated.
    pub unknown: AtomicU32,
}

/// Bytes before a fileset's entry words: the exists count (8) and three rotors (4 each:
/// existing files, absent files, directories), padded to 8.
const SET_HEADER: usize = 24;

/// Which of a fileset's shared rotation points a pick advances (Filebench's `fs_file_exrotor`,
/// `fs_file_nerotor`, `fs_dirrotor`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rotor {
    Exists = 0,
    Absent = 1,
    Dir = 2,
}

pub struct Arena {
    base: *mut u8,
    pub layout: Layout,
    fd: OwnedFd,
}

// SAFETY: the mapping is only accessed through atomics; it lives as long as the Arena.
unsafe impl Send for Arena {}
// SAFETY: as above; every shared word is an atomic.
unsafe impl Sync for Arena {}

impl Arena {
    /// Create a fresh zeroed mapping. The memfd is inheritable so child processes can map it.
    pub fn create(layout: Layout) -> std::io::Result<Arena> {
        let name = c"fsbench-workload";
        // SAFETY: valid NUL-terminated name; flags 0 (no CLOEXEC: children inherit it).
        let raw = unsafe { libc::memfd_create(name.as_ptr(), 0) };
        if raw < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: raw is a new descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        crate::sys::ftruncate(fd.as_raw_fd(), layout.total as u64)?;
        Self::map(fd, layout)
    }

    /// Map an arena inherited from the parent (child process side).
    pub fn attach(fd: RawFd, layout: Layout) -> std::io::Result<Arena> {
        // SAFETY: the parent passed this descriptor number to us and nothing else owns it here.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Self::map(fd, layout)
    }

    fn map(fd: OwnedFd, layout: Layout) -> std::io::Result<Arena> {
        // SAFETY: mapping a descriptor of at least `total` bytes, shared, read-write.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                layout.total,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Arena {
            base: p as *mut u8,
            layout,
            fd,
        })
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    pub fn ctl(&self) -> &Control {
        // SAFETY: offset 0 holds a Control; the zeroed mapping is a valid Control (all atomics).
        unsafe { &*(self.base as *const Control) }
    }
    pub fn sem(&self, i: usize) -> &Sem {
        assert!(i < self.layout.nsems);
        // SAFETY: index checked; aligned by Layout; zero is a valid Sem.
        unsafe {
            &*(self
                .base
                .add(self.layout.sems_off + i * std::mem::size_of::<Sem>())
                as *const Sem)
        }
    }
    pub fn progress(&self, slot: usize) -> &Progress {
        assert!(slot < self.layout.nthreads);
        // SAFETY: index checked; aligned by Layout.
        unsafe {
            &*(self
                .base
                .add(self.layout.progress_off + slot * std::mem::size_of::<Progress>())
                as *const Progress)
        }
    }
    pub fn set_exists_count(&self, set: usize) -> &AtomicU64 {
        // SAFETY: Layout reserved 8 aligned bytes at the start of each fileset's region.
        unsafe { &*(self.base.add(self.layout.sets_off[set]) as *const AtomicU64) }
    }
    /// The rotation point of a fileset: the index the next pick in rotation starts at.
    pub fn rotor(&self, set: usize, which: Rotor) -> &AtomicU32 {
        // SAFETY: Layout reserved SET_HEADER bytes per fileset; the rotors follow the 8-byte
        // count word, 4-byte aligned.
        unsafe {
            &*(self
                .base
                .add(self.layout.sets_off[set] + 8 + 4 * which as usize)
                as *const AtomicU32)
        }
    }
    pub fn entries(&self, set: usize) -> &[AtomicU32] {
        // SAFETY: Layout reserved set_len[set] u32 words after the header.
        unsafe {
            std::slice::from_raw_parts(
                self.base.add(self.layout.sets_off[set] + SET_HEADER) as *const AtomicU32,
                self.layout.set_len[set],
            )
        }
    }
}

impl Arena {
    /// The `--verify` stream seed of the run (0: the run does not verify).
    pub fn verify_seed(&self) -> &AtomicU64 {
        // SAFETY: Layout reserved 64 aligned bytes at verify_off.
        unsafe { &*(self.base.add(self.layout.verify_off) as *const AtomicU64) }
    }

    /// The `--verify` state of entry `i` of fileset `set`.
    pub fn entry_check(&self, set: usize, i: usize) -> &EntryCheck {
        assert!(i < self.layout.set_len[set]);
        let before: usize = self.layout.set_len[..set].iter().sum();
        // SAFETY: Layout reserved one EntryCheck per entry of every set after the 64-byte
        // seed block; index checked; zero is a valid EntryCheck (all atomics).
        unsafe {
            &*(self
                .base
                .add(self.layout.verify_off + 64 + (before + i) * std::mem::size_of::<EntryCheck>())
                as *const EntryCheck)
        }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what map() mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.layout.total) };
    }
}

/// Wait while `*word == expected`, at most `timeout` (shared futex: works across processes).
pub fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: word is a live aligned u32; FUTEX_WAIT reads it and sleeps; ts outlives the call.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
            0,
            0,
        )
    };
}

pub fn futex_wake_all(word: &AtomicU32) {
    // SAFETY: word is a live aligned u32.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            0,
            0,
            0,
        )
    };
}

pub use crate::stats::mono_ns as now_ns;

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    Got,
    Stopped,
}

impl Arena {
    pub fn stopping(&self) -> bool {
        self.ctl().stop.load(Relaxed) != STOP_NONE
    }

    /// Take `n` from semaphore `i`, blocking (counted as blocked for deadlock detection).
    pub fn sem_take(&self, i: usize, n: i64) -> Waited {
        let s = self.sem(i);
        let mut counted = false;
        let out = loop {
            let c = s.count.load(Acquire);
            if c >= n {
                if s.count.compare_exchange(c, c - n, AcqRel, Relaxed).is_ok() {
                    break Waited::Got;
                }
                continue;
            }
            if self.stopping() {
                break Waited::Stopped;
            }
            if !counted {
                self.ctl().blocked.fetch_add(1, SeqCst);
                counted = true;
            }
            let seq = s.seq.load(Acquire);
            if s.count.load(Acquire) >= n {
                continue;
            }
            futex_wait(&s.seq, seq, Duration::from_millis(20));
        };
        if counted {
            self.ctl().blocked.fetch_sub(1, SeqCst);
        }
        out
    }

    /// Filebench's semblock: give `n` back to the high-water credit, then take `n` from the
    /// semaphore, blocking until sempost has added that much.
    pub fn sem_block(&self, i: usize, n: i64) -> Waited {
        let s = self.sem(i);
        s.hw_used.fetch_sub(n, AcqRel);
        s.seq.fetch_add(1, Release);
        futex_wake_all(&s.seq);
        self.sem_take(i, n)
    }

    /// Filebench's sempost to one semblock instance: add `n` to its semaphore. With
    /// `blocking`, the post first takes `n` from the instance's high-water credit (starting at
    /// `highwater`, given back by semblock), waiting while less than `n` is left.
    pub fn sem_post(&self, i: usize, n: i64, highwater: u64, blocking: bool) -> Waited {
        let s = self.sem(i);
        if blocking {
            let mut counted = false;
            loop {
                let used = s.hw_used.load(Acquire);
                if highwater as i64 - used >= n {
                    if s.hw_used
                        .compare_exchange(used, used + n, AcqRel, Relaxed)
                        .is_ok()
                    {
                        break;
                    }
                    continue;
                }
                if self.stopping() {
                    if counted {
                        self.ctl().blocked.fetch_sub(1, SeqCst);
                    }
                    return Waited::Stopped;
                }
                if !counted {
                    self.ctl().blocked.fetch_add(1, SeqCst);
                    counted = true;
                }
                let seq = s.seq.load(Acquire);
                if highwater as i64 - s.hw_used.load(Acquire) >= n {
                    continue;
                }
                futex_wait(&s.seq, seq, Duration::from_millis(20));
            }
            if counted {
                self.ctl().blocked.fetch_sub(1, SeqCst);
            }
        }
        s.count.fetch_add(n, AcqRel);
        s.seq.fetch_add(1, Release);
        futex_wake_all(&s.seq);
        Waited::Got
    }

    /// Wake waiters that check the stop flag (after setting it).
    pub fn wake_everyone(&self) {
        for i in 0..self.layout.nsems {
            let s = self.sem(i);
            s.seq.fetch_add(1, Release);
            futex_wake_all(&s.seq);
        }
        self.ctl().go.store(1, SeqCst);
        futex_wake_all(&self.ctl().go);
    }

    /// Set the event generator's rate (events per second; 0 disables it).
    pub fn set_event_rate(&self, per_s: f64) {
        let c = self.ctl();
        c.event_rate_milli
            .store((per_s * 1000.0).max(0.0) as u64, SeqCst);
        c.events_taken.store(0, SeqCst);
        c.events_epoch_ns.store(now_ns(), SeqCst);
    }

    /// Take `n` events from the generator, waiting until that many have been generated.
    /// Without an event generator this returns at once (as in Filebench).
    pub fn take_events(&self, n: u64) -> Waited {
        let c = self.ctl();
        loop {
            let rate = c.event_rate_milli.load(Relaxed);
            if rate == 0 || n == 0 {
                return Waited::Got;
            }
            let elapsed = now_ns().saturating_sub(c.events_epoch_ns.load(Relaxed));
            let made = (elapsed as u128 * rate as u128 / 1_000_000_000_000u128) as u64;
            let taken = c.events_taken.load(Acquire);
            if taken + n <= made {
                if c.events_taken
                    .compare_exchange(taken, taken + n, AcqRel, Relaxed)
                    .is_ok()
                {
                    return Waited::Got;
                }
                continue;
            }
            if self.stopping() {
                return Waited::Stopped;
            }
            let missing = taken + n - made;
            let wait_ns = (missing as u128 * 1_000_000_000_000u128 / rate as u128) as u64;
            std::thread::sleep(Duration::from_nanos(wait_ns.clamp(20_000, 10_000_000)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn semaphore_across_threads_and_eventgen_rate() {
        let a = Arc::new(Arena::create(Layout::new(1, 1, &[10])).unwrap());
        let b = a.clone();
        let h = std::thread::spawn(move || b.sem_take(0, 2));
        std::thread::sleep(Duration::from_millis(30));
        assert_eq!(a.ctl().blocked.load(SeqCst), 1);
        a.sem_post(0, 1, 0, false);
        a.sem_post(0, 1, 0, false);
        assert_eq!(h.join().unwrap(), Waited::Got);
        assert_eq!(a.sem(0).count.load(SeqCst), 0);
        a.set_event_rate(1000.0);
        let t = std::time::Instant::now();
        for _ in 0..100 {
            a.take_events(1);
        }
        let el = t.elapsed().as_secs_f64();
        assert!(el > 0.08 && el < 0.5, "100 events at 1000/s took {el}");
        assert_eq!(a.entries(0).len(), 10);
    }
}
