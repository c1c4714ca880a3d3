//! The self-describing block that `--verify` writes, and the check that tells what went wrong
//! when it does not come back as written.
//!
//! Every block starts with a 64-byte header: magic, format version, run seed, file identity,
//! the block's own offset, its write generation, its length and a CRC32C of the header.
//! Every 512-byte sector after the first starts with an 8-byte stamp of the generation, and
//! every payload word is derived from (seed, file, sector offset, generation). So a block
//! read back can be judged without knowing what was written last: a valid header with
//! another offset or file is a misdirected write; a valid older generation is a stale block
//! (a lost write when a newer one was acknowledged); sectors of different generations (or
//! zeros) side by side are a torn write; and bytes that match no generation are corruption,
//! named a bit flip when exactly one bit differs.
//!
//! Every byte is checked by comparison: once the header is valid, the block it names is
//! compared in one pass with what it should hold. A block of one length is a fixed part
//! (its payload's position words, the same in every block of that length, made once per
//! run and kept beside the CRC constants) XOR its key, so a write fills and a read compares
//! with one XOR a word, and the stamps are compared in the same pass. The header also carries a CRC32C
//! of the whole block (format 3; format 2 had none, format 1 ran the CRC over the bytes),
//! so a block can be judged self-consistent without knowing what was meant to be there. It
//! costs no pass over the bytes: the payload word `i` of a sector is `key ^ (i + 1) * WEYL`,
//! independent of its neighbours (so making and comparing vectorise) and XOR-ed with the
//! sector's key, so the block's CRC is made from the keys (`super::blockcrc`).

#[cfg(test)]
use super::format::mix;
use super::format::{
    block_key, header, header_words_crc, sector_key, BLOCK_CRC, FILE, GEN, HEADER_CRC, LEN, OFFSET,
    SEED, SHAPED_VERSION, STAMP_KEY, VER, VERSION,
};
pub(crate) use super::format::{check_block_size, BlockId, HEADER_BYTES, MAGIC, MIN_BLOCK, SECTOR};

