//! Writing the VDS layout: one HDF5 file per tile, each tile's bytes placed where the master
//! records them, and the master holding the virtual dataset that maps the tiles. Reading any
//! virtual dataset back is the read side's (`ops::read::mappings`, `ops::read::direct`).

use super::sync_path;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::device::Route;
use crate::platform::hdf5::{self, cstr, Dataset, File, Plist, Space};
use crate::status::{Error, Result};
use hdf5_sys::h5a::{H5Acreate2, H5Awrite};
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::H5S_ALL;
use hdf5_sys::h5t::H5T_NATIVE_UINT64;
use std::ffi::c_void;
use std::path::Path;

/// Name of the dataset inside every tile file.
pub const TILE_DATASET: &str = "/tile";

/// Where a tile file keeps its elements: the byte offset of `/tile`'s contiguous data and the
/// file's size, recorded in the master so readers can fetch the bytes without opening the file
/// with HDF5 (see `DirectReader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileBytes {
    pub data_offset: u64,
    pub file_size: u64,
}

/// Writes one tile file at `path`: dataset `/tile` of the tile's shape, contiguous, filled by
/// one `H5Dwrite` straight from the caller's buffer, with the tile's place recorded in the
/// attributes `h5tile_offset` and `h5tile_global_shape`; then syncs it to disk.
///
/// # Safety
/// `buf` must hold `tile.volume()` elements of `dtype`.
pub unsafe fn write_tile(
    path: &Path,
    dtype: Dtype,
    tile: &Tile,
    global: &[u64],
    buf: *const c_void,
    route: &Route,
) -> Result<TileBytes> {
    let data_offset = (|| {
        let _l = hdf5::lock();
        let file = File::create_with(path, &hdf5::gds::tile_access(route.driver_config())?)?;
        let t = dtype.hdf5_type()?;
        let space = Space::simple(&tile.shape)?;
        let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
        let dset = Dataset::create(file.id(), TILE_DATASET, &t, &space, &dcpl)?;
        dset.write(&t, H5S_ALL, H5S_ALL, buf)?;
        write_u64_attribute(&dset, "h5tile_offset", &tile.offset)?;
        write_u64_attribute(&dset, "h5tile_global_shape", global)?;
        let data_offset = hdf5_sys::h5d::H5Dget_offset(dset.id());
        drop(dset);
        file.close()?;
        Ok(data_offset)
    })()?;
    sync_path(path)?;
    let file_size = std::fs::metadata(path)
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    Ok(TileBytes {
        data_offset,
        file_size,
    })
}

/// Name of the master's attribute listing, per mapping, `[data_offset, file_size]` of its tile.
pub const TILE_BYTES_ATTRIBUTE: &str = "h5tile_tile_bytes";

fn write_u64_attribute(dset: &Dataset, name: &str, values: &[u64]) -> Result<()> {
    write_u64_array_attribute(dset, name, &[values.len() as u64], values)
}

fn write_u64_array_attribute(
    dset: &Dataset,
    name: &str,
    dims: &[u64],
    values: &[u64],
) -> Result<()> {
    let space = Space::simple(dims)?;
    let what = || format!("cannot write attribute '{name}'");
    let id = unsafe {
        H5Acreate2(
            dset.id(),
            cstr(name).as_ptr(),
            *H5T_NATIVE_UINT64,
            space.id(),
            H5P_DEFAULT,
            H5P_DEFAULT,
        )
    };
    let attr = hdf5::Attribute::from_id(id, what)?;
    hdf5::check(
        unsafe {
            H5Awrite(
                attr.id(),
                *H5T_NATIVE_UINT64,
                values.as_ptr() as *const c_void,
            )
        },
        what,
    )?;
    Ok(())
}

/// Writes the master file at `path`: `dataset` of `global` shape whose elements come from
/// `sources` (each tile, its file name relative to the master's folder, and where its bytes
/// are); elements no source covers read as zero. Syncing and renaming are the caller's (see
/// `layout::commit`).
pub fn write_master(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    sources: &[(Tile, String, TileBytes)],
    keep_from: Option<&Path>,
) -> Result<()> {
    let _l = hdf5::lock();
    let file = super::keep::new_master(path, keep_from.map(|old| (old, dataset)))?;
    let t = dtype.hdf5_type()?;
    let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
    for (tile, file_name, _) in sources {
        let vspace = Space::simple(global)?;
        vspace.select_block(&tile.offset, &tile.shape)?;
        let src_space = Space::simple(&tile.shape)?;
        // Our file names hold no '%', which HDF5 would read as a pattern (see `tile_dir`).
        debug_assert!(!file_name.contains('%'));
        hdf5::check(
            unsafe {
                H5Pset_virtual(
                    dcpl.id(),
                    vspace.id(),
                    cstr(file_name).as_ptr(),
                    cstr(TILE_DATASET).as_ptr(),
                    src_space.id(),
                )
            },
            || format!("cannot map tile {tile} to '{file_name}'"),
        )?;
    }
    let space = Space::simple(global)?;
    let dset = Dataset::create(file.id(), dataset, &t, &space, &dcpl)?;
    if !sources.is_empty() {
        let bytes: Vec<u64> = sources
            .iter()
            .flat_map(|(_, _, b)| [b.data_offset, b.file_size])
            .collect();
        write_u64_array_attribute(
            &dset,
            TILE_BYTES_ATTRIBUTE,
            &[sources.len() as u64, 2],
            &bytes,
        )?;
    }
    drop(dset);
    file.close()
}
