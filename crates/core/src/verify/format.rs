//! What a verified block is: its header's layout, its constants, the key its payload is
//! made from and the position words its payload is made of. Both ways of making and checking
//! a block ([`super::block`], every case, and [`super::fast`], the common one in one function
//! per direction) build on these, so the format is written down once.

use super::words::WEYL;

/// "FSBVRFY1", little-endian.
pub(crate) const MAGIC: u64 = u64::from_le_bytes(*b"FSBVRFY1");
/// Bytes of the header at the start of each block.
pub(crate) const HEADER_BYTES: usize = 64;
/// The unit a torn write is judged in: what a device writes atomically at the least.
pub(crate) const SECTOR: usize = 512;
/// Smallest block `--verify` accepts (the header and a little payload) and its check: Job
/// validation needs them, and the Job sits below this format, so they live with the Job.
pub(crate) use crate::job::{
    check_verify_block_size as check_block_size, VERIFY_MIN_BLOCK as MIN_BLOCK,
};
const _: () = assert!(MIN_BLOCK >= 2 * HEADER_BYTES && MIN_BLOCK.is_multiple_of(8));

/// Format 3: payload words XOR-ed with the sector key, a CRC32C of the whole block.
pub(super) const VERSION: u32 = 3;
/// Format 4, a shaped block (`--verify` with `--buffer-compress`, `--dedupe` or
/// `--buffer-pattern`): format 3's header, then the data shape's bytes instead of derived
/// words and sector stamps; its whole-block CRC32C is taken over the bytes as written.
pub(crate) const SHAPED_VERSION: u32 = 4;
/// Byte ranges of the header fields.
pub(super) const SEED: usize = 8;
pub(super) const FILE: usize = 16;
pub(super) const OFFSET: usize = 24;
pub(super) const GEN: usize = 32;
pub(super) const LEN: usize = 40;
pub(super) const VER: usize = 44;
pub(super) const HEADER_CRC: usize = 48;
/// CRC32C of the whole block with both CRC fields zero.
pub(super) const BLOCK_CRC: usize = 52;
/// Sector stamps are the generation xor this, so that a sector of zeros never looks stamped.
pub(super) const STAMP_KEY: u64 = 0x5bd1_e995_9e37_79b9;

/// Who and what a block is: the identity a write stamps and a read expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockId {
    pub seed: u64,
    pub file: u64,
    pub offset: u64,
}

/// SplitMix64's finaliser: spreads (seed, file, offset, generation) over a payload key.
#[inline(always)]
pub(super) fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of one write of one block: (seed, file, offset, generation) mixed, the offset's
/// mix beside the chain so that it adds no latency to it.
#[inline(always)]
pub(super) fn block_key(id: &BlockId, generation: u64) -> u64 {
    mix(id.seed ^ mix(id.file ^ mix(generation)) ^ mix(id.offset ^ OFFSET_KEY))
}

/// Sector keys are the block key XOR this times (sector index + 1): no two sectors of a
/// block share a key, and the part that is not the block key is the same in every block
/// of a length, so the whole-block CRC takes the block key once (see `blockcrc`).
pub(super) const SECTOR_WEYL: u64 = 0xd6e8_feb8_6659_fd93;
/// Mixed into the offset so that offset 0 does not mix to 0.
const OFFSET_KEY: u64 = 0xa076_1d64_78bd_642f;

/// The payload key of sector `s` of a block with key `block_key`.
#[inline(always)]
pub(super) fn sector_key(block_key: u64, s: usize) -> u64 {
    block_key ^ SECTOR_WEYL.wrapping_mul(s as u64 + 1)
}

/// The position words of one 512-byte sector, on whole cache lines: a payload word is its
/// position word XOR its sector's key ([`sector_key`]). Every sector after the first has
/// `WEYL` times the word's index (word 0, the stamp's place, is 0); the first, whose payload
/// starts after the eight header words, `WEYL` times (index - 7) (0 under the header):
/// payload word j of every sector is `WEYL` times j + 1, as `words::sector_word` counts it.
/// One kilobyte read by every fill and check, whatever the block's length: between two
/// I/Os the kernel's copy and the page cache push the worker's lines out of the first-level
/// cache, and what comes back costs by the line.
#[repr(C, align(64))]
pub(super) struct Positions(pub [u64; SECTOR / 8]);

const fn positions(first: bool) -> Positions {
    let mut w = [0u64; SECTOR / 8];
    let mut i = 0;
    while i < SECTOR / 8 {
        w[i] = if !first {
            WEYL.wrapping_mul(i as u64)
        } else if i >= HEADER_BYTES / 8 {
            // Payload word j (from 0) is WEYL times j + 1, and it sits at word j + 8.
            WEYL.wrapping_mul((i - HEADER_BYTES / 8 + 1) as u64)
        } else {
            0
        };
        i += 1;
    }
    Positions(w)
}

/// The first sector's position words.
pub(super) static FIRST_SECTOR: Positions = positions(true);
/// The position words of every sector after the first.
pub(super) static LATER_SECTOR: Positions = positions(false);
const _: () = assert!(SECTOR == 512 && HEADER_BYTES == 64);

/// The header words of a block, both CRC fields zero.
#[inline(always)]
pub(super) fn header(len: usize, id: &BlockId, generation: u64) -> [u64; 8] {
    [
        MAGIC,
        id.seed,
        id.file,
        id.offset,
        generation,
        len as u64 | (VERSION as u64) << 32,
        0,
        0,
    ]
}

/// CRC32C of a header given as its eight little-endian words: eight `crc32` instructions
/// where the CPU has SSE4.2 (for 64 bytes the crate's general loop and dispatch cost several
/// times that, on every write), the crate elsewhere; the same value either way (tested).
#[inline]
pub(super) fn header_words_crc(h: &[u64; 8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("sse4.2") {
        // SAFETY: SSE4.2 is present (checked just above).
        return unsafe { crc_sse42(h.iter().copied()) };
    }
    let mut b = [0u8; HEADER_BYTES];
    for (c, w) in b.chunks_exact_mut(8).zip(h) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    crc32c::crc32c(&b)
}

/// CRC32C of little-endian words, one `crc32` instruction each.
///
/// # Safety
/// The CPU must have SSE4.2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
#[inline]
pub(super) unsafe fn crc_sse42(words: impl Iterator<Item = u64>) -> u32 {
    use std::arch::x86_64::_mm_crc32_u64;
    // CRC32C as the crate computes it: initial value and final value inverted.
    let mut c = u32::MAX as u64;
    for w in words {
        c = _mm_crc32_u64(c, w);
    }
    !(c as u32)
}
