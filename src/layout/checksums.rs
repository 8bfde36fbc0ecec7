//! Checksums of every tile's bytes, per block, recorded in the master when the tile is
//! written and checked when it is read: a flipped bit, a truncated or swapped tile file is an
//! error naming the file, the tile and the byte range, not garbage returned as data.
//!
//! A tile's bytes (its contiguous dataset's storage, the tile's elements in row-major order)
//! are cut into blocks of `BLOCK_BYTES` as the dataset's scheme says (`blocks`: boxes of
//! `ROW_BYTES`-wide rows where the tile's rows are wider, else runs from the first byte); each
//! block's checksum is XXH3-64 with seed 0 (`xxhash.xxh3_64_intdigest` in Python) of its bytes
//! in the tile's order. A read checks only the blocks it touches.
//!
//! What the master's virtual dataset carries, as attributes (README, "Checksums in the master";
//! in the single-file layout the dataset itself, with `single::TILES_ATTRIBUTE` naming its tiles):
//! - `h5tile_checksum_boxes` (uint64, 2: block bytes, row bytes): blocks are boxes
//!   (`blocks::Scheme::Boxes`); or, in its stead, `h5tile_checksum_block_bytes` (uint64, 1):
//!   the block size, blocks are runs (masters before boxes, compressed tiles). Readers that
//!   know only runs find no block size in a master with boxes, and read it unchecked rather
//!   than take its checksums for those of runs;
//! - `h5tile_checksum_first` (uint64, tiles + 1): tile i's checksums are
//!   `h5tile_checksums[first[i]:first[i+1]]`, in the order of the virtual mappings; none for
//!   a tile cuFile wrote from device memory straight to the file (no host copy to sum);
//! - `h5tile_checksums` (uint64): every tile's block checksums, one after the other;
//! - `h5tile_tile_min`, `h5tile_tile_max` (the dataset's type, tiles) and `h5tile_tile_nan`
//!   (uint64, tiles; `NONE` where nothing was recorded): see `extremes`;
//! - for compressed tiles, `h5tile_chunk_checksum_first` (uint64, tiles + 1) and
//!   `h5tile_chunk_checksums` (uint64): XXH3-64 of each chunk as stored (compressed), tile i's
//!   from `first[i]`, chunks in order (`chunks::Chunks`); none for an uncompressed tile.
//!
//! A read of a compressed tile checks the stored chunks it reads, where these are recorded,
//! and decodes them without the codecs' own checksums: a few times fewer bytes to hash than
//! the decoded blocks, and a damaged chunk is found before it is decoded. The block checksums
//! are still recorded, over the uncompressed bytes, for `h5tile check` and for other readers
//! (such as h5py, whose HDF5 decodes the chunks); files written before the chunk checksums
//! are read checking the blocks.

use super::blocks::{BlockGrid, Scheme};
use super::extremes::{Accumulator, Extremes};
use crate::dtype::Dtype;
use crate::platform::hdf5::{Attributes, Dataset};
use crate::platform::xxh3;
use crate::status::Result;

/// Bytes per checksummed block.
pub(crate) const BLOCK_BYTES: u64 = 1 << 20;

/// The width of a box's rows: a 1024-wide float64 chunk of a wide tile reads whole boxes.
pub(crate) const ROW_BYTES: u64 = 8 << 10;

/// How h5tile cuts uncompressed tiles.
pub(crate) const BOXES: Scheme = Scheme::Boxes {
    block: BLOCK_BYTES,
    row: ROW_BYTES,
};

/// How h5tile cuts compressed tiles (their reads check the stored chunks; `h5tile check`
/// and other readers check these blocks of the decoded bytes).
pub(crate) const RUNS: Scheme = Scheme::Runs { block: BLOCK_BYTES };

/// How h5tile cuts the tiles of a dataset it writes compressed or not.
pub fn scheme_for(compressed: bool) -> Scheme {
    match compressed {
        true => RUNS,
        false => BOXES,
    }
}

