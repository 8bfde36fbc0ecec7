//! RAII wrappers for HDF5 identifiers: each closes its id when dropped, so no other module
//! calls an `H5*close` function. Every method (and the drop) takes the process-wide HDF5 lock
//! itself, so no HDF5 call here can race another thread's.

mod dataset;

pub use dataset::Storage;

use super::{check, cstr};
use crate::status::Result;
use hdf5_sys::h5::{hsize_t, htri_t};
use hdf5_sys::h5d::*;
use hdf5_sys::h5f::*;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::*;
use hdf5_sys::h5t::*;
use std::ffi::c_void;
use std::path::Path;

/// What every handle type has. A trait, so that a handle type no module takes from a raw id
/// (or passes to a raw call) is no dead code.
pub trait Handle: Sized {
    /// Owns `id` (not negative).
    fn wrap(id: hid_t) -> Self;

    /// The raw id: for this module's HDF5 calls, and the integration tests' own.
    fn id(&self) -> hid_t;

    /// Takes ownership of `id`, or turns a negative id into an HDF5 error.
    fn from_id(id: hid_t, what: impl FnOnce() -> String) -> Result<Self> {
        check(id, what).map(Self::wrap)
    }
}

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident, $close:path) => {
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name(hid_t);

        impl Handle for $name {
            fn wrap(id: hid_t) -> $name {
                $name(id)
            }

            fn id(&self) -> hid_t {
                self.0
            }
        }

        impl Drop for $name {
            fn drop(&mut self) {
                if self.0 >= 0 {
                    // Handles may be dropped on another thread (the batch reader): take the lock.
                    let _l = super::lock();
                    unsafe { $close(self.0) };
                }
            }
        }
    };
}

handle!(
    /// An open HDF5 file.
    File, H5Fclose
);
handle!(
    /// An open dataset.
    Dataset, H5Dclose
);
handle!(
    /// A dataspace (shape plus selection).
    Space, H5Sclose
);
handle!(
    /// A property list.
    Plist, H5Pclose
);
handle!(
    /// A datatype.
    Type, H5Tclose
);
handle!(
    /// An attribute.
    Attribute, hdf5_sys::h5a::H5Aclose
);
handle!(
    /// Any object opened by its path (a group, a dataset, a named datatype).
    Object, hdf5_sys::h5o::H5Oclose
);

fn path_str(path: &Path) -> std::ffi::CString {
    cstr(&path.to_string_lossy())
}

impl File {
    /// Creates (truncating) the file at `path`.
    #[cfg(any(test, feature = "internals"))]
    pub fn create(path: &Path) -> Result<File> {
        File::create_raw(path, H5P_DEFAULT, H5P_DEFAULT)
    }

    /// Creates (truncating) the file at `path` with file-access properties `fapl` (a driver).
    pub fn create_with(path: &Path, fapl: &Plist) -> Result<File> {
        File::create_raw(path, H5P_DEFAULT, fapl.id())
    }

    /// Creates (truncating) the file at `path` with file-creation properties `fcpl` and
    /// file-access properties `fapl`.
    pub fn create_as(path: &Path, fcpl: &Plist, fapl: &Plist) -> Result<File> {
        File::create_raw(path, fcpl.id(), fapl.id())
    }

    fn create_raw(path: &Path, fcpl: hid_t, fapl: hid_t) -> Result<File> {
        let _l = super::lock();
        let id = unsafe { H5Fcreate(path_str(path).as_ptr(), H5F_ACC_TRUNC, fcpl, fapl) };
        File::from_id(id, || {
            format!("cannot create HDF5 file '{}'", path.display())
        })
    }

    /// Opens `path` read-only.
    pub fn open_read(path: &Path) -> Result<File> {
        let _l = super::lock();
        super::work::count(|w| w.files_opened += 1);
        let id = unsafe { H5Fopen(path_str(path).as_ptr(), H5F_ACC_RDONLY, H5P_DEFAULT) };
        File::from_id(id, || format!("cannot open HDF5 file '{}'", path.display()))
    }

