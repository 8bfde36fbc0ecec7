//! `h5tile_read` and `h5tile_inspect`: open any HDF5 dataset (contiguous, chunked, compressed,
//! virtual — ours, Legate's or h5py's) and read one tile of it, converting the element type
//! where HDF5 can. A virtual dataset is read from its sources directly when its mappings are
//! plain boxes (opening only the sources a tile needs), and otherwise by HDF5 after checking its
//! sources, since HDF5 alone would read fill values in place of a missing tile file. A device
//! buffer is read in the dataset's own type through the h5tile_gds device paths.

pub(crate) mod contiguous;
pub(crate) mod direct;
pub(crate) mod mappings;
pub(crate) mod source;
pub(crate) mod tile_checks;

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::index::{self, Index};
use crate::ops::fnv::Fnv;
use crate::platform::comm::Comm;
use crate::platform::device::{self, BufferMut, DevicePtr, Route};
use crate::platform::hdf5::{self, Dataset, File, ObjectKind};
use crate::status::*;
use source::Source;
use std::path::Path;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Read elements of missing virtual-dataset sources as the fill value, as HDF5 does,
    /// instead of failing with `H5TILE_ERR_MISSING_TILE`.
    pub fill_missing: bool,
    /// Skip checking the bytes of tiles h5tile checksummed (`H5TILE_READ_NO_VERIFY`).
    pub no_verify: bool,
    /// Allow conversions that can lose values (`H5TILE_READ_NARROWING`).
    pub narrowing: bool,
    /// Element type to deliver when the call takes none (batches); None: as stored.
    pub dtype: Option<Dtype>,
    /// How reads into device memory move.
    pub gds: crate::platform::device::Gds,
}

/// An open dataset and the file holding it (closed together).
pub struct OpenDataset {
    pub dataset: Dataset,
    pub file: File,
}

/// `e`, a failure to open the file at `path`, or `H5TILE_ERR_NOT_FOUND` when the file is no
/// longer there: one removed between the checks and HDF5's open (a series pruning the
/// checkpoint a reader found) is missing, as if it had been removed before the call.
pub(crate) fn unless_removed(path: &Path, e: Error) -> Error {
    match std::fs::metadata(path) {
        Err(m) if m.kind() == std::io::ErrorKind::NotFound => Error::new(
            H5TILE_ERR_NOT_FOUND,
            format!("file '{}' does not exist", path.display()),
        ),
        _ => e,
    }
}

/// A dataset opened to be read: by HDF5, or, for a virtual dataset an h5tile master indexed
/// (`layout::index`), from its index alone. HDF5 decodes every mapping of a virtual dataset
/// when it opens it (a second and a gigabyte for 65,536 tiles); h5tile's reads need none of it.
pub enum Opened {
    Dataset(OpenDataset),
    /// The index, and the master it is of.
    Indexed(Box<Index>, File),
}

impl Opened {
    /// The element type the dataset stores.
    pub fn dtype(&self) -> Result<hdf5::Type> {
        match self {
            Opened::Dataset(open) => open.dataset.dtype(),
            Opened::Indexed(index, _) => index.dtype.duplicate(),
        }
    }

    /// The dataset's shape.
    pub fn dims(&self) -> Result<Vec<u64>> {
        match self {
            Opened::Dataset(open) => open.dataset.space()?.dims(),
            Opened::Indexed(index, _) => Ok(index.shape.clone()),
        }
    }
}

/// Opens `dataset` in the file at `path` to read `region` of it (None: any part; see
/// `Opened`), with `open_dataset`'s errors.
pub fn open_to_read(path: &Path, dataset: &str, region: Option<&Tile>) -> Result<Opened> {
    let _l = hdf5::lock();
    let file = open_holding(path, dataset)?;
    if let Some(index) = index::read(&file.named(dataset), region) {
        return Ok(Opened::Indexed(Box::new(index), file));
    }
    let dataset = Dataset::open(&file, dataset)?;
    Ok(Opened::Dataset(OpenDataset { dataset, file }))
}

/// Opens `dataset` in the file at `path`, telling apart a missing file, a directory, a file
/// that is not HDF5, a missing object and an object that is not a dataset.
#[cfg(test)]
pub fn open_dataset(path: &Path, dataset: &str) -> Result<OpenDataset> {
    let _l = hdf5::lock();
    let file = open_holding(path, dataset)?;
    let dataset = Dataset::open(&file, dataset)?;
    Ok(OpenDataset { dataset, file })
}

