//! The generation table of a verifying run: for every block of every target, the newest
//! generation issued, how many writes of it are in flight, and whether its content became
//! unknown (two writes in flight at once, or a write that failed or never started).
//!
//! One `u64` per block, updated with atomics, so the worker threads share it without a lock;
//! the table lives in a file mapped `MAP_SHARED`, so worker processes (`--processes`) share
//! the very same words. The file is created `O_CREAT|O_EXCL|O_NOFOLLOW` in the temporary
//! directory and removed by the run (as soon as every process has mapped it).
//!
//! Word layout: bits 0..16 writes in flight, bit 16 "unknown", bits 17.. the generation.
//! A write takes the next generation and counts itself in flight in one compare-and-swap;
//! if another write of the block is already in flight, the block becomes unknown until a
//! later write starts with none in flight (that write, once complete, is the content again).
//!
//! When every block has one writer (one worker per target), a write's updates are a plain
//! load and store of its word: a locked read-modify-write waits for the store buffer to
//! drain, and on every op it is full of the 4 KiB the kernel or the fill just copied.

use anyhow::{bail, Context, Result};
use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

const INFLIGHT_MASK: u64 = 0xffff;
const UNKNOWN: u64 = 1 << 16;
const GEN_SHIFT: u32 = 17;
/// Header words: magic, blocks, workers, workers finished, abort flag, one writer per block,
/// spare.
const HEADER_WORDS: usize = 8;
const MAGIC: u64 = u64::from_le_bytes(*b"FSBGTAB1");
const W_MAGIC: usize = 0;
const W_BLOCKS: usize = 1;
const W_WORKERS: usize = 2;
const W_DONE: usize = 3;
const W_ABORT: usize = 4;
const W_ONE_WRITER: usize = 5;
/// Largest table accepted (8 bytes a block): beyond it the block size is too small for the
/// target, and the user is told so.
pub(crate) const MAX_TABLE_BYTES: u64 = 2 << 30;

/// A block's word, decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct State(pub u64);

impl State {
    pub(crate) fn generation(self) -> u64 {
        self.0 >> GEN_SHIFT
    }
    pub(crate) fn in_flight(self) -> u64 {
        self.0 & INFLIGHT_MASK
    }
    pub(crate) fn unknown(self) -> bool {
        self.0 & UNKNOWN != 0
    }
    /// Written by this run, nothing in flight, content known: what a read must find.
    pub(crate) fn settled(self) -> Option<u64> {
        (self.generation() > 0 && self.in_flight() == 0 && !self.unknown())
            .then_some(self.generation())
    }
}

/// What a write was given when it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Issued {
    pub generation: u64,
    /// Another write of the block was in flight: the block's content is now unknown.
    pub overlapped: bool,
}

/// The mapped table. Dropping it unmaps; the creator's drop also removes the file if it is
/// still there.
pub struct GenTable {
    ptr: *mut AtomicU64,
    words: usize,
    /// The per-block words (set once the header is known).
    blocks: BlockWords,
    path: PathBuf,
    /// Created here and not yet removed.
    owner: AtomicBool,
    _file: File,
}

// SAFETY: the mapping is only accessed through atomics; the pointer stays valid until drop.
unsafe impl Send for GenTable {}
// SAFETY: as above: every access to the shared words is atomic.
unsafe impl Sync for GenTable {}

/// The blocks' words of a table, as a small copyable handle: what a worker's per-I/O hooks
/// use, kept beside the worker's other hot fields so that an I/O does not follow the shared
/// state's pointers to reach it (the kernel's copy between two I/Os evicts those lines).
/// Valid while its table lives: [`GenTable::block_words`] says who keeps it alive.
#[derive(Clone, Copy)]
pub struct BlockWords {
    /// The first block's word.
    first: *const AtomicU64,
    blocks: u64,
    /// Every block is written by one worker only (see the module's doc).
    one_writer: bool,
}

// SAFETY: the words are only accessed through atomics (AtomicU64 is Sync); the holder keeps
// the mapping alive (see `GenTable::block_words`).
unsafe impl Send for BlockWords {}

