//! The h5tile_gds driver registered in-process: the plugin's code, linked here as a Rust
//! library, so h5tile can open files through it without HDF5_PLUGIN_PATH (the route device
//! buffers will take).

use super::{check, Handle, Plist};
use crate::status::Result;
use h5tile_gds::{Config, DriverInfo};
use hdf5_sys::h5fd::{H5FD_class_t, H5FDregister};
use hdf5_sys::h5i::hid_t;
use hdf5_sys::h5p::{H5Pset_alignment, H5Pset_driver, H5P_CLS_FILE_ACCESS};
use std::sync::OnceLock;

/// The driver's id in this process's HDF5, registering the class on first use.
pub fn driver() -> Result<hid_t> {
    static ID: OnceLock<hid_t> = OnceLock::new();
    let _l = super::lock();
    if let Some(&id) = ID.get() {
        return Ok(id);
    }
    // The driver's callbacks call this HDF5 (the one H5FDregister belongs to), whatever other
    // libhdf5 the process holds (h5py's, in Python).
    let ours = H5FDregister as *const std::ffi::c_void;
    let class = h5tile_gds::class(ours) as *const h5tile_gds::H5FD_class_t as *const H5FD_class_t;
    let id = check(unsafe { H5FDregister(class) }, || {
        "cannot register the h5tile_gds driver".into()
    })?;
    Ok(*ID.get_or_init(|| id))
}

/// File-access properties that open files through h5tile_gds with configuration `config`
/// (the plugin's `key=value,...` string, as a program loading the plugin by name gives it).
#[cfg(any(test, feature = "internals"))]
pub fn file_access(config: &str) -> Result<Plist> {
    driver()?;
    let _l = super::lock();
    let fapl = Plist::create(*H5P_CLS_FILE_ACCESS)?;
    let config = super::cstr(config);
    check(
        unsafe {
            hdf5_sys::h5p::H5Pset_driver_by_name(fapl.id(), c"h5tile_gds".as_ptr(), config.as_ptr())
        },
        || format!("cannot select the h5tile_gds driver with {config:?}"),
    )?;
    Ok(fapl)
}

/// File-access properties that open files through h5tile_gds with `config` passed as a value
/// (the driver and h5tile share this process: nothing is printed and parsed back).
pub fn driver_access(config: Config) -> Result<Plist> {
    let id = driver()?;
    let _l = super::lock();
    let fapl = Plist::create(*H5P_CLS_FILE_ACCESS)?;
    let info = DriverInfo::new(config);
    check(
        unsafe { H5Pset_driver(fapl.id(), id, (&info as *const DriverInfo).cast()) },
        || format!("cannot select the h5tile_gds driver with {config}"),
    )?;
    Ok(fapl)
}

/// Where the data of a contiguous tile of `bytes` bytes starts in its file: at a multiple of
/// 4 KiB, as O_DIRECT and cuFile want it, and of 2 MiB for a tile of 8 MiB or more. Linux keeps
/// a file's cached pages in folios of up to 2 MiB aligned in the file, and copying into them
/// ran 3-4x faster from a 2 MiB boundary (two processes writing 512 MiB each in 8 MiB pieces,
/// no fsync, ext4 on Linux 6.18: 0.12-0.17 s from offset 0 or 2 MiB, 0.41-1.0 s from 4 or 64
/// KiB). The hole before the data, under 2 MiB, is never written and takes no disk space.
pub fn data_alignment(bytes: u64) -> u64 {
    const LARGE_TILE: u64 = 8 << 20;
    match bytes >= LARGE_TILE {
        true => 2 << 20,
        false => 4096,
    }
}

/// File-access properties for the tile files h5tile writes: through h5tile_gds configured
/// with `config` (see `device::Route::driver_config`: raw data in pieces whose writeback starts
/// at once, so the final fsync waits for the tail only and the copy into the page cache
/// overlaps the disk; device memory by the mode asked for), and the tile's data (every
/// allocation of 64 KiB or more) aligned to `alignment` bytes in the file (`data_alignment`).
pub fn tile_access(config: Config, alignment: u64) -> Result<Plist> {
    let fapl = driver_access(config)?;
    let _l = super::lock();
    check(
        unsafe { H5Pset_alignment(fapl.id(), 64 << 10, alignment) },
        || format!("cannot align the tile file's data to {alignment} bytes"),
    )?;
    Ok(fapl)
}

/// File-access properties for a file whose raw data HDF5 only places (the driver's `reserve`:
/// a compressed subfile, whose ranks write their chunks afterwards), every allocation aligned
/// to `alignment` bytes so no two ranks' chunks share a block.
pub fn reserving_access(alignment: u64) -> Result<Plist> {
    let config = Config {
        reserve: true,
        ..Config::default()
    };
    let fapl = driver_access(config)?;
    let _l = super::lock();
    check(unsafe { H5Pset_alignment(fapl.id(), 1, alignment) }, || {
        format!("cannot align allocations to {alignment} bytes")
    })?;
    Ok(fapl)
}
