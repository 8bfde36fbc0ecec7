//! The stand-in for a virtual dataset: a dataset of its type, shape and fill value,
//! contiguous or chunked and compressed, written box by box.

use super::named_types::{named_type_key, NamedTypes};
use super::{link_create, Link};
use crate::platform::codecs::Pipeline;
use crate::platform::hdf5::relocate::copy_creation_properties;
use crate::platform::hdf5::{check, cstr, Dataset, File, Handle, Plist, Space, Type};
use crate::status::Result;
use hdf5_sys::h5d::{H5D_fill_time_t, H5D_layout_t, H5Dcreate2};
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::{H5S_class_t, H5Scopy, H5Sget_simple_extent_type, H5Sset_extent_simple};
use hdf5_sys::h5t::{H5T_direction_t, H5Tcopy, H5Tget_native_type, H5Treclaim};
use std::ffi::c_void;

impl File {
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
        let _l = crate::platform::hdf5::lock();
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
        let _l = crate::platform::hdf5::lock();
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
        let _l = crate::platform::hdf5::lock();
        let stored = self.dtype()?;
        let native = unsafe { H5Tget_native_type(stored.id(), H5T_direction_t::H5T_DIR_DEFAULT) };
        if native < 0 {
            crate::platform::hdf5::take_error_stack();
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
        let _l = crate::platform::hdf5::lock();
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
            crate::platform::hdf5::take_error_stack();
        }
        written
    }
}
