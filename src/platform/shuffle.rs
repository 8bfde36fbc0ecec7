//! HDF5's byte shuffle (filter 2): byte j of every element together, for each j in turn, which
//! lets a codec find the slowly changing high bytes of numbers. It runs over every byte a
//! compressed write encodes and a read decodes, so it moves blocks of elements at once: 32
//! elements of 8 bytes through AVX2 byte interleaves where the CPU has them, 16 through SSE2
//! (every x86-64 has them), else 8 elements as one 8x8 byte transpose in 64-bit words.

/// HDF5's byte shuffle of `input` into `out` (of the same length): byte j of each of the whole
/// elements of `elem` bytes, for j = 0, 1, ...; bytes past the last whole element stay last.
pub fn shuffle(elem: usize, input: &[u8], out: &mut [u8]) {
    transpose::<Shuffle>(elem, input, out)
}

/// The inverse of `shuffle`.
pub fn unshuffle(elem: usize, input: &[u8], out: &mut [u8]) {
    transpose::<Unshuffle>(elem, input, out)
}

/// `unshuffle`, its stores of 8-byte elements going around the cache (non-temporal, through
/// AVX2, where `out` is 16-byte aligned): for bytes the caller will not read again soon, such as
/// a large read's buffer. A store into memory not in cache first reads the line it fills; these
/// do not. Reading 1 GiB of zstd:1 + shuffle tiles into one buffer on 2 ranks took 0.080-0.084 s
/// with them against 0.102-0.105 s (2-core AMD EPYC, medians of 6 reads, 3 launches each).
pub fn unshuffle_streaming(elem: usize, input: &[u8], out: &mut [u8]) {
    transpose::<UnshuffleStreaming>(elem, input, out)
}

/// One direction of the byte transpose. `shuffle` and `unshuffle` pick the code for an
/// element size the same way (`transpose`); only these moves differ. The dispatch is static:
/// each direction compiles to its own `transpose`, as two hand-written functions would.
trait Direction {
    /// Moves `n` elements of `S` bytes, those before `done` (a multiple of 8) already moved.
    fn blocked<const S: usize>(input: &[u8], out: &mut [u8], n: usize, done: usize);
    /// Moves the first of `n` 8-byte elements through the widest byte interleaves the CPU has;
    /// returns how many it moved (a multiple of 8).
    fn simd_8(input: &[u8], out: &mut [u8], n: usize) -> usize;
    /// Moves `n` elements of `elem` bytes, a size with no blocked code, one byte at a time.
    fn bytewise(elem: usize, input: &[u8], out: &mut [u8], n: usize);
}

/// The byte transpose of `input` into `out` in direction `D` for elements of `elem` bytes,
/// through the fastest code for that size.
fn transpose<D: Direction>(elem: usize, input: &[u8], out: &mut [u8]) {
    assert_eq!(input.len(), out.len());
    let n = input.len() / elem.max(1);
    if elem <= 1 || n <= 1 {
        out.copy_from_slice(input);
        return;
    }
    match elem {
        2 => D::blocked::<2>(input, out, n, 0),
        4 => D::blocked::<4>(input, out, n, 0),
        8 => {
            let done = D::simd_8(input, out, n);
            D::blocked::<8>(input, out, n, done)
        }
        16 => D::blocked::<16>(input, out, n, 0),
        _ => D::bytewise(elem, input, out, n),
    }
    out[n * elem..].copy_from_slice(&input[n * elem..]);
}

/// `shuffle`'s direction: whole elements in, one stream per byte of an element out.
struct Shuffle;

impl Direction for Shuffle {
    fn blocked<const S: usize>(input: &[u8], out: &mut [u8], n: usize, done: usize) {
        let (streams, _) = out.split_at_mut(n * S);
        let mut lanes: Vec<&mut [u8]> = streams.chunks_exact_mut(n).collect();
        // Blocks of 8 elements as one 8x8 byte transpose (S <= 8): several times faster than
        // moving bytes one at a time, and this pass runs over every byte a write compresses.
        let blocked = if S <= 8 { n / 8 * 8 } else { done };
        let blocks = input[..blocked * S].chunks_exact(8 * S).enumerate();
        for (k, block) in blocks.skip(done / 8) {
            let mut rows: [u64; 8] = std::array::from_fn(|i| word(&block[i * S..(i + 1) * S]));
            transpose_bytes(&mut rows);
            for (j, lane) in lanes.iter_mut().enumerate() {
                lane[k * 8..k * 8 + 8].copy_from_slice(&rows[j].to_le_bytes());
            }
        }
        for (i, e) in input[..n * S]
            .chunks_exact(S)
            .enumerate()
            .skip(blocked.max(done))
        {
            for j in 0..S {
                lanes[j][i] = e[j];
            }
        }
    }

