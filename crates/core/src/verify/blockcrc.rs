//! The CRC32C of a whole verified block, made from the values the block was made of
//! instead of from its 4 KiB of bytes.
//!
//! CRC32C (the crate's: initial and final value inverted) of messages of one length is an
//! affine function of the message: `crc(F ^ V) = crc(F) ^ raw(V)`, where `raw` (the CRC
//! register run from zero, nothing inverted) is linear over XOR. A verified block is a fixed
//! part F (the magic, the length and version, the payload's position words) XOR a variable
//! part V: four header words, one stamp repeated at every sector's start, and the block key
//! XOR-ed into every payload word (a sector's key is the block key XOR a constant of the
//! sector's index, which is part of F). So per block length the CRC of F and, for each of
//! the three repeated values, the polynomial that maps the value's own CRC to its share of
//! the block's are made once ([`BlockCrc::new`]); a write of any length then costs six
//! `crc32` and three carry-less multiplies, against ~0.2 us to run the CRC over 4 KiB.
//!
//! Polynomials mod P are kept as CRC registers are (reflected: bit 31 is x^0). Running
//! `crc32` from zero over a 64-bit word w gives w(x)·x^32 mod P; the carry-less product of
//! two 32-bit registers a, b read back as such a word is a·b·x^1, so
//! `crc32(0, clmul(a, b·x^-33))` is a·b mod P, and XOR-ing many products before the one
//! `crc32` reduces them all at once. Where the CPU lacks SSE4.2 or PCLMULQDQ the crate's CRC
//! runs over the block's bytes instead; the two agree (tested).

/// CRC32C's polynomial, reflected.
const POLY: u32 = 0x82F6_3B78;
/// The polynomial 1 as a reflected register.
const ONE: u32 = 1 << 31;

/// a·b mod P.
fn mul(a: u32, mut b: u32) -> u32 {
    let mut p = 0;
    let mut m = ONE;
    while m != 0 {
        if a & m != 0 {
            p ^= b;
        }
        b = if b & 1 != 0 { (b >> 1) ^ POLY } else { b >> 1 };
        m >>= 1;
    }
    p
}

/// x^n mod P.
fn x_pow(mut n: u64) -> u32 {
    let mut result = ONE;
    let mut square = ONE >> 1; // x
    while n != 0 {
        if n & 1 != 0 {
            result = mul(result, square);
        }
        square = mul(square, square);
        n >>= 1;
    }
    result
}

/// a·x^-1 mod P (P's constant term is 1, so x is invertible): undoes one step of the CRC
/// register.
fn div_x(a: u32) -> u32 {
    if a & ONE != 0 {
        ((a ^ POLY) << 1) | 1
    } else {
        a << 1
    }
}

/// `a` made ready for a carry-less multiply: a·x^-33, so that the `crc32` reduction of the
/// product gives a plain product mod P.
fn for_clmul(mut a: u32) -> u64 {
    for _ in 0..33 {
        a = div_x(a);
    }
    a as u64
}

/// Raw CRC (register from zero, nothing inverted) of one little-endian word.
fn raw_word(w: u64) -> u32 {
    let mut c = 0u32;
    for b in w.to_le_bytes() {
        c ^= b as u32;
        for _ in 0..8 {
            c = if c & 1 != 0 { (c >> 1) ^ POLY } else { c >> 1 };
        }
    }
    c
}

/// What [`BlockCrc::crc`] needs to know of one block.
pub(crate) struct Parts {
    /// Seed, file, offset and generation: the header words at bytes 8..40.
    pub header: [u64; 4],
    /// The stamp at the start of every sector after the first.
    pub stamp: u64,
    /// The block key, XOR-ed into every payload word (each sector's own constant part is
    /// in the fixed block).
    pub block_key: u64,
}

/// The constants of verified blocks of one length: the CRC32C's fixed part and multipliers.
#[derive(Debug, Clone)]
pub(crate) struct BlockCrc {
    len: usize,
    /// CRC32C of the block with every variable value zero.
    fixed: u32,
    /// The header words' multiplier (their raw CRC as one 32-byte run ending at byte 40).
    header: u64,
    /// The stamp's multiplier: the sum over every stamped sector.
    stamp: u64,
    /// The block key's multiplier: the sum over every payload word.
    key: u64,
    /// Byte ranges of the payload, for the portable sum.
    payload: Vec<(usize, usize)>,
    /// The sector size (a stamp starts every sector after the first).
    sector: usize,
    fast: bool,
}

