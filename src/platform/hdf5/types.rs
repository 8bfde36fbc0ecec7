//! How each element type of the C API is stored in HDF5: native byte order, bool as h5py's
//! enum `{FALSE=0, TRUE=1}` over int8, complex as h5py's compound `{r, i}`, float16 as the IEEE
//! half type h5py writes, so that h5py, Legate and plain HDF5 tools read them; and which element
//! type a dataset's HDF5 type holds.

use super::{check, lock, Handle, Type};
use crate::dtype::Dtype::{self, *};
use crate::status::{fail, Result, H5TILE_ERR_DTYPE};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5t::*;
use std::ffi::CStr;

impl Dtype {
    /// The HDF5 type used both in memory and in files written by h5tile.
    pub fn hdf5_type(self) -> Result<Type> {
        let _l = lock();
        let native = |id: &hid_t| Type::copy(*id);
        match self {
            Int8 => native(H5T_NATIVE_INT8),
            Int16 => native(H5T_NATIVE_INT16),
            Int32 => native(H5T_NATIVE_INT32),
            Int64 => native(H5T_NATIVE_INT64),
            UInt8 => native(H5T_NATIVE_UINT8),
            UInt16 => native(H5T_NATIVE_UINT16),
            UInt32 => native(H5T_NATIVE_UINT32),
            UInt64 => native(H5T_NATIVE_UINT64),
            Float32 => native(H5T_NATIVE_FLOAT),
            Float64 => native(H5T_NATIVE_DOUBLE),
            Float16 => half(),
            Bool => bool_enum(),
            Complex64 => complex(H5T_NATIVE_FLOAT, 4),
            Complex128 => complex(H5T_NATIVE_DOUBLE, 8),
        }
    }

    /// The element type a dataset of HDF5 type `t` holds where `t` is exactly h5tile's own type
    /// for it (this machine's byte order and layout): its bytes can be delivered as they are.
    pub fn stored_as_is(t: &Type) -> Option<Dtype> {
        Dtype::of_hdf5(t)
            .ok()
            .filter(|d| d.hdf5_type().is_ok_and(|own| own.equal(t)))
    }

    /// The element type a dataset of HDF5 type `t` holds, or `H5TILE_ERR_DTYPE` when it is none
    /// of the 14 (strings, references, other enums and compounds …).
    pub fn of_hdf5(t: &Type) -> Result<Dtype> {
        let _l = lock();
        let size = t.size();
        let found = match t.class() {
            H5T_class_t::H5T_INTEGER => {
                let signed = unsafe { H5Tget_sign(t.id()) } != H5T_sign_t::H5T_SGN_NONE;
                match (size, signed) {
                    (1, true) => Some(Int8),
                    (2, true) => Some(Int16),
                    (4, true) => Some(Int32),
                    (8, true) => Some(Int64),
                    (1, false) => Some(UInt8),
                    (2, false) => Some(UInt16),
                    (4, false) => Some(UInt32),
                    (8, false) => Some(UInt64),
                    _ => None,
                }
            }
            H5T_class_t::H5T_FLOAT => match size {
                2 => Some(Float16),
                4 => Some(Float32),
                8 => Some(Float64),
                _ => None,
            },
            H5T_class_t::H5T_ENUM if size == 1 && member_names(t) == ["FALSE", "TRUE"] => {
                Some(Bool)
            }
            H5T_class_t::H5T_COMPOUND if is_complex_compound(t) => match size {
                8 => Some(Complex64),
                16 => Some(Complex128),
                _ => None,
            },
            // HDF5 2.x has a native complex class (H5T_COMPLEX = 11).
            c if c as i32 == 11 => match size {
                8 => Some(Complex64),
                16 => Some(Complex128),
                _ => None,
            },
            _ => None,
        };
        found.map_or_else(
            || {
                fail(
                    H5TILE_ERR_DTYPE,
                    format!(
                        "HDF5 type (class {:?}, {size} bytes) is none of h5tile's element types",
                        t.class()
                    ),
                )
            },
            Ok,
        )
    }
}

impl Type {
    /// A short name for the type: h5tile's name for one of its element types ("float64"),
    /// else HDF5's class and size ("string (12 B)", "variable-length string",
    /// "compound (24 B)").
    pub fn describe(&self) -> String {
        let _l = lock();
        if let Ok(d) = Dtype::of_hdf5(self) {
            return d.name().to_string();
        }
        if unsafe { H5Tis_variable_str(self.id()) } > 0 {
            return "variable-length string".into();
        }
        let class = match self.class() {
            H5T_class_t::H5T_INTEGER => "integer",
            H5T_class_t::H5T_FLOAT => "float",
            H5T_class_t::H5T_TIME => "time",
            H5T_class_t::H5T_STRING => "string",
            H5T_class_t::H5T_BITFIELD => "bitfield",
            H5T_class_t::H5T_OPAQUE => "opaque",
            H5T_class_t::H5T_COMPOUND => "compound",
            H5T_class_t::H5T_REFERENCE => "reference",
            H5T_class_t::H5T_ENUM => "enum",
            H5T_class_t::H5T_VLEN => "variable-length sequence",
            H5T_class_t::H5T_ARRAY => "array",
            _ => "type",
        };
        format!("{class} ({} B)", self.size())
    }
}

