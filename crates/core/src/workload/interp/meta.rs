//! A thread's metadata and control flowops: openfile/createfile, closefile, deletefile,
//! statfile, makedir/removedir, listdir, fsync/fsyncset, semaphores and block events, hog,
//! delay, the event and rate limits, finishoncount/finishonbytes and composites, each a call
//! through the thread's [`Issuer`] (or no call at all), with the descriptor table they work
//! on.

use super::*;

impl Thread<'_> {
    /// An existing entry of the flowop's fileset for a flowop whose descriptor `slot` gave
    /// none (`no_file` says how), marked busy: `indexed=` or the fileset's shared rotor.
    /// None when no entry exists (Filebench's "out of resources").
    fn pick_existing(
        &mut self,
        fo: &Flowop,
        slot: usize,
        no_file: &str,
    ) -> Result<Option<(usize, usize)>, FlowopError> {
        let Some(set) = fo.fileset else {
            return Err(FlowopError::State(format!(
                "fd {slot} {no_file} and no filesetname is given"
            )));
        };
        let from = match self.pick_index(fo, set) {
            Some(i) => From::Index(i),
            None => From::Shared(Rotor::Exists),
        };
        Ok(match pick(self.sh.arena, set, Want::Exists, from) {
            Picked::Got(i) => Some((set, i)),
            Picked::NoRsc => None,
        })
    }

    /// Filebench's openfile and createfile: open a file of the fileset on the flowop's descriptor.
    pub(super) fn open_file(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        use Kind::*;
        let slot = self.fdnum(fo);
        if self.open_on(io, fo, slot, fo.kind == CreateFile)? {
            Ok(Step::Ok)
        } else if fo.kind == CreateFile {
            Ok(Step::NoRsc("every file of the fileset exists".into()))
        } else {
            Ok(Step::NoRsc("no file of the fileset exists".into()))
        }
    }

    /// closefile: close the flowop's descriptor (once no other thread holds the file busy).
    pub(super) fn close_file(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        let arena = self.sh.arena;
        let slot = self.fdnum(fo);
        match self.fds[slot].take() {
            Some(f) => {
                busy_wait(arena, f.set, f.entry);
                self.close(io, slot, f);
                Ok(Step::Ok)
            }
            None => Err(FlowopError::State(format!("fd {slot} is not open"))),
        }
    }

    /// statfile: fstat the file open on `fd=N` (N > 0), else stat the next existing file of the fileset.
    pub(super) fn stat_file(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        let arena = self.sh.arena;
        let slot = self.fdnum(fo);
        if slot > 0 {
            if let Some(f) = &self.fds[slot] {
                let mut st = crate::engine::meta::statx_buf();
                let (fd, file) = (f.fd, self.entry_file(f.set, f.entry));
                let t = clock(io);
                let r = io.stat_fd(fd, &mut st);
                rec(io, TraceOp::Stat, file, 0, 0, t, status(&r));
                if let Err(e) = r {
                    let f = self.fds[slot].as_ref().expect("open");
                    return Err(call(format!("fstat {:?}", self.entry_path(f)), e));
                }
                return Ok(Step::Ok);
            }
        }
        let Some((set, i)) = self.pick_existing(fo, slot, "is not open")? else {
            return Ok(Step::NoRsc("no file to stat".into()));
        };
        let path = self.sh.layouts[set].path(i);
        let file = self.entry_file(set, i);
        let mut st = crate::engine::meta::statx_buf();
        let t = clock(io);
        let r = io.stat_at(AT_FDCWD, &path, 0, &mut st);
        rec(io, TraceOp::Stat, file, 0, 0, t, status(&r));
        unbusy(arena, set, i, None, 0);
        if let Err(e) = r {
            return Err(call(format!("stat {path:?}"), e));
        }
        Ok(Step::Ok)
    }

    /// makedir / removedir: the next absent (existing) directory of the fileset.
    pub(super) fn make_remove_dir(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        use Kind::*;
        let arena = self.sh.arena;
        let set = fo.fileset.unwrap_or(0);
        let (want, rotor) = if fo.kind == MakeDir {
            (Want::Absent, Rotor::Absent)
        } else {
            (Want::Exists, Rotor::Exists)
        };
        let from = match self.pick_index(fo, set) {
            Some(i) => From::Index(i),
            None => From::Shared(rotor),
        };
        let i = match pick(arena, set, want, from) {
            Picked::Got(i) => i,
            Picked::NoRsc => {
                return Ok(Step::NoRsc(format!(
                    "no directory left to {}",
                    if fo.kind == MakeDir { "make" } else { "remove" }
                )))
            }
        };
        let path = self.sh.layouts[set].path(i);
        let file = self.entry_file(set, i);
        let t = clock(io);
        let (r, op) = if fo.kind == MakeDir {
            (io.mkdir_at(AT_FDCWD, &path, 0o755), TraceOp::Mkdir)
        } else {
            (io.unlink_at(AT_FDCWD, &path, true), TraceOp::Unlink)
        };
        rec(io, op, file, 0, 0, t, status(&r));
        if let Err(e) = r {
            release(arena, set, i, fo.kind == RemoveDir);
            let what = if fo.kind == MakeDir { "mkdir" } else { "rmdir" };
            return Err(call(format!("{what} {path:?}"), e));
        }
        release(arena, set, i, fo.kind == MakeDir);
        Ok(Step::Ok)
    }

    /// fsync: the file open on the flowop's descriptor.
    pub(super) fn fsync(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        let slot = self.fdnum(fo);
        if self.fds[slot].is_none() {
            return Err(FlowopError::State(format!("fd {slot} is not open")));
        }
        self.fsync_slot(io, slot)?;
        Ok(Step::Ok)
    }

    /// fsyncset: every file of the fileset this thread has open.
    pub(super) fn fsync_set(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        let set = fo.fileset.unwrap_or(0);
        for k in 0..self.fds.len() {
            if self.fds[k].as_ref().is_some_and(|f| f.set == set) {
                self.fsync_slot(io, k)?;
            }
        }
        Ok(Step::Ok)
    }

    /// fsync the file open on descriptor slot `slot` (open: the callers checked), traced.
    fn fsync_slot(&mut self, io: &mut Issuer, slot: usize) -> Result<(), FlowopError> {
        let f = self.fds[slot].as_ref().expect("open");
        let (fd, file) = (f.fd, self.entry_file(f.set, f.entry));
        let t = clock(io);
        let r = io.sync_fd(fd, false);
        rec(io, TraceOp::Fsync, file, 0, 0, t, status(&r));
        if let Err(e) = r {
            let f = self.fds[slot].as_ref().expect("open");
            return Err(call(format!("fsync {:?}", self.entry_path(f)), e));
        }
        Ok(())
    }

    /// semblock / block: wait on this thread instance's semaphore.
    pub(super) fn sem_wait(&mut self, fo: &Flowop) -> StepResult {
        use Kind::*;
        let arena = self.sh.arena;
        let n = if fo.kind == Block {
            1
        } else {
            fo.value.sample(&mut self.rng).max(0.0) as i64
        };
        let own = fo.target.unwrap_or(0) + self.sem_instance;
        let w = if fo.kind == Block {
            arena.sem_take(own, n)
        } else {
            arena.sem_block(own, n)
        };
        match w {
            Waited::Got => Ok(Step::Ok),
            Waited::Stopped => Ok(Step::Stopped),
        }
    }

    /// sempost / wakeup: post to the target threads' semaphores.
    pub(super) fn sem_post(&mut self, fo: &Flowop) -> StepResult {
        use Kind::*;
        let arena = self.sh.arena;
        let n = if fo.kind == Wakeup {
            1
        } else {
            fo.value.sample(&mut self.rng).max(0.0) as i64
        };
        let blocking = fo.kind == SemPost && fo.blocking;
        for &(base, count) in &fo.targets {
            for k in base..base + count {
                let hw = self.sh.model.sems.get(k).map(|s| s.highwater).unwrap_or(0);
                if arena.sem_post(k, n, hw, blocking) == Waited::Stopped {
                    return Ok(Step::Stopped);
                }
            }
        }
        Ok(Step::Ok)
    }

    pub(super) fn hog(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        // Filebench's flowoplib_hog: `value` stores of 1 to the first byte of the
        // thread's memory (no index arithmetic: that made each iteration about twice
        // as costly as Filebench's and the stock oltp shadows CPU-bound on it).
        let n = fo.value.sample(&mut self.rng).max(0.0) as u64;
        let p = io.buffers().slot_ptr(CALL_SLOT as usize);
        for _ in 0..n {
            // SAFETY: p is the start of our buffer; volatile keeps the busy loop.
            unsafe { std::ptr::write_volatile(p, 1) };
        }
        Ok(Step::Ok)
    }

    /// delay: sleep `value` seconds, ending early when the run stops.
    pub(super) fn delay(&mut self, fo: &Flowop) -> StepResult {
        let arena = self.sh.arena;
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

    /// finishoncount / finishonbytes: end the thread once the count is reached.
    pub(super) fn finish_on(&mut self, fo: &Flowop) -> StepResult {
        use Kind::*;
        let limit = fo.value.sample(&mut self.rng).max(0.0) as u64;
        let have = match (fo.kind, fo.target) {
            (FinishOnCount, Some(j)) => self.tally[j][0],
            (FinishOnCount, None) => self.proc_total(|p| p.ops.load(Relaxed)),
            (_, Some(j)) => self.tally[j][1],
            (_, None) => {
                self.proc_total(|p| p.read_bytes.load(Relaxed) + p.write_bytes.load(Relaxed))
            }
        };
        // Filebench: count reached when ops >= value, bytes when bytes > value.
        let reached = if fo.kind == FinishOnCount {
            have >= limit
        } else {
            have > limit
        };
        if reached {
            let what = if fo.kind == FinishOnCount {
                "operations"
            } else {
                "bytes"
            };
            return Ok(Step::Done(format!("{} reached {limit} {what}", fo.name)));
        }
        Ok(Step::Ok)
    }

    /// A composite flowop: its inner flowops in order, each its `iters` times, as one
    /// execution of the composite (one step of the source), ending early when the run stops.
    pub(super) fn composite(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        for inner in &fo.inner {
            for _ in 0..inner.iters {
                if self.sh.arena.stopping() {
                    return Ok(Step::Stopped);
                }
                if let Some(end) = self.run_once(io, inner)? {
                    return Ok(match end {
                        End::Stopped => Step::Stopped,
                        End::Finished(w) => Step::Done(w),
                        End::OutOfFiles(w) => Step::NoRsc(w),
                        End::Failed(w) => return Err(FlowopError::State(w)),
                    });
                }
            }
        }
        Ok(Step::Ok)
    }

    pub(super) fn eventgen_on(&self) -> bool {
        self.sh.arena.ctl().event_rate_milli.load(Relaxed) > 0
    }

    pub(super) fn events(&mut self, n: u64) -> StepResult {
        match self.sh.arena.take_events(n) {
            Waited::Got => Ok(Step::Ok),
            Waited::Stopped => Ok(Step::Stopped),
        }
    }

    /// Filebench's iopslimit/opslimit/bwlimit: a bucket that what was done since the last
    /// pass drains and events refill (one per op, or one MiB per event for bwlimit); the
    /// level carries over between passes.
    pub(super) fn limit(&mut self, fo: &Flowop) -> StepResult {
        use Kind::*;
        if !self.eventgen_on() {
            return Ok(Step::Quiet);
        }
        let now = match fo.target {
            Some(j) => match fo.kind {
                BwLimit => self.tally[j][1],
                _ => self.tally[j][0],
            },
            None => match fo.kind {
                BwLimit => {
                    self.proc_total(|p| p.read_bytes.load(Relaxed) + p.write_bytes.load(Relaxed))
                }
                IopsLimit => {
                    self.proc_total(|p| p.read_ops.load(Relaxed) + p.write_ops.load(Relaxed))
                }
                _ => self.proc_total(|p| p.ops.load(Relaxed)),
            },
        };
        let b = &mut self.buckets[fo.stat];
        if b.last == 0 {
            b.last = now;
            return Ok(Step::Quiet);
        }
        b.level -= now.saturating_sub(b.last) as i64;
        b.last = now;
        if b.level >= 0 {
            return Ok(Step::Ok);
        }
        const MB: i64 = 1 << 20;
        let owed = -b.level;
        let (events, refill) = if fo.kind == BwLimit {
            let e = owed / MB + 1;
            (e, e * MB)
        } else {
            (owed, owed)
        };
        let r = self.events(events as u64)?;
        if matches!(r, Step::Ok) {
            self.buckets[fo.stat].level += refill;
        }
        Ok(r)
    }

    /// The path of an open file, for error messages (not used on the I/O path).
    fn entry_path(&self, f: &OpenFd) -> super::super::fileset::CPath {
        self.sh.layouts[f.set].path(f.entry)
    }

    /// The path of the file open on `slot` and the offset a failed read or write was at, for
    /// its error message: `known` when the I/O gave one, else the descriptor's offset (or the
    /// file's end for an append). The lseek/statx happen only on this error path.
    pub(super) fn failed_at(
        &mut self,
        io: &mut Issuer,
        slot: usize,
        known: Option<u64>,
        append: bool,
    ) -> (super::super::fileset::CPath, i64) {
        let fd = self.fds[slot].as_ref().expect("open").fd;
        let off = match known {
            Some(o) => o as i64,
            None if append => {
                let mut st = crate::engine::meta::statx_buf();
                match io.stat_fd(fd, &mut st) {
                    Ok(()) => st.stx_size as i64,
                    Err(_) => -1,
                }
            }
            None => io.seek_fd(fd, 0, libc::SEEK_CUR).map_or(-1, |o| o as i64),
        };
        (self.entry_path(self.fds[slot].as_ref().expect("open")), off)
    }

    fn close(&mut self, io: &mut Issuer, slot: usize, f: OpenFd) {
        let file = self.entry_file(f.set, f.entry);
        io.clear_file(slot as u32);
        // close(2) releases the descriptor even when it reports an error.
        let t = clock(io);
        let r = io.close_fd(f.fd);
        rec(io, TraceOp::Close, file, 0, 0, t, status(&r));
        unbusy(self.sh.arena, f.set, f.entry, None, -1);
    }

    pub(super) fn close_all(&mut self, io: &mut Issuer) {
        for slot in 0..self.fds.len() {
            if let Some(f) = self.fds[slot].take() {
                self.close(io, slot, f);
            }
        }
    }

    /// Filebench's flowoplib_deletefile: with `fd=N` (N > 0) the file last opened there,
    /// else the next existing file in rotation. A file open elsewhere is not deleted and the
    /// pass is not counted.
    pub(super) fn delete(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        let arena = self.sh.arena;
        let slot = self.fdnum(fo);
        let (set, i, by_fd) = match (slot > 0).then(|| self.fse[slot].take()).flatten() {
            Some((set, i)) => {
                busy_wait(arena, set, i);
                (set, i, true)
            }
            None => match self.pick_existing(fo, slot, "has no file")? {
                Some((set, i)) => (set, i, false),
                None => return Ok(Step::NoRsc("no file left to delete".into())),
            },
        };
        let state = arena.entries(set)[i].load(Acquire);
        let opens = super::super::fileset::open_count(state);
        let mine = by_fd && self.fds[slot].is_some();
        if opens > u32::from(mine) || state & super::super::shared::ENTRY_EXISTS == 0 {
            unbusy(arena, set, i, None, 0);
            return Ok(Step::Quiet);
        }
        let path = self.sh.layouts[set].path(i);
        let file = self.entry_file(set, i);
        let t = clock(io);
        let r = io.unlink_at(AT_FDCWD, &path, false);
        rec(io, TraceOp::Unlink, file, 0, 0, t, status(&r));
        if let Err(e) = r {
            if e.raw_os_error() != Some(libc::ENOENT) {
                unbusy(arena, set, i, None, 0);
                return Err(call(format!("unlink {path:?}"), e));
            }
        }
        unbusy(arena, set, i, Some(false), -(opens as i32));
        Ok(Step::Ok)
    }

    /// Filebench's flowoplib_listdir: the fileset's directories in rotation, counting
    /// `strlen(name) + sizeof(struct dirent) - 1` bytes per entry read.
    pub(super) fn listdir(&mut self, io: &mut Issuer, fo: &Flowop) -> StepResult {
        let set = fo.fileset.unwrap_or(0);
        let lay = &self.sh.layouts[set];
        if lay.dir_count() == 0 {
            return Ok(Step::NoRsc("no directory to list".into()));
        }
        let rot = self.sh.arena.rotor(set, Rotor::Dir);
        let k = rot.fetch_add(1, Relaxed) as usize % lay.dir_count();
        let path = lay.dir_path(k);
        let file = self.dir_base[set].saturating_add(k as u32);
        let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;
        let t = clock(io);
        let r = io.open_at(AT_FDCWD, &path, flags, 0);
        rec(io, TraceOp::Open, file, 0, 0, t, outcome(&r));
        let fd = r.map_err(|e| call(format!("opendir {path:?}"), e))?;
        let mut bytes = 0u64;
        let r = loop {
            let t = clock(io);
            let r = io.read_dir(fd, &mut self.dents);
            let result = match &r {
                Ok(n) => *n as i64,
                Err(_) => status(&r),
            };
            let len = self.dents.len() as u64;
            rec(io, TraceOp::Readdir, file, 0, len, t, result);
            match r {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    for name in crate::engine::meta::dirents(&self.dents, n) {
                        bytes += name.len() as u64 + DIRENT_SIZE - 1;
                    }
                }
                Err(e) => break Err(e),
            }
        };
        let t = clock(io);
        let c = io.close_fd(fd);
        rec(io, TraceOp::Close, file, 0, 0, t, status(&c));
        r.map_err(|e| call(format!("readdir {path:?}"), e))?;
        self.bytes = bytes;
        Ok(Step::Ok)
    }
}
