//! The `h5tile` tool run as users run it, on files h5tile wrote (VDS and subfiled layouts), on
//! a plain HDF5 file, and on virtual datasets h5tile did not write (relative and absolute
//! sources): what each command prints (text and JSON), its exit status, and what it does to
//! the files.

use h5tile::internals::hdf5::{self, Dataset, File, Handle, Plist, Space};
use h5tile::internals::testkit::{
    forget_chunk_checksums, grid_value, read_f64, read_into, tile_files, write_tiles, GRID_TILES,
};
use h5tile::internals::tool::{Codec, Compression};
use h5tile::internals::{host_bytes, Dtype, Layout, LocalTile, ReadOptions, Tile, WriteOptions};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

#[path = "../kit/mod.rs"]
mod kit;
use kit::*;

mod check;
mod compressed;
mod cp;
mod foreign;
mod ls;
mod pack;
mod rm;
mod series;
mod series_and_json;
mod usage;
