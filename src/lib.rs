//! h5tile: tiled, collective HDF5 I/O for MPI programs, behind a C ABI (`include/h5tile.h`).
//!
//! Each MPI rank writes its own tile of an N-dimensional array, and the tiles appear as one
//! HDF5 dataset; any rank reads any tile back. The modules, from the bottom up:
//! `status` (status codes and errors), `tile`, `coverage` and `partition` (pure geometry),
//! `dtype` (element types in HDF5), `device` (recognising device buffers and routing them), `hdf5` (the lock and RAII handles: the only code calling
//! libhdf5), `comm` (every MPI call), `layout` (where bytes live and how a write commits),
//! `write`, `read` and `batches` (the collective operations), `pending` (writes completing in
//! the background), `ffi` (the C ABI).

pub mod batches;
pub mod comm;
pub mod coverage;
pub mod device;
pub mod dtype;
pub mod ffi;
pub mod hdf5;
pub mod layout;
pub mod partition;
pub mod pending;
pub mod read;
pub mod status;
pub mod tile;
pub mod write;

/// `include/h5tile.h` is committed so users need no Rust tools to read it; this keeps it equal
/// to what cbindgen generates from the sources (`make header` rewrites it).
#[cfg(test)]
mod header {
    #[test]
    fn header_is_current() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/h5tile.h"));
        let committed = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("include/h5tile.h");
        if std::env::var_os("H5TILE_BLESS_HEADER").is_some() {
            std::fs::write(&committed, generated).unwrap();
        }
        let on_disk = std::fs::read_to_string(&committed).unwrap_or_default();
        assert!(
            on_disk == generated,
            "include/h5tile.h is stale: run `make header` and commit it"
        );
    }

    #[test]
    fn header_version_macros_match_cargo() {
        let h = include_str!(concat!(env!("OUT_DIR"), "/h5tile.h"));
        for (name, value) in [
            ("MAJOR", env!("CARGO_PKG_VERSION_MAJOR")),
            ("MINOR", env!("CARGO_PKG_VERSION_MINOR")),
            ("PATCH", env!("CARGO_PKG_VERSION_PATCH")),
        ] {
            assert!(
                h.contains(&format!("#define H5TILE_VERSION_{name} {value}\n")),
                "{name}"
            );
        }
    }
}
