//! Writing the VDS layout: one HDF5 file per tile, each tile's bytes placed where the master
//! records them, and the master holding the virtual dataset that maps the tiles. Reading any
//! virtual dataset back is the read side's (`ops::read::mappings`, `ops::read::direct`).

use super::blocks::Scheme;
use super::checksums::Summary;
use super::chunks::{encode_tile, Chunks, CHUNK_BYTES};
use super::sync_path;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::codecs::Compression;
use crate::platform::device::{io_threads, Buffer};
use crate::platform::hdf5::{self, Dataset, File, Plist, Space};
use crate::platform::tile_bytes::Durability;
use crate::status::{Error, Result};
use std::path::Path;

/// Name of the dataset inside every tile file.
pub const TILE_DATASET: &str = "/tile";

/// Where a tile file keeps its elements: the byte offset of `/tile`'s contiguous data and the
/// file's size, recorded in the master so readers can fetch the bytes without opening the file
/// with HDF5 (see `DirectReader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileBytes {
    pub data_offset: u64,
    pub file_size: u64,
}

/// Writes one tile file at `path`: dataset `/tile` of the tile's shape, contiguous, filled by
/// one `H5Dwrite` straight from the caller's buffer, with the tile's place recorded in the
/// attributes `h5tile_offset` and `h5tile_global_shape`; then makes it as durable as
/// `durability` says (`SyncLater`: the caller syncs it, with the rank's other tile files).
pub fn write_tile(
    path: &Path,
    dtype: Dtype,
    tile: &Tile,
    global: &[u64],
    buf: Buffer,
    durability: Durability,
) -> Result<TileBytes> {
    let (file, dset) = {
        let _l = hdf5::lock();
        let dcpl = Plist::dataset_create()?;
        let bytes = tile.bytes(dtype.size()).map_or(u64::MAX, |b| b as u64);
        let alignment = hdf5::gds::data_alignment(bytes);
        let (file, dset) = create_tile_file(path, dtype, tile, buf, durability, &dcpl, alignment)?;
        dset.write_buffer(&dtype.hdf5_type()?, buf)?;
        (file, dset)
    };
    finish_tile_file(path, file, dset, tile, global, durability)
}

/// Writes one compressed tile file at `path`, as `write_tile` writes a tile file but with
/// `/tile` chunked (`chunks::Chunks`) and stored through `compression`'s filters: its chunks
/// encoded on this rank's I/O threads and written as stored (`H5Dwrite_chunk`), never
/// through HDF5's one-threaded filter pipeline. Returns where it is (no `data_offset`: a
/// reader decodes its chunks, found through HDF5) and the summary of its uncompressed bytes.
pub fn write_compressed_tile(
    path: &Path,
    dtype: Dtype,
    tile: &Tile,
    global: &[u64],
    buf: Buffer,
    durability: Durability,
    compression: Compression,
) -> Result<(TileBytes, Summary)> {
    let chunks = Chunks::new(&tile.shape, dtype.size(), CHUNK_BYTES);
    let pipeline = compression.pipeline(dtype.size());
    let (file, dset) = {
        let _l = hdf5::lock();
        let dcpl = Plist::chunked_filtered(&chunks.shape, &pipeline)?;
        // The chunks one right after the other, unaligned: the driver then holds them and
        // writes them 8 MiB at a time (aligned, each would be a write of its own).
        create_tile_file(path, dtype, tile, buf, durability, &dcpl, 1)?
    };
    // The lock is taken for each chunk's write only: other threads use HDF5 meanwhile.
    let summary = encode_tile(&chunks, &pipeline, dtype, buf, io_threads(), |i, stored| {
        dset.write_chunk(&chunks.offset(i), stored)
    })?;
    let bytes = finish_tile_file(path, file, dset, tile, global, durability)?;
    Ok((bytes, summary))
}

/// Under the HDF5 lock: the tile file at `path`, through the driver as `buf`'s route and
/// `durability` configure it, with `/tile` of the tile's shape made by `dcpl` and its data
/// aligned to `alignment` bytes.
fn create_tile_file(
    path: &Path,
    dtype: Dtype,
    tile: &Tile,
    buf: Buffer,
    durability: Durability,
    dcpl: &Plist,
    alignment: u64,
) -> Result<(File, Dataset)> {
    let config = buf.route().write_config(durability != Durability::Never);
    let file = File::create_with(path, &hdf5::gds::tile_access(config, alignment)?)?;
    let space = Space::simple(&tile.shape)?;
    let dset = Dataset::create(&file, TILE_DATASET, &dtype.hdf5_type()?, &space, dcpl)?;
    Ok((file, dset))
}

