//! The payload words of verified data: the stream's (`stream`: word `i` of key `key` is
//! `key + (i + 1) * WEYL`, [`word`]), made and compared by the loops here, and the block
//! sector's (word `i` of key `key` is `key ^ (i + 1) * WEYL`, [`sector_word`]: XOR, so that
//! the block's CRC32C, linear over XOR, can be made from the key, see `blockcrc`; the block's
//! loops read them from the format's position tables, see `payload` and `fast`).
//!
//! Both are counter-based, no word depends on the one before, so the loops work on many
//! words at once. On x86-64 with AVX2 (detected at run time, once per process) they take four
//! words per 256-bit register and run two registers a step; elsewhere they take eight
//! independent 64-bit lanes, which the compiler turns into SSE2. Both check every byte with no
//! early exit: the differences are OR-ed together and only the caller, on a nonzero result,
//! walks again to say where.

/// The Weyl increment of the payload words.
pub(crate) const WEYL: u64 = 0x9e37_79b9_7f4a_7c15;

/// Payload word `i` of a run with key `key`.
#[inline(always)]
pub(crate) fn word(key: u64, i: usize) -> u64 {
    key.wrapping_add(WEYL.wrapping_mul(i as u64 + 1))
}

/// Payload word `i` of a block's sector with key `key`.
#[inline(always)]
pub(crate) fn sector_word(key: u64, i: usize) -> u64 {
    key ^ WEYL.wrapping_mul(i as u64 + 1)
}

/// The key whose words start at word `k` of the words of `key` (so a stream can start at
/// any word).
pub(crate) fn skip_words(key: u64, k: u64) -> u64 {
    key.wrapping_add(WEYL.wrapping_mul(k))
}

/// Which loops this CPU runs (decided once; the answer is cached by the standard library).
#[inline(always)]
pub(super) fn wide() -> bool {
    #[cfg(test)]
    if PORTABLE.load(std::sync::atomic::Ordering::Relaxed) {
        return false;
    }
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Unit tests only: run the portable loops even where AVX2 is present (the cost
/// measurement compares the two in one process).
#[cfg(test)]
pub(crate) static PORTABLE: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

/// Which loops this CPU runs, in words (for the cost measurement).
#[cfg(test)]
pub(crate) fn loops() -> &'static str {
    if wide() {
        "AVX2"
    } else {
        "portable"
    }
}

/// Fill `dst` with the words of `key` (its length a multiple of 8).
#[inline]
pub(crate) fn fill_words(dst: &mut [u8], key: u64) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: AVX2 is present (checked just above).
        unsafe { avx2::fill(dst, key) };
        return;
    }
    fill_lanes(dst, key)
}

/// Whether `src` holds exactly the words of `key` (every byte compared, no early exit).
#[inline]
pub(crate) fn words_match(src: &[u8], key: u64) -> bool {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: AVX2 is present (checked just above).
        return unsafe { avx2::matches(src, key) };
    }
    match_lanes(src, key)
}

/// Words made or compared side by side: eight independent adds a step, not one chain.
const LANES: usize = 8;

/// The portable fill: eight lanes of 64-bit words.
pub(crate) fn fill_lanes(dst: &mut [u8], key: u64) {
    let mut lanes: [u64; LANES] = std::array::from_fn(|l| word(key, l));
    let step = WEYL.wrapping_mul(LANES as u64);
    let mut groups = dst.chunks_exact_mut(8 * LANES);
    for g in &mut groups {
        for (l, w) in lanes.iter_mut().enumerate() {
            g[l * 8..l * 8 + 8].copy_from_slice(&w.to_le_bytes());
            *w = w.wrapping_add(step);
        }
    }
    let mut w = lanes[0];
    for c in groups.into_remainder().chunks_exact_mut(8) {
        c.copy_from_slice(&w.to_le_bytes());
        w = w.wrapping_add(WEYL);
    }
}

/// The portable comparison: an 8-byte aligned `src` (engine buffers are) is read as words,
/// four lanes a step; any other as bytes assembled into words.
pub(crate) fn match_lanes(src: &[u8], key: u64) -> bool {
    // SAFETY: every bit pattern is a valid u64; align_to only reinterprets the aligned middle
    // of the slice and hands back the bytes before and after it.
    let (pre, mid, post) = unsafe { src.align_to::<u64>() };
    if !pre.is_empty() || !post.is_empty() {
        return bytes_match(src, key);
    }
    const L: usize = 4;
    let mut lanes: [u64; L] = std::array::from_fn(|l| word(key, l));
    let step = WEYL.wrapping_mul(L as u64);
    let mut diff = [0u64; L];
    let mut groups = mid.chunks_exact(L);
    for g in &mut groups {
        for l in 0..L {
            diff[l] |= u64::from_le(g[l]) ^ lanes[l];
            lanes[l] = lanes[l].wrapping_add(step);
        }
    }
    let mut any = diff.iter().fold(0, |a, d| a | d);
    let mut w = lanes[0];
    for x in groups.remainder() {
        any |= u64::from_le(*x) ^ w;
        w = w.wrapping_add(WEYL);
    }
    any == 0
}

/// [`match_lanes`] for a slice that is not 8-byte aligned.
fn bytes_match(src: &[u8], key: u64) -> bool {
    let mut lanes: [u64; LANES] = std::array::from_fn(|l| word(key, l));
    let step = WEYL.wrapping_mul(LANES as u64);
    let mut diff = [0u64; LANES];
    let mut groups = src.chunks_exact(8 * LANES);
    for g in &mut groups {
        for l in 0..LANES {
            let found = u64::from_le_bytes(g[l * 8..l * 8 + 8].try_into().expect("8 bytes"));
            diff[l] |= found ^ lanes[l];
            lanes[l] = lanes[l].wrapping_add(step);
        }
    }
    let mut any = diff.iter().fold(0, |a, d| a | d);
    let mut w = lanes[0];
    for c in groups.remainder().chunks_exact(8) {
        any |= u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ w;
        w = w.wrapping_add(WEYL);
    }
    any == 0
}

