//! The byte stream `fsbench workload --verify` writes into fileset files: every byte of a
//! file is a function of (run seed, file identity, incarnation, byte offset), so a write of
//! any length at any offset (an append that lands where the file ends, a whole-file write
//! from the cursor) can be made, and any read of any range checked, without headers and
//! without knowing where the writes began. Word `k` (bytes `8k..8k+8`, little-endian) is
//! `key + (k + 1) * WEYL` (the block's payload words, [`super::block::fill_words`]), `key`
//! mixed from the seed, file and incarnation: cheap to make and compare, and invertible, so a word found at the wrong place names the
//! offset it was made for (a misdirected write), and a word of the previous incarnation (the
//! file before it was deleted and recreated) is told apart from corruption.

/// The Weyl increment of the words (odd, so the word of an offset can be inverted).
use super::block::WEYL;

/// The multiplicative inverse of WEYL modulo 2^64 (Newton's iteration: each step doubles
/// the correct low bits; five steps from 3 bits give 96).
const WEYL_INV: u64 = {
    let mut x = WEYL; // correct to 3 bits for an odd number
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(WEYL.wrapping_mul(x)));
        i += 1;
    }
    x
};

/// SplitMix64's finaliser.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The key of incarnation `incarnation` of file `file` in the run with seed `seed`.
pub(crate) fn key(seed: u64, file: u64, incarnation: u64) -> u64 {
    mix(seed ^ mix(file ^ mix(incarnation ^ 0x7374_7265_616d_0001)))
}

#[inline(always)]
fn word(key: u64, k: u64) -> u64 {
    key.wrapping_add(WEYL.wrapping_mul(k.wrapping_add(1)))
}

/// The expected byte at file offset `at`.
pub(crate) fn byte_at(key: u64, at: u64) -> u8 {
    word(key, at / 8).to_le_bytes()[(at % 8) as usize]
}

/// The offset of the aligned word `w` of the file with `key` (None: past any plausible
/// offset, so not a word of this key).
pub(crate) fn offset_of_word(key: u64, w: u64) -> Option<u64> {
    let k = w.wrapping_sub(key).wrapping_mul(WEYL_INV).wrapping_sub(1);
    // `then`, not `then_some`: the product is only computed for a plausible k (it
    // overflows for most words that are not of this key).
    (k < (1u64 << 58)).then(|| k * 8)
}

/// Split `len` bytes at file offset `offset` into a head up to the next 8-byte boundary,
/// whole words, and a tail.
fn split(offset: u64, len: usize) -> (usize, usize) {
    let head = (((8 - offset % 8) % 8) as usize).min(len);
    let words = (len - head) / 8;
    (head, words)
}

/// Fill `buf` with the stream of `key` from file offset `offset`.
pub(crate) fn fill(buf: &mut [u8], key: u64, offset: u64) {
    let (head, words) = split(offset, buf.len());
    if head > 0 {
        let w = word(key, offset / 8).to_le_bytes();
        let from = (offset % 8) as usize;
        buf[..head].copy_from_slice(&w[from..from + head]);
    }
    let k0 = (offset + head as u64) / 8;
    let (mid, tail) = buf[head..].split_at_mut(words * 8);
    super::block::fill_words(mid, super::block::skip_words(key, k0));
    if !tail.is_empty() {
        let w = word(key, k0 + words as u64).to_le_bytes();
        let n = tail.len();
        tail.copy_from_slice(&w[..n]);
    }
}

/// Whether `buf` is exactly the stream of `key` from `offset` (every byte compared).
pub(crate) fn matches(buf: &[u8], key: u64, offset: u64) -> bool {
    let (head, words) = split(offset, buf.len());
    let mut ok = true;
    for (j, &b) in buf[..head].iter().enumerate() {
        ok &= b == byte_at(key, offset + j as u64);
    }
    let k0 = (offset + head as u64) / 8;
    let mid = &buf[head..head + words * 8];
    ok &= super::block::words_match(mid, super::block::skip_words(key, k0));
    let tail_at = head + words * 8;
    for (j, &b) in buf[tail_at..].iter().enumerate() {
        ok &= b == byte_at(key, offset + (tail_at + j) as u64);
    }
    ok
}

/// The first index of `buf` whose byte is not the stream's (slow path: after `matches`
/// failed).
pub(crate) fn first_mismatch(buf: &[u8], key: u64, offset: u64) -> Option<usize> {
    buf.iter()
        .enumerate()
        .position(|(j, &b)| b != byte_at(key, offset + j as u64))
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_word_of_no_key_is_no_offset_and_no_overflow() {
        let key = 0x1234_5678_9abc_def0;
        assert_eq!(offset_of_word(key, word(key, 1000)), Some(8000));
        // Words whose index would be far past any file: None, not an overflow.
        for w in [0u64, u64::MAX, key ^ 1, 1 << 63] {
            let _ = offset_of_word(key, w);
        }
        assert_eq!(offset_of_word(key, key.wrapping_add(1)), None);
    }

    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_inverse_inverts() {
        assert_eq!(WEYL.wrapping_mul(WEYL_INV), 1);
        let k = key(1, 2, 3);
        assert_eq!(offset_of_word(k, word(k, 12345)), Some(12345 * 8));
    }

    proptest! {
        #[test]
        fn pieces_written_anywhere_make_the_one_stream(
            offset in 0u64..10_000, cuts in proptest::collection::vec(0usize..300, 0..6), len in 0usize..2000
        ) {
            let k = key(7, 9, 1);
            let mut whole = vec![0u8; len];
            fill(&mut whole, k, offset);
            // The same range written in pieces (as appends of random sizes would).
            let mut pieces = vec![0u8; len];
            let mut at = 0;
            for c in cuts {
                let n = c.min(len - at);
                fill(&mut pieces[at..at + n], k, offset + at as u64);
                at += n;
            }
            fill(&mut pieces[at..], k, offset + at as u64);
            prop_assert_eq!(&whole, &pieces);
            prop_assert!(matches(&whole, k, offset));
            prop_assert_eq!(first_mismatch(&whole, k, offset), None);
            for (j, &b) in whole.iter().enumerate() {
                prop_assert_eq!(b, byte_at(k, offset + j as u64));
            }
        }

        #[test]
        fn any_changed_byte_is_found_where_it_is(offset in 0u64..10_000, len in 1usize..2000, at in 0usize..2000, x in 1u8..=255) {
            let k = key(7, 9, 1);
            let at = at % len;
            let mut b = vec![0u8; len];
            fill(&mut b, k, offset);
            b[at] ^= x;
            prop_assert!(!matches(&b, k, offset));
            prop_assert_eq!(first_mismatch(&b, k, offset), Some(at));
        }
    }

    #[test]
    fn another_file_or_incarnation_or_offset_does_not_match() {
        let mut b = vec![0u8; 4096];
        fill(&mut b, key(1, 2, 3), 8192);
        assert!(matches(&b, key(1, 2, 3), 8192));
        assert!(!matches(&b, key(1, 2, 4), 8192));
        assert!(!matches(&b, key(1, 5, 3), 8192));
        assert!(!matches(&b, key(9, 2, 3), 8192));
        assert!(!matches(&b, key(1, 2, 3), 4096));
        assert!(!matches(&b, key(1, 2, 3), 8193));
    }
}
