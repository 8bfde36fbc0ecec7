//! Typed access to what h5tile sets and reads in HDF5 beyond handles: dataset creation and
//! access properties, virtual-dataset mappings, fill values, and `u64` attributes.

use super::{check, cstr, Dataset, File, Handle, Plist, Space, Type};
use crate::status::Result;
use hdf5_sys::h5::HADDR_UNDEF;
use hdf5_sys::h5a::{
    H5Acreate2, H5Aexists_by_name, H5Aget_space, H5Aget_type, H5Aopen_by_name, H5Aread, H5Awrite,
};
use hdf5_sys::h5d::{H5D_alloc_time_t, H5D_fill_time_t, H5D_layout_t, H5Dget_offset};
use hdf5_sys::h5f::H5F_libver_t;
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::{H5S_sel_type, H5Sget_select_type};
use hdf5_sys::h5t::{H5Tget_size, H5T_NATIVE_UINT64};
use std::ffi::{c_char, CStr, CString};

/// One mapping of a virtual dataset as stored: the selection of the virtual dataset it fills,
/// the source file and dataset names (as HDF5 keeps them, patterns included), and the selection
/// of the source.
pub struct VirtualMapping {
    pub file: String,
    pub dataset: String,
    pub virtual_space: Space,
    pub source_space: Space,
}

impl Plist {
    /// Dataset-creation properties with HDF5's defaults.
    pub fn dataset_create() -> Result<Plist> {
        let _l = super::lock();
        Plist::create(*H5P_CLS_DATASET_CREATE)
    }

    /// File-creation properties reserving a user block of `bytes` (a power of two ≥ 512) at
    /// the start of the file, which HDF5 leaves to the application.
    pub fn file_with_user_block(bytes: u64) -> Result<Plist> {
        let _l = super::lock();
        let fcpl = Plist::create(*H5P_CLS_FILE_CREATE)?;
        check(unsafe { H5Pset_userblock(fcpl.id(), bytes) }, || {
            format!("cannot reserve a user block of {bytes} bytes")
        })?;
        Ok(fcpl)
    }

    /// `file_with_user_block` for a file that only grows while it is written (a subfile): space
    /// is never looked for among free sections. HDF5's free-space manager keeps the gaps that
    /// aligned allocations leave behind, and searched them for every new dataset: 16,384
    /// tiles of 2 KiB in one subfile took 292 s, against 6 s as separate files (1.2 s now).
    /// With `pack_metadata`, HDF5's aggregators still gather small metadata into blocks of
    /// their own (where only large allocations are aligned, the gaps before them would
    /// otherwise stay empty); without it every allocation is taken at the end of the file,
    /// twice as fast where every allocation is aligned anyway.
    pub fn file_growing_only(user_block: u64, pack_metadata: bool) -> Result<Plist> {
        use hdf5_sys::h5f::H5F_fspace_strategy_t::*;
        let fcpl = Plist::file_with_user_block(user_block)?;
        let _l = super::lock();
        let strategy = match pack_metadata {
            true => H5F_FSPACE_STRATEGY_AGGR,
            false => H5F_FSPACE_STRATEGY_NONE,
        };
        check(
            unsafe { H5Pset_file_space_strategy(fcpl.id(), strategy, 0, 1) },
            || "cannot set the file-space strategy".into(),
        )?;
        Ok(fcpl)
    }

    /// The file-space strategy recorded in the file at `path` (`H5F_fspace_strategy_t`).
    #[cfg(test)]
    pub fn file_space_strategy(path: &std::path::Path) -> Result<u32> {
        let file = super::File::open_read(path)?;
        let _l = super::lock();
        let fcpl = Plist::from_id(
            unsafe { hdf5_sys::h5f::H5Fget_create_plist(file.id()) },
            || "cannot get file creation properties".into(),
        )?;
        let mut strategy = hdf5_sys::h5f::H5F_fspace_strategy_t::H5F_FSPACE_STRATEGY_FSM_AGGR;
        let (mut persist, mut threshold) = (0, 0);
        check(
            unsafe {
                H5Pget_file_space_strategy(fcpl.id(), &mut strategy, &mut persist, &mut threshold)
            },
            || "cannot read the file-space strategy".into(),
        )?;
        Ok(strategy as u32)
    }

