//! The index an h5tile master keeps beside each virtual dataset: the dataset's element type and
//! shape, and each tile's box and source, as attributes of the dataset. Readers and tools take
//! them by name without opening the dataset: HDF5 decodes every mapping of a virtual dataset
//! when it opens it (1.4 s and 1 GiB for 65,536 tiles), and h5tile's own reads need none of
//! that. The mappings themselves stay the authority for HDF5, h5py and older h5tile.
//!
//! - `h5tile_tiles` (`[tiles, 2, ndim]`): each tile's offset and shape, as the single-file
//!   layout records its tiles;
//! - `h5tile_sources` (bytes): each tile's source file then dataset, each ended by a NUL; an
//!   empty file name is the previous tile's file (tiles of one subfile follow each other);
//! - `h5tile_source_boxes` (`[tiles, 2, ndim]`), where a subfile stores tiles that fill one box
//!   as one dataset (coalesced, mapped once): the box each tile's dataset holds;
//! - `h5tile_shape`: the dataset's shape;
//! - `h5tile_fill`: one element of the dataset's type, the fill value (zero), whose type is
//!   the dataset's.
//!
//! The records kept per tile (`h5tile_tile_bytes`, checksums, extremes) follow the index's
//! order; without coalescing, tile `i` is also mapping `i` of the virtual dataset. An index that does not hang together
//! (a count or a box that does not match) is no index: readers then open the dataset.

use super::single::{recorded_boxes, recorded_tiles, write_boxes, write_boxes_as};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::hdf5::{self, Attributes, Dataset, Type};
use crate::status::Result;

/// The attribute holding each tile's source file and dataset names.
pub const SOURCES_ATTRIBUTE: &str = "h5tile_sources";
/// The attribute holding, where tiles are coalesced, each tile's dataset's box
/// (`[tiles, 2, ndim]`; a tile's own box where it is stored alone).
pub const WITHIN_ATTRIBUTE: &str = "h5tile_source_boxes";
/// The attribute holding the dataset's shape.
pub const SHAPE_ATTRIBUTE: &str = "h5tile_shape";
/// The attribute holding the fill value, in the dataset's type.
pub const FILL_ATTRIBUTE: &str = "h5tile_fill";

/// One tile as the index records it: the box it fills, from which file and dataset, and
/// where that dataset holds a larger box several tiles fill (coalesced), that box.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Indexed {
    pub region: Tile,
    pub file: String,
    pub dataset: String,
    pub within: Option<Tile>,
}

/// One tile to record: its box, its source file and dataset, and the box that dataset holds
/// where it holds several tiles.
pub struct Entry<'a> {
    pub tile: &'a Tile,
    pub file: &'a str,
    pub dataset: &'a str,
    pub within: Option<&'a Tile>,
}

/// What the index of a virtual dataset says.
pub struct Index {
    /// The dataset's element type, as stored.
    pub dtype: Type,
    pub shape: Vec<u64>,
    /// Its tiles, in the order of its mappings.
    pub tiles: Vec<Indexed>,
}

/// Records on `dset` (of element type `dtype` and shape `global`) the index of its `tiles`.
pub fn write<'a>(
    dset: &Dataset,
    dtype: &Type,
    global: &[u64],
    tiles: impl ExactSizeIterator<Item = Entry<'a>> + Clone,
) -> Result<()> {
    let _l = hdf5::lock();
    let ndim = global.len();
    write_boxes(dset, ndim, tiles.clone().map(|e| e.tile))?;
    let names: Vec<(&str, &str)> = tiles.clone().map(|e| (e.file, e.dataset)).collect();
    write_sources(dset, &names)?;
    if tiles.clone().any(|e| e.within.is_some()) {
        let within = tiles.map(|e| e.within.unwrap_or(e.tile));
        write_boxes_as(dset, WITHIN_ATTRIBUTE, ndim, within)?;
    }
    dset.write_u64_attribute(SHAPE_ATTRIBUTE, &[global.len() as u64], global)?;
    dset.write_attribute(FILL_ATTRIBUTE, &[], dtype, &vec![0u8; dtype.size()])
}

/// The index recorded on `object`, None when it records none or one that does not hang
/// together.
pub fn read(object: &impl Attributes) -> Option<Index> {
    let _l = hdf5::lock();
    let dtype = object.attribute_type(FILL_ATTRIBUTE)?;
    let (_, shape) = object.u64_attribute(SHAPE_ATTRIBUTE)?;
    let boxes = match shape.is_empty() {
        true => return None,
        false => recorded_tiles(object, &shape).unwrap_or_default(),
    };
    let (_, bytes) = object.attribute_as(SOURCES_ATTRIBUTE, &Dtype::UInt8.hdf5_type().ok()?)?;
    let names = decode_sources(&bytes)?;
    if names.len() != boxes.len() {
        return None;
    }
    // Where tiles are coalesced: each tile's dataset's box, which must hold the tile.
    let within = match recorded_boxes(object, WITHIN_ATTRIBUTE, &shape) {
        Some(within) if within.len() == boxes.len() => within.into_iter().map(Some).collect(),
        Some(_) => return None,
        None => vec![None; boxes.len()],
    };
    let mut tiles = Vec::with_capacity(boxes.len());
    for ((region, (file, dataset)), within) in boxes.into_iter().zip(names).zip(within) {
        let within = match within {
            Some(w) if w == region => None,
            Some(w) if region.intersection(&w).is_none_or(|c| c != region) => return None,
            other => other,
        };
        tiles.push(Indexed {
            region,
            file,
            dataset,
            within,
        });
    }
    Some(Index {
        dtype,
        shape,
        tiles,
    })
}