/// Opens the file at `path`, which must hold dataset `dataset` (`open_dataset`'s checks).
fn open_holding(path: &Path, dataset: &str) -> Result<File> {
    // "/" is the root group: valid to name, and then reported as not a dataset.
    if dataset != "/" {
        crate::ops::write::validate_dataset_name(dataset)?;
    }
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("file '{}' does not exist", path.display()),
            )
        }
        Err(e) => return Err(Error::io("cannot access", path, &e)),
        Ok(m) if m.is_dir() => {
            return fail(
                H5TILE_ERR_IS_DIRECTORY,
                format!("'{}' is a directory, not an HDF5 file", path.display()),
            )
        }
        Ok(_) => {}
    }
    let _l = hdf5::lock();
    let opened = std::fs::File::open(path)
        .map_err(|e| Error::io("cannot open", path, &e))
        .and_then(|_| match hdf5::is_hdf5(path)? {
            true => File::open_read(path),
            false => fail(
                H5TILE_ERR_HDF5,
                format!("'{}' is not an HDF5 file", path.display()),
            ),
        });
    let file = opened.map_err(|e| unless_removed(path, e))?;
    // Walk the path so a missing group and a missing dataset both read as "not found".
    let trimmed = dataset.trim_start_matches('/');
    let mut prefix = String::new();
    let mut kind = file.object_kind("/")?;
    for part in trimmed.split('/').filter(|p| !p.is_empty()) {
        prefix.push('/');
        prefix.push_str(part);
        kind = file.object_kind(&prefix)?;
        if kind.is_none() {
            return fail(
                H5TILE_ERR_NOT_FOUND,
                format!("no object '{prefix}' in '{}'", path.display()),
            );
        }
    }
    let kind = match kind {
        Some(ObjectKind::Dataset) => None,
        Some(ObjectKind::Group) => Some("a group"),
        Some(ObjectKind::NamedType) => Some("a named datatype"),
        _ => Some("not a dataset"),
    };
    if let Some(kind) = kind {
        return fail(
            H5TILE_ERR_NOT_A_DATASET,
            format!(
                "'{dataset}' in '{}' is {kind}, not a dataset",
                path.display()
            ),
        );
    }
    Ok(file)
}

/// Element type and shape of a dataset.
pub fn inspect(path: &Path, dataset: &str) -> Result<(Dtype, Vec<u64>)> {
    let _l = hdf5::lock();
    // The type and shape alone: no tile's names are decoded.
    let open = open_to_read(path, dataset, Some(&Tile::new(Vec::new(), Vec::new())))?;
    Ok((Dtype::of_hdf5(&open.dtype()?)?, open.dims()?))
}

/// The boxes `dataset`'s stored tiles fill: a virtual dataset's mappings (each tile of a VDS or
/// subfiled write, or of another writer's VDS), or the whole dataset for any other storage (a
/// single file: its ranks' rows are one contiguous dataset). What a reader that splits the
/// dataset by its tiles (a Dask array's chunks) asks.
pub fn tiles(path: &Path, dataset: &str) -> Result<Vec<Tile>> {
    let _l = hdf5::lock();
    let file = open_holding(path, dataset)?;
    let dset = Dataset::open(&file, dataset)?;
    let dims = dset.space()?.dims()?;
    Ok(match dset.storage()? {
        crate::platform::hdf5::Storage::Virtual => mappings::sources(&dset, dims.len())?
            .into_iter()
            .filter_map(|m| m.region)
            .collect(),
        _ => vec![Tile::new(vec![0; dims.len()], dims)],
    })
}

/// How many times a read starts over because its file was replaced while it was read, and
/// for how long at least: a burst of commits (a writer saving several datasets, or a loaded
/// machine where a read takes longer than a commit) is waited out rather than failed.
const REPLACED_RETRIES: usize = 10;
const REPLACED_PATIENCE: std::time::Duration = std::time::Duration::from_secs(10);