pub const BLOCK_BYTES_ATTRIBUTE: &str = "h5tile_checksum_block_bytes";
pub const BOXES_ATTRIBUTE: &str = "h5tile_checksum_boxes";
pub const FIRST_ATTRIBUTE: &str = "h5tile_checksum_first";
pub const CHECKSUMS_ATTRIBUTE: &str = "h5tile_checksums";
pub const MIN_ATTRIBUTE: &str = "h5tile_tile_min";
pub const MAX_ATTRIBUTE: &str = "h5tile_tile_max";
pub const NAN_ATTRIBUTE: &str = "h5tile_tile_nan";
pub const CHUNK_FIRST_ATTRIBUTE: &str = "h5tile_chunk_checksum_first";
pub const CHUNK_CHECKSUMS_ATTRIBUTE: &str = "h5tile_chunk_checksums";

/// In `h5tile_tile_nan`, and in a rank's report, marks what was not recorded.
pub(crate) const NONE: u64 = u64::MAX;

/// The checksum of one block (the tools' check; the library sums blocks as they pass, with
/// `BlockSum`).
pub fn block_sum(bytes: &[u8]) -> u64 {
    xxh3::oneshot(bytes)
}

/// The checksums of the blocks of a tile's `bytes`, cut as `grid` says (no extremes).
pub fn block_sums(grid: BlockGrid, bytes: &[u8]) -> Vec<u64> {
    let mut summing = Summing::new(Dtype::UInt8, grid);
    summing.extremes = None;
    summing.add(bytes);
    summing.sums
}

/// The checksum of one block given in pieces: `block_sum` of the pieces joined.
pub struct BlockSum(xxh3::Stream);

impl Default for BlockSum {
    fn default() -> BlockSum {
        BlockSum::new()
    }
}

impl BlockSum {
    pub fn new() -> BlockSum {
        BlockSum(xxh3::Stream::new())
    }

    pub fn add(&mut self, piece: &[u8]) {
        self.0.add(piece);
    }

    pub fn finish(&self) -> u64 {
        self.0.finish()
    }
}

/// Bytes taken through both passes of `Summing` at a time (a multiple of every element size).
const FUSED_PIECE: usize = 64 << 10;

/// A tile's [`Summary`] taken from its bytes given in order, in pieces of any size (the
/// compat path's staging buffers, whose pieces need not end on a block or an element), its
/// blocks those of `grid`.
pub struct Summing {
    elem: usize,
    grid: BlockGrid,
    /// Each block's checksum, once all its bytes have come.
    sums: Vec<u64>,
    /// The blocks begun and not complete: their sum so far, how many bytes it took and the
    /// block's length (one at a time for runs; a row of boxes at a time for boxes).
    open: std::collections::HashMap<u64, (BlockSum, u64, u64)>,
    /// The tile's bytes taken so far.
    at: u64,
    extremes: Option<Accumulator>,
    /// The start of an element cut by the end of the last piece.
    carry: Vec<u8>,
}

impl Summing {
    pub fn new(dtype: Dtype, grid: BlockGrid) -> Summing {
        Summing {
            elem: dtype.size(),
            sums: vec![0; grid.count() as usize],
            grid,
            open: Default::default(),
            at: 0,
            extremes: Accumulator::new(dtype),
            carry: Vec::new(),
        }
    }

    /// The tile's next `bytes`, in pieces small enough to stay in the core's cache between
    /// the extremes' pass and the checksum's, so that memory is read once.
    pub fn add(&mut self, bytes: &[u8]) {
        bytes
            .chunks(FUSED_PIECE)
            .for_each(|piece| self.add_piece(piece));
    }

