//! Reading a virtual dataset whose mappings are plain boxes by opening its sources itself:
//! only the sources a read needs are opened, a missing one is reported by name, and the tiles
//! h5tile wrote are read from the bytes their master records, without HDF5.
//!
//! One concept per file: `recorded` reads tile bytes from where the master records them (and
//! holds tile files open), `decoding` decodes the compressed tiles h5tile wrote (and explains
//! HDF5's failures with them), `sources` opens sources through HDF5 (and the fill value),
//! `device` reads straight into device memory.

mod decoding;
mod device;
mod recorded;
mod sources;

use decoding::{Decode, DecodedTiles};
use recorded::plan_files;

use super::mappings::{corrupt, missing_tile, read_tile_bytes, BlockMapping};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::layout::checksums::Recorded;
use crate::layout::index::Index;
use crate::layout::vds::{TileBytes, NO_OFFSET, TILE_DATASET};
use crate::ops::tile_io::byte_reads::{ByteReads, ReadCounts};
use crate::ops::tile_io::checked_blocks::CheckedBlocks;
use crate::platform::hdf5::{self, Attributes, Dataset, File, Plist, Space, Type};
use crate::status::{Result, H5TILE_ERR_IO};
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

/// Which of a master's tiles a reader keeps, where it keeps some only: their places among the
/// master's tiles, and how many the master has.
type Kept<'a> = Option<(&'a [usize], usize)>;

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
        Ok(DirectReader {
            checked: CheckedBlocks::default(),
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

    /// Whether reads check mapping `i`'s bytes against recorded checksums.
    fn checks(&self, i: usize) -> bool {
        self.checksums.as_ref().is_some_and(|c| c.tile(i).is_some())
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
