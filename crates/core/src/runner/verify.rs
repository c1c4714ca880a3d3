//! `--verify` in the runner: the run's seed, and the hooks that stamp what a write of a
//! stepped source carries and check what a read of it returns.
//!
//! A source that issues a step at a time (a workload's flowops, a replayed trace) writes and
//! reads through its [`Issuer`](super::issue::Issuer); with `--verify` the Issuer holds a
//! [`StreamCheck`] and its verifying calls ([`Issuer::write_verified`],
//! [`Issuer::read_verified`](super::issue::Issuer::read_verified)) run these hooks around the
//! call, so every stepped source verifies the same way and reports the same findings. The
//! bytes are [`crate::verify::stream`]: a function of (run seed, file, generation, offset),
//! so a write of any length at any offset is stamped, and any read of any range checked,
//! without headers.
//!
//! What a file should hold is the source's knowledge, which it hands the hooks as a
//! [`Contents`]: a workload knows that a fileset file holds its current incarnation's stream
//! from 0 to what was written (appends land at the end, concurrent writers or an aiowrite make
//! the file unknown until it is recreated); a replay knows which ranges of its scratch files
//! it wrote itself.
//!
//! The job's access pattern, which keeps many I/Os in flight, stamps self-describing blocks
//! instead ([`blocks`]: the format `fsbench verify` and the journal read back); its seed is
//! drawn here and its failure said here as the stepped sources' are. Only atomics or the source's own state
//! on the I/O path: no lock, allocation or system call (a mismatch's description allocates).
//!
//! [`Issuer::write_verified`]: super::issue::Issuer::write_verified

pub mod blocks;

use crate::verify::report::{ByteDiff, FindingReport, HeaderFields, Mismatch, VerifyReport};
use crate::verify::stream;

/// A seed of this run alone mixed into `base`: what an earlier run left at the same place
/// (same offset, same generation) never passes for this run's bytes.
pub(crate) fn run_seed(base: u64) -> u64 {
    let mut nonce = [0u8; 8];
    // getrandom(2); should it fail, the clock and the process id still differ between runs.
    // SAFETY: getrandom writes at most 8 bytes into our 8-byte buffer.
    let got = unsafe { libc::getrandom(nonce.as_mut_ptr() as *mut libc::c_void, 8, 0) };
    let mut n = u64::from_le_bytes(nonce);
    if got != 8 {
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        n = t ^ ((std::process::id() as u64) << 32);
    }
    base ^ n.rotate_left(17) ^ 0x9e37_79b9_7f4a_7c15
}

/// Which stream a file's bytes are: the file as the source names it in the report, and its
/// generation (a workload's incarnation: one more at every create).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileGen {
    pub file: u64,
    pub generation: u64,
}

/// What a read should return, as the source knew it when the read began.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Expected {
    pub of: FileGen,
    /// The generation the file held before this one, when known (what a lost write leaves).
    pub before: Option<u64>,
    /// The bytes up to this offset are the stream; a read that ends before it while asking
    /// for them lost the file's tail.
    pub end: u64,
    /// The source's change count when the read began (see [`Contents::read_unchanged`]).
    pub seq: u64,
}

/// Why a read is not checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoCheck {
    /// A write of the file is in flight.
    Busy,
    /// What the file holds there is not known.
    Unknown,
}

/// What a source knows a file should hold: handed to the Issuer's verifying calls.
pub(crate) trait Contents {
    /// A file as the source names it.
    type File: Copy;
    /// A write in flight, as the source tracks it.
    type Write;

    /// Before a write of `len` bytes to `file` at `at` (None: an append, at the end of what
    /// the file holds): where it lands, which stream its bytes are, and the source's ticket
    /// for [`Contents::write_ends`].
    fn write_begins(
        &self,
        file: Self::File,
        at: Option<u64>,
        len: u64,
    ) -> (u64, FileGen, Self::Write);

    /// After the write: `written` bytes (None: it failed).
    fn write_ends(&self, file: Self::File, w: Self::Write, written: Option<u64>);

    /// Before a read of `len` bytes of `file` at `at`: what it should return, or why it is
    /// not checked.
    fn read_begins(&self, file: Self::File, at: u64, len: u64) -> Result<Expected, NoCheck>;

    /// After the read: whether what [`Contents::read_begins`] said still holds (no write of
    /// the file came in between).
    fn read_unchanged(&self, file: Self::File, e: &Expected) -> bool;
}

/// One thread's hooks: the run's seed and what its reads found.
pub(crate) struct StreamCheck {
    seed: u64,
    pub report: VerifyReport,
}

impl StreamCheck {
    /// The hooks of a run whose bytes are keyed by `seed`.
    pub(crate) fn new(seed: u64) -> StreamCheck {
        StreamCheck {
            seed,
            report: VerifyReport {
                read_back_done: true,
                ..Default::default()
            },
        }
    }

    fn key(&self, g: FileGen) -> u64 {
        stream::key(self.seed, g.file, g.generation)
    }

