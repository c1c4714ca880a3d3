//! The verification journal: which generation of which block storage has acknowledged as
//! durable, written so that it survives the crash it is meant to judge.
//!
//! Layout: a header (magic, version, run seed, block size, and the files as JSON with their
//! identities), then fixed 32-byte records `(file, block, generation, crc32c, kind)`,
//! appended and made durable (`fdatasync`) before the acknowledgements they hold count. Kind 0
//! is an acknowledgement; kind 1 says the run's own writes of the block overlapped up to that
//! generation, so its content was never known (a mix of them is not damage). A crash can tear
//! the tail (the records after the last good one), and that is forgiven: those appends never
//! returned. A damaged record with good ones after it is not a tail: the journal itself was
//! corrupted, and reading counts it and names where it is (records of zeros there are space
//! another worker's append claimed and never wrote, counted apart). The reader trusts no
//! size in the file: the file must be regular, at most `MAX_JOURNAL_BYTES`, and every
//! length is bounded by the file's own before anything is allocated.

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

const MAGIC: &[u8; 8] = b"FSBJRNL1";
const RECORD: usize = 32;

/// What the journal is about: the run and the files whose blocks it acknowledges.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalHeader {
    pub seed: u64,
    pub block_size: u64,
    /// Paths as the run named them; a record's `file` is an index into this list (and the
    /// file identity stamped into its blocks).
    pub files: Vec<String>,
}

/// One acknowledgement: block `block` (offset / block size) of file `file` holds generation
/// `generation` durably. Or, with `overlapped`, the opposite: the run's own writes of the
/// block overlapped (two in flight at once), so up to `generation` what it holds is not
/// known and nothing is promised: a mix of those writes is not corruption.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ack {
    pub file: u64,
    pub block: u64,
    pub generation: u64,
    pub overlapped: bool,
}

/// The record kind in bytes 28..32: 0 an acknowledgement, 1 an overlap (covered by the CRC).
const KIND_OVERLAP: u32 = 1;

impl Ack {
    fn encode(&self) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[0..8].copy_from_slice(&self.file.to_le_bytes());
        r[8..16].copy_from_slice(&self.block.to_le_bytes());
        r[16..24].copy_from_slice(&self.generation.to_le_bytes());
        if self.overlapped {
            r[28..32].copy_from_slice(&KIND_OVERLAP.to_le_bytes());
        }
        let crc = record_crc(&r);
        r[24..28].copy_from_slice(&crc.to_le_bytes());
        r
    }

    fn decode(r: &[u8; RECORD]) -> Option<Ack> {
        let word = |at: usize| u64::from_le_bytes(r[at..at + 8].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(r[24..28].try_into().expect("4 bytes"));
        let kind = u32::from_le_bytes(r[28..32].try_into().expect("4 bytes"));
        (crc == record_crc(r) && kind <= KIND_OVERLAP).then(|| Ack {
            file: word(0),
            block: word(8),
            generation: word(16),
            overlapped: kind == KIND_OVERLAP,
        })
    }
}

/// A record's CRC32C: of its first 24 bytes, and of its kind when it is not 0 (so an
/// acknowledgement's record is the same as before kinds existed).
fn record_crc(r: &[u8; RECORD]) -> u32 {
    let crc = crc32c::crc32c(&r[..24]);
    if r[28..32] == [0; 4] {
        crc
    } else {
        crc32c::crc32c_append(crc, &r[28..32])
    }
}

/// Appends acknowledgements, each batch durable before `append` returns.
pub(crate) struct JournalWriter {
    file: File,
    buf: Vec<u8>,
}

