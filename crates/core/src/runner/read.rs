//! A file read front to back through an engine, for a caller that judges what it reads
//! (`fsbench verify`): the reads go through the runner's issuing handle on a synchronous
//! engine, so storage is read the way every run reads it (pread into the engine's aligned
//! buffer) and no code outside the runner touches the engine.

use super::issue::Issuer;
use crate::engine::{IoOp, OpKind};
use crate::job::Route;
use std::io::Read;
use std::os::fd::AsRawFd;

/// A file read front to back, a chunk per call. Borrows the file's descriptor; the file
/// outlives it.
pub struct FileReader<'a> {
    io: Issuer,
    offset: u64,
    chunk: usize,
    _file: std::marker::PhantomData<&'a std::fs::File>,
}

impl<'a> FileReader<'a> {
    /// Reads of up to `chunk` bytes each.
    pub fn new(file: &'a std::fs::File, chunk: usize) -> std::io::Result<Self> {
        let mut io = Issuer::new(Issuer::sync_engine(1, 1, chunk, 0)?, 1, None);
        io.set_file(0, file.as_raw_fd())?;
        Ok(FileReader {
            io,
            offset: 0,
            chunk,
            _file: std::marker::PhantomData,
        })
    }
}

impl Read for FileReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let op = IoOp {
            kind: OpKind::Read,
            file: 0,
            route: Route::Buffered,
            offset: self.offset,
            len: buf.len().min(self.chunk) as u32,
            slot: 0,
        };
        let n = self.io.call(op)? as usize;
        buf[..n].copy_from_slice(&self.io.buffers().slot(0)[..n]);
        self.offset += n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reader gives back the file's bytes exactly, across its chunk size, then end of
    /// file, one counted read per chunk.
    #[test]
    fn the_reader_reads_the_file_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let mut r = FileReader::new(&f, 4096).unwrap();
        let mut back = Vec::new();
        let mut buf = [0u8; 8192];
        loop {
            let n = r.read(&mut buf).unwrap();
            assert!(n <= 4096, "{n}");
            if n == 0 {
                break;
            }
            back.extend_from_slice(&buf[..n]);
        }
        assert_eq!(back, data);
        assert_eq!(r.io.sys().read, 4, "three chunks and the read at the end");
    }
}
