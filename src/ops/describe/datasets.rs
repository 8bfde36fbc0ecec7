//! Each kind of dataset described: from a master's index, through its mappings, and the
//! single file's recorded tiles.

#[cfg(any(test, feature = "internals"))]
use super::records::read_extremes;
use super::records::TileRecords;
use super::stored::{stored_of_sources, stored_of_tiles};
use super::*;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::checksums::Recorded;
use crate::layout::index::Index;
use crate::layout::single::recorded_tiles;
use crate::layout::vds::TILE_DATASET;
use crate::layout::{generation_of, subfile_generation, subfiles::is_tile_dataset};
use crate::ops::read::mappings::{resolve_source, unescape_source_name};
use crate::platform::hdf5::{Dataset, File, Storage};
use crate::status::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Where the source file `file` of a tile of `master` is, and whether it is there (the master
/// itself for "."; a pattern is nowhere).
pub(super) fn locate(master: &Path, file: &str, pattern: bool) -> (PathBuf, bool) {
    match (file, pattern) {
        (".", _) => (master.to_path_buf(), true),
        (_, true) => (PathBuf::from(file), false),
        _ => resolve_source(master, file),
    }
}

/// Virtual dataset `name` of `master` (open as `file`) from the `index` its master keeps, the
/// dataset not opened; each distinct source file looked up once.
pub(super) fn describe_indexed(
    master: &Path,
    file: &File,
    name: &str,
    index: Index,
    with_stored: bool,
) -> Result<DatasetInfo> {
    let element = Dtype::of_hdf5(&index.dtype).ok();
    let count = index.tiles.len();
    let records = TileRecords::read(&file.named(name), count);
    #[cfg(any(test, feature = "internals"))]
    let records = records.with_listing(&file.named(name), element, count);
    let mut places: HashMap<String, (PathBuf, bool)> = HashMap::new();
    let mut tiles = Vec::with_capacity(count);
    for (i, t) in index.tiles.into_iter().enumerate() {
        let (path, found) = places
            .entry(t.file.clone())
            .or_insert_with(|| locate(master, &t.file, false))
            .clone();
        let within = t.within;
        let mut tile = records.tile(i, Some(t.region), (t.file, t.dataset, false));
        (tile.path, tile.found, tile.source_whole) = (path, found, within.is_none());
        if let (Some(within), Some(region)) = (within, &tile.region) {
            // A tile of a coalesced box: its rows in the box's dataset.
            let offset = region.offset.iter().zip(&within.offset);
            tile.source_offset = Some(offset.map(|(r, w)| r - w).collect());
            tile.within = Some(within.shape);
        }
        tiles.push(tile);
    }
    let mut info = DatasetInfo {
        #[cfg(any(test, feature = "internals"))]
        name: name.to_string(),
        dtype: index.dtype.describe(),
        element,
        element_bytes: index.dtype.size(),
        shape: index.shape,
        #[cfg(any(test, feature = "internals"))]
        storage: StorageKind::Virtual,
        virtual_info: None,
        single: None,
        stored: None,
        #[cfg(any(test, feature = "internals"))]
        attributes: Vec::new(),
    };
    let master_file = with_stored.then_some(file);
    info.virtual_info = Some(virtual_info(
        master_file,
        tiles,
        &records,
        info.element_bytes,
    ));
    info.stored = match with_stored {
        true => stored_of_tiles(&info.virtual_info.as_ref().expect("set").tiles),
        false => None,
    };
    Ok(info)
}

/// The `VirtualInfo` of `tiles` (of elements of `elem` bytes), with how each is stored when
/// `master_file` is given (the file their "." names).
pub(super) fn virtual_info(
    master_file: Option<&File>,
    mut tiles: Vec<TileInfo>,
    records: &TileRecords,
    elem: usize,
) -> VirtualInfo {
    if let Some(master_file) = master_file {
        let stored = stored_of_sources(master_file, &tiles, elem);
        for (t, stored) in tiles.iter_mut().zip(stored) {
            t.stored = stored;
        }
    }
    // The generation is the tool's to show (`h5tile ls`).
    let (layout, _generation) = h5tile_layout(&tiles);
    VirtualInfo {
        layout,
        #[cfg(any(test, feature = "internals"))]
        generation: _generation,
        tiles,
        checksums: records.recorded.as_ref().map(|r| r.scheme),
        #[cfg(any(test, feature = "internals"))]
        chosen_on: records.chosen_on,
    }
}

pub(super) fn describe_dataset(
    master: &Path,
    file: &File,
    name: &str,
    dset: &Dataset,
    with_stored: bool,
) -> Result<DatasetInfo> {
    let file_type = dset.dtype()?;
    let element = Dtype::of_hdf5(&file_type).ok();
    let shape = dset.space()?.dims()?;
    let storage = match dset.storage()? {
        Storage::Contiguous(_) => StorageKind::Contiguous,
        Storage::Chunked(chunk) => StorageKind::Chunked(chunk),
        Storage::Compact => StorageKind::Compact,
        Storage::Virtual => StorageKind::Virtual,
        Storage::Other => StorageKind::Other,
    };
    let virtual_info = match storage {
        StorageKind::Virtual => Some(describe_virtual(
            master,
            with_stored.then_some(file),
            dset,
            shape.len(),
        )?),
        _ => None,
    };
    let single = match dset.storage()? {
        Storage::Contiguous(Some(at)) => describe_single(master, name, dset, element, &shape, at),
        _ => None,
    };
    let mut info = DatasetInfo {
        #[cfg(any(test, feature = "internals"))]
        name: name.to_string(),
        dtype: file_type.describe(),
        element,
        element_bytes: file_type.size(),
        shape,
        #[cfg(any(test, feature = "internals"))]
        storage,
        virtual_info,
        single,
        stored: None,
        #[cfg(any(test, feature = "internals"))]
        attributes: Vec::new(),
    };
    info.stored = match &info.virtual_info {
        Some(_) if !with_stored => None,
        Some(vds) => stored_of_tiles(&vds.tiles),
        None => Some(Stored::of(dset, info.bytes())?),
    };
    Ok(info)
}

/// The tiles the single-file layout recorded on `dset` (`name` in `master`, its data from
/// byte `data_offset`), None when it records none.
pub(super) fn describe_single(
    master: &Path,
    name: &str,
    dset: &Dataset,
    element: Option<Dtype>,
    shape: &[u64],
    data_offset: u64,
) -> Option<VirtualInfo> {
    let tiles = recorded_tiles(dset, shape)?;
    let count = tiles.len();
    let recorded = Recorded::read(dset, count);
    #[cfg(any(test, feature = "internals"))]
    let extremes = element.and_then(|d| read_extremes(dset, d, count));
    let tiles = tiles
        .into_iter()
        .enumerate()
        .map(|(i, tile)| TileInfo {
            file: ".".to_string(),
            dataset: name.to_string(),
            pattern: false,
            source_offset: None,
            source_whole: false,
            path: master.to_path_buf(),
            found: true,
            data_offset: Some(data_offset),
            file_size: None,
            sums: recorded
                .as_ref()
                .and_then(|r| r.tile(i))
                .map(<[u64]>::to_vec),
            chunk_sums: None,
            #[cfg(any(test, feature = "internals"))]
            extremes: extremes.as_ref().and_then(|e| e[i]),
            within: Some(shape.to_vec()),
            // Rows of the dataset, as they are.
            stored: element.map(|d| Stored::plain((tile.volume() * d.size() as u128) as u64)),
            region: Some(tile),
        })
        .collect();
    Some(VirtualInfo {
        layout: VirtualLayout::Single,
        #[cfg(any(test, feature = "internals"))]
        generation: None,
        tiles,
        checksums: recorded.map(|r| r.scheme),
        #[cfg(any(test, feature = "internals"))]
        chosen_on: None,
    })
}

pub(super) fn describe_virtual(
    master: &Path,
    master_file: Option<&File>,
    dset: &Dataset,
    ndim: usize,
) -> Result<VirtualInfo> {
    let stored = dset.create_plist()?.virtual_mappings()?;
    let records = TileRecords::read(dset, stored.len());
    #[cfg(any(test, feature = "internals"))]
    let records = {
        let element = Dtype::of_hdf5(&dset.dtype()?).ok();
        records.with_listing(dset, element, stored.len())
    };
    let mut tiles = Vec::with_capacity(stored.len());
    for (i, m) in stored.into_iter().enumerate() {
        let literal = (
            unescape_source_name(&m.file),
            unescape_source_name(&m.dataset),
        );
        let pattern = literal.0.is_none() || literal.1.is_none();
        let (file, dataset) = match literal {
            (Some(f), Some(d)) => (f, d),
            _ => (m.file.clone(), m.dataset.clone()),
        };
        let region = match m.virtual_space.single_block() {
            Some((offset, shape)) if offset.len() == ndim => Some(Tile::new(offset, shape)),
            _ => m.virtual_space.selection_bounds(ndim).map(|(start, end)| {
                let shape = start.iter().zip(&end).map(|(s, e)| e - s + 1).collect();
                Tile::new(start, shape)
            }),
        };
        let source_whole = m.source_space.selects_all();
        let source_offset = match (&region, m.source_space.single_block()) {
            (Some(r), Some((offset, shape))) if !source_whole && shape == r.shape => Some(offset),
            _ => None,
        };
        let (path, found) = locate(master, &file, pattern);
        let mut tile = records.tile(i, region, (file, dataset, pattern));
        (tile.path, tile.found) = (path, found);
        (tile.source_whole, tile.source_offset) = (source_whole, source_offset);
        tiles.push(tile);
    }
    Ok(virtual_info(
        master_file,
        tiles,
        &records,
        dset.dtype()?.size(),
    ))
}

/// Whether every tile is one of h5tile's (a tile file or a subfile, named for the write that
/// made it, in a tile folder beside the master), and the write's generation when all are of
/// one write.
pub(super) fn h5tile_layout(tiles: &[TileInfo]) -> (VirtualLayout, Option<u64>) {
    let mut kinds = std::collections::BTreeSet::new();
    let mut generations = std::collections::BTreeSet::new();
    for t in tiles {
        let Some((folder, base)) = t.file.split_once('/') else {
            return (VirtualLayout::Other, None);
        };
        let subfile = subfile_generation(base).is_some();
        let named = match subfile {
            true => is_tile_dataset(&t.dataset),
            false => t.dataset == TILE_DATASET,
        };
        let Some(generation) = generation_of(base).filter(|_| named && !folder.contains('/'))
        else {
            return (VirtualLayout::Other, None);
        };
        kinds.insert(subfile);
        generations.insert(generation);
    }
    let layout = match kinds.into_iter().collect::<Vec<_>>()[..] {
        [false] => VirtualLayout::Vds,
        [true] => VirtualLayout::Subfiles,
        _ => return (VirtualLayout::Other, None),
    };
    let generation = match generations.len() {
        1 => generations.into_iter().next(),
        _ => None,
    };
    (layout, generation)
}
