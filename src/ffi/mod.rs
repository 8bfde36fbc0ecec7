//! The C ABI, one module per concept of the C API; here, the library-wide functions. Each
//! function converts its arguments (`boundary`), calls the Rust logic, and converts the
//! result; the doc comments are the documentation in `h5tile.h`.

// `h5tile.h` lists the functions in the order of these declarations (cbindgen reads this
// file's items, then each module's in turn); the comments keep rustfmt from sorting them.
//
// `h5tile_write`, `h5tile_write_tiles`, and the checks of a write's arguments.
mod write;
// Writes completing in the background: the `_async` forms, `h5tile_wait`, `h5tile_fence`.
mod asynchronous;
// `h5tile_read`, `h5tile_inspect`.
mod read;
// `h5tile_partition`.
mod partition;
// Checkpoints (many datasets and attributes in one commit) and series of them.
mod checkpoint;
// A restart: a checkpoint's fields and attributes read in one collective call.
mod restart;
// Independent writers and one commit: `h5tile_txn_*`.
mod transaction;
// Batched reading, the `_f` variants for Fortran, the option structs (and their values taken
// from the environment), and what all share.
pub mod batches;
pub(crate) mod boundary;
pub mod fortran;
mod option_values;
pub mod options;

pub use asynchronous::{
    h5tile_fence, h5tile_request, h5tile_reserve_staging, h5tile_wait, h5tile_write_async,
    h5tile_write_tiles_async,
};
// The element type codes belong to the C API (the header's `H5TILE_BOOL` …).
pub use crate::dtype::{
    h5tile_dtype, H5TILE_BOOL, H5TILE_COMPLEX128, H5TILE_COMPLEX64, H5TILE_FLOAT16, H5TILE_FLOAT32,
    H5TILE_FLOAT64, H5TILE_INT16, H5TILE_INT32, H5TILE_INT64, H5TILE_INT8, H5TILE_UINT16,
    H5TILE_UINT32, H5TILE_UINT64, H5TILE_UINT8,
};
pub use checkpoint::{
    h5tile_attr_read, h5tile_checkpoint, h5tile_checkpoint_abort, h5tile_checkpoint_add,
    h5tile_checkpoint_attr, h5tile_checkpoint_attr_string, h5tile_checkpoint_begin,
    h5tile_checkpoint_commit, h5tile_checkpoint_commit_async, h5tile_checkpoint_fail,
    h5tile_series_begin, h5tile_series_latest, h5tile_series_skipped, H5TILE_SERIES_VERIFY,
};
pub use options::*;
pub use partition::h5tile_partition;
pub use read::{h5tile_inspect, h5tile_read, h5tile_tiles};
pub use restart::{
    h5tile_restart, h5tile_restart_abort, h5tile_restart_attr, h5tile_restart_begin,
    h5tile_restart_field, h5tile_restart_read,
};
pub use transaction::{
    h5tile_txn, h5tile_txn_abort, h5tile_txn_attr, h5tile_txn_attr_string, h5tile_txn_begin,
    h5tile_txn_commit, h5tile_txn_declare, h5tile_txn_free, h5tile_txn_record_free,
    h5tile_txn_resume, h5tile_txn_token, h5tile_txn_write_tile,
};
pub use write::{h5tile_write, h5tile_write_tiles};

use crate::status::*;
use std::ffi::{c_char, c_int};

/// The library version, "MAJOR.MINOR.PATCH" (the same as the `H5TILE_VERSION_*` macros).
#[no_mangle]
pub extern "C" fn h5tile_version() -> *const c_char {
    boundary::guard("h5tile_version", || {
        concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr() as *const c_char
    })
}

/// For language bindings: makes this thread's next h5tile call fail on this rank with `status`
/// (an error code) and the message `why` (the binding's own error, e.g. an exception raised
/// while it converted its arguments) where that call checks its path and dataset arguments
/// (`h5tile_write`, `h5tile_write_tiles` and their `_async` forms, `h5tile_read`,
/// `h5tile_batches_open`, `h5tile_inspect`), whatever they are; a next call that takes none
/// lets it lapse. A collective call still takes part, so every rank fails, the others'
/// messages naming this rank and `why` rather than the placeholder arguments the binding
/// passed. Not collective. A `status` that is not an error code is
/// `H5TILE_ERR_INVALID_ARGUMENT`, and nothing is set.
///
/// # Safety
/// `why` must be NULL or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn h5tile_refuse_next(status: c_int, why: *const c_char) -> h5tile_status {
    boundary::run("h5tile_refuse_next", || {
        let status = match h5tile_status::from_code(status as u32) {
            Some(s) if s != H5TILE_OK => s,
            _ => {
                return fail(
                    H5TILE_ERR_INVALID_ARGUMENT,
                    format!("status {status} is not an error code"),
                )
            }
        };
        let why = match why.is_null() {
            true => "refused by the caller".to_string(),
            false => std::ffi::CStr::from_ptr(why).to_string_lossy().into_owned(),
        };
        boundary::refuse_next(Error::new(status, why));
        Ok(())
    })
}

