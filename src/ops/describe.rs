//! What a file holds, as tools show it, without reading its data: every dataset's element type,
//! shape and storage and, for a virtual dataset, its tiles (the mappings): which box each
//! fills, from which file and dataset, where HDF5 finds that file, and what an h5tile master
//! records of each (where its bytes are, their checksums, the tile's extremes); and how each
//! dataset and each tile's source is stored on disk (its filters, its bytes there), from the
//! metadata of the tiles' files. Works on any HDF5 file: what h5tile did not record is simply
//! absent.

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::checksums::Recorded;
use crate::layout::index::{self, Index};
use crate::layout::placement::Placement;
use crate::layout::single::recorded_tiles;
#[cfg(any(test, feature = "internals"))]
use crate::layout::vds::CHOSEN_ON_ATTRIBUTE;
use crate::layout::vds::{TileBytes, NO_OFFSET, TILE_DATASET};
use crate::layout::{generation_of, subfile_generation, subfiles::is_tile_dataset};
use crate::ops::read::mappings::{read_tile_bytes, resolve_source, unescape_source_name};
use crate::platform::codecs::{Compression, Pipeline};
use crate::platform::hdf5::{self, Attributes, Dataset, File, Storage};
use crate::status::*;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// How a dataset keeps its elements.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StorageKind {
    Contiguous,
    /// In chunks of this shape.
    Chunked(Vec<u64>),
    /// Inside the dataset's object header.
    Compact,
    /// Mapped from other datasets (`VirtualInfo`).
    Virtual,
    Other,
}

impl StorageKind {}

/// Whose layout a virtual dataset has, told from its sources' names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VirtualLayout {
    /// h5tile's VDS layout: one tile file per tile in the master's tile folder.
    Vds,
    /// h5tile's subfiled layout: subfiles in the master's tile folder, a dataset per tile.
    Subfiles,
    /// Any other virtual dataset (h5py's, Legate's, ...).
    Other,
    /// h5tile's single-file layout: tiles written into one contiguous dataset (no virtual
    /// dataset; `DatasetInfo::single`).
    Single,
}

impl VirtualLayout {}

/// One element value, as recorded for a tile's extremes.
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Int(i64),
    UInt(u64),
    Float(f64),
}

#[cfg(any(test, feature = "internals"))]
impl std::fmt::Display for Scalar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::UInt(v) => write!(f, "{v}"),
            Scalar::Float(v) => write!(f, "{v}"),
        }
    }
}

/// A tile's smallest and largest element (NaNs passed over) and its count of NaNs.
#[cfg(any(test, feature = "internals"))]
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TileExtremes {
    pub min: Scalar,
    pub max: Scalar,
    pub nan: u64,
}

/// How a dataset's elements are kept on disk, from its file's metadata alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// The filters, when they are one of h5tile's codecs after a byte shuffle or not; for a
    /// tiled dataset, its first compressed tile's.
    pub compression: Option<Compression>,
    /// HDF5's ids of the filters, in pipeline order (empty: none).
    pub filters: Vec<u32>,
    /// A tiled dataset's tiles are not all stored through the same filters.
    pub mixed: bool,
    /// Bytes of the elements.
    pub logical_bytes: u64,
    /// Bytes they take in the file (compressed chunks as stored; 0: nothing allocated).
    pub stored_bytes: u64,
}

impl Stored {
    /// Of `dset`, whose elements are `logical_bytes`.
    fn of(dset: &Dataset, logical_bytes: u64) -> Result<Stored> {
        let filters = match dset.storage()? {
            Storage::Chunked(_) => dset.create_plist()?.filters()?,
            _ => Vec::new(),
        };
        let compression = Pipeline::from_filters(&filters).map(|p| Compression {
            codec: p.codec,
            level: p.level,
            shuffle: p.shuffle.is_some(),
        });
        Ok(Stored {
            compression,
            filters: filters.iter().map(|f| f.id).collect(),
            mixed: false,
            logical_bytes,
            stored_bytes: dset.storage_size(),
        })
    }

    /// Of `bytes` kept as they are (a tile of the single-file layout).
    fn plain(bytes: u64) -> Stored {
        Stored {
            compression: None,
            filters: Vec::new(),
            mixed: false,
            logical_bytes: bytes,
            stored_bytes: bytes,
        }
    }
}

