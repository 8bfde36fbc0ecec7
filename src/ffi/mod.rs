//! The C ABI. Each function converts its arguments (`boundary`), calls the Rust logic, and
//! converts the result; the doc comments here are the documentation in `h5tile.h`.

pub mod batches;
pub(crate) mod boundary;
pub mod fortran;
pub mod options;

// The element type codes belong to the C API (the header's `H5TILE_BOOL` …).
pub use crate::dtype::{
    h5tile_dtype, H5TILE_BOOL, H5TILE_COMPLEX128, H5TILE_COMPLEX64, H5TILE_FLOAT16, H5TILE_FLOAT32,
    H5TILE_FLOAT64, H5TILE_INT16, H5TILE_INT32, H5TILE_INT64, H5TILE_INT8, H5TILE_UINT16,
    H5TILE_UINT32, H5TILE_UINT64, H5TILE_UINT8,
};
pub use options::*;

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::ops::pending;
use crate::ops::read;
use crate::ops::write::{self, LocalTile, WriteArgs};
use crate::platform::comm::Comm;
use crate::platform::device::{self, Buffer, BufferMut, Gds, Route};
use crate::status::*;
use boundary::{ndim_arg, out_arg, run, slice_arg, str_arg};
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

/// The library version, "MAJOR.MINOR.PATCH" (the same as the `H5TILE_VERSION_*` macros).
#[no_mangle]
pub extern "C" fn h5tile_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
}

/// The message of the last failed h5tile call on this thread ("" after a success). The
/// pointer stays valid until the next h5tile call on this thread; never NULL.
#[no_mangle]
pub extern "C" fn h5tile_last_error() -> *const c_char {
    boundary::last_error_ptr()
}

/// The name of a status code, e.g. "H5TILE_ERR_SHAPE" ("unknown status" for other values).
#[no_mangle]
pub extern "C" fn h5tile_status_name(status: c_int) -> *const c_char {
    let name = u32::try_from(status)
        .ok()
        .and_then(h5tile_status::from_code)
        .map_or(c"unknown status", h5tile_status::name);
    name.as_ptr() as *const c_char
}

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
type TilesArg = (usize, *const u64, *const u64, *const *const c_void);

/// The arguments of a write, checked by every rank and agreed on.
#[allow(clippy::too_many_arguments)]
unsafe fn write_args<'a>(
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

/// Tile `k`'s buffer `ptr` as the logic below the boundary takes it: the slice of the tile's
/// bytes in host memory, or device memory routed by `gds` (`gds=on` without a usable cuFile
/// fails here, before anything is written).
///
/// # Safety
/// `ptr` must be NULL or hold `tile.volume()` elements of `dtype`.
unsafe fn tile_buffer<'a>(
    ptr: *const c_void,
    tile: &Tile,
    k: usize,
    dtype: Dtype,
    gds: Gds,
) -> Result<Buffer<'a>> {
    let Some(bytes) = tile.bytes(dtype.size()) else {
        let why = format!("tile {k} {tile} is too large to address");
        return fail(H5TILE_ERR_INVALID_ARGUMENT, why);
    };
    if bytes == 0 {
        return Ok(Buffer::Host(&[]));
    }
    if ptr.is_null() {
        let why = format!("buffer of non-empty tile {k} {tile} is NULL");
        return fail(H5TILE_ERR_INVALID_ARGUMENT, why);
    }
    Ok(match device::route(ptr, gds)? {
        Route::Host => Buffer::Host(std::slice::from_raw_parts(ptr.cast(), bytes)),
        Route::Device(ptr, gds) => Buffer::Device(ptr, gds),
    })
}

/// The buffer `ptr` that `tile` is read into, as `tile_buffer` makes a write's (device memory
/// routed by `gds`).
///
/// # Safety
/// `ptr` must be NULL or have room for `tile.volume()` elements of `dtype`.
unsafe fn read_buffer<'a>(
    ptr: *mut c_void,
    tile: &Tile,
    dtype: Dtype,
    gds: Gds,
) -> Result<BufferMut<'a>> {
    let Some(bytes) = tile.bytes(dtype.size()) else {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("tile {tile} is too large to address"),
        );
    };
    if bytes == 0 {
        return Ok(BufferMut::Host(&mut []));
    }
    if ptr.is_null() {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!("buffer for tile {tile} is NULL"),
        );
    }
    Ok(match device::route(ptr, gds)? {
        Route::Host => BufferMut::Host(std::slice::from_raw_parts_mut(ptr.cast(), bytes)),
        Route::Device(dst, gds) => BufferMut::Device(dst, gds),
    })
}