    /// File-access properties (HDF5's default driver) placing every allocation of `threshold`
    /// bytes or more at a multiple of `alignment` bytes from the end of the user block.
    pub fn file_access_aligned(threshold: u64, alignment: u64) -> Result<Plist> {
        let _l = super::lock();
        let fapl = Plist::create(*H5P_CLS_FILE_ACCESS)?;
        check(
            unsafe { H5Pset_alignment(fapl.id(), threshold, alignment) },
            || format!("cannot align allocations to {alignment} bytes"),
        )?;
        Ok(fapl)
    }

    /// File-access properties that evict each object's metadata from HDF5's cache when it is
    /// closed (`File::open_read_evicting`).
    pub fn file_access_evicting() -> Result<Plist> {
        let _l = super::lock();
        let fapl = Plist::create(*H5P_CLS_FILE_ACCESS)?;
        check(unsafe { H5Pset_evict_on_close(fapl.id(), 1) }, || {
            "cannot set evict-on-close".into()
        })?;
        Ok(fapl)
    }

    /// File-access properties for a master: objects in the HDF5 1.8 to 1.10 formats, so an
    /// attribute too large for an object header (a record per tile, thousands of tiles) goes
    /// to dense storage instead of failing, and HDF5 1.10's tools still read the file.
    pub fn file_access_master() -> Result<Plist> {
        let _l = super::lock();
        let fapl = Plist::create(*H5P_CLS_FILE_ACCESS)?;
        let (low, high) = (H5F_libver_t::H5F_LIBVER_V18, H5F_libver_t::H5F_LIBVER_V110);
        check(
            unsafe { H5Pset_libver_bounds(fapl.id(), low, high) },
            || "cannot set the file format versions of a master".into(),
        )?;
        Ok(fapl)
    }

    /// Dataset-creation properties of one contiguous block allocated at creation and never
    /// filled (its bytes are all written afterwards), so its place in the file is known at once.
    pub fn contiguous_allocated() -> Result<Plist> {
        let dcpl = Plist::dataset_create()?;
        let _l = super::lock();
        let what = || "cannot set up contiguous, pre-allocated storage".to_string();
        unsafe {
            check(H5Pset_layout(dcpl.id(), H5D_layout_t::H5D_CONTIGUOUS), what)?;
            let early = H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY;
            check(H5Pset_alloc_time(dcpl.id(), early), what)?;
            let never = H5D_fill_time_t::H5D_FILL_TIME_NEVER;
            check(H5Pset_fill_time(dcpl.id(), never), what)?;
        }
        Ok(dcpl)
    }

    /// Dataset-access properties whose chunk cache holds `bytes`.
    pub fn chunk_cache(bytes: usize) -> Result<Plist> {
        let _l = super::lock();
        let dapl = Plist::create(*H5P_CLS_DATASET_ACCESS)?;
        check(
            unsafe { H5Pset_chunk_cache(dapl.id(), 100_003, bytes, 1.0) },
            || "cannot set the chunk cache".into(),
        )?;
        Ok(dapl)
    }

    /// Maps `virtual_space`'s selection of a virtual dataset to all of dataset `dataset` in
    /// file `file` (a literal name: no '%', which HDF5 reads as a pattern), of `source_space`.
    pub fn add_virtual_mapping(
        &self,
        virtual_space: &Space,
        file: &str,
        dataset: &str,
        source_space: &Space,
    ) -> Result<()> {
        let _l = super::lock();
        let (f, d) = (cstr(file), cstr(dataset));
        check(
            unsafe {
                H5Pset_virtual(
                    self.id(),
                    virtual_space.id(),
                    f.as_ptr(),
                    d.as_ptr(),
                    source_space.id(),
                )
            },
            || format!("cannot map a virtual dataset's elements to '{file}'"),
        )
        .map(|_| ())
    }

