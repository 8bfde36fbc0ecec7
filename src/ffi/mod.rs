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
// Batched reading, the `_f` variants for Fortran, the option structs, and what all share.
pub mod batches;
pub(crate) mod boundary;
pub mod fortran;
pub mod options;

pub use asynchronous::{
    h5tile_fence, h5tile_request, h5tile_wait, h5tile_write_async, h5tile_write_tiles_async,
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
    h5tile_series_begin, h5tile_series_latest, H5TILE_SERIES_VERIFY,
};
pub use options::*;
pub use partition::h5tile_partition;
pub use read::{h5tile_inspect, h5tile_read};
pub use write::{h5tile_write, h5tile_write_tiles};

use crate::status::*;
use std::ffi::{c_char, c_int};

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
