//! The verified block's common case as one function per direction: a block of the length
//! the run's CRC constants were made for (a whole number of 512-byte sectors) on a CPU with
//! AVX2, SSE4.2 and PCLMULQDQ. Each function is compiled for those features, so the key,
//! the header, both CRCs and the pass over the payload are inlined into one body: between
//! two I/Os the kernel's system call path displaces the worker's code and branch history,
//! and a short straight run of instructions is what comes back cheapest. Anything else
//! (another length, another CPU, a block that is not the intact one expected) goes the
//! general way in [`super::block`], which names what is wrong; the two agree (tested).

#![cfg(target_arch = "x86_64")]

use super::blockcrc::{BlockCrc, Parts};
use super::format::{
    block_key, crc_sse42, header, BlockId, FIRST_SECTOR, GEN, HEADER_BYTES, HEADER_CRC,
    LATER_SECTOR, SECTOR, SECTOR_WEYL, STAMP_KEY,
};
use super::words;
use std::arch::x86_64::*;

/// Whether a block of `len` bytes takes this path: `crc` is for its length, makes its CRC
/// with the CPU's help, the block is whole sectors, and the CPU has AVX2.
#[inline]
pub(super) fn usable(crc: &BlockCrc, len: usize) -> bool {
    crc.len() == len && len.is_multiple_of(SECTOR) && crc.fast() && words::wide()
}

/// The whole-block CRC32C of the block made of these values (both CRC fields zero).
///
/// # Safety
/// The CPU must have SSE4.2 and PCLMULQDQ.
#[target_feature(enable = "sse4.2,pclmulqdq")]
#[inline]
unsafe fn whole_crc(crc: &BlockCrc, id: &BlockId, generation: u64, stamp: u64, bk: u64) -> u32 {
    // SAFETY: the caller's features.
    crc.fixed_crc()
        ^ unsafe {
            crc.raw_clmul(&Parts {
                header: [id.seed, id.file, id.offset, generation],
                stamp,
                block_key: bk,
            })
        }
}

/// [`super::block::fill`]'s common case: generation `generation` of block `id` into `buf`.
///
/// # Safety
/// [`usable`]`(crc, buf.len())` must hold.
#[target_feature(enable = "avx2,sse4.2,pclmulqdq")]
pub(super) unsafe fn fill(buf: &mut [u8], id: &BlockId, generation: u64, crc: &BlockCrc) {
    let bk = block_key(id, generation);
    let stamp = generation ^ STAMP_KEY;
    // The header made in registers, its CRCs from them (the block's with both CRC fields
    // zero, the header's with its own zero), and stored before the payload: the chain of
    // dependent instructions (key, carry-less multiplies, eight `crc32`) then runs beside
    // the payload's stores instead of after them.
    let mut h = header(buf.len(), id, generation);
    // SAFETY: the CPU's features (the caller's contract).
    h[HEADER_CRC / 8] = (unsafe { whole_crc(crc, id, generation, stamp, bk) } as u64) << 32;
    h[HEADER_CRC / 8] |= unsafe { crc_sse42(h.iter().copied()) } as u64;
    for (c, w) in buf[..HEADER_BYTES].chunks_exact_mut(8).zip(h) {
        c.copy_from_slice(&w.to_le_bytes());
    }
    // SAFETY: AVX2 (the caller's contract); `buf` is whole sectors (`usable`).
    unsafe { fill_payload(buf, bk, stamp) };
}

/// The payload and the stamps of a block of key `bk` into `buf` (whole sectors; the header's
/// two 32-byte groups left alone): per 32 bytes one load of position words, one XOR, one
/// store; the first group of each later sector carries the stamp in its first lane.
///
/// # Safety
/// The caller is compiled with AVX2; `buf.len()` is a nonzero multiple of 512.
#[inline(always)]
unsafe fn fill_payload(buf: &mut [u8], bk: u64, stamp: u64) {
    let p = buf.as_mut_ptr() as *mut __m256i;
    let (first, later) = (
        FIRST_SECTOR.0.as_ptr() as *const __m256i,
        LATER_SECTOR.0.as_ptr() as *const __m256i,
    );
    // SAFETY (every load and store): group g < 16 of a 512-byte sector of `buf` and of a
    // 512-byte position table; unaligned stores, aligned loads.
    let put = |at: *mut __m256i, pos: *const __m256i, k: __m256i| unsafe {
        _mm256_storeu_si256(at, _mm256_xor_si256(_mm256_load_si256(pos), k))
    };
    let mut sector_key = bk ^ SECTOR_WEYL;
    let kv = _mm256_set1_epi64x(sector_key as i64);
    for g in HEADER_BYTES / 32..16 {
        // SAFETY: as above.
        put(unsafe { p.add(g) }, unsafe { first.add(g) }, kv);
    }
    let mut weyl = SECTOR_WEYL;
    for s in 1..buf.len() / SECTOR {
        weyl = weyl.wrapping_add(SECTOR_WEYL);
        sector_key = bk ^ weyl;
        let kv = _mm256_set1_epi64x(sector_key as i64);
        let k = sector_key as i64;
        let k0 = _mm256_set_epi64x(k, k, k, stamp as i64);
        // SAFETY: sector s < buf.len() / 512.
        let at = unsafe { p.add(s * 16) };
        put(at, later, k0);
        for g in 1..16 {
            // SAFETY: as above.
            put(unsafe { at.add(g) }, unsafe { later.add(g) }, kv);
        }
    }
}

