//! The C ABI of asynchronous writing: `h5tile_write_async` and `h5tile_write_tiles_async`
//! start a write on a thread of its own and return a request; `h5tile_wait` completes one
//! request, `h5tile_fence` every request of this process.

use super::boundary::{clear_out, out_arg, run, slice_arg};
use super::h5tile_write_options;
use super::write::{TilesArg, WriteCall};
use crate::dtype::h5tile_dtype;
use crate::ops::checkpoint::SeriesStep;
use crate::ops::pending;
use crate::ops::write::{self, Checkpoint};
use crate::platform::comm::Comm;
use crate::platform::staging;
use crate::status::*;
use mpi::ffi::MPI_Comm;
use std::ffi::{c_char, c_int, c_void};

/// A write started by `h5tile_write_async` (opaque); `h5tile_wait` completes and frees it.
#[allow(non_camel_case_types)]
pub struct h5tile_request(pub(super) std::sync::Arc<pending::Request>);

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
/// a second thread, and the write completes before this call returns. `path` must not be
/// touched until the request completes. Every request must be completed before `MPI_Finalize`
/// and before the process exits.
///
/// With `H5TILE_SNAPSHOT` in `opts->flags`, the call returns once this rank's bytes are copied
/// into staging memory the library owns (bounded by `opts->staging_bytes`): `buf` may be
/// changed or freed at once, and the file holds what it held at the call. Without it, `buf`
/// must stay alive and unchanged until the request completes. A buffer changed meanwhile never
/// gives `H5TILE_OK` for a file that fails its checksums: each tile is summed again once
/// written, and one that changed while it was being written fails the write on every rank with
/// `H5TILE_ERR_INVALID_ARGUMENT`, the previous file left as it was (a change made before the
/// write read the tile is simply what the file holds).
///
/// # Safety
/// As `h5tile_write`; `buf` must stay valid until the request completes (until the call
/// returns with `H5TILE_SNAPSHOT`).
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
    let call = WriteCall(path, dataset, dtype, ndim, global_shape, opts);
    let tiles = TilesArg::One(tile_offset, tile_shape, buf);
    call.start("h5tile_write_async", comm, tiles, req)
}

/// `h5tile_write_tiles` that returns before the data is written, as `h5tile_write_async`.
/// The array `bufs` itself may be reused at once; the buffers it points to may not, unless
/// `H5TILE_SNAPSHOT` copied them.
///
/// # Safety
/// As `h5tile_write_tiles`; the buffers must stay valid until the request completes (until
/// the call returns with `H5TILE_SNAPSHOT`).
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
    let call = WriteCall(path, dataset, dtype, ndim, global_shape, opts);
    let tiles = TilesArg::Many(ntiles, tile_offsets, tile_shapes, bufs);
    call.start("h5tile_write_tiles_async", comm, tiles, req)
}

impl WriteCall {
    /// Starts the write of `tiles` over `comm` as the `_async` calls do (`name`): `*req` is
    /// NULL (where `req` is not) unless the write started.
    ///
    /// # Safety
    /// As `h5tile_write_tiles_async`.
    pub(super) unsafe fn start(
        self,
        name: &'static str,
        comm: MPI_Comm,
        tiles: TilesArg,
        req: *mut *mut h5tile_request,
    ) -> h5tile_status {
        clear_out(req);
        run(name, || {
            let comm = Comm::from_raw(comm)?;
            let ck = self.args(&comm, tiles)?.checkpoint();
            comm.agree_on(|| write::check(&ck))?;
            start_request(comm, ck, None, req);
            Ok(())
        })
    }
}

/// Starts writing `ck` (of the series step `series`) in the background, and gives the caller
/// the request in `*req`, or the library where `req` is NULL.
///
/// # Safety
/// `ck`'s buffers must stay valid until the request completes; `req` NULL or writable.
pub(super) unsafe fn start_request(
    comm: Comm,
    ck: Checkpoint<'_>,
    series: Option<SeriesStep>,
    req: *mut *mut h5tile_request,
) {
    let request = pending::start(comm, pending::OwnedWrite::new(ck, series));
    if !req.is_null() {
        *req = Box::into_raw(Box::new(h5tile_request(request)));
    }
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
    run("h5tile_wait", || {
        if req.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "req is NULL");
        }
        pending::wait(Box::from_raw(req).0)
    })
}

/// Sets `*done` to 1 if the write `req` has completed, else 0, without waiting (a solver
/// polls between steps). Not collective. The request stays until `h5tile_wait` or
/// `h5tile_fence` completes it, which then returns at once.
///
/// # Safety
/// `req` as for `h5tile_wait`; `done` NULL or writable.
#[no_mangle]
pub unsafe extern "C" fn h5tile_test(req: *mut h5tile_request, done: *mut c_int) -> h5tile_status {
    run("h5tile_test", || {
        let done = out_arg(done, "done")?;
        *done = 0;
        if req.is_null() {
            return fail(H5TILE_ERR_INVALID_ARGUMENT, "req is NULL");
        }
        *done = pending::test(&(*req).0) as c_int;
        Ok(())
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
    run("h5tile_fence", || {
        let comm = Comm::from_raw(comm)?;
        pending::fence(&comm)
    })
}

/// Reserves staging memory for snapshots (`H5TILE_SNAPSHOT`) ahead of the first: a buffer for
/// each of `count` tiles of `tile_bytes[i]` bytes, every page of it faulted in now, then kept
/// for the snapshots that follow. A snapshot's first copy into fresh staging pays a page fault
/// per 4 KiB (measured 25x the next snapshot's cost); a solver calls this once at start-up
/// with its tiles' sizes (each field's tile, in bytes), so that its first snapshot costs what
/// the next ones do. A call for sizes already kept makes nothing more. `staging_bytes` is the
/// budget, as `h5tile_write_options.staging_bytes` gives it (0: `H5TILE_STAGING_BYTES`, else
/// the default); the reservation and the staging the process holds already must fit it.
/// This process only (not collective).
/// `H5TILE_ERR_INVALID_ARGUMENT`: over the budget (nothing is reserved), or `tile_bytes` NULL
/// with `count` > 0; `H5TILE_ERR_IO`: the system refused the memory.
///
/// # Safety
/// `tile_bytes` must point to `count` values (or be NULL with `count` 0).
#[no_mangle]
pub unsafe extern "C" fn h5tile_reserve_staging(
    tile_bytes: *const u64,
    count: usize,
    staging_bytes: u64,
) -> h5tile_status {
    run("h5tile_reserve_staging", || {
        let sizes = slice_arg(tile_bytes, count, "tile_bytes")?;
        let sizes: Vec<usize> = sizes
            .iter()
            .map(|&n| usize::try_from(n).unwrap_or(usize::MAX))
            .collect();
        let budget = staging::budget(staging_bytes)
            .map_err(|why| Error::new(H5TILE_ERR_INVALID_ARGUMENT, why))?;
        staging::pool().reserve(&sizes, budget)
    })
}
