//! Checking that the sources a virtual dataset maps are there as its master says: each file
//! present, of the size recorded, holding the mapped dataset with a shape and type that fit;
//! and, the slow part, each checksummed tile's bytes matching their recorded checksums. A read
//! would fail on the same problems (or, for sources h5tile did not write, HDF5 would read fill
//! values in their place).

use super::describe::{DatasetInfo, TileInfo, VirtualInfo};
use super::tile_io::byte_reads::{ByteReads, Mismatch};
use super::tile_io::checked_blocks::SummedTile;
use super::tile_io::compressed::{CompressedTile, Sums};
use crate::geometry::tile::Tile;
use crate::layout::blocks::Scheme;
use crate::layout::subfile_generation;
use crate::layout::subfiles::check_stamp;
use crate::platform::hdf5::{self, Dataset, File};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Something wrong with one tile's source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// The source file (as HDF5 would find it).
    pub file: PathBuf,
    /// The box of the virtual dataset it should fill.
    pub region: Option<Tile>,
    /// What is wrong, in words that follow the file's name ("does not exist").
    pub what: String,
    /// For bytes that do not match their checksums: their range in the file, [start, end).
    pub bytes: Option<(u64, u64)>,
    /// For a problem found reading the tile's bytes: the span of its own bytes (in its
    /// row-major order) that failed, [start, end): a run of blocks that do not match their
    /// checksums (or a box, whose rows lie apart in that span), the rest of the tile from a
    /// block that cannot be read, or all of it when its checksums cannot be applied or it does
    /// not decode. None for a problem of its source file.
    pub tile_bytes: Option<(u64, u64)>,
    /// How many of the tile's bytes failed (those of a box, not its span); 0 with no
    /// `tile_bytes`.
    pub failed_bytes: u64,
    /// The tile's bytes are in the dataset's own file (the single-file layout).
    pub in_own_file: bool,
}

impl Problem {
    /// `what` is wrong with `tile`'s source.
    pub fn new(tile: &TileInfo, what: impl Into<String>) -> Problem {
        Problem {
            file: tile.path.clone(),
            region: tile.region.clone(),
            what: what.into(),
            bytes: None,
            tile_bytes: None,
            failed_bytes: 0,
            in_own_file: tile.file == ".",
        }
    }

    /// "tile file", "subfile", "source file", or "file" (the single-file layout's): what kind
    /// of file `file` is.
    pub fn file_kind(&self) -> &'static str {
        if self.in_own_file {
            return "file";
        }
        let name = self.file.file_name().unwrap_or_default().to_string_lossy();
        match (
            subfile_generation(&name).is_some(),
            crate::layout::generation_of(&name),
        ) {
            (true, _) => "subfile",
            (false, Some(_)) => "tile file",
            _ => "source file",
        }
    }
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} '{}'", self.file_kind(), self.file.display())?;
        if let Some(region) = &self.region {
            match self.in_own_file {
                true => write!(f, " tile {region}")?,
                false => write!(f, " holding {region}")?,
            }
        }
        write!(f, " {}", self.what)
    }
}

/// What was found of one source file, checked once for all the tiles it holds.
struct SourceFile {
    /// Its size, or why it cannot be read.
    size: std::result::Result<u64, String>,
    /// Why it is not the subfile its name says (None: it is, or is no subfile).
    stamp: Option<String>,
    /// The file opened with HDF5, once a tile needed it, or why it cannot be.
    hdf5: Option<std::result::Result<File, String>>,
}

/// How far `check_sources` looks at a source.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Depth {
    /// What h5tile's reads rely on: a source whose bytes the master records is present, of
    /// the recorded size and (a subfile) stamped by its write, and is not opened with HDF5
    /// (about 50 µs a file, most of a check of 65,536 tile files). Other sources are opened.
    Recorded,
    /// Every source also opened with HDF5, holding the mapped dataset with a shape and type
    /// that fit, as other readers (HDF5, h5py) need: they fail on a damaged superblock or
    /// object header that sizes do not show.
    Hdf5,
}