    /// Fill `buf`, to be written at `offset`, with the stream of `g`.
    #[inline]
    pub(crate) fn stamp(&self, buf: &mut [u8], g: FileGen, offset: u64) {
        stream::fill(buf, self.key(g), offset);
    }

    /// Count a read that was not checked.
    pub(crate) fn skipped(&mut self, why: NoCheck) {
        match why {
            NoCheck::Busy => self.report.blocks_skipped_busy += 1,
            NoCheck::Unknown => self.report.blocks_skipped_overlap += 1,
        }
    }

    /// A read at `offset` of `requested` bytes returned `got`: compare it with what `e`
    /// says the file holds there. `path` names the file in a mismatch. False on a mismatch.
    pub(crate) fn check(
        &mut self,
        e: &Expected,
        offset: u64,
        requested: u64,
        got: &[u8],
        path: &dyn Fn() -> String,
    ) -> bool {
        let key = self.key(e.of);
        let r = &mut self.report;
        r.blocks_checked += 1;
        r.run_read_blocks += 1;
        let known = e.end.saturating_sub(offset).min(got.len() as u64) as usize;
        r.bytes_checked += known as u64;
        let fields = |at: u64, generation: u64| HeaderFields {
            seed: self.seed,
            file: e.of.file,
            offset_bytes: at,
            generation,
        };
        let checked = &got[..known];
        if !stream::matches(checked, key, offset) {
            let j = stream::first_mismatch(checked, key, offset).unwrap_or(0);
            let (kind, detail, found) = classify(self.seed, e, key, offset, checked, j);
            let end = (j + 16).min(checked.len());
            let want: Vec<u8> = (j..end)
                .map(|x| stream::byte_at(key, offset + x as u64))
                .collect();
            let m = Mismatch {
                user: (e.of.file >> 40) as usize,
                target: path(),
                offset_bytes: offset + j as u64,
                detail,
                expected: fields(offset + j as u64, e.of.generation),
                found: fields(found.0, found.1),
                first_diff: Some(ByteDiff {
                    at_byte: j as u64,
                    expected_hex: hex(&want),
                    found_hex: hex(&checked[j..end]),
                }),
                found_block_crc_ok: None,
                rank: None,
            };
            kind_of(&mut self.report, kind).add(m);
            return false;
        }
        // A read that ends before the bytes written there: the file lost its tail.
        let end = offset + got.len() as u64;
        let wanted_end = (offset + requested).min(e.end);
        if end < wanted_end {
            let m = Mismatch {
                user: (e.of.file >> 40) as usize,
                target: path(),
                offset_bytes: end,
                detail: format!(
                    "stale: the file ends at {end} bytes, but {} bytes were written (a lost write)",
                    e.end
                ),
                expected: fields(end, e.of.generation),
                found: fields(end, e.of.generation),
                first_diff: None,
                found_block_crc_ok: None,
                rank: None,
            };
            self.report.stale.add(m);
            return false;
        }
        self.report.blocks_intact += 1;
        true
    }

    /// The failure of a thread whose reads did not come back as written (see [`failure_of`]).
    pub(crate) fn failure_line(&self) -> Option<(String, Option<u64>, String)> {
        failure_of(&self.report, "read(s)")
    }
}

/// What fails a run, a workload or a replay whose data did not come back as written: the file
/// and offset of the first mismatch (the lowest offset among the kinds' first ones) and the
/// one line, counting the checks (`unit`: a run's blocks, a stepped source's reads) by kind.
/// None when everything checked came back.
pub(crate) fn failure_of(r: &VerifyReport, unit: &str) -> Option<(String, Option<u64>, String)> {
    let bad = r.bad_blocks();
    if bad == 0 {
        return None;
    }
    let first = r
        .kinds()
        .iter()
        .flat_map(|(_, k)| k.first.first())
        .min_by_key(|m| m.offset_bytes)
        .cloned();
    let counts: Vec<String> = r
        .kinds()
        .iter()
        .filter(|(_, k)| k.blocks > 0)
        .map(|(n, k)| format!("{} {n}", k.blocks))
        .collect();
    let path = first.as_ref().map(|m| m.target.clone()).unwrap_or_default();
    let offset = first.as_ref().map(|m| m.offset_bytes);
    let message = format!(
        "verify: {bad} {unit} did not come back as written ({}){}",
        counts.join(", "),
        first
            .map(|m| format!("; first: {}", m.detail))
            .unwrap_or_default()
    );
    Some((path, offset, message))
}

#[derive(Clone, Copy)]
enum Kind {
    Stale,
    Misdirected,
    Corrupt,
}