/// Which version of the file at `path` is there now: its device, inode and change time (a
/// commit renames a new file over the old one), 0 when there is none.
fn file_version(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::metadata(path) else {
        return 0;
    };
    let mut h = Fnv::default();
    [m.dev(), m.ino(), m.ctime() as u64, m.ctime_nsec() as u64]
        .iter()
        .for_each(|&v| h.u64(v));
    h.value().max(1)
}

/// Runs `part`, this rank's part of a collective read of `path`, until every rank read one
/// version of the file from the start of its part to its end and the ranks reading the same
/// file all read the same version; then agrees on the outcome. A write that commits while a
/// read is in progress makes the read start over on the new version, so a read never mixes
/// versions and never fails because the writer removed the version it started on (it does so
/// right after its commit). After `REPLACED_RETRIES` such replacements in a row, once
/// `REPLACED_PATIENCE` has passed, the read fails rather than return a mixture.
pub(crate) fn on_one_version<T>(
    comm: &Comm,
    path: &Path,
    part: impl FnMut() -> Result<T>,
) -> Result<T> {
    on_one_version_within(comm, path, (REPLACED_RETRIES, REPLACED_PATIENCE), part)
}

/// `on_one_version`, giving up after `retries` replacements in a row and `patience`.
fn on_one_version_within<T>(
    comm: &Comm,
    path: &Path,
    (retries, patience): (usize, std::time::Duration),
    mut part: impl FnMut() -> Result<T>,
) -> Result<T> {
    use std::os::unix::ffi::OsStrExt;
    let started = std::time::Instant::now();
    let mut name = Fnv::default();
    name.bytes(path.as_os_str().as_bytes());
    let name = name.value();
    let mut replaced = 0;
    loop {
        let before = file_version(path);
        let local = catch_panic(&mut part);
        let unchanged = file_version(path) == before;
        let patient = replaced < retries || started.elapsed() < patience;
        // Minimum over ranks of [unchanged, name, !name, version, !version, patient]: one
        // allreduce tells whether some rank saw a change, whether all read one file, and if so
        // whether all started on one version of it, and whether every rank would try again.
        let mut seen = [
            u64::from(unchanged),
            name,
            !name,
            before,
            !before,
            u64::from(patient),
        ];
        comm.all_min(&mut seen);
        let same_file = seen[1] == !seen[2];
        let mut whole = seen[0] == 1 && (!same_file || seen[3] == !seen[4]);
        if whole && !same_file {
            // Ranks reading different files: looked at again once all have finished, an
            // unchanged file on every rank was one version from the earliest start to the end.
            comm.barrier();
            let mut still = [u64::from(file_version(path) == before)];
            comm.all_min(&mut still);
            whole = still[0] == 1;
        }
        if whole {
            return comm.agree(local);
        }
        replaced += 1;
        if seen[5] == 0 {
            let whole = local.and_then(|_| {
                fail(
                    H5TILE_ERR_IO,
                    format!(
                        "'{}' was replaced by newer writes {replaced} times while it was read: no \
                         version could be read whole",
                        path.display()
                    ),
                )
            });
            return comm.agree(whole);
        }
    }
}

/// Reads `tile` of `dataset` into `buf` as `dtype`, on each rank of `comm`, all from one version
/// of the file (see `on_one_version`), and agrees on the outcome so all ranks succeed or fail
/// together.
pub fn read(
    comm: &Comm,
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    tile: &Tile,
    mut buf: BufferMut,
    options: ReadOptions,
) -> Result<()> {
    on_one_version(comm, path, || {
        read_rank(path, dataset, dtype, tile, buf.reborrow(), options)
    })
}

