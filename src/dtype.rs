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

#[cfg(test)]
mod tests {
    use super::*;

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
