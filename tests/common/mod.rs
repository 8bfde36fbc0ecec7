//! What the property-based tests (fuzz_inputs.rs, fuzz_vds_prefix.rs) share beyond the crate's
//! test kit (`h5tile::internals::testkit`): how many cases a property runs, and the grid they
//! read, the kit's 6x5 grid with values of their own.
#![allow(dead_code)]

use h5tile::internals::testkit::{self, grid_value};
use h5tile::internals::WriteOptions;
use proptest::prelude::ProptestConfig;
use std::path::{Path, PathBuf};

/// `default` cases per property, or `PROPTEST_CASES` for a longer run; nothing persisted.
pub fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// The grid the properties read: element (i, j) = 10 i + j + 0.5 + `shift`, in the kit's four
// tiles (`testkit::GRID_TILES`); tile k is in file `...r0.t<k>.h5`.

pub fn value(i: u64, j: u64, shift: f64) -> f64 {
    grid_value(i, j) + 0.5 + shift
}

/// The 6x5 float64 grid of four tiles as `/g` at `path`, values raised by `shift`.
pub fn write_grid(path: &Path, shift: f64) {
    let options = WriteOptions::default();
    testkit::write_grid(path, "/g", options, |i, j| value(i, j, shift));
}

/// The tile files of the grid's master at `path`, in tile order.
pub fn tile_files(master: &Path) -> Vec<PathBuf> {
    let files = testkit::tile_files(master);
    assert_eq!(files.len(), 4);
    files
}