    /// Opens `path` for reading, to look at many of its objects one after the other: each
    /// object's metadata leaves HDF5's cache when it is closed. Without that, opening the
    /// 65,536 datasets of one subfile took 16 s (the cache searched grows with every object
    /// opened), and 1 s with it. HDF5 refuses to open a file already open in this process with
    /// the other setting: it is then opened as `open_read` does.
    pub fn open_read_evicting(path: &Path) -> Result<File> {
        let _l = super::lock();
        let fapl = Plist::file_access_evicting()?;
        super::work::count(|w| w.files_opened += 1);
        let id = unsafe { H5Fopen(path_str(path).as_ptr(), H5F_ACC_RDONLY, fapl.id()) };
        match File::from_id(id, String::new) {
            Ok(file) => Ok(file),
            Err(_) => File::open_read(path),
        }
    }

    /// Opens `path` for reading and writing.
    #[cfg(any(test, feature = "internals"))]
    pub fn open_write(path: &Path) -> Result<File> {
        let _l = super::lock();
        super::work::count(|w| w.files_opened += 1);
        let id = unsafe { H5Fopen(path_str(path).as_ptr(), H5F_ACC_RDWR, H5P_DEFAULT) };
        File::from_id(id, || format!("cannot open HDF5 file '{}'", path.display()))
    }

    /// Opens `path` for reading and writing with file-access properties `fapl`.
    pub fn open_write_with(path: &Path, fapl: &Plist) -> Result<File> {
        let _l = super::lock();
        super::work::count(|w| w.files_opened += 1);
        let id = unsafe { H5Fopen(path_str(path).as_ptr(), H5F_ACC_RDWR, fapl.id()) };
        File::from_id(id, || format!("cannot open HDF5 file '{}'", path.display()))
    }

    /// Closes the file and reports a failure to flush it, which dropping would hide.
    pub fn close(mut self) -> Result<()> {
        let _l = super::lock();
        let name = self.name();
        let id = std::mem::replace(&mut self.0, -1);
        check(unsafe { H5Fclose(id) }, || {
            format!("cannot close HDF5 file '{name}'")
        })
        .map(|_| ())
    }

    /// The name the file was opened by ("" if HDF5 cannot say).
    pub fn name(&self) -> String {
        let _l = super::lock();
        let n = unsafe { H5Fget_name(self.0, std::ptr::null_mut(), 0) };
        if n <= 0 {
            super::take_error_stack();
            return String::new();
        }
        let mut buf = vec![0u8; n as usize + 1];
        let n = unsafe { H5Fget_name(self.0, buf.as_mut_ptr().cast(), buf.len()) };
        buf.truncate(n.max(0) as usize);
        String::from_utf8_lossy(&buf).into_owned()
    }
}

/// What an object in a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    Group,
    Dataset,
    NamedType,
    Other,
}

impl File {
    /// The kind of the object `name` (an absolute path in the file), None when there is no
    /// such object (a missing group on the way included).
    pub fn object_kind(&self, name: &str) -> Result<Option<ObjectKind>> {
        let _l = super::lock();
        let c = cstr(name);
        if name != "/" && unsafe { hdf5_sys::h5l::H5Lexists(self.0, c.as_ptr(), H5P_DEFAULT) } <= 0
        {
            super::take_error_stack();
            return Ok(None);
        }
        use hdf5_sys::h5o::{H5O_info2_t, H5O_type_t, H5Oget_info_by_name3, H5O_INFO_BASIC};
        let mut info: H5O_info2_t = unsafe { std::mem::zeroed() };
        check(
            unsafe {
                H5Oget_info_by_name3(self.0, c.as_ptr(), &mut info, H5O_INFO_BASIC, H5P_DEFAULT)
            },
            || format!("cannot inspect '{name}'"),
        )?;
        Ok(Some(match info.type_ {
            H5O_type_t::H5O_TYPE_GROUP => ObjectKind::Group,
            H5O_type_t::H5O_TYPE_DATASET => ObjectKind::Dataset,
            H5O_type_t::H5O_TYPE_NAMED_DATATYPE => ObjectKind::NamedType,
            _ => ObjectKind::Other,
        }))
    }

