//! Writing the subfiled layout: one HDF5 file per group of ranks (by default the ranks of one
//! node), holding one contiguous dataset per tile of the group. The group's first rank creates
//! the file with every dataset's storage allocated and hands out the byte offsets; each rank
//! then writes its own tiles' bytes there straight from its buffer, and the first rank syncs
//! the file once for the whole group. The master maps every tile to its dataset, as the VDS
//! layout maps tile files, and records where the bytes are (`vds::TileBytes`), so readers
//! fetch them directly.
//!
//! A subfile's first bytes (an HDF5 user block, which HDF5 leaves to the application) say which
//! write made it, so a reader can tell a subfile of another generation put in place of the one
//! the master names (a stale copy, a restore gone wrong) from the right one, with one short
//! read per subfile.

use super::chunks::{Chunks, CHUNK_BYTES};
use super::vds::{write_u64_attribute, TileBytes};
use super::{is_numbered, subfile_generation};
use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::platform::codecs::Compression;
use crate::platform::device::Buffer;
use crate::platform::hdf5::{self, Dataset, File, Plist, Space};
use crate::platform::tile_bytes::{write_runs, Durability, Gaps, Run};
use crate::status::{fail, Error, Result, H5TILE_ERR_HDF5};
use std::path::Path;

/// Name, inside its subfile, of the dataset holding tile `k` of `rank`.
pub fn tile_dataset(rank: usize, k: usize) -> String {
    format!("/tile.r{rank}.t{k}")
}

/// Name, inside its subfile, of the dataset holding the group's tiles of field `field` of a
/// commit where they fill one box (coalesced).
pub fn box_dataset(field: usize) -> String {
    format!("/box.f{field}")
}

/// Whether `name` is a dataset name `tile_dataset` or `box_dataset` makes.
pub fn is_tile_dataset(name: &str) -> bool {
    if let Some(field) = name.strip_prefix("/box.") {
        return is_numbered(field, "f");
    }
    let Some(rest) = name.strip_prefix("/tile.r") else {
        return false;
    };
    rest.split_once('.')
        .is_some_and(|(r, k)| is_numbered(r, "") && is_numbered(k, "t"))
}

/// The box each field's tiles in one subfile fill, where they are stored as one dataset of
/// that box (coalesced), mapped once by the master: two or more tiles of the field (`tiles`:
/// each tile's field and box, of `fields` fields) whose volumes add up to their bounding box's
/// (the tiles of a dataset never overlap, so they then fill it). None for a field otherwise.
/// The group's first rank and rank 0 both decide it from the same tiles, and so alike.
pub fn coalesced<'a>(
    tiles: impl Iterator<Item = (usize, &'a Tile)>,
    fields: usize,
) -> Vec<Option<Tile>> {
    // Per field: how many tiles, their volume, and their bounds (lowest start, highest end).
    type Bounds = Option<(Vec<u64>, Vec<u64>)>;
    let mut seen: Vec<(usize, u128, Bounds)> = vec![(0, 0, None); fields];
    for (f, tile) in tiles {
        let (count, volume, bounds) = &mut seen[f];
        *count += 1;
        *volume += tile.volume();
        let end: Vec<u64> = tile
            .offset
            .iter()
            .zip(&tile.shape)
            .map(|(o, s)| o + s)
            .collect();
        match bounds {
            None => *bounds = Some((tile.offset.clone(), end)),
            Some((low, high)) => {
                low.iter_mut()
                    .zip(&tile.offset)
                    .for_each(|(l, o)| *l = (*l).min(*o));
                high.iter_mut()
                    .zip(&end)
                    .for_each(|(h, e)| *h = (*h).max(*e));
            }
        }
    }
    seen.into_iter()
        .map(|(count, volume, bounds)| {
            let (low, high) = bounds?;
            let shape: Vec<u64> = low.iter().zip(&high).map(|(l, h)| h - l).collect();
            let filled = crate::geometry::tile::volume(&shape) == volume;
            (count >= 2 && filled).then(|| Tile::new(low, shape))
        })
        .collect()
}

/// Every tile's bytes start at a multiple of this, counted from the start of the file, so no
/// two ranks' tiles share a block: a rank writing through O_DIRECT or cuFile, which rewrites
/// whole blocks, never touches a neighbour's bytes. The user block has this size too, since
/// HDF5 aligns addresses after it.
const ALIGNMENT: u64 = 4096;

/// What a subfile's user block starts with; the write's generation (little-endian) follows.
const STAMP: &[u8; 16] = b"h5tile subfile\n\0";

