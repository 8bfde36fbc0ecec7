//! Pure geometry, no I/O: tiles (boxes of an N-d array), whether tiles cover a shape, and
//! balanced block decompositions.

pub(crate) mod coverage;
pub(crate) mod partition;
pub(crate) mod tile;
