//! Tile bytes read from where the master records them, without HDF5: planned into
//! `ByteReads`, checked block by block where the master records checksums, and the tile files
//! `hold` keeps open.

use super::super::mappings::{corrupt, locate_source, missing_tile, resolve_source};
use super::DirectReader;
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::runs::box_rows;
use crate::layout::subfiles::check_stamp;
use crate::layout::vds::NO_OFFSET;
use crate::ops::tile_io::byte_reads::ByteReads;
use crate::ops::tile_io::checked_blocks::SummedTile;
use crate::platform::hdf5;
use crate::status::{Error, Result};
use std::path::PathBuf;

/// How many tile files one reader may hold open: a quarter of the process's limit on open
/// files, so that holding them never starves the caller.
pub(super) fn held_file_budget() -> usize {
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
pub(super) fn plan_files() -> usize {
    (held_file_budget() / 2).max(16)
}

/// Largest staging read when copying tile bytes into a caller's buffer.
const SCRATCH_BYTES: usize = 4 << 20;

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
    pub(super) fn plan_tile_bytes(
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
            let scheme = self.checksums.as_ref().expect("checked").scheme;
            let grid = scheme.grid(&m.region.shape, elem);
            let tile_len = grid.len();
            if sums.len() as u64 != grid.count() {
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
                grid: &grid,
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
}
