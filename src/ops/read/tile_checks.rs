//! Checking the checksums the single-file layout records: there a tile's rows lie apart in
//! the file, so a block (its bytes counted row by row within the tile) is gathered from the
//! rows it covers, summed and compared, for every block a read touches. Where every element a
//! read wants lies in checksummed tiles, stored in the type asked for, the read is delivered
//! from those checked blocks (`read_checked`: each byte read once); elsewhere HDF5 reads the
//! elements as for any contiguous dataset, and `check` reads the touched blocks a second time.

use crate::dtype::Dtype;
use crate::geometry::coverage;
use crate::geometry::tile::Tile;
use crate::layout::blocks::BlockGrid;
use crate::layout::checksums::Recorded;
use crate::layout::placement::Placement;
use crate::layout::runs::box_runs;
use crate::layout::single::recorded_tiles;
use crate::ops::tile_io::byte_reads::{file_id, ByteReads, ReadCounts};
use crate::ops::tile_io::checked_blocks::{CheckedBlocks, SummedTile};
use crate::platform::hdf5::{Dataset, Storage};
use crate::status::{Error, Result, H5TILE_ERR_CORRUPT, H5TILE_ERR_MISSING_TILE};
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
    /// The element type, where the file stores it as h5tile's own (native) type: reads in it
    /// can be delivered from the checked blocks.
    raw: Option<Dtype>,
    tiles: Vec<Tile>,
    /// No two recorded tiles overlap (as h5tile writes them): a read whose parts in the
    /// tiles add up to it is covered exactly. Found out at the first read that needs it.
    apart: Option<bool>,
    /// The file's identity (`file_id`), which the checked blocks are of.
    id: (u64, u64),
    checksums: Recorded,
    /// The blocks earlier reads checked: later ones take their bytes without summing them
    /// (the file is the one opened with the dataset, throughout).
    checked: CheckedBlocks,
    /// What the reads of checked blocks have cost so far.
    counts: ReadCounts,
}

impl TileChecks {
    /// What `dset` (of `path`) records, None when it records nothing to check or a record
    /// that does not hang together with the dataset (then it reads as any contiguous one).
    pub fn read(path: &Path, dataset: &str, dset: &Dataset) -> Option<TileChecks> {
        let Ok(Storage::Contiguous(Some(data_offset))) = dset.storage() else {
            return None;
        };
        let global = dset.space().ok()?.dims().ok()?;
        let file_type = dset.dtype().ok()?;
        let elem = file_type.size();
        let raw = Dtype::stored_as_is(&file_type);
        let tiles = recorded_tiles(dset, &global)?;
        let checksums = Recorded::read(dset, tiles.len())?;
        // Unreadable: HDF5 just read the dataset's header from it, so this is no record.
        let file = std::fs::File::open(path).ok()?;
        let checked = CheckedBlocks::default();
        let id = file_id(&file).ok()?;
        Some(TileChecks {
            apart: None,
            id,
            checked,
            counts: ReadCounts::default(),
            file,
            path: path.to_path_buf(),
            dataset: dataset.to_string(),
            data_offset,
            global,
            elem,
            raw,
            tiles,
            checksums,
        })
    }

    /// Checks every recorded block `want` touches (after HDF5 has read it) that no earlier
    /// read checked.
    pub fn check(&mut self, want: &Tile) -> Result<()> {
        let parts: Vec<(usize, Tile)> = (0..self.tiles.len())
            .filter(|&i| self.checksums.tile(i).is_some())
            .filter_map(|i| Some((i, want.intersection(&self.tiles[i])?)))
            .collect();
        self.reading(&parts);
        self.execute(self.plan(want, &parts, false)?, &mut [])
    }

    /// The tiles of `parts` are read from this reader's file: blocks checked there count.
    fn reading(&mut self, parts: &[(usize, Tile)]) {
        for (i, _) in parts {
            self.checked.reading_from(*i, self.id);
        }
    }

    /// Reads `want` as `dtype` into `buf` (dense, row-major) from the checked blocks: each
    /// block the read touches is read once, checked, and its part of `want` delivered (rows
    /// of the file that lie within what `want` takes of a block go straight to their place).
    /// Returns false, having read nothing, unless every element of `want` lies in exactly one
    /// checksummed tile and the file stores `dtype` itself; then HDF5 reads, and `check`.
    pub fn read_checked(&mut self, want: &Tile, dtype: Dtype, buf: &mut [u8]) -> Result<bool> {
        let block = self.checksums.scheme.block();
        if self.raw != Some(dtype) || !block.is_multiple_of(self.elem as u64) {
            return Ok(false);
        }
        let (global, tiles) = (&self.global, &self.tiles);
        if !*self
            .apart
            .get_or_insert_with(|| coverage::check(global, tiles).is_ok())
        {
            return Ok(false);
        }
        let mut parts: Vec<(usize, Tile)> = Vec::new();
        for (i, tile) in self.tiles.iter().enumerate() {
            if let Some(common) = want.intersection(tile) {
                if self.checksums.tile(i).is_none() {
                    return Ok(false);
                }
                parts.push((i, common));
            }
        }
        let covered: u128 = parts.iter().map(|(_, c)| c.volume()).sum();
        if covered != want.volume() {
            return Ok(false);
        }
        self.reading(&parts);
        self.execute(self.plan(want, &parts, true)?, buf)?;
        Ok(true)
    }