/// Records the tile's place on its written `/tile` (attributes `h5tile_offset` and
/// `h5tile_global_shape`), closes the file and makes it as durable as `durability` says;
/// returns where its bytes are (`NO_OFFSET` unless HDF5 placed them contiguously).
fn finish_tile_file(
    path: &Path,
    file: File,
    dset: Dataset,
    tile: &Tile,
    global: &[u64],
    durability: Durability,
) -> Result<TileBytes> {
    let data_offset = {
        let _l = hdf5::lock();
        write_u64_attribute(&dset, "h5tile_offset", &tile.offset)?;
        write_u64_attribute(&dset, "h5tile_global_shape", global)?;
        let data_offset = dset.data_offset().unwrap_or(NO_OFFSET);
        drop(dset);
        file.close()?;
        data_offset
    };
    if durability == Durability::SyncNow {
        sync_path(path)?;
    }
    let file_size = std::fs::metadata(path)
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    Ok(TileBytes {
        data_offset,
        file_size,
    })
}

/// The `data_offset` recorded for a tile whose storage HDF5 did not place (HDF5's own
/// `HADDR_UNDEF`): readers then leave the tile to HDF5.
pub(crate) const NO_OFFSET: u64 = u64::MAX;

/// Name of the master's attribute listing, per mapping, `[data_offset, file_size]` of its tile.
pub const TILE_BYTES_ATTRIBUTE: &str = "h5tile_tile_bytes";

pub(crate) fn write_u64_attribute(dset: &Dataset, name: &str, values: &[u64]) -> Result<()> {
    dset.write_u64_attribute(name, &[values.len() as u64], values)
}

/// Where a master finds one tile: its file (relative to the master's folder), the dataset
/// there, and where that dataset's bytes are; where the dataset holds the box `within` that
/// several tiles fill (a subfile's coalesced tiles), the tile is that box's part.
#[derive(Clone, Debug)]
pub struct Source {
    pub tile: Tile,
    pub file: String,
    pub dataset: String,
    pub bytes: TileBytes,
    pub within: Option<Tile>,
}

/// Name of the attribute recording, where `H5TILE_LAYOUT_AUTO` chose the layout, the ranks,
/// the nodes they were on and the most tiles a rank held of one dataset (files written before
/// December 2026 record only the first two).
pub const CHOSEN_ON_ATTRIBUTE: &str = "h5tile_chosen_on";

