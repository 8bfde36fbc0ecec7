//! Reading compressed tiles h5tile wrote by decoding their chunks itself: the chunks a read
//! touches (or, checked against the master's block checksums, the chunks holding every block
//! it touches) are read from where HDF5 placed them, checked against their stored checksums
//! where the master records them, decoded over the rank's I/O threads a window at a time
//! (memory bounded whatever the read), their blocks checked where asked, and the wanted rows
//! copied out. A chunk that does not match its checksum, does not decode, or decodes to bytes
//! that do not match theirs, is `H5TILE_ERR_CORRUPT` naming the file, the tile and the chunk.

use crate::layout::checksums::block_sum;
use crate::layout::chunks::{decode_chunks, Chunks, Decoders, Stored};
use crate::platform::codecs::Pipeline;
use crate::platform::device::io_threads;
use crate::platform::hdf5::{Dataset, Storage};
use crate::platform::memory::resident;
use crate::status::Result;
use std::path::Path;

/// Bytes of a tile decoded at once, at most (plus the ends of the chunks at its edges). Its
/// blocks are checked after it is decoded, so it should stay in cache: measured on 1 GiB of
/// zstd-compressed tiles, 8 MiB windows read in 0.26-0.31 s where 32 MiB took 0.36-0.43 s
/// (2 threads; 4 and 2 MiB were slower again, decoding too little per thread started).
const WINDOW_BYTES: u64 = 8 << 20;

/// A compressed tile whose chunks h5tile decodes: its file, how it is cut and filtered, and
/// where each chunk is stored.
pub struct CompressedTile {
    file: std::fs::File,
    chunks: Chunks,
    /// Its pipeline's decoders, kept between the windows and reads of this tile.
    decoders: Decoders,
    /// (address, size) of each chunk in the file.
    stored: Vec<(u64, u64)>,
    /// The tile's bytes.
    len: u64,
}

/// Why a compressed tile is not as written.
pub type Damage = String;

/// What a read of a compressed tile checks, from the master's record.
#[derive(Clone, Copy, Default)]
pub struct Sums<'a> {
    /// The checksums of the tile's uncompressed blocks, and the block size: every block the
    /// read touches is decoded whole and checked.
    pub blocks: Option<(&'a [u64], u64)>,
    /// The checksums of the tile's stored chunks: every chunk read is checked before it is
    /// decoded.
    pub chunks: Option<&'a [u64]>,
}

impl CompressedTile {
    /// Under the HDF5 lock: `dset` (in the file at `path`), the source of a tile of `shape`
    /// with elements of `elem` bytes, as a compressed tile h5tile decodes; Ok(None) when it is
    /// not one (contiguous, or chunked or filtered otherwise: HDF5 reads it), Err when its
    /// chunks are not all stored as h5tile writes them.
    pub fn open(
        dset: &Dataset,
        path: &Path,
        shape: &[u64],
        elem: usize,
    ) -> Result<std::result::Result<Option<CompressedTile>, Damage>> {
        let Storage::Chunked(chunk) = dset.storage()? else {
            return Ok(Ok(None));
        };
        let filters = dset.create_plist()?.filters()?;
        let (Some(chunks), Some(pipeline)) = (
            Chunks::of_stored(shape, &chunk, elem),
            Pipeline::from_filters(&filters),
        ) else {
            return Ok(Ok(None));
        };
        let mut stored = Vec::with_capacity(chunks.count() as usize);
        for i in 0..chunks.count() {
            match dset.stored_chunk(&chunks.offset(i))? {
                Some(c) if c.filter_mask == 0 => stored.push((c.addr, c.size)),
                Some(c) => {
                    return Ok(Err(format!(
                        "chunk {i} is marked as stored without some of its filters (mask {:#x}), \
                         which h5tile never writes",
                        c.filter_mask
                    )))
                }
                None => return Ok(Err(format!("chunk {i} was never written"))),
            }
        }
        let file = match std::fs::File::open(path) {
            Ok(file) => file,
            Err(e) => return Ok(Err(format!("cannot be read ({e})"))),
        };
        let len = shape.iter().product::<u64>() * elem as u64;
        Ok(Ok(Some(CompressedTile {
            file,
            chunks,
            decoders: Decoders::new(pipeline),
            stored,
            len,
        })))
    }

