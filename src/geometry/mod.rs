//! Pure geometry, no I/O: tiles (boxes of an N-d array), whether tiles cover a shape,
//! balanced block decompositions, and the chunk grids batched reads deal over ranks.

pub(crate) mod chunk_grid;
pub(crate) mod coverage;
pub(crate) mod partition;
pub(crate) mod tile;
