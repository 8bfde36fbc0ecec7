//! How a dataset's tiles are stored on disk (their filters and bytes there), from the tile
//! files' metadata.

use super::*;
use crate::platform::hdf5::{Dataset, File};
use std::collections::HashSet;
use std::path::Path;

/// How the tiles' distinct sources are stored together; None when a tile holding elements is
/// of an unknown source.
pub(super) fn stored_of_tiles(tiles: &[TileInfo]) -> Option<Stored> {
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
pub(super) fn stored_of_sources(
    master: &File,
    tiles: &[TileInfo],
    elem: usize,
) -> Vec<Option<Stored>> {
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
