//! A verified block's payload and sector stamps, made from and compared with the format's
//! position tables (`format::FIRST_SECTOR`, `LATER_SECTOR`): a payload word is its position
//! word XOR its sector's key, the first word of every sector after the first is the stamp.
//! This is the general path's payload, for a block of any length: whole sectors go through
//! the fast path's AVX2 pass where the CPU has AVX2 (the same instructions, compiled for
//! AVX2 alone), a last partial sector and every block elsewhere through the portable pass
//! here. The header (the first `HEADER_BYTES`) is the caller's, never touched.

use super::format::{sector_key, FIRST_SECTOR, HEADER_BYTES, LATER_SECTOR, SECTOR};

/// The payload words and stamps of a block of key `bk` and stamp `stamp` into `buf` (its
/// length a multiple of 8, at least the header's).
#[inline]
pub(super) fn fill(buf: &mut [u8], bk: u64, stamp: u64) {
    let whole = buf.len() / SECTOR;
    #[cfg(target_arch = "x86_64")]
    if whole > 0 && super::words::wide() {
        // SAFETY: AVX2 is present (checked just above); whole sectors, at least one.
        unsafe { super::fast::fill_payload_avx2(&mut buf[..whole * SECTOR], bk, stamp) };
        fill_portable(buf, bk, stamp, whole);
        return;
    }
    fill_portable(buf, bk, stamp, 0);
}

/// Whether every payload word and stamp of `buf` is that of a block of key `bk` and stamp
/// `stamp` (every byte compared, no early exit; the header is compared apart).
#[inline]
pub(super) fn matches(buf: &[u8], bk: u64, stamp: u64) -> bool {
    let whole = buf.len() / SECTOR;
    #[cfg(target_arch = "x86_64")]
    if whole > 0 && super::words::wide() {
        // SAFETY: as in `fill`.
        let head = unsafe { super::fast::payload_matches_avx2(&buf[..whole * SECTOR], bk, stamp) };
        return head & matches_portable(buf, bk, stamp, whole);
    }
    matches_portable(buf, bk, stamp, 0)
}

/// Sector `s`'s position words and the number of words before its payload (the header's or
/// the stamp's).
#[inline(always)]
fn positions(s: usize) -> (&'static [u64; SECTOR / 8], usize) {
    if s == 0 {
        (&FIRST_SECTOR.0, HEADER_BYTES / 8)
    } else {
        (&LATER_SECTOR.0, 1)
    }
}

/// The portable fill of sectors `from..` (the last may be partial): per sector one pass of
/// position word XOR key, which the compiler vectorises.
fn fill_portable(buf: &mut [u8], bk: u64, stamp: u64, from: usize) {
    for (s, c) in buf.chunks_mut(SECTOR).enumerate().skip(from) {
        // A later sector's words from its first (the stamp's place, stored over after):
        // a whole sector of words is an even, unbroken run for the vectorised loop.
        let skip = if s == 0 { HEADER_BYTES / 8 } else { 0 };
        let pos = positions(s).0;
        let k = sector_key(bk, s);
        // Sliced before zipping (no `skip` adapter): a zip of two slice iterators is what
        // the compiler vectorises.
        let n = c.len() / 8;
        for (w, p) in c[skip * 8..].chunks_exact_mut(8).zip(&pos[skip..n]) {
            w.copy_from_slice(&(p ^ k).to_le_bytes());
        }
        if s > 0 {
            c[..8].copy_from_slice(&stamp.to_le_bytes());
        }
    }
}

/// The portable comparison of sectors `from..`: the differences OR-ed, tested once.
fn matches_portable(buf: &[u8], bk: u64, stamp: u64, from: usize) -> bool {
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    let mut d = 0;
    for (s, c) in buf.chunks(SECTOR).enumerate().skip(from) {
        let (pos, skip) = positions(s);
        if s > 0 {
            d |= word(&c[..8]) ^ stamp;
        }
        let k = sector_key(bk, s);
        let n = c.len() / 8;
        for (w, p) in c[skip * 8..].chunks_exact(8).zip(&pos[skip..n]) {
            d |= word(w) ^ p ^ k;
        }
    }
    d == 0
}

#[cfg(test)]
mod tests {
    use super::super::format::{sector_key, HEADER_BYTES, SECTOR};
    use super::super::words::{sector_word, PORTABLE};
    use super::{fill, matches};
    use std::sync::atomic::Ordering;

    /// The block's payload and stamps word by word from the format's definition (sector
    /// `s`'s payload word j is `sector_word(sector_key(bk, s), j)`), the header bytes `0xAA`.
    fn reference(len: usize, bk: u64, stamp: u64) -> Vec<u8> {
        let mut b = vec![0xAAu8; len];
        for (s, c) in b.chunks_mut(SECTOR).enumerate() {
            let at = if s == 0 { HEADER_BYTES } else { 8 };
            if s > 0 {
                c[..8].copy_from_slice(&stamp.to_le_bytes());
            }
            let at = at.min(c.len());
            for (j, w) in c[at..].chunks_exact_mut(8).enumerate() {
                w.copy_from_slice(&sector_word(sector_key(bk, s), j).to_le_bytes());
            }
        }
        b
    }

    /// Both passes (AVX2 where present, and the portable one) make the reference bytes
    /// for whole and partial last sectors, at any alignment of the buffer, leave the header
    /// alone, accept what they made, and refuse every changed byte after the header, another
    /// key and another stamp.
    #[test]
    fn the_payload_is_the_formats_and_every_byte_is_compared() {
        for portable in [false, true] {
            PORTABLE.store(portable, Ordering::Relaxed);
            for len in [128usize, 504, 512, 520, 1000, 1024, 4096, 4104, 65536] {
                for (bk, stamp) in [(0u64, 0u64), (0x0123_4567_89ab_cdef, 0x5eed), (u64::MAX, 7)] {
                    let want = reference(len, bk, stamp);
                    for shift in [0usize, 8, 1] {
                        let mut raw = vec![0xAAu8; len + shift];
                        let got = &mut raw[shift..];
                        fill(got, bk, stamp);
                        assert!(
                            *got == want[..],
                            "portable {portable} len {len} shift {shift}"
                        );
                        assert!(matches(got, bk, stamp), "{portable} {len} {shift}");
                        assert!(!matches(got, bk ^ 1, stamp), "{portable} {len} other key");
                        if len > SECTOR {
                            assert!(!matches(got, bk, stamp ^ 1), "{portable} {len} stamp");
                        }
                        for at in (HEADER_BYTES..len).step_by(13).chain([len - 1]) {
                            got[at] ^= 0x40;
                            assert!(!matches(got, bk, stamp), "{portable} {len} byte {at}");
                            got[at] ^= 0x40;
                        }
                    }
                }
            }
        }
        PORTABLE.store(false, Ordering::Relaxed);
    }
}
