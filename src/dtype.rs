//! The 14 element types of the C API: their codes, sizes and names. How each is stored in
//! HDF5 is `platform::hdf5::types`.

use crate::status::{fail, Result, H5TILE_ERR_DTYPE};
use std::ffi::c_int;

/// Element type codes of the C API (`H5TILE_BOOL` … `H5TILE_COMPLEX128`).
#[allow(non_camel_case_types)]
pub type h5tile_dtype = c_int;

/// C `bool` (one byte, 0 or 1), stored as h5py's enum.
pub const H5TILE_BOOL: h5tile_dtype = 0;
pub const H5TILE_INT8: h5tile_dtype = 1;
pub const H5TILE_INT16: h5tile_dtype = 2;
pub const H5TILE_INT32: h5tile_dtype = 3;
pub const H5TILE_INT64: h5tile_dtype = 4;
pub const H5TILE_UINT8: h5tile_dtype = 5;
pub const H5TILE_UINT16: h5tile_dtype = 6;
pub const H5TILE_UINT32: h5tile_dtype = 7;
pub const H5TILE_UINT64: h5tile_dtype = 8;
/// IEEE 754 half precision (`_Float16`), two bytes.
pub const H5TILE_FLOAT16: h5tile_dtype = 9;
pub const H5TILE_FLOAT32: h5tile_dtype = 10;
pub const H5TILE_FLOAT64: h5tile_dtype = 11;
/// `float _Complex`: two float32, real part first.
pub const H5TILE_COMPLEX64: h5tile_dtype = 12;
/// `double _Complex`: two float64, real part first.
pub const H5TILE_COMPLEX128: h5tile_dtype = 13;

/// An element type, in the order of the C codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dtype {
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float16,
    Float32,
    Float64,
    Complex64,
    Complex128,
}

use Dtype::*;

impl Dtype {
    /// cbindgen:ignore
    pub const ALL: [Dtype; 14] = [
        Bool, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64, Float16, Float32, Float64,
        Complex64, Complex128,
    ];

    /// The type with C code `code`, if any.
    pub fn from_c(code: h5tile_dtype) -> Option<Dtype> {
        usize::try_from(code)
            .ok()
            .and_then(|i| Dtype::ALL.get(i).copied())
    }

    /// Like `from_c`, with the `H5TILE_ERR_DTYPE` the C API returns for an unknown code.
    pub fn parse(code: h5tile_dtype) -> Result<Dtype> {
        Dtype::from_c(code).map_or_else(
            || {
                fail(
                    H5TILE_ERR_DTYPE,
                    format!("unknown element type code {code} (valid: 0..=13)"),
                )
            },
            Ok,
        )
    }

    pub fn code(self) -> h5tile_dtype {
        self as h5tile_dtype
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Bool | Int8 | UInt8 => 1,
            Int16 | UInt16 | Float16 => 2,
            Int32 | UInt32 | Float32 => 4,
            Int64 | UInt64 | Float64 | Complex64 => 8,
            Complex128 => 16,
        }
    }

    /// The numpy-style name used in messages.
    pub fn name(self) -> &'static str {
        match self {
            Bool => "bool",
            Int8 => "int8",
            Int16 => "int16",
            Int32 => "int32",
            Int64 => "int64",
            UInt8 => "uint8",
            UInt16 => "uint16",
            UInt32 => "uint32",
            UInt64 => "uint64",
            Float16 => "float16",
            Float32 => "float32",
            Float64 => "float64",
            Complex64 => "complex64",
            Complex128 => "complex128",
        }
    }
}

/// What a value of a type is, for numpy's casting rules: its kind and bits (a complex type's
/// bits are those of each part).
#[derive(Clone, Copy)]
enum Kind {
    Bool,
    Signed(u32),
    Unsigned(u32),
    Float(u32),
    Complex(u32),
}

impl Dtype {
    fn kind(self) -> Kind {
        let bits = 8 * self.size() as u32;
        match self {
            Bool => Kind::Bool,
            Int8 | Int16 | Int32 | Int64 => Kind::Signed(bits),
            UInt8 | UInt16 | UInt32 | UInt64 => Kind::Unsigned(bits),
            Float16 | Float32 | Float64 => Kind::Float(bits),
            Complex64 | Complex128 => Kind::Complex(bits / 2),
        }
    }

    /// Whether every value of `self` converts to `to` without loss, as numpy's
    /// `np.can_cast(self, to, "safe")` says (int64 to float64 included, as there). Any other
    /// conversion narrows: float to integer, wider to narrower, signed to unsigned, complex to
    /// real, anything but bool to bool.
    pub fn casts_safely_to(self, to: Dtype) -> bool {
        use Kind::*;
        match (self.kind(), to.kind()) {
            _ if self == to => true,
            (Bool, _) => true,
            (Signed(a), Signed(b)) | (Unsigned(a), Unsigned(b)) => b >= a,
            (Unsigned(a), Signed(b)) => b > a,
            // A float of more bits holds every integer of fewer; numpy allows 64 to 64 too.
            (Signed(a) | Unsigned(a), Float(b) | Complex(b)) => b > a || b == 64,
            (Float(a), Float(b) | Complex(b)) | (Complex(a), Complex(b)) => b >= a,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// numpy's table (`np.can_cast(a, b, "safe")` for the 14 types), row by
    /// row in `Dtype::ALL`'s order: '1' where the cast is safe (printed by numpy 2.4.6).
    #[test]
    fn safe_casts_are_numpys() {
        const TABLE: [&str; 14] = [
            "11111111111111", // bool
            "01111000011111", // int8
            "00111000001111", // int16
            "00011000000101", // int32
            "00001000000101", // int64
            "00111111111111", // uint8
            "00011011101111", // uint16
            "00001001100101", // uint32
            "00000000100101", // uint64
            "00000000011111", // float16
            "00000000001111", // float32
            "00000000000101", // float64
            "00000000000011", // complex64
            "00000000000001", // complex128
        ];
        for (i, from) in Dtype::ALL.iter().enumerate() {
            for (j, to) in Dtype::ALL.iter().enumerate() {
                let want = TABLE[i].as_bytes()[j] == b'1';
                assert_eq!(
                    from.casts_safely_to(*to),
                    want,
                    "{} to {}",
                    from.name(),
                    to.name()
                );
            }
        }
    }

    #[test]
    fn codes_map_both_ways() {
        for (i, d) in Dtype::ALL.iter().enumerate() {
            assert_eq!(d.code(), i as c_int);
            assert_eq!(Dtype::from_c(i as c_int), Some(*d));
        }
        assert_eq!(Dtype::from_c(-1), None);
        assert_eq!(Dtype::from_c(14), None);
        assert_eq!(Dtype::parse(14).unwrap_err().status, H5TILE_ERR_DTYPE);
        assert_eq!(Dtype::from_c(H5TILE_COMPLEX128), Some(Complex128));
    }
}