/// Rewrites the sources `dataset` of `file` records with `rename` (a file name to its new one,
/// None to keep it), as its mappings were: an index must name what its mappings name.
#[cfg(any(test, feature = "internals"))]
pub fn rename_sources(
    file: &crate::platform::hdf5::File,
    dataset: &str,
    rename: &dyn Fn(&str) -> Option<String>,
) -> Result<()> {
    let _l = hdf5::lock();
    let object = file.named(dataset);
    let Some((_, bytes)) = Dtype::UInt8
        .hdf5_type()
        .ok()
        .and_then(|t| object.attribute_as(SOURCES_ATTRIBUTE, &t))
    else {
        return Ok(());
    };
    let Some(names) = decode_sources(&bytes) else {
        return Ok(());
    };
    let renamed: Vec<(String, String)> = names
        .into_iter()
        .map(|(f, d)| (rename(&f).unwrap_or(f), d))
        .collect();
    let pairs: Vec<(&str, &str)> = renamed
        .iter()
        .map(|(f, d)| (f.as_str(), d.as_str()))
        .collect();
    file.delete_attribute(dataset, SOURCES_ATTRIBUTE)?;
    write_sources(&Dataset::open(file, dataset)?, &pairs)
}

/// Records `names` (each tile's source file and dataset) on `dset`.
fn write_sources(dset: &Dataset, names: &[(&str, &str)]) -> Result<()> {
    let sources = encode_sources(names);
    let u8_type = Dtype::UInt8.hdf5_type()?;
    dset.write_attribute(
        SOURCES_ATTRIBUTE,
        &[sources.len() as u64],
        &u8_type,
        &sources,
    )
}

/// `file\0dataset\0` per tile, the file left empty where it is the previous tile's.
fn encode_sources(names: &[(&str, &str)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut previous = None;
    for &(file, dataset) in names {
        if previous != Some(file) {
            out.extend_from_slice(file.as_bytes());
        }
        out.push(0);
        out.extend_from_slice(dataset.as_bytes());
        out.push(0);
        previous = Some(file);
    }
    out
}

/// The `(file, dataset)` pairs `encode_sources` wrote, None when `bytes` are not such a list
/// (a name that is not UTF-8, a first tile without a file, a pair cut short).
fn decode_sources(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    if bytes.last().is_some_and(|&b| b != 0) {
        return None;
    }
    let mut parts = bytes.split(|&b| b == 0);
    let mut out: Vec<(String, String)> = Vec::new();
    loop {
        let Some(file) = parts.next() else {
            return Some(out);
        };
        // The split's last part: what follows the final NUL.
        if file.is_empty() && parts.clone().next().is_none() {
            return Some(out);
        }
        let dataset = std::str::from_utf8(parts.next()?).ok()?;
        let file = match file {
            [] => out.last()?.0.clone(),
            name => std::str::from_utf8(name).ok()?.to_string(),
        };
        if dataset.is_empty() {
            return None;
        }
        out.push((file, dataset.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sources_round_trip_with_repeated_files_written_once() {
        let names = [
            ("d.h5.tiles/x.1.s0.h5", "/tile.r0.t0"),
            ("d.h5.tiles/x.1.s0.h5", "/tile.r1.t0"),
            ("d.h5.tiles/x.1.s2.h5", "/tile.r2.t0"),
        ];
        let bytes = encode_sources(&names);
        let s0 = names[0].0.as_bytes();
        let written = bytes.windows(s0.len()).filter(|w| *w == s0).count();
        assert_eq!(written, 1, "a subfile's name is written once for its tiles");
        let back = decode_sources(&bytes).unwrap();
        let back: Vec<(&str, &str)> = back.iter().map(|(f, d)| (&f[..], &d[..])).collect();
        assert_eq!(back, names);
        assert_eq!(decode_sources(&[]), Some(vec![]));
    }

    #[test]
    fn a_source_list_cut_short_or_starting_without_a_file_is_no_list() {
        let bytes = encode_sources(&[("a.h5", "/tile"), ("b.h5", "/tile")]);
        assert_eq!(decode_sources(&bytes[..bytes.len() - 1]), None);
        assert_eq!(
            decode_sources(&bytes[..5]),
            None,
            "a file without its dataset"
        );
        assert_eq!(decode_sources(b"\0/tile\0"), None, "no previous file");
        assert_eq!(decode_sources(b"a.h5\0\0"), None, "no dataset");
    }
}