fn kind_of(r: &mut VerifyReport, k: Kind) -> &mut FindingReport {
    match k {
        Kind::Stale => &mut r.stale,
        Kind::Misdirected => &mut r.misdirected,
        Kind::Corrupt => &mut r.corrupt,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// What the bytes from index `j` of a read at `offset` are: zeros or the file's previous
/// generation (stale), another offset's (misdirected), or nothing a write made (corrupt).
/// Also the (offset, generation) they were made for, as far as known.
fn classify(
    seed: u64,
    e: &Expected,
    key: u64,
    offset: u64,
    buf: &[u8],
    j: usize,
) -> (Kind, String, (u64, u64)) {
    let at = offset + j as u64;
    let here = (at, e.of.generation);
    // The aligned word holding byte j, when the read holds all of it.
    let wpos = (at & !7).saturating_sub(offset) as usize;
    let word = (at & !7 >= offset && wpos + 8 <= buf.len())
        .then(|| u64::from_le_bytes(buf[wpos..wpos + 8].try_into().expect("8 bytes")));
    let run = &buf[j..(j + 512).min(buf.len())];
    if run.iter().all(|&b| b == 0) {
        return (
            Kind::Stale,
            format!("stale: zeros from offset {at} where bytes were written (a lost write)"),
            here,
        );
    }
    if let Some(g) = e.before {
        let old = stream::key(seed, e.of.file, g);
        if stream::matches(run, old, at) {
            return (
                Kind::Stale,
                format!(
                    "stale: the bytes of the file's previous generation ({g}) at offset {at}: the write over them was lost"
                ),
                (at, g),
            );
        }
    }
    if let Some(w) = word {
        if let Some(o) = stream::offset_of_word(key, w) {
            if o != at & !7 {
                return (
                    Kind::Misdirected,
                    format!("misdirected: at offset {at} the bytes written for offset {o}"),
                    (o + (at & 7), e.of.generation),
                );
            }
        }
    }
    let flipped: u32 = buf[j..]
        .iter()
        .enumerate()
        .map(|(x, &b)| (b ^ stream::byte_at(key, at + x as u64)).count_ones())
        .sum();
    let want = stream::byte_at(key, at);
    (
        Kind::Corrupt,
        format!(
            "corrupt at offset {at}: {:#04x} where {want:#04x}{}",
            buf[j],
            if flipped == 1 {
                " (one bit flipped)"
            } else {
                ""
            }
        ),
        here,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: FileGen = FileGen {
        file: 3,
        generation: 1,
    };

    fn expected(end: u64) -> Expected {
        Expected {
            of: G,
            before: Some(0),
            end,
            seq: 0,
        }
    }

    fn stamped(c: &StreamCheck, g: FileGen, offset: u64, len: usize) -> Vec<u8> {
        let mut b = vec![0u8; len];
        c.stamp(&mut b, g, offset);
        b
    }

    #[test]
    fn what_was_stamped_checks_intact_at_any_offset() {
        let mut c = StreamCheck::new(run_seed(7));
        let b = stamped(&c, G, 4093, 9000);
        assert!(c.check(&expected(4093 + 9000), 4093, 9000, &b, &String::new));
        // A read of part of it, starting mid-word.
        assert!(c.check(&expected(20_000), 5001, 100, &b[908..1008], &String::new));
        assert_eq!((c.report.blocks_checked, c.report.blocks_intact), (2, 2));
        assert_eq!(c.report.bad_blocks(), 0);
        assert!(c.failure_line().is_none());
    }

    #[test]
    fn each_kind_of_damage_is_named() {
        let mut c = StreamCheck::new(run_seed(9));
        let path = || "f".to_string();
        // One bit flipped.
        let mut b = stamped(&c, G, 0, 4096);
        b[100] ^= 4;
        assert!(!c.check(&expected(4096), 0, 4096, &b, &path));
        // Zeros: a lost write.
        assert!(!c.check(&expected(4096), 0, 4096, &[0u8; 4096], &path));
        // The previous generation: a lost overwrite.
        let old = FileGen { generation: 0, ..G };
        let b = stamped(&c, old, 8192, 4096);
        assert!(!c.check(&expected(8192 + 4096), 8192, 4096, &b, &path));
        // Another offset's bytes.
        let b = stamped(&c, G, 65536, 4096);
        assert!(!c.check(&expected(4096), 0, 4096, &b, &path));
        // A short read where bytes were written.
        let b = stamped(&c, G, 0, 1000);
        assert!(!c.check(&expected(4096), 0, 4096, &b, &path));
        let r = &c.report;
        assert_eq!(
            (r.corrupt.blocks, r.stale.blocks, r.misdirected.blocks),
            (1, 3, 1)
        );
        assert!(r.corrupt.first[0].detail.contains("one bit flipped"));
        assert!(r.misdirected.first[0].detail.contains("for offset 65536"));
        let (p, at, line) = c.failure_line().unwrap();
        assert_eq!((p.as_str(), at), ("f", Some(0)));
        assert!(
            line.starts_with("verify: 5 read(s) did not come back"),
            "{line}"
        );
    }

    #[test]
    fn skipped_reads_are_counted_by_reason() {
        let mut c = StreamCheck::new(1);
        c.skipped(NoCheck::Busy);
        c.skipped(NoCheck::Unknown);
        c.skipped(NoCheck::Unknown);
        assert_eq!(
            (
                c.report.blocks_skipped_busy,
                c.report.blocks_skipped_overlap
            ),
            (1, 2)
        );
    }
}
