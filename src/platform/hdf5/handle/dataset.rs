//! Datasets: created, opened, read and written, and how they keep their elements.

use super::*;
use crate::platform::device::Buffer;
use crate::platform::hdf5::{check, cstr};
use crate::status::Result;
use hdf5_sys::h5d::*;
use hdf5_sys::h5p::*;
use std::ffi::c_void;

impl Dataset {
    /// Creates dataset `name` (intermediate groups included) in `file`.
    pub fn create(
        file: &File,
        name: &str,
        dtype: &Type,
        space: &Space,
        dcpl: &Plist,
    ) -> Result<Dataset> {
        let _l = crate::platform::hdf5::lock();
        let lcpl = Plist::create(*H5P_CLS_LINK_CREATE)?;
        check(
            unsafe { H5Pset_create_intermediate_group(lcpl.id(), 1) },
            || "cannot set intermediate group creation".into(),
        )?;
        let id = unsafe {
            H5Dcreate2(
                file.0,
                cstr(name).as_ptr(),
                dtype.id(),
                space.id(),
                lcpl.id(),
                dcpl.id(),
                H5P_DEFAULT,
            )
        };
        Dataset::from_id(id, || format!("cannot create dataset '{name}'"))
    }

    /// Opens dataset `name` in `file` with the default access properties.
    pub fn open(file: &File, name: &str) -> Result<Dataset> {
        let _l = crate::platform::hdf5::lock();
        crate::platform::hdf5::work::count(|w| w.datasets_opened += 1);
        let id = unsafe { H5Dopen2(file.0, cstr(name).as_ptr(), H5P_DEFAULT) };
        Dataset::from_id(id, || format!("cannot open dataset '{name}'"))
    }

    /// Opens dataset `name` in `file` with access properties `dapl` (e.g. a chunk cache).
    pub fn open_with_access(file: &File, name: &str, dapl: &Plist) -> Result<Dataset> {
        let _l = crate::platform::hdf5::lock();
        crate::platform::hdf5::work::count(|w| w.datasets_opened += 1);
        let id = unsafe { H5Dopen2(file.0, cstr(name).as_ptr(), dapl.id()) };
        Dataset::from_id(id, || format!("cannot open dataset '{name}'"))
    }

    pub fn space(&self) -> Result<Space> {
        let _l = crate::platform::hdf5::lock();
        Space::from_id(unsafe { H5Dget_space(self.0) }, || {
            "cannot get dataset dataspace".into()
        })
    }

    pub fn dtype(&self) -> Result<Type> {
        let _l = crate::platform::hdf5::lock();
        Type::from_id(unsafe { H5Dget_type(self.0) }, || {
            "cannot get dataset datatype".into()
        })
    }

    pub fn create_plist(&self) -> Result<Plist> {
        let _l = crate::platform::hdf5::lock();
        Plist::from_id(unsafe { H5Dget_create_plist(self.0) }, || {
            "cannot get dataset creation properties".into()
        })
    }

    /// Writes `buf` (laid out as `mem_space` in `mem_type`) into `file_space` of the dataset
    /// (None: the whole extent, for either).
    ///
    /// # Safety
    /// `buf` must hold at least the selected elements of `mem_space` in `mem_type`.
    pub unsafe fn write(
        &self,
        mem_type: &Type,
        mem_space: Option<&Space>,
        file_space: Option<&Space>,
        buf: *const c_void,
    ) -> Result<()> {
        let _l = crate::platform::hdf5::lock();
        let (m, f) = (Space::id_or_all(mem_space), Space::id_or_all(file_space));
        let written = H5Dwrite(self.0, mem_type.id(), m, f, H5P_DEFAULT, buf);
        check(written, || "cannot write dataset".into()).map(|_| ())
    }