    fn simd_8(input: &[u8], out: &mut [u8], n: usize) -> usize {
        simd::shuffle8(input, out, n)
    }

    fn bytewise(elem: usize, input: &[u8], out: &mut [u8], n: usize) {
        for (i, e) in input.chunks_exact(elem).enumerate() {
            for (j, &b) in e.iter().enumerate() {
                out[j * n + i] = b;
            }
        }
    }
}

/// `unshuffle`'s direction: the byte streams in, whole elements out.
struct Unshuffle;

impl Direction for Unshuffle {
    fn blocked<const S: usize>(input: &[u8], out: &mut [u8], n: usize, done: usize) {
        let lanes: Vec<&[u8]> = input[..n * S].chunks_exact(n).collect();
        // As in `Shuffle::blocked`: 8 elements at a time, one byte transpose.
        let blocked = if S <= 8 { n / 8 * 8 } else { done };
        let blocks = out[..blocked * S].chunks_exact_mut(8 * S).enumerate();
        for (k, block) in blocks.skip(done / 8) {
            let mut rows: [u64; 8] = std::array::from_fn(|j| match j < S {
                true => word(&lanes[j][k * 8..k * 8 + 8]),
                false => 0,
            });
            transpose_bytes(&mut rows);
            for (e, row) in block.chunks_exact_mut(S).zip(rows) {
                e.copy_from_slice(&row.to_le_bytes()[..S]);
            }
        }
        for (i, e) in out[..n * S]
            .chunks_exact_mut(S)
            .enumerate()
            .skip(blocked.max(done))
        {
            for j in 0..S {
                e[j] = lanes[j][i];
            }
        }
    }

    fn simd_8(input: &[u8], out: &mut [u8], n: usize) -> usize {
        simd::unshuffle8(input, out, n)
    }

    fn bytewise(elem: usize, input: &[u8], out: &mut [u8], n: usize) {
        for (i, e) in out.chunks_exact_mut(elem).enumerate() {
            for (j, b) in e.iter_mut().enumerate() {
                *b = input[j * n + i];
            }
        }
    }
}

/// `unshuffle_streaming`'s direction: `Unshuffle`'s moves, the 8-byte ones streamed.
struct UnshuffleStreaming;

impl Direction for UnshuffleStreaming {
    fn blocked<const S: usize>(input: &[u8], out: &mut [u8], n: usize, done: usize) {
        Unshuffle::blocked::<S>(input, out, n, done)
    }

    fn simd_8(input: &[u8], out: &mut [u8], n: usize) -> usize {
        simd::unshuffle8_streaming(input, out, n)
    }

    fn bytewise(elem: usize, input: &[u8], out: &mut [u8], n: usize) {
        Unshuffle::bytewise(elem, input, out, n)
    }
}

/// Up to 8 bytes as the low bytes of a little-endian word.
#[inline(always)]
fn word(bytes: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(w)
}

/// Transposes an 8x8 matrix of bytes held as 8 little-endian rows: byte k of row j trades
/// places with byte j of row k (swapping 4-byte, then 2-byte, then 1-byte blocks).
#[inline(always)]
fn transpose_bytes(r: &mut [u64; 8]) {
    for (j, k) in [(0, 4), (1, 5), (2, 6), (3, 7)] {
        let t = ((r[j] >> 32) ^ r[k]) & 0x0000_0000_FFFF_FFFF;
        r[j] ^= t << 32;
        r[k] ^= t;
    }
    for (j, k) in [(0, 2), (1, 3), (4, 6), (5, 7)] {
        let t = ((r[j] >> 16) ^ r[k]) & 0x0000_FFFF_0000_FFFF;
        r[j] ^= t << 16;
        r[k] ^= t;
    }
    for (j, k) in [(0, 1), (2, 3), (4, 5), (6, 7)] {
        let t = ((r[j] >> 8) ^ r[k]) & 0x00FF_00FF_00FF_00FF;
        r[j] ^= t << 8;
        r[k] ^= t;
    }
}

