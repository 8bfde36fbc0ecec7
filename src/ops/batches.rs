//! `h5tile_batches_*`: stream a dataset too large for memory in clipped chunks, in row-major
//! order of their offsets, dealt over the ranks of a communicator, with the next chunk read by
//! a background thread while the caller works on the current one.
//!
//! Memory held by an open iterator is one chunk (the read-ahead buffer; two with `next_view`,
//! none while the first chunk goes straight into the caller's buffer), plus at most one chunk
//! of HDF5 chunk cache for files whose storage chunks straddle the requested chunks; it never
//! grows with the dataset.
//!
//! Checksums: a rank's chunks come in row-major order, so a chunk narrower than a tile shares
//! the tile's 1 MiB blocks (whole rows of it) with the chunks beside it. The source keeps the
//! blocks it has checked (`byte_reads::CheckedBlocks`, a bit per block): each is read whole and
//! summed once, for the first chunk touching it, and the chunks after read only their bytes of
//! it. The dealing stays as documented (contiguous runs), so ranks share blocks only in the
//! row of chunks where one run ends and the next begins.

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::ops::read::byte_reads::ReadCounts;
use crate::ops::read::source::Source;
use crate::ops::read::{check_conversion, on_one_version, open_to_read, OpenDataset, ReadOptions};
use crate::platform::comm::Comm;
use crate::platform::device::io_threads;
use crate::platform::hdf5::{self, Dataset, Plist, Storage};
use crate::platform::memory::{copy_in_pieces, PageBuffer};
use crate::status::*;
use std::ops::Range;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// The chunks of a dataset of `shape` cut by `chunk`, numbered in row-major order of their
/// offsets (last axis fastest); chunks at the far edges are clipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChunkGrid {
    shape: Vec<u64>,
    chunk: Vec<u64>,
    counts: Vec<u64>,
}

impl ChunkGrid {
    /// Checks `chunk` against the dataset's `shape`: one entry per axis, each > 0 (an entry
    /// above `i64::MAX` is a negative number passed as unsigned, and is refused as such).
    pub fn new(shape: &[u64], chunk: &[u64]) -> Result<ChunkGrid> {
        if chunk.len() != shape.len() {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "chunk shape has {} entries but the dataset has {} dimensions {shape:?}",
                    chunk.len(),
                    shape.len()
                ),
            );
        }
        if let Some((axis, &c)) = chunk
            .iter()
            .enumerate()
            .find(|(_, &c)| c == 0 || c > i64::MAX as u64)
        {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "chunk_shape[{axis}] is {}; every entry must be > 0",
                    c as i64
                ),
            );
        }
        let counts = shape
            .iter()
            .zip(chunk)
            .map(|(&s, &c)| s.div_ceil(c))
            .collect();
        Ok(ChunkGrid {
            shape: shape.to_vec(),
            chunk: chunk.to_vec(),
            counts,
        })
    }

    /// Number of chunks (0 for a dataset with no elements).
    pub fn len(&self) -> u128 {
        self.counts.iter().map(|&n| n as u128).product()
    }

    /// Chunk number `index` (< `len()`), clipped at the dataset's edge.
    pub fn chunk(&self, mut index: u128) -> Tile {
        let n = self.shape.len();
        let mut offset = vec![0u64; n];
        let mut shape = vec![0u64; n];
        for axis in (0..n).rev() {
            let count = self.counts[axis] as u128;
            let i = (index % count) as u64;
            index /= count;
            offset[axis] = i * self.chunk[axis];
            shape[axis] = self.chunk[axis].min(self.shape[axis] - offset[axis]);
        }
        Tile::new(offset, shape)
    }

    /// The chunks rank `rank` of `size` reads: a contiguous run, the runs differing in length by
    /// at most one, so each rank reads its part of the file in order.
    pub fn share(&self, rank: usize, size: usize) -> Range<u128> {
        let (n, p, r) = (self.len(), size as u128, rank as u128);
        let (base, extra) = (n / p, n % p);
        let start = r * base + r.min(extra);
        start..start + base + u128::from(r < extra)
    }

    /// Bounding box of chunks `range` (None when empty).
    pub fn bounds(&self, range: &Range<u128>) -> Option<Tile> {
        if range.is_empty() {
            return None;
        }
        let (first, last) = (self.chunk(range.start), self.chunk(range.end - 1));
        // Chunks in between may reach further on inner axes: widen those to the whole extent.
        let n = self.shape.len();
        let mut offset = vec![0u64; n];
        let mut shape = self.shape.clone();
        let outer = (0..n)
            .find(|&a| first.offset[a] != last.offset[a])
            .unwrap_or(n);
        for a in 0..n.min(outer + 1) {
            offset[a] = first.offset[a];
            shape[a] = last.offset[a] + last.shape[a] - first.offset[a];
        }
        Some(Tile::new(offset, shape))
    }
}

/// An empty buffer for chunks of up to `bytes`, starting on a page, its pages advised to be
/// huge: the kernel copies file data into it markedly faster (see `PageBuffer`).
fn chunk_buffer(bytes: usize) -> PageBuffer {
    PageBuffer::new(bytes)
}

/// Where the reader thread puts the next chunk.
enum Target {
    /// A buffer of the iterator's, handed back filled.
    Buffer(PageBuffer),
    /// The caller's own buffer, `next` waiting for the chunk.
    Caller(CallerBytes),
}

/// The bytes of a caller's buffer, lent to the reader thread while the caller waits.
struct CallerBytes {
    start: *mut u8,
    len: usize,
}

