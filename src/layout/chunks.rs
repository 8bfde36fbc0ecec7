//! Compressed tiles: how a tile is cut into chunks, and its chunks encoded over several
//! threads.
//!
//! A compressed tile is a chunked dataset whose chunks are each a run of the tile's bytes in
//! row-major order: a chunk spans whole extents of the last dimensions, a stretch of one
//! dimension ("the axis"), and one index of each dimension before it. Chunk i then holds the
//! tile's bytes `range(i)`, the chunks one after the other cover the tile, and a read of any
//! byte range (checksum blocks, rows of a box) knows at once which chunks to decode. A chunk
//! at the end of the axis holds fewer rows; HDF5 stores it padded to the chunk's shape, with
//! zeros here.

use super::checksums::{stored_sum, Summary, Summing, RUNS};
use crate::dtype::Dtype;
use crate::platform::codecs::{Decoder, Pipeline};
use crate::platform::device::{copy_to_host, Buffer};
use crate::status::{fail, Result, H5TILE_ERR_HDF5};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::Mutex;

/// The uncompressed bytes a chunk holds at most: large enough for the codecs to find what
/// repeats, small enough that a read of a few elements decodes little and that every thread
/// holds a few at once.
pub(crate) const CHUNK_BYTES: u64 = 1 << 20;

/// How a tile of `shape` with elements of `elem` bytes is cut into chunks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chunks {
    /// The chunks' shape (HDF5's chunk dimensions).
    pub shape: Vec<u64>,
    tile: Vec<u64>,
    axis: usize,
    /// Bytes of one index of the axis (the extents after it, whole).
    row: u64,
    /// Chunks along the axis.
    along: u64,
}

impl Chunks {
    /// Chunks of at most `target` bytes (or one index of the last dimension, if larger) of a
    /// non-empty tile of `shape`.
    pub fn new(shape: &[u64], elem: usize, target: u64) -> Chunks {
        let n = shape.len();
        // The first axis whose following extents fit in a chunk whole.
        let mut axis = n - 1;
        let mut after = elem as u64;
        while axis > 0 && after.saturating_mul(shape[axis]) <= target {
            after *= shape[axis];
            axis -= 1;
        }
        let rows = (target / after).clamp(1, shape[axis]);
        let mut chunk = vec![1u64; n];
        chunk[axis] = rows;
        chunk[axis + 1..].copy_from_slice(&shape[axis + 1..]);
        Chunks {
            shape: chunk,
            tile: shape.to_vec(),
            axis,
            row: after,
            along: shape[axis].div_ceil(rows),
        }
    }

    /// The chunks of a tile of `shape` stored in chunks of shape `chunk`, when each chunk is
    /// a run of the tile's bytes as `new` makes them (ones, then a stretch of one axis, then
    /// whole extents); None otherwise (a file another program wrote).
    pub fn of_stored(shape: &[u64], chunk: &[u64], elem: usize) -> Option<Chunks> {
        let n = shape.len();
        if n == 0 || chunk.len() != n || chunk.iter().zip(shape).any(|(&c, &s)| c == 0 || c > s) {
            return None;
        }
        // The axis: the last dimension whose chunk extent is not the whole of it, else the
        // first dimension.
        let axis = (0..n).rev().find(|&d| chunk[d] != shape[d]).unwrap_or(0);
        if chunk[..axis].iter().any(|&c| c != 1) {
            return None;
        }
        let row = shape[axis + 1..]
            .iter()
            .try_fold(elem as u64, |acc, &s| acc.checked_mul(s))?;
        Some(Chunks {
            shape: chunk.to_vec(),
            tile: shape.to_vec(),
            axis,
            row,
            along: shape[axis].div_ceil(chunk[axis]),
        })
    }

    /// How many chunks the tile has.
    pub fn count(&self) -> u64 {
        self.tile[..self.axis].iter().product::<u64>() * self.along
    }