/// One mapping of a virtual dataset.
#[derive(Clone, Debug)]
pub struct TileInfo {
    /// The box of the virtual dataset it fills (the bounding box of a selection that is not
    /// one box); None when it selects nothing.
    pub region: Option<Tile>,
    /// The source file and dataset as the master names them ("." is the master itself), with
    /// HDF5's "%%" read as '%'; the stored names when `pattern`.
    pub file: String,
    pub dataset: String,
    /// The names are printf-style patterns HDF5 expands: the source is not followed.
    pub pattern: bool,
    /// Where in the source the box is taken from, when the source selection is one box of
    /// the region's shape; None when it is the whole source or something else.
    pub source_offset: Option<Vec<u64>>,
    /// The whole source is mapped.
    pub source_whole: bool,
    /// Where HDF5 finds the source file (where it would look first when it is nowhere), and
    /// whether it is there.
    pub path: PathBuf,
    pub found: bool,
    /// What an h5tile master records: where the tile's bytes start in its file (None where
    /// HDF5 placed them nowhere known) and the file's size.
    pub data_offset: Option<u64>,
    pub file_size: Option<u64>,
    /// The tile's block checksums (None: not checksummed).
    pub sums: Option<Vec<u64>>,
    /// A compressed tile's stored chunks' checksums (None: not recorded).
    pub chunk_sums: Option<Vec<u64>>,
    #[cfg(any(test, feature = "internals"))]
    pub extremes: Option<TileExtremes>,
    /// The shape of the contiguous dataset whose rows hold the tile's bytes (its data from
    /// `data_offset`, the tile at `source_offset` there, else at `region`'s offset): the
    /// single-file layout's dataset, or a subfile's coalesced box. None: the bytes are one run
    /// from `data_offset`.
    pub within: Option<Vec<u64>>,
    /// How its source dataset (all of it, whatever part is mapped) is stored; None where it
    /// cannot be opened (missing, a pattern), or was not asked for (`describe`).
    pub stored: Option<Stored>,
}

impl TileInfo {
    /// Where the tile's bytes are in its file (elements of `elem` bytes), where recorded.
    pub fn placement(&self, elem: usize) -> Option<Placement> {
        let at = self.data_offset?;
        Some(match (&self.within, &self.region) {
            (None, _) => Placement::Run(at),
            (Some(global), Some(tile)) => {
                let offset = self.source_offset.as_ref().unwrap_or(&tile.offset);
                let tile = Tile::new(offset.clone(), tile.shape.clone());
                Placement::rows_of(at, global, &tile, elem)
            }
            (Some(_), None) => return None,
        })
    }

    /// Bytes of the tile's elements of `elem` bytes (0 when it selects nothing).
    pub fn data_bytes(&self, elem: usize) -> u64 {
        self.region.as_ref().map_or(0, |r| {
            (r.volume() * elem as u128).min(u64::MAX as u128) as u64
        })
    }
}

/// What a virtual dataset's mappings say (or, layout `Single`, the tiles the single-file
/// layout records of a contiguous dataset).
#[derive(Clone, Debug)]
pub struct VirtualInfo {
    pub layout: VirtualLayout,
    /// The write that made the tiles, from their names (h5tile's layouts, one write only).
    #[cfg(any(test, feature = "internals"))]
    pub generation: Option<u64>,
    pub tiles: Vec<TileInfo>,
    /// Block size of the recorded checksums (None: none recorded).
    pub checksum_block: Option<u64>,
    /// Where `H5TILE_LAYOUT_AUTO` chose the layout: the ranks and the nodes they were on (None:
    /// the writer named the layout, or the master does not say).
    #[cfg(any(test, feature = "internals"))]
    pub chosen_on: Option<(u64, u64)>,
}

impl VirtualInfo {}

