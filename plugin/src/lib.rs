//! `h5tile_gds`: an HDF5 virtual file driver, loadable by name as a plugin into any HDF5 ≥ 1.14
//! program (`HDF5_PLUGIN_PATH=<dir> HDF5_DRIVER=h5tile_gds`, or
//! `H5Pset_driver_by_name(fapl, "h5tile_gds", config)`).
//!
//! Host memory moves with POSIX I/O, as HDF5's sec2 driver does (`posix`). Device memory,
//! recognised by asking CUDA (`device`), moves by cuFile where it can be used and otherwise
//! through two pinned staging buffers. The plugin links no libhdf5: the few HDF5 functions it
//! calls are found in the host process at run time (`host`).

mod abi;
mod config;
mod device;
mod driver;
mod error;
mod host;
mod locking;
pub mod log;
mod plan;
mod posix;
mod watch;

// The driver's public API: what h5tile, which links this crate and registers the driver in its
// own process, uses. Everything else is private to the driver.
pub use abi::H5FD_class_t;
pub use config::{Config, DriverInfo, Gds};
pub use device::cuda::{copy_to_device, copy_to_host, in_process as cuda_in_process};
pub use device::cufile::driver as cufile_usable;
pub use device::{device_memory, DeviceIo, DevicePtr};
pub use error::{Kind as ErrorKind, CLASS_NAME as ERROR_CLASS};
pub use posix::{advise_huge_pages, OpenMode, PosixFile};
pub use watch::{staged_write, watching_host_writes, watching_staged_writes, Watch};

use std::ffi::c_int;

/// Tells HDF5's plugin loader that this library is a virtual file driver.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> c_int {
    abi::H5PL_TYPE_VFD
}

/// Gives HDF5's plugin loader the driver class: the class whose callbacks call the libhdf5
/// that is loading the plugin (found on the stack), not another one the process holds.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_info() -> *const abi::H5FD_class_t {
    // No panic unwinds into HDF5's plugin loader: NULL tells it the plugin cannot be loaded.
    std::panic::catch_unwind(|| &driver::CLASSES[host::slot_of_caller()] as *const _)
        .unwrap_or(std::ptr::null())
}

/// The driver class, for registering the driver in-process (`H5FDregister`) in the libhdf5
/// holding `hdf5_function` (the address of one of its functions): files opened through it may
/// then carry their configuration as a value ([`config::DriverInfo`]).
pub fn class(hdf5_function: *const std::ffi::c_void) -> &'static abi::H5FD_class_t {
    IN_PROCESS.store(true, std::sync::atomic::Ordering::Relaxed);
    &driver::CLASSES[host::slot_of_library_at(hdf5_function)]
}

static IN_PROCESS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether this copy of the driver was registered in-process by `class` (not loaded by name).
fn registered_in_process() -> bool {
    IN_PROCESS.load(std::sync::atomic::Ordering::Relaxed)
}