    fn add_piece(&mut self, mut bytes: &[u8]) {
        if let Some(acc) = self.extremes.as_mut() {
            let mut whole = bytes;
            if !self.carry.is_empty() {
                let take = (self.elem - self.carry.len()).min(whole.len());
                self.carry.extend_from_slice(&whole[..take]);
                whole = &whole[take..];
                if self.carry.len() == self.elem {
                    acc.add(&self.carry);
                    self.carry.clear();
                }
            }
            let cut = whole.len() - whole.len() % self.elem;
            acc.add(&whole[..cut]);
            self.carry.extend_from_slice(&whole[cut..]);
        }
        // Bytes past the tile's (a caller's mistake) are not summed.
        let room = self.grid.len().saturating_sub(self.at) as usize;
        bytes = &bytes[..bytes.len().min(room)];
        while !bytes.is_empty() {
            let (k, _, left) = self.grid.locate(self.at);
            let take = (left as usize).min(bytes.len());
            // A box's length once, not for each of its rows.
            let grid = &self.grid;
            let (sum, taken, len) = self
                .open
                .entry(k)
                .or_insert_with(|| (BlockSum::new(), 0, grid.block_len(k)));
            sum.add(&bytes[..take]);
            *taken += take as u64;
            if *taken == *len {
                self.sums[k as usize] = sum.finish();
                self.open.remove(&k);
            }
            self.at += take as u64;
            bytes = &bytes[take..];
        }
    }

    pub fn finish(mut self) -> Summary {
        // Blocks the bytes given did not complete are summed over what came.
        for (k, (sum, _, _)) in self.open.drain() {
            self.sums[k as usize] = sum.finish();
        }
        Summary {
            sums: Some(self.sums),
            extremes: self.extremes.and_then(Accumulator::finish),
            chunk_sums: None,
        }
    }
}

/// What the master records of one tile: its block checksums (None: not checksummed), its
/// extremes (None: complex, or not recorded) and, for a compressed tile, the checksums of its
/// stored chunks (`stored_sum`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Summary {
    pub sums: Option<Vec<u64>>,
    pub extremes: Option<Extremes>,
    pub chunk_sums: Option<Vec<u64>>,
}

impl Summary {
    #[cfg(test)]
    /// The summary of a tile's `bytes`, elements of `dtype`, in runs of `BLOCK_BYTES`: one pass,
    /// block by block, each block's extremes taken while it is still in the cache from being
    /// summed.
    pub fn of(dtype: Dtype, bytes: &[u8]) -> Summary {
        let runs = Scheme::Runs { block: BLOCK_BYTES };
        Summary::of_grid(dtype, runs.grid(&[bytes.len() as u64], 1), bytes)
    }

    /// The summary of a tile's `bytes`, elements of `dtype`, its blocks those of `grid`.
    pub fn of_grid(dtype: Dtype, grid: BlockGrid, bytes: &[u8]) -> Summary {
        let mut summing = Summing::new(dtype, grid);
        bytes
            .chunks(BLOCK_BYTES as usize)
            .for_each(|block| summing.add(block));
        summing.finish()
    }

    /// Appends the summary to a rank's report to rank 0: the count of checksums (`NONE`:
    /// none) and the checksums, then `NONE` or the NaN count, min and max (an element of at
    /// most 8 bytes, zero-padded), then the chunks' checksums as the blocks'.
    pub fn to_words(&self, out: &mut Vec<u64>) {
        let list = |sums: &Option<Vec<u64>>, out: &mut Vec<u64>| match sums {
            Some(sums) => {
                out.push(sums.len() as u64);
                out.extend(sums);
            }
            None => out.push(NONE),
        };
        list(&self.sums, out);
        let word = |b: &[u8]| {
            let mut w = [0u8; 8];
            w[..b.len()].copy_from_slice(b);
            u64::from_ne_bytes(w)
        };
        match &self.extremes {
            Some(e) => out.extend([e.nan, word(&e.min), word(&e.max)]),
            None => out.push(NONE),
        }
        list(&self.chunk_sums, out);
    }