/// Elements of 8 bytes, 16 (SSE2) or 32 (AVX2) at a time: each block of 8 registers is
/// interleaved in rounds (bytes, then pairs, then fours, ...) until each 16-byte lane holds one
/// byte of 16 elements (shuffle) or 2 whole elements (unshuffle). An AVX2 register is two such
/// lanes side by side, for two blocks of 16 elements. Returns how many elements were moved (a
/// multiple of 16); the rest is left to the portable code.
#[cfg(target_arch = "x86_64")]
mod simd {
    use std::arch::x86_64::*;

    /// A register of byte lanes, interleaved 16 bytes at a time.
    trait Lanes: Copy {
        /// The low and the high halves of each 16-byte lane of `a` and `b`, interleaved in
        /// pieces of `K` bytes.
        fn unpack<const K: usize>(a: Self, b: Self) -> (Self, Self);
    }

    impl Lanes for __m128i {
        #[inline(always)]
        fn unpack<const K: usize>(a: Self, b: Self) -> (Self, Self) {
            // SAFETY: SSE2 is part of x86-64; these touch only registers.
            unsafe {
                match K {
                    1 => (_mm_unpacklo_epi8(a, b), _mm_unpackhi_epi8(a, b)),
                    2 => (_mm_unpacklo_epi16(a, b), _mm_unpackhi_epi16(a, b)),
                    _ => (_mm_unpacklo_epi32(a, b), _mm_unpackhi_epi32(a, b)),
                }
            }
        }
    }

