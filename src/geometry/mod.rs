//! Pure geometry, no I/O: tiles (boxes of an N-d array), whether tiles cover a shape,
//! balanced block decompositions, the chunk grids batched reads deal over ranks, and the
//! bounded boxes `pack` copies a dataset in.

pub(crate) mod chunk_grid;
pub(crate) mod coverage;
pub(crate) mod partition;
// Only `pack` (the tool) copies datasets in slabs.
#[cfg(any(test, feature = "internals"))]
pub(crate) mod slabs;
pub(crate) mod tile;
