//! Reading a virtual dataset's mappings: which file and dataset fill which box, where HDF5
//! would find each source file, whether every source a read needs is really there (HDF5 alone
//! would read fill values in place of a lost tile), and the byte records h5tile's masters keep.

use crate::geometry::tile::Tile;
use crate::layout::placement::Placement;
use crate::layout::runs::box_runs;
use crate::layout::vds::{TileBytes, TILE_BYTES_ATTRIBUTE};
use crate::platform::hdf5::{self, Attributes, Dataset, File};
use crate::status::{h5tile_status, Error, Result, H5TILE_ERR_CORRUPT, H5TILE_ERR_MISSING_TILE};
use std::path::{Path, PathBuf};

/// The literal name behind a source name as HDF5 parses it ("%%" is one '%'), or None for a
/// printf-style pattern (`%b`) or a name whose '%' HDF5 versions treat differently; such
/// sources are left to HDF5.
pub fn unescape_source_name(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars();
    while let Some(c) = chars.next() {
        if c == '%' {
            match chars.next() {
                Some('%') => out.push('%'),
                _ => return None,
            }
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// One mapping of a virtual dataset: which file and dataset fill which box of it.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub file: String,
    pub dataset: String,
    /// Bounding box of the mapped elements (None for an empty selection).
    pub region: Option<Tile>,
}

/// The mappings of virtual dataset `dset` (rank `ndim`).
pub fn sources(dset: &Dataset, ndim: usize) -> Result<Vec<Mapping>> {
    let _l = hdf5::lock();
    let mappings = dset.create_plist()?.virtual_mappings()?;
    Ok(mappings
        .into_iter()
        .map(|m| Mapping {
            region: m.virtual_space.selection_bounds(ndim).map(|(start, end)| {
                let shape = start.iter().zip(&end).map(|(s, e)| e - s + 1).collect();
                Tile::new(start, shape)
            }),
            file: m.file,
            dataset: m.dataset,
        })
        .collect())
}

/// Where h5tile looks for source `file` of a VDS whose master is `master`, in HDF5's order
/// (`H5F_prefix_open_file`): an absolute name as is; then the name — for an absolute one, its
/// last component — under each folder of `HDF5_VDS_PREFIX` (a `${ORIGIN}` that starts it
/// meaning the master's folder) and under the master's folder. HDF5 then tries the working
/// directory as a last resort; h5tile does not, so a tile missing beside its master is missing
/// wherever the reader runs (a copy that lost a tile never borrows the original's). Returns
/// the first candidate that exists, or the first candidate (for the message) when none does.
pub fn resolve_source(master: &Path, file: &str) -> (PathBuf, bool) {
    let origin = master
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let given = Path::new(file);
    let mut candidates = Vec::new();
    let name = if given.is_absolute() {
        candidates.push(given.to_path_buf());
        given.file_name().map(Path::new).unwrap_or(given)
    } else {
        given
    };
    if let Some(prefixes) = std::env::var_os("HDF5_VDS_PREFIX") {
        use std::os::unix::ffi::OsStrExt;
        // As HDF5 reads it: bytes, not text; `${ORIGIN}` only at the start of the whole value.
        let mut value = prefixes.as_bytes().to_vec();
        if let Some(rest) = value.strip_prefix(b"${ORIGIN}") {
            value = [origin.as_os_str().as_bytes(), rest].concat();
        }
        for p in value.split(|&b| b == b':').filter(|p| !p.is_empty()) {
            candidates.push(Path::new(std::ffi::OsStr::from_bytes(p)).join(name));
        }
    }
    candidates.push(origin.join(name));
    match candidates.iter().find(|c| c.is_file()) {
        Some(c) => (c.clone(), true),
        None => (candidates.swap_remove(0), false),
    }
}

/// `H5TILE_ERR_MISSING_TILE` for the source at `path` of `region` of `dataset` in `master`.
pub(super) fn missing_tile(
    path: &Path,
    region: &dyn std::fmt::Display,
    dataset: &str,
    master: &Path,
    why: &str,
) -> Error {
    source_error(H5TILE_ERR_MISSING_TILE, path, region, dataset, master, why)
}

/// `H5TILE_ERR_CORRUPT`: bytes of the tile file or subfile at `path`, holding `region` of
/// `dataset` in `master`, are not those written (`why` says which).
pub(super) fn corrupt(
    path: &Path,
    region: &dyn std::fmt::Display,
    dataset: &str,
    master: &Path,
    why: &str,
) -> Error {
    source_error(H5TILE_ERR_CORRUPT, path, region, dataset, master, why)
}

/// An error of `status` about the source at `path` of `region` of `dataset` in `master`.
pub(super) fn source_error(
    status: h5tile_status,
    path: &Path,
    region: &dyn std::fmt::Display,
    dataset: &str,
    master: &Path,
    why: &str,
) -> Error {
    // A subfile holds the tiles of several ranks; `region` is the one the read needed first.
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let kind = match crate::layout::subfile_generation(&name).is_some() {
        true => "subfile",
        false => "tile file",
    };
    Error::new(
        status,
        format!(
            "{kind} '{}' holding elements {region} of '{dataset}' in '{}' {why}",
            path.display(),
            master.display()
        ),
    )
}

/// The file holding `region` of `dataset` in `master`, as HDF5 would find it (`file` "."
/// is the master itself), or `H5TILE_ERR_MISSING_TILE` when it does not exist.
pub(super) fn locate_source(
    master: &Path,
    file: &str,
    region: &Tile,
    dataset: &str,
) -> Result<PathBuf> {
    if file == "." {
        return Ok(master.to_path_buf());
    }
    match resolve_source(master, file) {
        (path, true) => Ok(path),
        (path, false) => Err(missing_tile(
            &path,
            region,
            dataset,
            master,
            "does not exist",
        )),
    }
}

/// Checks that every source of virtual dataset `dset` (in `master`) whose elements meet `want`
/// exists and opens, since HDF5 alone would read fill values in place of a lost tile.
/// Sources named with printf-style patterns are left to HDF5.
pub fn check_sources(master: &Path, dataset: &str, dset: &Dataset, want: &Tile) -> Result<()> {
    let _l = hdf5::lock();
    for src in sources(dset, want.ndim())? {
        let Some(region) = &src.region else { continue };
        let names = (
            unescape_source_name(&src.file),
            unescape_source_name(&src.dataset),
        );
        let (Some(file), Some(source_dataset)) = names else {
            continue;
        };
        if want.intersection(region).is_none() {
            continue;
        }
        let path = locate_source(master, &file, region, dataset)?;
        let missing = |why: String| missing_tile(&path, region, dataset, master, &why);
        let opened =
            File::open_read(&path).and_then(|f| Dataset::open(&f, &source_dataset).map(|d| (f, d)));
        if let Err(e) = opened {
            return Err(missing(format!("cannot be read ({})", e.message)));
        }
    }
    Ok(())
}

/// A mapping reduced to boxes: `region` of the virtual dataset holds the box of the same
/// shape at `source_offset` of dataset `dataset` in file `file` (a literal name). For a tile of
/// a subfile's coalesced box, `within` is the box that dataset holds (virtual-dataset
/// coordinates): the tile's bytes are its rows there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockMapping {
    pub file: String,
    pub dataset: String,
    pub region: Tile,
    pub source_offset: Vec<u64>,
    pub within: Option<Tile>,
}

impl BlockMapping {
    /// Where the bytes of h5tile's tile are in its file, its dataset's bytes starting at
    /// `data_offset`, elements of `elem` bytes: one run, or its rows within a coalesced box.
    pub(super) fn place(&self, data_offset: u64, elem: usize) -> Placement {
        match &self.within {
            None => Placement::Run(data_offset),
            Some(within) => {
                let tile = Tile::new(self.source_offset.clone(), self.region.shape.clone());
                Placement::rows_of(data_offset, &within.shape, &tile, elem)
            }
        }
    }

    /// The shape of the source dataset the tile is read from.
    pub(super) fn source_shape(&self) -> &[u64] {
        self.within
            .as_ref()
            .map_or(&self.region.shape, |w| &w.shape)
    }

    /// Where `common` (a part of `region`, in virtual-dataset coordinates) starts in the source
    /// dataset, and where it starts in a buffer laid out as `want`.
    pub(super) fn placement(&self, common: &Tile, want: &Tile) -> (Vec<u64>, Vec<u64>) {
        let n = want.ndim();
        let src = (0..n)
            .map(|a| self.source_offset[a] + common.offset[a] - self.region.offset[a])
            .collect();
        (src, common.offset_in(want))
    }

    /// `(byte of the tile, byte in the buffer, length)` runs copying `common` into a buffer
    /// laid out as `want`, `elem` bytes per element (`layout::runs::box_runs`): bytes in the
    /// tile's own order, which its checksums count (`place` finds them in the file).
    pub(super) fn runs(&self, common: &Tile, want: &Tile, elem: usize) -> Vec<(u64, u64, usize)> {
        let src: Vec<u64> = (0..want.ndim())
            .map(|a| common.offset[a] - self.region.offset[a])
            .collect();
        let dst = common.offset_in(want);
        box_runs(
            &self.region.shape,
            &src,
            &want.shape,
            &dst,
            &common.shape,
            elem,
        )
    }
}

/// The mappings of virtual dataset `dset` (rank `ndim`) when h5tile can follow them itself:
/// each a single box copied from a box of the same shape, with literal names, and no two
/// overlapping. That is every VDS h5tile writes, Legate's, and the usual h5py ones. None
/// otherwise: HDF5 then reads the dataset (after `check_sources`).
pub fn block_mappings(dset: &Dataset, ndim: usize) -> Result<Option<Vec<BlockMapping>>> {
    let _l = hdf5::lock();
    let stored = dset.create_plist()?.virtual_mappings()?;
    let mut mappings = Vec::with_capacity(stored.len());
    for m in stored {
        let (Some(file), Some(dataset)) = (
            unescape_source_name(&m.file),
            unescape_source_name(&m.dataset),
        ) else {
            return Ok(None);
        };
        let (vspace, sspace) = (m.virtual_space, m.source_space);
        let Some((offset, shape)) = vspace.single_block() else {
            return Ok(None);
        };
        // A source selected whole may not record its extent: it must then match the region,
        // which `DirectReader` checks when it opens the source.
        let source_offset = if sspace.selects_all() {
            vec![0; ndim]
        } else {
            match sspace.single_block() {
                Some((source_offset, source_shape)) if source_shape == shape => source_offset,
                _ => return Ok(None),
            }
        };
        if offset.len() != ndim {
            return Ok(None);
        }
        mappings.push(BlockMapping {
            file,
            dataset,
            region: Tile::new(offset, shape),
            source_offset,
            within: None,
        });
    }
    let regions: Vec<Tile> = mappings.iter().map(|m| m.region.clone()).collect();
    let dims = dset.space()?.dims()?;
    if regions.iter().any(|r| !r.fits_in(&dims))
        || crate::geometry::coverage::check(&dims, &regions).is_err()
    {
        return Ok(None);
    }
    Ok(Some(mappings))
}

/// The `[data_offset, file_size]` records of an h5tile master, one per mapping, if present.
pub(crate) fn read_tile_bytes(dset: &impl Attributes, count: usize) -> Option<Vec<TileBytes>> {
    let (dims, values) = dset.u64_attribute(TILE_BYTES_ATTRIBUTE)?;
    if dims != [count as u64, 2] {
        return None;
    }
    Some(
        values
            .chunks_exact(2)
            .map(|v| TileBytes {
                data_offset: v[0],
                file_size: v[1],
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_sequences_are_read_as_hdf5_parses_them() {
        let parsed = unescape_source_name("100%%.h5.tiles/d.h5");
        assert_eq!(parsed.as_deref(), Some("100%.h5.tiles/d.h5"));
        assert_eq!(
            unescape_source_name("plain/t.h5").as_deref(),
            Some("plain/t.h5")
        );
        assert_eq!(unescape_source_name("f-%b.h5"), None);
        assert_eq!(unescape_source_name("f%"), None);
    }

    #[test]
    fn relative_sources_resolve_beside_the_master_and_never_in_the_working_directory() {
        let d = tempfile::tempdir().unwrap();
        let master = d.path().join("m.h5");
        std::fs::create_dir(d.path().join("m.h5.tiles")).unwrap();
        std::fs::write(d.path().join("m.h5.tiles/a.h5"), b"").unwrap();
        assert_eq!(
            resolve_source(&master, "m.h5.tiles/a.h5"),
            (d.path().join("m.h5.tiles/a.h5"), true)
        );
        let (p, found) = resolve_source(&master, "m.h5.tiles/missing.h5");
        assert!(!found);
        assert_eq!(p, d.path().join("m.h5.tiles/missing.h5"));
        // A file of the same relative name under the working directory is not taken: the
        // master's copy lacks it. (The test's working directory is the crate's, where a
        // `Cargo.toml` always exists; a master elsewhere naming it finds nothing.)
        assert!(Path::new("Cargo.toml").is_file());
        assert_eq!(
            resolve_source(&master, "Cargo.toml"),
            (d.path().join("Cargo.toml"), false)
        );
    }

    #[test]
    fn a_moved_absolute_source_is_found_by_its_name_beside_the_master() {
        let d = tempfile::tempdir().unwrap();
        let master = d.path().join("m.h5");
        std::fs::write(d.path().join("t0.h5"), b"").unwrap();
        assert_eq!(
            resolve_source(&master, "/no/such/dir/t0.h5"),
            (d.path().join("t0.h5"), true)
        );
        assert_eq!(
            resolve_source(&master, "/no/such/dir/t1.h5"),
            (PathBuf::from("/no/such/dir/t1.h5"), false)
        );
    }
}
