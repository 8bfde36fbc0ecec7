//! The C ABI of batched reading: an opaque iterator, opened collectively, then advanced and
//! freed by the rank that owns it.

use super::boundary::{clear_out, dataset_arg, guard, ndim_arg, out_arg, run, slice_arg};
use super::fortran::{or_status, MPI_Fint};
use super::h5tile_read_options;
use crate::dtype::h5tile_dtype;
use crate::ops::batches::Batches;
use crate::platform::comm::Comm;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_void};

/// An open batched read (opaque); free it with `h5tile_batches_free`.
#[allow(non_camel_case_types)]
pub struct h5tile_batches(Batches);

/// Opens `dataset` in `path` for reading chunk by chunk. Collective over `comm`.
///
/// `chunk_shape` (`ndim` entries, `ndim` equal to the dataset's rank, each > 0) cuts the
/// dataset into chunks numbered in row-major order of their offsets (last axis fastest); chunks
/// at the far edges are clipped (an extent of 5 in chunks of 2 gives 2, 2, 1), and a chunk
/// larger than the dataset gives one clipped chunk. With `MPI_COMM_NULL` this process gets
/// every chunk; with a communicator each rank gets a contiguous, balanced run of them, in
/// order, and every chunk goes to exactly one rank. While the caller works on one chunk, the
/// next is read by a background thread; an open iterator holds about one chunk of memory (two
/// for chunked files whose storage chunks straddle the requested ones), whatever the dataset
/// size. Elements come in the dataset's type, or in `opts->dtype` (converted by HDF5). Reads
/// every layout `h5tile_read` reads; a missing virtual-dataset source fails the chunk that
/// needs it with `H5TILE_ERR_MISSING_TILE` (unless `H5TILE_READ_FILL_MISSING`). All ranks
/// deal from one version of the file, and the iterator keeps the tile files of its chunks
/// open, so writes that replace the dataset afterwards do not disturb it: it delivers the
/// version it opened. On success `*out` is the iterator; on failure it is NULL.
///
/// # Safety
/// Pointers must be NULL or valid for the lengths given; `comm` a valid communicator.
#[no_mangle]
pub unsafe extern "C" fn h5tile_batches_open(
    comm: MPI_Comm,
    path: *const c_char,
    dataset: *const c_char,
    ndim: usize,
    chunk_shape: *const u64,
    opts: *const h5tile_read_options,
    out: *mut *mut h5tile_batches,
) -> h5tile_status {
    clear_out(out);
    run("h5tile_batches_open", || {
        let comm = Comm::from_raw(comm)?;
        let (out, path, dataset, chunk, options) = comm.agree_on(|| {
            let out = out_arg(out, "out")?;
            let (path, dataset) = dataset_arg(path, dataset)?;
            let ndim = ndim_arg(ndim)?;
            let chunk = slice_arg(chunk_shape, ndim, "chunk_shape")?;
            let options = h5tile_read_options::parse(opts)?;
            Ok((out, path, dataset, chunk, options))
        })?;
        let it = Batches::open(&comm, path, dataset, chunk, &options)?;
        *out = Box::into_raw(Box::new(h5tile_batches(it)));
        Ok(())
    })
}

/// `h5tile_batches_open` taking a Fortran communicator handle.
///
/// # Safety
/// As `h5tile_batches_open`.
#[no_mangle]
pub unsafe extern "C" fn h5tile_batches_open_f(
    comm: MPI_Fint,
    path: *const c_char,
    dataset: *const c_char,
    ndim: usize,
    chunk_shape: *const u64,
    opts: *const h5tile_read_options,
    out: *mut *mut h5tile_batches,
) -> h5tile_status {
    clear_out(out);
    or_status("h5tile_batches_open_f", comm, |c| {
        h5tile_batches_open(c, path, dataset, ndim, chunk_shape, opts, out)
    })
}

