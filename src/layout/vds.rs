//! The bytes of the VDS layout: one HDF5 file per tile, the master holding the virtual
//! dataset, and, on reading, the check that every tile file a read needs is really there.

use super::sync_path;
use crate::dtype::Dtype;
use crate::hdf5::{self, cstr, Dataset, File, Plist, Space};
use crate::status::{Error, Result, H5TILE_ERR_MISSING_TILE};
use crate::tile::Tile;
use hdf5_sys::h5a::{H5Acreate2, H5Awrite};
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::H5S_ALL;
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
        let missing = |why: String| -> Error {
            Error::new(
                H5TILE_ERR_MISSING_TILE,
                format!(
                    "tile file '{}' holding elements {region} of '{dataset}' in '{}' {why}",
                    path.display(),
                    master.display()
                ),
            )
        };
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
