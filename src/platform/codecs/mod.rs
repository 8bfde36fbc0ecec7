//! The codecs of compressed tiles. Each writes exactly the bytes HDF5's registered filter of
//! its id reads and writes, so h5py with `hdf5plugin` and HDF5's tools with a filter plugin
//! path read what h5tile writes, and h5tile reads what they write:
//! - zstd, filter 32015: one zstd frame (its content size in its header, and a checksum of
//!   the content after it); cd_values `[level]`;
//! - LZ4, filter 32004: the original size (8 bytes, big-endian), the block size (4 bytes,
//!   big-endian), then per block its stored size (4 bytes, big-endian) and the block: LZ4's
//!   block format, or the bytes as they are where LZ4 does not shrink them (a stored size
//!   equal to the block's size says so); cd_values `[block size]`;
//! - deflate, filter 1 (built into HDF5): a zlib stream; cd_values `[level]`;
//! - byte shuffle, filter 2 (built into HDF5), before the codec: byte j of every element
//!   together, for each j in turn (bytes past the last whole element left in place);
//!   cd_values `[element size]`.
//!
//! Only bytes move here: `platform::hdf5` sets the filters on datasets, writes and reads
//! chunks, and registers zstd and LZ4 with HDF5 so it reads them without a plugin path.
//! Decoding never trusts its input: a damaged chunk is an error, never a panic or bytes of
//! another length than the chunk's.
//!
//! `settings` (the codec and level users choose), `pipeline` (a dataset's filters, and the
//! chunk encoder and decoder they make), `formats` (the codecs' byte formats).

mod formats;
mod pipeline;
mod settings;
#[cfg(test)]
mod tests;

pub use formats::*;
pub use pipeline::{Decoder, Filter, Pipeline};
pub use settings::{Codec, Compression};

pub(crate) const FILTER_DEFLATE: u32 = 1;
pub(crate) const FILTER_SHUFFLE: u32 = 2;
pub(crate) const FILTER_LZ4: u32 = 32004;
pub(crate) const FILTER_ZSTD: u32 = 32015;

/// What the LZ4 filter splits a chunk into: HDF5's LZ4 filter reads any block size, this one
/// writes chunks of up to 1 MiB (h5tile's chunks) as one block.
pub(crate) const LZ4_BLOCK: u32 = 1 << 20;

/// Largest chunk a filter callback decodes without knowing the chunk's size (HDF5's own limit
/// on a chunk): a damaged size field must not make it allocate more.
pub(crate) const MAX_CHUNK: u64 = u32::MAX as u64;
