//! Reading a virtual dataset whose mappings are plain boxes by opening its sources itself:
//! only the sources a read needs are opened, a missing one is reported by name, and the tiles
//! h5tile wrote are read from the bytes their master records, without HDF5.

use super::byte_reads::{ByteReads, ReadCounts};
use super::checked_blocks::{CheckedBlocks, SummedTile};
use super::compressed::{CompressedTile, Sums};
use super::mappings::{
    corrupt, locate_source, missing_tile, read_tile_bytes, resolve_source, source_error,
    BlockMapping,
};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::checksums::Recorded;
use crate::layout::index::Index;
use crate::layout::runs::box_rows;
use crate::layout::subfiles::check_stamp;
use crate::layout::vds::{TileBytes, NO_OFFSET, TILE_DATASET};
use crate::platform::device::{DeviceFile, DevicePtr, Route};
use crate::platform::hdf5::{self, Attributes, Dataset, File, Plist, Space, Type};
use crate::status::{Error, Result, H5TILE_ERR_CUDA, H5TILE_ERR_IO};
use std::path::{Path, PathBuf};

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
    /// The dataset's creation properties, where it was opened (None: the fill value is zero).
    dcpl: Option<Plist>,
    /// Recently used sources, most recent first: (mapping index, file, dataset).
    open: Vec<(usize, File, Dataset)>,
    /// For a master h5tile wrote: where each mapping's tile keeps its bytes.
    tile_bytes: Option<Vec<TileBytes>>,
    /// The element type the dataset stores, when it is one of h5tile's.
    stored: Option<(Dtype, Type)>,
    /// Tile files opened by `hold`, per mapping (tiles of one subfile share one), read from
    /// instead of opening them again.
    held: Vec<Option<(std::sync::Arc<std::fs::File>, PathBuf)>>,
    /// The block checksums the master records, when reads check them.
    checksums: Option<Box<Recorded>>,
    /// The blocks earlier reads checked: later reads take their bytes without summing them.
    checked: CheckedBlocks,
    /// What the reads of tile bytes have cost so far.
    counts: ReadCounts,
    /// The compressed tiles this reader has opened.
    compressed: Box<DecodedTiles>,
}

/// The compressed tiles a `DirectReader` has opened.
struct DecodedTiles {
    /// Recently read tiles of mappings whose bytes the master places nowhere, most recent
    /// first: (mapping index, the compressed tile h5tile decodes, None for another kind of
    /// tile, which HDF5 reads).
    recent: Vec<(usize, Option<Decoded>)>,
    /// Those opened by `hold`, per mapping, read from instead of opening them again.
    held: Vec<Option<Decoded>>,
}

/// A compressed tile h5tile decodes, with its file's path (for messages).
type Decoded = std::sync::Arc<(CompressedTile, PathBuf)>;

/// A part of a compressed tile a read decodes once planned, outside the HDF5 lock: its `runs`
/// (`CompressedTile::read`), with `checked` against the tile's recorded checksums,
/// and with `deliver` copied into the caller's buffer (else HDF5 has read and converted them).
struct Decode {
    mapping: usize,
    tile: Decoded,
    runs: Vec<(u64, u64, usize)>,
    checked: bool,
    deliver: bool,
}

/// Which of a master's tiles a reader keeps, where it keeps some only: their places among the
/// master's tiles, and how many the master has.
type Kept<'a> = Option<(&'a [usize], usize)>;

/// How many tile files one reader may hold open: a quarter of the process's limit on open
/// files, so that holding them never starves the caller.
fn held_file_budget() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return 64;
    }
    (limit.rlim_cur.min(1 << 20) / 4) as usize
}

/// The most tiles one plan of a read covers (`DirectReader::read`): each may be a file the plan
/// holds open until it runs, and a whole read of 65,536 tile files must not run out of file
/// descriptors (the usual soft limit is 1,024). Half the budget `hold` may use.
fn plan_files() -> usize {
    (held_file_budget() / 2).max(16)
}

/// Largest staging read when copying tile bytes into a caller's buffer.
const SCRATCH_BYTES: usize = 4 << 20;

/// The most bytes of a tile decoded to find why HDF5 could not read it (`failed_read`): an
/// error path is no reason to allocate as much as the read itself.
const EXPLAIN_BYTES: usize = 256 << 20;