fn get(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn get32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn put(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

pub(crate) use super::blockcrc::BlockCrc;
use super::blockcrc::Parts;
use super::payload;
use super::words::sector_word;
pub(crate) use super::words::{fill_words, skip_words, words_match, WEYL};

/// The first byte (index into `src`) where `src` differs from the words of `key`.
fn first_word_mismatch(src: &[u8], key: u64) -> Option<usize> {
    for (i, c) in src.chunks_exact(8).enumerate() {
        let found = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        let w = sector_word(key, i);
        if found != w {
            let byte = ((found ^ w).trailing_zeros() / 8) as usize;
            return Some(i * 8 + byte);
        }
    }
    None
}

/// Where each sector's payload starts within it (after the header or the stamp).
fn payload_start(sector_index: usize) -> usize {
    if sector_index == 0 {
        HEADER_BYTES
    } else {
        8
    }
}

/// The CRC constants for blocks of `len` bytes (made once per run and block size).
pub(crate) fn block_crc(len: usize) -> BlockCrc {
    // The block with every variable value zero: key 0, stamps 0, header values 0.
    let mut fixed = vec![0u8; len];
    payload::fill(&mut fixed, 0, 0);
    put(&mut fixed, 0, MAGIC);
    put(&mut fixed, LEN, len as u64 | (VERSION as u64) << 32);
    BlockCrc::new(len, SECTOR, &fixed, payload_start)
}

/// The whole-block CRC32C of generation `generation` of block `id`, `len` bytes long, made
/// from its values; `crc` holds the constants for `len` (else the block is made and the
/// crate's CRC run over it).
#[inline]
fn whole_crc(len: usize, id: &BlockId, generation: u64, bk: u64, crc: &BlockCrc) -> u32 {
    if crc.len() != len || !crc.fast() {
        return whole_crc_over_bytes(len, id, generation, bk);
    }
    crc.crc(&Parts {
        header: [id.seed, id.file, id.offset, generation],
        stamp: generation ^ STAMP_KEY,
        block_key: bk,
    })
}

/// [`whole_crc`] the slow way: the block made and the crate's CRC run over it.
#[cold]
fn whole_crc_over_bytes(len: usize, id: &BlockId, generation: u64, bk: u64) -> u32 {
    let mut b = vec![0u8; len];
    payload::fill(&mut b, bk, generation ^ STAMP_KEY);
    let mut h = header(len, id, generation);
    h[HEADER_CRC / 8] = 0;
    for (i, w) in h.iter().enumerate() {
        put(&mut b, i * 8, *w);
    }
    crc32c::crc32c(&b)
}

/// Write generation `generation` of block `id` into `buf` (the whole block); `crc` holds
/// the CRC constants for blocks of its length ([`block_crc`]).
pub(crate) fn fill(buf: &mut [u8], id: &BlockId, generation: u64, crc: &BlockCrc) {
    debug_assert!(buf.len() >= MIN_BLOCK && buf.len().is_multiple_of(8));
    #[cfg(target_arch = "x86_64")]
    if super::fast::usable(crc, buf.len()) {
        // SAFETY: `usable` checked the CPU's features and the block's shape.
        unsafe { super::fast::fill(buf, id, generation, crc) };
        return;
    }
    fill_general(buf, id, generation, crc);
}

/// [`fill`] for any length and CPU.
#[inline(never)]
fn fill_general(buf: &mut [u8], id: &BlockId, generation: u64, crc: &BlockCrc) {
    let bk = block_key(id, generation);
    // The header made in registers, its CRCs taken from them (the block's with both CRC
    // fields zero, the header's with its own zero): no store is read back.
    let mut h = header(buf.len(), id, generation);
    h[HEADER_CRC / 8] = (whole_crc(buf.len(), id, generation, bk, crc) as u64) << 32;
    h[HEADER_CRC / 8] |= header_words_crc(&h) as u64;
    // The header stored before the payload, so that its chain of dependent instructions
    // (key, carry-less multiplies, eight `crc32`) runs beside the payload's stores instead
    // of after them; the payload pass leaves the header alone.
    for (i, w) in h.iter().enumerate() {
        put(buf, i * 8, *w);
    }
    payload::fill(buf, bk, generation ^ STAMP_KEY);
}

/// The header fields as found in a block read back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Found {
    pub seed: u64,
    pub file: u64,
    pub offset: u64,
    pub generation: u64,
}

/// Write generation `generation` of block `id` into `buf` as a shaped block (format 4):
/// `shape` makes every byte after the header, then the header is stamped with the
/// whole-block CRC32C of the bytes as they are. Its payload is not derived, so a check can
/// tell that it changed (the CRC) but not which byte did.
pub(crate) fn fill_shaped(
    buf: &mut [u8],
    id: &BlockId,
    generation: u64,
    shape: impl FnOnce(&mut [u8]),
) {
    debug_assert!(buf.len() >= MIN_BLOCK);
    shape(&mut buf[HEADER_BYTES..]);
    let mut h = header(buf.len(), id, generation);
    h[LEN / 8] = buf.len() as u64 | (SHAPED_VERSION as u64) << 32;
    let mut head = [0u8; HEADER_BYTES];
    for (c, w) in head.chunks_exact_mut(8).zip(&h) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    let whole = crc32c::crc32c_append(crc32c::crc32c(&head), &buf[HEADER_BYTES..]);
    h[HEADER_CRC / 8] = (whole as u64) << 32;
    h[HEADER_CRC / 8] |= header_words_crc(&h) as u64;
    for (i, w) in h.iter().enumerate() {
        put(buf, i * 8, *w);
    }
}

/// Whether `buf` carries a valid shaped header (format 4).
pub(crate) fn is_shaped(buf: &[u8]) -> bool {
    buf.len() >= HEADER_BYTES && header_valid(buf) && get32(buf, VER) == SHAPED_VERSION
}

/// What a block read back turned out to be.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "verdict", rename_all = "snake_case")]
pub enum Verdict {
    /// Written by this run at this offset, whole, generation as found.
    Intact { generation: u64 },
    /// Nothing was ever written here (all zero bytes).
    Unwritten,
    /// A whole, valid block that belongs at another offset or file (or to another run).
    Misdirected { found: Found },
    /// Sectors of different writes side by side: `new_sectors` of the newest generation
    /// found, `old_sectors` older or never written; `oldest` is the oldest generation among
    /// them (None: some sector was never written).
    Torn {
        generation: u64,
        new_sectors: u32,
        old_sectors: u32,
        oldest: Option<u64>,
    },
    /// A shaped block of this id whose bytes no longer match the CRC32C its header carries
    /// (changed after it was written; a torn write looks the same).
    CrcMismatch { generation: u64 },
    /// Bytes that no write of this block produced, from byte `at` of the block on.
    Corrupt {
        at: u32,
        expected: u8,
        found: u8,
        bit_flip: bool,
    },
}

impl Verdict {
    pub fn name(&self) -> &'static str {
        match self {
            Verdict::Intact { .. } => "intact",
            Verdict::Unwritten => "unwritten",
            Verdict::Misdirected { .. } => "misdirected",
            Verdict::Torn { .. } => "torn",
            Verdict::Corrupt { .. } | Verdict::CrcMismatch { .. } => "corrupt",
        }
    }
}