/// IEEE half precision, built the way h5py builds it (readable by HDF5 versions without a
/// predefined float16).
fn half() -> Result<Type> {
    let t = Type::copy(*H5T_IEEE_F32LE)?;
    let what = || "cannot build float16 type".to_string();
    unsafe {
        check(H5Tset_fields(t.id(), 15, 10, 5, 0, 10), what)?;
        check(H5Tset_size(t.id(), 2), what)?;
        check(H5Tset_ebias(t.id(), 15), what)?;
    }
    Ok(t)
}

fn bool_enum() -> Result<Type> {
    let t = Type::from_id(unsafe { H5Tenum_create(*H5T_NATIVE_INT8) }, || {
        "cannot build bool enum".into()
    })?;
    for (name, value) in [(c"FALSE", 0i8), (c"TRUE", 1i8)] {
        check(
            unsafe { H5Tenum_insert(t.id(), name.as_ptr(), &value as *const i8 as *const _) },
            || "cannot build bool enum".into(),
        )?;
    }
    Ok(t)
}

fn complex(part: &hid_t, part_size: usize) -> Result<Type> {
    let what = || "cannot build complex compound".to_string();
    let t = Type::from_id(
        unsafe { H5Tcreate(H5T_class_t::H5T_COMPOUND, 2 * part_size) },
        what,
    )?;
    check(unsafe { H5Tinsert(t.id(), c"r".as_ptr(), 0, *part) }, what)?;
    check(
        unsafe { H5Tinsert(t.id(), c"i".as_ptr(), part_size, *part) },
        what,
    )?;
    Ok(t)
}

/// Member names of an enum or compound type, in order.
fn member_names(t: &Type) -> Vec<String> {
    let n = unsafe { H5Tget_nmembers(t.id()) }.max(0) as u32;
    (0..n)
        .map(|i| unsafe {
            let p = H5Tget_member_name(t.id(), i);
            if p.is_null() {
                return String::new();
            }
            let s = CStr::from_ptr(p).to_string_lossy().into_owned();
            hdf5_sys::h5::H5free_memory(p as *mut _);
            s
        })
        .collect()
}

/// h5py's complex layout: a compound of two floats of one size named `r` and `i`.
fn is_complex_compound(t: &Type) -> bool {
    if member_names(t) != ["r", "i"] {
        return false;
    }
    let fields: Vec<(H5T_class_t, usize)> = (0..2)
        .map(|i| {
            let id = unsafe { H5Tget_member_type(t.id(), i) };
            match Type::from_id(id, String::new) {
                Ok(m) => (m.class(), m.size()),
                Err(_) => (H5T_class_t::H5T_NO_CLASS, 0),
            }
        })
        .collect();
    fields[0].0 == H5T_class_t::H5T_FLOAT && fields[0] == fields[1]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hdf5_types_have_the_element_size_and_classify_back() {
        for d in Dtype::ALL {
            let t = d.hdf5_type().unwrap();
            assert_eq!(t.size(), d.size(), "{}", d.name());
            assert_eq!(Dtype::of_hdf5(&t).unwrap(), d, "{}", d.name());
        }
    }

    #[test]
    fn other_types_are_rejected_with_dtype_status() {
        let _l = lock();
        let s = Type::copy(*H5T_C_S1).unwrap();
        assert_eq!(Dtype::of_hdf5(&s).unwrap_err().status, H5TILE_ERR_DTYPE);
        let e = Type::from_id(unsafe { H5Tenum_create(*H5T_NATIVE_INT8) }, String::new).unwrap();
        assert_eq!(Dtype::of_hdf5(&e).unwrap_err().status, H5TILE_ERR_DTYPE);
    }

    #[test]
    fn types_describe_themselves() {
        assert_eq!(Float16.hdf5_type().unwrap().describe(), "float16");
        let _l = lock();
        let s = Type::copy(*H5T_C_S1).unwrap();
        assert_eq!(s.describe(), "string (1 B)");
    }

    #[test]
    fn conversion_paths_follow_hdf5() {
        let f64t = Float64.hdf5_type().unwrap();
        let i32t = Int32.hdf5_type().unwrap();
        let c64 = Complex64.hdf5_type().unwrap();
        let c128 = Complex128.hdf5_type().unwrap();
        assert!(i32t.converts_to(&f64t));
        assert!(Float16.hdf5_type().unwrap().converts_to(&f64t));
        assert!(c64.converts_to(&c128));
        assert!(!c64.converts_to(&f64t));
    }
}