/// One dataset a subfile holds, `dataset`: a tile of `rank` (or, coalesced, the box `tile`
/// several tiles fill, `rank` the first's), of a dataset of `dtype` and `global` shape.
pub struct SubfileTile<'a> {
    pub dataset: String,
    pub rank: usize,
    pub dtype: Dtype,
    pub global: &'a [u64],
    pub tile: &'a Tile,
}

impl SubfileTile<'_> {
    /// The tile's bytes (u64::MAX when more than a buffer can hold).
    fn bytes(&self) -> u64 {
        let bytes = self.tile.bytes(self.dtype.size());
        bytes.map_or(u64::MAX, |b| b as u64)
    }
}

/// Creates the subfile `path` of write `generation` with one contiguous dataset per tile of
/// `tiles` (none empty), its storage allocated and not filled, each with the tile's place in
/// its attributes as in a tile file, and stamps it with the generation. Returns each tile's
/// `TileBytes`, in order.
pub fn create(path: &Path, generation: u64, tiles: &[SubfileTile]) -> Result<Vec<TileBytes>> {
    // Every allocation on its own block; or, where every tile is large and whole blocks long,
    // the tiles alone on 2 MiB boundaries, as in tile files (`data_alignment`), and HDF5's
    // metadata packed between them (no tile's block holds any of it either way).
    let smallest = tiles.iter().map(|t| t.bytes()).min().unwrap_or(0);
    let (threshold, alignment) = match hdf5::gds::data_alignment(smallest) {
        large if large > ALIGNMENT && tiles.iter().all(|t| t.bytes() % ALIGNMENT == 0) => {
            (smallest, large)
        }
        _ => (1, ALIGNMENT),
    };
    let offsets = (|| {
        let _l = hdf5::lock();
        let fcpl = Plist::file_growing_only(alignment, threshold > 1)?;
        let fapl = Plist::file_access_aligned(threshold, alignment)?;
        let file = File::create_as(path, &fcpl, &fapl)?;
        let dcpl = Plist::contiguous_allocated()?;
        let mut offsets = Vec::with_capacity(tiles.len());
        for spec in tiles {
            let dset = create_tile_dataset(&file, spec, &dcpl)?;
            let tile = spec.tile;
            let Some(offset) = dset.data_offset() else {
                return fail(
                    H5TILE_ERR_HDF5,
                    format!(
                        "HDF5 allocated no storage for tile {tile} in '{}'",
                        path.display()
                    ),
                );
            };
            offsets.push(offset);
        }
        file.close()?;
        Ok(offsets)
    })()?;
    let file_size = stamp_and_measure(path, generation)?;
    Ok(offsets
        .into_iter()
        .map(|data_offset| TileBytes {
            data_offset,
            file_size,
        })
        .collect())
}

/// Creates the subfile `path` of write `generation` holding `tiles` compressed by
/// `compression`: one chunked dataset per tile (`chunks::Chunks`), its chunk `i` of
/// `sizes[t][i]` stored bytes given a place in the file but not written (the h5tile_gds
/// driver's `reserve`: each rank writes its own chunks there afterwards, `write_chunks`).
/// Returns each tile's file size and its chunks' addresses, in order.
pub fn create_compressed(
    path: &Path,
    generation: u64,
    tiles: &[SubfileTile],
    sizes: &[Vec<u64>],
    compression: Compression,
) -> Result<Vec<(u64, Vec<u64>)>> {
    let addrs = (|| {
        let _l = hdf5::lock();
        let fcpl = Plist::file_growing_only(ALIGNMENT, false)?;
        let fapl = hdf5::gds::reserving_access(ALIGNMENT)?;
        let file = File::create_as(path, &fcpl, &fapl)?;
        let largest = sizes.iter().flatten().copied().max().unwrap_or(0);
        let nothing = vec![0u8; largest as usize];
        let mut addrs = Vec::with_capacity(tiles.len());
        for (spec, sizes) in tiles.iter().zip(sizes) {
            let (rank, dtype, tile) = (spec.rank, spec.dtype, spec.tile);
            let chunks = Chunks::new(&tile.shape, dtype.size(), CHUNK_BYTES);
            if sizes.len() as u64 != chunks.count() {
                return fail(
                    H5TILE_ERR_HDF5,
                    format!(
                        "tile {tile} of rank {rank}: {} chunk sizes for its {} chunks",
                        sizes.len(),
                        chunks.count()
                    ),
                );
            }
            let dcpl = Plist::chunked_filtered(&chunks.shape, &compression.pipeline(dtype.size()))?;
            let dset = create_tile_dataset(&file, spec, &dcpl)?;
            let mut places = Vec::with_capacity(sizes.len());
            for (i, &size) in sizes.iter().enumerate() {
                let at = chunks.offset(i as u64);
                dset.write_chunk(&at, &nothing[..size as usize])?;
                match dset.stored_chunk(&at)? {
                    Some(c) if c.size == size => places.push(c.addr),
                    _ => {
                        return fail(
                            H5TILE_ERR_HDF5,
                            format!(
                                "HDF5 placed no chunk {i} of tile {tile} in '{}'",
                                path.display()
                            ),
                        )
                    }
                }
            }
            addrs.push(places);
        }
        file.close()?;
        Ok(addrs)
    })()?;
    let file_size = stamp_and_measure(path, generation)?;
    Ok(addrs.into_iter().map(|a| (file_size, a)).collect())
}

