//! What a master records of its tiles: where their bytes are, their checksums, and (for the
//! tool) their extremes.

use super::*;
use crate::geometry::tile::Tile;
use crate::layout::checksums::Recorded;
#[cfg(any(test, feature = "internals"))]
use crate::layout::vds::CHOSEN_ON_ATTRIBUTE;
use crate::layout::vds::{TileBytes, NO_OFFSET};
use crate::ops::read::mappings::read_tile_bytes;
use crate::platform::hdf5::Attributes;
use std::path::PathBuf;

/// What the master records of each of its `count` tiles, by mapping: where its bytes are,
/// their checksums and the tile's extremes.
pub(super) struct TileRecords {
    pub(super) bytes: Option<Vec<TileBytes>>,
    pub(super) recorded: Option<Recorded>,
    #[cfg(any(test, feature = "internals"))]
    pub(super) extremes: Option<Vec<Option<TileExtremes>>>,
    #[cfg(any(test, feature = "internals"))]
    pub(super) chosen_on: Option<(u64, u64, Option<u64>)>,
}

impl TileRecords {
    pub(super) fn read(dset: &impl Attributes, count: usize) -> TileRecords {
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
    pub(super) fn with_listing(
        self,
        dset: &impl Attributes,
        element: Option<Dtype>,
        count: usize,
    ) -> Self {
        let chosen_on = match dset.u64_attribute(CHOSEN_ON_ATTRIBUTE) {
            Some((_, v)) if v.len() == 2 => Some((v[0], v[1], None)),
            Some((_, v)) if v.len() == 3 => Some((v[0], v[1], Some(v[2]))),
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
    pub(super) fn tile(
        &self,
        i: usize,
        region: Option<Tile>,
        names: (String, String, bool),
    ) -> TileInfo {
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

/// Each tile's recorded extremes (None where none was recorded), read in a type wide enough
/// for the dataset's element type `dtype`; None when the master records none.
#[cfg(any(test, feature = "internals"))]
pub(super) fn read_extremes(
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
