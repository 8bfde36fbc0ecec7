//! What the `h5tile` command-line tool (`cli/`) does beside the C API, built with the feature
//! `internals` only (which the tool turns on), so that the library users link holds none of it:
//! `relocate` (the files a master refers to, and pointing a copy at its own tile folder), `copy`
//! (a master copied with its sources, verified), `pack` (a file made self-contained, its virtual
//! datasets contiguous), `remove` (a master removed with its tile files), `files` (the
//! file-system steps these share), and `listing` (what `h5tile ls` and `check` show of a file
//! beyond what a verified restart needs). It stands on `ops::describe` and `ops::verify`; the
//! HDF5 work of copying and relocating is `platform::hdf5::{copy, relocate}`, behind the same
//! feature.

pub(crate) mod copy;
pub(crate) mod files;
pub(crate) mod listing;
pub(crate) mod pack;
pub(crate) mod relocate;
pub(crate) mod remove;