/// Creates in subfile `file` the dataset of `spec`'s tile, its storage as `dcpl` says, with the
/// tile's place in its attributes as in a tile file: plain and compressed subfiles name and
/// describe their datasets the same way, so one reader finds both.
fn create_tile_dataset(file: &File, spec: &SubfileTile, dcpl: &Plist) -> Result<Dataset> {
    let t = spec.dtype.hdf5_type()?;
    let dset = Dataset::create(
        file,
        &spec.dataset,
        &t,
        &Space::simple(&spec.tile.shape)?,
        dcpl,
    )?;
    write_u64_attribute(&dset, "h5tile_offset", &spec.tile.offset)?;
    write_u64_attribute(&dset, "h5tile_global_shape", spec.global)?;
    Ok(dset)
}

/// Stamps the subfile `path`, created and closed, with write `generation`; returns its size.
fn stamp_and_measure(path: &Path, generation: u64) -> Result<u64> {
    stamp(path, generation)?;
    // HDF5 sets the file's size to the end of its allocations when it closes it.
    let meta = std::fs::metadata(path).map_err(|e| Error::io("cannot stat", path, &e))?;
    Ok(meta.len())
}

/// Writes a compressed tile's stored chunks, `stored` holding them one after the other, of
/// `sizes`, at `addrs` of the subfile `path` (`create_compressed` reserved them). Nothing is
/// synced here, as in `write_tile`.
pub fn write_chunks(
    path: &Path,
    stored: &[u8],
    sizes: &[u64],
    addrs: &[u64],
    sync: bool,
) -> Result<()> {
    let mut at = 0u64;
    let runs: Vec<Run> = sizes
        .iter()
        .zip(addrs)
        .map(|(&len, &file_at)| {
            let run = Run {
                file_at,
                buf_at: at,
                len: len as usize,
            };
            at += len;
            run
        })
        .collect();
    let durability = match sync {
        true => Durability::SyncLater,
        false => Durability::Never,
    };
    write_runs(path, &runs, Gaps::Padding, Buffer::Host(stored), durability)
}

/// Writes one tile's `len` bytes from `buf` at `data_offset` of the subfile `path`: from host
/// memory in pieces over this rank's I/O threads, from device memory through the h5tile_gds
/// device path (cuFile or its bounded staging). Nothing is synced here: the group's first rank
/// syncs the whole file once every rank has written; when it will (`sync`), the writeback of
/// each piece starts at once, so that sync finds little left to do.
pub fn write_tile(
    path: &Path,
    data_offset: u64,
    len: usize,
    buf: Buffer,
    sync: bool,
) -> Result<()> {
    let run = Run {
        file_at: data_offset,
        buf_at: 0,
        len,
    };
    let durability = match sync {
        true => Durability::SyncLater,
        false => Durability::Never,
    };
    write_runs(path, &[run], Gaps::Others, buf, durability)
}

/// Writes `tile` (dense, row-major in `buf`, elements of `elem` bytes) into its place in the
/// coalesced dataset of the box `within`, whose bytes start at `data_offset` of the subfile
/// `path`: a run per row of the tile, as the single-file layout writes its rows (ranks sharing
/// a block never rewrite each other's bytes). Nothing is synced here, as in `write_tile`.
pub fn write_tile_within(
    path: &Path,
    (data_offset, within): (u64, &Tile),
    tile: &Tile,
    elem: usize,
    buf: Buffer,
    sync: bool,
) -> Result<()> {
    let relative = Tile::new(
        tile.offset
            .iter()
            .zip(&within.offset)
            .map(|(t, w)| t - w)
            .collect(),
        tile.shape.clone(),
    );
    let durability = match sync {
        true => Durability::SyncLater,
        false => Durability::Never,
    };
    let global = &within.shape;
    super::single::write_tile(path, data_offset, global, &relative, elem, buf, durability)
}