    /// Bytes of a whole chunk, as HDF5 stores the ones at the end of the axis too.
    pub fn chunk_bytes(&self) -> usize {
        (self.shape[self.axis] * self.row) as usize
    }

    /// Bytes of the axis's whole extent, for one index of the dimensions before it.
    fn span(&self) -> u64 {
        self.tile[self.axis] * self.row
    }

    /// Chunk `i`'s bytes in the tile: (first byte, length).
    pub fn range(&self, i: u64) -> (u64, u64) {
        let (outer, k) = (i / self.along, i % self.along);
        let rows = self.shape[self.axis];
        let first = k * rows;
        let len = rows.min(self.tile[self.axis] - first) * self.row;
        (outer * self.span() + first * self.row, len)
    }

    /// Chunk `i`'s place in the tile: the coordinates of its first element.
    pub fn offset(&self, i: u64) -> Vec<u64> {
        let (mut outer, k) = (i / self.along, i % self.along);
        let mut at = vec![0u64; self.tile.len()];
        at[self.axis] = k * self.shape[self.axis];
        for d in (0..self.axis).rev() {
            at[d] = outer % self.tile[d];
            outer /= self.tile[d];
        }
        at
    }

    /// The chunks holding the tile's bytes `[start, end)` (non-empty, within the tile).
    pub fn covering(&self, start: u64, end: u64) -> std::ops::Range<u64> {
        let at = |byte: u64| {
            let (outer, within) = (byte / self.span(), byte % self.span());
            outer * self.along + within / (self.shape[self.axis] * self.row)
        };
        at(start)..at(end - 1) + 1
    }
}

