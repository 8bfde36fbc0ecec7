//! h5tile: tiled, collective HDF5 I/O for MPI programs, behind a C ABI (`include/h5tile.h`).
//!
//! Each MPI rank writes its own tile of an N-dimensional array, and the tiles appear as one
//! HDF5 dataset; any rank reads any tile back. The layers, from the bottom up (a module uses
//! only those above it in this list):
//!
//! - `status`: the status codes and the error every fallible function returns: where a status
//!   is made. `dtype`: the element types of the C API.
//! - `geometry`: tiles, coverage and decompositions; pure, no I/O.
//! - `platform`: the libraries underneath, one module each: `hdf5` (the only code calling
//!   libhdf5), `comm` (the only code calling MPI), `device` (device memory, through the
//!   h5tile_gds driver of `plugin/`), `tile_bytes` (tile bytes written at known offsets of a
//!   file, from host or device memory). Only `platform` uses the driver's crate directly.
//! - `layout`: where a dataset's bytes live in files, and how a write commits; it decides where
//!   bytes reach the disk (the single file's rows and subfiles' tiles through
//!   `platform::tile_bytes`, tile files through HDF5 and the h5tile_gds driver).
//! - `ops`: the operations: `write`, `read`, `batches`, `pending` (background writes),
//!   checkpoints and series.
//! - `tool`: what the `h5tile` command does beside the C API (copy, pack, remove, listings),
//!   built with the feature `internals` only.
//! - `ffi`: the C ABI: arguments in, statuses out; the only `extern "C"` functions.
//!
//! Beside the layers, for tests only (and the feature `internals`): `testkit`, the fixtures
//! every test shares.

pub(crate) mod dtype;
pub mod ffi;
pub(crate) mod geometry;
pub(crate) mod layout;
pub(crate) mod ops;
pub(crate) mod platform;
pub mod status;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod testkit;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod tool;

/// What the integration tests in `tests/` and the command-line tool (`cli/`) drive directly
/// (with the feature `internals`, which they turn on). Not an API: C programs use `h5tile.h`.
/// Without the feature nothing inside the crate is public but the C ABI, so the compiler
/// reports code nothing uses.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod internals {
    pub use crate::dtype::Dtype;
    pub use crate::geometry::tile::Tile;
    pub use crate::ops::batches::Batches;
    pub use crate::ops::read::{read, ReadOptions};
    pub use crate::ops::write::{
        commit, write, Attribute, AttributeValue, Checkpoint, Field, Layout, LocalTile, WriteArgs,
        WriteOptions,
    };
    pub use crate::platform::comm::Comm;
    pub use crate::platform::device::{host_bytes, host_bytes_mut};
    pub use crate::status;

    /// The fixtures the tests share: the 6x5 grid, whole-array writes, reads by this process
    /// alone, a master's tile files, child processes that hold no other test's files.
    pub mod testkit {
        pub use crate::testkit::*;
    }

    /// What the command-line tool (`cli/`) stands on: describing a file, checking a virtual
    /// dataset's sources and checksums, the files a master refers to, copying, packing and
    /// removing files, and series of checkpoints; the tool only parses its arguments and
    /// prints what these return.
    pub mod tool {
        pub use crate::layout::blocks::Scheme;
        pub use crate::layout::{new_generation, temporary_master, tile_dir};
        pub use crate::ops::describe::{
            describe, root_attributes, DatasetInfo, ListedNumber, ListedValue, Scalar, StorageKind,
            Stored, TileExtremes, TileInfo, VirtualInfo, VirtualLayout,
        };
        pub use crate::ops::series::{
            checkpoint_path, checkpoints, latest, latest_verified, prune, record_latest, recorded,
            step_of, to_prune, Checkpoint, SeriesOptions, LATEST_RECORD,
        };
        pub use crate::ops::verify::{
            check_sources_part, checksum_jobs, checksummed_bytes, default_threads,
            verify_checksums, verify_tiles, Depth, Problem, TileJob,
        };
        pub use crate::platform::codecs::{Codec, Compression};
        pub use crate::tool::copy::{CopiedFile, CopyPlan, CopyReport, Verified};
        pub use crate::tool::files::{make_folders, FileError};
        pub use crate::tool::listing::{
            check_sources, complete_steps, describe_stored, job_bytes, looks_like_series,
            sources_to_open,
        };
        pub use crate::tool::pack::{
            CopiedObject, KeptLink, Omitted, PackCodec, PackOptions, PackPlan, PackReport,
            PackedDataset, PackedFile, OWN_ATTRIBUTE_PREFIX,
        };
        pub use crate::tool::relocate::{point_at_tile_folder, source_files, Place, SourceFile};
        pub use crate::tool::remove::{remove_master, Removal};
    }

    /// The HDF5 handles and the driver registered in-process.
    pub mod hdf5 {
        pub use crate::platform::hdf5::gds;
        pub use crate::platform::hdf5::{
            cstr, error, lock, take_error_stack, work, Attributes, Dataset, File, Handle, Plist,
            Space,
        };
    }
}

