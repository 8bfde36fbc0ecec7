//! The single-file layout: one self-contained HDF5 file holding a contiguous dataset, written
//! by all ranks in parallel without parallel HDF5. Rank 0 creates the file with the dataset's
//! storage allocated (and not filled: untouched bytes of a sparse file read as zero) and
//! shares the storage's byte offset; each rank then writes its tiles' rows straight into that
//! region with `pwrite`, from the caller's buffer.

use super::runs::tile_runs;
use super::sync_path;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::device::{DeviceFile, Route};
use crate::platform::hdf5::{self, Dataset, Plist, Space};
use crate::status::{fail, Error, Result, H5TILE_ERR_HDF5};
use hdf5_sys::h5::HADDR_UNDEF;
use hdf5_sys::h5d::{H5D_alloc_time_t, H5D_fill_time_t, H5D_layout_t, H5Dget_offset};
use hdf5_sys::h5p::{H5Pset_alloc_time, H5Pset_fill_time, H5Pset_layout, H5P_CLS_DATASET_CREATE};
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Creates `path` holding `dataset` of `global` shape with its contiguous storage allocated
/// (with `keep_from`, beside everything else of that file), and returns the storage's byte
/// offset in the file (None when the dataset has no elements).
pub fn create(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    keep_from: Option<&Path>,
) -> Result<Option<u64>> {
    let _l = hdf5::lock();
    let file = super::keep::new_master(path, keep_from.map(|old| (old, dataset)))?;
    let t = dtype.hdf5_type()?;
    let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
    let what = || "cannot set up contiguous, pre-allocated storage".to_string();
    unsafe {
        hdf5::check(H5Pset_layout(dcpl.id(), H5D_layout_t::H5D_CONTIGUOUS), what)?;
        hdf5::check(
            H5Pset_alloc_time(dcpl.id(), H5D_alloc_time_t::H5D_ALLOC_TIME_EARLY),
            what,
        )?;
        hdf5::check(
            H5Pset_fill_time(dcpl.id(), H5D_fill_time_t::H5D_FILL_TIME_NEVER),
            what,
        )?;
    }
    let dset = Dataset::create(file.id(), dataset, &t, &Space::simple(global)?, &dcpl)?;
    let offset = unsafe { H5Dget_offset(dset.id()) };
    drop(dset);
    file.close()?;
    let elements = crate::geometry::tile::volume(global);
    match (offset, elements) {
        (_, 0) => Ok(None),
        (HADDR_UNDEF, _) => fail(
            H5TILE_ERR_HDF5,
            format!("HDF5 allocated no storage for '{dataset}'"),
        ),
        (o, _) => Ok(Some(o)),
    }
}

/// Writes `tile` (dense, row-major, `elem` bytes per element, at `buf`) into the contiguous
/// storage at byte `data_offset` of the file at `path`, one `pwrite` per contiguous run (from
/// device memory: one h5tile_gds device transfer per run).
///
/// # Safety
/// `buf` must hold `tile.volume()` elements of `elem` bytes.
pub unsafe fn write_tile(
    path: &Path,
    data_offset: u64,
    global: &[u64],
    tile: &Tile,
    elem: usize,
    buf: *const u8,
    route: &Route,
) -> Result<()> {
    if let Route::Device(ptr, _) = route {
        let mut io = DeviceFile::open(path, true, route)?;
        for (at, start, len) in tile_runs(global, tile, elem) {
            io.write(data_offset + at, ptr.offset(start as usize), len)?;
        }
        drop(io);
        return sync_path(path);
    }
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| Error::io("cannot open", path, &e))?;
    let len = (tile.volume() as usize) * elem;
    let bytes = std::slice::from_raw_parts(buf, len);
    for (at, start, len) in tile_runs(global, tile, elem) {
        let start = start as usize;
        file.write_all_at(&bytes[start..start + len], data_offset + at)
            .map_err(|e| Error::io("cannot write tile data to", path, &e))?;
    }
    drop(file);
    sync_path(path)
}