/// The message of the last failed h5tile call on this thread ("" after a success). The
/// pointer stays valid until the next h5tile call on this thread; never NULL.
#[no_mangle]
pub extern "C" fn h5tile_last_error() -> *const c_char {
    boundary::guard("h5tile_last_error", boundary::last_error_ptr)
}

/// The operating system's error number (`errno`, e.g. `EACCES`) behind the last failed h5tile
/// call on this thread, whose message `h5tile_last_error()` gives; 0 after a success or a failure
/// with no operating-system cause. In a collective call every rank has the number of the rank
/// whose failure it returns.
#[no_mangle]
pub extern "C" fn h5tile_last_errno() -> c_int {
    boundary::guard("h5tile_last_errno", boundary::last_errno)
}

/// The name of a status code, e.g. "H5TILE_ERR_SHAPE" ("unknown status" for other values).
#[no_mangle]
pub extern "C" fn h5tile_status_name(status: c_int) -> *const c_char {
    boundary::guard("h5tile_status_name", || {
        let name = u32::try_from(status)
            .ok()
            .and_then(h5tile_status::from_code)
            .map_or(c"unknown status", h5tile_status::name);
        name.as_ptr() as *const c_char
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::h5tile_dtype;

    /// `h5tile_refuse_next` fails the next call that checks a path and a dataset with the
    /// binding's status and reason, once; a call that takes none lets it lapse; a status that
    /// is not an error is refused, and sets nothing.
    #[test]
    fn a_refusal_fails_the_next_call_that_takes_a_dataset_once() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("g.h5");
        crate::testkit::write_grid_in(&path, crate::ops::write::Layout::Vds);
        let (c_path, c_name) = (
            std::ffi::CString::new(path.to_str().unwrap()).unwrap(),
            std::ffi::CString::new("/g").unwrap(),
        );
        let inspect = || {
            let (mut dtype, mut ndim, mut shape) =
                (H5TILE_FLOAT64 as h5tile_dtype, 0usize, [0u64; 32]);
            unsafe {
                read::h5tile_inspect(
                    c_path.as_ptr(),
                    c_name.as_ptr(),
                    &mut dtype,
                    &mut ndim,
                    shape.as_mut_ptr(),
                )
            }
        };
        let last = || {
            unsafe { std::ffi::CStr::from_ptr(h5tile_last_error()) }
                .to_string_lossy()
                .into_owned()
        };
        let why = c"element type object is not one h5tile stores";
        assert_eq!(unsafe { h5tile_refuse_next(5, why.as_ptr()) }, H5TILE_OK);
        assert_eq!(inspect(), H5TILE_ERR_DTYPE);
        assert_eq!(last(), why.to_str().unwrap());
        assert_eq!(inspect(), H5TILE_OK, "once");
        // A call that takes no dataset lets it lapse.
        assert_eq!(unsafe { h5tile_refuse_next(1, why.as_ptr()) }, H5TILE_OK);
        let (mut offset, mut shape) = ([0u64; 1], [0u64; 1]);
        let global = [4u64];
        let status = unsafe {
            partition::h5tile_partition(
                1,
                0,
                1,
                global.as_ptr(),
                offset.as_mut_ptr(),
                shape.as_mut_ptr(),
            )
        };
        assert_eq!(status, H5TILE_OK);
        assert_eq!(inspect(), H5TILE_OK);
        for not_an_error in [0, -1, 1000] {
            let status = unsafe { h5tile_refuse_next(not_an_error, why.as_ptr()) };
            assert_eq!(status, H5TILE_ERR_INVALID_ARGUMENT);
            assert_eq!(inspect(), H5TILE_OK);
        }
    }

    /// `h5tile_last_errno` is the error number of the last failure on this thread: that of an
    /// operating-system error, 0 after a success or a failure with no such cause.
    #[test]
    fn the_last_errno_is_that_of_the_last_failure() {
        let denied = std::io::Error::from_raw_os_error(libc::EACCES);
        let io = || {
            Err(Error::io(
                "cannot create",
                std::path::Path::new("/x"),
                &denied,
            ))
        };
        assert_eq!(boundary::run("test", io), H5TILE_ERR_IO);
        assert_eq!(h5tile_last_errno(), libc::EACCES);
        assert_eq!(boundary::run("test", || Ok(())), H5TILE_OK);
        assert_eq!(h5tile_last_errno(), 0);
        assert_eq!(boundary::run("test", io), H5TILE_ERR_IO);
        assert_eq!(
            boundary::run("test", || fail(H5TILE_ERR_SHAPE, "gap")),
            H5TILE_ERR_SHAPE
        );
        assert_eq!(h5tile_last_errno(), 0);
        // Each thread its own.
        assert_eq!(boundary::run("test", io), H5TILE_ERR_IO);
        std::thread::spawn(|| assert_eq!(h5tile_last_errno(), 0))
            .join()
            .unwrap();
        assert_eq!(h5tile_last_errno(), libc::EACCES);
    }
}