/// The header words of a block as they are, valid or not (for mismatch reports).
pub(crate) fn header_words(buf: &[u8]) -> Found {
    let word = |at: usize| if buf.len() >= at + 8 { get(buf, at) } else { 0 };
    Found {
        seed: word(SEED),
        file: word(FILE),
        offset: word(OFFSET),
        generation: word(GEN),
    }
}

fn header_valid(buf: &[u8]) -> bool {
    if get(buf, 0) != MAGIC || !matches!(get32(buf, VER), VERSION | SHAPED_VERSION) {
        return false;
    }
    // The header as words, its own CRC field zero: CRC'd in registers, nothing stored.
    let mut h: [u64; 8] = std::array::from_fn(|i| get(buf, i * 8));
    let stored = h[HEADER_CRC / 8] as u32;
    h[HEADER_CRC / 8] &= !(u32::MAX as u64);
    header_words_crc(&h) == stored
}

/// Whether a block read back is whole by its own account: its header is valid (this
/// format, its CRC right, this block's length) and the whole-block CRC it carries matches
/// its bytes as found (the crate's CRC32C, both CRC fields zero). None: no valid header to
/// take the CRC from. A stale or misdirected block that matches is a whole write of another
/// time or place; a corrupt one that does not was damaged after it was made.
pub(crate) fn own_crc_matches(buf: &[u8]) -> Option<bool> {
    if buf.len() < MIN_BLOCK || !header_valid(buf) || get32(buf, LEN) as usize != buf.len() {
        return None;
    }
    let stored = get32(buf, BLOCK_CRC);
    let mut h = [0u8; HEADER_BYTES];
    h.copy_from_slice(&buf[..HEADER_BYTES]);
    put32(&mut h, HEADER_CRC, 0);
    put32(&mut h, BLOCK_CRC, 0);
    let c = crc32c::crc32c(&h);
    Some(crc32c::crc32c_append(c, &buf[HEADER_BYTES..]) == stored)
}

/// Judge one block read back at `id` (seed, file and offset of what should be there);
/// `crc` holds the CRC constants for blocks of its length. The fast path (a whole block of
/// this id) is one CRC32C of the header, one pass that makes and compares the block's
/// words, and the whole-block CRC made from the keys compared with the one stored.
pub(crate) fn check(buf: &[u8], id: &BlockId, crc: &BlockCrc) -> Verdict {
    #[cfg(target_arch = "x86_64")]
    if super::fast::usable(crc, buf.len()) {
        // SAFETY: `usable` checked the CPU's features and the block's shape.
        if let Some(generation) = unsafe { super::fast::intact(buf, id, crc) } {
            return Verdict::Intact { generation };
        }
    }
    check_general(buf, id, crc)
}

/// [`check`] for any length and CPU, and for every block that is not an intact one of `id`
/// (which it names).
#[inline(never)]
fn check_general(buf: &[u8], id: &BlockId, crc: &BlockCrc) -> Verdict {
    if header_valid(buf) && get32(buf, LEN) as usize == buf.len() {
        let found = Found {
            seed: get(buf, SEED),
            file: get(buf, FILE),
            offset: get(buf, OFFSET),
            generation: get(buf, GEN),
        };
        let ours = found.seed == id.seed && found.file == id.file && found.offset == id.offset;
        if !ours {
            return Verdict::Misdirected { found };
        }
        if get32(buf, VER) == SHAPED_VERSION {
            let generation = found.generation;
            return match own_crc_matches(buf) {
                Some(true) => Verdict::Intact { generation },
                _ => Verdict::CrcMismatch { generation },
            };
        }
        // Both made from the one block key, and both always (`&`, not `&&`): the scalar
        // CRC runs beside the vector comparison.
        let bk = block_key(id, found.generation);
        let crc_ok = get32(buf, BLOCK_CRC) == whole_crc(buf.len(), id, found.generation, bk, crc);
        if payload::matches(buf, bk, found.generation ^ STAMP_KEY) & crc_ok {
            return Verdict::Intact {
                generation: found.generation,
            };
        }
    } else if buf.iter().all(|&b| b == 0) {
        return Verdict::Unwritten;
    }
    judge_sectors(buf, id, crc)
}

