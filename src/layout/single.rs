//! The single-file layout: one self-contained HDF5 file holding a contiguous dataset, written
//! by all ranks in parallel without parallel HDF5. Rank 0 creates the file with the dataset's
//! storage allocated (and not filled: untouched bytes of a sparse file read as zero) and
//! shares the storage's byte offset; each rank then writes its tiles' rows straight into that
//! region with `pwrite`, from the caller's buffer. Rank 0 then records, as attributes of the
//! dataset, each tile's box (`h5tile_tiles`) and its checksums and extremes (`checksums`):
//! a tile's bytes, counted row by row within the tile, are checksummed as in the other
//! layouts, though in this file its rows lie apart.

use super::checksums::Summary;
use super::runs::tile_runs;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::device::Buffer;
use crate::platform::hdf5::{self, Attributes, Dataset, File, Plist, Space};
use crate::platform::tile_bytes::{write_runs, Durability, Gaps, Run};
use crate::status::{fail, Result, H5TILE_ERR_HDF5};
use std::path::Path;

/// One dataset of a new single file: its name, element type and shape.
pub struct NewDataset<'a> {
    pub name: &'a str,
    pub dtype: Dtype,
    pub global: &'a [u64],
}

/// Creates `path` holding `datasets`, each with its contiguous storage allocated (with
/// `keep_from`, beside everything else of that file), and returns each storage's byte offset
/// in the file (None for a dataset with no elements).
pub fn create(
    path: &Path,
    datasets: &[NewDataset],
    keep_from: Option<&Path>,
) -> Result<Vec<Option<u64>>> {
    let _l = hdf5::lock();
    let names: Vec<&str> = datasets.iter().map(|d| d.name).collect();
    let file = super::keep::new_master(path, keep_from.map(|old| (old, names.as_slice())))?;
    let dcpl = Plist::contiguous_allocated()?;
    let mut offsets = Vec::with_capacity(datasets.len());
    for d in datasets {
        let t = d.dtype.hdf5_type()?;
        let dset = Dataset::create(&file, d.name, &t, &Space::simple(d.global)?, &dcpl)?;
        let offset = dset.data_offset();
        offsets.push(match (offset, crate::geometry::tile::volume(d.global)) {
            (_, 0) => None,
            (None, _) => {
                return fail(
                    H5TILE_ERR_HDF5,
                    format!("HDF5 allocated no storage for '{}'", d.name),
                )
            }
            (offset, _) => offset,
        });
    }
    file.close()?;
    Ok(offsets)
}

/// Name of the attribute holding, per tile, its offset then its shape (`[tiles, 2, ndim]`).
pub const TILES_ATTRIBUTE: &str = "h5tile_tiles";

/// The tiles `TILES_ATTRIBUTE` records on `dset` (of shape `global`), None when it records
/// none or boxes that do not fit the dataset (then it is read as any contiguous dataset).
pub fn recorded_tiles(dset: &impl Attributes, global: &[u64]) -> Option<Vec<Tile>> {
    recorded_boxes(dset, TILES_ATTRIBUTE, global)
}

/// The boxes attribute `name` records on `dset` (of shape `global`), as `recorded_tiles`.
pub fn recorded_boxes(dset: &impl Attributes, name: &str, global: &[u64]) -> Option<Vec<Tile>> {
    let (dims, boxes) = dset.u64_attribute(name)?;
    let ndim = global.len();
    if dims.len() != 3 || dims[1] != 2 || dims[2] != ndim as u64 || ndim == 0 {
        return None;
    }
    let tiles: Vec<Tile> = boxes
        .chunks_exact(2 * ndim)
        .map(|b| Tile::new(b[..ndim].to_vec(), b[ndim..].to_vec()))
        .collect();
    tiles.iter().all(|t| t.fits_in(global)).then_some(tiles)
}

/// Records `tiles` (each with what was summed of it) as attributes of `dataset` in the new
/// file `file`, before it is committed; nothing when no tile was summed.
pub fn record(file: &File, dataset: &str, dtype: Dtype, tiles: &[(Tile, Summary)]) -> Result<()> {
    if tiles
        .iter()
        .all(|(_, s)| s.sums.is_none() && s.extremes.is_none())
    {
        return Ok(());
    }
    let _l = hdf5::lock();
    let dset = Dataset::open(file, dataset)?;
    write_boxes(&dset, tiles[0].0.ndim(), tiles.iter().map(|(t, _)| t))?;
    let summaries: Vec<Summary> = tiles.iter().map(|(_, s)| s.clone()).collect();
    // Compressed tiles are refused here when checksummed: every summed tile is in boxes.
    super::checksums::record(&dset, dtype, super::checksums::BOXES, &summaries)
}

/// Records on `dset` each of `tiles` (of rank `ndim`): its offset then its shape
/// (`TILES_ATTRIBUTE`).
pub fn write_boxes<'a>(
    dset: &Dataset,
    ndim: usize,
    tiles: impl ExactSizeIterator<Item = &'a Tile>,
) -> Result<()> {
    write_boxes_as(dset, TILES_ATTRIBUTE, ndim, tiles)
}

/// Records `boxes` on `dset` as attribute `name`, as `write_boxes` does.
pub fn write_boxes_as<'a>(
    dset: &Dataset,
    name: &str,
    ndim: usize,
    boxes: impl ExactSizeIterator<Item = &'a Tile>,
) -> Result<()> {
    let count = boxes.len() as u64;
    let words: Vec<u64> = boxes
        .flat_map(|t| t.offset.iter().chain(&t.shape).copied())
        .collect();
    dset.write_u64_attribute(name, &[count, 2, ndim as u64], &words)
}

/// Opens the new file `path` to record its tiles.
pub fn open_new(path: &Path) -> Result<File> {
    File::open_write_with(path, &Plist::file_access_master()?)
}

/// Writes `tile` (dense, row-major, `elem` bytes per element, in `buf`) into the contiguous
/// storage at byte `data_offset` of the file at `path`, one write per contiguous run (each in
/// pieces over this rank's I/O threads; from device memory, one h5tile_gds device transfer);
/// then makes the file as durable as `durability` says.
pub fn write_tile(
    path: &Path,
    data_offset: u64,
    global: &[u64],
    tile: &Tile,
    elem: usize,
    buf: Buffer,
    durability: Durability,
) -> Result<()> {
    let runs: Vec<Run> = tile_runs(global, tile, elem)
        .into_iter()
        .map(|(at, buf_at, len)| Run {
            file_at: data_offset + at,
            buf_at,
            len,
        })
        .collect();
    write_runs(path, &runs, Gaps::Others, buf, durability)
}
