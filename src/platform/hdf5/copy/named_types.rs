//! Named datatypes copied first, once each, so that whatever used one in the source uses its
//! copy (`NamedTypes`).

use super::ObjectKey;
use crate::platform::hdf5::handle::Object;
use crate::platform::hdf5::{check, cstr, File, Handle, Plist, Type};
use crate::status::Result;
use hdf5_sys::h5::{herr_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5d::H5Dget_type;
use hdf5_sys::h5g::H5Gcreate2;
use hdf5_sys::h5i::{hid_t, H5I_type_t, H5Iget_type};
use hdf5_sys::h5l::H5Lexists;
use hdf5_sys::h5o::{
    H5O_info2_t, H5O_mcdt_search_ret_t, H5O_type_t, H5Ocopy, H5Oget_info3, H5Ovisit3,
    H5O_COPY_MERGE_COMMITTED_DTYPE_FLAG, H5O_COPY_WITHOUT_ATTR_FLAG, H5O_INFO_BASIC,
};
use hdf5_sys::h5p::*;
use hdf5_sys::h5t::{H5Tcommitted, H5Topen2};
use std::collections::HashMap;
use std::ffi::{c_char, c_void, CStr};

/// The named datatypes of a source file, copied into the destination ahead of everything else,
/// each once, into a temporary group of its root: an object copied or made later that uses one
/// (as its type or an attribute's) uses that copy, which takes the named datatype's own names
/// as the copy reaches them (`File::make_link`). `remove` takes the temporary group away.
#[derive(Debug, Default)]
pub struct NamedTypes {
    /// The temporary group's path; None when the source has no named datatypes.
    group: Option<String>,
    /// Where the copy of each named datatype of the source (by its key there) is.
    copies: HashMap<ObjectKey, String>,
}

impl NamedTypes {
    /// The path in the destination of the copy of the source's named datatype `key`.
    pub fn copy_of(&self, key: &ObjectKey) -> Option<&str> {
        self.copies.get(key).map(String::as_str)
    }

    /// Removes the temporary group from `dst`: the copies linked under their own names stay.
    pub fn remove(&self, dst: &File) -> Result<()> {
        match &self.group {
            Some(group) => dst.unlink(group),
            None => Ok(()),
        }
    }

    /// Object copy properties: attributes are left out (`File::copy_attributes` copies them),
    /// and an object whose type is the source's named datatype `used` uses its copy, matched
    /// with that copy alone (never with an equal type found elsewhere in the destination,
    /// which may be another named datatype).
    pub(super) fn copy_properties(&self, used: Option<&ObjectKey>) -> Result<Plist> {
        unsafe extern "C" fn search_no_further(_data: *mut c_void) -> H5O_mcdt_search_ret_t {
            H5O_mcdt_search_ret_t::H5O_MCDT_SEARCH_STOP
        }
        let what = || "cannot set the object copy properties".to_string();
        let ocpypl = Plist::create(*H5P_CLS_OBJECT_COPY)?;
        let copy = used.and_then(|k| self.copy_of(k));
        let flags = match copy {
            Some(_) => H5O_COPY_WITHOUT_ATTR_FLAG | H5O_COPY_MERGE_COMMITTED_DTYPE_FLAG,
            None => H5O_COPY_WITHOUT_ATTR_FLAG,
        };
        check(unsafe { H5Pset_copy_object(ocpypl.id(), flags) }, what)?;
        if let Some(copy) = copy {
            let c = cstr(copy);
            let (id, none) = (ocpypl.id(), std::ptr::null_mut());
            check(
                unsafe { H5Padd_merge_committed_dtype_path(id, c.as_ptr()) },
                what,
            )?;
            check(
                unsafe { H5Pset_mcdt_search_cb(id, Some(search_no_further), none) },
                what,
            )?;
        }
        Ok(ocpypl)
    }
}

/// The key of the object `info` describes.
pub(super) fn key_of(info: &H5O_info2_t) -> ObjectKey {
    // SAFETY: a token is 16 opaque bytes (H5O_MAX_TOKEN_SIZE); the size is checked here.
    let token: [u8; 16] = unsafe { std::mem::transmute(info.token) };
    ObjectKey(token)
}

/// The key of the named datatype `dtype` is (one of a file's, or a dataset's or attribute's
/// type that is one); None for any other type.
pub(super) fn named_type_key(dtype: &Type) -> Result<Option<ObjectKey>> {
    let what = || "cannot tell whether a datatype is a named datatype".to_string();
    if check(unsafe { H5Tcommitted(dtype.id()) }, what)? == 0 {
        return Ok(None);
    }
    let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
    check(
        unsafe { H5Oget_info3(dtype.id(), &mut info, H5O_INFO_BASIC) },
        what,
    )?;
    Ok(Some(key_of(&info)))
}

impl File {
    /// Copies every named datatype of this file (each once, however many names it has) into
    /// `dst`, in a temporary group of its root with a name no link of this file's root has:
    /// see `NamedTypes`.
    pub fn copy_named_types(&self, dst: &File) -> Result<NamedTypes> {
        extern "C" fn collect(
            _obj: hid_t,
            name: *const c_char,
            info: *const H5O_info2_t,
            data: *mut c_void,
        ) -> herr_t {
            // SAFETY: HDF5 passes the info and name of the object visited, and our `data`.
            let (info, found) = unsafe { (&*info, &mut *(data as *mut Vec<(String, ObjectKey)>)) };
            if info.type_ == H5O_type_t::H5O_TYPE_NAMED_DATATYPE && !name.is_null() {
                let name = unsafe { CStr::from_ptr(name) }.to_string_lossy();
                found.push((format!("/{name}"), key_of(info)));
            }
            0
        }
        let _l = crate::platform::hdf5::lock();
        let mut found: Vec<(String, ObjectKey)> = Vec::new();
        let visited = unsafe {
            H5Ovisit3(
                self.id(),
                H5_index_t::H5_INDEX_NAME,
                H5_iter_order_t::H5_ITER_INC,
                Some(collect),
                &mut found as *mut Vec<(String, ObjectKey)> as *mut c_void,
                H5O_INFO_BASIC,
            )
        };
        check(visited, || "cannot list the named datatypes".into())?;
        if found.is_empty() {
            return Ok(NamedTypes::default());
        }
        let mut group = "/.h5tile_pack_named_types".to_string();
        while self.has_link(&group)? {
            group.push('_');
        }
        let what = || format!("cannot create the temporary group '{group}'");
        let c = cstr(&group);
        let (d, p) = (H5P_DEFAULT, H5P_DEFAULT);
        Object::from_id(unsafe { H5Gcreate2(dst.id(), c.as_ptr(), d, p, p) }, what)?;
        let mut copies = HashMap::new();
        for (k, (path, key)) in found.into_iter().enumerate() {
            let to = format!("{group}/{k}");
            let (from, c) = (cstr(&path), cstr(&to));
            check(
                unsafe { H5Ocopy(self.id(), from.as_ptr(), dst.id(), c.as_ptr(), d, d) },
                || format!("cannot copy the named datatype '{path}'"),
            )?;
            copies.insert(key, to);
        }
        Ok(NamedTypes {
            group: Some(group),
            copies,
        })
    }

    /// Opens the named datatype at `path`.
    pub(super) fn open_type(&self, path: &str) -> Result<Type> {
        let _l = crate::platform::hdf5::lock();
        let c = cstr(path);
        let id = unsafe { H5Topen2(self.id(), c.as_ptr(), H5P_DEFAULT) };
        Type::from_id(id, || format!("cannot open the named datatype '{path}'"))
    }

    /// Whether this file has a link at `path` (its groups on the way there).
    pub(super) fn has_link(&self, path: &str) -> Result<bool> {
        let _l = crate::platform::hdf5::lock();
        let c = cstr(path);
        let found = unsafe { H5Lexists(self.id(), c.as_ptr(), H5P_DEFAULT) };
        check(found, || format!("cannot look for '{path}'")).map(|f| f > 0)
    }

    /// The named datatype that object `name` (a dataset) is of; None for any other object.
    pub(super) fn named_type_of(&self, name: &str) -> Result<Option<ObjectKey>> {
        let _l = crate::platform::hdf5::lock();
        let object = self.object(name)?;
        if unsafe { H5Iget_type(object.id()) } != H5I_type_t::H5I_DATASET {
            return Ok(None);
        }
        let dtype = Type::from_id(unsafe { H5Dget_type(object.id()) }, || {
            format!("cannot read the datatype of '{name}'")
        })?;
        named_type_key(&dtype)
    }
}