/// Sector by sector: which generation each sector is whole in (None: all zero), or the
/// first byte that no generation explains. Slow path: only blocks that failed the CRC.
fn judge_sectors(buf: &[u8], id: &BlockId, crc: &BlockCrc) -> Verdict {
    let candidate = candidate_generation(buf, id);
    let mut written: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut gens: Vec<Option<u64>> = Vec::new();
    for (s, sector) in buf.chunks(SECTOR).enumerate() {
        if sector.iter().all(|&b| b == 0) {
            gens.push(None);
            continue;
        }
        let stamped = stamped_generation(sector, s);
        // A sector whose own stamp (or header) is damaged is judged against the block's
        // generation, so the damage is located and not taken for a tear.
        let g = if explains(sector, s, id, stamped) {
            stamped
        } else {
            candidate
        };
        let want = expected_block(&mut written, buf.len(), id, g, crc);
        let range = s * SECTOR..s * SECTOR + sector.len();
        if want[range.clone()] != *sector {
            return corrupt(buf, want, range.start);
        }
        gens.push(Some(g));
    }
    let newest = gens.iter().flatten().max().copied().unwrap_or(0);
    let new_sectors = gens.iter().filter(|g| **g == Some(newest)).count() as u32;
    let old_sectors = gens.len() as u32 - new_sectors;
    if old_sectors == 0 {
        // Every sector equals what generation `newest` wrote, so the block is that write:
        // only reachable when the fast comparison and this one disagree, which they cannot.
        let want = expected_block(&mut written, buf.len(), id, newest, crc);
        return corrupt(buf, want, 0);
    }
    let oldest = if gens.contains(&None) {
        None
    } else {
        gens.iter().flatten().min().copied()
    };
    Verdict::Torn {
        generation: newest,
        new_sectors,
        old_sectors,
        oldest,
    }
}

/// The generation sector `s` claims: the header's field for the first, the stamp after.
fn stamped_generation(sector: &[u8], s: usize) -> u64 {
    if s == 0 {
        get(sector, GEN)
    } else {
        get(sector, 0) ^ STAMP_KEY
    }
}

/// Whether sector `s`'s payload words are generation `g`'s.
fn explains(sector: &[u8], s: usize, id: &BlockId, g: u64) -> bool {
    let start = payload_start(s).min(sector.len());
    first_word_mismatch(&sector[start..], sector_key(block_key(id, g), s)).is_none()
}

/// The generation the block as a whole claims: the header's when it explains the first
/// sector, else the one most sectors' stamps claim and explain, else the header field.
fn candidate_generation(buf: &[u8], id: &BlockId) -> u64 {
    let header = get(buf, GEN);
    if explains(&buf[..SECTOR.min(buf.len())], 0, id, header) {
        return header;
    }
    let mut votes: Vec<(u64, usize)> = Vec::new();
    for (s, sector) in buf.chunks(SECTOR).enumerate().skip(1) {
        let g = stamped_generation(sector, s);
        if explains(sector, s, id, g) {
            match votes.iter_mut().find(|v| v.0 == g) {
                Some(v) => v.1 += 1,
                None => votes.push((g, 1)),
            }
        }
    }
    votes.iter().max_by_key(|v| v.1).map_or(header, |v| v.0)
}

/// Generation `g`'s whole block, made once per generation met.
fn expected_block<'a>(
    cache: &'a mut Vec<(u64, Vec<u8>)>,
    len: usize,
    id: &BlockId,
    g: u64,
    crc: &BlockCrc,
) -> &'a [u8] {
    let i = match cache.iter().position(|c| c.0 == g) {
        Some(i) => i,
        None => {
            let mut b = vec![0u8; len];
            fill(&mut b, id, g, crc);
            cache.push((g, b));
            cache.len() - 1
        }
    };
    &cache[i].1
}