    /// The mappings of a virtual dataset's creation properties, in order.
    pub fn virtual_mappings(&self) -> Result<Vec<VirtualMapping>> {
        let _l = super::lock();
        let mut count = 0usize;
        check(
            unsafe { H5Pget_virtual_count(self.id(), &mut count) },
            || "cannot count VDS mappings".into(),
        )?;
        super::work::count(|w| w.mappings_decoded += count as u64);
        let id = self.id();
        (0..count)
            .map(|i| {
                let what = || format!("cannot read VDS mapping {i}");
                Ok(VirtualMapping {
                    file: name(|buf, n| unsafe { H5Pget_virtual_filename(id, i, buf, n) })?,
                    dataset: name(|buf, n| unsafe { H5Pget_virtual_dsetname(id, i, buf, n) })?,
                    virtual_space: Space::from_id(unsafe { H5Pget_virtual_vspace(id, i) }, what)?,
                    source_space: Space::from_id(unsafe { H5Pget_virtual_srcspace(id, i) }, what)?,
                })
            })
            .collect()
    }

    /// The fill value of these dataset-creation properties as one element of `mem_type`
    /// (None where HDF5 cannot convert it).
    pub fn fill_value(&self, mem_type: &Type) -> Option<Vec<u8>> {
        let _l = super::lock();
        let mut element = vec![0u8; mem_type.size()];
        let got =
            unsafe { H5Pget_fill_value(self.id(), mem_type.id(), element.as_mut_ptr().cast()) };
        if got < 0 {
            super::take_error_stack();
            return None;
        }
        Some(element)
    }
}

/// A name HDF5 copies out (`get(buf, len)` returns its length).
fn name(get: impl Fn(*mut c_char, usize) -> isize) -> Result<String> {
    let n = check(get(std::ptr::null_mut(), 0), || {
        "cannot read VDS source name".into()
    })?;
    let mut buf = vec![0u8; n as usize + 1];
    check(get(buf.as_mut_ptr() as *mut c_char, buf.len()), || {
        "cannot read VDS source name".into()
    })?;
    buf.truncate(n as usize);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

impl Space {
    /// Whether everything is selected (`H5S_ALL`-style selection of the whole extent).
    pub fn selects_all(&self) -> bool {
        let _l = super::lock();
        unsafe { H5Sget_select_type(self.id()) == H5S_sel_type::H5S_SEL_ALL }
    }
}

impl Dataset {
    /// The byte offset of a contiguous dataset's storage in its file (None when not allocated).
    pub fn data_offset(&self) -> Option<u64> {
        let _l = super::lock();
        let offset = unsafe { H5Dget_offset(self.id()) };
        (offset != HADDR_UNDEF).then_some(offset)
    }

    /// Writes attribute `name`: `values` as an array of `dims` of `uint64`.
    pub fn write_u64_attribute(&self, name: &str, dims: &[u64], values: &[u64]) -> Result<()> {
        // SAFETY: `values` is `8 * len` readable bytes.
        let bytes = unsafe {
            std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), std::mem::size_of_val(values))
        };
        self.write_attribute_raw(name, dims, *H5T_NATIVE_UINT64, bytes)
    }

    /// Writes attribute `name`: `bytes`, elements of `dtype` in native order, as an array of
    /// `dims`.
    pub fn write_attribute(
        &self,
        name: &str,
        dims: &[u64],
        dtype: &Type,
        bytes: &[u8],
    ) -> Result<()> {
        self.write_attribute_raw(name, dims, dtype.id(), bytes)
    }

    fn write_attribute_raw(
        &self,
        name: &str,
        dims: &[u64],
        dtype: hid_t,
        bytes: &[u8],
    ) -> Result<()> {
        let _l = super::lock();
        let size = unsafe { H5Tget_size(dtype) };
        assert_eq!(
            bytes.len() as u64,
            dims.iter().product::<u64>() * size as u64,
            "attribute '{name}': bytes for its shape"
        );
        let space = Space::simple(dims)?;
        let what = || format!("cannot write attribute '{name}'");
        let c = cstr(name);
        let id = unsafe {
            H5Acreate2(
                self.id(),
                c.as_ptr(),
                dtype,
                space.id(),
                H5P_DEFAULT,
                H5P_DEFAULT,
            )
        };
        let attr = super::Attribute::from_id(id, what)?;
        check(
            unsafe { H5Awrite(attr.id(), dtype, bytes.as_ptr().cast()) },
            what,
        )
        .map(|_| ())
    }
}

