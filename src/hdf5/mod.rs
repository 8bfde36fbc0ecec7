//! The only place that talks to libhdf5: a process-wide lock (HDF5 is not thread-safe), the
//! library's one-time set-up, turning HDF5 failures into `H5TILE_ERR_HDF5` with the error
//! stack, and small RAII handle types (`handle`).

pub mod gds;
mod handle;

pub use handle::{Attribute, Dataset, File, Plist, Space, Type};

use crate::status::{Error, Result, H5TILE_ERR_HDF5};
use hdf5_sys::h5::herr_t;
use hdf5_sys::h5e::H5E_direction_t::H5E_WALK_DOWNWARD;
use hdf5_sys::h5e::{H5E_error2_t, H5Eclear2, H5Eget_msg, H5Eset_auto2, H5Ewalk2, H5E_DEFAULT};
use parking_lot::{ReentrantMutex, ReentrantMutexGuard};
use std::ffi::{c_uint, c_void, CStr};
use std::sync::Once;

static LOCK: ReentrantMutex<()> = ReentrantMutex::new(());
static INIT: Once = Once::new();

/// Proof that the caller holds the process-wide HDF5 lock. Every HDF5 call in the crate happens
/// while one is alive; it is reentrant so nested helpers can take it again.
pub struct Lock(#[allow(dead_code)] ReentrantMutexGuard<'static, ()>);

/// Takes the HDF5 lock, initialising the library on first use: automatic printing of the
/// error stack is switched off, since h5tile reports errors through its own messages.
pub fn lock() -> Lock {
    let guard = LOCK.lock();
    INIT.call_once(|| unsafe {
        hdf5_sys::h5::H5open();
        H5Eset_auto2(H5E_DEFAULT, None, std::ptr::null_mut());
    });
    Lock(guard)
}

/// Turns a negative HDF5 return value into `H5TILE_ERR_HDF5` whose message is `what` followed
/// by the HDF5 error stack (innermost first), which is then cleared.
pub fn check<T: Copy + PartialOrd + Default>(ret: T, what: impl FnOnce() -> String) -> Result<T> {
    if ret < T::default() {
        Err(error(what()))
    } else {
        Ok(ret)
    }
}

/// An `H5TILE_ERR_HDF5` error for `what`, carrying and clearing the current HDF5 error stack.
pub fn error(what: String) -> Error {
    let stack = take_error_stack();
    if stack.is_empty() {
        Error::new(H5TILE_ERR_HDF5, what)
    } else {
        Error::new(H5TILE_ERR_HDF5, format!("{what}: {stack}"))
    }
}

/// Reads and clears this thread's HDF5 error stack as one line: "func: description (minor)".
pub fn take_error_stack() -> String {
    let _l = lock();
    let mut lines: Vec<String> = Vec::new();
    unsafe {
        H5Ewalk2(
            H5E_DEFAULT,
            H5E_WALK_DOWNWARD,
            Some(collect_error),
            &mut lines as *mut Vec<String> as *mut c_void,
        );
        H5Eclear2(H5E_DEFAULT);
    }
    lines.join("; ")
}

unsafe extern "C" fn collect_error(
    _n: c_uint,
    err: *const H5E_error2_t,
    data: *mut c_void,
) -> herr_t {
    let lines = &mut *(data as *mut Vec<String>);
    let err = &*err;
    let text = |p: *const std::ffi::c_char| {
        if p.is_null() {
            String::new()
        } else {
            CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    let mut minor = [0 as std::ffi::c_char; 128];
    let mut kind = hdf5_sys::h5e::H5E_type_t::H5E_MINOR;
    let n = H5Eget_msg(err.min_num, &mut kind, minor.as_mut_ptr(), minor.len());
    let minor = if n > 0 {
        text(minor.as_ptr())
    } else {
        String::new()
    };
    lines.push(format!(
        "{}: {} ({})",
        text(err.func_name),
        text(err.desc),
        minor
    ));
    0
}

/// A Rust string as a C string for HDF5; interior NULs were rejected at the boundary.
pub fn cstr(s: &str) -> std::ffi::CString {
    std::ffi::CString::new(s).expect("strings reaching HDF5 have no interior NUL")
}