// SAFETY: `next` sends these bytes to the reader and waits until it has read into them (or has
// stopped), so only one thread uses them at a time, and only while the caller's borrow lasts.
unsafe impl Send for CallerBytes {}

/// One chunk as read by the reader thread (`buffer` None: into the caller's).
struct Filled {
    tile: Tile,
    result: Result<()>,
    buffer: Option<PageBuffer>,
}

/// An open batched read: this rank's run of chunks and the thread reading one ahead.
///
/// The reader reads the chunks in order, each into the place it is sent (`Target`). The first
/// chunk `next` asks for, with nothing read ahead, goes straight into the caller's buffer
/// (no copy; an iterator of one chunk holds no buffer at all); from then on the reader fills
/// the iterator's buffer with the chunk after while the caller works on this one: one buffer
/// for `next`, two for `next_view` (one lent to the caller, one filling).
pub struct Batches {
    grid: ChunkGrid,
    /// The next chunk to deliver, and the next to ask the reader for (`next..requested` are
    /// in flight).
    next: u128,
    requested: u128,
    end: u128,
    count: u128,
    max_chunk_bytes: usize,
    elem: usize,
    dtype: Dtype,
    /// Where to read the next chunks to the reader, and filled chunks from it.
    free: Option<SyncSender<Target>>,
    filled: Option<Receiver<Filled>>,
    /// The reader thread, which ends with what its reads cost.
    reader: Option<JoinHandle<ReadCounts>>,
    /// The chunk `next_view` lent the caller, given back on the next call.
    lent: Option<PageBuffer>,
    /// Buffers neither in flight nor lent.
    spare: Vec<PageBuffer>,
    /// Buffers made in all (at most 2).
    made: usize,
}

impl Batches {
    /// Collective over `comm`: opens `dataset`, checks `chunk`, deals the chunks, and starts
    /// the reader, which reads the first chunk when it is asked for. `dtype` None delivers
    /// elements in the dataset's own type.
    pub fn open(
        comm: &Comm,
        path: &Path,
        dataset: &str,
        chunk: &[u64],
        options: &ReadOptions,
    ) -> Result<Batches> {
        let share = (comm.rank(), comm.size());
        Batches::open_share(comm, share, path, dataset, chunk, options)
    }

    /// `open` for the chunks rank `share.0` of `share.1` gets (tests play every rank of a
    /// communicator in one process).
    fn open_share(
        comm: &Comm,
        (rank, size): (usize, usize),
        path: &Path,
        dataset: &str,
        chunk: &[u64],
        options: &ReadOptions,
    ) -> Result<Batches> {
        let (dtype, fill_missing) = (options.dtype, options.fill_missing);
        // Every rank deals from one version of the file, and holds the tile files its chunks
        // need, so later writes replacing the dataset do not disturb the iteration.
        let opened = on_one_version(comm, path, || {
            let _l = hdf5::lock();
            let open = open_to_read(path, dataset, None)?;
            let shape = open.dims()?;
            let grid = ChunkGrid::new(&shape, chunk)?;
            let file_type = open.dtype()?;
            let dtype = match dtype {
                Some(d) => d,
                None => Dtype::of_hdf5(&file_type)?,
            };
            check_conversion(&file_type, dtype, path, dataset, options.narrowing)?;
            let range = grid.share(rank, size);
            let region = grid.bounds(&range);
            let source =
                match Source::open(path, dataset, open, shape.len(), options, region.as_ref())? {
                    Source::Hdf5(open, checks) => Source::Hdf5(
                        with_chunk_cache(open, dataset, chunk, dtype.size())?,
                        checks,
                    ),
                    Source::Direct(mut direct) => {
                        if let Some(region) = &region {
                            direct.hold(region, dtype)?;
                        }
                        Source::Direct(direct)
                    }
                };
            Ok((source, grid, dtype, range))
        })?;
        let (source, grid, dtype, range) = opened;
        let elem = dtype.size();
        let max_chunk_bytes = grid
            .chunk
            .iter()
            .zip(&grid.shape)
            .map(|(&c, &s)| c.min(s) as usize)
            .product::<usize>()
            * elem;
        let (free_tx, free_rx) = sync_channel::<Target>(1);
        let (filled_tx, filled_rx) = sync_channel::<Filled>(1);
        let reader_grid = grid.clone();
        let reader_range = range.clone();
        let reader = std::thread::Builder::new()
            .name("h5tile-batches".into())
            .spawn(move || {
                read_ahead(
                    source,
                    reader_grid,
                    reader_range,
                    dtype,
                    fill_missing,
                    free_rx,
                    filled_tx,
                )
            })
            .map_err(|e| {
                Error::new(
                    H5TILE_ERR_IO,
                    format!("cannot start the read-ahead thread: {e}"),
                )
            })?;
        Ok(Batches {
            grid,
            next: range.start,
            requested: range.start,
            end: range.end,
            count: range.end - range.start,
            max_chunk_bytes,
            elem,
            dtype,
            free: Some(free_tx),
            filled: Some(filled_rx),
            reader: Some(reader),
            lent: None,
            spare: Vec::new(),
            made: 0,
        })
    }

    /// Element type of the delivered chunks.
    pub fn dtype(&self) -> Dtype {
        self.dtype
    }

    /// Bytes of the largest chunk: a buffer this large takes any chunk.
    pub fn max_chunk_bytes(&self) -> usize {
        self.max_chunk_bytes
    }

    /// Number of chunks this rank gets in all.
    pub fn count(&self) -> u128 {
        self.count
    }