    /// Reads the tile's bytes that `runs` name, each (its first byte in the tile, its first
    /// byte in `out`, length) as `layout::runs::box_runs` gives them (rows consecutive in both
    /// joined, so that a box of whole rows is one run, decoded straight into `out`), in
    /// increasing order of the first: the chunks they touch checked as `sums` says, decoded
    /// (where copied, or their blocks checked), and copied into `out` when given (else only
    /// checked). Why not, for a damaged tile.
    pub fn read(
        &self,
        runs: &[(u64, u64, usize)],
        sums: Sums,
        mut out: Option<&mut [u8]>,
    ) -> std::result::Result<(), Damage> {
        if runs.iter().all(|r| r.2 == 0) {
            return Ok(());
        }
        if let Some((sums, block)) = sums.blocks {
            if sums.len() as u64 != self.len.div_ceil(block) {
                return Err(format!(
                    "the master records {} checksums for the tile's {} bytes",
                    sums.len(),
                    self.len
                ));
            }
        }
        if let Some(chunk_sums) = sums.chunks {
            if chunk_sums.len() as u64 != self.chunks.count() {
                return Err(format!(
                    "the master records {} chunk checksums for the tile's {} chunks",
                    chunk_sums.len(),
                    self.chunks.count()
                ));
            }
        }
        // zstd's frame checksums may be skipped where the stored chunks are checked, or where
        // every decoded byte is checked against the blocks' and delivered from here; where only
        // the blocks are checked (HDF5 then decodes the same chunks itself, frame checksums
        // included), a damaged one must be found here too.
        let frame_checksums = !(sums.chunks.is_some() || (sums.blocks.is_some() && out.is_some()));
        // Checked against the stored chunks' checksums alone, nothing needs decoding.
        let decoding = out.is_some() || sums.blocks.is_some();
        // What must be decoded whole: the blocks checked, else the chunks read.
        let unit_of = |byte: u64| match sums.blocks {
            Some((_, block)) => {
                let b = byte / block;
                (b * block, ((b + 1) * block).min(self.len))
            }
            None => {
                let i = self.chunks.covering(byte, byte + 1).start;
                let (start, len) = self.chunks.range(i);
                (start, start + len)
            }
        };
        let mut windows: Vec<(u64, u64)> = Vec::new();
        for &(s, _, n) in runs {
            let mut at = s;
            while at < s + n as u64 {
                let (lo, hi) = unit_of(at);
                match windows.last_mut() {
                    Some(w) if w.1 == lo && hi - w.0 <= WINDOW_BYTES => w.1 = hi,
                    Some(w) if w.1 >= hi => {}
                    _ => windows.push((lo, hi)),
                }
                at = hi;
            }
        }
        let mut next = 0usize;
        let mut decoded: Vec<u8> = Vec::new();
        for (lo, hi) in windows {
            let which = self.chunks.covering(lo, hi);
            let base = self.chunks.range(which.start).0;
            let (last, last_len) = self.chunks.range(which.end - 1);
            let end = last + last_len;
            // Chunks that all fall in one run the caller wants are decoded straight into its
            // buffer (a whole-tile read: every window), and checked there: no copy.
            let within = match out.as_deref_mut() {
                Some(out) => runs[next..]
                    .iter()
                    .take_while(|r| r.0 < end)
                    .find(|r| r.0 <= base && end <= r.0 + r.2 as u64)
                    .map(|&(s, d, _)| {
                        let at = (d + (base - s)) as usize;
                        &mut out[at..at + (end - base) as usize]
                    }),
                None => None,
            };
            let direct = within.is_some();
            // Streamed around the cache where the caller's pages are in memory already; a fresh
            // buffer's pages are zeroed into the cache as the first stores fault them in, and
            // plain stores then land there (`resident`). Asked before any of the window is
            // written, so that no page faulted in by a neighbouring chunk counts.
            let streaming = within.as_deref().is_some_and(resident);
            let mut target = match within {
                Some(target) => Some(target),
                None if decoding => {
                    decoded.resize((end - base) as usize, 0);
                    Some(&mut decoded[..])
                }
                None => None,
            };
            let threads = io_threads().min((which.end - which.start) as usize);
            decode_chunks(
                &self.file,
                &self.chunks,
                &self.decoders,
                Stored {
                    places: &self.stored,
                    sums: sums.chunks,
                },
                which.clone(),
                target.as_deref_mut(),
                threads,
                frame_checksums,
                // Straight into the caller's buffer: not read back soon (but for checking its
                // blocks just below, which costs less than the stores' reads of each line).
                streaming,
            )
            .map_err(|(i, why)| {
                let (start, len) = self.chunks.range(i);
                format!(
                    "chunk {i} (the tile's bytes {start}..{}): {why}",
                    start + len
                )
            })?;
            if let (Some((sums, block)), Some(target)) = (sums.blocks, &target) {
                for b in lo / block..hi.div_ceil(block) {
                    let (from, to) = (b * block, ((b + 1) * block).min(self.len));
                    let bytes = &target[(from - base) as usize..(to - base) as usize];
                    if block_sum(bytes) != sums[b as usize] {
                        let chunks = self.chunks.covering(from, to);
                        return Err(format!(
                            "bytes {from}..{to} of the tile (decoded from chunk {} to chunk {}) do \
                             not match their checksum",
                            chunks.start,
                            chunks.end - 1
                        ));
                    }
                }
            }
            let Some(out) = out.as_deref_mut().filter(|_| !direct) else {
                // Decoded in place: the runs that end within it are done.
                while next < runs.len() && runs[next].0 + runs[next].2 as u64 <= hi {
                    next += 1;
                }
                continue;
            };
            // The runs, or their parts, within this window.
            while next < runs.len() && runs[next].0 < hi {
                let (s, d, n) = runs[next];
                let stop = s + n as u64;
                let (from, to) = (s.max(lo), stop.min(hi));
                let into = (d + (from - s)) as usize;
                out[into..into + (to - from) as usize]
                    .copy_from_slice(&decoded[(from - base) as usize..(to - base) as usize]);
                if stop > hi {
                    break;
                }
                next += 1;
            }
        }
        Ok(())
    }
}
