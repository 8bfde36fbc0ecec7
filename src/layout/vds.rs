//! The bytes of the VDS layout: one HDF5 file per tile, the master holding the virtual
//! dataset; and, on reading any virtual dataset, either reading its sources directly
//! (`DirectReader`, when its mappings are plain boxes) or checking that every source a read
//! needs is really there before HDF5 reads it (`check_sources`).

use super::sync_path;
use crate::dtype::Dtype;
use crate::hdf5::{self, cstr, Dataset, File, Plist, Space};
use crate::status::{Error, Result, H5TILE_ERR_MISSING_TILE};
use crate::tile::Tile;
use hdf5_sys::h5a::{H5Acreate2, H5Awrite};
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::{H5S_sel_type, H5Sget_select_type, H5S_ALL};
use hdf5_sys::h5t::H5T_NATIVE_UINT64;
use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};

/// Name of the dataset inside every tile file.
pub const TILE_DATASET: &str = "/tile";

/// Writes one tile file at `path`: dataset `/tile` of the tile's shape, contiguous, filled by
/// one `H5Dwrite` straight from the caller's buffer, with the tile's place recorded in the
/// attributes `h5tile_offset` and `h5tile_global_shape`; then syncs it to disk.
///
/// # Safety
/// `buf` must hold `tile.volume()` elements of `dtype`.
pub unsafe fn write_tile(
    path: &Path,
    dtype: Dtype,
    tile: &Tile,
    global: &[u64],
    buf: *const c_void,
) -> Result<()> {
    {
        let _l = hdf5::lock();
        let file = File::create(path)?;
        let t = dtype.hdf5_type()?;
        let space = Space::simple(&tile.shape)?;
        let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
        let dset = Dataset::create(file.id(), TILE_DATASET, &t, &space, &dcpl)?;
        dset.write(&t, H5S_ALL, H5S_ALL, buf)?;
        write_u64_attribute(&dset, "h5tile_offset", &tile.offset)?;
        write_u64_attribute(&dset, "h5tile_global_shape", global)?;
        drop(dset);
        file.close()?;
    }
    sync_path(path)
}

fn write_u64_attribute(dset: &Dataset, name: &str, values: &[u64]) -> Result<()> {
    let space = Space::simple(&[values.len() as u64])?;
    let what = || format!("cannot write attribute '{name}'");
    let id = unsafe {
        H5Acreate2(
            dset.id(),
            cstr(name).as_ptr(),
            *H5T_NATIVE_UINT64,
            space.id(),
            H5P_DEFAULT,
            H5P_DEFAULT,
        )
    };
    let attr = hdf5::Attribute::from_id(id, what)?;
    hdf5::check(
        unsafe {
            H5Awrite(
                attr.id(),
                *H5T_NATIVE_UINT64,
                values.as_ptr() as *const c_void,
            )
        },
        what,
    )?;
    Ok(())
}

/// Writes the master file at `path`: `dataset` of `global` shape whose elements come from
/// `sources` (each tile and its file name relative to the master's folder); elements no source
/// covers read as zero. Syncing and renaming are the caller's (see `layout::commit`).
pub fn write_master(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    sources: &[(Tile, String)],
) -> Result<()> {
    let _l = hdf5::lock();
    let file = File::create(path)?;
    let t = dtype.hdf5_type()?;
    let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
    for (tile, file_name) in sources {
        let vspace = Space::simple(global)?;
        vspace.select_block(&tile.offset, &tile.shape)?;
        let src_space = Space::simple(&tile.shape)?;
        hdf5::check(
            unsafe {
                H5Pset_virtual(
                    dcpl.id(),
                    vspace.id(),
                    cstr(file_name).as_ptr(),
                    cstr(TILE_DATASET).as_ptr(),
                    src_space.id(),
                )
            },
            || format!("cannot map tile {tile} to '{file_name}'"),
        )?;
    }
    let space = Space::simple(global)?;
    drop(Dataset::create(file.id(), dataset, &t, &space, &dcpl)?);
    file.close()
}

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
pub struct Source {
    pub file: String,
    pub dataset: String,
    /// Bounding box of the mapped elements (None for an empty selection).
    pub region: Option<Tile>,
}

