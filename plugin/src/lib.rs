//! The `h5tile_gds` HDF5 virtual file driver (issue 4): POSIX I/O for host memory, cuFile for
//! device memory, loadable by name as an HDF5 plugin and registered in-process by `h5tile`.
//!
//! This crate is the workspace member reserved for the driver; it exports nothing yet, so no
//! HDF5 program can mistake it for a working driver.
