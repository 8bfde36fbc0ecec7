//! The thread that reads a batched read's next chunk while the caller works on the current one.

use crate::dtype::Dtype;
use crate::geometry::chunk_grid::ChunkGrid;
use crate::geometry::tile::Tile;
use crate::ops::read::source::Source;
use crate::ops::tile_io::byte_reads::ReadCounts;
use crate::platform::memory::PageBuffer;
use crate::status::*;
use std::ops::Range;
use std::sync::mpsc::{Receiver, SyncSender};

/// Where the reader thread puts the next chunk.
pub(super) enum Target {
    /// A buffer of the iterator's, handed back filled.
    Buffer(PageBuffer),
    /// The caller's own buffer, `next` waiting for the chunk.
    Caller(CallerBytes),
}

/// The bytes of a caller's buffer, lent to the reader thread while the caller waits.
pub(super) struct CallerBytes {
    pub(super) start: *mut u8,
    pub(super) len: usize,
}

// SAFETY: `next` sends these bytes to the reader and waits until it has read into them (or has
// stopped), so only one thread uses them at a time, and only while the caller's borrow lasts.
unsafe impl Send for CallerBytes {}

/// One chunk as read by the reader thread (`buffer` None: into the caller's).
pub(super) struct Filled {
    pub(super) tile: Tile,
    pub(super) result: Result<()>,
    pub(super) buffer: Option<PageBuffer>,
}

/// The reader thread: for each chunk of `range`, waits to be told where to read it, reads it
/// there, and hands it over; stops when the iterator is dropped, returning what its reads
/// cost.
pub(super) fn read_ahead(
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
