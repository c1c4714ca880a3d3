//! The flowop interpreter: one call of [`run_thread`] is one WML thread instance. It waits for
//! the shared start signal, then runs its flowops in order, again and again, until the run
//! stops or a flowop finishes the thread (finishoncount/finishonbytes, out of files).
//!
//! The I/O path uses pre-built C paths, one aligned buffer per thread and raw syscalls
//! (pread/pwrite/pwritev2/open/unlink/...), so nothing allocates or locks beside the I/O
//! itself; latency and CPU are clock reads (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID).

use super::fileset::{pick, release, set_exists_keep_busy, Picked, SetLayout, Want};
use super::model::{flatten, Flowop, Kind, Model, ThreadSpec};
use super::shared::{futex_wait, now_ns, Arena, Waited};
use super::stats::{FlowStat, WireFlowStat};
use super::vars::Rng;
use crate::stats::{cpu::thread_usage, Usage};
use serde::{Deserialize, Serialize};
use std::sync::atomic::Ordering::*;
use std::time::Duration;

/// What every thread of a run shares (read-only apart from the arena's atomics).
pub struct Shared<'a> {
    pub model: &'a Model,
    pub layouts: &'a [SetLayout],
    pub arena: &'a Arena,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct ThreadId {
    pub process: usize,
    pub process_instance: u64,
    pub thread: usize,
    pub thread_instance: u64,
    /// Index of this thread's progress counters in the arena.
    pub slot: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum End {
    /// The run was stopped (time up, another thread finished first, Ctrl-C).
    Stopped,
    /// A finishoncount/finishonbytes flowop ended the thread.
    Finished(String),
    /// A flowop could not obtain a file in the state it needs.
    OutOfFiles(String),
    Failed(String),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThreadOutcome {
    pub id: ThreadId,
    pub flowops: Vec<WireFlowStat>,
    pub usage: Usage,
    pub end: End,
}

/// A page-aligned buffer (O_DIRECT needs aligned memory).
struct AlignedBuf {
    ptr: *mut u8,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let layout =
            std::alloc::Layout::from_size_align(len.max(4096), 4096).expect("valid layout");
        // SAFETY: non-zero size, valid alignment.
        let ptr = unsafe { std::alloc::alloc(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        // SAFETY: ptr points to len bytes we just allocated.
        unsafe { std::ptr::write_bytes(ptr, 0x5A, len.max(4096)) };
        AlignedBuf {
            ptr,
            len: len.max(4096),
        }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: same layout as in new().
        unsafe {
            std::alloc::dealloc(
                self.ptr,
                std::alloc::Layout::from_size_align(self.len, 4096).expect("valid"),
            )
        };
    }
}

struct OpenFd {
    fd: i32,
    set: usize,
    entry: usize,
    /// The entry is marked busy by us and must be released on close.
    exclusive: bool,
    offset: u64,
    direct: bool,
    /// File size at the first random access (the span of random offsets without workingset).
    span: Option<u64>,
}

enum Step {
    Ok,
    /// Counted as an op with no latency sample (finishon* checks).
    Quiet,
    Done(String),
    NoRsc(String),
    Stopped,
}

type StepResult = Result<Step, String>;

fn errno() -> std::io::Error {
    std::io::Error::last_os_error()
}

/// Per-flowop CPU time is read on one execution in this many.
pub const CPU_SAMPLE: u64 = 16;

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes into our timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

struct Aio {
    ring: io_uring::IoUring,
    inflight: u32,
}

struct Thread<'a> {
    sh: &'a Shared<'a>,
    id: ThreadId,
    buf: AlignedBuf,
    rng: Rng,
    /// Explicit `fd=N` slots.
    fds: Vec<Option<OpenFd>>,
    /// The file a flowop without `fd` keeps open, by flowop statistics index.
    implicit: Vec<Option<OpenFd>>,
    stats: Vec<FlowStat>,
    /// Totals of the thread for limits and finishon*: (ops, io ops, bytes).
    totals: (u64, u64, u64),
    /// Last totals each limit flowop saw, by statistics index.
    limit_seen: Vec<u64>,
    aio: Option<Aio>,
    aio_failed: bool,
}

/// Run one thread instance to its end.
pub fn run_thread(sh: &Shared, spec: &ThreadSpec, id: ThreadId) -> ThreadOutcome {
    let flat = flatten(&spec.flowops);
    let max_io = flat
        .iter()
        .map(|f| f.iosize.upper_hint())
        .fold(0.0, f64::max) as usize;
    let buf_len = (spec.memsize as usize).max(max_io).min(256 << 20);
    let mut t = Thread {
        sh,
        id,
        buf: AlignedBuf::new(buf_len),
        rng: Rng::new((id.slot as u64 + 1).wrapping_mul(0x9E37_79B9) ^ now_ns()),
        fds: (0..=1024).map(|_| None).collect(),
        implicit: (0..flat.len()).map(|_| None).collect(),
        stats: vec![FlowStat::default(); flat.len()],
        totals: (0, 0, 0),
        limit_seen: vec![0; flat.len()],
        aio: None,
        aio_failed: false,
    };
    let ctl = sh.arena.ctl();
    ctl.live.fetch_add(1, SeqCst);
    ctl.ready.fetch_add(1, SeqCst);
    while ctl.go.load(Acquire) == 0 {
        futex_wait(&ctl.go, 0, Duration::from_millis(50));
    }
    let u0 = thread_usage();
    let end = 'run: loop {
        for fo in &spec.flowops {
            if sh.arena.stopping() {
                break 'run End::Stopped;
            }
            match t.run_flowop(fo) {
                Ok(None) => {}
                Ok(Some(end)) => break 'run end,
                Err(e) => break 'run End::Failed(e),
            }
        }
    };
    t.drain_aio();
    t.close_all();
    if matches!(end, End::Finished(_) | End::OutOfFiles(_)) {
        ctl.done.fetch_add(1, SeqCst);
    }
    if matches!(end, End::OutOfFiles(_)) {
        ctl.norsc.fetch_add(1, SeqCst);
    }
    if matches!(end, End::Failed(_)) {
        ctl.failed.fetch_add(1, SeqCst);
    }
    ctl.live.fetch_sub(1, SeqCst);
    let usage = thread_usage().since(&u0);
    let flowops = flat
        .iter()
        .map(|f| t.stats[f.stat].to_wire(&f.name, f.kind))
        .collect();
    ThreadOutcome {
        id,
        flowops,
        usage,
        end,
    }
}

