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

macro_rules! int_range {
    ($bytes:expr, $t:ty) => {{
        let mut it = $bytes
            .chunks_exact(std::mem::size_of::<$t>())
            .map(|c| <$t>::from_ne_bytes(c.try_into().expect("element")));
        it.next().map(|first| {
            let (lo, hi) = it.fold((first, first), |(lo, hi), v| (lo.min(v), hi.max(v)));
            (Value::Int(lo as i128), Value::Int(hi as i128))
        })
    }};
}

macro_rules! float_range {
    ($bytes:expr, $t:ty, $to:expr) => {{
        let (mut lo, mut hi, mut nan) = (f64::INFINITY, f64::NEG_INFINITY, 0u64);
        for c in $bytes.chunks_exact(std::mem::size_of::<$t>()) {
            let v: f64 = $to(<$t>::from_ne_bytes(c.try_into().expect("element")));
            nan += v.is_nan() as u64;
            // f64::min and max pass over NaN.
            lo = lo.min(v);
            hi = hi.max(v);
        }
        (Value::Float(lo), Value::Float(hi), nan)
    }};
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
        use Dtype::*;
        let n = (bytes.len() / self.dtype.size()) as u64;
        if n == 0 {
            return;
        }
        self.count += n;
        let float = |(lo, hi, nan): (Value, Value, u64)| (Some((lo, hi)), nan);
        let (range, nan) = match self.dtype {
            Bool | UInt8 => (int_range!(bytes, u8), 0),
            Int8 => (int_range!(bytes, i8), 0),
            Int16 => (int_range!(bytes, i16), 0),
            UInt16 => (int_range!(bytes, u16), 0),
            Int32 => (int_range!(bytes, i32), 0),
            UInt32 => (int_range!(bytes, u32), 0),
            Int64 => (int_range!(bytes, i64), 0),
            UInt64 => (int_range!(bytes, u64), 0),
            Float16 => float(float_range!(bytes, u16, half_to_f64)),
            Float32 => float(float_range!(bytes, f32, f64::from)),
            Float64 => float(float_range!(bytes, f64, |v| v)),
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