/// This rank's part of `read`.
pub(crate) fn read_rank(
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    tile: &Tile,
    buf: BufferMut,
    options: ReadOptions,
) -> Result<()> {
    if tile.ndim() == 0 || tile.ndim() > crate::ops::write::MAX_NDIM {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "ndim is {}; it must be 1 to {}",
                tile.ndim(),
                crate::ops::write::MAX_NDIM
            ),
        );
    }
    if let Some(other) = options.dtype.filter(|&d| d != dtype) {
        return fail(
            H5TILE_ERR_INVALID_ARGUMENT,
            format!(
                "the options ask for {} but the dtype argument is {}",
                other.name(),
                dtype.name()
            ),
        );
    }
    let lock = hdf5::lock();
    let open = open_to_read(path, dataset, Some(tile))?;
    let dims = open.dims()?;
    if !tile.fits_in(&dims) {
        return fail(
            H5TILE_ERR_SHAPE,
            format!(
                "tile {tile} does not fit dataset '{dataset}' of shape {dims:?} in '{}'",
                path.display()
            ),
        );
    }
    let file_type = open.dtype()?;
    let mem_type = dtype.hdf5_type()?;
    let buf = match buf {
        BufferMut::Host(bytes) => bytes,
        BufferMut::Device(dst, gds) => {
            let stored = Dtype::of_hdf5(&file_type).ok();
            if stored != Some(dtype) || !file_type.equal(&mem_type) {
                let holds = match stored {
                    Some(d) if d == dtype => format!(
                        "holds {} in another byte order or layout than this machine's",
                        d.name()
                    ),
                    Some(d) => format!("holds {}, not {}", d.name(), dtype.name()),
                    None => "holds a type h5tile does not know".to_string(),
                };
                return fail(
                    H5TILE_ERR_DTYPE,
                    format!(
                        "device memory is read in the dataset's own type, and '{dataset}' in '{}' \
                     {holds}: read it into host memory to convert",
                        path.display()
                    ),
                );
            }
            if tile.is_empty() {
                return Ok(());
            }
            let route = Route::Device(dst, gds);
            return read_into_device(open, path, dataset, dtype, tile, dst, &route, options);
        }
    };
    check_conversion(&file_type, dtype, path, dataset, options.narrowing)?;
    if tile.is_empty() {
        return Ok(());
    }
    // Each HDF5 call takes the lock itself; without it held here, a direct read moves its
    // bytes while other threads' h5tile calls go on.
    drop(lock);
    read_host(open, path, dataset, dtype, tile, buf, options)
}

/// `H5TILE_ERR_DTYPE` unless elements stored as `file_type` convert to `dtype`: HDF5 must
/// know how, and a conversion that can lose values (numpy's "unsafe" casts) needs
/// `narrowing` (`H5TILE_READ_NARROWING`), so a mistyped dtype is never read silently.
pub(crate) fn check_conversion(
    file_type: &hdf5::Type,
    dtype: Dtype,
    path: &Path,
    dataset: &str,
    narrowing: bool,
) -> Result<()> {
    let stored = Dtype::of_hdf5(file_type).ok();
    let name = stored.map_or("an unsupported type", |d| d.name());
    if !file_type.converts_to(&dtype.hdf5_type()?) {
        return fail(
            H5TILE_ERR_DTYPE,
            format!(
                "'{dataset}' in '{}' holds {name}, which HDF5 cannot convert to {}",
                path.display(),
                dtype.name()
            ),
        );
    }
    match stored {
        Some(stored) if !narrowing && !stored.casts_safely_to(dtype) => fail(
            H5TILE_ERR_DTYPE,
            format!(
                "reading '{dataset}' in '{}', which holds {name}, as {} can lose values \
                 (a narrowing conversion): read it as {name}, or pass H5TILE_READ_NARROWING",
                path.display(),
                dtype.name()
            ),
        ),
        _ => Ok(()),
    }
}

/// The read itself, into host memory, the checks done.
fn read_host(
    open: Opened,
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    tile: &Tile,
    buf: &mut [u8],
    options: ReadOptions,
) -> Result<()> {
    let fill = options.fill_missing;
    let mut source = Source::open(path, dataset, open, tile.ndim(), &options, Some(tile))?;
    source.read(tile, dtype, buf, fill)
}

/// Largest host staging slab of a device read that cannot go straight to the device.
const STAGE_BYTES: usize = 64 << 20;

