//! Snapshot writes (`H5TILE_SNAPSHOT`): before an asynchronous write returns, this rank's tiles
//! are copied into staging memory the library owns (`platform::staging`), and the write reads
//! the copies. The caller may then change its buffers at once, and the file holds what they
//! held at the call. Checksums, extremes and compression run on the copies, on the write's
//! thread.
//!
//! Staging is bounded by the write's budget (`WriteOptions::staging_bytes`). A tile that does
//! not fit, even once earlier snapshots have drained, is left in the caller's buffer, and the
//! call waits until the write has read it (`pending`): staged in part, the rest written before
//! the call returns.

use super::write::Checkpoint;
use crate::platform::device::{copy_to_host, io_threads, log, Buffer};
use crate::platform::memory::copy_in_pieces;
use crate::platform::staging::{self, Staged};
use parking_lot::Mutex;

/// The staging buffers a write reads instead of the caller's, returned to the pool when it is
/// dropped (once the write has ended).
pub struct Snapshot {
    staged: Vec<Staged>,
    /// Whether every non-empty tile was staged: the caller's buffers are free at once.
    pub whole: bool,
}

/// One snapshot stages at a time in a process: two staging at once under a full budget could
/// each hold part of it and wait for the other's part for ever.
static TURN: Mutex<()> = Mutex::new(());

/// Copies each of this rank's tiles of `ck` into staging memory, under the budget its options
/// name, and points the tile at its copy.
///
/// # Safety
/// The result must outlive every use of `ck`'s tiles: those staged now borrow its buffers.
pub unsafe fn take(ck: &mut Checkpoint<'static>) -> Snapshot {
    let _turn = TURN.lock();
    let budget = usize::try_from(ck.options.staging_bytes).unwrap_or(usize::MAX);
    let mut snapshot = Snapshot {
        staged: Vec::new(),
        whole: true,
    };
    // Staging held by this snapshot (whole pages), and the bytes staged, copied from device
    // memory and left in the caller's buffers.
    let (mut mine, mut staged_bytes, mut from_device, mut left) = (0, 0, 0, 0);
    for field in &mut ck.fields {
        let elem = field.dtype.size();
        for local in &mut field.tiles {
            let len = local.tile.volume() as usize * elem;
            if len == 0 {
                continue;
            }
            let staged = staging::pool()
                .stage(len, budget, mine)
                .and_then(|staged| copied(staged, local.buf, len));
            let Some(staged) = staged else {
                snapshot.whole = false;
                left += len;
                continue;
            };
            mine += staged.capacity();
            staged_bytes += len;
            from_device += matches!(local.buf, Buffer::Device(..)) as usize * len;
            // The buffer is an anonymous mapping that does not move while `snapshot` holds it.
            let copy: &'static [u8] = std::slice::from_raw_parts(staged.bytes().as_ptr(), len);
            local.buf = Buffer::Host(copy);
            snapshot.staged.push(staged);
        }
    }
    let mib = |b: usize| b as f64 / (1 << 20) as f64;
    // Both numbers always, so that "0.0 MiB" over the budget reads as what it is.
    log::info(&format!(
        "snapshot of '{}': {:.1} MiB copied into staging memory ({staged_bytes} bytes, \
         {from_device} of them from device memory), written from there in the background; \
         {:.1} MiB over the budget ({left} bytes), written from the caller's buffers before \
         the call returns (budget {:.1} MiB)",
        ck.path.display(),
        mib(staged_bytes),
        mib(left),
        mib(budget),
    ));
    snapshot
}

/// `staged` holding the first `len` bytes of `buf`; None where device memory could not be
/// copied (the tile is then written from the caller's buffer, which the write reports on).
fn copied(mut staged: Staged, buf: Buffer, len: usize) -> Option<Staged> {
    match buf {
        Buffer::Host(bytes) => copy_in_pieces(staged.bytes_mut(), &bytes[..len], io_threads()),
        Buffer::Device(ptr, _) => {
            if let Err(why) = copy_to_host(staged.bytes_mut(), ptr) {
                log::warn(&format!(
                    "snapshot: device tile not staged: {}",
                    why.message
                ));
                return None;
            }
        }
    }
    Some(staged)
}
