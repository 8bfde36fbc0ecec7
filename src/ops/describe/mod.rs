//! What a file holds, as tools show it, without reading its data: every dataset's element type,
//! shape and storage and, for a virtual dataset, its tiles (the mappings): which box each
//! fills, from which file and dataset, where HDF5 finds that file, and what an h5tile master
//! records of each (where its bytes are, their checksums, the tile's extremes); and how each
//! dataset and each tile's source is stored on disk (its filters, its bytes there), from the
//! metadata of the tiles' files. Works on any HDF5 file: what h5tile did not record is simply
//! absent.
//!
//! `records` reads what a master records of its tiles, `datasets` describes each kind of
//! dataset (indexed, virtual, the single file's tiles), `stored` how their bytes are stored,
//! `attributes` which attributes of the file and its datasets a listing shows.

#[cfg(any(test, feature = "internals"))]
mod attributes;
mod datasets;
mod records;
mod stored;

#[cfg(any(test, feature = "internals"))]
pub use crate::platform::hdf5::{ListedNumber, ListedValue};
#[cfg(any(test, feature = "internals"))]
pub use attributes::root_attributes;
use datasets::{describe_dataset, describe_indexed};

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::blocks::Scheme;
use crate::layout::index::{self};
use crate::layout::placement::Placement;
use crate::platform::codecs::{Compression, Pipeline};
use crate::platform::hdf5::{self, Dataset, File, Storage};
use crate::status::*;
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
    /// How the tiles are cut into checksummed blocks (None: no checksums recorded).
    pub checksums: Option<Scheme>,
    /// Where `H5TILE_LAYOUT_AUTO` chose the layout: the ranks, the nodes they were on and the
    /// most tiles a rank held of one dataset (None: not recorded, before December 2026);
    /// None: the writer named the layout, or the master does not say.
    #[cfg(any(test, feature = "internals"))]
    pub chosen_on: Option<(u64, u64, Option<u64>)>,
}

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
    /// Its attributes a listing shows, in name order (h5tile's own records and dimension
    /// bookkeeping left out), each with its value.
    #[cfg(any(test, feature = "internals"))]
    pub attributes: Vec<(String, ListedValue)>,
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
            #[cfg(any(test, feature = "internals"))]
            let described = described.map(|mut info| {
                info.attributes = attributes::of_dataset(&file, name, &info);
                info
            });
            described.map_err(|e| {
                e.context(&format!("cannot describe '{name}' in '{}'", path.display()))
            })
        })
        .collect()
}
