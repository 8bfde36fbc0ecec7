//! The C ABI of writing: `h5tile_write` (one tile per rank) and `h5tile_write_tiles` (any
//! number), and the checking of a write's arguments that the asynchronous forms share.

use super::boundary::{ndim_arg, run, slice_arg, str_arg, tile_buffer};
use super::h5tile_write_options;
use crate::dtype::{h5tile_dtype, Dtype};
use crate::geometry::tile::Tile;
use crate::ops::write::{self, LocalTile, WriteArgs};
use crate::platform::comm::Comm;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};
use std::path::Path;

/// Writes one tile per rank of an N-d array as the dataset `dataset` of the file `path`.
///
/// Collective over `comm` (`MPI_COMM_NULL`: this process alone, no MPI call). Every rank passes
/// the same `path`, `dataset` (e.g. "/data" or "/group/x"; missing groups are created), `dtype`,
/// `ndim` (1 to 32) and `global_shape`; each passes its own tile (`tile_offset`, `tile_shape`; a
/// zero extent means "no data", and `buf` may then be NULL) and a dense row-major buffer of
/// `tile_shape` elements. Tiles must lie inside the shape, not overlap, and cover it unless
/// `H5TILE_ALLOW_PARTIAL`. Missing parent directories are created. An existing `path` is
/// replaced atomically: readers see the old dataset or the new one, a crash leaves the old one
/// readable, and no tile file of the old one remains afterwards. When the call returns, the
/// data is on disk and any process may open it. A failure on any rank is returned on every
/// rank with the same status. `opts` may be NULL for the defaults. `buf` may be CUDA device
/// memory, written straight from the device as `opts->gds` or `H5TILE_GDS` says.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given; `comm` a valid communicator.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write(
    comm: MPI_Comm,
    path: *const c_char,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    global_shape: *const u64,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *const c_void,
    opts: *const h5tile_write_options,
) -> h5tile_status {
    let bufs = [buf];
    h5tile_write_tiles(
        comm,
        path,
        dataset,
        dtype,
        ndim,
        global_shape,
        1,
        tile_offset,
        tile_shape,
        bufs.as_ptr(),
        opts,
    )
}

/// `h5tile_write` with `ntiles` tiles on this rank (0 is allowed): tile `i` has offset
/// `tile_offsets[i*ndim .. i*ndim+ndim]`, shape `tile_shapes[i*ndim ..]` and buffer `bufs[i]`.
/// Ranks may pass different numbers of tiles; all tiles of all ranks together obey the rules
/// of `h5tile_write`.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given; `comm` a valid communicator.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_tiles(
    comm: MPI_Comm,
    path: *const c_char,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    global_shape: *const u64,
    ntiles: usize,
    tile_offsets: *const u64,
    tile_shapes: *const u64,
    bufs: *const *const c_void,
    opts: *const h5tile_write_options,
) -> h5tile_status {
    run(|| {
        let comm = Comm::from_raw(comm)?;
        let args = write_args(
            &comm,
            path,
            dataset,
            dtype,
            ndim,
            global_shape,
            (ntiles, tile_offsets, tile_shapes, bufs),
            opts,
        )?;
        write::write(&comm, &args)
    })
}

/// The tiles argument of the write calls: how many, their offsets, shapes and buffers.
pub(super) type TilesArg = (usize, *const u64, *const u64, *const *const c_void);

/// The arguments of a write, checked by every rank and agreed on.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn write_args<'a>(
    comm: &Comm,
    path: *const c_char,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    global_shape: *const u64,
    (ntiles, tile_offsets, tile_shapes, bufs): TilesArg,
    opts: *const h5tile_write_options,
) -> Result<WriteArgs<'a>> {
    comm.agree_on(|| {
        let path = Path::new(str_arg(path, "path")?);
        let dataset = str_arg(dataset, "dataset")?;
        let dtype = Dtype::parse(dtype)?;
        let ndim = ndim_arg(ndim)?;
        let global = slice_arg(global_shape, ndim, "global_shape")?;
        let len = ntiles
            .checked_mul(ndim)
            .ok_or_else(|| Error::new(H5TILE_ERR_INVALID_ARGUMENT, "ntiles too large"))?;
        let offsets = slice_arg(tile_offsets, len, "tile_offset")?;
        let shapes = slice_arg(tile_shapes, len, "tile_shape")?;
        let bufs = slice_arg(bufs, ntiles, "bufs")?;
        let options = h5tile_write_options::parse(opts)?;
        let tiles = (0..ntiles)
            .map(|k| {
                let tile = Tile::new(
                    offsets[k * ndim..][..ndim].to_vec(),
                    shapes[k * ndim..][..ndim].to_vec(),
                );
                let buf = tile_buffer(bufs[k], &tile, k, dtype, options.gds)?;
                Ok(LocalTile { tile, buf })
            })
            .collect::<Result<_>>()?;
        Ok(WriteArgs {
            path,
            dataset,
            dtype,
            global,
            tiles,
            options,
        })
    })
}