impl GenTable {
    /// Create a table of `blocks` words for `workers` workers in `dir`; `one_writer`: no
    /// block is written by more than one of them (one worker per target).
    pub(crate) fn create(
        dir: &Path,
        blocks: u64,
        workers: u64,
        one_writer: bool,
    ) -> Result<GenTable> {
        let bytes = (HEADER_WORDS as u64 + blocks) * 8;
        if bytes > MAX_TABLE_BYTES {
            crate::bail_usage!(
                "--verify keeps 8 bytes per block: {blocks} blocks need {} MiB, more than {} MiB; use a larger --bs or a smaller --size",
                bytes >> 20,
                MAX_TABLE_BYTES >> 20
            );
        }
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = dir.join(format!(
            "fsbench-verify-{}-{stamp:x}.tbl",
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("verify table {}: cannot create it", path.display()))?;
        let mut t = GenTable::map(file, path, bytes as usize, true)?;
        t.header(W_BLOCKS).store(blocks, Ordering::Relaxed);
        t.header(W_WORKERS).store(workers, Ordering::Relaxed);
        t.header(W_ONE_WRITER)
            .store(one_writer as u64, Ordering::Relaxed);
        t.blocks = t.words_of(one_writer);
        t.header(W_MAGIC).store(MAGIC, Ordering::Release);
        t.owner.store(true, Ordering::Relaxed);
        Ok(t)
    }

    /// Map the table another process created (a worker process of the same run).
    pub(crate) fn open(path: &Path) -> Result<GenTable> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .with_context(|| format!("verify table {}: cannot open it", path.display()))?;
        let len = file.metadata()?.len();
        if len < (HEADER_WORDS * 8) as u64 || len % 8 != 0 {
            bail!("verify table {}: not a table ({len} bytes)", path.display());
        }
        let mut t = GenTable::map(file, path.to_path_buf(), len as usize, false)?;
        if t.header(W_MAGIC).load(Ordering::Acquire) != MAGIC
            || t.header(W_BLOCKS).load(Ordering::Relaxed) + HEADER_WORDS as u64 != t.words as u64
        {
            bail!("verify table {}: not a table of this run", path.display());
        }
        t.blocks = t.words_of(t.header(W_ONE_WRITER).load(Ordering::Relaxed) != 0);
        Ok(t)
    }

    fn map(file: File, path: PathBuf, bytes: usize, grow: bool) -> Result<GenTable> {
        use std::os::fd::AsRawFd;
        if grow {
            file.set_len(bytes as u64)
                .with_context(|| format!("verify table {}: sizing it", path.display()))?;
        }
        // SAFETY: a fresh shared mapping of `bytes` bytes of a file at least that long; the
        // result is checked before use and unmapped once, in drop.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                bytes,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let e = std::io::Error::last_os_error();
            if grow {
                let _ = std::fs::remove_file(&path);
            }
            bail!("verify table {}: mmap: {e}", path.display());
        }
        Ok(GenTable {
            ptr: p as *mut AtomicU64,
            words: bytes / 8,
            blocks: BlockWords {
                first: std::ptr::null(),
                blocks: 0,
                one_writer: false,
            },
            path,
            owner: AtomicBool::new(false),
            _file: file,
        })
    }

    /// Where the table is, for worker processes to open.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Remove the file (every process that needs it has mapped it). Idempotent.
    pub(crate) fn unlink(&self) {
        if self.owner.swap(false, Ordering::AcqRel) {
            let _ = std::fs::remove_file(&self.path);
        }
    }

    fn header(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < HEADER_WORDS);
        // SAFETY: i < HEADER_WORDS <= words; the mapping lives as long as self.
        unsafe { &*self.ptr.add(i) }
    }

    /// The block words' handle once the header is written or checked.
    fn words_of(&self, one_writer: bool) -> BlockWords {
        BlockWords {
            // SAFETY: HEADER_WORDS <= words (checked at creation and open).
            first: unsafe { self.ptr.add(HEADER_WORDS) },
            blocks: (self.words - HEADER_WORDS) as u64,
            one_writer,
        }
    }

    /// A copy of the blocks' handle.
    ///
    /// # Safety
    /// The caller must not use the copy after this table is dropped (a worker keeps the
    /// `Arc` that owns the table beside its copy).
    pub(crate) unsafe fn block_words(&self) -> BlockWords {
        self.blocks
    }

    /// A worker has finished its timed loop (or never got to run).
    pub(crate) fn worker_done(&self) {
        self.header(W_DONE).fetch_add(1, Ordering::AcqRel);
    }

    /// Some worker failed: nobody waits for the others to check.
    pub(crate) fn abort(&self) {
        self.header(W_ABORT).store(1, Ordering::Release);
    }

    pub(crate) fn aborted(&self) -> bool {
        self.header(W_ABORT).load(Ordering::Acquire) != 0
    }

    /// Whether every worker of the run has finished writing.
    pub(crate) fn all_done(&self) -> bool {
        self.header(W_DONE).load(Ordering::Acquire)
            >= self.header(W_WORKERS).load(Ordering::Relaxed)
    }
}