/// Encodes the chunks of a tile of `dtype` whose bytes are `buf` (host or device memory)
/// through `pipeline`, on `threads` threads, and hands each to `store` (chunk index, stored
/// bytes) on the calling thread, in order; returns the tile's summary, taken from its bytes
/// in order on one more thread, with each stored chunk's checksum (taken by its encoder while
/// the chunk is in its cache). At most a few chunks per thread are held at
/// once, in buffers used again and again (a fresh 1 MiB buffer a chunk costs its page faults
/// and zeroing, as much as the shuffle). A failure of `store` or of a codec stops the others
/// and is returned.
pub fn encode_tile(
    chunks: &Chunks,
    pipeline: &Pipeline,
    dtype: Dtype,
    buf: Buffer,
    threads: usize,
    store: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<Summary> {
    let all = 0..chunks.count();
    encode_chunks(chunks, all, pipeline, dtype, buf, threads, store)
}

/// Encodes the chunks `which` of a tile as `encode_tile` encodes them all, `buf` holding the
/// tile's bytes from the first of them's first byte to the last one's end (a part of a large
/// dataset read at a time); the summary is of those bytes.
pub fn encode_chunks(
    chunks: &Chunks,
    which: std::ops::Range<u64>,
    pipeline: &Pipeline,
    dtype: Dtype,
    buf: Buffer,
    threads: usize,
    mut store: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<Summary> {
    let threads = threads.max(1);
    if threads == 1 {
        return encode_inline(chunks, which, pipeline, dtype, buf, store);
    }
    let base = chunks.range(which.start).0;
    let (mut due, first) = (which.start, which.start);
    let count = (which.end - which.start) as usize;
    let (to_encode, work) = sync_channel::<(u64, Raw)>(threads);
    let work = Mutex::new(work);
    let (to_store, stored) =
        sync_channel::<std::result::Result<(u64, Vec<u8>, u64), String>>(threads);
    let stop = AtomicBool::new(false);
    let full = chunks.chunk_bytes();
    let (raw_pool, out_pool) = (Pool::default(), Pool::default());
    std::thread::scope(|scope| {
        // The tile's bytes in order, one chunk at a time: summed, then handed to the encoders.
        // Host chunks are encoded where they lie; device ones, and a last chunk HDF5 stores
        // padded, are copied out first.
        let reader = scope.spawn(|| -> Result<Summary> {
            let mut summing = Summing::new(dtype, runs_of(chunks, &which));
            for i in which {
                let (start, len) = chunks.range(i);
                let (start, len) = ((start - base) as usize, len as usize);
                let raw = raw_chunk(buf, (start, len), full, || raw_pool.take(full))?;
                summing.add(&raw.bytes()[..len]);
                if stop.load(Ordering::Relaxed) || to_encode.send((i, raw)).is_err() {
                    break;
                }
            }
            drop(to_encode);
            Ok(summing.finish())
        });
        for _ in 0..threads {
            let to_store = to_store.clone();
            let (work, stop, raw_pool, out_pool) = (&work, &stop, &raw_pool, &out_pool);
            scope.spawn(move || {
                let mut encoder = pipeline.encoder();
                while let Some((i, raw)) = next(work) {
                    let mut out = out_pool.take(0);
                    let encoded = encoder.encode(raw.bytes(), &mut out).map(|()| {
                        let sum = stored_sum(&out);
                        (i, out, sum)
                    });
                    if let Raw::Copied(buffer) = raw {
                        raw_pool.give(buffer);
                    }
                    let failed = encoded.is_err();
                    if to_store.send(encoded).is_err() || failed {
                        stop.store(true, Ordering::Relaxed);
                        break;
                    }
                }
            });
        }
        drop(to_store);
        let mut outcome = Ok(());
        // Chunks are stored in the tile's order, whichever encoder finishes first: HDF5 puts
        // each where the file ends, so the file holds them in order (read front to back). At
        // most one chunk an encoder waits here.
        let mut waiting: BTreeMap<u64, Vec<u8>> = BTreeMap::new();
        let mut sums = vec![0u64; count];
        for encoded in stored.iter() {
            let done = match encoded {
                Ok((i, bytes, sum)) => {
                    waiting.insert(i, bytes);
                    sums[(i - first) as usize] = sum;
                    let mut done = Ok(());
                    while done.is_ok() {
                        let Some(bytes) = waiting.remove(&due) else {
                            break;
                        };
                        done = store(due, &bytes);
                        out_pool.give(bytes);
                        due += 1;
                    }
                    done
                }
                Err(why) => fail(H5TILE_ERR_HDF5, format!("cannot compress a chunk ({why})")),
            };
            if let Err(e) = done {
                outcome = Err(e);
                break;
            }
        }
        if outcome.is_err() {
            stop.store(true, Ordering::Relaxed);
            // Unblocks the encoders: they find no one to store for.
            drop(stored);
            // And the reader: nothing takes its chunks any more.
            *work.lock().unwrap_or_else(|p| p.into_inner()) = sync_channel(0).1;
        }
        let summary = reader
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
        outcome.and(summary).map(|summary| Summary {
            chunk_sums: Some(sums),
            ..summary
        })
    })
}

/// The blocks of the bytes of chunks `which`, summed one after the other: runs.
fn runs_of(chunks: &Chunks, which: &std::ops::Range<u64>) -> crate::layout::blocks::BlockGrid {
    let len: u64 = which.clone().map(|i| chunks.range(i).1).sum();
    RUNS.grid(&[len], 1)
}

/// `encode_chunks` on the calling thread alone: with one thread a rank (a core each), handing
/// chunks between a reader, an encoder and this thread only adds switches between them.
fn encode_inline(
    chunks: &Chunks,
    which: std::ops::Range<u64>,
    pipeline: &Pipeline,
    dtype: Dtype,
    buf: Buffer,
    mut store: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<Summary> {
    let base = chunks.range(which.start).0;
    let full = chunks.chunk_bytes();
    let mut summing = Summing::new(dtype, runs_of(chunks, &which));
    let mut encoder = pipeline.encoder();
    let (mut spare, mut out) = (Vec::new(), Vec::new());
    let mut sums = Vec::with_capacity((which.end - which.start) as usize);
    for i in which {
        let (start, len) = chunks.range(i);
        let (start, len) = ((start - base) as usize, len as usize);
        let raw = raw_chunk(buf, (start, len), full, || std::mem::take(&mut spare))?;
        summing.add(&raw.bytes()[..len]);
        if let Err(why) = encoder.encode(raw.bytes(), &mut out) {
            return fail(H5TILE_ERR_HDF5, format!("cannot compress a chunk ({why})"));
        }
        if let Raw::Copied(buffer) = raw {
            spare = buffer;
        }
        sums.push(stored_sum(&out));
        store(i, &out)?;
    }
    Ok(Summary {
        chunk_sums: Some(sums),
        ..summing.finish()
    })
}

/// The bytes `start..start + len` of the tile in `buf` as an encoder takes them: where they
/// lie in a host buffer, else (a device buffer's, or a last chunk HDF5 stores padded to `full`
/// bytes) copied into a buffer from `take`, zero-padded.
fn raw_chunk<'a>(
    buf: Buffer<'a>,
    (start, len): (usize, usize),
    full: usize,
    take: impl FnOnce() -> Vec<u8>,
) -> Result<Raw<'a>> {
    Ok(match buf {
        Buffer::Host(bytes) if len == full => Raw::Host(&bytes[start..start + len]),
        Buffer::Host(bytes) => {
            let mut padded = take();
            padded.resize(full, 0);
            padded[..len].copy_from_slice(&bytes[start..start + len]);
            padded[len..].fill(0);
            Raw::Copied(padded)
        }
        Buffer::Device(ptr, _) => {
            let mut copied = take();
            copied.resize(full, 0);
            copy_to_host(&mut copied[..len], ptr.offset(start))?;
            copied[len..].fill(0);
            Raw::Copied(copied)
        }
    })
}

/// A chunk's bytes on their way to an encoder: where they lie in the caller's host buffer, or
/// a copy.
enum Raw<'a> {
    Host(&'a [u8]),
    Copied(Vec<u8>),
}

impl Raw<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Raw::Host(bytes) => bytes,
            Raw::Copied(buffer) => buffer,
        }
    }
}