impl Depth {
    /// Whether `check_sources` opens `tile`'s source with HDF5 at this depth: always at `Hdf5`,
    /// and where the master does not record the tile's bytes at `Recorded`.
    pub fn opens(self, tile: &TileInfo) -> bool {
        self != Depth::Recorded || tile.data_offset.is_none() || tile.file_size.is_none()
    }
}

/// `check_sources` for a share of the source files, so that processes can open them in
/// parallel (HDF5 opens one file at a time in a process): the files, in the order the master
/// first maps them, numbered from 0, and part `part` of `parts` those whose number is `part`
/// modulo `parts`; part 0 also reports the tiles whose file does not exist. Each problem comes
/// with its tile's index in the master's mappings, in that order.
pub fn check_sources_part(
    info: &DatasetInfo,
    depth: Depth,
    part: usize,
    parts: usize,
) -> Vec<(usize, Problem)> {
    let Some(vds) = &info.virtual_info else {
        return Vec::new();
    };
    // File by file, each closed before the next is opened: an open HDF5 file holds its
    // metadata cache (about half a MiB), too much to keep for 100k tiles.
    let mut by_file: HashMap<&Path, Vec<usize>> = HashMap::new();
    let mut files: Vec<&Path> = Vec::new();
    let mut problems: Vec<(usize, Problem)> = Vec::new();
    for (t, tile) in vds.tiles.iter().enumerate() {
        if !checked(tile) {
            continue;
        }
        if !tile.found {
            if part == 0 {
                problems.push((t, Problem::new(tile, "does not exist")));
            }
            continue;
        }
        by_file
            .entry(&tile.path)
            .or_insert_with(|| {
                files.push(&tile.path);
                Vec::new()
            })
            .push(t);
    }
    let _l = hdf5::lock();
    for path in files.into_iter().skip(part).step_by(parts.max(1)) {
        let tiles = &by_file[path];
        let mut source = look_at(path, &vds.tiles[tiles[0]].file);
        for &t in tiles {
            let tile = &vds.tiles[t];
            if let Some(why) = check_tile_source(&mut source, tile, vds, info, depth) {
                problems.push((t, Problem::new(tile, why)));
            }
        }
    }
    problems.sort_by_key(|(t, _)| *t);
    problems
}

/// Whether `check_sources` looks at `tile`'s source: it maps a box, from a named file.
pub(crate) fn checked(tile: &TileInfo) -> bool {
    tile.region.is_some() && !tile.pattern
}

/// Why `tile`'s bytes or dataset in its (found) source file are not as the master maps them.
fn check_tile_source(
    source: &mut SourceFile,
    tile: &TileInfo,
    vds: &VirtualInfo,
    info: &DatasetInfo,
    depth: Depth,
) -> Option<String> {
    let region = tile.region.as_ref()?;
    let size = match &source.size {
        Ok(size) => *size,
        Err(why) => return Some(format!("cannot be read ({why})")),
    };
    if let Some(why) = &source.stamp {
        return Some(why.clone());
    }
    if let (Some(_), Some(recorded)) = (tile.data_offset, tile.file_size) {
        if let Some(why) = recorded_bytes_fit(tile, info.element_bytes, size, recorded) {
            return Some(why);
        }
    }
    if !depth.opens(tile) {
        return None;
    }
    // Even where h5tile reads the recorded bytes directly, HDF5, h5py and h5dump read
    // the file's own metadata: a damaged superblock or object header fails them.
    let file = source.hdf5.get_or_insert_with(|| {
        File::open_read_evicting(&tile.path)
            .map_err(|e| format!("cannot be opened with HDF5 ({})", e.message))
    });
    match file {
        Ok(file) => source_dataset_fits(file, tile, region, vds, info),
        Err(why) => Some(why.clone()),
    }
}

