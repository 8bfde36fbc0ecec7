//! Each tile's smallest and largest element and its count of NaNs, recorded in the master
//! when the tile is written, so a blown-up solution shows without reading the data
//! (`h5tile ls -l`). Complex types have no order and get none.

use crate::dtype::Dtype;

/// A tile's extremes, the elements in the dataset's own type (native byte order).
#[derive(Clone, Debug, PartialEq)]
pub struct Extremes {
    /// Smallest and largest element that is not NaN; NaN when every element is.
    pub min: Vec<u8>,
    pub max: Vec<u8>,
    /// Elements that are NaN (0 for integers).
    pub nan: u64,
}

/// The extremes of `bytes`, elements of `dtype`; None for complex types and no elements.
#[cfg(test)]
pub fn of(dtype: Dtype, bytes: &[u8]) -> Option<Extremes> {
    let mut acc = Accumulator::new(dtype)?;
    acc.add(bytes);
    acc.finish()
}

/// Extremes gathered piece by piece (each piece a whole number of elements).
pub struct Accumulator {
    dtype: Dtype,
    /// Running min and max: integers widened to i128, floats to f64.
    range: Option<(Value, Value)>,
    nan: u64,
    count: u64,
}

#[derive(Clone, Copy, Debug)]
enum Value {
    Int(i128),
    Float(f64),
}

/// Elements compared side by side, one a lane, so that the compiler keeps the running
/// extremes in vector registers: branch-free selects, reduced across the lanes at the end.
const LANES: usize = 16;

/// The smallest and largest element of `bytes` (elements of `S` bytes, read by `decode`) that
/// is not NaN, and how many are NaN: `(lo0, hi0)` when none is comparable. An ordered compare
/// is false for NaN, so a NaN never replaces a running extreme.
#[inline(always)]
fn lanes<T: Copy + PartialOrd, const S: usize>(
    bytes: &[u8],
    decode: impl Fn([u8; S]) -> T,
    lo0: T,
    hi0: T,
) -> (T, T, u64) {
    let (mut lo, mut hi, mut nan) = ([lo0; LANES], [hi0; LANES], [0u32; LANES]);
    let mut step = |i: usize, v: T| {
        lo[i] = if v < lo[i] { v } else { lo[i] };
        hi[i] = if v > hi[i] { v } else { hi[i] };
        #[allow(clippy::eq_op)] // NaN is the one value unequal to itself
        {
            nan[i] += (v != v) as u32;
        }
    };
    let mut groups = bytes.chunks_exact(S * LANES);
    for group in &mut groups {
        for i in 0..LANES {
            step(
                i,
                decode(group[i * S..(i + 1) * S].try_into().expect("element")),
            );
        }
    }
    for element in groups.remainder().chunks_exact(S) {
        step(0, decode(element.try_into().expect("element")));
    }
    let pick = |a: T, b: T, smaller: bool| if (b < a) == smaller { b } else { a };
    let lo = lo.into_iter().fold(lo0, |a, b| pick(a, b, true));
    let hi = hi.into_iter().fold(hi0, |a, b| pick(a, b, false));
    (lo, hi, nan.iter().map(|&n| n as u64).sum())
}

/// `lanes` for one element type, compiled three times: for the widest vectors the CPU has
/// (AVX-512, AVX2, chosen at run time) and for the baseline.
macro_rules! range_fn {
    ($name:ident, $t:ty, $lo0:expr, $hi0:expr) => {
        fn $name(bytes: &[u8]) -> ($t, $t, u64) {
            const S: usize = std::mem::size_of::<$t>();
            #[inline(always)]
            fn run(bytes: &[u8]) -> ($t, $t, u64) {
                lanes::<$t, S>(bytes, <$t>::from_ne_bytes, $lo0, $hi0)
            }
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx512dq")]
                unsafe fn avx512(bytes: &[u8]) -> ($t, $t, u64) {
                    run(bytes)
                }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2(bytes: &[u8]) -> ($t, $t, u64) {
                    run(bytes)
                }
                if std::arch::is_x86_feature_detected!("avx512bw")
                    && std::arch::is_x86_feature_detected!("avx512vl")
                    && std::arch::is_x86_feature_detected!("avx512dq")
                {
                    // SAFETY: the CPU has the features the function is compiled for.
                    return unsafe { avx512(bytes) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: as above.
                    return unsafe { avx2(bytes) };
                }
            }
            run(bytes)
        }
    };
}