    impl Lanes for __m256i {
        #[inline(always)]
        fn unpack<const K: usize>(a: Self, b: Self) -> (Self, Self) {
            // SAFETY: only reached from the `avx2` functions below, which run only where
            // the CPU has AVX2; these touch only registers.
            unsafe {
                match K {
                    1 => (_mm256_unpacklo_epi8(a, b), _mm256_unpackhi_epi8(a, b)),
                    2 => (_mm256_unpacklo_epi16(a, b), _mm256_unpackhi_epi16(a, b)),
                    _ => (_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b)),
                }
            }
        }
    }

    /// Registers (2j, 2j + 1) interleaved in pieces of `K` bytes: the low halves to j, the
    /// high ones to j + 4.
    #[inline(always)]
    fn round<R: Lanes, const K: usize>(r: [R; 8]) -> [R; 8] {
        let mut out = r;
        for j in 0..4 {
            (out[j], out[j + 4]) = R::unpack::<K>(r[2 * j], r[2 * j + 1]);
        }
        out
    }

    /// Bytes of each element from 8 streams to 2 whole elements in each 16-byte lane.
    #[inline(always)]
    fn gather<R: Lanes>(r: [R; 8]) -> [R; 8] {
        round::<R, 4>(round::<R, 2>(round::<R, 1>(r)))
    }

    /// 2 whole elements in each register's 16-byte lanes to byte j of 16 elements in lane j.
    #[inline(always)]
    fn scatter<R: Lanes>(r: [R; 8]) -> [R; 8] {
        round::<R, 1>(round::<R, 4>(round::<R, 2>(round::<R, 1>(r))))
    }

    /// After the rounds, register i holds lane (or block of output) ORDER[i].
    const ORDER: [usize; 8] = [0, 4, 2, 6, 1, 5, 3, 7];

    fn load(bytes: &[u8]) -> __m128i {
        let bytes: &[u8; 16] = bytes.try_into().expect("16 bytes");
        // SAFETY: an unaligned load of exactly the 16 bytes borrowed.
        unsafe { _mm_loadu_si128(bytes.as_ptr().cast()) }
    }

    fn store(bytes: &mut [u8], r: __m128i) {
        let bytes: &mut [u8; 16] = bytes.try_into().expect("16 bytes");
        // SAFETY: an unaligned store into exactly the 16 bytes borrowed.
        unsafe { _mm_storeu_si128(bytes.as_mut_ptr().cast(), r) }
    }

    fn has_avx2() -> bool {
        std::is_x86_feature_detected!("avx2")
    }

    pub fn shuffle8(input: &[u8], out: &mut [u8], n: usize) -> usize {
        // SAFETY: the CPU has AVX2.
        let wide = if has_avx2() {
            unsafe { avx2::shuffle8(input, out, n) }
        } else {
            0
        };
        for k in wide / 16..n / 16 {
            let r = scatter(std::array::from_fn(|j| {
                load(&input[k * 128 + 16 * j..][..16])
            }));
            for (i, lane) in ORDER.into_iter().enumerate() {
                store(&mut out[lane * n + 16 * k..][..16], r[i]);
            }
        }
        n / 16 * 16
    }

    /// `unshuffle8` with non-temporal stores, where the CPU has AVX2 and `out` is 16-byte
    /// aligned (else as `unshuffle8`).
    pub fn unshuffle8_streaming(input: &[u8], out: &mut [u8], n: usize) -> usize {
        if !has_avx2() || !(out.as_ptr() as usize).is_multiple_of(16) {
            return unshuffle8(input, out, n);
        }
        // SAFETY: the CPU has AVX2, and `out` is aligned for the streaming stores.
        unsafe {
            let moved = avx2::unshuffle8::<true>(input, out, n);
            // Streaming stores are not ordered with later ones: all of them land first.
            _mm_sfence();
            moved
        }
    }

    pub fn unshuffle8(input: &[u8], out: &mut [u8], n: usize) -> usize {
        // SAFETY: the CPU has AVX2.
        let wide = if has_avx2() {
            unsafe { avx2::unshuffle8::<false>(input, out, n) }
        } else {
            0
        };
        for k in wide / 16..n / 16 {
            let r = gather(std::array::from_fn(|j| {
                load(&input[j * n + 16 * k..][..16])
            }));
            for (i, block) in ORDER.into_iter().enumerate() {
                store(&mut out[k * 128 + 16 * block..][..16], r[i]);
            }
        }
        n / 16 * 16
    }

    /// The same moves on two blocks of 16 elements at once, one per 16-byte lane: 1.3x the
    /// SSE2 code's speed unshuffling 1 MiB chunks into a large buffer (18 against 13.4 GB/s
    /// here; a plain copy ran at 24 GB/s).
    mod avx2 {
        use super::*;

        /// The bytes of elements 32k..32k+16 in each register's low lane and of 32k+16..32k+32 in
        /// its high one.
        #[target_feature(enable = "avx2")]
        pub unsafe fn shuffle8(input: &[u8], out: &mut [u8], n: usize) -> usize {
            for k in 0..n / 32 {
                let r = scatter(std::array::from_fn(|j| {
                    let (lo, hi) = (
                        load(&input[k * 256 + 16 * j..][..16]),
                        load(&input[k * 256 + 128 + 16 * j..][..16]),
                    );
                    _mm256_set_m128i(hi, lo)
                }));
                for (i, lane) in ORDER.into_iter().enumerate() {
                    let to: &mut [u8; 32] = (&mut out[lane * n + 32 * k..][..32])
                        .try_into()
                        .expect("32 bytes");
                    _mm256_storeu_si256(to.as_mut_ptr().cast(), r[i]);
                }
            }
            n / 32 * 32
        }

        /// `STREAM`: stores around the cache, `out` 16-byte aligned (the caller fences).
        #[target_feature(enable = "avx2")]
        pub unsafe fn unshuffle8<const STREAM: bool>(
            input: &[u8],
            out: &mut [u8],
            n: usize,
        ) -> usize {
            let put = |to: &mut [u8], r: __m128i| match STREAM {
                // SAFETY: 16 bytes borrowed, 16-byte aligned (the caller checked `out`; every
                // store is at a multiple of 16 from it).
                true => unsafe { _mm_stream_si128(to[..16].as_mut_ptr().cast(), r) },
                false => store(&mut to[..16], r),
            };
            for k in 0..n / 32 {
                let r: [__m256i; 8] = gather(std::array::from_fn(|j| {
                    let from: &[u8; 32] = (&input[j * n + 32 * k..][..32])
                        .try_into()
                        .expect("32 bytes");
                    _mm256_loadu_si256(from.as_ptr().cast())
                }));
                for (i, block) in ORDER.into_iter().enumerate() {
                    put(
                        &mut out[k * 256 + 16 * block..][..16],
                        _mm256_castsi256_si128(r[i]),
                    );
                    put(
                        &mut out[k * 256 + 128 + 16 * block..][..16],
                        _mm256_extracti128_si256::<1>(r[i]),
                    );
                }
            }
            n / 32 * 32
        }
    }
}

