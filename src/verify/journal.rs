//! The verification journal: which generation of which block storage has acknowledged as
//! durable, written so that it survives the crash it is meant to judge.
//!
//! Layout: a header (magic, version, run seed, block size, and the files as JSON with their
//! identities), then fixed 32-byte records `(file, block, generation, crc32c)`, appended and
//! made durable (`fdatasync`) before the acknowledgements they hold count. A crash can tear
//! the last record; reading stops at the first record whose CRC fails and says so, and
//! everything before it stands.

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
pub(crate) struct JournalHeader {
    pub seed: u64,
    pub block_size: u64,
    /// Paths as the run named them; a record's `file` is an index into this list (and the
    /// file identity stamped into its blocks).
    pub files: Vec<String>,
}

/// One acknowledgement: block `block` (offset / block size) of file `file` holds generation
/// `generation` durably.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ack {
    pub file: u64,
    pub block: u64,
    pub generation: u64,
}

impl Ack {
    fn encode(&self) -> [u8; RECORD] {
        let mut r = [0u8; RECORD];
        r[0..8].copy_from_slice(&self.file.to_le_bytes());
        r[8..16].copy_from_slice(&self.block.to_le_bytes());
        r[16..24].copy_from_slice(&self.generation.to_le_bytes());
        let crc = crc32c::crc32c(&r[..24]);
        r[24..28].copy_from_slice(&crc.to_le_bytes());
        r
    }

    fn decode(r: &[u8]) -> Option<Ack> {
        let word = |at: usize| u64::from_le_bytes(r[at..at + 8].try_into().expect("8 bytes"));
        let crc = u32::from_le_bytes(r[24..28].try_into().expect("4 bytes"));
        (crc == crc32c::crc32c(&r[..24]) && r[28..32] == [0; 4]).then(|| Ack {
            file: word(0),
            block: word(8),
            generation: word(16),
        })
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
    pub(crate) fn append(&mut self, acks: &[Ack]) -> Result<()> {
        self.buf.clear();
        for a in acks {
            self.buf.extend_from_slice(&a.encode());
        }
        self.file.write_all(&self.buf)?;
        self.file.sync_data().context("journal fdatasync")?;
        Ok(())
    }
}

/// A journal read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Journal {
    pub header: JournalHeader,
    /// The newest acknowledged generation of each (file, block).
    pub acked: HashMap<(u64, u64), u64>,
    pub records: u64,
    /// Bytes after the last whole record that did not make a record (a torn tail).
    pub torn_tail_bytes: u64,
}

impl Journal {
    pub(crate) fn read(path: &Path) -> Result<Journal> {
        let mut bytes = Vec::new();
        File::open(path)
            .and_then(|mut f| f.read_to_end(&mut bytes))
            .with_context(|| format!("journal {}: cannot read it", path.display()))?;
        Self::parse(&bytes).with_context(|| format!("journal {}", path.display()))
    }

    pub(crate) fn parse(bytes: &[u8]) -> Result<Journal> {
        if bytes.len() < 16 || &bytes[..8] != MAGIC {
            bail!("not an fsbench journal (no FSBJRNL1 header)");
        }
        let len = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(bytes[12..16].try_into().expect("4 bytes"));
        let json = bytes
            .get(16..16 + len)
            .filter(|j| crc32c::crc32c(j) == crc)
            .ok_or_else(|| anyhow::anyhow!("the journal header is damaged"))?;
        let header: JournalHeader = serde_json::from_slice(json)?;
        let mut at = (16 + len).div_ceil(RECORD) * RECORD;
        let mut acked = HashMap::new();
        let mut records = 0;
        while at + RECORD <= bytes.len() {
            let Some(a) = Ack::decode(&bytes[at..at + RECORD]) else {
                break;
            };
            let g = acked.entry((a.file, a.block)).or_insert(0);
            *g = (*g).max(a.generation);
            records += 1;
            at += RECORD;
        }
        Ok(Journal {
            header,
            acked,
            records,
            torn_tail_bytes: bytes.len().saturating_sub(at) as u64,
        })
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
            },
            Ack {
                file: 0,
                block: 4,
                generation: 1,
            },
        ])
        .unwrap();
        w.append(&[Ack {
            file: 0,
            block: 3,
            generation: 2,
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
        // A record whose bytes were damaged ends the journal there too.
        let mut bad = std::fs::read(&p).unwrap();
        bad[n - 40] ^= 1;
        let j = Journal::parse(&bad).unwrap();
        assert_eq!(j.records, 1);
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
