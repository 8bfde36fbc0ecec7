//! The C ABI of reading: `h5tile_read` (one tile per rank, collective) and `h5tile_inspect`
//! (a dataset's element type and extents).

use super::boundary::{array_arg, dataset_arg, out_arg, read_buffer, run, tile_arg};
use super::h5tile_read_options;
use crate::dtype::h5tile_dtype;
use crate::ops::read;
use crate::ops::write;
use crate::platform::comm::Comm;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};

/// Reads the tile at `tile_offset` of extent `tile_shape` of `dataset` in the file `path` into
/// `buf` (dense, row-major, `dtype` elements), converting the element type where HDF5 can.
///
/// Reads any HDF5 dataset: contiguous, chunked, compressed, or virtual (ours, Legate's, h5py's).
/// Before reading a virtual dataset, every source file the tile needs is checked:
/// `H5TILE_ERR_MISSING_TILE` names a missing one (HDF5 alone would return fill values).
/// Collective over `comm` (`MPI_COMM_NULL`: this process alone): each rank reads the tile it
/// names, and a failure on any rank is returned on every rank. All ranks read one version of
/// the file: if a write replaces it during the read, the read starts over on the new version
/// (never a mixture, never an error because the old version's tiles were removed). A tile
/// that does not fit the dataset, or an `ndim` other than its rank, is `H5TILE_ERR_SHAPE`.
/// `opts` may be NULL.
/// `buf` may be CUDA device memory: it is then read in the dataset's own type (another `dtype`
/// is `H5TILE_ERR_DTYPE`), moved as `opts->gds` or `H5TILE_GDS` says.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given; `buf` must have room for the tile.
#[no_mangle]
pub unsafe extern "C" fn h5tile_read(
    comm: MPI_Comm,
    path: *const c_char,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *mut c_void,
    opts: *const h5tile_read_options,
) -> h5tile_status {
    run("h5tile_read", || {
        let comm = Comm::from_raw(comm)?;
        let (path, dataset, dtype, tile, buf, options) = comm.agree_on(|| {
            let (path, dataset) = dataset_arg(path, dataset)?;
            let (dtype, ndim) = array_arg(dtype, ndim)?;
            let tile = tile_arg(ndim, tile_offset, tile_shape)?;
            let options = h5tile_read_options::parse(opts)?;
            let buf = read_buffer(buf, &tile, dtype, options.gds)?;
            Ok((path, dataset, dtype, tile, buf, options))
        })?;
        read::read(&comm, path, dataset, dtype, &tile, buf, options)
    })
}

/// Element type, rank and extents of `dataset` in `path`, without reading data. `shape` must
/// have room for 32 values. Not collective.
///
/// # Safety
/// Pointers must be NULL or valid; `shape` must have room for 32 values.
#[no_mangle]
pub unsafe extern "C" fn h5tile_inspect(
    path: *const c_char,
    dataset: *const c_char,
    dtype: *mut h5tile_dtype,
    ndim: *mut usize,
    shape: *mut u64,
) -> h5tile_status {
    run("h5tile_inspect", || {
        let (path, dataset) = dataset_arg(path, dataset)?;
        let dtype_out = out_arg(dtype, "dtype")?;
        let ndim_out = out_arg(ndim, "ndim")?;
        if shape.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "shape is NULL");
        }
        let (d, dims) = read::inspect(path, dataset)?;
        if dims.len() > write::MAX_NDIM {
            return fail(
                H5TILE_ERR_SHAPE,
                format!(
                    "dataset has {} dimensions; h5tile handles up to 32",
                    dims.len()
                ),
            );
        }
        *dtype_out = d.code();
        *ndim_out = dims.len();
        std::slice::from_raw_parts_mut(shape, dims.len()).copy_from_slice(&dims);
        Ok(())
    })
}

/// The boxes the stored tiles of `dataset` in `path` fill, without reading data: for a
/// virtual dataset (the VDS and subfiled layouts, or another writer's VDS) one box per mapped
/// source, for any other dataset one box of the whole. `*ntiles` is set to their number; where
/// it is at most `capacity`, tile `i`'s offset and extents are written to
/// `offsets[i*ndim ..]` and `shapes[i*ndim ..]` (`ndim` as `h5tile_inspect` gives it). Call
/// with `capacity` 0 (and NULL arrays) to learn the number first. A reader splitting the
/// dataset by its tiles (Dask's chunks, xarray's preferred chunks) asks this. Not collective.
///
/// # Safety
/// Pointers must be NULL or valid; `offsets` and `shapes` must have room for `capacity * ndim`
/// values where `capacity` > 0.
#[no_mangle]
pub unsafe extern "C" fn h5tile_tiles(
    path: *const c_char,
    dataset: *const c_char,
    capacity: usize,
    ntiles: *mut usize,
    offsets: *mut u64,
    shapes: *mut u64,
) -> h5tile_status {
    run("h5tile_tiles", || {
        let (path, dataset) = dataset_arg(path, dataset)?;
        let ntiles = out_arg(ntiles, "ntiles")?;
        let tiles = read::tiles(path, dataset)?;
        *ntiles = tiles.len();
        if tiles.len() > capacity || tiles.is_empty() {
            return Ok(());
        }
        let ndim = tiles[0].ndim();
        let len = tiles.len() * ndim;
        if offsets.is_null() || shapes.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "offsets or shapes is NULL");
        }
        // SAFETY: the caller gave room for `capacity * ndim` values in each, and len <= that.
        let offsets = std::slice::from_raw_parts_mut(offsets, len);
        let shapes = std::slice::from_raw_parts_mut(shapes, len);
        for (i, t) in tiles.iter().enumerate() {
            offsets[i * ndim..][..ndim].copy_from_slice(&t.offset);
            shapes[i * ndim..][..ndim].copy_from_slice(&t.shape);
        }
        Ok(())
    })
}