/// The AVX2 loops: eight words (two registers) a step, unaligned loads and stores (any
/// slice works; engine buffers are page-aligned anyway), then the last words one by one.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::{word, WEYL};
    use std::arch::x86_64::*;

    /// The first eight words of `key` in two registers (the key broadcast and added to
    /// constant offsets), and the step that advances each register by eight words.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn start(key: u64) -> (__m256i, __m256i, __m256i) {
        let w = |i| word(0, i) as i64;
        let k = _mm256_set1_epi64x(key as i64);
        let a = _mm256_add_epi64(k, _mm256_set_epi64x(w(3), w(2), w(1), w(0)));
        let b = _mm256_add_epi64(k, _mm256_set_epi64x(w(7), w(6), w(5), w(4)));
        let step = _mm256_set1_epi64x(WEYL.wrapping_mul(8) as i64);
        (a, b, step)
    }

    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn fill(dst: &mut [u8], key: u64) {
        let (mut a, mut b, step) = start(key);
        let mut groups = dst.chunks_exact_mut(64);
        for g in &mut groups {
            let p = g.as_mut_ptr() as *mut __m256i;
            // SAFETY: `g` is 64 writable bytes; unaligned stores.
            unsafe {
                _mm256_storeu_si256(p, a);
                _mm256_storeu_si256(p.add(1), b);
            }
            a = _mm256_add_epi64(a, step);
            b = _mm256_add_epi64(b, step);
        }
        let mut rest = groups.into_remainder();
        if rest.len() >= 32 {
            // SAFETY: at least 32 writable bytes; an unaligned store.
            unsafe { _mm256_storeu_si256(rest.as_mut_ptr() as *mut __m256i, a) };
            a = b;
            rest = &mut rest[32..];
        }
        let mut w = _mm256_extract_epi64::<0>(a) as u64;
        for c in rest.chunks_exact_mut(8) {
            c.copy_from_slice(&w.to_le_bytes());
            w = w.wrapping_add(WEYL);
        }
    }

    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn matches(src: &[u8], key: u64) -> bool {
        let (mut a, mut b, step) = start(key);
        let mut da = _mm256_setzero_si256();
        let mut db = _mm256_setzero_si256();
        let mut groups = src.chunks_exact(64);
        for g in &mut groups {
            let p = g.as_ptr() as *const __m256i;
            // SAFETY: `g` is 64 readable bytes; unaligned loads.
            let (x, y) = unsafe { (_mm256_loadu_si256(p), _mm256_loadu_si256(p.add(1))) };
            da = _mm256_or_si256(da, _mm256_xor_si256(x, a));
            db = _mm256_or_si256(db, _mm256_xor_si256(y, b));
            a = _mm256_add_epi64(a, step);
            b = _mm256_add_epi64(b, step);
        }
        let mut rest = groups.remainder();
        if rest.len() >= 32 {
            // SAFETY: at least 32 readable bytes; an unaligned load.
            let x = unsafe { _mm256_loadu_si256(rest.as_ptr() as *const __m256i) };
            da = _mm256_or_si256(da, _mm256_xor_si256(x, a));
            a = b;
            rest = &rest[32..];
        }
        let d = _mm256_or_si256(da, db);
        let mut ok = _mm256_testz_si256(d, d) == 1;
        let mut w = _mm256_extract_epi64::<0>(a) as u64;
        for c in rest.chunks_exact(8) {
            ok &= u64::from_le_bytes(c.try_into().expect("8 bytes")) == w;
            w = w.wrapping_add(WEYL);
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: one word at a time.
    fn reference(len: usize, key: u64) -> Vec<u8> {
        (0..len / 8)
            .flat_map(|i| word(key, i).to_le_bytes())
            .collect()
    }

    #[test]
    fn every_loop_makes_and_accepts_the_same_words_and_refuses_any_changed_byte() {
        for len in [0usize, 8, 24, 56, 64, 72, 440, 448, 504, 4088, 4096] {
            for key in [0u64, 1, 0xdead_beef, u64::MAX] {
                let want = reference(len, key);
                let mut a = vec![0u8; len];
                fill_words(&mut a, key);
                assert_eq!(a, want, "fill_words {len}");
                let mut b = vec![0u8; len];
                fill_lanes(&mut b, key);
                assert_eq!(b, want, "fill_lanes {len}");
                assert!(words_match(&want, key) && match_lanes(&want, key), "{len}");
                // Unaligned: the byte path of the portable loop, unaligned loads of AVX2.
                let mut u = vec![0u8; len + 1];
                u[1..].copy_from_slice(&want);
                assert!(
                    words_match(&u[1..], key) && match_lanes(&u[1..], key),
                    "{len}"
                );
                for at in (0..len).step_by(7).chain(len.checked_sub(1)) {
                    let mut d = want.clone();
                    d[at] ^= 0x80;
                    assert!(!words_match(&d, key), "words_match {len} {at}");
                    assert!(!match_lanes(&d, key), "match_lanes {len} {at}");
                    u[1..].copy_from_slice(&d);
                    assert!(!words_match(&u[1..], key), "unaligned {len} {at}");
                }
            }
        }
    }
}
