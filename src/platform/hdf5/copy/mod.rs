//! Copying a file's objects into another file, as `h5tile pack` does: a group's links listed
//! (hard, soft, external) and made again, objects copied whole by `H5Ocopy`, groups made with
//! their creation properties, attributes copied one by one (some left out), and the stand-in
//! for a virtual dataset: a dataset of its type, shape and fill value, contiguous or chunked
//! and compressed, written box by box. Named datatypes are copied first, once each (`NamedTypes`): whatever used one in
//! the source uses its copy.

//!
//! `named_types` copies the named datatypes, `packed` makes and writes the stand-ins; here
//! the links, objects, groups and attributes.

mod named_types;
mod packed;
#[cfg(test)]
mod tests;

pub use named_types::NamedTypes;
use named_types::{key_of, named_type_key};

use super::handle::Object;
use super::relocate::{attribute_names, copy_attribute, creation_order_tracked};
use super::{check, cstr, Attribute, Dataset, File, Handle, ObjectKind, Plist, Type};
use crate::status::Result;
use hdf5_sys::h5::{herr_t, hsize_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5a::{H5Aget_type, H5Aopen};
use hdf5_sys::h5f::{H5F_libver_t, H5F_LIBVER_LATEST};
use hdf5_sys::h5g::{H5Gcreate2, H5Gget_create_plist};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5l::{
    H5L_info2_t, H5L_type_t, H5Lcreate_external, H5Lcreate_hard, H5Lcreate_soft, H5Lget_val,
    H5Literate2, H5Lunpack_elink_val,
};
use hdf5_sys::h5o::{
    H5O_info2_t, H5O_type_t, H5Ocopy, H5Oget_info_by_name3, H5Oopen, H5O_INFO_BASIC,
};
use hdf5_sys::h5p::*;
use hdf5_sys::h5t::{H5T_class_t, H5T_cset_t, H5Tdetect_class};
use std::ffi::{c_char, c_void, CStr};
use std::path::Path;

/// An object of a file, the same for every hard link to it (its token in the file).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ObjectKey([u8; 16]);

/// Where a link leads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkTarget {
    /// An object of the file (a hard link).
    Object(ObjectKind, ObjectKey),
    /// A soft link: this path in the file.
    Soft(String),
    /// An external link: this object in this file, as the link names them.
    External { file: String, object: String },
    /// A user-defined link type, which cannot be made again here.
    UserDefined,
}

/// One link of a group.
#[derive(Clone, Debug)]
pub struct Link {
    /// Its path from the root ("/group/name").
    pub path: String,
    pub target: LinkTarget,
    /// The name is UTF-8 (else ASCII): its copy says so too.
    utf8: bool,
}

/// Link creation properties: intermediate groups are not made (a copy makes them first), the
/// name's character set is `link`'s.
fn link_create(link: Option<&Link>) -> Result<Plist> {
    let lcpl = Plist::create(*H5P_CLS_LINK_CREATE)?;
    if link.is_some_and(|l| l.utf8) {
        check(
            unsafe { H5Pset_char_encoding(lcpl.id(), H5T_cset_t::H5T_CSET_UTF8) },
            || "cannot set a link name's character set".into(),
        )?;
    }
    Ok(lcpl)
}

/// The creation properties of group `name` of `file`.
fn group_create_plist(file: &File, name: &str) -> Result<Plist> {
    let group = file.object(name)?;
    Plist::from_id(unsafe { H5Gget_create_plist(group.id()) }, || {
        format!("cannot read the creation properties of group '{name}'")
    })
}

/// The link order and attribute order tracking of group creation properties `from`, onto
/// `to` (group or file creation properties).
fn copy_orders(from: &Plist, to: &Plist, name: &str) -> Result<()> {
    let what = || format!("cannot copy the creation order settings of '{name}'");
    let (mut links, mut attributes) = (0, 0);
    unsafe {
        check(H5Pget_link_creation_order(from.id(), &mut links), what)?;
        check(H5Pset_link_creation_order(to.id(), links), what)?;
        check(H5Pget_attr_creation_order(from.id(), &mut attributes), what)?;
        check(H5Pset_attr_creation_order(to.id(), attributes), what)?;
    }
    Ok(())
}

