//! The operations of the C API, in plain Rust: `write` (collective write, validation, and agreeing
//! on errors), `read` (collective read of any tile), `batches` (a dataset chunk by chunk),
//! `pending` (writes completing in the background), `snapshot` (their tiles copied into staging
//! memory first), `checkpoint` (many datasets and attributes assembled call by call, committed by
//! `write`), `restart` (a checkpoint's fields and attributes read in one collective call) and
//! `series` (a folder of numbered checkpoints: their names, the record of the latest,
//! retention, and finding the newest complete or verified one). Below them `tile_io` (tile bytes
//! read and checked, and compressed tiles decoded, for `read`, `batches` and `verify`). A
//! verified restart stands on `describe` (what a file holds, without reading its data) and
//! `verify` (whether a virtual dataset's sources are there as recorded, and their checksums),
//! which the `h5tile` tool (`crate::tool`) uses too.

pub(crate) mod batches;
pub(crate) mod checkpoint;
pub(crate) mod describe;
pub(crate) mod fnv;
pub(crate) mod pending;
pub(crate) mod read;
pub(crate) mod restart;
pub(crate) mod series;
pub(crate) mod snapshot;
pub(crate) mod tile_io;
pub(crate) mod transaction;
pub(crate) mod verify;
pub(crate) mod write;