/// Writes the stamp of write `generation` into the user block of the subfile `path`.
fn stamp(path: &Path, generation: u64) -> Result<()> {
    let mut stamp = STAMP.to_vec();
    stamp.extend(generation.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|f| std::os::unix::fs::FileExt::write_all_at(&f, &stamp, 0))
        .map_err(|e| Error::io("cannot stamp subfile", path, &e))
}

/// Checks that `file`, named `name` by a master, is the subfile of the write the name says
/// (files of other names pass: tile files, files h5tile did not write). Returns why not.
pub fn check_stamp(file: &std::fs::File, name: &str) -> std::result::Result<(), String> {
    let base = name.rsplit('/').next().unwrap_or(name);
    let Some(named) = subfile_generation(base) else {
        return Ok(());
    };
    let mut head = [0u8; 24];
    let read = std::os::unix::fs::FileExt::read_exact_at(file, &mut head, 0);
    if read.is_err() || &head[..16] != STAMP {
        return Err(
            "is not a subfile h5tile wrote (its first bytes carry no write's stamp)".into(),
        );
    }
    let stamped = u64::from_le_bytes(head[16..].try_into().expect("8 bytes"));
    match stamped == named {
        true => Ok(()),
        false => Err(format!(
            "is a subfile of another write (generation {stamped:016x}; the master names \
             generation {named:016x})"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A group's tiles of a field are one box where two or more fill it; an L of tiles, a box
    /// with a hole, or one tile alone stays a dataset per tile; fields are decided apart.
    #[test]
    fn tiles_are_coalesced_exactly_where_they_fill_one_box() {
        let t = |o: [u64; 2], s: [u64; 2]| Tile::new(o.to_vec(), s.to_vec());
        let slabs = [t([0, 0], [2, 5]), t([2, 0], [3, 5])];
        let quarters = [
            t([4, 4], [2, 2]),
            t([4, 6], [2, 3]),
            t([6, 4], [1, 2]),
            t([6, 6], [1, 3]),
        ];
        let ell = [t([0, 0], [2, 2]), t([2, 0], [2, 2]), t([2, 2], [2, 2])];
        let holed = [t([0, 0], [1, 3]), t([2, 0], [1, 3])];
        let alone = [t([0, 0], [3, 3])];
        let fields = [&slabs[..], &quarters, &ell, &holed, &alone];
        let tiles = fields
            .iter()
            .enumerate()
            .flat_map(|(f, tiles)| tiles.iter().map(move |t| (f, t)));
        assert_eq!(
            coalesced(tiles, fields.len() + 1),
            vec![
                Some(t([0, 0], [5, 5])),
                Some(t([4, 4], [3, 5])),
                None,
                None,
                None,
                None
            ]
        );
    }

    /// Rank r's one tile is `boxes[r]`, of a dataset of `dtype` and `global` shape.
    fn one_tile_a_rank<'a>(
        boxes: &'a [Tile],
        dtype: Dtype,
        global: &'a [u64],
    ) -> Vec<SubfileTile<'a>> {
        let tile = |(rank, tile)| SubfileTile {
            dataset: tile_dataset(rank, 0),
            rank,
            dtype,
            global,
            tile,
        };
        boxes.iter().enumerate().map(tile).collect()
    }

    /// Large tiles whole blocks long start on 2 MiB boundaries of the file (counted from its
    /// first byte), with HDF5's metadata packed before them; when one is not whole blocks
    /// long, every allocation starts on a block of its own instead.
    #[test]
    fn large_tiles_start_on_2_mib_boundaries_when_each_is_whole_blocks_long() {
        let d = tempfile::tempdir().unwrap();
        for (cols, large) in [(1024u64, true), (1023, false)] {
            let path = d.path().join(format!("s{cols}.h5"));
            let global = [3 * 1024, cols];
            let boxes: Vec<Tile> = (0..3)
                .map(|r| Tile::new(vec![1024 * r, 0], vec![1024, cols]))
                .collect();
            let tiles = one_tile_a_rank(&boxes, Dtype::Float64, &global);
            let mut offsets: Vec<u64> = create(&path, 9, &tiles)
                .unwrap()
                .iter()
                .map(|b| b.data_offset)
                .collect();
            let unit = if large { 2 << 20 } else { ALIGNMENT };
            assert!(offsets.iter().all(|o| o % unit == 0), "{cols}: {offsets:?}");
            offsets.sort();
            let tile_bytes = 1024 * cols * 8;
            assert!(offsets.windows(2).all(|w| w[1] >= w[0] + tile_bytes));
            let size = std::fs::metadata(&path).unwrap().len();
            assert!(size < 3 * tile_bytes + (8 << 20), "{size}");
            let f = std::fs::File::open(&path).unwrap();
            assert!(check_stamp(&f, &super::super::subfile_name("/d", 9, 0)).is_ok());
        }
    }

    #[test]
    fn every_tile_starts_on_its_own_block() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("s.h5");
        let boxes: Vec<Tile> = (0..5)
            .map(|r| Tile::new(vec![0, 3 * r as u64], vec![7, 3]))
            .collect();
        let tiles = one_tile_a_rank(&boxes, Dtype::Int16, &[7, 15]);
        let bytes = create(&path, 9, &tiles).unwrap();
        let mut offsets: Vec<u64> = bytes.iter().map(|b| b.data_offset).collect();
        assert!(offsets.iter().all(|o| o % ALIGNMENT == 0), "{offsets:?}");
        offsets.sort();
        offsets.dedup();
        assert_eq!(offsets.len(), 5);
        let size = std::fs::metadata(&path).unwrap().len();
        assert!(bytes.iter().all(|b| b.file_size == size));
        // Metadata is aligned too: a few blocks per tile, nothing like a tile's own size.
        assert!(size < 96 << 10, "{size} bytes for five 42-byte tiles");
        let f = std::fs::File::open(&path).unwrap();
        let name = super::super::subfile_name("/d", 9, 0);
        assert!(check_stamp(&f, &name).is_ok());
        let other = super::super::subfile_name("/d", 8, 0);
        assert!(check_stamp(&f, &other)
            .unwrap_err()
            .contains("another write"));
    }

    /// HDF5 searched its free sections for every new dataset of a subfile (each aligned
    /// allocation leaves one behind): a subfile's write grew with the square of its tiles.
    /// Subfiles take space at their end only, whatever their layout, and still read as HDF5.
    #[test]
    fn subfiles_never_search_free_space() {
        let d = tempfile::tempdir().unwrap();
        for (cols, rows) in [(3u64, 7u64), (1024, 1024)] {
            let path = d.path().join(format!("s{cols}.h5"));
            let boxes: Vec<Tile> = (0..4)
                .map(|r| Tile::new(vec![0, cols * r], vec![rows, cols]))
                .collect();
            let global = [rows, 4 * cols];
            let tiles = one_tile_a_rank(&boxes, Dtype::Float64, &global);
            create(&path, 9, &tiles).unwrap();
            use hdf5_sys::h5f::H5F_fspace_strategy_t::*;
            // Aggregators, no free-space manager, where large tiles leave gaps to pack.
            let strategy = match cols {
                1024 => H5F_FSPACE_STRATEGY_AGGR,
                _ => H5F_FSPACE_STRATEGY_NONE,
            };
            let want = Ok(strategy as u32);
            assert_eq!(Plist::file_space_strategy(&path), want, "{cols} columns");
        }
    }

    #[test]
    fn only_subfile_names_need_a_stamp() {
        let d = tempfile::tempdir().unwrap();
        let plain = d.path().join("x.h5");
        std::fs::write(&plain, vec![0u8; 64]).unwrap();
        let f = std::fs::File::open(&plain).unwrap();
        let sub = super::super::subfile_name("/d", 7, 0);
        let e = check_stamp(&f, &format!("d.h5.tiles/{sub}")).unwrap_err();
        assert!(e.contains("no write's stamp"), "{e}");
        let tile = super::super::tile_file_name("/d", 7, 0, 0);
        assert!(check_stamp(&f, &format!("d.h5.tiles/{tile}")).is_ok());
        assert!(check_stamp(&f, "legate_vds/0.h5").is_ok());
    }

    #[test]
    fn tile_dataset_names_are_recognised() {
        assert_eq!(tile_dataset(12, 3), "/tile.r12.t3");
        assert!(is_tile_dataset(&tile_dataset(0, 0)));
        for other in ["/tile", "/tile.r.t1", "/tile.r1.t", "/tile.r1x.t2", "/data"] {
            assert!(!is_tile_dataset(other), "{other}");
        }
    }
}