/// Buffers of one kind, handed back after use and taken again.
#[derive(Default)]
struct Pool(Mutex<Vec<Vec<u8>>>);

impl Pool {
    /// A buffer of `len` bytes (what it held before is left in it), from the pool if it has one.
    fn take(&self, len: usize) -> Vec<u8> {
        let mut buffer = self
            .0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .pop()
            .unwrap_or_default();
        buffer.resize(len, 0);
        buffer
    }

    fn give(&self, buffer: Vec<u8>) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(buffer);
    }
}

/// The next chunk to encode, shared out among the encoders.
fn next<'a>(work: &Mutex<Receiver<(u64, Raw<'a>)>>) -> Option<(u64, Raw<'a>)> {
    work.lock().ok()?.recv().ok()
}

/// Decoders of one pipeline with their buffers, kept between calls of `decode_chunks` (a read
/// decodes a tile window by window): making them anew each time costs a codec context and
/// fresh pages for megabytes of scratch, which cost more than decoding here.
pub struct Decoders {
    pipeline: Pipeline,
    idle: Mutex<Vec<DecoderState>>,
}

/// A decoder, and its buffers for a stored chunk and a whole decoded one.
type DecoderState = (Decoder, Vec<u8>, Vec<u8>);

impl Decoders {
    pub fn new(pipeline: Pipeline) -> Decoders {
        Decoders {
            pipeline,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn take(&self) -> DecoderState {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        idle.unwrap_or_else(|| (self.pipeline.decoder(), Vec::new(), Vec::new()))
    }

    fn give(&self, state: DecoderState) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(state);
    }
}

/// Where a tile's chunks are stored in its file, and what they sum to when recorded.
#[derive(Clone, Copy)]
pub struct Stored<'a> {
    /// (address, size) of each chunk in the file.
    pub places: &'a [(u64, u64)],
    /// Each stored chunk's checksum (`stored_sum`), where the master records them.
    pub sums: Option<&'a [u64]>,
}

