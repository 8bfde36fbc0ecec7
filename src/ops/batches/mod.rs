//! `h5tile_batches_*`: stream a dataset too large for memory in clipped chunks, in row-major
//! order of their offsets, dealt over the ranks of a communicator, with the next chunk read by
//! a background thread while the caller works on the current one.
//!
//! Where the rank has no core to spare (`io_threads() == 1`), nothing is read ahead: `next`
//! reads each chunk straight into the caller's buffer when asked for, `next_view` into the one
//! buffer it lends.
//!
//! Memory held by an open iterator is one chunk (the read-ahead buffer; two with `next_view`
//! where a core is spare, none while chunks go straight into the caller's buffer), plus at
//! most one chunk of HDF5 chunk cache for files whose storage chunks straddle the requested
//! chunks; it never grows with the dataset.
//!
//! Checksums: a tile whose rows are wider than 8 KiB is checked in boxes 8 KiB wide
//! (`layout::blocks`), so a chunk on the boxes' grid reads and sums its own bytes alone.
//! Elsewhere a chunk narrower than a tile shares the tile's 1 MiB blocks (whole rows of it, or
//! boxes it does not cover) with the chunks beside it, and a rank's chunks come in row-major
//! order. The source keeps the blocks it has checked
//! (`tile_io::checked_blocks::CheckedBlocks`, a bit per block): each is read whole and summed
//! once, for the first chunk touching it, and the chunks after read only their bytes of it.
//! The dealing stays as documented (contiguous runs), so ranks share blocks only in the row of
//! chunks where one run ends and the next begins.
//!
//! The chunks themselves are `geometry::chunk_grid`'s; the thread reading ahead is
//! `read_ahead`.

mod read_ahead;
#[cfg(test)]
mod tests;

use read_ahead::{read_ahead, CallerBytes, Filled, Target};

use crate::dtype::Dtype;
use crate::geometry::chunk_grid::ChunkGrid;
use crate::geometry::tile::Tile;
use crate::ops::read::source::Source;
use crate::ops::read::{check_conversion, on_one_version, open_to_read, OpenDataset, ReadOptions};
use crate::ops::tile_io::byte_reads::ReadCounts;
use crate::platform::comm::Comm;
use crate::platform::device::io_threads;
use crate::platform::hdf5::{self, Dataset, Plist, Storage};
use crate::platform::memory::{copy_in_pieces, PageBuffer};
use crate::status::*;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

/// An empty buffer for chunks of up to `bytes`, starting on a page, its pages advised to be
/// huge: the kernel copies file data into it markedly faster (see `PageBuffer`).
fn chunk_buffer(bytes: usize) -> PageBuffer {
    PageBuffer::new(bytes)
}

/// An open batched read: this rank's run of chunks and the thread reading one ahead.
///
/// The reader reads the chunks in order, each into the place it is sent (`Target`). The first
/// chunk `next` asks for, with nothing read ahead, goes straight into the caller's buffer
/// (no copy; an iterator of one chunk holds no buffer at all); from then on, where the rank has
/// a core to spare, the reader fills the iterator's buffer with the chunk after while the
/// caller works on this one: one buffer for `next`, two for `next_view` (one lent to the
/// caller, one filling). Without one, `next` holds none and `next_view` one.
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
                    Source::Hdf5(open, checks, bytes) => Source::Hdf5(
                        with_chunk_cache(open, dataset, chunk, dtype.size())?,
                        checks,
                        bytes,
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
        let max_chunk_bytes = grid.largest_chunk() * elem;
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
        // The chunk after is read into the iterator's buffer once this one is in `buf`, where
        // the rank has a core to spare for it; else a read ahead would only take turns with
        // the caller's work on its core, and add a copy: each chunk is read straight into
        // the caller's buffer when asked for.
        let spare_core = io_threads() > 1;
        if spare_core {
            self.ahead(2);
        }
        let (tile, result, buffer) = self.receive()?;
        debug_assert!(buffer.is_none(), "read into the caller's buffer");
        if spare_core {
            self.ahead(1);
        }
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
    /// until the next call. Where the rank has a core to spare, the reader keeps a second
    /// buffer, filling it with the chunk after while the caller works on this one; else (as for
    /// `next`) it would only take turns with the caller on its core, and the second buffer
    /// cost memory and its first touches for nothing: one buffer, filled when asked for.
    pub fn next_view(&mut self) -> Result<Option<(Tile, &[u8])>> {
        self.give_back_lent();
        let Some(need) = self.next_bytes() else {
            return Ok(None);
        };
        self.ahead(if io_threads() > 1 { 2 } else { 1 });
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