/// Delivers this rank's next chunk: copies it (dense, row-major) into `buf` (host or device
/// memory; a chunk for device memory is read ahead in host memory and copied over), writes its offset
/// and (clipped) shape to `chunk_offset` and `chunk_shape` (room for ndim values each), and sets
/// `*done` to false; once every chunk was delivered, sets `*done` to true and writes nothing
/// else. A `buf_bytes` smaller than the chunk fails with `H5TILE_ERR_INVALID_ARGUMENT` and does
/// not advance (`h5tile_batches_info` gives the largest chunk's size). A read error is returned
/// for the chunk it happened on, and the iterator moves past that chunk. Not collective.
///
/// # Safety
/// `it` must come from `h5tile_batches_open`; other pointers NULL or valid for their sizes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_batches_next(
    it: *mut h5tile_batches,
    buf: *mut c_void,
    buf_bytes: usize,
    chunk_offset: *mut u64,
    chunk_shape: *mut u64,
    done: *mut bool,
) -> h5tile_status {
    run("h5tile_batches_next", || {
        let it = &mut out_arg(it, "it")?.0;
        let done = out_arg(done, "done")?;
        if it.next_bytes().is_none() {
            *done = true;
            return Ok(());
        }
        if chunk_offset.is_null() || chunk_shape.is_null() || buf.is_null() {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                "buf, chunk_offset or chunk_shape is NULL",
            );
        }
        let delivered = match crate::platform::device::device_memory(buf) {
            Some(dst) => it.next_into(buf_bytes, |chunk| {
                crate::platform::device::copy_to_device(dst, chunk)
            }),
            None => it.next(std::slice::from_raw_parts_mut(buf as *mut u8, buf_bytes)),
        };
        if let Some(tile) = delivered? {
            place_out(&tile, chunk_offset, chunk_shape);
            *done = false;
        }
        Ok(())
    })
}

/// Delivers this rank's next chunk without copying it: sets `*data` to the chunk's bytes
/// (dense, row-major) inside the iterator, valid until the next call on `it` or
/// `h5tile_batches_free`; otherwise as `h5tile_batches_next` (once every chunk was delivered,
/// `*done` is true and `*data` NULL). While the caller works on the chunk, the iterator reads
/// the next one into a second buffer, so memory stays at two chunks, as with
/// `h5tile_batches_next` and the caller's own buffer; where the rank has no core to spare
/// (`H5TILE_THREADS`), one buffer, filled at each call. Not collective.
///
/// # Safety
/// `it` must come from `h5tile_batches_open`; other pointers NULL or valid for their sizes.
#[no_mangle]
pub unsafe extern "C" fn h5tile_batches_next_view(
    it: *mut h5tile_batches,
    data: *mut *const c_void,
    chunk_offset: *mut u64,
    chunk_shape: *mut u64,
    done: *mut bool,
) -> h5tile_status {
    run("h5tile_batches_next_view", || {
        let it = &mut out_arg(it, "it")?.0;
        let data = out_arg(data, "data")?;
        let done = out_arg(done, "done")?;
        if chunk_offset.is_null() || chunk_shape.is_null() {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                "chunk_offset or chunk_shape is NULL",
            );
        }
        *data = std::ptr::null();
        match it.next_view()? {
            None => *done = true,
            Some((tile, bytes)) => {
                place_out(&tile, chunk_offset, chunk_shape);
                *data = bytes.as_ptr() as *const c_void;
                *done = false;
            }
        }
        Ok(())
    })
}

/// Writes a delivered chunk's offset and shape to the caller's arrays (ndim values each).
unsafe fn place_out(
    tile: &crate::geometry::tile::Tile,
    chunk_offset: *mut u64,
    chunk_shape: *mut u64,
) {
    let n = tile.ndim();
    std::slice::from_raw_parts_mut(chunk_offset, n).copy_from_slice(&tile.offset);
    std::slice::from_raw_parts_mut(chunk_shape, n).copy_from_slice(&tile.shape);
}

/// What an iterator delivers: the element type, the bytes of its largest chunk (enough for
/// every `buf`), and how many chunks this rank gets in all. Any out-pointer may be NULL.
///
/// # Safety
/// `it` must come from `h5tile_batches_open`; out-pointers NULL or valid.
#[no_mangle]
pub unsafe extern "C" fn h5tile_batches_info(
    it: *const h5tile_batches,
    dtype: *mut h5tile_dtype,
    max_chunk_bytes: *mut usize,
    nchunks: *mut u64,
) -> h5tile_status {
    run("h5tile_batches_info", || {
        let it = &it
            .as_ref()
            .ok_or_else(|| Error::new(H5TILE_ERR_INVALID_ARGUMENT, "it is NULL"))?
            .0;
        if let Some(d) = dtype.as_mut() {
            *d = it.dtype().code();
        }
        if let Some(b) = max_chunk_bytes.as_mut() {
            *b = it.max_chunk_bytes();
        }
        if let Some(n) = nchunks.as_mut() {
            *n = it.count() as u64;
        }
        Ok(())
    })
}

/// Frees an iterator, stopping its read-ahead thread (which finishes at most the chunk it is
/// reading) and closing the file; NULL is fine. It may be freed before its last chunk.
///
/// # Safety
/// `it` must be NULL or come from `h5tile_batches_open`, and not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn h5tile_batches_free(it: *mut h5tile_batches) {
    guard("h5tile_batches_free", || {
        if !it.is_null() {
            drop(Box::from_raw(it));
        }
    })
}