/// A table's block operations, borrowed from it (the safe way; a worker's hooks keep the
/// copy [`GenTable::block_words`] gives).
impl std::ops::Deref for GenTable {
    type Target = BlockWords;
    fn deref(&self) -> &BlockWords {
        &self.blocks
    }
}

impl BlockWords {
    #[inline]
    fn word(&self, block: u64) -> &AtomicU64 {
        assert!(block < self.blocks, "block {block} outside the table");
        // SAFETY: in bounds (checked above); the holder keeps the mapping alive.
        unsafe { &*self.first.add(block as usize) }
    }

    /// Ask the CPU to bring the block's word into the cache: the worker does this for its
    /// next op while the current one is in the kernel, whose copy of the data evicts the
    /// table between two ops (a miss on every op otherwise). A hint only: nothing is read.
    #[inline(always)]
    pub(crate) fn prefetch(&self, block: u64) {
        if block >= self.blocks {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: PREFETCHT0 (SSE, present on every x86-64 CPU) only hints the cache; it
        // never faults, and the address is inside the mapping (checked above).
        unsafe {
            use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.first.add(block as usize) as *const i8);
        }
    }

    /// The block's state now.
    #[inline]
    pub(crate) fn state(&self, block: u64) -> State {
        State(self.word(block).load(Ordering::Acquire))
    }

    /// A write of `block` starts: its generation, and whether it overlaps another in flight.
    #[inline]
    pub(crate) fn start_write(&self, block: u64) -> Issued {
        let w = self.word(block);
        let mut cur = w.load(Ordering::Relaxed);
        if self.one_writer {
            // Nobody else writes this word: no locked instruction (see the module's doc).
            let (new, issued) = next_write(cur);
            w.store(new, Ordering::Release);
            return issued;
        }
        loop {
            let (new, issued) = next_write(cur);
            match w.compare_exchange_weak(cur, new, Ordering::AcqRel, Ordering::Relaxed) {
                Ok(_) => return issued,
                Err(c) => cur = c,
            }
        }
    }

    /// A write of `block` completed whole. Returns the state just before, so the caller can
    /// tell whether it was the block's only write in flight (and so its content now).
    #[inline]
    pub(crate) fn finish_write(&self, block: u64) -> State {
        let w = self.word(block);
        if self.one_writer {
            let cur = w.load(Ordering::Relaxed);
            w.store(cur - 1, Ordering::Release);
            return State(cur);
        }
        State(w.fetch_sub(1, Ordering::AcqRel))
    }

