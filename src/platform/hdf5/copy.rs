//! Copying a file's objects into another file, as `h5tile pack` does: a group's links listed
//! (hard, soft, external) and made again, objects copied whole by `H5Ocopy`, groups made with
//! their creation properties, attributes copied one by one (some left out), and the stand-in
//! for a virtual dataset: a dataset of its type, shape and fill value, contiguous or chunked
//! and compressed, written box by box. Named datatypes are copied first, once each (`NamedTypes`): whatever used one in
//! the source uses its copy.

use super::handle::Object;
use super::relocate::{
    attribute_names, copy_attribute, copy_creation_properties, creation_order_tracked,
};
use super::{check, cstr, Attribute, Dataset, File, Handle, ObjectKind, Plist, Space, Type};
use crate::platform::codecs::Pipeline;
use crate::status::Result;
use hdf5_sys::h5::{herr_t, hsize_t, H5_index_t, H5_iter_order_t};
use hdf5_sys::h5a::{H5Aget_type, H5Aopen};
use hdf5_sys::h5d::{H5D_fill_time_t, H5D_layout_t, H5Dcreate2, H5Dget_type};
use hdf5_sys::h5f::{H5F_libver_t, H5F_LIBVER_LATEST};
use hdf5_sys::h5g::{H5Gcreate2, H5Gget_create_plist};
use hdf5_sys::h5i::{hid_t, H5I_type_t, H5Iget_type};
use hdf5_sys::h5l::{
    H5L_info2_t, H5L_type_t, H5Lcreate_external, H5Lcreate_hard, H5Lcreate_soft, H5Lexists,
    H5Lget_val, H5Literate2, H5Lunpack_elink_val,
};
use hdf5_sys::h5o::{
    H5O_info2_t, H5O_mcdt_search_ret_t, H5O_type_t, H5Ocopy, H5Oget_info3, H5Oget_info_by_name3,
    H5Oopen, H5Ovisit3, H5O_COPY_MERGE_COMMITTED_DTYPE_FLAG, H5O_COPY_WITHOUT_ATTR_FLAG,
    H5O_INFO_BASIC,
};
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::{H5S_class_t, H5Scopy, H5Sget_simple_extent_type, H5Sset_extent_simple};
use hdf5_sys::h5t::{
    H5T_class_t, H5T_cset_t, H5T_direction_t, H5Tcommitted, H5Tcopy, H5Tdetect_class,
    H5Tget_native_type, H5Topen2, H5Treclaim,
};
use std::collections::HashMap;
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
    fn copy_properties(&self, used: Option<&ObjectKey>) -> Result<Plist> {
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
fn key_of(info: &H5O_info2_t) -> ObjectKey {
    // SAFETY: a token is 16 opaque bytes (H5O_MAX_TOKEN_SIZE); the size is checked here.
    let token: [u8; 16] = unsafe { std::mem::transmute(info.token) };
    ObjectKey(token)
}

/// The key of the named datatype `dtype` is (one of a file's, or a dataset's or attribute's
/// type that is one); None for any other type.
fn named_type_key(dtype: &Type) -> Result<Option<ObjectKey>> {
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
        let _l = super::lock();
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
    fn open_type(&self, path: &str) -> Result<Type> {
        let _l = super::lock();
        let c = cstr(path);
        let id = unsafe { H5Topen2(self.id(), c.as_ptr(), H5P_DEFAULT) };
        Type::from_id(id, || format!("cannot open the named datatype '{path}'"))
    }

    /// Whether this file has a link at `path` (its groups on the way there).
    fn has_link(&self, path: &str) -> Result<bool> {
        let _l = super::lock();
        let c = cstr(path);
        let found = unsafe { H5Lexists(self.id(), c.as_ptr(), H5P_DEFAULT) };
        check(found, || format!("cannot look for '{path}'")).map(|f| f > 0)
    }

    /// The named datatype that object `name` (a dataset) is of; None for any other object.
    fn named_type_of(&self, name: &str) -> Result<Option<ObjectKey>> {
        let _l = super::lock();
        let object = self.object(name)?;
        if unsafe { H5Iget_type(object.id()) } != H5I_type_t::H5I_DATASET {
            return Ok(None);
        }
        let dtype = Type::from_id(unsafe { H5Dget_type(object.id()) }, || {
            format!("cannot read the datatype of '{name}'")
        })?;
        named_type_key(&dtype)
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

    /// Creates, in this file at `link`'s path, the stand-in for dataset `src` (virtual, or
    /// any other): its type (the copy in `types` of its named datatype, where it has one; else
    /// a private copy), its extent (with no room to grow, as a contiguous dataset cannot), the
    /// fill value its writer set, and its attribute order tracking. It is contiguous, or with
    /// `compressed` (chunk shape, filters) chunked as `Plist::chunked_filtered` makes it. Its
    /// storage is never filled: every element (every chunk) is to be written.
    pub fn create_packed_like(
        &self,
        link: &Link,
        src: &Dataset,
        types: &NamedTypes,
        compressed: Option<(&[u64], &Pipeline)>,
    ) -> Result<Dataset> {
        let _l = super::lock();
        let name = &link.path;
        let what = || format!("cannot create dataset '{name}'");
        let stored = src.dtype()?;
        let named = named_type_key(&stored)?;
        let dtype = match named.as_ref().and_then(|k| types.copy_of(k)) {
            Some(at) => self.open_type(at)?,
            None => Type::from_id(unsafe { H5Tcopy(stored.id()) }, what)?,
        };
        let space = Space::from_id(unsafe { H5Scopy(src.space()?.id()) }, what)?;
        if unsafe { H5Sget_simple_extent_type(space.id()) } == H5S_class_t::H5S_SIMPLE {
            let dims = space.dims()?;
            let (rank, d) = (dims.len() as i32, dims.as_ptr());
            check(
                unsafe { H5Sset_extent_simple(space.id(), rank, d, d) },
                what,
            )?;
        }
        let dcpl = Plist::dataset_create()?;
        copy_creation_properties(&src.create_plist()?, &dcpl, &dtype, name)?;
        match compressed {
            Some((chunk, pipeline)) => dcpl.set_chunked_filtered(chunk, pipeline)?,
            None => unsafe {
                check(H5Pset_layout(dcpl.id(), H5D_layout_t::H5D_CONTIGUOUS), what)?;
                let never = H5D_fill_time_t::H5D_FILL_TIME_NEVER;
                check(H5Pset_fill_time(dcpl.id(), never), what)?;
            },
        }
        let lcpl = link_create(Some(link))?;
        let c = cstr(name);
        let id = unsafe {
            H5Dcreate2(
                self.id(),
                c.as_ptr(),
                dtype.id(),
                space.id(),
                lcpl.id(),
                dcpl.id(),
                H5P_DEFAULT,
            )
        };
        Dataset::from_id(id, what)
    }
}

impl Dataset {
    /// Writes `bytes` (elements of `mem_type`, C order) into the box at `offset` of extent
    /// `shape` of the dataset (a scalar dataset: both empty).
    pub fn write_block(
        &self,
        mem_type: &Type,
        offset: &[u64],
        shape: &[u64],
        bytes: &[u8],
    ) -> Result<()> {
        let _l = super::lock();
        let count: u64 = shape.iter().product();
        let need = count as usize * mem_type.size();
        if bytes.len() != need {
            return crate::status::fail(
                crate::status::H5TILE_ERR_INVALID_ARGUMENT,
                format!("{} bytes to write {need}", bytes.len()),
            );
        }
        let what = |e: crate::status::Error| {
            e.context(&format!(
                "cannot write the box at {offset:?} of shape {shape:?}"
            ))
        };
        if shape.is_empty() {
            // SAFETY: `bytes` holds the one element, checked above.
            return unsafe { self.write(mem_type, None, None, bytes.as_ptr().cast()) }
                .map_err(what);
        }
        let file_space = self.space()?;
        file_space.select_block(offset, shape)?;
        let mem_space = Space::simple(shape)?;
        // SAFETY: `bytes` holds the box's elements, checked above.
        unsafe {
            self.write(
                mem_type,
                Some(&mem_space),
                Some(&file_space),
                bytes.as_ptr().cast(),
            )
        }
        .map_err(what)
    }

    /// Bytes per element of this dataset's type in memory, as `copy_block_to` reads it.
    pub fn memory_element_bytes(&self) -> Result<usize> {
        Ok(self.memory_type()?.size())
    }

    /// The dataset's type as HDF5 holds it in memory (native byte order and layout, pointers
    /// for variable-length parts); the stored type where HDF5 has no native form of it.
    fn memory_type(&self) -> Result<Type> {
        let _l = super::lock();
        let stored = self.dtype()?;
        let native = unsafe { H5Tget_native_type(stored.id(), H5T_direction_t::H5T_DIR_DEFAULT) };
        if native < 0 {
            super::take_error_stack();
            return Ok(stored);
        }
        Type::from_id(native, String::new)
    }

    /// Copies the box at `offset` of extent `shape` (both empty: the whole of a scalar) of
    /// this dataset to the same box of `dst`, by HDF5 (read in memory form, into `buf`,
    /// grown as needed), for types h5tile does not read itself.
    pub fn copy_block_to(
        &self,
        dst: &Dataset,
        offset: &[u64],
        shape: &[u64],
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let _l = super::lock();
        let mem_type = self.memory_type()?;
        let count: u64 = shape.iter().product();
        let need = count as usize * mem_type.size();
        if buf.len() < need {
            buf.resize(need, 0);
        }
        let (file_space, mem_space) = match shape.is_empty() {
            true => (self.space()?, self.space()?),
            false => {
                let file_space = self.space()?;
                file_space.select_block(offset, shape)?;
                (file_space, Space::simple(shape)?)
            }
        };
        let at = buf.as_mut_ptr().cast::<c_void>();
        // SAFETY: `buf` has room for the box's elements in `mem_type`.
        unsafe { self.read(&mem_type, Some(&mem_space), Some(&file_space), at) }?;
        // SAFETY: `buf` holds the box's elements, just read.
        let written = unsafe { dst.write(&mem_type, Some(&mem_space), Some(&file_space), at) };
        // Variable-length parts were allocated by HDF5 when read (nothing to free otherwise).
        if unsafe { H5Treclaim(mem_type.id(), mem_space.id(), H5P_DEFAULT, at) } < 0 {
            super::take_error_stack();
        }
        written
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::hdf5::Attributes;

    #[test]
    fn links_groups_attributes_and_a_contiguous_stand_in_are_copied() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a.h5"), d.path().join("b.h5"));
        let src = File::create(&a).unwrap();
        let t = crate::dtype::Dtype::Int32.hdf5_type().unwrap();
        let dcpl = Plist::dataset_create().unwrap();
        let x = Dataset::create(&src, "/g/x", &t, &Space::simple(&[4, 3]).unwrap(), &dcpl).unwrap();
        x.write_u64_attribute("keep", &[1], &[7]).unwrap();
        x.write_u64_attribute("h5tile_drop", &[1], &[8]).unwrap();
        let values: Vec<i32> = (0..12).collect();
        x.write_buffer(&t, crate::platform::device::host_bytes(&values))
            .unwrap();
        drop(x);
        let hard = Link {
            path: "/g/y".into(),
            target: LinkTarget::Object(ObjectKind::Dataset, ObjectKey([0; 16])),
            utf8: false,
        };
        src.make_link(&hard, Some("/g/x")).unwrap();
        let soft = Link {
            path: "/s".into(),
            target: LinkTarget::Soft("/g/x".into()),
            utf8: true,
        };
        src.make_link(&soft, None).unwrap();
        let external = Link {
            path: "/e".into(),
            target: LinkTarget::External {
                file: "other.h5".into(),
                object: "/z".into(),
            },
            utf8: false,
        };
        src.make_link(&external, None).unwrap();

        let root = src.links("/").unwrap();
        let paths: Vec<&str> = root.iter().map(|l| l.path.as_str()).collect();
        assert_eq!(paths, ["/e", "/g", "/s"]);
        assert_eq!(root[0].target, external.target);
        assert_eq!(root[2].target, soft.target);
        assert!(root[2].utf8);
        let g = src.links("/g").unwrap();
        assert_eq!(g[0].target, g[1].target, "two hard links to one object");
        assert!(matches!(
            g[0].target,
            LinkTarget::Object(ObjectKind::Dataset, _)
        ));

        let dst = File::create_for_copy(&b, &src).unwrap();
        dst.create_group_like(&root[1], &src).unwrap();
        let x = Dataset::open(&src, "/g/x").unwrap();
        let types = NamedTypes::default();
        let out = dst.create_packed_like(&g[0], &x, &types, None).unwrap();
        let skipped = src
            .copy_attributes("/g/x", &dst, &|n| !n.starts_with("h5tile_"), &types)
            .unwrap();
        assert!(skipped.is_empty());
        let first: Vec<u8> = values[..6].iter().flat_map(|v| v.to_ne_bytes()).collect();
        out.write_block(&t, &[0, 0], &[2, 3], &first).unwrap();
        x.copy_block_to(&out, &[2, 0], &[2, 3], &mut Vec::new())
            .unwrap();
        dst.make_link(&g[1], Some("/g/x")).unwrap();
        dst.make_link(&root[2], None).unwrap();
        drop((out, x));
        dst.close().unwrap();

        let dst = File::open_read(&b).unwrap();
        let y = Dataset::open(&dst, "/s").unwrap();
        assert_eq!(
            y.storage().unwrap(),
            super::super::Storage::Contiguous(y.data_offset())
        );
        let mut back = vec![0i32; 12];
        y.read_into(
            &t,
            &Space::simple(&[4, 3]).unwrap(),
            &y.space().unwrap(),
            crate::platform::device::bytes_mut(&mut back),
        )
        .unwrap();
        assert_eq!(back, values);
        assert_eq!(y.u64_attribute("keep"), Some((vec![1], vec![7])));
        assert_eq!(y.u64_attribute("h5tile_drop"), None);
        assert_eq!(
            dst.links("/g").unwrap()[0].target,
            dst.links("/g").unwrap()[1].target
        );
    }
}