/// Plans rows of `row` bytes consecutive in file `f` from `at` to buffer bytes `dsts`: as one
/// run where they are consecutive in the buffer too, else read once and scattered.
fn gather(plan: &mut ByteReads, f: usize, at: u64, row: usize, dsts: Vec<usize>) {
    if dsts.is_empty() {
        return;
    }
    if dsts.windows(2).all(|w| w[1] == w[0] + row) {
        plan.place(f, at, dsts[0], row * dsts.len());
    } else {
        plan.scatter(f, at, row, dsts);
    }
}

impl DirectReader {
    /// The reader of virtual dataset `dataset` of `master`, opened as `dset`, whose mappings
    /// are `mappings`.
    pub fn new(
        master: &Path,
        dataset: &str,
        dset: &Dataset,
        mappings: Vec<BlockMapping>,
        verify: bool,
    ) -> Result<DirectReader> {
        let dcpl = dset.create_plist()?;
        let records = (dset, Some(dcpl), None);
        DirectReader::with(master, dataset, records, dset.dtype()?, mappings, verify)
    }

    /// The reader of virtual dataset `dataset` of `master` (open as `file`) from its `index`,
    /// the dataset not opened: its records are read by name, and it has no fill value but zero
    /// (h5tile's masters set none).
    pub fn indexed(
        master: &Path,
        (file, dataset): (&File, &str),
        index: Index,
        verify: bool,
    ) -> Result<DirectReader> {
        let _l = hdf5::lock();
        let mappings = index
            .tiles
            .into_iter()
            .map(|t| BlockMapping {
                source_offset: match &t.within {
                    None => vec![0; t.region.ndim()],
                    Some(w) => (t.region.offset.iter().zip(&w.offset))
                        .map(|(r, w)| r - w)
                        .collect(),
                },
                region: t.region,
                file: t.file,
                dataset: t.dataset,
                within: t.within,
            })
            .collect();
        // The records of the tiles kept, where the index kept some of its tiles only.
        let kept = (index.origin.len() < index.count).then_some((&index.origin[..], index.count));
        let records = (&file.named(dataset), None, kept);
        DirectReader::with(master, dataset, records, index.dtype, mappings, verify)
    }

    /// The reader, with the master's records of each tile read from `records.0` and the fill
    /// value from the creation properties `records.1` (None: zero); where `mappings` are some
    /// of the master's tiles only, `records.2` says which (their places among its `count`).
    fn with(
        master: &Path,
        dataset: &str,
        (dset, dcpl, kept): (&impl Attributes, Option<Plist>, Kept),
        file_type: Type,
        mappings: Vec<BlockMapping>,
        verify: bool,
    ) -> Result<DirectReader> {
        let stored = Dtype::of_hdf5(&file_type).ok().map(|d| (d, file_type));
        let elem = stored.as_ref().map_or(0, |(d, _)| d.size() as u128);
        let count = kept.map_or(mappings.len(), |(_, count)| count);
        let tile_bytes = read_tile_bytes(dset, count)
            .map(|all| match kept {
                Some((keep, _)) => keep.iter().map(|&i| all[i]).collect(),
                None => all,
            })
            .filter(|_| {
                let ours =
                    |d: &str| d == TILE_DATASET || crate::layout::subfiles::is_tile_dataset(d);
                mappings.iter().all(|m| ours(&m.dataset))
            })
            .map(|mut records| {
                // A record whose tile would not lie within its file is no record: HDF5 reads
                // that tile (a damaged master must not send reads elsewhere in the file).
                for (r, m) in records.iter_mut().zip(&mappings) {
                    let volume = crate::geometry::tile::volume(m.source_shape());
                    let end = r.data_offset as u128 + volume * elem;
                    if r.data_offset != NO_OFFSET && end > r.file_size as u128 {
                        r.data_offset = NO_OFFSET;
                    }
                }
                records
            });
        let held = (0..mappings.len()).map(|_| None).collect();
        let checksums = match (verify, &tile_bytes) {
            (true, Some(_)) => Recorded::read(dset, count)
                .map(|all| match kept {
                    Some((keep, _)) => all.only(keep),
                    None => all,
                })
                .map(Box::new),
            _ => None,
        };
        let block = checksums.as_ref().map_or(1, |c| c.block.max(1));
        Ok(DirectReader {
            checked: CheckedBlocks::new(block),
            counts: ReadCounts::default(),
            checksums,
            compressed: Box::new(DecodedTiles {
                recent: Vec::new(),
                held: (0..mappings.len()).map(|_| None).collect(),
            }),
            held,
            master: master.to_path_buf(),
            dataset: dataset.to_string(),
            mappings,
            fill: Vec::new(),
            dcpl,
            open: Vec::new(),
            tile_bytes,
            stored,
        })
    }