    /// Bytes the next chunk needs, or None when there is none left.
    pub fn next_bytes(&self) -> Option<usize> {
        (self.next < self.end).then(|| self.grid.chunk(self.next).volume() as usize * self.elem)
    }

    /// Copies the next chunk into `buf` and returns its place, or None when done. A `buf` too
    /// small for the chunk fails with `H5TILE_ERR_INVALID_ARGUMENT` and does not advance. With
    /// nothing read ahead (the first call), the chunk is read straight into `buf`, unless
    /// `buf` starts off a 16-byte boundary: the kernel copies file data into such a buffer
    /// at a fraction of its speed (see `PageBuffer`), slower than reading ahead and copying.
    pub fn next(&mut self, buf: &mut [u8]) -> Result<Option<Tile>> {
        let room = buf.len();
        self.give_back_lent();
        let straight = self.requested == self.next && (buf.as_ptr() as usize).is_multiple_of(16);
        if !straight || self.next_bytes().is_none_or(|need| room < need) {
            return self.next_into(room, |chunk| {
                copy_in_pieces(&mut buf[..chunk.len()], chunk, io_threads());
                Ok(())
            });
        }
        let bytes = CallerBytes {
            start: buf.as_mut_ptr(),
            len: room,
        };
        self.request(Target::Caller(bytes));
        // The chunk after is read into the iterator's buffer once this one is in `buf`.
        self.ahead(2);
        let (tile, result, buffer) = self.receive()?;
        debug_assert!(buffer.is_none(), "read into the caller's buffer");
        self.ahead(1);
        result.map(|()| Some(tile))
    }

    /// `next` for a buffer of `room` bytes that `deliver` copies the chunk's bytes into (device
    /// memory, say).
    pub fn next_into(
        &mut self,
        room: usize,
        deliver: impl FnOnce(&[u8]) -> Result<()>,
    ) -> Result<Option<Tile>> {
        self.give_back_lent();
        let Some(need) = self.next_bytes() else {
            return Ok(None);
        };
        if room < need {
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "buffer of {room} bytes is too small for chunk {} ({need} bytes of {})",
                    self.grid.chunk(self.next),
                    self.dtype.name()
                ),
            );
        }
        self.ahead(1);
        let (tile, result, buffer) = self.receive()?;
        let buffer = buffer.expect("read into the iterator's buffer");
        let outcome = result
            .and_then(|()| deliver(&buffer[..need]))
            .map(|()| tile);
        self.spare.push(buffer);
        self.ahead(1);
        outcome.map(Some)
    }

    /// The next chunk without copying it: its place and its bytes inside the iterator, valid
    /// until the next call. The reader then keeps a second buffer, filling it with the chunk
    /// after while the caller works on this one.
    pub fn next_view(&mut self) -> Result<Option<(Tile, &[u8])>> {
        self.give_back_lent();
        let Some(need) = self.next_bytes() else {
            return Ok(None);
        };
        self.ahead(2);
        let (tile, result, buffer) = self.receive()?;
        let buffer = buffer.expect("read into the iterator's buffer");
        if let Err(e) = result {
            self.spare.push(buffer);
            self.ahead(1);
            return Err(e);
        }
        let lent = self.lent.insert(buffer);
        Ok(Some((tile, &lent[..need])))
    }

    /// The buffer lent by `next_view`, back among the spares.
    fn give_back_lent(&mut self) {
        if let Some(buffer) = self.lent.take() {
            self.spare.push(buffer);
        }
    }

    /// Asks the reader for the chunks after those in flight until `depth` are (or none is
    /// left), each into a spare buffer or a new one.
    fn ahead(&mut self, depth: u128) {
        while self.requested < self.end && self.requested - self.next < depth {
            let buffer = self.spare.pop().unwrap_or_else(|| {
                self.made += 1;
                debug_assert!(self.made <= 2, "{} buffers", self.made);
                chunk_buffer(self.max_chunk_bytes)
            });
            self.request(Target::Buffer(buffer));
        }
    }

    /// Asks the reader for chunk `requested`, read into `target`.
    fn request(&mut self, target: Target) {
        if let Some(tx) = &self.free {
            // A reader that has stopped is reported by `receive`.
            let _ = tx.send(target);
        }
        self.requested += 1;
    }

    /// The next filled chunk from the reader, counted as delivered.
    fn receive(&mut self) -> Result<(Tile, Result<()>, Option<PageBuffer>)> {
        let filled = self.filled.as_ref().and_then(|rx| rx.recv().ok());
        let Some(Filled {
            tile,
            result,
            buffer,
        }) = filled
        else {
            return fail(
                H5TILE_ERR_PANIC,
                "internal error (please report): the read-ahead thread stopped",
            );
        };
        self.next += 1;
        Ok((tile, result, buffer))
    }
}

impl Batches {
    /// Stops the reader as `Drop` does, returning what its reads of tile bytes cost.
    #[cfg(any(test, feature = "internals"))]
    pub fn finish(mut self) -> ReadCounts {
        self.free.take();
        self.filled.take();
        let reader = self.reader.take();
        reader.and_then(|r| r.join().ok()).unwrap_or_default()
    }
}

impl Drop for Batches {
    /// Stops the reader (it finishes at most the chunk it is reading) and waits for it, so an
    /// iterator freed mid-way leaves no thread and no open file behind.
    fn drop(&mut self) {
        self.free.take();
        self.filled.take();
        if let Some(handle) = self.reader.take() {
            let _ = handle.join();
        }
    }
}