/// The file at `path`, named `name` by the master: its size and stamp.
fn look_at(path: &Path, name: &str) -> SourceFile {
    match std::fs::File::open(path) {
        Ok(file) => SourceFile {
            size: file.metadata().map(|m| m.len()).map_err(|e| e.to_string()),
            stamp: check_stamp(&file, name).err(),
            hdf5: None,
        },
        Err(e) => SourceFile {
            size: Err(e.to_string()),
            stamp: None,
            hdf5: None,
        },
    }
}

/// Why the bytes the master records for `tile` (elements of `elem` bytes) are not in its file
/// of `size` bytes, whose recorded size is `recorded`.
fn recorded_bytes_fit(tile: &TileInfo, elem: usize, size: u64, recorded: u64) -> Option<String> {
    if size != recorded {
        return Some(format!(
            "is {size} bytes long; the master records {recorded} (changed since it was written)"
        ));
    }
    let offset = tile.data_offset?;
    let end = offset as u128 + tile.data_bytes(elem) as u128;
    (end > size as u128).then(|| {
        format!("is {size} bytes long; the master places the tile's bytes at {offset}..{end}")
    })
}

/// Why the dataset `tile` maps in `file` does not fit the mapping, if it does not.
fn source_dataset_fits(
    file: &File,
    tile: &TileInfo,
    region: &Tile,
    vds: &VirtualInfo,
    info: &DatasetInfo,
) -> Option<String> {
    let dset = match Dataset::open(file, &tile.dataset) {
        Ok(dset) => dset,
        Err(_) => {
            hdf5::take_error_stack();
            return Some(format!("holds no dataset '{}'", tile.dataset));
        }
    };
    let dims = match dset.space().and_then(|s| s.dims()) {
        Ok(dims) => dims,
        Err(e) => return Some(format!("cannot be read ({})", e.message)),
    };
    let whole_tile = vds.layout != super::describe::VirtualLayout::Other;
    let fits = if dims.len() != region.ndim() {
        false
    } else if let Some(within) = tile.within.as_ref().filter(|_| whole_tile) {
        // A tile of a coalesced box: the dataset holds the box.
        dims == *within
    } else if tile.source_whole || whole_tile {
        dims == region.shape
    } else {
        let offset = tile.source_offset.clone().unwrap_or(vec![0; dims.len()]);
        (0..dims.len()).all(|a| offset[a] as u128 + region.shape[a] as u128 <= dims[a] as u128)
    };
    if !fits {
        return Some(format!(
            "holds '{}' of shape {dims:?}, which does not hold the mapped box of shape {:?}",
            tile.dataset, region.shape
        ));
    }
    // Only h5tile's element types are compared: other types are HDF5's to convert.
    let types = dset
        .dtype()
        .ok()
        .zip(info.element.and_then(|d| d.hdf5_type().ok()));
    match types {
        Some((source, wanted)) if !source.converts_to(&wanted) => Some(format!(
            "holds '{}' of type {}, which HDF5 cannot convert to {}",
            tile.dataset,
            source.describe(),
            info.dtype
        )),
        _ => None,
    }
}

/// Threads reading tiles to verify their checksums when nothing says otherwise: the CPUs, at
/// most 16 (more seldom helps: the reads wait on the disk).
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(4, |n| n.get().min(16))
}

/// One checksummed tile to read: the index of its dataset in the caller's list, and of the
/// tile in that dataset's tiles (`DatasetInfo::tiled`).
pub type TileJob = (usize, usize);

/// The tiles of `datasets` that `verify_tiles` reads: every tile with recorded checksums and a
/// recorded place (virtual datasets' and the single-file layout's), but those `skip` names
/// (given the dataset's index and the tile: the caller found their source bad already, and
/// reading it would only repeat that).
pub fn checksum_jobs(
    datasets: &[&DatasetInfo],
    skip: impl Fn(usize, &TileInfo) -> bool,
) -> Vec<TileJob> {
    let mut jobs = Vec::new();
    for (d, info) in datasets.iter().enumerate() {
        let Some(vds) = info.tiled() else { continue };
        for (t, tile) in vds.tiles.iter().enumerate() {
            if checksummed_bytes(tile, info.element_bytes) > 0 && !skip(d, tile) {
                jobs.push((d, t));
            }
        }
    }
    jobs
}