    /// Opens now, and keeps open, the tile files of the mappings that meet `region` whose
    /// bytes a read in `dtype` copies straight from the file, or decodes (compressed tiles),
    /// (at most `held_file_budget()` files),
    /// so that this reader goes on reading the version it opened after a newer write has
    /// replaced it and removed those files. A missing file is left for the read that needs it
    /// to report.
    pub fn hold(&mut self, region: &Tile, dtype: Dtype) -> Result<()> {
        let _l = hdf5::lock();
        let raw = match &self.stored {
            Some((d, t)) => *d == dtype && t.equal(&dtype.hdf5_type()?),
            None => false,
        };
        let Some(tile_bytes) = self.tile_bytes.as_ref().filter(|_| raw) else {
            return Ok(());
        };
        let wanted = (0..self.mappings.len())
            .filter(|&i| tile_bytes[i].data_offset != NO_OFFSET)
            .filter(|&i| region.intersection(&self.mappings[i].region).is_some());
        let mut files: std::collections::HashMap<PathBuf, std::sync::Arc<std::fs::File>> =
            Default::default();
        let budget = held_file_budget();
        for i in wanted {
            let (path, _) = resolve_source(&self.master, &self.mappings[i].file);
            let file = match files.get(&path) {
                Some(file) => file.clone(),
                None if files.len() >= budget => break,
                None => match std::fs::File::open(&path) {
                    Ok(file) => {
                        let file = std::sync::Arc::new(file);
                        files.insert(path.clone(), file.clone());
                        file
                    }
                    Err(_) => continue,
                },
            };
            self.held[i] = Some((file, path));
        }
        // Compressed tiles: their files and where their chunks are.
        let elem = self.stored.as_ref().map_or(0, |(d, _)| d.size());
        let compressed: Vec<usize> = (0..self.mappings.len())
            .filter(|&i| tile_bytes[i].data_offset == NO_OFFSET)
            .filter(|&i| region.intersection(&self.mappings[i].region).is_some())
            .collect();
        let mut held = files.len();
        for i in compressed {
            if held >= budget {
                break;
            }
            // One that cannot be opened now is left for the read that needs it to report.
            if let Ok(Some(tile)) = self.compressed_tile(i, elem) {
                self.compressed.held[i] = Some(tile);
                held += 1;
            }
        }
        Ok(())
    }

    /// Reads `want` as `dtype` into `buf` (dense, row-major). Elements no source covers, and
    /// with `fill_missing` those of missing sources, get the dataset's fill value; otherwise a
    /// missing or unreadable source is `H5TILE_ERR_MISSING_TILE` naming it. The reads are
    /// planned under the HDF5 lock; tile bytes then move without it (see `ByteReads`).
    ///
    pub fn read(
        &mut self,
        want: &Tile,
        dtype: Dtype,
        buf: &mut [u8],
        fill_missing: bool,
    ) -> Result<()> {
        let parts: Vec<(usize, Tile)> = (0..self.mappings.len())
            .filter_map(|i| want.intersection(&self.mappings[i].region).map(|c| (i, c)))
            .collect();
        let covered: u128 = parts.iter().map(|(_, c)| c.volume()).sum();
        if fill_missing || covered < want.volume() {
            let _l = hdf5::lock();
            self.prefill(want, dtype, buf)?;
        }
        // A plan holds the files it reads open until it has run: a read of more tiles than the
        // process may open files runs as several plans, each of at most `PLAN_FILES` tiles.
        for parts in parts.chunks(plan_files()) {
            let (plan, decodes) = self.plan(want, dtype, buf, parts, fill_missing)?;
            // Compressed tiles decode on the I/O threads, not holding the HDF5 lock.
            for d in decodes {
                self.decode(d, buf)?;
            }
            let (master, dataset, mappings) = (&self.master, &self.dataset, &self.mappings);
            self.counts += self.checked.run(plan, buf, |path, region, mismatch, e| {
                match mismatch {
                    // The tile the block is of (a subfile holds several).
                    Some(m) => {
                        let tile = &mappings[m.label.tile].region;
                        corrupt(path, tile, dataset, master, &m.to_string())
                    }
                    None => missing_tile(
                        path,
                        &region,
                        dataset,
                        master,
                        &format!("cannot be read ({e})"),
                    ),
                }
            })?;
        }
        Ok(())
    }