/// [`fill_payload`] alone, for the general path on a CPU with AVX2 (`super::payload`).
///
/// # Safety
/// The CPU must have AVX2; `buf.len()` is a nonzero multiple of 512.
#[target_feature(enable = "avx2")]
pub(super) unsafe fn fill_payload_avx2(buf: &mut [u8], bk: u64, stamp: u64) {
    // SAFETY: this function's own contract.
    unsafe { fill_payload(buf, bk, stamp) }
}

/// [`payload_matches`] alone, for the general path on a CPU with AVX2 (`super::payload`).
///
/// # Safety
/// As [`fill_payload_avx2`].
#[target_feature(enable = "avx2")]
pub(super) unsafe fn payload_matches_avx2(buf: &[u8], bk: u64, stamp: u64) -> bool {
    // SAFETY: this function's own contract.
    unsafe { payload_matches(buf, bk, stamp) }
}

/// Whether every payload word and stamp of `buf` is that of a block of key `bk` and stamp
/// `stamp` (the header is compared apart). Every payload word XOR its position word must be
/// its sector's key; the pass takes the first sector's key from the first payload word
/// found and compares that with the one `bk` makes at the end, so it need not wait for the
/// key's chain of multiplies, begun just before.
///
/// # Safety
/// As [`fill_payload`].
#[inline(always)]
unsafe fn payload_matches(buf: &[u8], bk: u64, stamp: u64) -> bool {
    let p = buf.as_ptr() as *const __m256i;
    let (first, later) = (
        FIRST_SECTOR.0.as_ptr() as *const __m256i,
        LATER_SECTOR.0.as_ptr() as *const __m256i,
    );
    // SAFETY: word 8 of the first sector.
    let found_key = unsafe { (buf.as_ptr() as *const u64).add(8).read_unaligned() }
        ^ FIRST_SECTOR.0[HEADER_BYTES / 8];
    // SAFETY (every load): as in `fill_payload`.
    let diff = |at: *const __m256i, pos: *const __m256i, k: __m256i| unsafe {
        _mm256_xor_si256(
            _mm256_xor_si256(_mm256_loadu_si256(at), _mm256_load_si256(pos)),
            k,
        )
    };
    let (mut da, mut db) = (_mm256_setzero_si256(), _mm256_setzero_si256());
    let kv = _mm256_set1_epi64x(found_key as i64);
    for g in HEADER_BYTES / 32..16 {
        // SAFETY: as above.
        da = _mm256_or_si256(da, diff(unsafe { p.add(g) }, unsafe { first.add(g) }, kv));
    }
    let mut weyl = SECTOR_WEYL;
    for s in 1..buf.len() / SECTOR {
        weyl = weyl.wrapping_add(SECTOR_WEYL);
        // The first sector's key is bk ^ SECTOR_WEYL; this one's bk ^ weyl.
        let k = (found_key ^ SECTOR_WEYL ^ weyl) as i64;
        let kv = _mm256_set1_epi64x(k);
        let k0 = _mm256_set_epi64x(k, k, k, stamp as i64);
        // SAFETY: sector s < buf.len() / 512.
        let at = unsafe { p.add(s * 16) };
        da = _mm256_or_si256(da, diff(at, later, k0));
        for g in (1..15).step_by(2) {
            // SAFETY: as above.
            da = _mm256_or_si256(da, diff(unsafe { at.add(g) }, unsafe { later.add(g) }, kv));
            db = _mm256_or_si256(
                db,
                diff(unsafe { at.add(g + 1) }, unsafe { later.add(g + 1) }, kv),
            );
        }
        db = _mm256_or_si256(
            db,
            diff(unsafe { at.add(15) }, unsafe { later.add(15) }, kv),
        );
    }
    let d = _mm256_or_si256(da, db);
    (_mm256_testz_si256(d, d) == 1) & (found_key == bk ^ SECTOR_WEYL)
}

/// [`super::block::check`]'s common case: the generation `buf` holds when it is, byte for
/// byte, a whole block of `id` as [`fill`] makes it; None when it is anything else (the
/// general check then says what).
///
/// # Safety
/// [`usable`]`(crc, buf.len())` must hold.
#[target_feature(enable = "avx2,sse4.2,pclmulqdq")]
pub(super) unsafe fn intact(buf: &[u8], id: &BlockId, crc: &BlockCrc) -> Option<u64> {
    let found: [u64; 8] = std::array::from_fn(|i| {
        u64::from_le_bytes(buf[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
    });
    let generation = found[GEN / 8];
    let stamp = generation ^ STAMP_KEY;
    let bk = block_key(id, generation);
    // Every header word but the CRCs' as this block's would be; the header's CRC over the
    // words found (its own field zero) and the block's made from the values: with the
    // words equal, that compares the CRC word with the one `fill` makes.
    let want = header(buf.len(), id, generation);
    let mut fields = true;
    for i in (0..8).filter(|&i| i != HEADER_CRC / 8) {
        fields &= found[i] == want[i];
    }
    let mut own = found;
    own[HEADER_CRC / 8] &= !(u32::MAX as u64);
    let stored = found[HEADER_CRC / 8];
    // SAFETY: the CPU's features (the caller's contract).
    let header_crc = unsafe { crc_sse42(own.iter().copied()) };
    let block_crc = unsafe { whole_crc(crc, id, generation, stamp, bk) };
    let crcs = stored == ((block_crc as u64) << 32 | header_crc as u64);
    // SAFETY: as in `fill`.
    let body = unsafe { payload_matches(buf, bk, stamp) };
    (fields & crcs & body).then_some(generation)
}