impl Thread<'_> {
    /// Run a flowop `iters` times. Ok(Some) ends the thread.
    fn run_flowop(&mut self, fo: &Flowop) -> Result<Option<End>, String> {
        for _ in 0..fo.iters {
            if self.sh.arena.stopping() {
                return Ok(Some(End::Stopped));
            }
            let t0 = now_ns();
            // The thread CPU clock is a system call: read it on every CPU_SAMPLE-th execution
            // of each flowop only (the summary's CPU per op is exact, from getrusage).
            let sample = self.stats[fo.stat].ops.is_multiple_of(CPU_SAMPLE);
            let c0 = if sample { thread_cpu_ns() } else { 0 };
            let (rb0, wb0, ro0, wo0) = {
                let s = &self.stats[fo.stat];
                (s.read_bytes, s.write_bytes, s.read_ops, s.write_ops)
            };
            let step = self.exec(fo).map_err(|e| {
                format!(
                    "flowop {} ({}) at line {}: {e}",
                    fo.name,
                    kind_name(fo.kind),
                    fo.pos.line
                )
            })?;
            match step {
                Step::Ok => {
                    let lat = now_ns().saturating_sub(t0);
                    let cpu = sample.then(|| thread_cpu_ns().saturating_sub(c0));
                    let s = &mut self.stats[fo.stat];
                    s.record(lat, cpu);
                    let bytes = (s.read_bytes - rb0) + (s.write_bytes - wb0);
                    let io = (s.read_ops - ro0) + (s.write_ops - wo0);
                    self.totals.0 += 1;
                    self.totals.1 += io;
                    self.totals.2 += bytes;
                    if is_io(fo.kind) {
                        let p = self.sh.arena.progress(self.id.slot);
                        // Only this thread writes its slot: plain load + store, no locked
                        // read-modify-write needed.
                        let bump = |a: &std::sync::atomic::AtomicU64, d: u64| {
                            if d > 0 {
                                a.store(a.load(Relaxed) + d, Relaxed);
                            }
                        };
                        bump(&p.ops, 1);
                        bump(&p.read_ops, s.read_ops - ro0);
                        bump(&p.write_ops, s.write_ops - wo0);
                        bump(&p.read_bytes, s.read_bytes - rb0);
                        bump(&p.write_bytes, s.write_bytes - wb0);
                    }
                }
                Step::Quiet => {}
                Step::Done(why) => return Ok(Some(End::Finished(why))),
                Step::NoRsc(why) => {
                    return Ok(Some(End::OutOfFiles(format!("flowop {}: {why}", fo.name))))
                }
                Step::Stopped => return Ok(Some(End::Stopped)),
            }
        }
        Ok(None)
    }

    fn iosize(&mut self, fo: &Flowop) -> usize {
        (fo.iosize.sample(&mut self.rng).max(1.0) as usize).min(self.buf.len)
    }

    fn exec(&mut self, fo: &Flowop) -> StepResult {
        use Kind::*;
        let arena = self.sh.arena;
        match fo.kind {
            Read | Write | AppendFile | AppendFileRand | AioWrite => self.rw(fo),
            ReadWholeFile => self.read_whole(fo),
            WriteWholeFile => self.write_whole(fo),
            OpenFile | CreateFile => self.open_or_create(fo),
            CloseFile => {
                let slot = fo.fd.unwrap_or(0);
                match self.fds[slot].take() {
                    Some(f) => {
                        self.close(f);
                        Ok(Step::Ok)
                    }
                    None => Err(format!("fd {slot} is not open")),
                }
            }
            DeleteFile => {
                let set = fo.fileset.unwrap_or(0);
                let i = match pick(arena, set, Want::Exists, true, &mut self.rng, fo.indexed) {
                    Picked::Got(i) => i,
                    Picked::NoRsc => return Ok(Step::NoRsc("no file left to delete".into())),
                };
                let path = &self.sh.layouts[set].path(i);
                // SAFETY: NUL-terminated path.
                let r = unsafe { libc::unlink(path.as_ptr()) };
                if r != 0 {
                    let e = errno();
                    release(arena, set, i, e.raw_os_error() != Some(libc::ENOENT));
                    return Err(format!("unlink {path:?}: {e}"));
                }
                release(arena, set, i, false);
                Ok(Step::Ok)
            }
            StatFile => {
                if let Some(slot) = fo.fd {
                    let Some(f) = &self.fds[slot] else {
                        return Err(format!("fd {slot} is not open"));
                    };
                    // SAFETY: stat buffer we own; fd is open.
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    if unsafe { libc::fstat(f.fd, &mut st) } != 0 {
                        let e = errno();
                        return Err(format!("fstat {:?}: {e}", self.entry_path(f)));
                    }
                    return Ok(Step::Ok);
                }
                let set = fo.fileset.unwrap_or(0);
                for _ in 0..8 {
                    let i = match pick(arena, set, Want::Exists, false, &mut self.rng, fo.indexed) {
                        Picked::Got(i) => i,
                        Picked::NoRsc => return Ok(Step::NoRsc("no file to stat".into())),
                    };
                    let path = &self.sh.layouts[set].path(i);
                    // SAFETY: stat buffer we own; NUL-terminated path.
                    let mut st: libc::stat = unsafe { std::mem::zeroed() };
                    if unsafe { libc::stat(path.as_ptr(), &mut st) } == 0 {
                        return Ok(Step::Ok);
                    }
                    let e = errno();
                    // Deleted by another thread between pick and stat: pick again.
                    if e.raw_os_error() != Some(libc::ENOENT) {
                        return Err(format!("stat {path:?}: {e}"));
                    }
                }
                Ok(Step::NoRsc(
                    "files vanish faster than they can be stat'ed".into(),
                ))
            }
            MakeDir | RemoveDir => {
                let set = fo.fileset.unwrap_or(0);
                let want = if fo.kind == MakeDir {
                    Want::Absent
                } else {
                    Want::Exists
                };
                let i = match pick(arena, set, want, true, &mut self.rng, fo.indexed) {
                    Picked::Got(i) => i,
                    Picked::NoRsc => {
                        return Ok(Step::NoRsc(format!(
                            "no directory left to {}",
                            if fo.kind == MakeDir { "make" } else { "remove" }
                        )))
                    }
                };
                let path = &self.sh.layouts[set].path(i);
                // SAFETY: NUL-terminated path.
                let r = unsafe {
                    if fo.kind == MakeDir {
                        libc::mkdir(path.as_ptr(), 0o755)
                    } else {
                        libc::rmdir(path.as_ptr())
                    }
                };
                if r != 0 {
                    let e = errno();
                    release(arena, set, i, fo.kind == RemoveDir);
                    return Err(format!(
                        "{} {path:?}: {e}",
                        if fo.kind == MakeDir { "mkdir" } else { "rmdir" }
                    ));
                }
                release(arena, set, i, fo.kind == MakeDir);
                Ok(Step::Ok)
            }
            ListDir => self.listdir(fo),
            Fsync => {
                let slot = fo.fd.unwrap_or(0);
                let Some(f) = &self.fds[slot] else {
                    return Err(format!("fd {slot} is not open"));
                };
                // SAFETY: open descriptor.
                if unsafe { libc::fsync(f.fd) } != 0 {
                    let e = errno();
                    return Err(format!("fsync {:?}: {e}", self.entry_path(f)));
                }
                Ok(Step::Ok)
            }
            FsyncSet => {
                let set = fo.fileset.unwrap_or(0);
                for f in self.fds.iter().chain(self.implicit.iter()).flatten() {
                    // SAFETY: open descriptor.
                    if f.set == set && unsafe { libc::fsync(f.fd) } != 0 {
                        let e = errno();
                        return Err(format!("fsync {:?}: {e}", self.entry_path(f)));
                    }
                }
                Ok(Step::Ok)
            }
            AioWait => self.aio_wait(),
            Block | SemBlock => {
                let n = if fo.kind == Block {
                    1
                } else {
                    fo.value.sample(&mut self.rng).max(1.0) as i64
                };
                match arena.sem_take(fo.target.unwrap_or(0), n) {
                    Waited::Got => Ok(Step::Ok),
                    Waited::Stopped => Ok(Step::Stopped),
                }
            }
            Wakeup | SemPost => {
                let n = fo.value.sample(&mut self.rng).max(1.0) as i64;
                let target = fo.target.unwrap_or(0);
                let hw = self
                    .sh
                    .model
                    .sems
                    .get(target)
                    .map(|s| s.highwater)
                    .unwrap_or(0);
                match arena.sem_post(target, n, hw, fo.blocking) {
                    Waited::Got => Ok(Step::Ok),
                    Waited::Stopped => Ok(Step::Stopped),
                }
            }
            Hog => {
                let n = fo.value.sample(&mut self.rng).max(0.0) as u64;
                let len = self.buf.len;
                for i in 0..n {
                    // SAFETY: index is within the buffer; volatile keeps the busy loop.
                    unsafe {
                        std::ptr::write_volatile(self.buf.ptr.add((i as usize * 64) % len), i as u8)
                    };
                }
                Ok(Step::Ok)
            }
            Delay => {
                let secs = fo.value.sample(&mut self.rng).max(0.0);
                let until = now_ns() + (secs * 1e9) as u64;
                while now_ns() < until {
                    if arena.stopping() {
                        return Ok(Step::Stopped);
                    }
                    std::thread::sleep(Duration::from_nanos((until - now_ns()).min(50_000_000)));
                }
                Ok(Step::Ok)
            }
            EventLimit => self.events(1),
            BwLimit | IopsLimit | OpsLimit => {
                let now = match fo.target {
                    Some(j) => {
                        let s = &self.stats[j];
                        match fo.kind {
                            BwLimit => s.bytes(),
                            IopsLimit => s.read_ops + s.write_ops,
                            _ => s.ops,
                        }
                    }
                    None => match fo.kind {
                        BwLimit => self.totals.2,
                        IopsLimit => self.totals.1,
                        _ => self.totals.0,
                    },
                };
                let seen = std::mem::replace(&mut self.limit_seen[fo.stat], now);
                let delta = now.saturating_sub(seen);
                // One event per MiB for bwlimit (as Filebench), one per operation otherwise.
                let events = if fo.kind == BwLimit {
                    delta.div_ceil(1 << 20)
                } else {
                    delta
                };
                self.events(events)
            }
            FinishOnCount | FinishOnBytes => {
                let limit = fo.value.sample(&mut self.rng).max(0.0) as u64;
                let have = match (fo.kind, fo.target) {
                    (FinishOnCount, Some(j)) => self.stats[j].ops,
                    (FinishOnCount, None) => self.totals.0,
                    (_, Some(j)) => self.stats[j].bytes(),
                    (_, None) => self.totals.2,
                };
                if have >= limit {
                    let what = if fo.kind == FinishOnCount {
                        "operations"
                    } else {
                        "bytes"
                    };
                    return Ok(Step::Done(format!("{} reached {limit} {what}", fo.name)));
                }
                Ok(Step::Quiet)
            }
            Composite => {
                for inner in &fo.inner {
                    if let Some(end) = self.run_flowop(inner)? {
                        return Ok(match end {
                            End::Stopped => Step::Stopped,
                            End::Finished(w) => Step::Done(w),
                            End::OutOfFiles(w) => Step::NoRsc(w),
                            End::Failed(w) => return Err(w),
                        });
                    }
                }
                Ok(Step::Ok)
            }
        }
    }

    fn events(&mut self, n: u64) -> StepResult {
        match self.sh.arena.take_events(n) {
            Waited::Got => Ok(Step::Ok),
            Waited::Stopped => Ok(Step::Stopped),
        }
    }

    fn open_flags(&self, fo: &Flowop, write: bool) -> i32 {
        let mut fl = if write { libc::O_RDWR } else { libc::O_RDONLY };
        if let Some(set) = fo.fileset {
            if self.sh.model.filesets[set].readonly {
                fl = libc::O_RDONLY;
            }
        }
        if fo.directio {
            fl |= libc::O_DIRECT;
        }
        if fo.dsync {
            fl |= libc::O_DSYNC;
        }
        fl | libc::O_CLOEXEC
    }

    fn open_entry(
        &self,
        fo: &Flowop,
        set: usize,
        i: usize,
        flags: i32,
        exclusive: bool,
    ) -> Result<OpenFd, std::io::Error> {
        let path = &self.sh.layouts[set].path(i);
        // SAFETY: NUL-terminated path; mode for O_CREAT.
        let fd = unsafe { libc::open(path.as_ptr(), flags, 0o644) };
        if fd < 0 {
            return Err(errno());
        }
        if fo.noreadahead {
            // SAFETY: open descriptor.
            unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_RANDOM) };
        }
        Ok(OpenFd {
            fd,
            set,
            entry: i,
            exclusive,
            offset: 0,
            direct: flags & libc::O_DIRECT != 0,
            span: None,
        })
    }

    fn open_or_create(&mut self, fo: &Flowop) -> StepResult {
        let arena = self.sh.arena;
        let set = fo.fileset.unwrap_or(0);
        let slot = fo.fd.unwrap_or(0);
        if let Some(old) = self.fds[slot].take() {
            self.close(old);
        }
        let create = fo.kind == Kind::CreateFile;
        let want = if create { Want::Absent } else { Want::Exists };
        let i = match pick(arena, set, want, true, &mut self.rng, fo.indexed) {
            Picked::Got(i) => i,
            Picked::NoRsc => {
                return Ok(Step::NoRsc(if create {
                    "every file of the fileset exists".into()
                } else {
                    "no file of the fileset exists".into()
                }))
            }
        };
        let mut flags = self.open_flags(fo, true);
        if create {
            flags |= libc::O_CREAT | libc::O_TRUNC;
        }
        match self.open_entry(fo, set, i, flags, true) {
            Ok(f) => {
                if create {
                    set_exists_keep_busy(arena, set, i, true);
                }
                self.fds[slot] = Some(f);
                Ok(Step::Ok)
            }
            Err(e) => {
                release(arena, set, i, !create);
                Err(format!("open {:?}: {e}", self.sh.layouts[set].path(i)))
            }
        }
    }

    /// The path of an open file, for error messages (not used on the I/O path).
    fn entry_path(&self, f: &OpenFd) -> super::fileset::CPath {
        self.sh.layouts[f.set].path(f.entry)
    }

    fn close(&mut self, f: OpenFd) {
        // SAFETY: we own the descriptor.
        unsafe { libc::close(f.fd) };
        if f.exclusive {
            release(self.sh.arena, f.set, f.entry, true);
        }
    }

    fn close_all(&mut self) {
        let all: Vec<OpenFd> = self
            .fds
            .iter_mut()
            .chain(self.implicit.iter_mut())
            .filter_map(|f| f.take())
            .collect();
        for f in all {
            self.close(f);
        }
    }

    /// The descriptor a read/write flowop uses: its `fd`, or the file it keeps open itself.
    fn file_for(&mut self, fo: &Flowop, write: bool) -> Result<Option<&mut OpenFd>, String> {
        if let Some(slot) = fo.fd {
            return match self.fds[slot].as_mut() {
                Some(f) => Ok(Some(f)),
                None => Err(format!("fd {slot} is not open (an openfile or createfile with fd={slot} must come first)")),
            };
        }
        let set = fo.fileset.unwrap_or(0);
        if fo.opennext {
            if let Some(old) = self.implicit[fo.stat].take() {
                self.close(old);
            }
        }
        if self.implicit[fo.stat].is_none() {
            let spec = &self.sh.model.filesets[set];
            let mut flags = self.open_flags(fo, write);
            let i = if spec.is_file {
                let exists =
                    self.sh.arena.entries(set)[0].load(Acquire) & super::shared::ENTRY_EXISTS != 0;
                if !exists {
                    if !write {
                        return Ok(None);
                    }
                    flags |= libc::O_CREAT;
                }
                0
            } else {
                match pick(
                    self.sh.arena,
                    set,
                    Want::Exists,
                    false,
                    &mut self.rng,
                    fo.indexed,
                ) {
                    Picked::Got(i) => i,
                    Picked::NoRsc => return Ok(None),
                }
            };
            let f = self
                .open_entry(fo, set, i, flags, false)
                .map_err(|e| format!("open {:?}: {e}", self.sh.layouts[set].path(i)))?;
            if spec.is_file && flags & libc::O_CREAT != 0 {
                super::fileset::release(self.sh.arena, set, 0, true);
            }
            self.implicit[fo.stat] = Some(f);
        }
        Ok(self.implicit[fo.stat].as_mut())
    }

    fn rw(&mut self, fo: &Flowop) -> StepResult {
        let write = fo.kind != Kind::Read;
        let mut size = self.iosize(fo);
        if fo.kind == Kind::AppendFileRand {
            size = self.rng.below(size as u64) as usize + 1;
        }
        let random = fo.random;
        let wss = fo.wss;
        let r = self.rng.next_u64();
        let buf = self.buf.ptr;
        if fo.kind == Kind::AioWrite && !self.aio_failed && self.aio.is_none() {
            match io_uring::IoUring::new(256) {
                Ok(ring) => self.aio = Some(Aio { ring, inflight: 0 }),
                Err(_) => self.aio_failed = true,
            }
        }
        let directio = fo.directio;
        let (fd, cur_off, file_span, at) = {
            let f = match self.file_for(fo, write)? {
                Some(f) => f,
                None => return Ok(Step::NoRsc("no file to read or write".into())),
            };
            if directio && !f.direct {
                // The descriptor came from an openfile without directio: switch it on now.
                // SAFETY: open descriptor; F_GETFL/F_SETFL have no memory arguments.
                unsafe {
                    let fl = libc::fcntl(f.fd, libc::F_GETFL);
                    libc::fcntl(f.fd, libc::F_SETFL, fl | libc::O_DIRECT);
                }
                f.direct = true;
            }
            if random && wss == 0 && f.span.is_none() {
                // Once per open file, not per I/O: the span random offsets are drawn from.
                // SAFETY: stat buffer we own; open descriptor.
                let mut st: libc::stat = unsafe { std::mem::zeroed() };
                unsafe { libc::fstat(f.fd, &mut st) };
                f.span = Some(st.st_size as u64);
            }
            (f.fd, f.offset, f.span.unwrap_or(0), (f.set, f.entry))
        };
        let offset = if random {
            let span = if wss > 0 { wss } else { file_span };
            let blocks = (span.saturating_sub(size as u64) / size as u64) + 1;
            (r % blocks) * size as u64
        } else {
            cur_off
        };
        let mut new_off = cur_off;
        let s = &mut self.stats[fo.stat];
        match fo.kind {
            Kind::Read => {
                // SAFETY: buf holds at least `size` bytes (size is clamped to the buffer).
                let mut n =
                    unsafe { libc::pread(fd, buf as *mut libc::c_void, size, offset as i64) };
                if n == 0 && !random && offset > 0 {
                    // End of file on a sequential read: start again at the beginning.
                    // SAFETY: as above.
                    n = unsafe { libc::pread(fd, buf as *mut libc::c_void, size, 0) };
                    new_off = 0;
                }
                if n < 0 {
                    s.errors += 1;
                    let e = errno();
                    let path = self.sh.layouts[at.0].path(at.1);
                    return Err(format!("read {path:?} at offset {offset}: {e}"));
                }
                if !random {
                    new_off += n as u64;
                }
                s.read_ops += 1;
                s.read_bytes += n as u64;
            }
            Kind::AioWrite if self.aio.is_some() => {
                let Some(aio) = self.aio.as_mut() else {
                    unreachable!("checked")
                };
                if aio.inflight as usize >= 255 {
                    // Queue full: reap at least one before queueing more.
                    reap(aio, 1).map_err(|e| format!("aiowrite completion: {e}"))?;
                }
                let e = io_uring::opcode::Write::new(io_uring::types::Fd(fd), buf, size as u32)
                    .offset(offset)
                    .build();
                // SAFETY: the buffer lives until the thread ends, and every queued write is
                // reaped (aiowait or drain_aio) before that.
                unsafe {
                    aio.ring
                        .submission()
                        .push(&e)
                        .map_err(|_| "aio queue full".to_string())?
                };
                aio.ring
                    .submit()
                    .map_err(|e| format!("io_uring submit: {e}"))?;
                aio.inflight += 1;
                if !random {
                    new_off += size as u64;
                }
                s.write_ops += 1;
                s.write_bytes += size as u64;
            }
            _ => {
                let append = matches!(fo.kind, Kind::AppendFile | Kind::AppendFileRand);
                let mut flags = 0;
                if append {
                    flags |= libc::RWF_APPEND;
                }
                if fo.dsync {
                    flags |= libc::RWF_DSYNC;
                }
                let iov = libc::iovec {
                    iov_base: buf as *mut libc::c_void,
                    iov_len: size,
                };
                let off = if append { -1 } else { offset as i64 };
                // SAFETY: one iovec over our buffer; descriptor open.
                let n = unsafe { libc::pwritev2(fd, &iov, 1, off, flags) };
                if n < 0 {
                    s.errors += 1;
                    let e = errno();
                    let path = self.sh.layouts[at.0].path(at.1);
                    return Err(format!(
                        "write of {size} bytes to {path:?} at offset {offset}: {e}"
                    ));
                }
                if !random && !append {
                    new_off += n as u64;
                }
                s.write_ops += 1;
                s.write_bytes += n as u64;
            }
        }
        if new_off != cur_off {
            if let Ok(Some(f)) = self.file_for_again(fo) {
                f.offset = new_off;
            }
        }
        Ok(Step::Ok)
    }

    /// The descriptor `file_for` returned, without opening anything.
    fn file_for_again(&mut self, fo: &Flowop) -> Result<Option<&mut OpenFd>, String> {
        Ok(match fo.fd {
            Some(slot) => self.fds[slot].as_mut(),
            None => self.implicit[fo.stat].as_mut(),
        })
    }

    fn read_whole(&mut self, fo: &Flowop) -> StepResult {
        let size = self.iosize(fo);
        let buf = self.buf.ptr;
        let f = match self.file_for(fo, false)? {
            Some(f) => f,
            None => return Ok(Step::NoRsc("no file to read".into())),
        };
        let (fd, at) = (f.fd, (f.set, f.entry));
        let mut off = 0u64;
        let mut ops = 0;
        loop {
            // SAFETY: size is clamped to the buffer.
            let n = unsafe { libc::pread(fd, buf as *mut libc::c_void, size, off as i64) };
            if n < 0 {
                let e = errno();
                let path = self.sh.layouts[at.0].path(at.1);
                return Err(format!("read {path:?} at offset {off}: {e}"));
            }
            if n == 0 {
                break;
            }
            off += n as u64;
            ops += 1;
        }
        let s = &mut self.stats[fo.stat];
        s.read_ops += ops.max(1);
        s.read_bytes += off;
        Ok(Step::Ok)
    }

    fn write_whole(&mut self, fo: &Flowop) -> StepResult {
        let size = self.iosize(fo);
        let buf = self.buf.ptr;
        // The amount: the source file's size (copyfiles) or the entry's planned size.
        let total = if let Some(src) = fo.srcfd {
            let Some(sf) = &self.fds[src] else {
                return Err(format!("srcfd {src} is not open"));
            };
            // SAFETY: stat buffer we own; open descriptor.
            let mut st: libc::stat = unsafe { std::mem::zeroed() };
            unsafe { libc::fstat(sf.fd, &mut st) };
            st.st_size as u64
        } else {
            0
        };
        let layouts = self.sh.layouts;
        let f = match self.file_for(fo, true)? {
            Some(f) => f,
            None => return Ok(Step::NoRsc("no file to write".into())),
        };
        let total = if fo.srcfd.is_some() {
            total
        } else {
            layouts[f.set].size(f.entry)
        };
        let (fd, at) = (f.fd, (f.set, f.entry));
        let flags = if fo.dsync { libc::RWF_DSYNC } else { 0 };
        let mut off = 0u64;
        let mut ops = 0;
        while off < total {
            let n = ((total - off) as usize).min(size);
            let iov = libc::iovec {
                iov_base: buf as *mut libc::c_void,
                iov_len: n,
            };
            // SAFETY: one iovec over our buffer.
            let w = unsafe { libc::pwritev2(fd, &iov, 1, off as i64, flags) };
            if w <= 0 {
                let e = errno();
                let path = layouts[at.0].path(at.1);
                return Err(format!("write {path:?} at offset {off}: {e}"));
            }
            off += w as u64;
            ops += 1;
        }
        let s = &mut self.stats[fo.stat];
        s.write_ops += ops.max(1);
        s.write_bytes += off;
        Ok(Step::Ok)
    }

    fn listdir(&mut self, fo: &Flowop) -> StepResult {
        let set = fo.fileset.unwrap_or(0);
        let lay = &self.sh.layouts[set];
        let path = if self.sh.model.filesets[set].is_dirs() {
            match pick(
                self.sh.arena,
                set,
                Want::Exists,
                false,
                &mut self.rng,
                fo.indexed,
            ) {
                Picked::Got(i) => lay.path(i),
                Picked::NoRsc => return Ok(Step::NoRsc("no directory to list".into())),
            }
        } else {
            lay.dir_path(self.rng.below(lay.dir_count() as u64) as usize)
        };
        // SAFETY: NUL-terminated path; the DIR stream is closed below.
        let d = unsafe { libc::opendir(path.as_ptr()) };
        if d.is_null() {
            let e = errno();
            if e.raw_os_error() == Some(libc::ENOENT) {
                return Ok(Step::Ok);
            }
            return Err(format!("opendir {path:?}: {e}"));
        }
        let mut n = 0u64;
        // SAFETY: d is a valid stream until closedir.
        while !unsafe { libc::readdir(d) }.is_null() {
            n += 1;
        }
        // SAFETY: d came from opendir.
        unsafe { libc::closedir(d) };
        std::hint::black_box(n);
        Ok(Step::Ok)
    }

    fn aio_wait(&mut self) -> StepResult {
        if let Some(aio) = self.aio.as_mut() {
            let n = aio.inflight;
            reap(aio, n).map_err(|e| format!("aiowrite completion: {e}"))?;
        }
        Ok(Step::Ok)
    }

    fn drain_aio(&mut self) {
        if let Some(aio) = self.aio.as_mut() {
            let n = aio.inflight;
            let _ = reap(aio, n);
        }
    }
}

/// Wait for `n` queued writes to complete; report the first failed one.
fn reap(aio: &mut Aio, n: u32) -> Result<(), std::io::Error> {
    let mut got = 0;
    let mut first_err = None;
    while got < n {
        aio.ring.submit_and_wait(1)?;
        for c in aio.ring.completion() {
            got += 1;
            aio.inflight -= 1;
            if c.result() < 0 && first_err.is_none() {
                first_err = Some(std::io::Error::from_raw_os_error(-c.result()));
            }
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Flowops that count in the IO Summary (as in Filebench: the file-system operations).
pub fn is_io(k: Kind) -> bool {
    use Kind::*;
    !matches!(
        k,
        Block
            | Wakeup
            | SemBlock
            | SemPost
            | Hog
            | Delay
            | EventLimit
            | BwLimit
            | IopsLimit
            | OpsLimit
            | FinishOnCount
            | FinishOnBytes
            | Composite
    )
}

pub fn kind_name(k: Kind) -> &'static str {
    if k == Kind::Composite {
        return "composite";
    }
    super::model::FLOWOP_NAMES
        .iter()
        .find(|(_, kk)| *kk == k)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}