range_fn!(range_u8, u8, u8::MAX, u8::MIN);
range_fn!(range_i8, i8, i8::MAX, i8::MIN);
range_fn!(range_u16, u16, u16::MAX, u16::MIN);
range_fn!(range_i16, i16, i16::MAX, i16::MIN);
range_fn!(range_u32, u32, u32::MAX, u32::MIN);
range_fn!(range_i32, i32, i32::MAX, i32::MIN);
range_fn!(range_u64, u64, u64::MAX, u64::MIN);
range_fn!(range_i64, i64, i64::MAX, i64::MIN);
range_fn!(range_f32, f32, f32::INFINITY, f32::NEG_INFINITY);
range_fn!(range_f64, f64, f64::INFINITY, f64::NEG_INFINITY);

/// Halves, by their bits: a NaN (exponent all ones, fraction not zero) is counted and passed
/// over; the others are ordered by a key that sorts as their values do (a sign-magnitude
/// number made two's complement, -0 and +0 tied).
fn range_f16(bytes: &[u8]) -> (Value, Value, u64) {
    let key = |h: u16| {
        let magnitude = (h & 0x7fff) as i32;
        if h & 0x8000 != 0 {
            -magnitude
        } else {
            magnitude
        }
    };
    let (mut lo, mut hi, mut nan) = (None::<u16>, None::<u16>, 0u64);
    for c in bytes.chunks_exact(2) {
        let h = u16::from_ne_bytes([c[0], c[1]]);
        if h & 0x7c00 == 0x7c00 && h & 0x03ff != 0 {
            nan += 1;
            continue;
        }
        lo = Some(lo.map_or(h, |l| if key(h) < key(l) { h } else { l }));
        hi = Some(hi.map_or(h, |m| if key(h) > key(m) { h } else { m }));
    }
    let value = |h: Option<u16>, none: f64| Value::Float(h.map_or(none, half_to_f64));
    (value(lo, f64::INFINITY), value(hi, f64::NEG_INFINITY), nan)
}

/// The integer range of `(lo, hi, _)` as values.
fn ints<T: Into<i128>>((lo, hi, _): (T, T, u64)) -> Option<(Value, Value)> {
    Some((Value::Int(lo.into()), Value::Int(hi.into())))
}

/// The float range of `(lo, hi, nan)` as values, and the NaN count.
fn floats<T: Into<f64>>((lo, hi, nan): (T, T, u64)) -> (Option<(Value, Value)>, u64) {
    (
        Some((Value::Float(lo.into()), Value::Float(hi.into()))),
        nan,
    )
}

impl Accumulator {
    pub fn new(dtype: Dtype) -> Option<Accumulator> {
        match dtype {
            Dtype::Complex64 | Dtype::Complex128 => None,
            _ => Some(Accumulator {
                dtype,
                range: None,
                nan: 0,
                count: 0,
            }),
        }
    }

    pub fn add(&mut self, bytes: &[u8]) {
        // In parts of at most 1 GiB: the lanes count NaNs in u32s.
        let part = (1usize << 30) / self.dtype.size() * self.dtype.size();
        bytes.chunks(part).for_each(|b| self.add_part(b));
    }

