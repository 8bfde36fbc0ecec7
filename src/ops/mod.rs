//! The operations of the C API, in plain Rust: `write` (collective write, validation, and
//! agreeing on errors), `read` (collective read of any tile), `batches` (a dataset chunk by
//! chunk), `pending` (writes completing in the background).

pub(crate) mod batches;
pub(crate) mod fnv;
pub(crate) mod pending;
pub(crate) mod read;
pub(crate) mod write;