    /// A write of `block` failed or never started: what the block holds is unknown.
    pub(crate) fn fail_write(&self, block: u64) {
        let w = self.word(block);
        if self.one_writer {
            let cur = w.load(Ordering::Relaxed);
            w.store((cur | UNKNOWN) - 1, Ordering::Release);
            return;
        }
        w.fetch_or(UNKNOWN, Ordering::AcqRel);
        w.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The word after a write of a block whose word is `cur` starts, and what the write gets.
#[inline(always)]
fn next_write(cur: u64) -> (u64, Issued) {
    let s = State(cur);
    let overlapped = s.in_flight() > 0;
    let generation = s.generation() + 1;
    let inflight = (s.in_flight() + 1).min(INFLIGHT_MASK);
    let unknown = if overlapped || inflight == INFLIGHT_MASK {
        UNKNOWN
    } else {
        0
    };
    (
        (generation << GEN_SHIFT) | unknown | inflight,
        Issued {
            generation,
            overlapped,
        },
    )
}

impl Drop for GenTable {
    fn drop(&mut self) {
        // SAFETY: unmapping the mapping made in `map`, once.
        unsafe { libc::munmap(self.ptr as *mut libc::c_void, self.words * 8) };
        self.unlink();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same rules whether the word is updated with locked instructions or, with one
    /// writer per block, plain loads and stores (queue depth > 1 still overlaps writes).
    #[test]
    fn the_last_completed_generation_wins_and_overlaps_are_unknown() {
        for one_writer in [false, true] {
            last_completed_wins(one_writer);
        }
    }

    fn last_completed_wins(one_writer: bool) {
        let d = tempfile::tempdir().unwrap();
        let t = GenTable::create(d.path(), 4, 1, one_writer).unwrap();
        assert_eq!(t.one_writer, one_writer);
        assert_eq!(t.state(0).settled(), None, "never written");
        let a = t.start_write(0);
        assert_eq!(
            a,
            Issued {
                generation: 1,
                overlapped: false
            }
        );
        assert_eq!(t.state(0).settled(), None, "in flight");
        t.finish_write(0);
        assert_eq!(t.state(0).settled(), Some(1));
        // Two in flight at once: unknown, whatever order they complete in.
        let b = t.start_write(0);
        let c = t.start_write(0);
        assert!(!b.overlapped && c.overlapped);
        assert_eq!((b.generation, c.generation), (2, 3));
        t.finish_write(0);
        t.finish_write(0);
        assert!(t.state(0).unknown());
        assert_eq!(t.state(0).settled(), None);
        // A later write alone makes it known again.
        let d2 = t.start_write(0);
        assert!(!d2.overlapped);
        t.finish_write(0);
        assert_eq!(t.state(0).settled(), Some(4));
        // A failed write leaves it unknown.
        t.start_write(1);
        t.fail_write(1);
        assert!(t.state(1).unknown() && t.state(1).in_flight() == 0);
    }

    #[test]
    fn processes_share_it_through_the_file_and_it_is_removed() {
        let d = tempfile::tempdir().unwrap();
        let t = GenTable::create(d.path(), 8, 2, false).unwrap();
        let other = GenTable::open(t.path()).unwrap();
        assert!(!other.one_writer);
        let single = GenTable::create(d.path(), 8, 2, true).unwrap();
        assert!(
            GenTable::open(single.path()).unwrap().one_writer,
            "read from the header"
        );
        drop(single);
        t.start_write(5);
        t.finish_write(5);
        assert_eq!(other.state(5).settled(), Some(1));
        assert!(!t.all_done());
        other.worker_done();
        t.worker_done();
        assert!(t.all_done());
        let p = t.path().to_path_buf();
        t.unlink();
        assert!(!p.exists());
        assert_eq!(other.state(5).settled(), Some(1), "mapped after removal");
        drop(t);
        assert!(std::fs::read_dir(d.path()).unwrap().next().is_none());
    }

    #[test]
    fn threads_race_without_losing_a_generation() {
        let d = tempfile::tempdir().unwrap();
        let t = std::sync::Arc::new(GenTable::create(d.path(), 1, 4, false).unwrap());
        let hs: Vec<_> = (0..4)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        t.start_write(0);
                        t.finish_write(0);
                    }
                })
            })
            .collect();
        for h in hs {
            h.join().unwrap();
        }
        let s = t.state(0);
        assert_eq!((s.generation(), s.in_flight()), (40_000, 0));
    }

    #[test]
    fn a_huge_table_is_refused_with_a_reason() {
        let d = tempfile::tempdir().unwrap();
        let e = GenTable::create(d.path(), 1 << 40, 1, true).err().unwrap();
        assert!(crate::error::is_usage(&e));
        assert!(e.to_string().contains("larger --bs"), "{e}");
    }
}