/// The mappings of virtual dataset `dset` (rank `ndim`).
pub fn sources(dset: &Dataset, ndim: usize) -> Result<Vec<Source>> {
    let _l = hdf5::lock();
    let dcpl = dset.create_plist()?;
    let mut count = 0usize;
    hdf5::check(
        unsafe { H5Pget_virtual_count(dcpl.id(), &mut count) },
        || "cannot count VDS mappings".into(),
    )?;
    (0..count)
        .map(|i| {
            let file =
                read_name(|buf, n| unsafe { H5Pget_virtual_filename(dcpl.id(), i, buf, n) })?;
            let dataset =
                read_name(|buf, n| unsafe { H5Pget_virtual_dsetname(dcpl.id(), i, buf, n) })?;
            let vspace = Space::from_id(unsafe { H5Pget_virtual_vspace(dcpl.id(), i) }, || {
                format!("cannot read VDS mapping {i}")
            })?;
            let region = vspace.selection_bounds(ndim).map(|(start, end)| {
                let shape = start.iter().zip(&end).map(|(s, e)| e - s + 1).collect();
                Tile::new(start, shape)
            });
            Ok(Source {
                file,
                dataset,
                region,
            })
        })
        .collect()
}

fn read_name(get: impl Fn(*mut c_char, usize) -> isize) -> Result<String> {
    let n = hdf5::check(get(std::ptr::null_mut(), 0), || {
        "cannot read VDS source name".into()
    })?;
    let mut buf = vec![0u8; n as usize + 1];
    hdf5::check(get(buf.as_mut_ptr() as *mut c_char, buf.len()), || {
        "cannot read VDS source name".into()
    })?;
    buf.truncate(n as usize);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Where HDF5 looks for source `file` of a VDS whose master is `master` (as its
/// `H5F_prefix_open_file` does): an absolute name as is; then the name — for an absolute one,
/// its last component — under each folder of `HDF5_VDS_PREFIX` (`${ORIGIN}` meaning the
/// master's folder), under the master's folder, and under the working directory. Returns the
/// first candidate that exists, or the first candidate (for the message) when none does.
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
    if let Ok(prefixes) = std::env::var("HDF5_VDS_PREFIX") {
        for p in prefixes.split(':').filter(|p| !p.is_empty()) {
            let p = p.replace("${ORIGIN}", &origin.to_string_lossy());
            candidates.push(Path::new(&p).join(name));
        }
    }
    candidates.push(origin.join(name));
    candidates.push(name.to_path_buf());
    match candidates.iter().find(|c| c.is_file()) {
        Some(c) => (c.clone(), true),
        None => (candidates.swap_remove(0), false),
    }
}

/// `H5TILE_ERR_MISSING_TILE` for the source at `path` of `region` of `dataset` in `master`.
fn missing_tile(path: &Path, region: &Tile, dataset: &str, master: &Path, why: &str) -> Error {
    Error::new(
        H5TILE_ERR_MISSING_TILE,
        format!(
            "tile file '{}' holding elements {region} of '{dataset}' in '{}' {why}",
            path.display(),
            master.display()
        ),
    )
}

/// Checks that every source of virtual dataset `dset` (in `master`) whose elements meet `want`
/// exists and opens, since HDF5 alone would read fill values in place of a lost tile.
/// Sources named with printf-style patterns are left to HDF5.
pub fn check_sources(master: &Path, dataset: &str, dset: &Dataset, want: &Tile) -> Result<()> {
    let _l = hdf5::lock();
    for src in sources(dset, want.ndim())? {
        let Some(region) = &src.region else { continue };
        if src.file.contains('%')
            || src.dataset.contains('%')
            || want.intersection(region).is_none()
        {
            continue;
        }
        let (path, found) = if src.file == "." {
            (master.to_path_buf(), true)
        } else {
            resolve_source(master, &src.file)
        };
        let missing = |why: String| missing_tile(&path, region, dataset, master, &why);
        if !found {
            return Err(missing("does not exist".into()));
        }
        let opened = File::open_read(&path)
            .and_then(|f| Dataset::open(f.id(), &src.dataset).map(|d| (f, d)));
        if let Err(e) = opened {
            return Err(missing(format!("cannot be read ({})", e.message)));
        }
    }
    Ok(())
}

/// A mapping reduced to boxes: `region` of the virtual dataset holds the box of the same
/// shape at `source_offset` of dataset `dataset` in file `file` (a literal name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockMapping {
    pub file: String,
    pub dataset: String,
    pub region: Tile,
    pub source_offset: Vec<u64>,
}