/// One dataset of a file.
#[derive(Clone, Debug)]
pub struct DatasetInfo {
    /// Its path in the file ("/group/x").
    #[cfg(any(test, feature = "internals"))]
    pub name: String,
    /// The element type's name: h5tile's ("float64") or HDF5's class and size.
    pub dtype: String,
    /// One of h5tile's element types, when it is.
    pub element: Option<Dtype>,
    /// Bytes per element.
    pub element_bytes: usize,
    pub shape: Vec<u64>,
    #[cfg(any(test, feature = "internals"))]
    pub storage: StorageKind,
    /// For a virtual dataset, its mappings.
    pub virtual_info: Option<VirtualInfo>,
    /// For a contiguous dataset h5tile wrote in the single-file layout, the tiles written into
    /// it (layout `Single`): each with the file itself as its source (`file` "."), the
    /// dataset's data offset and its shape (`within`).
    pub single: Option<VirtualInfo>,
    /// How it is stored: a virtual dataset's distinct sources together (None where one that
    /// holds elements is not known, or `describe` was not asked for it).
    pub stored: Option<Stored>,
}

impl DatasetInfo {
    /// Its tiles: a virtual dataset's mappings, or those the single-file layout recorded.
    pub fn tiled(&self) -> Option<&VirtualInfo> {
        self.virtual_info.as_ref().or(self.single.as_ref())
    }

    /// Bytes of all its elements.
    pub fn bytes(&self) -> u64 {
        let volume = crate::geometry::tile::volume(&self.shape);
        (volume * self.element_bytes as u128).min(u64::MAX as u128) as u64
    }
}

/// Opens the HDF5 file at `path` read-only, telling apart a missing file, a folder and a file
/// that is not HDF5 in the message's first words.
pub fn open_file(path: &Path) -> Result<File> {
    let shown = path.display();
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("cannot open '{shown}': no such file"),
            )
        }
        Err(e) => return fail(H5TILE_ERR_IO, format!("cannot open '{shown}': {e}")),
        Ok(m) if m.is_dir() => {
            return fail(
                H5TILE_ERR_IS_DIRECTORY,
                format!("cannot open '{shown}': it is a directory"),
            )
        }
        Ok(_) => {}
    }
    if let Err(e) = std::fs::File::open(path) {
        return fail(H5TILE_ERR_IO, format!("cannot open '{shown}': {e}"));
    }
    let _l = hdf5::lock();
    if !hdf5::is_hdf5(path)? {
        return fail(
            H5TILE_ERR_HDF5,
            format!("cannot open '{shown}': not an HDF5 file"),
        );
    }
    File::open_read(path)
}

/// Every dataset of the file at `path` (or only `dataset`, when given), described; how a
/// virtual dataset's tiles are stored is left out (`stored` None: see `describe_stored`).
pub fn describe(path: &Path, dataset: Option<&str>) -> Result<Vec<DatasetInfo>> {
    describe_as(path, dataset, false)
}

pub(crate) fn describe_as(
    path: &Path,
    dataset: Option<&str>,
    stored: bool,
) -> Result<Vec<DatasetInfo>> {
    let _l = hdf5::lock();
    let file = open_file(path)?;
    let names = match dataset {
        Some(name) => {
            let name = format!("/{}", name.trim_start_matches('/'));
            match file.object_kind(&name)? {
                Some(hdf5::ObjectKind::Dataset) => vec![name],
                Some(_) => {
                    return fail(
                        H5TILE_ERR_NOT_A_DATASET,
                        format!("'{name}' in '{}' is not a dataset", path.display()),
                    )
                }
                None => {
                    return fail(
                        H5TILE_ERR_NOT_FOUND,
                        format!("no dataset '{name}' in '{}'", path.display()),
                    )
                }
            }
        }
        None => file.dataset_paths()?,
    };
    names
        .iter()
        .map(|name| {
            // A dataset h5tile indexed is described from its master's records alone, without
            // HDF5 opening it (which decodes every mapping).
            let described = match index::read(&file.named(name), None) {
                Some(index) => describe_indexed(path, &file, name, index, stored),
                None => Dataset::open(&file, name)
                    .and_then(|dset| describe_dataset(path, &file, name, &dset, stored)),
            };
            described.map_err(|e| {
                e.context(&format!("cannot describe '{name}' in '{}'", path.display()))
            })
        })
        .collect()
}