impl File {
    /// Creates (truncating) the file at `path` to receive the objects of `like`: its root group
    /// tracks link and attribute creation order as `like`'s does; objects are written in the
    /// HDF5 1.8 format or later (large attributes go to dense storage).
    pub fn create_for_copy(path: &Path, like: &File) -> Result<File> {
        let _l = super::lock();
        let fcpl = Plist::create(*H5P_CLS_FILE_CREATE)?;
        copy_orders(&group_create_plist(like, "/")?, &fcpl, "/")?;
        let fapl = Plist::create(*H5P_CLS_FILE_ACCESS)?;
        let (low, high) = (H5F_libver_t::H5F_LIBVER_V18, H5F_LIBVER_LATEST);
        check(
            unsafe { H5Pset_libver_bounds(fapl.id(), low, high) },
            || "cannot set the file format versions of a copy".into(),
        )?;
        File::create_as(path, &fcpl, &fapl)
    }

    /// Opens the object at `name` (any kind).
    pub fn object(&self, name: &str) -> Result<Object> {
        let _l = super::lock();
        let c = cstr(name);
        Object::from_id(
            unsafe { H5Oopen(self.id(), c.as_ptr(), H5P_DEFAULT) },
            || format!("cannot open '{name}'"),
        )
    }

    /// The object at `name`: its kind and the key its every hard link shares.
    pub fn object_key(&self, name: &str) -> Result<(ObjectKind, ObjectKey)> {
        let _l = super::lock();
        let c = cstr(name);
        let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
        check(
            unsafe {
                H5Oget_info_by_name3(
                    self.id(),
                    c.as_ptr(),
                    &mut info,
                    H5O_INFO_BASIC,
                    H5P_DEFAULT,
                )
            },
            || format!("cannot inspect '{name}'"),
        )?;
        let kind = match info.type_ {
            H5O_type_t::H5O_TYPE_GROUP => ObjectKind::Group,
            H5O_type_t::H5O_TYPE_DATASET => ObjectKind::Dataset,
            H5O_type_t::H5O_TYPE_NAMED_DATATYPE => ObjectKind::NamedType,
            _ => ObjectKind::Other,
        };
        Ok((kind, key_of(&info)))
    }

