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

use super::single::{write_boxes, write_boxes_as, TILES_ATTRIBUTE};
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

/// What the index of a virtual dataset says (of the tiles a read needs).
pub struct Index {
    /// The dataset's element type, as stored.
    pub dtype: Type,
    pub shape: Vec<u64>,
    /// Its tiles, in the index's order (of those meeting the region asked for).
    pub tiles: Vec<Indexed>,
    /// Each tile's place among all the index records (the records per tile follow it).
    pub origin: Vec<usize>,
    /// How many tiles the index records.
    pub count: usize,
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
/// together; of the tiles meeting `region` alone where one is given (a read of one tile of
/// 65,536 decodes one tile's names, not all of them).
pub fn read(object: &impl Attributes, region: Option<&Tile>) -> Option<Index> {
    let _l = hdf5::lock();
    let dtype = object.attribute_type(FILL_ATTRIBUTE)?;
    let (_, shape) = object.u64_attribute(SHAPE_ATTRIBUTE)?;
    let ndim = shape.len();
    let boxes = boxes_of(object, TILES_ATTRIBUTE, &shape)?;
    let count = boxes.len() / (2 * ndim);
    let within = match object.u64_attribute(WITHIN_ATTRIBUTE) {
        Some(_) => Some(boxes_of(object, WITHIN_ATTRIBUTE, &shape)?),
        None => None,
    };
    if within.as_ref().is_some_and(|w| w.len() != boxes.len()) {
        return None;
    }
    let tile_at = |words: &[u64], i: usize| {
        let b = &words[2 * ndim * i..2 * ndim * (i + 1)];
        Tile::new(b[..ndim].to_vec(), b[ndim..].to_vec())
    };
    // A region of another number of dimensions (`inspect` asks with one of none) meets none.
    let meets = |i: usize| {
        let b = &boxes[2 * ndim * i..2 * ndim * (i + 1)];
        region.is_none_or(|r| {
            r.ndim() == ndim
                && (0..ndim).all(|a| {
                    let (start, end) = (b[a], b[a] + b[ndim + a]);
                    b[ndim + a] > 0 && start < r.offset[a] + r.shape[a] && r.offset[a] < end
                })
        })
    };
    let (_, bytes) = object.attribute_as(SOURCES_ATTRIBUTE, &Dtype::UInt8.hdf5_type().ok()?)?;
    let mut names = SourceNames::new(&bytes);
    let (mut tiles, mut origin) = (Vec::new(), Vec::new());
    for i in 0..count {
        let (file, dataset) = names.next()??;
        if !meets(i) {
            continue;
        }
        let region = tile_at(&boxes, i);
        // Where tiles are coalesced: the tile's dataset's box, which must hold the tile.
        let within = match within.as_ref().map(|w| tile_at(w, i)) {
            Some(w) if w == region => None,
            Some(w) if region.intersection(&w).is_none_or(|c| c != region) => return None,
            other => other,
        };
        tiles.push(Indexed {
            region,
            file: std::str::from_utf8(file).ok()?.to_string(),
            dataset: std::str::from_utf8(dataset).ok()?.to_string(),
            within,
        });
        origin.push(i);
    }
    // As many names as boxes, and nothing after them.
    if names.next().is_some() {
        return None;
    }
    Some(Index {
        dtype,
        shape,
        tiles,
        origin,
        count,
    })
}

/// The words of attribute `name` of `object`: boxes (`[tiles, 2, ndim]`) that fit `shape`.
fn boxes_of(object: &impl Attributes, name: &str, shape: &[u64]) -> Option<Vec<u64>> {
    let (dims, words) = object.u64_attribute(name)?;
    let ndim = shape.len();
    if ndim == 0 || dims.len() != 3 || dims[1] != 2 || dims[2] != ndim as u64 {
        return None;
    }
    let fits = words.chunks_exact(2 * ndim).all(|b| {
        (0..ndim).all(|a| {
            b[a].checked_add(b[ndim + a])
                .is_some_and(|end| end <= shape[a])
        })
    });
    fits.then_some(words)
}

/// The `(file, dataset)` pairs `encode_sources` wrote, one at a time without copying them:
/// None at the end; Some(None) where the bytes are not such a list (a first tile without a
/// file, a pair cut short, an empty dataset name).
struct SourceNames<'a> {
    rest: &'a [u8],
    file: Option<&'a [u8]>,
}

impl<'a> SourceNames<'a> {
    fn new(bytes: &'a [u8]) -> SourceNames<'a> {
        SourceNames {
            rest: bytes,
            file: None,
        }
    }

    /// The part of the rest up to its next NUL, and the rest after it.
    fn part(&mut self) -> Option<&'a [u8]> {
        let end = self.rest.iter().position(|&b| b == 0)?;
        let part = &self.rest[..end];
        self.rest = &self.rest[end + 1..];
        Some(part)
    }
}

impl<'a> Iterator for SourceNames<'a> {
    type Item = Option<(&'a [u8], &'a [u8])>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.rest.is_empty() {
            return None;
        }
        let pair = (|| {
            let file = match self.part()? {
                [] => self.file?,
                named => named,
            };
            let dataset = self.part().filter(|d| !d.is_empty())?;
            self.file = Some(file);
            Some((file, dataset))
        })();
        if pair.is_none() {
            self.rest = &[];
        }
        Some(pair)
    }
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
#[cfg(any(test, feature = "internals"))]
fn decode_sources(bytes: &[u8]) -> Option<Vec<(String, String)>> {
    let text = |b: &[u8]| std::str::from_utf8(b).ok().map(str::to_string);
    SourceNames::new(bytes)
        .map(|pair| {
            let (file, dataset) = pair?;
            Some((text(file)?, text(dataset)?))
        })
        .collect()
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
