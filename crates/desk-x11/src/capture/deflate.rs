//! The deflate kernel of the capture path's PNG encoder: one band of Up-filtered rows, converted
//! from BGRX and deflated in a single pass into a segment that a zlib stream can concatenate.
//!
//! Invariants: a segment is one dynamic-Huffman block with a fixed code trained on filtered PNG
//! data (fdeflate's table, MIT OR Apache-2.0), whose only matches are runs of zero bytes at
//! distance 1 that never reach back before the segment; it starts and ends on a byte boundary (a
//! segment that is not the last ends with an empty stored block, a sync flush), so segments
//! concatenate; its Adler-32 covers exactly the filtered bytes it encodes.

/// Literal/length code lengths (fdeflate 0.3's `HUFFMAN_LENGTHS`): short codes for zero and for
/// small positive and negative differences, 12 bits at most. A complete prefix code.
const LENGTHS: [u8; 286] = [
    2, 3, 4, 5, 5, 6, 6, 7, 7, 7, 8, 8, 8, 8, 8, 9, 9, 9, 9, 9, 9, 9, 10, 10, 10, 10, 10, 10, 10,
    10, 10, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 11, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 11, 11, 11, 11, 11, 11, 11,
    11, 11, 11, 10, 11, 10, 10, 10, 10, 10, 10, 10, 10, 10, 9, 9, 9, 9, 9, 8, 9, 8, 8, 8, 8, 8, 7,
    7, 7, 6, 6, 6, 5, 4, 3, 12, 12, 12, 9, 9, 11, 10, 11, 11, 10, 11, 11, 11, 11, 11, 11, 12, 11,
    12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12, 9,
];

/// fdeflate 0.3's dynamic block header after the zlib header: 51 bytes and the 5 low bits of
/// `HEADER_TAIL`. It describes `LENGTHS` and one distance code of 1 bit (distance 1). Bit 0 of
/// the first byte is BFINAL.
const HEADER: [u8; 51] = [
    237, 192, 3, 160, 36, 89, 150, 198, 241, 255, 119, 238, 141, 200, 204, 167, 114, 75, 99, 174,
    109, 219, 182, 109, 219, 182, 109, 219, 182, 109, 105, 140, 158, 150, 74, 175, 158, 50, 51, 34,
    238, 249, 118, 183, 106, 122, 166, 135, 59, 107, 213,
];
const HEADER_TAIL: u64 = 15;
const HEADER_TAIL_BITS: u32 = 5;

/// Runs of zero bytes up to this long are written as literal zeros (2 bits each, cheaper than
/// the shortest matches).
const MAX_LITERAL_RUN: u64 = 5;
// The literal zero is the 2-bit code 0, which `flush_run` writes as plain zero bits.
const _: () = assert!(LENGTHS[0] == 2 && CODES[0] == 0);

/// The end-of-block symbol.
const END_OF_BLOCK: usize = 256;
/// Adler-32's modulus.
pub(super) const ADLER_MOD: u32 = 65521;

/// Canonical codes of `LENGTHS`, bit-reversed for deflate's LSB-first bit order.
const CODES: [u16; 286] = canonical_codes(&LENGTHS);

const fn canonical_codes(lengths: &[u8; 286]) -> [u16; 286] {
    let mut bl_count = [0u16; 16];
    let mut sym = 0;
    while sym < lengths.len() {
        bl_count[lengths[sym] as usize] += 1;
        sym += 1;
    }
    bl_count[0] = 0;
    let mut next_code = [0u16; 16];
    let mut code = 0u16;
    let mut bits = 1;
    while bits < 16 {
        code = (code + bl_count[bits - 1]) << 1;
        next_code[bits] = code;
        bits += 1;
    }
    let mut codes = [0u16; 286];
    sym = 0;
    while sym < lengths.len() {
        let len = lengths[sym] as u32;
        if len > 0 {
            let code = next_code[len as usize];
            next_code[len as usize] += 1;
            codes[sym] = code.reverse_bits() >> (16 - len);
        }
        sym += 1;
    }
    codes
}