/// A read into device memory, in the dataset's own type. h5tile's tiles and contiguous
/// datasets go from the file to the device through the h5tile_gds device paths; anything else
/// (chunked or compressed storage, other virtual datasets) is read in slabs of at most
/// `STAGE_BYTES` (or one index of the first dimension) through host memory and copied over.
#[allow(clippy::too_many_arguments)]
fn read_into_device(
    open: Opened,
    path: &Path,
    dataset: &str,
    dtype: Dtype,
    tile: &Tile,
    dst: DevicePtr,
    route: &Route,
    options: ReadOptions,
) -> Result<()> {
    let fill = options.fill_missing;
    let mut source = Source::open(path, dataset, open, tile.ndim(), &options, Some(tile))?;
    if source.read_device(path, tile, dtype, dst, route, fill)? {
        return Ok(());
    }
    // Staged: slabs along the first dimension, each contiguous in the caller's buffer.
    let elem = dtype.size();
    let slab_bytes = (tile.volume() / tile.shape[0] as u128) as usize * elem;
    let per_slab = (STAGE_BYTES / slab_bytes.max(1)).max(1) as u64;
    log_info(&format!(
        "'{dataset}' in '{}': read into device memory through host staging ({} MiB slabs): its \
         storage cannot go to the device directly",
        path.display(),
        (per_slab as usize * slab_bytes) >> 20
    ));
    let mut host: Vec<u8> = Vec::new();
    let mut first = 0u64;
    while first < tile.shape[0] {
        let rows = per_slab.min(tile.shape[0] - first);
        let mut slab = tile.clone();
        slab.offset[0] += first;
        slab.shape[0] = rows;
        host.resize(rows as usize * slab_bytes, 0);
        source.read(&slab, dtype, &mut host, fill)?;
        device::copy_to_device(dst.offset(first as usize * slab_bytes), &host)?;
        first += rows;
    }
    Ok(())
}