impl JournalWriter {
    /// Create a new journal (never an existing file: O_EXCL, no symlink followed) and make
    /// its header durable.
    pub(crate) fn create(path: &Path, header: &JournalHeader) -> Result<JournalWriter> {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o644)
            .open(path)
            .with_context(|| format!("journal {}: cannot create it", path.display()))?;
        let json = serde_json::to_vec(header)?;
        let mut head = Vec::with_capacity(16 + json.len() + RECORD);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&(json.len() as u32).to_le_bytes());
        head.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
        head.extend_from_slice(&json);
        // Records start on a record boundary, so a torn one is always the last.
        head.resize(head.len().div_ceil(RECORD) * RECORD, 0);
        file.write_all(&head)?;
        file.sync_all()
            .with_context(|| format!("journal {}: fsync", path.display()))?;
        // The journal's directory entry must survive too.
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            File::open(dir).and_then(|d| d.sync_all()).ok();
        }
        Ok(JournalWriter {
            file,
            buf: Vec::with_capacity(RECORD * 256),
        })
    }

    /// Append to a journal the run created (each worker of a run appends through its own
    /// descriptor, O_APPEND, whole records per write): only the very file `id` names, never
    /// through a symbolic link.
    pub(crate) fn append_to(path: &Path, id: (u64, u64)) -> Result<JournalWriter> {
        use std::os::unix::fs::MetadataExt;
        let file = std::fs::OpenOptions::new()
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
            .with_context(|| format!("journal {}: cannot open it", path.display()))?;
        let m = file.metadata()?;
        if (m.dev(), m.ino()) != id {
            bail!(
                "journal {}: replaced by another file during the run; not touched",
                path.display()
            );
        }
        Ok(JournalWriter {
            file,
            buf: Vec::with_capacity(RECORD * 256),
        })
    }

    /// The (device, inode) of the journal, for [`JournalWriter::append_to`].
    pub(crate) fn identity(&self) -> Result<(u64, u64)> {
        use std::os::unix::fs::MetadataExt;
        let m = self.file.metadata()?;
        Ok((m.dev(), m.ino()))
    }

    /// Record `acks` and make them durable; only then do they count.
    pub(crate) fn append(&mut self, acks: &[Ack]) -> Result<(), AppendError> {
        self.buf.clear();
        for a in acks {
            self.buf.extend_from_slice(&a.encode());
        }
        let failed = |call, error: std::io::Error, file: &File| AppendError {
            call,
            // Where the append went (the journal's length now: O_APPEND); read only on error.
            offset: file.metadata().ok().map(|m| m.len()),
            error,
        };
        if let Err(e) = self.file.write_all(&self.buf) {
            return Err(failed("write", e, &self.file));
        }
        if let Err(e) = self.file.sync_data() {
            return Err(failed("fdatasync", e, &self.file));
        }
        Ok(())
    }
}

/// An append to the journal that failed: which call, where in the journal, and why.
#[derive(Debug)]
pub(crate) struct AppendError {
    pub call: &'static str,
    pub offset: Option<u64>,
    pub error: std::io::Error,
}

impl std::fmt::Display for AppendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.error.raw_os_error() == Some(libc::ENOSPC) {
            write!(f, "verify journal full (ENOSPC) on {}", self.call)
        } else {
            write!(f, "verify journal {} failed: {}", self.call, self.error)
        }
    }
}

/// The largest journal `fsbench verify` reads: 4 GiB, 128 Mi acknowledgements (its table of
/// newest generations stays within a few GiB of memory even if every record is distinct).
pub(crate) const MAX_JOURNAL_BYTES: u64 = 4 << 30;
/// The largest header (the JSON naming the run's files) a journal may carry.
const MAX_HEADER_BYTES: u64 = 16 << 20;
/// How many damaged records a read keeps by position (all are counted).
const DAMAGED_SHOWN: usize = 10;

/// A record in the middle of the journal whose bytes no append wrote: it fails its CRC, or
/// names a file or block the journal cannot hold, and good records follow it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DamagedRecord {
    /// Its index, counting records from 0.
    pub record: u64,
    /// Its byte offset in the journal.
    pub offset_bytes: u64,
}

/// A journal read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Journal {
    pub header: JournalHeader,
    /// The newest acknowledged generation of each (file, block).
    pub acked: HashMap<(u64, u64), u64>,
    /// The newest generation up to which the run's own writes of a block overlapped (its
    /// content unknown, nothing promised), for each (file, block) where they did.
    pub overlapped: HashMap<(u64, u64), u64>,
    /// Acknowledgements read (good records that are not overlaps).
    pub records: u64,
    /// Overlap records read.
    pub overlap_records: u64,
    /// Bytes after the last good record (a tail torn by the crash: never acknowledged).
    pub torn_tail_bytes: u64,
    /// Records of zeros with good records after them: space another worker's append had
    /// claimed but not yet written when the crash came (its acknowledgement never returned).
    pub unwritten_records: u64,
    /// Damaged records with good records after them: the journal itself is corrupt.
    pub damaged_records: u64,
    /// The first damaged records, in order.
    pub first_damaged: Vec<DamagedRecord>,
}