    /// What the reads of tile bytes have cost so far.
    #[cfg_attr(not(any(test, feature = "internals")), allow(dead_code))]
    pub fn counts(&self) -> ReadCounts {
        self.counts
    }

    /// Under the HDF5 lock: reads through HDF5 what must be of `parts` (mapping, and the part
    /// of `want` it holds) (parts whose bytes are not recorded, or need converting), and plans
    /// the reads of the rest: the tile bytes to read, and the compressed tiles to decode.
    fn plan(
        &mut self,
        want: &Tile,
        dtype: Dtype,
        buf: &mut [u8],
        parts: &[(usize, Tile)],
        fill_missing: bool,
    ) -> Result<(ByteReads, Vec<Decode>)> {
        let _l = hdf5::lock();
        let mem_type = dtype.hdf5_type()?;
        let mem_space = Space::simple(&want.shape)?;
        // Tile bytes are copied straight from the file when nothing needs converting.
        let raw = match &self.stored {
            Some((d, t)) => *d == dtype && t.equal(&mem_type),
            None => false,
        };
        let mut plan = ByteReads::new(want.volume() as usize * dtype.size());
        let mut decodes = Vec::new();
        for (i, common) in parts.iter().cloned() {
            // Tile bytes go straight to the buffer when nothing needs converting; else HDF5
            // converts them, and any checksummed blocks it reads are checked beside.
            let deliver = raw.then(|| dtype.size());
            if raw || self.checks(i) {
                match self.plan_tile_bytes(i, &common, want, deliver, &mut plan) {
                    Ok(true) if raw => continue,
                    Ok(_) => {}
                    // A tile that is not there reads as fill; the process's own failure
                    // (out of file descriptors) does not.
                    Err(e) if fill_missing && e.status != H5TILE_ERR_IO => continue,
                    Err(e) => return Err(e),
                }
            }
            // A compressed tile: decoded by h5tile, its blocks checked; HDF5 converts.
            match self.compressed_part(i, &common, want, raw) {
                Ok(Some(d)) if d.deliver => {
                    decodes.push(d);
                    continue;
                }
                // Checked before HDF5 decodes it: damage is then CORRUPT, naming the chunk.
                Ok(Some(d)) => self.decode(d, buf)?,
                Ok(None) => {}
                Err(_) if fill_missing => continue,
                Err(e) => return Err(e),
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
            let read = source.read_into(&mem_type, &mem_space, &file_space, buf);
            if let Err(e) = read {
                return Err(self.failed_read(i, &common, e));
            }
        }
        Ok((plan, decodes))
    }

    /// HDF5 failed to read `common` of mapping `i`'s tile (converting it, unchecked). Where
    /// that is a compressed tile, decoding the part here (up to `EXPLAIN_BYTES` of it) finds a
    /// damaged chunk, which is then `H5TILE_ERR_CORRUPT` naming it; otherwise HDF5's error,
    /// after the tile and its file.
    fn failed_read(&mut self, i: usize, common: &Tile, e: Error) -> Error {
        let elem = self.stored.as_ref().map_or(0, |(d, _)| d.size());
        let bytes = common.volume() as usize * elem;
        let part = (bytes <= EXPLAIN_BYTES)
            .then(|| self.compressed_part(i, common, common, true))
            .and_then(|d| d.ok().flatten());
        if let Some(d) = part {
            let mut scratch = vec![0u8; bytes];
            if let Err(damage) = self.decode(d, &mut scratch) {
                return damage;
            }
        }
        let m = &self.mappings[i];
        let (path, _) = resolve_source(&self.master, &m.file);
        let why = format!("cannot be read by HDF5 ({})", e.message);
        source_error(
            e.status,
            &path,
            &m.region,
            &self.dataset,
            &self.master,
            &why,
        )
    }

    /// Plans copying `common` (virtual-dataset coordinates) of mapping `i`'s tile into its
    /// place in a buffer laid out as `want`, from the tile file's bytes where h5tile recorded
    /// them, which spares HDF5 opening one file per tile (each open costs HDF5 half a megabyte
    /// of cache set-up). Returns false, having planned nothing, when there is no record or the
    /// file is no longer the one recorded (its size changed): HDF5 then reads it.
    ///
    /// A tile with recorded checksums is planned block by block, each block checked
    /// (`plan_blocks`); with `deliver` None its blocks are only checked, HDF5 reading the
    /// elements. `deliver` is the element size when the bytes go to the buffer. A file of
    /// another size than recorded is left to HDF5 unchecked: its recorded places may not hold.
    fn plan_tile_bytes(
        &mut self,
        i: usize,
        common: &Tile,
        want: &Tile,
        deliver: Option<usize>,
        plan: &mut ByteReads,
    ) -> Result<bool> {
        let Some(bytes) = self.tile_bytes.as_ref().map(|b| b[i]) else {
            return Ok(false);
        };
        let m = &self.mappings[i];
        if bytes.data_offset == NO_OFFSET {
            return Ok(false);
        }
        // A held file is read even once a newer write has removed it.
        let path = match &self.held[i] {
            Some((_, path)) => path.clone(),
            None => locate_source(&self.master, &m.file, &m.region, &self.dataset)?,
        };
        let missing =
            |why: String| missing_tile(&path, &m.region, &self.dataset, &self.master, &why);
        // Tiles of one subfile share one open file.
        let (f, len) = match plan.file_at(&path) {
            Some(known) => known,
            None => {
                hdf5::work::count(|w| w.tile_files_read += 1);
                let file = match &self.held[i] {
                    Some((held, _)) => held.try_clone(),
                    None => std::fs::File::open(&path),
                }
                .map_err(|e| match e.raw_os_error() {
                    // The process's limit, not the tile: an I/O error naming it.
                    Some(libc::EMFILE | libc::ENFILE) => {
                        Error::io("cannot open tile file (raise `ulimit -n`)", &path, &e)
                    }
                    _ => missing(format!("cannot be read ({e})")),
                })?;
                check_stamp(&file, &m.file).map_err(missing)?;
                let len = file.metadata().map_or(u64::MAX, |md| md.len());
                (
                    plan.add_file(file, path.clone(), len, m.region.to_string()),
                    len,
                )
            }
        };
        // A file of another size than written is left to HDF5, which checks what it holds.
        if len != bytes.file_size {
            return Ok(false);
        }
        let elem = match (deliver, &self.stored) {
            (Some(elem), _) => elem,
            (None, Some((stored, _))) => stored.size(),
            (None, None) => return Ok(false),
        };
        if let Some(sums) = self.checksums.as_ref().and_then(|c| c.tile(i)) {
            let tile_len = m.region.volume() as u64 * elem as u64;
            let block = self.checksums.as_ref().expect("checked").block;
            if sums.len() as u64 != tile_len.div_ceil(block) {
                let why = format!(
                    "the master records {} checksums for the tile's {tile_len} bytes",
                    sums.len()
                );
                return Err(corrupt(&path, &m.region, &self.dataset, &self.master, &why));
            }
            let id = plan
                .file_id(f)
                .map_err(|e| missing(format!("cannot be read ({e})")))?;
            self.checked.reading_from(i, id);
            let runs = m.runs(common, want, elem);
            let summed = SummedTile {
                file: f,
                tile: i,
                place: &m.place(bytes.data_offset, elem),
                len: tile_len,
                block,
                sums,
            };
            summed.plan_runs(plan, &self.checked, runs, deliver.is_some());
            return Ok(deliver.is_some());
        }
        if deliver.is_none() {
            return Ok(false);
        }
        if m.within.is_some() {
            // A tile of a coalesced box: each run of its bytes is in rows of the box.
            let place = m.place(bytes.data_offset, elem);
            for (s, d, len) in m.runs(common, want, elem) {
                let mut d = d as usize;
                for (at, n) in place.ranges(s, s + len as u64) {
                    plan.place(f, at, d, n);
                    d += n;
                }
            }
            return Ok(true);
        }
        // Rows of the common box, consecutive ones in the file read together.
        let (src, dst) = m.placement(common, want);
        let (row, rows) = box_rows(&m.region.shape, &src, &want.shape, &dst, &common.shape);
        let row_bytes = row as usize * elem;
        let at = |s: u64| bytes.data_offset + s * elem as u64;
        // Rows of a page or more, and rows consecutive in the buffer too, go straight to their
        // place (joined when they continue each other); shorter ones are gathered in runs of
        // rows consecutive in the file, read with one call each and scattered.
        let mut gathered: Vec<usize> = Vec::new();
        let mut gathered_from = 0u64;
        for (s, d) in rows {
            let (s, d) = (s, d as usize * elem);
            if row_bytes >= 4096 {
                plan.place(f, at(s), d, row_bytes);
                continue;
            }
            let follows = s == gathered_from + (gathered.len() * row as usize) as u64;
            if !gathered.is_empty()
                && (!follows || (gathered.len() + 1) * row_bytes > SCRATCH_BYTES)
            {
                let rows = std::mem::take(&mut gathered);
                gather(plan, f, at(gathered_from), row_bytes, rows);
            }
            if gathered.is_empty() {
                gathered_from = s;
            }
            gathered.push(d);
        }
        gather(plan, f, at(gathered_from), row_bytes, gathered);
        Ok(true)
    }

    /// Decodes (checks, delivers into `buf`) what `d` says; a damaged tile is
    /// `H5TILE_ERR_CORRUPT` naming its file, the tile and the chunk.
    fn decode(&self, d: Decode, buf: &mut [u8]) -> Result<()> {
        let m = &self.mappings[d.mapping];
        let (tile, path) = &*d.tile;
        // The stored chunks where their checksums are recorded (far fewer bytes to hash than
        // the decoded ones), else the decoded blocks.
        let sums = match (d.checked, &self.checksums) {
            (true, Some(c)) => match c.chunks(d.mapping) {
                Some(chunks) => Sums {
                    blocks: None,
                    chunks: Some(chunks),
                },
                None => Sums {
                    blocks: c.tile(d.mapping).map(|sums| (sums, c.block)),
                    chunks: None,
                },
            },
            _ => Sums::default(),
        };
        tile.read(&d.runs, sums, d.deliver.then_some(buf))
            .map_err(|why| corrupt(path, &m.region, &self.dataset, &self.master, &why))
    }

    /// What decodes `common` (virtual-dataset coordinates) of mapping `i`'s tile into its
    /// place in a buffer laid out as `want`, when it is a compressed tile h5tile wrote (its
    /// master records no place for its bytes): the blocks the read touches checked against
    /// their checksums, and with `deliver` false only checked (HDF5 reads and converts). None
    /// where HDF5 is to read it, and nothing needs checking.
    fn compressed_part(
        &mut self,
        i: usize,
        common: &Tile,
        want: &Tile,
        deliver: bool,
    ) -> Result<Option<Decode>> {
        let unplaced = self
            .tile_bytes
            .as_ref()
            .is_some_and(|b| b[i].data_offset == NO_OFFSET);
        let Some((stored, _)) = self.stored.as_ref().filter(|_| unplaced) else {
            return Ok(None);
        };
        let elem = stored.size();
        let checked = self.checksums.as_ref().is_some_and(|c| c.tile(i).is_some());
        if !deliver && !checked {
            return Ok(None);
        }
        let Some(tile) = self.compressed_tile(i, elem)? else {
            return Ok(None);
        };
        let runs = self.mappings[i].runs(common, want, elem);
        Ok(Some(Decode {
            mapping: i,
            tile,
            runs,
            checked,
            deliver,
        }))
    }

    /// Mapping `i`'s tile, of elements of `elem` bytes, as a compressed tile h5tile decodes
    /// (None: another kind of tile), opened once and kept among the last few used.
    fn compressed_tile(&mut self, i: usize, elem: usize) -> Result<Option<Decoded>> {
        if let Some(held) = &self.compressed.held[i] {
            return Ok(Some(held.clone()));
        }
        let recent = &mut self.compressed.recent;
        if let Some(pos) = recent.iter().position(|(j, _)| *j == i) {
            let entry = recent.remove(pos);
            recent.insert(0, entry.clone());
            return Ok(entry.1);
        }
        let m = &self.mappings[i];
        let path = match &self.held[i] {
            Some((_, path)) => path.clone(),
            None => locate_source(&self.master, &m.file, &m.region, &self.dataset)?,
        };
        let slot = self.source(i)?;
        let m = &self.mappings[i];
        let (_, _, dset) = &self.open[slot];
        let tile = match CompressedTile::open(dset, &path, &m.region.shape, elem)? {
            Ok(tile) => tile.map(|t| std::sync::Arc::new((t, path))),
            Err(why) => return Err(corrupt(&path, &m.region, &self.dataset, &self.master, &why)),
        };
        self.compressed.recent.truncate(OPEN_SOURCES - 1);
        self.compressed.recent.insert(0, (i, tile.clone()));
        Ok(tile)
    }

    /// Whether reads check mapping `i`'s bytes against recorded checksums.
    fn checks(&self, i: usize) -> bool {
        self.checksums.as_ref().is_some_and(|c| c.tile(i).is_some())
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
        if let Ok(plain) = std::fs::File::open(&path) {
            check_stamp(&plain, &m.file).map_err(missing)?;
        }
        let file = File::open_read(&path)
            .map_err(|e| missing(format!("cannot be read ({})", e.message)))?;
        let dset = Dataset::open(&file, &m.dataset)
            .map_err(|e| missing(format!("cannot be read ({})", e.message)))?;
        let dims = dset.space()?.dims()?;
        let end_fits = m
            .source_offset
            .iter()
            .zip(&m.region.shape)
            .zip(&dims)
            .all(|((o, s), d)| o + s <= *d);
        // An h5tile tile maps its whole source (or its coalesced box): a file holding a larger
        // dataset is not it.
        let whole = self.tile_bytes.is_none()
            || match &m.within {
                None => dims == m.region.shape && m.source_offset.iter().all(|&o| o == 0),
                Some(within) => dims == within.shape,
            };
        if dims.len() != m.region.ndim() || !end_fits || !whole {
            let needs = match whole {
                true => "too small for its mapping".to_string(),
                false => format!(
                    "not the {} of shape {:?} the master names",
                    if m.within.is_some() { "box" } else { "tile" },
                    m.source_shape()
                ),
            };
            return Err(missing(format!(
                "holds a dataset of shape {dims:?}, {needs}"
            )));
        }
        self.open.truncate(OPEN_SOURCES - 1);
        self.open.insert(0, (i, file, dset));
        Ok(0)
    }

    /// Fills `buf` with the dataset's fill value in `dtype` (zero unless the file sets one).
    fn prefill(&mut self, want: &Tile, dtype: Dtype, buf: &mut [u8]) -> Result<()> {
        let size = dtype.size();
        let element = self.fill_element(dtype)?;
        let n = (want.volume() as usize * size).min(buf.len());
        let bytes = &mut buf[..n];
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
    fn fill_element(&mut self, dtype: Dtype) -> Result<Vec<u8>> {
        let size = dtype.size();
        if !self.fill.iter().any(|(d, _)| *d == dtype) {
            let mem_type = dtype.hdf5_type()?;
            let element = (self.dcpl.as_ref())
                .and_then(|dcpl| dcpl.fill_value(&mem_type))
                .unwrap_or(vec![0u8; size]);
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
    /// to fill would need a fill value other than zero, or the tiles' checksums are to be
    /// checked. Then the caller stages.
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
        // Checksummed bytes are checked in host memory: the caller stages them there.
        let checked =
            |i: usize| self.checks(i) && want.intersection(&self.mappings[i].region).is_some();
        if (0..self.mappings.len()).any(checked) {
            return Ok(false);
        }
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
            if tile_bytes[i].data_offset == NO_OFFSET {
                return Ok(false);
            }
            let path = locate_source(&self.master, &m.file, &m.region, &self.dataset);
            let size = path
                .as_ref()
                .ok()
                .and_then(|p| std::fs::metadata(p).ok())
                .map(|md| md.len());
            if let Ok(p) = &path {
                let stale = std::fs::File::open(p)
                    .ok()
                    .and_then(|f| check_stamp(&f, &m.file).err());
                match stale {
                    Some(_) if fill_missing => {
                        missing = true;
                        continue;
                    }
                    Some(why) => {
                        return Err(missing_tile(
                            p,
                            &m.region,
                            &self.dataset,
                            &self.master,
                            &why,
                        ))
                    }
                    None => {}
                }
            }
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
            if self.fill_element(dtype)?.iter().any(|&b| b != 0) {
                return Ok(false);
            }
            dst.zero(want.volume() as usize * elem).map_err(|e| {
                Error::new(H5TILE_ERR_CUDA, format!("cannot zero device memory: {e}"))
            })?;
        }
        for (i, common, path) in plan {
            let mut file = DeviceFile::open(&path, route)?;
            let place = self.mappings[i].place(tile_bytes[i].data_offset, elem);
            for (s, d, len) in self.mappings[i].runs(&common, want, elem) {
                let mut d = d as usize;
                for (at, n) in place.ranges(s, s + len as u64) {
                    file.read(at, dst.offset(d), n)?;
                    d += n;
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::super::mappings::block_mappings;
    use super::*;
    use crate::ops::write::Layout;
    use crate::platform::device::bytes_mut;
    use crate::status::H5TILE_ERR_MISSING_TILE;
    use crate::testkit::{grid_values, write_grid_in};

    /// The 6x5 float64 grid of 4 tiles (2x2), element (i, j) = 10 i + j, as a VDS.
    fn write_grid(path: &Path) {
        write_grid_in(path, Layout::Vds)
    }

    /// The reader of `/g` in `path`, from the master's index as reads make it (the mappings
    /// of a subfile's coalesced box are not the tiles the records are of).
    fn reader(path: &Path) -> DirectReader {
        let _l = hdf5::lock();
        match crate::ops::read::open_to_read(path, "/g", None).unwrap() {
            crate::ops::read::Opened::Indexed(index, file) => {
                DirectReader::indexed(path, (&file, "/g"), *index, true).unwrap()
            }
            crate::ops::read::Opened::Dataset(open) => {
                let mappings = block_mappings(&open.dataset, 2)
                    .unwrap()
                    .expect("plain boxes");
                DirectReader::new(path, "/g", &open.dataset, mappings, true).unwrap()
            }
        }
    }

    fn read_f64(r: &mut DirectReader, want: &Tile) -> Vec<f64> {
        let mut out = vec![-1.0f64; want.volume() as usize];
        r.read(want, Dtype::Float64, bytes_mut(&mut out), false)
            .unwrap();
        out
    }

    #[test]
    fn h5tile_tiles_are_read_from_their_recorded_bytes_without_hdf5_opens() {
        for layout in [Layout::Vds, Layout::Subfiles] {
            recorded_bytes_are_read_without_hdf5_opens(layout);
        }
    }

    fn recorded_bytes_are_read_without_hdf5_opens(layout: Layout) {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("grid.h5");
        write_grid_in(&path, layout);
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
            assert_eq!(read_f64(&mut r, &want), grid_values(&want), "{want}");
        }
        assert!(r.open.is_empty(), "no tile file was opened with HDF5");
        // Asking for another type goes through HDF5, which converts.
        let want = Tile::new(vec![2, 1], vec![2, 3]);
        let mut out = vec![0f32; 6];
        r.read(&want, Dtype::Float32, bytes_mut(&mut out), false)
            .unwrap();
        assert_eq!(
            out,
            grid_values(&want)
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
        let all = Tile::new(vec![0, 0], vec![6, 5]);
        let mut r = reader(&path);
        assert_eq!(read_f64(&mut r, &all), grid_values(&all));
        assert_eq!(r.open.len(), 1, "only the changed tile went through HDF5");

        std::fs::remove_file(&first).unwrap();
        let mut out = vec![0f64; 30];
        let e = reader(&path)
            .read(&all, Dtype::Float64, bytes_mut(&mut out), false)
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