/// A write started by `h5tile_write_async` (opaque); `h5tile_wait` completes and frees it.
#[allow(non_camel_case_types)]
pub struct h5tile_request(std::sync::Arc<pending::Request>);

/// `h5tile_write` that returns before the data is written, so I/O overlaps computation.
///
/// Takes the same arguments and follows the same rules (collective over `comm`, atomic
/// replacement, the same status on every rank), plus `req`. Arguments a rank can check alone
/// are checked before it returns (the status says what is wrong, and nothing starts); every
/// other failure is returned by `h5tile_wait` or `h5tile_fence`. On success `*req` is the
/// request, to be completed and freed by `h5tile_wait`; with `req` NULL the library keeps it,
/// and `h5tile_fence` completes it. The write runs on a thread of its own over its own
/// duplicate of `comm`: with `MPI_COMM_NULL` always, with a communicator only where MPI was
/// initialised with `MPI_THREAD_MULTIPLE` (`MPI_Init_thread`); below that level MPI forbids
/// a second thread, and the write completes before this call returns. `buf` must stay alive
/// and untouched until the request completes, and `path` must not be touched meanwhile. Every
/// request must be completed before `MPI_Finalize` and before the process exits.
///
/// # Safety
/// As `h5tile_write`; `buf` must stay valid until the request completes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_async(
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
    req: *mut *mut h5tile_request,
) -> h5tile_status {
    let bufs = [buf];
    h5tile_write_tiles_async(
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
        req,
    )
}

/// `h5tile_write_tiles` that returns before the data is written, as `h5tile_write_async`.
/// The array `bufs` itself may be reused at once; the buffers it points to may not.
///
/// # Safety
/// As `h5tile_write_tiles`; the buffers must stay valid until the request completes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_write_tiles_async(
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
    req: *mut *mut h5tile_request,
) -> h5tile_status {
    if !req.is_null() {
        *req = std::ptr::null_mut();
    }
    run(|| {
        let comm = Comm::from_raw(comm)?;
        let tiles = (ntiles, tile_offsets, tile_shapes, bufs);
        let args = write_args(&comm, path, dataset, dtype, ndim, global_shape, tiles, opts)?;
        comm.agree_on(|| write::check(&args))?;
        let request = pending::start(comm, pending::OwnedWrite::new(&args));
        if !req.is_null() {
            *req = Box::into_raw(Box::new(h5tile_request(request)));
        }
        Ok(())
    })
}

/// Completes the write `req` (waiting for it if it is still running), frees `req`, and returns
/// the write's status (the same on every rank of its communicator, as for `h5tile_write`).
/// Not collective. A request already completed by `h5tile_fence` returns its status at once.
///
/// # Safety
/// `req` must come from `h5tile_write_async` or `h5tile_write_tiles_async` and not have been
/// waited for already.
#[no_mangle]
pub unsafe extern "C" fn h5tile_wait(req: *mut h5tile_request) -> h5tile_status {
    run(|| {
        if req.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "req is NULL");
        }
        pending::wait(Box::from_raw(req).0)
    })
}

/// Completes every write this process has started and not yet waited for, then agrees over
/// `comm` (collective; `MPI_COMM_NULL`: this process alone). Once it has returned on every
/// rank, every file written is complete and visible to any reader. Returns the first failure
/// among the writes of any rank, the same on every rank. Requests it completed stay valid
/// until `h5tile_wait` frees them, which then returns their own status at once.
///
/// # Safety
/// `comm` must be a valid communicator or `MPI_COMM_NULL`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_fence(comm: MPI_Comm) -> h5tile_status {
    run(|| {
        let comm = Comm::from_raw(comm)?;
        pending::fence(&comm)
    })
}

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
    run(|| {
        let comm = Comm::from_raw(comm)?;
        let parsed = comm.agree_on(|| {
            let path = Path::new(str_arg(path, "path")?);
            let dataset = str_arg(dataset, "dataset")?;
            let dtype = Dtype::parse(dtype)?;
            let ndim = ndim_arg(ndim)?;
            let tile = Tile::new(
                slice_arg(tile_offset, ndim, "tile_offset")?.to_vec(),
                slice_arg(tile_shape, ndim, "tile_shape")?.to_vec(),
            );
            let options = h5tile_read_options::parse(opts)?;
            let buf = read_buffer(buf, &tile, dtype, options.gds)?;
            Ok((path, dataset, dtype, tile, buf, options))
        });
        match parsed {
            Ok((path, dataset, dtype, tile, buf, options)) => {
                read::read(&comm, path, dataset, dtype, &tile, buf, options)
            }
            Err(e) => Err(e),
        }
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
    run(|| {
        let path = Path::new(str_arg(path, "path")?);
        let dataset = str_arg(dataset, "dataset")?;
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
    run(|| {
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