/// The 256 literals' codes (low 16 bits) and lengths (high bits), for one load per literal.
const LITERALS: [u32; 256] = literal_codes();

const fn literal_codes() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut sym = 0;
    while sym < 256 {
        table[sym] = CODES[sym] as u32 | ((LENGTHS[sym] as u32) << 16);
        sym += 1;
    }
    table
}

/// For each match length 3..=258: the length symbol's code, its extra bits and the 1-bit
/// distance code (distance 1), as one bit string and its length.
const MATCHES: [(u32, u32); 259] = match_codes();

const fn match_codes() -> [(u32, u32); 259] {
    const BASES: [u32; 29] = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
        131, 163, 195, 227, 258,
    ];
    const EXTRA: [u32; 29] = [
        0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0,
    ];
    let mut table = [(0u32, 0u32); 259];
    let mut length = 3;
    while length <= 258 {
        let mut idx = 28;
        while BASES[idx] > length {
            idx -= 1;
        }
        let sym = 257 + idx;
        let code_len = LENGTHS[sym] as u32;
        let bits = CODES[sym] as u32 | ((length - BASES[idx]) << code_len);
        // The distance code (distance 1) is the single 1-bit code 0.
        table[length as usize] = (bits, code_len + EXTRA[idx] + 1);
        length += 1;
    }
    table
}

/// One band's encoder: the bit writer, the pending zero run and the running Adler-32.
pub(super) struct BandEncoder {
    out: Vec<u8>,
    bit_buffer: u64,
    // Invariant: below 64.
    n_bits: u32,
    // Zero bytes read but not yet written to the deflate stream.
    run: u64,
    // Adler-32's two sums, reduced lazily: `adler_a` below 2^20 and `adler_b` below 2^44
    // between reductions.
    adler_a: u32,
    adler_b: u64,
    // Zero bytes read but not yet folded into `adler_b` (at most a band's filtered bytes, below
    // 2^23).
    adler_zeros: u64,
    n_filtered: u64,
}

/// A finished band: its deflate segment, the Adler-32 of its filtered bytes and their count.
pub(super) struct Segment {
    pub(super) bytes: Vec<u8>,
    pub(super) adler: u32,
    pub(super) n_filtered: u64,
}

impl BandEncoder {
    /// Starts a segment (a block header on a byte boundary); `last` marks the final block.
    pub(super) fn new(capacity: usize, last: bool) -> BandEncoder {
        let mut out = Vec::with_capacity(capacity.max(64));
        out.push(if last { HEADER[0] } else { HEADER[0] & !1 });
        out.extend_from_slice(&HEADER[1..]);
        BandEncoder {
            out,
            bit_buffer: HEADER_TAIL,
            n_bits: HEADER_TAIL_BITS,
            run: 0,
            adler_a: 1,
            adler_b: 0,
            adler_zeros: 0,
            n_filtered: 0,
        }
    }

    #[inline(always)]
    fn put(&mut self, bits: u64, n: u32) {
        // `bits` has no bit set at or above `n`, and `n` is at most 48.
        self.bit_buffer |= bits << self.n_bits;
        let total = self.n_bits + n;
        if total >= 64 {
            self.out.extend_from_slice(&self.bit_buffer.to_le_bytes());
            // `n_bits` exceeds 16 here, so the shift is below 64.
            self.bit_buffer = bits.checked_shr(64 - self.n_bits).unwrap_or(0);
            self.n_bits = total - 64;
        } else {
            self.n_bits = total;
        }
    }

    #[inline(always)]
    fn literal(&mut self, byte: u8) {
        let sym = usize::from(byte);
        self.put(u64::from(CODES[sym]), u32::from(LENGTHS[sym]));
    }

    /// Writes the pending run of zero bytes: up to `MAX_LITERAL_RUN` of them as literals (each
    /// the 2-bit code 0, so the run is that many zero bits, written without a branch), a longer
    /// one as a literal zero and matches at distance 1.
    #[inline(always)]
    fn flush_run(&mut self) {
        let run = self.run;
        self.run = 0;
        if run <= MAX_LITERAL_RUN {
            // `run` is at most 5: 10 bits.
            self.put(0, 2 * run as u32);
        } else {
            self.flush_long_run(run);
        }
    }