/// What the master records of each of its `count` tiles, by mapping: where its bytes are,
/// their checksums and the tile's extremes.
struct TileRecords {
    bytes: Option<Vec<TileBytes>>,
    recorded: Option<Recorded>,
    #[cfg(any(test, feature = "internals"))]
    extremes: Option<Vec<Option<TileExtremes>>>,
    #[cfg(any(test, feature = "internals"))]
    chosen_on: Option<(u64, u64)>,
}

impl TileRecords {
    fn read(dset: &impl Attributes, count: usize) -> TileRecords {
        TileRecords {
            bytes: read_tile_bytes(dset, count),
            recorded: Recorded::read(dset, count),
            #[cfg(any(test, feature = "internals"))]
            extremes: None,
            #[cfg(any(test, feature = "internals"))]
            chosen_on: None,
        }
    }

    /// With what only the tool shows: the tiles' extremes (of elements of type `element`) and
    /// where `H5TILE_LAYOUT_AUTO` chose the layout.
    #[cfg(any(test, feature = "internals"))]
    fn with_listing(self, dset: &impl Attributes, element: Option<Dtype>, count: usize) -> Self {
        let chosen_on = match dset.u64_attribute(CHOSEN_ON_ATTRIBUTE) {
            Some((_, v)) if v.len() == 2 => Some((v[0], v[1])),
            _ => None,
        };
        TileRecords {
            extremes: element.and_then(|d| read_extremes(dset, d, count)),
            chosen_on,
            ..self
        }
    }

    /// Tile `i` (its box `region`, from `file` and `dataset` found at `path` or not) with what
    /// is recorded of it.
    fn tile(&self, i: usize, region: Option<Tile>, names: (String, String, bool)) -> TileInfo {
        let (file, dataset, pattern) = names;
        let record = self.bytes.as_ref().map(|b| b[i]);
        let recorded = self.recorded.as_ref();
        TileInfo {
            region,
            file,
            dataset,
            pattern,
            source_offset: None,
            source_whole: false,
            path: PathBuf::new(),
            found: false,
            data_offset: record.map(|r| r.data_offset).filter(|&o| o != NO_OFFSET),
            file_size: record.map(|r| r.file_size),
            sums: recorded.and_then(|r| r.tile(i)).map(<[u64]>::to_vec),
            chunk_sums: recorded.and_then(|r| r.chunks(i)).map(<[u64]>::to_vec),
            #[cfg(any(test, feature = "internals"))]
            extremes: self.extremes.as_ref().and_then(|e| e[i]),
            within: None,
            stored: None,
        }
    }
}

/// Where the source file `file` of a tile of `master` is, and whether it is there (the master
/// itself for "."; a pattern is nowhere).
fn locate(master: &Path, file: &str, pattern: bool) -> (PathBuf, bool) {
    match (file, pattern) {
        (".", _) => (master.to_path_buf(), true),
        (_, true) => (PathBuf::from(file), false),
        _ => resolve_source(master, file),
    }
}

/// Virtual dataset `name` of `master` (open as `file`) from the `index` its master keeps, the
/// dataset not opened; each distinct source file looked up once.
fn describe_indexed(
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
fn virtual_info(
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
        checksum_block: records.recorded.as_ref().map(|r| r.block),
        #[cfg(any(test, feature = "internals"))]
        chosen_on: records.chosen_on,
    }
}

fn describe_dataset(
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
    };
    info.stored = match &info.virtual_info {
        Some(_) if !with_stored => None,
        Some(vds) => stored_of_tiles(&vds.tiles),
        None => Some(Stored::of(dset, info.bytes())?),
    };
    Ok(info)
}

/// How the tiles' distinct sources are stored together; None when a tile holding elements is
/// of an unknown source.
fn stored_of_tiles(tiles: &[TileInfo]) -> Option<Stored> {
    let mut seen = HashSet::new();
    let mut all = Stored::plain(0);
    let mut filters: Option<&[u32]> = None;
    for t in tiles {
        let Some(s) = &t.stored else {
            match t.region {
                Some(_) => return None,
                None => continue,
            }
        };
        // A source mapped twice counts once; the tiles of a coalesced box are its parts.
        if !seen.insert((&t.path, &t.dataset, &t.source_offset)) {
            continue;
        }
        all.logical_bytes += s.logical_bytes;
        all.stored_bytes += s.stored_bytes;
        all.mixed |= filters.is_some_and(|f| f != s.filters.as_slice());
        let first = filters.get_or_insert(&s.filters);
        if all.compression.is_none() && s.compression.is_some() {
            all.compression = s.compression;
            *first = &s.filters;
        }
    }
    all.filters = filters.unwrap_or_default().to_vec();
    Some(all)
}