/// `include/h5tile.h` is committed so users need no Rust tools to read it; this keeps it equal
/// to what cbindgen generates from the sources (`make header` rewrites it).
#[cfg(test)]
mod header {
    #[test]
    fn header_is_current() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/h5tile.h"));
        check_generated("include/h5tile.h", None, generated);
    }

    /// The Fortran module's status parameters are generated from the same list as the enum
    /// (`make header` rewrites the block between the markers).
    #[test]
    fn fortran_status_codes_are_current() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/status_codes.f90"));
        let markers = ("  ! BEGIN status codes\n", "  ! END status codes\n");
        check_generated("include/h5tile.f90", Some(markers), generated);
    }

    /// Whether the committed file `name` (or its part between the `markers`) is `generated`;
    /// with `H5TILE_BLESS_HEADER` set it is rewritten so first.
    fn check_generated(name: &str, markers: Option<(&str, &str)>, generated: &str) {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        let (head, current, tail) = match markers {
            None => ("", on_disk.as_str(), ""),
            Some((begin, end)) => {
                let (head, rest) = on_disk.split_once(begin).expect("BEGIN marker");
                let (current, tail) = rest.split_once(end).expect("END marker");
                (head, current, tail)
            }
        };
        if std::env::var_os("H5TILE_BLESS_HEADER").is_some() && current != generated {
            let (begin, end) = markers.unwrap_or(("", ""));
            std::fs::write(&path, format!("{head}{begin}{generated}{end}{tail}")).unwrap();
            return;
        }
        assert!(
            current == generated,
            "{name} is stale: run `make header` and commit it"
        );
    }

    /// Every constant the Fortran module declares has the header's value, and every status
    /// code and element type of the header is in the module.
    #[test]
    fn fortran_constants_match_the_header() {
        let header = include_str!(concat!(env!("OUT_DIR"), "/h5tile.h"));
        let module = include_str!("../include/h5tile.f90");
        let in_header = constants(header, &["#define "], " ");
        let mut in_module = std::collections::BTreeMap::new();
        // Fortran declarations continue over lines ending in '&'.
        for decl in module.replace("&\n", " ").lines() {
            if let Some((_, items)) = decl.split_once("parameter, public ::") {
                for item in items.split(',') {
                    if let Some((n, v)) = item.split_once('=') {
                        in_module.insert(n.trim().to_string(), v.trim().to_string());
                    }
                }
            }
        }
        let statuses = constants(header, &["  H5TILE_"], " = ");
        for (name, value) in in_module.iter() {
            let want = in_header.get(name).or_else(|| statuses.get(name));
            assert_eq!(Some(value), want, "{name} in h5tile.f90");
        }
        for name in statuses.keys().chain(in_header.keys().filter(|n| {
            ["BOOL", "INT", "UINT", "FLOAT", "COMPLEX"]
                .iter()
                .any(|t| n.starts_with(&format!("H5TILE_{t}")))
        })) {
            assert!(
                in_module.contains_key(name),
                "{name} is missing from h5tile.f90"
            );
        }
    }

    /// `NAME<sep>VALUE` on lines starting with one of `starts` (the prefix kept when it is
    /// part of the name), as a map.
    fn constants(
        text: &str,
        starts: &[&str],
        sep: &str,
    ) -> std::collections::BTreeMap<String, String> {
        let mut out = std::collections::BTreeMap::new();
        for line in text.lines() {
            for start in starts {
                if let Some(rest) = line.strip_prefix(start) {
                    let rest = if start.trim_start().starts_with("H5TILE_") {
                        line.trim()
                    } else {
                        rest
                    };
                    if let Some((n, v)) = rest.trim_end_matches(',').split_once(sep) {
                        out.insert(n.trim().to_string(), v.trim().to_string());
                    }
                }
            }
        }
        out
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

/// The layering the module docs state, checked on every line of the production sources.
#[cfg(test)]
pub(crate) mod layering;