/// A Corrupt verdict: the first byte at or after `from` where `buf` differs from `want`.
fn corrupt(buf: &[u8], want: &[u8], from: usize) -> Verdict {
    let at = (from..buf.len())
        .find(|&i| buf[i] != want[i])
        .unwrap_or(from);
    let diff: u32 = buf
        .iter()
        .zip(want)
        .map(|(a, b)| (a ^ b).count_ones())
        .sum();
    Verdict::Corrupt {
        at: at as u32,
        expected: want[at],
        found: buf[at],
        bit_flip: diff == 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const ID: BlockId = BlockId {
        seed: 42,
        file: 7,
        offset: 8192,
    };

    #[test]
    fn a_shaped_block_is_judged_by_its_header_and_crc() {
        let mut b = vec![0u8; 4096];
        fill_shaped(&mut b, &ID, 3, |rest| {
            rest[..2000].fill(0x5a);
            rest[2000..].fill(0);
        });
        assert!(is_shaped(&b));
        assert_eq!(&b[..8], b"FSBVRFY1");
        assert_eq!(b[HEADER_BYTES], 0x5a);
        assert_eq!(check(&b, &ID), Verdict::Intact { generation: 3 });
        assert_eq!(own_crc_matches(&b), Some(true));
        let other = BlockId { offset: 0, ..ID };
        assert!(matches!(check(&b, &other), Verdict::Misdirected { .. }));
        for at in [HEADER_BYTES + 5, 4000] {
            let mut d = b.clone();
            d[at] ^= 1;
            assert_eq!(
                check(&d, &ID),
                Verdict::CrcMismatch { generation: 3 },
                "{at}"
            );
        }
    }

    /// [`super::check`] with the CRC constants of the block's length.
    fn check(buf: &[u8], id: &BlockId) -> Verdict {
        super::check(buf, id, &block_crc(buf.len()))
    }

    /// [`super::fill`] with the CRC constants of the block's length.
    fn fill(buf: &mut [u8], id: &BlockId, g: u64) {
        super::fill(buf, id, g, &block_crc(buf.len()))
    }

    fn block(bs: usize, id: &BlockId, g: u64) -> Vec<u8> {
        let mut b = vec![0u8; bs];
        fill(&mut b, id, g);
        b
    }

    /// A block whose CRC is made from its length's constants is byte for byte the block
    /// whose CRC is taken over its bytes (constants of another length), each judged intact
    /// by both checks, and any byte changed after the header is refused by the payload's
    /// comparison and, more sparsely, by the whole check; with the AVX2 loops and the
    /// portable ones.
    #[test]
    fn the_block_of_its_own_constants_is_the_one_made_from_bytes_and_every_byte_is_compared() {
        use std::sync::atomic::Ordering;
        for portable in [false, true] {
            super::super::words::PORTABLE.store(portable, Ordering::Relaxed);
            let other = block_crc(256);
            for len in [128usize, 520, 584, 1024, 4096, 65536] {
                let own = block_crc(len);
                let (mut made, mut from_bytes) = (vec![0u8; len], vec![0u8; len]);
                super::fill(&mut made, &ID, 9, &own);
                super::fill(&mut from_bytes, &ID, 9, &other);
                assert!(made == from_bytes, "{len} portable={portable}");
                let intact = Verdict::Intact { generation: 9 };
                assert_eq!(super::check(&made, &ID, &own), intact);
                assert_eq!(super::check(&made, &ID, &other), intact);
                let (bk, stamp) = (block_key(&ID, 9), 9 ^ STAMP_KEY);
                for (n, at) in (HEADER_BYTES..len).step_by(7).enumerate() {
                    made[at] ^= 0x10;
                    assert!(
                        !payload::matches(&made, bk, stamp),
                        "{len} {at} portable={portable}"
                    );
                    if n % 13 == 0 {
                        assert_ne!(super::check(&made, &ID, &own), intact, "{len} {at}");
                    }
                    made[at] ^= 0x10;
                }
            }
        }
        super::super::words::PORTABLE.store(false, Ordering::Relaxed);
    }

    #[test]
    fn a_block_comes_back_intact() {
        for bs in [128, 512, 4096, 65536] {
            assert_eq!(
                check(&block(bs, &ID, 3), &ID),
                Verdict::Intact { generation: 3 }
            );
        }
    }

    #[test]
    fn made_words_are_the_ones_compared() {
        for len in [448usize, 504, 8, 24, 32, 40, 4088] {
            let mut w = vec![0u8; len];
            fill_words(&mut w, 0xdead_beef);
            let sector: Vec<u8> = (0..len / 8)
                .flat_map(|i| sector_word(0xdead_beef, i).to_le_bytes())
                .collect();
            assert_eq!(first_word_mismatch(&sector, 0xdead_beef), None, "{len}");
            assert!(words_match(&w, 0xdead_beef), "{len}");
            // Unaligned: the byte path.
            let mut u = vec![0u8; len + 1];
            u[1..].copy_from_slice(&w);
            assert!(words_match(&u[1..], 0xdead_beef), "{len}");
            u[len / 2 + 1] ^= 4;
            assert!(!words_match(&u[1..], 0xdead_beef), "{len}");
            for at in [0, len / 2, len - 1] {
                let mut d = w.clone();
                d[at] ^= 0x80;
                assert!(!words_match(&d, 0xdead_beef), "{len} {at}");
                let mut d = sector.clone();
                d[at] ^= 0x80;
                assert_eq!(first_word_mismatch(&d, 0xdead_beef), Some(at), "{len} {at}");
            }
        }
    }

    #[test]
    fn a_block_of_another_format_version_is_not_taken_as_intact() {
        let mut b = block(4096, &ID, 3);
        put32(&mut b, VER, VERSION - 1);
        put32(&mut b, HEADER_CRC, 0);
        let crc = crc32c::crc32c(&b[..HEADER_BYTES]);
        put32(&mut b, HEADER_CRC, crc);
        assert_eq!(check(&b, &ID).name(), "corrupt");
    }

    #[test]
    fn the_header_crc_is_the_crates_crc32c() {
        let mut h = [0u8; HEADER_BYTES];
        for seed in 0..200u64 {
            for (i, b) in h.iter_mut().enumerate() {
                *b = mix(seed * 64 + i as u64) as u8;
            }
            let words: [u64; 8] = std::array::from_fn(|i| get(&h, i * 8));
            assert_eq!(header_words_crc(&words), crc32c::crc32c(&h), "{seed}");
        }
        assert_eq!(header_words_crc(&[0u64; 8]), crc32c::crc32c(&[0u8; 64]));
    }

    #[test]
    fn a_filled_header_has_every_field_in_place_and_the_crates_crc_of_it() {
        for (len, generation) in [(128usize, 1u64), (4096, 7), (65536, u64::MAX >> 1)] {
            let b = block(len, &ID, generation);
            assert_eq!(get(&b, 0), MAGIC);
            assert_eq!(
                [get(&b, SEED), get(&b, FILE), get(&b, OFFSET), get(&b, GEN)],
                [ID.seed, ID.file, ID.offset, generation]
            );
            assert_eq!((get32(&b, LEN) as usize, get32(&b, VER)), (len, VERSION));
            assert_eq!(get(&b, 56), 0);
            let mut h = b[..HEADER_BYTES].to_vec();
            put32(&mut h, HEADER_CRC, 0);
            assert_eq!(get32(&b, HEADER_CRC), crc32c::crc32c(&h), "{len}");
        }
    }

    /// The whole-block CRC a block carries is the crate's CRC32C over its bytes with both
    /// CRC fields zero, made from the keys (fast) and bit by bit (portable) alike.
    #[test]
    fn the_block_crc_is_the_crates_crc32c_of_the_whole_block() {
        for len in [128usize, 512, 520, 1000, 4096, 4104, 65536] {
            let fast = block_crc(len);
            for (i, g) in [1u64, 2, 77, u64::MAX >> 3].into_iter().enumerate() {
                let id = BlockId {
                    seed: mix(i as u64 + 1),
                    file: i as u64,
                    offset: (i * len) as u64,
                };
                let mut b = vec![0u8; len];
                super::fill(&mut b, &id, g, &fast);
                let stored = get32(&b, BLOCK_CRC);
                put32(&mut b, HEADER_CRC, 0);
                put32(&mut b, BLOCK_CRC, 0);
                let want = crc32c::crc32c(&b);
                assert_eq!(stored, want, "len {len} generation {g}");
                // The same value from every path: the constants, the crate over a made
                // block (constants for another length), and the portable bit-by-bit sum.
                assert_eq!(
                    whole_crc(len, &id, g, block_key(&id, g), &block_crc(len + 8)),
                    want,
                    "{len}"
                );
                let parts = Parts {
                    header: [id.seed, id.file, id.offset, g],
                    stamp: g ^ STAMP_KEY,
                    block_key: block_key(&id, g),
                };
                assert_eq!(fast.crc_portable(&parts), want, "{len}");
            }
        }
    }

    #[test]
    fn a_wrong_block_crc_under_a_valid_header_is_corruption() {
        let mut b = block(4096, &ID, 5);
        // A block CRC changed and the header CRC made again over it: the header is valid,
        // every payload byte is right, the block CRC is not (nor, then, the header CRC:
        // the first byte that differs from what was written).
        let bad = get32(&b, BLOCK_CRC) ^ 0x100;
        put32(&mut b, BLOCK_CRC, bad);
        put32(&mut b, HEADER_CRC, 0);
        let h = crc32c::crc32c(&b[..HEADER_BYTES]);
        put32(&mut b, HEADER_CRC, h);
        assert!(
            matches!(check(&b, &ID), Verdict::Corrupt { at: 48, .. }),
            "{:?}",
            check(&b, &ID)
        );
    }

    #[test]
    fn a_block_tells_whether_its_own_crc_matches_its_bytes() {
        let b = block(4096, &ID, 4);
        assert_eq!(own_crc_matches(&b), Some(true));
        let mut flipped = b.clone();
        flipped[3000] ^= 1;
        assert_eq!(own_crc_matches(&flipped), Some(false));
        let mut header = b.clone();
        header[20] ^= 1;
        assert_eq!(own_crc_matches(&header), None, "no valid header");
        assert_eq!(own_crc_matches(&vec![0u8; 4096]), None);
    }

    #[test]
    fn zeros_are_unwritten() {
        assert_eq!(check(&vec![0u8; 4096], &ID), Verdict::Unwritten);
    }

    #[test]
    fn another_offset_or_file_or_run_is_misdirected() {
        let other = BlockId { offset: 4096, ..ID };
        match check(&block(4096, &other, 2), &ID) {
            Verdict::Misdirected { found } => {
                assert_eq!(found.offset, 4096);
                assert_eq!(found.generation, 2);
            }
            v => panic!("{v:?}"),
        }
        let file = BlockId { file: 8, ..ID };
        assert_eq!(check(&block(4096, &file, 1), &ID).name(), "misdirected");
        let run = BlockId { seed: 1, ..ID };
        assert_eq!(check(&block(4096, &run, 1), &ID).name(), "misdirected");
    }

    #[test]
    fn half_new_half_old_is_torn() {
        let mut b = block(4096, &ID, 2);
        let old = block(4096, &ID, 1);
        b[2048..].copy_from_slice(&old[2048..]);
        assert_eq!(
            check(&b, &ID),
            Verdict::Torn {
                generation: 2,
                new_sectors: 4,
                old_sectors: 4,
                oldest: Some(1)
            }
        );
        // Over a never-written block the old half is zeros.
        let mut z = block(4096, &ID, 1);
        z[1024..].fill(0);
        assert_eq!(
            check(&z, &ID),
            Verdict::Torn {
                generation: 1,
                new_sectors: 2,
                old_sectors: 6,
                oldest: None
            }
        );
        // Only the header sector reached the disk.
        let mut h = vec![0u8; 4096];
        h[..512].copy_from_slice(&block(4096, &ID, 5)[..512]);
        assert_eq!(check(&h, &ID).name(), "torn");
    }

    #[test]
    fn one_flipped_bit_is_named() {
        let mut b = block(4096, &ID, 9);
        b[3000] ^= 0x10;
        assert_eq!(
            check(&b, &ID),
            Verdict::Corrupt {
                at: 3000,
                expected: block(4096, &ID, 9)[3000],
                found: b[3000],
                bit_flip: true
            }
        );
        let mut two = block(4096, &ID, 9);
        two[100] ^= 0x3;
        assert!(matches!(
            check(&two, &ID),
            Verdict::Corrupt {
                at: 100,
                bit_flip: false,
                ..
            }
        ));
    }

    #[test]
    fn damage_to_the_header_or_a_stamp_is_corruption_not_a_tear() {
        for at in [0usize, 9, 33, 49, 53, 512, 1030] {
            let mut b = block(4096, &ID, 4);
            b[at] ^= 0x01;
            let v = check(&b, &ID);
            assert!(
                matches!(v, Verdict::Corrupt { bit_flip: true, .. }),
                "byte {at}: {v:?}"
            );
        }
    }

    #[test]
    fn block_sizes_below_the_header_are_refused() {
        assert!(check_block_size(4096).is_ok());
        assert!(check_block_size(128).is_ok());
        assert!(check_block_size(64).is_err());
        assert!(check_block_size(1001).is_err());
    }

    proptest! {
        #[test]
        fn any_single_bit_flip_is_caught_and_located(bit in 0usize..4096 * 8, g in 1u64..1000) {
            let mut b = block(4096, &ID, g);
            b[bit / 8] ^= 1 << (bit % 8);
            let v = check(&b, &ID);
            prop_assert!(matches!(v, Verdict::Corrupt { bit_flip: true, .. }), "{:?}", v);
            if let Verdict::Corrupt { at, .. } = v {
                prop_assert_eq!(at as usize, bit / 8);
            }
        }

        #[test]
        fn any_tear_at_a_sector_boundary_is_torn(cut in 1usize..8, g in 2u64..1000) {
            let mut b = block(4096, &ID, g);
            let old = block(4096, &ID, g - 1);
            b[cut * 512..].copy_from_slice(&old[cut * 512..]);
            let v = check(&b, &ID);
            let want = Verdict::Torn { generation: g, new_sectors: cut as u32, old_sectors: 8 - cut as u32, oldest: Some(g - 1) };
            prop_assert_eq!(v, want);
        }

        #[test]
        fn check_never_panics(bytes in proptest::collection::vec(any::<u8>(), 128..1200)) {
            let n = bytes.len() / 8 * 8;
            let _ = check(&bytes[..n], &ID);
        }
    }

    /// Not a check: prints what filling and checking one 4 KiB block costs, with the
    /// loops this CPU runs and with the portable ones (an A/B in one process: the minimum
    /// of 40 trials of 5000 blocks each, the two alternating)
    /// (`cargo test --release --lib verify::block -- --ignored --nocapture`).
    #[test]
    #[ignore]
    fn measure_cost_per_block() {
        use std::sync::atomic::Ordering;
        const N: u64 = 5000;
        // Page-aligned, as the engines' buffers are.
        let mut b = vec![0u8; 8192];
        let at = b.as_ptr().align_offset(4096);
        let b = &mut b[at..][..4096];
        let mut best = [[f64::MAX; 2]; 2];
        let crc = block_crc(4096);
        for trial in 0..80 {
            let portable = trial % 2 == 1;
            super::super::words::PORTABLE.store(portable, Ordering::Relaxed);
            let t = std::time::Instant::now();
            for g in 0..N {
                super::fill(b, &ID, g, &crc);
                std::hint::black_box(&b);
            }
            let f = t.elapsed().as_nanos() as f64 / N as f64;
            let t = std::time::Instant::now();
            for _ in 0..N {
                std::hint::black_box(super::check(std::hint::black_box(&*b), &ID, &crc));
            }
            let c = t.elapsed().as_nanos() as f64 / N as f64;
            let p = portable as usize;
            best[p][0] = best[p][0].min(f);
            best[p][1] = best[p][1].min(c);
        }
        super::super::words::PORTABLE.store(false, Ordering::Relaxed);
        println!(
            "verify 4 KiB: fill {:.0} ns, check {:.0} ns per block ({}; portable loops: fill {:.0} ns, check {:.0} ns)",
            best[0][0],
            best[0][1],
            super::super::words::loops(),
            best[1][0],
            best[1][1]
        );
    }
}

/// The fast path against the general one (`super::fast`), from here: this module knows both.
#[cfg(all(test, target_arch = "x86_64"))]
mod fast_path_tests {
    use super::super::fast;
    use super::{self as block, block_crc, fill_general, BlockId};

    const IDS: [BlockId; 3] = [
        BlockId {
            seed: 0,
            file: 0,
            offset: 0,
        },
        BlockId {
            seed: 0x1234_5678_9abc_def0,
            file: 3,
            offset: 4096 * 77,
        },
        BlockId {
            seed: u64::MAX,
            file: u64::MAX,
            offset: 1 << 40,
        },
    ];

    fn have_cpu() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("sse4.2")
            && std::arch::is_x86_feature_detected!("pclmulqdq")
    }

    /// Zeroed bytes (at any alignment: the loops load and store unaligned).
    fn buffer(len: usize) -> Vec<u8> {
        vec![0u8; len]
    }

    #[test]
    fn the_fast_fill_makes_the_general_fills_bytes_and_the_fast_check_takes_them() {
        if !have_cpu() {
            println!("SKIPPED: this CPU lacks AVX2, SSE4.2 or PCLMULQDQ");
            return;
        }
        for len in [512usize, 4096, 8192, 65536] {
            let crc = block_crc(len);
            // (`usable` but for the CPU, which `have_cpu` checked: a test running beside this one
            // may be switching the loops to the portable ones.)
            assert!(crc.fast() && crc.len() == len);
            for id in IDS {
                for g in [1u64, 2, 1 << 33, u64::MAX] {
                    let mut fast = buffer(len);
                    let mut general = buffer(len);
                    // SAFETY: `usable` holds (asserted above).
                    unsafe { fast::fill(&mut fast, &id, g, &crc) };
                    fill_general(&mut general, &id, g, &crc);
                    assert!(fast == general, "len {len}, {id:?}, generation {g}");
                    // SAFETY: as above.
                    assert_eq!(unsafe { fast::intact(&general, &id, &crc) }, Some(g));
                    assert_eq!(
                        block::check(&general, &id, &crc),
                        block::Verdict::Intact { generation: g }
                    );
                }
            }
        }
    }

    #[test]
    fn the_fast_check_refuses_any_changed_byte_and_any_other_block() {
        if !have_cpu() {
            println!("SKIPPED: this CPU lacks AVX2, SSE4.2 or PCLMULQDQ");
            return;
        }
        let len = 4096;
        let crc = block_crc(len);
        let id = IDS[1];
        let mut b = buffer(len);
        fill_general(&mut b, &id, 9, &crc);
        for at in 0..len {
            for flip in [0x01u8, 0x80, 0xff] {
                b[at] ^= flip;
                // SAFETY: `usable` holds for blocks of `crc`'s length on this CPU.
                assert_eq!(unsafe { fast::intact(&b, &id, &crc) }, None, "byte {at}");
                b[at] ^= flip;
            }
        }
        // SAFETY: as above.
        assert_eq!(unsafe { fast::intact(&b, &id, &crc) }, Some(9));
        // The same block expected at another offset, file or run, and zeros.
        for other in [
            BlockId {
                offset: id.offset + 4096,
                ..id
            },
            BlockId { file: 4, ..id },
            BlockId { seed: 1, ..id },
        ] {
            // SAFETY: as above.
            assert_eq!(unsafe { fast::intact(&b, &other, &crc) }, None);
        }
        // SAFETY: as above.
        assert_eq!(unsafe { fast::intact(&buffer(len), &id, &crc) }, None);
    }

    #[test]
    fn blocks_of_another_length_or_shape_go_the_general_way() {
        let crc = block_crc(4096);
        assert!(!fast::usable(&crc, 8192));
        assert!(!fast::usable(&block_crc(1000), 1000));
    }
}