    fn add_part(&mut self, bytes: &[u8]) {
        use Dtype::*;
        let n = (bytes.len() / self.dtype.size()) as u64;
        if n == 0 {
            return;
        }
        self.count += n;
        let (range, nan) = match self.dtype {
            Bool | UInt8 => (ints(range_u8(bytes)), 0),
            Int8 => (ints(range_i8(bytes)), 0),
            Int16 => (ints(range_i16(bytes)), 0),
            UInt16 => (ints(range_u16(bytes)), 0),
            Int32 => (ints(range_i32(bytes)), 0),
            UInt32 => (ints(range_u32(bytes)), 0),
            Int64 => (ints(range_i64(bytes)), 0),
            UInt64 => (ints(range_u64(bytes)), 0),
            Float16 => {
                let (lo, hi, nan) = range_f16(bytes);
                (Some((lo, hi)), nan)
            }
            Float32 => floats(range_f32(bytes)),
            Float64 => floats(range_f64(bytes)),
            Complex64 | Complex128 => unreachable!("no accumulator for complex types"),
        };
        self.nan += nan;
        self.range = match (self.range, range) {
            (None, r) | (r, None) => r,
            (Some((a, b)), Some((c, d))) => Some((a.min(c), b.max(d))),
        };
    }

    pub fn finish(self) -> Option<Extremes> {
        let (lo, hi) = self.range?;
        let all_nan = self.nan == self.count;
        let bytes = |v: Value| match (all_nan, v) {
            (true, _) => self.encode(Value::Float(f64::NAN)),
            (false, v) => self.encode(v),
        };
        Some(Extremes {
            min: bytes(lo),
            max: bytes(hi),
            nan: self.nan,
        })
    }

    /// `v` as one element of the dtype (floats found from elements of the type itself, so
    /// narrowing back is exact).
    fn encode(&self, v: Value) -> Vec<u8> {
        use Dtype::*;
        let (i, f) = match v {
            Value::Int(i) => (i, 0.0),
            Value::Float(f) => (0, f),
        };
        match self.dtype {
            Bool | UInt8 => vec![i as u8],
            Int8 => (i as i8).to_ne_bytes().to_vec(),
            Int16 => (i as i16).to_ne_bytes().to_vec(),
            UInt16 => (i as u16).to_ne_bytes().to_vec(),
            Int32 => (i as i32).to_ne_bytes().to_vec(),
            UInt32 => (i as u32).to_ne_bytes().to_vec(),
            Int64 => (i as i64).to_ne_bytes().to_vec(),
            UInt64 => (i as u64).to_ne_bytes().to_vec(),
            Float16 => f64_to_half(f).to_ne_bytes().to_vec(),
            Float32 => (f as f32).to_ne_bytes().to_vec(),
            Float64 => f.to_ne_bytes().to_vec(),
            Complex64 | Complex128 => unreachable!("no accumulator for complex types"),
        }
    }
}

impl Value {
    fn min(self, other: Value) -> Value {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.min(b)),
            (Value::Float(a), Value::Float(b)) => Value::Float(a.min(b)),
            _ => unreachable!("one dtype per accumulator"),
        }
    }

    fn max(self, other: Value) -> Value {
        match (self, other) {
            (Value::Int(a), Value::Int(b)) => Value::Int(a.max(b)),
            (Value::Float(a), Value::Float(b)) => Value::Float(a.max(b)),
            _ => unreachable!("one dtype per accumulator"),
        }
    }
}

/// An IEEE half (its bits) as f64.
fn half_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((h >> 10) & 0x1f) as i32;
    let frac = (h & 0x3ff) as f64;
    match exp {
        0 => sign * frac * 2f64.powi(-24),
        31 if frac == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    }
}