impl BlockCrc {
    /// The constants for blocks of `len` bytes in sectors of `sector` bytes: `fixed_block`
    /// is such a block with every variable value zero, `payload_start(s)` where sector `s`'s
    /// payload starts in it.
    pub(crate) fn new(
        len: usize,
        sector: usize,
        fixed_block: &[u8],
        payload_start: impl Fn(usize) -> usize,
    ) -> Self {
        debug_assert_eq!(fixed_block.len(), len);
        // The share of a word at byte p: its raw CRC times x^(8 (len - p - 8)).
        let after = |p: usize| x_pow(8 * (len - p - 8) as u64);
        let stamp = (sector..len)
            .step_by(sector)
            .fold(0, |acc, p| acc ^ after(p));
        let payload: Vec<(usize, usize)> = (0..len.div_ceil(sector))
            .map(|s| {
                let (start, end) = (s * sector, ((s + 1) * sector).min(len));
                ((start + payload_start(s)).min(end), end)
            })
            .collect();
        // Per sector: the sum of x^(64 t) over its words, times the bytes after it.
        let x64 = x_pow(64);
        let key = payload.iter().fold(0u32, |acc, &(from, end)| {
            let mut g = 0u32;
            for _ in 0..(end - from) / 8 {
                g = mul(g, x64) ^ ONE;
            }
            acc ^ mul(g, x_pow(8 * (len - end) as u64))
        });
        BlockCrc {
            len,
            fixed: crc32c::crc32c(fixed_block),
            header: for_clmul(x_pow(8 * (len - 40) as u64)),
            stamp: for_clmul(stamp),
            key: for_clmul(key),
            payload,
            sector,
            fast: cfg!(target_arch = "x86_64") && Self::cpu_has_clmul(),
        }
    }

    fn cpu_has_clmul() -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            std::arch::is_x86_feature_detected!("sse4.2")
                && std::arch::is_x86_feature_detected!("pclmulqdq")
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            false
        }
    }

    /// The block length these constants are for.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Whether the CPU makes the CRC from the constants (else the caller runs the crate over
    /// the block's bytes, which is faster than [`Self::crc_portable`]).
    pub(crate) fn fast(&self) -> bool {
        self.fast
    }

    /// CRC32C of the block with every variable value zero (what [`Self::raw_clmul`]'s
    /// share is XOR-ed into).
    pub(super) fn fixed_crc(&self) -> u32 {
        self.fixed
    }

    /// CRC32C of the block made of `parts` (with its CRC fields zero).
    #[inline]
    pub(crate) fn crc(&self, parts: &Parts) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if self.fast {
            // SAFETY: SSE4.2 and PCLMULQDQ are present (`fast` was set only if so).
            return self.fixed ^ unsafe { self.raw_clmul(parts) };
        }
        self.crc_portable(parts)
    }

    /// [`Self::crc`] bit by bit, word by word, without the CPU's help: slow; for a CPU
    /// without it and for tests (which compare the two).
    pub(crate) fn crc_portable(&self, parts: &Parts) -> u32 {
        let len = self.len;
        let after = |p: usize| x_pow(8 * (len - p - 8) as u64);
        let mut r = 0u32;
        for (i, w) in parts.header.iter().enumerate() {
            r ^= mul(raw_word(*w), after(8 + 8 * i));
        }
        for p in (self.sector..len).step_by(self.sector) {
            r ^= mul(raw_word(parts.stamp), after(p));
        }
        let k = raw_word(parts.block_key);
        for &(from, end) in &self.payload {
            for p in (from..end).step_by(8) {
                r ^= mul(k, after(p));
            }
        }
        self.fixed ^ r
    }

    /// # Safety
    /// The CPU must have SSE4.2 and PCLMULQDQ.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "sse4.2,pclmulqdq")]
    #[inline]
    pub(super) unsafe fn raw_clmul(&self, parts: &Parts) -> u32 {
        use std::arch::x86_64::*;
        let clmul = |a: u64, b: u64| {
            _mm_clmulepi64_si128::<0>(_mm_cvtsi64_si128(a as i64), _mm_cvtsi64_si128(b as i64))
        };
        let [seed, file, offset, generation] = parts.header;
        let h = _mm_crc32_u64(
            _mm_crc32_u64(_mm_crc32_u64(_mm_crc32_u64(0, seed), file), offset),
            generation,
        );
        let acc = _mm_xor_si128(
            _mm_xor_si128(
                clmul(h, self.header),
                clmul(_mm_crc32_u64(0, parts.stamp), self.stamp),
            ),
            clmul(_mm_crc32_u64(0, parts.block_key), self.key),
        );
        _mm_crc32_u64(0, _mm_cvtsi128_si64(acc) as u64) as u32
    }
}