/// Adds to the new master `file` the virtual dataset `dataset` of `global` shape whose
/// elements come from `sources` (`summaries[i]` recording what `sources[i]`'s bytes were, in
/// blocks cut as `scheme` says),
/// with its index (`layout::index`) and, where `H5TILE_LAYOUT_AUTO` chose the layout, the
/// ranks, nodes and tiles a rank it saw (`chosen_on`); elements no source covers read as zero.
pub fn add_virtual_dataset(
    file: &File,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    sources: &[Source],
    (summaries, scheme, chosen_on): (&[Summary], Scheme, Option<[u64; 3]>),
) -> Result<()> {
    let _l = hdf5::lock();
    let t = dtype.hdf5_type()?;
    let dcpl = Plist::dataset_create()?;
    // A coalesced box is mapped once, for its first tile.
    let mut mapped = std::collections::HashSet::new();
    for s in sources {
        let (source_file, source) = (&s.file, &s.dataset);
        let tile = match &s.within {
            Some(within) if !mapped.insert((source_file, source)) => continue,
            Some(within) => within,
            None => &s.tile,
        };
        let vspace = Space::simple(global)?;
        vspace.select_block(&tile.offset, &tile.shape)?;
        let src_space = Space::simple(&tile.shape)?;
        // Our file names hold no '%', which HDF5 would read as a pattern (see `tile_dir`).
        debug_assert!(!source_file.contains('%') && !source.contains('%'));
        dcpl.add_virtual_mapping(&vspace, source_file, source, &src_space)
            .map_err(|e| Error::new(e.status, format!("cannot map tile {tile}: {}", e.message)))?;
    }
    let space = Space::simple(global)?;
    let dset = Dataset::create(file, dataset, &t, &space, &dcpl)?;
    let index = sources.iter().map(|s| super::index::Entry {
        tile: &s.tile,
        file: &s.file,
        dataset: &s.dataset,
        within: s.within.as_ref(),
    });
    super::index::write(&dset, &t, global, index)?;
    if let Some(seen) = chosen_on {
        write_u64_attribute(&dset, CHOSEN_ON_ATTRIBUTE, &seen)?;
    }
    if !sources.is_empty() {
        let bytes: Vec<u64> = sources
            .iter()
            .flat_map(|s| [s.bytes.data_offset, s.bytes.file_size])
            .collect();
        dset.write_u64_attribute(TILE_BYTES_ATTRIBUTE, &[sources.len() as u64, 2], &bytes)?;
        super::checksums::record(&dset, dtype, scheme, summaries)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    /// A large tile's data starts on a 2 MiB boundary, whose hole takes no disk space; a
    /// smaller one's on a 4 KiB boundary, right after HDF5's header.
    #[test]
    fn a_large_tile_s_data_starts_on_a_2_mib_boundary_and_a_small_one_s_on_4_kib() {
        let d = tempfile::tempdir().unwrap();
        for (rows, large) in [(1024u64, true), (16, false)] {
            let tile = Tile::new(vec![0, 0], vec![rows, 1024]);
            let bytes = vec![7u8; (rows * 1024 * 8) as usize];
            let path = d.path().join(format!("t{rows}.h5"));
            let buf = Buffer::Host(&bytes);
            let global = [rows, 1024];
            let placed = write_tile(
                &path,
                Dtype::Float64,
                &tile,
                &global,
                buf,
                Durability::Never,
            )
            .unwrap();
            let at = placed.data_offset;
            let meta = std::fs::metadata(&path).unwrap();
            match large {
                true => {
                    assert_eq!(at % (2 << 20), 0, "{at}");
                    assert!(at > 0, "the header first");
                    assert!(meta.blocks() * 512 < meta.len(), "the hole is not stored");
                }
                false => {
                    assert_eq!(at % 4096, 0, "{at}");
                    assert!(at < 1 << 20, "{at}");
                }
            }
            assert!(placed.file_size >= at + bytes.len() as u64);
            let mut back = vec![0u8; bytes.len()];
            std::os::unix::fs::FileExt::read_exact_at(
                &std::fs::File::open(&path).unwrap(),
                &mut back,
                at,
            )
            .unwrap();
            assert!(back == bytes);
        }
    }

    /// A compressed tile's chunks lie one right after the other, so the driver holds them and
    /// writes them together: aligned, each chunk would be a write of its own.
    #[test]
    fn a_compressed_tile_s_chunks_lie_one_right_after_the_other() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("t.h5");
        let tile = Tile::new(vec![0, 0], vec![1024, 1024]);
        // Varied enough that no chunk compresses to a multiple of 4 KiB by chance.
        let bytes: Vec<u8> = (0..1024 * 1024u64)
            .flat_map(|i| ((i * i) % 1000 + i / 512).to_le_bytes())
            .collect();
        let compression = Compression::new(crate::platform::codecs::Codec::Zstd, 1, true).unwrap();
        let (buf, global, never) = (Buffer::Host(&bytes), [1024, 1024], Durability::Never);
        write_compressed_tile(
            &path,
            Dtype::Float64,
            &tile,
            &global,
            buf,
            never,
            compression,
        )
        .unwrap();
        let chunks = Chunks::new(&tile.shape, 8, CHUNK_BYTES);
        assert!(chunks.count() >= 8, "{}", chunks.count());
        let f = File::open_read(&path).unwrap();
        let dset = Dataset::open(&f, TILE_DATASET).unwrap();
        let stored: Vec<_> = (0..chunks.count())
            .map(|i| dset.stored_chunk(&chunks.offset(i)).unwrap().unwrap())
            .collect();
        let next_to = stored
            .windows(2)
            .filter(|c| c[0].addr + c[0].size == c[1].addr)
            .count();
        // HDF5 may put a block of its own metadata between two of them, now and then.
        assert!(
            next_to + 1 >= stored.len() - 1,
            "{next_to} of {}: {stored:?}",
            stored.len() - 1
        );
        assert!(stored.iter().any(|c| c.addr % 4096 != 0), "{stored:?}");
    }
}
