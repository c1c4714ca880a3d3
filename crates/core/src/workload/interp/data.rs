//! A thread's data flowops: read, write, the whole-file reads and writes (readwholefile,
//! writewholefile, appendfile) and aiowrite/aiowait, each a call (or a queued write and its
//! reap) through the thread's [`Issuer`], with `--verify`'s fill before a write and check
//! after a read.

use super::*;

impl Thread<'_> {
    /// One synchronous data I/O through the Issuer on descriptor slot `slot` (`offset` may
    /// carry IoOp's cursor/append/dsync flags): bytes moved, or the errno. aiowrite
    /// completions that arrive meanwhile are kept by the Issuer for [`Thread::aio_reap`].
    /// With `--verify` the Issuer's verifying calls stamp a write with the file's stream for
    /// where it lands and check a read against what the file holds.
    fn io(
        &mut self,
        io: &mut Issuer,
        kind: OpKind,
        slot: usize,
        offset: u64,
        len: usize,
    ) -> std::io::Result<u64> {
        let op = IoOp {
            kind,
            file: slot as u32,
            route: Route::Buffered,
            offset,
            len: len as u32,
            slot: CALL_SLOT,
        };
        let t = clock(io);
        let r = match self.fds[slot].as_ref() {
            Some(f) if io.verifying() => {
                let file = (f.set, f.entry, f.incarnation);
                let contents = super::super::verify::Filesets(self.sh.arena);
                // Where the call lands, as far as this thread knows before it.
                let at = if offset & IoOp::APPEND != 0 {
                    None
                } else if offset & IoOp::AT_CURSOR != 0 {
                    Some(f.pos)
                } else {
                    Some(offset & !IoOp::FLAGS)
                };
                if kind == OpKind::Write {
                    let (r, landed) = io.write_verified(op, &contents, file, at);
                    if at.is_none() && r.is_ok() {
                        // Where the append landed, as the file's contents know it (the
                        // thread's own view misses what other descriptors appended).
                        if let Some(f) = self.fds[slot].as_mut() {
                            f.end = landed;
                        }
                    }
                    r
                } else {
                    let lay = &self.sh.layouts[f.set];
                    let entry = f.entry;
                    let at = at.unwrap_or(f.end);
                    io.read_verified(op, &contents, file, at, &|| lay.path(entry).to_string())
                }
            }
            _ => io.call(op),
        };
        let n = *r.as_ref().unwrap_or(&0);
        let Some(f) = self.fds[slot].as_mut() else {
            return r;
        };
        // Where the call was: the offset given, else the descriptor's offset or the file's end
        // as this thread moved them.
        let at = if offset & IoOp::APPEND != 0 {
            f.end
        } else if offset & IoOp::AT_CURSOR != 0 {
            f.pos
        } else {
            offset & !IoOp::FLAGS
        };
        if offset & (IoOp::APPEND | IoOp::AT_CURSOR) != 0 {
            f.pos = at + n;
        }
        f.end = f.end.max(at + n);
        let file = self.file_base[f.set].saturating_add(f.entry as u32);
        let op = if kind == OpKind::Write {
            TraceOp::Write
        } else {
            TraceOp::Read
        };
        let result = match &r {
            Ok(n) => *n as i64,
            Err(_) => status(&r),
        };
        rec(io, op, file, at, len as u64, t, result);
        r
    }

    /// Account the aiowrite completions the Issuer collected: fewer in flight, the first
    /// failure kept for aiowait. How many there were.
    fn settle_aio(&mut self, io: &mut Issuer) -> u32 {
        let (inflight, err) = (&mut self.aio_inflight, &mut self.aio_err);
        let mut got = 0;
        io.take_queued(|c| {
            got += 1;
            *inflight = inflight.saturating_sub(1);
            if c.result < 0 && err.is_none() {
                *err = Some(-c.result as i32);
            }
        });
        got
    }

    /// Reap at least `n` aiowrites; report the first failed one.
    fn aio_reap(&mut self, io: &mut Issuer, n: u32) -> std::io::Result<()> {
        let mut got = self.settle_aio(io);
        while got < n && self.aio_inflight > 0 {
            io.reap_queued()?;
            got += self.settle_aio(io);
        }
        match self.aio_err.take() {
            Some(e) => Err(std::io::Error::from_raw_os_error(e)),
            None => Ok(()),
        }
    }

    pub(super) fn rw(&mut self, io: &mut Issuer, fo: &Flowop, t0: u64) -> StepResult {
        let mut size = self.iosize(fo);
        if fo.kind == Kind::AppendFileRand {
            // Filebench: fb_random64(&n, iosize, 1): 0 to iosize - 1 bytes; 0 is an op
            // that touches no file.
            size = fb_random(&mut self.rng, size as u64, 1) as usize;
            if size == 0 {
                return Ok(Step::Ok);
            }
        }
        // aiowrite queues on the thread's io_uring engine, or on the queue ring the Issuer
        // builds beside a sync engine (none when io_uring is unavailable: aiowrite then
        // writes synchronously, as Filebench does without AIO).
        let aio = fo.kind == Kind::AioWrite
            && io
                .queue_slot(self.buf_len, self.id.slot as u64 + 7)
                .is_some();
        let Some((slot, wss)) = self.filesetup(io, fo, t0)? else {
            return Ok(Step::NoRsc("no file to read or write".into()));
        };
        let random = fo.random;
        let offset = if random {
            if (size as u64) > wss {
                return Err(FlowopError::State(format!(
                    "the file ({wss} bytes) is smaller than iosize ({size} bytes): random I/O needs workingset= or larger files"
                )));
            }
            fb_random(&mut self.rng, wss, size as u64)
        } else {
            0
        };
        let f = self.fds[slot].as_mut().expect("set up");
        if fo.directio && !f.direct {
            // The descriptor came from an openfile without directio: switch it on now.
            f.direct = true;
            let fd = f.fd;
            io.set_status_flags(fd, libc::O_DIRECT, 0)
                .map_err(|e| call("switching on O_DIRECT", e))?;
        }
        match fo.kind {
            Kind::Read => self.read_io(io, fo, slot, size, random, offset)?,
            Kind::AioWrite if aio => self.aio_write(io, slot, size, random, offset)?,
            _ => self.write_io(io, fo, slot, size, random, offset)?,
        }
        Ok(Step::Ok)
    }

    /// One read or write of a flowop through the engine; a failure counts as the flowop's
    /// error and names the file and the offset (`known`, else where the descriptor was;
    /// `append`: at the end of the file).
    #[allow(clippy::too_many_arguments)]
    fn counted_io(
        &mut self,
        io: &mut Issuer,
        fo: &Flowop,
        kind: OpKind,
        slot: usize,
        at: u64,
        size: usize,
        known: Option<u64>,
        append: bool,
    ) -> Result<u64, FlowopError> {
        self.io(io, kind, slot, at, size).map_err(|e| {
            self.stats[fo.stat].errors += 1;
            let (path, at) = self.failed_at(io, slot, known, append);
            let what = match kind {
                OpKind::Read => format!("read of {size} bytes from {path:?} at offset {at}"),
                OpKind::Write => format!("write of {size} bytes to {path:?} at offset {at}"),
                OpKind::Trim => format!("trim of {size} bytes of {path:?} at offset {at}"),
            };
            call(what, e)
        })
    }

    /// One read of `size` bytes: at `offset` when random, else at the descriptor's offset.
    fn read_io(
        &mut self,
        io: &mut Issuer,
        fo: &Flowop,
        slot: usize,
        size: usize,
        random: bool,
        offset: u64,
    ) -> Result<(), FlowopError> {
        let at = if random { offset } else { IoOp::AT_CURSOR };
        let n = self.counted_io(
            io,
            fo,
            OpKind::Read,
            slot,
            at,
            size,
            random.then_some(offset),
            false,
        )?;
        if n == 0 {
            // End of file: Filebench counts the empty read and starts over at 0.
            let f = self.fds[slot].as_mut().expect("set up");
            f.pos = 0;
            let fd = f.fd;
            let _ = io.seek_fd(fd, 0, libc::SEEK_SET);
        }
        self.bytes = n;
        Ok(())
    }

    /// One aiowrite of `size` bytes queued (reaping one first when the queue is full).
    fn aio_write(
        &mut self,
        io: &mut Issuer,
        slot: usize,
        size: usize,
        random: bool,
        offset: u64,
    ) -> Result<(), FlowopError> {
        let f = self.fds[slot].as_mut().expect("set up");
        let off = if random { offset } else { f.aio_off };
        if !random {
            f.aio_off += size as u64;
        }
        let fd = f.fd;
        let file = self.file_base[f.set].saturating_add(f.entry as u32);
        f.end = f.end.max(off + size as u64);
        if io.verifying() {
            super::super::verify::forget(self.sh.arena, f.set, f.entry);
        }
        self.settle_aio(io);
        if self.aio_inflight >= Issuer::QUEUE_DEPTH - 1 {
            // Queue full: reap at least one before queueing more.
            self.aio_reap(io, 1)
                .map_err(|e| call("aiowrite completion", e))?;
        }
        let t = clock(io);
        let Some(buf) = io.queue_slot(self.buf_len, self.id.slot as u64 + 7) else {
            unreachable!("checked by rw")
        };
        let op = IoOp {
            kind: OpKind::Write,
            file: slot as u32,
            route: Route::Buffered,
            offset: off,
            len: size as u32,
            slot: buf,
        };
        let r = io.queue_write(op, fd);
        // An aiowrite is recorded when it is queued (its result: the bytes queued, or
        // the submit's errno); a failed completion fails the flowop at aiowait.
        let result = match &r {
            Ok(true) => size as i64,
            Ok(false) => -(libc::EAGAIN as i64),
            Err(_) => status(&r),
        };
        rec(io, TraceOp::Write, file, off, size as u64, t, result);
        match r {
            Ok(true) => {}
            Ok(false) => return Err(FlowopError::State("aio queue full".into())),
            Err(e) => return Err(call("io_uring submit", e)),
        }
        self.aio_inflight += 1;
        self.bytes = size as u64;
        Ok(())
    }

    /// One write, append or dsync write of `size` bytes.
    fn write_io(
        &mut self,
        io: &mut Issuer,
        fo: &Flowop,
        slot: usize,
        size: usize,
        random: bool,
        offset: u64,
    ) -> Result<(), FlowopError> {
        let append = matches!(fo.kind, Kind::AppendFile | Kind::AppendFileRand);
        // At (and advancing) the descriptor's offset; an append at the end of the
        // file, leaving the offset there (Filebench: lseek END, write).
        let mut at = if append {
            IoOp::APPEND
        } else if random {
            offset
        } else {
            IoOp::AT_CURSOR
        };
        if fo.dsync {
            at |= IoOp::DSYNC;
        }
        let known = (random && !append).then_some(offset);
        let n = self.counted_io(io, fo, OpKind::Write, slot, at, size, known, append)?;
        self.bytes = n;
        Ok(())
    }

    pub(super) fn read_whole(&mut self, io: &mut Issuer, fo: &Flowop, t0: u64) -> StepResult {
        let Some((slot, wss)) = self.filesetup(io, fo, t0)? else {
            return Ok(Step::NoRsc("no file to read".into()));
        };
        let size = match fo.iosize.sample(&mut self.rng) as usize {
            0 => wss as usize,
            n => n,
        }
        .clamp(1, self.buf_len);
        let f = self.fds[slot].as_mut().expect("set up");
        f.pos = 0;
        let fd = f.fd;
        io.seek_fd(fd, 0, libc::SEEK_SET)
            .map_err(|e| call("lseek", e))?;
        let mut total = 0u64;
        loop {
            let n = match self.io(io, OpKind::Read, slot, IoOp::AT_CURSOR, size) {
                Ok(n) => n,
                Err(e) => {
                    let (path, at) = self.failed_at(io, slot, Some(total), false);
                    return Err(call(format!("read {path:?} at offset {at}"), e));
                }
            };
            if n == 0 {
                break;
            }
            total += n;
        }
        self.bytes = total;
        Ok(Step::Ok)
    }

    /// Filebench's flowoplib_writewholefile: write the planned size of the file on `srcfd`
    /// (default descriptor 0, when a file was opened there), else the working set of the
    /// target file (`workingset`, else its planned size), from the descriptor's offset.
    /// Filebench's loop writes a last full `iosize` chunk past that size when the file is
    /// larger than iosize; fsbench writes exactly the size (docs/workload.md).
    pub(super) fn write_whole(&mut self, io: &mut Issuer, fo: &Flowop, t0: u64) -> StepResult {
        let Some((slot, mut wss)) = self.filesetup(io, fo, t0)? else {
            return Ok(Step::NoRsc("no file to write".into()));
        };
        let src = fo.srcfd.unwrap_or(0);
        match self.fse[src] {
            Some((set, i)) => wss = self.sh.layouts[set].size(i),
            None if src != 0 => {
                return Err(FlowopError::State(format!(
                    "srcfd {src} has no file opened on it"
                )))
            }
            None => {}
        }
        let size = match fo.iosize.sample(&mut self.rng) as u64 {
            0 => wss,
            n => n,
        }
        .clamp(1, self.buf_len as u64);
        let at = if fo.dsync {
            IoOp::AT_CURSOR | IoOp::DSYNC
        } else {
            IoOp::AT_CURSOR
        };
        let mut done = 0u64;
        while done < wss {
            let n = (wss - done).min(size) as usize;
            let w = match self.io(io, OpKind::Write, slot, at, n) {
                Ok(0) => Err(std::io::Error::from_raw_os_error(libc::ENOSPC)),
                r => r,
            };
            match w {
                Ok(w) => done += w,
                Err(e) => {
                    let (path, at) = self.failed_at(io, slot, None, false);
                    return Err(call(format!("write {path:?} at offset {at}"), e));
                }
            }
        }
        self.bytes = done;
        Ok(Step::Ok)
    }

    pub(super) fn aio_wait(&mut self, io: &mut Issuer) -> StepResult {
        let n = self.aio_inflight;
        self.aio_reap(io, n)
            .map_err(|e| call("aiowrite completion", e))?;
        Ok(Step::Ok)
    }

    /// Wait for every aiowrite still in flight (the thread is ending).
    pub(super) fn drain_aio(&mut self, io: &mut Issuer) {
        let n = self.aio_inflight;
        let _ = self.aio_reap(io, n);
    }
}