/// What one 32-byte slot of the journal holds.
enum Slot {
    Good(Ack),
    Zeros,
    Damaged,
}

/// Records read since the last good one: forgiven if nothing good follows (a torn tail).
#[derive(Default)]
struct Pending {
    zeros: u64,
    damaged: u64,
    first_damaged: Vec<DamagedRecord>,
}

impl Journal {
    /// Read the journal at `path`: a regular file (no FIFO, device or symbolic link; opened
    /// without blocking), of at most `MAX_JOURNAL_BYTES`, read no further than its length.
    pub fn read(path: &Path) -> Result<Journal> {
        let shown = path.display();
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
        {
            Ok(f) => f,
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                bail!("journal {shown} is a symbolic link: name the file it points to")
            }
            Err(e) => bail!("journal {shown}: cannot open it: {e}"),
        };
        let meta = file
            .metadata()
            .with_context(|| format!("journal {shown}: fstat"))?;
        if !meta.file_type().is_file() {
            bail!(
                "journal {shown} is {}, not a regular file (give the --journal file of the run)",
                kind_of(&meta.file_type())
            );
        }
        let len = meta.len();
        if len > MAX_JOURNAL_BYTES {
            bail!(
                "journal {shown} is {len} bytes, more than the {MAX_JOURNAL_BYTES} bytes (4 GiB) a journal may hold"
            );
        }
        let reader = std::io::BufReader::with_capacity(1 << 20, file.take(len));
        Self::parse_from(reader, len).with_context(|| format!("journal {shown}"))
    }

    /// Parse a whole journal held in memory.
    #[cfg(test)]
    pub(crate) fn parse(bytes: &[u8]) -> Result<Journal> {
        Self::parse_from(bytes, bytes.len() as u64)
    }

    /// Parse a journal of `len` bytes from `r`; every size in it is bounded by `len`.
    fn parse_from(mut r: impl Read, len: u64) -> Result<Journal> {
        let mut head = [0u8; 16];
        if len < 16 || r.read_exact(&mut head).is_err() || &head[..8] != MAGIC {
            bail!("not an fsbench journal (no FSBJRNL1 header)");
        }
        let json_len = u64::from(u32::from_le_bytes(head[8..12].try_into().expect("4")));
        let crc = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes"));
        if json_len > MAX_HEADER_BYTES || 16 + json_len > len {
            bail!(
                "the journal header is damaged (it claims {json_len} bytes; the file has {len}, a header at most {MAX_HEADER_BYTES})"
            );
        }
        let mut json = vec![0u8; json_len as usize];
        r.read_exact(&mut json)?;
        if crc32c::crc32c(&json) != crc {
            bail!("the journal header is damaged (its CRC does not match)");
        }
        let header: JournalHeader = serde_json::from_slice(&json)
            .map_err(|e| anyhow::anyhow!("the journal header is damaged: {e}"))?;
        check_header(&header)?;
        let first = (16 + json_len).div_ceil(RECORD as u64) * RECORD as u64;
        let pad = first.min(len) - (16 + json_len);
        std::io::copy(&mut (&mut r).take(pad), &mut std::io::sink())?;
        let mut j = Journal {
            header,
            acked: HashMap::new(),
            overlapped: HashMap::new(),
            records: 0,
            overlap_records: 0,
            torn_tail_bytes: 0,
            unwritten_records: 0,
            damaged_records: 0,
            first_damaged: Vec::new(),
        };
        let mut pending = Pending::default();
        let mut at = first;
        let mut good_end = first;
        let mut rec = [0u8; RECORD];
        while at + RECORD as u64 <= len {
            r.read_exact(&mut rec)
                .context("the journal ended before its length (changed while read?)")?;
            let index = (at - first) / RECORD as u64;
            match j.slot(&rec) {
                Slot::Good(a) => {
                    j.settle(std::mem::take(&mut pending));
                    let table = if a.overlapped {
                        &mut j.overlapped
                    } else {
                        &mut j.acked
                    };
                    let g = table.entry((a.file, a.block)).or_insert(0);
                    *g = (*g).max(a.generation);
                    if a.overlapped {
                        j.overlap_records += 1;
                    } else {
                        j.records += 1;
                    }
                    good_end = at + RECORD as u64;
                }
                Slot::Zeros => pending.zeros += 1,
                Slot::Damaged => {
                    pending.damaged += 1;
                    if pending.first_damaged.len() < DAMAGED_SHOWN {
                        pending.first_damaged.push(DamagedRecord {
                            record: index,
                            offset_bytes: at,
                        });
                    }
                }
            }
            at += RECORD as u64;
        }
        j.torn_tail_bytes = len.saturating_sub(good_end);
        Ok(j)
    }

    /// Classify one record: good only if its CRC holds and it names a file of the journal
    /// and a block whose end is a possible file offset.
    fn slot(&self, rec: &[u8; RECORD]) -> Slot {
        match Ack::decode(rec) {
            Some(a)
                if a.file < self.header.files.len() as u64
                    && a.block
                        .checked_add(1)
                        .and_then(|b| b.checked_mul(self.header.block_size))
                        .is_some_and(|end| end <= i64::MAX as u64) =>
            {
                Slot::Good(a)
            }
            _ if rec.iter().all(|&b| b == 0) => Slot::Zeros,
            _ => Slot::Damaged,
        }
    }

    /// Records before a good one are not a tail: zeros were never written, anything else is
    /// damage.
    fn settle(&mut self, p: Pending) {
        self.unwritten_records += p.zeros;
        self.damaged_records += p.damaged;
        let room = DAMAGED_SHOWN - self.first_damaged.len();
        self.first_damaged
            .extend(p.first_damaged.into_iter().take(room));
    }
}

