//! The C ABI of decomposition: `h5tile_partition` proposes each rank's tile of an array.

use super::boundary::{ndim_arg, run, slice_arg};
use crate::status::*;

/// Proposes a balanced block decomposition of `global_shape` over `nranks` ranks and returns
/// the tile of `rank` (0 ≤ rank < nranks): ranks form a process grid whose extents multiply to
/// `nranks`, chosen so tiles are as close to cubes as possible; along an axis, tile extents
/// differ by at most one. Tiles of ranks beyond the data are empty (a zero extent).
///
/// # Safety
/// Pointers must be NULL or valid for `ndim` values.
#[no_mangle]
pub unsafe extern "C" fn h5tile_partition(
    nranks: usize,
    rank: usize,
    ndim: usize,
    global_shape: *const u64,
    tile_offset: *mut u64,
    tile_shape: *mut u64,
) -> h5tile_status {
    run("h5tile_partition", || {
        let ndim = ndim_arg(ndim)?;
        let global = slice_arg(global_shape, ndim, "global_shape")?;
        if nranks == 0 || rank >= nranks {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!("rank {rank} is not in 0..{nranks}"),
            );
        }
        if tile_offset.is_null() || tile_shape.is_null() {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                "tile_offset or tile_shape is NULL",
            );
        }
        let tile = crate::geometry::partition::block(nranks as u64, rank as u64, global);
        std::slice::from_raw_parts_mut(tile_offset, ndim).copy_from_slice(&tile.offset);
        std::slice::from_raw_parts_mut(tile_shape, ndim).copy_from_slice(&tile.shape);
        Ok(())
    })
}
