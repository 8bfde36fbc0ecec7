//! The bytes of the VDS layout: one HDF5 file per tile, the master holding the virtual
//! dataset; and, on reading any virtual dataset, either reading its sources directly
//! (`DirectReader`, when its mappings are plain boxes) or checking that every source a read
//! needs is really there before HDF5 reads it (`check_sources`).

use super::runs::box_rows;
use super::sync_path;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::device::{DeviceFile, DevicePtr, Route};
use crate::platform::hdf5::{self, cstr, Dataset, File, Plist, Space, Type};
use crate::status::{Error, Result, H5TILE_ERR_CUDA, H5TILE_ERR_MISSING_TILE};
use hdf5_sys::h5::HADDR_UNDEF;
use hdf5_sys::h5a::{H5Acreate2, H5Awrite};
use hdf5_sys::h5p::*;
use hdf5_sys::h5s::{H5S_sel_type, H5Sget_select_type, H5S_ALL};
use hdf5_sys::h5t::H5T_NATIVE_UINT64;
use std::ffi::{c_char, c_void};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// Name of the dataset inside every tile file.
pub const TILE_DATASET: &str = "/tile";

/// Where a tile file keeps its elements: the byte offset of `/tile`'s contiguous data and the
/// file's size, recorded in the master so readers can fetch the bytes without opening the file
/// with HDF5 (see `DirectReader`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileBytes {
    pub data_offset: u64,
    pub file_size: u64,
}

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
    route: &Route,
) -> Result<TileBytes> {
    let data_offset = (|| {
        let _l = hdf5::lock();
        let file = File::create_with(path, &hdf5::gds::tile_access(route.driver_config())?)?;
        let t = dtype.hdf5_type()?;
        let space = Space::simple(&tile.shape)?;
        let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
        let dset = Dataset::create(file.id(), TILE_DATASET, &t, &space, &dcpl)?;
        dset.write(&t, H5S_ALL, H5S_ALL, buf)?;
        write_u64_attribute(&dset, "h5tile_offset", &tile.offset)?;
        write_u64_attribute(&dset, "h5tile_global_shape", global)?;
        let data_offset = hdf5_sys::h5d::H5Dget_offset(dset.id());
        drop(dset);
        file.close()?;
        Ok(data_offset)
    })()?;
    sync_path(path)?;
    let file_size = std::fs::metadata(path)
        .map_err(|e| Error::io("cannot stat", path, &e))?
        .len();
    Ok(TileBytes {
        data_offset,
        file_size,
    })
}

/// Name of the master's attribute listing, per mapping, `[data_offset, file_size]` of its tile.
pub const TILE_BYTES_ATTRIBUTE: &str = "h5tile_tile_bytes";

fn write_u64_attribute(dset: &Dataset, name: &str, values: &[u64]) -> Result<()> {
    write_u64_array_attribute(dset, name, &[values.len() as u64], values)
}