    /// Reads a summary `to_words` wrote for elements of `elem` bytes from the front of
    /// `words`, returning it and how many words it took.
    pub fn from_words(words: &[u64], elem: usize) -> (Summary, usize) {
        let list = |at: &mut usize| {
            let sums = match words[*at] {
                NONE => None,
                n => Some(words[*at + 1..*at + 1 + n as usize].to_vec()),
            };
            *at += 1 + sums.as_ref().map_or(0, Vec::len);
            sums
        };
        let mut at = 0;
        let sums = list(&mut at);
        let bytes = |w: u64| w.to_ne_bytes()[..elem].to_vec();
        let extremes = match words[at] {
            NONE => None,
            nan => Some(Extremes {
                nan,
                min: bytes(words[at + 1]),
                max: bytes(words[at + 2]),
            }),
        };
        at += 1 + extremes.as_ref().map_or(0, |_| 2);
        let chunk_sums = list(&mut at);
        let summary = Summary {
            sums,
            extremes,
            chunk_sums,
        };
        (summary, at)
    }
}

/// Writes the summaries of a master's tiles (`summaries[i]` for mapping i, blocks cut as
/// `scheme` says) as attributes of its virtual dataset `dset` of element type `dtype`; nothing
/// for what no tile has.
pub fn record(dset: &Dataset, dtype: Dtype, scheme: Scheme, summaries: &[Summary]) -> Result<()> {
    let n = summaries.len() as u64;
    // Every tile's list one after the other, and where each starts.
    let lists = |(first_name, sums_name): (&str, &str),
                 of: &dyn Fn(&Summary) -> &Option<Vec<u64>>| {
        let mut first = vec![0u64];
        let mut sums = Vec::new();
        for s in summaries {
            sums.extend(of(s).iter().flatten());
            first.push(sums.len() as u64);
        }
        dset.write_u64_attribute(first_name, &[n + 1], &first)?;
        if !sums.is_empty() {
            dset.write_u64_attribute(sums_name, &[sums.len() as u64], &sums)?;
        }
        Ok::<(), crate::status::Error>(())
    };
    if summaries.iter().any(|s| s.sums.is_some()) {
        match scheme {
            Scheme::Runs { block } => {
                dset.write_u64_attribute(BLOCK_BYTES_ATTRIBUTE, &[1], &[block])?
            }
            Scheme::Boxes { block, row } => {
                dset.write_u64_attribute(BOXES_ATTRIBUTE, &[2], &[block, row])?
            }
        }
        lists((FIRST_ATTRIBUTE, CHECKSUMS_ATTRIBUTE), &|s| &s.sums)?;
    }
    if summaries.iter().any(|s| s.chunk_sums.is_some()) {
        let names = (CHUNK_FIRST_ATTRIBUTE, CHUNK_CHECKSUMS_ATTRIBUTE);
        lists(names, &|s| &s.chunk_sums)?;
    }
    if summaries.iter().any(|s| s.extremes.is_some()) {
        let elem = dtype.size();
        let (mut min, mut max, mut nan) = (Vec::new(), Vec::new(), Vec::new());
        for s in summaries {
            match &s.extremes {
                Some(e) => {
                    min.extend(&e.min);
                    max.extend(&e.max);
                    nan.push(e.nan);
                }
                None => {
                    min.extend(vec![0u8; elem]);
                    max.extend(vec![0u8; elem]);
                    nan.push(NONE);
                }
            }
        }
        let t = dtype.hdf5_type()?;
        dset.write_attribute(MIN_ATTRIBUTE, &[n], &t, &min)?;
        dset.write_attribute(MAX_ATTRIBUTE, &[n], &t, &max)?;
        dset.write_u64_attribute(NAN_ATTRIBUTE, &[n], &nan)?;
    }
    Ok(())
}

/// The checksums a master records for its tiles: of their blocks, and of compressed tiles'
/// stored chunks.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub scheme: Scheme,
    blocks: Lists,
    chunks: Option<Lists>,
}

/// Every tile's list of checksums, one after the other, and where each starts.
#[derive(Clone, Debug)]
struct Lists {
    first: Vec<u64>,
    sums: Vec<u64>,
}