/// The half whose value is `v`, for values that came from halves (exact), NaN and infinities.
fn f64_to_half(v: f64) -> u16 {
    if v.is_nan() {
        return 0x7e00;
    }
    let sign = if v.is_sign_negative() { 0x8000 } else { 0 };
    let a = v.abs();
    if a.is_infinite() {
        return sign | 0x7c00;
    }
    if a < 2f64.powi(-14) {
        return sign | (a / 2f64.powi(-24)).round() as u16;
    }
    let exp = a.log2().floor() as i32;
    let frac = ((a / 2f64.powi(exp) - 1.0) * 1024.0).round() as u16;
    sign | (((exp + 15) as u16) << 10) | frac
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_of<T: Copy>(v: &[T]) -> Vec<u8> {
        // SAFETY: plain numbers, read as bytes.
        unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(v)) }
            .to_vec()
    }

    #[test]
    fn integers_give_their_extremes() {
        let e = of(Dtype::Int32, &bytes_of(&[5i32, -7, 12, 0])).unwrap();
        assert_eq!(e.min, (-7i32).to_ne_bytes());
        assert_eq!(e.max, 12i32.to_ne_bytes());
        assert_eq!(e.nan, 0);
        let e = of(Dtype::UInt64, &bytes_of(&[u64::MAX, 3])).unwrap();
        assert_eq!(
            (e.min, e.max),
            (3u64.to_ne_bytes().to_vec(), u64::MAX.to_ne_bytes().to_vec())
        );
    }

    #[test]
    fn nans_are_counted_and_passed_over() {
        let e = of(
            Dtype::Float64,
            &bytes_of(&[1.5f64, f64::NAN, -2.0, f64::NAN]),
        )
        .unwrap();
        assert_eq!(
            (e.min, e.max, e.nan),
            (
                (-2.0f64).to_ne_bytes().to_vec(),
                1.5f64.to_ne_bytes().to_vec(),
                2
            )
        );
        let all = of(Dtype::Float32, &bytes_of(&[f32::NAN; 3])).unwrap();
        assert!(f32::from_ne_bytes(all.min.try_into().unwrap()).is_nan());
        assert_eq!(all.nan, 3);
    }

    #[test]
    fn pieces_add_up_to_the_whole() {
        let v: Vec<f32> = (0..1000).map(|i| ((i * 37) % 101) as f32 - 50.0).collect();
        let b = bytes_of(&v);
        let mut acc = Accumulator::new(Dtype::Float32).unwrap();
        for piece in b.chunks(4 * 33) {
            acc.add(piece);
        }
        assert_eq!(acc.finish(), of(Dtype::Float32, &b));
    }

    /// Element by element, as the extremes are defined (NaN counted and passed over).
    fn reference(dtype: Dtype, bytes: &[u8]) -> Option<Extremes> {
        let elem = dtype.size();
        let value = |c: &[u8]| -> f64 {
            match dtype {
                Dtype::Bool | Dtype::UInt8 => c[0] as f64,
                Dtype::Int8 => c[0] as i8 as f64,
                Dtype::Int16 => i16::from_ne_bytes(c.try_into().unwrap()) as f64,
                Dtype::UInt16 => u16::from_ne_bytes(c.try_into().unwrap()) as f64,
                Dtype::Int32 => i32::from_ne_bytes(c.try_into().unwrap()) as f64,
                Dtype::UInt32 => u32::from_ne_bytes(c.try_into().unwrap()) as f64,
                Dtype::Float16 => half_to_f64(u16::from_ne_bytes(c.try_into().unwrap())),
                Dtype::Float32 => f32::from_ne_bytes(c.try_into().unwrap()) as f64,
                Dtype::Float64 => f64::from_ne_bytes(c.try_into().unwrap()),
                _ => unreachable!("64-bit integers are compared as bytes below"),
            }
        };
        let (mut lo, mut hi, mut nan) = (None::<&[u8]>, None::<&[u8]>, 0u64);
        for c in bytes.chunks_exact(elem) {
            let less = |a: &[u8], b: &[u8]| match dtype {
                Dtype::Int64 => {
                    i64::from_ne_bytes(a.try_into().unwrap())
                        < i64::from_ne_bytes(b.try_into().unwrap())
                }
                Dtype::UInt64 => {
                    u64::from_ne_bytes(a.try_into().unwrap())
                        < u64::from_ne_bytes(b.try_into().unwrap())
                }
                _ => value(a) < value(b),
            };
            if !matches!(dtype, Dtype::Int64 | Dtype::UInt64) && value(c).is_nan() {
                nan += 1;
                continue;
            }
            lo = Some(lo.map_or(c, |l| if less(c, l) { c } else { l }));
            hi = Some(hi.map_or(c, |h| if less(h, c) { c } else { h }));
        }
        let n = bytes.len() / elem;
        if n == 0 {
            return None;
        }
        let nan_bytes = || {
            Accumulator::new(dtype)
                .unwrap()
                .encode(Value::Float(f64::NAN))
        };
        Some(Extremes {
            min: lo.map_or_else(nan_bytes, <[u8]>::to_vec),
            max: hi.map_or_else(nan_bytes, <[u8]>::to_vec),
            nan,
        })
    }

    /// The same extremes: integers bit for bit, floats as values (-0 and +0 tie, so either
    /// may be kept; NaN stands for "all NaN").
    fn same(dtype: Dtype, a: &Option<Extremes>, b: &Option<Extremes>) -> bool {
        let value = |bytes: &[u8]| match dtype {
            Dtype::Float16 => half_to_f64(u16::from_ne_bytes(bytes.try_into().unwrap())),
            Dtype::Float32 => f32::from_ne_bytes(bytes.try_into().unwrap()) as f64,
            _ => f64::from_ne_bytes(bytes.try_into().unwrap()),
        };
        let eq = |x: &[u8], y: &[u8]| match dtype {
            Dtype::Float16 | Dtype::Float32 | Dtype::Float64 => {
                let (x, y) = (value(x), value(y));
                x == y || (x.is_nan() && y.is_nan())
            }
            _ => x == y,
        };
        match (a, b) {
            (Some(a), Some(b)) => eq(&a.min, &b.min) && eq(&a.max, &b.max) && a.nan == b.nan,
            (a, b) => a.is_none() && b.is_none(),
        }
    }

    #[test]
    fn every_type_and_length_matches_the_element_by_element_definition() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        use Dtype::*;
        for dtype in [
            Bool, UInt8, Int8, Int16, UInt16, Int32, UInt32, Int64, UInt64, Float16, Float32,
            Float64,
        ] {
            let elem = dtype.size();
            // Lengths around the lanes' group (16 elements) and a long one.
            for n in [1usize, 2, 15, 16, 17, 31, 33, 1000, 4099] {
                let mut bytes: Vec<u8> = (0..n * elem).map(|_| next() as u8).collect();
                let nan = |bytes: &mut Vec<u8>, i: usize| match dtype {
                    Float16 => bytes[i * 2..i * 2 + 2].copy_from_slice(&0x7e01u16.to_ne_bytes()),
                    Float32 => bytes[i * 4..i * 4 + 4].copy_from_slice(&f32::NAN.to_ne_bytes()),
                    Float64 => bytes[i * 8..i * 8 + 8].copy_from_slice(&f64::NAN.to_ne_bytes()),
                    _ => {}
                };
                if n > 3 {
                    for _ in 0..n / 3 {
                        nan(&mut bytes, next() as usize % n);
                    }
                }
                let want = reference(dtype, &bytes);
                assert!(
                    same(dtype, &of(dtype, &bytes), &want),
                    "{dtype:?}, {n} elements"
                );
                // In pieces, as the checksummed writers give them.
                let mut acc = Accumulator::new(dtype).unwrap();
                bytes.chunks(elem * 7).for_each(|p| acc.add(p));
                assert!(
                    same(dtype, &acc.finish(), &want),
                    "{dtype:?}, {n} elements in pieces"
                );
            }
        }
    }

    #[test]
    fn halves_round_trip() {
        for h in [0x3c00u16, 0xc000, 0x0001, 0x7bff, 0x0400, 0xfc00] {
            assert_eq!(f64_to_half(half_to_f64(h)), h, "{h:#x}");
        }
        let e = of(Dtype::Float16, &bytes_of(&[0x3c00u16, 0xc000, 0x7e00])).unwrap();
        assert_eq!(
            (e.min, e.max, e.nan),
            (
                0xc000u16.to_ne_bytes().to_vec(),
                0x3c00u16.to_ne_bytes().to_vec(),
                1
            )
        );
    }

    #[test]
    fn complex_types_have_no_order() {
        assert!(of(Dtype::Complex64, &[0u8; 16]).is_none());
        assert!(of(Dtype::Float64, &[]).is_none());
    }
}