    /// The reads of every block that the parts of `want` (tile number, its common box with
    /// `want`) touch, each checked, and with `deliver` the parts' bytes to their places in
    /// `want`'s buffer. Of a block an earlier read checked, only the parts are read (nothing
    /// without `deliver`).
    fn plan(&self, want: &Tile, parts: &[(usize, Tile)], deliver: bool) -> Result<ByteReads> {
        let total = if deliver {
            want.volume() as usize * self.elem
        } else {
            0
        };
        let mut plan = ByteReads::new(total);
        let file = self
            .file
            .try_clone()
            .map_err(|e| unreadable(&self.path, &e))?;
        let f = plan.add_file(file, self.path.clone(), 0, String::new());
        let (elem, scheme) = (self.elem, self.checksums.scheme);
        for (i, common) in parts {
            let tile = &self.tiles[*i];
            // (byte in the tile, byte in the buffer, length), in the tile's order.
            let runs = box_runs(
                &tile.shape,
                &common.offset_in(tile),
                &want.shape,
                &common.offset_in(want),
                &common.shape,
                elem,
            );
            let grid = scheme.grid(&tile.shape, elem);
            let summed = SummedTile {
                file: f,
                tile: *i,
                place: &Placement::rows_of(self.data_offset, &self.global, tile, elem),
                grid: &grid,
                sums: self.sums(*i, &grid, tile)?,
            };
            summed.plan_runs(&mut plan, &self.checked, runs, deliver);
        }
        Ok(plan)
    }

    fn execute(&mut self, plan: ByteReads, buf: &mut [u8]) -> Result<()> {
        let (path, dataset, tiles) = (&self.path, &self.dataset, &self.tiles);
        self.counts += self
            .checked
            .run(plan, buf, |_, _, mismatch, e| match mismatch {
                Some(m) => corrupt(path, dataset, &tiles[m.label.tile], &m.to_string()),
                None => unreadable(path, e),
            })?;
        Ok(())
    }

    /// What the reads of checked blocks have cost so far.
    pub fn counts(&self) -> ReadCounts {
        self.counts
    }

    /// Tile `i`'s recorded checksums (the caller knows it has some), as many as its bytes
    /// have blocks (`grid`).
    fn sums(&self, i: usize, grid: &BlockGrid, tile: &Tile) -> Result<&[u64]> {
        let sums = self.checksums.tile(i).unwrap_or_default();
        let len = grid.len();
        match sums.len() as u64 == grid.count() {
            true => Ok(sums),
            false => {
                let why = format!("records {} checksums for its {len} bytes", sums.len());
                Err(corrupt(&self.path, &self.dataset, tile, &why))
            }
        }
    }
}

/// `path` cannot be read to check its checksums.
fn unreadable(path: &Path, e: &std::io::Error) -> Error {
    let why = format!(
        "cannot read '{}' to check its checksums ({e})",
        path.display()
    );
    Error::new(H5TILE_ERR_MISSING_TILE, why)
}

/// `tile` of `dataset`, held in the file at `path`, is not as written: `why`.
fn corrupt(path: &Path, dataset: &str, tile: &Tile, why: &str) -> Error {
    let held = format!(
        "file '{}' holding tile {tile} of '{dataset}'",
        path.display()
    );
    Error::new(H5TILE_ERR_CORRUPT, format!("{held}: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileExt;

    #[test]
    fn reads_the_checksummed_tiles_cover_come_from_the_checked_blocks() {
        use crate::ops::write::Layout;
        use crate::platform::device::bytes_mut;
        use crate::platform::hdf5::{self, File};
        use crate::testkit::{grid_values, write_grid_in};
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("grid.h5");
        // 6 x 5 float64 in four tiles (2 x 2), element (i, j) = 10 i + j.
        write_grid_in(&path, Layout::Single);
        let open = || {
            let _l = hdf5::lock();
            let file = File::open_read(&path).unwrap();
            let dset = Dataset::open(&file, "/g").unwrap();
            TileChecks::read(&path, "/g", &dset).expect("a record")
        };
        let mut checks = open();
        // Every box of the grid: within a tile, across tiles, single elements, the whole.
        for (r, c) in (0..6).flat_map(|r| (0..5).map(move |c| (r, c))) {
            for (h, w) in (1..=6 - r).flat_map(|h| (1..=5 - c).map(move |w| (h, w))) {
                let want = Tile::new(vec![r, c], vec![h, w]);
                let mut out = vec![f64::NAN; want.volume() as usize];
                let done = checks.read_checked(&want, Dtype::Float64, bytes_mut(&mut out));
                assert!(done.unwrap(), "{want}: delivered from the blocks");
                assert_eq!(out, grid_values(&want), "{want}");
            }
        }
        // Another type is left to HDF5, which converts.
        let whole = Tile::new(vec![0, 0], vec![6, 5]);
        let mut out = vec![0f32; 30];
        let converted = checks.read_checked(&whole, Dtype::Float32, bytes_mut(&mut out));
        assert!(!converted.unwrap());
        // A flipped bit in tile [3:6, 2:5] (its element (4, 3)): reads touching it fail naming
        // it, the others still come whole. (A reader checks each block once: the reads above
        // have checked every block, so a new reader reads the damaged file.)
        let at = checks.data_offset + (4 * 5 + 3) * 8;
        let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        file.write_all_at(&[0x55], at).unwrap();
        let mut checks = open();
        let mut out = vec![0f64; 30];
        let e = checks
            .read_checked(&whole, Dtype::Float64, bytes_mut(&mut out))
            .unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
        assert!(e.message.contains("tile [3:6, 2:5]"), "{}", e.message);
        let top = Tile::new(vec![0, 0], vec![3, 5]);
        let mut out = vec![0f64; 15];
        assert!(checks
            .read_checked(&top, Dtype::Float64, bytes_mut(&mut out))
            .unwrap());
        assert_eq!(out, grid_values(&top));
    }
}