/// How each tile's source dataset is stored (None where it cannot be opened); `master` is the
/// file the tiles' "." names. A tile whose bytes the master places (h5tile's uncompressed
/// tiles) is stored as it is, and its file is not opened; the others' files are opened one at
/// a time (each open HDF5 file holds half a MiB), once for the tiles of a subfile.
fn stored_of_sources(master: &File, tiles: &[TileInfo], elem: usize) -> Vec<Option<Stored>> {
    let mut last: Option<(&Path, Option<File>)> = None;
    tiles
        .iter()
        .map(|t| {
            if t.pattern || !t.found {
                return None;
            }
            if t.data_offset.is_some() && t.file != "." {
                return Some(Stored::plain(t.data_bytes(elem)));
            }
            let file = match t.file.as_str() {
                "." => master,
                _ => {
                    if last.as_ref().is_none_or(|(p, _)| *p != t.path.as_path()) {
                        let file = File::open_read_evicting(&t.path).ok();
                        last = Some((t.path.as_path(), file));
                    }
                    last.as_ref()?.1.as_ref()?
                }
            };
            let dset = Dataset::open(file, &t.dataset).ok()?;
            let bytes = dset.space().ok()?.points().ok()? * dset.dtype().ok()?.size() as u64;
            Stored::of(&dset, bytes).ok()
        })
        .collect()
}

/// The tiles the single-file layout recorded on `dset` (`name` in `master`, its data from
/// byte `data_offset`), None when it records none.
fn describe_single(
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
        checksum_block: recorded.map(|r| r.block),
        #[cfg(any(test, feature = "internals"))]
        chosen_on: None,
    })
}

fn describe_virtual(
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
fn h5tile_layout(tiles: &[TileInfo]) -> (VirtualLayout, Option<u64>) {
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

/// Each tile's recorded extremes (None where none was recorded), read in a type wide enough
/// for the dataset's element type `dtype`; None when the master records none.
#[cfg(any(test, feature = "internals"))]
fn read_extremes(
    dset: &impl Attributes,
    dtype: Dtype,
    count: usize,
) -> Option<Vec<Option<TileExtremes>>> {
    use Dtype::*;
    let (_, nan) = dset.u64_attribute(crate::layout::checksums::NAN_ATTRIBUTE)?;
    let wide = match dtype {
        Int8 | Int16 | Int32 | Int64 => Int64,
        UInt8 | UInt16 | UInt32 | UInt64 => UInt64,
        Float16 | Float32 | Float64 => Float64,
        // h5py's enum converts to no integer type: its one byte is read as it is.
        Bool => Bool,
        Complex64 | Complex128 => return None,
    };
    let mem = wide.hdf5_type().ok()?;
    let (_, min) = dset.attribute_as(crate::layout::checksums::MIN_ATTRIBUTE, &mem)?;
    let (_, max) = dset.attribute_as(crate::layout::checksums::MAX_ATTRIBUTE, &mem)?;
    let size = wide.size();
    if nan.len() != count || min.len() != count * size || max.len() != count * size {
        return None;
    }
    let value = |b: &[u8]| match wide {
        Int64 => Scalar::Int(i64::from_ne_bytes(b.try_into().expect("8 bytes"))),
        Float64 => Scalar::Float(f64::from_ne_bytes(b.try_into().expect("8 bytes"))),
        Bool => Scalar::UInt(b[0] as u64),
        _ => Scalar::UInt(u64::from_ne_bytes(b.try_into().expect("8 bytes"))),
    };
    Some(
        (0..count)
            .map(|i| {
                let at = i * size..(i + 1) * size;
                (nan[i] != crate::layout::checksums::NONE).then(|| TileExtremes {
                    min: value(&min[at.clone()]),
                    max: value(&max[at]),
                    nan: nan[i],
                })
            })
            .collect(),
    )
}