/// The reader thread: for each chunk of `range`, waits to be told where to read it, reads it
/// there, and hands it over; stops when the iterator is dropped, returning what its reads
/// cost.
fn read_ahead(
    mut source: Source,
    grid: ChunkGrid,
    range: Range<u128>,
    dtype: Dtype,
    fill_missing: bool,
    free: Receiver<Target>,
    filled: SyncSender<Filled>,
) -> ReadCounts {
    for index in range {
        let Ok(target) = free.recv() else { break };
        let tile = grid.chunk(index);
        let len = tile.volume() as usize * dtype.size();
        let (result, buffer) = match target {
            Target::Buffer(mut buffer) => {
                buffer.set_len(len);
                let read = catch_panic(|| source.read(&tile, dtype, &mut buffer, fill_missing));
                (read, Some(buffer))
            }
            Target::Caller(bytes) => {
                assert!(len <= bytes.len, "a chunk larger than the caller's buffer");
                // SAFETY: the caller's buffer of `bytes.len` bytes, borrowed by `next`, which
                // waits for this chunk before it returns (see `CallerBytes`).
                let buf = unsafe { std::slice::from_raw_parts_mut(bytes.start, len) };
                (
                    catch_panic(|| source.read(&tile, dtype, buf, fill_missing)),
                    None,
                )
            }
        };
        if filled
            .send(Filled {
                tile,
                result,
                buffer,
            })
            .is_err()
        {
            break;
        }
    }
    source.counts()
}