    /// Removes the link `name` (the object goes when nothing else links to it).
    pub fn unlink(&self, name: &str) -> Result<()> {
        let _l = super::lock();
        let c = cstr(name);
        check(
            unsafe { hdf5_sys::h5l::H5Ldelete(self.0, c.as_ptr(), H5P_DEFAULT) },
            || format!("cannot remove '{name}'"),
        )
        .map(|_| ())
    }
}

impl File {
    /// The path of every dataset in the file, each object once (by the first of its names in
    /// name order); external links are not followed.
    pub fn dataset_paths(&self) -> Result<Vec<String>> {
        use hdf5_sys::h5::{H5_index_t, H5_iter_order_t};
        use hdf5_sys::h5o::{H5O_info2_t, H5O_type_t, H5Ovisit3, H5O_INFO_BASIC};
        extern "C" fn collect(
            _obj: hid_t,
            name: *const std::ffi::c_char,
            info: *const H5O_info2_t,
            data: *mut c_void,
        ) -> hdf5_sys::h5::herr_t {
            // SAFETY: HDF5 passes the info and name of the object visited, and our `data`.
            let (info, names) = unsafe { (&*info, &mut *(data as *mut Vec<String>)) };
            if info.type_ == H5O_type_t::H5O_TYPE_DATASET && !name.is_null() {
                let name = unsafe { std::ffi::CStr::from_ptr(name) }.to_string_lossy();
                names.push(format!("/{name}"));
            }
            0
        }
        let _l = super::lock();
        let mut names: Vec<String> = Vec::new();
        let visited = unsafe {
            H5Ovisit3(
                self.0,
                H5_index_t::H5_INDEX_NAME,
                H5_iter_order_t::H5_ITER_INC,
                Some(collect),
                &mut names as *mut Vec<String> as *mut c_void,
                H5O_INFO_BASIC,
            )
        };
        check(visited, || {
            format!("cannot list the objects of '{}'", self.name())
        })?;
        Ok(names)
    }
}

/// Whether the file at `path` is an HDF5 file (it must exist and be readable).
pub fn is_hdf5(path: &Path) -> Result<bool> {
    let _l = super::lock();
    let c = path_str(path);
    match unsafe { H5Fis_accessible(c.as_ptr(), H5P_DEFAULT) } {
        a if a < 0 => Err(super::error(format!(
            "cannot open '{}' with HDF5",
            path.display()
        ))),
        0 => {
            super::take_error_stack();
            Ok(false)
        }
        _ => Ok(true),
    }
}

impl Space {
    /// The id HDF5 takes for `space`, where None is `H5S_ALL` (the whole extent).
    fn id_or_all(space: Option<&Space>) -> hid_t {
        space.map_or(H5S_ALL, |s| s.0)
    }

    /// A scalar dataspace: one element.
    pub fn scalar() -> Result<Space> {
        let _l = super::lock();
        let id = unsafe { H5Screate(H5S_class_t::H5S_SCALAR) };
        Space::from_id(id, || "cannot create a scalar dataspace".into())
    }

    /// A simple dataspace of the given extents, everything selected.
    pub fn simple(dims: &[u64]) -> Result<Space> {
        let _l = super::lock();
        let id = unsafe { H5Screate_simple(dims.len() as i32, dims.as_ptr(), std::ptr::null()) };
        Space::from_id(id, || format!("cannot create dataspace {dims:?}"))
    }

    /// Extents of the dataspace (empty for a scalar).
    pub fn dims(&self) -> Result<Vec<u64>> {
        let _l = super::lock();
        let n = check(unsafe { H5Sget_simple_extent_ndims(self.0) }, || {
            "cannot get rank".into()
        })?;
        let mut dims: Vec<hsize_t> = vec![0; n as usize];
        check(
            unsafe { H5Sget_simple_extent_dims(self.0, dims.as_mut_ptr(), std::ptr::null_mut()) },
            || "cannot get extents".into(),
        )?;
        Ok(dims)
    }

    /// Number of elements in the extent.
    pub fn points(&self) -> Result<u64> {
        let _l = super::lock();
        let n = unsafe { H5Sget_simple_extent_npoints(self.0) };
        check(n, || "cannot count a dataspace's elements".into()).map(|n| n as u64)
    }

