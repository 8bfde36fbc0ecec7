//! The `_f` variants for Fortran: the same collective calls, taking the Fortran handle
//! (`MPI_Fint`) of the communicator. The Fortran module `include/h5tile.f90` calls these.

use super::{
    h5tile_fence, h5tile_read, h5tile_read_options, h5tile_request, h5tile_write_options,
    h5tile_write_tiles, h5tile_write_tiles_async,
};
use crate::dtype::h5tile_dtype;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_int, c_void};

/// Fortran handle of an MPI object (defined by mpi.h; an `int` in Open MPI and MPICH).
#[allow(non_camel_case_types)]
pub type MPI_Fint = c_int;

/// The Fortran value of `MPI_COMM_NULL`. Where C handles are integers (MPICH and its
/// derivatives) the Fortran value is the C value; Open MPI's C handles are pointers and its
/// Fortran handles fixed indices, `MPI_COMM_NULL` being 2.
fn fortran_comm_null() -> MPI_Fint {
    if std::mem::size_of::<MPI_Comm>() == std::mem::size_of::<MPI_Fint>() {
        unsafe { std::mem::transmute_copy(&mpi::ffi::RSMPI_COMM_NULL) }
    } else {
        2
    }
}

/// The C communicator for Fortran handle `comm`. `MPI_Comm_f2c` may only be called once MPI is
/// initialised; before that only `MPI_COMM_NULL` (this process alone) makes sense.
pub(crate) fn comm_from_fortran(comm: MPI_Fint) -> Result<MPI_Comm> {
    let mut initialized = 0;
    unsafe { mpi::ffi::MPI_Initialized(&mut initialized) };
    if initialized != 0 {
        Ok(unsafe { mpi::ffi::MPI_Comm_f2c(comm) })
    } else if comm == fortran_comm_null() {
        Ok(unsafe { mpi::ffi::RSMPI_COMM_NULL })
    } else {
        fail(
            H5TILE_ERR_MPI,
            "a communicator was given but MPI is not initialized (call MPI_Init first, or pass \
             MPI_COMM_NULL to work on this process alone)",
        )
    }
}

fn or_status(comm: MPI_Fint, call: impl FnOnce(MPI_Comm) -> h5tile_status) -> h5tile_status {
    match comm_from_fortran(comm) {
        Ok(c) => call(c),
        Err(e) => super::boundary::run(|| Err(e)),
    }
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
    let bufs = [buf];
    or_status(comm, |c| {
        h5tile_write_tiles(
            c,
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
    or_status(comm, |c| {
        h5tile_write_tiles(
            c,
            path,
            dataset,
            dtype,
            ndim,
            global_shape,
            ntiles,
            tile_offsets,
            tile_shapes,
            bufs,
            opts,
        )
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
    let bufs = [buf];
    if !req.is_null() {
        *req = std::ptr::null_mut();
    }
    or_status(comm, |c| {
        h5tile_write_tiles_async(
            c,
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
            req,
        )
    })
}

/// `h5tile_fence` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_fence`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_fence_f(comm: MPI_Fint) -> h5tile_status {
    or_status(comm, |c| h5tile_fence(c))
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
    or_status(comm, |c| {
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
    if !req.is_null() {
        *req = std::ptr::null_mut();
    }
    or_status(comm, |c| {
        h5tile_write_tiles_async(
            c,
            path,
            dataset,
            dtype,
            ndim,
            global_shape,
            ntiles,
            tile_offsets,
            tile_shapes,
            bufs,
            opts,
            req,
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn before_mpi_init_only_the_null_handle_is_accepted() {
        assert!(comm_from_fortran(fortran_comm_null()).is_ok());
        let e = comm_from_fortran(fortran_comm_null() + 1).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_MPI);
    }
}