    /// The links of group `group`, in creation order where the group tracks it, else in name
    /// order. External links are not followed.
    pub fn links(&self, group: &str) -> Result<Vec<Link>> {
        unsafe extern "C" fn collect(
            _group: hid_t,
            name: *const c_char,
            info: *const H5L_info2_t,
            data: *mut c_void,
        ) -> herr_t {
            let found = &mut *(data as *mut Vec<(String, H5L_info2_t)>);
            found.push((CStr::from_ptr(name).to_string_lossy().into_owned(), *info));
            0
        }
        let _l = super::lock();
        let what = || format!("cannot list the links of group '{group}'");
        let g = self.object(group)?;
        let list = |index| {
            let mut found: Vec<(String, H5L_info2_t)> = Vec::new();
            let mut at: hsize_t = 0;
            let listed = unsafe {
                H5Literate2(
                    g.id(),
                    index,
                    H5_iter_order_t::H5_ITER_INC,
                    &mut at,
                    Some(collect),
                    &mut found as *mut Vec<(String, H5L_info2_t)> as *mut c_void,
                )
            };
            check(listed, what).map(|_| found)
        };
        let mut order = 0;
        let gcpl = group_create_plist(self, group)?;
        check(
            unsafe { H5Pget_link_creation_order(gcpl.id(), &mut order) },
            what,
        )?;
        let found = match order & H5P_CRT_ORDER_TRACKED != 0 {
            true => list(H5_index_t::H5_INDEX_CRT_ORDER)?,
            false => list(H5_index_t::H5_INDEX_NAME)?,
        };
        let prefix = group.trim_end_matches('/');
        found
            .into_iter()
            .map(|(name, mut info)| {
                let path = format!("{prefix}/{name}");
                let target = match info.type_ {
                    H5L_type_t::H5L_TYPE_HARD => {
                        let (kind, key) = self.object_key(&path)?;
                        LinkTarget::Object(kind, key)
                    }
                    H5L_type_t::H5L_TYPE_SOFT => {
                        let size = unsafe { *info.u.val_size() };
                        let value = self.link_value(&path, size)?;
                        let target = CStr::from_bytes_until_nul(&value)
                            .map(|c| c.to_string_lossy().into_owned())
                            .unwrap_or_default();
                        LinkTarget::Soft(target)
                    }
                    H5L_type_t::H5L_TYPE_EXTERNAL => {
                        let size = unsafe { *info.u.val_size() };
                        let value = self.link_value(&path, size)?;
                        let (mut file, mut object) = (std::ptr::null(), std::ptr::null());
                        let mut flags = 0;
                        check(
                            unsafe {
                                H5Lunpack_elink_val(
                                    value.as_ptr().cast(),
                                    value.len(),
                                    &mut flags,
                                    &mut file,
                                    &mut object,
                                )
                            },
                            || format!("cannot read the external link '{path}'"),
                        )?;
                        let text = |p: *const c_char| unsafe {
                            CStr::from_ptr(p).to_string_lossy().into_owned()
                        };
                        LinkTarget::External {
                            file: text(file),
                            object: text(object),
                        }
                    }
                    _ => LinkTarget::UserDefined,
                };
                Ok(Link {
                    path,
                    target,
                    utf8: info.cset == H5T_cset_t::H5T_CSET_UTF8,
                })
            })
            .collect()
    }

    /// The stored value of the soft or external link `path`, of `size` bytes.
    fn link_value(&self, path: &str, size: usize) -> Result<Vec<u8>> {
        let mut value = vec![0u8; size];
        let c = cstr(path);
        check(
            unsafe {
                H5Lget_val(
                    self.id(),
                    c.as_ptr(),
                    value.as_mut_ptr().cast(),
                    size,
                    H5P_DEFAULT,
                )
            },
            || format!("cannot read the link '{path}'"),
        )?;
        Ok(value)
    }

    /// Copies the object `link` leads to in this file into `dst` under the same path, whole
    /// but for its attributes (`H5Ocopy`: data, creation properties, and what a group holds;
    /// `copy_attributes` copies the attributes), of the copy in `types` of its named datatype
    /// where it has one.
    pub fn copy_object(&self, link: &Link, dst: &File, types: &NamedTypes) -> Result<()> {
        let _l = super::lock();
        let c = cstr(&link.path);
        let used = self.named_type_of(&link.path)?;
        let ocpypl = types.copy_properties(used.as_ref())?;
        let lcpl = link_create(Some(link))?;
        check(
            unsafe {
                H5Ocopy(
                    self.id(),
                    c.as_ptr(),
                    dst.id(),
                    c.as_ptr(),
                    ocpypl.id(),
                    lcpl.id(),
                )
            },
            || format!("cannot copy '{}'", link.path),
        )
        .map(|_| ())
    }

    /// Creates, in this file, an empty group at `link`'s path with the creation properties
    /// of the group it leads to in `src` (link and attribute order tracking, storage).
    pub fn create_group_like(&self, link: &Link, src: &File) -> Result<()> {
        let _l = super::lock();
        let gcpl = group_create_plist(src, &link.path)?;
        let lcpl = link_create(Some(link))?;
        let c = cstr(&link.path);
        let id = unsafe { H5Gcreate2(self.id(), c.as_ptr(), lcpl.id(), gcpl.id(), H5P_DEFAULT) };
        Object::from_id(id, || format!("cannot create group '{}'", link.path)).map(drop)
    }

