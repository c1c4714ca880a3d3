//! The payload words of a verified block: making them (a write's fill) and comparing them
//! (a read's check), the two loops `--verify` adds to every I/O.
//!
//! Word `i` of a stream with key `key` is `key + (i + 1) * WEYL` ([`word`]); word `i` of a
//! block's sector is `key ^ (i + 1) * WEYL` ([`sector_word`]: XOR, so that the block's CRC32C,
//! linear over XOR, can be made from the key, see `blockcrc`). Both are counter-based, no
//! word depends on the one before, so both loops work on many words at once. On x86-64 with AVX2
//! (detected at run time, once per process) they take four words per 256-bit register and
//! run two registers a step; elsewhere they take eight independent 64-bit lanes, which the
//! compiler turns into SSE2. Both check every byte with no early exit: the differences are
//! OR-ed together and only the caller, on a nonzero result, walks again to say where.
//!
//! A block of a length the run has constants for is made and compared from those constants
//! instead ([`xor_fill_stamped`], [`xor_match_stamped`]: the length's fixed words XOR the key, one
//! load and one XOR a word, no per-sector set-up); the counting loops serve other lengths and
//! the slow path that judges a damaged block sector by sector.

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

/// Fill a whole block, sector by sector: sector `s` (`sector` bytes, the last may be
/// shorter) gets the [`sector_word`]s of `key_of(s)` from byte `skip(s)` on (a multiple of 8). The
/// bytes before `skip(s)` are the caller's to write afterwards (a header, a stamp): the AVX2
/// loop fills them too, with the words' sequence run backwards, so that its stores start at
/// the sector's start (a stamp of 8 bytes would otherwise put every other 32-byte store
/// across a cache line). One dispatch per block, and with AVX2 the sector loop and the word
/// loops are one function, so nothing is called per sector.
#[inline]
pub(crate) fn fill_sectors(
    buf: &mut [u8],
    sector: usize,
    skip: impl Fn(usize) -> usize,
    key_of: impl Fn(usize) -> u64,
) {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: AVX2 is present (checked just above).
        unsafe { avx2::fill_sectors(buf, sector, skip, key_of) };
        return;
    }
    for (s, chunk) in buf.chunks_mut(sector).enumerate() {
        let at = skip(s).min(chunk.len());
        fill_sector_portable(&mut chunk[at..], key_of(s));
    }
}

/// The portable fill of one sector's payload: [`sector_word`]s.
fn fill_sector_portable(dst: &mut [u8], key: u64) {
    for (i, c) in dst.chunks_exact_mut(8).enumerate() {
        c.copy_from_slice(&sector_word(key, i).to_le_bytes());
    }
}

/// The portable comparison of one sector's payload with its [`sector_word`]s (every byte).
fn match_sector_portable(src: &[u8], key: u64) -> bool {
    let mut d = 0;
    for (i, c) in src.chunks_exact(8).enumerate() {
        d |= u64::from_le_bytes(c.try_into().expect("8 bytes")) ^ sector_word(key, i);
    }
    d == 0
}

