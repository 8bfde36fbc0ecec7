//! The caller's buffers during an asynchronous write: when the write is done reading them, and
//! whether they changed meanwhile.
//!
//! A write that did not snapshot reads the caller's buffers on its own thread while the caller
//! goes on. Its tiles' checksums are taken beside their write, so a buffer changed meanwhile
//! would give a file whose checksums are not those of its bytes: written, and never readable.
//! Such a write sums each host tile before it is written and again once it is: the bytes
//! written, and those its checksums were taken from, were read between the two sums, so where
//! both agree (a solver's field does not come back to its old bytes) the file holds the bytes
//! summed. A tile that changed fails the write on every rank before its commit, and the
//! previous file stays. Device tiles need no second look: their checksums are taken from the
//! very pieces written.
use super::messages::Placed;
use super::{Checkpoint, LocalTile};
use crate::layout::blocks::BlockGrid;
use crate::layout::checksums;
use crate::platform::device::Buffer;
use crate::status::*;
use std::cell::RefCell;

/// The block checksums of each of this rank's host tiles of `ck` (by `k`), taken before the
/// write reads them, where the caller's buffers may change; nothing otherwise.
pub fn before(ck: &Checkpoint) -> Vec<Option<Vec<u64>>> {
    if !ck.options.buffers_may_change {
        return Vec::new();
    }
    (ck.local_tiles())
        .map(|(_, f, local)| match local.buf {
            Buffer::Host(bytes) => Some(block_sums(ck, f, local, bytes)),
            Buffer::Device(..) => None,
        })
        .collect()
}

/// The blocks of `local` (of field `f`) as the write cuts them: in boxes, or in runs where it
/// compresses (`checksums::scheme_for`).
fn grid_of(ck: &Checkpoint, f: usize, local: &LocalTile) -> BlockGrid {
    let scheme = checksums::scheme_for(ck.options.compression.is_some());
    scheme.grid(&local.tile.shape, ck.fields[f].dtype.size())
}

/// The tile's block checksums as its write records them.
fn block_sums(ck: &Checkpoint, f: usize, local: &LocalTile, bytes: &[u8]) -> Vec<u64> {
    let grid = grid_of(ck, f, local);
    let len = grid.len() as usize;
    checksums::block_sums(grid, &bytes[..len])
}

/// Fails where a host tile of `ck` that this rank wrote (`placed`) no longer holds the bytes it
/// held `before` the write, or its recorded checksums are not theirs.
pub fn check(ck: &Checkpoint, before: &[Option<Vec<u64>>], placed: &[Placed]) -> Result<()> {
    if before.is_empty() {
        return Ok(());
    }
    let tiles: Vec<_> = ck.local_tiles().collect();
    for p in placed {
        let (_, f, local) = tiles[p.k];
        let (Buffer::Host(bytes), Some(then)) = (local.buf, &before[p.k]) else {
            continue;
        };
        let now = block_sums(ck, f, local, bytes);
        let recorded = p.summary.sums.as_ref().unwrap_or(then);
        let differs = (0..then.len()).find(|&b| now[b] != then[b] || recorded[b] != then[b]);
        if let Some(block) = differs {
            let field = &ck.fields[f];
            let grid = grid_of(ck, f, local);
            return fail(
                H5TILE_ERR_INVALID_ARGUMENT,
                format!(
                    "tile {} {} of '{}' changed while it was being written ({} differ): an \
                     asynchronous write reads the caller's buffers until it completes, unless \
                     H5TILE_SNAPSHOT copies them at the call; nothing was committed, '{}' is \
                     as it was",
                    p.k,
                    local.tile,
                    field.dataset,
                    grid.describe(block as u64),
                    ck.path.display(),
                ),
            );
        }
    }
    Ok(())
}

thread_local! {
    static ON_READ: RefCell<Option<Box<dyn FnOnce()>>> = const { RefCell::new(None) };
}

/// Runs `work` (a commit) with `hook` called once the commit no longer reads the caller's
/// buffers: after its tiles are written and checked, or when `work` ends, whichever is first.
pub fn when_buffers_read<R>(hook: impl FnOnce() + 'static, work: impl FnOnce() -> R) -> R {
    ON_READ.with(|h| *h.borrow_mut() = Some(Box::new(hook)));
    let result = work();
    buffers_read();
    result
}