/// Re-opens a chunked dataset with a chunk cache that holds the storage chunks straddling one
/// requested chunk (at most one requested chunk's bytes), so storage chunks shared by
/// neighbouring requests are read from disk once.
fn with_chunk_cache(
    open: OpenDataset,
    dataset: &str,
    chunk: &[u64],
    elem: usize,
) -> Result<OpenDataset> {
    let Storage::Chunked(storage) = open.dataset.storage()? else {
        return Ok(open);
    };
    if storage.len() != chunk.len() {
        return Ok(open);
    }
    let storage_bytes = storage.iter().product::<u64>() as u128 * elem as u128;
    let touched: u128 = chunk
        .iter()
        .zip(&storage)
        .map(|(&c, &s)| (c.div_ceil(s) + 1) as u128)
        .product();
    let request_bytes = chunk.iter().map(|&c| c as u128).product::<u128>() * elem as u128;
    let cache = (touched * storage_bytes).min(request_bytes).max(1 << 20) as usize;
    let dapl = Plist::chunk_cache(cache)?;
    let reopened = Dataset::open_with_access(&open.file, dataset, &dapl)?;
    Ok(OpenDataset {
        dataset: reopened,
        file: open.file,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::device::host_bytes;

    #[test]
    fn chunks_come_in_row_major_order_clipped_at_the_edges() {
        let g = ChunkGrid::new(&[5], &[2]).unwrap();
        let got: Vec<Tile> = (0..g.len()).map(|i| g.chunk(i)).collect();
        assert_eq!(
            got,
            vec![
                Tile::new(vec![0], vec![2]),
                Tile::new(vec![2], vec![2]),
                Tile::new(vec![4], vec![1])
            ]
        );
        let g = ChunkGrid::new(&[3, 5], &[2, 2]).unwrap();
        assert_eq!(g.len(), 6);
        let offsets: Vec<Vec<u64>> = (0..6).map(|i| g.chunk(i).offset).collect();
        assert_eq!(
            offsets,
            vec![
                vec![0, 0],
                vec![0, 2],
                vec![0, 4],
                vec![2, 0],
                vec![2, 2],
                vec![2, 4]
            ]
        );
        assert_eq!(g.chunk(5).shape, vec![1, 1]);
    }

    #[test]
    fn a_chunk_larger_than_the_dataset_is_one_clipped_chunk_and_empty_datasets_have_none() {
        let g = ChunkGrid::new(&[3, 4], &[100, 100]).unwrap();
        assert_eq!(g.len(), 1);
        assert_eq!(g.chunk(0), Tile::new(vec![0, 0], vec![3, 4]));
        assert_eq!(ChunkGrid::new(&[0, 4], &[2, 2]).unwrap().len(), 0);
    }

    #[test]
    fn bad_chunk_shapes_are_invalid_arguments_naming_the_entry() {
        let e = ChunkGrid::new(&[3, 4], &[2]).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
        assert!(
            e.message.contains("1 entries") && e.message.contains("2 dimensions"),
            "{}",
            e.message
        );
        let e = ChunkGrid::new(&[3, 4], &[2, 0]).unwrap_err();
        assert!(e.message.contains("chunk_shape[1] is 0"), "{}", e.message);
        let e = ChunkGrid::new(&[3, 4], &[-1i64 as u64, -2i64 as u64]).unwrap_err();
        assert!(e.message.contains("chunk_shape[0] is -1"), "{}", e.message);
    }

    #[test]
    fn shares_cover_every_chunk_once_and_differ_by_at_most_one() {
        let g = ChunkGrid::new(&[10, 10], &[3, 3]).unwrap();
        for size in 1..=7 {
            let shares: Vec<Range<u128>> = (0..size).map(|r| g.share(r, size)).collect();
            assert_eq!(shares[0].start, 0);
            assert_eq!(shares[size - 1].end, g.len());
            for w in shares.windows(2) {
                assert_eq!(w[0].end, w[1].start);
            }
            let lens: Vec<u128> = shares.iter().map(|r| r.end - r.start).collect();
            assert!(
                lens.iter().max().unwrap() - lens.iter().min().unwrap() <= 1,
                "{lens:?}"
            );
        }
    }

    #[test]
    fn bounds_contain_every_chunk_of_a_share() {
        let g = ChunkGrid::new(&[7, 9, 4], &[2, 4, 3]).unwrap();
        for size in 1..=5 {
            for rank in 0..size {
                let range = g.share(rank, size);
                let Some(b) = g.bounds(&range) else { continue };
                for i in range {
                    let c = g.chunk(i);
                    assert_eq!(c.intersection(&b), Some(c.clone()), "chunk {c} outside {b}");
                }
            }
        }
        assert_eq!(g.bounds(&(3..3)), None);
    }

    use crate::ops::write::WriteOptions;
    use crate::testkit::{tile_files, write_whole};

    /// A 3-D int32 dataset of `shape` whose element at (i, j, k) is `1000 i + 10 j + k`,
    /// written as one tile.
    fn write_cube(path: &Path, shape: [u64; 3]) {
        let n = shape.iter().product::<u64>() as usize;
        let data: Vec<i32> = (0..n)
            .map(|l| {
                let (i, j, k) = (
                    l as u64 / (shape[1] * shape[2]),
                    l as u64 / shape[2] % shape[1],
                    l as u64 % shape[2],
                );
                (1000 * i + 10 * j + k) as i32
            })
            .collect();
        let (buf, options) = (host_bytes(&data), WriteOptions::default());
        write_whole(path, "/cube", Dtype::Int32, &shape, buf, options).unwrap();
    }

    /// A new folder holding the cube of `shape` (`write_cube`) as `cube.h5`, and its path; the
    /// folder goes when the `TempDir` is dropped.
    fn cube_file(shape: [u64; 3]) -> (tempfile::TempDir, std::path::PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("cube.h5");
        write_cube(&path, shape);
        (dir, path)
    }

    /// The batches of "/cube" in `path`, in chunks of `chunk`, read with `options`.
    fn cube_batches(path: &Path, chunk: &[u64], options: ReadOptions) -> Result<Batches> {
        Batches::open(&Comm::solo(), path, "/cube", chunk, &options)
    }

    fn as_i32(bytes: &[u8]) -> Vec<i32> {
        bytes
            .chunks_exact(4)
            .map(|b| i32::from_ne_bytes(b.try_into().unwrap()))
            .collect()
    }

    #[test]
    fn every_chunk_arrives_in_order_with_its_values() {
        let (_dir, path) = cube_file([3, 5, 4]);
        let mut it = cube_batches(&path, &[2, 2, 3], ReadOptions::default()).unwrap();
        assert_eq!(
            (it.dtype(), it.count(), it.max_chunk_bytes()),
            (Dtype::Int32, 12, 2 * 2 * 3 * 4)
        );
        let mut buf = vec![0u8; it.max_chunk_bytes()];
        let mut seen = Vec::new();
        while let Some(tile) = it.next(&mut buf).unwrap() {
            let values = as_i32(&buf[..tile.volume() as usize * 4]);
            let mut l = 0;
            for i in 0..tile.shape[0] {
                for j in 0..tile.shape[1] {
                    for k in 0..tile.shape[2] {
                        let (gi, gj, gk) =
                            (tile.offset[0] + i, tile.offset[1] + j, tile.offset[2] + k);
                        assert_eq!(values[l], (1000 * gi + 10 * gj + gk) as i32, "{tile}");
                        l += 1;
                    }
                }
            }
            seen.push(tile);
        }
        let grid = ChunkGrid::new(&[3, 5, 4], &[2, 2, 3]).unwrap();
        assert_eq!(seen, (0..12).map(|i| grid.chunk(i)).collect::<Vec<_>>());
        assert_eq!(it.next(&mut buf).unwrap(), None, "done stays done");
    }

    /// `next` reads the first chunk straight into the caller's buffer and holds one buffer
    /// of its own from then on (none for a single chunk); `next_view` holds two; mixed, still
    /// two. The memory an iterator holds is the chunks it reads ahead and lends.
    #[test]
    fn an_iterator_holds_one_buffer_for_next_two_for_views_none_for_one_chunk() {
        let (_dir, path) = cube_file([6, 5, 4]);
        let count = |chunk: &[u64], view: &dyn Fn(usize) -> bool| {
            let mut it = cube_batches(&path, chunk, ReadOptions::default()).unwrap();
            // On a 16-byte boundary, as `malloc` gives.
            let mut words = vec![0u64; it.max_chunk_bytes().div_ceil(8) + 1];
            let bytes = crate::platform::device::bytes_mut(&mut words);
            let at = (0..16)
                .step_by(8)
                .find(|&k| (bytes[k..].as_ptr() as usize).is_multiple_of(16));
            let buf = &mut bytes[at.unwrap()..];
            for k in 0.. {
                let got = match view(k) {
                    true => it.next_view().unwrap().map(|(t, b)| (t, as_i32(b))),
                    false => it
                        .next(buf)
                        .unwrap()
                        .map(|t| (t.clone(), as_i32(&buf[..t.volume() as usize * 4]))),
                };
                let Some((tile, values)) = got else { break };
                let expected: Vec<i32> = (0..tile.volume())
                    .map(|l| {
                        let (h, w) = (tile.shape[1] as u128, tile.shape[2] as u128);
                        let (i, j, k) = (l / (h * w), l / w % h, l % w);
                        let g = |a: usize, x: u128| tile.offset[a] as u128 + x;
                        (1000 * g(0, i) + 10 * g(1, j) + g(2, k)) as i32
                    })
                    .collect();
                assert_eq!(values, expected, "{tile}");
            }
            it.made
        };
        assert_eq!(
            count(&[6, 5, 4], &|_| false),
            0,
            "one chunk, into the caller's buffer"
        );
        assert_eq!(count(&[1, 5, 4], &|_| false), 1);
        assert_eq!(count(&[1, 5, 4], &|_| true), 2);
        assert_eq!(count(&[1, 2, 3], &|k| k % 3 == 1), 2);
        assert_eq!(count(&[6, 5, 4], &|_| true), 1);
        // A buffer off a 16-byte boundary is filled by copying from the iterator's own.
        let mut it = cube_batches(&path, &[6, 5, 4], ReadOptions::default()).unwrap();
        let mut words = vec![0u64; 6 * 5 * 4 / 2 + 2];
        let bytes = crate::platform::device::bytes_mut(&mut words);
        let at = (0..16)
            .find(|&k| bytes[k..].as_ptr() as usize % 16 == 8)
            .unwrap();
        let tile = it.next(&mut bytes[at..at + 480]).unwrap().unwrap();
        assert_eq!(tile, Tile::new(vec![0, 0, 0], vec![6, 5, 4]));
        assert_eq!(as_i32(&bytes[at..at + 12]), vec![0, 1, 2]);
        assert_eq!(as_i32(&bytes[at + 476..at + 480]), vec![5043]);
        assert_eq!(it.made, 1);
    }

    #[test]
    fn views_deliver_the_same_chunks_as_copies_also_mixed_with_them() {
        let (_dir, path) = cube_file([3, 5, 4]);
        let open = || cube_batches(&path, &[2, 2, 3], ReadOptions::default()).unwrap();
        let mut copies = open();
        let mut buf = vec![0u8; copies.max_chunk_bytes()];
        let mut expected = Vec::new();
        while let Some(tile) = copies.next(&mut buf).unwrap() {
            expected.push((tile.clone(), as_i32(&buf[..tile.volume() as usize * 4])));
        }
        for mixed in [false, true] {
            let mut it = open();
            let mut got = Vec::new();
            for k in 0.. {
                let chunk = if mixed && k % 3 == 2 {
                    it.next(&mut buf)
                        .unwrap()
                        .map(|t| (t.clone(), as_i32(&buf[..t.volume() as usize * 4])))
                } else {
                    it.next_view().unwrap().map(|(t, b)| (t, as_i32(b)))
                };
                match chunk {
                    Some(c) => got.push(c),
                    None => break,
                }
            }
            assert_eq!(got, expected, "mixed: {mixed}");
            assert!(it.next_view().unwrap().is_none(), "done stays done");
        }
    }

    #[test]
    fn a_buffer_too_small_fails_and_does_not_advance() {
        let (_dir, path) = cube_file([2, 2, 2]);
        let mut it = cube_batches(&path, &[1, 2, 2], ReadOptions::default()).unwrap();
        let mut small = vec![0u8; 15];
        let e = it.next(&mut small).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
        assert!(e.message.contains("15 bytes"), "{}", e.message);
        let mut buf = vec![0u8; 16];
        assert_eq!(it.next(&mut buf).unwrap().unwrap().offset, vec![0, 0, 0]);
        assert_eq!(as_i32(&buf), vec![0, 1, 10, 11]);
    }

    #[test]
    fn elements_are_converted_to_the_requested_type() {
        let (_dir, path) = cube_file([1, 2, 3]);
        let mut it = cube_batches(
            &path,
            &[1, 2, 3],
            ReadOptions {
                dtype: Some(Dtype::Float64),
                ..Default::default()
            },
        )
        .unwrap();
        let mut buf = vec![0u8; 48];
        it.next(&mut buf).unwrap().unwrap();
        let got: Vec<f64> = buf
            .chunks_exact(8)
            .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
            .collect();
        assert_eq!(got, vec![0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
        let e = cube_batches(
            &path,
            &[1, 1, 1],
            ReadOptions {
                dtype: Some(Dtype::Complex64),
                ..Default::default()
            },
        )
        .err()
        .unwrap();
        assert_eq!(e.status, H5TILE_ERR_DTYPE);
    }

    #[test]
    fn an_open_iterator_reads_the_version_it_opened_after_a_rewrite() {
        let (_dir, path) = cube_file([4, 2, 2]);
        let mut it = cube_batches(&path, &[1, 2, 2], ReadOptions::default()).unwrap();
        let mut buf = [0u8; 16];
        assert!(it.next(&mut buf).unwrap().is_some());
        // A newer write replaces the dataset and removes the tile the iterator reads.
        let old_tiles = tile_files(&path);
        write_cube(&path, [2, 2, 2]);
        assert!(old_tiles.iter().all(|p| !p.exists()), "old tiles removed");
        let mut rows = Vec::new();
        while let Some(chunk) = it.next(&mut buf).unwrap() {
            rows.push((chunk.offset[0], as_i32(&buf)[0]));
        }
        assert_eq!(
            rows,
            [(1, 1000), (2, 2000), (3, 3000)],
            "the old 4x2x2 cube"
        );
    }

    #[test]
    fn opening_checks_the_dataset_and_the_chunk_shape() {
        let (_dir, path) = cube_file([2, 2, 2]);
        let status = |dataset: &str, chunk: &[u64]| {
            let options = ReadOptions::default();
            let opened = Batches::open(&Comm::solo(), &path, dataset, chunk, &options);
            opened.err().map(|e| e.status)
        };
        assert_eq!(status("/cube", &[1, 1]), Some(H5TILE_ERR_INVALID_ARGUMENT));
        assert_eq!(
            status("/cube", &[1, 0, 1]),
            Some(H5TILE_ERR_INVALID_ARGUMENT)
        );
        assert_eq!(status("/nope", &[1, 1, 1]), Some(H5TILE_ERR_NOT_FOUND));
        assert_eq!(status("/", &[1, 1, 1]), Some(H5TILE_ERR_NOT_A_DATASET));
        let tiles = crate::layout::tile_dir(&path);
        for f in std::fs::read_dir(&tiles).unwrap().flatten() {
            std::fs::remove_file(f.path()).unwrap();
        }
        // Sources are opened chunk by chunk: the chunk that needs a lost tile fails, naming it.
        let mut it = cube_batches(&path, &[1, 1, 1], ReadOptions::default()).unwrap();
        let mut buf = [0u8; 4];
        let e = it.next(&mut buf).unwrap_err();
        assert_eq!(e.status, H5TILE_ERR_MISSING_TILE);
        assert!(e.message.contains(".tiles/cube."), "{}", e.message);
        let mut it = cube_batches(
            &path,
            &[1, 1, 1],
            ReadOptions {
                fill_missing: true,
                ..Default::default()
            },
        )
        .unwrap();
        buf = [7; 4];
        assert!(it.next(&mut buf).unwrap().is_some());
        assert_eq!(
            buf, [0; 4],
            "a lost tile reads as the fill value with fill_missing"
        );
    }

    /// A float64 dataset of `BIG` whose element (i, j) is `1000 i + j`, in four tiles of
    /// unequal widths (500 x 400 and 500 x 500; 2 blocks of checksums each, the blocks
    /// ending mid-row), written in `layout`.
    fn write_big(path: &Path, layout: crate::ops::write::Layout) {
        use crate::ops::write::LocalTile;
        let tiles: Vec<Tile> = BIG_TILES
            .iter()
            .map(|&(r, c, h, w)| Tile::new(vec![r, c], vec![h, w]))
            .collect();
        let data: Vec<Vec<f64>> = tiles.iter().map(big_values).collect();
        let local = tiles
            .iter()
            .zip(&data)
            .map(|(t, d)| LocalTile {
                tile: t.clone(),
                buf: host_bytes(d),
            })
            .collect();
        let options = WriteOptions {
            layout,
            ..WriteOptions::default()
        };
        crate::testkit::write_tiles(path, "/big", Dtype::Float64, &BIG, local, options).unwrap();
    }

    const BIG: [u64; 2] = [1000, 900];
    const BIG_TILES: [(u64, u64, u64, u64); 4] = [
        (0, 0, 500, 400),
        (0, 400, 500, 500),
        (500, 0, 500, 400),
        (500, 400, 500, 500),
    ];

    fn big_values(within: &Tile) -> Vec<f64> {
        let (h, w) = (within.shape[0], within.shape[1]);
        let (r, c) = (within.offset[0], within.offset[1]);
        (0..h * w)
            .map(|k| (1000 * (r + k / w) + c + k % w) as f64)
            .collect()
    }

    /// The checksum blocks (tile, block) of `BIG_TILES` that chunks `range` touch: for each
    /// row of a chunk within a tile, the blocks from its first byte to its last.
    fn blocks_touched(
        grid: &ChunkGrid,
        range: Range<u128>,
    ) -> std::collections::BTreeSet<(usize, u64)> {
        let block = crate::layout::checksums::BLOCK_BYTES;
        let mut touched = std::collections::BTreeSet::new();
        for index in range {
            let chunk = grid.chunk(index);
            for (t, &(r, c, h, w)) in BIG_TILES.iter().enumerate() {
                let tile = Tile::new(vec![r, c], vec![h, w]);
                let Some(common) = chunk.intersection(&tile) else {
                    continue;
                };
                for i in common.offset[0]..common.offset[0] + common.shape[0] {
                    let first = ((i - r) * w + common.offset[1] - c) * 8;
                    let last = first + common.shape[1] * 8 - 1;
                    touched.extend((first / block..=last / block).map(|k| (t, k)));
                }
            }
        }
        touched
    }

    /// Every chunk of the share, checked against the values, and what reading them cost.
    fn read_share(
        path: &Path,
        chunk: &[u64],
        share: (usize, usize),
        options: ReadOptions,
    ) -> ReadCounts {
        let mut it =
            Batches::open_share(&Comm::solo(), share, path, "/big", chunk, &options).unwrap();
        let grid = ChunkGrid::new(&BIG, chunk).unwrap();
        let mut expected = grid.share(share.0, share.1);
        while let Some((tile, bytes)) = it.next_view().unwrap() {
            assert_eq!(tile, grid.chunk(expected.next().unwrap()));
            let got: Vec<f64> = bytes
                .chunks_exact(8)
                .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                .collect();
            assert!(got == big_values(&tile), "chunk {tile} of {chunk:?}");
        }
        assert!(expected.next().is_none());
        it.finish()
    }

    /// Chunks narrower than a tile touch each block many times, row band after row band: a
    /// rank sums each block once (the first chunk touching it), and later chunks read only
    /// their own bytes of it. Many chunk shapes (clipped at the edges), tiles of one file
    /// each, in subfiles and in a single file, every rank of 1 to 4.
    #[test]
    fn each_rank_sums_each_block_it_touches_once() {
        use crate::ops::write::Layout;
        let d = tempfile::tempdir().unwrap();
        let blocks_in_all = 8; // four tiles of 2 blocks
        let bytes_in_all = BIG.iter().product::<u64>() * 8;
        for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
            let path = d.path().join(format!("{}.h5", layout.c_name()));
            write_big(&path, layout);
            let shapes: [&[u64]; 8] = [
                &[1000, 900],
                &[64, 100],
                &[100, 64],
                &[1, 900],
                &[333, 450],
                &[37, 13],
                &[500, 50],
                &[1000, 1],
            ];
            for chunk in shapes {
                let grid = ChunkGrid::new(&BIG, chunk).unwrap();
                for size in 1..=4 {
                    let mut summed = 0;
                    for rank in 0..size {
                        let counts = read_share(&path, chunk, (rank, size), ReadOptions::default());
                        let touched = blocks_touched(&grid, grid.share(rank, size));
                        assert_eq!(
                            counts.blocks_summed,
                            touched.len() as u64,
                            "{layout:?}, chunks {chunk:?}, rank {rank} of {size}"
                        );
                        summed += counts.blocks_summed;
                    }
                    if size == 1 {
                        assert_eq!(summed, blocks_in_all, "{layout:?} {chunk:?}");
                    }
                }
            }
            // Chunks taking a fifth of each row (rows of 800 of 4000 bytes, so far apart
            // in the tile file that each goes straight to its place): every byte is read
            // at most twice (once as its block is summed, once for the chunk that takes it),
            // where summing each chunk's blocks read and summed every block 5 times.
            let counts = read_share(&path, &[50, 100], (0, 1), ReadOptions::default());
            assert_eq!(counts.blocks_summed, blocks_in_all, "{layout:?}");
            assert!(
                counts.bytes_read <= 2 * bytes_in_all,
                "{layout:?}: {} bytes read of {bytes_in_all}",
                counts.bytes_read
            );
            // Unchecked, nothing is summed.
            let options = ReadOptions {
                no_verify: true,
                ..Default::default()
            };
            let counts = read_share(&path, &[64, 100], (0, 1), options);
            assert_eq!(counts.blocks_summed, 0, "{layout:?}");
        }
    }

    /// A damaged block fails every chunk that takes bytes of it, however many chunks touched
    /// it before (a block that did not match is never taken as checked), naming the file, the
    /// tile and the bytes; the chunks beside it still come whole.
    #[test]
    fn every_chunk_touching_a_damaged_block_fails_naming_it() {
        use crate::ops::write::Layout;
        let d = tempfile::tempdir().unwrap();
        for layout in [Layout::Vds, Layout::Subfiles, Layout::Single] {
            let path = d.path().join(format!("{}.h5", layout.c_name()));
            write_big(&path, layout);
            // Element (900, 100) lies in the second block of tile [500:1000, 0:400] (tile
            // number 2; its first block holds 327.68 of its rows of 3200 bytes).
            let (file, at) = {
                let value = (1000.0f64 * 900.0 + 100.0).to_ne_bytes();
                let files = match layout {
                    Layout::Single => vec![path.clone()],
                    _ => tile_files(&path),
                };
                files
                    .into_iter()
                    .find_map(|f| {
                        let bytes = std::fs::read(&f).unwrap();
                        let at = bytes.windows(8).position(|w| w == value)?;
                        Some((f, at as u64))
                    })
                    .expect("the element's bytes")
            };
            let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
            std::os::unix::fs::FileExt::write_all_at(&f, &[0x77], at).unwrap();
            let name = file.file_name().unwrap().to_string_lossy().to_string();
            for chunk in [[100u64, 100], [37, 13], [1, 900], [1000, 900]] {
                let grid = ChunkGrid::new(&BIG, &chunk).unwrap();
                let mut it =
                    Batches::open(&Comm::solo(), &path, "/big", &chunk, &Default::default())
                        .unwrap();
                let (mut failed, mut whole) = (0, 0);
                for index in 0..grid.len() {
                    let damaged = blocks_touched(&grid, index..index + 1).contains(&(2, 1));
                    match it.next_view() {
                        Ok(Some((tile, bytes))) => {
                            assert!(!damaged, "{layout:?}: {tile} came whole");
                            let got: Vec<f64> = bytes
                                .chunks_exact(8)
                                .map(|b| f64::from_ne_bytes(b.try_into().unwrap()))
                                .collect();
                            assert!(got == big_values(&tile), "chunk {tile}");
                            whole += 1;
                        }
                        Ok(None) => panic!("chunk {index} missing"),
                        Err(e) => {
                            assert!(
                                damaged,
                                "{layout:?}: chunk {}: {}",
                                grid.chunk(index),
                                e.message
                            );
                            assert_eq!(e.status, H5TILE_ERR_CORRUPT, "{}", e.message);
                            assert!(e.message.contains("[500:1000, 0:400]"), "{}", e.message);
                            assert!(e.message.contains(&name), "{}", e.message);
                            assert!(e.message.contains("checksum"), "{}", e.message);
                            failed += 1;
                        }
                    }
                }
                assert!(it.next_view().unwrap().is_none());
                let expect_failed = (0..grid.len())
                    .filter(|&i| blocks_touched(&grid, i..i + 1).contains(&(2, 1)))
                    .count();
                assert_eq!(failed, expect_failed, "{layout:?} {chunk:?}");
                assert!(whole > 0 || grid.len() == 1, "{layout:?} {chunk:?}");
            }
        }
    }

    #[test]
    fn freeing_mid_way_stops_the_reader_without_hanging() {
        let (_dir, path) = cube_file([8, 8, 8]);
        for consumed in 0..3 {
            let mut it = cube_batches(&path, &[1, 8, 8], ReadOptions::default()).unwrap();
            let mut buf = vec![0u8; it.max_chunk_bytes()];
            for _ in 0..consumed {
                it.next(&mut buf).unwrap().unwrap();
            }
            drop(it);
        }
        // The file is closed again: it can be replaced at once.
        write_cube(&path, [8, 8, 8]);
    }
}