    /// Makes `link` again in this file: a hard link to `existing` (the path the object it
    /// leads to already has here), or the same soft or external link.
    pub fn make_link(&self, link: &Link, existing: Option<&str>) -> Result<()> {
        let _l = super::lock();
        let lcpl = link_create(Some(link))?;
        let name = cstr(&link.path);
        let what = || format!("cannot make the link '{}'", link.path);
        let made = match (&link.target, existing) {
            (LinkTarget::Object(..), Some(existing)) => {
                let e = cstr(existing);
                let (loc, l) = (self.id(), lcpl.id());
                unsafe { H5Lcreate_hard(loc, e.as_ptr(), loc, name.as_ptr(), l, H5P_DEFAULT) }
            }
            (LinkTarget::Soft(target), _) => {
                let t = cstr(target);
                unsafe {
                    H5Lcreate_soft(t.as_ptr(), self.id(), name.as_ptr(), lcpl.id(), H5P_DEFAULT)
                }
            }
            (LinkTarget::External { file, object }, _) => {
                let (f, o) = (cstr(file), cstr(object));
                unsafe {
                    H5Lcreate_external(
                        f.as_ptr(),
                        o.as_ptr(),
                        self.id(),
                        name.as_ptr(),
                        lcpl.id(),
                        H5P_DEFAULT,
                    )
                }
            }
            _ => {
                return crate::status::fail(
                    crate::status::H5TILE_ERR_INVALID_ARGUMENT,
                    format!("{}: not a link that can be made again", what()),
                )
            }
        };
        check(made, what).map(|_| ())
    }

    /// Copies the attributes of object `name` of this file that `keep` accepts (by name) to
    /// object `name` of `dst`, in creation order where it is tracked; one whose type is a named
    /// datatype is of its copy in `types`. Attributes holding object or region references are
    /// not copied (they would point into this file): their names are returned.
    pub fn copy_attributes(
        &self,
        name: &str,
        dst: &File,
        keep: &dyn Fn(&str) -> bool,
        types: &NamedTypes,
    ) -> Result<Vec<String>> {
        let _l = super::lock();
        let (from, to) = (self.object(name)?, dst.object(name)?);
        let tracked = self.attribute_order_tracked(name)?;
        let mut skipped = Vec::new();
        for attribute in attribute_names(from.id(), tracked, name)? {
            if !keep(&attribute) {
                continue;
            }
            let what = || format!("cannot copy attribute '{attribute}' of '{name}'");
            let c = cstr(&attribute);
            let attr =
                Attribute::from_id(unsafe { H5Aopen(from.id(), c.as_ptr(), H5P_DEFAULT) }, what)?;
            let dtype = Type::from_id(unsafe { H5Aget_type(attr.id()) }, what)?;
            if unsafe { H5Tdetect_class(dtype.id(), H5T_class_t::H5T_REFERENCE) } != 0 {
                super::take_error_stack();
                skipped.push(attribute);
                continue;
            }
            let named = named_type_key(&dtype)?;
            let copied = match named.as_ref().and_then(|k| types.copy_of(k)) {
                Some(at) => dst
                    .open_type(at)
                    .and_then(|t| copy_attribute(from.id(), to.id(), &attribute, Some(&t))),
                None => copy_attribute(from.id(), to.id(), &attribute, None),
            };
            copied.map_err(|e| e.context(&format!("object '{name}'")))?;
        }
        Ok(skipped)
    }

    /// Whether object `name` tracks its attributes' creation order.
    fn attribute_order_tracked(&self, name: &str) -> Result<bool> {
        Ok(match self.object_key(name)?.0 {
            ObjectKind::Group => creation_order_tracked(&group_create_plist(self, name)?),
            ObjectKind::Dataset => {
                creation_order_tracked(&Dataset::open(self, name)?.create_plist()?)
            }
            _ => false,
        })
    }
}