/// An object whose attributes h5tile reads by name: an open one, or one named in an open file
/// and never opened (opening a virtual dataset decodes every mapping it holds, which for
/// 65,536 tiles takes a second and a gigabyte; reading its attributes by name takes neither).
pub trait Attributes {
    /// The location the object is named from and its name there ("." for the location).
    fn attribute_location(&self) -> (hid_t, &CStr);

    /// Attribute `name` as elements of `mem_type` (HDF5 converting them) with its extents, None
    /// when there is none or it cannot be read as such.
    fn attribute_as(&self, name: &str, mem_type: &Type) -> Option<(Vec<u64>, Vec<u8>)> {
        attribute_raw(
            self.attribute_location(),
            name,
            mem_type.id(),
            mem_type.size(),
        )
    }

    /// Attribute `name` as `uint64` values with its extents, None when there is none or it
    /// cannot be read as such.
    fn u64_attribute(&self, name: &str) -> Option<(Vec<u64>, Vec<u64>)> {
        let (dims, bytes) = attribute_raw(self.attribute_location(), name, *H5T_NATIVE_UINT64, 8)?;
        let values = bytes
            .chunks_exact(8)
            .map(|b| u64::from_ne_bytes(b.try_into().expect("8 bytes")))
            .collect();
        Some((dims, values))
    }

    /// The element type attribute `name` is stored as, None when there is none.
    fn attribute_type(&self, name: &str) -> Option<Type> {
        let _l = super::lock();
        let attr = open_attribute(self.attribute_location(), name)?;
        Type::from_id(unsafe { H5Aget_type(attr.id()) }, String::new).ok()
    }
}

impl Attributes for Dataset {
    fn attribute_location(&self) -> (hid_t, &CStr) {
        (self.id(), c".")
    }
}

/// An object named in an open file, whose attributes are read without opening it.
pub struct NamedObject<'a> {
    file: &'a File,
    name: CString,
}

impl Attributes for NamedObject<'_> {
    fn attribute_location(&self) -> (hid_t, &CStr) {
        (self.file.id(), &self.name)
    }
}

impl File {
    /// `object` (a path in this file), to read its attributes without opening it.
    pub fn named(&self, object: &str) -> NamedObject<'_> {
        NamedObject {
            file: self,
            name: cstr(object),
        }
    }
}

/// Attribute `name` of the object at `(location, object)`, None when there is none.
fn open_attribute((location, object): (hid_t, &CStr), name: &str) -> Option<super::Attribute> {
    let c = cstr(name);
    if unsafe { H5Aexists_by_name(location, object.as_ptr(), c.as_ptr(), H5P_DEFAULT) } <= 0 {
        super::take_error_stack();
        return None;
    }
    let id = unsafe {
        H5Aopen_by_name(
            location,
            object.as_ptr(),
            c.as_ptr(),
            H5P_DEFAULT,
            H5P_DEFAULT,
        )
    };
    super::Attribute::from_id(id, String::new).ok()
}

/// Attribute `name` of the object at `at` read as elements of HDF5 type `mem_type` (`size`
/// bytes each).
fn attribute_raw(
    at: (hid_t, &CStr),
    name: &str,
    mem_type: hid_t,
    size: usize,
) -> Option<(Vec<u64>, Vec<u8>)> {
    let _l = super::lock();
    let attr = open_attribute(at, name)?;
    let space = Space::from_id(unsafe { H5Aget_space(attr.id()) }, String::new).ok()?;
    let dims = space.dims().ok()?;
    let mut bytes = vec![0u8; dims.iter().product::<u64>() as usize * size];
    if unsafe { H5Aread(attr.id(), mem_type, bytes.as_mut_ptr().cast()) } < 0 {
        super::take_error_stack();
        return None;
    }
    Some((dims, bytes))
}