/// Elsewhere the portable code moves them all.
#[cfg(not(target_arch = "x86_64"))]
mod simd {
    pub fn shuffle8(_: &[u8], _: &mut [u8], _: usize) -> usize {
        0
    }

    pub fn unshuffle8(_: &[u8], _: &mut [u8], _: usize) -> usize {
        0
    }

    pub fn unshuffle8_streaming(_: &[u8], _: &mut [u8], _: usize) -> usize {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::xorshift;

    /// Bytes that differ from their neighbours.
    fn sample(len: usize, seed: u64) -> Vec<u8> {
        let start = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        xorshift(start).take(len).map(|x| x as u8).collect()
    }

    #[test]
    fn the_shuffle_is_hdf5_s() {
        let raw: Vec<u8> = (0..14).collect();
        let mut out = vec![0u8; 14];
        shuffle(4, &raw, &mut out);
        // Three elements of 4 bytes: first bytes, second bytes, ...; the 2 bytes left over last.
        assert_eq!(out, [0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11, 12, 13]);
        let mut back = vec![0u8; 14];
        unshuffle(4, &out, &mut back);
        assert_eq!(back, raw);
        shuffle(3, &raw, &mut out);
        assert_eq!(out, [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11, 12, 13]);
        // One element or less: unchanged.
        shuffle(16, &raw, &mut out);
        assert_eq!(out, raw);
    }

    #[test]
    fn the_blocked_shuffle_moves_the_bytes_one_at_a_time_would() {
        for elem in [2, 3, 4, 8, 16] {
            for len in [0, 1, 7, 8 * elem - 1, 8 * elem, 8 * elem + 5, 1000, 4099] {
                let raw = sample(len, (elem * len) as u64);
                let n = len / elem;
                let mut expected = raw.clone();
                for i in 0..n {
                    for j in 0..elem {
                        expected[j * n + i] = raw[i * elem + j];
                    }
                }
                let mut out = vec![0u8; len];
                shuffle(elem, &raw, &mut out);
                assert_eq!(
                    out, expected,
                    "shuffle of {len} bytes, {elem}-byte elements"
                );
                let mut back = vec![0u8; len];
                unshuffle(elem, &out, &mut back);
                assert_eq!(back, raw, "unshuffle of {len} bytes, {elem}-byte elements");
            }
        }
    }

    #[test]
    fn the_streaming_unshuffle_gives_the_plain_one_s_bytes_aligned_or_not() {
        // A 16-byte aligned buffer, written from offset 0 (aligned: streamed where the CPU has
        // AVX2) and from offsets 1 and 8 (not: stored as usual).
        let mut buffer = vec![0u128; 4 << 10];
        let bytes: &mut [u8] = unsafe {
            std::slice::from_raw_parts_mut(buffer.as_mut_ptr().cast(), buffer.len() * 16)
        };
        for elem in [2, 4, 8, 16] {
            for len in [0, 8 * 31 + 3, 8 * 32, 8 * 100 + 5, 1 << 15, (1 << 15) + 17] {
                let shuffled = sample(len, (elem * len + 1) as u64);
                let mut expected = vec![0u8; len];
                unshuffle(elem, &shuffled, &mut expected);
                for at in [0, 1, 8] {
                    let out = &mut bytes[at..at + len];
                    out.fill(0xA5);
                    unshuffle_streaming(elem, &shuffled, out);
                    assert!(
                        *out == expected[..],
                        "{len} bytes of {elem}-byte elements at offset {at}"
                    );
                }
            }
        }
    }
}