/// Whether every sector of `buf` holds, from byte `skip(s)` on, exactly the
/// [`sector_word`]s of `key_of(s)`: [`words_match`] over a whole block with one dispatch, the sector loop and
/// the comparisons one function under AVX2 (as [`fill_sectors`]). Every sector is compared.
#[inline]
pub(crate) fn sectors_match(
    buf: &[u8],
    sector: usize,
    skip: impl Fn(usize) -> usize,
    key_of: impl Fn(usize) -> u64,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if wide() {
        // SAFETY: AVX2 is present (checked just above).
        return unsafe { avx2::sectors_match(buf, sector, skip, key_of) };
    }
    let mut ok = true;
    for (s, chunk) in buf.chunks(sector).enumerate() {
        ok &= match_sector_portable(&chunk[skip(s).min(chunk.len())..], key_of(s));
    }
    ok
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

/// Fill `dst` (`fixed.len()` words) with `fixed[w] ^ key` in every word after its first `skip`
/// bytes, except that the first word of every `sector` after the first gets `stamp` (`fixed`
/// is zero there): a block made from its length's fixed words, its key and its stamp in one
/// pass of stores, each byte stored once. The first `skip` bytes (the header) are the
/// caller's.
#[inline]
pub(crate) fn xor_fill_stamped(
    dst: &mut [u8],
    fixed: &[u64],
    key: u64,
    sector: usize,
    skip: usize,
    stamp: u64,
) {
    debug_assert_eq!(dst.len(), fixed.len() * 8);
    #[cfg(target_arch = "x86_64")]
    if wide() && sector == 512 && skip % 32 == 0 && skip < 512 && dst.len() % 512 == 0 {
        // SAFETY: AVX2 is present (checked just above); the shape is the one it handles.
        unsafe { avx2::xor_fill_stamped(dst, fixed, key, skip, stamp) };
        return;
    }
    // Portable: one plain loop over every word (which the compiler vectorises), then the
    // stamps over it; faster than a loop per sector.
    let from = skip.min(dst.len()) / 8;
    for (c, f) in dst[from * 8..].chunks_exact_mut(8).zip(&fixed[from..]) {
        c.copy_from_slice(&(f ^ key).to_le_bytes());
    }
    for c in dst.chunks_mut(sector).skip(1) {
        c[..8].copy_from_slice(&stamp.to_le_bytes());
    }
}

/// Whether `src` (`fixed.len()` words) holds `fixed[w] ^ key` in every word after its first
/// `skip` bytes, except that the first word of every `sector` after the first holds
/// `stamp` (and `fixed` is zero there): a block compared with its length's fixed words, its
/// key and its stamp in one pass, every byte, no early exit.
#[inline]
pub(crate) fn xor_match_stamped(
    src: &[u8],
    fixed: &[u64],
    key: u64,
    sector: usize,
    skip: usize,
    stamp: u64,
) -> bool {
    debug_assert_eq!(src.len(), fixed.len() * 8);
    #[cfg(target_arch = "x86_64")]
    if wide() && sector == 512 && skip % 32 == 0 && skip < 512 && src.len() % 512 == 0 {
        // SAFETY: AVX2 is present (checked just above); the shape is the one it handles.
        return unsafe { avx2::xor_match_stamped(src, fixed, key, skip, stamp) };
    }
    let word = |c: &[u8]| u64::from_le_bytes(c.try_into().expect("8 bytes"));
    let mut d = 0;
    for (s, (cs, fs)) in src.chunks(sector).zip(fixed.chunks(sector / 8)).enumerate() {
        let from = if s == 0 {
            skip.min(cs.len())
        } else {
            d |= word(&cs[..8]) ^ stamp;
            8
        };
        for (c, f) in cs[from..].chunks_exact(8).zip(&fs[from / 8..]) {
            d |= word(c) ^ f ^ key;
        }
    }
    d == 0
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

    /// The first eight words of `key` in two registers, and the step that advances each
    /// register by eight words.
    /// The key broadcast and added to constant offsets: a word per lane made from the key
    /// costs eight scalar sums and the inserts that pack them, on every sector.
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

    /// The counters of [`super::sector_word`] for words `first..first + 8` in two registers
    /// (the key is XOR-ed in at each store), and the step that advances them by eight words.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn counters(first: u64) -> (__m256i, __m256i, __m256i) {
        let w = |i: u64| WEYL.wrapping_mul(first.wrapping_add(i + 1)) as i64;
        let a = _mm256_set_epi64x(w(3), w(2), w(1), w(0));
        let b = _mm256_set_epi64x(w(7), w(6), w(5), w(4));
        let step = _mm256_set1_epi64x(WEYL.wrapping_mul(8) as i64);
        (a, b, step)
    }

    /// [`super::fill_sectors`] with the word loop inlined into the sector loop.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn fill_sectors(
        buf: &mut [u8],
        sector: usize,
        skip: impl Fn(usize) -> usize,
        key_of: impl Fn(usize) -> u64,
    ) {
        for (s, chunk) in buf.chunks_mut(sector).enumerate() {
            // From the sector's start: the words before `skip(s)` are those of indices
            // -k..0, which the caller overwrites.
            let k = (skip(s) / 8) as u64;
            let key = _mm256_set1_epi64x(key_of(s) as i64);
            let (mut a, mut b, step) = counters(k.wrapping_neg());
            if let Ok(whole) = <&mut [u8; 512]>::try_from(&mut *chunk) {
                let p = whole.as_mut_ptr() as *mut __m256i;
                for g in 0..8 {
                    // SAFETY: group g < 8 of a 512-byte sector: 64 writable bytes; unaligned
                    // stores.
                    unsafe {
                        _mm256_storeu_si256(p.add(2 * g), _mm256_xor_si256(a, key));
                        _mm256_storeu_si256(p.add(2 * g + 1), _mm256_xor_si256(b, key));
                    }
                    a = _mm256_add_epi64(a, step);
                    b = _mm256_add_epi64(b, step);
                }
            } else {
                let len = chunk.len();
                let mut groups = chunk.chunks_exact_mut(64);
                for g in &mut groups {
                    let p = g.as_mut_ptr() as *mut __m256i;
                    // SAFETY: `g` is 64 writable bytes; unaligned stores.
                    unsafe {
                        _mm256_storeu_si256(p, _mm256_xor_si256(a, key));
                        _mm256_storeu_si256(p.add(1), _mm256_xor_si256(b, key));
                    }
                    a = _mm256_add_epi64(a, step);
                    b = _mm256_add_epi64(b, step);
                }
                let rest = groups.into_remainder();
                let done = (len - rest.len()) / 8;
                let key = key_of(s);
                for (i, c) in rest.chunks_exact_mut(8).enumerate() {
                    let at = (done + i) as u64;
                    c.copy_from_slice(
                        &super::sector_word(key, at.wrapping_sub(k) as usize).to_le_bytes(),
                    );
                }
            }
        }
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

    /// [`super::sectors_match`] with the comparison loop inlined into the sector loop.
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn sectors_match(
        buf: &[u8],
        sector: usize,
        skip: impl Fn(usize) -> usize,
        key_of: impl Fn(usize) -> u64,
    ) -> bool {
        // Differences of every whole 512-byte sector, OR-ed, tested once at the end.
        let mut d = _mm256_setzero_si256();
        let mut ok = true;
        for (s, chunk) in buf.chunks(sector).enumerate() {
            let at = skip(s);
            if let (Ok(whole), true) = (<&[u8; 512]>::try_from(chunk), at < 512) {
                // SAFETY: AVX2 is present (this function's own requirement).
                d = _mm256_or_si256(d, unsafe { sector_diff(whole, key_of(s), at / 8) });
            } else {
                ok &= super::match_sector_portable(&chunk[at.min(chunk.len())..], key_of(s));
            }
        }
        ok & (_mm256_testz_si256(d, d) == 1)
    }

    /// The differences between a whole 512-byte sector and the [`super::sector_word`]s of
    /// `key` after its first `k` words (not compared: a header, a stamp), one register OR-ed over all: the
    /// sector's eight 64-byte groups unrolled, the loads where they fall in the sector
    /// (aligned in a page-aligned buffer), the first `k % 8` words masked out of the first
    /// compared group.
    ///
    /// # Safety
    /// The CPU must have AVX2; `k < 64`.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn sector_diff(sector: &[u8; 512], key: u64, k: usize) -> __m256i {
        let first = k / 8;
        let r = (k % 8) as i64;
        // The expected words of group `first`: sector_word(key, 8 * first - k + i) for lane
        // i, that is the counters from -r on, the key XOR-ed in.
        let (mut a, mut b, step) = counters((r as u64).wrapping_neg());
        let kv = _mm256_set1_epi64x(key as i64);
        let rv = _mm256_set1_epi64x(r);
        let keep_a = _mm256_cmpgt_epi64(
            _mm256_set_epi64x(3, 2, 1, 0),
            _mm256_sub_epi64(rv, _mm256_set1_epi64x(1)),
        );
        let keep_b = _mm256_cmpgt_epi64(
            _mm256_set_epi64x(7, 6, 5, 4),
            _mm256_sub_epi64(rv, _mm256_set1_epi64x(1)),
        );
        let (mut da, mut db) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        let p = sector.as_ptr() as *const __m256i;
        for g in first..8 {
            // SAFETY: group g < 8 of a 512-byte sector: 64 readable bytes; unaligned loads.
            let (x, y) = unsafe {
                (
                    _mm256_loadu_si256(p.add(2 * g)),
                    _mm256_loadu_si256(p.add(2 * g + 1)),
                )
            };
            let (x, y) = (_mm256_xor_si256(x, kv), _mm256_xor_si256(y, kv));
            let (mut ea, mut eb) = (_mm256_xor_si256(x, a), _mm256_xor_si256(y, b));
            if g == first {
                ea = _mm256_and_si256(ea, keep_a);
                eb = _mm256_and_si256(eb, keep_b);
            }
            da = _mm256_or_si256(da, ea);
            db = _mm256_or_si256(db, eb);
            a = _mm256_add_epi64(a, step);
            b = _mm256_add_epi64(b, step);
        }
        _mm256_or_si256(da, db)
    }

    /// [`super::xor_fill_stamped`] for whole 512-byte sectors and a `skip` of whole 32-byte
    /// groups: a 32-byte load of fixed words, one XOR, one store; the first group of each
    /// later sector takes the stamp in its first lane.
    ///
    /// # Safety
    /// The CPU must have AVX2; `dst` is `fixed.len()` words, a multiple of 512 bytes;
    /// `skip` is a multiple of 32 below 512.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn xor_fill_stamped(
        dst: &mut [u8],
        fixed: &[u64],
        key: u64,
        skip: usize,
        stamp: u64,
    ) {
        let kv = _mm256_set1_epi64x(key as i64);
        let k0 = _mm256_set_epi64x(key as i64, key as i64, key as i64, stamp as i64);
        let (p, f) = (
            dst.as_mut_ptr() as *mut __m256i,
            fixed.as_ptr() as *const __m256i,
        );
        // SAFETY (every load and store below): group i < dst.len() / 32 of both; unaligned.
        let put = |i: usize, k: __m256i| unsafe {
            _mm256_storeu_si256(p.add(i), _mm256_xor_si256(_mm256_loadu_si256(f.add(i)), k))
        };
        for g in skip / 32..16 {
            put(g, kv);
        }
        for s in 1..dst.len() / 512 {
            let b = s * 16;
            put(b, k0);
            for g in 1..16 {
                put(b + g, kv);
            }
        }
    }

    /// [`super::xor_match_stamped`] for whole 512-byte sectors and a `skip` of whole 32-byte
    /// groups: sixteen groups a sector, the first of each later sector compared with the
    /// stamp in its first lane.
    ///
    /// # Safety
    /// The CPU must have AVX2; `src` is `fixed.len()` words, a multiple of 512 bytes;
    /// `skip` is a multiple of 32 below 512.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub(super) unsafe fn xor_match_stamped(
        src: &[u8],
        fixed: &[u64],
        key: u64,
        skip: usize,
        stamp: u64,
    ) -> bool {
        let kv = _mm256_set1_epi64x(key as i64);
        let k0 = _mm256_set_epi64x(key as i64, key as i64, key as i64, stamp as i64);
        let (p, f) = (
            src.as_ptr() as *const __m256i,
            fixed.as_ptr() as *const __m256i,
        );
        // SAFETY (every load below): group i < src.len() / 32 of both; unaligned loads.
        let diff = |i: usize, k: __m256i| unsafe {
            _mm256_xor_si256(
                _mm256_xor_si256(_mm256_loadu_si256(p.add(i)), _mm256_loadu_si256(f.add(i))),
                k,
            )
        };
        let (mut da, mut db) = (_mm256_setzero_si256(), _mm256_setzero_si256());
        for g in skip / 32..16 {
            da = _mm256_or_si256(da, diff(g, kv));
        }
        for s in 1..src.len() / 512 {
            let b = s * 16;
            da = _mm256_or_si256(da, diff(b, k0));
            for g in (1..15).step_by(2) {
                da = _mm256_or_si256(da, diff(b + g, kv));
                db = _mm256_or_si256(db, diff(b + g + 1, kv));
            }
            db = _mm256_or_si256(db, diff(b + 15, kv));
        }
        let d = _mm256_or_si256(da, db);
        _mm256_testz_si256(d, d) == 1
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

    /// The reference of a sector's payload: one [`sector_word`] at a time.
    fn sector_reference(len: usize, key: u64) -> Vec<u8> {
        (0..len / 8)
            .flat_map(|i| sector_word(key, i).to_le_bytes())
            .collect()
    }

    /// The header/stamp widths the sector loops are tested with: the block's own (64, 8)
    /// and others that start the payload in each lane of a register.
    const SKIPS: [(usize, usize); 4] = [(64, 8), (72, 16), (8, 56), (120, 24)];

    /// A buffer aligned as the engines' are (a page), so the AVX2 loops' aligned path runs.
    fn aligned(len: usize, byte: u8) -> Vec<u8> {
        let mut v = vec![byte; len + 4096];
        let at = v.as_ptr().align_offset(4096);
        v.drain(..at);
        v.truncate(len);
        v
    }

    #[test]
    fn a_sectored_match_accepts_a_sectored_fill_and_refuses_any_changed_byte() {
        for portable in [false, true] {
            PORTABLE.store(portable, std::sync::atomic::Ordering::Relaxed);
            sectored_match_refuses_any_changed_byte();
        }
        PORTABLE.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    fn sectored_match_refuses_any_changed_byte() {
        for (first, rest) in SKIPS {
            let skip = |s: usize| if s == 0 { first } else { rest };
            let key_of = |s: usize| 0xfeed ^ (s as u64).wrapping_mul(31);
            for len in [128usize, 520, 584, 4096] {
                let mut b = aligned(len, 0);
                fill_sectors(&mut b, 512, skip, key_of);
                assert!(sectors_match(&b, 512, skip, key_of), "{len}");
                for at in (0..len).step_by(13) {
                    let in_payload = at % 512 >= skip(at / 512);
                    b[at] ^= 4;
                    assert_eq!(
                        sectors_match(&b, 512, skip, key_of),
                        !in_payload,
                        "{first}/{rest} {len} {at}"
                    );
                    b[at] ^= 4;
                }
            }
        }
    }

    #[test]
    fn a_sectored_fill_is_each_sectors_words_after_its_skip() {
        for portable in [false, true] {
            PORTABLE.store(portable, std::sync::atomic::Ordering::Relaxed);
            sectored_fill_against_the_reference();
        }
        PORTABLE.store(false, std::sync::atomic::Ordering::Relaxed);
    }

    fn sectored_fill_against_the_reference() {
        for (first, rest) in SKIPS {
            for len in [128usize, 520, 1000, 4096, 8192] {
                let skip = |s: usize| if s == 0 { first } else { rest };
                let key_of = |s: usize| 0x1234_5678 ^ (s as u64).wrapping_mul(77);
                let mut got = aligned(len, 0xAA);
                fill_sectors(&mut got, 512, skip, key_of);
                for (s, c) in got.chunks(512).enumerate() {
                    let at = skip(s).min(c.len());
                    // The bytes before the skip are the caller's: only the payload is judged.
                    assert_eq!(
                        c[at..],
                        sector_reference(c.len() - at, key_of(s))[..],
                        "{first}/{rest} {len} sector {s}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_stamped_fill_from_fixed_words_is_the_reference_and_its_match_refuses_any_changed_byte() {
        for portable in [false, true] {
            PORTABLE.store(portable, std::sync::atomic::Ordering::Relaxed);
            for len in [512usize, 520, 1000, 4096, 8192] {
                let fixed: Vec<u64> = (0..len as u64 / 8)
                    .map(|w| if w % 64 == 0 { 0 } else { w.wrapping_mul(WEYL) })
                    .collect();
                let (key, stamp, skip) = (0xabcd_0123_4567_89efu64, 0x5eed, 64);
                let mut got = aligned(len, 0xAA);
                xor_fill_stamped(&mut got, &fixed, key, 512, skip, stamp);
                for (w, c) in got.chunks_exact(8).enumerate() {
                    let found = u64::from_le_bytes(c.try_into().unwrap());
                    let want = match w {
                        _ if w * 8 < skip => u64::from_le_bytes([0xAA; 8]),
                        _ if w % 64 == 0 => stamp,
                        _ => fixed[w] ^ key,
                    };
                    assert_eq!(found, want, "portable {portable} len {len} word {w}");
                }
                assert!(xor_match_stamped(&got, &fixed, key, 512, skip, stamp));
                for at in (skip..len).step_by(11) {
                    got[at] ^= 2;
                    assert!(
                        !xor_match_stamped(&got, &fixed, key, 512, skip, stamp),
                        "portable {portable} len {len} byte {at}"
                    );
                    got[at] ^= 2;
                }
            }
        }
        PORTABLE.store(false, std::sync::atomic::Ordering::Relaxed);
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