    /// Writes all of the dataset from `buf` (host bytes, as many as the dataset holds in
    /// `mem_type`, or device memory, which the h5tile_gds driver moves).
    pub fn write_buffer(&self, mem_type: &Type, buf: Buffer) -> Result<()> {
        let _l = crate::platform::hdf5::lock();
        let ptr = match buf {
            Buffer::Host(bytes) => {
                let need = self.space()?.points()? as usize * mem_type.size();
                if bytes.len() < need {
                    return crate::status::fail(
                        crate::status::H5TILE_ERR_INVALID_ARGUMENT,
                        format!("a buffer of {} bytes for a dataset of {need}", bytes.len()),
                    );
                }
                bytes.as_ptr().cast()
            }
            Buffer::Device(ptr, _) => ptr.addr as usize as *const c_void,
        };
        // The bytes are there: checked above, or the driver's device path moves them.
        unsafe { self.write(mem_type, None, None, ptr) }
    }

    /// Reads the dataset's `file_space` selection into host bytes `buf`, laid out as
    /// `mem_space` (whose whole extent must fit in `buf` in `mem_type`).
    pub fn read_into(
        &self,
        mem_type: &Type,
        mem_space: &Space,
        file_space: &Space,
        buf: &mut [u8],
    ) -> Result<()> {
        let _l = crate::platform::hdf5::lock();
        let need = mem_space.points()? as usize * mem_type.size();
        if buf.len() < need {
            return crate::status::fail(
                crate::status::H5TILE_ERR_INVALID_ARGUMENT,
                format!("a buffer of {} bytes to read {need}", buf.len()),
            );
        }
        // `buf` holds the memory space's whole extent, checked above.
        unsafe {
            self.read(
                mem_type,
                Some(mem_space),
                Some(file_space),
                buf.as_mut_ptr().cast(),
            )
        }
    }

    /// Reads the dataset's `file_space` selection into `buf`, laid out as `mem_space` (None:
    /// the whole extent, for either).
    ///
    /// # Safety
    /// `buf` must have room for the selected elements of `mem_space` in `mem_type`.
    pub unsafe fn read(
        &self,
        mem_type: &Type,
        mem_space: Option<&Space>,
        file_space: Option<&Space>,
        buf: *mut c_void,
    ) -> Result<()> {
        let _l = crate::platform::hdf5::lock();
        let (m, f) = (Space::id_or_all(mem_space), Space::id_or_all(file_space));
        let read = H5Dread(self.0, mem_type.id(), m, f, H5P_DEFAULT, buf);
        check(read, || "cannot read dataset".into()).map(|_| ())
    }
}

/// How a dataset keeps its elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// One contiguous block; `Some(offset)` where it lies in the file itself at that byte
    /// (allocated, and not in external files).
    Contiguous(Option<u64>),
    /// Storage chunks of this shape.
    Chunked(Vec<u64>),
    /// A virtual dataset: mappings to other datasets.
    Virtual,
    /// Compact: the elements inside the dataset's object header.
    Compact,
    /// A layout this version does not know.
    Other,
}

impl Dataset {
    /// How the dataset keeps its elements.
    pub fn storage(&self) -> Result<Storage> {
        let _l = crate::platform::hdf5::lock();
        let dcpl = self.create_plist()?;
        Ok(match unsafe { H5Pget_layout(dcpl.id()) } {
            H5D_layout_t::H5D_CONTIGUOUS => {
                let external = unsafe { H5Pget_external_count(dcpl.id()) };
                let offset = unsafe { H5Dget_offset(self.0) };
                let in_file = external == 0 && offset != hdf5_sys::h5::HADDR_UNDEF;
                Storage::Contiguous(in_file.then_some(offset))
            }
            H5D_layout_t::H5D_CHUNKED => {
                let rank = self.space()?.dims()?.len();
                let mut chunk = vec![0u64; rank];
                let got = unsafe { H5Pget_chunk(dcpl.id(), rank as i32, chunk.as_mut_ptr()) };
                check(got, || "cannot read the dataset's chunk shape".into())?;
                Storage::Chunked(chunk)
            }
            H5D_layout_t::H5D_VIRTUAL => Storage::Virtual,
            H5D_layout_t::H5D_COMPACT => Storage::Compact,
            _ => Storage::Other,
        })
    }
}