    /// Writes a run of more than `MAX_LITERAL_RUN` zero bytes.
    #[inline(never)]
    fn flush_long_run(&mut self, run: u64) {
        self.literal(0);
        let mut rest = run - 1;
        let (long_bits, long_len) = MATCHES[258];
        while rest >= 258 {
            self.put(u64::from(long_bits), long_len);
            rest -= 258;
        }
        if rest > 4 {
            let (bits, len) = MATCHES[usize::try_from(rest).unwrap_or(258)];
            self.put(u64::from(bits), len);
        } else {
            // A literal zero is 2 bits: cheaper than the shortest matches.
            for _ in 0..rest {
                self.literal(0);
            }
        }
    }

    /// Folds the pending zero bytes into `adler_b` (each adds `adler_a`), without a branch:
    /// below 2^20 times below 2^23 added to below 2^40 stays below 2^44.
    #[inline(always)]
    fn fold_adler_zeros(&mut self) {
        self.adler_b += self.adler_zeros * u64::from(self.adler_a);
        self.adler_zeros = 0;
    }

    /// Reads `n` zero bytes.
    #[inline(always)]
    pub(super) fn zeros(&mut self, n: u64) {
        self.run += n;
        self.adler_zeros += n;
        self.n_filtered += n;
    }

    /// Reads the six bytes of `bytes` from the lowest (two RGB pixels, filtered).
    #[inline(always)]
    pub(super) fn six(&mut self, bytes: u64) {
        if bytes == 0 {
            self.zeros(6);
            return;
        }
        self.fold_adler_zeros();
        // Adler-32 over x0..x5: a += x0 + .. + x5, b += 6a + 6x0 + 5x1 + .. + x5, with the byte
        // sums taken in 16-bit lanes (x0+x1, x2+x3, x4+x5) and multiplications that gather the
        // lanes, weighted, into the third one.
        const LANES: u64 = 0x00ff_00ff_00ff;
        let even = bytes & LANES;
        let odd = (bytes >> 8) & LANES;
        let pairs = even + odd;
        let sum = (pairs.wrapping_mul(0x0001_0001_0001) >> 32) & 0xffff;
        let odd_sum = (odd.wrapping_mul(0x0001_0001_0001) >> 32) & 0xffff;
        let pair_weighted = (pairs.wrapping_mul(0x0003_0002_0001) >> 32) & 0xffff;
        let weighted = 2 * pair_weighted - odd_sum;
        let (mut a, mut b) = (self.adler_a, self.adler_b);
        b += u64::from(6 * a) + weighted;
        a += sum as u32;
        // Reduced lazily: below 2^20, `a` adds at most 6 * (2^20 + 1530) to `b` per call.
        if a >= 1 << 20 || b >= 1 << 40 {
            a %= ADLER_MOD;
            b %= u64::from(ADLER_MOD);
        }
        self.adler_a = a;
        self.adler_b = b;
        self.n_filtered += 6;
        // Zero bytes at the start extend the run; zero bytes at the end start the next one.
        let n_leading = bytes.trailing_zeros() / 8;
        let n_trailing = (bytes.leading_zeros() - 16) / 8;
        self.run += u64::from(n_leading);
        self.flush_run();
        let n_literals = 6 - n_leading - n_trailing;
        let literals = bytes >> (8 * n_leading);
        let first = n_literals.min(3);
        self.literals(literals, first);
        if n_literals > 3 {
            self.literals(literals >> 24, n_literals - 3);
        }
        self.run = u64::from(n_trailing);
    }

