//! Checking the checksums the single-file layout records: there a tile's rows lie apart in
//! the file, so a block (its bytes counted row by row within the tile) is gathered from the
//! rows it covers, summed and compared, for every block a read touches. HDF5 reads the
//! elements as for any contiguous dataset; this reads the touched blocks a second time.

use crate::geometry::tile::Tile;
use crate::layout::checksums::{block_sum, Recorded};
use crate::layout::runs::tile_runs;
use crate::layout::single::TILES_ATTRIBUTE;
use crate::platform::hdf5::{Dataset, Storage};
use crate::status::{Error, Result, H5TILE_ERR_CORRUPT, H5TILE_ERR_MISSING_TILE};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The recorded tiles of a contiguous dataset h5tile wrote, and their checksums.
pub struct TileChecks {
    path: PathBuf,
    /// The file, opened with the dataset (the caller's `on_one_version` makes it the version
    /// HDF5 opened): a reader goes on checking the version it opened after a newer write has
    /// replaced it.
    file: std::fs::File,
    dataset: String,
    data_offset: u64,
    global: Vec<u64>,
    elem: usize,
    tiles: Vec<Tile>,
    checksums: Recorded,
}

impl TileChecks {
    /// What `dset` (of `path`) records, None when it records nothing to check or a record
    /// that does not hang together with the dataset (then it reads as any contiguous one).
    pub fn read(path: &Path, dataset: &str, dset: &Dataset) -> Option<TileChecks> {
        let Ok(Storage::Contiguous(Some(data_offset))) = dset.storage() else {
            return None;
        };
        let global = dset.space().ok()?.dims().ok()?;
        let elem = dset.dtype().ok()?.size();
        let (dims, boxes) = dset.u64_attribute(TILES_ATTRIBUTE)?;
        let ndim = global.len();
        if dims.len() != 3 || dims[1] != 2 || dims[2] != ndim as u64 {
            return None;
        }
        let tiles: Vec<Tile> = boxes
            .chunks_exact(2 * ndim)
            .map(|b| Tile::new(b[..ndim].to_vec(), b[ndim..].to_vec()))
            .collect();
        if !tiles.iter().all(|t| t.fits_in(&global)) {
            return None;
        }
        let checksums = Recorded::read(dset, tiles.len())?;
        // Unreadable: HDF5 just read the dataset's header from it, so this is no record.
        let file = std::fs::File::open(path).ok()?;
        Some(TileChecks {
            file,
            path: path.to_path_buf(),
            dataset: dataset.to_string(),
            data_offset,
            global,
            elem,
            tiles,
            checksums,
        })
    }

    /// Checks every recorded block `want` touches.
    pub fn check(&self, want: &Tile) -> Result<()> {
        let cannot = |e: std::io::Error| {
            Error::new(
                H5TILE_ERR_MISSING_TILE,
                format!(
                    "cannot read '{}' to check its checksums ({e})",
                    self.path.display()
                ),
            )
        };
        let file = &self.file;
        let block = self.checksums.block;
        let mut scratch = Vec::new();
        for (i, tile) in self.tiles.iter().enumerate() {
            let (Some(sums), Some(common)) = (self.checksums.tile(i), want.intersection(tile))
            else {
                continue;
            };
            let len = tile.volume() as u64 * self.elem as u64;
            if sums.len() as u64 != len.div_ceil(block) {
                let why = format!("records {} checksums for its {len} bytes", sums.len());
                return Err(self.corrupt(tile, &why));
            }
            let runs = tile_runs(&self.global, tile, self.elem);
            for k in touched_blocks(tile, &common, self.elem as u64, block) {
                let (start, end) = (k * block, len.min((k + 1) * block));
                scratch.resize((end - start) as usize, 0);
                // The rows (runs, in the tile's order) that hold bytes start..end of the tile.
                for &(at, from, n) in &runs {
                    let (a, b) = (from.max(start), (from + n as u64).min(end));
                    if a < b {
                        let into = &mut scratch[(a - start) as usize..(b - start) as usize];
                        file.read_exact_at(into, self.data_offset + at + (a - from))
                            .map_err(cannot)?;
                    }
                }
                if block_sum(&scratch) != sums[k as usize] {
                    let why = format!(
                        "bytes {start}..{end} of the tile (counted row by row within it) do \
                         not match their checksum"
                    );
                    return Err(self.corrupt(tile, &why));
                }
            }
        }
        Ok(())
    }

    fn corrupt(&self, tile: &Tile, why: &str) -> Error {
        Error::new(
            H5TILE_ERR_CORRUPT,
            format!(
                "file '{}' holding tile {tile} of '{}': {why}",
                self.path.display(),
                self.dataset
            ),
        )
    }
}

/// The blocks of `tile`'s bytes (`elem` per element, blocks of `block`) that its part `common`
/// touches: from the block of common's first element to that of its last.
fn touched_blocks(
    tile: &Tile,
    common: &Tile,
    elem: u64,
    block: u64,
) -> std::ops::RangeInclusive<u64> {
    let linear = |at: &[u64]| {
        (0..tile.ndim()).fold(0u64, |acc, a| {
            acc * tile.shape[a] + (at[a] - tile.offset[a])
        })
    };
    let last: Vec<u64> = (0..common.ndim())
        .map(|a| common.offset[a] + common.shape[a] - 1)
        .collect();
    (linear(&common.offset) * elem / block)..=((linear(&last) + 1) * elem - 1) / block
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_blocks_a_box_touches_run_from_its_first_to_its_last_element() {
        let tile = Tile::new(vec![10, 0], vec![4, 8]); // 32 elements of 4 bytes: 128 bytes
        let row2 = Tile::new(vec![12, 0], vec![1, 8]);
        assert_eq!(touched_blocks(&tile, &row2, 4, 32), 2..=2);
        let corner = Tile::new(vec![10, 7], vec![2, 1]); // elements 7 and 15
        assert_eq!(touched_blocks(&tile, &corner, 4, 32), 0..=1);
        assert_eq!(touched_blocks(&tile, &tile, 4, 1 << 20), 0..=0);
    }
}