/// Reads the tiles `jobs` names and compares their blocks with their checksums
/// (`verify_checksums`), the tiles shared out among up to `threads` threads, which give
/// `progress` the bytes of each block checked. Returns each job's problems, in the order of
/// `jobs` (none: the tile is as written).
pub fn verify_tiles(
    datasets: &[&DatasetInfo],
    jobs: &[TileJob],
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> Vec<Vec<Problem>> {
    let found: Vec<Mutex<Vec<Problem>>> = jobs.iter().map(|_| Mutex::new(Vec::new())).collect();
    // Threads take the next job as they finish one: tiles of unequal sizes balance out.
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, jobs.len().max(1)) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(d, t)) = jobs.get(i) else { break };
                let info = datasets[d];
                let Some(vds) = info.tiled() else { continue };
                let tile = &vds.tiles[t];
                let scheme = vds.checksums;
                let problems =
                    verify_checksums(&tile.path, tile, info.element_bytes, scheme, progress);
                *found[i].lock().unwrap_or_else(|e| e.into_inner()) = problems;
            });
        }
    });
    found
        .into_iter()
        .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
        .collect()
}

/// The largest checksum block read: far above the 1 MiB h5tile writes.
const MAX_BLOCK: u64 = 1 << 30;

/// Blocks `verify_checksums` plans at a time.
const SURVEY_BLOCKS: u64 = 64;

/// Bytes `tile` holds that its checksums cover (0 when it has none, or neither a recorded
/// place nor a tile file of its own: a compressed tile's place is in its file).
pub fn checksummed_bytes(tile: &TileInfo, elem: usize) -> u64 {
    match (&tile.sums, tile.placement(elem)) {
        (Some(_), Some(_)) => tile.data_bytes(elem),
        (Some(_), None) if tile.within.is_none() => tile.data_bytes(elem),
        _ => 0,
    }
}

