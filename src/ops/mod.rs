//! The operations of the C API, in plain Rust: `write` (collective write, validation, and agreeing
//! on errors), `read` (collective read of any tile), `batches` (a dataset chunk by chunk),
//! `pending` (writes completing in the background), `snapshot` (their tiles copied into staging
//! memory first), and below these `tile_io` (tile bytes read and checked, and compressed tiles
//! decoded, for `read`, `batches` and `verify`). And what the command-line tool (`cli/`) does
//! beside them: `inspect` (what a file holds, without reading its data), `verify` (whether a
//! virtual dataset's sources are there as recorded), `relocate` (the files a master refers to, and
//! pointing a copy at its own tile folder), `pack` (a file made self-contained, its virtual
//! datasets contiguous); these are built with the feature `internals` only, which the tool turns
//! on, as are the tool's own file work: `copy` (a master copied with its sources, verified),
//! `remove` (a master removed with its tile files), and `files` (the file-system steps these and
//! `pack` share). `checkpoint` (many datasets and attributes assembled call by call, committed by
//! `write`) and `series` (a folder of numbered checkpoints: their names, the record of the latest,
//! retention, and finding the newest complete or verified one) serve the C API; `series` stands on
//! `inspect` and `verify`, which are therefore always built.

pub(crate) mod batches;
pub(crate) mod checkpoint;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod copy;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod files;
pub(crate) mod fnv;
// Its parts for the tool alone are unused in the plain library.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub(crate) mod inspect;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod pack;
pub(crate) mod pending;
pub(crate) mod read;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod relocate;
#[cfg(any(test, feature = "internals"))]
pub(crate) mod remove;
// Its parts for the tool alone are unused in the plain library.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub(crate) mod series;
pub(crate) mod snapshot;
pub(crate) mod tile_io;
// Its parts for the tool alone are unused in the plain library.
#[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
pub(crate) mod verify;
pub(crate) mod write;
