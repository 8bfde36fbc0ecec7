//! The compressed tiles h5tile wrote, decoded by h5tile (outside the HDF5 lock) with their
//! blocks checked, and the explanation of HDF5's failure to read one.

use super::super::mappings::{corrupt, locate_source, resolve_source, source_error};
use super::{DirectReader, OPEN_SOURCES};
use crate::geometry::tile::Tile;
use crate::layout::blocks::Scheme;
use crate::layout::vds::NO_OFFSET;
use crate::ops::tile_io::compressed::{CompressedTile, Sums};
use crate::status::{Error, Result};
use std::path::PathBuf;

/// The compressed tiles a `DirectReader` has opened.
pub(super) struct DecodedTiles {
    /// Recently read tiles of mappings whose bytes the master places nowhere, most recent
    /// first: (mapping index, the compressed tile h5tile decodes, None for another kind of
    /// tile, which HDF5 reads).
    pub(super) recent: Vec<(usize, Option<Decoded>)>,
    /// Those opened by `hold`, per mapping, read from instead of opening them again.
    pub(super) held: Vec<Option<Decoded>>,
}

/// A compressed tile h5tile decodes, with its file's path (for messages).
pub(super) type Decoded = std::sync::Arc<(CompressedTile, PathBuf)>;

/// A part of a compressed tile a read decodes once planned, outside the HDF5 lock: its `runs`
/// (`CompressedTile::read`), with `checked` against the tile's recorded checksums,
/// and with `deliver` copied into the caller's buffer (else HDF5 has read and converted them).
pub(super) struct Decode {
    pub(super) mapping: usize,
    pub(super) tile: Decoded,
    pub(super) runs: Vec<(u64, u64, usize)>,
    pub(super) checked: bool,
    pub(super) deliver: bool,
}

/// The most bytes of a tile decoded to find why HDF5 could not read it (`failed_read`): an
/// error path is no reason to allocate as much as the read itself.
const EXPLAIN_BYTES: usize = 256 << 20;

impl DirectReader {
    /// HDF5 failed to read `common` of mapping `i`'s tile (converting it, unchecked). Where
    /// that is a compressed tile, decoding the part here (up to `EXPLAIN_BYTES` of it) finds a
    /// damaged chunk, which is then `H5TILE_ERR_CORRUPT` naming it; otherwise HDF5's error,
    /// after the tile and its file.
    pub(super) fn failed_read(&mut self, i: usize, common: &Tile, e: Error) -> Error {
        let elem = self.stored.as_ref().map_or(0, |(d, _)| d.size());
        let bytes = common.volume() as usize * elem;
        let part = (bytes <= EXPLAIN_BYTES)
            .then(|| self.compressed_part(i, common, common, true))
            .and_then(|d| d.ok().flatten());
        if let Some(d) = part {
            let mut scratch = vec![0u8; bytes];
            if let Err(damage) = self.decode(d, &mut scratch) {
                return damage;
            }
        }
        let m = &self.mappings[i];
        let (path, _) = resolve_source(&self.master, &m.file);
        let why = format!("cannot be read by HDF5 ({})", e.message);
        source_error(
            e.status,
            &path,
            &m.region,
            &self.dataset,
            &self.master,
            &why,
        )
    }

    /// Decodes (checks, delivers into `buf`) what `d` says; a damaged tile is
    /// `H5TILE_ERR_CORRUPT` naming its file, the tile and the chunk.
    pub(super) fn decode(&self, d: Decode, buf: &mut [u8]) -> Result<()> {
        let m = &self.mappings[d.mapping];
        let (tile, path) = &*d.tile;
        // The stored chunks where their checksums are recorded (far fewer bytes to hash than
        // the decoded ones), else the decoded blocks.
        let sums = match (d.checked, &self.checksums) {
            (true, Some(c)) => match c.chunks(d.mapping) {
                Some(chunks) => Sums {
                    blocks: None,
                    chunks: Some(chunks),
                },
                None => Sums {
                    // h5tile cuts compressed tiles in runs; boxes are left unchecked here.
                    blocks: match c.scheme {
                        Scheme::Runs { block } => c.tile(d.mapping).map(|sums| (sums, block)),
                        Scheme::Boxes { .. } => None,
                    },
                    chunks: None,
                },
            },
            _ => Sums::default(),
        };
        tile.read(&d.runs, sums, d.deliver.then_some(buf))
            .map_err(|why| corrupt(path, &m.region, &self.dataset, &self.master, &why))
    }

    /// What decodes `common` (virtual-dataset coordinates) of mapping `i`'s tile into its
    /// place in a buffer laid out as `want`, when it is a compressed tile h5tile wrote (its
    /// master records no place for its bytes): the blocks the read touches checked against
    /// their checksums, and with `deliver` false only checked (HDF5 reads and converts). None
    /// where HDF5 is to read it, and nothing needs checking.
    pub(super) fn compressed_part(
        &mut self,
        i: usize,
        common: &Tile,
        want: &Tile,
        deliver: bool,
    ) -> Result<Option<Decode>> {
        let unplaced = self
            .tile_bytes
            .as_ref()
            .is_some_and(|b| b[i].data_offset == NO_OFFSET);
        let Some((stored, _)) = self.stored.as_ref().filter(|_| unplaced) else {
            return Ok(None);
        };
        let elem = stored.size();
        let checked = self.checksums.as_ref().is_some_and(|c| c.tile(i).is_some());
        if !deliver && !checked {
            return Ok(None);
        }
        let Some(tile) = self.compressed_tile(i, elem)? else {
            return Ok(None);
        };
        let runs = self.mappings[i].runs(common, want, elem);
        Ok(Some(Decode {
            mapping: i,
            tile,
            runs,
            checked,
            deliver,
        }))
    }

    /// Mapping `i`'s tile, of elements of `elem` bytes, as a compressed tile h5tile decodes
    /// (None: another kind of tile), opened once and kept among the last few used.
    pub(super) fn compressed_tile(&mut self, i: usize, elem: usize) -> Result<Option<Decoded>> {
        if let Some(held) = &self.compressed.held[i] {
            return Ok(Some(held.clone()));
        }
        let recent = &mut self.compressed.recent;
        if let Some(pos) = recent.iter().position(|(j, _)| *j == i) {
            let entry = recent.remove(pos);
            recent.insert(0, entry.clone());
            return Ok(entry.1);
        }
        let m = &self.mappings[i];
        let path = match &self.held[i] {
            Some((_, path)) => path.clone(),
            None => locate_source(&self.master, &m.file, &m.region, &self.dataset)?,
        };
        let slot = self.source(i)?;
        let m = &self.mappings[i];
        let (_, _, dset) = &self.open[slot];
        let tile = match CompressedTile::open(dset, &path, &m.region.shape, elem)? {
            Ok(tile) => tile.map(|t| std::sync::Arc::new((t, path))),
            Err(why) => return Err(corrupt(&path, &m.region, &self.dataset, &self.master, &why)),
        };
        self.compressed.recent.truncate(OPEN_SOURCES - 1);
        self.compressed.recent.insert(0, (i, tile.clone()));
        Ok(tile)
    }
}