impl Lists {
    /// The lists `dset` records under these names for `count` tiles; None when absent or
    /// when they do not hang together.
    fn read(
        dset: &impl Attributes,
        (first_name, sums_name): (&str, &str),
        count: usize,
    ) -> Option<Lists> {
        let (_, first) = dset.u64_attribute(first_name)?;
        let sums = dset.u64_attribute(sums_name).map_or(Vec::new(), |(_, v)| v);
        let consistent = first.len() == count + 1
            && first[0] == 0
            && first.windows(2).all(|w| w[0] <= w[1])
            && first[count] == sums.len() as u64;
        consistent.then_some(Lists { first, sums })
    }

    fn tile(&self, i: usize) -> Option<&[u64]> {
        let (a, b) = (self.first[i] as usize, self.first[i + 1] as usize);
        (a < b).then(|| &self.sums[a..b])
    }

    /// The lists of tiles `keep` alone, in that order.
    fn only(&self, keep: &[usize]) -> Lists {
        let mut first = vec![0];
        let mut sums = Vec::new();
        for &i in keep {
            sums.extend_from_slice(self.tile(i).unwrap_or_default());
            first.push(sums.len() as u64);
        }
        Lists { first, sums }
    }
}

impl Recorded {
    /// What `dset` (with `count` mappings) records; None when it records no block checksums
    /// or a record that does not hang together (then nothing is checked, as for a dataset
    /// without). Chunk checksums that do not hang together are left out: the blocks are then
    /// checked.
    pub fn read(dset: &impl Attributes, count: usize) -> Option<Recorded> {
        let scheme = match dset.u64_attribute(BOXES_ATTRIBUTE) {
            Some((_, v)) => match v[..] {
                [block, row] if block > 0 && row > 0 => Scheme::Boxes { block, row },
                _ => return None,
            },
            None => match dset.u64_attribute(BLOCK_BYTES_ATTRIBUTE)?.1[..] {
                [block, ..] if block > 0 => Scheme::Runs { block },
                _ => return None,
            },
        };
        let blocks = Lists::read(dset, (FIRST_ATTRIBUTE, CHECKSUMS_ATTRIBUTE), count)?;
        let chunk_names = (CHUNK_FIRST_ATTRIBUTE, CHUNK_CHECKSUMS_ATTRIBUTE);
        let chunks = Lists::read(dset, chunk_names, count);
        Some(Recorded {
            scheme,
            blocks,
            chunks,
        })
    }

    /// The records of tiles `keep` alone (their places in the master's order), in that order:
    /// a reader of a part of many tiles keeps those it needs.
    pub fn only(&self, keep: &[usize]) -> Recorded {
        Recorded {
            scheme: self.scheme,
            blocks: self.blocks.only(keep),
            chunks: self.chunks.as_ref().map(|c| c.only(keep)),
        }
    }

    /// Tile `i`'s checksums, None when it was not checksummed.
    pub fn tile(&self, i: usize) -> Option<&[u64]> {
        self.blocks.tile(i)
    }

    /// The checksums of compressed tile `i`'s stored chunks, None where not recorded.
    pub fn chunks(&self, i: usize) -> Option<&[u64]> {
        self.chunks.as_ref()?.tile(i)
    }
}

