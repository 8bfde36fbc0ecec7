//! Checksums of every tile's bytes, per block, recorded in the master when the tile is
//! written and checked when it is read: a flipped bit, a truncated or swapped tile file is an
//! error naming the file, the tile and the byte range, not garbage returned as data.
//!
//! A tile's bytes (its contiguous dataset's storage, the tile's elements in row-major order)
//! are cut into blocks of `BLOCK_BYTES` from the first; each block's checksum is XXH3-64 with
//! seed 0 (`xxhash.xxh3_64_intdigest` in Python). A read checks only the blocks it touches.
//!
//! What the master's virtual dataset carries, as attributes (README, "Checksums in the master";
//! in the single-file layout the dataset itself, with `single::TILES_ATTRIBUTE` naming its tiles):
//! - `h5tile_checksum_block_bytes` (uint64, 1): the block size;
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

use super::extremes::{Accumulator, Extremes};
use crate::dtype::Dtype;
use crate::platform::hdf5::{Attributes, Dataset};
use crate::platform::xxh3;
use crate::status::Result;

/// Bytes per checksummed block.
pub(crate) const BLOCK_BYTES: u64 = 1 << 20;

pub const BLOCK_BYTES_ATTRIBUTE: &str = "h5tile_checksum_block_bytes";
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
/// compat path's staging buffers, whose pieces need not end on a block or an element).
pub struct Summing {
    elem: usize,
    sums: Vec<u64>,
    block: BlockSum,
    /// Bytes of the current block summed so far.
    in_block: usize,
    extremes: Option<Accumulator>,
    /// The start of an element cut by the end of the last piece.
    carry: Vec<u8>,
}

impl Summing {
    pub fn new(dtype: Dtype) -> Summing {
        Summing {
            elem: dtype.size(),
            sums: Vec::new(),
            block: BlockSum::new(),
            in_block: 0,
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
        while !bytes.is_empty() {
            let take = (BLOCK_BYTES as usize - self.in_block).min(bytes.len());
            self.block.add(&bytes[..take]);
            self.in_block += take;
            bytes = &bytes[take..];
            if self.in_block == BLOCK_BYTES as usize {
                self.sums.push(self.block.finish());
                self.block = BlockSum::new();
                self.in_block = 0;
            }
        }
    }

    pub fn finish(mut self) -> Summary {
        if self.in_block > 0 {
            self.sums.push(self.block.finish());
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
    /// The summary of a tile's `bytes`, elements of `dtype`: one pass, block by block, each
    /// block's extremes taken while it is still in the cache from being summed.
    pub fn of(dtype: Dtype, bytes: &[u8]) -> Summary {
        let mut summing = Summing::new(dtype);
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

/// Writes the summaries of a master's tiles (`summaries[i]` for mapping i) as attributes of
/// its virtual dataset `dset` of element type `dtype`; nothing for what no tile has.
pub fn record(dset: &Dataset, dtype: Dtype, summaries: &[Summary]) -> Result<()> {
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
        dset.write_u64_attribute(BLOCK_BYTES_ATTRIBUTE, &[1], &[BLOCK_BYTES])?;
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
    pub block: u64,
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
        let (_, block) = dset.u64_attribute(BLOCK_BYTES_ATTRIBUTE)?;
        let block = *block.first()?;
        let blocks = Lists::read(dset, (FIRST_ATTRIBUTE, CHECKSUMS_ATTRIBUTE), count)?;
        let chunk_names = (CHUNK_FIRST_ATTRIBUTE, CHUNK_CHECKSUMS_ATTRIBUTE);
        let chunks = Lists::read(dset, chunk_names, count);
        (block > 0).then_some(Recorded {
            block,
            blocks,
            chunks,
        })
    }

    /// The records of tiles `keep` alone (their places in the master's order), in that order:
    /// a reader of a part of many tiles keeps those it needs.
    pub fn only(&self, keep: &[usize]) -> Recorded {
        Recorded {
            block: self.block,
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
                let mut summing = Summing::new(dtype);
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
        let empty = Summing::new(Dtype::Float32).finish();
        assert_eq!(empty, Summary::of(Dtype::Float32, &[]));
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