/// One line on stderr at `H5TILE_LOG=info` or `debug`, as the driver logs.
fn log_info(line: &str) {
    device::log::info(line);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::write::Layout;
    use crate::testkit::write_grid_in;

    /// A read whose file is replaced under it starts over: through a burst of replacements
    /// longer than the retries but shorter than the patience, it reads the last version; under
    /// replacements that never stop it fails, once both are spent, as an I/O error.
    #[test]
    fn a_read_waits_out_a_burst_of_replacements_and_gives_up_on_endless_ones() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("f.h5");
        let replace = |v: u32| {
            let next = d.path().join("next");
            std::fs::write(&next, v.to_le_bytes()).unwrap();
            std::fs::rename(&next, &path).unwrap();
        };
        replace(0);
        let read = || u32::from_le_bytes(std::fs::read(&path).unwrap().try_into().unwrap());
        let within = (2, std::time::Duration::from_millis(300));
        let mut attempts = 0;
        let got = on_one_version_within(&Comm::solo(), &path, within, || {
            attempts += 1;
            let v = read();
            if attempts <= 6 {
                replace(attempts);
            }
            Ok(v)
        });
        assert_eq!(got.unwrap(), 6, "the version that stayed");
        assert_eq!(attempts, 7);
        let start = std::time::Instant::now();
        let mut attempts = 0;
        let e = on_one_version_within(&Comm::solo(), &path, within, || {
            attempts += 1;
            replace(attempts);
            Ok(())
        })
        .unwrap_err();
        assert_eq!(e.status, crate::status::H5TILE_ERR_IO);
        assert!(
            e.message.contains("replaced by newer writes"),
            "{}",
            e.message
        );
        assert!(
            start.elapsed() >= within.1 && attempts > within.0 as u32,
            "{attempts}"
        );
    }

    /// Reading one tile of a master of many costs what one tile does: the master's index names
    /// the tile's file, so HDF5 decodes no mapping and opens no dataset, and one tile file is
    /// read; describing the file (`h5tile ls`, `-l` too) opens no tile file. Counted, not
    /// timed, at 2,048 tiles in either layout. A master without the index (written before it
    /// existed) is still read, decoding its mappings.
    #[test]
    fn one_tile_of_many_costs_one_tile_not_all_of_them() {
        use crate::geometry::tile::Tile;
        use crate::platform::device::host_bytes;
        use crate::platform::hdf5::work::{self, Work};
        use crate::testkit::{read_f64, write_tiles};
        let (grid, tile) = ([64u64, 32], [2u64, 3]);
        let shape = [grid[0] * tile[0], grid[1] * tile[1]];
        let value = |i: u64, j: u64| (i * shape[1] + j) as f64;
        let boxes: Vec<Tile> = (0..grid[0] * grid[1])
            .map(|k| {
                Tile::new(
                    vec![k / grid[1] * tile[0], k % grid[1] * tile[1]],
                    tile.to_vec(),
                )
            })
            .collect();
        let values: Vec<Vec<f64>> = boxes
            .iter()
            .map(|b| {
                let (r, c) = (b.offset[0], b.offset[1]);
                (0..tile[0])
                    .flat_map(|i| (0..tile[1]).map(move |j| value(r + i, c + j)))
                    .collect()
            })
            .collect();
        for layout in [Layout::Vds, Layout::Subfiles] {
            let d = tempfile::tempdir().unwrap();
            let path = d.path().join("many.h5");
            let tiles = boxes
                .iter()
                .zip(&values)
                .map(|(b, v)| crate::ops::write::LocalTile {
                    tile: b.clone(),
                    buf: host_bytes(v),
                })
                .collect();
            let options = crate::ops::write::WriteOptions {
                layout,
                ..Default::default()
            };
            write_tiles(&path, "/m", Dtype::Float64, &shape, tiles, options).unwrap();
            let want = &boxes[40 * 32 + 17];
            let before = work::done();
            let got = read_f64(&path, "/m", want).unwrap();
            let read = work::done() - before;
            assert_eq!(got, values[40 * 32 + 17], "{layout:?}");
            let one_tile = Work {
                files_opened: 1,
                tile_files_read: 1,
                ..Work::default()
            };
            assert_eq!(read, one_tile, "{layout:?}: one read");
            let before = work::done();
            let info = crate::tool::listing::describe_stored(&path, None).unwrap();
            let ls = work::done() - before;
            assert_eq!(info[0].tiled().unwrap().tiles.len(), boxes.len());
            let stored = info[0].stored.as_ref().unwrap();
            assert_eq!(stored.stored_bytes, shape[0] * shape[1] * 8);
            let master_alone = Work {
                files_opened: 1,
                ..Work::default()
            };
            assert_eq!(ls, master_alone, "{layout:?}: ls -l");
            // Without the index, as h5tile wrote masters before it: the mappings are decoded,
            // one a tile file, or one for the subfile's 2,048 tiles, which fill one box
            // (coalesced).
            {
                let _l = hdf5::lock();
                let file = File::open_write(&path).unwrap();
                file.delete_attribute("/m", crate::layout::index::SOURCES_ATTRIBUTE)
                    .unwrap();
            }
            let before = work::done();
            assert_eq!(read_f64(&path, "/m", want).unwrap(), values[40 * 32 + 17]);
            let read = work::done() - before;
            let mappings = match layout {
                Layout::Subfiles => 1,
                _ => boxes.len() as u64,
            };
            assert_eq!(read.mappings_decoded, mappings, "{layout:?}");
        }
    }

    #[test]
    fn a_file_removed_while_it_is_opened_is_not_found() {
        // A series prunes the checkpoint a reader found: the master goes, for good, between
        // the reader's checks and HDF5's open. Here another thread removes it while it is
        // opened, a few thousand times.
        let d = tempfile::tempdir().unwrap();
        let whole = d.path().join("whole.h5");
        write_grid_in(&whole, Layout::Single);
        let path = d.path().join("ckpt.h5");
        // How long one open takes, to sweep the removal across it.
        let start = std::time::Instant::now();
        for _ in 0..20 {
            drop(open_dataset(&whole, "/g").unwrap());
        }
        let span = start.elapsed() / 20;
        let (go, remove) = std::sync::mpsc::channel::<std::time::Duration>();
        let (removed, done) = std::sync::mpsc::channel::<()>();
        std::thread::scope(|s| {
            s.spawn(|| {
                for delay in remove {
                    let at = std::time::Instant::now() + delay;
                    while std::time::Instant::now() < at {}
                    std::fs::remove_file(&path).unwrap();
                    removed.send(()).unwrap();
                }
            });
            let (mut opened, mut missing) = (0, 0);
            for k in 0..2000u32 {
                std::fs::hard_link(&whole, &path).unwrap();
                go.send(span * (k % 100) / 80).unwrap();
                let outcome = open_dataset(&path, "/g").map(drop);
                done.recv().unwrap();
                match outcome {
                    Ok(()) => opened += 1,
                    Err(e) if e.status == H5TILE_ERR_NOT_FOUND => missing += 1,
                    Err(e) => panic!("after {opened} opened and {missing} missing: {e}"),
                }
            }
            drop(go);
            assert!(
                missing > 0 && opened > 0,
                "{opened} opened, {missing} missing"
            );
        });
    }
}