/// The checksum of a chunk as stored: `block_sum` of its bytes, its own name for the record it
/// is checked against.
pub fn stored_sum(stored: &[u8]) -> u64 {
    xxh3::oneshot(stored)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_are_summed_from_the_first_byte() {
        let bytes: Vec<u8> = (0..(2 * BLOCK_BYTES + 5))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let s = Summary::of(Dtype::UInt8, &bytes);
        let sums = s.sums.unwrap();
        assert_eq!(sums.len(), 3);
        assert_eq!(sums[2], block_sum(&bytes[2 * BLOCK_BYTES as usize..]));
        assert_ne!(sums[0], sums[1]);
        let e = s.extremes.unwrap();
        assert_eq!((e.min, e.max), (vec![0], vec![250]));
    }

    #[test]
    fn a_tile_summed_in_pieces_of_any_size_has_the_summary_of_its_bytes_at_once() {
        let block = BLOCK_BYTES as usize;
        let bytes: Vec<u8> = (0..(2 * block + 13))
            .map(|i| (i * 7919 % 65521) as u8)
            .collect();
        // Pieces cutting blocks and elements (8 bytes) anywhere, and a block's exact size.
        for piece in [1, 3, 8, 1000, block - 1, block, block + 5, 3 * block] {
            for dtype in [Dtype::Float64, Dtype::Int16, Dtype::UInt8] {
                let mut summing = Summing::new(dtype, RUNS.grid(&[bytes.len() as u64], 1));
                bytes.chunks(piece).for_each(|p| summing.add(p));
                let n = bytes.len() - bytes.len() % dtype.size();
                let got = summing.finish();
                if dtype == Dtype::UInt8 {
                    assert_eq!(got, Summary::of(dtype, &bytes), "pieces of {piece}");
                } else {
                    // The sums cover every byte; the extremes every whole element.
                    assert_eq!(got.sums, Summary::of(dtype, &bytes).sums, "{piece}");
                    assert_eq!(got.extremes, Summary::of(dtype, &bytes[..n]).extremes);
                }
            }
        }
        let empty = Summing::new(Dtype::Float32, RUNS.grid(&[0], 4)).finish();
        assert_eq!(empty, Summary::of(Dtype::Float32, &[]));
    }

    /// A wide tile summed in pieces of any size: each box's checksum is that of its rows'
    /// bytes gathered in order, as a reader of a box computes it.
    #[test]
    fn a_wide_tile_is_summed_box_by_box_from_pieces_of_any_size() {
        let shape = [300u64, 1500]; // float64 rows of 12000 bytes: boxes of 1024 x 128
        let bytes: Vec<u8> = (0..300 * 1500 * 8u64)
            .map(|i| (i * 2654435761 % 251) as u8)
            .collect();
        let grid = BOXES.grid(&shape, 8);
        assert!(grid.is_boxes());
        let want: Vec<u64> = (0..grid.count())
            .map(|k| {
                let gathered: Vec<u8> = (grid.runs(k).into_iter())
                    .flat_map(|(s, n)| bytes[s as usize..(s + n) as usize].to_vec())
                    .collect();
                block_sum(&gathered)
            })
            .collect();
        assert_eq!(want.len(), 3 * 2);
        for piece in [7, 8192, 12000, 1 << 20, bytes.len()] {
            let mut summing = Summing::new(Dtype::Float64, grid.clone());
            bytes.chunks(piece).for_each(|p| summing.add(p));
            assert_eq!(
                summing.finish().sums.as_ref(),
                Some(&want),
                "pieces of {piece}"
            );
        }
        assert_eq!(block_sums(grid, &bytes), want);
    }

    #[test]
    fn the_checksum_is_xxh3_64_with_seed_0() {
        // Reference values of XXH3-64 (the Python package xxhash gives the same).
        assert_eq!(block_sum(b""), 0x2d06800538d394c2);
        assert_eq!(block_sum(b"a"), 0xe6c632b61e964e1f);
    }

    #[test]
    fn summaries_travel_as_words() {
        let compressed = Summary {
            chunk_sums: Some(vec![5, NONE - 1, 0]),
            ..Summary::of(Dtype::Float32, &[0u8; 8])
        };
        let cases = [
            Summary::of(Dtype::Int16, &[1, 0, 255, 255, 7, 0]),
            Summary::of(Dtype::Complex64, &[0u8; 24]),
            Summary::default(),
            compressed,
        ];
        let mut words = Vec::new();
        for s in &cases {
            s.to_words(&mut words);
        }
        let elems = [2, 8, 8, 4];
        let mut at = 0;
        for (s, elem) in cases.iter().zip(elems) {
            let (got, used) = Summary::from_words(&words[at..], elem);
            assert_eq!(&got, s);
            at += used;
        }
        assert_eq!(at, words.len());
    }
}
