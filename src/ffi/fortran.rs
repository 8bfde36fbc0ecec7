//! The `_f` variants for Fortran: the same collective calls, taking the Fortran handle
//! (`MPI_Fint`) of the communicator. The Fortran module `include/h5tile.f90` calls these.

use super::boundary::{clear_out, guard, status_of};
use super::write::{TilesArg, WriteCall};
use super::{
    h5tile_attr_read, h5tile_checkpoint, h5tile_checkpoint_begin, h5tile_fence, h5tile_read,
    h5tile_read_options, h5tile_request, h5tile_restart, h5tile_restart_begin, h5tile_series_begin,
    h5tile_series_latest, h5tile_series_options, h5tile_write_options,
};
use crate::dtype::h5tile_dtype;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};

pub use crate::platform::comm::{comm_from_fortran, MPI_Fint};

/// Makes `call` with the C communicator of the Fortran handle `comm`, in the boundary of the
/// exported function `name`; a handle that has none fails as the call would (status and last
/// error), without making it.
pub(super) fn or_status(
    name: &'static str,
    comm: MPI_Fint,
    call: impl FnOnce(MPI_Comm) -> h5tile_status,
) -> h5tile_status {
    guard(name, || match comm_from_fortran(comm) {
        Ok(c) => call(c),
        Err(e) => status_of(|| Err(e)),
    })
}

/// `h5tile_write` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_write`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_f(
    comm: MPI_Fint,
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
    or_status("h5tile_write_f", comm, |c| {
        call.write("h5tile_write_f", c, tiles)
    })
}

/// `h5tile_write_tiles` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_write_tiles`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_tiles_f(
    comm: MPI_Fint,
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
    or_status("h5tile_write_tiles_f", comm, |c| {
        call.write("h5tile_write_tiles_f", c, tiles)
    })
}

/// `h5tile_write_async` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_write_async`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_async_f(
    comm: MPI_Fint,
    path: *const c_char,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    global_shape: *const u64,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *const c_void,
    opts: *const h5tile_write_options,
    req: *mut *mut h5tile_request,
) -> h5tile_status {
    let call = WriteCall(path, dataset, dtype, ndim, global_shape, opts);
    let tiles = TilesArg::One(tile_offset, tile_shape, buf);
    clear_out(req);
    or_status("h5tile_write_async_f", comm, |c| {
        call.start("h5tile_write_async_f", c, tiles, req)
    })
}

/// `h5tile_fence` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_fence`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_fence_f(comm: MPI_Fint) -> h5tile_status {
    or_status("h5tile_fence_f", comm, |c| h5tile_fence(c))
}

/// `h5tile_read` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_read`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_read_f(
    comm: MPI_Fint,
    path: *const c_char,
    dataset: *const c_char,
    dtype: h5tile_dtype,
    ndim: usize,
    tile_offset: *const u64,
    tile_shape: *const u64,
    buf: *mut c_void,
    opts: *const h5tile_read_options,
) -> h5tile_status {
    or_status("h5tile_read_f", comm, |c| {
        h5tile_read(
            c,
            path,
            dataset,
            dtype,
            ndim,
            tile_offset,
            tile_shape,
            buf,
            opts,
        )
    })
}

/// `h5tile_write_tiles_async` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_write_tiles_async`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_tiles_async_f(
    comm: MPI_Fint,
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
    req: *mut *mut h5tile_request,
) -> h5tile_status {
    let call = WriteCall(path, dataset, dtype, ndim, global_shape, opts);
    let tiles = TilesArg::Many(ntiles, tile_offsets, tile_shapes, bufs);
    clear_out(req);
    or_status("h5tile_write_tiles_async_f", comm, |c| {
        call.start("h5tile_write_tiles_async_f", c, tiles, req)
    })
}

/// `h5tile_checkpoint_begin` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_checkpoint_begin`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_checkpoint_begin_f(
    comm: MPI_Fint,
    path: *const c_char,
    opts: *const h5tile_write_options,
    out: *mut *mut h5tile_checkpoint,
) -> h5tile_status {
    clear_out(out);
    or_status("h5tile_checkpoint_begin_f", comm, |c| {
        h5tile_checkpoint_begin(c, path, opts, out)
    })
}

/// `h5tile_series_begin` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_series_begin`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_series_begin_f(
    comm: MPI_Fint,
    dir: *const c_char,
    step: u64,
    sopts: *const h5tile_series_options,
    opts: *const h5tile_write_options,
    out: *mut *mut h5tile_checkpoint,
) -> h5tile_status {
    clear_out(out);
    or_status("h5tile_series_begin_f", comm, |c| {
        h5tile_series_begin(c, dir, step, sopts, opts, out)
    })
}

/// `h5tile_series_latest` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_series_latest`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_series_latest_f(
    comm: MPI_Fint,
    dir: *const c_char,
    flags: u32,
    step: *mut u64,
    path: *mut c_char,
    path_bytes: usize,
) -> h5tile_status {
    or_status("h5tile_series_latest_f", comm, |c| {
        h5tile_series_latest(c, dir, flags, step, path, path_bytes)
    })
}

/// `h5tile_restart_begin` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_restart_begin`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_restart_begin_f(
    comm: MPI_Fint,
    path: *const c_char,
    opts: *const h5tile_read_options,
    rs: *mut *mut h5tile_restart,
) -> h5tile_status {
    clear_out(rs);
    or_status("h5tile_restart_begin_f", comm, |c| {
        h5tile_restart_begin(c, path, opts, rs)
    })
}

/// `h5tile_attr_read` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_attr_read`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_attr_read_f(
    comm: MPI_Fint,
    path: *const c_char,
    object: *const c_char,
    name: *const c_char,
    dtype: h5tile_dtype,
    count: usize,
    values: *mut c_void,
) -> h5tile_status {
    or_status("h5tile_attr_read_f", comm, |c| {
        h5tile_attr_read(c, path, object, name, dtype, count, values)
    })
}