    /// Writes the `n` (1 to 3) low bytes of `bytes` as literals, in one put (straight-line code:
    /// all three codes are looked up, the bits past the `n`th are masked off).
    #[inline(always)]
    fn literals(&mut self, bytes: u64, n: u32) {
        let first = LITERALS[(bytes & 0xff) as usize];
        let second = LITERALS[((bytes >> 8) & 0xff) as usize];
        let third = LITERALS[((bytes >> 16) & 0xff) as usize];
        let (first_len, second_len, third_len) = (first >> 16, second >> 16, third >> 16);
        let bits = u64::from(first & 0xffff)
            | (u64::from(second & 0xffff) << first_len)
            | (u64::from(third & 0xffff) << (first_len + second_len));
        let n_bits = match n {
            1 => first_len,
            2 => first_len + second_len,
            _ => first_len + second_len + third_len,
        };
        // At most 36 bits.
        self.put(bits & ((1u64 << n_bits) - 1), n_bits);
    }

    /// Reads up to 24 bytes (any values).
    #[inline(always)]
    pub(super) fn bytes(&mut self, data: &[u8]) {
        debug_assert!(data.len() <= 24);
        self.fold_adler_zeros();
        let (mut a, mut b) = (self.adler_a, self.adler_b);
        for &byte in data {
            a += u32::from(byte);
            b += u64::from(a);
        }
        // At most 24 bytes with `a` below 2^20: no overflow.
        self.adler_a = a % ADLER_MOD;
        self.adler_b = b % u64::from(ADLER_MOD);
        self.n_filtered += data.len() as u64;
        let mut chunks = data.chunks_exact(8);
        for chunk in &mut chunks {
            let word = u64::from_le_bytes([
                chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7],
            ]);
            if word == 0 {
                self.run += 8;
                continue;
            }
            // Zero bytes at the start of the chunk extend the run; zero bytes at its end start
            // the next one.
            let n_leading = (word.trailing_zeros() / 8) as usize;
            let n_trailing = (word.leading_zeros() / 8) as usize;
            self.run += n_leading as u64;
            self.flush_run();
            for &byte in &chunk[n_leading..8 - n_trailing] {
                self.literal(byte);
            }
            self.run = n_trailing as u64;
        }
        for &byte in chunks.remainder() {
            if byte == 0 {
                self.run += 1;
            } else {
                self.flush_run();
                self.literal(byte);
            }
        }
    }

    /// Ends the block and the segment on a byte boundary.
    pub(super) fn finish(mut self, last: bool) -> Segment {
        self.flush_run();
        self.fold_adler_zeros();
        self.adler_a %= ADLER_MOD;
        self.adler_b %= u64::from(ADLER_MOD);
        self.put(
            u64::from(CODES[END_OF_BLOCK]),
            u32::from(LENGTHS[END_OF_BLOCK]),
        );
        if !last {
            // An empty stored block: BFINAL 0, BTYPE 00, then LEN 0 and NLEN 0xffff once aligned.
            self.put(0, 3);
        }
        let n_bytes = self.n_bits.div_ceil(8) as usize;
        self.out
            .extend_from_slice(&self.bit_buffer.to_le_bytes()[..n_bytes]);
        if !last {
            self.out.extend_from_slice(&[0, 0, 0xff, 0xff]);
        }
        Segment {
            bytes: self.out,
            adler: (u32::try_from(self.adler_b).unwrap_or(0) << 16) | self.adler_a,
            n_filtered: self.n_filtered,
        }
    }
}

/// The Adler-32 of two byte strings laid end to end, from theirs and the second one's length
/// (zlib's `adler32_combine`).
pub(super) fn adler_combine(first: u32, second: u32, second_len: u64) -> u32 {
    let modulus = u64::from(ADLER_MOD);
    let rem = second_len % modulus;
    let first_a = u64::from(first & 0xffff);
    let mut sum_a = first_a + u64::from(second & 0xffff) + modulus - 1;
    let mut sum_b =
        (rem * first_a) % modulus + u64::from(first >> 16) + u64::from(second >> 16) + modulus
            - rem;
    sum_a %= modulus;
    sum_b %= modulus;
    u32::try_from((sum_b << 16) | sum_a).unwrap_or(0)
}
