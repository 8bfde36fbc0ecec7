//! The C ABI of writing: `h5tile_write` (one tile per rank) and `h5tile_write_tiles` (any
//! number), and the checking of a write's arguments that the asynchronous forms share.

use super::boundary::{array_arg, dataset_arg, run, slice_arg, tile_buffer};
use super::h5tile_write_options;
use crate::dtype::h5tile_dtype;
use crate::geometry::tile::Tile;
use crate::ops::write::{self, LocalTile, WriteArgs};
use crate::platform::comm::Comm;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};

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
    let call = WriteCall(path, dataset, dtype, ndim, global_shape, opts);
    let tiles = TilesArg::One(tile_offset, tile_shape, buf);
    call.write("h5tile_write", comm, tiles)
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
    let call = WriteCall(path, dataset, dtype, ndim, global_shape, opts);
    let tiles = TilesArg::Many(ntiles, tile_offsets, tile_shapes, bufs);
    call.write("h5tile_write_tiles", comm, tiles)
}

/// This rank's tiles as the write calls take them.
#[derive(Clone, Copy)]
pub(super) enum TilesArg {
    /// One tile (`h5tile_write`): its offset, shape and buffer.
    One(*const u64, *const u64, *const c_void),
    /// `ntiles` tiles (`h5tile_write_tiles`): their offsets and shapes (`ndim` values each, one
    /// tile after the other) and their buffers.
    Many(usize, *const u64, *const u64, *const *const c_void),
}

impl TilesArg {
    /// The tiles' offsets and shapes (`ndim` values each, one tile after the other) and their
    /// buffers, checked.
    ///
    /// # Safety
    /// As `h5tile_write_tiles`.
    unsafe fn arrays(&self, ndim: usize) -> Result<(&[u64], &[u64], &[*const c_void])> {
        let (ntiles, offsets, shapes, bufs) = match self {
            TilesArg::One(offset, shape, buf) => (1, *offset, *shape, std::ptr::from_ref(buf)),
            TilesArg::Many(ntiles, offsets, shapes, bufs) => (*ntiles, *offsets, *shapes, *bufs),
        };
        let len = ntiles
            .checked_mul(ndim)
            .ok_or_else(|| Error::new(H5TILE_ERR_INVALID_ARGUMENT, "ntiles too large"))?;
        Ok((
            slice_arg(offsets, len, "tile_offset")?,
            slice_arg(shapes, len, "tile_shape")?,
            slice_arg(bufs, ntiles, "bufs")?,
        ))
    }
}

/// A write's C arguments but its communicator and tiles, in the order the calls take them:
/// `path`, `dataset`, `dtype`, `ndim` and `global_shape` (the same on every rank), and `opts`.
#[derive(Clone, Copy)]
pub(super) struct WriteCall(
    pub(super) *const c_char,
    pub(super) *const c_char,
    pub(super) h5tile_dtype,
    pub(super) usize,
    pub(super) *const u64,
    pub(super) *const h5tile_write_options,
);

impl WriteCall {
    /// Writes `tiles` over `comm` and returns when the data is on disk (the call `name`).
    ///
    /// # Safety
    /// As `h5tile_write_tiles`.
    pub(super) unsafe fn write(
        self,
        name: &'static str,
        comm: MPI_Comm,
        tiles: TilesArg,
    ) -> h5tile_status {
        run(name, || {
            let comm = Comm::from_raw(comm)?;
            write::write(&comm, &self.args(&comm, tiles)?)
        })
    }

    /// The arguments of the write of `tiles`, checked by every rank and agreed on.
    ///
    /// # Safety
    /// As `h5tile_write_tiles`.
    pub(super) unsafe fn args<'a>(self, comm: &Comm, tiles: TilesArg) -> Result<WriteArgs<'a>> {
        let WriteCall(path, dataset, dtype, ndim, global_shape, opts) = self;
        comm.agree_on(|| {
            let (path, dataset) = dataset_arg(path, dataset)?;
            let (dtype, ndim) = array_arg(dtype, ndim)?;
            let global = slice_arg(global_shape, ndim, "global_shape")?;
            let (offsets, shapes, bufs) = tiles.arrays(ndim)?;
            let options = h5tile_write_options::parse(opts)?;
            let tiles = (0..bufs.len())
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
}