    /// Selects only the block at `offset` of extent `count`.
    pub fn select_block(&self, offset: &[u64], count: &[u64]) -> Result<()> {
        let _l = super::lock();
        check(
            unsafe {
                H5Sselect_hyperslab(
                    self.0,
                    H5S_seloper_t::H5S_SELECT_SET,
                    offset.as_ptr(),
                    std::ptr::null(),
                    count.as_ptr(),
                    std::ptr::null(),
                )
            },
            || format!("cannot select block at {offset:?} of {count:?}"),
        )
        .map(|_| ())
    }

    /// Bounding box of the selection: (start, end inclusive); None when nothing is selected.
    pub fn selection_bounds(&self, ndim: usize) -> Option<(Vec<u64>, Vec<u64>)> {
        let _l = super::lock();
        if unsafe { H5Sget_select_npoints(self.0) } <= 0 {
            return None;
        }
        let mut start = vec![0 as hsize_t; ndim];
        let mut end = vec![0 as hsize_t; ndim];
        let ret = unsafe { H5Sget_select_bounds(self.0, start.as_mut_ptr(), end.as_mut_ptr()) };
        if ret < 0 {
            super::take_error_stack();
            return None;
        }
        Some((start, end))
    }
}

impl Space {
    /// The selection as one box (offset, shape) when it is one: everything, or a hyperslab of a
    /// single block. None for point selections, several blocks, or nothing selected.
    pub fn single_block(&self) -> Option<(Vec<u64>, Vec<u64>)> {
        let _l = super::lock();
        let dims = self.dims().ok()?;
        match unsafe { H5Sget_select_type(self.0) } {
            H5S_sel_type::H5S_SEL_ALL => Some((vec![0; dims.len()], dims)),
            H5S_sel_type::H5S_SEL_HYPERSLABS
                if unsafe { H5Sget_select_hyper_nblocks(self.0) } == 1 =>
            {
                let mut corners: Vec<hsize_t> = vec![0; 2 * dims.len()];
                let ret =
                    unsafe { H5Sget_select_hyper_blocklist(self.0, 0, 1, corners.as_mut_ptr()) };
                if ret < 0 {
                    super::take_error_stack();
                    return None;
                }
                let (start, end) = corners.split_at(dims.len());
                Some((
                    start.to_vec(),
                    start.iter().zip(end).map(|(s, e)| e - s + 1).collect(),
                ))
            }
            _ => None,
        }
    }
}

impl Plist {
    /// A new property list of `class` (one of the `H5P_CLS_*` globals).
    pub(in crate::platform::hdf5) fn create(class: hid_t) -> Result<Plist> {
        let _l = super::lock();
        Plist::from_id(unsafe { H5Pcreate(class) }, || {
            "cannot create property list".into()
        })
    }
}

impl Type {
    /// A copy of this type, to keep beside it.
    pub fn duplicate(&self) -> Result<Type> {
        Type::copy(self.id())
    }

    /// A private copy of a predefined or existing type, which can then be modified.
    pub(in crate::platform::hdf5) fn copy(id: hid_t) -> Result<Type> {
        let _l = super::lock();
        Type::from_id(unsafe { H5Tcopy(id) }, || "cannot copy datatype".into())
    }

    pub fn class(&self) -> H5T_class_t {
        let _l = super::lock();
        unsafe { H5Tget_class(self.0) }
    }

    pub fn size(&self) -> usize {
        let _l = super::lock();
        unsafe { H5Tget_size(self.0) }
    }

    /// True when HDF5 has a conversion path from this type to `dst`.
    pub fn converts_to(&self, dst: &Type) -> bool {
        let _l = super::lock();
        let mut cdata: *mut H5T_cdata_t = std::ptr::null_mut();
        let found = unsafe { H5Tfind(self.0, dst.id(), &mut cdata) };
        if found.is_none() {
            super::take_error_stack();
        }
        found.is_some()
    }

    pub fn equal(&self, other: &Type) -> bool {
        let _l = super::lock();
        let r: htri_t = unsafe { H5Tequal(self.0, other.id()) };
        r > 0
    }
}
