//! The libraries h5tile stands on, each behind one module: `hdf5` (the process-wide lock,
//! RAII handles, typed attributes: the only code calling libhdf5), `comm` (the only code
//! calling MPI), `mpi_libraries` (the MPI libraries loaded in the process, and the warning at
//! load when there are two), `device` (recognising device memory and routing it through the
//! h5tile_gds driver), `tile_bytes` (tile bytes written at known offsets of a file, and made
//! durable), `memory` (page-aligned buffers for the reads the library fills itself), `codecs`
//! (zstd, LZ4, deflate and the byte shuffle, in the formats of HDF5's registered filters),
//! `shuffle` (the byte shuffle itself, vectorised), `spill` (bytes kept a while in bounded
//! memory, the rest in an unnamed temporary file), `staging` (the bounded, reused memory
//! snapshot writes copy tiles into), `xxh3` (the checksums' hash, from the system's xxhash
//! library where it has one).
//!
//! The h5tile_gds driver's crate (`plugin/`) is used from here only: by `device` (its device
//! paths), `tile_bytes` (its file and device writes), `memory` (its huge-page advice), and
//! `hdf5` (`gds` registers the driver in-process; `mod.rs` reads its error class).

pub(crate) mod aligned_read;
pub(crate) mod codecs;
pub(crate) mod comm;
pub(crate) mod device;
pub(crate) mod hdf5;
pub(crate) mod memory;
pub(crate) mod mpi_libraries;
pub(crate) mod shuffle;
pub(crate) mod spill;
pub(crate) mod staging;
pub(crate) mod tile_bytes;
pub(crate) mod xxh3;