/// Reads the chunks `which` of a tile (stored through the pipeline of `decoders`, in `file`
/// where `stored` says), checks each against its stored checksum where `stored` has them, and
/// decodes them into `out` when given, which receives the tile's bytes from the first of
/// those chunks' first byte to the last one's end; over `threads` threads. `frame_checksums`:
/// whether the codec checks its own checksums (zstd's frames) as it decodes; not needed where
/// the stored chunks, or the decoded bytes, are checked against h5tile's. `streaming`: `out`
/// is a large read's buffer, written around the cache (`Decoder::decode_streaming`). A chunk
/// that cannot be read, does not match its checksum or cannot be decoded is returned with why
/// (the lowest such).
#[allow(clippy::too_many_arguments)]
pub fn decode_chunks(
    file: &std::fs::File,
    chunks: &Chunks,
    decoders: &Decoders,
    stored: Stored,
    which: std::ops::Range<u64>,
    out: Option<&mut [u8]>,
    threads: usize,
    frame_checksums: bool,
    streaming: bool,
) -> std::result::Result<(), (u64, String)> {
    // Each chunk's place in `out`, in order (none: checked only).
    let base = chunks.range(which.start).0;
    let mut parts: Vec<(u64, Option<&mut [u8]>)> = Vec::new();
    let mut rest = out;
    let mut next = base;
    for i in which.clone() {
        let (start, len) = chunks.range(i);
        debug_assert_eq!(start, next, "the chunks are one run of the tile's bytes");
        next = start + len;
        let part = match rest.take() {
            Some(all) => {
                let (part, tail) = all.split_at_mut(len as usize);
                rest = Some(tail);
                Some(part)
            }
            None => None,
        };
        parts.push((i, part));
    }
    let full = chunks.chunk_bytes();
    // One thread's share: each chunk read, checked, then decoded into its place.
    let decode_each = |(decoder, packed, whole): &mut DecoderState,
                       mine: &mut [(u64, Option<&mut [u8]>)]|
     -> std::result::Result<(), (u64, String)> {
        for (i, part) in mine.iter_mut() {
            let (addr, size) = stored.places[*i as usize];
            packed.resize(size as usize, 0);
            std::os::unix::fs::FileExt::read_exact_at(file, packed, addr).map_err(|e| {
                (
                    *i,
                    format!("its {size} bytes at byte {addr} cannot be read ({e})"),
                )
            })?;
            if let Some(sums) = stored.sums {
                if stored_sum(packed) != sums[*i as usize] {
                    let why = format!(
                        "its {size} bytes stored at byte {addr} do not match their checksum"
                    );
                    return Err((*i, why));
                }
            }
            let fail = |why: String| (*i, format!("cannot be decoded: {why}"));
            match part {
                None => {}
                Some(part) if part.len() == full && streaming => {
                    decoder.decode_streaming(packed, part).map_err(fail)?
                }
                Some(part) if part.len() == full => decoder.decode(packed, part).map_err(fail)?,
                Some(part) => {
                    // Decoded whole, then copied from: kept in cache.
                    whole.resize(full, 0);
                    decoder.decode(packed, whole).map_err(fail)?;
                    part.copy_from_slice(&whole[..part.len()]);
                }
            }
        }
        Ok(())
    };
    let decode = |mine: &mut [(u64, Option<&mut [u8]>)]| -> std::result::Result<(), (u64, String)> {
        let mut state = decoders.take();
        let outcome = match state.0.check_frame_checksums(frame_checksums) {
            Ok(()) => decode_each(&mut state, mine),
            Err(why) => Err((mine.first().map_or(which.start, |p| p.0), why)),
        };
        decoders.give(state);
        outcome
    };
    let per_thread = parts.len().div_ceil(threads.max(1)).max(1);
    // All on one thread: this one, not a thread started for it.
    if per_thread >= parts.len() {
        return decode(&mut parts);
    }
    let failures: Vec<(u64, String)> = std::thread::scope(|scope| {
        let workers: Vec<_> = parts
            .chunks_mut(per_thread)
            .map(|mine| scope.spawn(|| decode(mine)))
            .collect();
        workers
            .into_iter()
            .filter_map(|w| {
                w.join()
                    .unwrap_or_else(|p| std::panic::resume_unwind(p))
                    .err()
            })
            .collect()
    });
    match failures.into_iter().min_by_key(|f| f.0) {
        Some(first) => Err(first),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::codecs::{Codec, Compression};

    #[test]
    fn chunks_are_runs_of_the_tile_s_bytes_one_after_the_other() {
        for (shape, elem, target) in [
            (vec![1000u64, 1000], 8usize, 1u64 << 20),
            (vec![10_000_000], 8, 1 << 20),
            (vec![7, 5, 3], 4, 64),
            (vec![7, 5, 3], 4, 4),
            (vec![7, 5, 3], 4, 1 << 20),
            (vec![3, 100_000_000], 8, 1 << 20),
            (vec![2, 3, 4, 5], 2, 50),
        ] {
            let c = Chunks::new(&shape, elem, target);
            let tile_bytes = shape.iter().product::<u64>() * elem as u64;
            assert!(
                c.chunk_bytes() as u64 <= target.max(*shape.last().unwrap() * elem as u64),
                "{shape:?} {target}: {c:?}"
            );
            assert!(c.shape.iter().zip(&shape).all(|(a, b)| a <= b && *a >= 1));
            let mut next = 0;
            for i in 0..c.count() {
                let (start, len) = c.range(i);
                assert_eq!(start, next, "{shape:?} chunk {i}");
                assert!(len > 0 && len <= c.chunk_bytes() as u64);
                // The chunk's first element is the byte it starts at.
                let at = c.offset(i);
                let mut linear = 0u64;
                for (d, &x) in at.iter().enumerate() {
                    linear = linear * shape[d] + x;
                }
                assert_eq!(linear * elem as u64, start, "{shape:?} chunk {i} at {at:?}");
                assert_eq!(c.covering(start, start + len), i..i + 1);
                next = start + len;
            }
            assert_eq!(next, tile_bytes, "{shape:?}");
            assert_eq!(c.covering(0, tile_bytes), 0..c.count());
        }
        // A small tile is one chunk; a large 2-D one, whole rows of about a MiB.
        assert_eq!(Chunks::new(&[6, 5], 8, 1 << 20).shape, [6, 5]);
        assert_eq!(Chunks::new(&[1000, 1000], 8, 1 << 20).shape, [131, 1000]);
        assert_eq!(Chunks::new(&[10, 1 << 20], 8, 1 << 20).shape, [1, 131_072]);
    }

    /// Every chunk of the float64 tile `bytes` encoded through `p` on `threads` threads, by
    /// index, and the summary.
    fn encode_all(
        chunks: &Chunks,
        p: &Pipeline,
        bytes: &[u8],
        threads: usize,
    ) -> (Vec<Option<Vec<u8>>>, Summary) {
        let mut got: Vec<Option<Vec<u8>>> = vec![None; chunks.count() as usize];
        let buf = Buffer::Host(bytes);
        let summary = encode_tile(chunks, p, Dtype::Float64, buf, threads, |i, s| {
            got[i as usize] = Some(s.to_vec());
            Ok(())
        })
        .unwrap();
        (got, summary)
    }

    /// Chunks are stored in the tile's order however the encoders finish: here every other
    /// chunk is noise (slow to compress) and the others zeros.
    #[test]
    fn chunks_are_stored_in_order_whichever_encoder_finishes_first() {
        let chunks = Chunks::new(&[64, 16384], 8, 16384 * 8);
        let mut x = 0x9e3779b97f4a7c15u64;
        let bytes: Vec<u8> = (0..64 * 16384u64)
            .flat_map(|k| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let v = if (k / 16384) % 2 == 0 { x } else { 0 };
                v.to_ne_bytes()
            })
            .collect();
        let p = Compression::new(Codec::Zstd, 9, false).unwrap().pipeline(8);
        let mut order = Vec::new();
        encode_tile(
            &chunks,
            &p,
            Dtype::Float64,
            Buffer::Host(&bytes),
            4,
            |i, _| {
                order.push(i);
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(order, (0..64).collect::<Vec<u64>>());
    }

    #[test]
    fn a_tile_s_chunks_encode_to_what_decodes_back_and_its_summary_is_its_bytes_summary() {
        let values: Vec<f64> = (0..300_000).map(|i| (i % 1000) as f64).collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        let chunks = Chunks::new(&[600, 500], 8, 100_000);
        let p = Compression::new(Codec::Lz4, 0, true).unwrap().pipeline(8);
        for threads in [1, 3] {
            let (got, summary) = encode_all(&chunks, &p, &bytes, threads);
            // The summary of its bytes, and the checksum of each chunk as stored.
            let stored: Vec<u64> = got
                .iter()
                .map(|s| stored_sum(s.as_ref().unwrap()))
                .collect();
            let want = Summary {
                chunk_sums: Some(stored),
                ..Summary::of(Dtype::Float64, &bytes)
            };
            assert_eq!(summary, want);
            let mut dec = p.decoder();
            let mut back = Vec::new();
            for (i, stored) in got.iter().enumerate() {
                let mut out = vec![0u8; chunks.chunk_bytes()];
                dec.decode(stored.as_ref().unwrap(), &mut out).unwrap();
                let (_, len) = chunks.range(i as u64);
                back.extend_from_slice(&out[..len as usize]);
            }
            assert!(back == bytes);
        }
        // Some of the chunks, from their bytes alone, encode as they do in the whole tile.
        let (whole, _) = encode_all(&chunks, &p, &bytes, 2);
        let which = 1..4;
        let (start, _) = chunks.range(which.start);
        let (last, len) = chunks.range(which.end - 1);
        let part = &bytes[start as usize..(last + len) as usize];
        let mut got = Vec::new();
        let summary = encode_chunks(
            &chunks,
            which.clone(),
            &p,
            Dtype::Float64,
            Buffer::Host(part),
            2,
            |i, s| {
                got.push((i, s.to_vec()));
                Ok(())
            },
        )
        .unwrap();
        let want: Vec<(u64, Vec<u8>)> = which
            .map(|i| (i, whole[i as usize].clone().unwrap()))
            .collect();
        assert!(got == want);
        let want = Summary {
            chunk_sums: Some(got.iter().map(|(_, s)| stored_sum(s)).collect()),
            ..Summary::of(Dtype::Float64, part)
        };
        assert_eq!(summary, want);
        // A failure to store stops the encoding and is the outcome, on one thread or several.
        for threads in [1, 2] {
            let mut stored = 0;
            let e = encode_tile(
                &chunks,
                &p,
                Dtype::Float64,
                Buffer::Host(&bytes),
                threads,
                |_, _| {
                    stored += 1;
                    match stored {
                        3 => fail(crate::status::H5TILE_ERR_IO, "disk full"),
                        _ => Ok(()),
                    }
                },
            )
            .unwrap_err();
            assert_eq!(e.message, "disk full");
            assert_eq!(stored, 3);
        }
        // A last chunk shorter than the others is encoded padded, as HDF5 stores it, alike on
        // one thread and several.
        let short = Chunks::new(&[590, 500], 8, 100_000);
        let some = &bytes[..590 * 500 * 8];
        let encoded = |threads| encode_all(&short, &p, some, threads).0;
        let one = encoded(1);
        assert!(one == encoded(3));
        let last = one.last().unwrap().as_ref().unwrap();
        let mut out = vec![0u8; short.chunk_bytes()];
        p.decoder().decode(last, &mut out).unwrap();
        let (start, len) = short.range(short.count() - 1);
        assert!(len < short.chunk_bytes() as u64);
        assert!(out[..len as usize] == some[start as usize..]);
        assert!(out[len as usize..].iter().all(|&b| b == 0));
    }
}
