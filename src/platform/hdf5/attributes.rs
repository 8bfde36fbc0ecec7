//! Attributes a user stores with a checkpoint, on the file, a group or a dataset: numbers as
//! a scalar (one value) or a one-dimensional array of one of the 14 element types, text as a scalar variable-length
//! UTF-8 string (what h5py writes for a `str`, and reads back as one).

use super::handle::Object;
use super::{check, cstr, lock, File, Handle, Plist, Space, Type};
use crate::dtype::Dtype;
use crate::status::*;
use hdf5_sys::h5a::*;
use hdf5_sys::h5g::H5Gcreate2;
use hdf5_sys::h5o::H5Oopen;
use hdf5_sys::h5p::{H5P_CLS_LINK_CREATE, H5P_DEFAULT};
use hdf5_sys::h5t::*;
use std::ffi::c_void;

/// What an attribute holds.
#[derive(Clone, Debug, PartialEq)]
pub enum AttributeValue {
    /// `bytes.len() / dtype.size()` elements of `dtype`, in native order.
    Numbers {
        dtype: Dtype,
        bytes: Vec<u8>,
    },
    Text(String),
}

impl File {
    /// Removes attribute `name` of `object` (a group or dataset path).
    #[cfg(any(test, feature = "internals"))]
    pub fn delete_attribute(&self, object: &str, name: &str) -> Result<()> {
        let _l = lock();
        let (o, n) = (cstr(object), cstr(name));
        let id = unsafe { H5Adelete_by_name(self.id(), o.as_ptr(), n.as_ptr(), H5P_DEFAULT) };
        check(id, || {
            format!("cannot delete attribute '{name}' of '{object}'")
        })
        .map(|_| ())
    }