/// The mappings of virtual dataset `dset` (rank `ndim`) when h5tile can follow them itself:
/// each a single box copied from a box of the same shape, with literal names, and no two
/// overlapping. That is every VDS h5tile writes, Legate's, and the usual h5py ones. None
/// otherwise: HDF5 then reads the dataset (after `check_sources`).
pub fn block_mappings(dset: &Dataset, ndim: usize) -> Result<Option<Vec<BlockMapping>>> {
    let _l = hdf5::lock();
    let dcpl = dset.create_plist()?;
    let mut count = 0usize;
    hdf5::check(
        unsafe { H5Pget_virtual_count(dcpl.id(), &mut count) },
        || "cannot count VDS mappings".into(),
    )?;
    let mut mappings = Vec::with_capacity(count);
    for i in 0..count {
        let file = read_name(|buf, n| unsafe { H5Pget_virtual_filename(dcpl.id(), i, buf, n) })?;
        let dataset = read_name(|buf, n| unsafe { H5Pget_virtual_dsetname(dcpl.id(), i, buf, n) })?;
        let (Some(file), Some(dataset)) =
            (unescape_source_name(&file), unescape_source_name(&dataset))
        else {
            return Ok(None);
        };
        let what = || format!("cannot read VDS mapping {i}");
        let vspace = Space::from_id(unsafe { H5Pget_virtual_vspace(dcpl.id(), i) }, what)?;
        let sspace = Space::from_id(unsafe { H5Pget_virtual_srcspace(dcpl.id(), i) }, what)?;
        let Some((offset, shape)) = vspace.single_block() else {
            return Ok(None);
        };
        // A source selected whole may not record its extent: it must then match the region,
        // which `DirectReader` checks when it opens the source.
        let source_offset =
            if unsafe { H5Sget_select_type(sspace.id()) } == H5S_sel_type::H5S_SEL_ALL {
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
        });
    }
    let regions: Vec<Tile> = mappings.iter().map(|m| m.region.clone()).collect();
    let dims = dset.space()?.dims()?;
    if regions.iter().any(|r| !r.fits_in(&dims)) || crate::coverage::check(&dims, &regions).is_err()
    {
        return Ok(None);
    }
    Ok(Some(mappings))
}

/// Most source files kept open between reads of one `DirectReader`.
const OPEN_SOURCES: usize = 8;

/// Reads boxes of a virtual dataset by opening its sources itself, so only the sources a read
/// needs are opened, a missing one is reported by name, and no more than `OPEN_SOURCES` stay
/// open (HDF5 keeps every source it touched open until the dataset closes, which for
/// thousands of tiles costs gigabytes).
pub struct DirectReader {
    master: PathBuf,
    dataset: String,
    mappings: Vec<BlockMapping>,
    /// Element of the dataset's fill value, per element type asked for.
    fill: Vec<(Dtype, Vec<u8>)>,
    dcpl: Plist,
    /// Recently used sources, most recent first: (mapping index, file, dataset).
    open: Vec<(usize, File, Dataset)>,
}

impl DirectReader {
    pub fn new(
        master: &Path,
        dataset: &str,
        dset: &Dataset,
        mappings: Vec<BlockMapping>,
    ) -> Result<DirectReader> {
        Ok(DirectReader {
            master: master.to_path_buf(),
            dataset: dataset.to_string(),
            mappings,
            fill: Vec::new(),
            dcpl: dset.create_plist()?,
            open: Vec::new(),
        })
    }