/// Refuse a header whose block size a verify block cannot have (at least the verify
/// minimum, a multiple of 8, at most the largest block a run accepts) or that names no file.
fn check_header(h: &JournalHeader) -> Result<()> {
    let max = crate::job::MAX_BLOCK_SIZE;
    let ok = usize::try_from(h.block_size).is_ok_and(|b| super::block::check_block_size(b).is_ok())
        && h.block_size <= max;
    if !ok {
        bail!(
            "the journal header gives block size {}, which no verify run writes (at least {} bytes, a multiple of 8, at most {max})",
            h.block_size,
            super::block::MIN_BLOCK
        );
    }
    if h.files.is_empty() {
        bail!("the journal header names no file");
    }
    Ok(())
}

/// What kind of file a non-regular file is, for a refusal.
pub fn kind_of(t: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_symlink() {
        "a symbolic link"
    } else {
        "an unusual file"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header() -> JournalHeader {
        JournalHeader {
            seed: 5,
            block_size: 4096,
            files: vec!["/data/f".into()],
        }
    }

    #[test]
    fn acknowledgements_come_back_newest_first() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.fsj");
        let mut w = JournalWriter::create(&p, &header()).unwrap();
        w.append(&[
            Ack {
                file: 0,
                block: 3,
                generation: 1,
                overlapped: false,
            },
            Ack {
                file: 0,
                block: 4,
                generation: 1,
                overlapped: false,
            },
        ])
        .unwrap();
        w.append(&[Ack {
            file: 0,
            block: 3,
            generation: 2,
            overlapped: false,
        }])
        .unwrap();
        let j = Journal::read(&p).unwrap();
        assert_eq!(j.header, header());
        assert_eq!(j.records, 3);
        assert_eq!(j.acked[&(0, 3)], 2);
        assert_eq!(j.acked[&(0, 4)], 1);
        assert_eq!(j.torn_tail_bytes, 0);
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_counted() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.fsj");
        let mut w = JournalWriter::create(&p, &header()).unwrap();
        for g in 1..=3 {
            w.append(&[Ack {
                file: 0,
                block: 0,
                generation: g,
                overlapped: false,
            }])
            .unwrap();
        }
        drop(w);
        let mut bytes = std::fs::read(&p).unwrap();
        let n = bytes.len();
        bytes.truncate(n - 10);
        let j = Journal::parse(&bytes).unwrap();
        assert_eq!((j.records, j.acked[&(0, 0)]), (2, 2));
        assert_eq!(j.torn_tail_bytes, 22);
        // A damaged last record is a torn tail too: forgiven.
        let mut bad = std::fs::read(&p).unwrap();
        bad[n - 8] ^= 1;
        let j = Journal::parse(&bad).unwrap();
        assert_eq!(
            (j.records, j.torn_tail_bytes, j.damaged_records),
            (2, 32, 0)
        );
    }

    #[test]
    fn a_damaged_record_with_good_ones_after_it_is_corruption_not_a_tail() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("j.fsj");
        let mut w = JournalWriter::create(&p, &header()).unwrap();
        for g in 1..=3 {
            w.append(&[Ack {
                file: 0,
                block: g,
                generation: g,
                overlapped: false,
            }])
            .unwrap();
        }
        drop(w);
        let good = std::fs::read(&p).unwrap();
        let n = good.len();
        let mut bad = good.clone();
        bad[n - 40] ^= 1;
        let j = Journal::parse(&bad).unwrap();
        assert_eq!((j.records, j.damaged_records, j.torn_tail_bytes), (2, 1, 0));
        assert_eq!(
            j.first_damaged,
            vec![DamagedRecord {
                record: 1,
                offset_bytes: n as u64 - 64
            }]
        );
        // The records after the damage still count.
        assert_eq!(j.acked.get(&(0, 3)), Some(&3));
        assert_eq!(j.acked.get(&(0, 2)), None);
        // Zeros there are an append never written: counted apart, not damage.
        let mut hole = good.clone();
        hole[n - 64..n - 32].fill(0);
        let j = Journal::parse(&hole).unwrap();
        assert_eq!(
            (j.records, j.unwritten_records, j.damaged_records),
            (2, 1, 0)
        );
        // A record with a good CRC naming a file the journal lacks is damage too.
        let mut forged = good;
        let a = Ack {
            file: 9,
            block: 0,
            generation: 1,
            overlapped: false,
        };
        forged[n - 64..n - 32].copy_from_slice(&a.encode());
        assert_eq!(Journal::parse(&forged).unwrap().damaged_records, 1);
    }

    #[test]
    fn sizes_in_the_header_are_bounded_before_anything_is_allocated() {
        let h = |bs: u64| {
            let json = serde_json::to_vec(&JournalHeader {
                seed: 1,
                block_size: bs,
                files: vec!["f".into()],
            })
            .unwrap();
            let mut b = MAGIC.to_vec();
            b.extend_from_slice(&(json.len() as u32).to_le_bytes());
            b.extend_from_slice(&crc32c::crc32c(&json).to_le_bytes());
            b.extend_from_slice(&json);
            b
        };
        for bs in [1u64 << 33, 1 << 50, u64::MAX - 7, 100] {
            let e = Journal::parse(&h(bs)).unwrap_err().to_string();
            assert!(e.contains(&format!("block size {bs}")), "{e}");
        }
        assert!(Journal::parse(&h(4096)).is_ok());
        // A header length past the end of the file.
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        assert!(Journal::parse(&b)
            .unwrap_err()
            .to_string()
            .contains("damaged"));
    }

    #[test]
    fn an_existing_file_is_never_overwritten() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("precious");
        std::fs::write(&p, b"keep me").unwrap();
        assert!(JournalWriter::create(&p, &header()).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"keep me");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&p, &link).unwrap();
        assert!(JournalWriter::create(&link, &header()).is_err());
        assert_eq!(std::fs::read(&p).unwrap(), b"keep me");
    }

    #[test]
    fn garbage_is_refused_with_a_reason() {
        assert!(Journal::parse(b"hello")
            .unwrap_err()
            .to_string()
            .contains("not an fsbench journal"));
        let mut b = MAGIC.to_vec();
        b.extend_from_slice(&[200, 0, 0, 0, 0, 0, 0, 0]);
        assert!(Journal::parse(&b)
            .unwrap_err()
            .to_string()
            .contains("damaged"));
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..400)) {
            let _ = Journal::parse(&bytes);
            let mut j = MAGIC.to_vec();
            j.extend_from_slice(&bytes);
            let _ = Journal::parse(&j);
        }
    }
}