/// Calls the hook `when_buffers_read` set on this thread, if any.
pub fn buffers_read() {
    if let Some(hook) = ON_READ.with(|h| h.borrow_mut().take()) {
        hook();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Dtype;
    use crate::geometry::tile::Tile;
    use crate::layout::checksums::{Summary, BLOCK_BYTES};
    use crate::layout::vds::TileBytes;
    use crate::ops::write::messages::PlacedIn;
    use crate::ops::write::{Field, LocalTile, WriteOptions};

    /// A checkpoint of one tile whose buffer holds `now`, and the record of its write having
    /// summed `then`.
    fn written<'a>(now: &'a [u8], then: &[u8], may_change: bool) -> (Checkpoint<'a>, Placed) {
        let shape = [(now.len() / 8) as u64];
        let (ck, mut placed) = written_as(now, &shape, None, may_change);
        placed.summary = Summary::of(Dtype::Float64, then);
        (ck, placed)
    }

    /// A checkpoint of one float64 tile of `shape` whose buffer holds `now`, stored with
    /// `compression`, and the record of its write having summed `now` as it cuts its blocks.
    fn written_as<'a>(
        now: &'a [u8],
        shape: &[u64],
        compression: Option<crate::platform::codecs::Compression>,
        may_change: bool,
    ) -> (Checkpoint<'a>, Placed) {
        let tile = Tile::new(vec![0; shape.len()], shape.to_vec());
        let ck = Checkpoint {
            path: "ck.h5".into(),
            fields: vec![Field {
                dataset: "/u".into(),
                dtype: Dtype::Float64,
                global: shape.to_vec(),
                tiles: vec![LocalTile {
                    tile,
                    buf: Buffer::Host(now),
                }],
            }],
            attributes: Vec::new(),
            options: WriteOptions {
                buffers_may_change: may_change,
                compression,
                ..WriteOptions::default()
            },
        };
        let scheme = checksums::scheme_for(compression.is_some());
        let summary = Summary::of_grid(Dtype::Float64, scheme.grid(shape, 8), now);
        let placed = Placed {
            k: 0,
            placed_in: PlacedIn::OwnFile,
            bytes: TileBytes {
                data_offset: 0,
                file_size: 0,
            },
            summary,
        };
        (ck, placed)
    }

    /// A wide tile's write records boxes, a compressed one's runs (its stored chunks are
    /// checked on reading): the sums taken before compare with what each records, and an
    /// unchanged buffer passes either way; a changed one fails naming its block.
    #[test]
    fn a_wide_tile_is_compared_in_the_blocks_its_write_records() {
        use crate::platform::codecs::{Codec, Compression};
        let shape = [256u64, 2048]; // rows of 16 KiB: 2 x 2 boxes, or 4 runs
        let then: Vec<u8> = (0..256 * 2048 * 8).map(|i| (i % 251) as u8).collect();
        let mut now = then.clone();
        now[(200 * 2048 + 1500) * 8] ^= 1;
        let zstd = Compression::new(Codec::Zstd, 1, true).unwrap();
        for (compression, says) in [
            (
                None,
                "(block 3, elements [128:256, 1024:2048] of the tile differ)",
            ),
            (Some(zstd), "(bytes 3145728..4194304 of the tile differ)"),
        ] {
            let (ck, placed) = written_as(&then, &shape, compression, true);
            let sums = before(&ck);
            assert_eq!(
                check(&ck, &sums, std::slice::from_ref(&placed)),
                Ok(()),
                "{compression:?}"
            );
            let (ck, _) = written_as(&now, &shape, compression, true);
            let e = check(&ck, &sums, &[placed]).unwrap_err();
            assert!(e.message.contains(says), "{}", e.message);
        }
    }

    #[test]
    fn a_tile_changed_while_written_fails_the_write_naming_it_and_the_bytes() {
        let then: Vec<u8> = (0..3 * BLOCK_BYTES as usize).map(|i| i as u8).collect();
        let mut now = then.clone();
        now[BLOCK_BYTES as usize + 5] ^= 1;
        let (ck, placed) = written(&then, &then, true);
        let sums = before(&ck);
        assert_eq!(check(&ck, &sums, &[placed]), Ok(()), "unchanged");
        // Changed after the sums before it (`then`), whatever the write recorded.
        for recorded in [&then, &now] {
            let (ck, placed) = written(&now, recorded, true);
            let e = check(&ck, &sums, &[placed]).unwrap_err();
            assert_eq!(e.status, H5TILE_ERR_INVALID_ARGUMENT);
            let tile = &ck.fields[0].tiles[0].tile;
            let head = format!(
                "tile 0 {tile} of '/u' changed while it was being written (bytes \
                 1048576..2097152 of the tile differ)"
            );
            assert!(e.message.starts_with(&head), "{}", e.message);
            assert!(e.message.ends_with("'ck.h5' is as it was"), "{}", e.message);
        }
        // The buffer as it was before and after, but summed as it was in between: the write
        // read other bytes than those it summed.
        let (ck, placed) = written(&then, &now, true);
        assert!(check(&ck, &sums, &[placed]).is_err());
        // A write that owns its buffers (synchronous, or a snapshot's copies) takes no sums.
        let (ck, placed) = written(&now, &then, false);
        assert!(before(&ck).is_empty());
        assert_eq!(check(&ck, &before(&ck), &[placed]), Ok(()));
    }

    #[test]
    fn the_hook_runs_once_when_the_buffers_are_read_or_else_when_the_work_ends() {
        use std::rc::Rc;
        let calls = Rc::new(std::cell::Cell::new(0));
        let counted = calls.clone();
        let seen = when_buffers_read(
            move || counted.set(counted.get() + 1),
            || {
                buffers_read();
                let seen = calls.get();
                buffers_read();
                seen
            },
        );
        assert_eq!((seen, calls.get()), (1, 1));
        let counted = calls.clone();
        when_buffers_read(move || counted.set(counted.get() + 10), || ());
        assert_eq!(calls.get(), 11);
    }
}