    /// Sets attribute `name` of `object` ("/" for the file, or a group or dataset path) to
    /// `value`, replacing one of that name; a missing group on the path is created.
    pub fn set_attribute(&self, object: &str, name: &str, value: &AttributeValue) -> Result<()> {
        let _l = lock();
        let what = || format!("cannot set attribute '{name}' of '{object}'");
        let target = self
            .object_or_new_group(object)
            .map_err(|e| e.context(&what()))?;
        let c = cstr(name);
        if unsafe { H5Aexists(target.id(), c.as_ptr()) } > 0 {
            check(unsafe { H5Adelete(target.id(), c.as_ptr()) }, what)?;
        }
        let (dtype, space, text);
        let data: *const c_void = match value {
            AttributeValue::Numbers { dtype: d, bytes } => {
                dtype = d.hdf5_type()?;
                // One value is a scalar, as h5py stores `attrs["step"] = 100`.
                space = match bytes.len() / d.size() {
                    1 => Space::scalar()?,
                    n => Space::simple(&[n as u64])?,
                };
                bytes.as_ptr().cast()
            }
            AttributeValue::Text(s) => {
                dtype = utf8_string()?;
                space = Space::scalar()?;
                text = [cstr(s)];
                text.as_ptr().cast()
            }
        };
        let id = unsafe {
            H5Acreate2(
                target.id(),
                c.as_ptr(),
                dtype.id(),
                space.id(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        let attr = super::Attribute::from_id(id, what)?;
        check(unsafe { H5Awrite(attr.id(), dtype.id(), data) }, what).map(|_| ())
    }

    /// Attribute `name` of `object` as `count` elements of `dtype` (HDF5 converting them), or
    /// `NOT_FOUND` (no such object or attribute), `DTYPE` (text, or a type that does not
    /// convert), `SHAPE` (it holds another number of elements).
    pub fn attribute_values(
        &self,
        object: &str,
        name: &str,
        dtype: Dtype,
        count: usize,
    ) -> Result<Vec<u8>> {
        let _l = lock();
        let path = self.name();
        let Some(_) = self.object_kind(object)? else {
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("no object '{object}' in '{path}'"),
            );
        };
        let target = self.open_object(object)?;
        let c = cstr(name);
        if unsafe { H5Aexists(target.id(), c.as_ptr()) } <= 0 {
            super::take_error_stack();
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("no attribute '{name}' on '{object}' in '{path}'"),
            );
        }
        let what = || format!("cannot read attribute '{name}' of '{object}' in '{path}'");
        let attr = super::Attribute::from_id(
            unsafe { H5Aopen(target.id(), c.as_ptr(), H5P_DEFAULT) },
            what,
        )?;
        let stored = Type::from_id(unsafe { H5Aget_type(attr.id()) }, what)?;
        let mem = dtype.hdf5_type()?;
        if stored.class() == H5T_class_t::H5T_STRING || !stored.converts_to(&mem) {
            return fail(
                H5TILE_ERR_DTYPE,
                format!(
                    "attribute '{name}' of '{object}' in '{path}' cannot be read as {}",
                    dtype.name()
                ),
            );
        }
        let space = Space::from_id(unsafe { H5Aget_space(attr.id()) }, what)?;
        let held = space.points()?;
        if held != count as u64 {
            return fail(
                H5TILE_ERR_SHAPE,
                format!(
                    "attribute '{name}' of '{object}' in '{path}' holds {held} values, not {count}"
                ),
            );
        }
        let mut bytes = vec![0u8; count * dtype.size()];
        check(
            unsafe { H5Aread(attr.id(), mem.id(), bytes.as_mut_ptr().cast()) },
            what,
        )?;
        Ok(bytes)
    }

    fn open_object(&self, object: &str) -> Result<Object> {
        let c = cstr(object);
        Object::from_id(
            unsafe { H5Oopen(self.id(), c.as_ptr(), H5P_DEFAULT) },
            || format!("cannot open '{object}'"),
        )
    }

    /// `object`, opened; a group made (with its parents) when nothing has its path.
    fn object_or_new_group(&self, object: &str) -> Result<Object> {
        if object == "/" || self.object_kind(object)?.is_some() {
            return self.open_object(object);
        }
        // A parent that is not a group makes HDF5 fail, naming it.
        let lcpl = Plist::create(*H5P_CLS_LINK_CREATE)?;
        check(
            unsafe { hdf5_sys::h5p::H5Pset_create_intermediate_group(lcpl.id(), 1) },
            || "cannot set intermediate group creation".into(),
        )?;
        let c = cstr(object);
        let id = unsafe { H5Gcreate2(self.id(), c.as_ptr(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT) };
        Object::from_id(id, || format!("cannot create group '{object}'"))
    }
}

/// The variable-length UTF-8 string type h5py gives a `str` attribute.
fn utf8_string() -> Result<Type> {
    let t = Type::copy(*H5T_C_S1)?;
    let what = || "cannot make a string type".to_string();
    check(unsafe { H5Tset_size(t.id(), H5T_VARIABLE) }, what)?;
    check(
        unsafe { H5Tset_cset(t.id(), H5T_cset_t::H5T_CSET_UTF8) },
        what,
    )?;
    Ok(t)
}

/// The text of a variable-length string attribute, for tests.
#[cfg(test)]
pub(crate) fn read_text(file: &File, object: &str, name: &str) -> Result<String> {
    let _l = lock();
    let target = file.open_object(object)?;
    let c = cstr(name);
    let what = || format!("cannot read attribute '{name}'");
    let attr = super::Attribute::from_id(
        unsafe { H5Aopen(target.id(), c.as_ptr(), H5P_DEFAULT) },
        what,
    )?;
    let t = utf8_string()?;
    let mut p: *mut std::ffi::c_char = std::ptr::null_mut();
    check(
        unsafe {
            H5Aread(
                attr.id(),
                t.id(),
                (&mut p as *mut *mut std::ffi::c_char).cast(),
            )
        },
        what,
    )?;
    let s = unsafe { std::ffi::CStr::from_ptr(p) }
        .to_string_lossy()
        .into_owned();
    unsafe { hdf5_sys::h5::H5free_memory(p.cast()) };
    Ok(s)
}