/// Reads `tile`'s bytes (elements of `elem` bytes) from the file at `path` (its source, or a
/// copy of it) block by block (cut as `scheme`, recorded, says) and compares each block with
/// its recorded checksum, giving `progress` each block's length once checked. Returns the
/// problems: a checksum count that does not fit the tile, a file too short, and each run of
/// mismatching blocks with the bytes of the file that hold it (from its first byte to its
/// last: in the single-file layout the rows between hold other tiles). Takes no lock: tiles
/// can be checked on several threads at once.
pub fn verify_checksums(
    path: &Path,
    tile: &TileInfo,
    elem: usize,
    scheme: Option<Scheme>,
    progress: &dyn Fn(u64),
) -> Vec<Problem> {
    let len = tile.data_bytes(elem);
    let block = scheme.map_or(0, Scheme::block);
    let problem = |what: String, bytes: Option<(u64, u64)>, failed: (u64, u64)| Problem {
        file: path.to_path_buf(),
        bytes,
        tile_bytes: Some(failed),
        failed_bytes: failed.1 - failed.0,
        ..Problem::new(tile, what)
    };
    let (Some(sums), Some(place)) = (&tile.sums, tile.placement(elem)) else {
        return match (&tile.sums, &tile.within) {
            // h5tile cuts compressed tiles in runs.
            (Some(_), None) if !matches!(scheme, Some(Scheme::Runs { .. })) => {
                let why = "records its checksums in boxes, which h5tile never does for a \
                           compressed tile"
                    .to_string();
                vec![problem(why, None, (0, len))]
            }
            (Some(sums), None) => verify_compressed(path, tile, elem, (sums, block), progress)
                .map(|why| problem(why, None, (0, len)))
                .into_iter()
                .collect(),
            _ => Vec::new(),
        };
    };
    // h5tile sums 1 MiB blocks: a block far larger is a damaged record, not memory to take.
    let shape = tile.region.as_ref().map_or(&[][..], |r| &r.shape[..]);
    let grid = scheme
        .filter(|_| block > 0 && block <= MAX_BLOCK)
        .map(|s| s.grid(shape, elem));
    let Some(grid) = grid.filter(|g| sums.len() as u64 == g.count()) else {
        let why = format!(
            "has {} recorded checksums for a tile of {len} bytes in blocks of {block}",
            sums.len()
        );
        return vec![problem(why, None, (0, len))];
    };
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(e) => return vec![problem(format!("cannot be read ({e})"), None, (0, len))],
    };
    // Planned a window of blocks at a time: a plan holds each block's ranges in the file.
    let blocks = (0..grid.count()).step_by(SURVEY_BLOCKS as usize);
    let (mut mismatches, mut failed) = (Vec::new(), None);
    for first in blocks {
        let mut plan = ByteReads::new(0);
        let file = match file.try_clone() {
            Ok(file) => plan.add_file(file, path.to_path_buf(), len, String::new()),
            Err(e) => return vec![problem(format!("cannot be read ({e})"), None, (0, len))],
        };
        let summed = SummedTile {
            file,
            tile: 0,
            place: &place,
            grid: &grid,
            sums,
        };
        summed.plan_blocks(&mut plan, first..summed.blocks().min(first + SURVEY_BLOCKS));
        let (found, stop) = plan.survey(progress);
        mismatches.extend(found);
        if stop.is_some() {
            failed = stop;
            break;
        }
    }
    // Neighbouring bad blocks make one problem.
    let mut joined: Vec<Mismatch> = Vec::new();
    for m in mismatches {
        if !joined.last_mut().is_some_and(|last| last.join(&m)) {
            joined.push(m);
        }
    }
    let mut problems: Vec<Problem> = joined
        .into_iter()
        .map(|m| Problem {
            failed_bytes: m.label.bytes,
            ..problem(m.to_string(), Some((m.at, m.end)), m.label.in_tile)
        })
        .collect();
    if let Some((label, e)) = failed {
        let k = label.block;
        let (at, end) = place.file_range(label.in_tile.0, label.in_tile.1);
        let what = match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                format!("ends before byte {end}, where the tile's block {k} ends")
            }
            _ => format!("cannot be read at bytes {at}..{end} ({e})"),
        };
        problems.push(problem(what, Some((at, end)), (label.in_tile.0, len)));
    }
    problems
}

/// Decodes a compressed `tile` (elements of `elem` bytes, whose master records no place for
/// its bytes) from the file at `path` and compares each block with `sums` (blocks of `block`
/// bytes), and each stored chunk with its checksum where recorded. Returns why not as written
/// (the first damage found), None when it is, or when it is no compressed tile h5tile decodes.
fn verify_compressed(
    path: &Path,
    tile: &TileInfo,
    elem: usize,
    (sums, block): (&[u64], u64),
    progress: &dyn Fn(u64),
) -> Option<String> {
    let region = tile.region.as_ref()?;
    let opened = {
        let _l = hdf5::lock();
        File::open_read(path)
            .and_then(|f| Dataset::open(&f, &tile.dataset))
            .and_then(|d| CompressedTile::open(&d, path, &region.shape, elem))
    };
    let compressed = match opened {
        Ok(Ok(Some(compressed))) => compressed,
        Ok(Ok(None)) => return None,
        Ok(Err(why)) => return Some(why),
        Err(e) => return Some(format!("cannot be read ({})", e.message)),
    };
    let len = tile.data_bytes(elem);
    // Both: the stored chunks name the one damaged, and the blocks prove what decodes.
    let sums = Sums {
        blocks: Some((sums, block)),
        chunks: tile.chunk_sums.as_deref(),
    };
    let damage = compressed.read(&[(0, 0, len as usize)], sums, None).err();
    if damage.is_none() {
        progress(len);
    }
    damage
}