    /// Reads `want` as `dtype` into `buf` (dense, row-major). Elements no source covers, and
    /// with `fill_missing` those of missing sources, get the dataset's fill value; otherwise a
    /// missing or unreadable source is `H5TILE_ERR_MISSING_TILE` naming it.
    ///
    /// # Safety
    /// `buf` must have room for `want.volume()` elements of `dtype`.
    pub unsafe fn read(
        &mut self,
        want: &Tile,
        dtype: Dtype,
        buf: *mut u8,
        fill_missing: bool,
    ) -> Result<()> {
        let _l = hdf5::lock();
        let parts: Vec<(usize, Tile)> = (0..self.mappings.len())
            .filter_map(|i| want.intersection(&self.mappings[i].region).map(|c| (i, c)))
            .collect();
        let covered: u128 = parts.iter().map(|(_, c)| c.volume()).sum();
        if fill_missing || covered < want.volume() {
            self.prefill(want, dtype, buf)?;
        }
        let mem_type = dtype.hdf5_type()?;
        let mem_space = Space::simple(&want.shape)?;
        for (i, common) in parts {
            let slot = match self.source(i) {
                Ok(slot) => slot,
                Err(_) if fill_missing => continue,
                Err(e) => return Err(e),
            };
            let m = &self.mappings[i];
            let src: Vec<u64> = (0..want.ndim())
                .map(|a| m.source_offset[a] + common.offset[a] - m.region.offset[a])
                .collect();
            let at: Vec<u64> = (0..want.ndim())
                .map(|a| common.offset[a] - want.offset[a])
                .collect();
            let (_, _, source) = &self.open[slot];
            let file_space = source.space()?;
            file_space.select_block(&src, &common.shape)?;
            mem_space.select_block(&at, &common.shape)?;
            source.read(&mem_type, mem_space.id(), file_space.id(), buf.cast())?;
        }
        Ok(())
    }

    /// Index in `open` of mapping `i`'s source, opening it (and closing the least recently
    /// used one) if needed.
    fn source(&mut self, i: usize) -> Result<usize> {
        if let Some(pos) = self.open.iter().position(|(j, _, _)| *j == i) {
            let entry = self.open.remove(pos);
            self.open.insert(0, entry);
            return Ok(0);
        }
        let m = &self.mappings[i];
        let (path, found) = if m.file == "." {
            (self.master.clone(), true)
        } else {
            resolve_source(&self.master, &m.file)
        };
        let missing =
            |why: String| missing_tile(&path, &m.region, &self.dataset, &self.master, &why);
        if !found {
            return Err(missing("does not exist".into()));
        }
        let file = File::open_read(&path)
            .map_err(|e| missing(format!("cannot be read ({})", e.message)))?;
        let dset = Dataset::open(file.id(), &m.dataset)
            .map_err(|e| missing(format!("cannot be read ({})", e.message)))?;
        let dims = dset.space()?.dims()?;
        let end_fits = m
            .source_offset
            .iter()
            .zip(&m.region.shape)
            .zip(&dims)
            .all(|((o, s), d)| o + s <= *d);
        if dims.len() != m.region.ndim() || !end_fits {
            return Err(missing(format!(
                "holds a dataset of shape {dims:?}, too small for its mapping"
            )));
        }
        self.open.truncate(OPEN_SOURCES - 1);
        self.open.insert(0, (i, file, dset));
        Ok(0)
    }

    /// Fills `buf` with the dataset's fill value in `dtype` (zero unless the file sets one).
    unsafe fn prefill(&mut self, want: &Tile, dtype: Dtype, buf: *mut u8) -> Result<()> {
        let size = dtype.size();
        if !self.fill.iter().any(|(d, _)| *d == dtype) {
            let mut element = vec![0u8; size];
            let mem_type = dtype.hdf5_type()?;
            if H5Pget_fill_value(self.dcpl.id(), mem_type.id(), element.as_mut_ptr().cast()) < 0 {
                hdf5::take_error_stack();
                element.fill(0);
            }
            self.fill.push((dtype, element));
        }
        let element = &self
            .fill
            .iter()
            .find(|(d, _)| *d == dtype)
            .expect("just added")
            .1;
        let bytes = std::slice::from_raw_parts_mut(buf, want.volume() as usize * size);
        if element.iter().all(|&b| b == 0) {
            bytes.fill(0);
        } else {
            bytes
                .chunks_exact_mut(size)
                .for_each(|e| e.copy_from_slice(element));
        }
        Ok(())
    }
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
    fn relative_sources_resolve_beside_the_master_then_in_the_working_directory() {
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
