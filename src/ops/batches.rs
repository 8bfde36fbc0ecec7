//! `h5tile_batches_*`: stream a dataset too large for memory in clipped chunks, in row-major
//! order of their offsets, dealt over the ranks of a communicator, with the next chunk read by
//! a background thread while the caller works on the current one.
//!
//! Memory held by an open iterator is one chunk (the read-ahead buffer), plus at most one chunk
//! of HDF5 chunk cache for files whose storage chunks straddle the requested chunks; it never
//! grows with the dataset.

use crate::dtype::Dtype;
use crate::geometry::tile::Tile;
use crate::ops::read::source::Source;
use crate::ops::read::{check_conversion, on_one_version, open_dataset, OpenDataset, ReadOptions};
use crate::platform::comm::Comm;
use crate::platform::hdf5::{self, Dataset, Plist, Storage};
use crate::platform::memory::PageBuffer;
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

/// One chunk as read by the reader thread.
struct Filled {
    tile: Tile,
    result: Result<()>,
    buffer: PageBuffer,
}

/// An open batched read: this rank's run of chunks and the thread reading one ahead.
pub struct Batches {
    grid: ChunkGrid,
    next: u128,
    end: u128,
    count: u128,
    max_chunk_bytes: usize,
    elem: usize,
    dtype: Dtype,
    /// Empty buffers back to the reader, and filled ones from it.
    free: Option<SyncSender<PageBuffer>>,
    filled: Option<Receiver<Filled>>,
    reader: Option<JoinHandle<()>>,
    /// The chunk `next_view` lent the caller, given back to the reader on the next call.
    lent: Option<PageBuffer>,
    /// Whether the second buffer that lending needs (one lent, one read ahead) exists.
    second_buffer: bool,
}

impl Batches {
    /// Collective over `comm`: opens `dataset`, checks `chunk`, deals the chunks, and starts
    /// reading the first one. `dtype` None delivers elements in the dataset's own type.
    pub fn open(
        comm: &Comm,
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
            let open = open_dataset(path, dataset)?;
            let shape = open.dataset.space()?.dims()?;
            let grid = ChunkGrid::new(&shape, chunk)?;
            let dtype = match dtype {
                Some(d) => d,
                None => Dtype::of_hdf5(&open.dataset.dtype()?)?,
            };
            let file_type = open.dataset.dtype()?;
            check_conversion(&file_type, dtype, path, dataset, options.narrowing)?;
            let range = grid.share(comm.rank(), comm.size());
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
        let (free_tx, free_rx) = sync_channel::<PageBuffer>(1);
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
        if !range.is_empty() {
            // The one read-ahead buffer: the reader starts on the first chunk right away.
            let _ = free_tx.send(chunk_buffer(max_chunk_bytes));
        }
        Ok(Batches {
            grid,
            next: range.start,
            end: range.end,
            count: range.end - range.start,
            max_chunk_bytes,
            elem,
            dtype,
            free: Some(free_tx),
            filled: Some(filled_rx),
            reader: Some(reader),
            lent: None,
            second_buffer: false,
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
    /// small for the chunk fails with `H5TILE_ERR_INVALID_ARGUMENT` and does not advance.
    pub fn next(&mut self, buf: &mut [u8]) -> Result<Option<Tile>> {
        let room = buf.len();
        self.next_into(room, |chunk| {
            copy_in_pieces(&mut buf[..chunk.len()], chunk);
            Ok(())
        })
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
        let (tile, result, buffer) = self.receive()?;
        let outcome = result
            .and_then(|()| deliver(&buffer[..need]))
            .map(|()| tile);
        self.recycle(buffer);
        outcome.map(Some)
    }

    /// The next chunk without copying it: its place and its bytes inside the iterator, valid
    /// until the next call. The reader then keeps a second buffer, filling it with the chunk
    /// after while the caller works on this one.
    pub fn next_view(&mut self) -> Result<Option<(Tile, &[u8])>> {
        self.give_back_lent();
        if !self.second_buffer && self.next + 1 < self.end {
            self.second_buffer = true;
            if let Some(tx) = &self.free {
                let _ = tx.send(chunk_buffer(self.max_chunk_bytes));
            }
        }
        let Some(need) = self.next_bytes() else {
            return Ok(None);
        };
        let (tile, result, buffer) = self.receive()?;
        if let Err(e) = result {
            self.recycle(buffer);
            return Err(e);
        }
        let lent = self.lent.insert(buffer);
        Ok(Some((tile, &lent[..need])))
    }

    /// The buffer lent by `next_view`, back to the reader.
    fn give_back_lent(&mut self) {
        if let Some(buffer) = self.lent.take() {
            self.recycle(buffer);
        }
    }

    /// A delivered buffer back to the reader, while it has chunks left to read.
    fn recycle(&mut self, buffer: PageBuffer) {
        if self.next < self.end {
            if let Some(tx) = &self.free {
                let _ = tx.send(buffer);
            }
        }
    }

    /// The next filled chunk from the reader, counted as delivered.
    fn receive(&mut self) -> Result<(Tile, Result<()>, PageBuffer)> {
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

/// Copies `src` into `dst` (of the same length); a large chunk in pieces over `io_threads()`
/// workers, since one thread copying into a caller's fresh buffer (a page fault per 4 KiB) is
/// slower than the reads it follows.
fn copy_in_pieces(dst: &mut [u8], src: &[u8]) {
    const PIECE: usize = 8 << 20;
    let threads = match src.len() >= 4 * PIECE {
        true => crate::platform::device::io_threads(),
        false => 1,
    };
    if threads <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    let pieces = std::sync::Mutex::new(
        dst.chunks_mut(PIECE)
            .zip(src.chunks(PIECE))
            .collect::<Vec<_>>(),
    );
    let work = || loop {
        let piece = pieces.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let Some((to, from)) = piece else { return };
        to.copy_from_slice(from);
    };
    std::thread::scope(|scope| {
        for _ in 1..threads {
            scope.spawn(work);
        }
        work();
    });
}

/// The reader thread: for each chunk of `range`, waits for an empty buffer, reads the chunk
/// into it, and hands it over; stops when the iterator is dropped.
fn read_ahead(
    mut source: Source,
    grid: ChunkGrid,
    range: Range<u128>,
    dtype: Dtype,
    fill_missing: bool,
    free: Receiver<PageBuffer>,
    filled: SyncSender<Filled>,
) {
    for index in range {
        let Ok(mut buffer) = free.recv() else { break };
        let tile = grid.chunk(index);
        buffer.set_len(tile.volume() as usize * dtype.size());
        let result = catch_panic(|| source.read(&tile, dtype, &mut buffer, fill_missing));
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
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [3, 5, 4]);
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

    #[test]
    fn views_deliver_the_same_chunks_as_copies_also_mixed_with_them() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [3, 5, 4]);
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
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [2, 2, 2]);
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
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [1, 2, 3]);
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
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [4, 2, 2]);
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
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [2, 2, 2]);
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

    #[test]
    fn freeing_mid_way_stops_the_reader_without_hanging() {
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("cube.h5");
        write_cube(&path, [8, 8, 8]);
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