fn write_u64_array_attribute(
    dset: &Dataset,
    name: &str,
    dims: &[u64],
    values: &[u64],
) -> Result<()> {
    let space = Space::simple(dims)?;
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
/// `sources` (each tile, its file name relative to the master's folder, and where its bytes
/// are); elements no source covers read as zero. Syncing and renaming are the caller's (see
/// `layout::commit`).
pub fn write_master(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    global: &[u64],
    sources: &[(Tile, String, TileBytes)],
    keep_from: Option<&Path>,
) -> Result<()> {
    let _l = hdf5::lock();
    let file = super::keep::new_master(path, keep_from.map(|old| (old, dataset)))?;
    let t = dtype.hdf5_type()?;
    let dcpl = Plist::create(*H5P_CLS_DATASET_CREATE)?;
    for (tile, file_name, _) in sources {
        let vspace = Space::simple(global)?;
        vspace.select_block(&tile.offset, &tile.shape)?;
        let src_space = Space::simple(&tile.shape)?;
        // Our file names hold no '%', which HDF5 would read as a pattern (see `tile_dir`).
        debug_assert!(!file_name.contains('%'));
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
    let dset = Dataset::create(file.id(), dataset, &t, &space, &dcpl)?;
    if !sources.is_empty() {
        let bytes: Vec<u64> = sources
            .iter()
            .flat_map(|(_, _, b)| [b.data_offset, b.file_size])
            .collect();
        write_u64_array_attribute(
            &dset,
            TILE_BYTES_ATTRIBUTE,
            &[sources.len() as u64, 2],
            &bytes,
        )?;
    }
    drop(dset);
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

/// The file holding `region` of `dataset` in `master`, as HDF5 would find it (`file` "."
/// is the master itself), or `H5TILE_ERR_MISSING_TILE` when it does not exist.
fn locate_source(master: &Path, file: &str, region: &Tile, dataset: &str) -> Result<PathBuf> {
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
        let opened = File::open_read(&path)
            .and_then(|f| Dataset::open(f.id(), &source_dataset).map(|d| (f, d)));
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

impl BlockMapping {
    /// Where `common` (a part of `region`, in virtual-dataset coordinates) starts in the source
    /// dataset, and where it starts in a buffer laid out as `want`.
    fn placement(&self, common: &Tile, want: &Tile) -> (Vec<u64>, Vec<u64>) {
        let n = want.ndim();
        let src = (0..n)
            .map(|a| self.source_offset[a] + common.offset[a] - self.region.offset[a])
            .collect();
        let dst = (0..n).map(|a| common.offset[a] - want.offset[a]).collect();
        (src, dst)
    }
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
    if regions.iter().any(|r| !r.fits_in(&dims))
        || crate::geometry::coverage::check(&dims, &regions).is_err()
    {
        return Ok(None);
    }
    Ok(Some(mappings))
}

/// The `[data_offset, file_size]` records of an h5tile master, one per mapping, if present.
fn read_tile_bytes(dset: &Dataset, count: usize) -> Option<Vec<TileBytes>> {
    let _l = hdf5::lock();
    let name = cstr(TILE_BYTES_ATTRIBUTE);
    if unsafe { hdf5_sys::h5a::H5Aexists(dset.id(), name.as_ptr()) } <= 0 {
        hdf5::take_error_stack();
        return None;
    }
    let attr = hdf5::Attribute::from_id(
        unsafe { hdf5_sys::h5a::H5Aopen(dset.id(), name.as_ptr(), H5P_DEFAULT) },
        String::new,
    )
    .ok()?;
    let space = Space::from_id(
        unsafe { hdf5_sys::h5a::H5Aget_space(attr.id()) },
        String::new,
    )
    .ok()?;
    if space.dims().ok()? != [count as u64, 2] {
        return None;
    }
    let mut values = vec![0u64; 2 * count];
    let ok = unsafe {
        hdf5_sys::h5a::H5Aread(attr.id(), *H5T_NATIVE_UINT64, values.as_mut_ptr().cast())
    };
    if ok < 0 {
        hdf5::take_error_stack();
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
    /// For a master h5tile wrote: where each mapping's tile keeps its bytes.
    tile_bytes: Option<Vec<TileBytes>>,
    /// The element type the dataset stores, when it is one of h5tile's.
    stored: Option<(Dtype, Type)>,
    /// Staging for tile bytes that are contiguous in the file but not in the caller's buffer.
    scratch: Vec<u8>,
}

/// Largest staging read when copying tile bytes into a caller's buffer.
const SCRATCH_BYTES: usize = 4 << 20;

impl DirectReader {
    pub fn new(
        master: &Path,
        dataset: &str,
        dset: &Dataset,
        mappings: Vec<BlockMapping>,
    ) -> Result<DirectReader> {
        let tile_bytes = read_tile_bytes(dset, mappings.len())
            .filter(|_| mappings.iter().all(|m| m.dataset == TILE_DATASET));
        let file_type = dset.dtype()?;
        let stored = Dtype::of_hdf5(&file_type).ok().map(|d| (d, file_type));
        Ok(DirectReader {
            master: master.to_path_buf(),
            dataset: dataset.to_string(),
            mappings,
            fill: Vec::new(),
            dcpl: dset.create_plist()?,
            open: Vec::new(),
            tile_bytes,
            stored,
            scratch: Vec::new(),
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
        // Tile bytes are copied straight from the file when nothing needs converting.
        let raw = match &self.stored {
            Some((d, t)) => *d == dtype && t.equal(&mem_type),
            None => false,
        };
        for (i, common) in parts {
            if raw {
                match self.read_tile_bytes(i, &common, want, dtype.size(), buf) {
                    Ok(true) => continue,
                    Ok(false) => {}
                    Err(_) if fill_missing => continue,
                    Err(e) => return Err(e),
                }
            }
            let slot = match self.source(i) {
                Ok(slot) => slot,
                Err(_) if fill_missing => continue,
                Err(e) => return Err(e),
            };
            let (src, at) = self.mappings[i].placement(&common, want);
            let (_, _, source) = &self.open[slot];
            let file_space = source.space()?;
            file_space.select_block(&src, &common.shape)?;
            mem_space.select_block(&at, &common.shape)?;
            source.read(&mem_type, mem_space.id(), file_space.id(), buf.cast())?;
        }
        Ok(())
    }

    /// Copies `common` (virtual-dataset coordinates) of mapping `i`'s tile into its place in
    /// `buf` (laid out as `want`) by reading the tile file's bytes where h5tile recorded them,
    /// which spares HDF5 opening one file per tile (each open costs HDF5 half a megabyte of
    /// cache set-up). Returns false, having read nothing, when there is no record or the file
    /// is no longer the one recorded (its size changed): HDF5 then reads it.
    ///
    /// # Safety
    /// `buf` must have room for `want.volume()` elements of `elem` bytes.
    unsafe fn read_tile_bytes(
        &mut self,
        i: usize,
        common: &Tile,
        want: &Tile,
        elem: usize,
        buf: *mut u8,
    ) -> Result<bool> {
        let Some(bytes) = self.tile_bytes.as_ref().map(|b| b[i]) else {
            return Ok(false);
        };
        let m = &self.mappings[i];
        if bytes.data_offset == HADDR_UNDEF {
            return Ok(false);
        }
        let path = locate_source(&self.master, &m.file, &m.region, &self.dataset)?;
        let missing =
            |why: String| missing_tile(&path, &m.region, &self.dataset, &self.master, &why);
        let file =
            std::fs::File::open(&path).map_err(|e| missing(format!("cannot be read ({e})")))?;
        if file.metadata().map(|md| md.len()).ok() != Some(bytes.file_size) {
            return Ok(false);
        }
        let (src, dst) = m.placement(common, want);
        // Rows of the common box, consecutive ones in the file read together.
        let (row, rows) = box_rows(&m.region.shape, &src, &want.shape, &dst, &common.shape);
        let row = row as usize;
        let mut batch: Vec<u64> = Vec::new(); // destination element of each row in the batch
        let mut batch_src = 0u64;
        let total = want.volume() as usize * elem;
        let out = std::slice::from_raw_parts_mut(buf, total);
        let mut flush =
            |batch: &mut Vec<u64>, batch_src: u64, scratch: &mut Vec<u8>| -> Result<()> {
                if batch.is_empty() {
                    return Ok(());
                }
                let len = batch.len() * row * elem;
                let at = bytes.data_offset + batch_src * elem as u64;
                let contiguous = batch.windows(2).all(|w| w[1] == w[0] + row as u64);
                let read = if contiguous {
                    let start = batch[0] as usize * elem;
                    super::pieces::read_exact_at(&file, &mut out[start..start + len], at)
                } else {
                    scratch.resize(len, 0);
                    file.read_exact_at(&mut scratch[..len], at).map(|()| {
                        for (j, &d) in batch.iter().enumerate() {
                            let start = d as usize * elem;
                            out[start..start + row * elem]
                                .copy_from_slice(&scratch[j * row * elem..(j + 1) * row * elem]);
                        }
                    })
                };
                read.map_err(|e| missing(format!("cannot be read ({e})")))?;
                batch.clear();
                Ok(())
            };
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut batch_in_place = true;
        let long_rows = row * elem >= 4096;
        for (s, d) in rows {
            let follows = s == batch_src + (batch.len() * row) as u64;
            // Rows consecutive in the buffer too are read in place however many. Others are read
            // in place one by one when a row fills a page at least (one copy, not two), and
            // short ones in batches through the scratch buffer (few system calls).
            let in_place = batch_in_place && batch.last().is_none_or(|&l| d == l + row as u64);
            let scatter =
                !in_place && (long_rows || (batch.len() + 1) * row * elem > SCRATCH_BYTES);
            if !batch.is_empty() && (!follows || scatter) {
                flush(&mut batch, batch_src, &mut scratch)?;
            }
            if batch.is_empty() {
                batch_src = s;
                batch_in_place = true;
            } else {
                batch_in_place = in_place;
            }
            batch.push(d);
        }
        flush(&mut batch, batch_src, &mut scratch)?;
        self.scratch = scratch;
        Ok(true)
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
        let path = locate_source(&self.master, &m.file, &m.region, &self.dataset)?;
        let missing =
            |why: String| missing_tile(&path, &m.region, &self.dataset, &self.master, &why);
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
        let element = self.fill_element(dtype)?;
        let bytes = std::slice::from_raw_parts_mut(buf, want.volume() as usize * size);
        if element.iter().all(|&b| b == 0) {
            bytes.fill(0);
        } else {
            bytes
                .chunks_exact_mut(size)
                .for_each(|e| e.copy_from_slice(&element));
        }
        Ok(())
    }

    /// The dataset's fill value as one element of `dtype`.
    unsafe fn fill_element(&mut self, dtype: Dtype) -> Result<Vec<u8>> {
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
        Ok(element.clone())
    }

    /// Reads `want` (stored as `dtype`) into device memory `dst` straight from the tile files'
    /// recorded bytes, through the h5tile_gds device paths. Returns false, having read nothing,
    /// where it cannot: the master records no tile bytes, a tile file has changed, or elements
    /// to fill would need a fill value other than zero. Then the caller stages.
    pub fn read_device(
        &mut self,
        want: &Tile,
        dtype: Dtype,
        dst: DevicePtr,
        route: &Route,
        fill_missing: bool,
    ) -> Result<bool> {
        let _l = hdf5::lock();
        let Some(tile_bytes) = self.tile_bytes.clone() else {
            return Ok(false);
        };
        if !matches!(&self.stored, Some((d, _)) if *d == dtype) {
            return Ok(false);
        }
        // Every part's file first: nothing is read unless all of it can be read this way.
        let mut plan: Vec<(usize, Tile, PathBuf)> = Vec::new();
        let mut missing = false;
        for (i, m) in self.mappings.iter().enumerate() {
            let Some(common) = want.intersection(&m.region) else {
                continue;
            };
            if tile_bytes[i].data_offset == HADDR_UNDEF {
                return Ok(false);
            }
            let path = locate_source(&self.master, &m.file, &m.region, &self.dataset);
            let size = path
                .as_ref()
                .ok()
                .and_then(|p| std::fs::metadata(p).ok())
                .map(|md| md.len());
            match (path, size) {
                (Ok(p), Some(size)) if size == tile_bytes[i].file_size => plan.push((i, common, p)),
                (Ok(_), Some(_)) => return Ok(false),
                _ if fill_missing => missing = true,
                (Ok(p), None) => {
                    return Err(missing_tile(
                        &p,
                        &m.region,
                        &self.dataset,
                        &self.master,
                        "does not exist",
                    ))
                }
                (Err(e), _) => return Err(e),
            }
        }
        let covered: u128 = plan.iter().map(|(_, c, _)| c.volume()).sum();
        let elem = dtype.size();
        if missing || covered < want.volume() {
            if unsafe { self.fill_element(dtype)? }.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            dst.zero(want.volume() as usize * elem).map_err(|e| {
                Error::new(H5TILE_ERR_CUDA, format!("cannot zero device memory: {e}"))
            })?;
        }
        for (i, common, path) in plan {
            let m = &self.mappings[i];
            let (src, at) = m.placement(&common, want);
            let mut file = DeviceFile::open(&path, false, route)?;
            for (s, d, len) in
                super::runs::box_runs(&m.region.shape, &src, &want.shape, &at, &common.shape, elem)
            {
                file.read(tile_bytes[i].data_offset + s, dst.offset(d as usize), len)?;
            }
        }
        Ok(true)
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

    /// A 6x5 float64 VDS of 4 tiles (2x2), element (i, j) = 10 i + j.
    fn write_grid(path: &Path) {
        use crate::ops::write::{write, LocalTile, WriteArgs, WriteOptions};
        let value = |i: u64, j: u64| (10 * i + j) as f64;
        let blocks = [
            (0u64, 0u64, 3u64, 2u64),
            (0, 2, 3, 3),
            (3, 0, 3, 2),
            (3, 2, 3, 3),
        ];
        let data: Vec<Vec<f64>> = blocks
            .iter()
            .map(|&(r, c, h, w)| (0..h * w).map(|k| value(r + k / w, c + k % w)).collect())
            .collect();
        let tiles = blocks
            .iter()
            .zip(&data)
            .map(|(&(r, c, h, w), d)| LocalTile {
                tile: Tile::new(vec![r, c], vec![h, w]),
                buf: d.as_ptr().cast(),
            })
            .collect();
        let solo =
            unsafe { crate::platform::comm::Comm::from_raw(mpi::ffi::RSMPI_COMM_NULL) }.unwrap();
        let args = WriteArgs {
            path,
            dataset: "/g",
            dtype: Dtype::Float64,
            global: &[6, 5],
            tiles,
            options: WriteOptions::default(),
        };
        unsafe { write(&solo, &args) }.unwrap();
    }

    fn reader(path: &Path) -> DirectReader {
        let _l = hdf5::lock();
        let open = crate::ops::read::open_dataset(path, "/g").unwrap();
        let mappings = block_mappings(&open.dataset, 2)
            .unwrap()
            .expect("plain boxes");
        DirectReader::new(path, "/g", &open.dataset, mappings).unwrap()
    }

    fn read_f64(r: &mut DirectReader, want: &Tile) -> Vec<f64> {
        let mut out = vec![-1.0f64; want.volume() as usize];
        unsafe { r.read(want, Dtype::Float64, out.as_mut_ptr().cast(), false) }.unwrap();
        out
    }

    fn expected(want: &Tile) -> Vec<f64> {
        let (h, w) = (want.shape[0], want.shape[1]);
        (0..h * w)
            .map(|k| (10 * (want.offset[0] + k / w) + want.offset[1] + k % w) as f64)
            .collect()
    }

    #[test]
    fn h5tile_tiles_are_read_from_their_recorded_bytes_without_hdf5_opens() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("grid.h5");
        write_grid(&path);
        let mut r = reader(&path);
        assert!(
            r.tile_bytes.is_some(),
            "the master records where each tile's bytes are"
        );
        for want in [
            Tile::new(vec![0, 0], vec![6, 5]),
            Tile::new(vec![1, 1], vec![4, 3]),
            Tile::new(vec![5, 4], vec![1, 1]),
        ] {
            assert_eq!(read_f64(&mut r, &want), expected(&want), "{want}");
        }
        assert!(r.open.is_empty(), "no tile file was opened with HDF5");
        // Asking for another type goes through HDF5, which converts.
        let want = Tile::new(vec![2, 1], vec![2, 3]);
        let mut out = vec![0f32; 6];
        unsafe { r.read(&want, Dtype::Float32, out.as_mut_ptr().cast(), false) }.unwrap();
        assert_eq!(
            out,
            expected(&want)
                .iter()
                .map(|&v| v as f32)
                .collect::<Vec<_>>()
        );
        assert!(!r.open.is_empty());
    }

    #[test]
    fn a_tile_file_changed_since_it_was_written_is_read_by_hdf5() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("grid.h5");
        write_grid(&path);
        let dir = crate::layout::tile_dir(&path);
        let first = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .min()
            .unwrap();
        // Appending bytes changes the size but not the HDF5 content.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&first)
            .unwrap();
        std::io::Write::write_all(&mut f, &[0u8; 100]).unwrap();
        let mut r = reader(&path);
        let all = Tile::new(vec![0, 0], vec![6, 5]);
        assert_eq!(read_f64(&mut r, &all), expected(&all));
        assert_eq!(r.open.len(), 1, "only the changed tile went through HDF5");
        std::fs::remove_file(&first).unwrap();
        let mut out = vec![0f64; 30];
        let e = unsafe { reader(&path).read(&all, Dtype::Float64, out.as_mut_ptr().cast(), false) }
            .unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_MISSING_TILE);
        assert!(
            e.message
                .contains(&first.file_name().unwrap().to_string_lossy().to_string()),
            "{}",
            e.message
        );
    }
}
