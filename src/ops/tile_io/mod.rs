//! Tile bytes moved between files and memory, below the operations that use them (`read`,
//! `batches`, `verify`): `byte_reads` plans and runs reads of byte ranges of tile files on I/O
//! threads (checking the blocks they cover, as `block_check` sums them), `checked_blocks` remembers which blocks a reader
//! has already checked and plans a tile's reads block by block, `compressed` decodes the
//! compressed tiles h5tile writes, checking their chunks.

pub(crate) mod block_check;
pub(crate) mod byte_reads;
pub(crate) mod checked_blocks;
pub(crate) mod compressed;
